//! The splice path of an open against the full path, on generated files (odd whitespace,
//! pretty-printed records, unicode escapes, duplicates, expired slots, records of other
//! shapes, caps) and on the file c2c 0.8 wrote.
use super::*;
use crate::pending::add_slot;
use serde_json::json;

const NOW: f64 = 1_700_000_000.0;

fn new_slot(perm_id: &str, alias: &str) -> PendingSlot {
    PendingSlot {
        perm_id: perm_id.into(),
        kind: "permission".into(),
        requester_session_id: format!("ses_{alias}"),
        requester_alias: alias.into(),
        supervisors: vec!["boss".into()],
        created_at: NOW,
        expires_at: NOW + 600.0,
        fallthrough_fired_at: vec![],
        resolved_at: None,
        verdict: None,
        extra: Default::default(),
    }
}

/// What each path made of one open.
#[derive(Debug, PartialEq)]
enum Path {
    Full,
    Done,
    Write,
}

/// Run both paths on `bytes` and check they agree; returns which path the splice took.
fn compare(bytes: &[u8], slot: &PendingSlot, caps: Caps, now: f64) -> Path {
    let path = std::path::Path::new("pending_permissions.json");
    let mut snap = Snapshot::parse(path, bytes).expect("generated files parse");
    let mut full: Vec<Value> = snap.records().to_vec();
    let full_out = add_slot(&mut full, slot, caps, now);
    let ctx = || String::from_utf8_lossy(bytes).into_owned();
    match plan_open(&snap, bytes, slot, caps, now) {
        Splice::Full => {
            // declined only when something is to be pruned (or cannot be decided)
            assert!(
                !snap.all_active_at(now),
                "declined a file with nothing expired: {}",
                ctx()
            );
            Path::Full
        }
        Splice::Done(out) => {
            assert_eq!(out, full_out, "{}", ctx());
            assert!(out.is_err());
            Path::Done
        }
        Splice::Write {
            out,
            bytes: new,
            update,
        } => {
            assert_eq!(out, full_out, "{}", ctx());
            assert_eq!(out, Ok(0));
            // the new file parses to exactly the full path's records ...
            let parsed: Vec<Value> = serde_json::from_slice(&new).expect("splice is JSON");
            assert_eq!(parsed, full, "{}", ctx());
            // ... and holds the old bytes unchanged around the new record
            let record = serde_json::to_vec(&slot.to_value()).unwrap();
            let open = bytes.iter().position(|&b| b == b'[').unwrap();
            let comma = usize::from(!snap.records().is_empty());
            assert_eq!(new.len(), bytes.len() + record.len() + comma);
            assert_eq!(&new[..=open], &bytes[..=open]);
            assert_eq!(&new[open + 1..open + 1 + record.len()], &record[..]);
            assert_eq!(&new[open + 1 + record.len() + comma..], &bytes[open + 1..]);
            // the cached parse updated in place is the parse of the new file
            update(&mut snap);
            let reparsed = Snapshot::parse(path, &new).unwrap();
            assert!(snap.same_as(&reparsed), "{}", ctx());
            assert!(snap.same_as(&Snapshot::of(full)), "{}", ctx());
            Path::Write
        }
    }
}

fn pick<'a>(next: &mut impl FnMut() -> u64, from: &[&'a str]) -> &'a str {
    from[(next() % from.len() as u64) as usize]
}

