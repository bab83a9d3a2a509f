//! The held inbox on the identity-bound handle: listing, and a human's decisions (release,
//! drop) and expiry. The records and file operations are [`crate::held`]; here each outcome
//! gets its receipts, notices and audit line.

use serde_json::Value;

use super::Broker;
use crate::error::Result;
use crate::fields;
use crate::held::{self, HeldMessage, HeldSelector};
use crate::inbox::Message;
use crate::log::short_hash;
use crate::receipts::Status;

impl Broker {
    /// The held inbox, oldest first, numbered from 1. Expired entries are not listed.
    ///
    /// # Errors
    /// [`Error::Closed`](crate::Error::Closed), store errors.
    pub fn held(&self) -> Result<Vec<HeldMessage>> {
        self.check_open()?;
        held::list(
            self.root(),
            self.session_id(),
            self.held_ttl.as_secs_f64(),
            crate::time::now_secs(),
        )
    }

    fn take_held(
        &self,
        sel: Option<HeldSelector>,
        before_write: impl FnOnce(&[Value], &[Value]) -> Result<()>,
    ) -> Result<(Vec<Value>, Vec<Value>)> {
        held::take(
            self.root(),
            self.session_id(),
            sel,
            self.held_ttl.as_secs_f64(),
            self.lock_timeout(),
            before_write,
        )
    }

    /// Append held records to this session's archive, marked with `by`.
    pub(super) fn archive_values(&self, values: &[Value], by: &str) -> Result<()> {
        crate::inbox::archive::append(
            self.root(),
            self.session_id(),
            values,
            by,
            self.lock_timeout(),
        )
    }

    /// Expire held messages past their time: archived, `expired` receipts and notices.
    /// Returns their ids.
    ///
    /// # Errors
    /// [`Error::Closed`](crate::Error::Closed), store errors.
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
    /// [`Error::NoSuchHeld`](crate::Error::NoSuchHeld), [`Error::Closed`](crate::Error::Closed), store errors (nothing is removed then).
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
    /// [`Error::NoSuchHeld`](crate::Error::NoSuchHeld), [`Error::Closed`](crate::Error::Closed), store errors (nothing is moved then).
    pub fn release_held(&self, sel: HeldSelector) -> Result<Vec<String>> {
        self.check_open()?;
        let (selected, expired, set_aside) = held::release(
            self.root(),
            self.session_id(),
            sel,
            self.held_ttl.as_secs_f64(),
            self.lock_timeout(),
        )?;
        self.report_set_aside(self.session_id(), set_aside);
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
    pub(super) fn report_removed(
        &self,
        values: Vec<Value>,
        status: Status,
        why: &str,
    ) -> Vec<String> {
        let mut notices = Vec::new();
        let mut ids = Vec::new();
        for v in &values {
            if let Some(m) = Message::from_value(v) {
                ids.push(m.message_id.clone());
                if let Some(sid) = &m.from_session_id {
                    notices.push((sid.clone(), m.receipt_for(status, why)));
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
}
