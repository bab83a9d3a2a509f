//! The inbound gate: the one choke point every incoming message passes.
//!
//! Every message that could reach this session's model passes [`Broker::gate_inbox`] first —
//! direct messages, room and broadcast copies, receipt notices, redeliveries after a crash, and
//! messages a human released from the held inbox — and one function,
//! [`crate::policy::inbound::decide_inbound`], decides for all of them. Accepted messages stay
//! in the inbox for delivery; held ones move to `held/<session_id>.json`; refused ones move to
//! the archive. The sender gets a receipt for each outcome (and a framed notice in its own
//! session when the outcome is bad).
//!
//! Lock order: this session's inbox lock, then its held-file lock, then its archive lock (the
//! table in [`crate::store::lock`]). Notices to other sessions are enqueued only after all are
//! released, so two sessions gating at once cannot deadlock. The held inbox itself is
//! [`crate::held`]; the human's actions on it are in `broker/held.rs`.

use serde_json::Value;

use super::receipts::Notice;
use super::Broker;
use crate::error::Result;
use crate::fields;
use crate::inbox::{archived, Message};
use crate::log::short_hash;
use crate::policy::inbound::{decide_inbound, HoldReason, InboundDecision, Ingress, SenderFacts};
use crate::receipts::Status;
use crate::store;

/// A delivered message whose whole body is a permission reply
/// (`permission:<id>:approve-once|approve-always|reject`), as checked against this session's
/// pending-reply slots. Advisory only: nothing here answers a permission request.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionAdvisory {
    /// The message carrying it.
    pub message_id: String,
    /// The perm id it names.
    pub perm_id: String,
    /// `approve-once`, `approve-always` or `reject`.
    pub verdict: &'static str,
    /// The sender's alias.
    pub from_alias: String,
    /// True when the slot is ours, active, and the sender is one of its supervisors (M3 +
    /// c2c's check); false when the pending file could not be read (shown marked unverified).
    pub verified: bool,
}

/// What [`Broker::gate_inbox`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GateReport {
    /// Messages accepted for delivery (still in the inbox), oldest first.
    pub deliver: Vec<Message>,
    /// Permission replies among `deliver`, checked (invalid ones are never delivered: they
    /// are archived and logged as `permission_reply_dropped`).
    pub advisories: Vec<PermissionAdvisory>,
    /// Ids moved to the held inbox.
    pub held: Vec<String>,
    /// Ids refused (archived).
    pub refused: Vec<String>,
    /// Ids dropped: the held inbox was full, or a permission reply failed its check.
    pub dropped: Vec<String>,
}

fn hold_reason_text(r: HoldReason) -> &'static str {
    match r {
        HoldReason::HoldMode => "inbound policy is hold",
        HoldReason::OtherDirectory => {
            "inbound policy is auto and the sender works in another directory"
        }
        HoldReason::Undecidable => "inbound policy is auto and the sender's directory is unknown",
    }
}

impl Broker {
    fn ingress_of(m: &Message) -> Ingress {
        if m.released == Some(true) {
            Ingress::HeldRelease
        } else if m.room_id().is_some() {
            Ingress::Room
        } else if m.broadcast == Some(true) {
            Ingress::Broadcast
        } else {
            Ingress::Direct
        }
    }

