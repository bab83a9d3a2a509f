//! The rooms of a root as one session may see them (c2c's listing rule: an invite-only room
//! is hidden from an unrelated session, and shown without its roster to an invited one).

use serde_json::Value;

use super::{has_member, read_meta, Member, RoomMeta};
use crate::error::{Error, Result};
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

/// Every room of the root that `me` may see, sorted by room id ([`list_as`] with `me`).
///
/// # Errors
/// As [`list_as`].
pub fn list(root: &BrokerRoot, me: Member<'_>) -> Result<Vec<RoomInfo>> {
    list_as(root, Some(me))
}

/// Every room of the root with its roster, as the operator at this machine sees them (the
/// CLI without a session, who can read the files anyway): c2c's hiding does not apply and
/// `joined` is false ([`list_as`] without a viewer).
///
/// # Errors
/// As [`list_as`].
pub fn list_all(root: &BrokerRoot) -> Result<Vec<RoomInfo>> {
    list_as(root, None)
}

/// The rooms of `root` (`rooms/<room_id>/`, sorted by id), read without a lock and without
/// changing anything. With a viewer `me`, c2c's listing rule applies (an invite-only room is
/// hidden from an unrelated session and shown without its roster to an invited one) and
/// `joined` says whether `me` is a member; without one, every room with its roster. A `rooms`
/// that is a symlink or not a directory is refused; an entry that is not a valid room id or
/// not a directory (a planted symlink) is not a room.
///
/// # Errors
/// [`Error::RootInsecure`] (`rooms` is a symlink or a file), store errors reading a room's
/// files (an unparseable `meta.json` is corrupt, never public).
pub fn list_as(root: &BrokerRoot, me: Option<Member<'_>>) -> Result<Vec<RoomInfo>> {
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
        let (joined, roster) = match me {
            Some(me) => {
                let joined = has_member(&members, me);
                let roster = !meta.visibility.is_restricted() || joined;
                if !roster && !meta.is_invited(me.alias) {
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
    use std::path::Path;

    fn room(root: &Path, id: &str, members: &str, meta: Option<&str>) {
        let d = root.join("rooms").join(id);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("members.json"), members).unwrap();
        if let Some(m) = meta {
            std::fs::write(d.join("meta.json"), m).unwrap();
        }
    }

    fn me<'a>(session_id: &'a str, alias: &'a str) -> Option<Member<'a>> {
        Some(Member { session_id, alias })
    }

    #[test]
    fn the_operator_sees_every_room_a_session_sees_c2cs_listing() {
        let dir = crate::testutil::private_tempdir();
        let root = BrokerRoot::open(dir.path(), RootSource::Explicit).unwrap();
        assert_eq!(list_all(&root).unwrap(), vec![]);
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

        let view = |r: &[RoomInfo]| {
            r.iter()
                .map(|r| (r.room_id.clone(), r.members.clone(), r.joined, r.visibility))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            view(&list_all(&root).unwrap()),
            vec![
                ("dev".into(), vec!["alice".to_string()], false, "public"),
                ("ops".into(), vec!["bob".to_string()], false, "invite_only"),
            ]
        );
        // alice: member of dev, ops hidden; carol: invited to ops, no roster; bob: member
        let alice = list_as(&root, me("s-a", "alice")).unwrap();
        assert_eq!(
            view(&alice),
            vec![("dev".into(), vec!["alice".to_string()], true, "public")]
        );
        let carol = list_as(&root, me("s-c", "carol")).unwrap();
        assert_eq!(carol[1].members, Vec::<String>::new());
        assert!(!carol[1].joined);
        let bob = list_as(&root, me("s-b", "BOB")).unwrap();
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
        assert!(matches!(list_all(&root), Err(Error::RootInsecure { .. })));
        std::fs::remove_file(dir.path().join("rooms")).unwrap();
        room(dir.path(), "dev", "not json", None);
        assert!(matches!(list_all(&root), Err(Error::StoreCorrupt { .. })));
    }
}
