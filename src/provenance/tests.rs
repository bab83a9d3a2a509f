//! Tests of the turn index: chains, cycles, missing data, busy-session races, child sessions,
//! compaction, bounds and speed (threats.md "Permission authority": provenance confused by
//! busy sessions, `task` subagents and compaction).

use super::*;

const SES: &str = "ses_main";

fn index() -> TurnIndex {
    let mut ix = TurnIndex::new(Limits::default());
    ix.observe_session_created(SES, None);
    ix
}

fn user(id: &str, session: &str, created: EpochMs) -> MessageInfo {
    MessageInfo {
        id: id.into(),
        session_id: session.into(),
        role: Role::User,
        parent_id: None,
        created_ms: created,
        completed_ms: None,
        finish: None,
        error: false,
        summary: false,
    }
}

fn step(
    id: &str,
    session: &str,
    parent: &str,
    created: EpochMs,
    completed: Option<EpochMs>,
    finish: Option<&str>,
) -> MessageInfo {
    MessageInfo {
        id: id.into(),
        session_id: session.into(),
        role: Role::Assistant,
        parent_id: Some(parent.into()),
        created_ms: created,
        completed_ms: completed,
        finish: finish.map(str::to_string),
        error: false,
        summary: false,
    }
}

fn mark(id: &str) -> PeerMark {
    PeerMark {
        message_id: format!("c2c-{id}"),
        from: "bob".into(),
        via: vec!["ses_bob".into()],
    }
}

fn peer(ix: &mut TurnIndex, id: &str, session: &str, created: EpochMs) {
    ix.observe_message(user(id, session, created));
    ix.observe_peer_part(id, session, mark(id));
}

fn resolve(ix: &mut TurnIndex, session: &str, tool_msg: &str) -> Provenance {
    match ix.provenance(session, tool_msg) {
        Lookup::Resolved(p) => p,
        other => panic!("expected a resolved walk, got {other:?}"),
    }
}

fn peer_id(p: &Provenance) -> Option<&str> {
    p.peer.as_ref().map(|m| m.message_id.as_str())
}

// ---- plain turns -------------------------------------------------------------------------

#[test]
fn user_turn_is_local() {
    let mut ix = index();
    ix.observe_message(user("u1", SES, 100));
    ix.observe_message(step("a1", SES, "u1", 110, Some(200), Some("tool-calls")));
    ix.observe_message(step("a2", SES, "u1", 210, None, None));
    let p = resolve(&mut ix, SES, "a2");
    assert!(!p.is_peer_triggered());
    assert_eq!(p.basis, Basis::UserTurn);
}

#[test]
fn peer_turn_on_idle_session() {
    let mut ix = index();
    peer(&mut ix, "p1", SES, 100);
    ix.observe_message(step("a1", SES, "p1", 110, None, None));
    let p = resolve(&mut ix, SES, "a1");
    assert_eq!(peer_id(&p), Some("c2c-p1"));
    assert_eq!(p.basis, Basis::PeerTurn);
    assert!(!p.folded);
    assert_eq!(p.peer.unwrap().via, vec!["ses_bob".to_string()]);
}

#[test]
fn part_before_message_and_repeated_updates() {
    let mut ix = index();
    // The part event arrives before message.updated of its message.
    ix.observe_peer_part("p1", SES, mark("p1"));
    ix.observe_message(user("p1", SES, 100));
    ix.observe_message(step("a1", SES, "p1", 110, None, None));
    ix.observe_message(step("a1", SES, "p1", 110, Some(150), Some("tool-calls")));
    ix.observe_message(step("a2", SES, "p1", 160, None, None));
    assert_eq!(peer_id(&resolve(&mut ix, SES, "a2")), Some("c2c-p1"));
    // The same message repeated with its completion changes nothing.
    ix.observe_message(step("a2", SES, "p1", 160, Some(170), Some("stop")));
    ix.observe_message(step("a2", SES, "p1", 160, Some(170), Some("stop")));
    assert_eq!(peer_id(&resolve(&mut ix, SES, "a2")), Some("c2c-p1"));
    assert_eq!(ix.message_count(), 3);
}

#[test]
fn consecutive_turns_each_get_their_own_origin() {
    let mut ix = index();
    ix.observe_message(user("u1", SES, 100));
    ix.observe_message(step("a1", SES, "u1", 110, Some(200), Some("stop")));
    ix.observe_status(SES, false, 201);
    peer(&mut ix, "p1", SES, 300);
    ix.observe_message(step("a2", SES, "p1", 310, Some(400), Some("stop")));
    ix.observe_status(SES, false, 401);
    ix.observe_message(user("u2", SES, 500));
    ix.observe_message(step("a3", SES, "u2", 510, None, None));
    assert!(!resolve(&mut ix, SES, "a1").is_peer_triggered());
    assert!(resolve(&mut ix, SES, "a2").is_peer_triggered());
    assert!(!resolve(&mut ix, SES, "a3").is_peer_triggered());
}

// ---- the busy-session hazard -------------------------------------------------------------

