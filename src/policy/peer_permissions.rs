//! `peerPermissions`: what the plugin does with a permission request raised by a turn that
//! an injected peer message started.
//!
//! The inputs are typed and local: the request's kind and ids, the turn's
//! [`Provenance`], the local mode and the guardrail's verdict.
//! Message text is never an input.
//!
//! | turn            | `allow`                               | `ask`   | `deny`        |
//! |-----------------|---------------------------------------|---------|---------------|
//! | typed by user   | leave                                 | leave   | leave         |
//! | peer-triggered  | reply `once` (leave if guardrail hit) | leave   | reply `reject`|
//! | peer-triggered, a user message folded in | leave        | leave   | leave         |
//!
//! A user message folded into a running peer turn ([`Basis::UserFoldedIntoPeerTurn`]) puts
//! the user's own words into that turn: from then on its requests get the user's own prompt
//! in every mode (issue 19). A turn whose origin could not be told
//! ([`Basis::ChildOriginUnknown`] and the other local bases) is left alone too: never
//! approved, never rejected on the user's behalf.
//!
//! "Leave" means the plugin sends no reply, so OpenCode's own prompt decides.
//!
//! # Never `always`
//!
//! [`Decision`] has no variant that replies `"always"`, so no code path can send it.
//! OpenCode 1.18.33: `always` adds allow rules that outlive the turn and widen what every
//! later turn (the user's included) may do without a prompt. A peer turn may at most get
//! this one request approved.
//!
//! # `reject` rejects more than one request
//!
//! OpenCode 1.18.33: replying `reject` also rejects every other pending request of the same
//! session. One session runs one loop at a time, so those requests belong to the same
//! (peer-triggered) turn; a `task` child session is a separate session and is not affected.
//!
//! # What the caller checks first
//!
//! The caller (the plugin's permission handler) answers only requests of sessions this
//! plugin instance owns: OpenCode sends events only for the instance's directory, and the
//! handler additionally compares the request's session (or its root parent session) with
//! the sessions it registered. It also asks [`AnsweredSet::first_time`] before replying, so
//! one request id is answered at most once even when events repeat.

use std::collections::{HashSet, VecDeque};

use super::{resolve_setting, InvalidSetting, SettingSource};
#[cfg(doc)]
use crate::provenance::Basis;
use crate::provenance::Provenance;

/// The environment variable that overrides the `peerPermissions` plugin option.
pub const ENV_PEER_PERMISSIONS: &str = "C2C_BRIDGE_PEER_PERMISSIONS";

/// The local `peerPermissions` mode. Ordered from the most open to the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum PeerPermissions {
    /// `"allow"` (default): approve peer-triggered requests `once`, unless the guardrail trips.
    #[default]
    Allow,
    /// `"ask"`: leave every request to OpenCode's prompt.
    Ask,
    /// `"deny"`: reject peer-triggered requests.
    Deny,
}

const TABLE: &[(&str, PeerPermissions)] = &[
    ("allow", PeerPermissions::Allow),
    ("ask", PeerPermissions::Ask),
    ("deny", PeerPermissions::Deny),
];
/// The words of the `peerPermissions` setting (plugin options validation uses them too).
pub const VALID: &[&str] = &["allow", "ask", "deny"];

impl PeerPermissions {
    /// The mode's configuration word.
    pub fn as_str(self) -> &'static str {
        match self {
            PeerPermissions::Allow => "allow",
            PeerPermissions::Ask => "ask",
            PeerPermissions::Deny => "deny",
        }
    }

    /// The effective mode from the plugin option `peerPermissions` and the environment
    /// variable [`ENV_PEER_PERMISSIONS`] (which wins). Unknown values are an error naming
    /// the valid ones; blank values count as unset; case is ignored.
    pub fn resolve(
        option: Option<&str>,
        env: Option<&str>,
    ) -> Result<(PeerPermissions, SettingSource), InvalidSetting> {
        resolve_setting(
            "peerPermissions",
            ENV_PEER_PERMISSIONS,
            TABLE,
            VALID,
            option,
            env,
        )
    }
}

/// Which OpenCode event raised the request; defined with its decoder.
pub use crate::opencode::PermissionEventKind;

/// The typed facts of one permission request. No free text from the request is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PermissionRequestFacts<'a> {
    /// Which event raised it.
    pub kind: PermissionEventKind,
    /// The request id (`id`, `per_…`).
    pub request_id: &'a str,
    /// The session that asks (`sessionID`); a `task` child session's own id.
    pub session_id: &'a str,
    /// The permission (`permission` for v1, `action` for v2), e.g. `"bash"`, `"edit"`.
    pub permission: &'a str,
}

