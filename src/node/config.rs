//! `validateOptions`: the plugin options checked against [`crate::config::plugin::SCHEMA`]
//! (conversion only: validation and defaults are [`crate::config`]'s).

use std::collections::HashMap;

use napi_derive::napi;
use serde_json::Value;

use crate::config;

/// One configuration mistake.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct OptionError {
    /// `E_UNKNOWN_OPTION`, `E_OPTION_TYPE`, `E_OPTION_RANGE` or `E_OPTION_VALUE`.
    pub code: String,
    /// The key as written, or the environment variable's name (`(options)` when the whole
    /// options value is not an object).
    pub option: String,
    /// What is wrong and what is expected, one sentence.
    pub message: String,
    /// For an unknown key, the option probably meant (edit distance).
    pub suggestion: Option<String>,
}

/// The options after validation: only values that passed, environment overrides applied.
/// Numbers are whole numbers in the unit their name says.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct ValidOptions {
    /// `alias` / `C2C_BRIDGE_ALIAS`.
    pub alias: Option<String>,
    /// `brokerRoot` / `C2C_MCP_BROKER_ROOT` (absolute, `~/` expanded).
    pub broker_root: Option<String>,
    /// `peerPermissions` / `C2C_BRIDGE_PEER_PERMISSIONS`: `allow`, `ask` or `deny`.
    pub peer_permissions: Option<String>,
    /// `supervisors` / `C2C_SUPERVISORS` (comma list): aliases.
    pub supervisors: Vec<String>,
    /// `inbound` / `C2C_BRIDGE_INBOUND`; `hold` when the value given was wrong.
    pub inbound: Option<String>,
    /// `maxMessageBytes` / `C2C_BRIDGE_MAX_MESSAGE_BYTES`, bytes (1–1048576).
    pub max_message_bytes: Option<u32>,
    /// `heldCap`, messages (1–10000).
    pub held_cap: Option<u32>,
    /// `heldTtlSecs`, seconds (1–86400).
    pub held_ttl_secs: Option<u32>,
    /// `rateBurst`, messages (1–10000).
    pub rate_burst: Option<u32>,
    /// `rateWindowSecs`, seconds (1–86400).
    pub rate_window_secs: Option<u32>,
    /// `fallbackIntervalMs`, milliseconds (100–600000); default 2000 when not given.
    pub fallback_interval_ms: u32,
    /// `retryBaseMs`, milliseconds (10–60000); default 500 when not given.
    pub retry_base_ms: u32,
}

/// The answer of `validateOptions`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct ValidatedOptions {
    /// The usable values.
    pub options: ValidOptions,
    /// Every mistake (empty when the configuration is fine).
    pub errors: Vec<OptionError>,
    /// True when a mistake touches permissions (`peerPermissions`, `supervisors`) or cannot be
    /// attributed (an unknown key): the plugin must then answer no permission request
    /// (`new PermissionGate({autoAnswersOff: true})`) until the configuration is fixed.
    pub auto_answers_off: bool,
    /// The options whose value came from their environment variable (e.g. `brokerRoot` from
    /// `C2C_MCP_BROKER_ROOT`).
    pub from_env: Vec<String>,
}

fn small(n: Option<u64>) -> Option<u32> {
    // The schema's ranges all fit in u32.
    n.map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// Validate the plugin options object (`null`/`undefined` count as `{}`) and the environment
/// overrides in `env` (pass `process.env`; default: the process environment). Never throws
/// for bad options: every mistake is an entry of `errors` (issue 18).
#[napi(
    catch_unwind,
    ts_args_type = "raw: unknown, env?: Record<string, string> | null"
)]
pub fn validate_options(
    raw: Option<Value>,
    env: Option<HashMap<String, String>>,
) -> ValidatedOptions {
    let env = env
        .map(config::Environment::Given)
        .unwrap_or_default()
        .to_map();
    let v = config::validate(&raw.unwrap_or(Value::Null), &env);
    let o = v.options;
    let (fallback_interval_ms, retry_base_ms) = (
        o.fallback_interval_ms_or_default(),
        o.retry_base_ms_or_default(),
    );
    ValidatedOptions {
        options: ValidOptions {
            alias: o.alias,
            broker_root: o.broker_root,
            peer_permissions: o.peer_permissions,
            supervisors: o.supervisors,
            inbound: o.inbound,
            max_message_bytes: small(o.max_message_bytes),
            held_cap: small(o.held_cap),
            held_ttl_secs: small(o.held_ttl_secs),
            rate_burst: small(o.rate_burst),
            rate_window_secs: small(o.rate_window_secs),
            fallback_interval_ms: u32::try_from(fallback_interval_ms).unwrap_or(u32::MAX),
            retry_base_ms: u32::try_from(retry_base_ms).unwrap_or(u32::MAX),
        },
        errors: v
            .errors
            .into_iter()
            .map(|e| OptionError {
                code: e.code.to_string(),
                option: e.option,
                message: e.message,
                suggestion: e.suggestion,
            })
            .collect(),
        auto_answers_off: v.auto_answers_off,
        from_env: v.from_env.iter().map(|s| s.to_string()).collect(),
    }
}
