//! Outcomes told to senders: acknowledgement of delivered messages, the `paused` report,
//! this session's own receipts, and the notices (receipt lines and, for bad outcomes, a framed
//! `c2c-system` message) sent to other sessions once locks are released. The receipt records
//! are [`crate::receipts`].

use super::Broker;
use crate::error::Result;
use crate::fields;
use crate::inbox::Message;
use crate::receipts::{Receipt, Status};

/// A notice to send once locks are released: (sender session, receipt).
pub(super) type Notice = (String, Receipt);

impl Broker {
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
            .filter_map(|m| Some((m.from_session_id.clone()?, m.receipt_for(status, ""))))
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
    /// [`Error::Closed`](crate::Error::Closed), store errors.
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
                    m.receipt_for(
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
    /// [`Error::Closed`](crate::Error::Closed), store errors.
    pub fn receipts(&self, limit: usize) -> Result<Vec<Receipt>> {
        self.check_open()?;
        crate::receipts::read(self.root(), self.session_id(), limit, true)
    }
}
