//! JS-side shapes (`#[napi(object)]`) and their conversions from core types. Times are epoch
//! seconds as floats, exactly as c2c stores them.

use napi::bindgen_prelude::{Either, Null};
use napi_derive::napi;

use crate::broker as core;
use crate::inbox::Message;
use crate::pending;

/// What `openPendingReply` returns.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct PendingOpened {
    /// Always true (failures throw).
    pub ok: bool,
    /// The perm id of the new slot.
    pub perm_id: String,
    /// `"permission"` or `"question"`.
    pub kind: String,
    /// The TTL applied, in seconds.
    pub ttl_seconds: f64,
    /// Expiry, in epoch seconds (float).
    pub expires_at: f64,
    /// The supervisors stored: validated, deduplicated (case-insensitively), without the
    /// requester.
    pub supervisors: Vec<String>,
}

impl From<crate::broker::PendingOpened> for PendingOpened {
    fn from(o: crate::broker::PendingOpened) -> PendingOpened {
        PendingOpened {
            ok: true,
            perm_id: o.perm_id,
            kind: o.kind.as_str().to_string(),
            ttl_seconds: o.ttl_seconds,
            expires_at: o.expires_at,
            supervisors: o.supervisors,
        }
    }
}

/// What `checkPendingReply` returns: c2c's outcome, as data.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct CheckOutcome {
    /// Whether this session is a supervisor of an active slot with that perm id.
    pub valid: bool,
    /// The requester's session id when valid, else null (c2c's JSON has the key either way).
    pub requester_session_id: Either<String, Null>,
    /// Null when valid, else `"unknown permission ID"`, `"permission ID expired"` or
    /// `"reply from non-supervisor: <alias>"`.
    pub error: Either<String, Null>,
}

/// A string or an explicit `null` (an `Option` field would be left out of the object).
type StringOrNull = Either<String, Null>;

/// `Some(s)` → `s`, `None` → `null`.
pub fn string_or_null(s: Option<String>) -> StringOrNull {
    match s {
        Some(s) => Either::A(s),
        None => Either::B(Null),
    }
}

impl From<pending::CheckOutcome> for CheckOutcome {
    fn from(o: pending::CheckOutcome) -> CheckOutcome {
        CheckOutcome {
            valid: o.valid,
            requester_session_id: string_or_null(o.requester_session_id),
            error: string_or_null(o.error),
        }
    }
}

/// Options of `Broker.open`.
#[napi(object)]
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// The session id to bind (OpenCode's `ses_…`): 1–128 chars of `[A-Za-z0-9._-]`, no
    /// leading dot, no `..`.
    pub session_id: String,
    /// The alias to register (1–64 chars of `[A-Za-z0-9._-]`, no leading dot, not `c2c` /
    /// `c2c-system`). Required unless `attach` is true.
    pub alias: Option<String>,
    /// Broker root directory. Default: `C2C_MCP_BROKER_ROOT`, else
    /// `$XDG_STATE_HOME/c2c/repos/<fp>/broker`, else `~/.c2c/repos/<fp>/broker` (c2c's rule).
    pub root: Option<String>,
    /// Project directory (for the repository fingerprint and the `auto` inbound policy).
    /// Default: the current directory.
    pub directory: Option<String>,
    /// When the alias is held by another live session, register under the free alternative
    /// (`<alias>-2`, …) instead of failing with `E_ALIAS_TAKEN`. Default false.
    pub auto_alias: Option<bool>,
    /// Pid to register. Default: this process.
    pub pid: Option<f64>,
    /// Recorded as `plugin_version`.
    pub plugin_version: Option<String>,
    /// Recorded as `client_type`. Default `"opencode"`.
    pub client_type: Option<String>,
    /// Bind to the session's existing registration instead of registering (CLI use with
    /// `C2C_MCP_SESSION_ID`); `close()` then leaves the registration alone. Default false.
    pub attach: Option<bool>,
    /// Maximum message size in bytes of UTF-8. Default 16384.
    pub max_message_bytes: Option<f64>,
    /// How long to wait for a file lock, in milliseconds. Default 5000.
    pub lock_timeout_ms: Option<f64>,
    /// Environment variables to read instead of the process environment:
    /// `C2C_MCP_BROKER_ROOT`, `C2C_STATE_HOME`, `XDG_STATE_HOME`, `HOME` (root resolution),
    /// `C2C_BRIDGE_INBOUND` and `C2C_PERMISSION_TTL`. Pass `process.env`: under Bun, changes a
    /// script makes to `process.env` do not reach native code. Default: the process environment.
    pub env: Option<std::collections::HashMap<String, String>>,
    /// Inbound policy: `accept` (default), `auto`, `hold` or `refuse`; the environment variable
    /// `C2C_BRIDGE_INBOUND` overrides it. An unknown value is `E_INVALID_OPTION`.
    pub inbound: Option<String>,
    /// Held-inbox capacity in messages. Default 100.
    pub held_cap: Option<f64>,
    /// How long a held message waits before it expires, in seconds. Default 300.
    pub held_ttl_secs: Option<f64>,
    /// Rate limit: messages a sender may send one recipient in a burst. Default 20.
    pub rate_burst: Option<f64>,
    /// Rate limit: seconds over which the burst refills. Default 60.
    pub rate_window_secs: Option<f64>,
    /// Active pending-reply slots allowed per requester alias (case-insensitive). Default 16
    /// (c2c's). At least 1. The TTL of slots comes from `C2C_PERMISSION_TTL` (seconds,
    /// default 600, clamped to 1 s–24 h), read once when the handle opens.
    pub pending_per_alias_cap: Option<f64>,
    /// Active pending-reply slots allowed in the broker root. Default 1024 (c2c's). At least 1.
    pub pending_global_cap: Option<f64>,
}

