//! The permission gate: one per plugin instance, it turns OpenCode's events and permission
//! requests, decoded by [`crate::opencode`] (this module reads no OpenCode JSON), into one
//! decision per request id.
//!
//! The plugin feeds **every** event to [`PermissionGate::observe`] (the turn index needs
//! messages, parts and session facts in the order OpenCode publishes them), then, for a
//! `permission.asked` / `permission.v2.asked` of one of its own sessions, calls
//! [`PermissionGate::decide`] until the answer is final:
//!
//! ```text
//! decide ─► need-message {sessionId, messageId} ─► fetch GET /session/:id/message/:mid ─► feed_message ─┐
//!        ─► need-session {sessionId}            ─► fetch session + its messages        ─► feed_session ─┤
//!        ◄──────────────────────────────────────────────────────────────────────────────────────────────┘
//!        ─► once | reject   (the plugin replies)
//!        ─► leave           (no reply: OpenCode's prompt decides)
//!        ─► duplicate       (this request id was decided before: do nothing)
//! ```
//!
//! A fetch that fails is simply not fed: the next `decide` then treats the item as missing,
//! which resolves towards "local" (no reply). Each item is asked for at most once.
//!
//! # Raw tool arguments
//!
//! The guardrail reads the tool call's raw arguments (`state.input` of the tool part with the
//! request's `callID`), e.g. the bash tool's `workdir`, which the permission metadata lacks.
//! They are taken from, in order: the `tool_input` argument of `decide`, tool parts seen by
//! `observe` / `feed_message` (OpenCode publishes the running tool part, with its input,
//! before it asks). If neither has them, `decide` answers `need-message` for the tool's
//! message once; if they are still unknown the request is left to the prompt: approving a
//! call whose arguments the guardrail could not read would make the guardrail blind (a bash
//! `workdir` of `~` turns `touch .bashrc` into a write of `~/.bashrc`). Arguments are needed
//! only for the one case that can reply `once` (peer-triggered, `allow`).
//!
//! # One decision per request
//!
//! The request id is recorded when a final decision is made (not while `need-*` steps run),
//! so two concurrent loops for one repeated event both run, and the second to finish gets
//! `duplicate`. Each final decision writes exactly one `permission_decision` line to
//! `broker.log` (see [`PermissionGate::decide`]).
//!
//! # Never `always`
//!
//! [`Action`] has no variant that replies `always` (see [`super::peer_permissions`]).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

use serde_json::Value;

use super::guardrail::{self, Category, PathContext, PermissionRequest};
use super::peer_permissions::{
    self, AnsweredSet, Decision, LeaveReason, PeerPermissions, PermissionRequestFacts,
};
use super::SettingSource;
use crate::log::{short_hash, AuditLog};
use crate::opencode::{
    Event, FetchedMessage, FetchedSession, MalformedPermission, Part, PartKind, PermissionAsked,
};
use crate::provenance::{Basis, EpochMs, Limits, Lookup, TurnIndex};
use crate::{Error, Result};

/// How the plugin instance configures its gate.
#[derive(Debug, Clone)]
pub struct GateConfig {
    /// The `peerPermissions` plugin option, if set.
    pub peer_permissions: Option<String>,
    /// The value of `C2C_BRIDGE_PEER_PERMISSIONS`, if set (it wins over the option).
    pub env_peer_permissions: Option<String>,
    /// The session directory (tools' cwd).
    pub directory: PathBuf,
    /// The worktree root (base of edit/write `patterns`).
    pub worktree: PathBuf,
    /// `$HOME`.
    pub home: PathBuf,
    /// Where `permission_decision` lines go; `None`: nowhere.
    pub audit: Option<AuditLog>,
    /// Broker roots the guardrail protects besides the ones it knows by name (`~/.c2c`,
    /// `$XDG_STATE_HOME/c2c`): see [`protected_broker_roots`].
    pub protected_roots: Vec<PathBuf>,
    /// Bounds of the turn index. Set `instance_started_ms` to when the plugin instance
    /// started (epoch ms).
    pub limits: Limits,
}

