//! Moving records out of an inbox into `archive/<session_id>.jsonl` (ack, drain, the gate's
//! refusals): the archive is appended and fsync'd under c2c's archive lock *before* the inbox
//! is rewritten, so a crash can repeat a message but never lose one.

use std::time::Duration;

use serde_json::Value;

use super::{archived, update, SetAside};
use crate::error::Result;
use crate::store::{self, BrokerRoot};

/// How far back in an archive a move from `records` looks for its own earlier, crashed
/// append ([`store::file::append_jsonl_once`]): twice the records' JSON size (archive lines
/// add three fields to each) plus 256 KiB for appends from other paths since. In bytes.
pub fn archive_window(records: &[Value]) -> u64 {
    let size: usize = records
        .iter()
        .map(|v| serde_json::to_vec(v).map_or(0, |b| b.len() + 128))
        .sum();
    2 * size as u64 + 256 * 1024
}

/// Append `values` to `session_id`'s archive, each marked as [`archived`] with `drained_by`
/// (e.g. `c2c-bridge:expired`), skipping copies of an earlier crashed append.
///
/// # Errors
/// Lock timeouts (after `lock_timeout`) and I/O errors.
pub fn append(
    root: &BrokerRoot,
    session_id: &str,
    values: &[Value],
    drained_by: &str,
    lock_timeout: Duration,
) -> Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    let now = crate::time::now_secs();
    let lines: Vec<Value> = values
        .iter()
        .map(|v| archived(v.clone(), now, drained_by, session_id))
        .collect();
    store::append_archive(
        &root.archive(session_id)?,
        &lines,
        archive_window(values),
        lock_timeout,
    )
    .map(drop)
}

/// Take the records `pick` selects out of `session_id`'s inbox into its archive, marked
/// `drained_by` (e.g. `c2c-bridge:ack`). Returns the records taken (in inbox order) and the
/// records [`update`] moved aside on the way.
///
/// # Errors
/// Lock timeouts (after `lock_timeout`), [`crate::Error::StoreCorrupt`], I/O errors; nothing
/// is taken then.
pub fn take(
    root: &BrokerRoot,
    session_id: &str,
    lock_timeout: Duration,
    pick: impl Fn(&Value) -> bool,
    drained_by: &str,
) -> Result<(Vec<Value>, Vec<SetAside>)> {
    let archive = root.archive(session_id)?;
    update(root, session_id, lock_timeout, |records| {
        let window = archive_window(records);
        let (taken, kept): (Vec<Value>, Vec<Value>) =
            std::mem::take(records).into_iter().partition(|v| pick(v));
        *records = kept;
        if taken.is_empty() {
            return Ok((taken, false));
        }
        let now = crate::time::now_secs();
        let lines: Vec<Value> = taken
            .iter()
            .map(|v| archived(v.clone(), now, drained_by, session_id))
            .collect();
        store::append_archive(&archive, &lines, window, lock_timeout)?;
        Ok((taken, true))
    })
}
