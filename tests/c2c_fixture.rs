//! c2c-bridge on the broker root the real c2c 0.8.0 CLI wrote (`tests/fixtures/c2c-0.8/`,
//! whose README lists what was done): every message, room, invitation and pending slot in
//! it is read, c2c's room access rules hold, and the files c2c-bridge rewrites keep c2c's
//! fields and shapes.

mod common;

use c2c_bridge::rooms::Visibility;
use c2c_bridge::{Broker, ErrorCode, OpenOptions};
use common::{copy_fixture, json, make_alive, refresh_pending, LiveProcess};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

struct World {
    dir: tempfile::TempDir,
    root: PathBuf,
    _bob: LiveProcess,
    _carol: LiveProcess,
}

/// The fixture with bob's and carol's registrations pointing at live processes and the
/// pending slots made current.
fn world() -> World {
    let (dir, root) = copy_fixture();
    let (bob, carol) = (LiveProcess::start(), LiveProcess::start());
    make_alive(&root, "ses_bob", bob.pid());
    make_alive(&root, "ses_carol", carol.pid());
    refresh_pending(&root);
    World {
        dir,
        root,
        _bob: bob,
        _carol: carol,
    }
}

impl World {
    /// alice, registering (refreshing her dead c2c registration) from this process.
    fn alice(&self) -> Broker {
        Broker::open(OpenOptions {
            session_id: "ses_alice".into(),
            alias: Some("alice".into()),
            root: Some(self.root.clone()),
            directory: Some(self.dir.path().to_path_buf()),
            ..Default::default()
        })
        .unwrap()
    }

    /// A c2c peer's session, attached to as the CLI does.
    fn attach(&self, sid: &str) -> Broker {
        Broker::open(OpenOptions {
            session_id: sid.into(),
            root: Some(self.root.clone()),
            directory: Some(self.dir.path().to_path_buf()),
            attach: true,
            ..Default::default()
        })
        .unwrap()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

fn record<'a>(records: &'a Value, sid: &str) -> &'a Value {
    records
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session_id"] == sid)
        .unwrap()
}

#[test]
fn refresh_keeps_c2cs_fields_of_ones_own_record_and_leaves_the_others_alone() {
    let w = world();
    let before = json(&w.path("registry.json"));
    let alice = w.alice();
    let after = json(&w.path("registry.json"));
    let own = record(&after, "ses_alice");
    assert_eq!(own["canonical_alias"], "alice#unknown@vm", "{own}");
    assert_eq!(own["pid"], std::process::id());
    for sid in ["ses_bob", "ses_carol"] {
        assert_eq!(record(&after, sid), record(&before, sid));
    }
    // a second refresh (the plugin reopening in the same process) keeps it too
    let _again = w.alice();
    drop(alice);
    let own = record(&json(&w.path("registry.json")), "ses_alice").clone();
    assert_eq!(own["canonical_alias"], "alice#unknown@vm");
}

#[test]
fn c2c_peers_are_listed_alive_and_dms_go_both_ways() {
    let w = world();
    let alice = w.alice();
    let peers = alice.list_peers().unwrap();
    let mut names: Vec<(String, bool)> = peers.iter().map(|p| (p.alias.clone(), p.alive)).collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("alice".into(), true),
            ("bob".into(), true),
            ("carol".into(), true)
        ]
    );
    alice
        .send("bob", "from the bridge", &Default::default())
        .unwrap();
    let bob_inbox = json(&w.path("ses_bob.inbox.json"));
    let m = &bob_inbox[0];
    // c2c's message fields, c2c's types
    assert_eq!(m["from_alias"], "alice");
    assert_eq!(m["to_alias"], "bob");
    assert_eq!(m["content"], "from the bridge");
    assert!(m["ts"].is_f64() && m["message_id"].is_string());
}

