//! Direct messages, broadcast, one's own inbox (peek / ack / drain) and the sweep.
//!
//! Delivery is at-least-once: [`Broker::peek`] does not consume; [`Broker::ack`] moves
//! exactly the named messages to `archive/<session_id>.jsonl` once the caller has handed
//! them on. A crash between the two means a message is seen again; consumers drop
//! duplicates by `message_id`.

use std::collections::HashSet;

use serde_json::Value;

use super::Broker;
use crate::error::{Error, Result};
use crate::fields;
use crate::ids::alias_eq;
use crate::inbox::{raw_message_id, Message};
use crate::log::short_hash;
use crate::policy::rate::RateDecision;
use crate::receipts::Status;
use crate::registry::Registration;
use crate::store;

/// Extra fields for a send.
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    /// The hop list inherited from the message that triggered the sending turn (session ids,
    /// oldest first). The broker appends this session; the hop limit is enforced by the
    /// caller's policy before sending.
    pub via: Vec<String>,
}

/// What a send returns: the message is durably in the recipient's inbox (`status:
/// "queued"`), not yet shown to anyone.
#[derive(Debug, Clone, PartialEq)]
pub struct SendReceipt {
    /// The new message's uuid.
    pub message_id: String,
    /// The recipient alias as stored (`"<alias>#<room>"` for rooms).
    pub to_alias: String,
    /// The recipient's session id.
    pub to_session_id: String,
    /// Epoch seconds of the enqueue.
    pub ts: f64,
    /// Always `"queued"` from the broker; later outcomes are reported by receipts.
    pub status: &'static str,
}

/// A recipient skipped by a broadcast or a room send.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedRecipient {
    /// Its alias.
    pub alias: String,
    /// Why (`"not alive"`).
    pub reason: &'static str,
}

/// The result of [`Broker::send_all`] and [`Broker::send_room`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BroadcastReport {
    /// One receipt per recipient reached.
    pub sent: Vec<SendReceipt>,
    /// Recipients not reached.
    pub skipped: Vec<SkippedRecipient>,
}

/// The result of [`Broker::ack`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AckReport {
    /// Ids moved to the archive by this call.
    pub acked: Vec<String>,
    /// Ids not in the inbox (already acknowledged, or never there).
    pub missing: Vec<String>,
}

impl Broker {
    fn check_content(&self, content: &str) -> Result<()> {
        // Whitespace and invisible characters (zero-width spaces and joiners, word joiner,
        // BOM) alone are no message.
        let invisible = |c: char| {
            c.is_whitespace() || matches!(c, '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}')
        };
        if content.chars().all(invisible) {
            return Err(Error::Empty);
        }
        if content.len() > self.max_message_bytes() {
            return Err(Error::TooLarge {
                size: content.len(),
                limit: self.max_message_bytes(),
            });
        }
        Ok(())
    }

    /// Build the message for one recipient after the hop and rate checks. A refusal is
    /// recorded as a receipt in this session's own receipts file before it is returned.
    fn prepare(
        &self,
        to_alias: String,
        to_session_id: &str,
        content: &str,
        opts: &SendOptions,
    ) -> Result<Message> {
        let message_id = uuid::Uuid::new_v4().to_string();
        let now = crate::time::now_secs();
        // Hops name sessions (session ids, or a c2c sender's alias when it wrote no via):
        // anything else, or a huge entry, is a malformed chain.
        for hop in &opts.via {
            let ok = !hop.is_empty()
                && hop.len() <= 128
                && hop
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if !ok {
                return Err(Error::InvalidOption {
                    option: "via".into(),
                    reason: format!(
                        "hop {:?} is not a session id or alias",
                        hop.chars().take(64).collect::<String>()
                    ),
                });
            }
        }
        let via = match crate::policy::hops::extend_via(&opts.via, self.session_id()) {
            Ok(via) => via,
            Err(limit) => {
                self.own_receipt(
                    &message_id,
                    &to_alias,
                    Status::Refused,
                    Some(limit.to_string()),
                );
                self.audit().event(
                    "hop_limit",
                    fields! {"message_id" => message_id, "to_alias" => to_alias, "would_be" => limit.would_be},
                );
                return Err(Error::HopLimit {
                    message_id,
                    would_be: limit.would_be,
                    max: limit.max,
                });
            }
        };
        if let RateDecision::Limited { retry_after_s } = self.rate_check(to_session_id, now) {
            self.own_receipt(
                &message_id,
                &to_alias,
                Status::RateLimited,
                Some(format!("retry in {retry_after_s:.1} s")),
            );
            return Err(Error::RateLimited {
                to_alias,
                retry_after_s,
            });
        }
        Ok(Message {
            from_alias: self.alias().to_string(),
            to_alias,
            content: content.to_string(),
            ts: now,
            message_id,
            deferrable: None,
            ephemeral: None,
            from_session_id: Some(self.session_id().to_string()),
            via,
            broadcast: None,
            released: None,
            receipt: None,
            repaired: None,
            extra: Default::default(),
        })
    }

