//! Identity-free, read-only views of a root for the operator CLI (`rooms` without a session,
//! `doctor`, `peers`): each converts its arguments, delegates to the core module that owns the
//! concept (rooms, inbox, registry) and converts the result.

use napi::Result;
use napi_derive::napi;

use super::error::{to_js, JsCode};
use super::types::RoomInfo;
use crate::store::root::RootSource;
use crate::store::BrokerRoot;

fn open_existing(root: &str) -> Result<BrokerRoot, JsCode> {
    BrokerRoot::open_existing(std::path::Path::new(root), RootSource::Explicit).map_err(to_js)
}

/// Every room of `root` with its full roster, as the operator at this machine sees them (no
/// session: c2c's invite-only hiding does not apply, `joined` is always false), sorted by id.
/// Reads only. Errors: `E_ROOT_INSECURE` (the root, or `rooms` a symlink or a file),
/// `E_STORE_CORRUPT` (a `members.json` or `meta.json` that cannot be read), `E_IO`.
#[napi(catch_unwind)]
pub fn list_rooms_at(root: String) -> Result<Vec<RoomInfo>, JsCode> {
    let r = open_existing(&root)?;
    Ok(crate::rooms::listing::list_all(&r)
        .map_err(to_js)?
        .into_iter()
        .map(Into::into)
        .collect())
}

/// One `<sessionId>.inbox.json` of a root, as `inspectInboxes` reports it.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct InboxFile {
    /// The session id in the file name (not necessarily registered, not necessarily valid).
    pub session_id: String,
    /// The file's size in bytes (0 when it is not a regular file).
    pub bytes: f64,
    /// Messages that will be delivered (absent when `error` is set).
    pub messages: Option<u32>,
    /// Of those, messages without `message_id`, delivered by their derived id.
    pub derived_ids: Option<u32>,
    /// JSON objects that are not messages (never delivered), one value-free description each.
    pub not_messages: Option<Vec<String>>,
    /// Records that cannot be understood (moved to `quarantine/` by the next write).
    pub not_understood: Option<u32>,
    /// Why the file cannot be read as an inbox: `symlink (never followed)`, `not a regular
    /// file`, `not a JSON array`, `unreadable: …`, or an invalid session id.
    pub error: Option<String>,
}

/// Every inbox file of `root`, sorted, each read record by record as the broker reads it,
/// without a lock and without any change (a corrupt file is reported, not copied aside):
/// `doctor`'s inbox check. Errors: `E_ROOT_INSECURE`, `E_IO`.
#[napi(catch_unwind)]
pub fn inspect_inboxes(root: String) -> Result<Vec<InboxFile>, JsCode> {
    let r = open_existing(&root)?;
    Ok(crate::inbox::inspect_inboxes(&r)
        .map_err(to_js)?
        .into_iter()
        .map(|f| {
            let mut out = InboxFile {
                session_id: f.session_id,
                bytes: f.bytes as f64,
                messages: None,
                derived_ids: None,
                not_messages: None,
                not_understood: None,
                error: None,
            };
            match f.summary {
                Ok(s) => {
                    out.messages = Some(s.messages as u32);
                    out.derived_ids = Some(s.derived_ids as u32);
                    out.not_messages = Some(s.not_messages);
                    out.not_understood = Some(s.not_understood as u32);
                }
                Err(e) => out.error = Some(e),
            }
            out
        })
        .collect())
}

/// The number of messages waiting in `<root>/dead-letter.jsonl` (its non-blank lines), `null`
/// when the file is absent. Errors: `E_ROOT_INSECURE` (the root, or the file a symlink or not
/// a regular file: never followed), `E_IO`.
#[napi(catch_unwind)]
pub fn count_dead_letters(root: String) -> Result<Option<u32>, JsCode> {
    let r = open_existing(&root)?;
    Ok(crate::inbox::dead_letter::count(&r)
        .map_err(to_js)?
        .map(|n| n as u32))
}

/// Whether a registration runs another c2c-bridge plugin version than `ownVersion`: an OpenCode
/// peer (`clientType` `"opencode"`) with a recorded `pluginVersion` other than ours. No
/// recorded version, or another client, is never stale (the rule of `framedPeerList`).
#[napi(catch_unwind)]
pub fn is_stale_plugin(
    client_type: Option<String>,
    plugin_version: Option<String>,
    own_version: String,
) -> bool {
    crate::registry::is_stale_plugin(
        client_type.as_deref(),
        plugin_version.as_deref(),
        &own_version,
    )
}
