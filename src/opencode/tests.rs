//! The decoder against OpenCode 1.18.33 shapes: each fact, each malformed shape that decodes
//! to nothing, and the one "busy" rule.

use serde_json::{json, Value};

use super::json::ms;
use super::*;

fn ev(ty: &str, properties: Value) -> Value {
    json!({"type": ty, "properties": properties})
}

#[test]
fn message_info_with_int_or_float_times() {
    let info = json!({"id": "msg_a", "sessionID": "ses_1", "role": "assistant",
                      "parentID": "msg_u", "time": {"created": 1.0e12, "completed": 1_000_000_000_005i64},
                      "finish": "tool-calls", "error": {"name": "x"}, "summary": true});
    let Some(Event::MessageUpdated(m)) =
        decode_event(&ev("message.updated", json!({"info": info})))
    else {
        panic!("not decoded");
    };
    assert_eq!(
        m,
        MessageInfo {
            id: "msg_a".into(),
            session_id: "ses_1".into(),
            role: Role::Assistant,
            parent_id: Some("msg_u".into()),
            created_ms: 1_000_000_000_000,
            completed_ms: Some(1_000_000_000_005),
            finish: Some("tool-calls".into()),
            error: true,
            summary: true,
        }
    );
}

#[test]
fn malformed_messages_decode_to_nothing() {
    let base = json!({"id": "msg_u", "sessionID": "ses_1", "role": "user",
                      "time": {"created": 5}});
    assert!(decode_event(&ev("message.updated", json!({"info": base.clone()}))).is_some());
    for (key, bad) in [
        ("id", json!("")),
        ("id", json!(7)),
        ("sessionID", Value::Null),
        ("role", json!("system")),
        ("time", json!({"created": "5"})),
        ("time", json!({"created": f64::MAX})),
        ("time", json!({})),
    ] {
        let mut info = base.clone();
        info[key] = bad.clone();
        assert_eq!(
            decode_event(&ev("message.updated", json!({"info": info}))),
            None,
            "{key} = {bad}"
        );
    }
    // A user message's `summary` object is not a compaction summary; a null error is none.
    let mut info = base.clone();
    info["summary"] = json!({"diffs": []});
    info["error"] = Value::Null;
    let Some(Event::MessageUpdated(m)) =
        decode_event(&ev("message.updated", json!({"info": info})))
    else {
        panic!("not decoded");
    };
    assert!(!m.summary && !m.error);
    assert_eq!(decode_event(&ev("message.updated", json!({}))), None);
    assert_eq!(decode_event(&json!({"type": "message.updated"})), None);
}

#[test]
fn parts() {
    let part = |p: Value| decode_event(&ev("message.part.updated", json!({"part": p})));
    let kind = |p: Value| match part(p) {
        Some(Event::PartUpdated(p)) => Some(p.kind),
        _ => None,
    };
    let peer = json!({"sessionID": "ses_1", "messageID": "msg_u", "type": "text", "text": "hi",
                      "metadata": {"peerMessage": {"messageId": "c2c_1", "from": "bob",
                                                   "via": ["ses_p", 3, "ses_q"]}}});
    assert_eq!(
        kind(peer.clone()),
        Some(PartKind::PeerText(PeerMark {
            message_id: "c2c_1".into(),
            from: "bob".into(),
            via: vec!["ses_p".into(), "ses_q".into()],
        }))
    );
    // Compaction continue wins over a peer mark; it needs `synthetic: true`.
    let mut cc = peer.clone();
    cc["synthetic"] = json!(true);
    cc["metadata"]["compaction_continue"] = json!(true);
    assert_eq!(kind(cc.clone()), Some(PartKind::CompactionContinue));
    cc["synthetic"] = json!("true");
    assert!(matches!(kind(cc), Some(PartKind::PeerText(_))));
    // A peer mark without `from`, or a plain text part: nothing.
    let mut no_from = peer.clone();
    no_from["metadata"]["peerMessage"]["from"] = json!("");
    assert_eq!(kind(no_from), None);
    assert_eq!(
        kind(json!({"sessionID": "ses_1", "messageID": "m", "type": "text", "text": "x"})),
        None
    );
    // Missing ids or type: nothing.
    for key in ["sessionID", "messageID", "type"] {
        let mut p = peer.clone();
        p.as_object_mut().unwrap().remove(key);
        assert_eq!(part(p), None, "{key}");
    }
    assert_eq!(
        kind(json!({"sessionID": "s", "messageID": "m", "type": "compaction", "auto": 1})),
        Some(PartKind::Compaction { auto: false })
    );
    assert_eq!(
        kind(json!({"sessionID": "s", "messageID": "m", "type": "reasoning"})),
        None
    );
}

