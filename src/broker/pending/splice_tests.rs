//! The splice paths of `openPendingReply` and of the stamping check on a file c2c wrote
//! (pretty-printed here, as another writer might): c2c's bytes are kept, only our record is
//! added or the stamped record replaced, and another writer's replacement is picked up.

use std::path::Path;

use serde_json::{json, Value};

use crate::{Broker, OpenOptions};

fn open(root: &Path, sid: &str, alias: &str) -> Broker {
    Broker::open(OpenOptions {
        session_id: sid.into(),
        alias: Some(alias.into()),
        root: Some(root.to_path_buf()),
        directory: Some(root.to_path_buf()),
        env: crate::config::Environment::empty(),
        ..Default::default()
    })
    .unwrap()
}

fn c2c_slot(perm: &str, alias: &str, expires_at: f64) -> Value {
    json!({
        "perm_id": perm, "kind": "permission",
        "requester_session_id": format!("ses_{alias}"), "requester_alias": alias,
        "supervisors": ["bob"], "created_at": expires_at - 600.0, "expires_at": expires_at,
        "fallthrough_fired_at": [], "resolved_at": null, "verdict": null
    })
}

/// Replace the file as another process would (temp file, rename).
fn foreign_write(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("foreign-tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn c2c_bytes_are_kept_through_opens_and_stamps() {
    let d = crate::testutil::private_tempdir();
    let root = d.path();
    let alice = open(root, "ses_alice", "alice");
    let bob = open(root, "ses_bob", "bob");
    let file = root.join("pending_permissions.json");
    // whole seconds: a value the JSON round trip keeps exactly whatever the parser
    let later = (crate::time::now_secs() + 600.0).floor();
    let mut unusual = c2c_slot("perm-c2c-2", "carol", later);
    unusual["c2c_note"] = json!("ünïcödé ✓");
    let theirs = vec![c2c_slot("perm-c2c-1", "carol", later), unusual, json!(42)];
    let original = serde_json::to_vec_pretty(&theirs).unwrap();
    // a \u escape another writer may use, and whitespace before the array
    let original = [
        b"\n ".as_slice(),
        &String::from_utf8(original)
            .unwrap()
            .replacen("perm-c2c-1", "perm\\u002dc2c-1", 1)
            .into_bytes(),
    ]
    .concat();
    foreign_write(&file, &original);
    let body = &original[3..]; // after "\n [": every byte c2c wrote after the bracket

    alice
        .open_pending_reply("perm-new", "permission", &["bob".into()])
        .unwrap();
    let after_open = std::fs::read(&file).unwrap();
    assert!(after_open.starts_with(b"\n [{\"perm_id\":\"perm-new\""));
    assert!(after_open.ends_with(&[b",".as_slice(), body].concat()));

    // the first valid check stamps our record, and only its bytes change
    assert!(bob.check_pending_reply("perm-new").unwrap().valid);
    let after_stamp = std::fs::read(&file).unwrap();
    assert!(after_stamp.ends_with(&[b",".as_slice(), body].concat()));
    let records: Vec<Value> = serde_json::from_slice(&after_stamp).unwrap();
    assert!(records[0]["resolved_at"].is_f64());
    assert_eq!(&records[1..], &theirs[..]);

    // stamping c2c's escaped, pretty-printed record rewrites that record alone
    assert!(bob.check_pending_reply("perm-c2c-1").unwrap().valid);
    let after = std::fs::read(&file).unwrap();
    let records: Vec<Value> = serde_json::from_slice(&after).unwrap();
    assert!(records[1]["resolved_at"].is_f64());
    assert_eq!(records[1]["perm_id"], "perm-c2c-1");
    assert_eq!(&records[2..], &theirs[1..]);
    let rest = serde_json::to_string_pretty(&theirs[1..]).unwrap();
    let rest_body = rest.trim_start_matches('[').trim_start_matches('\n');
    assert!(
        String::from_utf8(after.clone())
            .unwrap()
            .contains(rest_body.trim_end_matches(']')),
        "c2c's other records are no longer byte for byte"
    );

    // c2c replaces the file: the next open splices into c2c's new bytes
    let replaced = serde_json::to_vec(&vec![c2c_slot("perm-c2c-3", "carol", later)]).unwrap();
    foreign_write(&file, &replaced);
    alice
        .open_pending_reply("perm-new-2", "permission", &["bob".into()])
        .unwrap();
    let after = std::fs::read(&file).unwrap();
    assert!(after.starts_with(b"[{\"perm_id\":\"perm-new-2\""));
    assert!(after.ends_with(&[b",".as_slice(), &replaced[1..]].concat()));
    // and its parse agrees with the file (the check reads the cached snapshot)
    assert!(bob.check_pending_reply("perm-c2c-3").unwrap().valid);
    assert!(!bob.check_pending_reply("perm-c2c-1").unwrap().valid);
}
