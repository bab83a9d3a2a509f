//! The `via` hop list: stops relay loops of *fresh* messages among sessions.
//!
//! # What a hop is
//!
//! A hop is one message sent by one session. The `via` list of a message names, in order,
//! the sending session of every message in its chain, the message's own sender last. A
//! message sent from a turn the user typed starts a fresh chain: `via = [sender]`, one hop.
//! A message sent from a peer-triggered turn continues the chain of the message that
//! triggered that turn (see [`inherit_via`]), whatever its text says: the turn exists
//! because of that message, so everything it sends is that chain's next hop. This is what
//! stops A→B→C→A loops where each turn writes a new message rather than forwarding one.
//!
//! A chain may hold at most [`MAX_HOPS`] messages: A→B (`[A]`), B→C (`[A,B]`), C→D
//! (`[A,B,C]`), D→E (`[A,B,C,D]`) are delivered; anything E sends from that turn is
//! refused. Repeated names are counted, not refused: A asking B and B answering A is a
//! normal exchange, and the count bounds it (A→B→A→B, then A's next message is refused).
//! After the limit a human turn is needed to start a new chain.

use crate::provenance::Provenance;

/// The most messages one chain may hold.
pub const MAX_HOPS: usize = 4;

/// Sending would make the chain longer than [`MAX_HOPS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hop limit: this message would be hop {would_be} of a chain limited to {max}")]
pub struct HopLimit {
    /// The hop number the message would have had (1-based).
    pub would_be: usize,
    /// The limit, [`MAX_HOPS`].
    pub max: usize,
}

/// The `via` list of a message the session `own_session` sends from a turn whose inherited
/// chain is `inherited` (from [`inherit_via`]). `Err` when it would exceed [`MAX_HOPS`].
pub fn extend_via(inherited: &[String], own_session: &str) -> Result<Vec<String>, HopLimit> {
    let would_be = inherited.len().saturating_add(1);
    if would_be > MAX_HOPS {
        return Err(HopLimit {
            would_be,
            max: MAX_HOPS,
        });
    }
    let mut via = Vec::with_capacity(would_be);
    via.extend_from_slice(inherited);
    via.push(own_session.to_string());
    Ok(via)
}

/// The chain a turn's outgoing messages continue: empty for a local turn; for a
/// peer-triggered turn, the `via` of the message that triggered it. A message from a c2c
/// client that writes no `via` still counts as one hop, named by its sender.
pub fn inherit_via(provenance: &Provenance) -> Vec<String> {
    match &provenance.peer {
        None => Vec::new(),
        Some(mark) if mark.via.is_empty() => vec![mark.from.clone()],
        Some(mark) => mark.via.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::{Basis, PeerMark};

    fn triggered_by(via: &[String], from: &str) -> Provenance {
        Provenance {
            peer: Some(PeerMark {
                message_id: "m".into(),
                from: from.into(),
                via: via.to_vec(),
            }),
            basis: Basis::PeerTurn,
            folded: false,
            inherited: false,
        }
    }

    /// Each session answers the message it got with a fresh message to the next one.
    fn relay(path: &[&str]) -> Result<usize, HopLimit> {
        let mut turn = Provenance::local(Basis::UserTurn);
        let mut sent = 0;
        for sender in path {
            let via = extend_via(&inherit_via(&turn), sender)?;
            sent += 1;
            turn = triggered_by(&via, sender);
        }
        Ok(sent)
    }

    #[test]
    fn chain_stops_at_the_limit() {
        assert_eq!(relay(&["A", "B", "C", "D"]), Ok(4));
        assert_eq!(
            relay(&["A", "B", "C", "D", "E"]),
            Err(HopLimit {
                would_be: 5,
                max: MAX_HOPS
            })
        );
    }

    #[test]
    fn ping_pong_stops() {
        assert_eq!(relay(&["A", "B", "A", "B"]), Ok(4));
        assert!(relay(&["A", "B", "A", "B", "A"]).is_err());
        assert!(relay(&["A", "B", "C", "A", "B", "C"]).is_err());
    }

    #[test]
    fn local_turn_starts_fresh() {
        assert!(inherit_via(&Provenance::local(Basis::UserTurn)).is_empty());
        assert_eq!(extend_via(&[], "A").unwrap(), vec!["A".to_string()]);
    }

    #[test]
    fn missing_via_counts_the_sender() {
        let p = triggered_by(&[], "claude-1");
        assert_eq!(inherit_via(&p), vec!["claude-1".to_string()]);
        assert_eq!(extend_via(&inherit_via(&p), "B").unwrap().len(), 2);
    }

    #[test]
    fn oversized_inherited_list_is_refused() {
        let long: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        assert_eq!(
            extend_via(&long, "X"),
            Err(HopLimit {
                would_be: 11,
                max: MAX_HOPS
            })
        );
    }
}
