//! The connector's async side: one tokio runtime (owned by [`super::Relay`]'s thread), one
//! NATS connection, three loops (inbound consumer, outbox publisher, presence) and a clean
//! stop.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, stream::StorageType};
use futures::StreamExt;
use tokio::sync::{watch, Notify};

use crate::error::{Error, Result};
use crate::fields;
use crate::log::AuditLog;
use crate::policy::rate::RateLimiter;
use crate::store::BrokerRoot;

use super::creds::Credentials;
use super::names::{self, CONSUMER, PRESENCE_BUCKET};
use super::presence::{self, Mirror};
use super::wire::{self, Envelope};
use super::{outbox, RelayConfig, State};

fn relay_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Relay {
        reason: format!("{what}: {e}"),
    }
}

/// [`connect`] for the crate.
pub(super) async fn connect_pub(
    cfg: &RelayConfig,
    stop: &mut watch::Receiver<bool>,
) -> Result<async_nats::Client> {
    connect(cfg, stop).await
}

/// How long the initial connect keeps retrying an unreachable server before it gives up
/// (the caller — a service manager, the CLI user — starts again later). Once connected, the
/// client reconnects by itself for as long as the connector runs.
pub const INITIAL_CONNECT_WAIT: Duration = Duration::from_secs(10);

