//! Pending-reply slots on the identity-bound handle: [`Broker::open_pending_reply`] and
//! [`Broker::check_pending_reply`] (c2c's M2). The records, rules and file operations are in
//! [`crate::pending`]; here identity comes from the handle's own registration, never from an
//! argument, and each call writes its audit line.

use super::Broker;
use crate::error::{Error, Result};
use crate::fields;
use crate::ids::validate_perm_id;
use crate::log::short_hash;
use crate::pending::{self, AddRefused, CheckKind, CheckOutcome, PendingKind, PendingSlot};

/// What [`Broker::open_pending_reply`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingOpened {
    /// The perm id of the new slot.
    pub perm_id: String,
    /// Its kind.
    pub kind: PendingKind,
    /// The TTL applied, in seconds.
    pub ttl_seconds: f64,
    /// When the slot expires, in epoch seconds.
    pub expires_at: f64,
    /// The supervisors stored (validated, deduplicated, without the requester).
    pub supervisors: Vec<String>,
}

impl Broker {
    /// The TTL of new pending slots in seconds (from `C2C_PERMISSION_TTL` at open time).
    pub fn pending_ttl_secs(&self) -> f64 {
        self.pending_ttl.secs
    }

    /// Record that this session asked `supervisors` about permission `perm_id`.
    ///
    /// The requester alias and session are this handle's registration. The slot is written
    /// newest first in c2c's format and expires after the TTL read at open time. Expired
    /// slots are pruned in the same write. A rejected open leaves the file as it was.
    ///
    /// # Errors
    /// [`Error::Closed`]; [`Error::NotRegistered`] when the handle's registration is gone;
    /// [`Error::InvalidId`] for a malformed perm id or supervisor alias;
    /// [`Error::InvalidOption`] for a `kind` other than `permission`/`question`, or a
    /// supervisor list that is empty or names only the requester;
    /// [`Error::DuplicatePermId`] when an active slot has the perm id;
    /// [`Error::PendingCap`] (c2c's text, logged as `pending_cap_reject`); store errors.
    pub fn open_pending_reply(
        &self,
        perm_id: &str,
        kind: &str,
        supervisors: &[String],
    ) -> Result<PendingOpened> {
        self.check_open()?;
        validate_perm_id(perm_id)?;
        let kind = PendingKind::parse(kind)?;
        let supervisors = pending::normalize_supervisors(supervisors, &self.alias)?;
        let own = self.own_registration(&self.registrations()?)?;

        let now = crate::time::now_secs();
        let ttl = self.pending_ttl.secs;
        let slot = PendingSlot {
            perm_id: perm_id.to_string(),
            kind: kind.as_str().to_string(),
            requester_session_id: own.session_id.clone(),
            requester_alias: own.alias.clone(),
            supervisors: supervisors.clone(),
            created_at: now,
            expires_at: now + ttl,
            fallthrough_fired_at: Vec::new(),
            resolved_at: None,
            verdict: None,
            extra: Default::default(),
        };
        let added = pending::open_slot(
            &self.root,
            &self.pending_cache,
            &slot,
            self.pending_caps,
            now,
            self.lock_timeout,
        )?;
        let session = short_hash(&self.session_id);
        let perm = short_hash(perm_id);
        match added {
            Ok(pruned) => {
                self.log.event(
                    "pending_open",
                    fields! {
                        "perm" => perm, "session" => session, "alias" => own.alias,
                        "kind" => kind.as_str(), "supervisors" => supervisors.len(),
                        "ttl" => ttl, "expires_at" => slot.expires_at,
                        "pruned" => pruned, "outcome" => "opened",
                    },
                );
                Ok(PendingOpened {
                    perm_id: slot.perm_id,
                    kind,
                    ttl_seconds: ttl,
                    expires_at: slot.expires_at,
                    supervisors,
                })
            }
            Err(AddRefused::Duplicate) => {
                self.log.event(
                    "pending_open",
                    fields! {"perm" => perm, "session" => session, "alias" => own.alias, "outcome" => "duplicate"},
                );
                Err(Error::DuplicatePermId {
                    perm_id: perm_id.to_string(),
                })
            }
            Err(AddRefused::Cap(hit)) => {
                let (active, cap) = match hit {
                    pending::CapHit::PerAlias { active, cap }
                    | pending::CapHit::Global { active, cap } => (active, cap),
                };
                self.log.event(
                    "pending_cap_reject",
                    fields! {
                        "perm" => perm, "session" => session, "alias" => own.alias,
                        "cap" => hit.name(), "active" => active, "limit" => cap,
                    },
                );
                Err(Error::PendingCap {
                    message: hit.message(&own.alias, ttl),
                })
            }
        }
    }

    /// Check a reply to `perm_id` sent by *this* session (the replying alias is the handle's
    /// own; there is no argument for it). Returns c2c's four outcomes as data.
    ///
    /// The first valid check stamps `resolved_at` (bookkeeping only: it authorises nothing
    /// and is never read back as a decision); later valid checks are still valid. The common
    /// path reads a lock-free cached snapshot, indexed by perm id, and writes nothing but the
    /// audit line; only the stamping takes the lock and rewrites the file (pruning expired
    /// slots in the same write), without a disk flush: a crash can lose the stamp, never a
    /// slot (see [`crate::store::update_array_unsynced`]).
    ///
    /// # Errors
    /// [`Error::Closed`]; [`Error::NotRegistered`] when the handle's registration is gone;
    /// store errors. An unknown, expired or unanswerable perm id is an outcome, not an error.
    pub fn check_pending_reply(&self, perm_id: &str) -> Result<CheckOutcome> {
        self.check_open()?;
        let own = self.own_registration(&self.registrations()?)?;
        let now = crate::time::now_secs();
        // The common path (unknown id, or a slot already stamped) reads a cached parse and
        // writes nothing but the audit line.
        let snapshot = self.pending_snapshot()?;
        let (mut outcome, mut kind, found) = snapshot.evaluate(perm_id, &own.alias, now);
        // Let go of the snapshot before a stamp: the write can then update the cached parse
        // in place instead of parsing the new version.
        drop(snapshot);
        let mut stamped = false;
        if kind == CheckKind::Valid && found.is_some_and(|(_, s)| s.resolved_at.is_none()) {
            // Re-evaluate under the lock: the slot may have been stamped, removed or expired
            // since the snapshot.
            (outcome, kind, stamped) = pending::stamp_valid_check(
                &self.root,
                &self.pending_cache,
                perm_id,
                &own.alias,
                self.lock_timeout,
            )?;
        }
        let mut f = fields! {
            "perm" => short_hash(perm_id), "session" => short_hash(&self.session_id),
            "alias" => own.alias, "outcome" => kind.as_str(), "stamped" => stamped,
        };
        if let Some(requester) = &outcome.requester_session_id {
            f.insert("requester_session".into(), short_hash(requester).into());
        }
        self.log.event("pending_check", f);
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod splice_tests;
