//! Messages, parts and sessions: `message.updated`, `message.part.updated`,
//! `session.created/updated`, and the same objects fetched over OpenCode's HTTP API.

use serde_json::Value;

use super::json::{ms, owned, s, strings};
use crate::provenance::{EpochMs, MessageInfo, PeerMark, Role};

/// A session's identity facts (`Session` of OpenCode: `info` of `session.*` events, or
/// `GET /session/:id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// `id` (`ses_…`).
    pub id: String,
    /// `parentID`: set for `task` child sessions.
    pub parent_id: Option<String>,
}

impl SessionInfo {
    /// Decode a session object; `None` without an `id`.
    pub fn decode(info: &Value) -> Option<SessionInfo> {
        Some(SessionInfo {
            id: owned(info, "id")?,
            parent_id: owned(info, "parentID"),
        })
    }
}

/// One message part the core reads. Parts of other types, and text parts with neither a peer
/// mark nor the compaction-continue mark, decode to nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// `part.messageID`.
    pub message_id: String,
    /// `part.sessionID`.
    pub session_id: String,
    /// What the part says.
    pub kind: PartKind,
}

/// The kinds of [`Part`].
#[derive(Debug, Clone, PartialEq)]
pub enum PartKind {
    /// A `text` part carrying c2c-bridge's `metadata.peerMessage` `{messageId, from, via}`
    /// (written by the plugin when it injects a peer message; `messageId` and `from`
    /// required, non-string `via` entries skipped).
    PeerText(PeerMark),
    /// OpenCode 1.18.33's own "continue" message after an automatic compaction: a `text` part
    /// with `synthetic: true` and `metadata.compaction_continue: true`. Wins over a peer mark
    /// on the same part.
    CompactionContinue,
    /// A `compaction` part (a compaction request); `auto` is `part.auto === true`.
    Compaction {
        /// Written by the loop on overflow (`true`) or by the user's `/compact` (`false`).
        auto: bool,
    },
    /// A `tool` part with a `callID`.
    Tool(ToolPart),
}

/// The facts of a `tool` part.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPart {
    /// `part.callID`.
    pub call_id: String,
    /// For the `task` tool, once it has named its child session: which child, and when.
    pub task: Option<TaskRun>,
    /// The tool's raw arguments (`state.input`, a JSON object), once parsed: `None` while
    /// `state.status` is missing or `"pending"` (OpenCode then writes `input: {}` before the
    /// arguments are known) and when `input` is not an object. Opaque here: the guardrail
    /// reads it, and only its [`crate::policy::guardrail::TOOL_ARG_KEYS`] are kept.
    pub input: Option<Value>,
}

/// A `task` tool call's child session (OpenCode 1.18.33 sets `state.metadata = {
/// parentSessionId, sessionId: <child>, model}` and `state.time.start` before it writes the
/// child's prompt; the completed part adds `state.time.end`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRun {
    /// `state.metadata.sessionId`.
    pub child_session_id: String,
    /// `state.time.start`, epoch ms.
    pub start_ms: EpochMs,
    /// `state.time.end`, epoch ms; `None` while it runs.
    pub end_ms: Option<EpochMs>,
}

/// One fetched message `{info, parts}` (`GET /session/:id/message/:mid`, or an element of
/// `GET /session/:id/message`). Info and parts decode independently.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FetchedMessage {
    /// The message's facts, if `info` decodes.
    pub info: Option<MessageInfo>,
    /// The parts that decode, in order.
    pub parts: Vec<Part>,
}

impl FetchedMessage {
    /// Decode `{info, parts}`; missing or malformed pieces are left out.
    pub fn decode(message: &Value) -> FetchedMessage {
        FetchedMessage {
            info: message.get("info").and_then(decode_info),
            parts: message
                .get("parts")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(decode_part).collect())
                .unwrap_or_default(),
        }
    }
}

