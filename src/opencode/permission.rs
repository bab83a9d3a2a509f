//! Permission requests: the `properties` of `permission.asked` and `permission.v2.asked`.

use serde_json::Value;

use super::json::{owned, s, strings};

/// Which OpenCode event raised a permission request (they are replied to at different
/// endpoints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionEventKind {
    /// `permission.asked` (classic loop); the tool message is `tool.messageID`.
    Asked,
    /// `permission.v2.asked` (newer runtime); the tool message is `source.messageID`.
    V2Asked,
}

impl PermissionEventKind {
    /// The OpenCode event type: `permission.asked` or `permission.v2.asked`.
    pub fn event_type(self) -> &'static str {
        match self {
            PermissionEventKind::Asked => "permission.asked",
            PermissionEventKind::V2Asked => "permission.v2.asked",
        }
    }

    /// Parse the event type, or the short forms `asked` / `v2` the napi `decide` takes.
    pub fn parse(kind: &str) -> Option<PermissionEventKind> {
        match kind {
            "asked" | "permission.asked" => Some(PermissionEventKind::Asked),
            "v2" | "permission.v2.asked" => Some(PermissionEventKind::V2Asked),
            _ => None,
        }
    }
}

/// The facts of one permission request the gate reads. Never any free text beyond the
/// fields the guardrail judges (`metadata.command`, `metadata.filepath`, patterns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionAsked {
    /// Which event raised it.
    pub kind: PermissionEventKind,
    /// `id` (`per_…`).
    pub id: String,
    /// `sessionID`: the asking session (a `task` child's own id).
    pub session_id: String,
    /// `permission` (asked) or `action` (v2), e.g. `bash`, `edit`; empty when absent.
    pub permission: String,
    /// `tool.messageID` (asked) or `source.messageID` (v2): the tool's assistant message.
    pub tool_message_id: Option<String>,
    /// `tool.callID` / `source.callID`: the tool call (its part holds the raw arguments).
    pub call_id: Option<String>,
    /// `metadata.command` (bash).
    pub command: Option<String>,
    /// `metadata.filepath` (edit, write, external_directory).
    pub filepath: Option<String>,
    /// `patterns` (asked only; non-string entries skipped).
    pub patterns: Vec<String>,
    /// `resources` (v2 only; non-string entries skipped).
    pub resources: Vec<String>,
}

/// A permission request without a (non-empty string) `id` or `sessionID`: what could be read
/// of it, empty strings otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedPermission {
    /// `id`, or empty.
    pub request_id: String,
    /// `sessionID`, or empty.
    pub session_id: String,
}

/// Every field of a `permission.asked` / `permission.v2.asked` payload that
/// [`PermissionAsked::decode`] reads: `(key, sub-keys)`; no sub-keys: the value is read whole.
/// A caller may pass only these (the napi layer copies nothing else out of JavaScript, so an
/// edit's `metadata.diff` is never converted); see [`project_request`].
pub fn request_fields(
    kind: PermissionEventKind,
) -> &'static [(&'static str, &'static [&'static str])] {
    const META: &[&str] = &["command", "filepath"];
    const TOOL: &[&str] = &["messageID", "callID"];
    match kind {
        PermissionEventKind::Asked => &[
            ("id", &[]),
            ("sessionID", &[]),
            ("permission", &[]),
            ("patterns", &[]),
            ("metadata", META),
            ("tool", TOOL),
        ],
        PermissionEventKind::V2Asked => &[
            ("id", &[]),
            ("sessionID", &[]),
            ("action", &[]),
            ("resources", &[]),
            ("metadata", META),
            ("source", TOOL),
        ],
    }
}

/// The part of `request` that [`PermissionAsked::decode`] reads for `kind`
/// ([`request_fields`]): the same decode, whatever else the payload holds. A nested field that
/// is not an object becomes `null` (decode reads nothing from it either). The reference for
/// the napi layer's copy.
pub fn project_request(kind: PermissionEventKind, request: &Value) -> Value {
    let Some(r) = request.as_object() else {
        return request.clone();
    };
    let mut out = serde_json::Map::new();
    for (key, sub) in request_fields(kind) {
        let Some(v) = r.get(*key) else { continue };
        let v = if sub.is_empty() {
            v.clone()
        } else {
            match v.as_object() {
                Some(o) => Value::Object(
                    sub.iter()
                        .filter_map(|k| o.get(*k).map(|x| (k.to_string(), x.clone())))
                        .collect(),
                ),
                None => Value::Null,
            }
        };
        out.insert(key.to_string(), v);
    }
    Value::Object(out)
}

impl PermissionAsked {
    /// Decode the `properties` of a `kind` event. Errors: [`MalformedPermission`] when `id` or
    /// `sessionID` is missing, not a string or empty.
    pub fn decode(
        kind: PermissionEventKind,
        r: &Value,
    ) -> Result<PermissionAsked, MalformedPermission> {
        let (Some(id), Some(session_id)) = (owned(r, "id"), owned(r, "sessionID")) else {
            return Err(MalformedPermission {
                request_id: s(r, "id").unwrap_or("").to_string(),
                session_id: s(r, "sessionID").unwrap_or("").to_string(),
            });
        };
        let meta = r.get("metadata").unwrap_or(&Value::Null);
        let (permission, tool, patterns, resources) = match kind {
            PermissionEventKind::Asked => (
                s(r, "permission"),
                r.get("tool"),
                strings(r.get("patterns")),
                Vec::new(),
            ),
            PermissionEventKind::V2Asked => (
                s(r, "action"),
                r.get("source"),
                Vec::new(),
                strings(r.get("resources")),
            ),
        };
        let tool = tool.unwrap_or(&Value::Null);
        Ok(PermissionAsked {
            kind,
            id,
            session_id,
            permission: permission.unwrap_or("").to_string(),
            tool_message_id: owned(tool, "messageID"),
            call_id: owned(tool, "callID"),
            command: owned(meta, "command"),
            filepath: owned(meta, "filepath"),
            patterns,
            resources,
        })
    }
}