#[test]
fn peer_message_folded_into_running_user_turn_stays_local() {
    let mut ix = index();
    ix.observe_message(user("u1", SES, 100));
    ix.observe_message(step("a1", SES, "u1", 110, Some(300), Some("tool-calls")));
    // Injected while a1 streams.
    peer(&mut ix, "p1", SES, 200);
    ix.observe_message(step("a2", SES, "p1", 310, None, None));
    let p = resolve(&mut ix, SES, "a2");
    assert!(!p.is_peer_triggered(), "{p:?}");
    assert!(p.folded);
    assert_eq!(p.basis, Basis::UserTurn);
}

#[test]
fn peer_message_between_steps_of_user_turn_stays_local() {
    let mut ix = index();
    ix.observe_message(user("u1", SES, 100));
    ix.observe_message(step("a1", SES, "u1", 110, Some(200), Some("tool-calls")));
    // Injected after a1 completed but before the loop created a2: the loop is still running.
    peer(&mut ix, "p1", SES, 205);
    ix.observe_message(step("a2", SES, "p1", 210, None, None));
    assert!(!resolve(&mut ix, SES, "a2").is_peer_triggered());
}

#[test]
fn peer_message_right_after_a_stop_without_idle_stays_local() {
    let mut ix = index();
    ix.observe_message(user("u1", SES, 100));
    ix.observe_message(step("a1", SES, "u1", 110, Some(200), Some("stop")));
    // Created 50 ms after the loop-ending step, no idle seen: the loop may have re-read the
    // session and folded it. Uncertain → local.
    peer(&mut ix, "p1", SES, 250);
    ix.observe_message(step("a2", SES, "p1", 260, None, None));
    assert!(!resolve(&mut ix, SES, "a2").is_peer_triggered());
}

#[test]
fn idle_status_or_settle_time_makes_peer_turn_certain() {
    for (idle, created) in [(Some(220), 250), (None, 200 + 2_000)] {
        let mut ix = index();
        ix.observe_message(user("u1", SES, 100));
        ix.observe_message(step("a1", SES, "u1", 110, Some(200), Some("stop")));
        if let Some(at) = idle {
            ix.observe_status(SES, true, 105);
            ix.observe_status(SES, false, at);
        }
        peer(&mut ix, "p1", SES, created);
        ix.observe_message(step("a2", SES, "p1", created + 10, None, None));
        let p = resolve(&mut ix, SES, "a2");
        assert!(p.is_peer_triggered(), "idle={idle:?}: {p:?}");
    }
}

#[test]
fn idle_seen_before_the_step_completed_is_no_evidence() {
    let mut ix = index();
    ix.observe_message(user("u1", SES, 100));
    // A late idle of an earlier loop, received while a1 runs.
    ix.observe_status(SES, false, 150);
    ix.observe_message(step("a1", SES, "u1", 110, Some(200), Some("tool-calls")));
    peer(&mut ix, "p1", SES, 205);
    ix.observe_message(step("a2", SES, "p1", 210, None, None));
    assert!(!resolve(&mut ix, SES, "a2").is_peer_triggered());
}

#[test]
fn errored_step_ends_its_loop() {
    let mut ix = index();
    ix.observe_message(user("u1", SES, 100));
    let mut a1 = step("a1", SES, "u1", 110, Some(200), Some("tool-calls"));
    a1.error = true;
    ix.observe_message(a1);
    peer(&mut ix, "p1", SES, 200 + 2_000);
    ix.observe_message(step("a2", SES, "p1", 2_210, None, None));
    assert!(resolve(&mut ix, SES, "a2").is_peer_triggered());
}

#[test]
fn user_message_folded_into_running_peer_turn_is_never_peer_policy() {
    // Ordering "fold": peer p1 starts the loop, the user types u1 while a1 streams; OpenCode
    // folds u1 in and names it as the parent of every later step.
    let mut ix = index();
    peer(&mut ix, "p1", SES, 100);
    ix.observe_message(step("a1", SES, "p1", 110, Some(300), Some("tool-calls")));
    ix.observe_message(user("u1", SES, 200));
    ix.observe_message(step("a2", SES, "u1", 310, Some(400), Some("tool-calls")));
    let p = resolve(&mut ix, SES, "a2");
    assert_eq!(
        peer_id(&p),
        Some("c2c-p1"),
        "the mark is kept for logs and via"
    );
    assert_eq!(p.basis, Basis::UserFoldedIntoPeerTurn);
    assert!(p.folded);
    assert!(!p.peer_policy_applies());
    // The rest of the turn: a later peer message folded after u1 does not undo it.
    peer(&mut ix, "p2", SES, 350);
    ix.observe_message(step("a3", SES, "p2", 410, None, None));
    assert_eq!(
        resolve(&mut ix, SES, "a3").basis,
        Basis::UserFoldedIntoPeerTurn
    );
    // The step before the fold is still the peer's.
    assert!(resolve(&mut ix, SES, "a1").peer_policy_applies());
}

