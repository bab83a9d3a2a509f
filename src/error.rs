//! The core error type. Every variant has a stable [`ErrorCode`], which `src/node/` turns into
//! the JS `err.code` string and the CLI prints with `--json`.
//!
//! Outcomes that callers expect to meet in normal operation (an empty inbox, an unknown perm
//! id in `check_pending_reply`, a message id that is already acknowledged) are values, not
//! errors. An `Error` is something the caller must act on; its message says what to do.

use std::path::PathBuf;

/// Stable machine-readable error codes. Their string forms (`E_…`) are public API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `E_IO`: an I/O failure on a broker-root file.
    Io,
    /// `E_LOCK_TIMEOUT`: a sidecar lock stayed held past the timeout.
    LockTimeout,
    /// `E_STORE_CORRUPT`: a store file cannot be parsed; it was copied aside, nothing was
    /// overwritten.
    StoreCorrupt,
    /// `E_ROOT_INSECURE`: the broker root (or something in it) is not private to this user.
    RootInsecure,
    /// `E_INVALID_ID`: a malformed or reserved alias, session id, room id, perm id or message
    /// id.
    InvalidId,
    /// `E_INVALID_OPTION`: a bad option or environment value.
    InvalidOption,
    /// `E_ALIAS_TAKEN`: a different, alive session holds the alias.
    AliasTaken,
    /// `E_ALIAS_PENDING`: the alias's previous, still-living owner has open pending-reply
    /// slots (c2c's M4 guard).
    AliasPending,
    /// `E_NOT_REGISTERED`: this handle's registration is gone (closed, swept, or replaced).
    NotRegistered,
    /// `E_UNKNOWN_RECIPIENT`: no registration has that alias.
    UnknownRecipient,
    /// `E_RECIPIENT_DEAD`: every registration with that alias is dead.
    RecipientDead,
    /// `E_SEND_TO_SELF`: the recipient is the sender.
    SendToSelf,
    /// `E_EMPTY`: the content is empty or only whitespace.
    Empty,
    /// `E_TOO_LARGE`: the content exceeds the size limit (never truncated).
    TooLarge,
    /// `E_NOT_MEMBER`: the caller is not a member of the room.
    NotMember,
    /// `E_UNKNOWN_ROOM`: no such room.
    UnknownRoom,
    /// `E_DUPLICATE_PERM_ID`: an active pending slot already has that perm id.
    DuplicatePermId,
    /// `E_PENDING_CAP`: a pending-reply cap (per alias or global) is reached.
    PendingCap,
    /// `E_CLOSED`: the handle was closed.
    Closed,
    /// `E_HOP_LIMIT`: the message would exceed the `via` hop limit (relay-loop protection).
    HopLimit,
    /// `E_RATE_LIMITED`: too many messages from this sender to this recipient.
    RateLimited,
    /// `E_NO_SUCH_HELD`: no held message with that number.
    NoSuchHeld,
    /// `E_SESSION_ACTIVE`: the session id is registered by another live process.
    SessionActive,
    /// `E_NOT_INVITED`: the room is invite-only and this alias is neither a member nor
    /// invited (c2c's `join_room` rule).
    NotInvited,
    /// `E_ROOM_EXISTS`: creating a room whose directory already exists.
    RoomExists,
    /// `E_ROOM_DELETE_REFUSED`: c2c's delete rule refuses (not the creator, a room without a
    /// recorded creator and no `force`, or members remain).
    RoomDeleteRefused,
    /// `E_RELAY`: the NATS relay (see `crate::relay`) could not do what was asked: bad
    /// credentials, the server refused, a remote peer unknown, another connector running.
    Relay,
    /// `E_RELAY_BUSY`: another connector already runs for this broker root on this machine
    /// (it holds `relay/connector.lock`); this one may stand by and retry.
    RelayBusy,
}

impl ErrorCode {
    /// The stable string form, e.g. `"E_ALIAS_TAKEN"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Io => "E_IO",
            ErrorCode::LockTimeout => "E_LOCK_TIMEOUT",
            ErrorCode::StoreCorrupt => "E_STORE_CORRUPT",
            ErrorCode::RootInsecure => "E_ROOT_INSECURE",
            ErrorCode::InvalidId => "E_INVALID_ID",
            ErrorCode::InvalidOption => "E_INVALID_OPTION",
            ErrorCode::AliasTaken => "E_ALIAS_TAKEN",
            ErrorCode::AliasPending => "E_ALIAS_PENDING",
            ErrorCode::NotRegistered => "E_NOT_REGISTERED",
            ErrorCode::UnknownRecipient => "E_UNKNOWN_RECIPIENT",
            ErrorCode::RecipientDead => "E_RECIPIENT_DEAD",
            ErrorCode::SendToSelf => "E_SEND_TO_SELF",
            ErrorCode::Empty => "E_EMPTY",
            ErrorCode::TooLarge => "E_TOO_LARGE",
            ErrorCode::NotMember => "E_NOT_MEMBER",
            ErrorCode::UnknownRoom => "E_UNKNOWN_ROOM",
            ErrorCode::DuplicatePermId => "E_DUPLICATE_PERM_ID",
            ErrorCode::PendingCap => "E_PENDING_CAP",
            ErrorCode::Closed => "E_CLOSED",
            ErrorCode::HopLimit => "E_HOP_LIMIT",
            ErrorCode::RateLimited => "E_RATE_LIMITED",
            ErrorCode::NoSuchHeld => "E_NO_SUCH_HELD",
            ErrorCode::SessionActive => "E_SESSION_ACTIVE",
            ErrorCode::NotInvited => "E_NOT_INVITED",
            ErrorCode::RoomExists => "E_ROOM_EXISTS",
            ErrorCode::RoomDeleteRefused => "E_ROOM_DELETE_REFUSED",
            ErrorCode::Relay => "E_RELAY",
            ErrorCode::RelayBusy => "E_RELAY_BUSY",
        }
    }
}

