//! `rooms/<room_id>/meta.json` and c2c 0.8's room access rules.
//!
//! c2c writes `{"visibility": "public"|"invite_only", "invited_members": [alias],
//! "created_by": alias}` (upstream `c2c_broker.ml`, `room_meta_to_json`); we write the same
//! fields plus our extras `room_id` and `created_at`, and keep every unknown field when we
//! rewrite the file.
//!
//! The rules, as c2c 0.8 applies them (and where we are stricter, why):
//! - **join**: a public room is open; an invite-only room admits an alias that is already a
//!   member (by alias or session id) or is on `invited_members` (c2c's `join_room`), and —
//!   our one addition — its creator, who is never on its own invitation list.
//! - **history**: a public room's history is open; an invite-only room's only to members
//!   (c2c's `room_history` tool).
//! - **invite**: only members may invite (c2c's `send_room_invite`).
//! - **delete**: only the creator (`created_by`, compared case-insensitively); a room without a
//!   recorded creator only with `force`; never while it has members (c2c's `delete_room`).
//!
//! Fail closed where c2c does not: c2c reads an unparseable `meta.json` as public; here it is
//! [`crate::Error::StoreCorrupt`]. A visibility other than `public` / `invite_only` (a newer
//! tool's mode) is treated as invite-only. An absent `visibility` field is public: that is
//! c2c's default and what rooms created before visibility existed (ours included) mean.

use serde_json::{Map, Value};

use crate::ids::alias_eq;

/// Who may join and read a room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visibility {
    /// `"public"` (or no `visibility` field): anyone may join and read.
    Public,
    /// `"invite_only"`: members and invited aliases only.
    InviteOnly,
    /// Any other value, kept as written; enforced as [`Visibility::InviteOnly`].
    Unknown(Value),
}

impl Visibility {
    /// Parse the option string of `createRoom`: `public` or `invite_only`.
    pub fn parse_option(s: &str) -> Option<Visibility> {
        match s {
            "public" => Some(Visibility::Public),
            "invite_only" => Some(Visibility::InviteOnly),
            _ => None,
        }
    }

    /// Whether access is restricted to members and invited aliases.
    pub fn is_restricted(&self) -> bool {
        !matches!(self, Visibility::Public)
    }

    /// The JSON value c2c writes.
    pub fn to_value(&self) -> Value {
        match self {
            Visibility::Public => Value::from("public"),
            Visibility::InviteOnly => Value::from("invite_only"),
            Visibility::Unknown(v) => v.clone(),
        }
    }

    /// The name shown to callers: `public`, `invite_only`, or `unknown` (enforced as
    /// invite-only).
    pub fn as_str(&self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::InviteOnly => "invite_only",
            Visibility::Unknown(_) => "unknown",
        }
    }
}

/// A room's `meta.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomMeta {
    /// Who may join and read.
    pub visibility: Visibility,
    /// Aliases invited to an invite-only room, as written.
    pub invited_members: Vec<String>,
    /// The creator's alias (c2c stores it lower-cased); empty when none is recorded.
    pub created_by: String,
    /// Every other field, kept.
    pub extra: Map<String, Value>,
}

/// Why a room operation is refused (the text of the error).
pub type Refusal = String;

impl RoomMeta {
    /// The meta c2c assumes for a room without `meta.json`: public, no creator.
    pub fn absent() -> RoomMeta {
        RoomMeta {
            visibility: Visibility::Public,
            invited_members: Vec::new(),
            created_by: String::new(),
            extra: Map::new(),
        }
    }

    /// A new room's meta: c2c's three fields (creator lower-cased, as c2c stores it;
    /// invitations deduplicated case-insensitively) plus our `room_id` and `created_at`.
    pub fn new(
        room_id: &str,
        visibility: Visibility,
        invited: &[String],
        creator: &str,
        now: f64,
    ) -> RoomMeta {
        let mut invited_members: Vec<String> = Vec::new();
        for a in invited {
            if !invited_members.iter().any(|b| alias_eq(a, b)) {
                invited_members.push(a.clone());
            }
        }
        let mut extra = Map::new();
        extra.insert("room_id".into(), Value::from(room_id));
        extra.insert("created_at".into(), Value::from(now));
        RoomMeta {
            visibility,
            invited_members,
            created_by: creator.to_ascii_lowercase(),
            extra,
        }
    }

    /// Read a parsed `meta.json`. `None` when it is not a JSON object (the caller reports it
    /// as corrupt). Fields of the wrong type read as c2c reads them (no invitations, no
    /// creator), except `visibility`, which then restricts the room.
    pub fn from_value(v: &Value) -> Option<RoomMeta> {
        let mut extra = v.as_object()?.clone();
        let visibility = match extra.remove("visibility") {
            None | Some(Value::Null) => Visibility::Public,
            Some(Value::String(s)) if s == "public" => Visibility::Public,
            Some(Value::String(s)) if s == "invite_only" => Visibility::InviteOnly,
            Some(other) => Visibility::Unknown(other),
        };
        let invited_members = match extra.remove("invited_members") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        let created_by = match extra.remove("created_by") {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        Some(RoomMeta {
            visibility,
            invited_members,
            created_by,
            extra,
        })
    }

    /// The JSON object: c2c's fields first, then every kept field.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert("visibility".into(), self.visibility.to_value());
        o.insert(
            "invited_members".into(),
            Value::from(self.invited_members.clone()),
        );
        o.insert("created_by".into(), Value::from(self.created_by.clone()));
        for (k, v) in &self.extra {
            o.insert(k.clone(), v.clone());
        }
        Value::Object(o)
    }