#[test]
fn the_direct_messages_c2c_wrote_are_read_and_acknowledged_in_c2cs_archive_shape() {
    let w = world();
    let alice = w.alice();
    let dms: Vec<_> = alice
        .peek()
        .unwrap()
        .into_iter()
        .filter(|m| m.room_id().is_none())
        .collect();
    assert_eq!(dms.len(), 1);
    assert_eq!(dms[0].from_alias, "bob");
    assert_eq!(dms[0].content, "hi alice — ünïcödé ✓ and \"quotes\"");
    let carol = w.attach("ses_carol");
    let inbox = carol.peek().unwrap();
    let dm = inbox.iter().find(|m| m.room_id().is_none()).unwrap();
    assert_eq!(dm.content, "for carol, to be left undelivered");
    carol.ack(std::slice::from_ref(&dm.message_id)).unwrap();
    // c2c's archive line: the record plus drained_at, drained_by, session_id
    let archive = std::fs::read_to_string(w.path("archive/ses_carol.jsonl")).unwrap();
    let line: Value = serde_json::from_str(archive.lines().next().unwrap()).unwrap();
    let reference: Value = serde_json::from_str(
        std::fs::read_to_string(w.path("archive/ses_bob.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let mut expected = keys(&reference);
    expected.push("ts".into()); // c2c's drain dropped ts from bob's line; we keep the record whole
    expected.sort();
    assert_eq!(keys(&line), expected);
    assert_eq!(line["session_id"], "ses_carol");
    // the inbox stays a JSON array of c2c records, the room post untouched
    let rest = json(&w.path("ses_carol.inbox.json"));
    assert_eq!(
        rest,
        json!([{"from_alias":"bob","to_alias":"carol#lobby","content":"room post from bob","ts":1796055331.989317}])
    );
}

#[test]
fn every_room_and_invitation_is_read_with_c2cs_visibility() {
    let w = world();
    let alice = w.alice();
    let rooms = alice.list_rooms().unwrap();
    let summary: Vec<(&str, &str, Vec<String>, bool)> = rooms
        .iter()
        .map(|r| {
            (
                r.room_id.as_str(),
                r.visibility,
                r.members.clone(),
                r.joined,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "lobby",
                "public",
                vec!["alice".into(), "bob".into(), "carol".into()],
                true
            ),
            ("secret", "invite_only", vec!["alice".into()], true),
        ]
    );
    let history = alice.room_history("lobby", 10).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        (history[0].from_alias.as_str(), history[0].content.as_str()),
        ("bob", "room post from bob")
    );
    // bob is invited: he sees the room, not its roster
    let bob = w.attach("ses_bob");
    let secret = bob
        .list_rooms()
        .unwrap()
        .into_iter()
        .find(|r| r.room_id == "secret")
        .unwrap();
    assert!(secret.members.is_empty() && !secret.joined);
    // carol is neither member nor invited: the room is not listed to her
    let carol = w.attach("ses_carol");
    let listed: Vec<String> = carol
        .list_rooms()
        .unwrap()
        .into_iter()
        .map(|r| r.room_id)
        .collect();
    assert_eq!(listed, ["lobby"]);
}

#[test]
fn invite_only_refuses_a_non_invited_join_and_its_history() {
    let w = world();
    let _alice = w.alice();
    let carol = w.attach("ses_carol");
    let members = w.path("rooms/secret/members.json");
    let before = std::fs::read(&members).unwrap();
    let err = carol.join_room("secret").unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotInvited);
    assert_eq!(err.code().as_str(), "E_NOT_INVITED");
    assert!(err.to_string().contains("invite-only"), "{err}");
    assert_eq!(
        std::fs::read(&members).unwrap(),
        before,
        "members.json untouched"
    );
    assert_eq!(
        carol.room_history("secret", 10).unwrap_err().code(),
        ErrorCode::NotMember
    );
    // posting needs membership too
    assert_eq!(
        carol
            .send_room("secret", "let me in", &Default::default())
            .unwrap_err()
            .code(),
        ErrorCode::NotMember
    );
    // the invited bob joins; the file keeps c2c's member shape and alice's row as it was
    let bob = w.attach("ses_bob");
    bob.join_room("secret").unwrap();
    let rows = json(&members);
    assert_eq!(
        rows[0],
        json!({"alias":"alice","session_id":"ses_alice","joined_at":1796055332.024471})
    );
    let mut keys: Vec<&String> = rows[1].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["alias", "joined_at", "session_id"]);
    assert_eq!(rows[1]["alias"], "bob");
    assert!(bob.room_history("secret", 10).unwrap().is_empty());
    // meta.json is only read by a join
    assert_eq!(
        json(&w.path("rooms/secret/meta.json")),
        json!({"visibility":"invite_only","invited_members":["bob"],"created_by":"alice"})
    );
}