/// A fetched session (`GET /session/:id`) with all its messages (`GET /session/:id/message`).
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedSession {
    /// The session.
    pub session: SessionInfo,
    /// Its messages; `None` when the list could not be fetched (not an array): the history
    /// then does not count as complete.
    pub messages: Option<Vec<FetchedMessage>>,
}

impl FetchedSession {
    /// Decode a fetched session and its message list. `None` when `session` has no `id`
    /// (e.g. `null`, the fetch failed): then nothing at all is fed, not even the messages.
    pub fn decode(session: &Value, messages: &Value) -> Option<FetchedSession> {
        Some(FetchedSession {
            session: SessionInfo::decode(session)?,
            messages: messages
                .as_array()
                .map(|a| a.iter().map(FetchedMessage::decode).collect()),
        })
    }
}

/// Decode a message `info` (`UserMessage | AssistantMessage`). Required: `id`, `sessionID`,
/// `role` `user`/`assistant`, `time.created`.
pub(super) fn decode_info(info: &Value) -> Option<MessageInfo> {
    let id = owned(info, "id")?;
    let session_id = owned(info, "sessionID")?;
    let role = match s(info, "role") {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => return None,
    };
    let time = info.get("time").unwrap_or(&Value::Null);
    let created_ms = ms(time.get("created"))?;
    Some(MessageInfo {
        id,
        session_id,
        role,
        parent_id: owned(info, "parentID"),
        created_ms,
        completed_ms: ms(time.get("completed")),
        finish: owned(info, "finish"),
        error: info.get("error").is_some_and(|e| !e.is_null()),
        // A user message's `summary` is an object ({diffs}); only `true` marks a
        // compaction summary.
        summary: info.get("summary") == Some(&Value::Bool(true)),
    })
}

/// Decode a message part. Required: `messageID`, `sessionID`; then per type as [`PartKind`].
pub(super) fn decode_part(part: &Value) -> Option<Part> {
    let message_id = owned(part, "messageID")?;
    let session_id = owned(part, "sessionID")?;
    let kind = match s(part, "type")? {
        "text" => {
            let meta = part.get("metadata");
            if part.get("synthetic") == Some(&Value::Bool(true))
                && meta.and_then(|m| m.get("compaction_continue")) == Some(&Value::Bool(true))
            {
                PartKind::CompactionContinue
            } else {
                let pm = meta.and_then(|m| m.get("peerMessage"))?;
                PartKind::PeerText(PeerMark {
                    message_id: owned(pm, "messageId")?,
                    from: owned(pm, "from")?,
                    via: strings(pm.get("via")),
                })
            }
        }
        "compaction" => PartKind::Compaction {
            auto: part.get("auto") == Some(&Value::Bool(true)),
        },
        "tool" => {
            let call_id = owned(part, "callID")?;
            let state = part.get("state").unwrap_or(&Value::Null);
            let task = if s(part, "tool") == Some("task") {
                decode_task(state)
            } else {
                None
            };
            let input = if matches!(s(state, "status"), None | Some("pending")) {
                None
            } else {
                // Only the guardrail's keys are kept (an edit's strings, a write's content
                // are not): the same fact whether the event was copied whole or projected.
                state
                    .get("input")
                    .filter(|v| v.is_object())
                    .map(|v| super::projection::project(v, super::projection::TOOL_INPUT_FIELDS))
            };
            PartKind::Tool(ToolPart {
                call_id,
                task,
                input,
            })
        }
        _ => return None,
    };
    Some(Part {
        message_id,
        session_id,
        kind,
    })
}

/// The child-session facts of a `task` tool part's `state`; `None` until it names its child
/// and start time.
fn decode_task(state: &Value) -> Option<TaskRun> {
    let meta = state.get("metadata").unwrap_or(&Value::Null);
    let child_session_id = owned(meta, "sessionId")?;
    let time = state.get("time").unwrap_or(&Value::Null);
    Some(TaskRun {
        child_session_id,
        start_ms: ms(time.get("start"))?,
        end_ms: ms(time.get("end")),
    })
}