#[test]
fn peer_message_after_an_unanswered_user_message_joins_the_users_turn() {
    // Ordering "user before peer" (the busy race): the user's u1 is created, the plugin
    // injects p1 before OpenCode's loop has made its first step; that step names p1.
    let mut ix = index();
    ix.observe_message(user("u0", SES, 10));
    ix.observe_message(step("a0", SES, "u0", 20, Some(30), Some("stop")));
    ix.observe_status(SES, false, 31);
    ix.observe_message(user("u1", SES, 5_000));
    peer(&mut ix, "p1", SES, 5_040);
    ix.observe_message(step("a1", SES, "p1", 5_080, None, None));
    let p = resolve(&mut ix, SES, "a1");
    assert!(!p.is_peer_triggered(), "{p:?}");
    assert_eq!(p.basis, Basis::UserTurn);
    assert!(p.folded);
    // Same millisecond: creation order is the id order.
    let mut ix = index();
    ix.observe_message(user("msg_01", SES, 5_000));
    peer(&mut ix, "msg_02", SES, 5_000);
    ix.observe_message(step("msg_03", SES, "msg_02", 5_010, None, None));
    assert!(!resolve(&mut ix, SES, "msg_03").is_peer_triggered());
}

#[test]
fn peer_message_after_an_answered_user_turn_starts_its_own() {
    // Ordering "peer after user, answered": the user's turn ran and ended, then p1.
    let mut ix = index();
    ix.observe_message(user("u1", SES, 100));
    ix.observe_message(step("a1", SES, "u1", 110, Some(200), Some("stop")));
    ix.observe_status(SES, false, 201);
    peer(&mut ix, "p1", SES, 300);
    ix.observe_message(step("a2", SES, "p1", 310, None, None));
    assert_eq!(resolve(&mut ix, SES, "a2").basis, Basis::PeerTurn);
}

#[test]
fn user_message_after_an_unanswered_peer_message_is_never_peer_policy() {
    // Ordering "peer before user": p1 is injected, the user types before the first step.
    let mut ix = index();
    peer(&mut ix, "p1", SES, 100);
    ix.observe_message(user("u1", SES, 105));
    ix.observe_message(step("a1", SES, "u1", 120, None, None));
    let p = resolve(&mut ix, SES, "a1");
    assert!(!p.peer_policy_applies(), "{p:?}");
    assert_eq!(p.basis, Basis::UserFoldedIntoPeerTurn);
    assert!(p.folded);
}

#[test]
fn user_message_between_steps_of_peer_turn_is_never_peer_policy() {
    // Uncertain whether the peer loop was still running: the user's message must not be
    // called peer-triggered on uncertain evidence.
    let mut ix = index();
    peer(&mut ix, "p1", SES, 100);
    ix.observe_message(step("a1", SES, "p1", 110, Some(200), Some("tool-calls")));
    ix.observe_message(user("u1", SES, 205));
    ix.observe_message(step("a2", SES, "u1", 210, None, None));
    assert!(!resolve(&mut ix, SES, "a2").peer_policy_applies());
}

#[test]
fn user_turn_after_a_dead_peer_loop_is_local() {
    // A peer step that never completed (the process died), then the instance restarted.
    let mut ix = TurnIndex::new(Limits {
        instance_started_ms: Some(1_000),
        ..Limits::default()
    });
    ix.observe_session(SES, None);
    peer(&mut ix, "p1", SES, 100);
    ix.observe_message(step("a1", SES, "p1", 110, None, None));
    ix.observe_message(user("u1", SES, 5_000));
    ix.observe_message(step("a2", SES, "u1", 5_010, None, None));
    assert!(!resolve(&mut ix, SES, "a2").is_peer_triggered());
}

#[test]
fn millisecond_tie_is_uncertain() {
    let mut ix = index();
    ix.observe_message(user("u1", SES, 100));
    ix.observe_message(step("a1", SES, "u1", 200, Some(300), Some("stop")));
    peer(&mut ix, "p1", SES, 200);
    ix.observe_message(step("a2", SES, "p1", 310, None, None));
    assert!(!resolve(&mut ix, SES, "a2").is_peer_triggered());
}

#[test]
fn repeated_folds_keep_the_loop_origin() {
    let mut ix = index();
    ix.observe_message(user("u1", SES, 100));
    ix.observe_message(step("a1", SES, "u1", 110, Some(300), Some("tool-calls")));
    peer(&mut ix, "p1", SES, 200);
    ix.observe_message(step("a2", SES, "p1", 310, Some(500), Some("tool-calls")));
    peer(&mut ix, "p2", SES, 400);
    ix.observe_message(step("a3", SES, "p2", 510, None, None));
    let p = resolve(&mut ix, SES, "a3");
    assert!(!p.is_peer_triggered());
    assert!(p.folded);
}