#[test]
fn tool_parts_input_and_task() {
    let tool = |status: Value, input: Value| {
        json!({"sessionID": "ses_1", "messageID": "msg_a", "type": "tool", "callID": "call_1",
               "tool": "task", "state": {"status": status, "input": input,
               "metadata": {"sessionId": "ses_c"}, "time": {"start": 10, "end": 20.0}}})
    };
    let decode = |p: Value| match decode_event(&ev("message.part.updated", json!({"part": p}))) {
        Some(Event::PartUpdated(Part {
            kind: PartKind::Tool(t),
            ..
        })) => Some(t),
        _ => None,
    };
    let t = decode(tool(
        json!("running"),
        json!({"prompt": "p", "command": "ls", "filePath": "/a", "content": "big"}),
    ))
    .unwrap();
    assert_eq!(t.call_id, "call_1");
    // Only the guardrail's TOOL_ARG_KEYS are kept.
    assert_eq!(t.input, Some(json!({"command": "ls", "filePath": "/a"})));
    assert_eq!(
        t.task,
        Some(TaskRun {
            child_session_id: "ses_c".into(),
            start_ms: 10,
            end_ms: Some(20),
        })
    );
    // Pending or status-less: arguments not parsed yet; the task facts still count.
    for status in [json!("pending"), Value::Null, json!("")] {
        let t = decode(tool(status.clone(), json!({"prompt": "p"}))).unwrap();
        assert_eq!(t.input, None, "{status}");
        assert!(t.task.is_some());
    }
    assert_eq!(
        decode(tool(json!("completed"), json!("str")))
            .unwrap()
            .input,
        None
    );
    // No start time, or another tool: no task facts.
    let mut p = tool(json!("running"), json!({}));
    p["state"]["time"] = json!({});
    assert_eq!(decode(p).unwrap().task, None);
    let mut p = tool(json!("running"), json!({}));
    p["tool"] = json!("bash");
    assert_eq!(decode(p).unwrap().task, None);
    // No callID: nothing.
    let mut p = tool(json!("running"), json!({}));
    p["callID"] = json!("");
    assert_eq!(decode(p), None);
}

#[test]
fn busy_is_everything_but_idle() {
    let status = |st: Value| {
        decode_event(&ev(
            "session.status",
            json!({"sessionID": "ses_1", "status": st}),
        ))
    };
    let busy = |b| {
        Some(Event::SessionStatus {
            session_id: "ses_1".into(),
            busy: b,
        })
    };
    assert_eq!(status(json!({"type": "idle"})), busy(false));
    assert_eq!(status(json!({"type": "busy"})), busy(true));
    assert_eq!(
        status(json!({"type": "retry", "attempt": 1, "message": "m", "next": 5})),
        busy(true)
    );
    // An unknown type is not evidence of idleness.
    assert_eq!(status(json!({"type": "compacting"})), busy(true));
    assert_eq!(status(json!({"type": ""})), None);
    assert_eq!(status(json!({})), None);
    assert_eq!(
        decode_event(&ev("session.idle", json!({"sessionID": "ses_1"}))),
        busy(false)
    );
    assert_eq!(decode_event(&ev("session.idle", json!({}))), None);
    assert!(is_busy_status("retry") && !is_busy_status("idle"));
    // The same rule for a status object read elsewhere (`GET /session/status` values).
    assert_eq!(
        session_busy(&json!({"type": "retry", "attempt": 2})),
        Some(true)
    );
    assert_eq!(session_busy(&json!({"type": "idle"})), Some(false));
    assert_eq!(session_busy(&json!({"type": 3})), None);
    assert_eq!(session_busy(&Value::Null), None);
}

