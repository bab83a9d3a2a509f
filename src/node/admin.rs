//! Identity-free functions for the CLI: where the root is, what is registered, the audit log.
//! Only `checkRoot` creates a root; the others fail on a missing one and write nothing
//! (except `probeLock`, which may create the `.lock` sidecar it probes, as any writer would).

use std::path::PathBuf;

use napi_derive::napi;

use super::error::{to_js, JsCode};
use super::types::Peer;
use crate::store::root::resolve_path;
use crate::store::BrokerRoot;
use napi::Result;

/// Where a broker root is and where that came from.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct RootLocation {
    /// The root directory (canonical when it exists).
    pub path: String,
    /// `option`, `C2C_MCP_BROKER_ROOT`, `C2C_STATE_HOME`, `XDG_STATE_HOME` or `HOME`.
    pub source: String,
    /// Whether the directory exists.
    pub exists: bool,
    /// Why this root, in one sentence: explicit, `C2C_MCP_BROKER_ROOT`, or c2c's
    /// per-repository default with the fingerprint and what it was computed from.
    pub reason: String,
}

/// Resolve the broker root as c2c does, without creating it. `root` overrides; `directory`
/// (default: the current directory) gives the repository fingerprint; `env` (default: the
/// process environment) supplies `C2C_MCP_BROKER_ROOT`, `C2C_STATE_HOME`, `XDG_STATE_HOME`
/// and `HOME` (pass `process.env` under Bun).
/// Errors: `E_INVALID_OPTION` when nothing names a location.
#[napi(catch_unwind)]
pub fn resolve_root(
    root: Option<String>,
    directory: Option<String>,
    env: Option<std::collections::HashMap<String, String>>,
) -> Result<RootLocation, JsCode> {
    let dir = directory
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    let env = env
        .map(crate::config::Environment::Given)
        .unwrap_or_default()
        .root_env();
    let (path, source) =
        resolve_path(root.as_deref().map(std::path::Path::new), &env, &dir).map_err(to_js)?;
    let exists = path.is_dir();
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    Ok(RootLocation {
        path: path.to_string_lossy().into_owned(),
        source: source.as_str().to_string(),
        exists,
        reason: crate::store::root::describe_source(source, &dir),
    })
}

/// Open (creating if needed) and check a root; returns its canonical path.
/// Errors: `E_ROOT_INSECURE`, `E_IO`.
#[napi(catch_unwind)]
pub fn check_root(root: String) -> Result<String, JsCode> {
    let r = BrokerRoot::open(
        std::path::Path::new(&root),
        crate::store::root::RootSource::Explicit,
    )
    .map_err(to_js)?;
    Ok(r.path().to_string_lossy().into_owned())
}

/// Every registration of `root` with liveness (`isSelf` is always false here).
/// Errors: `E_ROOT_INSECURE`, `E_STORE_CORRUPT`, `E_IO`.
#[napi(catch_unwind)]
pub fn list_registrations(root: String) -> Result<Vec<Peer>, JsCode> {
    let r = BrokerRoot::open_existing(
        std::path::Path::new(&root),
        crate::store::root::RootSource::Explicit,
    )
    .map_err(to_js)?;
    Ok(crate::registry::read_peers(&r)
        .map_err(to_js)?
        .into_iter()
        .map(Into::into)
        .collect())
}

/// Registry records that name an alias but cannot be read as registrations (e.g. a string
/// `registered_at`): they still hold their alias (fail closed), and `doctor` reports them.
/// Errors: `E_ROOT_INSECURE`, `E_STORE_CORRUPT`, `E_IO`.
#[napi(catch_unwind)]
pub fn list_unreadable_registrations(root: String) -> Result<Vec<UnreadableRegistration>, JsCode> {
    let r = BrokerRoot::open_existing(
        std::path::Path::new(&root),
        crate::store::root::RootSource::Explicit,
    )
    .map_err(to_js)?;
    let records = crate::store::read_array(&r.registry()).map_err(to_js)?;
    Ok(crate::registry::unparsed_all(&records)
        .into_iter()
        .map(|u| UnreadableRegistration {
            alias: u.alias,
            session_id: u.session_id,
            detail: u.detail,
        })
        .collect())
}

/// A registry record that names an alias but is not a readable registration.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct UnreadableRegistration {
    /// The alias it holds. Peer-controlled: frame it before showing it to a model.
    pub alias: String,
    /// Its `session_id`, when that is a string.
    pub session_id: Option<String>,
    /// Why it cannot be read.
    pub detail: String,
}

/// The last `limit` (default 50) lines of `broker.log` as JSON strings (one object each:
/// `{ts, event, ...}`), oldest first. Errors: `E_ROOT_INSECURE`, `E_IO`.
#[napi(catch_unwind)]
pub fn read_log(root: String, limit: Option<u32>) -> Result<Vec<String>, JsCode> {
    let r = BrokerRoot::open_existing(
        std::path::Path::new(&root),
        crate::store::root::RootSource::Explicit,
    )
    .map_err(to_js)?;
    Ok(crate::log::AuditLog::new(r.log())
        .tail(limit.map_or(crate::config::DEFAULT_LOG_TAIL_LIMIT, |n| n as usize))
        .into_iter()
        .map(|v| v.to_string())
        .collect())
}