    /// Decide every message in this session's inbox with the inbound policy (see the module
    /// doc). Records that are not messages stay in the inbox untouched.
    ///
    /// # Errors
    /// [`Error::Closed`](crate::Error::Closed), store errors (nothing is moved then).
    pub fn gate_inbox(&self) -> Result<GateReport> {
        self.check_open()?;
        let regs = self.registrations()?;
        let ours = self.directory().map(str::to_string);
        // A lock-free first pass (issue 16): when every record is a well-formed message the
        // policy accepts, the locked pass below would write nothing, so the inbox lock is not
        // taken. The recipient wakes on the rename of a sender's write while the sender still
        // holds that lock for its fsyncs; waiting for it cost ≈ 3 ms on OpenCode's main
        // thread. Renames are atomic, so the unlocked read sees a whole file.
        if let Some(deliver) = self.all_accepted(&regs, ours.as_deref())? {
            let mut report = GateReport {
                deliver,
                ..GateReport::default()
            };
            self.classify_permission_replies(&mut report)?;
            return Ok(report);
        }
        let archive = self.root().archive(self.session_id())?;
        let mut notices: Vec<Notice> = Vec::new();
        let now = crate::time::now_secs();
        let ttl = self.held_ttl.as_secs_f64();
        let sid = self.session_id().to_string();
        let report = self.update_inbox(&sid, |records| {
            let mut report = GateReport::default();
            let window = crate::inbox::archive::archive_window(records);
            let mut keep = Vec::with_capacity(records.len());
            let mut to_hold: Vec<Value> = Vec::new();
            let mut to_archive: Vec<Value> = Vec::new();
            for v in std::mem::take(records) {
                let Some(m) = Message::from_value(&v) else {
                    self.report_not_message(&v);
                    keep.push(v);
                    continue;
                };
                let decision = self.decide_for(&regs, ours.as_deref(), &m);
                tracing::debug!(message_id = ?m.message_id, from = ?m.from_alias, ?decision, "inbound gate");
                match decision {
                    InboundDecision::Accept => {
                        report.deliver.push(m);
                        keep.push(v);
                    }
                    InboundDecision::Hold { reason } => {
                        let mut h = v;
                        if let Value::Object(o) = &mut h {
                            o.insert("held_at".into(), Value::from(now));
                            o.insert("hold_reason".into(), Value::from(hold_reason_text(reason)));
                        }
                        report.held.push(m.message_id.clone());
                        to_hold.push(h);
                        if let Some(sid) = &m.from_session_id {
                            notices.push((
                                sid.clone(),
                                m.receipt_for(Status::Held, hold_reason_text(reason)),
                            ));
                        }
                    }
                    InboundDecision::Refuse { .. } => {
                        report.refused.push(m.message_id.clone());
                        to_archive.push(archived(v, now, "c2c-bridge:refused", self.session_id()));
                        if let Some(sid) = &m.from_session_id {
                            notices.push((
                                sid.clone(),
                                m.receipt_for(
                                    Status::Refused,
                                    "the recipient's inbound policy is refuse",
                                ),
                            ));
                        }
                    }
                }
            }
            if !to_hold.is_empty() {
                let overflow = crate::held::add(
                    self.root(),
                    self.session_id(),
                    to_hold,
                    self.held_cap,
                    ttl,
                    now,
                    self.lock_timeout(),
                )?;
                for h in overflow {
                    let Some(m) = Message::from_value(&h) else {
                        continue;
                    };
                    tracing::debug!(message_id = ?m.message_id, "held inbox full: dropped");
                    report.held.retain(|id| id != &m.message_id);
                    report.dropped.push(m.message_id.clone());
                    notices.retain(|(_, r)| r.message_id != m.message_id);
                    if let Some(sid) = &m.from_session_id {
                        notices.push((
                            sid.clone(),
                            m.receipt_for(Status::Dropped, "the recipient's held inbox is full"),
                        ));
                    }
                    to_archive.push(archived(h, now, "c2c-bridge:held-full", self.session_id()));
                }
            }
            store::append_archive(&archive, &to_archive, window, self.lock_timeout())?;
            let changed =
                !report.held.is_empty() || !report.refused.is_empty() || !report.dropped.is_empty();
            *records = keep;
            Ok((report, changed))
        })?;
        let mut report = report;
        self.classify_permission_replies(&mut report)?;
        if !(report.held.is_empty() && report.refused.is_empty() && report.dropped.is_empty()) {
            self.audit().event(
                "inbound_gate",
                fields! {
                    "session" => short_hash(self.session_id()), "mode" => self.inbound.as_str(),
                    "held" => report.held, "refused" => report.refused, "dropped" => report.dropped,
                },
            );
        }
        self.send_notices(notices);
        Ok(report)
    }

    /// The inbound policy's decision for `m`, from the sender's registration (by session id,
    /// else by alias) and this session's directory.
    fn decide_for(
        &self,
        regs: &[crate::registry::Registration],
        ours: Option<&str>,
        m: &Message,
    ) -> InboundDecision {
        let sender = regs.iter().find(|r| match &m.from_session_id {
            Some(sid) => &r.session_id == sid,
            None => r.alias.eq_ignore_ascii_case(&m.from_alias),
        });
        let facts = sender.map(|r| SenderFacts {
            directory: r.directory.as_deref(),
        });
        decide_inbound(self.inbound, facts.as_ref(), ours, Self::ingress_of(m))
    }

