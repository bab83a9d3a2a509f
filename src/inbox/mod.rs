//! Messages as c2c stores them in `<session_id>.inbox.json` and `archive/<session_id>.jsonl`,
//! and how an inbox file is read and changed record by record.
//!
//! # One bad record never blocks an inbox
//!
//! An inbox is read with [`crate::store::records`]; each record is one [`Entry`]:
//!
//! - [`Entry::Message`]: a message; when its strings held invalid Unicode (a lone surrogate
//!   `\ud83c`, bytes that are not UTF-8) they were replaced with U+FFFD and the message says
//!   so (`repaired`, shown in its frame). A message without `message_id` (c2c 0.8's room
//!   fan-out writes none) is delivered and acknowledged by its [`derived_message_id`], and
//!   left in the file as c2c wrote it until it is taken;
//! - [`Entry::Other`]: a JSON object of another shape without a `message_id`, left in the file
//!   as it is, never delivered, and reported (audit line `inbox_not_message`, and `doctor`);
//! - [`Entry::NotUnderstood`]: not JSON even after the repair, or a record that names a
//!   `message_id` but is no message. It is never delivered.
//!
//! Only a file that is not a JSON array at all is [`crate::Error::StoreCorrupt`].
//! [`update`] (every writer, under the inbox lock) moves each not-understood record aside, on
//! its own and byte for byte, to `quarantine/<session_id>.<sha256-16>.json` (0600, in a 0700
//! directory), and keeps the original bytes of a repaired record there too before writing the
//! repaired form back; the caller is told, so it can send a receipt to the sender when the
//! record names one. Reading without the lock ([`read`]) moves nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub mod archive;
pub mod dead_letter;

use crate::error::Result;
use crate::store::records::{self, Record};
use crate::store::{self, BrokerRoot};

mod inspect;
pub use inspect::{inspect_inboxes, InboxFile};

/// One message, in c2c 0.8's field names. `via` and `from_session_id` are our extras (c2c
/// ignores them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The sender's alias.
    pub from_alias: String,
    /// The recipient's alias; `"<alias>#<room_id>"` for a room message.
    pub to_alias: String,
    /// The text, untrusted.
    pub content: String,
    /// Epoch seconds (float) when it was enqueued.
    #[serde(default)]
    pub ts: f64,
    /// A uuid v4, unique per message; the dedup key for at-least-once delivery.
    pub message_id: String,
    /// c2c's deferrable flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferrable: Option<bool>,
    /// c2c's ephemeral flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    /// Our extra: the sender's session id (for receipts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_session_id: Option<String>,
    /// Our extra: the session ids this message (or the chain of turns that produced it) has
    /// passed through, oldest first; the hop limit counts them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub via: Vec<String>,
    /// Our extra: true for a broadcast copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast: Option<bool>,
    /// Our extra: true when a human released this message from the held inbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released: Option<bool>,
    /// Our extra: set on a receipt notice (`from_alias = "c2c-system"`) telling a sender what
    /// became of one of its messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<crate::receipts::Receipt>,
    /// Our extra: true when the record's strings held invalid Unicode (a lone surrogate,
    /// bytes that are not UTF-8) that was replaced with U+FFFD when it was read; the frame
    /// says so. The original bytes are kept in `quarantine/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repaired: Option<bool>,
    /// Every other field, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A receipt for this message with `status` and, when not empty, the reason `why`,
    /// stamped now.
    pub fn receipt_for(
        &self,
        status: crate::receipts::Status,
        why: &str,
    ) -> crate::receipts::Receipt {
        crate::receipts::Receipt {
            message_id: self.message_id.clone(),
            status,
            to_alias: self.to_alias.clone(),
            reason: (!why.is_empty()).then(|| why.to_string()),
            ts: crate::time::now_secs(),
        }
    }

    /// Parse one raw inbox record; `None` for a record of another shape. A message-shaped
    /// record without `message_id` (c2c's room fan-out) gets its [`derived_message_id`].
    pub fn from_value(v: &Value) -> Option<Message> {
        // Deserialize from the borrowed value: no clone of the record.
        if let Ok(m) = serde::Deserialize::deserialize(v) {
            return Some(m);
        }
        let id = derived_message_id(v)?;
        let mut with_id = v.clone();
        with_id
            .as_object_mut()?
            .insert("message_id".into(), Value::from(id));
        serde::Deserialize::deserialize(&with_id).ok()
    }

    /// The record as JSON, keeping `extra`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The room id when this is a room message (`to_alias = "<alias>#<room_id>"`).
    pub fn room_id(&self) -> Option<&str> {
        self.to_alias.split_once('#').map(|(_, r)| r)
    }
}