#[test]
fn folding_decision_survives_a_restart() {
    // A new index fed the persisted messages (as the plugin does after fetching them)
    // reaches the same answers, without any status observations.
    let feed = |ix: &mut TurnIndex| {
        ix.observe_message(user("u1", SES, 100));
        ix.observe_message(step("a1", SES, "u1", 110, Some(300), Some("tool-calls")));
        peer(ix, "p1", SES, 200);
        ix.observe_message(step("a2", SES, "p1", 310, Some(400), Some("stop")));
        peer(ix, "p2", SES, 10_000);
        ix.observe_message(step("a3", SES, "p2", 10_010, Some(10_100), Some("stop")));
    };
    let mut ix = TurnIndex::new(Limits::default());
    feed(&mut ix);
    // History unknown: the plugin is asked to load the session once.
    assert_eq!(
        ix.provenance(SES, "a3"),
        Lookup::NeedSession(SES.to_string())
    );
    ix.observe_session(SES, None);
    ix.mark_history_complete(SES);
    assert!(!resolve(&mut ix, SES, "a2").is_peer_triggered());
    assert_eq!(peer_id(&resolve(&mut ix, SES, "a3")), Some("c2c-p2"));
}

// ---- walk mechanics ----------------------------------------------------------------------

#[test]
fn missing_tool_message_is_asked_for_once() {
    let mut ix = index();
    assert_eq!(
        ix.provenance(SES, "a9"),
        Lookup::NeedMessage {
            session_id: SES.into(),
            message_id: "a9".into()
        }
    );
    let p = resolve(&mut ix, SES, "a9");
    assert_eq!(p.basis, Basis::Missing);
    assert!(!p.is_peer_triggered());
}

#[test]
fn missing_parent_is_fetched_then_resolved() {
    let mut ix = index();
    ix.observe_message(step("a1", SES, "p1", 110, None, None));
    assert_eq!(
        ix.provenance(SES, "a1"),
        Lookup::NeedMessage {
            session_id: SES.into(),
            message_id: "p1".into()
        }
    );
    // The plugin fetched it: info and its parts.
    peer(&mut ix, "p1", SES, 100);
    assert!(resolve(&mut ix, SES, "a1").is_peer_triggered());
}

#[test]
fn missing_parent_twice_is_local() {
    let mut ix = index();
    ix.observe_message(step("a1", SES, "p1", 110, None, None));
    assert!(matches!(
        ix.provenance(SES, "a1"),
        Lookup::NeedMessage { .. }
    ));
    let p = resolve(&mut ix, SES, "a1");
    assert_eq!(p.basis, Basis::Missing);
}

#[test]
fn step_without_parent_is_local() {
    let mut ix = index();
    let mut a = step("a1", SES, "x", 110, None, None);
    a.parent_id = None;
    ix.observe_message(a);
    assert_eq!(resolve(&mut ix, SES, "a1").basis, Basis::Missing);
}

#[test]
fn tool_message_of_another_session_is_local() {
    let mut ix = index();
    peer(&mut ix, "p1", SES, 100);
    ix.observe_message(step("a1", SES, "p1", 110, None, None));
    assert_eq!(
        resolve(&mut ix, "ses_other", "a1").basis,
        Basis::SessionMismatch
    );
}

#[test]
fn parent_that_is_not_a_user_message_is_local() {
    let mut ix = index();
    ix.observe_message(step("a0", SES, "zz", 90, Some(95), Some("stop")));
    ix.observe_message(step("a1", SES, "a0", 110, None, None));
    assert!(!resolve(&mut ix, SES, "a1").is_peer_triggered());
}

#[test]
fn cycle_is_cut() {
    // Inconsistent data: u1 looks folded into a2's loop and u2 into a3's, whose parent is u1.
    let mut ix = index();
    peer(&mut ix, "u1", SES, 100);
    peer(&mut ix, "u2", SES, 150);
    ix.observe_message(step("a2", SES, "u2", 50, None, None));
    ix.observe_message(step("a3", SES, "u1", 120, None, None));
    ix.observe_message(step("a9", SES, "u2", 200, None, None));
    let p = resolve(&mut ix, SES, "a9");
    assert_eq!(p.basis, Basis::Limit);
    assert!(!p.is_peer_triggered());
}

#[test]
fn hop_limit_resolves_local() {
    // A peer turn under a chain of 40 folds: beyond a 16-hop budget.
    let build = |max_hops| {
        let mut ix = TurnIndex::new(Limits {
            max_hops,
            ..Limits::default()
        });
        ix.observe_session_created(SES, None);
        peer(&mut ix, "p0", SES, 0);
        for i in 0..40 {
            let t = 100 * i;
            let parent = format!("p{i}");
            ix.observe_message(step(
                &format!("a{i}"),
                SES,
                &parent,
                t + 10,
                Some(t + 90),
                Some("tool-calls"),
            ));
            peer(&mut ix, &format!("p{}", i + 1), SES, t + 50);
        }
        ix.observe_message(step("last", SES, "p40", 5_000, None, None));
        ix
    };
    let mut ix = build(16);
    assert_eq!(resolve(&mut ix, SES, "last").basis, Basis::Limit);
    let mut ix = build(200);
    let p = resolve(&mut ix, SES, "last");
    assert_eq!(peer_id(&p), Some("c2c-p0"));
    assert!(p.folded);
}

// ---- compaction --------------------------------------------------------------------------

