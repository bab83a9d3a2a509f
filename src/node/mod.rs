//! The Node-API surface: the only module that uses napi.
//!
//! Each export converts its arguments, calls one core function and converts the result: no
//! policy and no file access of its own. Every export is marked `catch_unwind`, so a panic
//! becomes a JS exception instead of crossing the FFI boundary; core errors become JS
//! `Error`s with a stable `code` in [`error`].

pub mod ack_task;
pub mod admin;
pub mod broker;
pub mod config;
pub mod diagnostics;
pub mod envelope;
pub mod error;
pub mod inspect;
pub mod opencode;
pub mod policy;
pub mod relay;
pub mod types;
pub mod verdict;

use napi_derive::napi;

/// The version of the native core (the crate version, e.g. `"0.1.0"`).
#[napi(catch_unwind)]
pub fn native_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Does nothing; the floor of an FFI call, for benchmarks.
#[napi(catch_unwind)]
pub fn noop() {}

/// The default alias of an OpenCode session: `<directory basename>-<4 hex of sha256(sessionId)>`,
/// reduced to the alias charset; stable for a session across restarts.
#[napi(catch_unwind)]
pub fn default_alias(directory: String, session_id: String) -> String {
    crate::ids::default_alias(&directory, &session_id)
}
