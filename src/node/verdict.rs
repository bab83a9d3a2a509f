//! The host-local verdict side channel for the CLI (`approval-reply`, `await-reply`): thin
//! wrappers over [`crate::verdict`]. Nothing here is reachable from a message.

use std::path::Path;

use napi_derive::napi;

use super::error::{to_js, JsCode};
use super::types::string_or_null;
use crate::store::root::RootSource;
use crate::store::BrokerRoot;
use crate::verdict::{self, Decision};
use napi::bindgen_prelude::{Either, Null};
use napi::Result;

/// A verdict as read by `readApprovalVerdict`.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct ApprovalVerdict {
    /// The token.
    pub token: String,
    /// `"allow"` or `"deny"`.
    pub verdict: String,
    /// The operator's reason, or null.
    pub reason: Either<String, Null>,
    /// When it was written, epoch seconds (float).
    pub ts: f64,
}

fn open_root(root: &str) -> Result<BrokerRoot, JsCode> {
    BrokerRoot::open(Path::new(root), RootSource::Explicit).map_err(to_js)
}

/// Write `<root>/approval-verdict/<token>.json` (file 0600, directory 0700, atomic, never
/// through a symlink) with `verdict` `"allow"` or `"deny"`; returns the file's path. A later
/// write for the same token replaces the verdict.
///
/// Errors: `E_INVALID_ID` (token not 1–128 chars of `[A-Za-z0-9_-]`), `E_INVALID_OPTION`
/// (verdict), `E_ROOT_INSECURE`, `E_IO`.
#[napi(catch_unwind)]
pub fn write_approval_verdict(
    root: String,
    token: String,
    verdict: String,
    reason: Option<String>,
) -> Result<String, JsCode> {
    let decision = Decision::parse(&verdict).map_err(to_js)?;
    let r = open_root(&root)?;
    let path = verdict::write_verdict(&r, &token, decision, reason.as_deref()).map_err(to_js)?;
    Ok(path.to_string_lossy().into_owned())
}

/// Read the verdict for `token`, or `null` while there is none.
///
/// Errors: `E_INVALID_ID`, `E_ROOT_INSECURE` (unsafe directory, or the verdict file is a
/// symlink or not ours), `E_STORE_CORRUPT` (not a verdict), `E_IO`.
#[napi(catch_unwind)]
pub fn read_approval_verdict(
    root: String,
    token: String,
) -> Result<Option<ApprovalVerdict>, JsCode> {
    let r = open_root(&root)?;
    Ok(verdict::read_verdict(&r, &token)
        .map_err(to_js)?
        .map(|v| ApprovalVerdict {
            token: v.token,
            verdict: v.decision.as_str().to_string(),
            reason: string_or_null(v.reason),
            ts: v.ts,
        }))
}