/// A peer (or user) turn that OpenCode compacts automatically on overflow (1.18.33
/// `SessionCompaction`): inside the running loop it adds the request `c1` (compaction part,
/// `auto: true`), the summary step `s1`, then the synthetic "continue" message `k1`, and the
/// loop goes on with `k1` as its steps' parent.
fn compacted(peer_turn: bool) -> TurnIndex {
    let mut ix = index();
    if peer_turn {
        peer(&mut ix, "p1", SES, 100);
    } else {
        ix.observe_message(user("p1", SES, 100));
    }
    ix.observe_message(step("a1", SES, "p1", 110, Some(200), Some("tool-calls")));
    ix.observe_compaction_part("c1", SES, true);
    ix.observe_message(user("c1", SES, 210));
    let mut s = step("s1", SES, "c1", 220, Some(300), Some("stop"));
    s.summary = true;
    ix.observe_message(s);
    ix.observe_compaction_continue_part("k1", SES);
    ix.observe_message(user("k1", SES, 310));
    ix.observe_message(step("a2", SES, "k1", 320, None, None));
    ix
}

#[test]
fn compaction_continuation_keeps_the_origin() {
    let mut ix = compacted(true);
    for id in ["a2", "s1"] {
        let p = resolve(&mut ix, SES, id);
        assert_eq!(peer_id(&p), Some("c2c-p1"), "{id}: {p:?}");
        assert_eq!(p.basis, Basis::Compaction, "{id}");
        assert!(p.peer_policy_applies());
    }
    let mut ix = compacted(false);
    let p = resolve(&mut ix, SES, "a2");
    assert!(!p.is_peer_triggered());
    assert_eq!(p.basis, Basis::Compaction);
}

#[test]
fn user_folded_before_compaction_still_wins() {
    let mut ix = index();
    peer(&mut ix, "p1", SES, 100);
    ix.observe_message(step("a1", SES, "p1", 110, Some(200), Some("tool-calls")));
    ix.observe_message(user("u1", SES, 150));
    ix.observe_message(step("a2", SES, "u1", 205, Some(250), Some("length")));
    ix.observe_compaction_part("c1", SES, true);
    ix.observe_message(user("c1", SES, 260));
    let mut s = step("s1", SES, "c1", 270, Some(300), Some("stop"));
    s.summary = true;
    ix.observe_message(s);
    ix.observe_compaction_continue_part("k1", SES);
    ix.observe_message(user("k1", SES, 310));
    ix.observe_message(step("a3", SES, "k1", 320, None, None));
    assert_eq!(
        resolve(&mut ix, SES, "a3").basis,
        Basis::UserFoldedIntoPeerTurn
    );
}

#[test]
fn replayed_peer_message_after_overflow_compaction_keeps_the_origin() {
    // On a media overflow OpenCode replays the last user message: a copy of its parts
    // (peer mark included) on a new message created right after the summary.
    let mut ix = index();
    peer(&mut ix, "p1", SES, 100);
    ix.observe_message(step("a1", SES, "p1", 110, Some(200), Some("tool-calls")));
    ix.observe_compaction_part("c1", SES, true);
    ix.observe_message(user("c1", SES, 210));
    let mut s = step("s1", SES, "c1", 220, Some(300), Some("stop"));
    s.summary = true;
    ix.observe_message(s);
    peer(&mut ix, "r1", SES, 305);
    ix.observe_message(step("a2", SES, "r1", 320, None, None));
    let p = resolve(&mut ix, SES, "a2");
    assert_eq!(peer_id(&p), Some("c2c-p1"));
    assert_eq!(p.basis, Basis::Compaction);
}

#[test]
fn manual_compaction_then_typed_turn_is_local() {
    let mut ix = index();
    peer(&mut ix, "p1", SES, 100);
    ix.observe_message(step("a1", SES, "p1", 110, Some(200), Some("stop")));
    ix.observe_status(SES, false, 201);
    // The user's `/compact` on the idle session.
    ix.observe_compaction_part("c1", SES, false);
    ix.observe_message(user("c1", SES, 1_000));
    let mut s = step("s1", SES, "c1", 1_010, Some(1_100), Some("stop"));
    s.summary = true;
    ix.observe_message(s);
    ix.observe_status(SES, false, 1_101);
    ix.observe_message(user("u1", SES, 2_000));
    ix.observe_message(step("a2", SES, "u1", 2_010, None, None));
    let p = resolve(&mut ix, SES, "s1");
    assert!(!p.is_peer_triggered());
    assert_eq!(p.basis, Basis::Compaction);
    assert_eq!(resolve(&mut ix, SES, "a2").basis, Basis::UserTurn);
}

#[test]
fn peer_message_folded_into_manual_compaction_is_local() {
    let mut ix = index();
    ix.observe_compaction_part("c1", SES, false);
    ix.observe_message(user("c1", SES, 100));
    let mut s = step("s1", SES, "c1", 110, None, None);
    s.summary = true;
    ix.observe_message(s);
    peer(&mut ix, "p1", SES, 150);
    ix.observe_message(step("a2", SES, "p1", 300, None, None));
    let p = resolve(&mut ix, SES, "a2");
    assert!(!p.is_peer_triggered());
    assert_eq!(p.basis, Basis::Compaction);
}

// ---- task child sessions -----------------------------------------------------------------

