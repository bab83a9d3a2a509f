//! `pending_permissions.json`: c2c's pending-reply slots (M2) and the alias-reuse guard (M4).
//!
//! This module holds the records and the rules (TTL parsing, caps, duplicate ids, the four
//! check outcomes) and, in [`slots`], the file operations on `pending_permissions.json`
//! (always through [`crate::store`]'s locked read-modify-write). The identity-bound entry
//! points are [`crate::Broker::open_pending_reply`] and [`crate::Broker::check_pending_reply`]
//! (`src/broker/pending.rs`): they bind the caller's own registration and write the audit line.
//!
//! # The record
//!
//! c2c 0.8's shape, newest first: `{perm_id, kind, requester_session_id, requester_alias,
//! supervisors, created_at, expires_at, fallthrough_fired_at: [], resolved_at: null|float,
//! verdict: null|"approve"|"deny"}` (times in epoch seconds). Fields we do not know are kept
//! ([`PendingSlot::extra`]), and records of another shape are left in the file untouched.
//!
//! # What a slot is for
//!
//! A slot records *who asked which supervisors about which permission*, so that a reply can
//! be checked for sender identity. It authorises nothing: `resolved_at` is bookkeeping, and
//! `verdict` is never written by c2c-bridge. The permission itself is only ever answered in
//! the requester's own OpenCode prompt.
//!
//! # Liveness of a slot
//!
//! A slot is *active* until `expires_at` (strictly: `expires_at > now`), whether or not it
//! was resolved — c2c keeps answering later valid checks of a resolved slot as valid, so the
//! slot must keep counting for caps, duplicates and the M4 guard until it expires. Expired
//! slots are filtered on every read and pruned on the next write.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::ids::{alias_eq, validate_alias};

mod slots;
mod snapshot;
mod splice;
mod view;
pub use slots::{open_slot, stamp_valid_check};
pub use snapshot::Snapshot;
use view::SlotView;

/// c2c's default TTL of a slot, in seconds (`C2C_PERMISSION_TTL` unset).
pub const DEFAULT_TTL_SECS: f64 = 600.0;
/// The shortest TTL we accept: 1 s. Zero and negative values are clamped up to it.
pub const MIN_TTL_SECS: f64 = 1.0;
/// The longest TTL we accept: 24 h.
pub const MAX_TTL_SECS: f64 = 24.0 * 3600.0;
/// c2c's cap on active slots per requester alias (compared case-insensitively).
pub const DEFAULT_PER_ALIAS_CAP: usize = 16;
/// c2c's cap on active slots in one broker root.
pub const DEFAULT_GLOBAL_CAP: usize = 1024;
/// The environment variable c2c reads the TTL from.
pub const TTL_ENV: &str = "C2C_PERMISSION_TTL";

/// What a slot is about (c2c's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PendingKind {
    /// A tool permission (`permission.asked`).
    Permission,
    /// A question to the user (`question.asked`).
    Question,
}

impl PendingKind {
    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            PendingKind::Permission => "permission",
            PendingKind::Question => "question",
        }
    }

    /// Parse `permission` or `question` (exact, lower case as c2c writes them).
    ///
    /// # Errors
    /// [`Error::InvalidOption`] (option `kind`): the kind is a closed set of options, not an
    /// identifier, so it is not [`Error::InvalidId`].
    pub fn parse(s: &str) -> Result<PendingKind> {
        match s {
            "permission" => Ok(PendingKind::Permission),
            "question" => Ok(PendingKind::Question),
            other => Err(Error::InvalidOption {
                option: "kind".into(),
                reason: format!("{other:?} is not \"permission\" or \"question\""),
            }),
        }
    }
}

