//! The inbound choke point and the held inbox.
//!
//! Every message that could reach this session's model passes [`Broker::gate_inbox`] first —
//! direct messages, room and broadcast copies, receipt notices, redeliveries after a crash, and
//! messages a human released from the held inbox — and one function,
//! [`crate::policy::inbound::decide_inbound`], decides for all of them. Accepted messages stay
//! in the inbox for delivery; held ones move to `held/<session_id>.json`; refused ones move to
//! the archive. The sender gets a receipt for each outcome (and a framed notice in its own
//! session when the outcome is bad).
//!
//! Lock order: this session's inbox lock, then its held-file lock. Notices to other sessions
//! are enqueued only after both are released, so two sessions gating at once cannot deadlock.

use std::collections::HashSet;

use serde_json::Value;

use super::Broker;
use crate::error::{Error, Result};
use crate::fields;
use crate::inbox::{archived, raw_message_id, Message};
use crate::log::short_hash;
use crate::policy::inbound::{decide_inbound, HoldReason, InboundDecision, Ingress, SenderFacts};
use crate::receipts::{Receipt, Status};
use crate::store::{self, LockGuard};

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

/// A held message as listed for a human.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldMessage {
    /// 1-based number, in arrival order (what `/peers-inbox accept <n>` takes).
    pub index: usize,
    /// The message.
    pub message: Message,
    /// Epoch seconds when it was held.
    pub held_at: f64,
    /// Epoch seconds when it expires.
    pub expires_at: f64,
    /// Why it was held, in words.
    pub reason: String,
}

/// Which held messages an action applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldSelector {
    /// The n-th (1-based) in the current listing.
    Index(usize),
    /// All of them.
    All,
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

/// A notice to send once locks are released: (sender session, receipt).
pub(super) type Notice = (String, Receipt);