    /// Record an outcome of one of our own messages (never fails the caller).
    pub(super) fn own_receipt(
        &self,
        message_id: &str,
        to_alias: &str,
        status: Status,
        reason: Option<String>,
    ) {
        let _ = crate::receipts::append(
            self.root(),
            self.session_id(),
            &crate::receipts::Receipt {
                message_id: message_id.to_string(),
                status,
                to_alias: to_alias.to_string(),
                reason,
                ts: crate::time::now_secs(),
            },
        );
    }

    /// [`crate::inbox::update`] of `session_id`'s inbox; records moved aside on the way are
    /// reported (audit line, and a `unreadable` receipt to their sender when known).
    pub(super) fn update_inbox<T>(
        &self,
        session_id: &str,
        f: impl FnOnce(&mut Vec<Value>) -> Result<(T, bool)>,
    ) -> Result<T> {
        let (out, moved) = crate::inbox::update(self.root(), session_id, self.lock_timeout(), f)?;
        self.report_set_aside(session_id, moved);
        Ok(out)
    }

    /// The audit line and receipts for inbox records that were moved aside.
    pub(super) fn report_set_aside(&self, session_id: &str, moved: Vec<crate::inbox::SetAside>) {
        if moved.is_empty() {
            return;
        }
        self.audit().event(
            "inbox_set_aside",
            fields! {
                "session" => short_hash(session_id), "count" => moved.len(),
                "kept_at" => moved.iter().filter_map(|s| s.kept_at.as_ref().map(|p| p.display().to_string())).collect::<Vec<_>>(),
            },
        );
        let notices = moved
            .into_iter()
            .filter_map(|s| {
                Some((
                    s.sender_session_id?,
                    crate::receipts::Receipt {
                        message_id: s.message_id.unwrap_or_default(),
                        status: Status::Unreadable,
                        to_alias: s.to_alias.unwrap_or_default(),
                        reason: Some(
                            "the recipient could not read the stored record; it was set aside unread"
                                .into(),
                        ),
                        ts: crate::time::now_secs(),
                    },
                ))
            })
            .collect();
        self.send_notices(notices);
    }

    /// Append `msg` to `session_id`'s inbox under its lock; the receipt says `queued`.
    fn enqueue(&self, to_session_id: &str, msg: Message, event: &str) -> Result<SendReceipt> {
        let value = msg.to_value();
        self.update_inbox(to_session_id, |records| {
            records.push(value);
            Ok(((), true))
        })?;
        self.audit().event(
            event,
            fields! {
                "from_alias" => msg.from_alias, "to_alias" => msg.to_alias,
                "message_id" => msg.message_id, "bytes" => msg.content.len(),
                "to_session" => short_hash(to_session_id),
            },
        );
        Ok(SendReceipt {
            message_id: msg.message_id,
            to_alias: msg.to_alias,
            to_session_id: to_session_id.to_string(),
            ts: msg.ts,
            status: "queued",
        })
    }

    /// Send `content` to the live session registered as `to_alias` (case-insensitive).
    ///
    /// # Errors
    /// [`Error::Empty`], [`Error::TooLarge`] (never truncated), [`Error::SendToSelf`],
    /// [`Error::UnknownRecipient`], [`Error::RecipientDead`] ("recipient is not alive"),
    /// [`Error::NotRegistered`] when our own registration is gone, [`Error::Closed`], store
    /// errors.
    pub fn send(&self, to_alias: &str, content: &str, opts: &SendOptions) -> Result<SendReceipt> {
        self.check_open()?;
        self.check_content(content)?;
        if alias_eq(to_alias, self.alias()) {
            return Err(Error::SendToSelf {
                alias: self.alias().to_string(),
            });
        }
        let regs = self.registrations()?;
        self.own_registration(&regs)?;
        let matching: Vec<&Registration> = regs
            .iter()
            .filter(|r| alias_eq(&r.alias, to_alias))
            .collect();
        if matching.is_empty() {
            return Err(Error::UnknownRecipient {
                alias: to_alias.to_string(),
                root: self.root().path().to_path_buf(),
            });
        }
        let target = matching
            .into_iter()
            .filter(|r| r.is_alive())
            .max_by(|a, b| a.registered_at.total_cmp(&b.registered_at))
            .ok_or_else(|| Error::RecipientDead {
                alias: to_alias.to_string(),
            })?;
        let msg = self.prepare(target.alias.clone(), &target.session_id, content, opts)?;
        self.enqueue(&target.session_id, msg, "dm_enqueue")
    }

    /// Send `content` to every other live registration.
    ///
    /// # Errors
    /// As [`Broker::send`], except recipient errors: dead peers are listed in `skipped`.
    pub fn send_all(&self, content: &str, opts: &SendOptions) -> Result<BroadcastReport> {
        self.check_open()?;
        self.check_content(content)?;
        let regs = self.registrations()?;
        self.own_registration(&regs)?;
        let mut out = BroadcastReport::default();
        for r in regs.iter().filter(|r| r.session_id != self.session_id()) {
            if !r.is_alive() {
                out.skipped.push(SkippedRecipient {
                    alias: r.alias.clone(),
                    reason: "not alive",
                });
                continue;
            }
            let mut msg = match self.prepare(r.alias.clone(), &r.session_id, content, opts) {
                Ok(m) => m,
                Err(Error::RateLimited { .. }) => {
                    out.skipped.push(SkippedRecipient {
                        alias: r.alias.clone(),
                        reason: "rate limited",
                    });
                    continue;
                }
                Err(e) => return Err(e),
            };
            msg.broadcast = Some(true);
            out.sent
                .push(self.enqueue(&r.session_id, msg, "broadcast_enqueue")?);
        }
        Ok(out)
    }