#[test]
fn a_room_we_create_has_c2cs_meta_and_c2cs_rules() {
    let w = world();
    let alice = w.alice();
    alice
        .create_room("plans", Visibility::InviteOnly, &["Carol".into()])
        .unwrap();
    let meta = json(&w.path("rooms/plans/meta.json"));
    assert_eq!(meta["visibility"], "invite_only");
    assert_eq!(meta["invited_members"], json!(["Carol"]));
    assert_eq!(meta["created_by"], "alice");
    assert_eq!(
        json(&w.path("rooms/plans/members.json"))[0]["session_id"],
        "ses_alice"
    );
    assert_eq!(
        alice
            .create_room("plans", Visibility::Public, &[])
            .unwrap_err()
            .code(),
        ErrorCode::RoomExists
    );
    let bob = w.attach("ses_bob");
    assert_eq!(
        bob.join_room("plans").unwrap_err().code(),
        ErrorCode::NotInvited
    );
    // only members invite
    assert_eq!(
        bob.invite_to_room("plans", "bob").unwrap_err().code(),
        ErrorCode::NotMember
    );
    alice.invite_to_room("plans", "bob").unwrap();
    bob.join_room("plans").unwrap();
    let carol = w.attach("ses_carol");
    carol.join_room("plans").unwrap();
    assert_eq!(
        json(&w.path("rooms/plans/meta.json"))["invited_members"],
        json!(["Carol", "bob"])
    );
}

#[test]
fn who_may_delete_a_room_follows_c2c() {
    let w = world();
    let alice = w.alice();
    let bob = w.attach("ses_bob");
    let carol = w.attach("ses_carol");
    let refused = |r: c2c_bridge::Result<()>| r.unwrap_err().code();
    // not the creator
    assert_eq!(
        refused(bob.delete_room("lobby", false)),
        ErrorCode::RoomDeleteRefused
    );
    assert_eq!(
        refused(bob.delete_room("lobby", true)),
        ErrorCode::RoomDeleteRefused
    );
    // the creator, but members remain
    assert_eq!(
        refused(alice.delete_room("lobby", false)),
        ErrorCode::RoomDeleteRefused
    );
    assert!(w.path("rooms/lobby/history.jsonl").exists());
    for b in [&alice, &bob, &carol] {
        b.leave_room("lobby").unwrap();
    }
    assert_eq!(
        refused(carol.delete_room("lobby", false)),
        ErrorCode::RoomDeleteRefused
    );
    alice.delete_room("lobby", false).unwrap();
    assert!(!w.path("rooms/lobby").exists());
    assert_eq!(
        refused(alice.delete_room("lobby", false)),
        ErrorCode::UnknownRoom
    );
    // a directory inside the room: refused before anything is removed
    alice
        .create_room("odd", Visibility::InviteOnly, &[])
        .unwrap();
    alice.leave_room("odd").unwrap();
    std::fs::create_dir(w.path("rooms/odd/sub")).unwrap();
    assert_eq!(
        refused(alice.delete_room("odd", false)),
        ErrorCode::RoomDeleteRefused
    );
    assert_eq!(
        json(&w.path("rooms/odd/meta.json"))["visibility"],
        "invite_only"
    );
    assert!(w.path("rooms/odd/members.json").exists());
    // a room without a recorded creator: only with force
    std::fs::create_dir(w.path("rooms/legacy")).unwrap();
    std::fs::write(w.path("rooms/legacy/members.json"), b"[]").unwrap();
    assert_eq!(
        refused(bob.delete_room("legacy", false)),
        ErrorCode::RoomDeleteRefused
    );
    bob.delete_room("legacy", true).unwrap();
    assert!(!Path::new(&w.path("rooms/legacy")).exists());
}