/// One pending-reply slot in c2c's field names and order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingSlot {
    /// The permission request's id (OpenCode's `per_…`).
    pub perm_id: String,
    /// `permission` or `question`. Kept as a string so a kind written by a newer c2c still
    /// parses (it is matched only at open time).
    pub kind: String,
    /// The asking session.
    pub requester_session_id: String,
    /// The asking session's alias, original case.
    pub requester_alias: String,
    /// Aliases allowed to answer (advisory only), original case.
    pub supervisors: Vec<String>,
    /// Epoch seconds.
    pub created_at: f64,
    /// Epoch seconds; the slot is active while `expires_at > now`.
    pub expires_at: f64,
    /// c2c's record of fall-through notices; always `[]` from us.
    #[serde(default)]
    pub fallthrough_fired_at: Vec<Value>,
    /// Epoch seconds of the first valid check; `null` until then. Bookkeeping only.
    #[serde(default)]
    pub resolved_at: Option<f64>,
    /// c2c's verdict field; c2c-bridge always writes `null` and never reads it as authority.
    #[serde(default)]
    pub verdict: Option<String>,
    /// Every other field, kept as it was.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PendingSlot {
    /// Parse one raw record; `None` for a record of another shape.
    pub fn from_value(v: &Value) -> Option<PendingSlot> {
        // Deserialize from the borrowed value: no clone of the record.
        serde::Deserialize::deserialize(v).ok()
    }

    /// The record as JSON (`resolved_at` and `verdict` written as `null` when unset).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Active at `now` (epoch seconds): not yet expired. A NaN `expires_at` counts as
    /// expired.
    pub fn is_active(&self, now: f64) -> bool {
        self.expires_at > now
    }

    /// Whether `alias` is one of the supervisors (case-insensitive).
    pub fn has_supervisor(&self, alias: &str) -> bool {
        self.supervisors.iter().any(|s| alias_eq(s, alias))
    }
}

/// The TTL to use and, when the raw value was unusable, a warning for `broker.log`.
#[derive(Debug, Clone, PartialEq)]
pub struct Ttl {
    /// Seconds, within [`MIN_TTL_SECS`]..=[`MAX_TTL_SECS`].
    pub secs: f64,
    /// `Some(reason)` when the raw value was non-numeric, infinite or NaN and the default was
    /// used (logged as `pending_ttl_invalid`).
    pub invalid: Option<String>,
    /// Whether a numeric value was clamped into range (logged as `pending_ttl_clamped`).
    pub clamped: bool,
}

/// Interpret a raw `C2C_PERMISSION_TTL` value (c2c reads it as float seconds):
///
/// | raw | result |
/// |---|---|
/// | unset or empty (after trimming) | 600 |
/// | a finite number in 1 … 86400 | that number (fractions kept) |
/// | a finite number above 86400 (e.g. `1e9`) | 86400, `clamped` |
/// | 0 or negative (e.g. `-5`), or below 1 | 1, `clamped` — a zero or negative TTL would make every slot born expired, which silently disables reply checking; the shortest real TTL keeps the feature working and visible |
/// | non-numeric (`abc`), `inf`, `nan` | 600 with an `invalid` warning — c2c accepts these unbounded (a slot that never expires, or never compares) |
pub fn parse_ttl(raw: Option<&str>) -> Ttl {
    let fallback = |why: String| Ttl {
        secs: DEFAULT_TTL_SECS,
        invalid: Some(why),
        clamped: false,
    };
    let Some(raw) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ttl {
            secs: DEFAULT_TTL_SECS,
            invalid: None,
            clamped: false,
        };
    };
    match raw.parse::<f64>() {
        Ok(v) if v.is_finite() => {
            let secs = v.clamp(MIN_TTL_SECS, MAX_TTL_SECS);
            Ttl {
                secs,
                invalid: None,
                clamped: secs != v,
            }
        }
        Ok(_) => fallback(format!(
            "{TTL_ENV}={raw:?} is infinite or NaN; using {DEFAULT_TTL_SECS} s"
        )),
        Err(_) => fallback(format!(
            "{TTL_ENV}={raw:?} is not a number of seconds; using {DEFAULT_TTL_SECS} s"
        )),
    }
}

