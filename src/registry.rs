//! `registry.json`: who is registered under which alias.
//!
//! Records are read into [`Registration`] with every field c2c writes that we do not know
//! kept in `extra`, so a read-modify-write never drops them. A record that does not have the
//! registration shape is left in the file untouched and is not listed; but when it names a
//! string `alias` it is an [`Unparsed`] registration, which still holds that alias: it counts
//! for alias collisions and for the M4 guard as a live owner (fail closed), and `doctor`
//! shows it as unreadable.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Result;
use crate::ids::alias_eq;
use crate::liveness;
pub use crate::store::cache::ParsedFileCache;
use crate::store::file as store_file;

/// One registration, in c2c 0.8's field names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    /// The session id (also the inbox file stem).
    pub session_id: String,
    /// The alias, in its original case.
    pub alias: String,
    /// The registering process (OpenCode's pid for the plugin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Clock ticks since boot, field 22 of `/proc/<pid>/stat` (defeats pid reuse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start_time: Option<u64>,
    /// Epoch seconds (float) of registration.
    #[serde(default)]
    pub registered_at: f64,
    /// The client's plugin version (`plugin_version`), used to flag stale peers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_version: Option<String>,
    /// The client type, e.g. `"opencode"`, `"claude-code"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_type: Option<String>,
    /// Our extra: the session's project directory (used by the `auto` inbound policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,
    /// Every other field, kept as it was.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Registration {
    /// c2c's liveness rule (pid + start time; no pid = alive).
    pub fn is_alive(&self) -> bool {
        liveness::is_alive(self.pid, self.pid_start_time)
    }

    /// Parse one raw record; `None` for a record of another shape.
    pub fn from_value(v: &Value) -> Option<Registration> {
        // Deserialize from the borrowed value: no clone of the record.
        serde::Deserialize::deserialize(v).ok()
    }

    /// The record as JSON, keeping `extra`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// All registrations of a raw registry array that have the registration shape.
pub fn parse_all(records: &[Value]) -> Vec<Registration> {
    records
        .iter()
        .filter_map(Registration::from_value)
        .collect()
}

/// A registry record with a string `alias` that does not parse as a [`Registration`] (e.g. a
/// string `registered_at` or `pid_start_time`, written by another program). Its liveness
/// cannot be known, so it is taken to be alive wherever an alias is protected.
#[derive(Debug, Clone, PartialEq)]
pub struct Unparsed {
    /// The alias it names.
    pub alias: String,
    /// Its `session_id`, when that is a string.
    pub session_id: Option<String>,
    /// Why it does not parse (serde's message).
    pub detail: String,
}

impl Unparsed {
    /// `Some` for a record with a string `alias` that is not a registration.
    pub fn from_value(v: &Value) -> Option<Unparsed> {
        let alias = v.get("alias")?.as_str()?;
        let err = Registration::deserialize(v).err()?;
        Some(Unparsed {
            alias: alias.to_string(),
            session_id: v
                .get("session_id")
                .and_then(Value::as_str)
                .map(str::to_string),
            detail: err.to_string(),
        })
    }

    /// A stand-in registration for the alias checks: the same alias and session id, no pid
    /// (so alive by c2c's rule). Never listed, never a send target.
    pub fn as_holder(&self) -> Registration {
        Registration {
            session_id: self.session_id.clone().unwrap_or_default(),
            alias: self.alias.clone(),
            pid: None,
            pid_start_time: None,
            registered_at: 0.0,
            plugin_version: None,
            client_type: None,
            directory: None,
            extra: Map::new(),
        }
    }
}

/// The [`Unparsed`] registrations of a raw registry array.
pub fn unparsed_all(records: &[Value]) -> Vec<Unparsed> {
    records.iter().filter_map(Unparsed::from_value).collect()
}

/// Parse the bytes of `registry.json` straight into registrations, without building a
/// `serde_json::Value` tree of the whole file first. Records of another shape are skipped
/// (the write paths, which keep them, still go through `Value`). Anything but a JSON array is
/// reported exactly as [`crate::store::read_array`] reports it ([`crate::Error::StoreCorrupt`],
/// bytes copied aside).
///
/// # Errors
/// [`crate::Error::StoreCorrupt`].
pub fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<Vec<Registration>> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    #[expect(
        clippy::large_enum_variant,
        reason = "short-lived; boxing would add one allocation per record"
    )]
    enum Record {
        Reg(Registration),
        Other(serde::de::IgnoredAny),
    }
    match serde_json::from_slice::<Vec<Record>>(bytes) {
        Ok(records) => Ok(records
            .into_iter()
            .filter_map(|r| match r {
                Record::Reg(r) => Some(r),
                Record::Other(_) => None,
            })
            .collect()),
        // The slow path names the problem exactly as `read_array` does (and copies the bytes
        // aside); should it parse after all, its answer stands.
        Err(_) => Ok(parse_all(&store_file::parse_array(path, bytes)?)),
    }
}

