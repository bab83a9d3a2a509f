//! `broker.log`: the JSON-lines audit trail shared with c2c (`{ts, event, ...}` per line).
//!
//! Lines are appended with `O_APPEND` (one `write` per line, so lines from several processes
//! do not interleave). When the file passes the size limit (c2c: 10 MiB) it is rotated under
//! `broker.log.lock` to `broker.log.1` … `broker.log.<keep>` (c2c keeps 5).
//!
//! Why not `tracing`: the audit trail is part of the shared on-disk format (c2c reads and
//! writes the same file), not diagnostics; each line must be written and rotated with the
//! same locking as the rest of the root, per broker root, which a process-global tracing
//! subscriber does not give.
//!
//! Audit logging never fails an operation: a write error is swallowed (the operation it
//! describes already happened).

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use nix::libc;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// c2c's rotation size: 10 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// c2c keeps 5 rotated files.
pub const DEFAULT_KEEP: u32 = 5;

/// The audit log of one broker root.
///
/// By default every line opens the file, checks its size, writes and closes it (four system
/// calls). [`AuditLog::keep_open`] keeps one descriptor open instead (two system calls per
/// line), for a writer of many lines in a long-lived process (the permission gate).
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    /// The descriptor kept open, shared by clones; `None`: open per line.
    held: Option<Arc<Mutex<Option<Held>>>>,
}

/// An open descriptor of the log and the identity (device, inode) of the file it was opened
/// on: a line goes through it only while the log's name still names that file.
#[derive(Debug)]
struct Held {
    file: std::fs::File,
    dev: u64,
    ino: u64,
}

/// sha256 of `s`, first 16 hex chars: how session ids and perm ids appear in audit lines
/// that c2c hashes.
pub fn short_hash(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))[..16].to_string()
}

impl AuditLog {
    /// The log at `path` with c2c's rotation defaults.
    pub fn new(path: PathBuf) -> AuditLog {
        AuditLog {
            path,
            max_bytes: DEFAULT_MAX_BYTES,
            keep: DEFAULT_KEEP,
            held: None,
        }
    }

    /// Keep the file open between lines (shared by clones of the returned log): each line
    /// then costs an `lstat` of the name and one `write`, instead of `open`, `fstat`, `write`
    /// and `close`. The `lstat` notices a rotation (ours or another process's rename: the
    /// name then names another file, or none) and a replacement by a symlink; the descriptor
    /// is then dropped and the name opened again as [`AuditLog::event`] always does
    /// (`O_NOFOLLOW`, created 0600), so a line never goes to a file the name no longer names
    /// when it is checked. Rotation by size is unchanged (the size is the `lstat`'s).
    ///
    /// The held descriptor is a write descriptor: a file system holding the log cannot be
    /// remounted read-only while it is open. Meant for the permission gate (one per plugin
    /// instance); brokers open per line.
    pub fn keep_open(mut self) -> AuditLog {
        self.held = Some(Arc::new(Mutex::new(None)));
        self
    }

