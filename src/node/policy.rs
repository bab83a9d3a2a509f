//! The `PermissionGate` class: a thin wrapper over [`crate::policy::engine::PermissionGate`].
//! JS objects (events, permission requests, messages) cross as `serde_json::Value` and are
//! decoded by [`crate::opencode`] before the gate sees them.

use std::path::PathBuf;

use napi::bindgen_prelude::{JsObjectValue, JsValue, Object, Unknown};
use napi::{Env, ValueType};
use napi_derive::napi;
use serde_json::Value;

use super::error::{invalid_arg, to_js, JsCode};
use crate::config;
use crate::opencode::{self, FetchedMessage, FetchedSession, Field, PermissionAsked};
use crate::policy::engine::{self, GateDecision};
use crate::policy::guardrail;
use crate::policy::peer_permissions::PermissionEventKind;
use napi::Result;

/// The answer of `outgoingVia`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct ViaAnswer {
    /// `ready`, `need-message` or `need-session`.
    pub action: String,
    /// The inherited chain when ready (session ids, oldest first).
    pub via: Vec<String>,
    /// The session to fetch (need-*).
    pub session_id: Option<String>,
    /// The message to fetch (need-message).
    pub message_id: Option<String>,
}

/// Options of `new PermissionGate(options)`.
#[napi(object)]
#[derive(Debug, Clone, Default)]
pub struct GateOptions {
    /// Environment variables to read instead of the process environment
    /// (`C2C_BRIDGE_PEER_PERMISSIONS`); pass `process.env` (under Bun, run-time changes to
    /// `process.env` do not reach native code). Default: the process environment.
    pub env: Option<std::collections::HashMap<String, String>>,
    /// `allow` (default), `ask` or `deny`. The environment variable
    /// `C2C_BRIDGE_PEER_PERMISSIONS` overrides it. Any other value: `E_INVALID_OPTION`.
    pub peer_permissions: Option<String>,
    /// The instance directory (tools' cwd), absolute.
    pub directory: String,
    /// The worktree root (base of edit/write `patterns`). Default: `directory`.
    pub worktree: Option<String>,
    /// `$HOME`. Default: the process's `HOME`.
    pub home: Option<String>,
    /// Broker root whose `broker.log` receives `permission_decision` lines. Default: c2c's
    /// resolution (`C2C_MCP_BROKER_ROOT`, `C2C_STATE_HOME`, `XDG_STATE_HOME`, `HOME`).
    pub broker_root: Option<String>,
    /// When the plugin instance started, epoch milliseconds. Default: now.
    pub started_at_ms: Option<f64>,
    /// Answer no permission request (every decision that would reply becomes `leave` with
    /// reason `config-error`): pass `validateOptions(...).autoAnswersOff`. Default false.
    pub auto_answers_off: Option<bool>,
}

/// The answer of `decide`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct PermissionDecision {
    /// What to do next.
    #[napi(
        ts_type = "'once' | 'reject' | 'leave' | 'need-message' | 'need-session' | 'duplicate'"
    )]
    pub action: String,
    /// Why (`local-turn`, `peer-turn/allow`, `peer-turn/ask`, `peer-turn/deny`,
    /// `peer-turn/allow/guardrail`, `peer-turn/allow/tool-args-unavailable`, `config-error` (auto-answers off), `already-decided`,
    /// `malformed-request`), or what is missing for `need-*`.
    pub reason: String,
    /// The request id.
    pub request_id: String,
    /// Final: the request's session. `need-*`: the session to fetch (from).
    pub session_id: String,
    /// Final: the tool's message. `need-message`: the message to fetch.
    pub message_id: Option<String>,
    /// The guardrail category that tripped, e.g. `credentials`.
    pub category: Option<String>,
    /// The guardrail's explanation.
    pub guardrail_reason: Option<String>,
    /// The c2c message id of the peer message that started the turn.
    pub peer_message_id: Option<String>,
    /// Its sender alias (peer-controlled).
    pub from: Option<String>,
    /// Why the provenance walk ended there (`user-turn`, `peer-turn`, `missing`, ...).
    pub basis: Option<String>,
}