#[test]
fn sessions() {
    let info = json!({"id": "ses_c", "parentID": "ses_p", "title": "t"});
    let want = SessionInfo {
        id: "ses_c".into(),
        parent_id: Some("ses_p".into()),
    };
    assert_eq!(
        decode_event(&ev("session.created", json!({"info": info}))),
        Some(Event::SessionCreated(want.clone()))
    );
    assert_eq!(
        decode_event(&ev("session.updated", json!({"info": info}))),
        Some(Event::SessionUpdated(want.clone()))
    );
    assert_eq!(
        decode_event(&ev("session.deleted", json!({"info": info}))),
        Some(Event::SessionDeleted {
            session_id: "ses_c".into()
        })
    );
    assert_eq!(
        decode_event(&ev("session.created", json!({"info": {"title": "t"}}))),
        None
    );
    assert_eq!(decode_event(&ev("file.edited", json!({"file": "x"}))), None);
    assert_eq!(decode_event(&json!("not an event")), None);

    // Fetched: no id → nothing; messages not an array → history not complete.
    assert_eq!(FetchedSession::decode(&Value::Null, &json!([])), None);
    let f = FetchedSession::decode(&info, &Value::Null).unwrap();
    assert_eq!((f.session, f.messages), (want, None));
    let m = json!({"info": {"id": "msg_u", "sessionID": "ses_c", "role": "user",
                            "time": {"created": 1}},
                   "parts": [{"type": "compaction", "sessionID": "ses_c", "messageID": "msg_u",
                              "auto": true}, null, 5]});
    let f = FetchedSession::decode(&info, &json!([m, null])).unwrap();
    let msgs = f.messages.unwrap();
    assert_eq!(msgs.len(), 2);
    assert!(msgs[0].info.is_some());
    assert_eq!(msgs[0].parts.len(), 1);
    assert_eq!(msgs[1], FetchedMessage::default());
}

#[test]
fn permission_requests() {
    let asked = json!({"id": "per_1", "sessionID": "ses_1", "permission": "bash",
                       "patterns": ["touch *", 4], "metadata": {"command": "touch x"},
                       "always": ["*"], "tool": {"messageID": "msg_a", "callID": "call_1"}});
    let r = PermissionAsked::decode(PermissionEventKind::Asked, &asked).unwrap();
    assert_eq!(
        r,
        PermissionAsked {
            kind: PermissionEventKind::Asked,
            id: "per_1".into(),
            session_id: "ses_1".into(),
            permission: "bash".into(),
            tool_message_id: Some("msg_a".into()),
            call_id: Some("call_1".into()),
            command: Some("touch x".into()),
            filepath: None,
            patterns: vec!["touch *".into()],
            resources: vec![],
        }
    );
    let v2 = json!({"id": "per_2", "sessionID": "ses_1", "action": "edit",
                    "resources": ["a.txt"], "metadata": {"filepath": "/p/a.txt"},
                    "source": {"type": "tool", "messageID": "msg_a", "callID": "call_2"}});
    let r = PermissionAsked::decode(PermissionEventKind::V2Asked, &v2).unwrap();
    assert_eq!(
        (
            r.permission.as_str(),
            r.filepath.as_deref(),
            r.resources.len()
        ),
        ("edit", Some("/p/a.txt"), 1)
    );
    assert_eq!(r.call_id.as_deref(), Some("call_2"));
    // Read with the other kind's fields: no tool message, no permission, nothing invented.
    let r = PermissionAsked::decode(PermissionEventKind::Asked, &v2).unwrap();
    assert_eq!((r.permission.as_str(), r.tool_message_id), ("", None));
    assert_eq!(
        PermissionAsked::decode(PermissionEventKind::Asked, &json!({"id": "per_x"})),
        Err(MalformedPermission {
            request_id: "per_x".into(),
            session_id: String::new(),
        })
    );
    assert_eq!(
        PermissionEventKind::parse("permission.v2.asked"),
        Some(PermissionEventKind::V2Asked)
    );
    assert_eq!(
        PermissionEventKind::parse("asked").map(|k| k.event_type()),
        Some("permission.asked")
    );
    assert_eq!(PermissionEventKind::parse("permission.replied"), None);
}

