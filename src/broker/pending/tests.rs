//! Pending-reply slots (M2), the alias-reuse guard (M4) and c2c interop, through the
//! identity-bound handle. threats.md families: Identity (borrowing, alias reuse, the owner
//! locked out), Storage (TTL/limits from the environment, unreadable never empty).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::{json, Value};

use crate::pending::DEFAULT_GLOBAL_CAP;
use crate::{Broker, ErrorCode, OpenOptions};

use crate::testutil::private_tempdir as root;

fn opts(root: &Path, sid: &str, alias: &str) -> OpenOptions {
    OpenOptions {
        session_id: sid.into(),
        alias: Some(alias.into()),
        root: Some(root.to_path_buf()),
        directory: Some(root.to_path_buf()),
        env: crate::config::Environment::empty(),
        ..Default::default()
    }
}

fn open(root: &Path, sid: &str, alias: &str) -> Broker {
    Broker::open(opts(root, sid, alias)).unwrap()
}

fn sv(l: &[&str]) -> Vec<String> {
    l.iter().map(|s| s.to_string()).collect()
}

fn pending_file(root: &Path) -> Vec<Value> {
    crate::store::read_array(&root.join("pending_permissions.json")).unwrap()
}

fn log_events(root: &Path, event: &str) -> Vec<Value> {
    std::fs::read_to_string(root.join("broker.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["event"] == event)
        .collect()
}

fn now() -> f64 {
    crate::time::now_secs()
}

/// A record exactly as c2c 0.8 writes it.
fn c2c_slot(perm: &str, sid: &str, alias: &str, sups: &[&str], expires_at: f64) -> Value {
    json!({
        "perm_id": perm, "kind": "permission",
        "requester_session_id": sid, "requester_alias": alias,
        "supervisors": sups, "created_at": expires_at - 600.0, "expires_at": expires_at,
        "fallthrough_fired_at": [], "resolved_at": null, "verdict": null
    })
}

fn write_pending(root: &Path, records: &[Value]) {
    crate::store::write_array_atomic(&root.join("pending_permissions.json"), records).unwrap();
}

#[test]
fn open_then_check_valid_stamps_once_and_rewrites_nothing_afterwards() {
    let d = root();
    let req = open(d.path(), "ses_req", "Req");
    let boss = open(d.path(), "ses_boss", "boss");
    let o = req
        .open_pending_reply("per_1", "permission", &sv(&["BOSS", "Req"]))
        .unwrap();
    assert_eq!(o.ttl_seconds, 600.0);
    assert_eq!(o.supervisors, sv(&["BOSS"]));
    assert!((o.expires_at - now() - 600.0).abs() < 5.0);

    let recs = pending_file(d.path());
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["requester_session_id"], "ses_req");
    assert_eq!(recs[0]["requester_alias"], "Req");
    assert_eq!(recs[0]["resolved_at"], Value::Null);

    let c = boss.check_pending_reply("per_1").unwrap();
    assert!(c.valid);
    assert_eq!(c.requester_session_id.as_deref(), Some("ses_req"));
    assert_eq!(c.error, None);
    let stamped = pending_file(d.path())[0]["resolved_at"].as_f64().unwrap();
    assert!(stamped > 0.0);

    // Later valid checks stay valid and do not rewrite the file (same inode, same stamp).
    let path = d.path().join("pending_permissions.json");
    let ino = std::fs::metadata(&path).unwrap().ino();
    for _ in 0..3 {
        assert!(boss.check_pending_reply("per_1").unwrap().valid);
    }
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino);
    assert_eq!(
        pending_file(d.path())[0]["resolved_at"].as_f64(),
        Some(stamped)
    );
    // Invalid checks write nothing either.
    assert!(!req.check_pending_reply("per_1").unwrap().valid);
    assert!(!boss.check_pending_reply("nope").unwrap().valid);
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino);

    // The written record carries a question kind too.
    let q = req
        .open_pending_reply("que_1", "question", &sv(&["boss"]))
        .unwrap();
    assert_eq!(q.kind.as_str(), "question");
    assert_eq!(
        pending_file(d.path())[0]["kind"],
        "question",
        "newest first"
    );
}