impl From<GateDecision> for PermissionDecision {
    fn from(d: GateDecision) -> Self {
        PermissionDecision {
            action: d.action.as_str().to_string(),
            reason: d.reason,
            request_id: d.request_id,
            session_id: d.session_id,
            message_id: d.message_id,
            category: d.category.map(str::to_string),
            guardrail_reason: d.guardrail_reason,
            peer_message_id: d.peer_message_id,
            from: d.from,
            basis: d.basis.map(str::to_string),
        }
    }
}

fn now_ms() -> i64 {
    crate::time::now_ms()
}

/// A JS object that is not an array, as an [`Object`]; `None` for anything else.
fn plain_object<'e>(v: &Unknown<'e>) -> napi::Result<Option<Object<'e>>> {
    if v.get_type()? != ValueType::Object || v.is_array()? {
        return Ok(None);
    }
    Ok(Some(v.coerce_to_object()?))
}

/// `obj[key]` converted whole (napi's JSON conversion), `None` when the property is absent or
/// `undefined`. One property lookup.
fn copy_value(env: &Env, obj: &Object<'_>, key: &str) -> napi::Result<Option<Value>> {
    let v: Unknown<'_> = obj.get_named_property_unchecked(key)?;
    if v.get_type()? == ValueType::Undefined {
        return Ok(None);
    }
    Ok(Some(env.from_js_value(v)?))
}

/// The listed keys of a plain object (each converted whole), `None` for anything else.
fn copy_keys(env: &Env, v: &Unknown<'_>, keys: &[&str]) -> napi::Result<Option<Value>> {
    let Some(obj) = plain_object(v)? else {
        return Ok(None);
    };
    let mut out = serde_json::Map::new();
    for key in keys {
        if let Some(x) = copy_value(env, &obj, key)? {
            out.insert((*key).to_string(), x);
        }
    }
    Ok(Some(Value::Object(out)))
}

/// The request's [`opencode::request_fields`], as [`opencode::project_request`] takes them
/// from a `Value` (a nested field that is not a plain object becomes `null`); anything but a
/// plain object becomes `null` (it decodes as malformed, as it did whole).
fn copy_request(env: &Env, kind: PermissionEventKind, v: &Unknown<'_>) -> napi::Result<Value> {
    let Some(obj) = plain_object(v)? else {
        // decode reads nothing from a non-object: `null` decodes the same (malformed)
        return Ok(Value::Null);
    };
    let mut out = serde_json::Map::new();
    for (key, sub) in opencode::request_fields(kind) {
        let x = if sub.is_empty() {
            copy_value(env, &obj, key)?
        } else {
            let n: Unknown<'_> = obj.get_named_property_unchecked(key)?;
            match n.get_type()? {
                ValueType::Undefined => None,
                _ => Some(copy_keys(env, &n, sub)?.unwrap_or(Value::Null)),
            }
        };
        if let Some(x) = x {
            out.insert((*key).to_string(), x);
        }
    }
    Ok(Value::Object(out))
}

/// `v` copied out of JavaScript as `field` says: the napi twin of [`opencode::project`] (the
/// same result for any JSON value; primitives go through napi's JSON conversion, as whole).
/// `None` for `undefined` (an absent key). A function, symbol or other non-JSON value where
/// a [`Field::Scalar`] is read becomes `{}` like an object (the decoder reads nothing from it).
fn copy_field(env: &Env, v: &Unknown<'_>, field: Field) -> napi::Result<Option<Value>> {
    let ty = v.get_type()?;
    if ty == ValueType::Undefined {
        return Ok(None);
    }
    Ok(Some(match field {
        Field::Whole => env.from_js_value(*v)?,
        Field::Scalar => match ty {
            ValueType::Null | ValueType::Boolean | ValueType::Number | ValueType::String => {
                env.from_js_value(*v)?
            }
            _ => Value::Object(serde_json::Map::new()),
        },
        Field::Keys(keys) => {
            let Some(obj) = plain_object(v)? else {
                return Ok(Some(Value::Null));
            };
            let mut out = serde_json::Map::new();
            for (key, sub) in keys {
                let x: Unknown<'_> = obj.get_named_property_unchecked(key)?;
                if let Some(x) = copy_field(env, &x, *sub)? {
                    out.insert((*key).to_string(), x);
                }
            }
            Value::Object(out)
        }
        Field::KeysWhole(keys) => copy_keys(env, v, keys)?.unwrap_or(Value::Null),
    }))
}