/// What the plugin does next with a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Reply `"once"`.
    Once,
    /// Reply `"reject"`.
    Reject,
    /// Send no reply.
    Leave,
    /// Fetch `message_id` of `session_id` (with its parts), feed it, ask again.
    NeedMessage,
    /// Fetch session `session_id` and all its messages, feed them, ask again.
    NeedSession,
    /// Already decided: do nothing.
    Duplicate,
}

impl Action {
    /// The wire form: `once`, `reject`, `leave`, `need-message`, `need-session`, `duplicate`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Once => "once",
            Action::Reject => "reject",
            Action::Leave => "leave",
            Action::NeedMessage => "need-message",
            Action::NeedSession => "need-session",
            Action::Duplicate => "duplicate",
        }
    }
}

/// The answer of [`PermissionGate::decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateDecision {
    /// What to do.
    pub action: Action,
    /// Why, in a short machine-friendly phrase (e.g. `local-turn`, `guardrail`,
    /// `peer-turn/allow`); for `need-*`, what is missing.
    pub reason: String,
    /// The request id (`id`).
    pub request_id: String,
    /// For final decisions, the request's session; for `need-*`, the session to fetch from.
    pub session_id: String,
    /// For final decisions, the tool's message; for `need-message`, the message to fetch.
    pub message_id: Option<String>,
    /// The guardrail category that tripped (`credentials`, `agent-instructions`, ...).
    pub category: Option<&'static str>,
    /// The guardrail's one-sentence explanation, when it tripped.
    pub guardrail_reason: Option<String>,
    /// The c2c message id of the peer message that started the turn.
    pub peer_message_id: Option<String>,
    /// The sender alias of that message (peer-controlled: frame before showing a model).
    pub from: Option<String>,
    /// Why the provenance walk ended where it did: `peer-turn`, `user-turn`, `compaction`,
    /// `user-folded-into-peer-turn`, `child-origin-unknown`, `missing`, `limit`,
    /// `session-mismatch` (see [`crate::provenance::Basis`]). Set on every final decision
    /// except a malformed request.
    pub basis: Option<&'static str>,
}

impl GateDecision {
    /// The answer to a permission request without `id` or `sessionID`: `leave` with reason
    /// `malformed-request` (OpenCode's prompt decides). Not recorded as decided and not
    /// written to the audit log.
    pub fn malformed(m: &MalformedPermission) -> GateDecision {
        GateDecision {
            action: Action::Leave,
            reason: "malformed-request".into(),
            request_id: m.request_id.clone(),
            session_id: m.session_id.clone(),
            message_id: None,
            category: None,
            guardrail_reason: None,
            peer_message_id: None,
            from: None,
            basis: None,
        }
    }
}

/// The stable identifier of a guardrail category, as logged and returned.
pub fn category_id(c: Category) -> &'static str {
    match c {
        Category::PermissionConfig => "permission-config",
        Category::AgentInstructions => "agent-instructions",
        Category::Credentials => "credentials",
        Category::ShellStartup => "shell-startup",
        Category::GitConfig => "git-config",
        Category::Scheduling => "scheduling",
        Category::Privilege => "privilege",
        Category::BrokerState => "broker-state",
        Category::Unproven => "unproven",
    }
}

fn basis_id(b: Basis) -> &'static str {
    match b {
        Basis::UserTurn => "user-turn",
        Basis::PeerTurn => "peer-turn",
        Basis::Compaction => "compaction",
        Basis::Missing => "missing",
        Basis::Limit => "limit",
        Basis::SessionMismatch => "session-mismatch",
        Basis::UserFoldedIntoPeerTurn => "user-folded-into-peer-turn",
        Basis::ChildOriginUnknown => "child-origin-unknown",
    }
}

/// The answer of [`PermissionGate::outgoing_via`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViaLookup {
    /// The inherited chain (session ids, oldest first; empty for a local turn).
    Ready(Vec<String>),
    /// Fetch this message (info and parts) and feed it, then ask again.
    NeedMessage {
        /// Its session.
        session_id: String,
        /// The message.
        message_id: String,
    },
    /// Fetch this session and its messages and feed them, then ask again.
    NeedSession(String),
}

