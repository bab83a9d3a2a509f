//! Received envelopes into the local root.
//!
//! A message goes into the inbox of the live local session registered under its
//! `to_alias`, under the inbox lock, unless its `message_id` is already there, in the
//! session's held inbox, or near the end of its archive: a redelivery after a crash between
//! the append and the JetStream ack is not a duplicate. Only after this returns does the
//! connector ack. A message for an alias with no live session here is answered with a
//! `dropped` receipt. The inbound policy (`auto` holds a remote sender: it has no local
//! registration, so its directory is unknown), the hop limit and the framing apply in the
//! recipient's process exactly as for local mail.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::error::Result;
use crate::fields;
use crate::ids::alias_eq;
use crate::inbox::{raw_message_id, Message};
use crate::log::{short_hash, AuditLog};
use crate::policy::rate::{RateDecision, RateLimiter};
use crate::receipts::{Receipt, Status};
use crate::store::BrokerRoot;

use super::wire::Inbound;

/// How one received envelope ended locally.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Stored in a local inbox (or already there).
    Stored,
    /// Answered with a receipt instead (no such live alias, rate limited).
    Answered,
    /// A receipt recorded for a local sender.
    Receipt,
    /// Rejected (see the audit log); not stored.
    Rejected,
}

/// Deliver a batch of received, decoded envelopes. Messages for one session share one
/// inbox write. Returns one outcome per input, in order.
///
/// # Errors
/// Store errors (nothing of the failing session's group is acknowledged then: the caller
/// must not ack any of the batch).
pub fn deliver(
    root: &BrokerRoot,
    log: &AuditLog,
    rate: &mut RateLimiter,
    items: Vec<Inbound>,
    lock_timeout: Duration,
) -> Result<Vec<Outcome>> {
    let regs = crate::registry::parse_all(&crate::store::read_array(&root.registry())?);
    let now = crate::time::now_secs();
    let mut out = vec![Outcome::Stored; items.len()];
    let mut groups: HashMap<String, Vec<(usize, Message)>> = HashMap::new();
    for (i, item) in items.into_iter().enumerate() {
        match item {
            Inbound::Receipt {
                session_id,
                receipt,
            } => {
                out[i] = Outcome::Receipt;
                // Only for sessions registered here: a remote node cannot make us create
                // files for arbitrary ids.
                if regs.iter().any(|r| r.session_id == session_id) {
                    crate::receipts::append(root, &session_id, &receipt)?;
                }
            }
            Inbound::Message(m) => {
                let target = regs
                    .iter()
                    .filter(|r| alias_eq(&r.alias, &m.to_alias) && r.is_alive())
                    .max_by(|a, b| a.registered_at.total_cmp(&b.registered_at));
                let from = m.from_session_id.clone().unwrap_or_default();
                let Some(target) = target else {
                    out[i] = Outcome::Answered;
                    answer(root, &m, Status::Dropped, "no live session has that alias");
                    continue;
                };
                // Keyed by the remote *node* (which the server vouches for), not by the
                // session id it claims: a node cannot widen its budget by varying that.
                let node = super::names::parse_remote_sid(&from)
                    .map(|(n, _)| n)
                    .unwrap_or(from.as_str());
                if let RateDecision::Limited { .. } = rate.check(node, &target.session_id, now) {
                    out[i] = Outcome::Answered;
                    answer(
                        root,
                        &m,
                        Status::RateLimited,
                        "rate limited by the receiving node",
                    );
                    continue;
                }
                groups
                    .entry(target.session_id.clone())
                    .or_default()
                    .push((i, *m));
            }
        }
    }
    for (sid, msgs) in groups {
        let held: HashSet<String> =
            crate::store::read_array(&root.path().join("held").join(format!("{sid}.json")))
                .unwrap_or_default()
                .iter()
                .filter_map(|v| raw_message_id(v).map(|c| c.into_owned()))
                .collect();
        let archive = root.archive(&sid)?;
        let wanted: Vec<&str> = msgs.iter().map(|(_, m)| m.message_id.as_str()).collect();
        let archived = crate::store::file::tail_message_ids(&archive, 4 * 1024 * 1024, &wanted)?;
        let (added, _moved) = crate::inbox::update(root, &sid, lock_timeout, |records| {
            let mut seen: HashSet<String> = records
                .iter()
                .filter_map(|v| raw_message_id(v).map(|c| c.into_owned()))
                .collect();
            let mut added: Vec<(String, String, String)> = Vec::new();
            for (_, m) in msgs {
                if seen.contains(&m.message_id)
                    || held.contains(&m.message_id)
                    || archived.contains(&m.message_id)
                {
                    continue;
                }
                seen.insert(m.message_id.clone());
                added.push((
                    m.message_id.clone(),
                    m.from_alias.clone(),
                    m.to_alias.clone(),
                ));
                records.push(m.to_value());
            }
            let changed = !added.is_empty();
            Ok((added, changed))
        })?;
        for (id, from, to) in added {
            log.event(
                "relay_enqueue_in",
                fields! {"from_alias" => from, "to_alias" => to, "message_id" => id, "to_session" => short_hash(&sid)},
            );
        }
    }
    Ok(out)
}

/// A receipt about `m` to its remote sender (goes through the outbox; see
/// [`crate::receipts::append`]).
fn answer(root: &BrokerRoot, m: &Message, status: Status, why: &str) {
    if let Some(sid) = &m.from_session_id {
        let _ = crate::receipts::append(
            root,
            sid,
            &Receipt {
                message_id: m.message_id.clone(),
                status,
                to_alias: m.to_alias.clone(),
                reason: Some(why.into()),
                ts: crate::time::now_secs(),
            },
        );
    }
}

/// Record a rejected envelope in the audit log (never its content).
pub fn log_rejected(log: &AuditLog, from_node: &str, reason: &str) {
    log.event(
        "relay_rejected",
        fields! {"from_node" => from_node, "reason" => reason},
    );
}
