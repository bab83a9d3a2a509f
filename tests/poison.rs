//! One bad record never blocks an inbox (issue 12): records with invalid Unicode are repaired
//! and delivered marked, records that cannot be understood are moved aside byte for byte with
//! a receipt to their sender, everything else is delivered, and sends keep working.

use std::path::{Path, PathBuf};

use c2c_bridge::broker::SendOptions;
use c2c_bridge::receipts::Status;
use c2c_bridge::{Broker, ErrorCode, OpenOptions};

fn open(root: &Path, sid: &str, alias: &str) -> Broker {
    let dir = root.parent().unwrap().join(format!("p-{alias}"));
    std::fs::create_dir_all(&dir).unwrap();
    Broker::open(OpenOptions {
        session_id: sid.into(),
        alias: Some(alias.into()),
        root: Some(root.to_path_buf()),
        directory: Some(dir),
        inbound: Some("accept".into()),
        env: c2c_bridge::Environment::empty(),
        ..Default::default()
    })
    .unwrap()
}

/// Append raw elements to the JSON array in `path`, as another program's writer would.
fn append_raw(path: &Path, elems: &[&[u8]]) {
    let mut bytes = std::fs::read(path).unwrap();
    while bytes.last().is_some_and(|b| b.is_ascii_whitespace()) {
        bytes.pop();
    }
    assert_eq!(bytes.pop(), Some(b']'));
    let mut first = bytes.last() == Some(&b'[');
    for e in elems {
        if !first {
            bytes.push(b',');
        }
        first = false;
        bytes.extend_from_slice(e);
    }
    bytes.push(b']');
    std::fs::write(path, bytes).unwrap();
}

