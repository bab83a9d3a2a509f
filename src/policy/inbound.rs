//! Inbound gating: whether a peer message reaches the model at all.
//!
//! | mode      | sender in our directory | other directory | unknown sender / directory |
//! |-----------|-------------------------|-----------------|----------------------------|
//! | `accept`  | accept                  | accept          | accept                     |
//! | `auto`    | accept                  | hold            | hold                       |
//! | `hold`    | hold                    | hold            | hold                       |
//! | `refuse`  | refuse                  | refuse          | refuse                     |
//!
//! The ingress path (direct, room, broadcast, redelivery) does not change the table: a room
//! or broadcast message is as much data as a direct one, and a redelivered message is
//! judged again under the current mode rather than trusting an earlier decision. The one
//! exception is [`Ingress::HeldRelease`], a human releasing a held message by hand: it is
//! accepted in every mode except `refuse`. Under `refuse` the human changes the mode
//! first; a mode that promises "no peer message reaches the model" keeps that promise even
//! against a release command issued by mistake (or by a turn that should not issue it).
//!
//! `auto` fails closed to *hold*: anything it cannot decide (no registration for the sender,
//! no registered directory, no directory of our own) is held, never accepted.
//!
//! [`decide_inbound`] is pure: it compares directory strings the caller has already made
//! canonical. [`canonical_directory`] is the one function here that touches the file system.

use std::path::Path;

use super::{resolve_setting, InvalidSetting, SettingSource};

/// The environment variable that overrides the `inbound` plugin option.
pub const ENV_INBOUND: &str = "C2C_BRIDGE_INBOUND";

/// The local `inbound` mode. Ordered from the most open to the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum InboundMode {
    /// `"accept"` (default): every peer message reaches the model (framed as untrusted).
    #[default]
    Accept,
    /// `"auto"`: accept messages from sessions registered in our own directory; hold others.
    Auto,
    /// `"hold"`: hold every message until a human releases it.
    Hold,
    /// `"refuse"`: refuse every message.
    Refuse,
}

const TABLE: &[(&str, InboundMode)] = &[
    ("accept", InboundMode::Accept),
    ("auto", InboundMode::Auto),
    ("hold", InboundMode::Hold),
    ("refuse", InboundMode::Refuse),
];
/// The words of the `inbound` setting (plugin options validation uses them too).
pub const VALID: &[&str] = &["accept", "auto", "hold", "refuse"];

impl InboundMode {
    /// The mode's configuration word.
    pub fn as_str(self) -> &'static str {
        match self {
            InboundMode::Accept => "accept",
            InboundMode::Auto => "auto",
            InboundMode::Hold => "hold",
            InboundMode::Refuse => "refuse",
        }
    }

    /// The effective mode from the plugin option `inbound` and [`ENV_INBOUND`] (which wins).
    /// Unknown values are an error naming the valid ones; blank values count as unset.
    pub fn resolve(
        option: Option<&str>,
        env: Option<&str>,
    ) -> Result<(InboundMode, SettingSource), InvalidSetting> {
        resolve_setting("inbound", ENV_INBOUND, TABLE, VALID, option, env)
    }
}

/// How a message arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingress {
    /// A direct message to this session.
    Direct,
    /// A message to a room this session joined.
    Room,
    /// A broadcast to every session.
    Broadcast,
    /// A message delivered again (after a crash before its acknowledgement).
    Redelivery,
    /// A human released a held message by hand (a slash command, the CLI).
    HeldRelease,
}

/// What the registry says about the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderFacts<'a> {
    /// The sender's registered project directory, already canonical; `None` if it has none.
    pub directory: Option<&'a str>,
}

/// Why a message is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldReason {
    /// `inbound = hold`.
    HoldMode,
    /// `inbound = auto` and the sender is registered in another directory.
    OtherDirectory,
    /// `inbound = auto` and the sender, its directory or ours is unknown.
    Undecidable,
}

/// Why a message is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefuseReason {
    /// `inbound = refuse`.
    RefuseMode,
}

/// The gate's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboundDecision {
    /// Inject the message (framed as untrusted).
    Accept,
    /// Keep it until a human releases it.
    Hold {
        /// Why.
        reason: HoldReason,
    },
    /// Do not deliver it.
    Refuse {
        /// Why.
        reason: RefuseReason,
    },
}

/// Decide one inbound message. `sender` is `None` when the sender has no registration;
/// directories are compared as exact strings, so both must already be canonical (see
/// [`canonical_directory`]). An empty directory string counts as unknown.
pub fn decide_inbound(
    mode: InboundMode,
    sender: Option<&SenderFacts<'_>>,
    our_directory: Option<&str>,
    ingress: Ingress,
) -> InboundDecision {
    if mode == InboundMode::Refuse {
        return InboundDecision::Refuse {
            reason: RefuseReason::RefuseMode,
        };
    }
    if ingress == Ingress::HeldRelease {
        return InboundDecision::Accept;
    }
    match mode {
        InboundMode::Accept => InboundDecision::Accept,
        InboundMode::Hold => InboundDecision::Hold {
            reason: HoldReason::HoldMode,
        },
        InboundMode::Auto => {
            let theirs = sender.and_then(|s| s.directory).filter(|d| !d.is_empty());
            let ours = our_directory.filter(|d| !d.is_empty());
            match (theirs, ours) {
                (Some(t), Some(o)) if t == o => InboundDecision::Accept,
                (Some(_), Some(_)) => InboundDecision::Hold {
                    reason: HoldReason::OtherDirectory,
                },
                _ => InboundDecision::Hold {
                    reason: HoldReason::Undecidable,
                },
            }
        }
        InboundMode::Refuse => InboundDecision::Refuse {
            reason: RefuseReason::RefuseMode,
        },
    }
}