    pub(super) fn enqueue_room(
        &self,
        to_session_id: &str,
        to_alias_with_room: String,
        content: &str,
        opts: &SendOptions,
    ) -> Result<SendReceipt> {
        let msg = self.prepare(to_alias_with_room, to_session_id, content, opts)?;
        self.enqueue(to_session_id, msg, "room_enqueue")
    }

    pub(super) fn check_content_pub(&self, content: &str) -> Result<()> {
        self.check_content(content)
    }

    /// This session's inbox, oldest first, without consuming it. Records that are not
    /// messages are skipped (and left in the file); a message whose text held invalid
    /// Unicode is returned repaired (`repaired` set), see [`crate::inbox`].
    ///
    /// # Errors
    /// [`Error::Closed`], [`Error::StoreCorrupt`], store errors.
    pub fn peek(&self) -> Result<Vec<Message>> {
        self.check_open()?;
        let entries = crate::inbox::read(&self.root().inbox(self.session_id()))?;
        for e in &entries {
            if let crate::inbox::Entry::Other(v) = e {
                self.report_not_message(v);
            }
        }
        Ok(entries
            .iter()
            .filter_map(crate::inbox::Entry::message)
            .collect())
    }

    /// Report a record of this session's inbox that is not a message (it stays in the file,
    /// never delivered): one `inbox_not_message` audit line per record per handle, naming its
    /// keys, never its values. `doctor` lists them too.
    pub(super) fn report_not_message(&self, v: &Value) {
        use sha2::{Digest, Sha256};
        let digest = hex::encode(Sha256::digest(v.to_string().as_bytes()));
        let first = self
            .not_messages_reported
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(digest[..16].to_string());
        if first {
            self.audit().event(
                "inbox_not_message",
                fields! {
                    "session" => short_hash(self.session_id()),
                    "record" => &digest[..16],
                    "keys" => crate::inbox::describe_not_message(v),
                },
            );
        }
    }

    /// Move exactly the messages with these ids from the inbox to
    /// `archive/<session_id>.jsonl` (with `drained_at`, `drained_by`, `session_id`). The
    /// archive is appended and fsync'd before the inbox is rewritten, so a crash can repeat
    /// a message but never lose one.
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn ack(&self, message_ids: &[String]) -> Result<AckReport> {
        self.check_open()?;
        let wanted: HashSet<&str> = message_ids.iter().map(String::as_str).collect();
        self.take_from_inbox(
            |v| raw_message_id(v).is_some_and(|id| wanted.contains(&*id)),
            "ack",
        )
        .map(|taken| {
            let acked: Vec<String> = taken
                .iter()
                .filter_map(|v| raw_message_id(v).map(String::from))
                .collect();
            let got: HashSet<&str> = acked.iter().map(String::as_str).collect();
            let mut seen = HashSet::new();
            let missing = message_ids
                .iter()
                .filter(|id| !got.contains(id.as_str()) && seen.insert(id.as_str()))
                .cloned()
                .collect();
            AckReport { acked, missing }
        })
    }

    /// c2c's drain: take every record from the inbox (archived as by [`Broker::ack`]); the
    /// messages are returned, any other record is archived too and reported.
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn drain(&self) -> Result<Vec<Message>> {
        self.check_open()?;
        let taken = self.take_from_inbox(|_| true, "drain")?;
        let mut out = Vec::with_capacity(taken.len());
        for v in &taken {
            match Message::from_value(v) {
                Some(m) => out.push(m),
                // archived with the rest, as c2c's drain does; reported, not hidden
                None => self.report_not_message(v),
            }
        }
        Ok(out)
    }

    /// [`crate::inbox::archive::take`] on this session's inbox, with the audit line and the
    /// reports of records set aside.
    pub(super) fn take_from_inbox(
        &self,
        pick: impl Fn(&Value) -> bool,
        how: &str,
    ) -> Result<Vec<Value>> {
        let (taken, moved) = crate::inbox::archive::take(
            self.root(),
            self.session_id(),
            self.lock_timeout(),
            pick,
            &format!("c2c-bridge:{how}"),
        )?;
        self.report_set_aside(self.session_id(), moved);
        if !taken.is_empty() {
            self.audit().event(
                "inbox_ack",
                fields! {"session" => short_hash(self.session_id()), "count" => taken.len(), "how" => how},
            );
        }
        Ok(taken)
    }

    /// Take the inbox lock briefly: lets tests and tools wait for a writer.
    #[doc(hidden)]
    pub fn sync_inbox(&self) -> Result<()> {
        let inbox = self.root().inbox(self.session_id());
        store::with_locks(&[&inbox], self.lock_timeout(), || Ok(()))
    }
}
