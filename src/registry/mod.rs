//! `registry.json`: who is registered under which alias.
//!
//! Records are read into [`Registration`] with every field c2c writes that we do not know
//! kept in `extra`, so a read-modify-write never drops them. A record that does not have the
//! registration shape is left in the file untouched and is not listed; but when it names a
//! string `alias` it is an [`Unparsed`] registration, which still holds that alias: it counts
//! for alias collisions and for the M4 guard as a live owner (fail closed), and `doctor`
//! shows it as unreadable.
//!
//! The register rule (alias collisions, session takeover, c2c's M4 guard) is [`register`];
//! the listing with liveness is [`peers`]; the alias book that gives a restarted session its
//! alias back is [`aliases`].

use std::path::Path;

pub mod aliases;
mod peers;
mod register;

pub use peers::{is_stale_plugin, peers, Peer};
pub use register::{check_alias_reuse, register, register_no_dir_sync};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Result;
use crate::ids::alias_eq;
use crate::liveness;
pub use crate::store::cache::ParsedFileCache;
// Listed apart from the other `peers` names: a caller without a handle (the CLI).
use crate::store::file as store_file;
pub use peers::read_peers;

/// One registration, in c2c 0.8's field names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    /// The session id (also the inbox file stem).
    pub session_id: String,
    /// The alias, in its original case.
    pub alias: String,
    /// The registering process (OpenCode's pid for the plugin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Clock ticks since boot, field 22 of `/proc/<pid>/stat` (defeats pid reuse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start_time: Option<u64>,
    /// Epoch seconds (float) of registration.
    #[serde(default)]
    pub registered_at: f64,
    /// The client's plugin version (`plugin_version`), used to flag stale peers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_version: Option<String>,
    /// The client type, e.g. `"opencode"`, `"claude-code"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_type: Option<String>,
    /// Our extra: the session's project directory (used by the `auto` inbound policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,
    /// Every other field, kept as it was.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Registration {
    /// c2c's liveness rule (pid + start time; no pid = alive).
    pub fn is_alive(&self) -> bool {
        liveness::is_alive(self.pid, self.pid_start_time)
    }

    /// Parse one raw record; `None` for a record of another shape.
    pub fn from_value(v: &Value) -> Option<Registration> {
        // Deserialize from the borrowed value: no clone of the record.
        serde::Deserialize::deserialize(v).ok()
    }

    /// The record as JSON, keeping `extra`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// All registrations of a raw registry array that have the registration shape.
pub fn parse_all(records: &[Value]) -> Vec<Registration> {
    records
        .iter()
        .filter_map(Registration::from_value)
        .collect()
}

/// A registry record with a string `alias` that does not parse as a [`Registration`] (e.g. a
/// string `registered_at` or `pid_start_time`, written by another program). Its liveness
/// cannot be known, so it is taken to be alive wherever an alias is protected.
#[derive(Debug, Clone, PartialEq)]
pub struct Unparsed {
    /// The alias it names.
    pub alias: String,
    /// Its `session_id`, when that is a string.
    pub session_id: Option<String>,
    /// Why it does not parse (serde's message).
    pub detail: String,
}

impl Unparsed {
    /// `Some` for a record with a string `alias` that is not a registration.
    pub fn from_value(v: &Value) -> Option<Unparsed> {
        let alias = v.get("alias")?.as_str()?;
        let err = Registration::deserialize(v).err()?;
        Some(Unparsed {
            alias: alias.to_string(),
            session_id: v
                .get("session_id")
                .and_then(Value::as_str)
                .map(str::to_string),
            detail: err.to_string(),
        })
    }

    /// A stand-in registration for the alias checks: the same alias and session id, no pid
    /// (so alive by c2c's rule). Never listed, never a send target.
    pub fn as_holder(&self) -> Registration {
        Registration {
            session_id: self.session_id.clone().unwrap_or_default(),
            alias: self.alias.clone(),
            pid: None,
            pid_start_time: None,
            registered_at: 0.0,
            plugin_version: None,
            client_type: None,
            directory: None,
            extra: Map::new(),
        }
    }
}

/// The [`Unparsed`] registrations of a raw registry array.
pub fn unparsed_all(records: &[Value]) -> Vec<Unparsed> {
    records.iter().filter_map(Unparsed::from_value).collect()
}

/// Parse the bytes of `registry.json` straight into registrations, without building a
/// `serde_json::Value` tree of the whole file first. Records of another shape are skipped
/// (the write paths, which keep them, still go through `Value`). Anything but a JSON array is
/// reported exactly as [`crate::store::read_array`] reports it ([`crate::Error::StoreCorrupt`],
/// bytes copied aside).
///
/// # Errors
/// [`crate::Error::StoreCorrupt`].
pub fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<Vec<Registration>> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    #[expect(
        clippy::large_enum_variant,
        reason = "short-lived; boxing would add one allocation per record"
    )]
    enum Record {
        Reg(Registration),
        Other(serde::de::IgnoredAny),
    }
    match serde_json::from_slice::<Vec<Record>>(bytes) {
        Ok(records) => Ok(records
            .into_iter()
            .filter_map(|r| match r {
                Record::Reg(r) => Some(r),
                Record::Other(_) => None,
            })
            .collect()),
        // The slow path names the problem exactly as `read_array` does (and copies the bytes
        // aside); should it parse after all, its answer stands.
        Err(_) => Ok(parse_all(&store_file::parse_array(path, bytes)?)),
    }
}

/// A per-handle cache of the parsed `registry.json` (see [`ParsedFileCache`]).
pub type RegistryCache = ParsedFileCache<Vec<Registration>>;

/// The first free alternative to `alias` among `taken` (`alias-2`, `alias-3`, …), kept within
/// 64 characters.
pub fn free_alternative(alias: &str, taken: &[Registration]) -> String {
    for n in 2u32.. {
        let suffix = format!("-{n}");
        let stem_len = alias.len().min(64 - suffix.len());
        let candidate = format!("{}{}", &alias[..stem_len], suffix);
        if !taken.iter().any(|r| alias_eq(&r.alias, &candidate)) {
            return candidate;
        }
    }
    unreachable!("u32 suffixes exhausted")
}

#[cfg(test)]
mod tests;
