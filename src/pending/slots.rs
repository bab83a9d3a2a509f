//! File operations on `pending_permissions.json`: every change is one locked
//! read-modify-write through [`store::update_array`]; reads that decide nothing durable use a
//! plain read.

use std::time::Duration;

use super::Snapshot;
use super::{
    add_slot, evaluate, prune_expired, AddRefused, Caps, CheckKind, CheckOutcome, PendingSlot,
};
use crate::error::Result;
use crate::store::cache::ParsedFileCache;
use crate::store::{self, BrokerRoot};

/// Add `slot` (newest first) to the root's pending file under its lock, pruning expired slots
/// in the same write. The inner result is the rule's answer: `Ok(pruned)` (how many expired
/// slots were removed) or why the slot was refused (then the file is not rewritten).
///
/// When no slot has expired, the rules are answered from the cached snapshot and the new
/// record is spliced into the file's bytes ([`super::splice`]); otherwise the records are
/// changed and the whole file rewritten.
///
/// # Errors
/// Store errors (lock timeout after `lock_timeout`, an unreadable file, a failed write).
pub fn open_slot(
    root: &BrokerRoot,
    cache: &ParsedFileCache<Snapshot>,
    slot: &PendingSlot,
    caps: Caps,
    now: f64,
    lock_timeout: Duration,
) -> Result<std::result::Result<usize, AddRefused>> {
    store::update_array_spliced(
        &root.pending(),
        lock_timeout,
        true,
        cache,
        |snap, bytes| super::splice::plan_open(snap, bytes, slot, caps, now),
        |records| {
            Ok(match add_slot(records, slot, caps, now) {
                Ok(pruned) => (Ok(pruned), true),
                Err(refused) => (Err(refused), false),
            })
        },
    )
}

/// Re-evaluate a reply to `perm_id` from `replier_alias` under the pending file's lock and,
/// when it is valid and the slot has no `resolved_at` yet, stamp it with the current time
/// (epoch seconds), pruning expired slots in the same write. Returns the outcome, its kind
/// and whether a stamp was written. The stamp is bookkeeping only: it authorises nothing,
/// so it is written without a disk flush (as [`store::update_array_unsynced`]): a crash can
/// lose the stamp (and the pruning), never a slot (RELIABILITY.md).
///
/// Both operations start from `cache` (the root's shared parse of the file, checked under the
/// lock) and leave the written version in it ([`store::update_array_spliced`]); when no slot
/// has expired, the stamp replaces only that record's bytes ([`super::splice::plan_stamp`]).
///
/// # Errors
/// Store errors (lock timeout after `lock_timeout`, an unreadable file, a failed write).
pub fn stamp_valid_check(
    root: &BrokerRoot,
    cache: &ParsedFileCache<Snapshot>,
    perm_id: &str,
    replier_alias: &str,
    lock_timeout: Duration,
) -> Result<(CheckOutcome, CheckKind, bool)> {
    store::update_array_spliced(
        &root.pending(),
        lock_timeout,
        false,
        cache,
        |snap, bytes| {
            let now = crate::time::now_secs();
            super::splice::plan_stamp(snap, bytes, perm_id, replier_alias, now)
        },
        |records| {
            let out = stamp_records(records, perm_id, replier_alias, crate::time::now_secs());
            Ok((out.clone(), out.2))
        },
    )
}

/// The full path of a stamping check on `records` at `now`: evaluate, and when the reply is
/// valid and the slot unstamped, stamp `resolved_at` and prune expired slots. Returns the
/// outcome, its kind and whether the records changed (a stamp was written).
pub(crate) fn stamp_records(
    records: &mut Vec<serde_json::Value>,
    perm_id: &str,
    replier_alias: &str,
    now: f64,
) -> (CheckOutcome, CheckKind, bool) {
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
    (outcome, kind, stamp)
}