    /// Override the rotation size (bytes) and the number of rotated files kept.
    pub fn with_rotation(mut self, max_bytes: u64, keep: u32) -> AuditLog {
        self.max_bytes = max_bytes.max(1);
        self.keep = keep.max(1);
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append `{ts, event, ...fields}`. Never fails the caller.
    pub fn event(&self, event: &str, fields: Map<String, Value>) {
        let bytes = line(crate::time::now_secs(), event, &fields);
        let _ = match &self.held {
            Some(held) => self.append_held(held, &bytes),
            None => self.append(&bytes),
        };
    }

    /// [`AuditLog::event`] from borrowed fields: the same line, byte for byte, as
    /// `event(event, fields!{k => v, ...})` with the same keys and values in the same order,
    /// without building a map (no key or value copied, nothing hashed). `fields` keys must
    /// be distinct; `ts` and `event` are dropped like [`AuditLog::event`] drops them. Never
    /// fails the caller.
    pub fn event_fields(&self, event: &str, fields: &[(&str, AuditValue<'_>)]) {
        let bytes = line_fields(crate::time::now_secs(), event, fields);
        let _ = match &self.held {
            Some(held) => self.append_held(held, &bytes),
            None => self.append(&bytes),
        };
    }

    /// Open the log for appending: never through a symlink (`O_NOFOLLOW`), created 0600, and
    /// only a regular file. `O_NONBLOCK` keeps a FIFO put in the log's place from blocking
    /// the `open` (no reader) or a write (a full pipe) on OpenCode's main thread; it has no
    /// effect on a regular file. Anything but a regular file is an error (red team 3).
    fn open(&self) -> std::io::Result<std::fs::File> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(&self.path)?;
        if !file.metadata()?.file_type().is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the audit log is not a regular file",
            ));
        }
        Ok(file)
    }

    fn append(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut f = self.open()?;
        // Rotate before a line would push the file past the limit, so the current file
        // always holds the newest line.
        let len = f.metadata()?.len();
        if len > 0 && len + bytes.len() as u64 > self.max_bytes {
            drop(f);
            self.rotate(bytes.len() as u64)?;
            f = self.open()?;
        }
        f.write_all(bytes)
    }

    /// [`AuditLog::append`] through the held descriptor: `lstat` the name; while it names the
    /// held file (same device and inode, a regular file), its size decides rotation and the
    /// line is written through the descriptor. Otherwise (first line, rotated, replaced,
    /// removed) the descriptor is dropped and the name opened again. A failed write drops
    /// the descriptor too (the next line opens afresh).
    fn append_held(&self, held: &Mutex<Option<Held>>, bytes: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let mut slot = held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = std::fs::symlink_metadata(&self.path).ok();
        let len = match (&*slot, &now) {
            (Some(h), Some(m)) if m.is_file() && m.dev() == h.dev && m.ino() == h.ino => m.len(),
            _ => {
                *slot = None;
                let file = self.open()?;
                let m = file.metadata()?;
                let len = m.len();
                *slot = Some(Held {
                    file,
                    dev: m.dev(),
                    ino: m.ino(),
                });
                len
            }
        };
        if len > 0 && len + bytes.len() as u64 > self.max_bytes {
            *slot = None;
            self.rotate(bytes.len() as u64)?;
            let file = self.open()?;
            let m = file.metadata()?;
            *slot = Some(Held {
                file,
                dev: m.dev(),
                ino: m.ino(),
            });
        }
        let Some(h) = slot.as_mut() else {
            return Ok(());
        };
        let written = h.file.write_all(bytes);
        if written.is_err() {
            *slot = None;
        }
        written
    }

    fn rotate(&self, incoming: u64) -> std::io::Result<()> {
        crate::store::file::rotate(&self.path, self.keep, |len| len + incoming > self.max_bytes)
    }

    /// The last `limit` parsed lines (newest last) of the current file.
    pub fn tail(&self, limit: usize) -> Vec<Value> {
        let Ok(lines) = crate::store::file::read_jsonl(&self.path) else {
            return Vec::new();
        };
        let values: Vec<Value> = lines
            .into_iter()
            .filter_map(|l| match l {
                crate::store::file::JsonLine::Value(v) => Some(v),
                crate::store::file::JsonLine::Unparsed(_) => None,
            })
            .collect();
        let skip = values.len().saturating_sub(limit);
        values.into_iter().skip(skip).collect()
    }
}

/// The start of an audit line, `{"ts":…,"event":…`, with room for `n_fields` more.
fn line_start(ts: f64, event: &str, n_fields: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + 48 * n_fields);
    out.extend_from_slice(b"{\"ts\":");
    let _ = serde_json::to_writer(&mut out, &Value::from(ts));
    out.extend_from_slice(b",\"event\":");
    let _ = serde_json::to_writer(&mut out, event);
    out
}

