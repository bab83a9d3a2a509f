//! The turn index and the `parentID` walk: was the turn that raised a permission request
//! started by an injected peer message?
//!
//! One [`TurnIndex`] lives in each plugin instance. The plugin feeds it OpenCode events
//! (`message.updated`, `message.part.updated`, `session.created`/`session.updated`,
//! `session.status`/`session.idle`) and asks [`TurnIndex::provenance`] when a
//! `permission.asked` / `permission.v2.asked` event names a tool's assistant message.
//!
//! Units: every time here is an OpenCode time, **epoch milliseconds** ([`EpochMs`]), as in
//! `info.time.created`. Status observations are stamped by the plugin with `Date.now()` when
//! it receives the event; OpenCode and the plugin share one process, hence one clock.
//!
//! # The walk
//!
//! permission → the tool's assistant message `A` (`tool.messageID` / `source.messageID`) →
//! `A.parentID`, the user message `U` that the loop was processing when it created `A` →
//! did `U` *start* a loop, or was it *folded* into a loop that was already running? If it
//! started one, `U` is the turn's origin: a peer turn iff `U` carries
//! `metadata.peerMessage`. If it was folded, the origin is the origin of the running loop,
//! found by walking on from that loop's latest step. A `task` child session's turn that was
//! started by the parent's task tool takes the origin of the parent's step that made the
//! `task` call (see "Task child sessions").
//!
//! # The folding rule (OpenCode 1.18.33)
//!
//! OpenCode's loop re-reads the session before each step and continues while the last
//! assistant step finished with `"tool-calls"`/`"unknown"` (or has no finish), or while a user
//! message newer than that step exists; every later step's `parentID` is the *newest* user
//! message. So a message created while a loop runs is folded into it (the busy-session
//! hazard). For a user message `U` of session `S`, let `A` be the latest assistant message of
//! `S` created before `U` (not counting `U`'s own steps). At `t = U.time.created`:
//!
//! - **surely running**: `A.created < t` and `A` has not completed by `t` (`time.completed`
//!   missing or later than `t`). A step was in progress; the loop must pick `U` up.
//! - **surely idle**: there is no `A` and the index holds the session's whole relevant
//!   history ([`TurnIndex::mark_history_complete`], `session.created` seen, or
//!   [`Limits::instance_started_ms`]); or `A` ended the loop (it has an error, or a finish
//!   other than `"tool-calls"`/`"unknown"`) and completed at least [`Limits::settle_ms`]
//!   before `t`; or `A` completed and an `idle` status was observed between `A`'s completion
//!   and `t`; or `A` was created before the plugin instance started (no loop outlives its
//!   instance: OpenCode aborts an instance's loops when it disposes it).
//! - anything else (between two steps, a millisecond tie, just after a loop-ending step, a
//!   gap in the history) is **uncertain**.
//!
//! Then: an **unmarked** `U` (typed by the user, or a `task` prompt) is folded only if the
//! loop was *surely running*; a **peer-marked** `U` starts its own turn only if the session
//! was *surely idle* **and no earlier user message is still unanswered** (created after `A`,
//! in `(created, id)` order: OpenCode's ids ascend with creation), and is otherwise treated as
//! folded into the loop of `A`, or into the turn of that earliest unanswered message (the
//! busy race: the user's prompt is written, the plugin injects before OpenCode's loop made
//! its first step, and that step names the peer message as its parent; seen live with
//! two concurrent `prompt_async` calls, user first: the peer message came 160–230 ms later
//! and the one step named it). An unmarked message behind an unanswered one is folded into
//! that one's turn the same way. A user message that never gets a loop (`noReply`) thus
//! makes later messages folded: never decided by peer policy, the safe side.
//!
//! Why asymmetric: a mistake can only hurt in one direction. Calling a turn peer-triggered
//! lets `peerPermissions=allow` approve its tools without the user seeing them, so a user's
//! turn must never be called peer-triggered on uncertain evidence. Calling a peer turn local
//! only shows the user OpenCode's own prompt. So every uncertainty resolves towards "local".
//!
//! A peer message folded into the user's running turn takes the user's origin (local): a
//! peer cannot turn the user's loop into a peer turn. A **user message folded into a running
//! peer turn** keeps the peer mark (who started the loop, for logs and `via` chains) but the
//! walk records the fold, and the answer is [`Basis::UserFoldedIntoPeerTurn`]: from then on
//! the turn carries the user's own words, and peer policy decides none of its requests in
//! any mode (issue 19). The walk from any later step passes through the folded message
//! (every later step's parent is it or a newer message folded after it), so this holds for
//! the rest of the turn.
//!
//! # Compaction (OpenCode 1.18.33 `SessionCompaction`)
//!
//! On overflow the loop itself writes a compaction request (a user message with a
//! `compaction` part, `auto: true`), a summary step (`summary: true`, parent the request),
//! then either a copy of the last user message (parts and peer mark included) or a synthetic
//! "continue" message (text part `metadata.compaction_continue: true`), and goes on. The
//! automatic request and the continue message are folded into the loop of the step before
//! them (they are the loop's own writes); the summary step belongs to its request. The
//! origin is kept and the basis is [`Basis::Compaction`]: a compacted peer turn stays a peer
//! turn (under `deny` its requests are still rejected and logged `provenance: peer`, never
//! shown to the user as an ordinary prompt). The user's own `/compact` (`auto: false`) is
//! the user's action: local on an idle session, a user fold on a running peer turn.
//!
//! # Task child sessions
//!
//! OpenCode 1.18.33's task tool, once it has created (or resumed) the child session, updates
//! its running tool part to `state.metadata = {parentSessionId, sessionId: <child>, model}`
//! with `state.time.start` *before* it writes the child's prompt; the completed part adds
//! `state.time.end` (seen live with the e2e harness). An unmarked user message `U` that
//! starts a turn in child session `C` was written by a task call iff a task part naming `C`
//! ran at `U`'s creation (`start ≤ t ≤ end`) and `U` is the first user message of `C`
//! created at or after that call's start; it then inherits the origin of the parent's step
//! that made the call. Any other turn in a child session was typed by the user: local. If
//! the parent's parts are not held and cannot be fetched, the answer is
//! [`Basis::ChildOriginUnknown`]: local, so never auto-approved and never auto-rejected.
//!
//! # Missing data
//!
//! When the walk needs a message the index lacks, [`TurnIndex::provenance`] answers
//! [`Lookup::NeedMessage`]; for a session whose parent or history is unknown,
//! [`Lookup::NeedSession`]. The plugin fetches it once, feeds it and asks again. Each id is
//! asked for at most once (a bounded memory of ids): a second miss resolves to local
//! ([`Basis::Missing`], [`Basis::ChildOriginUnknown`]). The walk is bounded by
//! [`Limits::max_hops`] and cycle-safe.
//!
//! # Memory
//!
//! At most [`Limits::max_messages`] messages and [`Limits::max_sessions`] sessions. Over
//! either cap the least recently active session is forgotten whole; if the session being
//! fed is the only one left, its oldest messages are dropped and its history is marked
//! trimmed (walks reaching into the dropped part ask for it again). Part marks that arrive
//! before their message are kept, at most `max_messages` of them, oldest dropped first.