/// Validate and normalise a supervisor list: every entry a valid alias, duplicates removed
/// (case-insensitively, first spelling kept), the requester removed.
///
/// # Errors
/// [`Error::InvalidId`] for a malformed alias; [`Error::InvalidOption`] (option
/// `supervisors`) when the list is empty, or nothing is left once the requester is removed.
pub fn normalize_supervisors(supervisors: &[String], requester_alias: &str) -> Result<Vec<String>> {
    if supervisors.is_empty() {
        return Err(Error::InvalidOption {
            option: "supervisors".into(),
            reason: "at least one supervisor alias is required".into(),
        });
    }
    let mut out: Vec<String> = Vec::with_capacity(supervisors.len());
    for s in supervisors {
        validate_alias(s)?;
        if !alias_eq(s, requester_alias) && !out.iter().any(|o| alias_eq(o, s)) {
            out.push(s.clone());
        }
    }
    if out.is_empty() {
        return Err(Error::InvalidOption {
            option: "supervisors".into(),
            reason: format!(
                "the only supervisor named is the requester itself ({requester_alias:?}); name another session's alias"
            ),
        });
    }
    Ok(out)
}

/// Which cap a new slot would break.
#[derive(Debug, Clone, PartialEq)]
pub enum CapHit {
    /// The requester alias already has `active` slots (`cap` allowed).
    PerAlias {
        /// Active slots of the alias.
        active: usize,
        /// The cap.
        cap: usize,
    },
    /// The root already has `active` slots (`cap` allowed).
    Global {
        /// Active slots in the root.
        active: usize,
        /// The cap.
        cap: usize,
    },
}

impl CapHit {
    /// `per_alias` or `global` (the `cap` field of `pending_cap_reject`).
    pub fn name(&self) -> &'static str {
        match self {
            CapHit::PerAlias { .. } => "per_alias",
            CapHit::Global { .. } => "global",
        }
    }

    /// The rejection text. The first sentence is c2c 0.8's, word for word
    /// (`open_pending_reply rejected: per-alias cap reached for alias "X".` /
    /// `open_pending_reply rejected: global pending-permissions cap reached.`); the rest is
    /// ours: the counts and what to do.
    pub fn message(&self, alias: &str, ttl_secs: f64) -> String {
        match self {
            CapHit::PerAlias { active, cap } => format!(
                "open_pending_reply rejected: per-alias cap reached for alias \"{alias}\". \
                 {active} pending permission requests of this alias are still open (cap {cap}); \
                 wait until one is answered in its own prompt and expires (TTL {ttl_secs} s), then retry."
            ),
            CapHit::Global { active, cap } => format!(
                "open_pending_reply rejected: global pending-permissions cap reached. \
                 {active} pending permission requests are open in this broker root (cap {cap}); \
                 wait until some expire (TTL {ttl_secs} s), then retry."
            ),
        }
    }
}

/// The caps of one broker handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Active slots per requester alias.
    pub per_alias: usize,
    /// Active slots in the root.
    pub global: usize,
}

impl Default for Caps {
    fn default() -> Caps {
        Caps {
            per_alias: DEFAULT_PER_ALIAS_CAP,
            global: DEFAULT_GLOBAL_CAP,
        }
    }
}

/// Why a new slot cannot be added to `records` (raw file contents) at `now`.
#[derive(Debug, Clone, PartialEq)]
pub enum AddRefused {
    /// An active slot already has the perm id.
    Duplicate,
    /// A cap is reached.
    Cap(CapHit),
}

/// Remove expired slots from `records` (records of another shape are kept). Returns how many
/// were removed.
pub fn prune_expired(records: &mut Vec<Value>, now: f64) -> usize {
    let before = records.len();
    records.retain(|v| SlotView::of(v).is_none_or(|s| s.is_active(now)));
    before - records.len()
}

/// Add `slot` at the front of `records` (newest first) after pruning expired slots, unless
/// its perm id is already active or a cap is reached (then `records` is left as it was).
/// Returns how many expired slots were pruned.
///
/// # Errors
/// [`AddRefused`]; nothing is changed then.
pub fn add_slot(
    records: &mut Vec<Value>,
    slot: &PendingSlot,
    caps: Caps,
    now: f64,
) -> std::result::Result<usize, AddRefused> {
    let active: Vec<SlotView<'_>> = records
        .iter()
        .filter_map(SlotView::of)
        .filter(|s| s.is_active(now))
        .collect();
    if active.iter().any(|s| s.perm_id == slot.perm_id) {
        return Err(AddRefused::Duplicate);
    }
    let of_alias = active
        .iter()
        .filter(|s| alias_eq(&s.requester_alias, &slot.requester_alias))
        .count();
    if of_alias >= caps.per_alias {
        return Err(AddRefused::Cap(CapHit::PerAlias {
            active: of_alias,
            cap: caps.per_alias,
        }));
    }
    if active.len() >= caps.global {
        return Err(AddRefused::Cap(CapHit::Global {
            active: active.len(),
            cap: caps.global,
        }));
    }
    let pruned = prune_expired(records, now);
    records.insert(0, slot.to_value());
    Ok(pruned)
}