/// A raw inbox record as it is written to `archive/<session_id>.jsonl`: c2c's archive fields
/// `drained_at` (epoch seconds), `drained_by` (who took it, e.g. `c2c-bridge:ack`) and
/// `session_id` (whose inbox it left) added to the record, unknown fields kept.
pub fn archived(mut record: Value, now: f64, drained_by: &str, session_id: &str) -> Value {
    if let Value::Object(o) = &mut record {
        o.insert("drained_at".into(), Value::from(now));
        o.insert("drained_by".into(), Value::from(drained_by));
        o.insert("session_id".into(), Value::from(session_id));
    }
    record
}

/// The prefix of a [`derived_message_id`]; never the start of a uuid.
pub const DERIVED_ID_PREFIX: &str = "c2c-derived-";

/// The stable id of a message-shaped record that has no `message_id` (c2c 0.8 writes none
/// for room fan-out): `c2c-derived-` + 32 hex of sha256 over its `from_alias`, `to_alias`,
/// `content` and the bits of its `ts` (float seconds; absent counts as absent). Those fields
/// are the message; no rewrite changes them (key order, number formatting, our extras such
/// as `repaired` do not count), so every read — by any handle, before or after a rewrite of
/// the file — gives the same id, and acknowledgement and dedupe work by it. Two records equal
/// in all four fields are one message. `None` for a record with a `message_id` (of any type)
/// or without the three string fields.
pub fn derived_message_id(v: &Value) -> Option<String> {
    use sha2::{Digest, Sha256};
    let o = v.as_object()?;
    if o.contains_key("message_id") {
        return None;
    }
    let text = |k: &str| o.get(k).and_then(Value::as_str);
    let ts = o.get("ts").and_then(Value::as_f64).map(f64::to_bits);
    let canonical =
        serde_json::json!([text("from_alias")?, text("to_alias")?, text("content")?, ts]);
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    Some(format!("{DERIVED_ID_PREFIX}{}", &hex::encode(digest)[..32]))
}

/// The id of a raw record: its `message_id` string, else its [`derived_message_id`].
pub fn raw_message_id(v: &Value) -> Option<std::borrow::Cow<'_, str>> {
    match v.get("message_id") {
        Some(Value::String(id)) => Some(std::borrow::Cow::Borrowed(id)),
        Some(_) => None,
        None => derived_message_id(v).map(std::borrow::Cow::Owned),
    }
}

/// One record of an inbox file, as c2c-bridge understands it (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A message (its `repaired` field set when its text was repaired).
    Message {
        /// The record, repaired if it had to be.
        value: Value,
        /// The bytes as stored, when the record was repaired.
        original: Option<Vec<u8>>,
    },
    /// JSON of another shape, without a `message_id`; stays in the inbox as it is.
    Other(Value),
    /// A record that cannot be understood; never delivered, moved aside by [`update`].
    NotUnderstood(SetAside),
}

/// A record that cannot be understood, as found in an inbox.
#[derive(Debug, Clone, PartialEq)]
pub struct SetAside {
    /// Its bytes exactly as stored.
    pub raw: Vec<u8>,
    /// The sender's session id, when the record names a valid one (`from_session_id`).
    pub sender_session_id: Option<String>,
    /// Its `message_id`, when the record names one.
    pub message_id: Option<String>,
    /// Its `to_alias`, when the record names one.
    pub to_alias: Option<String>,
    /// Where [`update`] put the bytes (`quarantine/<session_id>.<sha256-16>.json`).
    pub kept_at: Option<PathBuf>,
}

impl Entry {
    /// The record to keep in the inbox file (none for a not-understood record).
    pub fn value(&self) -> Option<&Value> {
        match self {
            Entry::Message { value, .. } | Entry::Other(value) => Some(value),
            Entry::NotUnderstood(_) => None,
        }
    }

    /// The message, for a message entry.
    pub fn message(&self) -> Option<Message> {
        match self {
            Entry::Message { value, .. } => Message::from_value(value),
            _ => None,
        }
    }
}