/// A generated pending file: records of several shapes, each compact or pretty, some with
/// `\u` escapes, joined by random whitespace.
fn generate(next: &mut impl FnMut() -> u64) -> Vec<u8> {
    const IDS: [&str; 5] = ["p0", "p1", "p2", "p\u{e9}", "p\"q"];
    const ALIASES: [&str; 5] = ["req", "REQ", "Req", "other", "boss"];
    const WS: [&str; 6] = ["", " ", "\n", "\t", "\r\n", "  \n  "];
    let n = next() % 12;
    let mut out = String::from(pick(next, &WS));
    out.push('[');
    for i in 0..n {
        if i > 0 {
            out.push_str(pick(next, &WS));
            out.push(',');
        }
        out.push_str(pick(next, &WS));
        let v = match next() % 8 {
            0 => json!(42),
            1 => json!({"perm_id": pick(next, &IDS), "not": "a slot"}),
            2 => json!(null),
            _ => {
                let k = (next() % 40) as f64 - 12.0; // ≤ 0: expired (expiry at `now` included)
                let mut v = json!({"perm_id": pick(next, &IDS), "kind": "permission",
                    "requester_session_id": "ses_x", "requester_alias": pick(next, &ALIASES),
                    "supervisors": ["boss"], "created_at": NOW - 600.0,
                    "expires_at": NOW + k * 0.5, "fallthrough_fired_at": [],
                    "resolved_at": if next() % 3 == 0 { json!(NOW - 1.5) } else { json!(null) },
                    "verdict": null});
                if next() % 4 == 0 {
                    v["c2c_extra"] = json!({"nested": [1, "two"], "u": "\u{2603}"});
                }
                v
            }
        };
        let mut text = if next() % 3 == 0 {
            serde_json::to_string_pretty(&v).unwrap()
        } else {
            serde_json::to_string(&v).unwrap()
        };
        if next() % 3 == 0 {
            // another writer's escapes: same strings, other bytes
            text = text
                .replacen("\"perm_id\"", "\"perm\\u005fid\"", 1)
                .replacen("\"req\"", "\"r\\u0065q\"", 1);
        }
        out.push_str(&text);
    }
    out.push_str(pick(next, &WS));
    out.push(']');
    out.push_str(pick(next, &WS));
    out.into_bytes()
}

#[test]
fn the_splice_writes_what_the_full_path_writes_on_generated_files() {
    let mut next = crate::testutil::xorshift(0x0be9_d1e5_5a11_c3e1);
    let mut taken = [0usize; 3];
    for _ in 0..4000 {
        let bytes = generate(&mut next);
        let slot = new_slot(
            pick(&mut next, &["p0", "p1", "p9", "p\u{e9}", "p\"q"]),
            pick(&mut next, &["req", "rEQ", "other", "new"]),
        );
        let caps = Caps {
            per_alias: 1 + (next() % 5) as usize,
            global: 1 + (next() % 12) as usize,
        };
        let p = compare(&bytes, &slot, caps, NOW);
        taken[p as usize] += 1;
    }
    // every path was exercised
    assert!(taken.iter().all(|&n| n > 100), "{taken:?}");
}

#[test]
fn insert_first_edge_cases() {
    let rec = br#"{"a":1}"#;
    assert_eq!(insert_first(b"[]", rec, true).unwrap().0, br#"[{"a":1}]"#);
    assert_eq!(
        insert_first(b" \n[ \t] \n", rec, true).unwrap().0,
        b" \n[{\"a\":1} \t] \n"
    );
    assert_eq!(
        insert_first(b"[\n  2\n]", rec, false).unwrap().0,
        b"[{\"a\":1},\n  2\n]"
    );
    assert!(insert_first(b"", rec, true).is_none());
    assert!(insert_first(b"  ", rec, true).is_none());
    assert!(insert_first(b"{}", rec, true).is_none());
    // a byte-order mark is not JSON whitespace (and serde_json refuses it too)
    assert!(insert_first(b"\xef\xbb\xbf[]", rec, true).is_none());
}

#[test]
fn the_c2c_fixture_takes_the_splice_while_its_slots_live_and_the_full_path_after() {
    let bytes = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/c2c-0.8/basic-root/pending_permissions.json"),
    )
    .unwrap();
    let snap = Snapshot::parse(std::path::Path::new("p.json"), &bytes).unwrap();
    let expiries: Vec<f64> = snap
        .records()
        .iter()
        .map(|v| v["expires_at"].as_f64().unwrap())
        .collect();
    let first_expiry = expiries.iter().cloned().fold(f64::INFINITY, f64::min);
    let before = first_expiry - 100.0;
    let caps = Caps::default();
    let mut slot = new_slot("perm-new", "alice");
    slot.created_at = before;
    slot.expires_at = before + 600.0;
    assert_eq!(compare(&bytes, &slot, caps, before), Path::Write);
    // a duplicate of c2c's open slot is refused from the index
    let dup = new_slot("perm-open-1", "dave");
    assert_eq!(compare(&bytes, &dup, caps, before), Path::Done);
    // once one of c2c's slots has expired, the full path prunes it
    assert_eq!(compare(&bytes, &slot, caps, first_expiry), Path::Full);
}

