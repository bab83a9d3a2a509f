//! [`Broker`]: one session's identity-bound handle on a broker root.
//!
//! Identity is bound once, at [`Broker::open`]: the handle registers (or attaches to) one
//! `(session_id, alias)` and no method takes a session id or alias to act as someone else.
//! The recipient of a send is a *target*, never an identity.

#[cfg(test)]
mod cache_tests;
mod deliver;
mod gate;
mod held;
mod messaging;
mod pending;
mod receipts;
mod remote;
mod rooms;
mod sweep;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::fields;
use crate::ids::{alias_eq, validate_alias, validate_session_id};
use crate::log::{short_hash, AuditLog};
use crate::policy::inbound::InboundMode;
use crate::policy::rate::RateLimiter;
use crate::registry::{aliases, parse_all, Registration, RegistryCache};
use crate::store::root::resolve_path;
use crate::store::{self, BrokerRoot};
use crate::watch::InboxWatcher;

pub use crate::held::{HeldMessage, HeldSelector};
pub use crate::registry::Peer;
pub use crate::rooms::{RoomInfo, RoomMessage};
pub use deliver::Deliverable;
pub use gate::{GateReport, PermissionAdvisory};
pub use messaging::{AckReport, BroadcastReport, SendOptions, SendReceipt, SkippedRecipient};
pub use pending::PendingOpened;
pub use sweep::{SweepReport, RECIPIENT_ENDED};

// The options of an open, their defaults and their resolution live in `crate::config`
// (one table of every option); re-exported here, where callers look for them.
pub use crate::config::{
    OpenOptions, DEFAULT_HELD_CAP, DEFAULT_HELD_TTL, DEFAULT_LOCK_TIMEOUT,
    DEFAULT_MAX_MESSAGE_BYTES,
};

/// One session's handle on a broker root.
#[derive(Debug)]
pub struct Broker {
    root: BrokerRoot,
    session_id: String,
    alias: String,
    directory: Option<String>,
    attached: bool,
    max_message_bytes: usize,
    lock_timeout: Duration,
    pending_ttl: crate::pending::Ttl,
    pending_caps: crate::pending::Caps,
    log: AuditLog,
    closed: AtomicBool,
    watcher: Mutex<Option<InboxWatcher>>,
    inbound: InboundMode,
    /// The pid registered by this handle (`None` for an attached handle).
    pid: Option<u32>,
    held_cap: usize,
    held_ttl: Duration,
    rate: Mutex<RateLimiter>,
    /// The parsed `registry.json`, reused while the file is unchanged.
    registry_cache: Arc<RegistryCache>,
    /// `pending_permissions.json`, parsed (reused while the file is unchanged).
    pending_cache: Arc<crate::store::cache::ParsedFileCache<crate::pending::Snapshot>>,
    /// Records of our inbox already reported as not messages (first 16 hex of their sha256).
    not_messages_reported: Mutex<std::collections::HashSet<String>>,
}