use std::collections::{HashMap, HashSet, VecDeque};

/// Epoch milliseconds, as OpenCode writes `time.created` / `time.completed` (JS `Date.now()`).
pub type EpochMs = i64;

/// The role of an OpenCode message (`info.role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `"user"`: typed by the user, injected with `promptAsync`, or a `task` prompt.
    User,
    /// `"assistant"`: one step of the model loop.
    Assistant,
}

/// The facts of one OpenCode message (`message.updated` → `properties.info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageInfo {
    /// `info.id` (`msg_…`).
    pub id: String,
    /// `info.sessionID` (`ses_…`).
    pub session_id: String,
    /// `info.role`.
    pub role: Role,
    /// `info.parentID`: for an assistant message, the user message its loop was processing
    /// when the step was created. `None` for user messages.
    pub parent_id: Option<String>,
    /// `info.time.created`, epoch milliseconds.
    pub created_ms: EpochMs,
    /// `info.time.completed`, epoch milliseconds; `None` while the step runs.
    pub completed_ms: Option<EpochMs>,
    /// `info.finish` (assistant only), e.g. `"tool-calls"`, `"stop"`, `"length"`.
    pub finish: Option<String>,
    /// Whether `info.error` is set (assistant only): an errored or aborted step ends its loop.
    pub error: bool,
    /// Whether `info.summary` is true (a compaction summary).
    pub summary: bool,
}

