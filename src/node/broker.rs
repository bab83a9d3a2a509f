//! The `Broker` class: a thin wrapper over [`crate::broker::Broker`].

use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::Unknown;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;

use super::error::{to_js, JsCode};
use super::types::{
    AckReport, BroadcastReport, CheckOutcome, CreateRoomOptions, GateReport, HeldMessage,
    InboxChange, InboxMessage, OpenOptions, Peer, PendingOpened, Receipt, RoomInfo, RoomMessage,
    SendOptions, SendReceipt, SweepReport,
};
use crate::broker as core;
use crate::config::{self, Environment, OpenNumbers};

fn bad_option(name: &str, what: &str) -> napi::Error<JsCode> {
    to_js(crate::Error::InvalidOption {
        option: name.to_string(),
        reason: format!("must be {what}"),
    })
}

fn selector(which: &str) -> std::result::Result<core::HeldSelector, napi::Error<JsCode>> {
    match which.trim() {
        "all" => Ok(core::HeldSelector::All),
        n => n
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .map(core::HeldSelector::Index)
            .ok_or_else(|| {
                super::error::invalid_arg(format!(
                    "expected \"all\" or a number from 1, not {which:?}"
                ))
            }),
    }
}
use napi::Result;

/// The JS callback type of `watch`: `(change: InboxChange) => void`, unref'd (weak) so it never
/// keeps the process alive, and not callee-handled (no error-first argument).
type WatchCallback =
    ThreadsafeFunction<InboxChange, Unknown<'static>, InboxChange, Status, false, true>;

/// One session's identity-bound handle on a broker root. Open it with `Broker.open`.
/// No method takes a session id or alias to act as someone else.
#[napi(js_name = "Broker")]
pub struct JsBroker {
    inner: Arc<core::Broker>,
}

/// The receipt status of an acknowledgement: `delivered` or `duplicate`.
fn ack_status(status: &str) -> std::result::Result<crate::receipts::Status, napi::Error<JsCode>> {
    match status {
        "delivered" => Ok(crate::receipts::Status::Delivered),
        "duplicate" => Ok(crate::receipts::Status::Duplicate),
        other => Err(super::error::invalid_arg(format!(
            "status must be \"delivered\" or \"duplicate\", not {other:?}"
        ))),
    }
}

fn send_options(o: Option<SendOptions>) -> core::SendOptions {
    core::SendOptions {
        via: o.and_then(|o| o.via).unwrap_or_default(),
    }
}

#[napi]
impl JsBroker {
    /// Register `(sessionId, alias)` in the broker root (or attach to an existing
    /// registration) and return the handle bound to it.
    ///
    /// Errors (`err.code`): `E_INVALID_ID`, `E_INVALID_OPTION`, `E_ROOT_INSECURE`,
    /// `E_ALIAS_TAKEN` (message names a free alternative), `E_ALIAS_PENDING`,
    /// `E_NOT_REGISTERED` (attach), `E_STORE_CORRUPT`, `E_LOCK_TIMEOUT`, `E_IO`.
    #[napi(factory, catch_unwind)]
    pub fn open(options: OpenOptions) -> Result<JsBroker, JsCode> {
        let mut opts = core::OpenOptions {
            session_id: options.session_id,
            alias: options.alias,
            root: options.root.map(PathBuf::from),
            directory: options.directory.map(PathBuf::from),
            plugin_version: options.plugin_version,
            client_type: options.client_type,
            attach: options.attach.unwrap_or(false),
            auto_alias: options.auto_alias.unwrap_or(false),
            env: options.env.map(Environment::Given).unwrap_or_default(),
            inbound: options.inbound,
            ..Default::default()
        };
        OpenNumbers {
            pid: options.pid,
            max_message_bytes: options.max_message_bytes,
            lock_timeout_ms: options.lock_timeout_ms,
            held_cap: options.held_cap,
            held_ttl_secs: options.held_ttl_secs,
            rate_burst: options.rate_burst,
            rate_window_secs: options.rate_window_secs,
            pending_per_alias_cap: options.pending_per_alias_cap,
            pending_global_cap: options.pending_global_cap,
        }
        .apply(&mut opts)
        .map_err(to_js)?;
        let inner = core::Broker::open(opts);
        // The registration's parse and rewrite of registry.json are freed by now; give their
        // pages back (glibc keeps them otherwise: crate::heap).
        crate::heap::release_free_memory();
        let inner = inner.map_err(to_js)?;
        Ok(JsBroker {
            inner: Arc::new(inner),
        })
    }