/// A parent turn (peer or user) whose step `pa1` (110 to 1 000) runs the task tool; the
/// child session `ses_child` is created at 150, the task part names it from 155 on
/// (`state.metadata.sessionId`, `state.time.start`) and its prompt `cu1` comes at 160.
fn with_child(peer_parent: bool) -> TurnIndex {
    let mut ix = index();
    if peer_parent {
        peer(&mut ix, "pu1", SES, 100);
    } else {
        ix.observe_message(user("pu1", SES, 100));
    }
    ix.observe_message(step("pa1", SES, "pu1", 110, None, None));
    ix.observe_session_created("ses_child", Some(SES));
    ix.observe_task_part("pa1", "call_t1", SES, "ses_child", 155, None);
    ix.observe_message(user("cu1", "ses_child", 160));
    ix.observe_message(step(
        "ca1",
        "ses_child",
        "cu1",
        170,
        Some(180),
        Some("tool-calls"),
    ));
    ix.observe_message(step("ca2", "ses_child", "cu1", 190, None, None));
    ix
}

#[test]
fn child_of_peer_turn_inherits() {
    let mut ix = with_child(true);
    let p = resolve(&mut ix, "ses_child", "ca2");
    assert_eq!(peer_id(&p), Some("c2c-pu1"));
    assert!(p.inherited);
}

#[test]
fn child_of_user_turn_is_local() {
    let mut ix = with_child(false);
    let p = resolve(&mut ix, "ses_child", "ca2");
    assert!(!p.is_peer_triggered());
}

#[test]
fn grandchild_of_peer_turn_inherits() {
    let mut ix = with_child(true);
    // ca2 runs a task of its own.
    ix.observe_session_created("ses_grand", Some("ses_child"));
    ix.observe_task_part("ca2", "call_g1", "ses_child", "ses_grand", 195, None);
    ix.observe_message(user("gu1", "ses_grand", 200));
    ix.observe_message(step("ga1", "ses_grand", "gu1", 210, None, None));
    let p = resolve(&mut ix, "ses_grand", "ga1");
    assert_eq!(peer_id(&p), Some("c2c-pu1"));
    assert!(p.inherited);

    let mut ix = with_child(false);
    ix.observe_session_created("ses_grand", Some("ses_child"));
    ix.observe_task_part("ca2", "call_g1", "ses_child", "ses_grand", 195, None);
    ix.observe_message(user("gu1", "ses_grand", 200));
    ix.observe_message(step("ga1", "ses_grand", "gu1", 210, None, None));
    assert!(!resolve(&mut ix, "ses_grand", "ga1").is_peer_triggered());
}

#[test]
fn user_typing_into_child_after_parent_finished_is_local() {
    let mut ix = with_child(true);
    ix.observe_message(step(
        "ca2",
        "ses_child",
        "cu1",
        190,
        Some(300),
        Some("stop"),
    ));
    ix.observe_task_part("pa1", "call_t1", SES, "ses_child", 155, Some(310));
    ix.observe_message(step("pa1", SES, "pu1", 110, Some(1_000), Some("stop")));
    ix.observe_status(SES, false, 1_001);
    ix.observe_status("ses_child", false, 301);
    ix.observe_message(user("cu2", "ses_child", 5_000));
    ix.observe_message(step("ca3", "ses_child", "cu2", 5_010, None, None));
    assert!(!resolve(&mut ix, "ses_child", "ca3").is_peer_triggered());
}

#[test]
fn user_typing_into_child_while_the_peer_parent_runs_is_local() {
    // Issue 19, item 1: the task is done (its part completed at 310), the child is idle, the
    // parent's peer turn still runs (pa2 streams) and the user types into the child.
    let mut ix = with_child(true);
    ix.observe_message(step(
        "ca2",
        "ses_child",
        "cu1",
        190,
        Some(300),
        Some("stop"),
    ));
    ix.observe_status("ses_child", false, 301);
    ix.observe_task_part("pa1", "call_t1", SES, "ses_child", 155, Some(310));
    ix.observe_message(step("pa1", SES, "pu1", 110, Some(320), Some("tool-calls")));
    ix.observe_message(step("pa2", SES, "pu1", 330, None, None));
    ix.observe_message(user("cu2", "ses_child", 400));
    ix.observe_message(step("ca3", "ses_child", "cu2", 410, None, None));
    let p = resolve(&mut ix, "ses_child", "ca3");
    assert!(!p.is_peer_triggered(), "{p:?}");
    assert_eq!(p.basis, Basis::UserTurn);
    // The task's own steps still inherit.
    assert!(resolve(&mut ix, "ses_child", "ca2").peer_policy_applies());
}

