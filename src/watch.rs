//! Waking a session when its inbox changes.
//!
//! The watcher watches the broker root directory (not the inbox file: writers replace the
//! file by rename, which a watch on the file itself would lose after the first change) with
//! the `notify` crate (inotify on Linux), and calls back for any event naming the inbox file:
//! a rename onto it (`IN_MOVED_TO`), a create, a write or a removal. No polling.
//!
//! The callback runs on notify's background thread. Dropping the [`InboxWatcher`] stops it.

use std::ffi::OsString;
use std::path::Path;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::error::{Error, Result};

/// A running watch on one inbox file. Stops when dropped.
pub struct InboxWatcher {
    _watcher: RecommendedWatcher,
}

impl std::fmt::Debug for InboxWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InboxWatcher")
    }
}

impl InboxWatcher {
    /// Watch `root` for changes to the file named `inbox_name` and call `on_change` for each.
    ///
    /// # Errors
    /// [`Error::Io`] when the watch cannot be set up (e.g. the inotify watch limit).
    pub fn start(
        root: &Path,
        inbox_name: OsString,
        on_change: Box<dyn Fn() + Send + 'static>,
    ) -> Result<InboxWatcher> {
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let Ok(event) = res else { return };
            if matches!(event.kind, EventKind::Access(_)) {
                return;
            }
            if event
                .paths
                .iter()
                .any(|p| p.file_name() == Some(inbox_name.as_os_str()))
            {
                on_change();
            }
        })
        .map_err(|e| Error::io(root, std::io::Error::other(e.to_string())))?;
        watcher
            .watch(root, RecursiveMode::NonRecursive)
            .map_err(|e| Error::io(root, std::io::Error::other(e.to_string())))?;
        Ok(InboxWatcher { _watcher: watcher })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn sees_atomic_renames_and_ignores_other_files() {
        let d = tempfile::tempdir().unwrap();
        let (tx, rx) = mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let _w = InboxWatcher::start(
            d.path(),
            "s1.inbox.json".into(),
            Box::new(move || {
                let _ = tx.lock().unwrap().send(());
            }),
        )
        .unwrap();
        crate::store::write_array_atomic(&d.path().join("other.inbox.json"), &[]).unwrap();
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
        crate::store::write_array_atomic(&d.path().join("s1.inbox.json"), &[]).unwrap();
        rx.recv_timeout(Duration::from_secs(2))
            .expect("rename seen");
        // a second replace is seen too (the watch is on the directory)
        while rx.try_recv().is_ok() {}
        crate::store::write_array_atomic(&d.path().join("s1.inbox.json"), &[serde_json::json!(1)])
            .unwrap();
        rx.recv_timeout(Duration::from_secs(2))
            .expect("second rename seen");
    }
}
