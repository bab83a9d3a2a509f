//! Rooms in c2c's layout: `rooms/<room_id>/{members.json, meta.json, history.jsonl}`.
//!
//! - [`meta`]: `meta.json` and c2c 0.8's access rules (join, history, listing, invite,
//!   delete);
//! - [`membership`]: create, join, invite, leave, delete — `members.json` and `meta.json`
//!   change under c2c's `rooms/<room_id>/members.lock`;
//! - [`history`]: `history.jsonl`, appended under `rooms/<room_id>/history.lock`, and read;
//! - [`listing`]: the rooms a session may see.
//!
//! The identity-bound entry points (`Broker::join_room`, `send_room`, …) are in
//! `src/broker/rooms.rs`: they bind the caller's own registration, fan a room message out to
//! the members' inboxes and write the audit lines.

pub mod history;
pub mod listing;
pub mod membership;
pub mod meta;

use std::path::Path;

use serde_json::Value;

use crate::error::Result;
use crate::ids::alias_eq;
use crate::store::file::read_object;

pub use history::RoomMessage;
pub use listing::RoomInfo;
pub use meta::{RoomMeta, Visibility};

/// The session acting on a room: its session id and alias (from its own registration).
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    /// The session id.
    pub session_id: &'a str,
    /// The alias, as registered.
    pub alias: &'a str,
}

/// Whether `members` (raw `members.json` rows) has `me`, by session id or alias (c2c matches
/// either).
pub(crate) fn has_member(members: &[Value], me: Member<'_>) -> bool {
    members.iter().any(|m| {
        m.get("session_id").and_then(Value::as_str) == Some(me.session_id)
            || m.get("alias")
                .and_then(Value::as_str)
                .is_some_and(|a| alias_eq(a, me.alias))
    })
}

/// A room's meta: `None` when `meta.json` is absent (c2c's defaults apply); corrupt when it
/// is not an object.
pub(crate) fn read_meta(path: &Path) -> Result<Option<RoomMeta>> {
    Ok(read_object(path)?.and_then(|v| RoomMeta::from_value(&v)))
}