impl Broker {
    fn held_path(&self) -> Result<std::path::PathBuf> {
        let dir = store::file::ensure_private_dir(&self.root().path().join("held"))?;
        Ok(dir.join(format!("{}.json", self.session_id())))
    }

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
    /// [`Error::Closed`], store errors (nothing is moved then).
    pub fn gate_inbox(&self) -> Result<GateReport> {
        self.check_open()?;
        let regs = self.registrations()?;
        let ours = self.directory().map(str::to_string);
        let held_path = self.held_path()?;
        let archive = self.root().archive(self.session_id())?;
        let mut notices: Vec<Notice> = Vec::new();
        let now = crate::time::now_secs();
        let ttl = self.held_ttl.as_secs_f64();
        let sid = self.session_id().to_string();
        let report = self.update_inbox(&sid, |records| {
            let mut report = GateReport::default();
            let window = super::messaging::archive_window(records);
            let mut keep = Vec::with_capacity(records.len());
            let mut to_hold: Vec<Value> = Vec::new();
            let mut to_archive: Vec<Value> = Vec::new();
            for v in std::mem::take(records) {
                let Some(m) = Message::from_value(&v) else {
                    self.report_not_message(&v);
                    keep.push(v);
                    continue;
                };
                let sender = regs.iter().find(|r| match &m.from_session_id {
                    Some(sid) => &r.session_id == sid,
                    None => r.alias.eq_ignore_ascii_case(&m.from_alias),
                });
                let facts = sender.map(|r| SenderFacts {
                    directory: r.directory.as_deref(),
                });
                let decision = decide_inbound(
                    self.inbound,
                    facts.as_ref(),
                    ours.as_deref(),
                    Self::ingress_of(&m),
                );
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
                                receipt(&m, Status::Held, hold_reason_text(reason)),
                            ));
                        }
                    }
                    InboundDecision::Refuse { .. } => {
                        report.refused.push(m.message_id.clone());
                        to_archive.push(archived(v, now, "c2c-bridge:refused", self.session_id()));
                        if let Some(sid) = &m.from_session_id {
                            notices.push((
                                sid.clone(),
                                receipt(
                                    &m,
                                    Status::Refused,
                                    "the recipient's inbound policy is refuse",
                                ),
                            ));
                        }
                    }
                }
            }
            if !to_hold.is_empty() {
                store::update_array(&held_path, self.lock_timeout(), |held| {
                    // Expired entries do not count against the cap.
                    let live = held
                        .iter()
                        .filter(|h| {
                            h.get("held_at")
                                .and_then(Value::as_f64)
                                .is_some_and(|t| t + ttl > now)
                        })
                        .count();
                    let room = self.held_cap.saturating_sub(live);
                    // A message already held is there from a hold that crashed before
                    // the inbox was rewritten: it is not held twice.
                    let already: HashSet<String> = held
                        .iter()
                        .filter_map(|h| raw_message_id(h).map(|id| id.into_owned()))
                        .collect();
                    to_hold.retain(|h| {
                        raw_message_id(h).is_none_or(|id| !already.contains(id.as_ref()))
                    });
                    for (i, h) in to_hold.drain(..).enumerate() {
                        if i < room {
                            held.push(h);
                        } else if let Some(m) = Message::from_value(&h) {
                            tracing::debug!(message_id = ?m.message_id, "held inbox full: dropped");
                            report.held.retain(|id| id != &m.message_id);
                            report.dropped.push(m.message_id.clone());
                            notices.retain(|(_, r)| r.message_id != m.message_id);
                            if let Some(sid) = &m.from_session_id {
                                notices.push((
                                    sid.clone(),
                                    receipt(
                                        &m,
                                        Status::Dropped,
                                        "the recipient's held inbox is full",
                                    ),
                                ));
                            }
                            to_archive.push(archived(
                                h,
                                now,
                                "c2c-bridge:held-full",
                                self.session_id(),
                            ));
                        }
                    }
                    Ok(((), true))
                })?;
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

    /// Write each receipt to its sender's receipts file and, for a bad outcome, put a framed
    /// notice in the sender's inbox (from `c2c-system`). Failures are logged, never raised:
    /// the outcome already happened.
    pub(super) fn send_notices(&self, notices: Vec<Notice>) {
        if notices.is_empty() {
            return;
        }
        let regs = self.registrations().unwrap_or_default();
        for (sender_sid, r) in notices {
            if crate::ids::validate_session_id(&sender_sid).is_err() {
                continue;
            }
            let _ = crate::receipts::append(self.root(), &sender_sid, &r);
            // Tell the sender in its session only when it ended badly, only if the sender is
            // still registered (we never create inboxes for unknown session ids), and never
            // about a notice (no receipts about receipts).
            let Some(sender) = regs.iter().find(|x| x.session_id == sender_sid) else {
                continue;
            };
            if !r.status.is_bad() || sender_sid == self.session_id() {
                continue;
            }
            let notice = Message {
                from_alias: "c2c-system".into(),
                to_alias: sender.alias.clone(),
                content: format!(
                    "Your message {} to {} was {}{}.",
                    r.message_id,
                    r.to_alias,
                    r.status.as_str().replace('_', " "),
                    r.reason
                        .as_deref()
                        .map(|x| format!(": {x}"))
                        .unwrap_or_default()
                ),
                ts: crate::time::now_secs(),
                message_id: uuid::Uuid::new_v4().to_string(),
                deferrable: Some(true),
                ephemeral: None,
                from_session_id: Some(self.session_id().to_string()),
                via: Vec::new(),
                broadcast: None,
                released: None,
                receipt: Some(r.clone()),
                repaired: None,
                extra: Default::default(),
            };
            let value = notice.to_value();
            let res = self.update_inbox(&sender_sid, |recs| {
                recs.push(value);
                Ok(((), true))
            });
            if let Err(e) = res {
                self.audit()
                    .event("receipt_notice_failed", fields! {"error" => e.to_string()});
            }
        }
    }

    /// The held inbox, oldest first, numbered from 1. Expired entries are not listed.
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn held(&self) -> Result<Vec<HeldMessage>> {
        self.check_open()?;
        let now = crate::time::now_secs();
        let ttl = self.held_ttl.as_secs_f64();
        Ok(store::read_array(&self.held_path()?)?
            .iter()
            .filter_map(|v| {
                let held_at = v.get("held_at").and_then(Value::as_f64)?;
                let message = Message::from_value(v)?;
                (held_at + ttl > now).then_some((message, held_at, v))
            })
            .enumerate()
            .map(|(i, (message, held_at, v))| HeldMessage {
                index: i + 1,
                message,
                held_at,
                expires_at: held_at + ttl,
                reason: v
                    .get("hold_reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            })
            .collect())
    }

    /// Take the selected live held messages (and every expired one) out of the held file.
    /// `before_write(selected, expired)` runs under the held lock *before* the held file is
    /// rewritten, so whatever it does with them (archive, put back in the inbox) is durable
    /// first: a failure there leaves the held file untouched, and a crash after it leaves at
    /// most a copy behind, never a loss.
    fn take_held(
        &self,
        sel: Option<HeldSelector>,
        before_write: impl FnOnce(&[Value], &[Value]) -> Result<()>,
    ) -> Result<(Vec<Value>, Vec<Value>)> {
        let now = crate::time::now_secs();
        let ttl = self.held_ttl.as_secs_f64();
        store::update_array(&self.held_path()?, self.lock_timeout(), |held| {
            let (live, expired): (Vec<Value>, Vec<Value>) = held.iter().cloned().partition(|h| {
                h.get("held_at")
                    .and_then(Value::as_f64)
                    .is_some_and(|t| t + ttl > now)
            });
            let mut selected = Vec::new();
            let mut rest = Vec::new();
            for (i, h) in live.into_iter().enumerate() {
                let pick = match sel {
                    Some(HeldSelector::All) => true,
                    Some(HeldSelector::Index(n)) => n == i + 1,
                    None => false,
                };
                if pick {
                    selected.push(h);
                } else {
                    rest.push(h);
                }
            }
            if let Some(HeldSelector::Index(n)) = sel {
                if selected.is_empty() {
                    return Err(Error::NoSuchHeld { index: n });
                }
            }
            let changed = !selected.is_empty() || !expired.is_empty();
            if changed {
                before_write(&selected, &expired)?;
                *held = rest;
            }
            Ok(((selected, expired), changed))
        })
    }

    /// Append held records to this session's archive, marked with `by`.
    fn archive_values(&self, values: &[Value], by: &str) -> Result<()> {
        if values.is_empty() {
            return Ok(());
        }
        let now = crate::time::now_secs();
        let lines: Vec<Value> = values
            .iter()
            .map(|v| archived(v.clone(), now, by, self.session_id()))
            .collect();
        store::append_archive(
            &self.root().archive(self.session_id())?,
            &lines,
            super::messaging::archive_window(values),
            self.lock_timeout(),
        )
        .map(drop)
    }

    /// Expire held messages past their time: archived, `expired` receipts and notices.
    /// Returns their ids.
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn expire_held(&self) -> Result<Vec<String>> {
        self.check_open()?;
        let (_, expired) = self.take_held(None, |_, expired| {
            self.archive_values(expired, "c2c-bridge:expired")
        })?;
        Ok(self.report_removed(expired, Status::Expired, "held too long"))
    }

    /// Remove held messages without delivering them: archived, `dropped` receipts and
    /// notices. Returns their ids.
    ///
    /// # Errors
    /// [`Error::NoSuchHeld`], [`Error::Closed`], store errors (nothing is removed then).
    pub fn drop_held(&self, sel: HeldSelector) -> Result<Vec<String>> {
        self.check_open()?;
        let (selected, expired) = self.take_held(Some(sel), |selected, expired| {
            self.archive_values(expired, "c2c-bridge:expired")?;
            self.archive_values(selected, "c2c-bridge:dropped")
        })?;
        self.report_removed(expired, Status::Expired, "held too long");
        Ok(self.report_removed(selected, Status::Dropped, "dropped by the recipient"))
    }

    /// Release held messages (a human's decision): they go back to the inbox marked
    /// `released`, and take the normal delivery path, where the gate accepts them unless the
    /// policy is `refuse`. Returns their ids. The inbox is written before the held file (both
    /// locked, inbox first as in [`Broker::gate_inbox`]), so a failure moves nothing.
    ///
    /// # Errors
    /// [`Error::NoSuchHeld`], [`Error::Closed`], store errors (nothing is moved then).
    pub fn release_held(&self, sel: HeldSelector) -> Result<Vec<String>> {
        self.check_open()?;
        let inbox = self.root().inbox(self.session_id());
        let _inbox_guard =
            LockGuard::acquire(&store::lock::sidecar_path(&inbox), self.lock_timeout())?;
        let mut set_aside: Vec<crate::inbox::SetAside> = Vec::new();
        let (selected, expired) = self.take_held(Some(sel), |selected, expired| {
            self.archive_values(expired, "c2c-bridge:expired")?;
            let (_, moved) =
                crate::inbox::update_locked(self.root(), self.session_id(), |records| {
                    // Already back from a release that crashed before the held file was
                    // rewritten: not added twice.
                    let have: HashSet<String> = records
                        .iter()
                        .filter_map(|v| raw_message_id(v).map(|id| id.into_owned()))
                        .collect();
                    let selected = selected
                        .iter()
                        .filter(|v| raw_message_id(v).is_none_or(|id| !have.contains(id.as_ref())));
                    records.extend(selected.cloned().map(|mut v| {
                        if let Value::Object(o) = &mut v {
                            o.remove("held_at");
                            o.remove("hold_reason");
                            o.insert("released".into(), Value::from(true));
                        }
                        v
                    }));
                    Ok(((), true))
                })?;
            set_aside = moved;
            Ok(())
        })?;
        self.report_set_aside(self.session_id(), std::mem::take(&mut set_aside));
        self.report_removed(expired, Status::Expired, "held too long");
        let ids: Vec<String> = selected
            .iter()
            .filter_map(|v| crate::inbox::raw_message_id(v).map(String::from))
            .collect();
        tracing::debug!(?ids, "released from the held inbox");
        self.audit().event(
            "held_release",
            fields! {"session" => short_hash(self.session_id()), "ids" => ids},
        );
        Ok(ids)
    }

    /// Receipts, notices and the audit line for held records that left for good.
    fn report_removed(&self, values: Vec<Value>, status: Status, why: &str) -> Vec<String> {
        let mut notices = Vec::new();
        let mut ids = Vec::new();
        for v in &values {
            if let Some(m) = Message::from_value(v) {
                ids.push(m.message_id.clone());
                if let Some(sid) = &m.from_session_id {
                    notices.push((sid.clone(), receipt(&m, status, why)));
                }
            }
        }
        if !ids.is_empty() {
            tracing::debug!(
                ?ids,
                status = status.as_str(),
                why,
                "removed from the held inbox"
            );
            self.audit().event(
                "held_remove",
                fields! {"session" => short_hash(self.session_id()), "status" => status.as_str(), "ids" => ids},
            );
        }
        self.send_notices(notices);
        ids
    }

    /// Acknowledge messages the plugin has handed on: [`Broker::ack`] plus a receipt for each
    /// sender — `delivered` after a successful injection, `duplicate` for a copy that was
    /// already shown. Returns the ids actually moved.
    ///
    /// # Errors
    /// As [`Broker::ack`].
    pub fn acknowledge(&self, message_ids: &[String], status: Status) -> Result<Vec<String>> {
        self.check_open()?;
        // The receipts are built from the records actually taken (one read of the inbox,
        // under its lock), not from an earlier peek.
        let taken = self.take_from_inbox(
            |v| {
                crate::inbox::raw_message_id(v)
                    .is_some_and(|id| message_ids.iter().any(|m| *m == id))
            },
            "ack",
        )?;
        let taken: Vec<Message> = taken.iter().filter_map(Message::from_value).collect();
        let notices: Vec<Notice> = taken
            .iter()
            .filter(|m| m.receipt.is_none())
            .filter_map(|m| Some((m.from_session_id.clone()?, receipt(m, status, ""))))
            .collect();
        self.send_notices(notices);
        tracing::debug!(ids = ?taken.iter().map(|m| &m.message_id).collect::<Vec<_>>(), status = status.as_str(), "acknowledged");
        Ok(taken.into_iter().map(|m| m.message_id).collect())
    }

    /// Tell the senders of these queued messages that delivery is paused by this session's
    /// user (a `paused` receipt each; the messages stay in the inbox, nothing is archived).
    /// Returns the ids found in the inbox.
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn report_paused(&self, message_ids: &[String]) -> Result<Vec<String>> {
        self.check_open()?;
        let found: Vec<Message> = self
            .peek()?
            .into_iter()
            .filter(|m| message_ids.contains(&m.message_id))
            .collect();
        let notices: Vec<Notice> = found
            .iter()
            .filter(|m| m.receipt.is_none())
            .filter_map(|m| {
                Some((
                    m.from_session_id.clone()?,
                    receipt(
                        m,
                        Status::Paused,
                        "the recipient's user stopped a turn; queued until they prompt again",
                    ),
                ))
            })
            .collect();
        self.send_notices(notices);
        Ok(found.into_iter().map(|m| m.message_id).collect())
    }

    /// This session's own receipts (the latest outcome per message), oldest first.
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn receipts(&self, limit: usize) -> Result<Vec<Receipt>> {
        self.check_open()?;
        crate::receipts::read(self.root(), self.session_id(), limit, true)
    }

    /// Take the inbox lock briefly: lets tests and tools wait for a writer.
    #[doc(hidden)]
    pub fn sync_inbox(&self) -> Result<()> {
        let inbox = self.root().inbox(self.session_id());
        let _g = LockGuard::acquire(&store::lock::sidecar_path(&inbox), self.lock_timeout())?;
        Ok(())
    }
}

/// A receipt for `m` with `status` and, when not empty, the reason `why`.
pub(super) fn receipt(m: &Message, status: Status, why: &str) -> Receipt {
    Receipt {
        message_id: m.message_id.clone(),
        status,
        to_alias: m.to_alias.clone(),
        reason: (!why.is_empty()).then(|| why.to_string()),
        ts: crate::time::now_secs(),
    }
}