/// The broker roots a gate for `directory` protects: the root `explicit` (option
/// `brokerRoot`) or c2c's resolution of it ([`crate::store::root::resolve_path`]), plus every
/// root the environment names (`C2C_MCP_BROKER_ROOT`, `$C2C_STATE_HOME/c2c`,
/// `$XDG_STATE_HOME/c2c`), so a peer-triggered turn never writes broker state whichever root a
/// c2c peer uses. Resolution errors simply add nothing.
pub fn protected_broker_roots(
    explicit: Option<&std::path::Path>,
    env: &crate::store::root::RootEnv,
    directory: &std::path::Path,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok((p, _)) = crate::store::root::resolve_path(explicit, env, directory) {
        out.push(p);
    }
    if let Some(r) = &env.broker_root {
        out.push(PathBuf::from(r));
    }
    for base in [&env.c2c_state_home, &env.xdg_state_home]
        .into_iter()
        .flatten()
    {
        out.push(PathBuf::from(base).join("c2c"));
    }
    out.retain(|p| p.is_absolute());
    out.dedup();
    out
}

impl From<super::InvalidSetting> for Error {
    fn from(e: super::InvalidSetting) -> Error {
        Error::InvalidOption {
            option: e.setting.to_string(),
            reason: e.to_string(),
        }
    }
}

/// A bounded map, oldest insertion forgotten first.
#[derive(Debug, Default)]
struct BoundedMap {
    map: HashMap<String, Value>,
    order: VecDeque<String>,
}

impl BoundedMap {
    fn insert(&mut self, key: String, v: Value, cap: usize) {
        if self.map.insert(key.clone(), v).is_none() {
            self.order.push_back(key);
            while self.order.len() > cap.max(1) {
                if let Some(old) = self.order.pop_front() {
                    self.map.remove(&old);
                }
            }
        }
    }
}

const TOOL_INPUTS_KEPT: usize = 4_096;
const ARGS_ASKED_KEPT: usize = 4_096;

/// The per-instance permission gate. See the module doc.
#[derive(Debug)]
pub struct PermissionGate {
    index: TurnIndex,
    answered: AnsweredSet,
    mode: PeerPermissions,
    mode_source: SettingSource,
    paths: PathContext,
    audit: Option<AuditLog>,
    /// Raw tool arguments by `messageID \0 callID`.
    tool_inputs: BoundedMap,
    /// Request ids for which the tool message was already asked for (arguments).
    args_asked: AnsweredSet,
    /// Auto-answers are off (a configuration error): every reply becomes `leave`.
    answers_off: bool,
}

/// The fields of a permission request the gate reads, borrowed from [`PermissionAsked`].
struct Request<'a> {
    id: &'a str,
    session: &'a str,
    permission: &'a str,
    tool_message: Option<&'a str>,
    call_id: Option<&'a str>,
    guard: PermissionRequest,
}

impl<'a> From<&'a PermissionAsked> for Request<'a> {
    fn from(r: &'a PermissionAsked) -> Self {
        Request {
            id: &r.id,
            session: &r.session_id,
            permission: &r.permission,
            tool_message: r.tool_message_id.as_deref(),
            call_id: r.call_id.as_deref(),
            guard: PermissionRequest {
                permission: r.permission.clone(),
                command: r.command.clone(),
                filepath: r.filepath.clone(),
                patterns: r.patterns.clone(),
                resources: r.resources.clone(),
                args: Value::Null,
            },
        }
    }
}

fn tool_key(message_id: &str, call_id: &str) -> String {
    format!("{message_id}\u{0}{call_id}")
}

