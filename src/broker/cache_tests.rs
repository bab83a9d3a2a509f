//! The per-handle registry cache seen through the broker (registrations and removals by
//! other writers and by this handle are seen on the next call), and inbox creation at open.

use std::path::Path;

use crate::broker::SendOptions;
use crate::{Broker, ErrorCode, OpenOptions};

use crate::testutil::private_tempdir as root;

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

fn peers(b: &Broker) -> Vec<String> {
    let mut v: Vec<String> = b
        .list_peers()
        .unwrap()
        .into_iter()
        .map(|p| p.alias)
        .collect();
    v.sort();
    v
}

#[test]
fn other_writers_and_own_writes_are_seen_on_the_next_call() {
    let d = root();
    let a = open(d.path(), "ses_a", "alice");
    let b = open(d.path(), "ses_b", "bob");
    assert_eq!(peers(&a), ["alice", "bob"]);
    a.send("bob", "hi", &SendOptions::default()).unwrap();
    // Another handle registers: seen by the next send and listing.
    let c = open(d.path(), "ses_c", "carol");
    a.send("carol", "hi", &SendOptions::default()).unwrap();
    assert_eq!(peers(&a), ["alice", "bob", "carol"]);
    // Another handle unregisters.
    c.close().unwrap();
    assert_eq!(
        a.send("carol", "hi", &SendOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::UnknownRecipient
    );
    assert_eq!(peers(&b), ["alice", "bob"]);
    // Our own registration removed by someone else: every identity check sees it.
    std::fs::write(d.path().join("registry.json"), b"[]").unwrap();
    assert_eq!(
        a.send("bob", "hi", &SendOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::NotRegistered
    );
    // Our own write (close) is seen by our own next call.
    let e = open(d.path(), "ses_e", "erin");
    assert_eq!(peers(&e), ["erin"]);
    e.close().unwrap();
    assert_eq!(peers(&a), Vec::<String>::new());
}

#[test]
fn liveness_is_fresh_on_every_call() {
    let d = root();
    let a = open(d.path(), "ses_a", "alice");
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let _b = Broker::open(OpenOptions {
        session_id: "ses_b".into(),
        alias: Some("bob".into()),
        root: Some(d.path().to_path_buf()),
        directory: Some(d.path().to_path_buf()),
        pid: Some(child.id()),
        env: crate::config::Environment::empty(),
        ..Default::default()
    })
    .unwrap();
    let alive = |b: &Broker| {
        b.list_peers()
            .unwrap()
            .into_iter()
            .find(|p| p.alias == "bob")
            .unwrap()
            .alive
    };
    assert!(alive(&a));
    a.send("bob", "hi", &SendOptions::default()).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    // The registry did not change; the process did.
    assert!(!alive(&a));
    assert_eq!(
        a.send("bob", "hi", &SendOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::RecipientDead
    );
}

#[test]
fn open_creates_a_missing_inbox_and_leaves_an_existing_one_alone() {
    use std::os::unix::fs::MetadataExt;
    let d = root();
    let a = open(d.path(), "ses_a", "alice");
    let inbox = d.path().join("ses_a.inbox.json");
    assert_eq!(std::fs::read(&inbox).unwrap(), b"[]");
    assert_eq!(std::fs::metadata(&inbox).unwrap().mode() & 0o777, 0o600);
    let b = open(d.path(), "ses_b", "bob");
    b.send("alice", "hi", &SendOptions::default()).unwrap();
    a.close().unwrap();
    let before = std::fs::read(&inbox).unwrap();
    let ino = std::fs::metadata(&inbox).unwrap().ino();
    let _a = open(d.path(), "ses_a", "alice");
    assert_eq!(std::fs::read(&inbox).unwrap(), before, "mail kept");
    assert_eq!(
        std::fs::metadata(&inbox).unwrap().ino(),
        ino,
        "not rewritten"
    );
    // No temp file is left in the root.
    let tmp: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
        .collect();
    assert!(tmp.is_empty());
    // An unreadable existing inbox still fails the open, as before.
    std::fs::write(d.path().join("ses_c.inbox.json"), b"[{").unwrap();
    let err = Broker::open(OpenOptions {
        session_id: "ses_c".into(),
        alias: Some("carol".into()),
        root: Some(d.path().to_path_buf()),
        directory: Some(d.path().to_path_buf()),
        env: crate::config::Environment::empty(),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreCorrupt);
}