#[test]
fn times_int_float_or_nothing() {
    // napi hands JS numbers past 2^31 (every epoch-ms time) to Rust as f64.
    assert_eq!(
        ms(Some(&json!(1_795_998_702_932.0_f64))),
        Some(1_795_998_702_932)
    );
    assert_eq!(ms(Some(&json!(12))), Some(12));
    assert_eq!(ms(Some(&json!(f64::NAN))), None);
    assert_eq!(ms(Some(&json!(1.0e16))), None);
    assert_eq!(ms(Some(&json!("12"))), None);
    assert_eq!(ms(None), None);
}

/// Issue 16: the napi layer copies only `request_fields(kind)` out of JavaScript; decoding that
/// copy gives the same request (or the same malformed answer) as decoding the whole payload.
#[test]
fn a_request_projected_to_its_read_fields_decodes_the_same() {
    use super::permission::project_request;
    let payloads = [
        json!({"id": "per_1", "sessionID": "ses_1", "permission": "bash", "patterns": ["ls *"],
               "metadata": {"command": "ls", "description": "x"}, "always": ["ls *"],
               "tool": {"messageID": "msg_1", "callID": "call_1", "extra": 1}}),
        json!({"id": "per_2", "sessionID": "ses_1", "permission": "edit", "patterns": ["a.ts"],
               "metadata": {"filepath": "/p/a.ts", "diff": "-a\n+b\n".repeat(100)},
               "tool": {"messageID": "msg_1", "callID": "call_2"}}),
        json!({"id": "per_3", "sessionID": "ses_1", "action": "edit", "resources": ["a.txt"],
               "metadata": {"filepath": "/p/a.txt"}, "source": {"messageID": "m", "callID": "c"}}),
        json!({"id": "per_4", "sessionID": "ses_1", "permission": 7, "patterns": "x",
               "metadata": "not an object", "tool": ["msg_1"], "source": null}),
        json!({"id": "per_5", "sessionID": "ses_1", "metadata": [1, 2], "tool": {"messageID": 5}}),
        json!({"id": "", "sessionID": "ses_1"}),
        json!({"sessionID": "ses_1"}),
        json!({"id": 1, "sessionID": ["x"]}),
        json!(null),
        json!("per_1"),
        json!([{"id": "per_1", "sessionID": "ses_1"}]),
    ];
    for p in &payloads {
        for kind in [PermissionEventKind::Asked, PermissionEventKind::V2Asked] {
            assert_eq!(
                PermissionAsked::decode(kind, &project_request(kind, p)),
                PermissionAsked::decode(kind, p),
                "{p}"
            );
        }
    }
    // nothing else is copied: the edit's diff and the unread keys are gone
    let asked = PermissionEventKind::Asked;
    let e = project_request(asked, &payloads[1]);
    assert!(e["metadata"].get("diff").is_none());
    assert!(project_request(asked, &payloads[0]).get("always").is_none());
    assert!(project_request(asked, &payloads[2])
        .get("resources")
        .is_none());
}

/// Every path of `v` (object keys and array indices), root first.
fn paths(v: &Value, at: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    match v {
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            let mut p = at.clone();
            p.push(k.clone());
            paths(x, p, out)
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| {
            let mut p = at.clone();
            p.push(i.to_string());
            paths(x, p, out)
        }),
        _ => {}
    }
}

fn at_mut<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match v {
        Value::Array(a) => &mut a[k.parse::<usize>().unwrap()],
        _ => &mut v[k.as_str()],
    })
}

