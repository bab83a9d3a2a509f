//! Exclusive OFD locks on `X.lock` sidecar files.
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
//!
//! Lock order (as in c2c): the registry lock before an inbox lock; the pending-permissions
//! lock is taken alone.

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

/// The sidecar lock path of a data file: `X` → `X.lock`, and c2c's special case
/// `<sid>.inbox.json` → `<sid>.inbox.lock`.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lock_name = match name.strip_suffix(".inbox.json") {
        Some(stem) => format!("{stem}.inbox.lock"),
        None => format!("{name}.lock"),
    };
    path.with_file_name(lock_name)
}

/// An exclusive OFD lock on one sidecar file, released when dropped (the descriptor is
/// closed, which releases an OFD lock — and only this one).
#[must_use = "if unused the lock is released immediately"]
#[derive(Debug)]
pub struct LockGuard {
    _file: File,
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
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(lock_path)
            .map_err(|source| Error::io(lock_path, source))?;
        match set_ofd_lock(&file, false) {
            Ok(()) => return Ok(LockGuard { _file: file }),
            Err(Errno::EAGAIN) | Err(Errno::EACCES) | Err(Errno::EINTR) => {}
            Err(errno) => return Err(Error::io(lock_path, std::io::Error::from(errno))),
        }
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
    match rx.recv_timeout(timeout) {
        Ok(Ok(file)) => Ok(LockGuard { _file: file }),
        Ok(Err(errno)) => Err(Error::io(lock_path, std::io::Error::from(errno))),
        Err(_) => Err(Error::LockTimeout {
            path: lock_path.to_path_buf(),
            waited_ms: started.elapsed().as_millis() as u64,
        }),
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