/// Connect, retrying while the server is unreachable (until `stop`, at most
/// [`INITIAL_CONNECT_WAIT`]); refused credentials end it at once.
async fn connect(
    cfg: &RelayConfig,
    stop: &mut watch::Receiver<bool>,
) -> Result<async_nats::Client> {
    let mut delay = Duration::from_millis(200);
    let give_up = tokio::time::Instant::now() + INITIAL_CONNECT_WAIT;
    loop {
        let mut opts = async_nats::ConnectOptions::new()
            .name(format!("c2c-bridge relay {}", cfg.node))
            .custom_inbox_prefix(names::inbox_prefix(&cfg.node))
            .connection_timeout(Duration::from_secs(5))
            .max_reconnects(None);
        opts = match &cfg.creds {
            Credentials::None => opts,
            Credentials::Token(t) => opts.token(t.clone()),
            Credentials::UserPassword(u, p) => opts.user_and_password(u.clone(), p.clone()),
            Credentials::NKey(seed) => opts.nkey(seed.clone()),
            Credentials::CredsFile(p) => opts
                .credentials_file(p)
                .await
                .map_err(|e| relay_err("cannot read the .creds file", e))?,
        };
        match opts.connect(cfg.url.as_str()).await {
            Ok(c) => return Ok(c),
            Err(e) => {
                use async_nats::ConnectErrorKind as K;
                if matches!(
                    e.kind(),
                    K::Authentication | K::AuthorizationViolation | K::ServerParse | K::Tls
                ) {
                    return Err(relay_err("the NATS server refused the connection", e));
                }
            }
        }
        if tokio::time::Instant::now() + delay > give_up {
            return Err(Error::Relay {
                reason: format!(
                    "cannot reach the NATS server at {} within {} s",
                    redact_url(&cfg.url),
                    INITIAL_CONNECT_WAIT.as_secs()
                ),
            });
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.changed() => return Err(Error::Closed),
        }
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

/// The streams and bucket this node uses; created when missing (needs the create
/// permission, see RELAY.md) when `provision` is set.
async fn ensure(
    js: &jetstream::Context,
    cfg: &RelayConfig,
) -> Result<(jetstream::stream::Stream, jetstream::kv::Store)> {
    let name = names::stream(&cfg.node);
    let stream = match js.get_stream(&name).await {
        Ok(s) => s,
        Err(e) if !cfg.provision => {
            return Err(relay_err(
                &format!("stream {name} is not available (provision it, see RELAY.md)"),
                e,
            ))
        }
        Err(_) => js
            .create_stream(stream_config(&cfg.node))
            .await
            .map_err(|e| relay_err(&format!("cannot create stream {name}"), e))?,
    };
    let kv = match js.get_key_value(PRESENCE_BUCKET).await {
        Ok(kv) => kv,
        Err(e) if !cfg.provision => {
            return Err(relay_err(
                &format!("bucket {PRESENCE_BUCKET} is not available (provision it, see RELAY.md)"),
                e,
            ))
        }
        Err(_) => {
            js.get_or_create_stream(bucket_config(cfg.presence_ttl))
                .await
                .map_err(|e| relay_err("cannot create the presence bucket", e))?;
            js.get_key_value(PRESENCE_BUCKET)
                .await
                .map_err(|e| relay_err("cannot open the presence bucket", e))?
        }
    };
    Ok((stream, kv))
}

/// The inbound stream of `node`: file storage, explicit acks by its one durable consumer,
/// JetStream's dedupe window of 2 minutes on `Nats-Msg-Id`.
pub fn stream_config(node: &str) -> jetstream::stream::Config {
    jetstream::stream::Config {
        name: names::stream(node),
        subjects: vec![names::stream_subjects(node)],
        storage: StorageType::File,
        duplicate_window: Duration::from_secs(120),
        max_age: Duration::from_secs(7 * 24 * 3600),
        max_message_size: 64 * 1024,
        ..Default::default()
    }
}

/// The presence bucket's stream, as the key-value layer lays it out (`KV_<bucket>`, one
/// value per key, entries expire after `ttl`). Created as a plain stream: async-nats's
/// `create_key_value` first queries the account, whose answer from nats-server 2.9 it
/// cannot parse.
pub fn bucket_config(ttl: Duration) -> jetstream::stream::Config {
    jetstream::stream::Config {
        name: format!("KV_{PRESENCE_BUCKET}"),
        subjects: vec![format!("$KV.{PRESENCE_BUCKET}.>")],
        max_messages_per_subject: 1,
        max_age: ttl,
        max_message_size: 64 * 1024,
        storage: StorageType::File,
        discard: jetstream::stream::DiscardPolicy::New,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        num_replicas: 1,
        ..Default::default()
    }
}

/// Create the streams of `nodes` and the presence bucket (an operator step with a user
/// allowed to create streams; see RELAY.md).
///
/// # Errors
/// [`Error::Relay`] when the server refuses.
pub async fn provision(client: &async_nats::Client, nodes: &[String], ttl: Duration) -> Result<()> {
    let js = jetstream::new(client.clone());
    for n in nodes {
        names::validate_node(n)?;
        js.get_or_create_stream(stream_config(n))
            .await
            .map_err(|e| relay_err(&format!("cannot create stream for node {n}"), e))?;
    }
    js.get_or_create_stream(bucket_config(ttl))
        .await
        .map_err(|e| relay_err("cannot create the presence bucket", e))?;
    Ok(())
}

/// Run the connector until `stop` turns true. `ready` learns the outcome of the initial
/// connect and setup.
pub async fn run(
    cfg: RelayConfig,
    root: BrokerRoot,
    state: Arc<std::sync::Mutex<State>>,
    mut stop: watch::Receiver<bool>,
    ready: std::sync::mpsc::Sender<Result<()>>,
) -> Result<()> {
    let setup = async {
        let client = connect(&cfg, &mut stop).await?;
        let js = jetstream::new(client.clone());
        let (stream, kv) = ensure(&js, &cfg).await?;
        Ok::<_, Error>((client, js, stream, kv))
    };
    let (client, js, stream, kv) = match setup.await {
        Ok(x) => {
            let _ = ready.send(Ok(()));
            x
        }
        Err(e) => {
            let _ = ready.send(Err(match &e {
                Error::Relay { reason } => Error::Relay {
                    reason: reason.clone(),
                },
                other => Error::Relay {
                    reason: other.to_string(),
                },
            }));
            return Err(e);
        }
    };
    let log = AuditLog::new(root.log());
    log.event(
        "relay_start",
        fields! {"node" => cfg.node, "url" => redact_url(&cfg.url)},
    );
    let cfg = Arc::new(cfg);
    let root = Arc::new(root);
    let wake = Arc::new(Notify::new());
    let _watcher = watch_outbox(&root, wake.clone());

    let inbound = tokio::spawn(inbound_loop(
        cfg.clone(),
        root.clone(),
        stream,
        state.clone(),
        stop.clone(),
    ));
    let outbound = tokio::spawn(outbox_loop(
        cfg.clone(),
        root.clone(),
        js.clone(),
        wake.clone(),
        state.clone(),
        stop.clone(),
    ));
    let presence = tokio::spawn(presence_loop(
        cfg.clone(),
        root.clone(),
        kv.clone(),
        state.clone(),
        stop.clone(),
    ));
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            break;
        }
    }
    // Clean stop: let each loop finish its round, withdraw our presence, flush acks.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let _ = inbound.await;
        let _ = outbound.await;
        let _ = presence.await;
    })
    .await;
    let _ = tokio::time::timeout(Duration::from_secs(2), kv.purge(&cfg.node)).await;
    presence::clear_mirror(root.path());
    let _ = tokio::time::timeout(Duration::from_secs(2), client.flush()).await;
    let _ = tokio::time::timeout(Duration::from_secs(2), client.drain()).await;
    log.event("relay_stop", fields! {"node" => cfg.node});
    Ok(())
}

