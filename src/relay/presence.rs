//! Presence: which sessions a node has, published to the JetStream key-value bucket
//! [`super::names::PRESENCE_BUCKET`] (key = node, entries age out after the bucket's TTL, so
//! a dead node disappears), and mirrored by each connector into `relay/peers.json` in its
//! local root so that `listPeers` / `c2c-bridge peers` in any process show `alias@node`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ids::{validate_alias, validate_session_id};
use crate::store::BrokerRoot;

use super::names::validate_node;

/// Most peers taken from one node's presence record.
pub const MAX_PEERS_PER_NODE: usize = 256;

/// One session of a node, as published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemotePeer {
    /// Its alias on its node.
    pub alias: String,
    /// Its session id on its node.
    pub session_id: String,
    /// Its client type (advisory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_type: Option<String>,
    /// Epoch seconds of its registration (advisory).
    #[serde(default)]
    pub registered_at: f64,
}

/// A node's presence record (the value under its key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Presence {
    /// Its live sessions.
    pub peers: Vec<RemotePeer>,
    /// Epoch seconds when published.
    pub ts: f64,
}

/// The mirror file `relay/peers.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Mirror {
    /// This root's node name.
    pub node: String,
    /// Epoch seconds of the last refresh.
    pub updated_at: f64,
    /// Seconds after `updated_at` when the mirror is stale (the connector is gone).
    pub ttl_s: f64,
    /// Other nodes and their peers, by node name.
    pub nodes: std::collections::BTreeMap<String, Vec<RemotePeer>>,
    /// When each node's presence was last read from the bucket (epoch seconds). A node whose
    /// record expired stays here (not listed) for [`SEND_GRACE_S`], so mail to it still
    /// queues while it (or the server) is briefly away.
    #[serde(default)]
    pub seen: std::collections::BTreeMap<String, f64>,
}

impl Mirror {
    /// Carry over from `previous` the nodes that are absent now but were seen within
    /// [`SEND_GRACE_S`].
    pub fn carry_over(&mut self, previous: &Mirror) {
        let now = crate::time::now_secs();
        for (node, peers) in &previous.nodes {
            let seen = previous
                .seen
                .get(node)
                .copied()
                .unwrap_or(previous.updated_at);
            if !self.nodes.contains_key(node) && seen + SEND_GRACE_S >= now {
                self.nodes.insert(node.clone(), peers.clone());
                self.seen.insert(node.clone(), seen);
            }
        }
    }

    /// Whether `node` was seen within the TTL (it is listed).
    pub fn is_live(&self, node: &str) -> bool {
        let seen = self.seen.get(node).copied().unwrap_or(self.updated_at);
        seen + self.ttl_s >= crate::time::now_secs()
    }
}

/// The live local registrations as a presence record.
///
/// # Errors
/// Store errors reading `registry.json`.
pub fn local(root: &BrokerRoot) -> Result<Presence> {
    let regs = crate::registry::parse_all(&crate::store::read_array(&root.registry())?);
    Ok(Presence {
        peers: regs
            .into_iter()
            .filter(|r| r.is_alive())
            .map(|r| RemotePeer {
                alias: r.alias,
                session_id: r.session_id,
                client_type: r.client_type,
                registered_at: r.registered_at,
            })
            .collect(),
        ts: crate::time::now_secs(),
    })
}

/// Parse a node's presence record, keeping only well-formed peers (at most
/// [`MAX_PEERS_PER_NODE`]); `None` for a bad node name or a record that is not JSON.
pub fn decode(node: &str, bytes: &[u8]) -> Option<Vec<RemotePeer>> {
    validate_node(node).ok()?;
    let p: Presence = serde_json::from_slice(bytes).ok()?;
    Some(
        p.peers
            .into_iter()
            .filter(|r| {
                validate_alias(&r.alias).is_ok() && validate_session_id(&r.session_id).is_ok()
            })
            .map(|mut r| {
                r.client_type = r.client_type.filter(|c| {
                    c.len() <= 32
                        && c.chars()
                            .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_')
                });
                r
            })
            .take(MAX_PEERS_PER_NODE)
            .collect(),
    )
}

fn mirror_path(root: &Path) -> Result<PathBuf> {
    Ok(super::outbox::relay_dir(root)?.join("peers.json"))
}

/// Replace the mirror.
///
/// # Errors
/// Store errors.
pub fn write_mirror(root: &Path, mirror: &Mirror) -> Result<()> {
    let path = mirror_path(root)?;
    let bytes = serde_json::to_vec(mirror).map_err(|e| Error::io(&path, e.into()))?;
    crate::store::file::write_bytes_atomic(&path, &bytes)
}

/// Remove the mirror (the connector stopped: no remote peers are reachable for now).
pub fn clear_mirror(root: &Path) {
    if let Ok(p) = mirror_path(root) {
        let _ = std::fs::remove_file(p);
    }
}

/// How long after its last refresh a mirror still addresses sends (seconds): a connector
/// killed or cut off from the server for a while leaves its mirror behind, and mail to the
/// peers it listed queues durably in the outbox until a connector runs again. A connector
/// that stops cleanly removes its mirror, so sends fail at once then.
pub const SEND_GRACE_S: f64 = 600.0;

/// The mirror, when present and fresh; `None` otherwise (no connector, or it died).
pub fn read_mirror(root: &Path) -> Option<Mirror> {
    read_mirror_within(root, 0.0)
}

/// The mirror when refreshed within its TTL plus `grace_s` seconds.
pub fn read_mirror_within(root: &Path, grace_s: f64) -> Option<Mirror> {
    let path = root.join("relay").join("peers.json");
    let bytes = std::fs::read(path).ok()?;
    let m: Mirror = serde_json::from_slice(&bytes).ok()?;
    (m.updated_at + m.ttl_s + grace_s >= crate::time::now_secs()).then_some(m)
}

/// The remote peers of `root`'s mirror as [`crate::Peer`]s (`alias@node`, session id
/// `relay.<node>.<sid>`, always alive while the mirror is fresh, no pid); empty when no
/// connector runs or its mirror is stale.
pub fn remote_peers(root: &Path) -> Vec<crate::Peer> {
    let Some(m) = read_mirror(root) else {
        return Vec::new();
    };
    m.nodes
        .iter()
        .filter(|(node, _)| m.is_live(node))
        .flat_map(|(node, peers)| {
            peers.iter().map(move |p| crate::Peer {
                alias: format!("{}@{node}", p.alias),
                session_id: super::names::remote_sid(node, &p.session_id),
                alive: true,
                pid: None,
                registered_at: p.registered_at,
                plugin_version: None,
                client_type: p.client_type.clone(),
                directory: None,
                is_self: false,
            })
        })
        .collect()
}