#[test]
fn projected_events_decode_like_whole_ones() {
    use crate::opencode::{project, EVENT_FIELDS};
    let long = "x".repeat(10_000);
    let bases = [
        ev(
            "message.updated",
            json!({"info": {"id": "msg_a", "sessionID": "ses_1",
            "role": "assistant", "parentID": "msg_u", "time": {"created": 5, "completed": 9.0},
            "finish": "stop", "error": {"name": "E", "data": {"message": long}},
            "summary": true, "tokens": {"input": 3}}}),
        ),
        ev(
            "message.updated",
            json!({"info": {"id": "msg_u", "sessionID": "ses_1",
            "role": "user", "time": {"created": 5}, "summary": {"diffs": [{"patch": long}]}}}),
        ),
        ev(
            "message.part.updated",
            json!({"part": {"id": "prt", "sessionID": "ses_1",
            "messageID": "msg_u", "type": "text", "text": long, "synthetic": true,
            "metadata": {"peerMessage": {"messageId": "m1", "from": "peer",
            "via": ["ses_x", 3, {"a": 1}], "extra": long}, "compaction_continue": false}},
            "delta": long}),
        ),
        ev(
            "message.part.updated",
            json!({"part": {"sessionID": "s", "messageID": "m",
            "type": "text", "text": "c", "synthetic": true,
            "metadata": {"compaction_continue": true}}}),
        ),
        ev(
            "message.part.updated",
            json!({"part": {"sessionID": "s", "messageID": "m",
            "type": "compaction", "auto": true}}),
        ),
        ev(
            "message.part.updated",
            json!({"part": {"sessionID": "ses_1", "messageID": "msg_a",
            "type": "tool", "callID": "call_1", "tool": "task", "state": {"status": "running",
            "input": {"prompt": long, "command": "ls", "filePath": "/a", "content": long},
            "output": long, "metadata": {"sessionId": "ses_c", "diff": long},
            "time": {"start": 10, "end": 20.0}}}}),
        ),
        ev(
            "session.created",
            json!({"info": {"id": "ses_c", "parentID": "ses_p",
            "title": long}}),
        ),
        ev(
            "session.updated",
            json!({"info": {"id": "ses_c", "title": "t"}}),
        ),
        ev(
            "session.status",
            json!({"sessionID": "ses_1", "status": {"type": "retry",
            "attempt": 1, "message": long, "next": 5}}),
        ),
        ev("session.idle", json!({"sessionID": "ses_1"})),
        ev("session.deleted", json!({"info": {"id": "ses_1"}})),
        ev(
            "message.part.delta",
            json!({"sessionID": "s", "delta": long}),
        ),
    ];
    let alts = [
        Value::Null,
        json!(true),
        json!(false),
        json!(0),
        json!(7.5),
        json!(""),
        json!("true"),
        json!("idle"),
        json!({}),
        json!({"type": "idle", "id": "x"}),
        json!([]),
        json!(["x"]),
    ];
    let mut cases = 0;
    for base in &bases {
        let mut all = Vec::new();
        paths(base, Vec::new(), &mut all);
        let mut variants = vec![base.clone()];
        for p in &all {
            if let Some((last, parent)) = p.split_last() {
                let mut removed = base.clone();
                if let Value::Object(o) = at_mut(&mut removed, parent) {
                    o.remove(last);
                }
                variants.push(removed);
            }
            for alt in &alts {
                let mut v = base.clone();
                *at_mut(&mut v, p) = alt.clone();
                variants.push(v);
            }
        }
        for v in &variants {
            let projected = project(v, EVENT_FIELDS);
            assert_eq!(decode_event(&projected), decode_event(v), "{v}");
            assert!(!projected.to_string().contains(&long), "{projected}");
            cases += 1;
        }
    }
    assert!(cases > 500, "{cases}");
    // a peer part still decodes after projection (the test is not vacuous)
    assert!(matches!(
        decode_event(&project(&bases[2], EVENT_FIELDS)),
        Some(Event::PartUpdated(Part {
            kind: PartKind::PeerText(_),
            ..
        }))
    ));
}
