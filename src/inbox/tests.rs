//! Unit tests of inbox records: reading, repair, set-aside.
use super::*;

#[test]
fn derived_id_depends_on_the_message_only() {
    let base = serde_json::json!({"from_alias":"bob","to_alias":"alice#lobby",
        "content":"room post from bob","ts":1796055331.988295});
    let id = derived_message_id(&base).unwrap();
    assert!(id.starts_with(DERIVED_ID_PREFIX) && id.len() == DERIVED_ID_PREFIX.len() + 32);
    // key order, number spelling and our extras do not change it
    let same: Value = serde_json::from_str(
        r#"{"repaired":true,"ts":1.796055331988295e9,"content":"room post from bob","to_alias":"alice#lobby","from_alias":"bob","deferrable":false}"#,
    )
    .unwrap();
    assert_eq!(derived_message_id(&same).unwrap(), id);
    assert_eq!(raw_message_id(&same).unwrap(), id.as_str());
    assert_eq!(Message::from_value(&same).unwrap().message_id, id);
    // every one of the four fields does
    for (k, v) in [
        ("from_alias", serde_json::json!("carol")),
        ("to_alias", serde_json::json!("carol#lobby")),
        ("content", serde_json::json!("room post from bob!")),
        ("ts", serde_json::json!(1796055331.988296)),
    ] {
        let mut other = base.clone();
        other[k] = v;
        assert_ne!(derived_message_id(&other).unwrap(), id, "{k}");
    }
    // a record with an id keeps it; a record of another shape has none
    let with_id =
        serde_json::json!({"from_alias":"a","to_alias":"b","content":"c","message_id":"m1"});
    assert_eq!(derived_message_id(&with_id), None);
    assert_eq!(raw_message_id(&with_id).unwrap(), "m1");
    assert_eq!(derived_message_id(&serde_json::json!({"kind":"x"})), None);
    assert_eq!(
        derived_message_id(&serde_json::json!({"from_alias":"a","to_alias":"b","content":1})),
        None
    );
}

#[test]
fn c2c_record_roundtrips_with_unknown_fields() {
    let raw = serde_json::json!({
        "from_alias": "a", "to_alias": "b#room1", "content": "hi", "ts": 1.25,
        "message_id": "m1", "reply_via": "x", "deferrable": true
    });
    let m = Message::from_value(&raw).unwrap();
    assert_eq!(m.room_id(), Some("room1"));
    assert_eq!(m.extra["reply_via"], "x");
    assert_eq!(m.to_value(), raw);
}
