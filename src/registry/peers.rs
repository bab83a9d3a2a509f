//! The registrations as peers: with c2c's liveness rule applied (pid alive and, when
//! recorded, the same process start time), read fresh on every call.

use super::Registration;

/// A peer as listed by [`crate::Broker::list_peers`] and `c2c-bridge peers`.
#[derive(Debug, Clone, PartialEq)]
pub struct Peer {
    /// Alias in its original case.
    pub alias: String,
    /// Session id.
    pub session_id: String,
    /// c2c's liveness rule.
    pub alive: bool,
    /// Registered pid.
    pub pid: Option<u32>,
    /// Epoch seconds.
    pub registered_at: f64,
    /// Recorded plugin version.
    pub plugin_version: Option<String>,
    /// Recorded client type.
    pub client_type: Option<String>,
    /// Recorded project directory.
    pub directory: Option<String>,
    /// Whether this is the handle's own registration.
    pub is_self: bool,
}

/// Every registration of `root` as peers with liveness (`is_self` always false), read
/// without a lock: the listing of a caller without a handle (the CLI's `listRegistrations`).
///
/// # Errors
/// [`crate::Error::StoreCorrupt`], [`crate::Error::Io`].
pub fn read_peers(root: &crate::store::BrokerRoot) -> crate::Result<Vec<Peer>> {
    let regs = super::parse_all(&crate::store::read_array(&root.registry())?);
    Ok(peers(&regs, None))
}

/// `regs` as peers, with liveness read now (each pid once per call); `own_session_id` marks
/// the caller's own registration (`is_self`).
pub fn peers(regs: &[Registration], own_session_id: Option<&str>) -> Vec<Peer> {
    let mut starts: std::collections::HashMap<u32, Option<u64>> = std::collections::HashMap::new();
    regs.iter()
        .map(|r| Peer {
            alive: match r.pid {
                None => true,
                Some(pid) => match *starts
                    .entry(pid)
                    .or_insert_with(|| crate::liveness::pid_start_time(pid))
                {
                    None => false,
                    Some(actual) => r.pid_start_time.is_none_or(|s| s == actual),
                },
            },
            is_self: own_session_id == Some(r.session_id.as_str()),
            alias: r.alias.clone(),
            session_id: r.session_id.clone(),
            pid: r.pid,
            registered_at: r.registered_at,
            plugin_version: r.plugin_version.clone(),
            client_type: r.client_type.clone(),
            directory: r.directory.clone(),
        })
        .collect()
}

/// Whether a peer runs another c2c-bridge plugin version than `own_version` (it is "stale"):
/// only an OpenCode registration (`client_type` `"opencode"`) that records a `plugin_version`
/// other than ours. A registration without a recorded version, or of another client (Claude
/// Code, c2c's own tools), is never stale. The one rule behind `framedPeerList`'s `stale`
/// field and the CLI's `STALE` mark.
pub fn is_stale_plugin(
    client_type: Option<&str>,
    plugin_version: Option<&str>,
    own_version: &str,
) -> bool {
    client_type == Some("opencode") && plugin_version.is_some_and(|v| v != own_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_opencode_peer_with_another_recorded_version_is_stale() {
        assert!(is_stale_plugin(Some("opencode"), Some("0.0.1"), "0.1.0"));
        assert!(!is_stale_plugin(Some("opencode"), Some("0.1.0"), "0.1.0"));
        assert!(!is_stale_plugin(Some("opencode"), None, "0.1.0"));
        assert!(!is_stale_plugin(
            Some("claude-code"),
            Some("0.0.1"),
            "0.1.0"
        ));
        assert!(!is_stale_plugin(None, Some("0.0.1"), "0.1.0"));
    }
}
