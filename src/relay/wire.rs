//! What crosses NATS: one JSON [`Envelope`] per JetStream message, and how a received one
//! becomes local data.
//!
//! The receiving side trusts nothing in the payload that the server did not vouch for:
//! the sender's node is the one in the subject (its NATS user may publish only there); an
//! envelope whose `from_node` names another node is rejected. A local [`Message`] is built
//! field by field from validated values only, so nothing else a payload carries (a
//! `receipt`, `released`, a pending-reply slot, a verdict, any unknown field) reaches the
//! local root. Receipts are advisory: they name only a status from a fixed list.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ids::{validate_alias, validate_session_id};
use crate::inbox::Message;
use crate::receipts::{Receipt, Status};

use super::names::{remote_sid, validate_node};

/// Most hops a relayed `via` list may carry (the hop limit stops far earlier).
pub const MAX_VIA: usize = 32;

/// One JetStream message of the relay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Envelope {
    /// A direct message from a session of `from_node` to the alias `to_alias` there.
    Message {
        /// The sending node, as the sender claims it (checked against the subject).
        from_node: String,
        /// The sender's local alias on its node.
        from_alias: String,
        /// The sender's local session id on its node (for receipts).
        from_session_id: String,
        /// The recipient's alias on the receiving node.
        to_alias: String,
        /// The text, untrusted.
        content: String,
        /// A uuid; also the `Nats-Msg-Id` (JetStream's dedupe key).
        message_id: String,
        /// Epoch seconds at the sender.
        ts: f64,
        /// The hop list (session ids, oldest first; remote ones as the sender wrote them).
        #[serde(default)]
        via: Vec<String>,
    },
    /// What became of a message the receiving node's session sent earlier.
    Receipt {
        /// The node reporting (checked against the subject).
        from_node: String,
        /// The original sender's session id on the receiving node.
        to_session_id: String,
        /// The message concerned.
        message_id: String,
        /// Its outcome.
        status: Status,
        /// The recipient's alias on the reporting node.
        to_alias: String,
    },
}

impl Envelope {
    /// The `Nats-Msg-Id` of this envelope: the message id for a message, and
    /// `<message_id>.<status>` for a receipt (one receipt per outcome).
    pub fn msg_id(&self) -> String {
        match self {
            Envelope::Message { message_id, .. } => message_id.clone(),
            Envelope::Receipt {
                message_id, status, ..
            } => format!("{message_id}.{}", status.as_str()),
        }
    }

    fn claimed_node(&self) -> &str {
        match self {
            Envelope::Message { from_node, .. } | Envelope::Receipt { from_node, .. } => from_node,
        }
    }
}

/// A received envelope, checked and turned into local data.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A message for the local alias `to_alias` (as the sender addressed it).
    Message(Box<Message>),
    /// A receipt for local session `session_id`.
    Receipt {
        /// The local sender session.
        session_id: String,
        /// The receipt, `to_alias` rewritten to `alias@node`.
        receipt: Receipt,
    },
}

fn reject(reason: impl Into<String>) -> Error {
    Error::Relay {
        reason: reason.into(),
    }
}

fn check_message_id(id: &str) -> Result<()> {
    if id.len() > 64 || validate_session_id(id).is_err() {
        return Err(reject("message_id is not a message id"));
    }
    Ok(())
}