/// Classify one record (see the module doc). `raw` gives the record's stored bytes when it
/// turns out not to be understood.
pub fn classify(record: Record, raw: impl FnOnce() -> Vec<u8>) -> Entry {
    let (mut value, original) = match record {
        Record::Clean(v) => (v, None),
        Record::Repaired { value, raw } => (value, Some(raw)),
        Record::Unreadable { raw } => return Entry::NotUnderstood(set_aside_from_raw(raw)),
    };
    if Message::from_value(&value).is_some() {
        if original.is_some() {
            if let Value::Object(o) = &mut value {
                o.insert("repaired".into(), Value::Bool(true));
            }
        }
        return Entry::Message { value, original };
    }
    if value.is_object() && value.get("message_id").is_none() {
        // An object without an id that is not message-shaped either (no string from_alias,
        // to_alias, content): c2c's, or a newer tool's. It stays where it is, never
        // delivered, and is reported (see `Broker::report_not_messages`).
        return Entry::Other(value);
    }
    let field = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_string);
    let raw = original.unwrap_or_else(raw);
    Entry::NotUnderstood(SetAside {
        sender_session_id: field("from_session_id")
            .filter(|s| crate::ids::validate_session_id(s).is_ok()),
        message_id: field("message_id"),
        to_alias: field("to_alias"),
        raw,
        kept_at: None,
    })
}

/// What can be told of a record that is not JSON: the `from_session_id`, `message_id` and
/// `to_alias` string fields, when they appear as plain `"key":"value"` pairs.
fn set_aside_from_raw(raw: Vec<u8>) -> SetAside {
    let find = |key: &str| -> Option<String> {
        let pat = format!("\"{key}\"");
        let text = String::from_utf8_lossy(&raw);
        let at = text.find(&pat)? + pat.len();
        let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
        let rest = rest.strip_prefix('"')?;
        let end = rest.find('"')?;
        let v = &rest[..end];
        (!v.contains('\\') && v.len() <= 256).then(|| v.to_string())
    };
    SetAside {
        sender_session_id: find("from_session_id")
            .filter(|s| crate::ids::validate_session_id(s).is_ok()),
        message_id: find("message_id"),
        to_alias: find("to_alias"),
        raw,
        kept_at: None,
    }
}

/// Parse the bytes of the inbox file `path` into entries.
///
/// # Errors
/// [`crate::Error::StoreCorrupt`] when the bytes are not a JSON array at all.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Entry>> {
    let recs = records::parse_records(path, bytes)?;
    let mut ranges: Option<Vec<std::ops::Range<usize>>> = None;
    Ok(recs
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            classify(r, || {
                // The whole-file fast path kept no element bytes: split once, on demand.
                let ranges =
                    ranges.get_or_insert_with(|| records::split_array(bytes).unwrap_or_default());
                ranges
                    .get(i)
                    .map(|r| bytes[r.clone()].to_vec())
                    .unwrap_or_default()
            })
        })
        .collect())
}

/// Read the inbox file `path` without a lock; moves nothing. An absent file has no entries.
///
/// # Errors
/// [`crate::Error::StoreCorrupt`] when the file is not a JSON array at all; I/O errors.
pub fn read(path: &Path) -> Result<Vec<Entry>> {
    match store::file::read_bytes(path)? {
        None => Ok(Vec::new()),
        Some((_, bytes)) => parse(path, &bytes),
    }
}

/// The messages of an inbox file, oldest first (repaired ones included, marked).
///
/// # Errors
/// As [`read`].
pub fn read_messages(path: &Path) -> Result<Vec<Message>> {
    Ok(read(path)?.iter().filter_map(Entry::message).collect())
}

/// What an inbox holds, record by record (for `doctor`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Messages that will be delivered.
    pub messages: usize,
    /// Of those, messages without `message_id`, delivered by their [`derived_message_id`].
    pub derived_ids: usize,
    /// JSON objects that are not messages: left in place, never delivered. One line each:
    /// the record's keys (never its values, which may be anything).
    pub not_messages: Vec<String>,
    /// Records that cannot be understood (moved aside by the next write).
    pub not_understood: usize,
}

/// A short, value-free description of a record that is not a message: `{key, key, …}`.
pub fn describe_not_message(v: &Value) -> String {
    match v.as_object() {
        Some(o) => {
            let keys: Vec<String> = o
                .keys()
                .take(12)
                .map(|k| k.chars().filter(|c| !c.is_control()).take(40).collect())
                .collect();
            format!("{{{}}}", keys.join(", "))
        }
        None => "not an object".into(),
    }
}

/// Summarise the inbox file `path` without a lock; moves nothing.
///
/// # Errors
/// As [`read`].
pub fn summarize(path: &Path) -> Result<Summary> {
    Ok(summary_of(&read(path)?))
}