#[test]
fn identity_cannot_be_borrowed() {
    let d = root();
    let req = open(d.path(), "ses_req", "req");
    let mallory = open(d.path(), "ses_mal", "Mallory");
    let boss = open(d.path(), "ses_boss", "Boss");
    req.open_pending_reply("per_1", "permission", &sv(&["boss"]))
        .unwrap();
    let c = mallory.check_pending_reply("per_1").unwrap();
    assert!(!c.valid);
    assert_eq!(c.requester_session_id, None);
    assert_eq!(
        c.error.as_deref(),
        Some("reply from non-supervisor: Mallory")
    );
    // The requester is never its own supervisor.
    assert_eq!(
        req.check_pending_reply("per_1").unwrap().error.as_deref(),
        Some("reply from non-supervisor: req")
    );
    // Case-insensitive supervisor match.
    assert!(boss.check_pending_reply("per_1").unwrap().valid);
}

#[test]
fn unregistered_or_closed_handles_can_neither_open_nor_check() {
    let d = root();
    let boss = open(d.path(), "ses_boss", "boss");
    let a = open(d.path(), "ses_a", "alpha");
    a.open_pending_reply("per_a", "permission", &sv(&["boss"]))
        .unwrap();
    // The same session re-registers under another alias: `a` no longer owns a registration.
    let _a2 = open(d.path(), "ses_a", "alpha-two");
    for e in [
        a.open_pending_reply("per_b", "permission", &sv(&["boss"]))
            .unwrap_err(),
        a.check_pending_reply("per_a").unwrap_err(),
    ] {
        assert_eq!(e.code(), ErrorCode::NotRegistered);
    }
    boss.close().unwrap();
    assert_eq!(
        boss.check_pending_reply("per_a").unwrap_err().code(),
        ErrorCode::Closed
    );
    assert_eq!(
        boss.open_pending_reply("per_c", "permission", &sv(&["alpha"]))
            .unwrap_err()
            .code(),
        ErrorCode::Closed
    );
    // A registration removed by hand (another tool) also counts as gone.
    let c = open(d.path(), "ses_c", "charlie");
    crate::store::write_array_atomic(&d.path().join("registry.json"), &[]).unwrap();
    assert_eq!(
        c.check_pending_reply("per_a").unwrap_err().code(),
        ErrorCode::NotRegistered
    );
}

#[test]
fn bad_arguments() {
    let d = root();
    let a = open(d.path(), "ses_a", "alpha");
    let code = |r: crate::Result<_>| r.unwrap_err().code();
    for bad in ["", "../x", "per/1", ".hidden", &"p".repeat(129)] {
        assert_eq!(
            code(a.open_pending_reply(bad, "permission", &sv(&["boss"]))),
            ErrorCode::InvalidId,
            "{bad:?}"
        );
    }
    for bad in ["", "Permission", "approve"] {
        assert_eq!(
            code(a.open_pending_reply("per_1", bad, &sv(&["boss"]))),
            ErrorCode::InvalidOption
        );
    }
    assert_eq!(
        code(a.open_pending_reply("per_1", "permission", &[])),
        ErrorCode::InvalidOption
    );
    assert_eq!(
        code(a.open_pending_reply("per_1", "permission", &sv(&["ALPHA"]))),
        ErrorCode::InvalidOption
    );
    assert_eq!(
        code(a.open_pending_reply("per_1", "permission", &sv(&["boss", "c2c"]))),
        ErrorCode::InvalidId
    );
    assert!(!d.path().join("pending_permissions.json").exists());
    for (per, glob) in [(Some(0), None), (None, Some(0))] {
        let mut o = opts(d.path(), "ses_z", "zed");
        o.pending_per_alias_cap = per;
        o.pending_global_cap = glob;
        assert_eq!(
            Broker::open(o).unwrap_err().code(),
            ErrorCode::InvalidOption
        );
    }
}

#[test]
fn duplicate_active_ids_are_refused_expired_ones_pruned() {
    let d = root();
    let a = open(d.path(), "ses_a", "alpha");
    let b = open(d.path(), "ses_b", "beta");
    a.open_pending_reply("per_1", "permission", &sv(&["beta"]))
        .unwrap();
    let before = std::fs::read(d.path().join("pending_permissions.json")).unwrap();
    for h in [&a, &b] {
        assert_eq!(
            h.open_pending_reply("per_1", "question", &sv(&["gamma"]))
                .unwrap_err()
                .code(),
            ErrorCode::DuplicatePermId
        );
    }
    assert_eq!(
        std::fs::read(d.path().join("pending_permissions.json")).unwrap(),
        before
    );
    assert_eq!(
        log_events(d.path(), "pending_open").last().unwrap()["outcome"],
        "duplicate"
    );

    // An expired slot with the same id does not block, and is pruned by the write.
    let mut recs = pending_file(d.path());
    recs.push(c2c_slot("per_2", "ses_x", "x", &["alpha"], now() - 1.0));
    write_pending(d.path(), &recs);
    b.open_pending_reply("per_2", "permission", &sv(&["alpha"]))
        .unwrap();
    let recs = pending_file(d.path());
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0]["requester_session_id"], "ses_b");
    assert!(a.check_pending_reply("per_2").unwrap().valid);
}