/// The stamp of a check on both paths; returns which path the splice took.
fn compare_stamp(bytes: &[u8], perm_id: &str, replier: &str, now: f64) -> Path {
    let path = std::path::Path::new("pending_permissions.json");
    let mut snap = Snapshot::parse(path, bytes).expect("generated files parse");
    let mut full: Vec<Value> = snap.records().to_vec();
    let full_out = crate::pending::slots::stamp_records(&mut full, perm_id, replier, now);
    let ctx = || String::from_utf8_lossy(bytes).into_owned();
    match plan_stamp(&snap, bytes, perm_id, replier, now) {
        Splice::Full => {
            assert!(
                !snap.all_active_at(now),
                "declined a file with nothing expired: {}",
                ctx()
            );
            Path::Full
        }
        Splice::Done(out) => {
            assert_eq!(out, full_out, "{}", ctx());
            assert!(!out.2);
            Path::Done
        }
        Splice::Write {
            out,
            bytes: new,
            update,
        } => {
            assert_eq!(out, full_out, "{}", ctx());
            assert!(out.2);
            let parsed: Vec<Value> = serde_json::from_slice(&new).expect("splice is JSON");
            assert_eq!(parsed, full, "{}", ctx());
            update(&mut snap);
            let reparsed = Snapshot::parse(path, &new).unwrap();
            assert!(snap.same_as(&reparsed), "{}", ctx());
            assert_eq!(
                snap.kept_spans().map(<[_]>::to_vec),
                scan(&new),
                "{}",
                ctx()
            );
            Path::Write
        }
    }
}

/// The spans of `bytes` as a fresh scan finds them.
fn scan(bytes: &[u8]) -> Option<Vec<(usize, usize)>> {
    let snap = Snapshot::parse(std::path::Path::new("p.json"), bytes).unwrap();
    match snap.spans_or_scan(bytes)? {
        std::borrow::Cow::Borrowed(_) => panic!("a parsed snapshot keeps no spans"),
        std::borrow::Cow::Owned(scanned) => Some(scanned),
    }
}

#[test]
fn the_stamp_splice_writes_what_the_full_path_writes_on_generated_files() {
    let mut next = crate::testutil::xorshift(0x5ca1_ab1e_0dd5_eed5);
    let mut taken = [0usize; 3];
    for _ in 0..10000 {
        let bytes = generate(&mut next);
        let id = pick(&mut next, &["p0", "p1", "p2", "p\u{e9}", "p\"q", "p9"]);
        let replier = pick(&mut next, &["boss", "BOSS", "req", "nobody"]);
        taken[compare_stamp(&bytes, id, replier, NOW) as usize] += 1;
    }
    assert!(taken.iter().all(|&n| n > 100), "{taken:?}");
}

/// Opens and stamps chained as the cache sees them: each splice updates the one snapshot in
/// place (spans included), each decline runs the full path and starts a fresh snapshot; after
/// every step the snapshot is the parse of the file, and its spans are the file's.
#[test]
fn chained_splices_keep_the_cached_snapshot_equal_to_the_file() {
    let mut next = crate::testutil::xorshift(0x0c4a_1ed5_917c_e5e5);
    let path = std::path::Path::new("pending_permissions.json");
    let mut splices = 0;
    for round in 0..300 {
        let mut bytes = generate(&mut next);
        let mut snap = Snapshot::parse(path, &bytes).unwrap();
        for step in 0..12 {
            let id = format!("p{}", next() % 8);
            let ctx = format!(
                "round {round} step {step}: {}",
                String::from_utf8_lossy(&bytes)
            );
            if next() % 2 == 0 {
                let slot = new_slot(&id, pick(&mut next, &["req", "x"]));
                let caps = Caps {
                    per_alias: 6,
                    global: 20,
                };
                match plan_open(&snap, &bytes, &slot, caps, NOW) {
                    Splice::Write {
                        bytes: new, update, ..
                    } => {
                        update(&mut snap);
                        bytes = new;
                        splices += 1;
                    }
                    Splice::Done(_) => {}
                    Splice::Full => {
                        let mut records = snap.records().to_vec();
                        if add_slot(&mut records, &slot, caps, NOW).is_ok() {
                            bytes = serde_json::to_vec(&records).unwrap();
                            snap = Snapshot::of(records);
                        }
                    }
                }
            } else {
                match plan_stamp(&snap, &bytes, &id, "boss", NOW) {
                    Splice::Write {
                        bytes: new, update, ..
                    } => {
                        update(&mut snap);
                        bytes = new;
                        splices += 1;
                    }
                    Splice::Done(_) => {}
                    Splice::Full => {
                        let mut records = snap.records().to_vec();
                        let out =
                            crate::pending::slots::stamp_records(&mut records, &id, "boss", NOW);
                        if out.2 {
                            bytes = serde_json::to_vec(&records).unwrap();
                            snap = Snapshot::of(records);
                        }
                    }
                }
            }
            assert!(
                snap.same_as(&Snapshot::parse(path, &bytes).unwrap()),
                "{ctx}"
            );
            if let Some(kept) = snap.kept_spans() {
                assert_eq!(Some(kept.to_vec()), scan(&bytes), "{ctx}");
            }
        }
    }
    assert!(splices > 1000, "{splices}");
}

