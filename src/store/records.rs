//! Reading a JSON-array file record by record, so one bad record does not make a whole file
//! unreadable.
//!
//! Other programs write into the broker root (c2c's CLI and MCP server, scripts in Python and
//! OCaml). Their JSON may hold strings that are not valid Unicode: a lone surrogate escape
//! (`"\ud83c"`, text cut in the middle of an emoji — the JSON grammar allows it and Node's and
//! Python's parsers read it) or raw bytes that are not UTF-8. `serde_json` rejects both, and
//! with them the whole file. Here a file is read as follows:
//!
//! 1. the whole file parses as a JSON array: every record is [`Record::Clean`] (the fast path);
//! 2. otherwise the array is split into its top-level elements by a byte scanner that tracks
//!    strings and brackets ([`split_array`]); when the bytes are not a JSON array at all
//!    (truncated, garbage, an object) the file is [`Error::StoreCorrupt`](crate::Error::StoreCorrupt) as before;
//! 3. each element that parses is [`Record::Clean`]; one that parses once its invalid Unicode
//!    is replaced with U+FFFD ([`repair_unicode`]) is [`Record::Repaired`]; anything else is
//!    [`Record::Unreadable`]. Both of the latter keep the element's bytes exactly as stored.
//!
//! What a caller does with a repaired or unreadable record is its own policy (for inboxes see
//! [`crate::inbox`]).

use std::ops::Range;
use std::path::Path;

use serde_json::Value;

use crate::error::Result;

/// One top-level element of a JSON-array file.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// Parsed as it is.
    Clean(Value),
    /// Parsed once its invalid Unicode (lone surrogate escapes, bytes that are not UTF-8, both
    /// only inside strings) was replaced with U+FFFD.
    Repaired {
        /// The repaired record.
        value: Value,
        /// The element's bytes as stored.
        raw: Vec<u8>,
    },
    /// Not JSON even after the repair; the element's bytes as stored.
    Unreadable {
        /// The element's bytes as stored.
        raw: Vec<u8>,
    },
}

impl Record {
    /// The parsed value of a clean or repaired record.
    pub fn value(&self) -> Option<&Value> {
        match self {
            Record::Clean(v) | Record::Repaired { value: v, .. } => Some(v),
            Record::Unreadable { .. } => None,
        }
    }
}

/// Read `path` record by record (see the module doc). An absent file reads as `[]`.
///
/// # Errors
/// [`crate::Error::StoreCorrupt`] (after copying the bytes aside) when the file is not a JSON
/// array at all; [`crate::Error::Io`] on read failures.
pub fn read_records(path: &Path) -> Result<Vec<Record>> {
    match super::file::read_bytes(path)? {
        None => Ok(Vec::new()),
        Some((_, bytes)) => parse_records(path, &bytes),
    }
}

/// Parse the bytes of a JSON-array file read from `path` record by record.
///
/// # Errors
/// [`crate::Error::StoreCorrupt`] when `bytes` are not a JSON array at all.
pub fn parse_records(path: &Path, bytes: &[u8]) -> Result<Vec<Record>> {
    if let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(bytes) {
        return Ok(items.into_iter().map(Record::Clean).collect());
    }
    let Some(ranges) = split_array(bytes) else {
        // Not an array at all: report it exactly as a whole-file read does.
        return super::file::parse_array(path, bytes).map(|items| {
            // parse_array cannot succeed here (the fast path failed); keep the types honest.
            items.into_iter().map(Record::Clean).collect()
        });
    };
    Ok(ranges.into_iter().map(|r| classify(&bytes[r])).collect())
}