#[test]
fn ttl_environment_values() {
    let d = root();
    let cases: [(&str, f64, Option<&str>); 8] = [
        ("inf", 600.0, Some("pending_ttl_invalid")),
        ("nan", 600.0, Some("pending_ttl_invalid")),
        ("abc", 600.0, Some("pending_ttl_invalid")),
        ("-5", 1.0, Some("pending_ttl_clamped")),
        ("0", 1.0, Some("pending_ttl_clamped")),
        ("1e9", 86400.0, Some("pending_ttl_clamped")),
        ("30", 30.0, None),
        ("", 600.0, None),
    ];
    for (i, (raw, want, event)) in cases.iter().enumerate() {
        let _ = std::fs::remove_file(d.path().join("broker.log"));
        let mut o = opts(d.path(), &format!("ses_{i}"), &format!("a{i}"));
        o.env = crate::config::Environment::from_pairs([(crate::pending::TTL_ENV, *raw)]);
        let b = Broker::open(o).unwrap();
        assert_eq!(b.pending_ttl_secs(), *want, "{raw}");
        let opened = b
            .open_pending_reply(&format!("per_{i}"), "permission", &sv(&["boss"]))
            .unwrap();
        assert_eq!(opened.ttl_seconds, *want);
        assert!((opened.expires_at - now() - want).abs() < 5.0);
        for ev in ["pending_ttl_invalid", "pending_ttl_clamped"] {
            assert_eq!(
                log_events(d.path(), ev).len(),
                usize::from(Some(ev) == *event),
                "{raw}: {ev}"
            );
        }
    }
}

#[test]
fn seventeenth_slot_of_an_alias_is_refused_logged_and_the_first_16_untouched() {
    let d = root();
    let a = open(d.path(), "ses_a", "Alpha");
    let other = open(d.path(), "ses_o", "other");
    for i in 0..16 {
        a.open_pending_reply(&format!("per_{i}"), "permission", &sv(&["boss"]))
            .unwrap();
    }
    let path = d.path().join("pending_permissions.json");
    let before = std::fs::read(&path).unwrap();
    let e = a
        .open_pending_reply("per_16", "permission", &sv(&["boss"]))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::PendingCap);
    assert!(
        e.to_string().starts_with(
            "open_pending_reply rejected: per-alias cap reached for alias \"Alpha\". "
        ),
        "{e}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let rej = log_events(d.path(), "pending_cap_reject");
    assert_eq!(rej.len(), 1);
    assert_eq!(rej[0]["cap"], "per_alias");
    assert_eq!(rej[0]["limit"], 16);
    // Another alias is not affected; every first slot still checks valid.
    other
        .open_pending_reply("per_x", "permission", &sv(&["boss"]))
        .unwrap();
    let boss = open(d.path(), "ses_boss", "boss");
    for i in 0..16 {
        assert!(boss.check_pending_reply(&format!("per_{i}")).unwrap().valid);
    }
}

#[test]
fn per_alias_cap_counts_case_insensitively_and_ignores_expired() {
    let d = root();
    let mut o = opts(d.path(), "ses_a", "alpha");
    o.pending_per_alias_cap = Some(2);
    let a = Broker::open(o).unwrap();
    write_pending(
        d.path(),
        &[
            c2c_slot("p1", "ses_old", "ALPHA", &["boss"], now() + 100.0),
            c2c_slot("p2", "ses_old", "Alpha", &["boss"], now() - 100.0),
        ],
    );
    a.open_pending_reply("p3", "permission", &sv(&["boss"]))
        .unwrap();
    assert_eq!(
        a.open_pending_reply("p4", "permission", &sv(&["boss"]))
            .unwrap_err()
            .code(),
        ErrorCode::PendingCap
    );
}

#[test]
fn global_cap_configured_small() {
    let d = root();
    let handles: Vec<Broker> = (0..3)
        .map(|i| {
            let mut o = opts(d.path(), &format!("ses_{i}"), &format!("a{i}"));
            o.pending_global_cap = Some(3);
            Broker::open(o).unwrap()
        })
        .collect();
    handles[0]
        .open_pending_reply("p0", "permission", &sv(&["boss"]))
        .unwrap();
    handles[1]
        .open_pending_reply("p1", "permission", &sv(&["boss"]))
        .unwrap();
    handles[1]
        .open_pending_reply("p2", "permission", &sv(&["boss"]))
        .unwrap();
    let e = handles[2]
        .open_pending_reply("p3", "permission", &sv(&["boss"]))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::PendingCap);
    assert!(e
        .to_string()
        .starts_with("open_pending_reply rejected: global pending-permissions cap reached. "));
    assert_eq!(pending_file(d.path()).len(), 3);
    assert_eq!(
        log_events(d.path(), "pending_cap_reject")[0]["cap"],
        "global"
    );
}