#[test]
fn user_typing_into_child_while_its_task_runs_is_never_peer_policy() {
    // The user types into the child while the task's loop is between two steps: not the
    // message the task call wrote (that is cu1), so the user's own.
    let mut ix = with_child(true);
    ix.observe_message(step(
        "ca2",
        "ses_child",
        "cu1",
        190,
        Some(250),
        Some("tool-calls"),
    ));
    ix.observe_message(user("cu2", "ses_child", 252));
    ix.observe_message(step("ca3", "ses_child", "cu2", 260, None, None));
    let p = resolve(&mut ix, "ses_child", "ca3");
    assert!(!p.peer_policy_applies(), "{p:?}");
    // Typed while a child step surely ran: folded into the inherited peer turn.
    let mut ix = with_child(true);
    ix.observe_message(user("cu2", "ses_child", 195));
    ix.observe_message(step("ca3", "ses_child", "cu2", 260, None, None));
    let p = resolve(&mut ix, "ses_child", "ca3");
    assert_eq!(p.basis, Basis::UserFoldedIntoPeerTurn);
}

#[test]
fn child_with_unknown_spawner_is_left_to_the_prompt() {
    // The parent's task part was never seen (the plugin started late, say) and the parent
    // cannot be fetched: not peer, and basis child-origin-unknown.
    let mut ix = TurnIndex::new(Limits::default());
    ix.observe_session_created("ses_child", Some("ses_parent"));
    ix.observe_message(user("cu1", "ses_child", 160));
    ix.observe_message(step("ca1", "ses_child", "cu1", 170, None, None));
    assert_eq!(
        ix.provenance("ses_child", "ca1"),
        Lookup::NeedSession("ses_parent".into())
    );
    let p = resolve(&mut ix, "ses_child", "ca1");
    assert!(!p.is_peer_triggered());
    assert_eq!(p.basis, Basis::ChildOriginUnknown);
    // The task part was seen but its step cannot be fetched.
    let mut ix = TurnIndex::new(Limits::default());
    ix.observe_session_created("ses_child", Some("ses_parent"));
    ix.observe_task_part("pa1", "call_t1", "ses_parent", "ses_child", 150, None);
    ix.observe_message(user("cu1", "ses_child", 160));
    ix.observe_message(step("ca1", "ses_child", "cu1", 170, None, None));
    assert_eq!(
        ix.provenance("ses_child", "ca1"),
        Lookup::NeedMessage {
            session_id: "ses_parent".into(),
            message_id: "pa1".into()
        }
    );
    assert_eq!(
        resolve(&mut ix, "ses_child", "ca1").basis,
        Basis::ChildOriginUnknown
    );
}

#[test]
fn resumed_task_takes_the_origin_of_the_resuming_turn() {
    // A user turn ran the task; later a peer turn resumes the same child session.
    let mut ix = with_child(false);
    ix.observe_message(step(
        "ca2",
        "ses_child",
        "cu1",
        190,
        Some(300),
        Some("stop"),
    ));
    ix.observe_task_part("pa1", "call_t1", SES, "ses_child", 155, Some(310));
    ix.observe_message(step("pa1", SES, "pu1", 110, Some(1_000), Some("stop")));
    ix.observe_status(SES, false, 1_001);
    peer(&mut ix, "pu2", SES, 2_000);
    ix.observe_message(step("pa2", SES, "pu2", 2_010, None, None));
    ix.observe_task_part("pa2", "call_t2", SES, "ses_child", 2_050, None);
    ix.observe_message(user("cu2", "ses_child", 2_100));
    ix.observe_message(step("ca3", "ses_child", "cu2", 2_110, None, None));
    assert_eq!(
        peer_id(&resolve(&mut ix, "ses_child", "ca3")),
        Some("c2c-pu2")
    );
    assert!(!resolve(&mut ix, "ses_child", "ca2").is_peer_triggered());
}

#[test]
fn child_session_with_unknown_parent_is_asked_for() {
    let mut ix = index();
    peer(&mut ix, "pu1", SES, 100);
    ix.observe_message(step("pa1", SES, "pu1", 110, None, None));
    // session.created of the child was missed; the parent's task part was seen.
    ix.observe_task_part("pa1", "call_t1", SES, "ses_child", 150, None);
    ix.observe_message(user("cu1", "ses_child", 160));
    ix.observe_message(step("ca1", "ses_child", "cu1", 170, None, None));
    assert_eq!(
        ix.provenance("ses_child", "ca1"),
        Lookup::NeedSession("ses_child".into())
    );
    ix.observe_session("ses_child", Some(SES));
    ix.mark_history_complete("ses_child");
    assert!(resolve(&mut ix, "ses_child", "ca1").inherited);
}

#[test]
fn child_session_never_identified_is_local() {
    let mut ix = index();
    peer(&mut ix, "pu1", SES, 100);
    ix.observe_message(step("pa1", SES, "pu1", 110, None, None));
    ix.observe_message(user("cu1", "ses_child", 160));
    ix.observe_message(step("ca1", "ses_child", "cu1", 170, None, None));
    assert!(matches!(
        ix.provenance("ses_child", "ca1"),
        Lookup::NeedSession(_)
    ));
    assert!(!resolve(&mut ix, "ses_child", "ca1").is_peer_triggered());
}