/// Parse and check the payload of a JetStream message received on the subject of
/// `subject_from` (the node the server allowed to publish there).
///
/// # Errors
/// [`Error::Relay`] naming the reason: not JSON of a known kind, a `from_node` other than
/// the subject's (a node claiming another), an invalid alias, session id, message id or
/// hop, empty content or content over `max_bytes`.
pub fn decode(payload: &[u8], subject_from: &str, max_bytes: usize) -> Result<Inbound> {
    let env: Envelope = serde_json::from_slice(payload)
        .map_err(|e| reject(format!("payload is not a relay envelope: {e}")))?;
    validate_node(subject_from)?;
    if env.claimed_node() != subject_from {
        return Err(reject(format!(
            "payload claims node {:?} but the server delivered it from node {subject_from:?}",
            env.claimed_node().chars().take(40).collect::<String>()
        )));
    }
    match env {
        Envelope::Message {
            from_alias,
            from_session_id,
            to_alias,
            content,
            message_id,
            via,
            ..
        } => {
            validate_alias(&from_alias)?;
            validate_alias(&to_alias)?;
            validate_session_id(&from_session_id)?;
            check_message_id(&message_id)?;
            if content.trim().is_empty() {
                return Err(Error::Empty);
            }
            if content.len() > max_bytes {
                return Err(Error::TooLarge {
                    size: content.len(),
                    limit: max_bytes,
                });
            }
            if via.len() > MAX_VIA || via.iter().any(|h| validate_session_id(h).is_err()) {
                return Err(reject("via is not a list of session ids"));
            }
            let mut extra = serde_json::Map::new();
            extra.insert("relay_node".into(), subject_from.into());
            Ok(Inbound::Message(Box::new(Message {
                from_alias: format!("{from_alias}@{subject_from}"),
                to_alias,
                content,
                // Local time of arrival: held-message expiry and ordering use local clocks.
                ts: crate::time::now_secs(),
                message_id,
                deferrable: None,
                ephemeral: None,
                from_session_id: Some(remote_sid(subject_from, &from_session_id)),
                via,
                broadcast: None,
                released: None,
                receipt: None,
                repaired: None,
                extra,
            })))
        }
        Envelope::Receipt {
            to_session_id,
            message_id,
            status,
            to_alias,
            ..
        } => {
            validate_session_id(&to_session_id)?;
            check_message_id(&message_id)?;
            validate_alias(&to_alias)?;
            Ok(Inbound::Receipt {
                session_id: to_session_id,
                receipt: Receipt {
                    message_id,
                    status,
                    to_alias: format!("{to_alias}@{subject_from}"),
                    // Remote words are not passed on: the status is the advisory fact.
                    reason: Some(format!("reported by relay node {subject_from}")),
                    ts: crate::time::now_secs(),
                },
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(from_node: &str) -> Vec<u8> {
        serde_json::to_vec(&Envelope::Message {
            from_node: from_node.into(),
            from_alias: "bob".into(),
            from_session_id: "ses_b".into(),
            to_alias: "amy".into(),
            content: "hi".into(),
            message_id: "8c1f1f8e-1111-4222-8333-944445555666".into(),
            ts: 1.0,
            via: vec!["ses_b".into()],
        })
        .unwrap()
    }

    #[test]
    fn message_takes_the_node_from_the_subject() {
        let Inbound::Message(m) = decode(&msg("lap"), "lap", 100).unwrap() else {
            panic!("not a message")
        };
        assert_eq!(m.from_alias, "bob@lap");
        assert_eq!(m.from_session_id.as_deref(), Some("relay.lap.ses_b"));
        assert_eq!(m.via, vec!["ses_b".to_string()]);
    }

    #[test]
    fn a_payload_claiming_another_node_is_rejected() {
        let e = decode(&msg("ci"), "lap", 100).unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::Relay);
        assert!(e.to_string().contains("claims node"), "{e}");
    }

    #[test]
    fn extra_fields_do_not_cross() {
        let mut v: serde_json::Value = serde_json::from_slice(&msg("lap")).unwrap();
        v["receipt"] = serde_json::json!({"message_id": "x", "status": "delivered", "to_alias": "a", "ts": 1.0});
        v["verdict"] = "approve".into();
        v["perm_id"] = "p1".into();
        let Inbound::Message(m) = decode(&serde_json::to_vec(&v).unwrap(), "lap", 100).unwrap()
        else {
            panic!("not a message")
        };
        assert!(m.receipt.is_none());
        assert_eq!(m.extra.len(), 1, "{:?}", m.extra);
    }

    #[test]
    fn the_frame_names_the_node_and_sanitises_each_part() {
        let frame = |from: &str| {
            crate::envelope::frame_message(&crate::envelope::PeerText {
                from_alias: from,
                body: "hi",
                message_id: "m1",
                via: &[],
                kind: crate::envelope::Kind::Direct,
                repaired: false,
            })
        };
        assert!(frame("bob@lap").contains("\nfrom: bob@lap\n"));
        let forged = frame("bob@lap\nfrom: root");
        assert!(
            forged.contains("from: bob@lap_from__root [sanitised]\n"),
            "{forged}"
        );
    }

    #[test]
    fn bad_fields_are_rejected() {
        let mut v: serde_json::Value = serde_json::from_slice(&msg("lap")).unwrap();
        v["from_alias"] = "c2c@x".into();
        assert!(decode(&serde_json::to_vec(&v).unwrap(), "lap", 100).is_err());
        let big = decode(&msg("lap"), "lap", 1).unwrap_err();
        assert_eq!(big.code(), crate::ErrorCode::TooLarge);
        assert!(decode(b"[1]", "lap", 100).is_err());
    }
}