/// Options of `send`, `sendAll` and `sendRoom`.
#[napi(object)]
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    /// Hop list inherited from the message that triggered the sending turn (session ids,
    /// oldest first); the broker appends the sender. Default `[]`.
    pub via: Option<Vec<String>>,
}

/// A registration as listed by `listPeers`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct Peer {
    /// Alias (original case). Peer-controlled: frame it before showing it to a model.
    pub alias: String,
    /// Session id.
    pub session_id: String,
    /// c2c's liveness rule: pid present with the recorded start time (no pid = alive).
    pub alive: bool,
    /// Registered pid.
    pub pid: Option<u32>,
    /// Epoch seconds (float).
    pub registered_at: f64,
    /// Recorded plugin version.
    pub plugin_version: Option<String>,
    /// Recorded client type.
    pub client_type: Option<String>,
    /// Recorded project directory.
    pub directory: Option<String>,
    /// True for the handle's own registration.
    pub is_self: bool,
}

impl From<core::Peer> for Peer {
    fn from(p: core::Peer) -> Peer {
        Peer {
            alias: p.alias,
            session_id: p.session_id,
            alive: p.alive,
            pid: p.pid,
            registered_at: p.registered_at,
            plugin_version: p.plugin_version,
            client_type: p.client_type,
            directory: p.directory,
            is_self: p.is_self,
        }
    }
}

/// What a send returns: the message is durably queued in the recipient's inbox.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct SendReceipt {
    /// uuid v4 of the new message.
    pub message_id: String,
    /// Recipient alias as stored (`"<alias>#<room>"` for rooms).
    pub to_alias: String,
    /// Recipient session id.
    pub to_session_id: String,
    /// Epoch seconds (float) of the enqueue.
    pub ts: f64,
    /// `"queued"`.
    pub status: String,
}

impl From<core::SendReceipt> for SendReceipt {
    fn from(r: core::SendReceipt) -> SendReceipt {
        SendReceipt {
            message_id: r.message_id,
            to_alias: r.to_alias,
            to_session_id: r.to_session_id,
            ts: r.ts,
            status: r.status.to_string(),
        }
    }
}

/// A recipient a broadcast or room send skipped.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct SkippedRecipient {
    /// Alias.
    pub alias: String,
    /// Why (`"not alive"`).
    pub reason: String,
}

/// Result of `sendAll` / `sendRoom`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct BroadcastReport {
    /// One receipt per recipient reached.
    pub sent: Vec<SendReceipt>,
    /// Recipients not reached.
    pub skipped: Vec<SkippedRecipient>,
}

