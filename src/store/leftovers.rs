//! Temp files left behind by writers killed between creating `X.tmp.<pid>` and renaming it
//! over `X` (step 1–3 of [`super::file`]'s atomic replace). Such a file is a 0600 copy of
//! `X` — for an inbox, of message text — that nothing else ever removes (c2c leaves its own
//! too). [`remove_dead_writers_temp_files`] removes them, and only them.
//!
//! A temp file is a leftover when all of these hold:
//! - its name is `<X>.tmp.<pid>` with a decimal pid, and it is a regular file owned by us
//!   (`fstatat` without following: a symlink, a directory or another user's file is never
//!   touched; the directory is opened `O_NOFOLLOW` and everything goes through it);
//! - no process `<pid>` exists (`/proc/<pid>` has no start time: the writer is gone; a reused
//!   pid keeps the file until that process ends too, the safe side);
//! - it was last modified at least `min_age` ago (a write takes milliseconds);
//! - `X`'s sidecar lock is free, taken while the file is removed: writers hold it from the
//!   temp file's creation to the rename, so no writer is between the two.
//!
//! Removing a leftover never changes `X`: its content was never renamed into place, so what
//! it holds was not stored (the writer's call had not returned).

use std::path::Path;
use std::time::{Duration, SystemTime};

#[cfg(test)]
use super::lock::sidecar_path;
use super::lock::{sidecar_in, LockGuard};
use crate::error::{Error, Result};

/// How long a writer's lock is waited for before its temp file is left for the next sweep.
const LOCK_WAIT: Duration = Duration::from_millis(20);

/// Remove the leftover temp files (module doc) in the directory `dir` (not below it); the
/// number removed. `min_age` is the least time since a leftover's last modification.
///
/// # Errors
/// [`Error::Io`] when `dir` cannot be listed. A file that cannot be judged or removed is
/// skipped (logged), never an error: the sweep is housekeeping.
pub fn remove_dead_writers_temp_files(dir: &Path, min_age: Duration) -> Result<usize> {
    use nix::dir::Dir;
    use nix::fcntl::{AtFlags, OFlag};
    use nix::sys::stat::{fstatat, Mode, SFlag};
    use nix::unistd::{unlinkat, UnlinkatFlags};
    use std::os::fd::AsRawFd;
    // Red team 4: `dir` itself is opened without following a symlink, and the listing, every
    // look and every removal go through that one descriptor: a symlink in `dir`'s place
    // (`held -> ~`), or one swapped in later, is never gone through.
    let mut handle = Dir::open(
        dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io(dir, std::io::Error::from(e)))?;
    let dfd = handle.as_raw_fd();
    let now = SystemTime::now();
    let me = nix::unistd::geteuid().as_raw();
    let mut removed = 0;
    for entry in handle.iter().flatten() {
        let name = entry.file_name();
        let Some((target, pid)) = name.to_str().ok().and_then(temp_name_parts) else {
            continue;
        };
        // The target's lock must lie in `dir` (red team 4: a target `.` or `..` named a lock
        // beside the root, `<root>.lock`, created by the sweep): a plain name, as every store
        // file's is.
        let Some(lock) = sidecar_in(dir, target) else {
            continue;
        };
        // `fstatat(AT_SYMLINK_NOFOLLOW)` in the opened directory: a symlink is its own type,
        // never followed.
        let Ok(st) = fstatat(Some(dfd), name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
            continue;
        };
        let is_file =
            SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFREG;
        let modified = SystemTime::UNIX_EPOCH
            + Duration::from_secs(u64::try_from(st.st_mtime).unwrap_or(u64::MAX / 4));
        let old_enough = now.duration_since(modified).is_ok_and(|age| age >= min_age);
        if !is_file
            || st.st_uid != me
            || !old_enough
            || crate::liveness::pid_start_time(pid).is_some()
        {
            continue;
        }
        let Ok(_guard) = LockGuard::acquire(&lock, LOCK_WAIT) else {
            continue;
        };
        match unlinkat(Some(dfd), name, UnlinkatFlags::NoRemoveDir) {
            Ok(()) => removed += 1,
            Err(e) => {
                let path = dir.join(name.to_string_lossy().as_ref());
                tracing::warn!(?path, %e, "a dead writer's temp file could not be removed")
            }
        }
    }
    Ok(removed)
}

