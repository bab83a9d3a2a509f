//! Identity through the public `Broker` API (threats.md: Identity): a session id belongs to one
//! live process; a successor may take it over only once that process is gone, and closing an
//! old handle never removes its successor's registration.

use c2c_bridge::{Broker, ErrorCode, OpenOptions};

fn opts(root: &std::path::Path, sid: &str, alias: &str, pid: Option<u32>) -> OpenOptions {
    OpenOptions {
        session_id: sid.into(),
        alias: Some(alias.into()),
        root: Some(root.to_path_buf()),
        directory: Some(root.parent().unwrap().to_path_buf()),
        pid,
        ..Default::default()
    }
}

#[test]
fn a_live_session_id_cannot_be_taken_by_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("broker");
    let mut live = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let first = Broker::open(opts(&root, "ses_x", "alice", Some(live.id()))).unwrap();
    // another process (here: ours) registering the same session id under another alias
    let err = Broker::open(opts(&root, "ses_x", "mallory", None)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::SessionActive);
    // the same process may refresh its registration
    let again = Broker::open(opts(&root, "ses_x", "alice", Some(live.id()))).unwrap();
    assert_eq!(again.alias(), "alice");
    live.kill().unwrap();
    live.wait().unwrap();
    // once the holder is gone, a successor may register the session id …
    let successor = Broker::open(opts(&root, "ses_x", "alice", None)).unwrap();
    // … and closing the old handle leaves the successor registered
    first.close().unwrap();
    let peers = successor.list_peers().unwrap();
    assert_eq!(peers.len(), 1);
    assert_eq!(peers[0].pid, Some(std::process::id()));
}
