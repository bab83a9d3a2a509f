//! The relay: broker roots on several machines connected through NATS JetStream (issue 17;
//! see RELAY.md for the server setup and the trust model).
//!
//! One **connector** per broker root and machine ("node") bridges the local root and NATS:
//!
//! - outgoing: `peer_send` to `alias@node` stores the message durably in the root's relay
//!   outbox ([`outbox`]); the connector publishes each file to JetStream on
//!   `c2c.msg.<self>.<node>` with `Nats-Msg-Id` = its message id and removes it only after
//!   the PubAck;
//! - incoming: a durable pull consumer on the node's stream; each message is checked
//!   ([`wire::decode`]: the sender's node comes from the subject the server allowed, a
//!   payload claiming another is rejected), appended to the local inbox idempotently by
//!   message id ([`inbound`]), and only then acked;
//! - receipts about relayed messages travel back the same way ([`crate::receipts::append`]
//!   routes them to the outbox);
//! - presence: the node's live registrations go to a key-value bucket with a TTL, and the
//!   other nodes' are mirrored into `relay/peers.json` ([`presence`]).
//!
//! The connector runs on its own tokio runtime on a thread owned by [`Relay`] (not napi's
//! async feature), holds `relay/connector.lock` (an OFD lock: at most one connector per
//! root on a machine; others get [`Error::Relay`] and may stand by), and stops cleanly.

pub mod connector;
pub mod creds;
pub mod inbound;
pub mod names;
pub mod outbox;
pub mod presence;
pub mod wire;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::policy::rate::RateConfig;
use crate::store::lock::RoleLock;
use crate::store::BrokerRoot;

pub use creds::Credentials;

/// Default presence TTL: a node that stops publishing disappears after this long.
pub const DEFAULT_PRESENCE_TTL: Duration = Duration::from_secs(30);

/// How to run a connector.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// The broker root (must exist: `c2c-bridge init` or any session creates it).
    pub root: PathBuf,
    /// The NATS server, e.g. `nats://127.0.0.1:4222`.
    pub url: String,
    /// How this node authenticates.
    pub creds: Credentials,
    /// This node's name (see [`names::validate_node`]).
    pub node: String,
    /// Presence TTL (the bucket's `max_age` when this connector creates it; it republishes
    /// every third of it).
    pub presence_ttl: Duration,
    /// Largest content accepted from a remote node (default 16 KiB, as locally).
    pub max_message_bytes: usize,
    /// Per remote node → local recipient rate limit on the receiving side.
    pub rate: RateConfig,
    /// Lock wait for local store writes.
    pub lock_timeout: Duration,
    /// Create this node's stream and the presence bucket when missing (needs the server's
    /// permission to create streams; a multi-user setup provisions them instead).
    pub provision: bool,
}

impl RelayConfig {
    /// A config with defaults for everything but the four essentials.
    pub fn new(root: PathBuf, url: String, creds: Credentials, node: String) -> RelayConfig {
        RelayConfig {
            root,
            url,
            creds,
            node,
            presence_ttl: DEFAULT_PRESENCE_TTL,
            max_message_bytes: crate::broker::DEFAULT_MAX_MESSAGE_BYTES,
            rate: RateConfig::default(),
            lock_timeout: crate::broker::DEFAULT_LOCK_TIMEOUT,
            provision: false,
        }
    }
}

/// Counters and the last error of a running connector.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    /// Envelopes published and acknowledged by JetStream.
    pub sent: u64,
    /// Envelopes received, stored locally and acked.
    pub received: u64,
    /// Envelopes rejected (bad subject or payload, a node claiming another).
    pub rejected: u64,
    /// Errors so far (the connector keeps retrying).
    pub errors: u64,
    /// The last error, in words.
    pub last_error: Option<String>,
}

/// A running connector. Dropping it stops it.
#[derive(Debug)]
pub struct Relay {
    stop: tokio::sync::watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<Result<()>>>,
    state: Arc<Mutex<State>>,
    node: String,
    _lock: RoleLock,
}

impl Relay {
    /// Take the root's connector lock, connect, check (or create, with `provision`) the
    /// stream and bucket, and start. Returns once connected.
    ///
    /// # Errors
    /// [`Error::InvalidId`] (node), [`Error::RelayBusy`] (another connector holds the
    /// lock), [`Error::Relay`]: the server refused the credentials, the stream or bucket is missing; store errors.
    pub fn start(cfg: RelayConfig) -> Result<Relay> {
        names::validate_node(&cfg.node)?;
        let root = BrokerRoot::open(&cfg.root, crate::store::root::RootSource::Explicit)?;
        let lock_path = outbox::relay_dir(root.path())?.join("connector.lock");
        let lock = RoleLock::try_take(&lock_path)?.ok_or_else(|| Error::RelayBusy {
            lock: lock_path.clone(),
        })?;
        outbox::dir(root.path())?;
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let state = Arc::new(Mutex::new(State::default()));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let node = cfg.node.clone();
        let st = state.clone();
        let thread = std::thread::Builder::new()
            .name(format!("c2c-relay-{node}"))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("c2c-relay")
                    .enable_all()
                    .build()
                    .map_err(|e| Error::Relay {
                        reason: format!("cannot start the runtime: {e}"),
                    })?;
                let out = rt.block_on(connector::run(cfg, root, st, stop_rx, ready_tx));
                rt.shutdown_timeout(Duration::from_secs(2));
                out
            })
            .map_err(|e| Error::Relay {
                reason: format!("cannot start the connector thread: {e}"),
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Relay {
                stop,
                thread: Some(thread),
                state,
                node,
                _lock: lock,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let out = thread.join();
                Err(Error::Relay {
                    reason: format!("the connector ended before it was ready: {out:?}"),
                })
            }
        }
    }

    /// This connector's node.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// A copy of the counters.
    pub fn state(&self) -> State {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether the connector thread still runs.
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stop: finish the current rounds, withdraw presence, flush, end the runtime and the
    /// thread, release the lock. Idempotent.
    ///
    /// # Errors
    /// The error the connector ended with, if any.
    pub fn stop(&mut self) -> Result<()> {
        let _ = self.stop.send(true);
        match self.thread.take() {
            Some(t) => t.join().unwrap_or_else(|_| {
                Err(Error::Relay {
                    reason: "the connector thread panicked".into(),
                })
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Create the streams of `nodes` and the presence bucket with an operator's credentials
/// (blocking; its own short-lived runtime).
///
/// # Errors
/// [`Error::Relay`] when the connection or a creation fails.
pub fn provision(url: &str, creds: &Credentials, nodes: &[String], ttl: Duration) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Relay {
            reason: format!("cannot start the runtime: {e}"),
        })?;
    rt.block_on(async {
        let mut cfg = RelayConfig::new(
            PathBuf::new(),
            url.into(),
            creds.clone(),
            "provision".into(),
        );
        cfg.presence_ttl = ttl;
        let (_tx, mut rx) = tokio::sync::watch::channel(false);
        let client =
            tokio::time::timeout(Duration::from_secs(10), connector_connect(&cfg, &mut rx))
                .await
                .map_err(|_| Error::Relay {
                    reason: format!("cannot reach {url}"),
                })??;
        connector::provision(&client, nodes, ttl).await?;
        let _ = client.flush().await;
        Ok(())
    })
}

async fn connector_connect(
    cfg: &RelayConfig,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<async_nats::Client> {
    connector::connect_pub(cfg, stop).await
}
