//! Creating, joining, inviting to, leaving and deleting a room: `members.json` and
//! `meta.json` change under c2c's `rooms/<room_id>/members.lock` (a deletion also holds the
//! history lock), by c2c's rules ([`super::meta`]).

use std::time::Duration;

use serde_json::Value;

use super::{has_member, read_meta, Member, RoomMeta, Visibility};
use crate::error::{Error, Result};
use crate::ids::alias_eq;
use crate::store::{self, BrokerRoot};

/// Create `room_id` with c2c's `meta.json` (`visibility`, `invited_members`, `created_by` —
/// lower-cased, as c2c stores it — plus our `room_id`, `created_at`) and `me` as its only
/// member, like c2c's `rooms create`. The room directory is made with one `mkdir`, so of two
/// creators exactly one wins. Returns the meta written.
///
/// # Errors
/// [`Error::RoomExists`], lock timeouts (after `lock_timeout`), store errors.
pub fn create(
    root: &BrokerRoot,
    room_id: &str,
    visibility: Visibility,
    invited: &[String],
    me: Member<'_>,
    lock_timeout: Duration,
) -> Result<RoomMeta> {
    let dir = root.create_room_dir(room_id)?;
    let members = dir.join("members.json");
    let now = crate::time::now_secs();
    let meta = RoomMeta::new(room_id, visibility, invited, me.alias, now);
    // meta.json first, before anything else can be in the new directory: a racing join (ours
    // or c2c's, which reads meta.json without a lock) already sees the rules. If it cannot be
    // written, the empty directory goes again.
    if let Err(e) = store::file::write_bytes_atomic(
        &dir.join("meta.json"),
        meta.to_value().to_string().as_bytes(),
    ) {
        let _ = std::fs::remove_dir(&dir);
        return Err(e);
    }
    store::with_locks(&[&members], lock_timeout, || {
        store::write_array_atomic(
            &members,
            &[
                serde_json::json!({"alias": me.alias, "session_id": me.session_id, "joined_at": now}),
            ],
        )
    })?;
    Ok(meta)
}

/// Join `room_id`, creating it (public, with `me` as creator) if needed, as c2c's
/// `join_room` does. Joining twice is a no-op; a row of this alias under an older session id
/// is moved to this session (c2c keeps one row per alias).
///
/// # Errors
/// [`Error::NotInvited`] for an invite-only room that neither lists the alias nor has it as a
/// member; lock timeouts, store errors (an unparseable `meta.json` is
/// [`Error::StoreCorrupt`], never "public").
pub fn join(
    root: &BrokerRoot,
    room_id: &str,
    me: Member<'_>,
    lock_timeout: Duration,
) -> Result<()> {
    let dir = root.room_dir(room_id, true)?;
    let members_path = dir.join("members.json");
    let meta_path = dir.join("meta.json");
    let (sid, alias) = (me.session_id, me.alias);
    store::with_locks(&[&members_path], lock_timeout, || {
        let mut members = store::read_array(&members_path)?;
        let meta = read_meta(&meta_path)?;
        let current = meta.clone().unwrap_or_else(RoomMeta::absent);
        current
            .may_join(room_id, alias, has_member(&members, me))
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
        if exact {
            return Ok(());
        }
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
        store::write_array_atomic(&members_path, &members)
    })
}

/// Add `invitee` to an invite-only room's `invited_members` (kept as is when already there).
/// Only members may invite (c2c's `send_room_invite`).
///
/// # Errors
/// [`Error::NotMember`], [`Error::UnknownRoom`], lock timeouts, store errors.
pub fn invite(
    root: &BrokerRoot,
    room_id: &str,
    me: Member<'_>,
    invitee: &str,
    lock_timeout: Duration,
) -> Result<()> {
    let dir = existing_room_dir(root, room_id)?;
    let members_path = dir.join("members.json");
    let meta_path = dir.join("meta.json");
    store::with_locks(&[&members_path], lock_timeout, || {
        let members = store::read_array(&members_path)?;
        if !has_member(&members, me) {
            return Err(Error::NotMember {
                room_id: room_id.into(),
            });
        }
        let mut meta = read_meta(&meta_path)?.unwrap_or_else(RoomMeta::absent);
        if !meta.is_invited(invitee) {
            meta.invited_members.push(invitee.to_string());
            store::file::write_bytes_atomic(&meta_path, meta.to_value().to_string().as_bytes())?;
        }
        Ok(())
    })
}

/// Delete `room_id` and everything in it, by c2c's rule: only its creator (a room without a
/// recorded creator only with `force`), and only once it has no members. Both room locks are
/// held (members, then history) while the members are checked and the files removed.
///
/// # Errors
/// [`Error::RoomDeleteRefused`], [`Error::UnknownRoom`], lock timeouts, store errors.
pub fn delete(
    root: &BrokerRoot,
    room_id: &str,
    me: Member<'_>,
    force: bool,
    lock_timeout: Duration,
) -> Result<()> {
    let dir = existing_room_dir(root, room_id)?;
    let refused = |reason: String| Error::RoomDeleteRefused {
        room_id: room_id.into(),
        reason,
    };
    let members_path = dir.join("members.json");
    let history_path = dir.join("history.jsonl");
    store::with_locks(&[&members_path, &history_path], lock_timeout, || {
        let meta = read_meta(&dir.join("meta.json"))?.unwrap_or_else(RoomMeta::absent);
        meta.may_delete(room_id, me.alias, force).map_err(refused)?;
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
            store::file::remove(p)?;
        }
        std::fs::remove_dir(&dir).map_err(|e| Error::io(&dir, e))
    })
}

/// Remove `session_id`'s rows from `room_id`'s members. Returns whether it was a member.
///
/// # Errors
/// [`Error::UnknownRoom`], lock timeouts, store errors.
pub fn leave(
    root: &BrokerRoot,
    room_id: &str,
    session_id: &str,
    lock_timeout: Duration,
) -> Result<bool> {
    let path = root.room_dir(room_id, false)?.join("members.json");
    if !path.exists() {
        return Err(Error::UnknownRoom {
            room_id: room_id.into(),
        });
    }
    store::update_array(&path, lock_timeout, |records| {
        let before = records.len();
        records.retain(|m| m.get("session_id").and_then(Value::as_str) != Some(session_id));
        let left = records.len() != before;
        Ok((left, left))
    })
}

/// The raw member rows of `room_id`, read without a lock (whole files only).
///
/// # Errors
/// [`Error::UnknownRoom`], store errors.
pub fn members(root: &BrokerRoot, room_id: &str) -> Result<Vec<Value>> {
    let path = root.room_dir(room_id, false)?.join("members.json");
    if !path.exists() {
        return Err(Error::UnknownRoom {
            room_id: room_id.into(),
        });
    }
    store::read_array(&path)
}

/// `rooms/<room_id>/` when it exists (as [`BrokerRoot::room_dir`] checks it).
///
/// # Errors
/// [`Error::UnknownRoom`] when it does not; [`Error::RootInsecure`] as `room_dir`.
fn existing_room_dir(root: &BrokerRoot, room_id: &str) -> Result<std::path::PathBuf> {
    let dir = root.room_dir(room_id, false)?;
    if !dir.exists() {
        return Err(Error::UnknownRoom {
            room_id: room_id.into(),
        });
    }
    Ok(dir)
}