/// The `metadata.peerMessage` that c2c-bridge writes on the part of an injected message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerMark {
    /// `peerMessage.messageId`: the c2c message id.
    pub message_id: String,
    /// `peerMessage.from`: the sender's alias.
    pub from: String,
    /// `peerMessage.via`: the hop list the message carried (see [`crate::policy::hops`]).
    pub via: Vec<String>,
}

/// Why a walk ended where it did (for logs and tests; the decision uses only
/// [`Provenance::peer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The turn was started by an unmarked user message: the user's own turn.
    UserTurn,
    /// The turn was started by a message carrying `metadata.peerMessage`.
    PeerTurn,
    /// The walk passed through a compaction (an automatic compaction request, its summary
    /// step or OpenCode's synthetic "continue" message): the turn keeps the origin of the
    /// loop that was compacted ([`Provenance::peer`] says which). A compaction the user asked
    /// for on an idle session is local with this basis.
    Compaction,
    /// A message or session was missing even after one fetch: local.
    Missing,
    /// The walk exceeded [`Limits::max_hops`] or met a cycle: local.
    Limit,
    /// The tool message belongs to another session than the permission request: local.
    SessionMismatch,
    /// A user (unmarked, non-synthetic) message was folded into a loop that a peer message
    /// started. [`Provenance::peer`] keeps the peer mark (for logs and `via` chains), but the
    /// turn now carries the user's own words: it is never decided by peer policy (issue 19).
    UserFoldedIntoPeerTurn,
    /// A user message starts a turn in a `task` child session and the index cannot tell
    /// whether the parent's `task` call wrote it (the parent's task part was not seen and
    /// could not be fetched): local, and never decided by peer policy.
    ChildOriginUnknown,
}

/// The answer of a finished walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// The mark of the peer message that started the turn; `None` for a local turn.
    pub peer: Option<PeerMark>,
    /// Why the walk ended here.
    pub basis: Basis,
    /// Whether the walk passed through at least one folded message (busy-session case).
    pub folded: bool,
    /// Whether the origin was inherited from a parent session (`task` child session).
    pub inherited: bool,
}

impl Provenance {
    /// Whether the turn was started by a peer message. It may be decided by peer policy
    /// only when [`Provenance::peer_policy_applies`] also holds.
    pub fn is_peer_triggered(&self) -> bool {
        self.peer.is_some()
    }

    /// Whether `peerPermissions` may decide this turn's requests: it was started by a peer
    /// message and no user message was folded into it ([`Basis::UserFoldedIntoPeerTurn`]).
    pub fn peer_policy_applies(&self) -> bool {
        self.peer.is_some() && self.basis != Basis::UserFoldedIntoPeerTurn
    }

    /// A local answer with the given basis.
    pub fn local(basis: Basis) -> Self {
        Provenance {
            peer: None,
            basis,
            folded: false,
            inherited: false,
        }
    }
}

