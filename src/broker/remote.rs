//! Remote peers (`alias@node`, reached through the root's relay connector; see
//! [`crate::relay`]): listing them and sending to them.

use super::messaging::{SendOptions, SendReceipt as Receipt};
use super::{Broker, Peer};
use crate::error::{Error, Result};
use crate::fields;
use crate::ids::{alias_eq, validate_alias};
use crate::log::short_hash;
use crate::relay::names::{remote_sid, validate_node};
use crate::relay::wire::Envelope;

impl Broker {
    /// The remote peers of the root's relay mirror (empty when no connector runs or its
    /// mirror is stale). Always alive (presence expires with its TTL), never `is_self`.
    pub(crate) fn remote_peers(&self) -> Vec<Peer> {
        crate::relay::presence::remote_peers(self.root().path())
    }

    /// Send to `alias` on relay node `node`: checked (hop limit, rate limit) like a local
    /// send, then stored durably in the relay outbox; the connector publishes it.
    ///
    /// # Errors
    /// [`Error::InvalidId`] (alias or node), [`Error::UnknownRecipient`] when the mirror
    /// lists no such peer (no connector ran within [`crate::relay::presence::SEND_GRACE_S`],
    /// or the node is gone), [`Error::HopLimit`],
    /// [`Error::RateLimited`], store errors.
    pub(super) fn send_remote(
        &self,
        alias: &str,
        node: &str,
        content: &str,
        opts: &SendOptions,
    ) -> Result<Receipt> {
        validate_alias(alias)?;
        validate_node(node)?;
        let mirror = crate::relay::presence::read_mirror_within(
            self.root().path(),
            crate::relay::presence::SEND_GRACE_S,
        );
        let peer = mirror
            .as_ref()
            .and_then(|m| m.nodes.get(node))
            .and_then(|ps| {
                ps.iter()
                    .filter(|p| alias_eq(&p.alias, alias))
                    .max_by(|a, b| a.registered_at.total_cmp(&b.registered_at))
            })
            .ok_or_else(|| Error::UnknownRecipient {
                alias: format!("{alias}@{node}"),
                root: self.root().path().to_path_buf(),
            })?;
        let to_alias = format!("{}@{node}", peer.alias);
        let to_sid = remote_sid(node, &peer.session_id);
        let msg = self.prepare(to_alias.clone(), &to_sid, content, opts)?;
        let env = Envelope::Message {
            from_node: String::new(), // set by the connector: its own node
            from_alias: msg.from_alias.clone(),
            from_session_id: self.session_id().to_string(),
            to_alias: peer.alias.clone(),
            content: msg.content.clone(),
            message_id: msg.message_id.clone(),
            ts: msg.ts,
            via: msg.via.clone(),
        };
        crate::relay::outbox::enqueue(self.root(), node, env)?;
        self.audit().event(
            "relay_enqueue_out",
            fields! {
                "from_alias" => msg.from_alias, "to_alias" => to_alias,
                "message_id" => msg.message_id, "bytes" => msg.content.len(),
                "to_session" => short_hash(&to_sid),
            },
        );
        Ok(Receipt {
            message_id: msg.message_id,
            to_alias,
            to_session_id: to_sid,
            ts: msg.ts,
            status: "queued",
        })
    }
}
