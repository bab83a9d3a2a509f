//! c2c-bridge: an in-process c2c broker core for OpenCode sessions.
//!
//! Everything in this crate except `src/node/` is pure Rust: it knows nothing about Node-API,
//! OpenCode's SDK or JavaScript. `src/node/` is the only module that uses napi (CI checks it);
//! it converts and delegates.
//!
//! # Layout (dependency order, bottom first)
//!
//! Each broker concept has one home that owns its records *and* its file operations; only
//! [`store`] takes locks and writes files durably; [`broker`] binds a session's identity and
//! calls the concept modules.
//!
//! | module | holds |
//! |---|---|
//! | [`error`] | the one core error enum, each variant with a stable code |
//! | `time`, [`ids`], `liveness` | units (epoch seconds), id validation, c2c's pid + start-time rule |
//! | [`store`] | the broker root (resolution, permissions), OFD locks on `X.lock` sidecars and the one lock-order table (`store/lock.rs`), atomic JSON files, JSON-lines appends, per-record reading, which file systems order data before a rename (`store/mounts.rs`) |
//! | [`registry`] | `registry.json`: registrations, the register rule and M4 guard, peers with liveness, the alias book |
//! | [`inbox`] | `<sid>.inbox.json`: messages, per-record reading and repair, archive moves, the dead letter, read-only inspection (`doctor`) |
//! | `held` | `held/<sid>.json`: the held inbox |
//! | `pending` | `pending_permissions.json`: pending-reply slots, caps, the four check outcomes |
//! | [`rooms`] | `rooms/<room>/…`: meta and c2c's access rules, membership, history, listing |
//! | [`receipts`] | `receipts/<sid>.jsonl`: what became of a message one sent |
//! | `verdict` | `approval-verdict/<token>.json`: the host-local verdict side channel |
//! | `log` | `broker.log`: c2c's audit lines |
//! | `watch` | the shared inbox watcher (notify/inotify), one per root |
//! | `heap` | giving the process's freed native heap back to the system after a registration (glibc `malloc_trim`) |
//! | [`envelope`] | framing of peer text for a model (every frame the broker shows), permission-reply recognition |
//! | [`opencode`] | the one decoder of OpenCode 1.18.33's wire JSON (events, messages, parts, sessions, permission requests) into typed facts, and the one "busy" rule; nothing else reads OpenCode's JSON |
//! | [`provenance`] | the turn index and `parentID` walk (was this turn peer-triggered?) |
//! | [`policy`] | pure decisions: `peerPermissions`, inbound gating, hop limit, rate limit, the fail-closed guardrail |
//! | [`diagnostics`] | `tracing` for maintainers (`C2C_BRIDGE_LOG`, off by default; never `broker.log`, which stays c2c's audit format) |
//! | `config` | options + environment → typed, validated settings: the one table of every option, default, unit, range and environment variable; the plugin options' validation (fail safe) |
//! | [`broker`] | [`Broker`]: one session's identity-bound handle; each call binds the caller's own registration, calls the concept modules, writes the audit line |
//! | [`relay`] | the NATS JetStream relay: broker roots on several machines (`relay/` in the root: outbox, presence mirror, connector lock) |
//! | `node` | napi classes and functions, error-code mapping (the addon's surface; `node/inspect.rs` holds the CLI's read-only views) |
//!
//! Modules without a link are private: nothing outside the crate uses them directly. The
//! public modules are also what the integration tests, examples and fuzz targets read.
//!
//! # Terminology
//!
//! One name per concept, the same in Rust, in the napi surface (`index.d.ts`) and in the
//! plugin:
//!
//! - **broker root**: the directory c2c and c2c-bridge share (`registry.json`, inboxes, …).
//! - **session id** (`session_id`): the stable id of one agent session; OpenCode's `ses_…` id.
//!   It is also a file-name stem (`<session_id>.inbox.json`), hence the strict charset.
//! - **alias**: the human-facing name of a session, 1–64 chars of `[A-Za-z0-9._-]`. Compared
//!   case-insensitively; stored in its original case. c2c's *canonical alias*
//!   (`canonical_alias`) is kept in the record but not interpreted.
//! - **registration**: one record of `registry.json` binding a session id to an alias, a pid
//!   and the pid's start time. A **peer** ([`Peer`]) is a registration with its liveness.
//! - **inbox**: `<session_id>.inbox.json`, the JSON array of messages waiting for a session.
//! - **held inbox**: messages the inbound policy holds for the user (`HeldMessage`).
//! - **inbound gate**: the one choke point every incoming message passes (`Broker::gate_inbox`,
//!   its result a `GateReport`); not to be confused with the **permission gate**
//!   (`policy::engine::PermissionGate`), which answers OpenCode's permission requests.
//! - **envelope**: the frame around peer text shown to a model.
//! - **receipt** (`receipts::Receipt`): what became of a message one sent (delivered, held,
//!   refused, …); a **send receipt** (`SendReceipt`) is only "queued". Results of an operation
//!   end in `Report` (`GateReport`, `SweepReport`, `AckReport`, `BroadcastReport`).
//! - **perm id** (`perm_id`): the id of a permission request a pending-reply slot tracks.
//! - **supervisor**: an alias allowed to answer a pending-reply slot (advisory only).
//! - **busy** (a session): its OpenCode status `type` is anything but `"idle"` (`retry`
//!   included); `session.idle` means not busy ([`opencode::is_busy_status`]).
//! - **via**: the hop list of session ids a message (or the chain of turns that wrote it) has
//!   passed through.

pub mod broker;
mod config;
pub mod diagnostics;
pub mod envelope;
pub mod error;
mod heap;
mod held;
pub mod ids;
pub mod inbox;
mod liveness;
mod log;
// The napi exports are registered with Node when the addon loads; the unit-test build compiles
// that registration out, so there they look unused.
#[cfg_attr(test, allow(dead_code))]
mod node;
pub mod opencode;
mod pending;
pub mod policy;
pub mod provenance;
pub mod receipts;
pub mod registry;
pub mod relay;
pub mod rooms;
pub mod store;
#[cfg(test)]
mod testutil;
mod time;
mod verdict;
mod watch;

pub use broker::{Broker, OpenOptions, Peer};
pub use config::Environment;
pub use error::{Error, ErrorCode, Result};
