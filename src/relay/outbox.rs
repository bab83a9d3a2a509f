//! The relay outbox: `relay/outbox/<ns>-<msg id>.json` under the broker root, one file per
//! envelope waiting to be published (0600, written temp + fsync + rename + directory fsync
//! by [`crate::store`]). Any process of the root may write it (a `peer_send` to
//! `alias@node`, a receipt about a relayed message); the root's one connector publishes
//! each file with `Nats-Msg-Id` and removes it only after JetStream's PubAck, so a crash of
//! either leaves the file to be published again (and the server's dedupe window drops the
//! repeat).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::BrokerRoot;

use super::wire::Envelope;

/// One waiting envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The destination node.
    pub to_node: String,
    /// What to publish.
    pub envelope: Envelope,
}

/// `relay/` under the root (created 0700).
///
/// # Errors
/// As [`crate::store::file::ensure_private_dir`].
pub fn relay_dir(root: &Path) -> Result<PathBuf> {
    crate::store::file::ensure_private_dir(&root.join("relay"))
}

/// `relay/outbox/` under the root (created 0700).
///
/// # Errors
/// As [`crate::store::file::ensure_private_dir`].
pub fn dir(root: &Path) -> Result<PathBuf> {
    crate::store::file::ensure_private_dir(&relay_dir(root)?.join("outbox"))
}

/// Store `envelope` for `to_node` durably in the outbox.
///
/// # Errors
/// Store errors.
pub fn enqueue(root: &BrokerRoot, to_node: &str, envelope: Envelope) -> Result<()> {
    let dir = dir(root.path())?;
    let id = envelope.msg_id();
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let path = dir.join(format!("{ns:020}-{id}.json"));
    let entry = Entry {
        to_node: to_node.to_string(),
        envelope,
    };
    let bytes = serde_json::to_vec(&entry).map_err(|e| Error::io(&path, e.into()))?;
    crate::store::file::write_bytes_atomic(&path, &bytes)
}

/// The waiting files, oldest first (temp files of writers in progress are skipped).
///
/// # Errors
/// I/O errors reading the directory.
pub fn list(root: &Path) -> Result<Vec<PathBuf>> {
    let dir = dir(root)?;
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    out.sort();
    Ok(out)
}

/// Read one waiting file; `None` when it is gone or unreadable (an unreadable one is moved to
/// `relay/bad/`, never deleted).
pub fn read(path: &Path) -> Option<Entry> {
    let bytes = std::fs::read(path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(e) => Some(e),
        Err(_) => {
            if let Some(root_relay) = path.parent().and_then(Path::parent) {
                if let Ok(bad) = crate::store::file::ensure_private_dir(&root_relay.join("bad")) {
                    let _ = std::fs::rename(path, bad.join(path.file_name().unwrap_or_default()));
                }
            }
            None
        }
    }
}

/// Remove a published file.
pub fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// Store a receipt about a relayed message for its sender `sid` on `node`.
///
/// # Errors
/// Store errors.
pub fn enqueue_receipt(
    root: &BrokerRoot,
    node: &str,
    sid: &str,
    receipt: &crate::receipts::Receipt,
) -> Result<()> {
    // The recipient alias as the sender knows it is ours without a node part.
    let to_alias = receipt
        .to_alias
        .split('#')
        .next()
        .unwrap_or_default()
        .to_string();
    enqueue(
        root,
        node,
        Envelope::Receipt {
            from_node: String::new(),
            to_session_id: sid.to_string(),
            message_id: receipt.message_id.clone(),
            status: receipt.status,
            to_alias,
        },
    )
}