impl PermissionGate {
    /// Build a gate. Errors: [`Error::InvalidOption`] (`E_INVALID_OPTION`) when
    /// `peerPermissions` or `C2C_BRIDGE_PEER_PERMISSIONS` is not `allow`, `ask` or `deny`.
    pub fn new(config: GateConfig) -> Result<PermissionGate> {
        let (mode, mode_source) = PeerPermissions::resolve(
            config.peer_permissions.as_deref(),
            config.env_peer_permissions.as_deref(),
        )?;
        Ok(PermissionGate {
            index: TurnIndex::new(config.limits),
            answered: AnsweredSet::default(),
            mode,
            mode_source,
            paths: config.protected_roots.into_iter().fold(
                PathContext::new(config.directory, config.worktree, config.home),
                PathContext::with_protected_root,
            ),
            audit: config.audit,
            tool_inputs: BoundedMap::default(),
            args_asked: AnsweredSet::new(ARGS_ASKED_KEPT),
            answers_off: false,
        })
    }

    /// Turn auto-answers off for the life of this gate: a decision that would reply `once`
    /// or `reject` becomes `leave` with reason `config-error`, so OpenCode prompts the user.
    /// Used when the plugin options have an error that touches permissions or cannot be
    /// attributed (`config::Validated::auto_answers_off`, issue 18). The turn index
    /// keeps working (hop chains continue).
    pub fn turn_answers_off(&mut self) {
        self.answers_off = true;
    }

    /// Start writing `permission_decision` lines to `audit` (the broker root could not be
    /// opened when the gate was built, e.g. it was insecure, and has been fixed since).
    pub fn set_audit(&mut self, audit: AuditLog) {
        self.audit = Some(audit);
    }

    /// Whether auto-answers are off (see [`PermissionGate::turn_answers_off`]).
    pub fn answers_off(&self) -> bool {
        self.answers_off
    }

    /// The effective `peerPermissions` mode.
    pub fn mode(&self) -> PeerPermissions {
        self.mode
    }

    /// Where the mode came from.
    pub fn mode_source(&self) -> SettingSource {
        self.mode_source
    }

    /// The turn index (for tests and benchmarks).
    pub fn index(&self) -> &TurnIndex {
        &self.index
    }

    /// Feed one decoded OpenCode event ([`crate::opencode::decode_event`]), stamped `now_ms`
    /// (epoch ms) on receipt.
    pub fn observe(&mut self, event: Event, now_ms: EpochMs) {
        match event {
            Event::MessageUpdated(info) => self.index.observe_message(info),
            Event::PartUpdated(part) => self.observe_part(part),
            Event::SessionCreated(s) => self
                .index
                .observe_session_created(&s.id, s.parent_id.as_deref()),
            Event::SessionUpdated(s) => self.index.observe_session(&s.id, s.parent_id.as_deref()),
            Event::SessionStatus { session_id, busy } => {
                self.index.observe_status(&session_id, busy, now_ms)
            }
            Event::SessionDeleted { session_id } => self.index.forget_session(&session_id),
        }
    }

    /// Feed one fetched message ([`FetchedMessage`]), answering a `need-message` step.
    pub fn feed_message(&mut self, message: FetchedMessage) {
        if let Some(info) = message.info {
            self.index.observe_message(info);
        }
        for part in message.parts {
            self.observe_part(part);
        }
    }

    /// Feed a fetched session and its messages ([`FetchedSession`]), answering a
    /// `need-session` step. When the message list was fetched, the session's history then
    /// counts as complete.
    pub fn feed_session(&mut self, fetched: FetchedSession) {
        let session = &fetched.session;
        self.index
            .observe_session(&session.id, session.parent_id.as_deref());
        if let Some(list) = fetched.messages {
            for m in list {
                self.feed_message(m);
            }
            self.index.mark_history_complete(&session.id);
        }
    }

    fn observe_part(&mut self, part: Part) {
        let (message, session) = (part.message_id.as_str(), part.session_id.as_str());
        match part.kind {
            PartKind::CompactionContinue => self
                .index
                .observe_compaction_continue_part(message, session),
            PartKind::PeerText(mark) => self.index.observe_peer_part(message, session, mark),
            PartKind::Compaction { auto } => {
                self.index.observe_compaction_part(message, session, auto)
            }
            PartKind::Tool(tool) => {
                // A `task` tool part: remember which child session the call ran and when (see
                // [`TurnIndex::observe_task_part`] for what OpenCode 1.18.33 writes).
                if let Some(task) = &tool.task {
                    self.index.observe_task_part(
                        message,
                        &tool.call_id,
                        session,
                        &task.child_session_id,
                        task.start_ms,
                        task.end_ms,
                    );
                }
                if let Some(input) = tool.input {
                    self.tool_inputs.insert(
                        tool_key(message, &tool.call_id),
                        input,
                        TOOL_INPUTS_KEPT,
                    );
                }
            }
        }
    }

