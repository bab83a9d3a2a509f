//! Unit tests of registry records.
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
