//! Waking a session when its inbox changes.
//!
//! One watcher per broker root per process: the first subscription for a root directory
//! starts one `notify` watcher on it (inotify on Linux: one inotify instance and one
//! background thread), later subscriptions for the same root share it, and each event is fanned
//! out to the subscriptions whose inbox file it names. Before, every handle had its own
//! instance and thread: 126 sessions exhausted the per-user inotify limit (128) and other
//! programs then got `EMFILE`. The watcher stops when the root's last subscription goes.
//!
//! The watch is on the root directory, not on the inbox file: writers replace the file by
//! rename, which a watch on the file itself would lose after the first change. Events: a
//! rename onto the file (`IN_MOVED_TO`), a create, a write or a removal. No polling.
//!
//! Callbacks run on the root's watcher thread, outside the table's lock.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::error::{Error, Result};

type Callback = Arc<SyncFn>;
/// inbox file name → (subscription id, callback)
type Subscribers = Arc<Mutex<HashMap<OsString, Vec<(u64, Callback)>>>>;

struct RootWatch {
    _watcher: RecommendedWatcher,
    subscribers: Subscribers,
    /// Set when the root directory itself was removed: the watch is dead (inotify drops it),
    /// and the next subscription for this path starts a new watcher.
    dead: Arc<AtomicBool>,
}

fn table() -> &'static Mutex<HashMap<PathBuf, RootWatch>> {
    static TABLE: OnceLock<Mutex<HashMap<PathBuf, RootWatch>>> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Whether the watch on `root` is dead because the directory was removed (nothing more will be
/// seen until a new subscription starts a new watcher). `false` when `root` is not watched.
pub fn is_dead(root: &Path) -> bool {
    table()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(root)
        .is_some_and(|rw| rw.dead.load(Ordering::Acquire))
}

/// One subscription to changes of one inbox file. Dropping it (or [`InboxWatcher::stop`])
/// ends it; [`InboxWatcher::detach`] leaves it running until the process exits.
pub struct InboxWatcher {
    root: PathBuf,
    inbox: OsString,
    id: u64,
    active: bool,
}

impl std::fmt::Debug for InboxWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxWatcher")
            .field("root", &self.root)
            .field("inbox", &self.inbox)
            .finish()
    }
}

impl InboxWatcher {
    /// Call `on_change` for each change of the file named `inbox_name` in `root`, through
    /// the process's one watcher for `root` (started here when it is the first).
    ///
    /// # Errors
    /// [`Error::Io`] when a new watcher cannot be set up (e.g. the inotify instance limit).
    pub fn start(
        root: &Path,
        inbox_name: OsString,
        on_change: Box<dyn Fn() + Send + 'static>,
    ) -> Result<InboxWatcher> {
        let on_change: Callback = Arc::new(SyncFn(Mutex::new(on_change)));
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let mut t = table().lock().unwrap_or_else(|p| p.into_inner());
        if t.get(root)
            .is_some_and(|rw| rw.dead.load(Ordering::Acquire))
        {
            // The root was deleted (and maybe recreated): its old watch sees nothing more.
            t.remove(root);
        }
        if !t.contains_key(root) {
            let rw = start_root(root)?;
            t.insert(root.to_path_buf(), rw);
        }
        let rw = t.get(root).expect("inserted above");
        rw.subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(inbox_name.clone())
            .or_default()
            .push((id, on_change));
        Ok(InboxWatcher {
            root: root.to_path_buf(),
            inbox: inbox_name,
            id,
            active: true,
        })
    }

    /// End the subscription; the root's watcher stops with its last subscription.
    pub fn stop(mut self) {
        self.unsubscribe();
    }

    /// Leave the subscription running until the process exits (no handle can end it then).
    /// For a handle dropped (garbage-collected) while still open: its watch lives on with its
    /// registration.
    pub fn detach(mut self) {
        self.active = false;
    }

    fn unsubscribe(&mut self) {
        if !std::mem::replace(&mut self.active, false) {
            return;
        }
        let mut t = table().lock().unwrap_or_else(|p| p.into_inner());
        let Some(rw) = t.get(&self.root) else { return };
        let empty = {
            let mut subs = rw.subscribers.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(list) = subs.get_mut(&self.inbox) {
                list.retain(|(id, _)| *id != self.id);
                if list.is_empty() {
                    subs.remove(&self.inbox);
                }
            }
            subs.is_empty()
        };
        if empty {
            t.remove(&self.root);
        }
    }
}

impl Drop for InboxWatcher {
    fn drop(&mut self) {
        self.unsubscribe();
    }
}