/// One audit line: `{"ts":…,"event":…,…fields}` and a newline, serialised straight from the
/// fields (no intermediate map). Fields named `ts` or `event` are dropped (the line's own
/// win), as before.
fn line(ts: f64, event: &str, fields: &Map<String, Value>) -> Vec<u8> {
    let mut out = line_start(ts, event, fields.len());
    for (k, v) in fields {
        if k == "ts" || k == "event" {
            continue;
        }
        out.push(b',');
        let _ = serde_json::to_writer(&mut out, k);
        out.push(b':');
        let _ = serde_json::to_writer(&mut out, v);
    }
    out.extend_from_slice(b"}\n");
    out
}

/// A borrowed field value of [`AuditLog::event_fields`], written as `serde_json::json!` of the
/// same Rust value would be.
#[derive(Debug, Clone, Copy)]
pub enum AuditValue<'a> {
    /// A JSON string.
    Str(&'a str),
    /// A JSON string, or `null` for `None`.
    OptStr(Option<&'a str>),
    /// `true` / `false`.
    Bool(bool),
}

/// [`line`] from borrowed fields (see [`AuditLog::event_fields`]).
fn line_fields(ts: f64, event: &str, fields: &[(&str, AuditValue<'_>)]) -> Vec<u8> {
    let mut out = line_start(ts, event, fields.len());
    for (k, v) in fields {
        if *k == "ts" || *k == "event" {
            continue;
        }
        out.push(b',');
        let _ = serde_json::to_writer(&mut out, k);
        out.push(b':');
        let _ = match v {
            AuditValue::Str(s) => serde_json::to_writer(&mut out, s),
            AuditValue::OptStr(s) => serde_json::to_writer(&mut out, s),
            AuditValue::Bool(b) => serde_json::to_writer(&mut out, b),
        };
    }
    out.extend_from_slice(b"}\n");
    out
}

/// Build a field map: `fields!{"a" => 1, "b" => "x"}`.
#[macro_export]
macro_rules! fields {
    ($($k:expr => $v:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut m = serde_json::Map::new();
        $( m.insert(($k).to_string(), serde_json::json!($v)); )*
        m
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_rotation() {
        let d = tempfile::tempdir().unwrap();
        let log = AuditLog::new(d.path().join("broker.log")).with_rotation(200, 2);
        for i in 0..20 {
            log.event("dm_enqueue", fields! {"i" => i});
        }
        let tail = log.tail(100);
        assert!(!tail.is_empty());
        assert_eq!(tail.last().unwrap()["event"], "dm_enqueue");
        assert_eq!(tail.last().unwrap()["i"], 19);
        assert!(d.path().join("broker.log.1").exists());
        assert!(d.path().join("broker.log.2").exists());
        assert!(!d.path().join("broker.log.3").exists());
    }

    /// Every `permission_decision`-style line of `dir`'s log files, in file order.
    fn all_lines(dir: &Path) -> Vec<Value> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("broker.log") && !n.ends_with(".lock"))
            .collect();
        names.sort();
        names
            .iter()
            .flat_map(|n| {
                std::fs::read_to_string(dir.join(n))
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .map(|l| serde_json::from_str(&l).unwrap())
            .collect()
    }

    #[test]
    fn borrowed_fields_make_the_same_line_as_a_map() {
        use super::AuditValue::*;
        let peer: Option<String> = Some("c2c-\"1\"\n\u{1}é".into());
        let none: Option<&str> = None;
        let map = fields! {
            "request" => "per_1",
            "basis" => Some("peer-turn"),
            "folded" => true,
            "inherited" => false,
            "peerMessageId" => peer,
            "category" => none,
            "ts" => "dropped",
            "reason" => "a \\ b / c\t",
        };
        let borrowed = [
            ("request", Str("per_1")),
            ("basis", OptStr(Some("peer-turn"))),
            ("folded", Bool(true)),
            ("inherited", Bool(false)),
            ("peerMessageId", OptStr(peer.as_deref())),
            ("category", OptStr(none)),
            ("ts", Str("dropped")),
            ("reason", Str("a \\ b / c\t")),
        ];
        let a = super::line(1.5, "permission_decision", &map);
        let b = super::line_fields(1.5, "permission_decision", &borrowed);
        assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
    }

    #[test]
    fn kept_open_lines_and_rotation() {
        let d = tempfile::tempdir().unwrap();
        let log = AuditLog::new(d.path().join("broker.log"))
            .with_rotation(200, 2)
            .keep_open();
        for i in 0..20 {
            log.event("dm_enqueue", fields! {"i" => i});
        }
        let tail = log.tail(100);
        assert_eq!(tail.last().unwrap()["i"], 19);
        assert!(d.path().join("broker.log.1").exists());
        assert!(d.path().join("broker.log.2").exists());
        assert!(!d.path().join("broker.log.3").exists());
        // the current file holds the newest line and stays under the limit
        assert!(
            std::fs::metadata(d.path().join("broker.log"))
                .unwrap()
                .len()
                <= 200
        );
    }

    #[test]
    fn kept_open_notices_another_process_rotating() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("broker.log");
        let log = AuditLog::new(path.clone()).keep_open();
        log.event("a", fields! {"n" => 1});
        // c2c rotates: the name moves away while our descriptor is open
        std::fs::rename(&path, d.path().join("broker.log.1")).unwrap();
        log.event("b", fields! {"n" => 2});
        let now: Vec<Value> = log.tail(10);
        assert_eq!(now.len(), 1, "the new line went to the file the name names");
        assert_eq!(now[0]["event"], "b");
        let old = std::fs::read_to_string(d.path().join("broker.log.1")).unwrap();
        assert_eq!(
            old.lines().count(),
            1,
            "nothing more went to the rotated file"
        );
        // removed: the next line creates the file again, 0600
        std::fs::remove_file(&path).unwrap();
        log.event("c", fields! {});
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(log.tail(10)[0]["event"], "c");
    }

    #[test]
    fn kept_open_never_follows_a_symlink_put_in_place() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("broker.log");
        let target = d.path().join("elsewhere");
        std::fs::write(&target, b"").unwrap();
        let log = AuditLog::new(path.clone()).keep_open();
        log.event("a", fields! {});
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        log.event("b", fields! {}); // swallowed: O_NOFOLLOW refuses the link
        assert_eq!(
            std::fs::read(&target).unwrap(),
            b"",
            "nothing written through the link"
        );
        // a clone shares the (dropped) descriptor and also refuses
        log.clone().event("c", fields! {});
        assert_eq!(std::fs::read(&target).unwrap(), b"");
    }

    #[test]
    fn kept_open_and_per_line_write_the_same_lines() {
        let d = tempfile::tempdir().unwrap();
        let a = AuditLog::new(d.path().join("a").join("broker.log"));
        let b = AuditLog::new(d.path().join("b").join("broker.log")).keep_open();
        std::fs::create_dir(d.path().join("a")).unwrap();
        std::fs::create_dir(d.path().join("b")).unwrap();
        for log in [&a, &b] {
            log.event(
                "permission_decision",
                fields! {"request" => "per_1", "ts" => "dropped", "event" => "dropped", "from" => "é\"\n", "n" => Value::Null, "folded" => true},
            );
        }
        let (la, lb) = (
            all_lines(&d.path().join("a")),
            all_lines(&d.path().join("b")),
        );
        assert_eq!(la.len(), 1);
        assert_eq!(lb.len(), 1);
        let strip = |v: &Value| {
            let mut m = v.as_object().unwrap().clone();
            assert!(m.remove("ts").unwrap().is_f64());
            m
        };
        assert_eq!(strip(&la[0]), strip(&lb[0]));
        let keys: Vec<&String> = la[0].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["ts", "event", "request", "from", "n", "folded"]);
        assert_eq!(la[0]["event"], "permission_decision");
        assert_eq!(la[0]["from"], "é\"\n");
    }

    #[test]
    fn short_hash_is_16_hex() {
        let h = short_hash("ses_1");
        assert_eq!(h.len(), 16);
        assert!(h.chars().all(|c| c.is_ascii_hexdigit()));
    }
}

#[cfg(test)]
#[path = "log_redteam_tests.rs"]
mod redteam_tests;
