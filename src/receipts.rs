//! Receipts: what became of a message a session sent.
//!
//! A receipt is appended to `receipts/<sender_session_id>.jsonl` (0600, in a 0700 directory;
//! a c2c-bridge extra that c2c ignores) by whichever process decides the outcome: the sender
//! itself for a refused hop or a rate limit, the recipient's plugin for delivered, held,
//! refused, expired, dropped or duplicate. Messages from senders that recorded no
//! `from_session_id` (plain c2c clients) get no receipt: there is nowhere safe to put one, and
//! routing it by alias could hand it to a new owner of that alias.
//!
//! A receipt is never `delivered` before the message is stored in the recipient's session:
//! only [`crate::Broker::acknowledge`] writes that status, and the plugin calls it once it has
//! seen the injected message stored (an event or the transcript), not on `promptAsync`'s 204.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::file::{read_jsonl, JsonLine};
use crate::store::{self, BrokerRoot};

/// The outcome of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Shown to the recipient's model (stored in its session).
    Delivered,
    /// Waiting in the recipient's held inbox for a human.
    Held,
    /// Refused (inbound `refuse`, or the hop limit).
    Refused,
    /// Held too long; removed.
    Expired,
    /// Removed from the held inbox by a human, or the held inbox was full.
    Dropped,
    /// Already shown once; this copy was dropped.
    Duplicate,
    /// Over the per sender→recipient rate limit; not sent.
    RateLimited,
    /// The stored record could not be read by the recipient (not JSON, or no message); it
    /// was moved aside unread, byte for byte (`quarantine/`).
    Unreadable,
    /// Still queued: the recipient's user stopped a turn, and delivery into that session waits
    /// until the user prompts again (not terminal; a later receipt follows).
    Paused,
}

impl Status {
    /// The snake_case name, e.g. `"rate_limited"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Delivered => "delivered",
            Status::Held => "held",
            Status::Refused => "refused",
            Status::Expired => "expired",
            Status::Dropped => "dropped",
            Status::Duplicate => "duplicate",
            Status::RateLimited => "rate_limited",
            Status::Unreadable => "unreadable",
            Status::Paused => "paused",
        }
    }

    /// Whether the sender should be told in its session (a message that ended badly).
    pub fn is_bad(self) -> bool {
        matches!(
            self,
            Status::Refused
                | Status::Expired
                | Status::Dropped
                | Status::RateLimited
                | Status::Unreadable
        )
    }
}

/// One receipt line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// The message.
    pub message_id: String,
    /// Its outcome.
    pub status: Status,
    /// The recipient alias as addressed.
    pub to_alias: String,
    /// Why (for bad outcomes), in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Epoch seconds (float) of the outcome.
    pub ts: f64,
}

/// Append `receipt` to the sender's receipts file.
///
/// # Errors
/// Store errors.
pub fn append(root: &BrokerRoot, sender_session_id: &str, receipt: &Receipt) -> Result<()> {
    // A sender on another node (see `crate::relay::names`): the receipt travels back by relay.
    if let Some((node, sid)) = crate::relay::names::parse_remote_sid(sender_session_id) {
        return crate::relay::outbox::enqueue_receipt(root, node, sid, receipt);
    }
    let dir = store::file::ensure_private_dir(&root.path().join("receipts"))?;
    let path = dir.join(format!("{sender_session_id}.jsonl"));
    let value = serde_json::to_value(receipt).unwrap_or_default();
    store::append_jsonl(&path, &[value])
}

/// The last `limit` receipts of `session_id`, oldest first; a message's latest outcome wins
/// when `latest_only`.
///
/// # Errors
/// Store errors.
pub fn read(
    root: &BrokerRoot,
    session_id: &str,
    limit: usize,
    latest_only: bool,
) -> Result<Vec<Receipt>> {
    let path = root
        .path()
        .join("receipts")
        .join(format!("{session_id}.jsonl"));
    read_path(&path, limit, latest_only)
}

fn read_path(path: &Path, limit: usize, latest_only: bool) -> Result<Vec<Receipt>> {
    let mut out: Vec<Receipt> = read_jsonl(path)?
        .into_iter()
        .filter_map(|l| match l {
            JsonLine::Value(v) => serde_json::from_value(v).ok(),
            JsonLine::Unparsed(_) => None,
        })
        .collect();
    if latest_only {
        let mut seen = std::collections::HashSet::new();
        let mut kept: Vec<Receipt> = out
            .into_iter()
            .rev()
            .filter(|r| seen.insert(r.message_id.clone()))
            .collect();
        kept.reverse();
        out = kept;
    }
    let skip = out.len().saturating_sub(limit);
    Ok(out.into_iter().skip(skip).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_and_read_latest() {
        let d = tempfile::tempdir().unwrap();
        let root = BrokerRoot::open(
            &d.path().join("r"),
            crate::store::root::RootSource::Explicit,
        )
        .unwrap();
        let mk = |id: &str, status| Receipt {
            message_id: id.into(),
            status,
            to_alias: "bob".into(),
            reason: None,
            ts: 1.0,
        };
        append(&root, "s1", &mk("m1", Status::Held)).unwrap();
        append(&root, "s1", &mk("m2", Status::Delivered)).unwrap();
        append(&root, "s1", &mk("m1", Status::Expired)).unwrap();
        let all = read(&root, "s1", 10, false).unwrap();
        assert_eq!(all.len(), 3);
        let latest = read(&root, "s1", 10, true).unwrap();
        assert_eq!(
            latest
                .iter()
                .map(|r| (r.message_id.as_str(), r.status))
                .collect::<Vec<_>>(),
            vec![("m2", Status::Delivered), ("m1", Status::Expired)]
        );
        let line = std::fs::read_to_string(root.path().join("receipts/s1.jsonl")).unwrap();
        assert!(line.contains("\"status\":\"held\""));
        assert!(read(&root, "nobody", 10, true).unwrap().is_empty());
    }
}
