//! Registrations with c2c's liveness: the one "peers with liveness" listing, for a handle
//! ([`super::Broker::list_peers`]) and for the CLI without one ([`list_registrations`]).

use std::collections::HashMap;

use super::Peer;
use crate::error::Result;
use crate::registry::{parse_all, Registration};
use crate::store::{self, BrokerRoot};

/// Every registration of `regs` as a [`Peer`], with c2c's liveness rule
/// ([`crate::liveness::is_alive`]: no pid = alive; else the pid's start time must match the
/// recorded one, when recorded), read fresh on every call; within one call each pid's start
/// time is read once. `is_self` marks the registration of `own_session_id`.
pub(crate) fn with_liveness(regs: &[Registration], own_session_id: Option<&str>) -> Vec<Peer> {
    let mut starts: HashMap<u32, Option<u64>> = HashMap::new();
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
            is_self: Some(r.session_id.as_str()) == own_session_id,
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

/// Every registration of `root` with liveness (`is_self` always false), read without a
/// lock: the CLI's listing, which has no handle of its own.
///
/// # Errors
/// [`crate::Error::StoreCorrupt`], [`crate::Error::Io`].
pub fn list_registrations(root: &BrokerRoot) -> Result<Vec<Peer>> {
    let regs = parse_all(&store::read_array(&root.registry())?);
    Ok(with_liveness(&regs, None))
}
