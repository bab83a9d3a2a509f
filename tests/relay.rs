//! The NATS JetStream relay (issue 17) against a real `nats-server` on 127.0.0.1 (random
//! port, temp store): two broker roots, one connector process each, exchanging DMs and
//! presence; credentials and subject permissions enforced by the server; a payload claiming
//! another node rejected by the receiver; kill -9 of the server or of either connector in
//! the middle of 1,000 messages loses and duplicates nothing.
//!
//! Skips with one line when `nats-server` is not installed (`.ci/run` installs it).

mod relay_support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use c2c_bridge::policy::rate::RateConfig;
use c2c_bridge::receipts::Status;
use c2c_bridge::relay::Relay;
use c2c_bridge::{Broker, ErrorCode, OpenOptions};
use relay_support::{creds, provision, wait_until, ChildConnector, Server};

/// Not a test of its own: the body of a connector child process (see `relay_support`).
#[test]
fn child_connector() {
    relay_support::child_main();
}

struct World {
    _dir: tempfile::TempDir,
    server: Server,
    root_a: PathBuf,
    root_b: PathBuf,
}

fn world(nodes: &[&str]) -> World {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), nodes);
    provision(&server, nodes, Duration::from_secs(3));
    let root_a = dir.path().join("root-a");
    let root_b = dir.path().join("root-b");
    World {
        server,
        root_a,
        root_b,
        _dir: dir,
    }
}

fn session(root: &Path, sid: &str, alias: &str) -> Broker {
    Broker::open(OpenOptions {
        session_id: sid.into(),
        alias: Some(alias.into()),
        root: Some(root.to_path_buf()),
        directory: Some(root.parent().unwrap().to_path_buf()),
        rate: Some(RateConfig {
            burst: 100_000,
            ..RateConfig::default()
        }),
        inbound: Some("accept".into()),
        env: c2c_bridge::Environment::empty(),
        ..Default::default()
    })
    .unwrap()
}

fn sees(b: &Broker, alias: &str) -> bool {
    b.list_peers()
        .unwrap()
        .iter()
        .any(|p| p.alias == alias && p.alive)
}

/// Message ids in `b`'s inbox with their counts.
fn inbox_counts(b: &Broker) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for msg in b.peek().unwrap() {
        *m.entry(msg.message_id).or_insert(0) += 1;
    }
    m
}

#[test]
fn two_nodes_exchange_dms_both_ways_and_see_each_others_peers() {
    need_nats!();
    let w = world(&["a", "b"]);
    let amy = session(&w.root_a, "ses_amy", "amy");
    let bob = session(&w.root_b, "ses_bob", "bob");
    let mut ca = ChildConnector::start(&w.server, &w.root_a, "a");
    let mut cb = ChildConnector::start(&w.server, &w.root_b, "b");
    assert!(wait_until(20, || sees(&amy, "bob@b") && sees(&bob, "amy@a")));
    // Local aliases keep working, remote ones are only alias@node.
    assert!(!sees(&amy, "bob"));

    let r = amy
        .send("bob@b", "hello from a", &Default::default())
        .unwrap();
    assert_eq!(r.to_alias, "bob@b");
    assert!(wait_until(20, || !bob.peek().unwrap().is_empty()));
    let got = bob.peek().unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].message_id, r.message_id);
    assert_eq!(got[0].from_alias, "amy@a");
    assert_eq!(got[0].content, "hello from a");
    assert_eq!(got[0].from_session_id.as_deref(), Some("relay.a.ses_amy"));
    assert_eq!(got[0].via, vec!["ses_amy".to_string()]);

    // The reply crosses back, its via chain growing across the relay.
    let opts = c2c_bridge::broker::SendOptions {
        via: got[0].via.clone(),
    };
    let r2 = bob.send("amy@a", "hi back", &opts).unwrap();
    assert!(wait_until(20, || !amy.peek().unwrap().is_empty()));
    let back = amy.peek().unwrap();
    assert_eq!(back[0].message_id, r2.message_id);
    assert_eq!(back[0].from_alias, "bob@b");
    assert_eq!(
        back[0].via,
        vec!["ses_amy".to_string(), "ses_bob".to_string()]
    );

    // Receipts travel back: bob's plugin acknowledging delivery reaches amy's receipts.
    bob.acknowledge(std::slice::from_ref(&r.message_id), Status::Delivered)
        .unwrap();
    assert!(wait_until(20, || amy.receipts(50).unwrap().iter().any(
        |x| x.message_id == r.message_id && x.status == Status::Delivered
    )));

    // An unknown remote alias is refused at once, nothing queued.
    let e = amy.send("nobody@b", "x", &Default::default()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownRecipient);

    // At most one connector per root on a machine: a second one for root a stands by.
    let e = Relay::start(relay_support::config(&w.server, &w.root_a, "a", "pw-a")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::RelayBusy, "{e}");

    // A third node with wrong credentials is refused by the server.
    let mut bad = relay_support::config(&w.server, &w.root_a.with_extension("c"), "c", "wrong");
    bad.node = "c".into();
    let e = Relay::start(bad).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Relay);
    assert!(e.to_string().contains("refused"), "{e}");

    // Clean stops; the stopped node's peers disappear from the other side.
    assert!(cb.stop(), "connector b did not stop cleanly");
    assert!(wait_until(20, || !sees(&amy, "bob@b")));
    assert!(ca.stop(), "connector a did not stop cleanly");
}

