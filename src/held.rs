//! The held inbox, `held/<session_id>.json` (ours; c2c has none): messages the inbound policy
//! held for a human's decision, each with `held_at` (epoch seconds) and `hold_reason`.
//!
//! A held message is *live* until `held_at + ttl`; expired ones are archived by the next
//! change. Lock order (the table in [`crate::store::lock`]): the session's inbox lock before
//! its held lock, then the archive lock. Every move writes its destination first (the
//! archive, the inbox) and the held file last, so a crash leaves a copy, never a loss.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::inbox::{self, raw_message_id, Message, SetAside};
use crate::store::{self, BrokerRoot};

/// A held message as listed for a human.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldMessage {
    /// 1-based number, in arrival order (what `/peers-inbox accept <n>` takes).
    pub index: usize,
    /// The message.
    pub message: Message,
    /// Epoch seconds when it was held.
    pub held_at: f64,
    /// Epoch seconds when it expires.
    pub expires_at: f64,
    /// Why it was held, in words.
    pub reason: String,
}

/// Which held messages an action applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldSelector {
    /// The n-th (1-based) in the current listing.
    Index(usize),
    /// All of them.
    All,
}

/// The held file of `session_id`, creating `held/` (0700) when needed.
///
/// # Errors
/// I/O errors creating the directory (a symlink in its place is refused).
pub fn path(root: &BrokerRoot, session_id: &str) -> Result<PathBuf> {
    let dir = store::file::ensure_private_dir(&root.path().join("held"))?;
    Ok(dir.join(format!("{session_id}.json")))
}

fn is_live(h: &Value, ttl_secs: f64, now: f64) -> bool {
    h.get("held_at")
        .and_then(Value::as_f64)
        .is_some_and(|t| t + ttl_secs > now)
}