/// The answer of [`TurnIndex::provenance`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The walk finished.
    Resolved(Provenance),
    /// Fetch this message (`client.session.message({path:{id: session, messageID}})`), feed
    /// its info with [`TurnIndex::observe_message`] and its parts' marks with
    /// [`TurnIndex::observe_peer_part`] / [`TurnIndex::observe_compaction_part`], then ask
    /// again. If it cannot be fetched, just ask again: it then counts as missing.
    NeedMessage {
        /// The session the message belongs to (as far as the walk knows).
        session_id: String,
        /// The missing message id.
        message_id: String,
    },
    /// Fetch this session's info (`client.session.get`) and feed it with
    /// [`TurnIndex::observe_session`], fetch its messages (`client.session.messages`) and
    /// feed them all, then call [`TurnIndex::mark_history_complete`] and ask again.
    NeedSession(String),
}

/// The bounds of a [`TurnIndex`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Most messages held (default 20 000).
    pub max_messages: usize,
    /// Most sessions held (default 1 024).
    pub max_sessions: usize,
    /// Most messages and sessions one walk visits before resolving to local (default 64).
    pub max_hops: usize,
    /// How long after a loop-ending step completes a new user message may still have been
    /// folded into that loop, in milliseconds (default 2 000). Only an `idle` status
    /// observation shortens it. See the module doc.
    pub settle_ms: EpochMs,
    /// When this plugin instance started (epoch ms, `Date.now()` when the plugin function
    /// ran), if known. No loop outlives its instance, so steps created before it are not
    /// running any more. `None` disables that rule (more [`Lookup::NeedSession`]s).
    pub instance_started_ms: Option<EpochMs>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_messages: 20_000,
            max_sessions: 1_024,
            max_hops: 64,
            settle_ms: 2_000,
            instance_started_ms: None,
        }
    }
}

/// How much of a session's history the index is sure to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum History {
    /// Nothing is known to be complete.
    Unknown,
    /// Every message created at or after `since` is held, and no loop running at any time
    /// at or after `since` started before it.
    Complete { since: EpochMs },
    /// Messages created before `since` were dropped by the memory bound.
    Trimmed { since: EpochMs },
}

#[derive(Debug)]
struct Msg {
    session: String,
    role: Role,
    parent: Option<String>,
    created: EpochMs,
    completed: Option<EpochMs>,
    finish: Option<String>,
    error: bool,
    summary: bool,
}

impl Msg {
    /// Whether this assistant step ends its loop once completed.
    fn ends_loop(&self) -> bool {
        self.error
            || self
                .finish
                .as_deref()
                .is_some_and(|f| f != "tool-calls" && f != "unknown")
    }
}

#[derive(Debug)]
struct Sess {
    /// `None`: not known yet; `Some(None)`: top level; `Some(Some(p))`: child of `p`.
    parent: Option<Option<String>>,
    history: History,
    /// Assistant messages sorted by (created, id).
    assistants: Vec<(EpochMs, String)>,
    /// User messages sorted by (created, id). OpenCode's message ids ascend with creation,
    /// so `(created, id)` is creation order even within one millisecond.
    users: Vec<(EpochMs, String)>,
    /// All held message ids in arrival order (for trimming).
    order: VecDeque<String>,
    /// Recent `idle` status stamps, oldest first.
    idles: VecDeque<EpochMs>,
    /// Activity counter value of the last event for this session (for eviction).
    last_active: u64,
}

impl Sess {
    /// Remove a message from the sorted list of its role.
    fn unlist(&mut self, role: Role, created: EpochMs, id: &str) {
        let list = match role {
            Role::Assistant => &mut self.assistants,
            Role::User => &mut self.users,
        };
        let key = (created, id.to_string());
        if let Ok(at) = list.binary_search(&key) {
            list.remove(at);
        }
    }

    /// Whether every message created at or after `t` is held.
    fn holds_from(&self, t: EpochMs) -> bool {
        match self.history {
            History::Complete { since } | History::Trimmed { since } => since <= t,
            History::Unknown => false,
        }
    }
}

const IDLES_KEPT: usize = 16;

