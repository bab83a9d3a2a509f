//! [`Environment`]: where environment variables are read from.

use std::collections::HashMap;

use crate::store::root::RootEnv;

/// The environment a configuration is read from: the process's, or a given set of variables.
///
/// Why a value rather than `std::env::var` at each use: under Bun (OpenCode's runtime),
/// changes a script makes to `process.env` do not reach native code, so the plugin hands its
/// `process.env` over; and tests pass their own variables so that they never depend on the
/// environment of the test runner. Every variable of an open (root resolution,
/// `C2C_BRIDGE_INBOUND`, `C2C_PERMISSION_TTL`) comes from the same [`Environment`], so one
/// handle never mixes a given map with the process's values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Environment {
    /// The process environment, read when a value is needed (the default).
    #[default]
    Process,
    /// Exactly these variables: one missing from the map is unset, whatever the process
    /// environment holds.
    Given(HashMap<String, String>),
}

impl Environment {
    /// A given environment with no variable set (tests; callers that must not read the
    /// process environment).
    pub fn empty() -> Environment {
        Environment::Given(HashMap::new())
    }

    /// A given environment of these `(name, value)` pairs.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Environment {
        Environment::Given(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }

    /// The raw value of `name`, or `None` when unset (or, in the process environment, not
    /// UTF-8). An empty or blank value is returned as it is: each reader documents what a
    /// blank value means (so far every one treats it as unset).
    pub fn var(&self, name: &str) -> Option<String> {
        match self {
            Environment::Process => std::env::var(name).ok(),
            Environment::Given(m) => m.get(name).cloned(),
        }
    }

    /// The value of `name` when set and not empty.
    pub fn non_empty(&self, name: &str) -> Option<String> {
        self.var(name).filter(|v| !v.is_empty())
    }

    /// Every variable as a map (the process environment's UTF-8 ones, or the given map).
    pub fn to_map(&self) -> HashMap<String, String> {
        match self {
            Environment::Process => std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            Environment::Given(m) => m.clone(),
        }
    }

    /// The four variables of broker-root resolution (`C2C_MCP_BROKER_ROOT`,
    /// `C2C_STATE_HOME`, `XDG_STATE_HOME`, `HOME`), empty values unset.
    pub fn root_env(&self) -> RootEnv {
        RootEnv {
            broker_root: self.non_empty(super::vars::BROKER_ROOT),
            c2c_state_home: self.non_empty(super::vars::C2C_STATE_HOME),
            xdg_state_home: self.non_empty(super::vars::XDG_STATE_HOME),
            home: self.non_empty(super::vars::HOME),
        }
    }
}

impl From<HashMap<String, String>> for Environment {
    fn from(m: HashMap<String, String>) -> Environment {
        Environment::Given(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_environment_never_reads_the_process_one() {
        // PATH is set in every test runner; a given map without it has it unset.
        assert!(Environment::Process.var("PATH").is_some());
        assert_eq!(Environment::empty().var("PATH"), None);
        let e = Environment::from_pairs([("C2C_BRIDGE_INBOUND", " "), ("HOME", "")]);
        assert_eq!(e.var("C2C_BRIDGE_INBOUND").as_deref(), Some(" "));
        assert_eq!(e.non_empty("HOME"), None);
    }

    #[test]
    fn root_env_drops_empty_values() {
        let e = Environment::from_pairs([
            ("C2C_MCP_BROKER_ROOT", "/r"),
            ("C2C_STATE_HOME", ""),
            ("XDG_STATE_HOME", "/x"),
        ]);
        let r = e.root_env();
        assert_eq!(r.broker_root.as_deref(), Some("/r"));
        assert_eq!(r.c2c_state_home, None);
        assert_eq!(r.xdg_state_home.as_deref(), Some("/x"));
        assert_eq!(r.home, None);
    }
}
