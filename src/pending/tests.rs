//! Unit tests of the pending-slot records and rules.
use super::*;
use serde_json::json;
use std::time::Duration;

fn slot(perm: &str, alias: &str, expires_at: f64) -> PendingSlot {
    PendingSlot {
        perm_id: perm.into(),
        kind: "permission".into(),
        requester_session_id: format!("ses_{alias}"),
        requester_alias: alias.into(),
        supervisors: vec!["Boss".into()],
        created_at: expires_at - 600.0,
        expires_at,
        fallthrough_fired_at: vec![],
        resolved_at: None,
        verdict: None,
        extra: Map::new(),
    }
}

#[test]
fn ttl_edge_cases() {
    let t = |raw: Option<&str>| parse_ttl(raw);
    assert_eq!(t(None).secs, 600.0);
    assert_eq!(t(Some("")).secs, 600.0);
    assert_eq!(t(Some(" 30 ")).secs, 30.0);
    assert_eq!(t(Some("2.5")).secs, 2.5);
    for bad in [
        "inf", "nan", "NaN", "-inf", "Infinity", "abc", "10s", "0x10",
    ] {
        let r = t(Some(bad));
        assert_eq!(r.secs, 600.0, "{bad}");
        assert!(r.invalid.is_some(), "{bad}");
    }
    for (raw, want) in [
        ("-5", 1.0),
        ("0", 1.0),
        ("0.2", 1.0),
        ("1e9", 86400.0),
        ("86401", 86400.0),
    ] {
        let r = t(Some(raw));
        assert_eq!(r.secs, want, "{raw}");
        assert!(r.clamped && r.invalid.is_none(), "{raw}");
    }
    assert!(!t(Some("86400")).clamped);
    assert_eq!(
        Duration::from_secs_f64(t(Some("1")).secs),
        Duration::from_secs(1)
    );
}

#[test]
fn kinds() {
    assert_eq!(
        PendingKind::parse("permission").unwrap(),
        PendingKind::Permission
    );
    assert_eq!(PendingKind::parse("question").unwrap().as_str(), "question");
    for bad in ["Permission", "", "approve", "question "] {
        assert_eq!(
            PendingKind::parse(bad).unwrap_err().code(),
            crate::ErrorCode::InvalidOption
        );
    }
}

#[test]
fn supervisors_are_validated_deduplicated_and_exclude_the_requester() {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        normalize_supervisors(&v(&["Boss", "me", "BOSS", "other"]), "ME").unwrap(),
        v(&["Boss", "other"])
    );
    assert_eq!(
        normalize_supervisors(&[], "me").unwrap_err().code(),
        crate::ErrorCode::InvalidOption
    );
    assert_eq!(
        normalize_supervisors(&v(&["Me", "me"]), "mE")
            .unwrap_err()
            .code(),
        crate::ErrorCode::InvalidOption
    );
    for bad in ["", "a b", "c2c", "../x"] {
        assert_eq!(
            normalize_supervisors(&v(&["Boss", bad]), "me")
                .unwrap_err()
                .code(),
            crate::ErrorCode::InvalidId
        );
    }
}

#[test]
fn record_has_c2c_field_names_in_order() {
    let v = slot("per_1", "Req", 1000.0).to_value();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, C2C_SLOT_FIELDS);
    assert_eq!(v["resolved_at"], Value::Null);
    assert_eq!(v["verdict"], Value::Null);
    assert_eq!(v["fallthrough_fired_at"], json!([]));
}

#[test]
fn add_refuses_duplicates_and_caps_without_touching_records() {
    let now = 1000.0;
    let caps = Caps {
        per_alias: 2,
        global: 3,
    };
    let mut recs = vec![json!({"not": "a slot"})];
    add_slot(&mut recs, &slot("p1", "a", now + 10.0), caps, now).unwrap();
    let before = recs.clone();
    assert_eq!(
        add_slot(&mut recs, &slot("p1", "b", now + 10.0), caps, now),
        Err(AddRefused::Duplicate)
    );
    assert_eq!(recs, before);
    add_slot(&mut recs, &slot("p2", "A", now + 10.0), caps, now).unwrap();
    let before = recs.clone();
    assert!(matches!(
        add_slot(&mut recs, &slot("p3", "a", now + 10.0), caps, now),
        Err(AddRefused::Cap(CapHit::PerAlias { active: 2, cap: 2 }))
    ));
    assert_eq!(recs, before);
    add_slot(&mut recs, &slot("p3", "b", now + 10.0), caps, now).unwrap();
    assert!(matches!(
        add_slot(&mut recs, &slot("p4", "c", now + 10.0), caps, now),
        Err(AddRefused::Cap(CapHit::Global { active: 3, cap: 3 }))
    ));
    // newest first; the foreign record survives
    assert_eq!(recs[0]["perm_id"], "p3");
    assert_eq!(recs.last().unwrap(), &json!({"not": "a slot"}));
}

#[test]
fn expired_slots_neither_block_nor_count_and_are_pruned_on_write() {
    let now = 1000.0;
    let caps = Caps {
        per_alias: 1,
        global: 1,
    };
    let mut recs = vec![
        slot("p1", "a", now - 1.0).to_value(),
        slot("p0", "a", now).to_value(),
    ];
    let pruned = add_slot(&mut recs, &slot("p1", "a", now + 5.0), caps, now).unwrap();
    assert_eq!(pruned, 2, "expires_at == now is expired");
    assert_eq!(recs.len(), 1);
}

#[test]
fn four_outcomes() {
    let now = 1000.0;
    let mut recs = vec![
        slot("live", "req", now + 10.0).to_value(),
        slot("old", "req", now - 10.0).to_value(),
    ];
    let (o, k, _) = evaluate(&recs, "live", "boss", now);
    assert_eq!((o.valid, k), (true, CheckKind::Valid));
    assert_eq!(o.requester_session_id.as_deref(), Some("ses_req"));
    let (o, k, _) = evaluate(&recs, "live", "Mallory", now);
    assert_eq!(k, CheckKind::NonSupervisor);
    assert_eq!(
        o.error.as_deref(),
        Some("reply from non-supervisor: Mallory")
    );
    assert_eq!(o.requester_session_id, None);
    let (o, k, _) = evaluate(&recs, "old", "Boss", now);
    assert_eq!(
        (o.error.as_deref(), k),
        (Some("permission ID expired"), CheckKind::Expired)
    );
    let (o, k, _) = evaluate(&recs, "nope", "Boss", now);
    assert_eq!(
        (o.error.as_deref(), k),
        (Some("unknown permission ID"), CheckKind::Unknown)
    );
    // perm ids are compared exactly
    assert_eq!(evaluate(&recs, "LIVE", "boss", now).1, CheckKind::Unknown);
    // an active duplicate (left by c2c) behind an expired one still decides
    recs.insert(0, slot("live", "req", now - 1.0).to_value());
    assert_eq!(evaluate(&recs, "live", "boss", now).1, CheckKind::Valid);
}