/// A conversion error of `decide`'s arguments (a function or symbol where a value is read).
fn napi_to_js(e: napi::Error) -> napi::Error<JsCode> {
    invalid_arg(e.reason.clone())
}

/// One plugin instance's permission gate: feed it every OpenCode event, ask it about each
/// permission request. It never answers `always`.
#[napi(js_name = "PermissionGate")]
pub struct JsPermissionGate {
    inner: engine::PermissionGate,
    audit_path: Option<String>,
    audit_error: Option<String>,
    /// The gate's settings (the audit log is opened again from them while `audit_error` is
    /// set).
    settings: config::GateSettings,
    /// When opening the audit log was last tried.
    audit_tried: std::time::Instant,
}

/// How often a gate without an audit log tries the broker root again (a root made insecure
/// and then fixed is picked up without a restart, issue 18).
const AUDIT_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

#[napi]
impl JsPermissionGate {
    /// Errors: `E_INVALID_OPTION` for a bad `peerPermissions` / `C2C_BRIDGE_PEER_PERMISSIONS`.
    /// A broker root that cannot be opened does not fail: see `auditError`.
    #[napi(constructor, catch_unwind)]
    pub fn new(options: GateOptions) -> Result<Self, JsCode> {
        let settings = config::GateSettings::resolve(config::GateOptions {
            env: options
                .env
                .map(config::Environment::Given)
                .unwrap_or_default(),
            peer_permissions: options.peer_permissions,
            directory: PathBuf::from(options.directory),
            worktree: options.worktree.map(PathBuf::from),
            home: options.home.map(PathBuf::from),
            broker_root: options.broker_root.map(PathBuf::from),
            started_at_ms: options.started_at_ms,
        });
        // The gate writes one line per decision for the life of the plugin instance: it keeps
        // the log open (see `AuditLog::keep_open`).
        let (audit, audit_error) = match settings.audit_log() {
            Ok(log) => (Some(log.keep_open()), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let audit_path = audit
            .as_ref()
            .map(|a| a.path().to_string_lossy().into_owned());
        let mut inner = engine::PermissionGate::new(settings.gate_config(audit)).map_err(to_js)?;
        if options.auto_answers_off == Some(true) {
            inner.turn_answers_off();
        }
        Ok(JsPermissionGate {
            inner,
            audit_path,
            audit_error,
            settings,
            audit_tried: std::time::Instant::now(),
        })
    }

    /// The `via` chain a message sent from the turn running assistant message `messageId`
    /// (a tool's `ctx.messageID`) continues: `{ action: "ready", via }` (empty for a turn the
    /// user typed), or `need-message` / `need-session` naming what to fetch and feed first.
    #[napi(catch_unwind)]
    pub fn outgoing_via(&mut self, session_id: String, message_id: String) -> ViaAnswer {
        match self.inner.outgoing_via(&session_id, &message_id) {
            engine::ViaLookup::Ready(via) => ViaAnswer {
                action: "ready".into(),
                via,
                session_id: None,
                message_id: None,
            },
            engine::ViaLookup::NeedMessage {
                session_id,
                message_id,
            } => ViaAnswer {
                action: "need-message".into(),
                via: Vec::new(),
                session_id: Some(session_id),
                message_id: Some(message_id),
            },
            engine::ViaLookup::NeedSession(sid) => ViaAnswer {
                action: "need-session".into(),
                via: Vec::new(),
                session_id: Some(sid),
                message_id: None,
            },
        }
    }

    /// The effective `peerPermissions` mode: `allow`, `ask` or `deny`.
    #[napi(getter, catch_unwind, ts_return_type = "'allow' | 'ask' | 'deny'")]
    pub fn mode(&self) -> String {
        self.inner.mode().as_str().to_string()
    }

    /// Where the mode came from: `default`, `option` or `env`.
    #[napi(getter, catch_unwind)]
    pub fn mode_source(&self) -> String {
        use crate::policy::SettingSource::*;
        match self.inner.mode_source() {
            Default => "default",
            Option => "option",
            Env => "env",
        }
        .to_string()
    }

    /// Whether auto-answers are off (`autoAnswersOff`): no request is answered.
    #[napi(getter, catch_unwind)]
    pub fn answers_off(&self) -> bool {
        self.inner.answers_off()
    }

    /// The `broker.log` receiving decision lines, or null.
    #[napi(getter, catch_unwind)]
    pub fn audit_path(&self) -> Option<String> {
        self.audit_path.clone()
    }

    /// Why there is no audit log, or null. While set, `decide` tries the root again at most
    /// every second, so a root made insecure and then fixed is picked up without a restart.
    #[napi(getter, catch_unwind)]
    pub fn audit_error(&self) -> Option<String> {
        self.audit_error.clone()
    }

    /// Feed one OpenCode event `{type, properties}` (every event; unknown ones are ignored).
    /// Only what the decoder reads ([`opencode::EVENT_FIELDS`]) is copied out of JavaScript:
    /// a streaming part's `text`, a tool's output or file content are never converted. An
    /// event that cannot be copied (a non-JSON value where a whole field is read) is ignored.
    #[napi(
        catch_unwind,
        ts_args_type = "event: { type: string; properties?: unknown }"
    )]
    pub fn observe(&mut self, env: Env, event: Unknown<'_>) {
        let Ok(Some(event)) = copy_field(&env, &event, opencode::EVENT_FIELDS) else {
            return;
        };
        if let Some(event) = opencode::decode_event(&event) {
            self.inner.observe(event, now_ms());
        }
    }