/// `("X", pid)` of a temp file name `X.tmp.<pid>`; `None` for any other name.
fn temp_name_parts(name: &str) -> Option<(&str, u32)> {
    let (target, pid) = name.rsplit_once(".tmp.")?;
    if target.is_empty() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((target, pid.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A pid no process has: past the kernel's pid_max (at most 2^22).
    const DEAD_PID: u32 = 4_194_305;

    fn write_0600(path: &Path, bytes: &[u8]) {
        std::fs::write(path, bytes).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    #[test]
    fn names_are_parsed_strictly() {
        assert_eq!(
            temp_name_parts("a.inbox.json.tmp.42"),
            Some(("a.inbox.json", 42))
        );
        assert_eq!(temp_name_parts("a.inbox.json.tmp."), None);
        assert_eq!(temp_name_parts(".tmp.42"), None);
        assert_eq!(temp_name_parts("a.tmp.4x2"), None);
        assert_eq!(temp_name_parts("a.inbox.json"), None);
        assert_eq!(temp_name_parts("a.tmp.99999999999"), None);
    }

    #[test]
    fn only_a_dead_writers_old_regular_temp_file_is_removed() {
        let d = tempfile::tempdir().unwrap();
        let inbox = d.path().join("s1.inbox.json");
        write_0600(&inbox, b"[]");
        let dead = d.path().join(format!("s1.inbox.json.tmp.{DEAD_PID}"));
        write_0600(&dead, b"[{\"content\":\"left by a killed writer\"}]");
        let alive = d
            .path()
            .join(format!("s1.inbox.json.tmp.{}", std::process::id()));
        write_0600(&alive, b"[]");
        let dir_named_like_one = d.path().join(format!("x.tmp.{DEAD_PID}"));
        std::fs::create_dir(&dir_named_like_one).unwrap();
        let link = d.path().join(format!("y.tmp.{DEAD_PID}"));
        std::os::unix::fs::symlink(&inbox, &link).unwrap();
        let other = d.path().join("notes.tmp.txt");
        write_0600(&other, b"x");

        // Too young: nothing goes.
        assert_eq!(
            remove_dead_writers_temp_files(d.path(), Duration::from_secs(3600)).unwrap(),
            0
        );
        assert!(dead.exists());

        assert_eq!(
            remove_dead_writers_temp_files(d.path(), Duration::ZERO).unwrap(),
            1
        );
        assert!(!dead.exists());
        assert!(alive.exists(), "a live writer's temp file is kept");
        assert!(dir_named_like_one.is_dir());
        assert!(
            link.symlink_metadata().is_ok(),
            "a symlink is never removed"
        );
        assert_eq!(
            std::fs::read(&inbox).unwrap(),
            b"[]",
            "the target is untouched"
        );
        assert!(other.exists());
    }

    #[test]
    fn a_temp_file_whose_target_is_locked_is_kept() {
        let d = tempfile::tempdir().unwrap();
        let inbox = d.path().join("s1.inbox.json");
        let dead = d.path().join(format!("s1.inbox.json.tmp.{DEAD_PID}"));
        write_0600(&dead, b"[]");
        let held = std::thread::scope(|s| {
            let lock = sidecar_path(&inbox);
            let (tx, rx) = std::sync::mpsc::channel();
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            s.spawn(move || {
                let _g = LockGuard::acquire(&lock, Duration::from_secs(5)).unwrap();
                tx.send(()).unwrap();
                done_rx.recv().unwrap();
            });
            rx.recv().unwrap();
            let n = remove_dead_writers_temp_files(d.path(), Duration::ZERO).unwrap();
            done_tx.send(()).unwrap();
            n
        });
        assert_eq!(held, 0);
        assert!(dead.exists());
        assert_eq!(
            remove_dead_writers_temp_files(d.path(), Duration::ZERO).unwrap(),
            1
        );
    }
}
