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

use nix::libc;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// c2c's rotation size: 10 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// c2c keeps 5 rotated files.
pub const DEFAULT_KEEP: u32 = 5;

/// The audit log of one broker root.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
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
        }
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
        let mut line = Map::with_capacity(fields.len() + 2);
        line.insert("ts".into(), Value::from(crate::time::now_secs()));
        line.insert("event".into(), Value::from(event));
        for (k, v) in fields {
            if k != "ts" && k != "event" {
                line.insert(k, v);
            }
        }
        let mut bytes = serde_json::to_vec(&Value::Object(line)).unwrap_or_default();
        bytes.push(b'\n');
        let _ = self.append(&bytes);
    }

    fn open(&self) -> std::io::Result<std::fs::File> {
        OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&self.path)
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

    #[test]
    fn short_hash_is_16_hex() {
        let h = short_hash("ses_1");
        assert_eq!(h.len(), 16);
        assert!(h.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
