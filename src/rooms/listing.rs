//! The rooms of a root as one session may see them (c2c's listing rule: an invite-only room
//! is hidden from an unrelated session, and shown without its roster to an invited one).

use serde_json::Value;

use super::{has_member, read_meta, Member, RoomMeta};
use crate::error::Result;
use crate::ids::validate_room_id;
use crate::store::{self, BrokerRoot};

/// A room as listed by [`list`].
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

/// Every room of the root that `me` may see, sorted by room id. A directory entry that is
/// not a valid room id or not a directory (a planted symlink) is not a room.
///
/// # Errors
/// Store errors reading a room's files (an unparseable `meta.json` is corrupt, never public).
pub fn list(root: &BrokerRoot, me: Member<'_>) -> Result<Vec<RoomInfo>> {
    let dir = root.rooms_dir();
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
        let joined = has_member(&members, me);
        let roster = !meta.visibility.is_restricted() || joined;
        if !roster && !meta.is_invited(me.alias) {
            continue;
        }
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
