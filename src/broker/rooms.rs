//! Rooms in c2c's layout: `rooms/<room_id>/{members.json, meta.json, history.jsonl}`. A room
//! message is appended to the history and lands in each live member's inbox with
//! `to_alias = "<alias>#<room_id>"`.

use serde_json::Value;

use super::messaging::{BroadcastResult, SendOptions, Skipped};
use super::Broker;
use crate::error::{Error, Result};
use crate::fields;
use crate::ids::validate_room_id;
use crate::store::file::{read_jsonl, JsonLine};
use crate::store::{self, LockGuard};

/// A room as listed by [`Broker::list_rooms`].
#[derive(Debug, Clone, PartialEq)]
pub struct RoomInfo {
    /// The room id.
    pub room_id: String,
    /// Member aliases.
    pub members: Vec<String>,
    /// Whether this session is a member.
    pub joined: bool,
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

impl Broker {
    fn members_path(&self, room_id: &str, create: bool) -> Result<std::path::PathBuf> {
        Ok(self.root().room_dir(room_id, create)?.join("members.json"))
    }

    /// Join `room_id`, creating the room if needed. Joining twice is a no-op.
    ///
    /// # Errors
    /// [`Error::InvalidId`], [`Error::Closed`], store errors.
    pub fn join_room(&self, room_id: &str) -> Result<()> {
        self.check_open()?;
        validate_room_id(room_id)?;
        let dir = self.root().room_dir(room_id, true)?;
        let meta = dir.join("meta.json");
        if !meta.exists() {
            let v = serde_json::json!({
                "room_id": room_id, "created_at": crate::time::now_secs(), "created_by": self.alias()
            });
            let _g = LockGuard::acquire(&store::lock::sidecar_path(&meta), self.lock_timeout())?;
            if !meta.exists() {
                store::file::write_bytes_atomic(&meta, v.to_string().as_bytes())?;
            }
        }
        let sid = self.session_id().to_string();
        let alias = self.alias().to_string();
        store::update_array(&dir.join("members.json"), self.lock_timeout(), |records| {
            let present = records
                .iter()
                .any(|m| m.get("session_id").and_then(Value::as_str) == Some(sid.as_str()));
            if present {
                return Ok(((), false));
            }
            records.push(serde_json::json!({
                "alias": alias, "session_id": sid, "joined_at": crate::time::now_secs()
            }));
            Ok(((), true))
        })?;
        self.audit().event(
            "room_join",
            fields! {"room_id" => room_id, "alias" => self.alias()},
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

    /// The last `limit` messages of a room's history, oldest first.
    ///
    /// # Errors
    /// [`Error::InvalidId`], [`Error::UnknownRoom`], [`Error::Closed`], store errors.
    pub fn room_history(&self, room_id: &str, limit: usize) -> Result<Vec<RoomMessage>> {
        self.check_open()?;
        validate_room_id(room_id)?;
        let dir = self.root().room_dir(room_id, false)?;
        if !dir.exists() {
            return Err(Error::UnknownRoom {
                room_id: room_id.into(),
            });
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

    /// Every room of the root with its members.
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn list_rooms(&self) -> Result<Vec<RoomInfo>> {
        self.check_open()?;
        let dir = self.root().rooms_dir();
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
            rooms.push(RoomInfo {
                joined: members.iter().any(|m| {
                    m.get("session_id").and_then(Value::as_str) == Some(self.session_id())
                }),
                members: members
                    .iter()
                    .filter_map(|m| m.get("alias").and_then(Value::as_str).map(str::to_string))
                    .collect(),
                room_id,
            });
        }
        rooms.sort_by(|a, b| a.room_id.cmp(&b.room_id));
        Ok(rooms)
    }
}
