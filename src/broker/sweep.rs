//! The end of sessions: the sweep of dead registrations (their mail rescued into
//! `dead-letter.jsonl`, nothing dropped), a session that ended in OpenCode, and the rescue of
//! dead-lettered mail when a session registers again. The files move in
//! [`crate::inbox::dead_letter`]; here the registry is swept and senders get their receipts.

use std::collections::HashSet;
use std::time::Duration;

use super::receipts::Notice;
use super::Broker;
use crate::error::{Error, Result};
use crate::fields;
use crate::inbox::Message;
use crate::log::{short_hash, AuditLog};
use crate::receipts::Status;
use crate::registry::Registration;
use crate::store::{self, BrokerRoot};

/// The reason of the `dropped` receipt for mail of a session that ended or was swept.
pub const RECIPIENT_ENDED: &str = "recipient session ended";

/// The result of [`Broker::sweep`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SweepReport {
    /// `(alias, session_id)` of removed dead registrations.
    pub removed: Vec<(String, String)>,
    /// Messages moved to `dead-letter.jsonl`.
    pub dead_lettered: usize,
    /// Temp files of writers killed mid-replace that were removed
    /// ([`crate::store::leftovers`]).
    pub temp_files_removed: usize,
}

/// How old a dead writer's temp file must be before a sweep removes it.
const TEMP_FILE_MIN_AGE: std::time::Duration = std::time::Duration::from_secs(60);

impl Broker {
    /// Remove dead registrations and rescue the mail of every session that is not alive
    /// (dead registrations and inbox files with no registration at all) into
    /// `dead-letter.jsonl`. Nothing is dropped: a message is in the dead letter before its
    /// inbox is removed. A session that registers again gets its rescued mail back. Temp files
    /// left by writers killed mid-replace (a minute old or more) are removed from the root,
    /// `held/`, `archive/` and each room ([`crate::store::leftovers`]).
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn sweep(&self) -> Result<SweepReport> {
        self.check_open()?;
        let mut report = SweepReport::default();
        let removed: Result<Vec<Registration>> =
            store::update_array(&self.root().registry(), self.lock_timeout(), |records| {
                let mut removed = Vec::new();
                records.retain(|v| match Registration::from_value(v) {
                    Some(r) if !r.is_alive() => {
                        removed.push(r);
                        false
                    }
                    _ => true,
                });
                let changed = !removed.is_empty();
                Ok((removed, changed))
            });
        self.registry_written();
        let removed = removed?;
        report.removed = removed
            .iter()
            .map(|r| (r.alias.clone(), r.session_id.clone()))
            .collect();
        let live: HashSet<String> = self
            .registrations()?
            .iter()
            .map(|r| r.session_id.clone())
            .collect();
        let entries =
            std::fs::read_dir(self.root().path()).map_err(|e| Error::io(self.root().path(), e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(sid) = name.strip_suffix(".inbox.json") else {
                continue;
            };
            if live.contains(sid) || crate::ids::validate_session_id(sid).is_err() {
                continue;
            }
            report.dead_lettered += self.dead_letter_inbox(sid)?;
        }
        report.temp_files_removed = self.remove_leftover_temp_files();
        self.audit().event(
            "sweep",
            fields! {
                "removed" => report.removed.len(),
                "dead_lettered" => report.dead_lettered,
                "temp_files_removed" => report.temp_files_removed,
            },
        );
        Ok(report)
    }

    /// [`crate::store::leftovers::remove_dead_writers_temp_files`] in every directory of the
    /// root that holds store files; a directory that cannot be listed is skipped.
    fn remove_leftover_temp_files(&self) -> usize {
        let root = self.root().path();
        let mut dirs = vec![root.to_path_buf(), root.join("held"), root.join("archive")];
        // `rooms` is listed only when it is a directory, not a symlink to one (red team 4:
        // `rooms -> ~` had every directory of the user's home swept).
        let rooms = root.join("rooms");
        let rooms_is_dir = rooms.symlink_metadata().is_ok_and(|m| m.is_dir());
        if let Some(Ok(rooms)) = rooms_is_dir.then(|| std::fs::read_dir(&rooms)) {
            dirs.extend(
                rooms
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
        // An absent directory, or a symlink in one's place, fails to open (O_NOFOLLOW): skipped.
        dirs.iter()
            .filter_map(|d| {
                crate::store::leftovers::remove_dead_writers_temp_files(d, TEMP_FILE_MIN_AGE).ok()
            })
            .sum()
    }

    fn dead_letter_inbox(&self, sid: &str) -> Result<usize> {
        let moved =
            crate::inbox::dead_letter::dead_letter(self.root(), sid, self.lock_timeout(), || {
                Ok(self
                    .registrations()?
                    .iter()
                    .any(|r| r.session_id == sid && r.is_alive()))
            })?;
        let Some(records) = moved else {
            return Ok(0);
        };
        // A terminal receipt for every message: its sender learns that it was not delivered.
        let notices: Vec<Notice> = records
            .iter()
            .filter_map(Message::from_value)
            .filter(|m| m.receipt.is_none())
            .filter_map(|m| {
                Some((
                    m.from_session_id.clone()?,
                    m.receipt_for(Status::Dropped, RECIPIENT_ENDED),
                ))
            })
            .collect();
        self.send_notices(notices);
        Ok(records.len())
    }

    /// The session ended (deleted in OpenCode): unregister as [`Broker::close`] does, then move
    /// its undelivered inbox to `dead-letter.jsonl` with a `dropped` receipt ("recipient
    /// session ended") for each sender. Returns how many messages were dead-lettered. An
    /// attached handle only closes. Idempotent (0 once closed).
    ///
    /// # Errors
    /// Store errors (the handle is closed regardless).
    pub fn end_session(&self) -> Result<usize> {
        if self.check_open().is_err() {
            return Ok(0);
        }
        let attached = self.attached;
        self.close()?;
        if attached {
            return Ok(0);
        }
        let n = self.dead_letter_inbox(self.session_id())?;
        // An ended session never comes back: its alias is free for new sessions.
        crate::registry::aliases::forget(self.root(), self.session_id(), self.lock_timeout())?;
        self.audit().event(
            "session_ended",
            fields! {"session" => short_hash(self.session_id()), "dead_lettered" => n},
        );
        Ok(n)
    }
}

/// [`crate::inbox::dead_letter::rescue`] with its audit line: called when a session registers.
pub(super) fn rescue_dead_letters(
    root: &BrokerRoot,
    session_id: &str,
    lock_timeout: Duration,
    log: &AuditLog,
) -> Result<()> {
    let count = crate::inbox::dead_letter::rescue(root, session_id, lock_timeout)?;
    if count > 0 {
        log.event(
            "dead_letter_rescue",
            fields! {"session" => short_hash(session_id), "count" => count},
        );
    }
    Ok(())
}