/// Whether an exclusive lock on `<root>/<file>.lock` can be taken within `timeoutMs`
/// (default 200): `doctor`'s lock-health probe. The lock is released at once. `file` must be
/// a plain file name (not empty, no `/`, no leading dot).
/// Errors: `E_INVALID_ARG` (a bad file name), `E_ROOT_INSECURE`, `E_IO`.
#[napi(catch_unwind)]
pub fn probe_lock(root: String, file: String, timeout_ms: Option<u32>) -> Result<bool, JsCode> {
    let r = BrokerRoot::open_existing(
        std::path::Path::new(&root),
        crate::store::root::RootSource::Explicit,
    )
    .map_err(to_js)?;
    let path = crate::store::lock::sidecar_in(r.path(), &file).ok_or_else(|| {
        super::error::invalid_arg(format!(
            "invalid file name {file:?}: a plain file name inside the root is needed"
        ))
    })?;
    crate::store::try_lock(
        &path,
        timeout_ms.map_or(crate::config::DEFAULT_PROBE_LOCK_TIMEOUT, |ms| {
            std::time::Duration::from_millis(ms as u64)
        }),
    )
    .map_err(to_js)
}

/// The canonical form of a directory (symlinks resolved), as registrations record it; `null`
/// when it does not exist.
#[napi(catch_unwind)]
pub fn canonical_directory(directory: String) -> Option<String> {
    crate::policy::inbound::canonical_directory(std::path::Path::new(&directory))
}

/// What one inbox holds, record by record (see `inspectInbox`).
#[napi(object)]
#[derive(Debug, Clone)]
pub struct InboxSummary {
    /// Messages that will be delivered.
    pub messages: u32,
    /// Of those, messages without `message_id` (c2c's room fan-out), delivered and
    /// acknowledged by their derived id (`c2c-derived-…`).
    pub derived_ids: u32,
    /// JSON objects that are not messages, one value-free description each (`{key, …}`):
    /// left in the file, never delivered.
    pub not_messages: Vec<String>,
    /// Records that cannot be understood (moved to `quarantine/` by the next write).
    pub not_understood: u32,
}

/// Read `<sessionId>.inbox.json` of `root` record by record, as the broker does, without a
/// lock and without changing anything: `doctor`'s inbox check.
/// Errors: `E_INVALID_ID`, `E_ROOT_INSECURE`, `E_STORE_CORRUPT` (not a JSON array at all),
/// `E_IO`.
#[napi(catch_unwind)]
pub fn inspect_inbox(root: String, session_id: String) -> Result<InboxSummary, JsCode> {
    let r = BrokerRoot::open_existing(
        std::path::Path::new(&root),
        crate::store::root::RootSource::Explicit,
    )
    .map_err(to_js)?;
    crate::ids::validate_session_id(&session_id).map_err(to_js)?;
    let s = crate::inbox::summarize(&r.inbox(&session_id)).map_err(to_js)?;
    Ok(InboxSummary {
        messages: s.messages as u32,
        derived_ids: s.derived_ids as u32,
        not_messages: s.not_messages,
        not_understood: s.not_understood as u32,
    })
}

/// One entry of the root's alias book (`c2c-bridge-aliases.json`): a session that registered
/// through the plugin, with the alias it keeps across restarts.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct AliasBookEntry {
    /// The session id.
    pub session_id: String,
    /// Its alias.
    pub alias: String,
    /// The canonical project directory it registered from, if recorded.
    pub directory: Option<String>,
}

/// The alias book of `root` (empty when absent): the plugin restores the registrations of
/// its directory's sessions from it after a restart. Errors: `E_ROOT_INSECURE`,
/// `E_STORE_CORRUPT`, `E_IO`.
#[napi(catch_unwind)]
pub fn list_alias_book(root: String) -> Result<Vec<AliasBookEntry>, JsCode> {
    let r = BrokerRoot::open_existing(
        std::path::Path::new(&root),
        crate::store::root::RootSource::Explicit,
    )
    .map_err(to_js)?;
    Ok(crate::registry::aliases::read_book(&r)
        .map_err(to_js)?
        .into_iter()
        .map(|e| AliasBookEntry {
            session_id: e.session_id,
            alias: e.alias,
            directory: e.directory,
        })
        .collect())
}

/// The strictest of several values of one policy setting (`"inbound"` or
/// `"peerPermissions"`), for one directory configured twice in one process: `inbound` accept <
/// auto < hold < refuse, `peerPermissions` allow < ask < deny; blank values count as unset
/// (`null` when all are); an invalid word is returned as written (fail closed: it wins over
/// every valid one). Errors: `E_INVALID_ARG` for another setting name.
#[napi(catch_unwind)]
pub fn strictest_setting(
    setting: String,
    values: Vec<String>,
) -> napi::Result<Option<String>, super::error::JsCode> {
    crate::policy::strictest::strictest(&setting, &values)
        .map_err(|s| super::error::invalid_arg(format!("unknown policy setting {s:?}")))
}
