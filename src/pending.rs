//! `pending_permissions.json`: c2c's pending-reply slots (M2) and the alias-reuse guard (M4).

use serde_json::Value;

use crate::error::{Error, Result};
use crate::ids::alias_eq;
use crate::registry::Registration;
use crate::store::{self, BrokerRoot};

/// c2c's M4 guard, run inside every register operation: registering `alias` is refused when
/// an unexpired, unresolved pending slot has that requester alias, its requester session is a
/// different session, and that session is still alive (by its registration in `regs`; a
/// session with no registration counts as gone).
///
/// # Errors
/// [`Error::AliasPending`]; store errors reading the pending file.
pub fn check_alias_reuse(
    root: &BrokerRoot,
    alias: &str,
    session_id: &str,
    regs: &[Registration],
) -> Result<()> {
    let path = root.pending();
    if !path.exists() {
        return Ok(());
    }
    let now = crate::time::now_secs();
    for slot in store::read_array(&path)? {
        let field = |k: &str| slot.get(k).and_then(Value::as_str);
        let (Some(req_alias), Some(req_sid)) =
            (field("requester_alias"), field("requester_session_id"))
        else {
            continue;
        };
        let expired = slot
            .get("expires_at")
            .and_then(Value::as_f64)
            .is_some_and(|e| e <= now);
        if expired || !alias_eq(req_alias, alias) || req_sid == session_id {
            continue;
        }
        let owner_alive = regs.iter().any(|r| r.session_id == req_sid && r.is_alive());
        if owner_alive {
            return Err(Error::AliasPending {
                alias: alias.to_string(),
                owner_session_id: req_sid.to_string(),
            });
        }
    }
    Ok(())
}
