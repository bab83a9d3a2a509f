//! Store record parsing: any bytes are a list of records or an error, never a panic; a
//! well-formed JSON array always takes the whole-file path; element ranges are in order and
//! inside the input; an inbox read classifies every record.
#![no_main]

use std::path::Path;

use c2c_bridge::store::records::{self, Record};
use libfuzzer_sys::fuzz_target;

// A path whose directory does not exist: a corrupt file's copy-aside fails quietly.
const PATH: &str = "/nonexistent-c2c-bridge-fuzz/x.inbox.json";

fuzz_target!(|data: &[u8]| {
    let path = Path::new(PATH);
    let parsed = records::parse_records(path, data);
    if let Ok(serde_json::Value::Array(items)) = serde_json::from_slice::<serde_json::Value>(data) {
        let recs = parsed.as_ref().expect("a JSON array parses");
        assert_eq!(recs.len(), items.len());
        assert!(recs.iter().all(|r| matches!(r, Record::Clean(_))));
    }
    if let Some(ranges) = records::split_array(data) {
        let mut last = 0;
        for r in &ranges {
            assert!(r.start >= last && r.start < r.end && r.end <= data.len());
            last = r.end;
        }
    }
    if let Some(fixed) = records::repair_unicode(data) {
        // repairing twice changes nothing more
        assert_eq!(records::repair_unicode(&fixed), None);
    }
    if let Ok(entries) = c2c_bridge::inbox::parse(path, data) {
        assert_eq!(entries.len(), parsed.map(|r| r.len()).unwrap_or(usize::MAX));
    }
});
