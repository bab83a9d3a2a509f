//! The gate through its JSON entry points: the decision table (3 modes × peer/local ×
//! guardrail hit/miss × asked/v2.asked), dedup, the need-* loop, tool arguments, the audit
//! line, and the busy-session race (threats.md "Permission authority").

use std::collections::HashMap;

use serde_json::{json, Value};

use super::*;
use crate::opencode::{self, PermissionEventKind};

/// The gate's JSON entry points as the napi class drives them: [`crate::opencode`] decodes,
/// then the gate sees the facts (so these tests cover the decoder and the gate together).
trait RawJson {
    fn observe_json(&mut self, event: &Value, now_ms: EpochMs);
    fn decide_json(
        &mut self,
        kind: PermissionEventKind,
        request: &Value,
        tool_input: Option<&Value>,
    ) -> GateDecision;
    fn feed_message_json(&mut self, message: &Value);
    fn feed_session_json(&mut self, session: &Value, messages: &Value);
}

impl RawJson for PermissionGate {
    fn observe_json(&mut self, event: &Value, now_ms: EpochMs) {
        if let Some(e) = opencode::decode_event(event) {
            self.observe(e, now_ms);
        }
    }
    fn decide_json(
        &mut self,
        kind: PermissionEventKind,
        request: &Value,
        tool_input: Option<&Value>,
    ) -> GateDecision {
        match opencode::PermissionAsked::decode(kind, request) {
            Ok(r) => self.decide(&r, tool_input),
            Err(m) => GateDecision::malformed(&m),
        }
    }
    fn feed_message_json(&mut self, message: &Value) {
        self.feed_message(opencode::FetchedMessage::decode(message));
    }
    fn feed_session_json(&mut self, session: &Value, messages: &Value) {
        if let Some(f) = opencode::FetchedSession::decode(session, messages) {
            self.feed_session(f);
        }
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    log: PathBuf,
    gate: PermissionGate,
}

fn fixture_with(
    mode: Option<&str>,
    env: Option<&str>,
    started: Option<EpochMs>,
) -> Result<Fixture> {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let log = dir.path().join("broker.log");
    let gate = PermissionGate::new(GateConfig {
        peer_permissions: mode.map(str::to_string),
        env_peer_permissions: env.map(str::to_string),
        directory: project.clone(),
        worktree: project,
        home,
        audit: Some(AuditLog::new(log.clone())),
        protected_roots: Vec::new(),
        limits: Limits {
            instance_started_ms: started,
            ..Limits::default()
        },
    })?;
    Ok(Fixture {
        _dir: dir,
        log,
        gate,
    })
}

fn fixture(mode: &str) -> Fixture {
    fixture_with(Some(mode), None, Some(0)).unwrap()
}

fn log_lines(f: &Fixture) -> Vec<Value> {
    AuditLog::new(f.log.clone())
        .tail(1000)
        .into_iter()
        .filter(|v| v["event"] == "permission_decision")
        .collect()
}

fn ev(ty: &str, properties: Value) -> Value {
    json!({"type": ty, "properties": properties})
}

fn session_created(sid: &str, parent: Option<&str>) -> Value {
    let mut info = json!({"id": sid, "title": "t", "directory": "/p"});
    if let Some(p) = parent {
        info["parentID"] = json!(p);
    }
    ev("session.created", json!({"info": info}))
}

fn user(id: &str, sid: &str, created: i64) -> Value {
    json!({"id": id, "sessionID": sid, "role": "user", "time": {"created": created},
           "summary": {"diffs": []}})
}

fn asst(id: &str, sid: &str, parent: &str, created: i64, done: Option<(i64, &str)>) -> Value {
    let mut v = json!({"id": id, "sessionID": sid, "role": "assistant", "parentID": parent,
                       "time": {"created": created}});
    if let Some((c, finish)) = done {
        v["time"]["completed"] = json!(c);
        v["finish"] = json!(finish);
    }
    v
}

fn msg_updated(info: Value) -> Value {
    ev("message.updated", json!({"info": info}))
}

fn text_part(mid: &str, sid: &str, peer: Option<(&str, &str)>) -> Value {
    let mut p = json!({"id": format!("prt_{mid}"), "sessionID": sid, "messageID": mid,
                       "type": "text", "text": "hi"});
    if let Some((pid, from)) = peer {
        p["synthetic"] = json!(true);
        p["metadata"] =
            json!({"peerMessage": {"messageId": pid, "from": from, "via": ["ses_peer"]}});
    }
    p
}

fn tool_part(mid: &str, sid: &str, call: &str, input: Value) -> Value {
    json!({"id": format!("prt_t_{mid}"), "sessionID": sid, "messageID": mid, "type": "tool",
           "callID": call, "tool": "bash",
           "state": {"status": "running", "input": input, "time": {"start": 1}}})
}

/// The parent's `task` tool part as OpenCode 1.18.33 publishes it once the child exists.
fn task_part(mid: &str, sid: &str, call: &str, child: &str, start: i64, end: Option<i64>) -> Value {
    let mut time = json!({"start": start});
    if let Some(e) = end {
        time["end"] = json!(e);
    }
    json!({"id": format!("prt_k_{mid}"), "sessionID": sid, "messageID": mid, "type": "tool",
           "callID": call, "tool": "task",
           "state": {"status": if end.is_some() { "completed" } else { "running" },
                     "input": {"description": "d", "prompt": "p", "subagent_type": "general"},
                     "metadata": {"parentSessionId": sid, "sessionId": child},
                     "time": time}})
}

fn part_updated(part: Value) -> Value {
    ev("message.part.updated", json!({"part": part}))
}

fn asked(id: &str, sid: &str, permission: &str, meta: Value, mid: &str, call: &str) -> Value {
    json!({"id": id, "sessionID": sid, "permission": permission, "patterns": [],
           "metadata": meta, "always": ["*"], "tool": {"messageID": mid, "callID": call}})
}

fn v2_asked(id: &str, sid: &str, action: &str, meta: Value, mid: &str, call: &str) -> Value {
    json!({"id": id, "sessionID": sid, "action": action, "resources": [], "metadata": meta,
           "source": {"type": "tool", "messageID": mid, "callID": call}})
}

/// A session `sid` whose turn is started by `msg_u` (peer-marked when `peer`), with one
/// running assistant step `msg_a` whose bash tool call `call_1` runs `command`.
fn turn(g: &mut PermissionGate, sid: &str, peer: bool, command: &str) {
    g.observe_json(&session_created(sid, None), 10);
    g.observe_json(&msg_updated(user("msg_u", sid, 1_000)), 1_000);
    let mark = peer.then_some(("c2c_1", "bob"));
    g.observe_json(&part_updated(text_part("msg_u", sid, mark)), 1_000);
    g.observe_json(
        &ev(
            "session.status",
            json!({"sessionID": sid, "status": {"type": "busy"}}),
        ),
        1_001,
    );
    g.observe_json(
        &msg_updated(asst("msg_a", sid, "msg_u", 1_002, None)),
        1_002,
    );
    g.observe_json(
        &part_updated(tool_part(
            "msg_a",
            sid,
            "call_1",
            json!({"command": command}),
        )),
        1_003,
    );
}

fn decide(
    g: &mut PermissionGate,
    kind: PermissionEventKind,
    id: &str,
    sid: &str,
    command: &str,
) -> GateDecision {
    let meta = json!({"command": command});
    let req = match kind {
        PermissionEventKind::Asked => asked(id, sid, "bash", meta, "msg_a", "call_1"),
        PermissionEventKind::V2Asked => v2_asked(id, sid, "bash", meta, "msg_a", "call_1"),
    };
    g.decide_json(kind, &req, None)
}

#[test]
fn decision_table_through_json() {
    let harmless = "touch peer-made.txt";
    let protected = "echo 'alias ls=rm' >> ~/.bashrc";
    let mut cases = 0;
    for kind in [PermissionEventKind::Asked, PermissionEventKind::V2Asked] {
        for mode in ["allow", "ask", "deny"] {
            for peer in [false, true] {
                for hit in [false, true] {
                    let mut f = fixture(mode);
                    let cmd = if hit { protected } else { harmless };
                    turn(&mut f.gate, "ses_1", peer, cmd);
                    let d = decide(&mut f.gate, kind, "per_1", "ses_1", cmd);
                    let want = match (peer, mode, hit) {
                        (false, _, _) => Action::Leave,
                        (true, "allow", false) => Action::Once,
                        (true, "allow", true) => Action::Leave,
                        (true, "ask", _) => Action::Leave,
                        (true, "deny", _) => Action::Reject,
                        _ => unreachable!(),
                    };
                    let ctx = format!("{kind:?} {mode} peer={peer} hit={hit}: {d:?}");
                    assert_eq!(d.action, want, "{ctx}");
                    assert_eq!(d.request_id, "per_1");
                    assert_eq!(d.session_id, "ses_1");
                    assert_eq!(
                        d.basis,
                        Some(if peer { "peer-turn" } else { "user-turn" }),
                        "{ctx}"
                    );
                    if peer {
                        assert_eq!(d.peer_message_id.as_deref(), Some("c2c_1"));
                        assert_eq!(d.from.as_deref(), Some("bob"));
                    } else {
                        assert_eq!(d.peer_message_id, None);
                    }
                    // The guardrail runs only where it can change the answer.
                    let guarded = peer && mode == "allow" && hit;
                    assert_eq!(d.category, guarded.then_some("shell-startup"), "{ctx}");
                    if guarded {
                        assert_eq!(d.reason, "peer-turn/allow/guardrail");
                        assert!(d.guardrail_reason.as_deref().unwrap().contains(".bashrc"));
                    }
                    let lines = log_lines(&f);
                    assert_eq!(lines.len(), 1, "{ctx}");
                    assert_eq!(lines[0]["decision"], d.action.as_str());
                    assert_eq!(lines[0]["mode"], mode);
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 24);
}

/// Issue 18: with auto-answers off (a configuration error) no mode replies; every request
/// is left to OpenCode's prompt with reason `config-error`, and local turns stay untouched.
#[test]
fn answers_off_leaves_every_request_to_the_prompt() {
    for mode in ["allow", "deny", "ask"] {
        for peer in [false, true] {
            let mut f = fixture(mode);
            f.gate.turn_answers_off();
            assert!(f.gate.answers_off());
            turn(&mut f.gate, "ses_1", peer, "touch x");
            let d = decide(
                &mut f.gate,
                PermissionEventKind::Asked,
                "per_1",
                "ses_1",
                "touch x",
            );
            assert_eq!(d.action, Action::Leave, "{mode} peer={peer}");
            let want = match (peer, mode) {
                (false, _) => "local-turn",
                (true, "ask") => "peer-turn/ask",
                (true, _) => "config-error",
            };
            assert_eq!(d.reason, want, "{mode} peer={peer}");
            assert_eq!(log_lines(&f)[0]["reason"], want);
        }
    }
}

#[test]
fn never_always_and_every_request_decided_once() {
    let mut f = fixture("allow");
    turn(&mut f.gate, "ses_1", true, "touch x");
    let first = decide(
        &mut f.gate,
        PermissionEventKind::Asked,
        "per_1",
        "ses_1",
        "touch x",
    );
    assert_eq!(first.action, Action::Once);
    for _ in 0..3 {
        let again = decide(
            &mut f.gate,
            PermissionEventKind::Asked,
            "per_1",
            "ses_1",
            "touch x",
        );
        assert_eq!(again.action, Action::Duplicate);
    }
    // The same id as a v2 event is the same request.
    let v2 = decide(
        &mut f.gate,
        PermissionEventKind::V2Asked,
        "per_1",
        "ses_1",
        "touch x",
    );
    assert_eq!(v2.action, Action::Duplicate);
    assert_eq!(log_lines(&f).len(), 1);
    for a in [
        Action::Once,
        Action::Reject,
        Action::Leave,
        Action::NeedMessage,
        Action::NeedSession,
        Action::Duplicate,
    ] {
        assert_ne!(a.as_str(), "always");
    }
}

#[test]
fn audit_line_fields() {
    let mut f = fixture("allow");
    turn(&mut f.gate, "ses_1", true, "touch x");
    decide(
        &mut f.gate,
        PermissionEventKind::V2Asked,
        "per_9",
        "ses_1",
        "touch x",
    );
    let line = &log_lines(&f)[0];
    assert_eq!(line["request"], "per_9");
    assert_eq!(line["session"], short_hash("ses_1"));
    assert_ne!(line["session"], "ses_1");
    assert_eq!(line["kind"], "permission.v2.asked");
    assert_eq!(line["permission"], "bash");
    assert_eq!(line["provenance"], "peer");
    assert_eq!(line["basis"], "peer-turn");
    assert_eq!(line["peerMessageId"], "c2c_1");
    assert_eq!(line["from"], "bob");
    assert_eq!(line["mode"], "allow");
    assert_eq!(line["decision"], "once");
    assert_eq!(line["category"], Value::Null);
    assert!(line["ts"].is_number());
}

#[test]
fn bad_mode_is_an_invalid_option() {
    for (opt, env) in [
        (Some("alow"), None),
        (None, Some("always")),
        (Some("deny"), Some("x")),
    ] {
        let err = fixture_with(opt, env, None).err().expect("error");
        assert_eq!(err.code(), crate::ErrorCode::InvalidOption);
        assert!(err.to_string().contains("allow, ask, deny"), "{err}");
    }
    let f = fixture_with(Some("deny"), Some("ASK"), None).unwrap();
    assert_eq!(f.gate.mode(), PeerPermissions::Ask);
    assert_eq!(f.gate.mode_source(), SettingSource::Env);
    let f = fixture_with(None, None, None).unwrap();
    assert_eq!(f.gate.mode(), PeerPermissions::Allow);
}

/// A stand-in for OpenCode's HTTP API: what the plugin would fetch.
struct Server {
    messages: Vec<Value>,
    sessions: HashMap<String, Value>,
}

impl Server {
    fn message(&self, id: &str) -> Option<&Value> {
        self.messages.iter().find(|m| m["info"]["id"] == id)
    }
    fn of_session(&self, sid: &str) -> Value {
        Value::Array(
            self.messages
                .iter()
                .filter(|m| m["info"]["sessionID"] == sid)
                .cloned()
                .collect(),
        )
    }
}

/// The plugin's loop: decide, fetch what is asked for, feed, decide again.
fn run_loop(
    g: &mut PermissionGate,
    server: &Server,
    kind: PermissionEventKind,
    req: &Value,
) -> (GateDecision, Vec<String>) {
    let mut steps = Vec::new();
    for _ in 0..16 {
        let d = g.decide_json(kind, req, None);
        match d.action {
            Action::NeedMessage => {
                let mid = d.message_id.clone().unwrap();
                steps.push(format!("m:{mid}"));
                if let Some(m) = server.message(&mid) {
                    g.feed_message_json(m);
                }
            }
            Action::NeedSession => {
                steps.push(format!("s:{}", d.session_id));
                let session = server
                    .sessions
                    .get(&d.session_id)
                    .cloned()
                    .unwrap_or(Value::Null);
                g.feed_session_json(&session, &server.of_session(&d.session_id));
            }
            _ => return (d, steps),
        }
    }
    panic!("the need-* loop did not end");
}

#[test]
fn need_loop_after_a_restart_fetches_and_decides() {
    // The plugin restarted mid-turn: the index holds nothing of the peer-started turn.
    let sid = "ses_1";
    let server = Server {
        messages: vec![
            json!({"info": user("msg_u", sid, 1_000), "parts": [text_part("msg_u", sid, Some(("c2c_7", "carol")))]}),
            json!({"info": asst("msg_a", sid, "msg_u", 1_002, None),
                   "parts": [tool_part("msg_a", sid, "call_1", json!({"command": "touch y"}))]}),
        ],
        sessions: HashMap::from([(sid.to_string(), json!({"id": sid}))]),
    };
    let mut f = fixture_with(Some("allow"), None, None).unwrap();
    let req = asked(
        "per_1",
        sid,
        "bash",
        json!({"command": "touch y"}),
        "msg_a",
        "call_1",
    );
    let (d, steps) = run_loop(&mut f.gate, &server, PermissionEventKind::Asked, &req);
    assert_eq!(d.action, Action::Once, "{d:?} after {steps:?}");
    assert_eq!(d.from.as_deref(), Some("carol"));
    assert!(steps.len() <= 4, "{steps:?}");
    assert_eq!(steps[0], "m:msg_a");
    assert_eq!(log_lines(&f).len(), 1);

    // Nothing can be fetched: every miss resolves to local, and the loop still ends.
    let empty = Server {
        messages: vec![],
        sessions: HashMap::new(),
    };
    let mut f = fixture_with(Some("allow"), None, None).unwrap();
    let (d, steps) = run_loop(&mut f.gate, &empty, PermissionEventKind::Asked, &req);
    assert_eq!(d.action, Action::Leave);
    assert_eq!(d.basis, Some("missing"));
    assert_eq!(steps, vec!["m:msg_a"]);
}

#[test]
fn tool_arguments_from_param_events_or_fetch() {
    // Seen in an event: no fetch needed (checked through the table test). Here: the tool
    // part was never seen.
    let sid = "ses_1";
    let setup = |f: &mut Fixture| {
        let g = &mut f.gate;
        g.observe_json(&session_created(sid, None), 10);
        g.observe_json(&msg_updated(user("msg_u", sid, 1_000)), 1_000);
        g.observe_json(
            &part_updated(text_part("msg_u", sid, Some(("c2c_1", "bob")))),
            1_000,
        );
        g.observe_json(
            &msg_updated(asst("msg_a", sid, "msg_u", 1_002, None)),
            1_002,
        );
    };
    // 1. Given as a parameter: the workdir it names is seen by the guardrail.
    let mut f = fixture("allow");
    setup(&mut f);
    let home = f.gate.paths.home.display().to_string();
    let req = asked(
        "per_1",
        sid,
        "bash",
        json!({"command": "touch .bashrc"}),
        "msg_a",
        "call_1",
    );
    let d = f.gate.decide_json(
        PermissionEventKind::Asked,
        &req,
        Some(&json!({"command": "touch .bashrc", "workdir": home})),
    );
    assert_eq!(d.action, Action::Leave);
    assert_eq!(d.category, Some("shell-startup"));

    // 2. Not given, not seen: asked for once, then fed.
    let mut f = fixture("allow");
    setup(&mut f);
    let d = f.gate.decide_json(PermissionEventKind::Asked, &req, None);
    assert_eq!(d.action, Action::NeedMessage);
    assert_eq!(d.message_id.as_deref(), Some("msg_a"));
    f.gate.feed_message_json(&json!({"info": asst("msg_a", sid, "msg_u", 1_002, None),
        "parts": [tool_part("msg_a", sid, "call_1", json!({"command": "touch .bashrc", "workdir": home}))]}));
    let d = f.gate.decide_json(PermissionEventKind::Asked, &req, None);
    assert_eq!(d.action, Action::Leave);
    assert_eq!(d.category, Some("shell-startup"));

    // 3. Never obtainable: left to the prompt rather than approved blind.
    let mut f = fixture("allow");
    setup(&mut f);
    assert_eq!(
        f.gate
            .decide_json(PermissionEventKind::Asked, &req, None)
            .action,
        Action::NeedMessage
    );
    let d = f.gate.decide_json(PermissionEventKind::Asked, &req, None);
    assert_eq!(d.action, Action::Leave);
    assert_eq!(d.reason, "peer-turn/allow/tool-args-unavailable");

    // 4. A pending tool part (input {}) does not count as the arguments.
    let mut f = fixture("allow");
    setup(&mut f);
    f.gate.observe_json(
        &part_updated(
            json!({"id": "prt_x", "sessionID": sid, "messageID": "msg_a", "type": "tool",
            "callID": "call_1", "state": {"status": "pending", "input": {}, "raw": ""}}),
        ),
        1_003,
    );
    assert_eq!(
        f.gate
            .decide_json(PermissionEventKind::Asked, &req, None)
            .action,
        Action::NeedMessage
    );
}

#[test]
fn peer_message_arriving_while_a_local_turn_waits_is_not_approved() {
    // The user's turn is waiting on a permission; a peer message is injected meanwhile
    // (folded into the running loop). Neither the pending request nor the loop's later
    // steps, whose parentID is the peer message, count as peer-triggered.
    let sid = "ses_1";
    let mut f = fixture("allow");
    let g = &mut f.gate;
    turn(g, sid, false, "touch local.txt");
    g.observe_json(&msg_updated(user("msg_p", sid, 1_500)), 1_500);
    g.observe_json(
        &part_updated(text_part("msg_p", sid, Some(("c2c_9", "mallory")))),
        1_500,
    );
    let d = decide(
        g,
        PermissionEventKind::Asked,
        "per_1",
        sid,
        "touch local.txt",
    );
    assert_eq!(d.action, Action::Leave);
    assert_eq!(d.basis, Some("user-turn"));
    // The step completes; the loop's next step has the peer message as parent.
    g.observe_json(
        &msg_updated(asst(
            "msg_a",
            sid,
            "msg_u",
            1_002,
            Some((2_000, "tool-calls")),
        )),
        2_000,
    );
    g.observe_json(
        &msg_updated(asst("msg_b", sid, "msg_p", 2_001, None)),
        2_001,
    );
    g.observe_json(
        &part_updated(tool_part(
            "msg_b",
            sid,
            "call_2",
            json!({"command": "touch z"}),
        )),
        2_002,
    );
    let req = asked(
        "per_2",
        sid,
        "bash",
        json!({"command": "touch z"}),
        "msg_b",
        "call_2",
    );
    let d = g.decide_json(PermissionEventKind::Asked, &req, None);
    assert_eq!(d.action, Action::Leave, "{d:?}");
    assert_eq!(d.basis, Some("user-turn"));
    let lines = log_lines(&f);
    assert_eq!(lines[1]["provenance"], "local");
    assert_eq!(lines[1]["folded"], true);
}

#[test]
fn task_child_inherits_the_parent_turn() {
    let mut f = fixture("deny");
    let g = &mut f.gate;
    turn(g, "ses_p", true, "x");
    // The parent's task tool creates a child session, names it in its part, and writes the
    // child's prompt while the step runs.
    g.observe_json(&session_created("ses_c", Some("ses_p")), 1_100);
    g.observe_json(
        &part_updated(task_part("msg_a", "ses_p", "call_k", "ses_c", 1_100, None)),
        1_100,
    );
    g.observe_json(&msg_updated(user("msg_cu", "ses_c", 1_101)), 1_101);
    g.observe_json(&part_updated(text_part("msg_cu", "ses_c", None)), 1_101);
    g.observe_json(
        &msg_updated(asst("msg_ca", "ses_c", "msg_cu", 1_102, None)),
        1_102,
    );
    g.observe_json(
        &part_updated(tool_part(
            "msg_ca",
            "ses_c",
            "call_c",
            json!({"command": "ls"}),
        )),
        1_103,
    );
    let req = asked(
        "per_c",
        "ses_c",
        "bash",
        json!({"command": "ls"}),
        "msg_ca",
        "call_c",
    );
    let d = g.decide_json(PermissionEventKind::Asked, &req, None);
    assert_eq!(d.action, Action::Reject, "{d:?}");
    assert_eq!(d.from.as_deref(), Some("bob"));
    assert_eq!(log_lines(&f)[0]["inherited"], true);
}

#[test]
fn user_typing_into_a_finished_task_child_is_left_in_every_mode() {
    for mode in ["allow", "ask", "deny"] {
        let mut f = fixture(mode);
        let g = &mut f.gate;
        turn(g, "ses_p", true, "x");
        g.observe_json(&session_created("ses_c", Some("ses_p")), 1_100);
        g.observe_json(
            &part_updated(task_part("msg_a", "ses_p", "call_k", "ses_c", 1_100, None)),
            1_100,
        );
        g.observe_json(&msg_updated(user("msg_cu", "ses_c", 1_101)), 1_101);
        g.observe_json(
            &msg_updated(asst(
                "msg_ca",
                "ses_c",
                "msg_cu",
                1_102,
                Some((1_200, "stop")),
            )),
            1_200,
        );
        g.observe_json(&ev("session.idle", json!({"sessionID": "ses_c"})), 1_201);
        g.observe_json(
            &part_updated(task_part(
                "msg_a",
                "ses_p",
                "call_k",
                "ses_c",
                1_100,
                Some(1_210),
            )),
            1_210,
        );
        // The parent's peer turn still runs; the user types into the idle child.
        g.observe_json(&msg_updated(user("msg_cu2", "ses_c", 1_300)), 1_300);
        g.observe_json(&part_updated(text_part("msg_cu2", "ses_c", None)), 1_300);
        g.observe_json(
            &msg_updated(asst("msg_ca2", "ses_c", "msg_cu2", 1_302, None)),
            1_302,
        );
        g.observe_json(
            &part_updated(tool_part(
                "msg_ca2",
                "ses_c",
                "call_u",
                json!({"command": "u"}),
            )),
            1_303,
        );
        let req = asked(
            "per_u",
            "ses_c",
            "bash",
            json!({"command": "u"}),
            "msg_ca2",
            "call_u",
        );
        let d = g.decide_json(PermissionEventKind::Asked, &req, None);
        assert_eq!(d.action, Action::Leave, "{mode}: {d:?}");
        assert_eq!(d.basis, Some("user-turn"), "{mode}");
        let line = &log_lines(&f)[0];
        assert_eq!(line["provenance"], "local");
        assert_eq!(line["basis"], "user-turn");
    }
}

#[test]
fn task_child_whose_spawner_cannot_be_told_is_left() {
    // A child session of a parent this gate never saw, whose fetches fail.
    let mut f = fixture("allow");
    let g = &mut f.gate;
    g.observe_json(&session_created("ses_c", Some("ses_gone")), 1_100);
    g.observe_json(&msg_updated(user("msg_cu", "ses_c", 1_101)), 1_101);
    g.observe_json(
        &msg_updated(asst("msg_ca", "ses_c", "msg_cu", 1_102, None)),
        1_102,
    );
    g.observe_json(
        &part_updated(tool_part(
            "msg_ca",
            "ses_c",
            "call_c",
            json!({"command": "ls"}),
        )),
        1_103,
    );
    let req = asked(
        "per_c",
        "ses_c",
        "bash",
        json!({"command": "ls"}),
        "msg_ca",
        "call_c",
    );
    let d = g.decide_json(PermissionEventKind::Asked, &req, None);
    assert_eq!(d.action, Action::NeedSession, "{d:?}");
    assert_eq!(d.session_id, "ses_gone");
    g.feed_session_json(&Value::Null, &Value::Null);
    let d = g.decide_json(PermissionEventKind::Asked, &req, None);
    assert_eq!(d.action, Action::Leave, "{d:?}");
    assert_eq!(d.reason, "child-origin-unknown");
    assert_eq!(log_lines(&f)[0]["basis"], "child-origin-unknown");
}

#[test]
fn user_message_folded_into_a_peer_turn_is_left_and_logged() {
    for mode in ["allow", "ask", "deny"] {
        let mut f = fixture(mode);
        let g = &mut f.gate;
        turn(g, "ses_1", true, "x");
        // The user types while the peer's step runs; the next step names it as parent.
        g.observe_json(&msg_updated(user("msg_u2", "ses_1", 1_050)), 1_050);
        g.observe_json(&part_updated(text_part("msg_u2", "ses_1", None)), 1_050);
        g.observe_json(
            &msg_updated(asst(
                "msg_a",
                "ses_1",
                "msg_u",
                1_002,
                Some((1_100, "tool-calls")),
            )),
            1_100,
        );
        g.observe_json(
            &msg_updated(asst("msg_a2", "ses_1", "msg_u2", 1_110, None)),
            1_110,
        );
        g.observe_json(
            &part_updated(tool_part(
                "msg_a2",
                "ses_1",
                "call_2",
                json!({"command": "u"}),
            )),
            1_111,
        );
        let req = asked(
            "per_2",
            "ses_1",
            "bash",
            json!({"command": "u"}),
            "msg_a2",
            "call_2",
        );
        let d = g.decide_json(PermissionEventKind::Asked, &req, None);
        assert_eq!(d.action, Action::Leave, "{mode}: {d:?}");
        assert_eq!(d.reason, "user-folded-into-peer-turn");
        let line = &log_lines(&f)[0];
        assert_eq!(line["basis"], "user-folded-into-peer-turn");
        assert_eq!(line["provenance"], "peer");
        assert_eq!(line["folded"], true);
        assert_eq!(line["decision"], "leave");
    }
}

#[test]
fn compaction_continuation_of_a_peer_turn_is_rejected_under_deny() {
    let mut f = fixture("deny");
    let g = &mut f.gate;
    turn(g, "ses_1", true, "x");
    g.observe_json(
        &msg_updated(asst(
            "msg_a",
            "ses_1",
            "msg_u",
            1_002,
            Some((1_100, "tool-calls")),
        )),
        1_100,
    );
    // OpenCode 1.18.33's automatic compaction inside the loop.
    g.observe_json(&msg_updated(user("msg_c", "ses_1", 1_110)), 1_110);
    g.observe_json(
        &part_updated(
            json!({"id": "prt_c", "sessionID": "ses_1", "messageID": "msg_c",
                             "type": "compaction", "auto": true, "overflow": false}),
        ),
        1_110,
    );
    let mut summary = asst("msg_s", "ses_1", "msg_c", 1_120, Some((1_200, "stop")));
    summary["summary"] = json!(true);
    g.observe_json(&msg_updated(summary), 1_200);
    g.observe_json(&msg_updated(user("msg_k", "ses_1", 1_210)), 1_210);
    g.observe_json(
        &part_updated(json!({"id": "prt_k", "sessionID": "ses_1", "messageID": "msg_k",
                             "type": "text", "synthetic": true, "text": "Continue if you have next steps",
                             "metadata": {"compaction_continue": true}})),
        1_210,
    );
    g.observe_json(
        &msg_updated(asst("msg_a3", "ses_1", "msg_k", 1_220, None)),
        1_220,
    );
    g.observe_json(
        &part_updated(tool_part(
            "msg_a3",
            "ses_1",
            "call_3",
            json!({"command": "y"}),
        )),
        1_221,
    );
    let req = asked(
        "per_3",
        "ses_1",
        "bash",
        json!({"command": "y"}),
        "msg_a3",
        "call_3",
    );
    let d = g.decide_json(PermissionEventKind::Asked, &req, None);
    assert_eq!(d.action, Action::Reject, "{d:?}");
    assert_eq!(d.basis, Some("compaction"));
    let line = &log_lines(&f)[0];
    assert_eq!(line["provenance"], "peer");
    assert_eq!(line["basis"], "compaction");
    assert_eq!(line["from"], "bob");
}

#[test]
fn events_update_and_forget() {
    let mut f = fixture("allow");
    let g = &mut f.gate;
    turn(g, "ses_1", true, "touch x");
    assert!(g.index().message_count() >= 2);
    g.observe_json(
        &ev("session.deleted", json!({"info": {"id": "ses_1"}})),
        5_000,
    );
    assert_eq!(g.index().message_count(), 0);
    // Malformed events are ignored.
    for e in [
        json!(null),
        json!({"type": "message.updated"}),
        json!({"type": 3}),
        ev(
            "message.updated",
            json!({"info": {"id": "m", "role": "user"}}),
        ),
        ev("message.part.updated", json!({"part": {"type": "tool"}})),
        ev("session.status", json!({"sessionID": "s"})),
    ] {
        g.observe_json(&e, 1);
    }
    // A malformed request is left alone and not logged.
    let d = g.decide_json(PermissionEventKind::Asked, &json!({"id": "per_x"}), None);
    assert_eq!(d.action, Action::Leave);
    assert_eq!(d.reason, "malformed-request");
    assert!(log_lines(&f).is_empty());
}

#[test]
fn compaction_summary_flag_is_a_boolean_only() {
    // A user message's `summary` is an object and must not read as compaction.
    let mut f = fixture("allow");
    turn(&mut f.gate, "ses_1", true, "touch x");
    let d = decide(
        &mut f.gate,
        PermissionEventKind::Asked,
        "per_1",
        "ses_1",
        "touch x",
    );
    assert_eq!(d.action, Action::Once);
}

#[test]
fn times_as_floats_are_read() {
    // napi hands JS numbers past 2^31 (every epoch-ms time) to Rust as f64.
    let mut f = fixture("allow");
    let g = &mut f.gate;
    let sid = "ses_1";
    let t = 1_795_998_702_932.0_f64;
    g.observe_json(&session_created(sid, None), 10);
    g.observe_json(
        &msg_updated(
            json!({"id": "msg_u", "sessionID": sid, "role": "user", "time": {"created": t}}),
        ),
        1,
    );
    g.observe_json(
        &part_updated(text_part("msg_u", sid, Some(("c2c_1", "bob")))),
        1,
    );
    g.observe_json(
        &msg_updated(json!({"id": "msg_a", "sessionID": sid, "role": "assistant",
        "parentID": "msg_u", "time": {"created": t + 2.0}})),
        1,
    );
    g.observe_json(
        &part_updated(tool_part(
            "msg_a",
            sid,
            "call_1",
            json!({"command": "touch x"}),
        )),
        1,
    );
    let d = decide(g, PermissionEventKind::Asked, "per_1", sid, "touch x");
    assert_eq!(d.action, Action::Once, "{d:?}");
    // The time parser itself: `crate::opencode::tests::times_int_float_or_nothing`.
}

#[test]
fn unproven_requests_are_left_and_the_log_says_why() {
    let mut f = fixture("allow");
    turn(&mut f.gate, "ses_1", true, "make install");
    let d = decide(
        &mut f.gate,
        PermissionEventKind::Asked,
        "per_1",
        "ses_1",
        "make install",
    );
    assert_eq!(d.action, Action::Leave);
    assert_eq!(d.category, Some("unproven"));
    let lines = log_lines(&f);
    assert_eq!(lines[0]["reason"], "peer-turn/allow/guardrail");
    assert_eq!(
        lines[0]["guardrailReason"],
        "bash: unmodeled program \"make\""
    );
}

#[test]
fn the_configured_broker_root_is_protected() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let root = project.join("broker");
    std::fs::create_dir_all(&root).unwrap();
    let env = crate::store::root::RootEnv {
        broker_root: Some(dir.path().join("env-root").to_string_lossy().into()),
        ..Default::default()
    };
    let roots = super::protected_broker_roots(Some(&root), &env, &project);
    assert_eq!(roots, vec![root.clone(), dir.path().join("env-root")]);
    let mut gate = PermissionGate::new(GateConfig {
        peer_permissions: Some("allow".into()),
        env_peer_permissions: None,
        directory: project.clone(),
        worktree: project,
        home: dir.path().join("home"),
        audit: None,
        protected_roots: roots,
        limits: Limits {
            instance_started_ms: Some(0),
            ..Limits::default()
        },
    })
    .unwrap();
    let cmd = "echo x > broker/registry.json";
    turn(&mut gate, "ses_1", true, cmd);
    let d = decide(&mut gate, PermissionEventKind::Asked, "per_1", "ses_1", cmd);
    assert_eq!(d.action, Action::Leave);
    assert_eq!(d.category, Some("broker-state"));
}