/// Every failure of the core.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error on `path`.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory the operation touched.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A sidecar lock could not be taken in time.
    #[error("lock {} is still held after {waited_ms} ms; another broker process may be hung (see `c2c-bridge doctor`)", path.display())]
    LockTimeout {
        /// The `.lock` file.
        path: PathBuf,
        /// How long we waited, in milliseconds.
        waited_ms: u64,
    },
    /// A store file cannot be parsed.
    #[error("{} cannot be read as JSON ({detail}); it was left as it is{}. Inspect or repair it; c2c-bridge never treats it as empty", path.display(), copy.as_ref().map(|c| format!(" and copied to {}", c.display())).unwrap_or_default())]
    StoreCorrupt {
        /// The unreadable file.
        path: PathBuf,
        /// Where its bytes were copied, when the copy succeeded.
        copy: Option<PathBuf>,
        /// The parser's complaint.
        detail: String,
    },
    /// The root or a path in it is not private.
    #[error("broker root {} is not safe: {reason}", path.display())]
    RootInsecure {
        /// The offending path.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A malformed id.
    #[error("invalid {kind} {value:?}: {reason}")]
    InvalidId {
        /// `alias`, `session id`, `room id`, `perm id` or `message id`.
        kind: &'static str,
        /// The rejected value (as given).
        value: String,
        /// The rule it breaks.
        reason: String,
    },
    /// A bad option or environment value.
    #[error("invalid option {option}: {reason}")]
    InvalidOption {
        /// The option or variable name.
        option: String,
        /// What is wrong.
        reason: String,
    },
    /// The alias belongs to a different, alive session.
    #[error("alias {alias:?} is taken by live session {owner_session_id}; try {suggestion:?}")]
    AliasTaken {
        /// The requested alias.
        alias: String,
        /// The session that holds it.
        owner_session_id: String,
        /// A free alternative (`<alias>-2`, `<alias>-3`, …).
        suggestion: String,
    },
    /// c2c's M4 guard: the alias's previous owner is alive and has open pending slots.
    #[error("register rejected: alias {alias:?} has pending permission requests from a still-alive session ({owner_session_id}); it cannot be re-registered by a different session until they resolve or expire")]
    AliasPending {
        /// The requested alias.
        alias: String,
        /// The alive previous owner.
        owner_session_id: String,
    },
    /// This handle is no longer registered. The text names no API: the plugin and the CLI
    /// add what their reader can do (`peer_list`, `c2c-bridge peers`).
    #[error("session {session_id} is not registered in the broker root {} (closed, swept, or replaced)", root.display())]
    NotRegistered {
        /// This handle's session id.
        session_id: String,
        /// The broker root searched.
        root: PathBuf,
    },
    /// Nobody has that alias.
    #[error(
        "unknown recipient {alias:?}: no session with that alias is registered in the broker root {}", root.display()
    )]
    UnknownRecipient {
        /// The alias asked for.
        alias: String,
        /// The broker root searched.
        root: PathBuf,
    },
    /// All owners of the alias are dead.
    #[error("recipient is not alive: {alias:?} is registered but its process has exited")]
    RecipientDead {
        /// The alias asked for.
        alias: String,
    },
    /// Sending to oneself.
    #[error("cannot send to yourself ({alias:?})")]
    SendToSelf {
        /// Our alias.
        alias: String,
    },
    /// Empty content.
    #[error("message content is empty")]
    Empty,
    /// Content over the limit.
    #[error("message content is {size} bytes of UTF-8, over the {limit}-byte limit; it was not sent (never truncated) — split it or raise maxMessageBytes")]
    TooLarge {
        /// The content's size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// Not in the room.
    #[error("you are not a member of room {room_id:?}; join it first")]
    NotMember {
        /// The room.
        room_id: String,
    },
    /// No such room.
    #[error("unknown room {room_id:?}")]
    UnknownRoom {
        /// The room.
        room_id: String,
    },
    /// Duplicate active perm id.
    #[error("open_pending_reply rejected: perm_id {perm_id:?} already has an active pending slot")]
    DuplicatePermId {
        /// The perm id.
        perm_id: String,
    },
    /// A pending cap was reached; `message` is c2c's text, word for word.
    #[error("{message}")]
    PendingCap {
        /// c2c's rejection text.
        message: String,
    },
    /// The handle was closed.
    #[error("this broker handle is closed")]
    Closed,
    /// The hop limit would be exceeded.
    #[error("refused: message {message_id} would be hop {would_be} of a peer-message chain limited to {max} hops (relay-loop protection); a turn the user types starts a new chain")]
    HopLimit {
        /// The id the refused message would have had (its receipt names it).
        message_id: String,
        /// The hop number it would have had (1-based).
        would_be: usize,
        /// The limit.
        max: usize,
    },
    /// Rate limited.
    #[error("rate limited: too many messages to {to_alias:?}; retry in {retry_after_s:.1} s")]
    RateLimited {
        /// The recipient.
        to_alias: String,
        /// Seconds until one more message is allowed.
        retry_after_s: f64,
    },
    /// The session id belongs to another live process.
    #[error("session {session_id} is registered by another live process (pid {pid}); a session id is bound to one process until it exits — use attach to act for it from a CLI")]
    SessionActive {
        /// The session id.
        session_id: String,
        /// The live process holding it.
        pid: u32,
    },
    /// No held message with that number.
    #[error("no held message number {index}; list the held messages (/peers-inbox, or `c2c-bridge held`) and use a number from that list")]
    NoSuchHeld {
        /// The 1-based number asked for.
        index: usize,
    },
    /// An invite-only room refused a join; `reason` is c2c's text.
    #[error("{reason}; ask a member to invite you")]
    NotInvited {
        /// The room.
        room_id: String,
        /// c2c's refusal text.
        reason: String,
    },
    /// The room already exists.
    #[error("room {room_id:?} already exists; join it instead")]
    RoomExists {
        /// The room.
        room_id: String,
    },
    /// c2c's delete rule refused; `reason` says which part.
    #[error("{reason}")]
    RoomDeleteRefused {
        /// The room.
        room_id: String,
        /// c2c's refusal text.
        reason: String,
    },
    /// The NATS relay failed; `reason` says what and what to do.
    #[error("relay: {reason}")]
    Relay {
        /// What failed, in words.
        reason: String,
    },
    /// Another connector holds the root's relay lock.
    #[error(
        "another relay connector runs for this broker root ({lock} is locked); this one stands by"
    )]
    RelayBusy {
        /// The lock file.
        lock: PathBuf,
    },
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Io { .. } => ErrorCode::Io,
            Error::LockTimeout { .. } => ErrorCode::LockTimeout,
            Error::StoreCorrupt { .. } => ErrorCode::StoreCorrupt,
            Error::RootInsecure { .. } => ErrorCode::RootInsecure,
            Error::InvalidId { .. } => ErrorCode::InvalidId,
            Error::InvalidOption { .. } => ErrorCode::InvalidOption,
            Error::AliasTaken { .. } => ErrorCode::AliasTaken,
            Error::AliasPending { .. } => ErrorCode::AliasPending,
            Error::NotRegistered { .. } => ErrorCode::NotRegistered,
            Error::UnknownRecipient { .. } => ErrorCode::UnknownRecipient,
            Error::RecipientDead { .. } => ErrorCode::RecipientDead,
            Error::SendToSelf { .. } => ErrorCode::SendToSelf,
            Error::Empty => ErrorCode::Empty,
            Error::TooLarge { .. } => ErrorCode::TooLarge,
            Error::NotMember { .. } => ErrorCode::NotMember,
            Error::UnknownRoom { .. } => ErrorCode::UnknownRoom,
            Error::DuplicatePermId { .. } => ErrorCode::DuplicatePermId,
            Error::PendingCap { .. } => ErrorCode::PendingCap,
            Error::Closed => ErrorCode::Closed,
            Error::HopLimit { .. } => ErrorCode::HopLimit,
            Error::RateLimited { .. } => ErrorCode::RateLimited,
            Error::NoSuchHeld { .. } => ErrorCode::NoSuchHeld,
            Error::SessionActive { .. } => ErrorCode::SessionActive,
            Error::NotInvited { .. } => ErrorCode::NotInvited,
            Error::RoomExists { .. } => ErrorCode::RoomExists,
            Error::RoomDeleteRefused { .. } => ErrorCode::RoomDeleteRefused,
            Error::Relay { .. } => ErrorCode::Relay,
            Error::RelayBusy { .. } => ErrorCode::RelayBusy,
        }
    }

    /// Shorthand for [`Error::Io`], except that `ELOOP` — what an `O_NOFOLLOW` open returns
    /// when a symlink stands where a broker file should be — becomes [`Error::RootInsecure`]
    /// naming the link.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        let path = path.into();
        if source.raw_os_error() == Some(nix::libc::ELOOP) {
            return Error::RootInsecure {
                reason: format!(
                    "{} is a symlink; c2c-bridge never follows symlinks inside the broker root. Remove it",
                    path.display()
                ),
                path,
            };
        }
        Error::Io { path, source }
    }
}

/// Result alias for the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;