/// The fields of a pending slot as c2c 0.8 writes them, in its order (our records use exactly
/// these, so c2c reads them unchanged).
#[cfg(test)]
pub(crate) const C2C_SLOT_FIELDS: [&str; 10] = [
    "perm_id",
    "kind",
    "requester_session_id",
    "requester_alias",
    "supervisors",
    "created_at",
    "expires_at",
    "fallthrough_fired_at",
    "resolved_at",
    "verdict",
];

/// The result of checking a reply, in c2c's JSON shape.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    /// Whether the replier is a supervisor of an active slot with that perm id.
    pub valid: bool,
    /// The requester's session id (only when valid).
    pub requester_session_id: Option<String>,
    /// c2c's error text when not valid.
    pub error: Option<String>,
}

/// Which of c2c's four outcomes a check had (for the audit line and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKind {
    /// `{"valid":true,...}`.
    Valid,
    /// `unknown permission ID`.
    Unknown,
    /// `permission ID expired`.
    Expired,
    /// `reply from non-supervisor: <alias>`.
    NonSupervisor,
}

impl CheckKind {
    /// A short stable name for `broker.log`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::Valid => "valid",
            CheckKind::Unknown => "unknown",
            CheckKind::Expired => "expired",
            CheckKind::NonSupervisor => "non_supervisor",
        }
    }
}

/// Evaluate a reply to `perm_id` from `replier_alias` against `records` at `now`.
///
/// Records are newest first; when c2c has left several slots with one perm id, the newest
/// *active* one decides (an active slot is never shadowed by an expired one). Returns the
/// outcome, its kind and the index of the deciding record (for stamping `resolved_at`).
pub fn evaluate(
    records: &[Value],
    perm_id: &str,
    replier_alias: &str,
    now: f64,
) -> (CheckOutcome, CheckKind, Option<(usize, PendingSlot)>) {
    evaluate_in(records.iter().enumerate(), perm_id, replier_alias, now)
}

/// [`evaluate`] over `(index, record)` pairs in file order (all records, or only those an
/// index says carry `perm_id`: records with another perm id are skipped either way).
fn evaluate_in<'a>(
    records: impl Iterator<Item = (usize, &'a Value)>,
    perm_id: &str,
    replier_alias: &str,
    now: f64,
) -> (CheckOutcome, CheckKind, Option<(usize, PendingSlot)>) {
    let mut seen_expired = false;
    for (i, v) in records {
        // Compare the id before deserialising the record: a check scans every slot.
        if v.get("perm_id").and_then(Value::as_str) != Some(perm_id) {
            continue;
        }
        let Some(slot) = PendingSlot::from_value(v) else {
            continue;
        };
        if !slot.is_active(now) {
            seen_expired = true;
            continue;
        }
        if slot.has_supervisor(replier_alias) {
            let outcome = CheckOutcome {
                valid: true,
                requester_session_id: Some(slot.requester_session_id.clone()),
                error: None,
            };
            return (outcome, CheckKind::Valid, Some((i, slot)));
        }
        let outcome = invalid(format!("reply from non-supervisor: {replier_alias}"));
        return (outcome, CheckKind::NonSupervisor, Some((i, slot)));
    }
    if seen_expired {
        (
            invalid("permission ID expired".into()),
            CheckKind::Expired,
            None,
        )
    } else {
        (
            invalid("unknown permission ID".into()),
            CheckKind::Unknown,
            None,
        )
    }
}

fn invalid(error: String) -> CheckOutcome {
    CheckOutcome {
        valid: false,
        requester_session_id: None,
        error: Some(error),
    }
}

#[cfg(test)]
mod tests;
