//! Red team 3 (docs/redteam-2026-12.md): the audit log in a hostile broker root. A line is
//! best effort, but writing it must never hang the permission gate (OpenCode's main thread)
//! and never go anywhere but a regular file at the log's name.

use super::*;
use std::sync::mpsc;
use std::time::Duration;

fn mkfifo(path: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success(), "mkfifo {path:?}");
}

/// Run `f` on a thread; `None` when it has not returned within `limit` (a hang). The limit
/// tells a hang (forever) from an answer, it is no speed assertion.
fn within(limit: Duration, f: impl FnOnce() + Send + 'static) -> bool {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    rx.recv_timeout(limit).is_ok()
}

/// A FIFO in the log's place, nobody reading: `open(O_WRONLY)` would wait for a reader
/// forever. Both the kept-open log (after a first line) and the per-line log must return.
#[test]
fn a_fifo_in_the_log_place_never_hangs_a_line() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("broker.log");
    let kept = AuditLog::new(path.clone()).keep_open();
    kept.event("before", fields! {});
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    let per_line = AuditLog::new(path.clone());
    let ok = within(Duration::from_secs(20), move || {
        kept.event("kept", fields! {});
        per_line.event("per_line", fields! {});
    });
    if !ok {
        // Free the hung writer so the test binary can exit.
        let _ = std::fs::File::open(&path);
    }
    assert!(ok, "an audit line hung on a FIFO in the log's place");
}

/// A FIFO in the log's place with a reader that never reads: nothing is written into it (a
/// full pipe would block a blocking write), and the line returns.
#[test]
fn a_fifo_with_a_silent_reader_gets_no_line() {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("broker.log");
    mkfifo(&path);
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .unwrap();
    let log = AuditLog::new(path.clone()).keep_open();
    let ok = within(Duration::from_secs(20), move || {
        for _ in 0..2000 {
            log.event("x", fields! {"pad" => "y".repeat(100)});
        }
    });
    let mut got = Vec::new();
    let _ = reader.read_to_end(&mut got);
    assert!(ok, "an audit line hung on a full FIFO");
    assert!(got.is_empty(), "{} bytes went into a FIFO", got.len());
}