    /// Whether `alias` is on the invitation list (case-insensitively: aliases are one name
    /// whatever their case).
    pub fn is_invited(&self, alias: &str) -> bool {
        self.invited_members.iter().any(|a| alias_eq(a, alias))
    }

    /// c2c's join rule. `already_member`: the alias or the session id is in `members.json`.
    ///
    /// # Errors
    /// The refusal text when an invite-only room does not admit `alias`.
    pub fn may_join(
        &self,
        room_id: &str,
        alias: &str,
        already_member: bool,
    ) -> Result<(), Refusal> {
        let creator = !self.created_by.is_empty() && alias_eq(&self.created_by, alias);
        if !self.visibility.is_restricted() || already_member || creator || self.is_invited(alias) {
            return Ok(());
        }
        Err(format!(
            "join_room rejected: room '{room_id}' is invite-only and '{alias}' is not on the invite list"
        ))
    }

    /// c2c's history rule: open for a public room, members only otherwise.
    pub fn may_read_history(&self, is_member: bool) -> bool {
        !self.visibility.is_restricted() || is_member
    }

    /// c2c's delete rule, without the member check (the caller makes it under the lock).
    ///
    /// # Errors
    /// The refusal text.
    pub fn may_delete(&self, room_id: &str, alias: &str, force: bool) -> Result<(), Refusal> {
        if self.created_by.is_empty() {
            if force {
                return Ok(());
            }
            return Err(format!(
                "delete_room rejected: room '{room_id}' has no recorded creator (legacy room) — pass force to delete"
            ));
        }
        if alias_eq(&self.created_by, alias) {
            Ok(())
        } else {
            Err(format!(
                "delete_room rejected: only the creator '{}' may delete room '{room_id}'",
                self.created_by
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn c2c_meta_roundtrips_with_unknown_fields() {
        let raw = json!({"visibility": "invite_only", "invited_members": ["bob"],
                         "created_by": "alice", "future": {"x": 1}});
        let m = RoomMeta::from_value(&raw).unwrap();
        assert_eq!(m.visibility, Visibility::InviteOnly);
        assert_eq!(m.invited_members, ["bob"]);
        assert_eq!(m.to_value(), raw);
    }

    #[test]
    fn absent_visibility_is_public_and_unknown_is_restricted() {
        // what c2c-bridge wrote before this change
        let legacy = json!({"room_id": "r", "created_at": 1.0, "created_by": "Ann"});
        let m = RoomMeta::from_value(&legacy).unwrap();
        assert!(m.may_join("r", "zed", false).is_ok());
        assert!(m.may_read_history(false));
        for odd in [
            json!("private"),
            json!("gated"),
            json!(1),
            json!(["public"]),
        ] {
            let m = RoomMeta::from_value(&json!({"visibility": odd.clone()})).unwrap();
            assert!(m.may_join("r", "zed", false).is_err(), "{odd}");
            assert!(!m.may_read_history(false), "{odd}");
            // kept as written on a rewrite
            assert_eq!(m.to_value()["visibility"], odd);
        }
        assert!(RoomMeta::from_value(&json!([])).is_none());
    }

    #[test]
    fn invite_only_admits_members_and_invited_aliases_only() {
        let m = RoomMeta::from_value(
            &json!({"visibility": "invite_only", "invited_members": ["Bob", 7], "created_by": "alice"}),
        )
        .unwrap();
        assert!(m.may_join("s", "bob", false).is_ok(), "case-insensitive");
        assert!(m.may_join("s", "alice", true).is_ok(), "already a member");
        assert!(
            m.may_join("s", "Alice", false).is_ok(),
            "the creator, after leaving"
        );
        let err = m.may_join("s", "carol", false).unwrap_err();
        assert!(
            err.contains("invite-only") && err.contains("carol"),
            "{err}"
        );
        assert!(m.may_read_history(true));
        assert!(!m.may_read_history(false));
    }

    #[test]
    fn only_the_creator_deletes_and_a_legacy_room_needs_force() {
        let m = RoomMeta::new("r", Visibility::Public, &[], "Alice", 1.0);
        assert_eq!(m.created_by, "alice");
        assert!(m.may_delete("r", "ALICE", false).is_ok());
        assert!(
            m.may_delete("r", "bob", true).is_err(),
            "force does not override a creator"
        );
        let legacy = RoomMeta::absent();
        assert!(legacy.may_delete("r", "bob", false).is_err());
        assert!(legacy.may_delete("r", "bob", true).is_ok());
    }

    #[test]
    fn new_meta_has_c2c_fields_first_and_deduplicates_invitations() {
        let m = RoomMeta::new(
            "r",
            Visibility::InviteOnly,
            &["bob".into(), "BOB".into(), "carol".into()],
            "alice",
            2.5,
        );
        let v = m.to_value();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "visibility",
                "invited_members",
                "created_by",
                "room_id",
                "created_at"
            ]
        );
        assert_eq!(v["invited_members"], json!(["bob", "carol"]));
    }
}