#[test]
fn global_cap_default_1024() {
    let d = root();
    let b = open(d.path(), "ses_new", "newcomer");
    let exp = now() + 600.0;
    let recs: Vec<Value> = (0..DEFAULT_GLOBAL_CAP)
        .map(|i| {
            c2c_slot(
                &format!("per_{i}"),
                &format!("ses_{}", i / 16),
                &format!("alias{}", i / 16),
                &["boss"],
                exp,
            )
        })
        .collect();
    write_pending(d.path(), &recs);
    let started = std::time::Instant::now();
    let e = b
        .open_pending_reply("per_new", "permission", &sv(&["boss"]))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::PendingCap);
    assert!(e
        .to_string()
        .contains("global pending-permissions cap reached"));
    assert_eq!(pending_file(d.path()).len(), 1024);
    // One expired slot frees a place.
    let mut recs = recs;
    recs[1023]["expires_at"] = json!(now() - 1.0);
    write_pending(d.path(), &recs);
    b.open_pending_reply("per_new", "permission", &sv(&["boss"]))
        .unwrap();
    assert_eq!(pending_file(d.path()).len(), 1024);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn m4_live_prior_owner_refused_on_every_register_path() {
    let d = root();
    let x = open(d.path(), "ses_1", "X");
    x.open_pending_reply("per_1", "permission", &sv(&["boss"]))
        .unwrap();
    // The owner moves to another alias but stays alive (this test process).
    let _y = open(d.path(), "ses_1", "Y");
    for auto_alias in [false, true] {
        let mut o = opts(d.path(), "ses_2", "x");
        o.auto_alias = auto_alias;
        let e = Broker::open(o).unwrap_err();
        assert_eq!(e.code(), ErrorCode::AliasPending, "auto_alias {auto_alias}");
        assert!(e.to_string().contains("ses_1"));
    }
    // The store-level register operation (used by every path) refuses it too.
    let reg = crate::registry::Registration {
        session_id: "ses_3".into(),
        alias: "X".into(),
        pid: None,
        pid_start_time: None,
        registered_at: now(),
        plugin_version: None,
        client_type: None,
        directory: None,
        extra: Default::default(),
    };
    let root =
        crate::store::BrokerRoot::open(d.path(), crate::store::root::RootSource::Explicit).unwrap();
    assert_eq!(
        crate::registry::register(&root, reg, std::time::Duration::from_secs(1))
            .unwrap_err()
            .code(),
        ErrorCode::AliasPending
    );
}

#[test]
fn m4_dead_prior_owner_allowed() {
    let d = root();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let mut o = opts(d.path(), "ses_dead", "X");
    o.pid = Some(pid);
    let dead = Broker::open(o).unwrap();
    dead.open_pending_reply("per_1", "permission", &sv(&["boss"]))
        .unwrap();
    let fresh = open(d.path(), "ses_new", "x");
    assert_eq!(fresh.alias(), "x");
}

#[test]
fn m4_expired_slot_of_live_owner_allowed() {
    let d = root();
    let _y = open(d.path(), "ses_1", "Y");
    write_pending(
        d.path(),
        &[c2c_slot("per_1", "ses_1", "X", &["boss"], now() - 1.0)],
    );
    open(d.path(), "ses_2", "X");
}

#[test]
fn m4_owner_itself_allowed() {
    let d = root();
    let x = open(d.path(), "ses_1", "X");
    x.open_pending_reply("per_1", "permission", &sv(&["boss"]))
        .unwrap();
    let again = open(d.path(), "ses_1", "x");
    assert_eq!(again.session_id(), "ses_1");
    // its slot still works for its supervisors
    let boss = open(d.path(), "ses_boss", "boss");
    assert!(boss.check_pending_reply("per_1").unwrap().valid);
}

