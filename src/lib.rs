//! c2c-bridge: an in-process c2c broker core for OpenCode sessions.
//!
//! Everything in this crate except [`node`] is pure Rust: it knows nothing about Node-API,
//! OpenCode's SDK or JavaScript. `src/node/` is the only module that uses napi.
//!
//! # Layout (dependency order, bottom first)
//!
//! - [`error`]: the one core error enum, each variant with a stable code.
//! - `store`: the broker root (resolution, permission checks), OFD locks on `X.lock`
//!   sidecars, atomic JSON files.
//! - `registry`, `inbox`, `rooms`, `log`: c2c's broker-root files, read and written in
//!   c2c 0.8's format.
//! - `broker`: the identity-bound handle that every caller goes through.
//! - [`policy`]: local decisions (the protected-path [`policy::guardrail`], ...).
//! - [`envelope`]: framing of peer text for the model; permission-reply recognition.
//! - [`node`]: napi classes and functions; error-code mapping.
//!
//! # Terminology
//!
//! - **broker root**: the directory c2c and c2c-bridge share (`registry.json`, inboxes, ...).
//! - **session id** (`session_id`): the stable id of one agent session; OpenCode's `ses_…` id.
//!   It is also a file-name component (`<session_id>.inbox.json`), hence the strict charset.
//! - **alias**: the human-facing name of a session, 1–64 chars of `[A-Za-z0-9._-]`.
//!   Compared case-insensitively; stored in its original case.
//! - **registration**: one record of `registry.json` binding a session id to an alias, a pid
//!   and the pid's start time.
//! - **inbox**: `<session_id>.inbox.json`, the JSON array of messages waiting for a session.
//! - **envelope**: the frame around peer text shown to a model.
//! - **perm id** (`perm_id`): the id of a permission request a pending-reply slot tracks.
//! - **supervisor**: an alias allowed to answer a pending-reply slot (advisory only).

pub mod envelope;
pub mod error;
pub mod node;
pub mod policy;

pub use error::{Error, ErrorCode};
