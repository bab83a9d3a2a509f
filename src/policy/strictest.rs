//! The strictest of several configurations of one directory.
//!
//! OpenCode loads the package twice in one process when the global and the project config name
//! it with different specs (an npm name and a `file://` path): two plugin instances for one
//! directory, each with its own options. Only one of them serves the directory (the plugin
//! makes sure), with, for each policy setting, the strictest value any of them was given:
//! `inbound` accept < auto < hold < refuse, `peerPermissions` allow < ask < deny.
//! A value that is not a valid word wins over every valid one (fail closed: it makes the
//! setting fail to load, which turns automatic handling off, rather than fall back to a
//! more open one).

use super::inbound::InboundMode;
use super::peer_permissions::PeerPermissions;

/// The policy settings [`strictest`] knows, by their plugin option names.
pub const SETTINGS: &[&str] = &["inbound", "peerPermissions"];

/// The strictest of `values` (plugin option values of `setting` as written; blank ones count
/// as unset): `Ok(None)` when all are unset, `Ok(Some(word))` otherwise, where an invalid word
/// is returned as written (see the module docs).
///
/// # Errors
/// `Err(setting)` when `setting` is not one of [`SETTINGS`].
pub fn strictest(setting: &str, values: &[String]) -> Result<Option<String>, String> {
    let set: Vec<&str> = values
        .iter()
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
        .collect();
    match setting {
        "inbound" => Ok(pick(
            &set,
            |v| InboundMode::resolve(Some(v), None).ok().map(|(m, _)| m),
            InboundMode::as_str,
        )),
        "peerPermissions" => Ok(pick(
            &set,
            |v| PeerPermissions::resolve(Some(v), None).ok().map(|(m, _)| m),
            PeerPermissions::as_str,
        )),
        other => Err(other.to_string()),
    }
}

fn pick<T: Ord + Copy>(
    values: &[&str],
    parse: impl Fn(&str) -> Option<T>,
    word: fn(T) -> &'static str,
) -> Option<String> {
    let mut best: Option<T> = None;
    for v in values {
        match parse(v) {
            None => return Some((*v).to_string()),
            Some(m) => best = Some(best.map_or(m, |b| b.max(m))),
        }
    }
    best.map(|m| word(m).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn strictest_value_wins_and_invalid_fails_closed() {
        assert_eq!(
            strictest("peerPermissions", &s(&["allow", "ask"]))
                .unwrap()
                .as_deref(),
            Some("ask")
        );
        assert_eq!(
            strictest("peerPermissions", &s(&["deny", "ALLOW"]))
                .unwrap()
                .as_deref(),
            Some("deny")
        );
        assert_eq!(strictest("peerPermissions", &s(&["", " "])).unwrap(), None);
        assert_eq!(
            strictest("peerPermissions", &s(&["allow", "alow"]))
                .unwrap()
                .as_deref(),
            Some("alow")
        );
        assert_eq!(
            strictest("inbound", &s(&["accept", "hold", "auto"]))
                .unwrap()
                .as_deref(),
            Some("hold")
        );
        assert_eq!(
            strictest("inbound", &s(&["refuse", "accept"]))
                .unwrap()
                .as_deref(),
            Some("refuse")
        );
        assert_eq!(
            strictest("inbound", &s(&["accept", ""]))
                .unwrap()
                .as_deref(),
            Some("accept")
        );
        assert!(strictest("alias", &s(&["x"])).is_err());
    }
}
