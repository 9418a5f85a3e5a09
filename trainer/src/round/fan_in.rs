//! Bounded fan-in: at most `G` of a round's updates are aggregated
//! ([`grid_primitives::job::ExchangeWindow::fan_in`]), so each trainer fetches about `G`
//! updates a round instead of every member's (Templar aggregates 15–20 of up to 250).
//!
//! Which ones is a draw every honest node makes alike: each committer's place is
//! `blake2_256(domain, the round's chain seed, its peer id)`, lowest first. The seed is the
//! chain's (drawn when the round before opened), so no provider can steer it, and a place
//! does not depend on the update, so a committer cannot grind its update into the draw.
//! A trainer fetches the first `G` plus [`spares`] by place; the agreed set
//! ([`crate::round::witness`]) is taken among those, and its first `G` by place are
//! aggregated, so an update withheld from most is replaced by the next one alike everywhere.
//! The chain pays only updates that two thirds of the attesters aggregated, so members not
//! drawn are not paid that round and their update is dropped (carried into the next one it
//! would look twice as long as the others' and set off the fraud desk's norm screen); the
//! round's reward has `G` slots instead of one a member, so a member's expected pay is
//! unchanged.

use libp2p::PeerId;
use sp_crypto_hashing::blake2_256;

use super::messages::Digest;

/// Domain separation for the draw.
const DOMAIN: &[u8] = b"grid/fan-in/v1";

/// Updates fetched past the first `fan_in` by place, so that a withheld one is replaced
/// without a second fetch: a quarter more, at least one.
pub fn spares(fan_in: usize) -> usize {
	(fan_in / 4).max(1)
}

/// A committer's place in a round's draw (lower is drawn first).
pub fn place(seed: &Digest, peer: &PeerId) -> Digest {
	let mut bytes = DOMAIN.to_vec();
	bytes.extend_from_slice(seed);
	bytes.extend_from_slice(&peer.to_bytes());
	blake2_256(&bytes)
}

/// Items keyed by committer.
type Keyed<T> = Vec<(PeerId, T)>;

/// A round's draw: its chain seed and the job's fan-in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
	/// The round's seed.
	pub seed: Digest,
	/// At most this many updates are aggregated.
	pub fan_in: usize,
}

impl Draw {
	/// `items` (keyed by committer) sorted by place.
	fn by_place<T>(&self, items: Vec<(PeerId, T)>) -> Vec<(PeerId, T)> {
		let mut placed: Vec<(Digest, (PeerId, T))> =
			items.into_iter().map(|item| (place(&self.seed, &item.0), item)).collect();
		placed.sort_by_key(|(place, _)| *place);
		placed.into_iter().map(|(_, item)| item).collect()
	}

	/// The first `n` of `items` by place, back in canonical (peer id) order, and the rest.
	fn first<T>(&self, items: Vec<(PeerId, T)>, n: usize) -> (Keyed<T>, Keyed<T>) {
		let mut placed = self.by_place(items);
		let rest = placed.split_off(n.min(placed.len()));
		let mut first = placed;
		first.sort_by_key(|(p, _)| *p);
		(first, rest)
	}

	/// What a trainer fetches and the agreed set is taken from: the first `fan_in` plus
	/// spares of the round's candidates by place, in canonical order.
	pub fn fetched<T>(&self, candidates: Vec<(PeerId, T)>) -> Vec<(PeerId, T)> {
		self.first(candidates, self.fan_in + spares(self.fan_in)).0
	}

	/// The agreed set's first `fan_in` by place (aggregated, in canonical order) and the
	/// members not drawn.
	pub fn drawn<T>(&self, agreed: Vec<(PeerId, T)>) -> (Vec<(PeerId, T)>, Vec<PeerId>) {
		let (drawn, rest) = self.first(agreed, self.fan_in);
		(drawn, rest.into_iter().map(|(p, _)| p).collect())
	}

	/// Whether `peer`'s update is worth fetching as soon as its commitment comes, in a round
	/// of about `members` committers: its place is within the share of the places that the
	/// fetched first `fan_in` plus spares are expected to take (a little more, so that most
	/// of the final list is here before the decision; the rest is fetched then).
	pub fn likely_fetched(&self, peer: &PeerId, members: usize) -> bool {
		let wanted = (self.fan_in + spares(self.fan_in)) as f64 * 1.25;
		if wanted >= members as f64 {
			return true;
		}
		let p = place(&self.seed, peer);
		let position = u64::from_be_bytes(p[..8].try_into().expect("8 bytes")) as f64;
		position / (u64::MAX as f64) < wanted / members as f64
	}
}

#[cfg(test)]
mod tests {
	use std::collections::BTreeMap;