/// Parse one element's bytes: clean, repaired or unreadable.
pub fn classify(raw: &[u8]) -> Record {
    if let Ok(v) = serde_json::from_slice::<Value>(raw) {
        return Record::Clean(v);
    }
    if let Some(fixed) = repair_unicode(raw) {
        if let Ok(value) = serde_json::from_slice::<Value>(&fixed) {
            return Record::Repaired {
                value,
                raw: raw.to_vec(),
            };
        }
    }
    Record::Unreadable { raw: raw.to_vec() }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The byte ranges of the top-level elements of a JSON array, surrounding whitespace trimmed;
/// `None` when `bytes` are not shaped as one (no `[`, unbalanced brackets, an unterminated
/// string, an empty element, anything after the closing `]`). Elements are not validated:
/// `[1, tru, {"a":"\ud83c"}]` splits into three.
pub fn split_array(bytes: &[u8]) -> Option<Vec<Range<usize>>> {
    let n = bytes.len();
    let mut i = 0;
    while i < n && is_ws(bytes[i]) {
        i += 1;
    }
    if i >= n || bytes[i] != b'[' {
        return None;
    }
    i += 1;
    let mut out = Vec::new();
    loop {
        while i < n && is_ws(bytes[i]) {
            i += 1;
        }
        if out.is_empty() && i < n && bytes[i] == b']' {
            i += 1;
            break;
        }
        let start = i;
        let mut depth = 0usize;
        let mut in_str = false;
        while i < n {
            let c = bytes[i];
            if in_str {
                match c {
                    b'\\' => i += 1,
                    b'"' => in_str = false,
                    _ => {}
                }
            } else {
                match c {
                    b'"' => in_str = true,
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' if depth == 0 => break,
                    b']' | b'}' => depth -= 1,
                    b',' if depth == 0 => break,
                    _ => {}
                }
            }
            i += 1;
        }
        if i >= n || in_str {
            return None;
        }
        let mut end = i;
        while end > start && is_ws(bytes[end - 1]) {
            end -= 1;
        }
        if end == start {
            return None;
        }
        out.push(start..end);
        match bytes[i] {
            b',' => i += 1,
            b']' => {
                i += 1;
                break;
            }
            _ => return None, // a `}` closing the array
        }
    }
    while i < n && is_ws(bytes[i]) {
        i += 1;
    }
    (i == n).then_some(out)
}

/// Replace invalid Unicode inside the JSON strings of `raw` with U+FFFD: a `\uD800`–`\uDBFF`
/// escape not followed by a low-surrogate escape, a lone `\uDC00`–`\uDFFF` escape, and every
/// byte sequence that is not UTF-8 (each maximal bad sequence becomes one U+FFFD, as
/// [`String::from_utf8_lossy`] does). Returns `None` when there was nothing to repair.
/// Bytes outside strings are left alone.
pub fn repair_unicode(raw: &[u8]) -> Option<Vec<u8>> {
    const FFFD_ESC: &[u8] = b"\\ufffd";
    let hex4 = |at: usize| -> Option<u16> {
        let s = raw.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok()
    };
    let mut out = Vec::with_capacity(raw.len() + 8);
    let mut changed = false;
    let mut i = 0;
    let n = raw.len();
    let mut in_str = false;
    while i < n {
        let c = raw[i];
        if !in_str {
            out.push(c);
            in_str = c == b'"';
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                out.push(c);
                in_str = false;
                i += 1;
            }
            b'\\' if raw.get(i + 1) == Some(&b'u') => match hex4(i + 2) {
                Some(hi @ 0xD800..=0xDBFF) => {
                    let pair = raw.get(i + 6..i + 8) == Some(b"\\u")
                        && matches!(hex4(i + 8), Some(0xDC00..=0xDFFF));
                    if pair {
                        out.extend_from_slice(&raw[i..i + 12]);
                        i += 12;
                    } else {
                        let _ = hi;
                        out.extend_from_slice(FFFD_ESC);
                        changed = true;
                        i += 6;
                    }
                }
                Some(0xDC00..=0xDFFF) => {
                    out.extend_from_slice(FFFD_ESC);
                    changed = true;
                    i += 6;
                }
                _ => {
                    out.extend_from_slice(&raw[i..(i + 2).min(n)]);
                    i += 2;
                }
            },
            b'\\' => {
                out.extend_from_slice(&raw[i..(i + 2).min(n)]);
                i += 2;
            }
            _ => {
                // A run of plain string bytes up to the next quote or backslash (ASCII, so
                // never inside a multi-byte sequence).
                let start = i;
                while i < n && raw[i] != b'"' && raw[i] != b'\\' {
                    i += 1;
                }
                let run = &raw[start..i];
                match std::str::from_utf8(run) {
                    Ok(_) => out.extend_from_slice(run),
                    Err(_) => {
                        out.extend_from_slice(String::from_utf8_lossy(run).as_bytes());
                        changed = true;
                    }
                }
            }
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p() -> std::path::PathBuf {
        std::path::PathBuf::from("/nonexistent/x.json")
    }

    #[test]
    fn a_clean_array_takes_the_fast_path() {
        let recs = parse_records(&p(), br#"[{"a":1}, 2, "x"]"#).unwrap();
        assert_eq!(
            recs,
            vec![
                Record::Clean(json!({"a":1})),
                Record::Clean(json!(2)),
                Record::Clean(json!("x"))
            ]
        );
        assert!(parse_records(&p(), b" [ ] ").unwrap().is_empty());
    }

    #[test]
    fn lone_surrogates_and_bad_utf8_are_repaired_and_the_raw_bytes_kept() {
        let bytes: &[u8] = b"[{\"c\":\"ok\"},{\"c\":\"status: build green \\ud83c\"},{\"c\":\"a\xff\xfeb\"},{\"c\":\"\\udc00x\\ud83c\\udf89\"}]";
        let recs = parse_records(&p(), bytes).unwrap();
        assert_eq!(recs.len(), 4);
        assert_eq!(recs[0], Record::Clean(json!({"c":"ok"})));
        match &recs[1] {
            Record::Repaired { value, raw } => {
                assert_eq!(value["c"], "status: build green \u{fffd}");
                assert_eq!(
                    raw.as_slice(),
                    &b"{\"c\":\"status: build green \\ud83c\"}"[..]
                );
            }
            other => panic!("{other:?}"),
        }
        match &recs[2] {
            Record::Repaired { value, raw } => {
                assert_eq!(value["c"], "a\u{fffd}\u{fffd}b");
                assert_eq!(raw.as_slice(), &b"{\"c\":\"a\xff\xfeb\"}"[..]);
            }
            other => panic!("{other:?}"),
        }
        // a valid pair is kept, a lone low surrogate is replaced
        assert_eq!(recs[3].value().unwrap()["c"], "\u{fffd}x\u{1f389}");
    }

    #[test]
    fn a_record_that_is_not_json_is_unreadable_alone() {
        let bytes = br#"[{"a":1}, {"b": tru}, {"c":"]},{"}]"#;
        let recs = parse_records(&p(), bytes).unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(
            recs[1],
            Record::Unreadable {
                raw: br#"{"b": tru}"#.to_vec()
            }
        );
        assert_eq!(recs[2], Record::Clean(json!({"c":"]},{"})));
    }

    #[test]
    fn not_an_array_at_all_is_corrupt() {
        let d = tempfile::tempdir().unwrap();
        for (i, bytes) in [
            &b"not json"[..],
            b"[{\"a\":1},",
            b"",
            b"{\"a\":\"\\ud83c\"}",
            b"\xff\xfe[]",
            b"[1,]",
            b"[,1]",
            b"[{\"a\":\"unterminated]",
            b"[1] x",
            b"[1}",
        ]
        .iter()
        .enumerate()
        {
            let path = d.path().join(format!("f{i}.json"));
            let e = parse_records(&path, bytes).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::StoreCorrupt, "case {i}");
        }
    }

    #[test]
    fn repair_leaves_valid_text_alone() {
        assert_eq!(
            repair_unicode(br#"{"a":"\u00e9\n\"\\","b":"\ud83c\udf89"}"#),
            None
        );
        assert_eq!(repair_unicode("{\"a\":\"ünï ✓\"}".as_bytes()), None);
        // outside strings nothing is touched (the element stays unreadable)
        assert_eq!(repair_unicode(b"{\xff:1}"), None);
    }
}
