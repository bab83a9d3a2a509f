//! Rooms on the identity-bound handle: each call binds this session's own registration
//! ([`rooms::Member`]), runs the room operation of [`crate::rooms`] (files, locks and c2c's
//! access rules live there), fans a room message out to the live members' inboxes with
//! `to_alias = "<alias>#<room_id>"`, and writes the audit line.

use serde_json::Value;

use super::messaging::{BroadcastReport, SendOptions, SkippedRecipient};
use super::Broker;
use crate::error::{Error, Result};
use crate::fields;
use crate::ids::{validate_alias, validate_room_id};
use crate::rooms::{self, Member, RoomInfo, RoomMessage, Visibility};

impl Broker {
    fn member(&self) -> Member<'_> {
        Member {
            session_id: self.session_id(),
            alias: self.alias(),
        }
    }

    /// Create `room_id` with c2c's `meta.json` (`visibility`, `invited_members`, `created_by`
    /// — lower-cased, as c2c stores it — plus our `room_id`, `created_at`) and join it, like
    /// c2c's `rooms create`. The room directory is made with one `mkdir`, so of two creators
    /// exactly one wins.
    ///
    /// # Errors
    /// [`Error::RoomExists`], [`Error::InvalidId`] (room id or an invited alias),
    /// [`Error::NotRegistered`], [`Error::Closed`], store errors.
    pub fn create_room(
        &self,
        room_id: &str,
        visibility: Visibility,
        invited: &[String],
    ) -> Result<()> {
        self.check_open()?;
        validate_room_id(room_id)?;
        for a in invited {
            validate_alias(a)?;
        }
        self.own_registration(&self.registrations()?)?;
        let meta = rooms::membership::create(
            self.root(),
            room_id,
            visibility,
            invited,
            self.member(),
            self.lock_timeout(),
        )?;
        self.audit().event(
            "room_create",
            fields! {"room_id" => room_id, "alias" => self.alias(), "visibility" => meta.visibility.as_str()},
        );
        Ok(())
    }

    /// Join `room_id`, creating it (public, with this alias as creator) if needed, as c2c's
    /// `join_room` does. Joining twice is a no-op; a row of this alias under an older session
    /// id is moved to this session (c2c keeps one row per alias).
    ///
    /// # Errors
    /// [`Error::NotInvited`] for an invite-only room that neither lists this alias nor has
    /// it as a member; [`Error::InvalidId`], [`Error::Closed`], store errors (an unparseable
    /// `meta.json` is [`Error::StoreCorrupt`], never "public").
    pub fn join_room(&self, room_id: &str) -> Result<()> {
        self.check_open()?;
        validate_room_id(room_id)?;
        rooms::membership::join(self.root(), room_id, self.member(), self.lock_timeout())?;
        self.audit().event(
            "room_join",
            fields! {"room_id" => room_id, "alias" => self.alias()},
        );
        Ok(())
    }

    /// Add `alias` to an invite-only room's `invited_members` (kept as is when already
    /// there). Only members may invite (c2c's `send_room_invite`).
    ///
    /// # Errors
    /// [`Error::NotMember`], [`Error::UnknownRoom`], [`Error::InvalidId`], [`Error::Closed`],
    /// store errors.
    pub fn invite_to_room(&self, room_id: &str, alias: &str) -> Result<()> {
        self.check_open()?;
        validate_room_id(room_id)?;
        validate_alias(alias)?;
        rooms::membership::invite(
            self.root(),
            room_id,
            self.member(),
            alias,
            self.lock_timeout(),
        )?;
        self.audit().event(
            "room_invite",
            fields! {"room_id" => room_id, "alias" => self.alias(), "invitee" => alias},
        );
        Ok(())
    }

    /// Delete `room_id` and everything in it, by c2c's rule: only its creator (a room
    /// without a recorded creator only with `force`), and only once it has no members. Both
    /// room locks are held (members, then history) while the members are checked and the
    /// files removed.
    ///
    /// # Errors
    /// [`Error::RoomDeleteRefused`], [`Error::UnknownRoom`], [`Error::InvalidId`],
    /// [`Error::Closed`], store errors.
    pub fn delete_room(&self, room_id: &str, force: bool) -> Result<()> {
        self.check_open()?;
        validate_room_id(room_id)?;
        rooms::membership::delete(
            self.root(),
            room_id,
            self.member(),
            force,
            self.lock_timeout(),
        )?;
        self.audit().event(
            "room_delete",
            fields! {"room_id" => room_id, "alias" => self.alias(), "force" => force},
        );
        Ok(())
    }

    /// Leave `room_id`. Returns whether this session was a member.
    ///
    /// # Errors
    /// [`Error::InvalidId`], [`Error::UnknownRoom`], [`Error::Closed`], store errors.
    pub fn leave_room(&self, room_id: &str) -> Result<bool> {
        self.check_open()?;
        validate_room_id(room_id)?;
        rooms::membership::leave(self.root(), room_id, self.session_id(), self.lock_timeout())
    }

    /// Post `content` to `room_id`: appended to its history, and enqueued for each live
    /// member other than this session.
    ///
    /// # Errors
    /// [`Error::NotMember`], [`Error::UnknownRoom`], [`Error::Empty`], [`Error::TooLarge`],
    /// [`Error::InvalidId`], [`Error::Closed`], store errors.
    pub fn send_room(
        &self,
        room_id: &str,
        content: &str,
        opts: &SendOptions,
    ) -> Result<BroadcastReport> {
        self.check_open()?;
        validate_room_id(room_id)?;
        self.check_content_pub(content)?;
        let members = rooms::membership::members(self.root(), room_id)?;
        let is_member = members
            .iter()
            .any(|m| m.get("session_id").and_then(Value::as_str) == Some(self.session_id()));
        if !is_member {
            return Err(Error::NotMember {
                room_id: room_id.into(),
            });
        }
        let regs = self.registrations()?;
        self.own_registration(&regs)?;
        let message_id = uuid::Uuid::new_v4().to_string();
        rooms::history::append(
            self.root(),
            room_id,
            self.alias(),
            content,
            &message_id,
            self.lock_timeout(),
        )?;
        let mut out = BroadcastReport::default();
        for m in &members {
            let (Some(sid), Some(alias)) = (
                m.get("session_id").and_then(Value::as_str),
                m.get("alias").and_then(Value::as_str),
            ) else {
                continue;
            };
            if sid == self.session_id() {
                continue;
            }
            let alive = regs.iter().any(|r| r.session_id == sid && r.is_alive());
            if !alive {
                out.skipped.push(SkippedRecipient {
                    alias: alias.to_string(),
                    reason: "not alive",
                });
                continue;
            }
            match self.enqueue_room(sid, format!("{alias}#{room_id}"), content, opts) {
                Ok(r) => out.sent.push(r),
                Err(Error::RateLimited { .. }) => out.skipped.push(SkippedRecipient {
                    alias: alias.to_string(),
                    reason: "rate limited",
                }),
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The last `limit` messages of a room's history, oldest first. An invite-only room's
    /// history is for its members only (c2c's rule).
    ///
    /// # Errors
    /// [`Error::NotMember`] (invite-only room), [`Error::InvalidId`], [`Error::UnknownRoom`],
    /// [`Error::Closed`], store errors.
    pub fn room_history(&self, room_id: &str, limit: usize) -> Result<Vec<RoomMessage>> {
        self.check_open()?;
        validate_room_id(room_id)?;
        rooms::history::read(self.root(), room_id, self.member(), limit)
    }

    /// Every room of the root with its members.
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn list_rooms(&self) -> Result<Vec<RoomInfo>> {
        self.check_open()?;
        rooms::listing::list(self.root(), self.member())
    }
}