/// A bounded memory of ids, oldest forgotten first.
#[derive(Debug, Default)]
struct BoundedSet {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl BoundedSet {
    fn insert(&mut self, id: String, cap: usize) -> bool {
        if self.set.contains(&id) {
            return false;
        }
        self.set.insert(id.clone());
        self.order.push_back(id);
        while self.order.len() > cap.max(1) {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        true
    }

    fn contains(&self, id: &str) -> bool {
        self.set.contains(id)
    }
}

/// One `task` tool call of a parent session's step, as its tool part shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TaskCall {
    /// The parent's assistant step that made the call (`part.messageID`).
    step: String,
    /// `part.callID`.
    call: String,
    /// `state.time.start`, epoch ms.
    start: EpochMs,
    /// `state.time.end`, epoch ms; `None` while the call runs.
    end: Option<EpochMs>,
}

/// The per-plugin-instance index of messages, sessions and peer marks. See the module doc.
#[derive(Debug)]
pub struct TurnIndex {
    limits: Limits,
    messages: HashMap<String, Msg>,
    sessions: HashMap<String, Sess>,
    peer_marks: HashMap<String, PeerMark>,
    peer_mark_order: VecDeque<String>,
    compaction: BoundedSet,
    /// Compaction requests whose part says `auto: true` (OpenCode created them inside a loop).
    compaction_auto: BoundedSet,
    /// Messages with a synthetic text part `metadata.compaction_continue: true`.
    continuations: BoundedSet,
    /// `task` calls by the child session they ran (`state.metadata.sessionId`).
    tasks: HashMap<String, Vec<TaskCall>>,
    /// `(child, step, call)` in arrival order, for the memory bound.
    task_order: VecDeque<(String, String, String)>,
    asked: BoundedSet,
    tick: u64,
}

impl TurnIndex {
    /// An empty index with these bounds.
    pub fn new(limits: Limits) -> Self {
        TurnIndex {
            limits,
            messages: HashMap::new(),
            sessions: HashMap::new(),
            peer_marks: HashMap::new(),
            peer_mark_order: VecDeque::new(),
            compaction: BoundedSet::default(),
            compaction_auto: BoundedSet::default(),
            continuations: BoundedSet::default(),
            tasks: HashMap::new(),
            task_order: VecDeque::new(),
            asked: BoundedSet::default(),
            tick: 0,
        }
    }

    /// The bounds this index was built with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Number of messages held.
    pub fn message_count(&self) -> usize {
        self.messages.len()
    }

    /// Number of sessions held.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    fn default_history(&self) -> History {
        match self.limits.instance_started_ms {
            Some(since) => History::Complete { since },
            None => History::Unknown,
        }
    }

    fn touch(&mut self, session_id: &str) -> &mut Sess {
        self.tick += 1;
        let tick = self.tick;
        let history = self.default_history();
        let s = self
            .sessions
            .entry(session_id.to_string())
            .or_insert_with(|| Sess {
                parent: None,
                history,
                assistants: Vec::new(),
                users: Vec::new(),
                order: VecDeque::new(),
                idles: VecDeque::new(),
                last_active: tick,
            });
        s.last_active = tick;
        s
    }

    /// Feed a `session.updated` event (or a fetched session): `parent_session_id` is
    /// `info.parentID`, set for `task` child sessions.
    pub fn observe_session(&mut self, session_id: &str, parent_session_id: Option<&str>) {
        let s = self.touch(session_id);
        s.parent = Some(parent_session_id.map(str::to_string));
        self.enforce_bounds(session_id);
    }

    /// Feed a `session.created` event. Like [`TurnIndex::observe_session`], and the index
    /// now knows it will see the session's whole history.
    pub fn observe_session_created(&mut self, session_id: &str, parent_session_id: Option<&str>) {
        let s = self.touch(session_id);
        s.parent = Some(parent_session_id.map(str::to_string));
        if !matches!(s.history, History::Trimmed { .. }) {
            s.history = History::Complete {
                since: EpochMs::MIN,
            };
        }
        self.enforce_bounds(session_id);
    }

