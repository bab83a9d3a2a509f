//! Exclusive OFD locks on c2c's lock sidecar files.
//!
//! # Every file of the broker root and its lock
//!
//! One table, c2c 0.8's names (observed in `../shared/fixtures/c2c-0.8/`, listed in
//! `docs/c2c-broker-format.md`). "Lock" is the sidecar held, exclusively, for the whole
//! read-modify-write (or append) of the file. [`sidecar_path`] and [`archive_lock_path`]
//! implement it; [`LOCK_TABLE`] is the same table as data, and the tests take each entry's
//! lock with `lockf` in another process (as c2c does) and check that we wait for it.
//!
//! | file | lock | order | written by c2c-bridge |
//! |---|---|---|---|
//! | `registry.json` | `registry.json.lock` | 1 | register, refresh, close, sweep |
//! | `rooms/<room>/members.json` | `rooms/<room>/members.lock` | 1 | join, leave, create, delete |
//! | `rooms/<room>/meta.json` | `rooms/<room>/members.lock` (c2c takes none) | 1 | create, first join |
//! | `rooms/<room>/history.jsonl` | `rooms/<room>/history.lock` | 2 | room post, delete |
//! | `<sid>.inbox.json` | `<sid>.inbox.lock` | 3 | send, room fan-out, ack, drain, gate |
//! | `held/<sid>.json` (ours) | `held/<sid>.json.lock` | 4 | the inbound gate |
//! | `dead-letter.jsonl` | `dead-letter.jsonl.lock` | 5 | sweep, rescue on register |
//! | `archive/<sid>.jsonl` | `archive/<sid>.lock` | 6 | appends (ack, drain, gate) |
//! | `pending_permissions.json` | `pending_permissions.json.lock` | 7 | open / check pending reply |
//! | `c2c-bridge-aliases.json` (ours) | `c2c-bridge-aliases.json.lock` | 8 | alias book |
//! | `broker.log` | `broker.log.lock` | 9 | rotation only; a line is one `O_APPEND` write |
//! | `relay_pins.json` | `relay_pins.json.lock` | 9 | never (c2c's relay) |
//! | `receipts/<sid>.jsonl` (ours) | none: one `O_APPEND` write per line | – | receipts |
//! | `approval-*/<token>.json` | none: written once by rename | – | verdict side channel |
//! | `relay/outbox/*.json`, `relay/peers.json` (ours) | none: written whole by rename | – | the relay |
//! | `relay/connector.lock` (ours) | a [`RoleLock`], held by the running relay connector | – | the relay |
//!
//! # Lock order
//!
//! A thread holding locks takes a new one only of a strictly higher *order* (the column
//! above; [`order_of`] computes it from the lock's name). So: the registry lock before an
//! inbox lock (as c2c does), a room's members lock before its history lock, an inbox lock
//! before the held, dead-letter and archive locks, and never two locks of one order (two
//! inboxes) at once. Debug builds check every acquisition against the locks the thread
//! already holds and panic on a violation, so the whole test suite checks the order; only
//! [`crate::store`] takes locks ([`crate::store::with_locks`], [`crate::store::update_array`],
//! [`crate::store::append_archive`]).
//!
//! # Why OFD locks

//!
//! c2c takes `lockf(F_LOCK)` (a POSIX record lock) on the sidecar. We must conflict with it,
//! which rules out `flock(2)`: on Linux flock and fcntl locks do not see each other. A classic
//! fcntl record lock would conflict with c2c but belongs to the whole *process*: two `Broker`
//! handles in one OpenCode process would not exclude each other, and closing any descriptor of
//! the file would drop the lock. Linux open-file-description locks (`F_OFD_SETLK`) belong to one
//! open file description: they exclude each other inside one process *and* conflict with
//! c2c's `lockf` in other processes. The kernel drops them when the holder dies, so a killed
//! process never leaves a stale lock behind.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg};
use nix::libc;

use crate::error::{Error, Result};

/// The sidecar lock path of the data file named `file` directly inside `root`, or `None` when
/// `file` is not a plain file name: empty (which would name `<root>.lock`, outside the root),
/// `.`/`..` or any leading dot, a `/` or NUL, longer than 255 bytes.
pub fn sidecar_in(root: &Path, file: &str) -> Option<PathBuf> {
    let plain = !file.is_empty()
        && file.len() <= 255
        && !file.starts_with('.')
        && !file.contains(['/', '\0']);
    plain.then(|| sidecar_path(&root.join(file)))
}

