//! Stable aliases (issue 18): a session keeps its alias for its lifetime, across OpenCode
//! restarts, and a new session takes the next free suffix without renumbering older ones.
//!
//! c2c's own rule (a dead holder of an alias is replaced by whoever registers it next) made
//! aliases move on every restart: the first session to come back took the base alias. Here,
//! with `auto_alias`, the alias is chosen by [`choose`]:
//!
//! 1. the alias this session id had: its record in `registry.json` (alive or dead), else its
//!    entry in the alias book, unless another *live* session holds it now;
//! 2. else the requested alias, then `<alias>-2`, `<alias>-3`, …: the first one that no other
//!    session claims, where a claim is any registration (alive or dead: a dead session may
//!    come back) or an entry of the alias book.
//!
//! The alias book is `c2c-bridge-aliases.json` in the broker root: a JSON array of
//! `{session_id, alias, directory, updated_at}` (epoch seconds), one entry per session that registered
//! through c2c-bridge with `auto_alias`, kept when the session unregisters at shutdown so the
//! alias can be restored. c2c does not read it (its own files are untouched and stay in its
//! format). Entries not refreshed for [`BOOK_TTL_SECS`] are pruned; [`forget`] removes a
//! deleted session's entry. Book errors never block a registration (they are logged).

use std::time::Duration;

use serde_json::{json, Value};

use crate::error::Result;
use crate::ids::alias_eq;
use crate::registry::Registration;
use crate::store::{self, BrokerRoot};

/// The book's file name in the broker root.
pub const BOOK_FILE: &str = "c2c-bridge-aliases.json";
/// How long an entry is kept without its session registering again: 30 days, in seconds.
pub const BOOK_TTL_SECS: f64 = 30.0 * 24.0 * 3600.0;

/// One entry of the book.
#[derive(Debug, Clone, PartialEq)]
pub struct BookEntry {
    /// The session id.
    pub session_id: String,
    /// Its alias (original case).
    pub alias: String,
    /// The canonical project directory it registered from, if recorded.
    pub directory: Option<String>,
}

fn book_path(root: &BrokerRoot) -> std::path::PathBuf {
    root.path().join(BOOK_FILE)
}