    /// Decide a `permission.asked` (`kind = "asked"`) or `permission.v2.asked` (`"v2"`)
    /// payload (`event.properties`), with the tool call's raw arguments if known.
    /// Errors: `E_INVALID_ARG` for another `kind`.
    #[napi(
        catch_unwind,
        ts_args_type = "kind: 'asked' | 'v2', request: object, toolInput?: object | null"
    )]
    pub fn decide(
        &mut self,
        env: Env,
        kind: String,
        request: Unknown<'_>,
        tool_input: Option<Unknown<'_>>,
    ) -> Result<PermissionDecision, JsCode> {
        let Some(kind) = PermissionEventKind::parse(&kind) else {
            return Err(invalid_arg(format!(
                "kind must be \"asked\" or \"v2\", not {kind:?}"
            )));
        };
        // Only what the decision reads is copied out of JavaScript: the request's
        // `opencode::request_fields(kind)` and the tool input's `guardrail::TOOL_ARG_KEYS` (an
        // edit's diff, a write's content are never converted). A tool input that is not a
        // plain object counts as unknown, as before (the engine ignores non-objects).
        let request = copy_request(&env, kind, &request).map_err(napi_to_js)?;
        let tool_input = match tool_input {
            Some(t) => copy_keys(&env, &t, guardrail::TOOL_ARG_KEYS).map_err(napi_to_js)?,
            None => None,
        };
        self.retry_audit();
        Ok(match PermissionAsked::decode(kind, &request) {
            Ok(request) => self.inner.decide(&request, tool_input.as_ref()),
            Err(malformed) => engine::GateDecision::malformed(&malformed),
        }
        .into())
    }

    /// Without an audit log, try the broker root again (at most every [`AUDIT_RETRY`]).
    fn retry_audit(&mut self) {
        if self.audit_error.is_none() || self.audit_tried.elapsed() < AUDIT_RETRY {
            return;
        }
        self.audit_tried = std::time::Instant::now();
        if let Ok(log) = self.settings.audit_log() {
            self.audit_path = Some(log.path().to_string_lossy().into_owned());
            self.audit_error = None;
            self.inner.set_audit(log.keep_open());
        }
    }

    /// Answer a `need-message` step with the fetched `{info, parts}`.
    #[napi(
        catch_unwind,
        ts_args_type = "message: { info: object; parts: object[] }"
    )]
    pub fn feed_message(&mut self, message: Value) {
        self.inner.feed_message(FetchedMessage::decode(&message));
    }

    /// Answer a `need-session` step with the fetched session info (or null) and all its
    /// messages (`[{info, parts}]`, or null when they could not be fetched).
    #[napi(
        catch_unwind,
        ts_args_type = "session: object | null, messages: object[] | null"
    )]
    pub fn feed_session(&mut self, session: Value, messages: Value) {
        if let Some(fetched) = FetchedSession::decode(&session, &messages) {
            self.inner.feed_session(fetched);
        }
    }
}
