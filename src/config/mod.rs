//! Configuration: the one place that turns options and environment variables into typed,
//! validated values. Every other module receives those values; none reads an option or an
//! environment variable of its own.
//!
//! - [`validate`] (napi `validateOptions`): the plugin's options object
//!   (`"plugin": [["c2c-bridge", {...}]]`) and its environment overrides, against [`plugin::SCHEMA`];
//!   every mistake is reported with a stable code, nothing is thrown.
//! - [`OpenOptions`] → [`BrokerSettings`]: the options of one broker handle
//!   (`Broker.open({...})`; [`OpenNumbers`] checks the JS numbers first).
//! - [`GateSettings`]: the options of one permission gate (`new PermissionGate({...})`).
//! - [`Environment`]: where environment variables come from (the process, or a given map:
//!   under Bun, `process.env` changes do not reach native code, so the plugin hands it over).
//!
//! # Every option, once
//!
//! "Plugin" is the plugin options object ([`validate`]: its range, whole numbers only);
//! "`open`" is `Broker.open` ([`OpenNumbers`], [`BrokerSettings`]: its range). The plugin
//! forwards its values to `Broker.open`, so the plugin range is the narrower one; the CLI and
//! Rust callers get the wider one. An environment variable wins over the option when set and
//! not blank.
//!
//! | plugin option | `open` / gate option | environment | unit | default | plugin range | `open` range |
//! |---|---|---|---|---|---|---|
//! | `alias` | `alias` | `C2C_BRIDGE_ALIAS` (plugin only) | alias | `<dir basename>-<4 hex>` ([`crate::ids::default_alias`]) | alias rule | alias rule |
//! | `brokerRoot` | `root`, gate `brokerRoot` | `C2C_MCP_BROKER_ROOT`, then `C2C_STATE_HOME`, `XDG_STATE_HOME`, `HOME` | absolute path (`~/` expanded) | c2c's resolution ([`crate::store::root`]) | absolute | any |
//! | `peerPermissions` | gate `peerPermissions` | `C2C_BRIDGE_PEER_PERMISSIONS` | `allow` \| `ask` \| `deny` | `allow` | vocabulary | vocabulary (`E_INVALID_OPTION`) |
//! | `supervisors` | — | `C2C_SUPERVISORS` (comma list) | aliases | none | aliases | — |
//! | `inbound` | `inbound` | `C2C_BRIDGE_INBOUND` | `accept` \| `auto` \| `hold` \| `refuse` | `accept` (`hold` when the plugin value is wrong) | vocabulary | vocabulary (`E_INVALID_OPTION`) |
//! | `maxMessageBytes` | `maxMessageBytes` | `C2C_BRIDGE_MAX_MESSAGE_BYTES` (plugin only) | bytes of UTF-8 | 16384 ([`DEFAULT_MAX_MESSAGE_BYTES`]) | 1–1048576 | 1–67108864 |
//! | `heldCap` | `heldCap` | — | messages | 100 ([`DEFAULT_HELD_CAP`]) | 1–10000 | 1–1000000 |
//! | `heldTtlSecs` | `heldTtlSecs` | — | seconds | 300 ([`DEFAULT_HELD_TTL`]) | 1–86400 | (0, 31536000], fractions kept |
//! | `rateBurst` | `rateBurst` | — | messages per window | 20 ([`RateConfig`](crate::policy::rate::RateConfig)) | 1–10000 | 1–4294967295 |
//! | `rateWindowSecs` | `rateWindowSecs` | — | seconds | 60 | 1–86400 | 0.1–86400, fractions kept |
//! | `fallbackIntervalMs` | — (plugin timer) | — | **milliseconds** | 2000 ([`plugin::DEFAULT_FALLBACK_INTERVAL_MS`]) | 100–600000 | — |
//! | `retryBaseMs` | — (plugin timer, doubles up to 30 s) | — | **milliseconds** | 500 ([`plugin::DEFAULT_RETRY_BASE_MS`]) | 10–60000 | — |
//! | — | `lockTimeoutMs` | — | **milliseconds** | 5000 ([`DEFAULT_LOCK_TIMEOUT`]) | — | 1–3600000 |
//! | — | `pendingPerAliasCap` | — | active slots | 16 (c2c's) | — | 1–1000000 |
//! | — | `pendingGlobalCap` | — | active slots | 1024 (c2c's) | — | 1–10000000 |
//! | — | `pid` | — | pid | this process | — | 1–2147483647 |
//! | — | (pending-reply TTL) | `C2C_PERMISSION_TTL` (c2c's) | seconds (float) | 600 | — | clamped to 1–86400; unusable → 600 ([`crate::pending::parse_ttl`]) |
//! | — | gate `home` | `HOME` | path | `/` when unset | — | — |
//! | — | (diagnostics, not an option) | `C2C_BRIDGE_LOG` | `tracing` env-filter | off | — | see [`crate::diagnostics`] |
//!
//! Defaults of call arguments (napi methods; each call may pass its own):
//!
//! | argument | unit | default |
//! |---|---|---|
//! | `roomHistory(room, limit)` | messages | 50 ([`DEFAULT_ROOM_HISTORY_LIMIT`]) |
//! | `receipts(limit)` | messages sent | 50 ([`DEFAULT_RECEIPTS_LIMIT`]) |
//! | `framedReceipts(limit)` | messages sent | 20 ([`DEFAULT_FRAMED_RECEIPTS_LIMIT`]) |
//! | `readLog(root, limit)` | lines of `broker.log` | 50 ([`DEFAULT_LOG_TAIL_LIMIT`]) |
//! | `probeLock(root, file, timeoutMs)` | **milliseconds** | 200 ([`DEFAULT_PROBE_LOCK_TIMEOUT`]) |
//!
//! c2c's `C2C_MCP_SESSION_ID` (the session the CLI acts for) is read by the CLI, not here.
//! Seconds are the unit of c2c's records and TTLs; milliseconds only where a JS timer or a
//! lock wait is configured, and the option's name then ends in `Ms`.
//!
//! # Failing safe (issue 18)
//! A mistake is never silently read as "not set" (which would leave the most permissive
//! default on): an unknown key, a value of the wrong type, out of range or outside the
//! vocabulary is an error. The value is not used (the default applies, or for `inbound` the
//! safe `hold`), and when the error is in an option that touches permissions — or cannot be
//! attributed to one (an unknown key may be a misspelt `peerPermissions`) —
//! [`plugin::Validated::auto_answers_off`] is set: the plugin's gate then answers no permission
//! request, every one goes to OpenCode's prompt, until the configuration is fixed.

mod env;
mod gate;
mod open;
pub mod plugin;
pub mod vars;

pub use env::Environment;
pub use gate::{GateOptions, GateSettings};
pub use open::{
    BrokerSettings, OpenNumbers, OpenOptions, DEFAULT_HELD_CAP, DEFAULT_HELD_TTL,
    DEFAULT_LOCK_TIMEOUT, DEFAULT_MAX_MESSAGE_BYTES,
};
pub use plugin::validate;

/// Default `limit` of `roomHistory`, messages.
pub const DEFAULT_ROOM_HISTORY_LIMIT: usize = 50;
/// Default `limit` of `receipts`, messages sent.
pub const DEFAULT_RECEIPTS_LIMIT: usize = 50;
/// Default `limit` of `framedReceipts` (a listing for a model: shorter), messages sent.
pub const DEFAULT_FRAMED_RECEIPTS_LIMIT: usize = 20;
/// Default `limit` of `readLog`, lines.
pub const DEFAULT_LOG_TAIL_LIMIT: usize = 50;
/// Default wait of `probeLock` (`doctor`'s lock-health probe).
pub const DEFAULT_PROBE_LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(200);
