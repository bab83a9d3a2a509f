//! The broker root on disk: where it is ([`root`]), how it is locked ([`lock`]) and how its
//! JSON files are read and replaced ([`file`](mod@file); whether a replace may rename before its
//! fsync is the mount's business: `mounts`).
//!
//! This module is the only one that takes locks and writes files durably; the concept modules
//! (registry, inbox, held, rooms, receipts, pending, verdict) call it.
//!
//! A mutable JSON-array file `X` is changed through [`update_array`]: take the OFD lock on
//! `X.lock`, read `X`, let the caller change the records, write `X.tmp.<pid>`, fsync, rename
//! over `X`. An operation that must hold several locks at once (an inbox and its archive, an
//! inbox and the dead letter, a room's members and its history) runs inside [`with_locks`],
//! which takes them in the order of the table in [`lock`] (checked in debug builds). Readers
//! that do not need to write ([`file::read_array`]) take no lock: renames are atomic, so they
//! always see a whole file.

pub mod cache;
pub mod file;
pub mod lock;
pub(crate) mod mounts;
pub mod records;
mod retire;
pub mod root;

use std::path::Path;

use serde_json::Value;

use crate::error::Result;

pub use file::{append_jsonl, read_array, write_array_atomic};
pub use lock::LockGuard;
pub use root::BrokerRoot;

/// Append `values` to an archive `archive/<sid>.jsonl` under c2c's `archive/<sid>.lock`
/// (see the table in [`lock`]), so c2c's drain and ours never interleave, skipping values
/// whose `message_id` is already in the last `window` bytes of the archive (a crashed earlier
/// move: see [`file::append_jsonl_once`]). Nothing to append takes no lock. Returns how many
/// values were appended.
///
/// # Errors
/// Lock timeouts and I/O errors.
pub fn append_archive(
    archive: &Path,
    values: &[Value],
    window: u64,
    lock_timeout: std::time::Duration,
) -> Result<usize> {
    if values.is_empty() {
        return Ok(0);
    }
    let _guard = LockGuard::acquire(&lock::archive_lock_path(archive), lock_timeout)?;
    file::append_jsonl_once(archive, values, window)
}

/// Run `f` while holding the sidecar locks of the data files `files` (see [`lock::sidecar_path`]),
/// taken in the given order, which must follow the lock order of the table in [`lock`]
/// (debug builds panic otherwise). The locks are released when `f` returns. `f` does its
/// reads and writes with the [`file`](mod@file) functions.
///
/// # Errors
/// [`crate::Error::LockTimeout`] when a lock is held past `lock_timeout` (locks already taken
/// are released), I/O errors opening a sidecar, and any error of `f`.
pub fn with_locks<T>(
    files: &[&Path],
    lock_timeout: std::time::Duration,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let mut guards = Vec::with_capacity(files.len());
    for file in files {
        guards.push(LockGuard::acquire(&lock::sidecar_path(file), lock_timeout)?);
    }
    let out = f();
    // Released in reverse order of acquisition.
    while let Some(g) = guards.pop() {
        drop(g);
    }
    out
}