	use super::*;

	/// `n` fixed peers (the same every run: these tests are deterministic).
	fn peers(n: usize) -> Vec<(PeerId, usize)> {
		let peer = |i: usize| {
			let mut secret = [7u8; 32];
			secret[..8].copy_from_slice(&(i as u64).to_le_bytes());
			let key = libp2p::identity::Keypair::ed25519_from_bytes(secret).expect("32 bytes");
			key.public().to_peer_id()
		};
		let mut peers: Vec<(PeerId, usize)> = (0..n).map(|i| (peer(i), i)).collect();
		peers.sort_by_key(|(p, _)| *p);
		peers
	}

	fn draw(seed: u8, fan_in: usize) -> Draw {
		Draw { seed: [seed; 32], fan_in }
	}

	#[test]
	fn every_node_draws_the_same_members_whatever_order_it_heard_them_in() {
		let all = peers(20);
		let d = draw(1, 5);
		let (drawn, not_drawn) = d.drawn(all.clone());
		assert_eq!(drawn.len(), 5);
		assert_eq!(not_drawn.len(), 15);
		assert!(drawn.windows(2).all(|w| w[0].0 < w[1].0), "canonical order");
		let mut reversed = all.clone();
		reversed.reverse();
		assert_eq!(d.drawn(reversed), (drawn.clone(), not_drawn));
		// Another round's seed draws others.
		assert_ne!(draw(2, 5).drawn(all.clone()).0, drawn);
		// Fewer members than the fan-in: every one.
		assert_eq!(d.drawn(all[..4].to_vec()).0, all[..4].to_vec());
	}

	#[test]
	fn a_place_is_the_peers_and_the_seeds_not_the_updates() {
		// A committer that changes its update (grinding for a place) keeps its place: the
		// draw reads only the seed and the peer id.
		let all = peers(12);
		let d = draw(3, 4);
		let ground: Vec<(PeerId, usize)> = all.iter().map(|(p, i)| (*p, i + 1000)).collect();
		let names = |v: Vec<(PeerId, usize)>| v.into_iter().map(|(p, _)| p).collect::<Vec<_>>();
		assert_eq!(names(d.drawn(all).0), names(d.drawn(ground).0));
	}

	#[test]
	fn a_withheld_drawn_update_is_replaced_by_the_next_by_place() {
		let all = peers(16);
		let d = draw(4, 4);
		let fetched = d.fetched(all.clone());
		assert_eq!(fetched.len(), 4 + spares(4));
		let (drawn, _) = d.drawn(fetched.clone());
		// The agreed set lacks one drawn member (its update was withheld from most).
		let withheld = drawn[0].0;
		let agreed: Vec<_> = fetched.into_iter().filter(|(p, _)| *p != withheld).collect();
		let (again, not_drawn) = d.drawn(agreed);
		assert_eq!(again.len(), 4, "a spare takes its place");
		assert!(!again.iter().any(|(p, _)| *p == withheld));
		assert_eq!(
			again.iter().filter(|(p, _)| drawn.iter().any(|(q, _)| q == p)).count(),
			3,
			"the other three stay"
		);
		assert_eq!(not_drawn.len(), spares(4) - 1);
		assert_eq!(spares(16), 4);
	}

	#[test]
	fn over_many_rounds_every_member_is_drawn_about_as_often() {
		let all = peers(16);
		let mut times: BTreeMap<PeerId, usize> = BTreeMap::new();
		for round in 0..400u32 {
			let mut seed = [0u8; 32];
			seed[..4].copy_from_slice(&round.to_le_bytes());
			let (drawn, _) = Draw { seed, fan_in: 4 }.drawn(all.clone());
			for (p, _) in drawn {
				*times.entry(p).or_default() += 1;
			}
		}
		// Expected 100 each (400 rounds × 4 / 16); binomial spread about 8.7.
		assert_eq!(times.len(), 16, "every member drawn");
		assert!(times.values().all(|&t| (60..=140).contains(&t)), "{times:?}");
	}

	#[test]
	fn early_fetches_cover_most_of_what_is_fetched() {
		let all = peers(64);
		let d = draw(5, 16);
		let fetched = d.fetched(all.clone());
		let early: Vec<_> = all.iter().filter(|(p, _)| d.likely_fetched(p, 64)).collect();
		let covered = fetched.iter().filter(|(p, _)| d.likely_fetched(p, 64)).count();
		assert!(covered >= fetched.len() * 3 / 4, "{covered} of {}", fetched.len());
		assert!(early.len() < 48, "{} fetched early of 64", early.len());
		assert!(all.iter().all(|(p, _)| d.likely_fetched(p, 20)), "few members: every one");
	}
}
