//! The one decoder of OpenCode's wire format: raw event, message, part, session and
//! permission-request JSON (`serde_json::Value`, as the plugin passes it through napi) in,
//! typed facts out. Nothing else in the core reads OpenCode's JSON: [`crate::policy`] and
//! [`crate::provenance`] take only the facts built here.
//!
//! Shapes are those of OpenCode **1.18.33**, checked against `@opencode-ai/sdk`'s
//! `types.gen.d.ts` and what the binary publishes (the e2e harness, `__tests__/e2e/`):
//!
//! | OpenCode JSON                                   | fact                                   |
//! |-------------------------------------------------|----------------------------------------|
//! | event `message.updated` `{info}`                | [`Event::MessageUpdated`] ([`MessageInfo`]) |
//! | event `message.part.updated` `{part}`           | [`Event::PartUpdated`] ([`Part`])      |
//! | event `session.created` / `session.updated` `{info}` | [`Event::SessionCreated`] / [`Event::SessionUpdated`] ([`SessionInfo`]) |
//! | event `session.status` `{sessionID, status:{type}}`, `session.idle` `{sessionID}` | [`Event::SessionStatus`] |
//! | event `session.deleted` `{info}`                | [`Event::SessionDeleted`]              |
//! | `GET /session/:id/message/:mid` `{info, parts}` | [`FetchedMessage`]                     |
//! | `GET /session/:id` + `GET /session/:id/message` | [`FetchedSession`]                     |
//! | `permission.asked` / `permission.v2.asked` properties | [`PermissionAsked`]              |
//!
//! # Malformed input
//!
//! Decoding never fails loudly: a payload that lacks what a fact needs decodes to nothing
//! (`None`), and the caller then simply has not seen it. For the turn index that is the safe
//! side: a message or mark it has not seen makes a walk ask for it once, then resolve towards
//! "local" (see [`crate::provenance`]). A permission request without `id` or `sessionID`
//! decodes to [`MalformedPermission`], which the gate leaves to OpenCode's prompt. Empty
//! strings count as absent everywhere (an empty id names nothing).
//!
//! # Busy (one rule, Rust and the plugin)
//!
//! OpenCode 1.18.33's `SessionStatus` is `{type: "idle"} | {type: "busy"} | {type: "retry",
//! attempt, message, next}`; `retry` is a loop that failed a model call and will try again, so
//! it is still running. **A session is busy iff its status `type` is not `"idle"`**
//! ([`is_busy_status`], [`session_busy`]); a `session.idle` event means not busy; a status
//! without a (non-empty string) `type` is no observation at all. An unknown future `type` therefore counts as busy:
//! "idle" is the evidence that lets a peer-marked message start its own turn (and lets the
//! plugin inject), so only OpenCode's explicit `idle` may provide it. The plugin's event
//! switch applies the same rule (`type !== "idle"`).

mod json;
mod message;
mod permission;
mod projection;

pub use message::{FetchedMessage, FetchedSession, Part, PartKind, SessionInfo, TaskRun, ToolPart};
pub use permission::{
    project_request, request_fields, MalformedPermission, PermissionAsked, PermissionEventKind,
};
pub use projection::{project, Field, EVENT_FIELDS};

use serde_json::Value;

pub use crate::provenance::{EpochMs, MessageInfo, PeerMark, Role};
use json::s;

/// One OpenCode event the core uses, decoded. Every other event type decodes to `None`.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `message.updated`: a message was created or changed (e.g. completed).
    MessageUpdated(MessageInfo),
    /// `message.part.updated`: a part the core reads (see [`PartKind`]).
    PartUpdated(Part),
    /// `session.created`: the index will see this session's whole history.
    SessionCreated(SessionInfo),
    /// `session.updated` (or a fetched session).
    SessionUpdated(SessionInfo),
    /// `session.status` (busy as in the module doc) or `session.idle` (`busy: false`).
    SessionStatus {
        /// `properties.sessionID`.
        session_id: String,
        /// See "Busy" in the module doc.
        busy: bool,
    },
    /// `session.deleted`: forget the session.
    SessionDeleted {
        /// `properties.info.id`.
        session_id: String,
    },
}

/// Whether an OpenCode `SessionStatus.type` means the session's loop is running: everything
/// but `"idle"` (see "Busy" in the module doc). OpenCode 1.18.33 knows `idle`, `busy`, `retry`.
pub fn is_busy_status(status_type: &str) -> bool {
    status_type != "idle"
}

/// Whether a `SessionStatus` object (`{type, …}`: `session.status`'s `properties.status`, or a
/// value of `GET /session/status`) says busy, by [`is_busy_status`]; `None` without a
/// non-empty string `type` (no observation).
pub fn session_busy(status: &Value) -> Option<bool> {
    s(status, "type").map(is_busy_status)
}

/// Decode one raw event `{type, properties}`. `None` for event types the core does not use
/// and for payloads that lack what the fact needs (see "Malformed input").
pub fn decode_event(event: &Value) -> Option<Event> {
    let p = event.get("properties").unwrap_or(&Value::Null);
    match event.get("type").and_then(Value::as_str).unwrap_or("") {
        "message.updated" => message::decode_info(p.get("info")?).map(Event::MessageUpdated),
        "message.part.updated" => message::decode_part(p.get("part")?).map(Event::PartUpdated),
        "session.created" => SessionInfo::decode(p.get("info")?).map(Event::SessionCreated),
        "session.updated" => SessionInfo::decode(p.get("info")?).map(Event::SessionUpdated),
        "session.status" => {
            let session_id = s(p, "sessionID")?.to_string();
            let busy = session_busy(p.get("status")?)?;
            Some(Event::SessionStatus { session_id, busy })
        }
        "session.idle" => Some(Event::SessionStatus {
            session_id: s(p, "sessionID")?.to_string(),
            busy: false,
        }),
        "session.deleted" => Some(Event::SessionDeleted {
            session_id: s(p.get("info")?, "id")?.to_string(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
