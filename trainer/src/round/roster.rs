//! Who may contribute to a round. Keys are free, so anyone can sign a commitment: without a
//! roster, strangers that join a job's gossip could fill a round's book (it takes at most
//! [`super::book::MAX_SIGNERS`]) before its members commit, and outvote them in its
//! aggregate and its witnesses. On a Grid network the chain fixes each round's members when
//! it opens (`RoundState::members`, each bound to its libp2p key by the provider registry),
//! so every honest member takes the same signers into the same round; off chain a job may
//! list its members, or take anyone.

use std::collections::BTreeSet;

use libp2p::PeerId;

/// The signers a round takes commitments, attestations and piece requests from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Roster {
	/// Anyone who signs (an off-chain job that lists no members).
	#[default]
	Open,
	/// Only these peers.
	Members(BTreeSet<PeerId>),
}

impl Roster {
	/// Whether `peer` may take part.
	pub fn admits(&self, peer: &PeerId) -> bool {
		match self {
			Roster::Open => true,
			Roster::Members(members) => members.contains(peer),
		}
	}

	/// Those of `peers` that may take part, in their order.
	pub fn filter(&self, mut peers: Vec<PeerId>) -> Vec<PeerId> {
		peers.retain(|p| self.admits(p));
		peers
	}

	/// Everyone either roster admits (the network's filter spans the open round and the one
	/// before, whose late messages still count).
	pub fn union(&self, other: &Roster) -> Roster {
		match (self, other) {
			(Roster::Members(a), Roster::Members(b)) => {
				Roster::Members(a.union(b).copied().collect())
			}
			_ => Roster::Open,
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_roster_admits_its_members_only_and_an_open_one_everyone() {
		let (a, b, stranger) = (PeerId::random(), PeerId::random(), PeerId::random());
		let roster = Roster::Members([a, b].into());
		assert!(roster.admits(&a) && roster.admits(&b) && !roster.admits(&stranger));
		assert_eq!(roster.filter(vec![stranger, b, a]), vec![b, a]);
		assert!(Roster::Open.admits(&stranger));
		let next = Roster::Members([b].into());
		assert_eq!(next.union(&Roster::Members([a].into())), roster);
		assert_eq!(next.union(&Roster::Open), Roster::Open);
		assert_eq!(Roster::Members(BTreeSet::new()).filter(vec![a]), Vec::<PeerId>::new());
	}
}