/// Red team 3 (docs/redteam-2026-12.md): hostile pending files a generator does not make —
/// duplicated keys inside a record (the last wins, as in c2c's Python), a slot nested in an
/// array, a non-string perm id, numbers spelt oddly, a byte-order mark. On each, every check
/// (valid supervisor, the duplicated key's other value, a non-supervisor, an unknown id) and an
/// open must give the full path's answer and bytes that parse to the full path's records.
#[test]
fn hostile_pending_files_take_the_full_paths_meaning() {
    let slot = |id: &str, extra: &str| {
        format!(
            r#"{{"perm_id":"{id}","kind":"permission","requester_session_id":"ses_x","requester_alias":"req","supervisors":["boss"],"created_at":1.7e9,"expires_at":{exp},"fallthrough_fired_at":[],"resolved_at":null,"verdict":null{extra}}}"#,
            exp = NOW + 600.0
        )
    };
    let files = [
        // perm_id twice: the record is p1's (last wins), never p_evil's
        format!("[{}]", slot("p_evil", r#","perm_id":"p1""#)),
        // supervisors twice: mallory is the supervisor, boss is not
        format!("[{}]", slot("p1", r#","supervisors":["mallory"]"#)),
        // resolved_at twice: resolved already
        format!("[{}]", slot("p1", r#","resolved_at":1.0"#)),
        // expires_at twice: expired
        format!(
            "[{}, {}]",
            slot("p1", r#","expires_at":1.0"#),
            slot("p2", "")
        ),
        // a slot nested in an array is no slot; the real one after it is
        format!("[[{}], {}]", slot("p1", ""), slot("p2", "")),
        // a non-string perm id
        format!(
            "[{}]",
            slot("p1", "").replace(r#""perm_id":"p1""#, r#""perm_id":1"#)
        ),
        // numbers spelt oddly, escapes in keys and values
        format!(
            "[ {} ,\n{} ]",
            slot("p1", r#","n":-0.0,"m":1E2,"k":[[[]]],"s":"\u2028\\\"]""#),
            slot("p\\u0032", "")
        ),
    ];
    for f in &files {
        let bytes = f.as_bytes();
        for (perm_id, replier) in [
            ("p1", "boss"),
            ("p1", "mallory"),
            ("p_evil", "boss"),
            ("p2", "boss"),
            ("p2", "BOSS"),
            ("nope", "boss"),
        ] {
            compare_stamp(bytes, perm_id, replier, NOW);
        }
        for id in ["p1", "p2", "p_new"] {
            compare(bytes, &new_slot(id, "req"), Caps::default(), NOW);
        }
    }
    // A byte-order mark: not JSON for either path (c2c's json.loads refuses it too).
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(files[0].as_bytes());
    // (a rejected file's bytes are copied aside next to its path: a temp dir, not the tree)
    let d = tempfile::tempdir().unwrap();
    assert!(Snapshot::parse(&d.path().join("p.json"), &bom).is_err());
    assert!(insert_first(&bom, b"{}", false).is_none());
}
