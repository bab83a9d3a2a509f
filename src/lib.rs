//! c2c-bridge: an in-process c2c broker core for OpenCode sessions.
//!
//! Everything in this crate except [`node`] is pure Rust: it knows nothing about Node-API,
//! OpenCode's SDK or JavaScript. `src/node/` is the only module that uses napi.
//!
//! # Layout (dependency order, bottom first)
//!
//! - [`error`]: the one core error enum, each variant with a stable code.
//! - [`time`], [`ids`], [`liveness`]: units, id validation, c2c's pid + start-time rule.
//! - [`store`]: the broker root (resolution, permission checks), OFD locks on `X.lock`
//!   sidecars, atomic JSON files, JSON-lines appends.
//! - [`registry`], [`inbox`], [`pending`], [`log`], [`room_meta`]: c2c's broker-root records
//!   (and c2c's room access rules).
//! - [`verdict`]: the host-local approval verdict files (`approval-verdict/<token>.json`).
//! - [`watch`]: the inbox watcher (notify/inotify).
//! - [`broker`]: the identity-bound handle every caller goes through.
//! - [`config`]: options + environment → typed, validated settings (the one table of every
//!   option, default, unit, range and variable); plugin options validation (fail safe).
//! - [`envelope`]: framing of peer text for the model; permission-reply recognition.
//! - [`provenance`]: the turn index and `parentID` walk (was this turn peer-triggered?).
//! - [`policy`]: pure decisions: `peerPermissions`, inbound gating, hop limit, rate limit,
//!   the fail-closed guardrail.
//! - [`node`]: napi classes and functions; error-code mapping.
//!
//! # Terminology
//!
//! - **broker root**: the directory c2c and c2c-bridge share (`registry.json`, inboxes, …).
//! - **session id** (`session_id`): the stable id of one agent session; OpenCode's `ses_…` id.
//!   It is also a file-name stem (`<session_id>.inbox.json`), hence the strict charset.
//! - **alias**: the human-facing name of a session, 1–64 chars of `[A-Za-z0-9._-]`. Compared
//!   case-insensitively; stored in its original case. c2c's *canonical alias*
//!   (`canonical_alias`) is kept in the record but not interpreted.
//! - **registration**: one record of `registry.json` binding a session id to an alias, a pid
//!   and the pid's start time.
//! - **inbox**: `<session_id>.inbox.json`, the JSON array of messages waiting for a session.
//! - **envelope**: the frame around peer text shown to a model.
//! - **perm id** (`perm_id`): the id of a permission request a pending-reply slot tracks.
//! - **supervisor**: an alias allowed to answer a pending-reply slot (advisory only).
//! - **via**: the hop list of session ids a message (or the chain of turns that wrote it) has
//!   passed through.

pub mod broker;
pub mod config;
pub mod envelope;
pub mod error;
pub mod framing;
pub mod held;
pub mod ids;
pub mod inbox;
pub mod liveness;
pub mod log;
pub mod node;
pub mod pending;
pub mod policy;
pub mod provenance;
pub mod receipts;
pub mod registry;
pub mod rooms;
pub mod store;
#[cfg(test)]
mod testutil;
pub mod time;
pub mod verdict;
pub mod watch;

pub use broker::{Broker, OpenOptions, Peer};
pub use error::{Error, ErrorCode, Result};