    /// This handle's session id.
    #[napi(getter, catch_unwind)]
    pub fn session_id(&self) -> String {
        self.inner.session_id().to_string()
    }

    /// This handle's alias (original case).
    #[napi(getter, catch_unwind)]
    pub fn alias(&self) -> String {
        self.inner.alias().to_string()
    }

    /// The canonical broker root directory.
    #[napi(getter, catch_unwind)]
    pub fn root(&self) -> String {
        self.inner.root().path().to_string_lossy().into_owned()
    }

    /// Where the root came from: `option`, `C2C_MCP_BROKER_ROOT`, `C2C_STATE_HOME`,
    /// `XDG_STATE_HOME` or `HOME`.
    #[napi(getter, catch_unwind)]
    pub fn root_source(&self) -> String {
        self.inner.root().source().as_str().to_string()
    }

    /// The canonical project directory recorded at registration.
    #[napi(getter, catch_unwind)]
    pub fn directory(&self) -> Option<String> {
        self.inner.directory().map(str::to_string)
    }

    /// The message size limit in bytes.
    #[napi(getter, catch_unwind)]
    pub fn max_message_bytes(&self) -> u32 {
        self.inner.max_message_bytes() as u32
    }

    /// Every registration of the root, with liveness (this handle's own has `isSelf`).
    /// Errors: `E_CLOSED`, `E_STORE_CORRUPT`, `E_IO`.
    #[napi(catch_unwind)]
    pub fn list_peers(&self) -> Result<Vec<Peer>, JsCode> {
        Ok(self
            .inner
            .list_peers()
            .map_err(to_js)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// The other registrations as one framed listing for a model; OpenCode peers whose
    /// `pluginVersion` differs from `ownVersion` are flagged `stale`. Errors: as `listPeers`.
    #[napi(catch_unwind)]
    pub fn framed_peer_list(&self, own_version: String) -> Result<String, JsCode> {
        self.inner.framed_peer_list(&own_version).map_err(to_js)
    }

    /// Queue `content` for the live session registered as `toAlias` (case-insensitive).
    /// Returns `{ messageId, toAlias, toSessionId, ts, status: "queued" }`.
    ///
    /// Errors: `E_EMPTY`, `E_TOO_LARGE` (never truncated), `E_SEND_TO_SELF`,
    /// `E_UNKNOWN_RECIPIENT`, `E_RECIPIENT_DEAD`, `E_NOT_REGISTERED`, `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn send(
        &self,
        to_alias: String,
        content: String,
        options: Option<SendOptions>,
    ) -> Result<SendReceipt, JsCode> {
        self.inner
            .send(&to_alias, &content, &send_options(options))
            .map(Into::into)
            .map_err(to_js)
    }

    /// Queue `content` for every other live registration; dead ones are listed in `skipped`.
    /// Errors: as `send`, less the recipient codes.
    #[napi(catch_unwind)]
    pub fn send_all(
        &self,
        content: String,
        options: Option<SendOptions>,
    ) -> Result<BroadcastReport, JsCode> {
        self.inner
            .send_all(&content, &send_options(options))
            .map(Into::into)
            .map_err(to_js)
    }

    /// This session's inbox, oldest first, without consuming it.
    /// Errors: `E_CLOSED`, `E_STORE_CORRUPT` (the file is copied aside, never emptied), `E_IO`.
    #[napi(catch_unwind)]
    pub fn peek(&self) -> Result<Vec<InboxMessage>, JsCode> {
        Ok(self
            .inner
            .peek()
            .map_err(to_js)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Move exactly these messages from the inbox to `archive/<sessionId>.jsonl`.
    /// Returns `{ acked, missing }`. Errors: `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn ack(&self, message_ids: Vec<String>) -> Result<AckReport, JsCode> {
        self.inner.ack(&message_ids).map(Into::into).map_err(to_js)
    }

    /// c2c's drain: take (and archive) every message of the inbox.
    /// Errors: `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn drain(&self) -> Result<Vec<InboxMessage>, JsCode> {
        Ok(self
            .inner
            .drain()
            .map_err(to_js)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Remove dead registrations and move undelivered mail of dead sessions to
    /// `dead-letter.jsonl` (kept, and rescued if the session registers again), with a
    /// `dropped` receipt ("recipient session ended") for each sender. Errors: `E_CLOSED`,
    /// store codes.
    #[napi(catch_unwind)]
    pub fn sweep(&self) -> Result<SweepReport, JsCode> {
        self.inner.sweep().map(Into::into).map_err(to_js)
    }

    /// Join a room (created public if needed, as c2c does). An invite-only room admits only
    /// its members and invited aliases (c2c's rule).
    /// Errors: `E_NOT_INVITED`, `E_INVALID_ID`, `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn join_room(&self, room_id: String) -> Result<(), JsCode> {
        self.inner.join_room(&room_id).map_err(to_js)
    }

    /// Create a room and join it; `meta.json` is written in c2c's schema
    /// (`visibility`, `invited_members`, `created_by`).
    /// Errors: `E_ROOM_EXISTS`, `E_INVALID_OPTION` (visibility), `E_INVALID_ID`,
    /// `E_NOT_REGISTERED`, `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn create_room(
        &self,
        room_id: String,
        options: Option<CreateRoomOptions>,
    ) -> Result<(), JsCode> {
        let o = options.unwrap_or_default();
        let visibility = match o.visibility.as_deref() {
            None => crate::rooms::Visibility::Public,
            Some(v) => crate::rooms::Visibility::parse_option(v)
                .ok_or_else(|| bad_option("visibility", "\"public\" or \"invite_only\""))?,
        };
        self.inner
            .create_room(&room_id, visibility, &o.invite.unwrap_or_default())
            .map_err(to_js)
    }

    /// Invite an alias to a room; only members may (c2c's rule).
    /// Errors: `E_NOT_MEMBER`, `E_UNKNOWN_ROOM`, `E_INVALID_ID`, `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn invite_to_room(&self, room_id: String, alias: String) -> Result<(), JsCode> {
        self.inner.invite_to_room(&room_id, &alias).map_err(to_js)
    }