fn quarantined(root: &Path) -> Vec<Vec<u8>> {
    let dir = root.join("quarantine");
    let mut out: Vec<Vec<u8>> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

const SURROGATE: &[u8] = br#"{"from_alias":"alice","from_session_id":"ses_a","to_alias":"bob","content":"status: build green \ud83c","ts":1.5,"message_id":"m-surrogate"}"#;
const BAD_UTF8: &[u8] = b"{\"from_alias\":\"carol\",\"to_alias\":\"bob\",\"content\":\"caf\xe9 \xff ok\",\"ts\":2.5,\"message_id\":\"m-latin1\"}";
const NOT_JSON: &[u8] = br#"{"from_alias":"alice","from_session_id":"ses_a","to_alias":"bob","message_id":"m-broken","content": tru}"#;
const NO_MESSAGE: &[u8] = br#"{"from_alias":"alice","from_session_id":"ses_a","to_alias":"bob","message_id":"m-typed","content":42}"#;
const ROOM_FANOUT: &[u8] =
    br#"{"from_alias":"carol","to_alias":"bob#lobby","content":"c2c room post","ts":3.0}"#;

#[test]
fn a_poisoned_inbox_delivers_every_other_record_and_keeps_taking_mail() {
    let d = tempfile::tempdir().unwrap();
    let root: PathBuf = d.path().join("broker");
    let a = open(&root, "ses_a", "alice");
    let b = open(&root, "ses_b", "bob");
    let before = a.send("bob", "before", &SendOptions::default()).unwrap();
    let inbox = root.join("ses_b.inbox.json");
    append_raw(
        &inbox,
        &[SURROGATE, BAD_UTF8, NOT_JSON, NO_MESSAGE, ROOM_FANOUT],
    );

    // Reading moves nothing, and shows the messages (repaired ones marked).
    let seen = b.peek().unwrap();
    let ids: Vec<&str> = seen.iter().map(|m| m.message_id.as_str()).collect();
    // c2c's room fan-out has no message_id: delivered under its derived id (issue 13)
    let room_record = serde_json::from_slice(ROOM_FANOUT).unwrap();
    let room_id = c2c_bridge::inbox::derived_message_id(&room_record).unwrap();
    let want = [
        before.message_id.as_str(),
        "m-surrogate",
        "m-latin1",
        &room_id,
    ];
    assert_eq!(ids, want);
    assert_eq!(seen[1].content, "status: build green \u{fffd}");
    assert_eq!(seen[1].repaired, Some(true));
    assert_eq!(seen[2].content, "caf\u{fffd} \u{fffd} ok");
    assert_eq!(seen[0].repaired, None);
    assert!(quarantined(&root).is_empty());

    // A send to that session works, and (holding the lock) moves the bad records aside.
    let after = a.send("bob", "after", &SendOptions::default()).unwrap();
    let kept = quarantined(&root);
    let mut want: Vec<Vec<u8>> = vec![
        SURROGATE.to_vec(),
        BAD_UTF8.to_vec(),
        NOT_JSON.to_vec(),
        NO_MESSAGE.to_vec(),
    ];
    want.sort();
    assert_eq!(
        kept, want,
        "originals and unreadable records, byte for byte"
    );
    for e in std::fs::read_dir(root.join("quarantine")).unwrap() {
        use std::os::unix::fs::PermissionsExt;
        let mode = e.unwrap().metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    // The inbox now parses as a whole: repaired records written back marked, the c2c
    // record without message_id left as it was.
    let text = std::fs::read_to_string(&inbox).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 5);
    assert!(text.contains(r#""content":"c2c room post""#));

    // The sender named by the unreadable records gets `unreadable` receipts for them.
    let receipts = a.receipts(20).unwrap();
    let mut bad: Vec<&str> = receipts
        .iter()
        .filter(|r| r.status == Status::Unreadable)
        .map(|r| r.message_id.as_str())
        .collect();
    bad.sort();
    assert_eq!(bad, vec!["m-broken", "m-typed"]);

    // The gate delivers every message; the repaired one's frame says so.
    let g = b.gate_inbox().unwrap();
    let ids: Vec<&str> = g.deliver.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(
        ids,
        vec![
            before.message_id.as_str(),
            "m-surrogate",
            "m-latin1",
            room_id.as_str(),
            after.message_id.as_str()
        ]
    );
    let framed = c2c_bridge::envelope::frame_inbox_message(&g.deliver[1]);
    assert!(
        framed.contains("note: the stored text was not valid Unicode"),
        "{framed}"
    );
    assert!(framed.contains("status: build green \u{fffd}"));
    let plain = c2c_bridge::envelope::frame_inbox_message(&g.deliver[0]);
    assert!(!plain.contains("not valid Unicode"));
    let acked = b
        .acknowledge(
            &g.deliver
                .iter()
                .map(|m| m.message_id.clone())
                .collect::<Vec<_>>(),
            Status::Delivered,
        )
        .unwrap();
    assert_eq!(acked.len(), 5);
    // Nothing is left: the c2c record was acknowledged by its derived id (issue 13).
    let left: serde_json::Value = serde_json::from_slice(&std::fs::read(&inbox).unwrap()).unwrap();
    assert_eq!(left.as_array().unwrap().len(), 0);
}

#[test]
fn drain_and_sweep_keep_unreadable_records() {
    let d = tempfile::tempdir().unwrap();
    let root: PathBuf = d.path().join("broker");
    let a = open(&root, "ses_a", "alice");
    let b = open(&root, "ses_b", "bob");
    a.send("bob", "one", &SendOptions::default()).unwrap();
    append_raw(&root.join("ses_b.inbox.json"), &[NOT_JSON, SURROGATE]);
    let drained = b.drain().unwrap();
    assert_eq!(drained.len(), 2);
    assert_eq!(drained[1].repaired, Some(true));
    let mut want = vec![NOT_JSON.to_vec(), SURROGATE.to_vec()];
    want.sort();
    assert_eq!(quarantined(&root), want);
}

#[test]
fn not_an_array_at_all_is_still_corrupt() {
    let d = tempfile::tempdir().unwrap();
    let root: PathBuf = d.path().join("broker");
    let a = open(&root, "ses_a", "alice");
    let b = open(&root, "ses_b", "bob");
    let inbox = root.join("ses_b.inbox.json");
    std::fs::write(&inbox, b"{\"content\":\"\\ud83c\"}").unwrap();
    assert_eq!(b.peek().unwrap_err().code(), ErrorCode::StoreCorrupt);
    assert_eq!(
        a.send("bob", "x", &SendOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::StoreCorrupt
    );
    assert_eq!(std::fs::read(&inbox).unwrap(), b"{\"content\":\"\\ud83c\"}");
}

fn try_open(root: &Path, sid: &str, alias: &str) -> c2c_bridge::error::Result<Broker> {
    Broker::open(OpenOptions {
        session_id: sid.into(),
        alias: Some(alias.into()),
        root: Some(root.to_path_buf()),
        directory: Some(root.parent().unwrap().to_path_buf()),
        env: c2c_bridge::Environment::empty(),
        ..Default::default()
    })
}

#[test]
fn an_unparsed_registration_keeps_its_alias() {
    let d = tempfile::tempdir().unwrap();
    let root: PathBuf = d.path().join("broker");
    let a = open(&root, "ses_a", "alice");
    // Another program registers bob with a string registered_at and pid_start_time.
    let reg = root.join("registry.json");
    append_raw(
        &reg,
        &[br#"{"session_id":"ses_c2c_bob","alias":"bob","pid":1,"pid_start_time":"12","registered_at":"2026-11-30T18:00:00Z"}"#],
    );
    let e = try_open(&root, "ses_new", "Bob").err().unwrap();
    assert_eq!(e.code(), ErrorCode::AliasTaken);
    assert!(e.to_string().contains("unreadable registry record"), "{e}");
    assert!(e.to_string().contains("Bob-2"), "{e}");
    let records: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&reg).unwrap()).unwrap();
    assert_eq!(
        records.len(),
        2,
        "no second bob, the unreadable record kept"
    );
    // The alias is not listed as a peer (it cannot be read), nor a send target.
    assert!(a.list_peers().unwrap().iter().all(|p| p.alias != "bob"));
    // Another alias is fine.
    try_open(&root, "ses_new", "bob-2").unwrap();
}

#[test]
fn an_unparsed_registration_counts_as_alive_for_the_m4_guard() {
    let d = tempfile::tempdir().unwrap();
    let root: PathBuf = d.path().join("broker");
    let _a = open(&root, "ses_a", "alice");
    // ses_old held "carol" and has an open pending slot; its record (now under another alias)
    // cannot be parsed, so whether it lives cannot be known.
    let reg = root.join("registry.json");
    append_raw(
        &reg,
        &[br#"{"session_id":"ses_old","alias":"carol-away","registered_at":"soon"}"#],
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let slot = serde_json::json!([{
        "perm_id": "perm-1", "kind": "permission", "requester_session_id": "ses_old",
        "requester_alias": "carol", "supervisors": ["alice"], "created_at": now,
        "expires_at": now + 600.0, "fallthrough_fired_at": [], "resolved_at": null,
        "verdict": null
    }]);
    std::fs::write(root.join("pending_permissions.json"), slot.to_string()).unwrap();
    let e = try_open(&root, "ses_new", "carol").err().unwrap();
    assert_eq!(e.code(), ErrorCode::AliasPending);
}