#[test]
fn child_with_parent_history_unknown_asks_for_the_parent() {
    let mut ix = TurnIndex::new(Limits::default());
    ix.observe_session_created("ses_child", Some("ses_parent"));
    ix.observe_message(user("cu1", "ses_child", 160));
    ix.observe_message(step("ca1", "ses_child", "cu1", 170, None, None));
    assert_eq!(
        ix.provenance("ses_child", "ca1"),
        Lookup::NeedSession("ses_parent".into())
    );
    // The plugin loads the parent.
    ix.observe_session("ses_parent", None);
    peer(&mut ix, "pu1", "ses_parent", 100);
    ix.observe_message(step("pa1", "ses_parent", "pu1", 110, None, None));
    ix.observe_task_part("pa1", "call_t1", "ses_parent", "ses_child", 150, None);
    ix.mark_history_complete("ses_parent");
    assert!(resolve(&mut ix, "ses_child", "ca1").is_peer_triggered());
}

// ---- bounds and speed --------------------------------------------------------------------

#[test]
fn memory_is_bounded() {
    let mut ix = TurnIndex::new(Limits {
        max_messages: 100,
        max_sessions: 5,
        ..Limits::default()
    });
    for s in 0..20 {
        let ses = format!("ses_{s}");
        ix.observe_session_created(&ses, None);
        for i in 0..30 {
            let t = i * 10;
            ix.observe_message(user(&format!("u{s}_{i}"), &ses, t));
            ix.observe_peer_part(&format!("u{s}_{i}"), &ses, mark("x"));
        }
        assert!(ix.message_count() <= 100);
        assert!(ix.session_count() <= 5);
    }
    // One session alone over the cap is trimmed from its oldest end.
    let mut ix = TurnIndex::new(Limits {
        max_messages: 50,
        ..Limits::default()
    });
    ix.observe_session_created(SES, None);
    for i in 0..200 {
        ix.observe_message(user(&format!("u{i}"), SES, i * 10));
    }
    assert_eq!(ix.message_count(), 50);
    // A peer message whose session history was trimmed is asked for, not guessed.
    peer(&mut ix, "p1", SES, 100_000);
    ix.observe_message(step("a1", SES, "p1", 100_010, None, None));
    assert!(matches!(ix.provenance(SES, "a1"), Lookup::NeedSession(_)));
    assert!(!resolve(&mut ix, SES, "a1").is_peer_triggered());
}

#[test]
fn forget_session_drops_its_messages() {
    let mut ix = with_child(true);
    ix.forget_session("ses_child");
    assert_eq!(ix.session_count(), 1);
    assert_eq!(ix.message_count(), 2);
    assert!(matches!(
        ix.provenance("ses_child", "ca2"),
        Lookup::NeedMessage { .. }
    ));
}

#[test]
fn ten_thousand_messages_answer_quickly() {
    let mut ix = index();
    // 2 500 turns of 4 messages, alternating user and peer turns, some with folds.
    let mut t = 0;
    let mut tools = Vec::new();
    for turn in 0..2_500 {
        let u = format!("u{turn}");
        if turn % 2 == 0 {
            peer(&mut ix, &u, SES, t);
        } else {
            ix.observe_message(user(&u, SES, t));
        }
        let a1 = format!("a{turn}_1");
        ix.observe_message(step(
            &a1,
            SES,
            &u,
            t + 10,
            Some(t + 100),
            Some("tool-calls"),
        ));
        let f = format!("f{turn}");
        peer(&mut ix, &f, SES, t + 50);
        let a2 = format!("a{turn}_2");
        ix.observe_message(step(&a2, SES, &f, t + 110, Some(t + 200), Some("stop")));
        ix.observe_status(SES, false, t + 201);
        tools.push((a2, turn % 2 == 0));
        t += 10_000;
    }
    assert_eq!(ix.message_count(), 10_000);
    let start = std::time::Instant::now();
    let mut n = 0u32;
    for _ in 0..5 {
        for (a2, want_peer) in &tools {
            let p = resolve(&mut ix, SES, a2);
            assert_eq!(p.is_peer_triggered(), *want_peer, "{a2}");
            n += 1;
        }
    }
    let per = start.elapsed() / n;
    eprintln!("{per:?} per lookup on a 10 000-message index");
    // Microseconds in release; generous for unoptimised test builds on a shared machine.
    assert!(
        per < std::time::Duration::from_micros(200),
        "{per:?} per lookup"
    );
}

#[test]
fn message_from_before_the_instance_started_is_not_trusted_idle() {
    // A peer message created before this instance started: the index cannot know whether a
    // loop was running then, so it asks, and a second miss is local.
    let mut ix = TurnIndex::new(Limits {
        instance_started_ms: Some(1_000),
        ..Limits::default()
    });
    ix.observe_session(SES, None);
    peer(&mut ix, "p1", SES, 500);
    ix.observe_message(step("a1", SES, "p1", 2_000, Some(2_100), Some("stop")));
    assert_eq!(ix.provenance(SES, "a1"), Lookup::NeedSession(SES.into()));
    assert!(!resolve(&mut ix, SES, "a1").is_peer_triggered());
    // Once the instance runs and the session has settled, a new peer message is a peer turn.
    peer(&mut ix, "p2", SES, 5_000);
    ix.observe_message(step("a2", SES, "p2", 5_010, None, None));
    assert!(resolve(&mut ix, SES, "a2").is_peer_triggered());
}