fn redact_url(url: &str) -> String {
    // nats://user:pass@host → nats://host
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(a)) if a > s => format!("{}{}", &url[..s + 3], &url[a + 1..]),
        _ => url.to_string(),
    }
}

/// Wake the publisher when a file lands in the outbox (a 250 ms tick covers a missed event).
fn watch_outbox(root: &BrokerRoot, wake: Arc<Notify>) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let dir = outbox::dir(root.path()).ok()?;
    let mut w = notify::recommended_watcher(move |_res: notify::Result<notify::Event>| {
        wake.notify_one();
    })
    .ok()?;
    w.watch(&dir, notify::RecursiveMode::NonRecursive).ok()?;
    Some(w)
}

async fn inbound_loop(
    cfg: Arc<RelayConfig>,
    root: Arc<BrokerRoot>,
    stream: jetstream::stream::Stream,
    state: Arc<std::sync::Mutex<State>>,
    mut stop: watch::Receiver<bool>,
) {
    let log = AuditLog::new(root.log());
    let rate = Arc::new(std::sync::Mutex::new(
        RateLimiter::new(cfg.rate).unwrap_or_else(|_| {
            RateLimiter::new(Default::default()).expect("the default rate config is valid")
        }),
    ));
    while !*stop.borrow() {
        let consumer = stream
            .get_or_create_consumer(
                CONSUMER,
                pull::Config {
                    durable_name: Some(CONSUMER.into()),
                    ack_policy: jetstream::consumer::AckPolicy::Explicit,
                    ack_wait: Duration::from_secs(30),
                    max_ack_pending: 10_000,
                    ..Default::default()
                },
            )
            .await;
        let messages = match consumer {
            Ok(c) => c.messages().await,
            Err(e) => {
                state_error(&state, relay_err("consumer", e));
                if sleep_or_stop(&mut stop, Duration::from_secs(1)).await {
                    return;
                }
                continue;
            }
        };
        let messages = match messages {
            Ok(m) => m,
            Err(e) => {
                state_error(&state, relay_err("consumer stream", e));
                if sleep_or_stop(&mut stop, Duration::from_secs(1)).await {
                    return;
                }
                continue;
            }
        };
        let mut chunks = messages.ready_chunks(512);
        loop {
            let next = tokio::select! {
                n = chunks.next() => n,
                _ = stop.changed() => return,
            };
            let Some(batch) = next else { break };
            let mut good = Vec::new();
            let mut items = Vec::new();
            for m in batch {
                let m = match m {
                    Ok(m) => m,
                    Err(_) => continue, // heartbeats missed while the server is away, etc.
                };
                match names::parse_subject(m.subject.as_str()) {
                    Some((from, to)) if to == cfg.node => {
                        match wire::decode(&m.payload, from, cfg.max_message_bytes) {
                            Ok(item) => {
                                items.push(item);
                                good.push(m);
                            }
                            Err(e) => {
                                super::inbound::log_rejected(&log, from, &e.to_string());
                                bump(&state, |s| s.rejected += 1);
                                let _ = m.ack_with(jetstream::AckKind::Term).await;
                            }
                        }
                    }
                    _ => {
                        super::inbound::log_rejected(
                            &log,
                            "?",
                            "subject is not a relay subject for this node",
                        );
                        bump(&state, |s| s.rejected += 1);
                        let _ = m.ack_with(jetstream::AckKind::Term).await;
                    }
                }
            }
            if items.is_empty() {
                continue;
            }
            let (root2, rate2, lt) = (root.clone(), rate.clone(), cfg.lock_timeout);
            let log2 = AuditLog::new(root.log());
            let res = tokio::task::spawn_blocking(move || {
                let mut rate = rate2.lock().unwrap_or_else(|p| p.into_inner());
                super::inbound::deliver(&root2, &log2, &mut rate, items, lt)
            })
            .await;
            match res {
                Ok(Ok(_)) => {
                    let n = good.len() as u64;
                    for m in good {
                        let _ = m.ack().await;
                    }
                    bump(&state, |s| s.received += n);
                }
                Ok(Err(e)) => {
                    state_error(&state, e);
                    for m in good {
                        let _ = m
                            .ack_with(jetstream::AckKind::Nak(Some(Duration::from_secs(1))))
                            .await;
                    }
                }
                Err(e) => state_error(&state, relay_err("delivery task", e)),
            }
        }
        if sleep_or_stop(&mut stop, Duration::from_millis(200)).await {
            return;
        }
    }
}