    /// Delete a room by c2c's rule: only its creator, once it has no members (`force` only
    /// for a room without a recorded creator).
    /// Errors: `E_ROOM_DELETE_REFUSED`, `E_UNKNOWN_ROOM`, `E_INVALID_ID`, `E_CLOSED`, store
    /// codes.
    #[napi(catch_unwind)]
    pub fn delete_room(&self, room_id: String, force: Option<bool>) -> Result<(), JsCode> {
        self.inner
            .delete_room(&room_id, force.unwrap_or(false))
            .map_err(to_js)
    }

    /// Leave a room; returns whether this session was a member.
    /// Errors: `E_INVALID_ID`, `E_UNKNOWN_ROOM`, `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn leave_room(&self, room_id: String) -> Result<bool, JsCode> {
        self.inner.leave_room(&room_id).map_err(to_js)
    }

    /// Post to a room: appended to its history and queued for each live member.
    /// Errors: `E_NOT_MEMBER`, `E_UNKNOWN_ROOM`, `E_EMPTY`, `E_TOO_LARGE`, `E_INVALID_ID`,
    /// `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn send_room(
        &self,
        room_id: String,
        content: String,
        options: Option<SendOptions>,
    ) -> Result<BroadcastReport, JsCode> {
        self.inner
            .send_room(&room_id, &content, &send_options(options))
            .map(Into::into)
            .map_err(to_js)
    }

    /// The last `limit` (default 50) messages of a room, oldest first; an invite-only room's
    /// only to members. Errors: `E_NOT_MEMBER`, `E_INVALID_ID`, `E_UNKNOWN_ROOM`, `E_CLOSED`,
    /// store codes.
    #[napi(catch_unwind)]
    pub fn room_history(
        &self,
        room_id: String,
        limit: Option<u32>,
    ) -> Result<Vec<RoomMessage>, JsCode> {
        Ok(self
            .inner
            .room_history(
                &room_id,
                limit.map_or(config::DEFAULT_ROOM_HISTORY_LIMIT, |n| n as usize),
            )
            .map_err(to_js)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Every room with its members. Errors: `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn list_rooms(&self) -> Result<Vec<RoomInfo>, JsCode> {
        Ok(self
            .inner
            .list_rooms()
            .map_err(to_js)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// The inbound policy in force: `accept`, `auto`, `hold` or `refuse`.
    #[napi(getter, catch_unwind)]
    pub fn inbound_mode(&self) -> String {
        self.inner.inbound_mode().as_str().to_string()
    }

    /// Decide every inbox message with the inbound policy (the one choke point): accepted ones
    /// stay in the inbox and are returned framed for injection; held ones move to the held
    /// inbox; refused ones are archived; senders get receipts. Errors: `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn gate_inbox(&self) -> Result<GateReport, JsCode> {
        let r = self.inner.gate_inbox().map_err(to_js)?;
        Ok(GateReport {
            deliver: r.deliverables().into_iter().map(Into::into).collect(),
            held: r.held,
            refused: r.refused,
            dropped: r.dropped,
        })
    }

    /// The held inbox, oldest first, numbered from 1 (expired entries are not listed).
    /// Errors: `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn held(&self) -> Result<Vec<HeldMessage>, JsCode> {
        Ok(self
            .inner
            .held()
            .map_err(to_js)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// The held inbox as one framed listing for a model or a human.
    /// Errors: `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn framed_held(&self) -> Result<String, JsCode> {
        let held = self.inner.held().map_err(to_js)?;
        Ok(crate::envelope::frame_held_listing(
            &held,
            crate::time::now_secs(),
        ))
    }

    /// Release held messages (`"all"` or a number from `held()`) into the normal delivery
    /// path. Returns their ids. Errors: `E_NO_SUCH_HELD`, `E_INVALID_ARG`, `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn release_held(&self, which: String) -> Result<Vec<String>, JsCode> {
        self.inner.release_held(selector(&which)?).map_err(to_js)
    }

    /// Drop held messages (`"all"` or a number); senders get `dropped` receipts. Returns their
    /// ids. Errors: `E_NO_SUCH_HELD`, `E_INVALID_ARG`, `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn drop_held(&self, which: String) -> Result<Vec<String>, JsCode> {
        self.inner.drop_held(selector(&which)?).map_err(to_js)
    }

    /// Expire held messages past their time (`expired` receipts). Returns their ids.
    /// Errors: `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn expire_held(&self) -> Result<Vec<String>, JsCode> {
        self.inner.expire_held().map_err(to_js)
    }

    /// Acknowledge handed-on messages with a receipt for their senders: `status` is
    /// `delivered` (once the injected message is stored in the session) or `duplicate`.
    /// Returns the ids moved to the archive. Errors: `E_INVALID_ARG`, `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn acknowledge(
        &self,
        message_ids: Vec<String>,
        status: String,
    ) -> Result<Vec<String>, JsCode> {
        let status = ack_status(&status)?;
        self.inner.acknowledge(&message_ids, status).map_err(to_js)
    }

    /// `acknowledge` run on the libuv thread pool: a `Promise` of the ids moved to the
    /// archive, rejected with the same errors (`E_CLOSED`, store codes); `E_INVALID_ARG` for a
    /// bad `status` is thrown at once. The plugin calls this on OpenCode's main thread right
    /// after OpenCode stored the injected message: only the argument conversion runs there,
    /// not the three fsync'd writes. Concurrent acknowledgements of one message are safe
    /// (the inbox lock serialises them; the second finds nothing to move and sends no receipt).
    #[napi(catch_unwind, ts_return_type = "Promise<Array<string>>")]
    pub fn acknowledge_async(
        &self,
        message_ids: Vec<String>,
        status: String,
    ) -> Result<napi::bindgen_prelude::AsyncTask<super::ack_task::AcknowledgeTask>, JsCode> {
        let status = ack_status(&status)?;
        Ok(napi::bindgen_prelude::AsyncTask::new(
            super::ack_task::AcknowledgeTask {
                broker: Arc::clone(&self.inner),
                message_ids,
                status,
            },
        ))
    }

    /// Tell the senders of these queued messages that delivery is paused by this session's user
    /// (after an abort): a `paused` receipt each; the messages stay in the inbox. Returns the
    /// ids found. Errors: `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn report_paused(&self, message_ids: Vec<String>) -> Result<Vec<String>, JsCode> {
        self.inner.report_paused(&message_ids).map_err(to_js)
    }

    /// This session's receipts: the latest outcome of each of the last `limit` (default 50)
    /// messages it sent. Errors: `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn receipts(&self, limit: Option<u32>) -> Result<Vec<Receipt>, JsCode> {
        Ok(self
            .inner
            .receipts(limit.map_or(config::DEFAULT_RECEIPTS_LIMIT, |n| n as usize))
            .map_err(to_js)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// The receipts as one framed listing for a model.
    /// Errors: `E_CLOSED`, store codes.
    #[napi(catch_unwind)]
    pub fn framed_receipts(&self, limit: Option<u32>) -> Result<String, JsCode> {
        let r = self
            .inner
            .receipts(limit.map_or(config::DEFAULT_FRAMED_RECEIPTS_LIMIT, |n| n as usize))
            .map_err(to_js)?;
        Ok(crate::envelope::frame_receipts(&r))
    }

    /// Record that this session asked `supervisors` (aliases) about permission `permId`
    /// (`kind`: `"permission"` or `"question"`). The requester is this handle's own
    /// registration. Returns `{ ok: true, permId, kind, ttlSeconds, expiresAt }` (seconds;
    /// `expiresAt` epoch seconds) plus the stored `supervisors`. The slot authorises
    /// nothing: it lets `checkPendingReply` verify who replied.
    ///
    /// Errors (`err.code`): `E_INVALID_ID` (perm id or a supervisor alias),
    /// `E_INVALID_OPTION` (kind; empty supervisors, or only the requester itself),
    /// `E_DUPLICATE_PERM_ID` (an active slot has that id), `E_PENDING_CAP` (c2c's text),
    /// `E_NOT_REGISTERED`, `E_CLOSED`, `E_STORE_CORRUPT`, `E_LOCK_TIMEOUT`, `E_IO`.
    #[napi(catch_unwind)]
    pub fn open_pending_reply(
        &self,
        perm_id: String,
        kind: String,
        supervisors: Vec<String>,
    ) -> Result<PendingOpened, JsCode> {
        self.inner
            .open_pending_reply(&perm_id, &kind, &supervisors)
            .map(Into::into)
            .map_err(to_js)
    }

    /// Check a reply to `permId` sent by this session (the replier is this handle's own
    /// alias; there is no argument for it). Returns c2c's outcome as data:
    /// `{ valid: true, requesterSessionId, error: null }` or `{ valid: false,
    /// requesterSessionId: null, error }` with `error` one of `"unknown permission ID"`,
    /// `"permission ID expired"`, `"reply from non-supervisor: <alias>"`. A valid outcome is
    /// advisory: it never answers the permission.
    ///
    /// Errors: `E_NOT_REGISTERED`, `E_CLOSED`, `E_STORE_CORRUPT`, `E_LOCK_TIMEOUT`, `E_IO`.
    #[napi(catch_unwind)]
    pub fn check_pending_reply(&self, perm_id: String) -> Result<CheckOutcome, JsCode> {
        self.inner
            .check_pending_reply(&perm_id)
            .map(Into::into)
            .map_err(to_js)
    }

    /// The TTL of new pending slots in seconds (`C2C_PERMISSION_TTL` read at open, clamped
    /// to 1 s–24 h; unusable values give 600).
    #[napi(getter, catch_unwind)]
    pub fn pending_ttl_seconds(&self) -> f64 {
        self.inner.pending_ttl_secs()
    }

    /// Call `callback({ sessionId })` whenever this session's inbox file changes (inotify,
    /// including atomic renames; no polling). The callback runs on the JS thread; it never
    /// keeps the process alive, and an exception it throws is swallowed, never fatal.
    /// Replaces an earlier watch.
    ///
    /// All handles of one broker root in a process share one watcher (one inotify instance,
    /// one thread), whatever the number of sessions. The watch lives as long as the handle is
    /// open: it ends with `unwatch()` or `close()`, never with garbage collection. A handle
    /// that is collected without `close()` keeps its watch, like its registration, until the
    /// process exits, so close handles you no longer use. Errors: `E_CLOSED`, `E_IO`.
    #[napi(catch_unwind, ts_args_type = "callback: (change: InboxChange) => void")]
    pub fn watch(&self, callback: WatchCallback) -> Result<(), JsCode> {
        let tsfn = Arc::new(callback);
        let session_id = self.inner.session_id().to_string();
        self.inner
            .watch(Box::new(move || {
                let change = InboxChange {
                    session_id: session_id.clone(),
                };
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    // The return callback receives the JS exception, if any, as Err and drops
                    // it; `call` (without a return callback) would make it fatal.
                    tsfn.call_with_return_value(
                        change,
                        ThreadsafeFunctionCallMode::NonBlocking,
                        |_result, _env| Ok(()),
                    );
                }));
            }))
            .map_err(to_js)
    }

    /// Whether the handle is still whole: open, registered in the root's `registry.json`, and
    /// its watch (if any) alive. `false` after the broker root was deleted (and perhaps
    /// recreated) under it: close it and open a new handle. Never throws.
    #[napi(catch_unwind)]
    pub fn is_healthy(&self) -> bool {
        self.inner.is_healthy()
    }

    /// Stop the watch, if any. Idempotent.
    #[napi(catch_unwind)]
    pub fn unwatch(&self) {
        self.inner.unwatch();
    }

    /// The session ended (deleted in OpenCode): `close()`, then move its undelivered inbox to
    /// `dead-letter.jsonl` with a final `dropped` receipt ("recipient session ended") for each
    /// sender. Returns how many messages were dead-lettered (0 when already closed).
    /// Errors: store codes (the handle is closed regardless).
    #[napi(catch_unwind)]
    pub fn end_session(&self) -> Result<u32, JsCode> {
        self.inner.end_session().map(|n| n as u32).map_err(to_js)
    }

    /// Stop the watcher and unregister (an attached handle stays registered). Idempotent;
    /// later calls fail with `E_CLOSED`. Errors: store codes while unregistering.
    #[napi(catch_unwind)]
    pub fn close(&self) -> Result<(), JsCode> {
        self.inner.close().map_err(to_js)
    }

    /// The plugin's shutdown (instance disposed): stop the watcher and unregister, unless
    /// this session has active pending-reply slots (then the registration is kept so c2c's
    /// M4 guard keeps protecting its alias). Returns `unregistered`, `kept-for-pending-slots`
    /// or `nothing` (attached or already closed). The alias stays in the root's alias book,
    /// so the session gets it back when it registers again. Idempotent; the handle is closed
    /// afterwards. Errors: store codes while unregistering.
    #[napi(
        catch_unwind,
        ts_return_type = "'unregistered' | 'kept-for-pending-slots' | 'nothing'"
    )]
    pub fn shutdown(&self) -> Result<String, JsCode> {
        use crate::broker::ShutdownOutcome::*;
        Ok(match self.inner.shutdown().map_err(to_js)? {
            Unregistered => "unregistered",
            KeptForPendingSlots => "kept-for-pending-slots",
            Nothing => "nothing",
        }
        .to_string())
    }

    /// `close()` for a deleted session: also drop it from the root's alias book, so its
    /// alias may go to a new session. Errors: as `close`.
    #[napi(catch_unwind)]
    pub fn close_and_forget_alias(&self) -> Result<(), JsCode> {
        self.inner.close_and_forget_alias().map_err(to_js)
    }
}