/// The [`Summary`] of records already read.
pub(crate) fn summary_of(entries: &[Entry]) -> Summary {
    let mut out = Summary::default();
    for e in entries {
        match e {
            Entry::Message { value, .. } => {
                out.messages += 1;
                if value.get("message_id").is_none() {
                    out.derived_ids += 1;
                }
            }
            Entry::Other(v) => out.not_messages.push(describe_not_message(v)),
            Entry::NotUnderstood(_) => out.not_understood += 1,
        }
    }
    out
}

/// Create `<session_id>.inbox.json` as `[]` under its lock when it does not exist (temp file,
/// fsync, rename; the caller fsyncs the directory).
///
/// # Errors
/// Lock timeouts, I/O errors, [`crate::Error::StoreCorrupt`] for an existing unreadable inbox. An existing inbox is only read, so a
/// corrupt one or a symlink in its place is reported as before.
pub fn ensure(root: &BrokerRoot, session_id: &str, lock_timeout: Duration) -> Result<()> {
    let inbox = root.inbox(session_id);
    store::with_locks(
        &[&inbox],
        lock_timeout,
        || match std::fs::symlink_metadata(&inbox) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                store::file::replace_durable_file(&inbox, b"[]")
            }
            _ => read(&inbox).map(drop),
        },
    )
}

/// Read-modify-write of `session_id`'s inbox under its lock, record by record (see the module
/// doc): not-understood records are moved aside first, repaired records are written back
/// repaired (their original bytes kept aside), then `f` gets the remaining records as
/// [`store::update_array`] gives them. Returns `f`'s value and the records moved aside.
///
/// # Errors
/// Lock timeouts, [`crate::Error::StoreCorrupt`] (a file that is not a JSON array at all),
/// I/O errors (nothing is moved then), and any error `f` returns (the file is then left as it
/// was, though records already copied aside stay copied).
pub fn update<T>(
    root: &BrokerRoot,
    session_id: &str,
    lock_timeout: Duration,
    f: impl FnOnce(&mut Vec<Value>) -> Result<(T, bool)>,
) -> Result<(T, Vec<SetAside>)> {
    let path = root.inbox(session_id);
    store::with_locks(&[&path], lock_timeout, || {
        update_locked(root, session_id, f)
    })
}

/// [`update`] for a caller that already holds `session_id`'s inbox lock.
///
/// # Errors
/// As [`update`].
pub fn update_locked<T>(
    root: &BrokerRoot,
    session_id: &str,
    f: impl FnOnce(&mut Vec<Value>) -> Result<(T, bool)>,
) -> Result<(T, Vec<SetAside>)> {
    let path = root.inbox(session_id);
    let entries = read(&path)?;
    let mut records = Vec::with_capacity(entries.len());
    let mut moved = Vec::new();
    let mut originals = Vec::new();
    for e in entries {
        match e {
            Entry::Message { value, original } => {
                if let Some(o) = original {
                    originals.push(o);
                }
                records.push(value);
            }
            Entry::Other(v) => records.push(v),
            Entry::NotUnderstood(s) => moved.push(s),
        }
    }
    let dirty = !moved.is_empty() || !originals.is_empty();
    if dirty {
        keep_all_aside(root, session_id, &originals, &mut moved)?;
    }
    let (out, changed) = f(&mut records)?;
    if changed || dirty {
        // Rename first where the file system orders data before it (the recipient's watcher
        // wakes on the rename); as durable on return as write_array_atomic.
        store::file::write_array_rename_first(&path, &records)?;
    }
    Ok((out, moved))
}

/// Copy the original bytes of repaired records and the not-understood records of
/// `session_id`'s inbox to `quarantine/` (fsync'd, the directory too), setting `kept_at`.
///
/// # Errors
/// I/O errors naming the file.
pub fn keep_all_aside(
    root: &BrokerRoot,
    session_id: &str,
    originals: &[Vec<u8>],
    moved: &mut [SetAside],
) -> Result<()> {
    let dir = store::file::ensure_private_dir(&root.path().join("quarantine"))?;
    for raw in originals {
        keep_aside(&dir, session_id, raw)?;
    }
    for s in moved.iter_mut() {
        s.kept_at = Some(keep_aside(&dir, session_id, &s.raw)?);
    }
    store::file::sync_dir(&dir)
}

/// Write `raw` to `dir/<session_id>.<first 16 hex of sha256(raw)>.json` (0600, fsync'd); the
/// same bytes seen again reuse the file.
fn keep_aside(dir: &Path, session_id: &str, raw: &[u8]) -> Result<PathBuf> {
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(raw));
    let path = dir.join(format!("{session_id}.{}.json", &digest[..16]));
    store::file::write_new_0600(&path, raw)?;
    Ok(path)
}

#[cfg(test)]
mod tests;