#[test]
fn interop_with_a_file_written_by_c2c() {
    let d = root();
    let boss = open(d.path(), "ses_boss", "Boss");
    let t = now();
    // c2c's exact text (newest first, float times, unknown extra field, a foreign record).
    let text = format!(
        r#"[{{"perm_id":"per_live","kind":"permission","requester_session_id":"claude-1","requester_alias":"Claude","supervisors":["boss","ops"],"created_at":{c},"expires_at":{e},"fallthrough_fired_at":[],"resolved_at":null,"verdict":null,"c2c_future":{{"k":1}}}},{{"perm_id":"per_old","kind":"question","requester_session_id":"claude-1","requester_alias":"Claude","supervisors":["boss"],"created_at":{oc},"expires_at":{oe},"fallthrough_fired_at":[],"resolved_at":null,"verdict":null}},{{"something":"else"}}]"#,
        c = t - 10.0,
        e = t + 590.0,
        oc = t - 700.0,
        oe = t - 100.0
    );
    std::fs::write(d.path().join("pending_permissions.json"), text).unwrap();

    // Expired-but-present reads as expired (reads filter, they do not prune).
    assert_eq!(
        boss.check_pending_reply("per_old")
            .unwrap()
            .error
            .as_deref(),
        Some("permission ID expired")
    );
    assert_eq!(
        boss.check_pending_reply("per_none")
            .unwrap()
            .error
            .as_deref(),
        Some("unknown permission ID")
    );
    let eve = open(d.path(), "ses_eve", "eve");
    assert_eq!(
        eve.check_pending_reply("per_live")
            .unwrap()
            .error
            .as_deref(),
        Some("reply from non-supervisor: eve")
    );
    let c = boss.check_pending_reply("per_live").unwrap();
    assert!(c.valid);
    assert_eq!(c.requester_session_id.as_deref(), Some("claude-1"));
    // The stamping write pruned the expired slot: from now on it is unknown, as in c2c
    // after its next write.
    assert_eq!(
        boss.check_pending_reply("per_old")
            .unwrap()
            .error
            .as_deref(),
        Some("unknown permission ID")
    );

    // The stamp kept c2c's unknown field and pruned the expired slot, kept the foreign one.
    let recs = pending_file(d.path());
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0]["c2c_future"], json!({"k": 1}));
    assert!(recs[0]["resolved_at"].is_f64());
    assert_eq!(recs[1], json!({"something": "else"}));

    // A record we write has exactly c2c's field names.
    boss.open_pending_reply("per_ours", "permission", &sv(&["Claude"]))
        .unwrap();
    let recs = pending_file(d.path());
    let keys: Vec<&str> = recs[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, crate::pending::C2C_SLOT_FIELDS);
    assert!(recs[0]["created_at"].is_f64() && recs[0]["expires_at"].is_f64());
    assert_eq!(recs[0]["supervisors"], json!(["Claude"]));
    assert_eq!(recs[1]["c2c_future"], json!({"k": 1}));
}

#[test]
fn corrupt_pending_file_is_an_error_not_empty() {
    let d = root();
    let b = open(d.path(), "ses_b", "b");
    std::fs::write(d.path().join("pending_permissions.json"), b"[{\"perm_id\":").unwrap();
    assert_eq!(
        b.check_pending_reply("per_1").unwrap_err().code(),
        ErrorCode::StoreCorrupt
    );
    assert_eq!(
        b.open_pending_reply("per_1", "permission", &sv(&["x"]))
            .unwrap_err()
            .code(),
        ErrorCode::StoreCorrupt
    );
    assert_eq!(
        std::fs::read(d.path().join("pending_permissions.json")).unwrap(),
        b"[{\"perm_id\":"
    );
}

#[test]
fn audit_lines_hash_ids_and_record_outcomes() {
    let d = root();
    let req = open(d.path(), "ses_requester_secret", "req");
    let boss = open(d.path(), "ses_boss_secret", "boss");
    req.open_pending_reply("per_secret", "permission", &sv(&["boss"]))
        .unwrap();
    boss.check_pending_reply("per_secret").unwrap();
    boss.check_pending_reply("per_missing").unwrap();
    let opens = log_events(d.path(), "pending_open");
    assert_eq!(opens[0]["perm"], crate::log::short_hash("per_secret"));
    assert_eq!(
        opens[0]["session"],
        crate::log::short_hash("ses_requester_secret")
    );
    assert_eq!(opens[0]["outcome"], "opened");
    let checks = log_events(d.path(), "pending_check");
    assert_eq!(checks[0]["outcome"], "valid");
    assert_eq!(checks[0]["stamped"], true);
    assert_eq!(
        checks[0]["requester_session"],
        crate::log::short_hash("ses_requester_secret")
    );
    assert_eq!(checks[1]["outcome"], "unknown");
    let text = std::fs::read_to_string(d.path().join("broker.log")).unwrap();
    for raw in ["per_secret", "ses_requester_secret", "ses_boss_secret"] {
        assert!(!text.contains(raw), "{raw} appears unhashed");
    }
}