    /// Declare that every message of `session_id` has been fed (after a full fetch).
    pub fn mark_history_complete(&mut self, session_id: &str) {
        let s = self.touch(session_id);
        if !matches!(s.history, History::Trimmed { .. }) {
            s.history = History::Complete {
                since: EpochMs::MIN,
            };
        }
        self.enforce_bounds(session_id);
    }

    /// Feed a `session.status` event (`busy` is `status.type == "busy"` or `"retry"`) or a
    /// `session.idle` event (`busy = false`), stamped `at_ms = Date.now()` on receipt.
    /// Only `idle` observations are used as evidence (see the module doc): `busy` is
    /// published once per loop, not per step, and says nothing about folding.
    pub fn observe_status(&mut self, session_id: &str, busy: bool, at_ms: EpochMs) {
        let s = self.touch(session_id);
        if !busy {
            s.idles.push_back(at_ms);
            while s.idles.len() > IDLES_KEPT {
                s.idles.pop_front();
            }
        }
        self.enforce_bounds(session_id);
    }

    /// Feed a `message.updated` event (or a fetched message). Repeated updates of one
    /// message (e.g. its completion) replace the earlier facts.
    pub fn observe_message(&mut self, info: MessageInfo) {
        let MessageInfo {
            id,
            session_id,
            role,
            parent_id,
            created_ms,
            completed_ms,
            finish,
            error,
            summary,
        } = info;
        if let Some(old) = self.messages.get_mut(&id) {
            if old.session == session_id && old.role == role && old.created == created_ms {
                old.parent = parent_id;
                old.completed = completed_ms;
                old.finish = finish;
                old.error = error;
                old.summary = summary;
                self.touch(&session_id);
                return;
            }
            self.remove_message(&id);
        }
        let s = self.touch(&session_id);
        s.order.push_back(id.clone());
        let key = (created_ms, id.clone());
        let list = match role {
            Role::Assistant => &mut s.assistants,
            Role::User => &mut s.users,
        };
        let at = list.partition_point(|k| *k < key);
        list.insert(at, key);
        self.messages.insert(
            id,
            Msg {
                session: session_id.clone(),
                role,
                parent: parent_id,
                created: created_ms,
                completed: completed_ms,
                finish,
                error,
                summary,
            },
        );
        self.enforce_bounds(&session_id);
    }

    /// Feed a `message.part.updated` event whose part has `metadata.peerMessage`: the
    /// message `message_id` is an injected peer message. May arrive before the message.
    pub fn observe_peer_part(&mut self, message_id: &str, session_id: &str, mark: PeerMark) {
        self.touch(session_id);
        self.enforce_bounds(session_id);
        if self
            .peer_marks
            .insert(message_id.to_string(), mark)
            .is_none()
        {
            self.peer_mark_order.push_back(message_id.to_string());
            while self.peer_mark_order.len() > self.limits.max_messages.max(1) {
                if let Some(old) = self.peer_mark_order.pop_front() {
                    self.peer_marks.remove(&old);
                }
            }
        }
    }

    /// Feed a `message.part.updated` event whose part has `type: "compaction"`: the message
    /// `message_id` asks for a compaction. `auto` is the part's `auto` (OpenCode 1.18.33
    /// `SessionCompaction.create`: `true` when the loop itself compacts on overflow, `false`
    /// for the user's `/compact`). May arrive before the message.
    pub fn observe_compaction_part(&mut self, message_id: &str, session_id: &str, auto: bool) {
        self.touch(session_id);
        self.enforce_bounds(session_id);
        let cap = self.limits.max_messages;
        self.compaction.insert(message_id.to_string(), cap);
        if auto {
            self.compaction_auto.insert(message_id.to_string(), cap);
        }
    }

    /// Feed a `message.part.updated` event whose part is a synthetic text part with
    /// `metadata.compaction_continue: true`: OpenCode 1.18.33 writes it on the user message
    /// it adds after an automatic compaction to continue the compacted loop. May arrive
    /// before the message.
    pub fn observe_compaction_continue_part(&mut self, message_id: &str, session_id: &str) {
        self.touch(session_id);
        self.enforce_bounds(session_id);
        self.continuations
            .insert(message_id.to_string(), self.limits.max_messages);
    }