impl Broker {
    /// Resolve and check the root, then register `(session_id, alias)` — or, with `attach`,
    /// bind to the session's existing registration.
    ///
    /// Registering refreshes this session's own earlier registration, replaces a *dead*
    /// holder of the alias, and refuses a *live* one.
    ///
    /// # Errors
    /// [`Error::InvalidId`], [`Error::InvalidOption`], [`Error::RootInsecure`],
    /// [`Error::AliasTaken`] (naming a free alternative), [`Error::AliasPending`] (c2c's M4
    /// guard), [`Error::NotRegistered`] (attach without a registration), store errors.
    pub fn open(opts: OpenOptions) -> Result<Broker> {
        validate_session_id(&opts.session_id)?;
        let project_dir = match &opts.directory {
            Some(d) => d.clone(),
            None => std::env::current_dir().map_err(|e| Error::io(".", e))?,
        };
        let env = opts.env.root_env();
        let (path, source) = resolve_path(opts.root.as_deref(), &env, &project_dir)?;
        let root = BrokerRoot::open(&path, source)?;
        let log = AuditLog::new(root.log());
        let settings = crate::config::BrokerSettings::resolve(&opts)?;
        let lock_timeout = settings.lock_timeout;
        let rate = RateLimiter::new(settings.rate).map_err(|e| Error::InvalidOption {
            option: "rate".into(),
            reason: e.to_string(),
        })?;
        let pending_ttl = settings.pending_ttl;
        if let Some(reason) = &pending_ttl.invalid {
            log.event(
                "pending_ttl_invalid",
                fields! {"reason" => reason, "ttl" => pending_ttl.secs},
            );
        } else if pending_ttl.clamped {
            log.event("pending_ttl_clamped", fields! {"ttl" => pending_ttl.secs});
        }
        // The registration records the project directory (default: the current directory),
        // canonical, for the `auto` inbound policy and `doctor`.
        let directory = Some(
            std::fs::canonicalize(&project_dir)
                .unwrap_or_else(|_| project_dir.clone())
                .to_string_lossy()
                .into_owned(),
        );

        let own_pid = (!opts.attach).then(|| opts.pid.unwrap_or_else(std::process::id));
        let alias = if opts.attach {
            let regs = parse_all(&store::read_array(&root.registry())?);
            let own = regs
                .into_iter()
                .find(|r| r.session_id == opts.session_id)
                .ok_or_else(|| Error::NotRegistered {
                    session_id: opts.session_id.clone(),
                    root: root.path().to_path_buf(),
                })?;
            own.alias
        } else {
            let alias = opts.alias.clone().ok_or_else(|| Error::InvalidOption {
                option: "alias".into(),
                reason: "an alias is required to register".into(),
            })?;
            validate_alias(&alias)?;
            let pid = opts.pid.unwrap_or_else(std::process::id);
            let mut reg = Registration {
                session_id: opts.session_id.clone(),
                alias: alias.clone(),
                pid: Some(pid),
                pid_start_time: crate::liveness::pid_start_time(pid),
                registered_at: crate::time::now_secs(),
                plugin_version: opts.plugin_version.clone(),
                client_type: Some(
                    opts.client_type
                        .clone()
                        .unwrap_or_else(|| "opencode".into()),
                ),
                directory: directory.clone(),
                extra: Default::default(),
            };
            let mut attempts = 0;
            let alias = loop {
                if opts.auto_alias {
                    // Stable aliases (issue 18): the alias this session had, else the first
                    // suffix nobody claims. Chosen afresh on each attempt; the registry lock
                    // in `register` settles a race (the loser retries).
                    let regs = parse_all(&store::read_array(&root.registry())?);
                    let book = aliases::read_book(&root).unwrap_or_else(|e| {
                        log.event("alias_book_error", fields! {"error" => e.to_string()});
                        Vec::new()
                    });
                    reg.alias = aliases::choose(&opts.session_id, &alias, &regs, &book);
                }
                match crate::registry::register_no_dir_sync(&root, reg.clone(), lock_timeout) {
                    Ok(()) => break reg.alias.clone(),
                    Err(Error::AliasTaken { suggestion, .. })
                        if opts.auto_alias && attempts < 64 =>
                    {
                        attempts += 1;
                        reg.alias = suggestion;
                    }
                    Err(e) => return Err(e),
                }
            };
            if opts.auto_alias {
                if let Err(e) = aliases::remember(
                    &root,
                    &opts.session_id,
                    &alias,
                    directory.as_deref(),
                    lock_timeout,
                ) {
                    log.event("alias_book_error", fields! {"error" => e.to_string()});
                }
            }
            log.event(
                "register",
                fields! {"alias" => alias, "session" => short_hash(&opts.session_id)},
            );
            // c2c creates the inbox at registration; a reader then sees `[]`, not ENOENT.
            // Both the registry and a new inbox were renamed into the root without a
            // directory fsync; one fsync of the root makes both renames durable.
            let inbox = crate::inbox::ensure(&root, &opts.session_id, lock_timeout);
            store::file::sync_dir(root.path())?;
            inbox?;
            sweep::rescue_dead_letters(&root, &opts.session_id, lock_timeout, &log)?;
            alias
        };

        // Shared with this process's other handles on the root (see `ParsedFileCache::shared`).
        let registry_cache = RegistryCache::shared(&root.registry());
        let pending_cache = crate::store::cache::ParsedFileCache::shared(&root.pending());
        Ok(Broker {
            root,
            session_id: opts.session_id,
            alias,
            directory,
            attached: opts.attach,
            max_message_bytes: settings.max_message_bytes,
            lock_timeout,
            pending_ttl,
            pending_caps: settings.pending_caps,
            log,
            closed: AtomicBool::new(false),
            watcher: Mutex::new(None),
            inbound: settings.inbound,
            pid: own_pid,
            held_cap: settings.held_cap,
            held_ttl: settings.held_ttl,
            rate: Mutex::new(rate),
            registry_cache,
            pending_cache,
            not_messages_reported: Mutex::new(Default::default()),
        })
    }

    /// This handle's session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// This handle's alias (original case).
    pub fn alias(&self) -> &str {
        &self.alias
    }

    /// The canonical project directory recorded at registration, if any.
    pub fn directory(&self) -> Option<&str> {
        self.directory.as_deref()
    }