#[test]
fn the_server_denies_another_nodes_subject_and_the_receiver_rejects_a_false_claim() {
    need_nats!();
    let w = world(&["a", "b"]);
    let bob = session(&w.root_b, "ses_bob", "bob");
    let _cb = ChildConnector::start(&w.server, &w.root_b, "b");
    assert!(wait_until(20, || w
        .root_b
        .join("relay/peers.json")
        .exists()));
    let _ = creds(w.root_a.parent().unwrap(), "a");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let a = async_nats::ConnectOptions::with_user_and_password("a".into(), "pw-a".into())
            .custom_inbox_prefix("_INBOX_a")
            .event_callback(move |ev| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(ev.to_string());
                }
            })
            .connect(w.server.url())
            .await
            .unwrap();
        let js = async_nats::jetstream::new(a.clone());
        let env = |from_node: &str, id: &str| {
            serde_json::json!({
                "kind": "message", "from_node": from_node, "from_alias": "mallory",
                "from_session_id": "ses_m", "to_alias": "bob", "content": "trust me",
                "message_id": id, "ts": 1.0,
            })
            .to_string()
        };
        // 1. Node a publishing on node c's subject toward b: denied by the server.
        a.publish(
            "c2c.msg.c.b",
            env("c", "11111111-0000-4000-8000-000000000001").into(),
        )
        .await
        .unwrap();
        a.flush().await.unwrap();
        let denied = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(ev) = rx.recv().await {
                if ev.to_lowercase().contains("permissions violation") {
                    return ev;
                }
            }
            String::new()
        })
        .await
        .unwrap();
        assert!(denied.contains("c2c.msg.c.b"), "{denied}");
        // ... and a JetStream publish there gets no PubAck.
        let ack = js
            .publish(
                "c2c.msg.c.b",
                env("c", "11111111-0000-4000-8000-000000000002").into(),
            )
            .await
            .unwrap();
        assert!(ack.await.is_err());

        // 2. On its own subject, but claiming node c: stored by JetStream, rejected by b.
        js.publish(
            "c2c.msg.a.b",
            env("c", "11111111-0000-4000-8000-000000000003").into(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
        // 3. An honest one after it, so we know b has processed the false one.
        js.publish(
            "c2c.msg.a.b",
            env("a", "11111111-0000-4000-8000-000000000004").into(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    });
    assert!(wait_until(20, || !bob.peek().unwrap().is_empty()));
    let got = bob.peek().unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].message_id, "11111111-0000-4000-8000-000000000004");
    assert_eq!(got[0].from_alias, "mallory@a");
    let log = std::fs::read_to_string(w.root_b.join("broker.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("relay_rejected") && l.contains("claims node")),
        "{log}"
    );
}

/// Send `n` messages from amy (root a) to bob@b on a thread, calling `at_half` once half are
/// queued; returns the ids sent.
fn send_many(amy: &Broker, n: usize, mut at: impl FnMut(usize)) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        at(i);
        let r = amy
            .send("bob@b", &format!("message {i}"), &Default::default())
            .unwrap();
        ids.push(r.message_id);
    }
    ids
}

fn assert_exactly_once(bob: &Broker, ids: &[String]) {
    assert!(
        wait_until(120, || inbox_counts(bob).len() >= ids.len()),
        "only {} of {} arrived",
        inbox_counts(bob).len(),
        ids.len()
    );
    // Give late redeliveries a chance to show up as duplicates.
    std::thread::sleep(Duration::from_secs(2));
    let counts = inbox_counts(bob);
    assert_eq!(counts.len(), ids.len());
    for id in ids {
        assert_eq!(counts.get(id), Some(&1), "message {id}");
    }
}

#[test]
fn kill9_of_the_server_mid_1000_messages_loses_and_duplicates_nothing() {
    need_nats!();
    let mut w = world(&["a", "b"]);
    let amy = session(&w.root_a, "ses_amy", "amy");
    let bob = session(&w.root_b, "ses_bob", "bob");
    let _ca = ChildConnector::start(&w.server, &w.root_a, "a");
    let _cb = ChildConnector::start(&w.server, &w.root_b, "b");
    assert!(wait_until(20, || sees(&amy, "bob@b")));
    let server = &mut w.server;
    let ids = send_many(&amy, 1000, |i| {
        if i == 400 {
            server.kill9();
            std::thread::sleep(Duration::from_millis(500));
        }
        if i == 700 {
            server.restart();
        }
    });
    assert_exactly_once(&bob, &ids);
}

#[test]
fn kill9_of_either_connector_mid_1000_messages_loses_and_duplicates_nothing() {
    need_nats!();
    let w = world(&["a", "b"]);
    let amy = session(&w.root_a, "ses_amy", "amy");
    let bob = session(&w.root_b, "ses_bob", "bob");
    let mut ca = ChildConnector::start(&w.server, &w.root_a, "a");
    let mut cb = ChildConnector::start(&w.server, &w.root_b, "b");
    assert!(wait_until(20, || sees(&amy, "bob@b")));
    let (sa, sb) = (w.server.url(), w.server.url());
    let _ = (sa, sb);
    let ids = send_many(&amy, 1000, |i| match i {
        250 => ca.kill9(),
        400 => ca = ChildConnector::start(&w.server, &w.root_a, "a"),
        600 => cb.kill9(),
        800 => cb = ChildConnector::start(&w.server, &w.root_b, "b"),
        _ => {}
    });
    assert_exactly_once(&bob, &ids);
}