    /// Feed a `message.part.updated` event of a `task` tool part that names its child
    /// session. Seen live with OpenCode 1.18.33: once the task tool has created (or resumed)
    /// the child session it updates its running part to `state.metadata = {parentSessionId,
    /// sessionId: <child>, model}` with `state.time.start`, *before* it writes the child's
    /// prompt; the completed part keeps the metadata and adds `state.time.end`.
    /// `step_message_id` is `part.messageID` (the parent's step), `call_id` `part.callID`.
    /// Repeated updates of one call keep the earliest start and the end of the latest update.
    pub fn observe_task_part(
        &mut self,
        step_message_id: &str,
        call_id: &str,
        parent_session_id: &str,
        child_session_id: &str,
        start_ms: EpochMs,
        end_ms: Option<EpochMs>,
    ) {
        self.touch(parent_session_id);
        self.enforce_bounds(parent_session_id);
        let calls = self.tasks.entry(child_session_id.to_string()).or_default();
        if let Some(c) = calls
            .iter_mut()
            .find(|c| c.step == step_message_id && c.call == call_id)
        {
            // The earliest start seen: a later update must not move the window past the
            // prompt the call wrote (that would only make the child's turn local, but still).
            c.start = c.start.min(start_ms);
            c.end = end_ms;
            return;
        }
        calls.push(TaskCall {
            step: step_message_id.to_string(),
            call: call_id.to_string(),
            start: start_ms,
            end: end_ms,
        });
        self.task_order.push_back((
            child_session_id.to_string(),
            step_message_id.to_string(),
            call_id.to_string(),
        ));
        while self.task_order.len() > self.limits.max_messages.max(1) {
            let Some((child, step, call)) = self.task_order.pop_front() else {
                break;
            };
            if let Some(v) = self.tasks.get_mut(&child) {
                v.retain(|c| !(c.step == step && c.call == call));
                if v.is_empty() {
                    self.tasks.remove(&child);
                }
            }
        }
    }

    /// Forget a session and its messages (`session.deleted`, or the plugin's own cleanup).
    pub fn forget_session(&mut self, session_id: &str) {
        if let Some(s) = self.sessions.remove(session_id) {
            for id in s.order {
                self.messages.remove(&id);
                self.peer_marks.remove(&id);
            }
        }
    }

    fn remove_message(&mut self, id: &str) {
        if let Some(m) = self.messages.remove(id) {
            if let Some(s) = self.sessions.get_mut(&m.session) {
                s.unlist(m.role, m.created, id);
                if let Some(pos) = s.order.iter().position(|x| x == id) {
                    s.order.remove(pos);
                }
            }
        }
    }

    fn enforce_bounds(&mut self, current: &str) {
        while self.sessions.len() > self.limits.max_sessions.max(1)
            || self.messages.len() > self.limits.max_messages.max(1)
        {
            let victim = self
                .sessions
                .iter()
                .filter(|(id, _)| id.as_str() != current)
                .min_by_key(|(_, s)| s.last_active)
                .map(|(id, _)| id.clone());
            match victim {
                Some(v) => self.forget_session(&v),
                None => {
                    // Only the current session is left: drop its oldest message.
                    let Some(s) = self.sessions.get_mut(current) else {
                        return;
                    };
                    let Some(old) = s.order.pop_front() else {
                        return;
                    };
                    if let Some(m) = self.messages.remove(&old) {
                        s.unlist(m.role, m.created, &old);
                        let cut = m.created.saturating_add(1);
                        s.history = match s.history {
                            History::Trimmed { since } => History::Trimmed {
                                since: since.max(cut),
                            },
                            History::Complete { .. } => History::Trimmed { since: cut },
                            History::Unknown => History::Unknown,
                        };
                    }
                    self.peer_marks.remove(&old);
                }
            }
        }
    }
}

mod walk;

#[cfg(test)]
mod tests;