/// Whether the sidecar lock `lock_path` can be taken within `timeout` (taken and released at
/// once): `false` when another holder keeps it (`doctor`'s probe of c2c's locks).
///
/// # Errors
/// I/O errors opening the sidecar (a symlink in its place is refused).
pub fn try_lock(lock_path: &Path, timeout: std::time::Duration) -> Result<bool> {
    match LockGuard::acquire(lock_path, timeout) {
        Ok(_g) => Ok(true),
        Err(crate::Error::LockTimeout { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// [`update_array`] (`durable`) or [`update_array_unsynced`] (not) that starts from `cache`'s
/// parse of `path` and leaves the written version in it: the records are cloned from the
/// cached parse (current: `cache` checks the file's identity, under the lock) instead of read
/// and parsed, and the next read finds the new version parsed. `f` as for [`update_array`].
///
/// # Errors
/// As [`update_array`].
pub fn update_array_cached<T: cache::ArrayParse, R>(
    path: &Path,
    lock_timeout: std::time::Duration,
    durable: bool,
    cache: &cache::ParsedFileCache<T>,
    f: impl FnOnce(&mut Vec<Value>) -> Result<(R, bool)>,
) -> Result<R> {
    update_array_spliced(
        path,
        lock_timeout,
        durable,
        cache,
        |_, _| Splice::<R, fn(&mut T)>::Full,
        f,
    )
}

/// What the fast writer of [`update_array_spliced`] decided from the current version.
#[derive(Debug)]
pub enum Splice<R, U> {
    /// Not decidable from the bytes: run the full read-modify-write.
    Full,
    /// The answer, with nothing to write.
    Done(R),
    /// Replace the file with `bytes` (the whole new JSON array), then turn the cached parse
    /// into the new version's with `update`; the answer is `out`.
    Write {
        /// The answer.
        out: R,
        /// The new file.
        bytes: Vec<u8>,
        /// Applied to the cached parse of the old version (when no one else holds it), to
        /// make it the parse of `bytes` without parsing them.
        update: U,
    },
}

/// [`update_array_cached`] with a fast writer first: under the lock, `splice` sees the
/// current parse and the exact bytes it was parsed from, and may answer at once
/// ([`Splice::Done`]), or produce the new file's bytes itself ([`Splice::Write`]: written
/// like every replace, durably when `durable`; the cached parse is updated in place, or the
/// bytes parsed when it cannot be), or decline ([`Splice::Full`]: `full` runs on a copy of the
/// records, as [`update_array_cached`]). An absent file always takes the full path. A splice
/// must produce exactly the file the full path would accept as its result (callers test this).
///
/// # Errors
/// As [`update_array`].
pub fn update_array_spliced<T: cache::ArrayParse, R, U: FnOnce(&mut T)>(
    path: &Path,
    lock_timeout: std::time::Duration,
    durable: bool,
    cache: &cache::ParsedFileCache<T>,
    splice: impl FnOnce(&T, &[u8]) -> Splice<R, U>,
    full: impl FnOnce(&mut Vec<Value>) -> Result<(R, bool)>,
) -> Result<R> {
    let _guard = LockGuard::acquire(&lock::sidecar_path(path), lock_timeout)?;
    let current = cache.load_current(path, T::parse)?;
    if let Some(bytes) = &current.bytes {
        match splice(&current.parsed, bytes) {
            Splice::Full => {}
            Splice::Done(out) => return Ok(out),
            Splice::Write { out, bytes, update } => {
                let expected = current.id;
                drop(current);
                let file = file::write_bytes_kept(path, &bytes, durable)?;
                cache.install_updated(path, file, bytes, expected, update, T::parse);
                return Ok(out);
            }
        }
    }
    let mut records = current.parsed.records().to_vec();
    drop(current);
    let (out, changed) = full(&mut records)?;
    if changed {
        let (file, bytes) = file::write_array_kept(path, &records, durable)?;
        cache.install(path, file, bytes, T::from_records(records));
    }
    Ok(out)
}

/// [`update_array`] for bookkeeping a crash may lose: the rewrite is
/// [`file::write_array_unsynced`] (no fsync where the file system keeps a replace whole
/// without one), so it costs no disk flush. After a crash the file holds the old records or
/// the new ones, never fewer.
///
/// # Errors
/// As [`update_array`].
pub fn update_array_unsynced<T>(
    path: &Path,
    lock_timeout: std::time::Duration,
    f: impl FnOnce(&mut Vec<Value>) -> Result<(T, bool)>,
) -> Result<T> {
    locked_update(path, lock_timeout, f, file::write_array_unsynced)
}

/// Read-modify-write of the JSON-array file `path` under its sidecar lock.
///
/// `f` receives the current records (an absent file reads as `[]`) and returns a value and
/// whether it changed the records; the file is rewritten only when it did. An unparseable
/// file is [`crate::Error::StoreCorrupt`] and is never passed to `f` as empty.
///
/// # Errors
/// Lock timeouts, I/O errors, corrupt files, and any error `f` returns (the file is then left
/// untouched).
pub fn update_array<T>(
    path: &Path,
    lock_timeout: std::time::Duration,
    f: impl FnOnce(&mut Vec<Value>) -> Result<(T, bool)>,
) -> Result<T> {
    locked_update(path, lock_timeout, f, write_array_atomic)
}

/// The read-modify-write both [`update_array`] and [`update_array_unsynced`] run: lock the
/// sidecar, read (never a corrupt file as empty), let `f` change the records, and `write` them
/// only when `f` says it changed them.
fn locked_update<T>(
    path: &Path,
    lock_timeout: std::time::Duration,
    f: impl FnOnce(&mut Vec<Value>) -> Result<(T, bool)>,
    write: fn(&Path, &[Value]) -> Result<()>,
) -> Result<T> {
    let _guard = LockGuard::acquire(&lock::sidecar_path(path), lock_timeout)?;
    let mut records = read_array(path)?;
    let (out, changed) = f(&mut records)?;
    if changed {
        write(path, &records)?;
    }
    Ok(out)
}