/// A path's file name, its parent directory's name, and whether it lies directly in a room
/// directory (`rooms/<room>/<name>`): what the lock table's names are read from.
fn name_parts(path: &Path) -> (String, String, bool) {
    let name_of = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let in_room = name_of(path.parent().and_then(Path::parent)) == "rooms";
    (name_of(Some(path)), name_of(path.parent()), in_room)
}

/// The sidecar lock of a data file, as c2c names it (see the table in the module doc):
/// `<sid>.inbox.json` → `<sid>.inbox.lock`; `rooms/<room>/members.json` and
/// `rooms/<room>/meta.json` → `rooms/<room>/members.lock`; `rooms/<room>/history.jsonl` →
/// `rooms/<room>/history.lock`; any other `X` → `X.lock`. Archives are appended under
/// [`archive_lock_path`] instead.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let (name, _, in_room) = name_parts(path);
    let lock_name = match name.strip_suffix(".inbox.json") {
        Some(stem) => format!("{stem}.inbox.lock"),
        None if in_room && (name == "members.json" || name == "meta.json") => {
            "members.lock".to_string()
        }
        None if in_room && name == "history.jsonl" => "history.lock".to_string(),
        None => format!("{name}.lock"),
    };
    path.with_file_name(lock_name)
}

/// c2c's lock for appends to `archive/<sid>.jsonl`: `archive/<sid>.lock`.
pub fn archive_lock_path(archive: &Path) -> PathBuf {
    archive.with_extension("lock")
}

/// The lock order of a sidecar (the `order` column of the table in the module doc): a thread
/// may take a lock only of a strictly higher order than every lock it holds. Sidecars not in
/// the table (a relay's, a newer tool's) get the highest order, 9: taken last, or alone.
pub fn order_of(lock_path: &Path) -> u8 {
    let (name, parent, in_room) = name_parts(lock_path);
    match name.as_str() {
        "registry.json.lock" => 1,
        "members.lock" if in_room => 1,
        "history.lock" if in_room => 2,
        n if n.ends_with(".inbox.lock") => 3,
        n if parent == "held" && n.ends_with(".json.lock") => 4,
        "dead-letter.jsonl.lock" => 5,
        n if parent == "archive" && n.ends_with(".lock") => 6,
        "pending_permissions.json.lock" => 7,
        "c2c-bridge-aliases.json.lock" => 8,
        _ => 9,
    }
}

#[cfg(debug_assertions)]
thread_local! {
    /// Orders of the locks this thread holds (debug builds: the lock-order check).
    static HELD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Debug builds: panic when taking `lock_path` would break the lock order; then record it.
#[cfg(debug_assertions)]
fn note_acquired(lock_path: &Path) -> u8 {
    let order = order_of(lock_path);
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if let Some(max) = held.iter().max() {
            assert!(
                order > *max,
                "lock order broken: taking {} (order {order}) while holding a lock of order {max}; \
                 see the table in src/store/lock.rs",
                lock_path.display()
            );
        }
        held.push(order);
    });
    order
}

/// One row of the table in the module doc: a data file and its lock, relative to the broker
/// root, with `<sid>` and `<room>` standing for a session id and a room id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockEntry {
    /// The data file.
    pub file: &'static str,
    /// The sidecar held while it is changed (c2c's name).
    pub lock: &'static str,
    /// Its place in the lock order (see [`order_of`]).
    pub order: u8,
}