impl From<core::BroadcastReport> for BroadcastReport {
    fn from(b: core::BroadcastReport) -> BroadcastReport {
        BroadcastReport {
            sent: b.sent.into_iter().map(Into::into).collect(),
            skipped: b
                .skipped
                .into_iter()
                .map(|s| SkippedRecipient {
                    alias: s.alias,
                    reason: s.reason.to_string(),
                })
                .collect(),
        }
    }
}

/// A message of one's own inbox. `content` and `fromAlias` are untrusted peer data.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct InboxMessage {
    /// uuid of the message; the dedup key.
    pub message_id: String,
    /// Sender alias.
    pub from_alias: String,
    /// Recipient alias as stored (`"<alias>#<room>"` for rooms).
    pub to_alias: String,
    /// The text.
    pub content: String,
    /// Epoch seconds (float) of the enqueue.
    pub ts: f64,
    /// Sender session id, when the sender recorded it (c2c-bridge does; c2c does not).
    pub from_session_id: Option<String>,
    /// Hop list (session ids, oldest first; the sender last).
    pub via: Vec<String>,
    /// The room, for a room message.
    pub room_id: Option<String>,
    /// True for a broadcast copy.
    pub broadcast: bool,
    /// True when a human released it from the held inbox.
    pub released: bool,
    /// Set on a receipt notice from `c2c-system` about a message this session sent.
    pub receipt: Option<Receipt>,
    /// True when the stored text held invalid Unicode (a lone surrogate, bytes that are not
    /// UTF-8), replaced with U+FFFD when read; the frame says so.
    pub repaired: bool,
}

/// The outcome of a message this session sent.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct Receipt {
    /// The message.
    pub message_id: String,
    /// `delivered`, `paused` (still queued), `held`, `refused`, `expired`, `dropped`,
    /// `duplicate`, `rate_limited` or `unreadable`.
    pub status: String,
    /// The recipient alias as addressed.
    pub to_alias: String,
    /// Why, for a bad outcome.
    pub reason: Option<String>,
    /// Epoch seconds (float) of the outcome.
    pub ts: f64,
}

impl From<crate::receipts::Receipt> for Receipt {
    fn from(r: crate::receipts::Receipt) -> Receipt {
        Receipt {
            message_id: r.message_id,
            status: r.status.as_str().to_string(),
            to_alias: r.to_alias,
            reason: r.reason,
            ts: r.ts,
        }
    }
}

/// A permission reply found in a delivered message (advisory only; it answers nothing).
#[napi(object)]
#[derive(Debug, Clone)]
pub struct PermissionAdvisory {
    /// The perm id it names.
    pub perm_id: String,
    /// `approve-once`, `approve-always` or `reject`.
    pub verdict: String,
    /// The sender's alias.
    pub from_alias: String,
    /// True when checked against an active slot of this session with the sender among its
    /// supervisors; false when the check could not be made (show it marked unverified).
    pub verified: bool,
}

/// A message accepted by `gateInbox`, with its frame ready for injection.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct DeliverableMessage {
    /// The message.
    pub message: InboxMessage,
    /// What the model is shown: the message framed as untrusted data (or a receipt notice).
    pub framed: String,
    /// Set when the whole body is a permission reply to one of this session's requests.
    pub permission_reply: Option<PermissionAdvisory>,
}

impl From<crate::broker::Deliverable> for DeliverableMessage {
    fn from(d: crate::broker::Deliverable) -> DeliverableMessage {
        DeliverableMessage {
            message: d.message.into(),
            framed: d.framed,
            permission_reply: d.advisory.map(|a| PermissionAdvisory {
                perm_id: a.perm_id,
                verdict: a.verdict.to_string(),
                from_alias: a.from_alias,
                verified: a.verified,
            }),
        }
    }
}

/// Result of `gateInbox`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct GateReport {
    /// Accepted messages (still in the inbox), oldest first, framed.
    pub deliver: Vec<DeliverableMessage>,
    /// Ids moved to the held inbox.
    pub held: Vec<String>,
    /// Ids refused.
    pub refused: Vec<String>,
    /// Ids dropped: the held inbox was full, or a permission reply failed its check against
    /// this session's pending slots.
    pub dropped: Vec<String>,
}

/// A held message.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct HeldMessage {
    /// 1-based number (what `releaseHeld("3")` takes).
    pub index: u32,
    /// The message (untrusted).
    pub message: InboxMessage,
    /// Epoch seconds when it was held.
    pub held_at: f64,
    /// Epoch seconds when it expires.
    pub expires_at: f64,
    /// Why it was held.
    pub reason: String,
}

