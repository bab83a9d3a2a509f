//! Every entry of the lock table (`store::lock::LOCK_TABLE`) against c2c's own locking: a
//! `lockf` holder in another process (python3 `fcntl.lockf`, as c2c's OCaml `Unix.lockf`)
//! holds the sidecar c2c names, and c2c-bridge must wait for it — first by the lock path the
//! code derives for the file, then through the real operations that change the file.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use c2c_bridge::store::lock::{archive_lock_path, sidecar_path, LockEntry, LOCK_TABLE};
use c2c_bridge::store::LockGuard;
use c2c_bridge::{Broker, ErrorCode, OpenOptions};
use common::{copy_fixture, json, make_alive, LiveProcess, LockfHolder};

const SHORT: Duration = Duration::from_millis(200);

fn concrete(pattern: &str) -> String {
    pattern
        .replace("<sid>", "ses_alice")
        .replace("<room>", "lobby")
}

/// The lock the code takes for `file`.
fn lock_for(file: &Path) -> PathBuf {
    if file.parent().and_then(Path::file_name) == Some("archive".as_ref()) {
        archive_lock_path(file)
    } else {
        sidecar_path(file)
    }
}

fn check_entry(e: &LockEntry) {
    let (_d, root) = copy_fixture();
    std::fs::create_dir_all(root.join("held")).unwrap();
    let file = root.join(concrete(e.file));
    let c2c_lock = root.join(concrete(e.lock));
    assert_eq!(
        lock_for(&file),
        c2c_lock,
        "{} must be locked on {}",
        e.file,
        e.lock
    );
    let Some(holder) = LockfHolder::hold(std::slice::from_ref(&c2c_lock)) else {
        eprintln!("python3 not available; skipping");
        return;
    };
    let err = LockGuard::acquire(&lock_for(&file), SHORT).unwrap_err();
    assert_eq!(err.code(), ErrorCode::LockTimeout, "{}", e.file);
    holder.release();
    drop(LockGuard::acquire(&lock_for(&file), SHORT).unwrap());
}

macro_rules! entry_tests {
    ($($name:ident => $file:literal),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let e = LOCK_TABLE.iter().find(|e| e.file == $file).expect("entry in the table");
                check_entry(e);
            }
        )*
        #[test]
        fn every_table_entry_has_a_test() {
            let tested = [$($file),*];
            let mut files: Vec<&str> = LOCK_TABLE.iter().map(|e| e.file).collect();
            files.sort();
            let mut tested = tested.to_vec();
            tested.sort();
            assert_eq!(files, tested);
        }
    };
}

entry_tests! {
    lock_registry => "registry.json",
    lock_inbox => "<sid>.inbox.json",
    lock_archive => "archive/<sid>.jsonl",
    lock_pending => "pending_permissions.json",
    lock_dead_letter => "dead-letter.jsonl",
    lock_room_members => "rooms/<room>/members.json",
    lock_room_meta => "rooms/<room>/meta.json",
    lock_room_history => "rooms/<room>/history.jsonl",
    lock_broker_log => "broker.log",
    lock_relay_pins => "relay_pins.json",
    lock_held => "held/<sid>.json",
    lock_alias_book => "c2c-bridge-aliases.json",
}

/// The fixture with alice as our own handle (short lock timeout) and bob alive.
fn alice_and_bob() -> (tempfile::TempDir, PathBuf, LiveProcess, Broker, Broker) {
    let (d, root) = copy_fixture();
    let bob_proc = LiveProcess::start();
    make_alive(&root, "ses_bob", bob_proc.pid());
    let alice = Broker::open(OpenOptions {
        session_id: "ses_alice".into(),
        alias: Some("alice".into()),
        root: Some(root.clone()),
        directory: Some(d.path().to_path_buf()),
        lock_timeout: Some(SHORT),
        ..Default::default()
    })
    .unwrap();
    let bob = Broker::open(OpenOptions {
        session_id: "ses_bob".into(),
        root: Some(root.clone()),
        directory: Some(d.path().to_path_buf()),
        attach: true,
        lock_timeout: Some(SHORT),
        ..Default::default()
    })
    .unwrap();
    (d, root, bob_proc, alice, bob)
}