#[test]
fn the_pending_slots_c2c_opened_are_read() {
    let w = world();
    let _alice = w.alice();
    let bob = w.attach("ses_bob");
    let carol = w.attach("ses_carol");
    let ok = bob.check_pending_reply("perm-open-1").unwrap();
    assert!(ok.valid);
    assert_eq!(ok.requester_session_id.as_deref(), Some("ses_alice"));
    let no = carol.check_pending_reply("perm-open-1").unwrap();
    assert!(!no.valid);
    assert_eq!(
        no.error.as_deref(),
        Some("reply from non-supervisor: carol")
    );
    assert!(carol.check_pending_reply("perm-checked-2").unwrap().valid);
    // the file keeps every c2c field of every slot
    for slot in json(&w.path("pending_permissions.json"))
        .as_array()
        .unwrap()
    {
        for k in [
            "perm_id",
            "kind",
            "requester_session_id",
            "requester_alias",
            "supervisors",
            "created_at",
            "expires_at",
            "fallthrough_fired_at",
            "resolved_at",
            "verdict",
        ] {
            assert!(slot.get(k).is_some(), "{k} missing from {slot}");
        }
    }
}

fn inbox_records(w: &World, sid: &str) -> Vec<Value> {
    json(&w.path(&format!("{sid}.inbox.json")))
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn c2cs_room_fan_out_without_message_id_is_delivered_and_acknowledged_by_a_stable_id() {
    let w = world();
    let alice = w.alice();
    let msgs = alice.peek().unwrap();
    assert_eq!(msgs.len(), 2, "the DM and the room post");
    let post = msgs.iter().find(|m| m.room_id() == Some("lobby")).unwrap();
    assert_eq!(
        (post.from_alias.as_str(), post.content.as_str()),
        ("bob", "room post from bob")
    );
    assert!(
        post.message_id.starts_with("c2c-derived-"),
        "{}",
        post.message_id
    );
    // the same id on every read, by any handle, and from the record alone
    assert_eq!(alice.peek().unwrap(), msgs);
    let raw = inbox_records(&w, "ses_alice")[1].clone();
    assert_eq!(
        c2c_bridge::inbox::derived_message_id(&raw).as_deref(),
        Some(post.message_id.as_str())
    );
    // … also after c2c rewrites the file its own way (keys reordered, pretty-printed)
    let path = w.path("ses_alice.inbox.json");
    let reordered: Vec<Value> = inbox_records(&w, "ses_alice")
        .into_iter()
        .map(|r| {
            let mut o: Vec<(String, Value)> = r.as_object().unwrap().clone().into_iter().collect();
            o.reverse();
            Value::Object(o.into_iter().collect())
        })
        .collect();
    std::fs::write(&path, serde_json::to_string_pretty(&reordered).unwrap()).unwrap();
    assert_eq!(alice.peek().unwrap()[1].message_id, post.message_id);
    // the gate passes it on like any message
    let gate = alice.gate_inbox().unwrap();
    assert!(gate.deliver.iter().any(|m| m.message_id == post.message_id));
    // nothing was written into c2c's record
    assert!(inbox_records(&w, "ses_alice")[1]
        .get("message_id")
        .is_none());
    // acknowledged by that id: archived in c2c's shape, gone from the inbox, once
    let ack = alice.ack(std::slice::from_ref(&post.message_id)).unwrap();
    assert_eq!(ack.acked, std::slice::from_ref(&post.message_id));
    let left: Vec<Value> = inbox_records(&w, "ses_alice");
    assert_eq!(left.len(), 1);
    assert_eq!(
        left[0]["message_id"],
        "f90ebc40-969f-444b-b9e0-f83e20af587e"
    );
    let archive = std::fs::read_to_string(w.path("archive/ses_alice.jsonl")).unwrap();
    let line: Value = serde_json::from_str(archive.lines().last().unwrap()).unwrap();
    assert_eq!(line["to_alias"], "alice#lobby");
    assert_eq!(line["drained_by"], "c2c-bridge:ack");
    assert_eq!(
        alice
            .ack(std::slice::from_ref(&post.message_id))
            .unwrap()
            .missing,
        std::slice::from_ref(&post.message_id)
    );
}

#[test]
fn a_record_that_is_not_a_message_is_reported_never_skipped_silently() {
    let w = world();
    let alice = w.alice();
    let path = w.path("ses_alice.inbox.json");
    let mut records = inbox_records(&w, "ses_alice");
    records.push(json!({"kind": "future-event", "payload": {"secret": "value"}}));
    std::fs::write(&path, serde_json::to_vec(&records).unwrap()).unwrap();
    assert_eq!(
        alice.peek().unwrap().len(),
        2,
        "both messages still delivered"
    );
    alice.peek().unwrap();
    alice.gate_inbox().unwrap();
    let log = std::fs::read_to_string(w.path("broker.log")).unwrap();
    let reports: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("inbox_not_message"))
        .collect();
    assert_eq!(reports.len(), 1, "once per record: {reports:?}");
    assert!(reports[0].contains("{kind, payload}"), "{}", reports[0]);
    assert!(
        !reports[0].contains("value"),
        "never the values: {}",
        reports[0]
    );
    // doctor's view
    let s = c2c_bridge::inbox::summarize(&path).unwrap();
    assert_eq!(s.messages, 2);
    assert_eq!(s.derived_ids, 1);
    assert_eq!(s.not_messages, ["{kind, payload}"]);
    // it stays in the file through every rewrite
    let ids: Vec<String> = alice
        .peek()
        .unwrap()
        .into_iter()
        .map(|m| m.message_id)
        .collect();
    alice.ack(&ids).unwrap();
    assert_eq!(
        inbox_records(&w, "ses_alice"),
        [json!({"kind": "future-event", "payload": {"secret": "value"}})]
    );
}