/// Every file of the root that is changed under a lock, and that lock (c2c 0.8's names).
pub const LOCK_TABLE: &[LockEntry] = &[
    LockEntry {
        file: "registry.json",
        lock: "registry.json.lock",
        order: 1,
    },
    LockEntry {
        file: "<sid>.inbox.json",
        lock: "<sid>.inbox.lock",
        order: 3,
    },
    LockEntry {
        file: "archive/<sid>.jsonl",
        lock: "archive/<sid>.lock",
        order: 6,
    },
    LockEntry {
        file: "pending_permissions.json",
        lock: "pending_permissions.json.lock",
        order: 7,
    },
    LockEntry {
        file: "dead-letter.jsonl",
        lock: "dead-letter.jsonl.lock",
        order: 5,
    },
    LockEntry {
        file: "rooms/<room>/members.json",
        lock: "rooms/<room>/members.lock",
        order: 1,
    },
    LockEntry {
        file: "rooms/<room>/meta.json",
        lock: "rooms/<room>/members.lock",
        order: 1,
    },
    LockEntry {
        file: "rooms/<room>/history.jsonl",
        lock: "rooms/<room>/history.lock",
        order: 2,
    },
    LockEntry {
        file: "broker.log",
        lock: "broker.log.lock",
        order: 9,
    },
    LockEntry {
        file: "relay_pins.json",
        lock: "relay_pins.json.lock",
        order: 9,
    },
    LockEntry {
        file: "c2c-bridge-aliases.json",
        lock: "c2c-bridge-aliases.json.lock",
        order: 8,
    },
    LockEntry {
        file: "held/<sid>.json",
        lock: "held/<sid>.json.lock",
        order: 4,
    },
];

/// An exclusive OFD lock on one sidecar file, released when dropped (the descriptor is
/// closed, which releases an OFD lock — and only this one).
#[must_use = "if unused the lock is released immediately"]
#[derive(Debug)]
pub struct LockGuard {
    _file: File,
    #[cfg(debug_assertions)]
    order: u8,
}

#[cfg(debug_assertions)]
impl Drop for LockGuard {
    fn drop(&mut self) {
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            if let Some(i) = held.iter().rposition(|o| *o == self.order) {
                held.remove(i);
            }
        });
    }
}

impl LockGuard {
    fn granted(file: File, lock_path: &Path) -> LockGuard {
        #[cfg(not(debug_assertions))]
        let _ = lock_path;
        LockGuard {
            _file: file,
            #[cfg(debug_assertions)]
            order: note_acquired(lock_path),
        }
    }
}

/// A lock held for a *role* for as long as a process plays it (the relay connector's
/// `relay/connector.lock`: one connector per broker root on a machine), not around a file
/// write. It is never waited for and guards no data, so it stays out of the lock order: a
/// thread may hold it while it takes data locks. The kernel drops it when its holder dies.
#[derive(Debug)]
pub struct RoleLock {
    _file: File,
}

/// Open (creating it 0600 if needed) the lock file `lock_path`, never through a symlink
/// (`O_NOFOLLOW`: a symlink in its place is refused with `ELOOP`).
fn open_sidecar(lock_path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(lock_path)
        .map_err(|source| Error::io(lock_path, source))
}

impl RoleLock {
    /// Take `lock_path` (created 0600, never through a symlink) if no one holds it;
    /// `Ok(None)` when another holder does.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be opened or locked.
    pub fn try_take(lock_path: &Path) -> Result<Option<RoleLock>> {
        let file = open_sidecar(lock_path)?;
        match set_ofd_lock(&file, false) {
            Ok(()) => Ok(Some(RoleLock { _file: file })),
            Err(Errno::EAGAIN) | Err(Errno::EACCES) => Ok(None),
            Err(errno) => Err(Error::io(lock_path, std::io::Error::from(errno))),
        }
    }
}

impl LockGuard {
    /// Take the exclusive lock on `lock_path`, creating the sidecar (0600, never through a
    /// symlink) if needed. Waits up to `timeout` in the kernel's queue of waiters.
    ///
    /// # Errors
    /// [`Error::LockTimeout`] when another holder keeps the lock past `timeout`;
    /// [`Error::Io`] when the sidecar cannot be opened (a symlink in its place is refused
    /// with `ELOOP`).
    pub fn acquire(lock_path: &Path, timeout: Duration) -> Result<LockGuard> {
        let file = open_sidecar(lock_path)?;
        match set_ofd_lock(&file, false) {
            Ok(()) => return Ok(LockGuard::granted(file, lock_path)),
            Err(Errno::EAGAIN) | Err(Errno::EACCES) | Err(Errno::EINTR) => {}
            Err(errno) => {
                tracing::warn!(path = ?lock_path, %errno, "lock failed");
                return Err(Error::io(lock_path, std::io::Error::from(errno)));
            }
        }
        tracing::debug!(path = ?lock_path, timeout_ms = timeout.as_millis() as u64, "lock held elsewhere: waiting");
        wait_for_lock(file, lock_path, timeout)
    }
}

