//! Rooms in c2c's layout: `rooms/<room_id>/{members.json, meta.json, history.jsonl}`. A room
//! message is appended to the history and lands in each live member's inbox with
//! `to_alias = "<alias>#<room_id>"`.
//!
//! c2c's access rules ([`crate::room_meta`]) hold on every path: join, history, listing,
//! invitation and deletion. `members.json` and `meta.json` change under c2c's
//! `rooms/<room_id>/members.lock`, `history.jsonl` under `rooms/<room_id>/history.lock`
//! (the table in [`crate::store::lock`]).

use std::path::Path;

use serde_json::Value;

use super::messaging::{BroadcastResult, SendOptions, Skipped};
use super::Broker;
use crate::error::{Error, Result};
use crate::fields;
use crate::ids::{alias_eq, validate_alias, validate_room_id};
use crate::room_meta::{RoomMeta, Visibility};
use crate::store::file::{read_jsonl, read_object, JsonLine};
use crate::store::{self, LockGuard};

/// A room as listed by [`Broker::list_rooms`].
#[derive(Debug, Clone, PartialEq)]
pub struct RoomInfo {
    /// The room id.
    pub room_id: String,
    /// Member aliases (empty for an invite-only room this session is only invited to: c2c
    /// hides the roster from non-members).
    pub members: Vec<String>,
    /// Whether this session is a member.
    pub joined: bool,
    /// `public`, `invite_only`, or `unknown` (a mode c2c-bridge does not know, enforced as
    /// invite-only).
    pub visibility: &'static str,
}

/// One line of a room's history.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomMessage {
    /// Sender alias (untrusted for display: frame it).
    pub from_alias: String,
    /// Text (untrusted).
    pub content: String,
    /// Epoch seconds.
    pub ts: f64,
    /// The message id.
    pub message_id: String,
}

/// Whether `members` (raw `members.json` rows) has this session, by session id or alias
/// (c2c matches either).
fn has_member(members: &[Value], session_id: &str, alias: &str) -> bool {
    members.iter().any(|m| {
        m.get("session_id").and_then(Value::as_str) == Some(session_id)
            || m.get("alias")
                .and_then(Value::as_str)
                .is_some_and(|a| alias_eq(a, alias))
    })
}

/// A room's meta: c2c's defaults when `meta.json` is absent; corrupt when it is not an object.
fn read_meta(path: &Path) -> Result<Option<RoomMeta>> {
    Ok(read_object(path)?.and_then(|v| RoomMeta::from_value(&v)))
}

