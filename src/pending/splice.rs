//! The fast paths of `openPendingReply` and of the stamping `checkPendingReply`.
//!
//! Open: when no slot of the file has expired (nothing to
//! prune), the rules are answered from the cached [`Snapshot`]'s index and counts, and the new
//! file is the current file's exact bytes with the new record spliced in as the first element
//! of the array (c2c keeps slots newest first). No record is cloned or re-serialised: what c2c
//! wrote stays byte for byte, and the cost no longer grows with re-serialising the file.
//!
//! The result is the file the full path ([`super::add_slot`] on the parsed records, then the
//! whole array serialised) would write, up to the whitespace and number spelling of the
//! records already there: it parses to the same records (tests compare both paths on
//! generated files and on c2c's own).
//!
//! Stamp: when no slot has expired, the first valid check's `resolved_at` is written by
//! replacing the bytes of that one record (found by the record spans the snapshot keeps, or
//! scans once) with the record re-serialised with the stamp; every other byte is kept.

use serde_json::Value;

use super::{AddRefused, CapHit, Caps, CheckKind, CheckOutcome, PendingSlot, Snapshot};
use crate::store::Splice;

/// The JSON whitespace bytes (RFC 8259 §2).
fn is_json_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// `file` (a JSON array, as parsed into a snapshot: `empty` when it has no element) with
/// `record` (one serialised JSON value) inserted as its first element, and where the record
/// starts in it; `None` when `file` does not start, after whitespace, with `[`.
pub(crate) fn insert_first(file: &[u8], record: &[u8], empty: bool) -> Option<(Vec<u8>, usize)> {
    let open = file.iter().position(|&b| !is_json_ws(b))?;
    if file[open] != b'[' {
        return None;
    }
    let mut out = Vec::with_capacity(file.len() + record.len() + 1);
    out.extend_from_slice(&file[..=open]);
    out.extend_from_slice(record);
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(&file[open + 1..]);
    Some((out, open + 1))
}

/// Decide an open of `slot` at `now` from the current snapshot and its bytes: the rules'
/// answer when the slot is refused ([`Splice::Done`]), the new file when it is added with
/// nothing to prune ([`Splice::Write`], `Ok(0)` pruned), or [`Splice::Full`] when some slot
/// has expired (the full path prunes it) or the bytes are not a plain array.
pub(crate) fn plan_open(
    snap: &Snapshot,
    bytes: &[u8],
    slot: &PendingSlot,
    caps: Caps,
    now: f64,
) -> Splice<std::result::Result<usize, AddRefused>, impl FnOnce(&mut Snapshot)> {
    if !snap.all_active_at(now) {
        return Splice::Full;
    }
    // The checks and their order are `add_slot`'s; every slot is active here.
    if snap.has_slot(&slot.perm_id) {
        return Splice::Done(Err(AddRefused::Duplicate));
    }
    let of_alias = snap.slots_of_alias(&slot.requester_alias);
    if of_alias >= caps.per_alias {
        return Splice::Done(Err(AddRefused::Cap(CapHit::PerAlias {
            active: of_alias,
            cap: caps.per_alias,
        })));
    }
    if snap.slot_count() >= caps.global {
        return Splice::Done(Err(AddRefused::Cap(CapHit::Global {
            active: snap.slot_count(),
            cap: caps.global,
        })));
    }
    let value: Value = slot.to_value();
    let Ok(record) = serde_json::to_vec(&value) else {
        return Splice::Full;
    };
    match insert_first(bytes, &record, snap.records().is_empty()) {
        Some((bytes, start)) => {
            let from_end = bytes.len() - start;
            let span = (from_end, from_end - record.len());
            Splice::Write {
                out: Ok(0),
                bytes,
                update: move |s: &mut Snapshot| s.insert_newest(value, span),
            }
        }
        None => Splice::Full,
    }
}

/// Decide a stamping check (see [`super::stamp_valid_check`]) of a reply to `perm_id` from
/// `replier_alias` at `now` from the current snapshot and its bytes: the outcome with nothing
/// to write when the reply is not valid or the slot is stamped already ([`Splice::Done`]); the
/// new file when the stamp is written and nothing is to be pruned ([`Splice::Write`]: the
/// slot's record re-serialised with `resolved_at` in place of its old bytes, every other
/// byte kept); or [`Splice::Full`] when some slot has expired (the full path prunes it) or
/// the records' places in the file cannot be found.
pub(crate) fn plan_stamp(
    snap: &Snapshot,
    bytes: &[u8],
    perm_id: &str,
    replier_alias: &str,
    now: f64,
) -> Splice<(CheckOutcome, CheckKind, bool), impl FnOnce(&mut Snapshot)> {
    if !snap.all_active_at(now) {
        return Splice::Full;
    }
    let (outcome, kind, found) = snap.evaluate(perm_id, replier_alias, now);
    let i = match (kind, found) {
        (CheckKind::Valid, Some((i, slot))) if slot.resolved_at.is_none() => i,
        _ => return Splice::Done((outcome, kind, false)),
    };
    let mut value = snap.records()[i].clone();
    let Some(obj) = value.as_object_mut() else {
        return Splice::Done((outcome, kind, false));
    };
    obj.insert("resolved_at".into(), now.into());
    let Ok(record) = serde_json::to_vec(&value) else {
        return Splice::Full;
    };
    let Some(spans) = snap.spans_or_scan(bytes) else {
        return Splice::Full;
    };
    let (start, end) = spans[i];
    let (start, end) = (bytes.len() - start, bytes.len() - end);
    let mut out = Vec::with_capacity(bytes.len() - (end - start) + record.len());
    out.extend_from_slice(&bytes[..start]);
    out.extend_from_slice(&record);
    out.extend_from_slice(&bytes[end..]);
    let scanned = match spans {
        std::borrow::Cow::Owned(scanned) => Some(scanned),
        std::borrow::Cow::Borrowed(_) => None,
    };
    let len = record.len();
    Splice::Write {
        out: (outcome, kind, true),
        bytes: out,
        update: move |s: &mut Snapshot| s.replace_unindexed(i, value, len, scanned),
    }
}

#[cfg(test)]
#[path = "splice_tests.rs"]
mod tests;