/// `Box<dyn Fn() + Send>` made `Sync` (the callbacks of `Broker::watch` are only `Send`).
struct SyncFn(Mutex<Box<dyn Fn() + Send + 'static>>);

impl SyncFn {
    fn call(&self) {
        (self.0.lock().unwrap_or_else(|p| p.into_inner()))();
    }
}

/// A watcher that could not be set up (e.g. the inotify instance limit), as an I/O error.
fn watch_failed(root: &Path, e: notify::Error) -> Error {
    tracing::warn!(root = ?root, error = %e, "inbox watcher could not start");
    Error::io(root, std::io::Error::other(e.to_string()))
}

fn start_root(root: &Path) -> Result<RootWatch> {
    let subscribers: Subscribers = Arc::default();
    let subs = Arc::clone(&subscribers);
    let dead = Arc::new(AtomicBool::new(false));
    let dead_flag = Arc::clone(&dead);
    let root_path = root.to_path_buf();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let event = match res {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(root = ?root_path, error = %e, "inbox watcher error");
                return;
            }
        };
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        if matches!(event.kind, EventKind::Remove(_)) && event.paths.contains(&root_path) {
            tracing::warn!(root = ?root_path, "broker root removed: its watch sees nothing more");
            dead_flag.store(true, Ordering::Release);
        }
        let mut due: Vec<Callback> = Vec::new();
        {
            let subs = subs.lock().unwrap_or_else(|p| p.into_inner());
            for p in &event.paths {
                if let Some(list) = p.file_name().and_then(|n| subs.get(n)) {
                    due.extend(list.iter().map(|(_, cb)| Arc::clone(cb)));
                }
            }
        }
        for cb in due {
            cb.call();
        }
    })
    .map_err(|e| watch_failed(root, e))?;
    watcher
        .watch(root, RecursiveMode::NonRecursive)
        .map_err(|e| watch_failed(root, e))?;
    tracing::debug!(root = ?root, "inbox watcher started");
    Ok(RootWatch {
        _watcher: watcher,
        subscribers,
        dead,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn counter(tx: mpsc::Sender<&'static str>, tag: &'static str) -> Box<dyn Fn() + Send> {
        let tx = Mutex::new(tx);
        Box::new(move || {
            let _ = tx.lock().unwrap().send(tag);
        })
    }

    #[test]
    fn sees_atomic_renames_and_ignores_other_files() {
        let d = tempfile::tempdir().unwrap();
        let (tx, rx) = mpsc::channel();
        let _w = InboxWatcher::start(d.path(), "s1.inbox.json".into(), counter(tx, "s1")).unwrap();
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

    #[test]
    fn one_watcher_per_root_fanned_out_and_stopped_with_the_last_subscription() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().to_path_buf();
        let watched_roots = || {
            table()
                .lock()
                .unwrap()
                .get(&root)
                .map(|r| r.subscribers.lock().unwrap().len())
        };
        let (tx, rx) = mpsc::channel();
        let w1 =
            InboxWatcher::start(&root, "a.inbox.json".into(), counter(tx.clone(), "a1")).unwrap();
        let w2 =
            InboxWatcher::start(&root, "a.inbox.json".into(), counter(tx.clone(), "a2")).unwrap();
        let w3 = InboxWatcher::start(&root, "b.inbox.json".into(), counter(tx, "b")).unwrap();
        assert_eq!(watched_roots(), Some(2), "one root entry, two inbox names");
        crate::store::write_array_atomic(&root.join("a.inbox.json"), &[]).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        while seen.len() < 2 {
            seen.insert(rx.recv_timeout(Duration::from_secs(2)).expect("fan-out"));
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec!["a1", "a2"]);
        w1.stop();
        drop(w2);
        assert_eq!(watched_roots(), Some(1));
        // a detached subscription keeps the root watched
        w3.detach();
        assert_eq!(watched_roots(), Some(1));
        while rx.try_recv().is_ok() {}
        crate::store::write_array_atomic(&root.join("b.inbox.json"), &[]).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(2)).unwrap(), "b");
    }

    #[test]
    fn a_deleted_root_is_seen_dead_and_a_new_subscription_watches_the_new_directory() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("broker");
        std::fs::create_dir(&root).unwrap();
        let (tx, rx) = mpsc::channel();
        let _old =
            InboxWatcher::start(&root, "a.inbox.json".into(), counter(tx.clone(), "old")).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        for _ in 0..200 {
            if is_dead(&root) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(is_dead(&root), "removal of the root seen");
        std::fs::create_dir(&root).unwrap();
        let _new = InboxWatcher::start(&root, "a.inbox.json".into(), counter(tx, "new")).unwrap();
        assert!(!is_dead(&root));
        while rx.try_recv().is_ok() {}
        crate::store::write_array_atomic(&root.join("a.inbox.json"), &[]).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(2)).unwrap(), "new");
    }

    #[test]
    fn the_root_watcher_stops_with_its_last_subscription() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().to_path_buf();
        let (tx, _rx) = mpsc::channel();
        let w = InboxWatcher::start(&root, "a.inbox.json".into(), counter(tx, "a")).unwrap();
        assert!(table().lock().unwrap().contains_key(&root));
        w.stop();
        assert!(!table().lock().unwrap().contains_key(&root));
    }
}
