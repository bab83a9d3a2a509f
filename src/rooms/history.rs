//! `rooms/<room_id>/history.jsonl`: every room message, one JSON line each, appended under
//! c2c's `rooms/<room_id>/history.lock`.

use std::time::Duration;

use serde_json::Value;

use super::{has_member, read_meta, Member, RoomMeta};
use crate::error::{Error, Result};
use crate::store::file::{read_jsonl, JsonLine};
use crate::store::{self, BrokerRoot};

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

/// Append one message line (`room_id`, `from_alias`, `content`, `ts` now, `message_id`) to
/// `room_id`'s history, fsync'd.
///
/// # Errors
/// Lock timeouts (after `lock_timeout`), I/O errors.
pub fn append(
    root: &BrokerRoot,
    room_id: &str,
    from_alias: &str,
    content: &str,
    message_id: &str,
    lock_timeout: Duration,
) -> Result<()> {
    let history = root.room_dir(room_id, false)?.join("history.jsonl");
    store::with_locks(&[&history], lock_timeout, || {
        store::append_jsonl(
            &history,
            &[serde_json::json!({
                "room_id": room_id, "from_alias": from_alias, "content": content,
                "ts": crate::time::now_secs(), "message_id": message_id,
            })],
        )
    })
}

/// The last `limit` messages of a room's history, oldest first, as `me` may read them: an
/// invite-only room's history is for its members only (c2c's rule). Unparseable lines are
/// skipped.
///
/// # Errors
/// [`Error::NotMember`] (invite-only room), [`Error::UnknownRoom`], store errors.
pub fn read(
    root: &BrokerRoot,
    room_id: &str,
    me: Member<'_>,
    limit: usize,
) -> Result<Vec<RoomMessage>> {
    let dir = root.room_dir(room_id, false)?;
    if !dir.exists() {
        return Err(Error::UnknownRoom {
            room_id: room_id.into(),
        });
    }
    let meta = read_meta(&dir.join("meta.json"))?.unwrap_or_else(RoomMeta::absent);
    if meta.visibility.is_restricted() {
        let members = store::read_array(&dir.join("members.json"))?;
        if !meta.may_read_history(has_member(&members, me)) {
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
