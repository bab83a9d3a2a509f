//! The walk: from a tool call's message up the `parentID` chain (and across task child
//! sessions) to the turn that started it, deciding whether a peer message started it (see
//! "The walk" and "The folding rule" in the module doc of [`super`]).

use super::*;

/// The state of a session's loop at one moment.
enum LoopAt<'a> {
    SurelyIdle,
    SurelyRunning(&'a str),
    /// Possibly running, with the step it would be running.
    Uncertain(&'a str),
    /// The index lacks the history to say.
    Unknown,
}

/// An item the walk lacks.
enum Need<'a> {
    Message { session: &'a str, id: &'a str },
    Session(&'a str),
}

/// The origin of a turn as the walk found it (borrowing from the index).
struct Origin<'a> {
    peer: Option<&'a PeerMark>,
    basis: Basis,
    folded: bool,
    inherited: bool,
    /// An unmarked, non-compaction user message was folded into the loop on the way.
    user_folded: bool,
    /// The walk passed through a compaction.
    compacted: bool,
}

impl<'a> Origin<'a> {
    fn local(basis: Basis) -> Self {
        Origin {
            peer: None,
            basis,
            folded: false,
            inherited: false,
            user_folded: false,
            compacted: false,
        }
    }

    /// This origin reached through a folded message.
    fn folded(self) -> Self {
        Origin {
            folded: true,
            ..self
        }
    }

    /// This origin reached through a compaction.
    fn compacted(self) -> Self {
        Origin {
            compacted: true,
            ..self
        }
    }
}

/// Per-walk state: hop budget, visited ids, ids already asked for.
struct Walk<'w> {
    hops: usize,
    visited: Vec<&'w str>,
    asked: &'w BoundedSet,
}

impl TurnIndex {
    /// Walk from the tool's assistant message `tool_message_id` of a permission request in
    /// `session_id` to the origin of its turn. See the module doc. Takes `&mut self` only to
    /// remember which ids it has asked the plugin to fetch.
    pub fn provenance(&mut self, session_id: &str, tool_message_id: &str) -> Lookup {
        let result = {
            let mut walk = Walk {
                hops: 0,
                visited: Vec::new(),
                asked: &self.asked,
            };
            match self.walk_tool_message(session_id, tool_message_id, &mut walk) {
                Ok(o) => Ok(Provenance {
                    peer: o.peer.cloned(),
                    // The user's interjection outranks everything: it is the user speaking.
                    basis: if o.peer.is_some() && o.user_folded {
                        Basis::UserFoldedIntoPeerTurn
                    } else if o.compacted && matches!(o.basis, Basis::PeerTurn | Basis::UserTurn) {
                        Basis::Compaction
                    } else {
                        o.basis
                    },
                    folded: o.folded,
                    inherited: o.inherited,
                }),
                Err(Need::Message { session, id }) => Err(Lookup::NeedMessage {
                    session_id: session.to_string(),
                    message_id: id.to_string(),
                }),
                Err(Need::Session(s)) => Err(Lookup::NeedSession(s.to_string())),
            }
        };
        match result {
            Ok(p) => Lookup::Resolved(p),
            Err(need) => {
                let key = match &need {
                    Lookup::NeedMessage { message_id, .. } => format!("m:{message_id}"),
                    Lookup::NeedSession(s) => format!("s:{s}"),
                    Lookup::Resolved(_) => unreachable!("only needs reach here"),
                };
                let cap = self.limits.max_messages;
                self.asked.insert(key, cap);
                need
            }
        }
    }

    fn may_ask_message(walk: &Walk<'_>, id: &str) -> bool {
        !walk.asked.contains(&format!("m:{id}"))
    }

    fn may_ask_session(walk: &Walk<'_>, id: &str) -> bool {
        !walk.asked.contains(&format!("s:{id}"))
    }