/// A per-handle cache of the parsed `registry.json` (see [`ParsedFileCache`]).
pub type RegistryCache = ParsedFileCache<Vec<Registration>>;

/// The first free alternative to `alias` among `taken` (`alias-2`, `alias-3`, …), kept within
/// 64 characters.
pub fn free_alternative(alias: &str, taken: &[Registration]) -> String {
    for n in 2u32.. {
        let suffix = format!("-{n}");
        let stem_len = alias.len().min(64 - suffix.len());
        let candidate = format!("{}{}", &alias[..stem_len], suffix);
        if !taken.iter().any(|r| alias_eq(&r.alias, &candidate)) {
            return candidate;
        }
    }
    unreachable!("u32 suffixes exhausted")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::cache::{FileId, TRUST_AGE_SECS};
    use std::sync::Arc;

    #[test]
    fn a_record_with_a_string_alias_that_does_not_parse_is_unparsed() {
        let recs = vec![
            serde_json::json!({"session_id": "s1", "alias": "bob", "registered_at": "yesterday"}),
            serde_json::json!({"session_id": "s2", "alias": "eve", "pid": 1, "pid_start_time": "12"}),
            serde_json::json!({"session_id": "s3", "alias": "ok", "registered_at": 1.0}),
            serde_json::json!({"session_id": "s4", "alias": 7}),
            serde_json::json!("not a record"),
        ];
        assert_eq!(parse_all(&recs).len(), 1);
        let u = unparsed_all(&recs);
        assert_eq!(
            u.iter().map(|u| u.alias.as_str()).collect::<Vec<_>>(),
            vec!["bob", "eve"]
        );
        assert_eq!(u[0].session_id.as_deref(), Some("s1"));
        assert!(u[1].detail.contains("pid_start_time") || u[1].detail.contains("string"));
        assert!(
            u[0].as_holder().is_alive(),
            "unknown liveness counts as alive"
        );
    }

    #[test]
    fn unknown_fields_survive_a_roundtrip() {
        let raw = serde_json::json!({
            "session_id": "s1", "alias": "Bob", "registered_at": 1.5,
            "canonical_alias": "bob#repo@host", "future_field": {"x": [1]}
        });
        let r = Registration::from_value(&raw).unwrap();
        assert_eq!(r.extra["canonical_alias"], "bob#repo@host");
        assert_eq!(r.to_value(), raw);
    }

    fn reg_json(sid: &str, alias: &str) -> Value {
        serde_json::json!({"session_id": sid, "alias": alias, "registered_at": 1.0})
    }

    fn replace(path: &Path, records: &[Value]) {
        crate::store::write_array_atomic(path, records).unwrap();
    }

    fn aliases(regs: &[Registration]) -> Vec<&str> {
        regs.iter().map(|r| r.alias.as_str()).collect()
    }

    fn reads(c: &RegistryCache) -> usize {
        c.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Close the cached version's file, as if it had not been kept open (its inode number
    /// could then be reused by a replacement).
    fn unpin(c: &RegistryCache) {
        c.slot.lock().unwrap().as_mut().unwrap().pin = None;
    }

    /// Pretend the cached version was read long after it was written, so its identity alone
    /// is trusted from now on.
    fn age(c: &RegistryCache) {
        c.slot.lock().unwrap().as_mut().unwrap().checked_at += 10.0 * TRUST_AGE_SECS;
    }

    #[test]
    fn typed_parse_matches_the_value_parse() {
        let raw = serde_json::json!([
            {"session_id": "s1", "alias": "a", "registered_at": 1.5, "pid": 7,
             "pid_start_time": 99, "canonical_alias": "a#r@h", "x": {"y": [1, 2.5, null]}},
            {"not": "a registration"},
            42,
            "text",
            {"session_id": "s2", "alias": "b", "pid": "not a number"},
            {"session_id": "s3", "alias": "c", "registered_at": 3, "client_type": "codex"},
            {"alias": "no sid"}
        ]);
        let bytes = serde_json::to_vec(&raw).unwrap();
        let d = tempfile::tempdir().unwrap();
        let typed = parse_bytes(&d.path().join("registry.json"), &bytes).unwrap();
        assert_eq!(typed, parse_all(raw.as_array().unwrap()));
        assert_eq!(aliases(&typed), ["a", "c"]);
    }

    #[test]
    fn cache_sees_every_replacement_and_own_invalidation() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("registry.json");
        let c = RegistryCache::new();
        assert!(
            c.load(&p, parse_bytes).unwrap().is_empty(),
            "absent reads as empty"
        );
        replace(&p, &[reg_json("s1", "a")]);
        assert_eq!(aliases(&c.load(&p, parse_bytes).unwrap()), ["a"]);
        // A fresh version is held open by the cache (its inode number cannot be reused), so
        // its identity alone is trusted at once: no read, no re-parse.
        let before = reads(&c);
        let first = c.load(&p, parse_bytes).unwrap();
        assert_eq!(reads(&c), before);
        assert!(Arc::ptr_eq(&first, &c.load(&p, parse_bytes).unwrap()));
        // Unpinned, a fresh version is confirmed by its bytes on every call (no re-parse).
        unpin(&c);
        let before = reads(&c);
        assert!(Arc::ptr_eq(&first, &c.load(&p, parse_bytes).unwrap()));
        assert_eq!(reads(&c), before + 1);
        // Once old enough, the identity alone is trusted: no read at all.
        unpin(&c);
        age(&c);
        let before = reads(&c);
        assert!(Arc::ptr_eq(&first, &c.load(&p, parse_bytes).unwrap()));
        assert_eq!(reads(&c), before);
        // A replacement by rename (new inode) is seen at once, same size included.
        replace(&p, &[reg_json("s1", "b")]);
        assert_eq!(aliases(&c.load(&p, parse_bytes).unwrap()), ["b"]);
        age(&c);
        // An in-place rewrite changes size or times.
        std::fs::write(&p, serde_json::to_vec(&[reg_json("s9", "zz")]).unwrap()).unwrap();
        assert_eq!(aliases(&c.load(&p, parse_bytes).unwrap()), ["zz"]);
        age(&c);
        // Our own writes invalidate.
        let before = reads(&c);
        c.invalidate();
        c.load(&p, parse_bytes).unwrap();
        assert_eq!(reads(&c), before + 1);
        // Removal reads as empty and forgets the cache.
        std::fs::remove_file(&p).unwrap();
        assert!(c.load(&p, parse_bytes).unwrap().is_empty());
        assert!(c.slot.lock().unwrap().is_none());
    }

    #[test]
    fn young_identity_collision_is_caught_by_the_bytes() {
        // A replacement that reuses the freed inode number with the same size and the same
        // coarse timestamps: simulated by planting the new file's identity in the cache.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("registry.json");
        let c = RegistryCache::new();
        replace(&p, &[reg_json("s1", "a")]);
        assert_eq!(aliases(&c.load(&p, parse_bytes).unwrap()), ["a"]);
        replace(&p, &[reg_json("s1", "b")]);
        let id = FileId::of(&std::fs::symlink_metadata(&p).unwrap());
        // Only possible for a version the cache does not hold open.
        unpin(&c);
        c.slot.lock().unwrap().as_mut().unwrap().id = id;
        assert_eq!(aliases(&c.load(&p, parse_bytes).unwrap()), ["b"]);
    }

    #[test]
    fn cache_reports_symlinks_and_corruption_like_read_array() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("registry.json");
        let c = RegistryCache::new();
        replace(&p, &[reg_json("s1", "a")]);
        c.load(&p, parse_bytes).unwrap();
        age(&c);
        std::fs::write(&p, b"[{\"session_id\":").unwrap();
        assert_eq!(
            c.load(&p, parse_bytes).unwrap_err().code(),
            crate::ErrorCode::StoreCorrupt
        );
        std::fs::write(&p, b"{}").unwrap();
        assert_eq!(
            c.load(&p, parse_bytes).unwrap_err().code(),
            crate::ErrorCode::StoreCorrupt
        );
        let target = d.path().join("elsewhere.json");
        std::fs::write(&target, b"[]").unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&target, &p).unwrap();
        assert_eq!(
            c.load(&p, parse_bytes).unwrap_err().code(),
            crate::store::read_array(&p).unwrap_err().code()
        );
    }

    #[test]
    fn alternative_skips_taken_case_insensitively() {
        let mk = |a: &str| Registration {
            session_id: "x".into(),
            alias: a.into(),
            pid: None,
            pid_start_time: None,
            registered_at: 0.0,
            plugin_version: None,
            client_type: None,
            directory: None,
            extra: Map::new(),
        };
        let taken = vec![mk("bob"), mk("BOB-2")];
        assert_eq!(free_alternative("Bob", &taken), "Bob-3");
        let long = "y".repeat(64);
        assert_eq!(free_alternative(&long, &[]).len(), 64);
    }
}
