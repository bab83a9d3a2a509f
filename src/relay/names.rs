//! Names on the NATS side and the local names that stand for remote things.
//!
//! - A **node** is one broker root on one machine, named `[A-Za-z0-9_-]{1,32}` (a single
//!   NATS subject token: no `.`, `*`, `>` or whitespace).
//! - Messages and receipts from node `F` to node `T` travel on the subject
//!   `c2c.msg.F.T`; node `F`'s NATS user may publish only on `c2c.msg.F.>`, so the server
//!   vouches for `F` (see RELAY.md).
//! - Node `T`'s inbound stream is `C2C_IN_T` (subjects `c2c.msg.*.T`) with one durable pull
//!   consumer [`CONSUMER`].
//! - Presence: the key-value bucket [`PRESENCE_BUCKET`], one key per node.
//! - Locally, a remote peer is addressed as `alias@node`; a message from it records the
//!   sender session id `relay.<node>.<remote session id>` (a valid local session id that no
//!   local registration can have, since it is never registered), so receipts about it land
//!   in `receipts/relay.<node>.<sid>.jsonl`, which the connector forwards back.

use crate::error::{Error, Result};

/// Prefix of every relay subject.
pub const SUBJECT_PREFIX: &str = "c2c.msg";
/// The presence key-value bucket.
pub const PRESENCE_BUCKET: &str = "c2c_presence";
/// The durable consumer name on a node's inbound stream.
pub const CONSUMER: &str = "relay";
/// Prefix of the local session id standing for a remote sender.
pub const REMOTE_SID_PREFIX: &str = "relay.";

/// Check a node name: 1–32 chars of `[A-Za-z0-9_-]`.
///
/// # Errors
/// [`Error::InvalidId`].
pub fn validate_node(node: &str) -> Result<()> {
    let ok = !node.is_empty()
        && node.len() <= 32
        && node
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidId {
            kind: "relay node",
            value: node.chars().take(64).collect(),
            reason: "must be 1–32 characters of A–Z, a–z, 0–9, '_' and '-'".into(),
        })
    }
}

/// The subject of a message from `from` to `to`.
pub fn subject(from: &str, to: &str) -> String {
    format!("{SUBJECT_PREFIX}.{from}.{to}")
}

/// `(from, to)` of a relay subject; `None` for anything else (a wrong prefix, a token that
/// is no node name, extra tokens).
pub fn parse_subject(subject: &str) -> Option<(&str, &str)> {
    let rest = subject.strip_prefix(SUBJECT_PREFIX)?.strip_prefix('.')?;
    let (from, to) = rest.split_once('.')?;
    (validate_node(from).is_ok() && validate_node(to).is_ok()).then_some((from, to))
}

/// The inbound stream of `node`.
pub fn stream(node: &str) -> String {
    format!("C2C_IN_{node}")
}

/// The subjects of `node`'s inbound stream.
pub fn stream_subjects(node: &str) -> String {
    format!("{SUBJECT_PREFIX}.*.{node}")
}

/// The inbox prefix of `node`'s NATS requests (`_INBOX_<node>`), so a server config can let
/// each node subscribe only to its own replies.
pub fn inbox_prefix(node: &str) -> String {
    format!("_INBOX_{node}")
}

/// Split a local address `alias@node`; `None` when it names no node.
pub fn split_remote(address: &str) -> Option<(&str, &str)> {
    address.split_once('@')
}

/// The local session id standing for `remote_sid` on `node`.
pub fn remote_sid(node: &str, remote_sid: &str) -> String {
    format!("{REMOTE_SID_PREFIX}{node}.{remote_sid}")
}

/// `(node, remote session id)` of a local session id made by [`remote_sid`].
pub fn parse_remote_sid(sid: &str) -> Option<(&str, &str)> {
    let rest = sid.strip_prefix(REMOTE_SID_PREFIX)?;
    let (node, remote) = rest.split_once('.')?;
    validate_node(node).ok()?;
    crate::ids::validate_session_id(remote).ok()?;
    Some((node, remote))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_roundtrip_and_reject_wildcards() {
        assert_eq!(parse_subject(&subject("a", "b-2")), Some(("a", "b-2")));
        assert_eq!(parse_subject("c2c.msg.a.b.c"), None);
        assert_eq!(parse_subject("c2c.msg.*.b"), None);
        assert_eq!(parse_subject("c2c.other.a.b"), None);
        assert!(validate_node("a.b").is_err());
        assert!(validate_node("").is_err());
        assert!(validate_node(&"x".repeat(33)).is_err());
    }

    #[test]
    fn remote_sids_are_local_session_ids() {
        let sid = remote_sid("lap", "ses_abc");
        crate::ids::validate_session_id(&sid).unwrap();
        assert_eq!(parse_remote_sid(&sid), Some(("lap", "ses_abc")));
        assert_eq!(parse_remote_sid("ses_abc"), None);
        assert_eq!(parse_remote_sid("relay.a*b.ses"), None);
    }
}