/// The contended path: a short-lived thread blocks in `F_OFD_SETLKW`, where the kernel queues
/// waiters, and hands the locked file back; we wait for it at most `timeout`.
///
/// Why a thread rather than polling `F_OFD_SETLK` with a backoff: pollers get no turn order,
/// and under a burst of writers (4 processes × 200 sends) some starved for seconds. Why not
/// `F_OFD_SETLKW` on the caller's thread: it has no timeout, and a hung peer must not hang
/// OpenCode. If we give up, the thread still owns the open file; when the kernel finally
/// grants it the lock, the hand-off fails (nobody listens), the file is dropped and the lock
/// is released at once, so a timed-out waiter never keeps a lock. A waiter blocked behind a
/// holder that never lets go stays parked until that holder exits.
fn wait_for_lock(file: File, lock_path: &Path, timeout: Duration) -> Result<LockGuard> {
    use std::sync::mpsc;
    let started = Instant::now();
    let (tx, rx) = mpsc::sync_channel::<nix::Result<File>>(1);
    let spawned = std::thread::Builder::new()
        .name("c2c-lock-wait".into())
        .spawn(move || {
            let result = loop {
                match set_ofd_lock(&file, true) {
                    Err(Errno::EINTR) => continue,
                    other => break other,
                }
            };
            let _ = tx.send(result.map(|()| file));
        });
    if let Err(e) = spawned {
        return Err(Error::io(lock_path, e));
    }
    let waited_ms = || started.elapsed().as_millis() as u64;
    match rx.recv_timeout(timeout) {
        Ok(Ok(file)) => {
            tracing::debug!(path = ?lock_path, waited_ms = waited_ms(), "lock acquired after waiting");
            Ok(LockGuard::granted(file, lock_path))
        }
        Ok(Err(errno)) => {
            tracing::warn!(path = ?lock_path, %errno, waited_ms = waited_ms(), "lock wait failed");
            Err(Error::io(lock_path, std::io::Error::from(errno)))
        }
        Err(_) => {
            let waited_ms = waited_ms();
            tracing::warn!(path = ?lock_path, waited_ms, "lock timeout: another holder kept it");
            Err(Error::LockTimeout {
                path: lock_path.to_path_buf(),
                waited_ms,
            })
        }
    }
}