impl Broker {
    fn members_path(&self, room_id: &str, create: bool) -> Result<std::path::PathBuf> {
        Ok(self.root().room_dir(room_id, create)?.join("members.json"))
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
        let dir = self.root().create_room_dir(room_id)?;
        let members = dir.join("members.json");
        let now = crate::time::now_secs();
        let meta = RoomMeta::new(room_id, visibility, invited, self.alias(), now);
        // meta.json first, before anything else can be in the new directory: a racing join
        // (ours or c2c's, which reads meta.json without a lock) already sees the rules. If it
        // cannot be written, the empty directory goes again.
        if let Err(e) = store::file::write_bytes_atomic(
            &dir.join("meta.json"),
            meta.to_value().to_string().as_bytes(),
        ) {
            let _ = std::fs::remove_dir(&dir);
            return Err(e);
        }
        let _g = LockGuard::acquire(&store::lock::sidecar_path(&members), self.lock_timeout())?;
        store::write_array_atomic(
            &members,
            &[
                serde_json::json!({"alias": self.alias(), "session_id": self.session_id(), "joined_at": now}),
            ],
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
        let dir = self.root().room_dir(room_id, true)?;
        let members_path = dir.join("members.json");
        let meta_path = dir.join("meta.json");
        let (sid, alias) = (self.session_id(), self.alias());
        let _g = LockGuard::acquire(
            &store::lock::sidecar_path(&members_path),
            self.lock_timeout(),
        )?;
        let mut members = store::read_array(&members_path)?;
        let meta = read_meta(&meta_path)?;
        let current = meta.clone().unwrap_or_else(RoomMeta::absent);
        current
            .may_join(room_id, alias, has_member(&members, sid, alias))
            .map_err(|reason| Error::NotInvited {
                room_id: room_id.into(),
                reason,
            })?;
        let now = crate::time::now_secs();
        // c2c stamps the creator when the joiner establishes the room (no members, none
        // recorded); a room without meta.json gets c2c's full meta.
        if members.is_empty() && current.created_by.is_empty() {
            let stamped = match meta {
                None => RoomMeta::new(room_id, Visibility::Public, &[], alias, now),
                Some(mut m) => {
                    m.created_by = alias.to_ascii_lowercase();
                    m
                }
            };
            store::file::write_bytes_atomic(&meta_path, stamped.to_value().to_string().as_bytes())?;
        }
        let exact = members.iter().any(|m| {
            m.get("session_id").and_then(Value::as_str) == Some(sid)
                && m.get("alias").and_then(Value::as_str) == Some(alias)
        });
        if !exact {
            let same = |m: &Value| {
                m.get("session_id").and_then(Value::as_str) == Some(sid)
                    || m.get("alias")
                        .and_then(Value::as_str)
                        .is_some_and(|a| alias_eq(a, alias))
            };
            match members.iter().position(same) {
                Some(i) => {
                    let mut row = members[i].clone();
                    if let Value::Object(o) = &mut row {
                        o.insert("alias".into(), Value::from(alias));
                        o.insert("session_id".into(), Value::from(sid));
                    }
                    members[i] = row;
                    let mut seen = false;
                    members.retain(|m| {
                        if !same(m) {
                            return true;
                        }
                        let keep = !seen;
                        seen = true;
                        keep
                    });
                }
                None => members.push(serde_json::json!({
                    "alias": alias, "session_id": sid, "joined_at": now
                })),
            }
            store::write_array_atomic(&members_path, &members)?;
        }
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
        let members_path = self.members_path(room_id, false)?;
        if !members_path.parent().is_some_and(Path::exists) {
            return Err(Error::UnknownRoom {
                room_id: room_id.into(),
            });
        }
        let meta_path = members_path.with_file_name("meta.json");
        let _g = LockGuard::acquire(
            &store::lock::sidecar_path(&members_path),
            self.lock_timeout(),
        )?;
        let members = store::read_array(&members_path)?;
        if !has_member(&members, self.session_id(), self.alias()) {
            return Err(Error::NotMember {
                room_id: room_id.into(),
            });
        }
        let mut meta = read_meta(&meta_path)?.unwrap_or_else(RoomMeta::absent);
        if !meta.is_invited(alias) {
            meta.invited_members.push(alias.to_string());
            store::file::write_bytes_atomic(&meta_path, meta.to_value().to_string().as_bytes())?;
        }
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
        let dir = self.root().room_dir(room_id, false)?;
        if !dir.exists() {
            return Err(Error::UnknownRoom {
                room_id: room_id.into(),
            });
        }
        let refused = |reason: String| Error::RoomDeleteRefused {
            room_id: room_id.into(),
            reason,
        };
        let members_path = dir.join("members.json");
        let _members = LockGuard::acquire(
            &store::lock::sidecar_path(&members_path),
            self.lock_timeout(),
        )?;
        let _history = LockGuard::acquire(
            &store::lock::sidecar_path(&dir.join("history.jsonl")),
            self.lock_timeout(),
        )?;
        let meta = read_meta(&dir.join("meta.json"))?.unwrap_or_else(RoomMeta::absent);
        meta.may_delete(room_id, self.alias(), force)
            .map_err(refused)?;
        if !store::read_array(&members_path)?.is_empty() {
            return Err(refused(format!(
                "cannot delete room with members: {room_id}"
            )));
        }
        // Check everything before removing anything, and remove meta.json last: a deletion
        // that stops half-way must never leave a room without its rules (c2c reads a room
        // without meta.json as public).
        let mut files = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
            let e = e.map_err(|e| Error::io(&dir, e))?;
            if e.file_type()
                .map_err(|err| Error::io(e.path(), err))?
                .is_dir()
            {
                return Err(refused(format!(
                    "room {room_id:?} holds a directory ({}); remove it by hand",
                    e.file_name().to_string_lossy()
                )));
            }
            files.push(e.path());
        }
        files.sort_by_key(|p| p.file_name().is_some_and(|n| n == "meta.json"));
        for p in &files {
            std::fs::remove_file(p).map_err(|e| Error::io(p, e))?;
        }
        std::fs::remove_dir(&dir).map_err(|e| Error::io(&dir, e))?;
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
        let path = self.members_path(room_id, false)?;
        if !path.exists() {
            return Err(Error::UnknownRoom {
                room_id: room_id.into(),
            });
        }
        let sid = self.session_id().to_string();
        store::update_array(&path, self.lock_timeout(), |records| {
            let before = records.len();
            records.retain(|m| m.get("session_id").and_then(Value::as_str) != Some(sid.as_str()));
            let left = records.len() != before;
            Ok((left, left))
        })
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
    ) -> Result<BroadcastResult> {
        self.check_open()?;
        validate_room_id(room_id)?;
        self.check_content_pub(content)?;
        let path = self.members_path(room_id, false)?;
        if !path.exists() {
            return Err(Error::UnknownRoom {
                room_id: room_id.into(),
            });
        }
        let members = store::read_array(&path)?;
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
        let history = self.root().room_dir(room_id, false)?.join("history.jsonl");
        {
            let _g = LockGuard::acquire(&store::lock::sidecar_path(&history), self.lock_timeout())?;
            store::append_jsonl(
                &history,
                &[serde_json::json!({
                    "room_id": room_id, "from_alias": self.alias(), "content": content,
                    "ts": crate::time::now_secs(), "message_id": message_id,
                })],
            )?;
        }
        let mut out = BroadcastResult::default();
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
                out.skipped.push(Skipped {
                    alias: alias.to_string(),
                    reason: "not alive",
                });
                continue;
            }
            match self.enqueue_room(sid, format!("{alias}#{room_id}"), content, opts) {
                Ok(r) => out.sent.push(r),
                Err(Error::RateLimited { .. }) => out.skipped.push(Skipped {
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
        let dir = self.root().room_dir(room_id, false)?;
        if !dir.exists() {
            return Err(Error::UnknownRoom {
                room_id: room_id.into(),
            });
        }
        let meta = read_meta(&dir.join("meta.json"))?.unwrap_or_else(RoomMeta::absent);
        if meta.visibility.is_restricted() {
            let members = store::read_array(&dir.join("members.json"))?;
            if !meta.may_read_history(has_member(&members, self.session_id(), self.alias())) {
                return Err(Error::NotMember {
                    room_id: room_id.into(),
                });
            }
        }
        let lines = read_jsonl(&dir.join("history.jsonl"))?;
        let msgs: Vec<RoomMessage> = lines
            .into_iter()
            .filter_map(|l| match l {
                JsonLine::Value(v) => Some(RoomMessage {
                    from_alias: v.get("from_alias")?.as_str()?.to_string(),
                    content: v.get("content")?.as_str()?.to_string(),
                    ts: v.get("ts").and_then(Value::as_f64).unwrap_or(0.0),
                    message_id: v
                        .get("message_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                }),
                JsonLine::Unparsed(_) => None,
            })
            .collect();
        let skip = msgs.len().saturating_sub(limit);
        Ok(msgs.into_iter().skip(skip).collect())
    }

    /// Every room of the root with its members, as this session may see them
    /// ([`list_rooms_in`] with this session as the viewer).
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn list_rooms(&self) -> Result<Vec<RoomInfo>> {
        self.check_open()?;
        list_rooms_in(self.root(), Some((self.session_id(), self.alias())))
    }
}

/// Every room of `root` (`rooms/<room_id>/`, sorted by id) with its members, read without a
/// lock and without changing anything.
///
/// `viewer` is the listing session's `(session_id, alias)`: c2c's listing rule applies (an
/// invite-only room is hidden from an unrelated session and shown without its roster to an
/// invited one) and `joined` says whether it is a member. `None` is the operator at this
/// machine (the CLI without a session, who can read the files anyway): every room with its
/// roster, `joined` false. A `rooms` that is a symlink or not a directory is refused; an
/// entry of `rooms/` that is a symlink or not a valid room id is not a room.
///
/// # Errors
/// [`Error::RootInsecure`] (`rooms` is a symlink or a file), [`Error::StoreCorrupt`] (a
/// `members.json` or `meta.json` that cannot be read), [`Error::Io`].
pub fn list_rooms_in(
    root: &crate::store::BrokerRoot,
    viewer: Option<(&str, &str)>,
) -> Result<Vec<RoomInfo>> {
    let dir = root.rooms_dir();
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Error::RootInsecure {
                path: dir,
                reason: "it is a symlink or not a directory; c2c-bridge never follows it".into(),
            })
        }
        Err(_) => return Ok(Vec::new()),
    }
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut rooms = Vec::new();
    for e in entries.flatten() {
        let room_id = e.file_name().to_string_lossy().into_owned();
        // `file_type` does not follow symlinks: a planted link is not a room.
        if validate_room_id(&room_id).is_err() || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let members = store::read_array(&e.path().join("members.json"))?;
        let meta = read_meta(&e.path().join("meta.json"))?.unwrap_or_else(RoomMeta::absent);
        let (joined, roster) = match viewer {
            Some((session_id, alias)) => {
                let joined = has_member(&members, session_id, alias);
                // c2c's listing: an invite-only room is hidden from an unrelated session, and
                // shown without its roster to an invited one.
                let roster = !meta.visibility.is_restricted() || joined;
                if !roster && !meta.is_invited(alias) {
                    continue;
                }
                (joined, roster)
            }
            None => (false, true),
        };
        rooms.push(RoomInfo {
            joined,
            members: if roster {
                members
                    .iter()
                    .filter_map(|m| m.get("alias").and_then(Value::as_str).map(str::to_string))
                    .collect()
            } else {
                Vec::new()
            },
            visibility: meta.visibility.as_str(),
            room_id,
        });
    }
    rooms.sort_by(|a, b| a.room_id.cmp(&b.room_id));
    Ok(rooms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::root::RootSource;
    use crate::store::BrokerRoot;

    fn room(root: &Path, id: &str, members: &str, meta: Option<&str>) {
        let d = root.join("rooms").join(id);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("members.json"), members).unwrap();
        if let Some(m) = meta {
            std::fs::write(d.join("meta.json"), m).unwrap();
        }
    }

    #[test]
    fn the_operator_sees_every_room_a_session_sees_c2cs_listing() {
        let dir = crate::testutil::private_tempdir();
        let root = BrokerRoot::open(dir.path(), RootSource::Explicit).unwrap();
        assert_eq!(list_rooms_in(&root, None).unwrap(), vec![]);
        room(
            dir.path(),
            "dev",
            r#"[{"alias":"alice","session_id":"s-a"}]"#,
            None,
        );
        room(
            dir.path(),
            "ops",
            r#"[{"alias":"bob","session_id":"s-b"}]"#,
            Some(r#"{"visibility":"invite_only","invited_members":["carol"]}"#),
        );
        // not rooms: a bad id, a symlink
        std::fs::create_dir_all(dir.path().join("rooms").join("bad id")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("rooms/dev"), dir.path().join("rooms/link"))
            .unwrap();

        let all = list_rooms_in(&root, None).unwrap();
        let view = |r: &[RoomInfo]| {
            r.iter()
                .map(|r| (r.room_id.clone(), r.members.clone(), r.joined, r.visibility))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            view(&all),
            vec![
                ("dev".into(), vec!["alice".to_string()], false, "public"),
                ("ops".into(), vec!["bob".to_string()], false, "invite_only"),
            ]
        );
        // alice: member of dev, ops hidden; carol: invited to ops, no roster; bob: member
        let alice = list_rooms_in(&root, Some(("s-a", "alice"))).unwrap();
        assert_eq!(
            view(&alice),
            vec![("dev".into(), vec!["alice".to_string()], true, "public")]
        );
        let carol = list_rooms_in(&root, Some(("s-c", "carol"))).unwrap();
        assert_eq!(carol[1].members, Vec::<String>::new());
        assert!(!carol[1].joined);
        let bob = list_rooms_in(&root, Some(("s-b", "BOB"))).unwrap();
        assert_eq!(
            view(&bob)[1],
            ("ops".into(), vec!["bob".to_string()], true, "invite_only")
        );
    }

    #[test]
    fn a_rooms_symlink_is_refused_and_a_corrupt_roster_reported() {
        let dir = crate::testutil::private_tempdir();
        let root = BrokerRoot::open(dir.path(), RootSource::Explicit).unwrap();
        let elsewhere = crate::testutil::private_tempdir();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("rooms")).unwrap();
        assert!(matches!(
            list_rooms_in(&root, None),
            Err(Error::RootInsecure { .. })
        ));
        std::fs::remove_file(dir.path().join("rooms")).unwrap();
        room(dir.path(), "dev", "not json", None);
        assert!(matches!(
            list_rooms_in(&root, None),
            Err(Error::StoreCorrupt { .. })
        ));
    }
}