/// Why the plugin sends no reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaveReason {
    /// The user's own turn (or one whose origin could not be told): never touched.
    LocalTurn,
    /// A user message was folded into the running peer turn ([`Basis::UserFoldedIntoPeerTurn`]).
    UserFoldedIntoPeerTurn,
    /// `peerPermissions = ask`.
    AskMode,
    /// `peerPermissions = allow`, but the protected-path guardrail tripped.
    Guardrail {
        /// The guardrail's category, e.g. `"protected-path"`.
        category: String,
    },
}

/// What to do with one permission request. There is deliberately no "always" variant
/// (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Reply `"once"`: approve this request only.
    ReplyOnce,
    /// Reply `"reject"` (which also rejects the session's other pending requests).
    ReplyReject,
    /// Send no reply; OpenCode's prompt decides.
    Leave {
        /// Why.
        reason: LeaveReason,
    },
}

impl Decision {
    /// The reply word to send (`"once"` or `"reject"`), or `None` for [`Decision::Leave`].
    /// The same words serve both `permission.asked` and `permission.v2.asked`.
    pub fn reply_word(&self) -> Option<&'static str> {
        match self {
            Decision::ReplyOnce => Some("once"),
            Decision::ReplyReject => Some("reject"),
            Decision::Leave { .. } => None,
        }
    }
}

/// Decide one request. `guardrail` is the category of the protected-path guardrail's hit
/// for this request's tool input, `None` when it did not trip.
///
/// The event kind and ids do not change the decision; they are inputs so that the caller
/// cannot decide without having identified the request, and for logging.
pub fn decide(
    request: &PermissionRequestFacts<'_>,
    provenance: &Provenance,
    mode: PeerPermissions,
    guardrail: Option<&str>,
) -> Decision {
    let _ = request;
    if !provenance.is_peer_triggered() {
        return Decision::Leave {
            reason: LeaveReason::LocalTurn,
        };
    }
    if !provenance.peer_policy_applies() {
        return Decision::Leave {
            reason: LeaveReason::UserFoldedIntoPeerTurn,
        };
    }
    match (mode, guardrail) {
        (PeerPermissions::Allow, None) => Decision::ReplyOnce,
        (PeerPermissions::Allow, Some(category)) => Decision::Leave {
            reason: LeaveReason::Guardrail {
                category: category.to_string(),
            },
        },
        (PeerPermissions::Ask, _) => Decision::Leave {
            reason: LeaveReason::AskMode,
        },
        (PeerPermissions::Deny, _) => Decision::ReplyReject,
    }
}

/// Request ids already answered (or decided), so each is answered at most once when
/// `permission.asked` repeats. Bounded: remembers the latest `capacity` ids (default 4 096);
/// an id older than that is long answered (OpenCode answers a second reply with 404).
#[derive(Debug)]
pub struct AnsweredSet {
    capacity: usize,
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl Default for AnsweredSet {
    fn default() -> Self {
        AnsweredSet::new(4_096)
    }
}

impl AnsweredSet {
    /// An empty set remembering at most `capacity` ids (at least 1).
    pub fn new(capacity: usize) -> Self {
        AnsweredSet {
            capacity: capacity.max(1),
            set: HashSet::new(),
            order: VecDeque::new(),
        }
    }

    /// `true` the first time `request_id` is seen (and records it); `false` afterwards.
    pub fn first_time(&mut self, request_id: &str) -> bool {
        if self.set.contains(request_id) {
            return false;
        }
        self.set.insert(request_id.to_string());
        self.order.push_back(request_id.to_string());
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        true
    }

    /// Whether `request_id` was recorded (without recording it).
    pub fn contains(&self, request_id: &str) -> bool {
        self.set.contains(request_id)
    }

    /// Number of ids remembered.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether no id is remembered.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::{Basis, PeerMark};

    fn peer() -> Provenance {
        Provenance {
            peer: Some(PeerMark {
                message_id: "m1".into(),
                from: "bob".into(),
                via: vec!["ses_b".into()],
            }),
            basis: Basis::PeerTurn,
            folded: false,
            inherited: false,
        }
    }

