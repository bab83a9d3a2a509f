//! The broker root on disk: where it is ([`root`]), how it is locked ([`lock`]) and how its
//! JSON files are read and replaced ([`file`]).
//!
//! Every mutable JSON file `X` is changed only through [`update_array`]: take the OFD lock on
//! `X.lock`, read `X`, let the caller change the records, write `X.tmp.<pid>`, fsync, rename
//! over `X`. Readers that do not need to write ([`file::read_array`]) take no lock: renames are
//! atomic, so they always see a whole file.

pub mod cache;
pub mod file;
pub mod lock;
pub mod records;
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
    let _guard = LockGuard::acquire(&lock::sidecar_path(path), lock_timeout)?;
    let mut records = read_array(path)?;
    let (out, changed) = f(&mut records)?;
    if changed {
        write_array_atomic(path, &records)?;
    }
    Ok(out)
}