/// One attempt at an exclusive whole-file OFD lock: `F_OFD_SETLK` (fails at once with
/// `EAGAIN` when held) or, with `wait`, `F_OFD_SETLKW` (blocks until granted).
#[expect(
    unsafe_code,
    reason = "zero-initialising libc::flock; nix has no safe OFD constructor"
)]
fn set_ofd_lock(file: &File, wait: bool) -> nix::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock is a plain C struct; all-zero is a valid value for every field.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = 0;
    fl.l_len = 0; // to the end of the file, like lockf(F_LOCK, 0) from offset 0
    fl.l_pid = 0; // must be 0 for OFD locks
    let arg = if wait {
        FcntlArg::F_OFD_SETLKW(&fl)
    } else {
        FcntlArg::F_OFD_SETLK(&fl)
    };
    fcntl(file.as_raw_fd(), arg).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_of_every_table_entry_is_what_order_of_computes() {
        let root = Path::new("/r");
        for e in LOCK_TABLE {
            let lock = root.join(e.lock.replace("<sid>", "ses_a").replace("<room>", "lobby"));
            assert_eq!(order_of(&lock), e.order, "{}", e.lock);
            if !e.file.starts_with("archive/") {
                let file = root.join(e.file.replace("<sid>", "ses_a").replace("<room>", "lobby"));
                assert_eq!(sidecar_path(&file), lock, "{}", e.file);
            }
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    fn debug_builds_refuse_a_lock_taken_out_of_order() {
        let d = tempfile::tempdir().unwrap();
        let inbox = d.path().join("ses_a.inbox.lock");
        let registry = d.path().join("registry.json.lock");
        let result = std::thread::spawn(move || {
            let _i = LockGuard::acquire(&inbox, Duration::from_secs(1)).unwrap();
            let _r = LockGuard::acquire(&registry, Duration::from_secs(1));
        })
        .join();
        assert!(
            result.is_err(),
            "registry after inbox must panic in debug builds"
        );
        // In order, and again after release: fine.
        let inbox = d.path().join("ses_a.inbox.lock");
        let registry = d.path().join("registry.json.lock");
        let r = LockGuard::acquire(&registry, Duration::from_secs(1)).unwrap();
        let i = LockGuard::acquire(&inbox, Duration::from_secs(1)).unwrap();
        drop((i, r));
        let _i = LockGuard::acquire(&inbox, Duration::from_secs(1)).unwrap();
    }

    #[test]
    fn sidecar_in_takes_plain_names_only() {
        let root = Path::new("/r/broker");
        assert_eq!(
            sidecar_in(root, "registry.json"),
            Some(PathBuf::from("/r/broker/registry.json.lock"))
        );
        assert_eq!(
            sidecar_in(root, "ses_a.inbox.json"),
            Some(PathBuf::from("/r/broker/ses_a.inbox.lock"))
        );
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "../x",
            "/etc/passwd",
            "a\0b",
        ] {
            assert_eq!(sidecar_in(root, bad), None, "{bad:?}");
        }
        assert_eq!(sidecar_in(root, &"x".repeat(256)), None);
    }

    #[test]
    fn sidecar_names_follow_c2c() {
        assert_eq!(
            sidecar_path(Path::new("/r/registry.json")),
            Path::new("/r/registry.json.lock")
        );
        assert_eq!(
            sidecar_path(Path::new("/r/ses_1.inbox.json")),
            Path::new("/r/ses_1.inbox.lock")
        );
    }

    #[test]
    fn two_guards_in_one_process_exclude_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let g = LockGuard::acquire(&p, Duration::from_millis(10)).unwrap();
        let err = LockGuard::acquire(&p, Duration::from_millis(30)).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::LockTimeout);
        drop(g);
        let _g2 = LockGuard::acquire(&p, Duration::from_millis(10)).unwrap();
    }

    #[test]
    fn lock_conflicts_with_lockf_from_another_process() {
        // A child process takes a classic POSIX record lock with lockf(F_LOCK) (what c2c
        // does) and holds it; our OFD lock must then time out, and succeed once it exits.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("registry.json.lock");
        std::fs::write(&p, b"").unwrap();
        let script = format!(
            "import fcntl,os,sys,time\nf=os.open({:?},os.O_RDWR)\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint('locked',flush=True)\ntime.sleep(1.0)\n",
            p.to_str().unwrap()
        );
        let mut child = match std::process::Command::new("python3")
            .arg("-c")
            .arg(&script)
            .stdout(std::process::Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(_) => {
                eprintln!("python3 not available; skipping lockf interop test");
                return;
            }
        };
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        let err = LockGuard::acquire(&p, Duration::from_millis(100)).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::LockTimeout);
        child.wait().unwrap();
        let _g = LockGuard::acquire(&p, Duration::from_millis(100)).unwrap();
    }

    #[test]
    fn a_timed_out_waiter_does_not_keep_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let g = LockGuard::acquire(&p, Duration::from_millis(10)).unwrap();
        // this waiter's thread stays queued after the timeout …
        assert!(LockGuard::acquire(&p, Duration::from_millis(20)).is_err());
        drop(g);
        // … and lets go as soon as it is granted, so the next caller gets the lock
        let _g = LockGuard::acquire(&p, Duration::from_millis(500)).unwrap();
    }

    #[test]
    fn waiters_are_served_without_starving() {
        let dir = tempfile::tempdir().unwrap();
        let p = std::sync::Arc::new(dir.path().join("x.lock"));
        let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let p = p.clone();
                let counter = counter.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let _g = LockGuard::acquire(&p, Duration::from_secs(10)).unwrap();
                        let v = counter.load(std::sync::atomic::Ordering::SeqCst);
                        std::thread::yield_now();
                        counter.store(v + 1, std::sync::atomic::Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // mutual exclusion: no lost update among 400 read-modify-writes
        assert_eq!(counter.load(std::sync::atomic::Ordering::SeqCst), 400);
    }

    #[test]
    fn symlinked_sidecar_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, b"").unwrap();
        let p = dir.path().join("x.lock");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let err = LockGuard::acquire(&p, Duration::from_millis(10)).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::RootInsecure);
    }
}