impl From<crate::broker::HeldMessage> for HeldMessage {
    fn from(h: crate::broker::HeldMessage) -> HeldMessage {
        HeldMessage {
            index: h.index as u32,
            message: h.message.into(),
            held_at: h.held_at,
            expires_at: h.expires_at,
            reason: h.reason,
        }
    }
}

impl From<Message> for InboxMessage {
    fn from(m: Message) -> InboxMessage {
        InboxMessage {
            room_id: m.room_id().map(str::to_string),
            broadcast: m.broadcast == Some(true),
            released: m.released == Some(true),
            repaired: m.repaired == Some(true),
            receipt: m.receipt.map(Into::into),
            message_id: m.message_id,
            from_alias: m.from_alias,
            to_alias: m.to_alias,
            content: m.content,
            ts: m.ts,
            from_session_id: m.from_session_id,
            via: m.via,
        }
    }
}

/// Result of `ack`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct AckReport {
    /// Ids moved to the archive by this call.
    pub acked: Vec<String>,
    /// Ids that were not in the inbox (already acknowledged, or never there).
    pub missing: Vec<String>,
}

impl From<core::AckReport> for AckReport {
    fn from(a: core::AckReport) -> AckReport {
        AckReport {
            acked: a.acked,
            missing: a.missing,
        }
    }
}

/// A registration removed by `sweep`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct RemovedRegistration {
    /// Alias.
    pub alias: String,
    /// Session id.
    pub session_id: String,
}

/// Result of `sweep`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct SweepReport {
    /// Dead registrations removed.
    pub removed: Vec<RemovedRegistration>,
    /// Messages moved to `dead-letter.jsonl` (none is dropped).
    pub dead_lettered: u32,
    /// Temp files (`X.tmp.<pid>`, 0600 copies of a store file) left by writers killed
    /// mid-replace, a minute old or more, that were removed.
    pub temp_files_removed: u32,
}

impl From<core::SweepReport> for SweepReport {
    fn from(s: core::SweepReport) -> SweepReport {
        SweepReport {
            removed: s
                .removed
                .into_iter()
                .map(|(alias, session_id)| RemovedRegistration { alias, session_id })
                .collect(),
            dead_lettered: s.dead_lettered as u32,
            temp_files_removed: s.temp_files_removed as u32,
        }
    }
}

/// A room as listed by `listRooms`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct RoomInfo {
    /// RoomInfo id.
    pub room_id: String,
    /// Member aliases.
    pub members: Vec<String>,
    /// Whether this session is a member.
    pub joined: bool,
    /// `public`, `invite_only` (c2c's modes) or `unknown` (another tool's mode, enforced as
    /// invite-only). An invite-only room is listed only to its members and invited aliases,
    /// and to the latter without its members (c2c's rule).
    pub visibility: String,
}

impl From<core::RoomInfo> for RoomInfo {
    fn from(r: core::RoomInfo) -> RoomInfo {
        RoomInfo {
            room_id: r.room_id,
            members: r.members,
            joined: r.joined,
            visibility: r.visibility.to_string(),
        }
    }
}

/// Options of `createRoom`.
#[napi(object)]
#[derive(Debug, Clone, Default)]
pub struct CreateRoomOptions {
    /// `public` (default) or `invite_only`, c2c's two modes.
    pub visibility: Option<String>,
    /// Aliases invited to an invite-only room. Default `[]`.
    pub invite: Option<Vec<String>>,
}

/// One line of a room's history. `fromAlias` and `content` are untrusted.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct RoomMessage {
    /// Sender alias.
    pub from_alias: String,
    /// Text.
    pub content: String,
    /// Epoch seconds (float).
    pub ts: f64,
    /// Message id.
    pub message_id: String,
}

impl From<core::RoomMessage> for RoomMessage {
    fn from(m: core::RoomMessage) -> RoomMessage {
        RoomMessage {
            from_alias: m.from_alias,
            content: m.content,
            ts: m.ts,
            message_id: m.message_id,
        }
    }
}

/// Passed to a `watch` callback.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct InboxChange {
    /// The watched session.
    pub session_id: String,
}