/// The live held messages of `session_id`, oldest first, numbered from 1 (no lock: a whole
/// file is always read).
///
/// # Errors
/// Store errors (a corrupt held file is reported, never read as empty).
pub fn list(
    root: &BrokerRoot,
    session_id: &str,
    ttl_secs: f64,
    now: f64,
) -> Result<Vec<HeldMessage>> {
    Ok(store::read_array(&path(root, session_id)?)?
        .iter()
        .filter_map(|v| {
            let held_at = v.get("held_at").and_then(Value::as_f64)?;
            let message = Message::from_value(v)?;
            (held_at + ttl_secs > now).then_some((message, held_at, v))
        })
        .enumerate()
        .map(|(i, (message, held_at, v))| HeldMessage {
            index: i + 1,
            message,
            held_at,
            expires_at: held_at + ttl_secs,
            reason: v
                .get("hold_reason")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
        .collect())
}

/// Add records (already stamped with `held_at`/`hold_reason`) to `session_id`'s held file,
/// at most up to `cap` live entries (expired entries do not count). A record already held
/// (a hold that crashed before the inbox was rewritten) is not held twice. Returns the
/// records that did not fit, for the caller to archive and report.
///
/// # Errors
/// Lock timeouts (after `lock_timeout`) and store errors; nothing is held then.
pub fn add(
    root: &BrokerRoot,
    session_id: &str,
    mut to_hold: Vec<Value>,
    cap: usize,
    ttl_secs: f64,
    now: f64,
    lock_timeout: Duration,
) -> Result<Vec<Value>> {
    store::update_array(&path(root, session_id)?, lock_timeout, |held| {
        let live = held.iter().filter(|h| is_live(h, ttl_secs, now)).count();
        let room = cap.saturating_sub(live);
        let already: HashSet<String> = held
            .iter()
            .filter_map(|h| raw_message_id(h).map(|id| id.into_owned()))
            .collect();
        to_hold.retain(|h| raw_message_id(h).is_none_or(|id| !already.contains(id.as_ref())));
        let mut overflow = Vec::new();
        for (i, h) in to_hold.into_iter().enumerate() {
            if i < room {
                held.push(h);
            } else {
                overflow.push(h);
            }
        }
        Ok((overflow, true))
    })
}

/// Take the selected live held messages (and every expired one) out of `session_id`'s held
/// file. `before_write(selected, expired)` runs under the held lock *before* the held file is
/// rewritten, so whatever it does with them (archive, put back in the inbox) is durable
/// first: a failure there leaves the held file untouched. `sel: None` takes only the expired.
/// Returns `(selected, expired)`.
///
/// # Errors
/// [`Error::NoSuchHeld`] for an index not in the listing; lock timeouts, store errors and
/// errors of `before_write` (nothing is taken then).
pub fn take(
    root: &BrokerRoot,
    session_id: &str,
    sel: Option<HeldSelector>,
    ttl_secs: f64,
    lock_timeout: Duration,
    before_write: impl FnOnce(&[Value], &[Value]) -> Result<()>,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let now = crate::time::now_secs();
    store::update_array(&path(root, session_id)?, lock_timeout, |held| {
        let (live, expired): (Vec<Value>, Vec<Value>) = held
            .iter()
            .cloned()
            .partition(|h| is_live(h, ttl_secs, now));
        let mut selected = Vec::new();
        let mut rest = Vec::new();
        for (i, h) in live.into_iter().enumerate() {
            let pick = match sel {
                Some(HeldSelector::All) => true,
                Some(HeldSelector::Index(n)) => n == i + 1,
                None => false,
            };
            if pick {
                selected.push(h);
            } else {
                rest.push(h);
            }
        }
        if let Some(HeldSelector::Index(n)) = sel {
            if selected.is_empty() {
                return Err(Error::NoSuchHeld { index: n });
            }
        }
        let changed = !selected.is_empty() || !expired.is_empty();
        if changed {
            before_write(&selected, &expired)?;
            *held = rest;
        }
        Ok(((selected, expired), changed))
    })
}

/// Release the selected held messages back to `session_id`'s inbox, marked `released`
/// (without `held_at`/`hold_reason`); expired ones are archived (`c2c-bridge:expired`). The
/// inbox is written before the held file, under both locks (inbox first), so a failure moves
/// nothing and a crash leaves at most a copy (not added twice to the inbox). Returns
/// `(released, expired, records the inbox read set aside)`.
///
/// # Errors
/// As [`take`].
pub fn release(
    root: &BrokerRoot,
    session_id: &str,
    sel: HeldSelector,
    ttl_secs: f64,
    lock_timeout: Duration,
) -> Result<(Vec<Value>, Vec<Value>, Vec<SetAside>)> {
    let inbox_path = root.inbox(session_id);
    store::with_locks(&[&inbox_path], lock_timeout, || {
        let mut set_aside = Vec::new();
        let (selected, expired) = take(
            root,
            session_id,
            Some(sel),
            ttl_secs,
            lock_timeout,
            |selected, expired| {
                inbox::archive::append(
                    root,
                    session_id,
                    expired,
                    "c2c-bridge:expired",
                    lock_timeout,
                )?;
                let (_, moved) = inbox::update_locked(root, session_id, |records| {
                    let have: HashSet<String> = records
                        .iter()
                        .filter_map(|v| raw_message_id(v).map(|id| id.into_owned()))
                        .collect();
                    let selected = selected
                        .iter()
                        .filter(|v| raw_message_id(v).is_none_or(|id| !have.contains(id.as_ref())));
                    records.extend(selected.cloned().map(|mut v| {
                        if let Value::Object(o) = &mut v {
                            o.remove("held_at");
                            o.remove("hold_reason");
                            o.insert("released".into(), Value::from(true));
                        }
                        v
                    }));
                    Ok(((), true))
                })?;
                set_aside = moved;
                Ok(())
            },
        )?;
        Ok((selected, expired, set_aside))
    })
}
