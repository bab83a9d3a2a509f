//! File operations on `pending_permissions.json`: every change is one locked
//! read-modify-write through [`store::update_array`]; reads that decide nothing durable use a
//! plain read.

use std::time::Duration;

use super::{
    add_slot, evaluate, prune_expired, AddRefused, Caps, CheckKind, CheckOutcome, PendingSlot,
};
use crate::error::{Error, Result};
use crate::ids::alias_eq;
use crate::registry::Registration;
use crate::store::{self, BrokerRoot};

/// Add `slot` (newest first) to the root's pending file under its lock, pruning expired slots
/// in the same write. The inner result is the rule's answer: `Ok(pruned)` (how many expired
/// slots were removed) or why the slot was refused (then the file is not rewritten).
///
/// # Errors
/// Store errors (lock timeout after `lock_timeout`, an unreadable file, a failed write).
pub fn open_slot(
    root: &BrokerRoot,
    slot: &PendingSlot,
    caps: Caps,
    now: f64,
    lock_timeout: Duration,
) -> Result<std::result::Result<usize, AddRefused>> {
    store::update_array(&root.pending(), lock_timeout, |records| {
        Ok(match add_slot(records, slot, caps, now) {
            Ok(pruned) => (Ok(pruned), true),
            Err(refused) => (Err(refused), false),
        })
    })
}

/// Re-evaluate a reply to `perm_id` from `replier_alias` under the pending file's lock and,
/// when it is valid and the slot has no `resolved_at` yet, stamp it with the current time
/// (epoch seconds), pruning expired slots in the same write. Returns the outcome, its kind
/// and whether a stamp was written. The stamp is bookkeeping only: it authorises nothing.
///
/// # Errors
/// Store errors (lock timeout after `lock_timeout`, an unreadable file, a failed write).
pub fn stamp_valid_check(
    root: &BrokerRoot,
    perm_id: &str,
    replier_alias: &str,
    lock_timeout: Duration,
) -> Result<(CheckOutcome, CheckKind, bool)> {
    store::update_array(&root.pending(), lock_timeout, |records| {
        let now = crate::time::now_secs();
        let (outcome, kind, found) = evaluate(records, perm_id, replier_alias, now);
        let mut stamp = false;
        if let (CheckKind::Valid, Some((i, slot))) = (kind, found) {
            if slot.resolved_at.is_none() {
                if let Some(obj) = records[i].as_object_mut() {
                    obj.insert("resolved_at".into(), now.into());
                    stamp = true;
                }
            }
        }
        if stamp {
            prune_expired(records, now);
        }
        Ok(((outcome, kind, stamp), stamp))
    })
}

/// c2c's M4 guard, run inside every register operation: registering `alias` is refused when
/// an unexpired pending slot has that requester alias (case-insensitive), its requester
/// session is a different session, and that session is still alive (by its registration in
/// `regs`; a session with no registration counts as gone). A resolved slot still counts
/// until it expires, as it does for the caps (see the module doc).
///
/// # Errors
/// [`Error::AliasPending`]; store errors reading the pending file.
pub fn check_alias_reuse(
    root: &BrokerRoot,
    alias: &str,
    session_id: &str,
    regs: &[Registration],
) -> Result<()> {
    let now = crate::time::now_secs();
    for slot in store::read_array(&root.pending())?
        .iter()
        .filter_map(PendingSlot::from_value)
    {
        if !slot.is_active(now)
            || !alias_eq(&slot.requester_alias, alias)
            || slot.requester_session_id == session_id
        {
            continue;
        }
        let owner_alive = regs
            .iter()
            .any(|r| r.session_id == slot.requester_session_id && r.is_alive());
        if owner_alive {
            return Err(Error::AliasPending {
                alias: alias.to_string(),
                owner_session_id: slot.requester_session_id,
            });
        }
    }
    Ok(())
}
