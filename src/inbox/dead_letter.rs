//! `dead-letter.jsonl`: the mail of sessions that ended or were swept, kept until the session
//! registers again (c2c's dead letter; lines carry `session_id` and `dead_lettered_at`).
//!
//! Nothing is dropped: a message is appended to the dead letter before its inbox is removed,
//! and put back in the inbox before the dead letter is rewritten. Lock order (the table in
//! [`crate::store::lock`]): the inbox lock, then the dead-letter lock.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;

use super::{keep_all_aside, raw_message_id, read, update_locked, Entry};
use crate::error::{Error, Result};
use crate::store::file::{append_jsonl, read_jsonl, remove, write_jsonl_atomic, JsonLine};
use crate::store::{self, BrokerRoot};

/// Move all of `session_id`'s inbox to the dead letter and remove the inbox file, unless
/// `still_registered()` — asked under the inbox lock, so a session that registers meanwhile
/// (registering takes this lock to create its inbox) cannot slip past — says it is back
/// (then `None`). Records that were not understood, and the original bytes of repaired
/// ones, are kept aside (`quarantine/`) byte for byte first. Returns the records moved.
///
/// # Errors
/// Lock timeouts (after `lock_timeout`), I/O errors, and errors of `still_registered`;
/// nothing is removed then.
pub fn dead_letter(
    root: &BrokerRoot,
    session_id: &str,
    lock_timeout: Duration,
    still_registered: impl FnOnce() -> Result<bool>,
) -> Result<Option<Vec<Value>>> {
    let inbox = root.inbox(session_id);
    store::with_locks(&[&inbox], lock_timeout, || {
        if still_registered()? {
            return Ok(None);
        }
        let entries = read(&inbox)?;
        let mut unread = Vec::new();
        let mut originals = Vec::new();
        for e in &entries {
            match e {
                Entry::NotUnderstood(s) => unread.push(s.clone()),
                Entry::Message {
                    original: Some(o), ..
                } => originals.push(o.clone()),
                _ => {}
            }
        }
        if !unread.is_empty() || !originals.is_empty() {
            keep_all_aside(root, session_id, &originals, &mut unread)?;
        }
        let records: Vec<Value> = entries.iter().filter_map(|e| e.value().cloned()).collect();
        let now = crate::time::now_secs();
        let lines: Vec<Value> = records
            .iter()
            .map(|v| {
                let mut v = v.clone();
                if let Value::Object(m) = &mut v {
                    m.insert("session_id".into(), Value::from(session_id));
                    m.insert("dead_lettered_at".into(), Value::from(now));
                }
                v
            })
            .collect();
        let dl = root.dead_letter();
        store::with_locks(&[&dl], lock_timeout, || append_jsonl(&dl, &lines))?;
        remove(&inbox)?;
        Ok(Some(records))
    })
}

/// Move dead-lettered mail addressed to `session_id` back into its inbox (deduplicated by
/// `message_id`); other lines of `dead-letter.jsonl`, parseable or not, are kept. Called when
/// a session registers, so a restart or a sweep in between loses nothing — and mail follows
/// the *session*, never an alias that a new owner has taken. Returns how many lines were
/// taken from the dead letter.
///
/// # Errors
/// Lock timeouts (after `lock_timeout`), I/O errors; the dead letter is kept then.
pub fn rescue(root: &BrokerRoot, session_id: &str, lock_timeout: Duration) -> Result<usize> {
    let dl = root.dead_letter();
    if !dl.exists() {
        return Ok(0);
    }
    let inbox = root.inbox(session_id);
    store::with_locks(&[&inbox, &dl], lock_timeout, || {
        let lines = read_jsonl(&dl)?;
        let (mine, rest): (Vec<JsonLine>, Vec<JsonLine>) = lines.into_iter().partition(|l| {
            matches!(l, JsonLine::Value(v) if v.get("session_id").and_then(Value::as_str) == Some(session_id))
        });
        let count = mine.len();
        if count == 0 {
            return Ok(0);
        }
        update_locked(root, session_id, |records| {
            let have: HashSet<String> = records
                .iter()
                .filter_map(|v| raw_message_id(v).map(String::from))
                .collect();
            for line in mine {
                if let JsonLine::Value(mut v) = line {
                    if raw_message_id(&v).is_some_and(|id| have.contains(&*id)) {
                        continue;
                    }
                    if let Value::Object(m) = &mut v {
                        m.remove("session_id");
                        m.remove("dead_lettered_at");
                    }
                    records.push(v);
                }
            }
            Ok(((), true))
        })?;
        // The inbox first, then the dead letter: a crash in between leaves copies in the dead
        // letter (deduplicated by message_id next time), never a lost message.
        write_jsonl_atomic(&dl, &rest)?;
        Ok(count)
    })
}

/// The number of messages waiting in `dead-letter.jsonl` for their sessions to come back (its
/// non-blank lines); `None` when the file is absent.
///
/// # Errors
/// [`Error::RootInsecure`] when it is a symlink or not a regular file (never followed);
/// [`Error::Io`] when it cannot be read.
pub fn count(root: &BrokerRoot) -> Result<Option<usize>> {
    let path = root.dead_letter();
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
        Ok(m) if !m.is_file() => {
            return Err(Error::RootInsecure {
                path,
                reason: "it is a symlink or not a regular file; c2c-bridge never follows it".into(),
            })
        }
        Ok(_) => {}
    }
    Ok(Some(store::file::read_jsonl(&path)?.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::root::RootSource;

    #[test]
    fn dead_letters_are_counted_and_a_symlink_refused() {
        let dir = crate::testutil::private_tempdir();
        let root = BrokerRoot::open(dir.path(), RootSource::Explicit).unwrap();
        assert_eq!(count(&root).unwrap(), None);
        std::fs::write(root.dead_letter(), "{\"a\":1}\n\nnot json\n").unwrap();
        assert_eq!(count(&root).unwrap(), Some(2));
        std::fs::remove_file(root.dead_letter()).unwrap();
        std::os::unix::fs::symlink(dir.path().join("x"), root.dead_letter()).unwrap();
        assert!(matches!(count(&root), Err(Error::RootInsecure { .. })));
    }
}
