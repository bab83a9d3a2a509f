//! Red team 3 (docs/redteam-2026-12.md): hostile-environment attacks on the inbound gate's
//! lock-free first pass and on the inbox it reads, through the public `Broker` API on a fresh
//! temporary broker root per test.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use c2c_bridge::broker::SendOptions;
use c2c_bridge::{Broker, OpenOptions};

struct Root {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn root() -> Root {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broker");
    Root { _dir: dir, path }
}

fn open(r: &Root, sid: &str, alias: &str) -> Broker {
    let dir = r.path.parent().unwrap().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    Broker::open(OpenOptions {
        session_id: sid.into(),
        alias: Some(alias.into()),
        root: Some(r.path.clone()),
        directory: Some(dir),
        inbound: Some("accept".into()),
        lock_timeout: Some(Duration::from_millis(500)),
        env: c2c_bridge::Environment::empty(),
        ..Default::default()
    })
    .unwrap()
}

/// Run `f` on a thread; `None` when it has not returned within `limit` (it hangs). The limit
/// only tells a hang (forever) from an answer; it is no speed assertion.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).ok()
}

fn mkfifo(path: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success(), "mkfifo {path:?}");
}

/// A FIFO put in the inbox's place (by a hostile process sharing the root) must not block
/// the gate, which runs on OpenCode's main thread: opening a FIFO for reading without
/// `O_NONBLOCK` waits for a writer forever. The gate must answer with an error (an unreadable
/// inbox is never empty, never a hang).
#[test]
fn a_fifo_in_the_inbox_place_is_an_error_not_a_hang() {
    let r = root();
    let a = open(&r, "ses_a", "alice");
    let b = open(&r, "ses_b", "bob");
    a.send("bob", "one", &SendOptions::default()).unwrap();
    let inbox = r.path.join("ses_b.inbox.json");
    std::fs::remove_file(&inbox).unwrap();
    mkfifo(&inbox);
    let got = within(Duration::from_secs(20), move || {
        b.gate_inbox().map(|g| g.deliver.len())
    });
    // Unblock a hung reader so the test process can exit.
    if got.is_none() {
        let _ = std::fs::OpenOptions::new().write(true).open(&inbox);
    }
    let got = got.expect("gate_inbox hung on a FIFO in the inbox's place");
    assert!(got.is_err(), "a FIFO inbox read as {got:?}");
}

/// A directory in the inbox's place is an error, never an empty inbox.
#[test]
fn a_directory_in_the_inbox_place_is_an_error() {
    let r = root();
    let a = open(&r, "ses_a", "alice");
    let b = open(&r, "ses_b", "bob");
    a.send("bob", "one", &SendOptions::default()).unwrap();
    let inbox = r.path.join("ses_b.inbox.json");
    std::fs::remove_file(&inbox).unwrap();
    std::fs::create_dir(&inbox).unwrap();
    assert!(b.gate_inbox().is_err());
}