#[test]
fn every_record_in_every_inbox_of_the_fixture_is_a_deliverable_message() {
    let w = world();
    let alice = w.alice();
    let mut total_records = 0;
    let mut total_messages = 0;
    for sid in ["ses_alice", "ses_bob", "ses_carol"] {
        let records = inbox_records(&w, sid);
        let seen = if sid == "ses_alice" {
            alice.peek().unwrap()
        } else {
            w.attach(sid).peek().unwrap()
        };
        // one message per record, in file order, ids unique
        assert_eq!(seen.len(), records.len(), "{sid}");
        for (m, r) in seen.iter().zip(&records) {
            assert_eq!(m.content, r["content"], "{sid}");
            assert_eq!(m.to_alias, r["to_alias"], "{sid}");
        }
        let mut ids: Vec<&str> = seen.iter().map(|m| m.message_id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), seen.len(), "{sid}");
        total_records += records.len();
        total_messages += seen.len();
    }
    assert_eq!((total_records, total_messages), (4, 4));
}

#[test]
fn a_room_post_from_the_bridge_keeps_c2cs_history_and_reaches_c2c_members() {
    let w = world();
    let alice = w.alice();
    let history = w.path("rooms/lobby/history.jsonl");
    let c2c_line = std::fs::read_to_string(&history).unwrap();
    let sent = alice
        .send_room("lobby", "bridge post", &Default::default())
        .unwrap();
    let mut to: Vec<&str> = sent.sent.iter().map(|r| r.to_alias.as_str()).collect();
    to.sort();
    assert_eq!(to, ["bob#lobby", "carol#lobby"]);
    let now = std::fs::read_to_string(&history).unwrap();
    assert!(now.starts_with(&c2c_line), "c2c's line is kept as it was");
    let ours: Value = serde_json::from_str(now.lines().nth(1).unwrap()).unwrap();
    // c2c's history fields, with c2c's types
    assert_eq!(ours["from_alias"], "alice");
    assert_eq!(ours["content"], "bridge post");
    assert!(ours["ts"].is_f64());
    let bob_inbox = inbox_records(&w, "ses_bob");
    assert_eq!(bob_inbox.last().unwrap()["to_alias"], "bob#lobby");
}