/// **I/O.** The canonical form of `path` for [`decide_inbound`]: `std::fs::canonicalize`
/// (absolute, symlinks resolved, `.`/`..` removed) as UTF-8. `None` when the path does not
/// exist, cannot be resolved or is not UTF-8; the gate then treats it as unknown (hold).
pub fn canonical_directory(path: &Path) -> Option<String> {
    std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODES: [InboundMode; 4] = [
        InboundMode::Accept,
        InboundMode::Auto,
        InboundMode::Hold,
        InboundMode::Refuse,
    ];
    const INGRESS: [Ingress; 5] = [
        Ingress::Direct,
        Ingress::Room,
        Ingress::Broadcast,
        Ingress::Redelivery,
        Ingress::HeldRelease,
    ];

    #[derive(Debug, Clone, Copy)]
    enum Who {
        Same,
        Other,
        NoDirectory,
        EmptyDirectory,
        Unregistered,
    }

    #[test]
    fn gating_table() {
        let ours = "/home/u/proj";
        let mut cases = 0;
        for mode in MODES {
            for who in [
                Who::Same,
                Who::Other,
                Who::NoDirectory,
                Who::EmptyDirectory,
                Who::Unregistered,
            ] {
                for ingress in INGRESS {
                    let facts = match who {
                        Who::Same => Some(SenderFacts {
                            directory: Some("/home/u/proj"),
                        }),
                        Who::Other => Some(SenderFacts {
                            directory: Some("/home/u/proj2"),
                        }),
                        Who::NoDirectory => Some(SenderFacts { directory: None }),
                        Who::EmptyDirectory => Some(SenderFacts {
                            directory: Some(""),
                        }),
                        Who::Unregistered => None,
                    };
                    let got = decide_inbound(mode, facts.as_ref(), Some(ours), ingress);
                    let want = match (mode, ingress, who) {
                        (InboundMode::Refuse, _, _) => InboundDecision::Refuse {
                            reason: RefuseReason::RefuseMode,
                        },
                        (_, Ingress::HeldRelease, _) => InboundDecision::Accept,
                        (InboundMode::Accept, _, _) => InboundDecision::Accept,
                        (InboundMode::Hold, _, _) => InboundDecision::Hold {
                            reason: HoldReason::HoldMode,
                        },
                        (InboundMode::Auto, _, Who::Same) => InboundDecision::Accept,
                        (InboundMode::Auto, _, Who::Other) => InboundDecision::Hold {
                            reason: HoldReason::OtherDirectory,
                        },
                        (InboundMode::Auto, _, _) => InboundDecision::Hold {
                            reason: HoldReason::Undecidable,
                        },
                    };
                    assert_eq!(got, want, "{mode:?} {who:?} {ingress:?}");
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 100);
    }

    #[test]
    fn auto_without_our_directory_holds() {
        for ours in [None, Some("")] {
            let s = SenderFacts {
                directory: Some(""),
            };
            assert_eq!(
                decide_inbound(InboundMode::Auto, Some(&s), ours, Ingress::Direct),
                InboundDecision::Hold {
                    reason: HoldReason::Undecidable
                }
            );
            let s = SenderFacts {
                directory: Some("/x"),
            };
            assert_eq!(
                decide_inbound(InboundMode::Auto, Some(&s), ours, Ingress::Room),
                InboundDecision::Hold {
                    reason: HoldReason::Undecidable
                }
            );
        }
    }

    #[test]
    fn auto_compares_exactly() {
        // Not canonical on purpose: the caller canonicalises; the gate does not guess.
        for theirs in [
            "/home/u/proj/",
            "/home/u/./proj",
            "/HOME/u/proj",
            "/home/u/proj2",
        ] {
            let s = SenderFacts {
                directory: Some(theirs),
            };
            assert!(matches!(
                decide_inbound(
                    InboundMode::Auto,
                    Some(&s),
                    Some("/home/u/proj"),
                    Ingress::Direct
                ),
                InboundDecision::Hold { .. }
            ));
        }
    }

    #[test]
    fn canonical_directory_resolves_symlinks_and_dots() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let a = canonical_directory(&real).unwrap();
        assert_eq!(canonical_directory(&link).unwrap(), a);
        assert_eq!(canonical_directory(&real.join("../real/.")).unwrap(), a);
        assert_eq!(canonical_directory(&dir.path().join("missing")), None);
    }

    #[test]
    fn resolve_modes() {
        assert_eq!(
            InboundMode::resolve(None, None),
            Ok((InboundMode::Accept, SettingSource::Default))
        );
        assert_eq!(
            InboundMode::resolve(Some("hold"), Some("Refuse")),
            Ok((InboundMode::Refuse, SettingSource::Env))
        );
        let err = InboundMode::resolve(Some("open"), None).unwrap_err();
        assert!(err.to_string().contains("accept, auto, hold, refuse"));
        for m in MODES {
            assert_eq!(InboundMode::resolve(None, Some(m.as_str())).unwrap().0, m);
        }
    }
}
