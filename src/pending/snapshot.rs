//! A parsed `pending_permissions.json` with an index by perm id, for checks that read the
//! cached file ([`crate::store::cache`]): a check then looks at the records with its perm id
//! only, so its cost does not grow with the number of slots (an unknown id at 1,000 slots
//! was a scan of 1,000 records).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::view::SlotView;
use super::{evaluate_in, CheckKind, CheckOutcome, PendingSlot};
use crate::error::Result;

/// The records as read (newest first, records of any shape), where each perm id is, and a
/// summary of the slots for the open path's rules ([`Snapshot::all_active_at`]).
#[derive(Debug)]
pub struct Snapshot {
    /// Every record of the file, in file order.
    records: Vec<Value>,
    /// perm id → positions counted from the *end* of `records` (`len - 1 - index`), so that
    /// adding the newest record at the front moves none of them; newest first.
    by_id: HashMap<String, Vec<usize>>,
    /// How many records are slots (of c2c's shape, see [`SlotView`]).
    slots: usize,
    /// The earliest `expires_at` of a slot (`+inf` without slots, `-inf` when one is NaN).
    earliest_expiry: f64,
    /// Slots per requester alias, by the alias in ASCII lower case (aliases compare
    /// case-insensitively: [`crate::ids::alias_eq`]).
    per_alias: HashMap<String, usize>,
    /// Where each record is in the file's bytes, as `(start, end)` counted from the end of
    /// the file (`len - offset`), so that splicing a record in or replacing one moves none of
    /// the records after it; `None` until a splice needs them ([`Snapshot::spans_or_scan`]),
    /// and for a snapshot built from records rather than bytes.
    spans: Option<Vec<(usize, usize)>>,
}

impl Default for Snapshot {
    fn default() -> Snapshot {
        Snapshot::of(Vec::new())
    }
}

impl Snapshot {
    /// Parse the bytes of the pending file read from `path` (anything but a JSON array is
    /// [`crate::Error::StoreCorrupt`], as for every store file).
    ///
    /// # Errors
    /// [`crate::Error::StoreCorrupt`].
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Snapshot> {
        Ok(Self::of(crate::store::file::parse_array(path, bytes)?))
    }

    /// The snapshot of a file holding exactly `records`.
    pub fn of(records: Vec<Value>) -> Snapshot {
        let mut snap = Snapshot {
            records: Vec::with_capacity(records.len() + 1),
            by_id: HashMap::with_capacity(records.len()),
            slots: 0,
            earliest_expiry: f64::INFINITY,
            per_alias: HashMap::new(),
            spans: None,
        };
        // Oldest first, each as the newest so far: the same bookkeeping as a new slot.
        for v in records.into_iter().rev() {
            snap.note(&v);
            snap.records.push(v);
        }
        snap.records.reverse();
        snap
    }

    /// Count `v` (about to become the record at the front) in the index and the summary.
    fn note(&mut self, v: &Value) {
        let from_end = self.records.len();
        if let Some(id) = v.get("perm_id").and_then(Value::as_str) {
            self.by_id
                .entry(id.to_string())
                .or_default()
                .insert(0, from_end);
        }
        if let Some(view) = SlotView::of(v) {
            self.slots += 1;
            self.earliest_expiry = if view.expires_at.is_nan() {
                f64::NEG_INFINITY
            } else {
                self.earliest_expiry.min(view.expires_at)
            };
            *self
                .per_alias
                .entry(view.requester_alias.to_ascii_lowercase())
                .or_default() += 1;
        }
    }

    /// Add `v` as the newest record (at the front), as a file with `v` spliced in first;
    /// `span` is where it now is (from the end of the new file).
    pub(crate) fn insert_newest(&mut self, v: Value, span: (usize, usize)) {
        self.note(&v);
        self.records.insert(0, v);
        if let Some(spans) = &mut self.spans {
            spans.insert(0, span);
        }
    }

    /// Replace record `i` by `v`, which differs from it in no field the index or summary
    /// reads (a `resolved_at` stamp), spliced into the file as `len` bytes in its place.
    /// `spans` are this snapshot's spans when it had none (scanned by the caller).
    pub(crate) fn replace_unindexed(
        &mut self,
        i: usize,
        v: Value,
        len: usize,
        spans: Option<Vec<(usize, usize)>>,
    ) {
        self.records[i] = v;
        if self.spans.is_none() {
            self.spans = spans;
        }
        if let Some(spans) = &mut self.spans {
            let (start, end) = spans[i];
            let old = start - end;
            // records before `i` move by the change of length, as seen from the end
            for s in &mut spans[..i] {
                *s = ((s.0 + len) - old, (s.1 + len) - old);
            }
            spans[i] = (end + len, end);
        }
    }

