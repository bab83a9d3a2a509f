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
    /// symlink) if needed. Waits up to `timeout`, polling with a short backoff.
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
        let started = Instant::now();
        let mut backoff = Duration::from_micros(20);
        loop {
            match set_ofd_lock(&file) {
                Ok(()) => return Ok(LockGuard { _file: file }),
                Err(Errno::EAGAIN) | Err(Errno::EACCES) | Err(Errno::EINTR) => {
                    if started.elapsed() >= timeout {
                        return Err(Error::LockTimeout {
                            path: lock_path.to_path_buf(),
                            waited_ms: started.elapsed().as_millis() as u64,
                        });
                    }
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_millis(5));
                }
                Err(errno) => {
                    return Err(Error::io(lock_path, std::io::Error::from(errno)));
                }
            }
        }
    }
}

/// One non-blocking attempt at an exclusive whole-file OFD lock.
///
/// Why not `F_OFD_SETLKW`: it blocks without a bound, and a hung peer would hang OpenCode.
#[expect(
    unsafe_code,
    reason = "zero-initialising libc::flock; nix has no safe OFD constructor"
)]
fn set_ofd_lock(file: &File) -> nix::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock is a plain C struct; all-zero is a valid value for every field.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = 0;
    fl.l_len = 0; // to the end of the file, like lockf(F_LOCK, 0) from offset 0
    fl.l_pid = 0; // must be 0 for OFD locks
    fcntl(file.as_raw_fd(), FcntlArg::F_OFD_SETLK(&fl)).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn symlinked_sidecar_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, b"").unwrap();
        let p = dir.path().join("x.lock");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let err = LockGuard::acquire(&p, Duration::from_millis(10)).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::Io);
    }
}
