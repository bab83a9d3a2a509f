//! `registry.json`: who is registered under which alias.
//!
//! Records are read into [`Registration`] with every field c2c writes that we do not know
//! kept in `extra`, so a read-modify-write never drops them. A record that does not have the
//! registration shape is left in the file untouched and ignored.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::alias_eq;
use crate::liveness;

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
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_survive_a_roundtrip() {
        let raw = serde_json::json!({
            "session_id": "s1", "alias": "Bob", "registered_at": 1.5,
            "canonical_alias": "bob#repo@host", "future_field": {"x": [1]}
        });
        let r = Registration::from_value(&raw).unwrap();
        assert_eq!(r.extra["canonical_alias"], "bob#repo@host");
        assert_eq!(r.to_value(), raw);
    }

    #[test]
    fn alternative_skips_taken_case_insensitively() {
        let mk = |a: &str| Registration {
            session_id: "x".into(),
            alias: a.into(),
            pid: None,
            pid_start_time: None,
            registered_at: 0.0,
            plugin_version: None,
            client_type: None,
            directory: None,
            extra: Map::new(),
        };
        let taken = vec![mk("bob"), mk("BOB-2")];
        assert_eq!(free_alternative("Bob", &taken), "Bob-3");
        let long = "y".repeat(64);
        assert_eq!(free_alternative(&long, &[]).len(), 64);
    }
}