    /// The spans of the records (see the field; borrowed), or, when this snapshot has none,
    /// scanned from `bytes`, the file it was parsed from (owned); `None` when the bytes do
    /// not scan as an array of as many values.
    pub(crate) fn spans_or_scan(&self, bytes: &[u8]) -> Option<Cow<'_, [(usize, usize)]>> {
        if let Some(spans) = &self.spans {
            return Some(Cow::Borrowed(spans));
        }
        let raws: Vec<&serde_json::value::RawValue> = serde_json::from_slice(bytes).ok()?;
        if raws.len() != self.records.len() {
            return None;
        }
        let base = bytes.as_ptr() as usize;
        let len = bytes.len();
        Some(Cow::Owned(
            raws.iter()
                .map(|r| {
                    let start = r.get().as_ptr() as usize - base;
                    (len - start, len - start - r.get().len())
                })
                .collect(),
        ))
    }

    /// Every record, in file order (newest first).
    pub fn records(&self) -> &[Value] {
        &self.records
    }

    /// Whether every slot is active at `now` (epoch seconds): nothing for a write to prune,
    /// and the counts below are the active counts.
    pub(crate) fn all_active_at(&self, now: f64) -> bool {
        self.earliest_expiry > now
    }

    /// How many records are slots.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots
    }

    /// How many slots `alias` (case-insensitively) requested.
    pub(crate) fn slots_of_alias(&self, alias: &str) -> usize {
        self.per_alias
            .get(&alias.to_ascii_lowercase())
            .copied()
            .unwrap_or(0)
    }

    /// Whether a slot (not merely a record) has `perm_id`.
    pub(crate) fn has_slot(&self, perm_id: &str) -> bool {
        self.with_id(perm_id)
            .any(|(_, v)| SlotView::of(v).is_some_and(|s| s.perm_id == perm_id))
    }

    /// The records whose `perm_id` is `perm_id`, as `(index, record)` in file order.
    fn with_id<'a>(&'a self, perm_id: &str) -> impl Iterator<Item = (usize, &'a Value)> + 'a {
        let last = self.records.len().wrapping_sub(1);
        self.by_id
            .get(perm_id)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(move |&k| (last - k, &self.records[last - k]))
    }

    /// Whether `other` holds the same records with the same index and summary (tests compare
    /// a snapshot updated in place with one built from the records).
    #[cfg(test)]
    pub(crate) fn same_as(&self, other: &Snapshot) -> bool {
        self.records == other.records
            && self.by_id == other.by_id
            && self.slots == other.slots
            && self.earliest_expiry == other.earliest_expiry
            && self.per_alias == other.per_alias
    }

    /// The spans this snapshot keeps (tests check them against a scan of the file).
    #[cfg(test)]
    pub(crate) fn kept_spans(&self) -> Option<&[(usize, usize)]> {
        self.spans.as_deref()
    }

    /// [`super::evaluate`] over this snapshot, looking only at the records with `perm_id`.
    pub fn evaluate(
        &self,
        perm_id: &str,
        replier_alias: &str,
        now: f64,
    ) -> (CheckOutcome, CheckKind, Option<(usize, PendingSlot)>) {
        evaluate_in(self.with_id(perm_id), perm_id, replier_alias, now)
    }
}

impl crate::store::cache::ArrayParse for Snapshot {
    fn parse(path: &Path, bytes: &[u8]) -> Result<Snapshot> {
        Snapshot::parse(path, bytes)
    }
    fn records(&self) -> &[Value] {
        &self.records
    }
    fn from_records(records: Vec<Value>) -> Snapshot {
        Snapshot::of(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slot(id: &str, sups: &[&str], expires_at: f64) -> Value {
        json!({"perm_id": id, "kind": "permission", "requester_session_id": "s1",
            "requester_alias": "req", "supervisors": sups, "created_at": 1.0,
            "expires_at": expires_at, "fallthrough_fired_at": [], "resolved_at": null,
            "verdict": null})
    }

    #[test]
    fn the_index_answers_as_the_scan_does() {
        let now = 1_000.0;
        let records = vec![
            slot("p_dup", &["boss"], now - 1.0), // expired, newest
            json!({"perm_id": "p_dup", "not": "a slot"}),
            slot("p_dup", &["ops"], now + 60.0), // the active one decides
            slot("p_old", &["boss"], now - 5.0),
            json!(42),
            slot("p_live", &["Boss"], now + 60.0),
        ];
        let bytes = serde_json::to_vec(&records).unwrap();
        let d = tempfile::tempdir().unwrap();
        let snap = Snapshot::parse(&d.path().join("pending_permissions.json"), &bytes).unwrap();
        for id in ["p_dup", "p_old", "p_live", "p_none"] {
            for replier in ["boss", "ops", "BOSS", "x"] {
                let (o1, k1, f1) = super::super::evaluate(&records, id, replier, now);
                let (o2, k2, f2) = snap.evaluate(id, replier, now);
                assert_eq!(
                    (o1, k1, f1.map(|(i, _)| i)),
                    (o2, k2, f2.map(|(i, _)| i)),
                    "{id} {replier}"
                );
            }
        }
        assert_eq!(snap.evaluate("p_dup", "ops", now).1, CheckKind::Valid);
        assert_eq!(snap.evaluate("p_old", "boss", now).1, CheckKind::Expired);
        assert_eq!(snap.evaluate("p_none", "boss", now).1, CheckKind::Unknown);
    }

    #[test]
    fn a_file_that_is_not_an_array_is_corrupt() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pending_permissions.json");
        let err = Snapshot::parse(&p, b"{}").unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::StoreCorrupt);
    }
}