    /// Count one hop and refuse cycles. `false`: stop the walk as [`Basis::Limit`].
    fn step<'a>(&'a self, walk: &mut Walk<'a>, id: &'a str) -> bool {
        walk.hops += 1;
        if walk.hops > self.limits.max_hops || walk.visited.contains(&id) {
            return false;
        }
        walk.visited.push(id);
        true
    }

    fn walk_tool_message<'a>(
        &'a self,
        session_id: &'a str,
        tool_message_id: &'a str,
        walk: &mut Walk<'a>,
    ) -> Result<Origin<'a>, Need<'a>> {
        let Some((id, a)) = self.messages.get_key_value(tool_message_id) else {
            if Self::may_ask_message(walk, tool_message_id) {
                return Err(Need::Message {
                    session: session_id,
                    id: tool_message_id,
                });
            }
            return Ok(Origin::local(Basis::Missing));
        };
        if a.session != session_id {
            return Ok(Origin::local(Basis::SessionMismatch));
        }
        self.origin_of_step(id, walk)
    }

    /// The origin of the loop an assistant step `step_id` belongs to.
    fn origin_of_step<'a>(
        &'a self,
        step_id: &'a str,
        walk: &mut Walk<'a>,
    ) -> Result<Origin<'a>, Need<'a>> {
        if !self.step(walk, step_id) {
            return Ok(Origin::local(Basis::Limit));
        }
        let Some(a) = self.messages.get(step_id) else {
            return Ok(Origin::local(Basis::Missing));
        };
        if a.role != Role::Assistant {
            return Ok(Origin::local(Basis::Missing));
        }
        let Some(parent) = a.parent.as_deref() else {
            return Ok(Origin::local(Basis::Missing));
        };
        match self.messages.get_key_value(parent) {
            // A summary step belongs to the compaction request it answers.
            Some((pid, _)) if a.summary => self.origin_of_user(pid, walk).map(Origin::compacted),
            Some((pid, _)) => self.origin_of_user(pid, walk),
            None if Self::may_ask_message(walk, parent) => Err(Need::Message {
                session: &a.session,
                id: parent,
            }),
            None => Ok(Origin::local(Basis::Missing)),
        }
    }

    /// The origin of the turn the user message `user_id` belongs to.
    fn origin_of_user<'a>(
        &'a self,
        user_id: &'a str,
        walk: &mut Walk<'a>,
    ) -> Result<Origin<'a>, Need<'a>> {
        if !self.step(walk, user_id) {
            return Ok(Origin::local(Basis::Limit));
        }
        let Some(u) = self.messages.get(user_id) else {
            return Ok(Origin::local(Basis::Missing));
        };
        if u.summary {
            return Ok(Origin::local(Basis::Compaction));
        }
        if u.role != Role::User {
            return Ok(Origin::local(Basis::Missing));
        }
        let session = u.session.as_str();
        let t = u.created;
        // Written by the loop itself: an automatic compaction request, or the synthetic
        // "continue" message after it. They belong to the loop that was running.
        if self.compaction_auto.contains(user_id) || self.continuations.contains(user_id) {
            return match self.loop_at(session, t, user_id) {
                LoopAt::SurelyRunning(a) | LoopAt::Uncertain(a) => {
                    self.origin_of_step(a, walk).map(|o| o.folded().compacted())
                }
                LoopAt::Unknown if Self::may_ask_session(walk, session) => {
                    Err(Need::Session(session))
                }
                LoopAt::SurelyIdle | LoopAt::Unknown => Ok(Origin::local(Basis::Compaction)),
            };
        }
        // The user's own `/compact`: their action, like a typed message.
        if self.compaction.contains(user_id) {
            return match self.loop_at(session, t, user_id) {
                LoopAt::SurelyRunning(a) => self.origin_of_step(a, walk).map(|o| Origin {
                    user_folded: true,
                    ..o.folded().compacted()
                }),
                _ => Ok(Origin::local(Basis::Compaction)),
            };
        }
        match self.peer_marks.get(user_id) {
            Some(mark) => match self.loop_at(session, t, user_id) {
                LoopAt::SurelyIdle => match self.unanswered_before(session, t, user_id) {
                    // The busy race: a message that nothing has answered yet precedes this
                    // one, so the loop it started will pick this one up too.
                    Some(first) => self.origin_of_user(first, walk).map(Origin::folded),
                    None => Ok(Origin {
                        peer: Some(mark),
                        basis: Basis::PeerTurn,
                        ..Origin::local(Basis::PeerTurn)
                    }),
                },
                LoopAt::SurelyRunning(a) | LoopAt::Uncertain(a) => {
                    self.origin_of_step(a, walk).map(Origin::folded)
                }
                LoopAt::Unknown if Self::may_ask_session(walk, session) => {
                    Err(Need::Session(session))
                }
                LoopAt::Unknown => Ok(Origin::local(Basis::Missing)),
            },
            None => match self.loop_at(session, t, user_id) {
                LoopAt::SurelyRunning(a) => self.origin_of_step(a, walk).map(|o| Origin {
                    user_folded: true,
                    ..o.folded()
                }),
                LoopAt::SurelyIdle => match self.unanswered_before(session, t, user_id) {
                    // Typed right behind a message nothing has answered yet: the same loop.
                    Some(first) => self.origin_of_user(first, walk).map(|o| Origin {
                        user_folded: true,
                        ..o.folded()
                    }),
                    None => self.origin_of_new_unmarked_turn(session, user_id, t, walk),
                },
                _ => self.origin_of_new_unmarked_turn(session, user_id, t, walk),
            },
        }
    }

    /// The earliest user message of `session` that precedes `(t, user_id)` in creation order
    /// and that no assistant step has followed yet: OpenCode has not answered it, so the loop
    /// it starts (or started) will also take `user_id` in. `None` if there is none.
    fn unanswered_before(&self, session: &str, t: EpochMs, user_id: &str) -> Option<&str> {
        let s = self.sessions.get(session)?;
        let before_me = |(c, id): &(EpochMs, String)| (*c, id.as_str()) < (t, user_id);
        let end = s.assistants.partition_point(before_me);
        let from = match s.assistants[..end].last() {
            Some((ac, aid)) => s
                .users
                .partition_point(|(c, id)| (*c, id.as_str()) <= (*ac, aid.as_str())),
            None => 0,
        };
        let end = s.users.partition_point(before_me);
        s.users[from..end.max(from)]
            .first()
            .map(|(_, id)| id.as_str())
    }

    /// An unmarked user message `user_id` at `t` started a loop in `session`: the user's
    /// turn, unless `session` is a `task` child session and the parent's `task` call wrote
    /// it, in which case it inherits the origin of the parent's step that made the call.
    ///
    /// The task call that wrote it is the one whose part names `session`
    /// (`state.metadata.sessionId`), whose run covers `t` (`state.time.start ≤ t ≤ end`), and
    /// for which `user_id` is the first user message of `session` created at or after the
    /// call's start. Any other user message in a child session was typed by the user. When
    /// the parent's parts are not all held and cannot be fetched, the answer is
    /// [`Basis::ChildOriginUnknown`] (local).
    fn origin_of_new_unmarked_turn<'a>(
        &'a self,
        session: &'a str,
        user_id: &'a str,
        t: EpochMs,
        walk: &mut Walk<'a>,
    ) -> Result<Origin<'a>, Need<'a>> {
        let Some((sid, s)) = self.sessions.get_key_value(session) else {
            return Ok(Origin::local(Basis::UserTurn));
        };
        let parent = match &s.parent {
            Some(None) => return Ok(Origin::local(Basis::UserTurn)),
            Some(Some(p)) => p.as_str(),
            None if Self::may_ask_session(walk, sid) => return Err(Need::Session(sid)),
            None => return Ok(Origin::local(Basis::ChildOriginUnknown)),
        };
        if !self.step(walk, sid) {
            return Ok(Origin::local(Basis::Limit));
        }
        let covering = self.tasks.get(session).and_then(|calls| {
            calls
                .iter()
                .filter(|c| c.start <= t && c.end.is_none_or(|e| t <= e))
                .min_by_key(|c| c.start)
        });
        if let Some(call) = covering {
            // Which user message did the call write? The first one at or after its start.
            if !s.holds_from(call.start) {
                if Self::may_ask_session(walk, sid) {
                    return Err(Need::Session(sid));
                }
                return Ok(Origin::local(Basis::ChildOriginUnknown));
            }
            let first = s
                .users
                .iter()
                .find(|(c, _)| *c >= call.start)
                .map(|(_, id)| id.as_str());
            if first != Some(user_id) {
                return Ok(Origin::local(Basis::UserTurn));
            }
            return match self.messages.get_key_value(call.step.as_str()) {
                Some((step, _)) => self.origin_of_step(step, walk).map(|o| Origin {
                    inherited: true,
                    ..o
                }),
                None if Self::may_ask_message(walk, &call.step) => Err(Need::Message {
                    session: parent,
                    id: &call.step,
                }),
                None => Ok(Origin::local(Basis::ChildOriginUnknown)),
            };
        }
        // No task call covers `t`: typed by the user, if the index holds every part of the
        // parent from `t` on (a task call running at `t` started after it, or is held).
        match self.sessions.get(parent) {
            Some(ps) if ps.holds_from(t) => Ok(Origin::local(Basis::UserTurn)),
            _ if Self::may_ask_session(walk, parent) => Err(Need::Session(parent)),
            _ => Ok(Origin::local(Basis::ChildOriginUnknown)),
        }
    }

    /// The state of `session`'s loop at `t`, judged from its latest assistant step created
    /// at or before `t` that is not one of `own_user`'s steps.
    fn loop_at<'a>(&'a self, session: &str, t: EpochMs, own_user: &str) -> LoopAt<'a> {
        let default_history = self.default_history();
        let (history, assistants, idles) = match self.sessions.get(session) {
            Some(s) => (s.history, &s.assistants[..], Some(&s.idles)),
            None => (default_history, &[][..], None),
        };
        let end = assistants.partition_point(|(c, _)| *c <= t);
        let latest = assistants[..end].iter().rev().find_map(|(_, id)| {
            let (id, m) = self.messages.get_key_value(id.as_str())?;
            (m.parent.as_deref() != Some(own_user) || own_user.is_empty()).then_some((id, m))
        });
        // May "surely idle" be concluded? Only when the index is sure to hold the latest
        // step before `t` (a missed step of a running loop would otherwise hide the loop).
        let trusted = |found: Option<&Msg>| match history {
            History::Complete { since } => since <= t,
            History::Trimmed { since } => found.is_some_and(|a| a.created >= since),
            History::Unknown => false,
        };
        let idle_or_unknown = |found: Option<&Msg>| {
            if trusted(found) {
                LoopAt::SurelyIdle
            } else {
                LoopAt::Unknown
            }
        };
        let Some((a_id, a)) = latest else {
            return idle_or_unknown(None);
        };
        match history {
            History::Complete { since } if a.created < since && since <= t => {
                return LoopAt::SurelyIdle
            }
            History::Trimmed { since } if a.created < since => return LoopAt::Unknown,
            _ => {}
        }
        if let Some(start) = self.limits.instance_started_ms {
            if a.created < start && start <= t {
                return idle_or_unknown(Some(a));
            }
        }
        if a.created == t {
            return LoopAt::Uncertain(a_id);
        }
        match a.completed {
            None => LoopAt::SurelyRunning(a_id),
            Some(c) if c > t => LoopAt::SurelyRunning(a_id),
            Some(c) => {
                let idle_seen = idles.is_some_and(|v| v.iter().any(|&s| c <= s && s <= t));
                let settled = a.ends_loop() && c.saturating_add(self.limits.settle_ms.max(0)) <= t;
                if idle_seen || settled {
                    idle_or_unknown(Some(a))
                } else {
                    LoopAt::Uncertain(a_id)
                }
            }
        }
    }
}