async fn outbox_loop(
    cfg: Arc<RelayConfig>,
    root: Arc<BrokerRoot>,
    js: jetstream::Context,
    wake: Arc<Notify>,
    state: Arc<std::sync::Mutex<State>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = false;
    loop {
        let wait = if backoff {
            Duration::from_secs(1)
        } else {
            Duration::from_millis(250)
        };
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            return;
        }
        let r = root.clone();
        let files = tokio::task::spawn_blocking(move || {
            outbox::list(r.path()).map(|fs| {
                fs.into_iter()
                    .take(1024)
                    .filter_map(|p| outbox::read(&p).map(|e| (p, e)))
                    .collect::<Vec<_>>()
            })
        })
        .await;
        let files = match files {
            Ok(Ok(f)) => f,
            Ok(Err(e)) => {
                state_error(&state, e);
                backoff = true;
                continue;
            }
            Err(_) => continue,
        };
        if files.is_empty() {
            backoff = false;
            continue;
        }
        let mut pending = Vec::with_capacity(files.len());
        for (path, mut entry) in files {
            if names::validate_node(&entry.to_node).is_err() {
                outbox::remove(&path);
                continue;
            }
            match &mut entry.envelope {
                Envelope::Message { from_node, .. } | Envelope::Receipt { from_node, .. } => {
                    *from_node = cfg.node.clone();
                }
            }
            let Ok(payload) = serde_json::to_vec(&entry.envelope) else {
                continue;
            };
            let publish = jetstream::message::PublishMessage::build()
                .message_id(entry.envelope.msg_id())
                .payload(payload.into());
            match js
                .send_publish(names::subject(&cfg.node, &entry.to_node), publish)
                .await
            {
                Ok(ack) => pending.push((path, ack)),
                Err(e) => {
                    state_error(&state, relay_err("publish", e));
                    break;
                }
            }
        }
        let results = futures::future::join_all(
            pending
                .into_iter()
                .map(|(p, ack)| async move { (p, ack.await) }),
        )
        .await;
        let mut failed = false;
        let mut done = Vec::new();
        for (p, r) in results {
            match r {
                Ok(_) => done.push(p),
                Err(e) => {
                    failed = true;
                    state_error(&state, relay_err("publish not acknowledged", e));
                }
            }
        }
        let n = done.len() as u64;
        let _ = tokio::task::spawn_blocking(move || {
            for p in done {
                outbox::remove(&p);
            }
        })
        .await;
        bump(&state, |s| s.sent += n);
        backoff = failed;
        if !failed {
            wake.notify_one(); // more may be waiting beyond this round
        }
    }
}