    /// The broker root.
    pub fn root(&self) -> &BrokerRoot {
        &self.root
    }

    /// The audit log.
    pub fn audit(&self) -> &AuditLog {
        &self.log
    }

    /// The message size limit in bytes.
    pub fn max_message_bytes(&self) -> usize {
        self.max_message_bytes
    }

    /// The inbound policy in force.
    pub fn inbound_mode(&self) -> InboundMode {
        self.inbound
    }

    pub(crate) fn rate_check(
        &self,
        to_session_id: &str,
        now: f64,
    ) -> crate::policy::rate::RateDecision {
        self.rate.lock().unwrap_or_else(|p| p.into_inner()).check(
            &self.session_id,
            to_session_id,
            now,
        )
    }

    pub(crate) fn lock_timeout(&self) -> Duration {
        self.lock_timeout
    }

    /// The registrations of the root, parsed once per version of `registry.json` (see
    /// [`RegistryCache`]). Liveness is not part of it: callers check it per call.
    /// The pending-reply slots as last written (a cached parse; see [`crate::store::cache`]).
    /// Expiry is evaluated by the caller.
    pub(crate) fn pending_snapshot(&self) -> Result<std::sync::Arc<crate::pending::Snapshot>> {
        self.pending_cache
            .load(&self.root.pending(), crate::pending::Snapshot::parse)
    }

    pub(crate) fn registrations(&self) -> Result<Arc<Vec<Registration>>> {
        self.registry_cache
            .load(&self.root.registry(), crate::registry::parse_bytes)
    }

    /// Forget the cached registrations after this handle wrote `registry.json`.
    pub(crate) fn registry_written(&self) {
        self.registry_cache.invalidate();
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    /// Every registration of the root, with liveness.
    ///
    /// # Errors
    /// [`Error::Closed`], store errors.
    pub fn list_peers(&self) -> Result<Vec<Peer>> {
        self.check_open()?;
        let regs = self.registrations()?;
        let mut peers = crate::registry::peers(&regs, Some(&self.session_id));
        // Remote peers (`alias@node`) mirrored by this root's relay connector, if any.
        peers.extend(self.remote_peers());
        Ok(peers)
    }

    /// The other registrations as one framed listing for a model (alias, alive, client,
    /// directory, plugin version; `stale` when an OpenCode peer runs a plugin version other
    /// than `own_version`). Every peer-controlled string is escaped by the envelope.
    ///
    /// # Errors
    /// As [`Broker::list_peers`].
    pub fn framed_peer_list(&self, own_version: &str) -> Result<String> {
        let peers: Vec<Peer> = self
            .list_peers()?
            .into_iter()
            .filter(|p| !p.is_self)
            .collect();
        Ok(crate::envelope::frame_peer_list(
            &peers,
            &self.alias,
            own_version,
        ))
    }

    /// Our own registration, or [`Error::NotRegistered`] when it is gone (swept, replaced
    /// by a re-registration of the alias, or removed by another tool).
    pub(crate) fn own_registration(&self, regs: &[Registration]) -> Result<Registration> {
        regs.iter()
            .find(|r| r.session_id == self.session_id && alias_eq(&r.alias, &self.alias))
            .cloned()
            .ok_or_else(|| Error::NotRegistered {
                session_id: self.session_id.clone(),
                root: self.root.path().to_path_buf(),
            })
    }

    /// Start calling `on_change` (on the root's shared watcher thread, see `src/watch.rs`)
    /// whenever this session's inbox file changes. Replaces an earlier watch. The watch lasts
    /// until [`Broker::unwatch`] or [`Broker::close`]; dropping an open handle leaves it
    /// running (with the registration) until the process exits.
    ///
    /// # Errors
    /// [`Error::Closed`], [`Error::Io`] when the watch cannot be set up.
    pub fn watch(&self, on_change: Box<dyn Fn() + Send + 'static>) -> Result<()> {
        self.check_open()?;
        let name = self
            .root
            .inbox(&self.session_id)
            .file_name()
            .unwrap_or_default()
            .to_os_string();
        let w = InboxWatcher::start(self.root.path(), name, on_change)?;
        let old = self
            .watcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(w);
        if let Some(old) = old {
            old.stop();
        }
        Ok(())
    }

    /// Whether this handle is still whole: open, its registration present in `registry.json`,
    /// and its inbox watch (if any) alive. `false` after the broker root was deleted (and
    /// perhaps recreated) under it: the caller opens a new handle (self-healing).
    pub fn is_healthy(&self) -> bool {
        if self.check_open().is_err() || !self.root.path().is_dir() {
            return false;
        }
        let registered = self
            .registrations()
            .map(|r| self.own_registration(&r).is_ok())
            .unwrap_or(false);
        let watching = self
            .watcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        registered && !(watching && crate::watch::is_dead(self.root.path()))
    }

    /// Take this handle's watch out of it (a poisoned lock still yields it).
    fn take_watcher(&self) -> Option<InboxWatcher> {
        self.watcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Stop the watch, if any. Idempotent.
    pub fn unwatch(&self) {
        let w = self.take_watcher();
        if let Some(w) = w {
            w.stop();
        }
    }

    /// Stop the watcher and remove this session's registration (not for an attached
    /// handle). The inbox file stays: mail that arrives later is kept for a re-registration
    /// of the same session or rescued by a sweep. Idempotent; later calls on the handle fail
    /// with [`Error::Closed`].
    ///
    /// # Errors
    /// Store errors while unregistering (the handle is closed regardless).
    pub fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.unwatch();
        if self.attached {
            return Ok(());
        }
        let sid = self.session_id.clone();
        let pid = self.pid;
        let result = store::update_array(&self.root.registry(), self.lock_timeout, |records| {
            let before = records.len();
            // Only our own record: a successor that registered the same session id (after
            // this handle's process was deemed dead, or from another process) keeps its own.
            records.retain(|v| {
                v.get("session_id").and_then(Value::as_str) != Some(sid.as_str())
                    || v.get("pid").and_then(Value::as_u64).map(|p| p as u32) != pid
            });
            Ok(((), records.len() != before))
        });
        self.registry_written();
        result?;
        self.log.event(
            "unregister",
            fields! {"alias" => self.alias, "session" => short_hash(&self.session_id)},
        );
        Ok(())
    }
}

/// What [`Broker::shutdown`] did with the registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShutdownOutcome {
    /// The registration was removed (its alias stays in the alias book).
    Unregistered,
    /// Kept: the session has active pending-reply slots, and c2c's M4 guard protects their
    /// alias only while a live registration of their requester exists.
    KeptForPendingSlots,
    /// Nothing to do (attached, or already closed).
    Nothing,
}

