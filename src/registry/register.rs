//! The register rule: who may take an alias and a session id in `registry.json`, decided
//! under the registry lock (c2c's rules, plus the M4 alias-reuse guard and our session
//! takeover guard).

use std::time::Duration;

use serde_json::Value;

use super::{free_alternative, parse_all, unparsed_all, Registration, Unparsed};
use crate::error::{Error, Result};
use crate::ids::alias_eq;
use crate::store::{self, BrokerRoot};

/// Register `reg` in the root: the one register operation every path goes through.
///
/// Under the registry lock: a *live* different session holding the alias
/// (case-insensitively) → [`Error::AliasTaken`]; a *dead* holder is replaced; c2c's M4
/// guard ([`check_alias_reuse`]) runs; then this session's old records are
/// replaced by `reg`.
///
/// # Errors
/// [`Error::AliasTaken`], [`Error::AliasPending`], store errors.
pub fn register(root: &BrokerRoot, reg: Registration, lock_timeout: Duration) -> Result<()> {
    register_no_dir_sync(root, reg, lock_timeout)?;
    store::file::sync_dir(root.path())
}

/// [`register`] up to the rename of `registry.json`; the caller fsyncs the root directory
/// (to make the registry and a new inbox durable with one directory fsync).
///
/// # Errors
/// As [`register`].
pub fn register_no_dir_sync(
    root: &BrokerRoot,
    reg: Registration,
    lock_timeout: Duration,
) -> Result<()> {
    let path = root.registry();
    store::with_locks(&[&path], lock_timeout, || {
        let mut records = store::read_array(&path)?;
        register_records(root, &reg, &mut records)?;
        let bytes = serde_json::to_vec(&records).map_err(|e| Error::io(&path, e.into()))?;
        store::file::replace_durable_file(&path, &bytes)
    })
}

/// The decision of [`register`] on the records read under the registry lock.
fn register_records(root: &BrokerRoot, reg: &Registration, records: &mut Vec<Value>) -> Result<()> {
    {
        // Records that name an alias but do not parse hold it too, whoever they name and
        // whatever their liveness (fail closed; `doctor` lists them as unreadable).
        let unparsed = unparsed_all(records);
        let regs: Vec<Registration> = parse_all(records)
            .into_iter()
            .chain(unparsed.iter().map(Unparsed::as_holder))
            .collect();
        if let Some(u) = unparsed.iter().find(|u| alias_eq(&u.alias, &reg.alias)) {
            return Err(Error::AliasTaken {
                alias: reg.alias.clone(),
                owner_session_id: format!(
                    "{} (an unreadable registry record: see `c2c-bridge doctor`)",
                    u.session_id.as_deref().unwrap_or("?")
                ),
                suggestion: free_alternative(&reg.alias, &regs),
            });
        }
        if let Some(holder) = regs.iter().find(|r| {
            alias_eq(&r.alias, &reg.alias) && r.session_id != reg.session_id && r.is_alive()
        }) {
            return Err(Error::AliasTaken {
                alias: reg.alias.clone(),
                owner_session_id: holder.session_id.clone(),
                suggestion: free_alternative(&reg.alias, &regs),
            });
        }
        // A session id belongs to one live process: another process re-registering it would
        // take its mail and silently unregister it. The same process (plugin restart within
        // OpenCode) and a successor after the holder died may.
        if let Some(holder) = regs.iter().find(|r| {
            r.session_id == reg.session_id && r.pid.is_some() && r.pid != reg.pid && r.is_alive()
        }) {
            return Err(Error::SessionActive {
                session_id: reg.session_id.clone(),
                pid: holder.pid.unwrap_or_default(),
            });
        }
        check_alias_reuse(root, &reg.alias, &reg.session_id, &regs)?;
        // A refresh (this session re-registering under the same alias) keeps the fields of
        // its old record that we do not know (c2c's `canonical_alias`, a newer tool's), as
        // every other rewrite does; fields we set win.
        let mut reg = reg.clone();
        if let Some(old) = regs
            .iter()
            .find(|r| r.session_id == reg.session_id && alias_eq(&r.alias, &reg.alias))
        {
            for (k, v) in &old.extra {
                reg.extra.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        records.retain(|v| match Registration::from_value(v) {
            Some(r) => r.session_id != reg.session_id && !alias_eq(&r.alias, &reg.alias),
            None => true,
        });
        records.push(reg.to_value());
        Ok(())
    }
}

/// c2c's M4 guard, run inside every register operation: registering `alias` is refused when
/// an unexpired pending slot has that requester alias (case-insensitive), its requester
/// session is a different session, and that session is still alive (by its registration in
/// `regs`; a session with no registration counts as gone). A resolved slot still counts
/// until it expires, as it does for the caps (see the module doc).
///
/// # Errors
/// [`Error::AliasPending`]; store errors reading the pending file.
pub fn check_alias_reuse(
    root: &BrokerRoot,
    alias: &str,
    session_id: &str,
    regs: &[Registration],
) -> Result<()> {
    let now = crate::time::now_secs();
    for slot in store::read_array(&root.pending())?
        .iter()
        .filter_map(crate::pending::PendingSlot::from_value)
    {
        if !slot.is_active(now)
            || !alias_eq(&slot.requester_alias, alias)
            || slot.requester_session_id == session_id
        {
            continue;
        }
        let owner_alive = regs
            .iter()
            .any(|r| r.session_id == slot.requester_session_id && r.is_alive());
        if owner_alive {
            return Err(Error::AliasPending {
                alias: alias.to_string(),
                owner_session_id: slot.requester_session_id,
            });
        }
    }
    Ok(())
}