    #[test]
    fn policy_table() {
        let mut cases = 0;
        for kind in [PermissionEventKind::Asked, PermissionEventKind::V2Asked] {
            let req = PermissionRequestFacts {
                kind,
                request_id: "per_1",
                session_id: "ses_1",
                permission: "bash",
            };
            for mode in [
                PeerPermissions::Allow,
                PeerPermissions::Ask,
                PeerPermissions::Deny,
            ] {
                for peer_triggered in [false, true] {
                    for guard in [None, Some("protected-path")] {
                        let prov = if peer_triggered {
                            peer()
                        } else {
                            Provenance::local(Basis::UserTurn)
                        };
                        let got = decide(&req, &prov, mode, guard);
                        let want = match (peer_triggered, mode, guard) {
                            (false, _, _) => Decision::Leave {
                                reason: LeaveReason::LocalTurn,
                            },
                            (true, PeerPermissions::Allow, None) => Decision::ReplyOnce,
                            (true, PeerPermissions::Allow, Some(c)) => Decision::Leave {
                                reason: LeaveReason::Guardrail {
                                    category: c.to_string(),
                                },
                            },
                            (true, PeerPermissions::Ask, _) => Decision::Leave {
                                reason: LeaveReason::AskMode,
                            },
                            (true, PeerPermissions::Deny, _) => Decision::ReplyReject,
                        };
                        assert_eq!(
                            got, want,
                            "{kind:?} {mode:?} peer={peer_triggered} {guard:?}"
                        );
                        assert_ne!(got.reply_word(), Some("always"));
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 24);
    }

    #[test]
    fn every_local_basis_is_left_alone() {
        let req = PermissionRequestFacts {
            kind: PermissionEventKind::Asked,
            request_id: "per_1",
            session_id: "ses_1",
            permission: "edit",
        };
        for basis in [
            Basis::UserTurn,
            Basis::Compaction,
            Basis::Missing,
            Basis::Limit,
            Basis::SessionMismatch,
            Basis::ChildOriginUnknown,
        ] {
            for mode in [PeerPermissions::Allow, PeerPermissions::Deny] {
                let d = decide(&req, &Provenance::local(basis), mode, None);
                assert_eq!(d.reply_word(), None, "{basis:?} {mode:?}");
            }
        }
    }

    #[test]
    fn user_folded_into_peer_turn_is_left_in_every_mode() {
        let req = PermissionRequestFacts {
            kind: PermissionEventKind::Asked,
            request_id: "per_1",
            session_id: "ses_1",
            permission: "bash",
        };
        let prov = Provenance {
            basis: Basis::UserFoldedIntoPeerTurn,
            folded: true,
            ..peer()
        };
        assert!(prov.is_peer_triggered());
        assert!(!prov.peer_policy_applies());
        for mode in [
            PeerPermissions::Allow,
            PeerPermissions::Ask,
            PeerPermissions::Deny,
        ] {
            assert_eq!(
                decide(&req, &prov, mode, None),
                Decision::Leave {
                    reason: LeaveReason::UserFoldedIntoPeerTurn
                },
                "{mode:?}"
            );
        }
        // A compacted peer turn keeps its origin: decided by the mode.
        let compacted = Provenance {
            basis: Basis::Compaction,
            ..peer()
        };
        assert_eq!(
            decide(&req, &compacted, PeerPermissions::Deny, None),
            Decision::ReplyReject
        );
    }

    #[test]
    fn reply_words() {
        assert_eq!(Decision::ReplyOnce.reply_word(), Some("once"));
        assert_eq!(Decision::ReplyReject.reply_word(), Some("reject"));
        assert_eq!(
            Decision::Leave {
                reason: LeaveReason::AskMode
            }
            .reply_word(),
            None
        );
    }

    #[test]
    fn resolve_modes() {
        use SettingSource::*;
        assert_eq!(
            PeerPermissions::resolve(None, None),
            Ok((PeerPermissions::Allow, Default))
        );
        assert_eq!(
            PeerPermissions::resolve(Some("deny"), None),
            Ok((PeerPermissions::Deny, Option))
        );
        assert_eq!(
            PeerPermissions::resolve(Some("deny"), Some("ask")),
            Ok((PeerPermissions::Ask, Env))
        );
        assert_eq!(
            PeerPermissions::resolve(Some(" DENY "), Some("  ")),
            Ok((PeerPermissions::Deny, Option))
        );
        let err = PeerPermissions::resolve(None, Some("alow")).unwrap_err();
        assert_eq!(err.source_name, ENV_PEER_PERMISSIONS);
        let text = err.to_string();
        assert!(text.contains("allow, ask, deny"), "{text}");
        assert!(text.contains("\"alow\""), "{text}");
        // A bad option is reported even though the environment would override it.
        assert!(PeerPermissions::resolve(Some("always"), Some("allow")).is_err());
        for m in [
            PeerPermissions::Allow,
            PeerPermissions::Ask,
            PeerPermissions::Deny,
        ] {
            assert_eq!(
                PeerPermissions::resolve(Some(m.as_str()), None).unwrap().0,
                m
            );
        }
    }

    #[test]
    fn answered_once() {
        let mut set = AnsweredSet::new(3);
        assert!(set.is_empty());
        assert!(set.first_time("per_1"));
        assert!(!set.first_time("per_1"));
        assert!(set.first_time("per_2"));
        assert!(set.first_time("per_3"));
        assert!(set.first_time("per_4"));
        assert_eq!(set.len(), 3);
        assert!(!set.first_time("per_4"));
        // The oldest id was forgotten by the bound.
        assert!(set.first_time("per_1"));
    }
}