#[test]
fn room_join_waits_for_c2cs_members_lock() {
    let (_d, root, _p, _alice, bob) = alice_and_bob();
    let members = root.join("rooms/secret/members.json");
    let before = std::fs::read(&members).unwrap();
    let Some(holder) = LockfHolder::hold(&[root.join("rooms/secret/members.lock")]) else {
        return;
    };
    assert_eq!(
        bob.join_room("secret").unwrap_err().code(),
        ErrorCode::LockTimeout
    );
    assert_eq!(
        std::fs::read(&members).unwrap(),
        before,
        "nothing written without the lock"
    );
    holder.release();
    bob.join_room("secret").unwrap();
    assert_eq!(json(&members).as_array().unwrap().len(), 2);
}

#[test]
fn room_creation_writes_meta_under_the_members_lock() {
    let (_d, root, _p, alice, _bob) = alice_and_bob();
    // c2c's lock for a room that does not exist yet: the holder creates the directory
    std::fs::create_dir(root.join("rooms/later")).unwrap();
    let Some(holder) = LockfHolder::hold(&[root.join("rooms/later/members.lock")]) else {
        return;
    };
    assert_eq!(
        alice.join_room("later").unwrap_err().code(),
        ErrorCode::LockTimeout
    );
    assert!(!root.join("rooms/later/meta.json").exists());
    holder.release();
    alice.join_room("later").unwrap();
    assert_eq!(
        json(&root.join("rooms/later/meta.json"))["created_by"],
        "alice"
    );
}

#[test]
fn room_post_waits_for_c2cs_history_lock() {
    let (_d, root, _p, alice, _bob) = alice_and_bob();
    let history = root.join("rooms/lobby/history.jsonl");
    let before = std::fs::read(&history).unwrap();
    let Some(holder) = LockfHolder::hold(&[root.join("rooms/lobby/history.lock")]) else {
        return;
    };
    let err = alice
        .send_room("lobby", "hi", &Default::default())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::LockTimeout);
    assert_eq!(std::fs::read(&history).unwrap(), before);
    holder.release();
    alice.send_room("lobby", "hi", &Default::default()).unwrap();
    assert!(std::fs::read_to_string(&history).unwrap().lines().count() == 2);
}

#[test]
fn acknowledging_waits_for_c2cs_archive_lock_and_loses_nothing() {
    let (_d, root, _p, alice, _bob) = alice_and_bob();
    let inbox = root.join("ses_alice.inbox.json");
    let before = std::fs::read(&inbox).unwrap();
    let id = "f90ebc40-969f-444b-b9e0-f83e20af587e".to_string();
    let Some(holder) = LockfHolder::hold(&[root.join("archive/ses_alice.lock")]) else {
        return;
    };
    assert_eq!(
        alice.ack(std::slice::from_ref(&id)).unwrap_err().code(),
        ErrorCode::LockTimeout
    );
    assert_eq!(
        std::fs::read(&inbox).unwrap(),
        before,
        "the inbox keeps the message"
    );
    assert!(!root.join("archive/ses_alice.jsonl").exists());
    holder.release();
    assert_eq!(alice.ack(&[id]).unwrap().acked.len(), 1);
    let line = std::fs::read_to_string(root.join("archive/ses_alice.jsonl")).unwrap();
    assert!(line.contains("\"drained_by\":\"c2c-bridge:ack\""), "{line}");
}

#[test]
fn sending_waits_for_c2cs_inbox_lock_and_registering_for_the_registry_lock() {
    let (d, root, _p, alice, _bob) = alice_and_bob();
    let Some(holder) = LockfHolder::hold(&[root.join("ses_bob.inbox.lock")]) else {
        return;
    };
    let err = alice.send("bob", "hello", &Default::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::LockTimeout);
    holder.release();
    alice.send("bob", "hello", &Default::default()).unwrap();

    let holder = LockfHolder::hold(&[root.join("registry.json.lock")]).unwrap();
    let err = Broker::open(OpenOptions {
        session_id: "ses_dave".into(),
        alias: Some("dave".into()),
        root: Some(root.clone()),
        directory: Some(d.path().to_path_buf()),
        lock_timeout: Some(SHORT),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::LockTimeout);
    holder.release();
}