/// The book's entries (an absent file is empty; records of another shape are skipped).
///
/// # Errors
/// Store errors (an unreadable book is an error, never "empty").
pub fn read_book(root: &BrokerRoot) -> Result<Vec<BookEntry>> {
    Ok(store::read_array(&book_path(root))?
        .iter()
        .filter_map(|v| {
            Some(BookEntry {
                session_id: v.get("session_id")?.as_str()?.to_string(),
                alias: v.get("alias")?.as_str()?.to_string(),
                directory: v
                    .get("directory")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        })
        .collect())
}

/// The alias for `session_id` by the rule in the module doc, given the root's registrations
/// and the alias book.
pub fn choose(
    session_id: &str,
    requested: &str,
    regs: &[Registration],
    book: &[BookEntry],
) -> String {
    let live_other = |alias: &str| {
        regs.iter()
            .any(|r| r.session_id != session_id && alias_eq(&r.alias, alias) && r.is_alive())
    };
    let own = regs
        .iter()
        .find(|r| r.session_id == session_id)
        .map(|r| r.alias.as_str())
        .or_else(|| {
            book.iter()
                .find(|b| b.session_id == session_id)
                .map(|b| b.alias.as_str())
        });
    if let Some(own) = own {
        if !live_other(own) {
            return own.to_string();
        }
    }
    let claimed = |alias: &str| {
        regs.iter()
            .any(|r| r.session_id != session_id && alias_eq(&r.alias, alias))
            || book
                .iter()
                .any(|b| b.session_id != session_id && alias_eq(&b.alias, alias))
    };
    (1u32..)
        .map(|n| candidate(requested, n))
        .find(|c| !claimed(c))
        .unwrap_or_else(|| requested.to_string())
}

/// The n-th candidate: the alias itself, then `<alias>-2`, … (cut to 64 chars, as c2c's
/// collision rule does).
fn candidate(alias: &str, n: u32) -> String {
    if n == 1 {
        return alias.to_string();
    }
    let suffix = format!("-{n}");
    let stem: String = alias.chars().take(64 - suffix.len()).collect();
    format!("{stem}{suffix}")
}

/// Record `session_id → alias` and its project directory (refreshing its time) and prune
/// entries older than [`BOOK_TTL_SECS`].
///
/// # Errors
/// Store errors.
pub fn remember(
    root: &BrokerRoot,
    session_id: &str,
    alias: &str,
    directory: Option<&str>,
    lock_timeout: Duration,
) -> Result<()> {
    let now = crate::time::now_secs();
    store::update_array(&book_path(root), lock_timeout, |records| {
        records.retain(|v| {
            v.get("session_id").and_then(Value::as_str) != Some(session_id)
                && v.get("updated_at")
                    .and_then(Value::as_f64)
                    .is_some_and(|t| now - t < BOOK_TTL_SECS)
        });
        records.push(json!({"session_id": session_id, "alias": alias, "directory": directory, "updated_at": now}));
        Ok(((), true))
    })
}

/// Remove `session_id`'s entry (the session was deleted: its alias may be reused).
///
/// # Errors
/// Store errors.
pub fn forget(root: &BrokerRoot, session_id: &str, lock_timeout: Duration) -> Result<()> {
    store::update_array(&book_path(root), lock_timeout, |records| {
        let before = records.len();
        records.retain(|v| v.get("session_id").and_then(Value::as_str) != Some(session_id));
        Ok(((), records.len() != before))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::ShutdownOutcome;

    fn reg(sid: &str, alias: &str, alive: bool) -> Registration {
        // pid 1's start time never equals u64::MAX: dead; no pid: alive (c2c's rule).
        Registration::from_value(&if alive {
            json!({"session_id": sid, "alias": alias, "registered_at": 1.0})
        } else {
            json!({"session_id": sid, "alias": alias, "registered_at": 1.0, "pid": 1, "pid_start_time": u64::MAX})
        })
        .unwrap()
    }

    fn book(pairs: &[(&str, &str)]) -> Vec<BookEntry> {
        pairs
            .iter()
            .map(|(s, a)| BookEntry {
                session_id: s.to_string(),
                alias: a.to_string(),
                directory: None,
            })
            .collect()
    }

    #[test]
    fn a_session_gets_back_its_alias_from_its_dead_record_or_the_book() {
        let regs = [
            reg("ses_a", "backend", false),
            reg("ses_b", "backend-2", false),
        ];
        // The newest session registering first does not take the base alias.
        assert_eq!(choose("ses_b", "backend", &regs, &[]), "backend-2");
        assert_eq!(choose("ses_a", "backend", &regs, &[]), "backend");
        // Unregistered at shutdown: the book remembers.
        let b = book(&[("ses_a", "backend"), ("ses_b", "backend-2")]);
        assert_eq!(choose("ses_b", "backend", &[], &b), "backend-2");
        assert_eq!(choose("ses_a", "backend", &[], &b), "backend");
    }

    #[test]
    fn a_new_session_takes_the_next_free_suffix_and_never_a_claimed_one() {
        let regs = [reg("ses_a", "backend", false)];
        let b = book(&[("ses_b", "Backend-2")]);
        assert_eq!(choose("ses_c", "backend", &regs, &b), "backend-3");
        assert_eq!(choose("ses_c", "other", &regs, &b), "other");
    }

    #[test]
    fn a_live_holder_of_the_old_alias_moves_the_session_to_a_free_one() {
        let regs = [reg("ses_x", "backend", true)];
        let b = book(&[("ses_a", "backend")]);
        assert_eq!(choose("ses_a", "backend", &regs, &b), "backend-2");
    }

    #[test]
    fn candidates_stay_within_64_chars() {
        let long = "a".repeat(64);
        assert_eq!(candidate(&long, 12).len(), 64);
        assert!(candidate(&long, 12).ends_with("-12"));
    }

    fn open(root: &std::path::Path, sid: &str) -> crate::Broker {
        crate::Broker::open(crate::OpenOptions {
            session_id: sid.into(),
            alias: Some("backend".into()),
            auto_alias: true,
            root: Some(root.to_path_buf()),
            directory: Some(root.to_path_buf()),
            env: crate::config::Environment::empty(),
            ..Default::default()
        })
        .unwrap()
    }

    fn registered(root: &std::path::Path) -> Vec<(String, String)> {
        let mut v: Vec<_> =
            crate::registry::parse_all(&store::read_array(&root.join("registry.json")).unwrap())
                .into_iter()
                .map(|r| (r.session_id, r.alias))
                .collect();
        v.sort();
        v
    }

    /// The sequence: restarts in any order never renumber a session.
    #[test]
    fn aliases_survive_restarts_in_any_order_and_shutdown_unregisters() {
        let d = crate::testutil::private_tempdir();
        let root = d.path();
        let a = open(root, "ses_a");
        let b = open(root, "ses_b");
        assert_eq!((a.alias(), b.alias()), ("backend", "backend-2"));
        // Shutdown (dispose): registrations removed, the book remembers.
        a.shutdown().unwrap();
        b.shutdown().unwrap();
        for (first, second) in [("ses_b", "ses_a"), ("ses_a", "ses_b"), ("ses_b", "ses_a")] {
            let (x, y) = (open(root, first), open(root, second));
            for h in [&x, &y] {
                let want = if h.session_id() == "ses_a" {
                    "backend"
                } else {
                    "backend-2"
                };
                assert_eq!(h.alias(), want, "{first} first");
            }
            assert_eq!(x.shutdown().unwrap(), ShutdownOutcome::Unregistered);
            assert_eq!(y.shutdown().unwrap(), ShutdownOutcome::Unregistered);
            assert!(registered(root)
                .iter()
                .all(|(s, _)| s != "ses_a" && s != "ses_b"));
        }
        // A new session takes the next free suffix, not a remembered one.
        let c = open(root, "ses_c");
        assert_eq!(c.alias(), "backend-3");
        // A deleted session frees its alias for a newcomer.
        let a2 = open(root, "ses_a");
        a2.close_and_forget_alias().unwrap();
        assert_eq!(open(root, "ses_d").alias(), "backend");
    }

    /// Crash (no shutdown): the registry record itself restores the alias.
    #[test]
    fn after_a_crash_the_registry_record_restores_the_alias() {
        let d = crate::testutil::private_tempdir();
        let root = d.path();
        drop((open(root, "ses_a"), open(root, "ses_b")));
        std::fs::remove_file(root.join(BOOK_FILE)).unwrap();
        assert_eq!(open(root, "ses_b").alias(), "backend-2");
        assert_eq!(open(root, "ses_a").alias(), "backend");
    }

    /// c2c's M4 guard: a session with active pending slots keeps its registration at shutdown.
    #[test]
    fn shutdown_keeps_a_registration_with_open_pending_slots() {
        let d = crate::testutil::private_tempdir();
        let root = d.path();
        let a = open(root, "ses_a");
        a.open_pending_reply("per_1", "permission", &["boss".to_string()])
            .unwrap();
        assert_eq!(a.shutdown().unwrap(), ShutdownOutcome::KeptForPendingSlots);
        assert_eq!(registered(root), vec![("ses_a".into(), "backend".into())]);
        assert!(
            a.send("x", "y", &Default::default()).is_err(),
            "the handle is closed"
        );
        assert_eq!(a.shutdown().unwrap(), ShutdownOutcome::Nothing);
    }
}