impl Broker {
    /// The plugin's shutdown (OpenCode disposing the instance): stop the watcher and remove
    /// the registration so the registry does not fill with stale entries — unless this
    /// session has active pending-reply slots it asked (then the registration is kept, so
    /// c2c's M4 guard keeps protecting the alias while this process lives). The alias stays
    /// recorded in the alias book either way, so the session gets it back when it
    /// registers again. Idempotent; the handle is closed afterwards.
    ///
    /// # Errors
    /// Store errors (the handle is closed regardless).
    pub fn shutdown(&self) -> Result<ShutdownOutcome> {
        if self.attached || self.closed.load(Ordering::Acquire) {
            self.closed.store(true, Ordering::Release);
            self.unwatch();
            return Ok(ShutdownOutcome::Nothing);
        }
        let now = crate::time::now_secs();
        let has_slots = self.pending_snapshot().map(|slots| {
            slots
                .records()
                .iter()
                .filter_map(crate::pending::PendingSlot::from_value)
                .any(|s| s.requester_session_id == self.session_id && s.is_active(now))
        });
        if has_slots.unwrap_or(true) {
            // Unknown counts as "has slots": keeping a registration is the safe side.
            self.closed.store(true, Ordering::Release);
            self.unwatch();
            self.log.event(
                "shutdown_kept",
                fields! {"alias" => self.alias, "session" => short_hash(&self.session_id)},
            );
            return Ok(ShutdownOutcome::KeptForPendingSlots);
        }
        self.close()?;
        Ok(ShutdownOutcome::Unregistered)
    }

    /// Close (unregister) and remove this session from the alias book: the session was
    /// deleted, its alias may go to a new session.
    ///
    /// # Errors
    /// As [`Broker::close`], and store errors on the book.
    pub fn close_and_forget_alias(&self) -> Result<()> {
        let closed = self.close();
        if !self.attached {
            aliases::forget(&self.root, &self.session_id, self.lock_timeout)?;
        }
        closed
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        // Registration removal is explicit (close), because a dropped handle in a
        // crashed-and-restarted plugin must not unregister its successor. So is the end of a
        // watch: a handle dropped while open (an unreferenced JS object collected) keeps its
        // watch as long as its registration, i.e. until the process exits.
        let w = self.take_watcher();
        if let Some(w) = w {
            if self.closed.load(Ordering::Acquire) {
                w.stop();
            } else {
                w.detach();
            }
        }
    }
}