async fn presence_loop(
    cfg: Arc<RelayConfig>,
    root: Arc<BrokerRoot>,
    kv: jetstream::kv::Store,
    state: Arc<std::sync::Mutex<State>>,
    mut stop: watch::Receiver<bool>,
) {
    // Republish well within the bucket's TTL as the server has it (the operator may have
    // created the bucket with another TTL than this connector's default).
    let ttl = match js_bucket_ttl(&kv).await {
        Some(t) if !t.is_zero() => t.min(cfg.presence_ttl),
        _ => cfg.presence_ttl,
    };
    let period = (ttl / 3).max(Duration::from_millis(200));
    loop {
        let r = root.clone();
        if let Ok(Ok(p)) = tokio::task::spawn_blocking(move || presence::local(&r)).await {
            if let Ok(bytes) = serde_json::to_vec(&p) {
                if let Err(e) = kv.put(&cfg.node, bytes.into()).await {
                    state_error(&state, relay_err("presence put", e));
                }
            }
        }
        let mut mirror = Mirror {
            node: cfg.node.clone(),
            updated_at: crate::time::now_secs(),
            ttl_s: (period * 3).as_secs_f64(),
            nodes: Default::default(),
            seen: Default::default(),
        };
        let mut ok = true;
        match kv.keys().await {
            Ok(keys) => {
                let keys: Vec<String> = keys.filter_map(|k| async { k.ok() }).collect().await;
                for k in keys.into_iter().filter(|k| k != &cfg.node) {
                    if let Ok(Some(v)) = kv.get(&k).await {
                        if let Some(peers) = presence::decode(&k, &v) {
                            mirror.seen.insert(k.clone(), mirror.updated_at);
                            mirror.nodes.insert(k, peers);
                        }
                    }
                }
            }
            Err(e) => {
                ok = false;
                state_error(&state, relay_err("presence keys", e));
            }
        }
        if ok {
            let r = root.clone();
            let _ = tokio::task::spawn_blocking(move || {
                if let Some(prev) = presence::read_mirror_within(r.path(), presence::SEND_GRACE_S) {
                    mirror.carry_over(&prev);
                }
                presence::write_mirror(r.path(), &mirror)
            })
            .await;
        }
        if sleep_or_stop(&mut stop, period).await {
            return;
        }
    }
}

/// The `max_age` of the presence bucket's stream, as the server has it.
async fn js_bucket_ttl(kv: &jetstream::kv::Store) -> Option<Duration> {
    kv.status().await.ok().map(|s| s.info.config.max_age)
}

/// Sleep `d`; true when stopped meanwhile.
async fn sleep_or_stop(stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    if *stop.borrow() {
        return true;
    }
    tokio::select! {
        _ = tokio::time::sleep(d) => *stop.borrow(),
        _ = stop.changed() => true,
    }
}

fn bump(state: &std::sync::Mutex<State>, f: impl FnOnce(&mut State)) {
    f(&mut state.lock().unwrap_or_else(|p| p.into_inner()));
}

fn state_error(state: &std::sync::Mutex<State>, e: Error) {
    bump(state, |s| {
        s.errors += 1;
        s.last_error = Some(e.to_string());
    });
}