    /// The `via` chain a message sent from the turn running assistant message `message_id`
    /// of `session_id` continues ([`crate::policy::hops::inherit_via`]): empty for a turn the
    /// user typed, the triggering peer message's chain for a peer-triggered turn (also in
    /// `task` child sessions). `NeedMessage` / `NeedSession` ask the caller to fetch and
    /// feed, as for [`PermissionGate::decide`]; after a second miss the turn counts as local.
    pub fn outgoing_via(&mut self, session_id: &str, message_id: &str) -> ViaLookup {
        match self.index.provenance(session_id, message_id) {
            Lookup::Resolved(p) => ViaLookup::Ready(crate::policy::hops::inherit_via(&p)),
            Lookup::NeedMessage {
                session_id,
                message_id,
            } => ViaLookup::NeedMessage {
                session_id,
                message_id,
            },
            Lookup::NeedSession(sid) => ViaLookup::NeedSession(sid),
        }
    }

    /// Decide one decoded `permission.asked` / `permission.v2.asked` request
    /// ([`PermissionAsked::decode`]; a request that does not decode is
    /// [`GateDecision::malformed`]). `tool_input` is the tool call's raw arguments when the
    /// caller has them.
    ///
    /// Each final decision (`once`, `reject`, `leave`) appends one `permission_decision` line
    /// to the audit log: `request` (id), `session` (short hash), `kind`, `permission`,
    /// `provenance` (`peer`/`local`), `basis`, `folded`, `inherited`, `peerMessageId`, `from`,
    /// `mode`, `decision`, `reason`, `category`.
    pub fn decide(
        &mut self,
        request: &PermissionAsked,
        tool_input: Option<&Value>,
    ) -> GateDecision {
        let kind = request.kind;
        let mut req = Request::from(request);
        let mut out = GateDecision {
            action: Action::Leave,
            reason: String::new(),
            request_id: req.id.to_string(),
            session_id: req.session.to_string(),
            message_id: req.tool_message.map(str::to_string),
            category: None,
            guardrail_reason: None,
            peer_message_id: None,
            from: None,
            basis: None,
        };
        if self.answered.contains(req.id) {
            out.action = Action::Duplicate;
            out.reason = "already-decided".into();
            return out;
        }
        let provenance = match req.tool_message {
            None => crate::provenance::Provenance::local(Basis::Missing),
            Some(mid) => match self.index.provenance(req.session, mid) {
                Lookup::Resolved(p) => p,
                Lookup::NeedMessage {
                    session_id,
                    message_id,
                } => {
                    out.action = Action::NeedMessage;
                    out.reason = "provenance: message not in the index".into();
                    out.session_id = session_id;
                    out.message_id = Some(message_id);
                    tracing::debug!(request = req.id, message = ?out.message_id, "turn index miss: need-message");
                    return out;
                }
                Lookup::NeedSession(sid) => {
                    out.action = Action::NeedSession;
                    out.reason = "provenance: session history not in the index".into();
                    out.session_id = sid;
                    out.message_id = None;
                    tracing::debug!(request = req.id, session = ?out.session_id, "turn index miss: need-session");
                    return out;
                }
            },
        };
        out.basis = Some(basis_id(provenance.basis));
        if let Some(mark) = &provenance.peer {
            out.peer_message_id = Some(mark.message_id.clone());
            out.from = Some(mark.from.clone());
        }

        let mut guard_hit = None;
        let mut args_missing = false;
        if provenance.peer_policy_applies() && self.mode == PeerPermissions::Allow {
            let args = tool_input.filter(|v| v.is_object()).cloned().or_else(|| {
                let (m, c) = (req.tool_message?, req.call_id?);
                self.tool_inputs.map.get(&tool_key(m, c)).cloned()
            });
            match args {
                Some(a) => {
                    req.guard.args = a;
                    guard_hit = guardrail::check(&req.guard, &self.paths);
                }
                None => {
                    if let (Some(m), Some(_)) = (req.tool_message, req.call_id) {
                        if self.args_asked.first_time(req.id) {
                            out.action = Action::NeedMessage;
                            out.reason = "tool arguments not seen".into();
                            out.message_id = Some(m.to_string());
                            tracing::debug!(
                                request = req.id,
                                message = m,
                                "tool arguments not seen: need-message"
                            );
                            return out;
                        }
                    }
                    args_missing = true;
                }
            }
        }

        let facts = PermissionRequestFacts {
            kind,
            request_id: req.id,
            session_id: req.session,
            permission: req.permission,
        };
        let category = guard_hit.as_ref().map(|h| category_id(h.category));
        let decision = if args_missing {
            Decision::Leave {
                reason: LeaveReason::Guardrail {
                    category: "tool-args-unavailable".into(),
                },
            }
        } else {
            peer_permissions::decide(&facts, &provenance, self.mode, category)
        };
        let (action, reason) = match &decision {
            Decision::ReplyOnce => (Action::Once, "peer-turn/allow".to_string()),
            Decision::ReplyReject => (Action::Reject, "peer-turn/deny".to_string()),
            Decision::Leave { reason } => (
                Action::Leave,
                match reason {
                    LeaveReason::LocalTurn => match provenance.basis {
                        Basis::ChildOriginUnknown => "child-origin-unknown".to_string(),
                        _ => "local-turn".to_string(),
                    },
                    LeaveReason::UserFoldedIntoPeerTurn => "user-folded-into-peer-turn".to_string(),
                    LeaveReason::AskMode => "peer-turn/ask".to_string(),
                    LeaveReason::Guardrail { category } if args_missing => {
                        format!("peer-turn/allow/{category}")
                    }
                    LeaveReason::Guardrail { .. } => "peer-turn/allow/guardrail".to_string(),
                },
            ),
        };
        // A configuration error: no reply at all, whatever the mode said (fail safe).
        let (action, reason) = if self.answers_off && action != Action::Leave {
            (Action::Leave, "config-error".to_string())
        } else {
            (action, reason)
        };
        self.answered.first_time(req.id);
        tracing::debug!(
            request = req.id,
            kind = kind.event_type(),
            permission = ?req.permission,
            basis = out.basis,
            mode = self.mode.as_str(),
            decision = action.as_str(),
            reason = %reason,
            category,
            "permission decision"
        );
        out.action = action;
        out.reason = reason;
        out.category = category;
        out.guardrail_reason = guard_hit.map(|h| h.reason);
        if let Some(log) = &self.audit {
            // Borrowed fields: the line `fields!` would make, without copying them into a map.
            use crate::log::AuditValue::{Bool, OptStr, Str};
            let session = short_hash(req.session);
            log.event_fields(
                "permission_decision",
                &[
                    ("request", Str(req.id)),
                    ("session", Str(&session)),
                    ("kind", Str(kind.event_type())),
                    ("permission", Str(req.permission)),
                    (
                        "provenance",
                        Str(if provenance.is_peer_triggered() {
                            "peer"
                        } else {
                            "local"
                        }),
                    ),
                    ("basis", OptStr(out.basis)),
                    ("folded", Bool(provenance.folded)),
                    ("inherited", Bool(provenance.inherited)),
                    ("peerMessageId", OptStr(out.peer_message_id.as_deref())),
                    ("from", OptStr(out.from.as_deref())),
                    ("mode", Str(self.mode.as_str())),
                    ("decision", Str(action.as_str())),
                    ("reason", Str(&out.reason)),
                    ("category", OptStr(out.category)),
                    ("guardrailReason", OptStr(out.guardrail_reason.as_deref())),
                ],
            );
        }
        out
    }
}

#[cfg(test)]
mod tests;
