//! Diagnostics (`tracing`, `C2C_BRIDGE_LOG`) through the public API, in a process of its own
//! (the subscriber is process-wide): off, a lock timeout writes nothing; on, it writes one
//! `lock timeout` line naming the lock; a filter for another module hides it again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use c2c_bridge::diagnostics;
use c2c_bridge::store::LockGuard;
use c2c_bridge::ErrorCode;

fn timeout_once(p: &std::path::Path) {
    let _held = LockGuard::acquire(p, Duration::from_millis(50)).unwrap();
    let err = LockGuard::acquire(p, Duration::from_millis(30)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::LockTimeout);
}

#[test]
fn a_lock_timeout_is_traced_only_when_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("registry.json.lock");
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&lines);
    diagnostics::set_sink(Some(Arc::new(move |l: &str| {
        sink.lock().unwrap().push(l.to_string())
    })));
    let taken = || std::mem::take(&mut *lines.lock().unwrap());

    // Off (nothing installed): nothing.
    assert!(!diagnostics::init("").unwrap());
    timeout_once(&p);
    assert_eq!(taken(), Vec::<String>::new());

    // On for the store: the wait and the timeout, naming the lock file.
    assert!(diagnostics::init("c2c_bridge::store=debug").unwrap());
    timeout_once(&p);
    let got = taken();
    let timeout: Vec<_> = got.iter().filter(|l| l.contains("lock timeout")).collect();
    assert_eq!(timeout.len(), 1, "{got:#?}");
    assert!(timeout[0].contains("WARN"), "{}", timeout[0]);
    assert!(
        timeout[0].contains("c2c_bridge::store::lock"),
        "{}",
        timeout[0]
    );
    assert!(timeout[0].contains("registry.json.lock"), "{}", timeout[0]);
    assert!(
        got.iter().any(|l| l.contains("waiting")),
        "the wait is traced too: {got:#?}"
    );
    assert!(got.iter().all(|l| !l.ends_with('\n')));

    // Another module only, then off again: nothing from the lock.
    assert!(diagnostics::init("c2c_bridge::policy=trace").unwrap());
    timeout_once(&p);
    assert_eq!(taken(), Vec::<String>::new());
    assert!(!diagnostics::init("off").unwrap());
    timeout_once(&p);
    assert_eq!(taken(), Vec::<String>::new());

    // A bad filter is refused and changes nothing.
    assert_eq!(
        diagnostics::init("c2c_bridge=[").unwrap_err().code(),
        ErrorCode::InvalidOption
    );
}
