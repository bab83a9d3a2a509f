//! OpenCode facts the plugin asks the core about, so that one rule serves Rust and JS.

use napi_derive::napi;
use serde_json::Value;

/// Whether an OpenCode `SessionStatus` (`{type: "idle" | "busy" | "retry", …}`, from a
/// `session.status` event or `GET /session/status`) means the session's loop is running:
/// every `type` but `"idle"` is busy (`retry` is a loop that will try again; an unknown future
/// type is not evidence of idleness). `null` when there is no non-empty string `type`: no
/// observation. The rule is the core's `opencode::is_busy_status`.
#[napi(catch_unwind, ts_args_type = "status: unknown")]
pub fn session_busy(status: Value) -> Option<bool> {
    crate::opencode::session_busy(&status)
}
