//! A parsed `pending_permissions.json` with an index by perm id, for checks that read the
//! cached file ([`crate::store::cache`]): a check then looks at the records with its perm id
//! only, so its cost does not grow with the number of slots (an unknown id at 1,000 slots
//! was a scan of 1,000 records).

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::{evaluate_in, CheckKind, CheckOutcome, PendingSlot};
use crate::error::Result;

/// The records as read (newest first, records of any shape) and where each perm id is.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Every record of the file, in file order.
    pub records: Vec<Value>,
    /// perm id → indices into `records`, ascending.
    by_id: HashMap<String, Vec<usize>>,
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
        let mut by_id: HashMap<String, Vec<usize>> = HashMap::with_capacity(records.len());
        for (i, v) in records.iter().enumerate() {
            if let Some(id) = v.get("perm_id").and_then(Value::as_str) {
                by_id.entry(id.to_string()).or_default().push(i);
            }
        }
        Snapshot { records, by_id }
    }

    /// [`super::evaluate`] over this snapshot, looking only at the records with `perm_id`.
    pub fn evaluate(
        &self,
        perm_id: &str,
        replier_alias: &str,
        now: f64,
    ) -> (CheckOutcome, CheckKind, Option<(usize, PendingSlot)>) {
        let candidates = self
            .by_id
            .get(perm_id)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|&i| (i, &self.records[i]));
        evaluate_in(candidates, perm_id, replier_alias, now)
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