    /// The inbox's messages, read without its lock, when the locked pass of
    /// [`Broker::gate_inbox`] would change nothing: every record a message that needs no
    /// repair and that the policy accepts. `None` otherwise (a record to hold, refuse, repair,
    /// move aside, or one that is not a message): the caller takes the locked path.
    ///
    /// # Errors
    /// As [`crate::inbox::read`] (a corrupt inbox is an error on either path).
    fn all_accepted(
        &self,
        regs: &[crate::registry::Registration],
        ours: Option<&str>,
    ) -> Result<Option<Vec<Message>>> {
        let entries = crate::inbox::read(&self.root().inbox(self.session_id()))?;
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let crate::inbox::Entry::Message {
                value,
                original: None,
            } = e
            else {
                return Ok(None);
            };
            let Some(m) = Message::from_value(&value) else {
                return Ok(None);
            };
            let decision = self.decide_for(regs, ours, &m);
            if decision != InboundDecision::Accept {
                return Ok(None);
            }
            tracing::debug!(message_id = ?m.message_id, from = ?m.from_alias, ?decision, "inbound gate");
            out.push(m);
        }
        Ok(Some(out))
    }

    /// Check every accepted message that is a permission reply against this session's
    /// pending-reply slots: the slot must exist, be active, belong to this session, and the
    /// sender must be one of its supervisors. Invalid replies are taken out of the inbox
    /// (archived, `dropped` receipt, logged); valid ones stay, flagged for the plugin to show
    /// as an advisory. A store error keeps the message, flagged unverified.
    fn classify_permission_replies(&self, report: &mut GateReport) -> Result<()> {
        let replies: Vec<(usize, crate::envelope::PermissionReply)> = report
            .deliver
            .iter()
            .enumerate()
            .filter(|(_, m)| m.receipt.is_none())
            .filter_map(|(i, m)| {
                crate::envelope::parse_permission_reply(&m.content).map(|r| (i, r))
            })
            .collect();
        if replies.is_empty() {
            return Ok(());
        }
        let snapshot = store::read_array(&self.root().pending());
        let now = crate::time::now_secs();
        let mut drop_ids = Vec::new();
        for (i, reply) in replies {
            let m = &report.deliver[i];
            let verdict = match reply.verdict {
                crate::envelope::Verdict::ApproveOnce => "approve-once",
                crate::envelope::Verdict::ApproveAlways => "approve-always",
                _ => "reject",
            };
            let (verified, why) = match &snapshot {
                Ok(records) => {
                    let (outcome, _, _) =
                        crate::pending::evaluate(records, &reply.perm_id, &m.from_alias, now);
                    if !outcome.valid {
                        (Some(false), outcome.error.unwrap_or_default())
                    } else if outcome.requester_session_id.as_deref() != Some(self.session_id()) {
                        (
                            Some(false),
                            "the permission request is not this session's".to_string(),
                        )
                    } else {
                        (Some(true), String::new())
                    }
                }
                Err(e) => (None, e.to_string()),
            };
            self.audit().event(
                "permission_reply_check",
                fields! {
                    "perm" => short_hash(&reply.perm_id), "from_alias" => m.from_alias,
                    "session" => short_hash(self.session_id()),
                    "outcome" => match verified { Some(true) => "valid", Some(false) => "invalid", None => "unverified" },
                    "reason" => why,
                },
            );
            match verified {
                Some(false) => drop_ids.push(m.message_id.clone()),
                v => report.advisories.push(PermissionAdvisory {
                    message_id: m.message_id.clone(),
                    perm_id: reply.perm_id,
                    verdict,
                    from_alias: m.from_alias.clone(),
                    verified: v == Some(true),
                }),
            }
        }
        if drop_ids.is_empty() {
            return Ok(());
        }
        let (taken, _) = self.take_from_inbox_by_ids(&drop_ids)?;
        report.deliver.retain(|m| !drop_ids.contains(&m.message_id));
        report.dropped.extend(drop_ids.iter().cloned());
        self.archive_values(&taken, "c2c-bridge:permission-reply-dropped")?;
        self.report_removed(taken, Status::Dropped, "unverified permission reply");
        Ok(())
    }

    fn take_from_inbox_by_ids(&self, ids: &[String]) -> Result<(Vec<Value>, ())> {
        let sid = self.session_id().to_string();
        let taken = self.update_inbox(&sid, |recs| {
            let (taken, kept): (Vec<Value>, Vec<Value>) =
                std::mem::take(recs).into_iter().partition(|v| {
                    crate::inbox::raw_message_id(v).is_some_and(|id| ids.iter().any(|x| *x == id))
                });
            *recs = kept;
            let changed = !taken.is_empty();
            Ok((taken, changed))
        })?;
        Ok((taken, ()))
    }
}
