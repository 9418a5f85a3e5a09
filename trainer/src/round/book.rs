//! One round of the exchange, as bookkeeping: which signed commitments arrived in time,
//! who equivocated, which base state the majority trained from, and the canonical set every
//! honest participant aggregates.
//!
//! The set of a round is the commitments received before the round's collection deadline
//! whose base state is the node's own, minus equivocators, ordered by signer peer id. Honest
//! nodes whose gossip arrived in time therefore agree on it; a node that disagrees (it heard
//! a commitment others missed) ends with a different model, sees next round that its base is
//! not the majority's, and re-syncs the state from a peer.
//!
//! "Received before the deadline" is judged by when a commitment was heard against the
//! deadline's clock, not by when this node's round loop got round to closing the book: a
//! node held past the deadline (its own steps overran) would otherwise count the late
//! commitments that came in while it worked, and when every committer was late each node
//! counted a different subset (a CI run's three providers decided two models).

use std::{
	collections::{BTreeMap, BTreeSet},
	time::Instant,
};

use grid_primitives::job::{JobId, RoundIndex};
use libp2p::PeerId;

use super::{
	messages::{Commitment, Digest, Equivocation, SignedCommitment},
	roster::Roster,
};

/// How a commitment reached this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
	/// Gossip brought it at this instant (when the network task took it in, not when the
	/// round loop got to it): late from the round's collection deadline on.
	Heard(Instant),
	/// A peer passed it on, with a state or when asked for the round's commitments: late
	/// only once the book is closed. What the relayer heard, whenever it did; the round's
	/// witnesses, not its arrival time, decide whether its update is in.
	Relayed,
}

/// What happened to an offered commitment.
#[derive(Clone, Debug, PartialEq)]
pub enum Offer {
	/// First commitment of this signer for the round.
	Accepted,
	/// The same commitment again.
	Duplicate,
	/// A different commitment from a signer who already committed: evidence.
	Equivocation(Box<Equivocation>),
	/// Arrived after the collection deadline.
	Late,
	/// For another round.
	OtherRound,
	/// The round already has [`MAX_SIGNERS`] signers.
	Full,
	/// Claims work the job does not allow: samples other than steps x the job's batch, or
	/// more steps than its cap (the samples weight the update in the aggregate), or an
	/// update longer than any the job's model encodes to (fetchers would size their
	/// downloads by it).
	BadClaim {
		/// Samples claimed.
		samples: u64,
		/// Steps claimed.
		steps: u32,
		/// Update bytes claimed.
		update_len: u64,
	},
	/// The update another signer (the peer given) committed first: a copy, left out so that
	/// one update is neither aggregated nor attested twice (the chain pays only the one more
	/// attesters used).
	Copied(PeerId),
	/// The signer is not on the round's [`Roster`]: not kept, not even as evidence (a
	/// stranger's key binds nobody's stake).
	Stranger,
}

/// Most signers a round takes (the chain takes at most 64 peers per proof; keys are free,
/// so without a bound a flood of self-made signers could exhaust memory).
pub const MAX_SIGNERS: usize = 256;

/// What a commitment may claim in a job: every inner step trains on one batch of the job's
/// size, and a round runs at most the job's step cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimRule {
	/// Samples per inner step.
	pub batch: u64,
	/// Most inner steps per round (`None`: no cap).
	pub max_steps: Option<u32>,
	/// Longest update an encoding of the job's model can have
	/// ([`crate::compress::max_encoded_len`]).
	pub max_update_len: u64,
}

impl ClaimRule {
	/// Whether `samples` over `steps` is work the job allows.
	pub fn allows_work(&self, samples: u64, steps: u32) -> bool {
		let capped = self.max_steps.is_some_and(|cap| steps > cap);
		!capped && u64::from(steps).checked_mul(self.batch) == Some(samples)
	}

	/// Whether `c` claims work the job allows and an update its model can encode to.
	pub fn allows(&self, c: &Commitment) -> bool {
		self.allows_work(c.samples, c.steps) && c.update_len <= self.max_update_len
	}
}

/// The commitments of one round.
#[derive(Clone, Debug)]
pub struct RoundBook {
	job: JobId,
	round: RoundIndex,
	claims: ClaimRule,
	commitments: BTreeMap<PeerId, SignedCommitment>,
	equivocators: BTreeSet<PeerId>,
	/// Signers whose commitment claims work the job does not allow.
	bad_claims: BTreeSet<PeerId>,
	/// Signers whose first commitment named an update another signer committed first: the
	/// original's signer and the copy's commitment (its claim to have computed the update,
	/// which the fraud desk refutes).
	copies: BTreeMap<PeerId, (PeerId, SignedCommitment)>,
	/// Commitments that arrived after the collection deadline (first per signer, claims
	/// allowed, not copies): in the round's agreed set only if most witnesses, who heard
	/// them in time, hold their updates ([`super::witness`]).
	late: BTreeMap<PeerId, SignedCommitment>,
	/// The collection deadline, when known: a commitment heard at or after it is late.
	closes_at: Option<Instant>,
	/// Closed explicitly (the collection ended): whatever comes now is late.
	closed: bool,
	/// Who may commit.
	roster: Roster,
}

impl RoundBook {
	/// An empty book for `round` of `job`.
	pub fn new(job: JobId, round: RoundIndex, claims: ClaimRule) -> Self {
		RoundBook {
			job,
			round,
			claims,
			commitments: BTreeMap::new(),
			equivocators: BTreeSet::new(),
			bad_claims: BTreeSet::new(),
			copies: BTreeMap::new(),
			late: BTreeMap::new(),
			closes_at: None,
			closed: false,
			roster: Roster::Open,
		}
	}

	/// Takes commitments only from `roster`'s signers from now on, and forgets those taken
	/// from others (a book opened before its round's members were known).
	pub fn admit_only(&mut self, roster: Roster) {
		let admitted = |peer: &PeerId| roster.admits(peer);
		self.commitments.retain(|p, _| admitted(p));
		self.equivocators.retain(admitted);
		self.bad_claims.retain(admitted);
		self.late.retain(|p, _| admitted(p));
		// A member whose update a stranger committed first was taken for its copy: offered
		// again, it is the original (or, where several were, the others are its copies).
		let copies = std::mem::take(&mut self.copies);
		let (kept, orphans): (BTreeMap<_, _>, BTreeMap<_, _>) =
			copies.into_iter().filter(|(p, _)| admitted(p)).partition(|(_, (o, _))| admitted(o));
		self.copies = kept;
		self.roster = roster;
		for (peer, (_, signed)) in orphans {
			self.offer_as(peer, signed, Arrival::Relayed);
		}
	}

	/// Who may commit.
	pub fn roster(&self) -> &Roster {
		&self.roster
	}

	/// The round.
	pub fn round(&self) -> RoundIndex {
		self.round
	}

	/// Records a verified commitment by `signer`, heard now.
	pub fn offer(&mut self, signer: PeerId, signed: SignedCommitment) -> Offer {
		self.offer_as(signer, signed, Arrival::Heard(Instant::now()))
	}

	/// Records a verified commitment by `signer` that came as `arrival` says.
	pub fn offer_as(
		&mut self,
		signer: PeerId,
		signed: SignedCommitment,
		arrival: Arrival,
	) -> Offer {
		let c = &signed.commitment;
		if c.round != self.round || c.job != self.job {
			return Offer::OtherRound;
		}
		if !self.roster.admits(&signer) {
			return Offer::Stranger;
		}
		if let Some(first) = self.commitments.get(&signer) {
			if first == &signed || first.commitment == signed.commitment {
				return Offer::Duplicate;
			}
			self.equivocators.insert(signer);
			return Offer::Equivocation(Box::new(Equivocation {
				first: first.clone(),
				second: signed,
			}));
		}
		let hash = signed.commitment.update_hash;
		let same = |first: &SignedCommitment| first.commitment.update_hash == hash;
		if self.is_late(arrival) {
			let room = self.commitments.len() + self.late.len() < MAX_SIGNERS;
			let keep = room
				&& self.claims.allows(c)
				&& !self.commitments.values().any(same)
				&& !self.late.values().any(same);
			if keep {
				self.late.entry(signer).or_insert(signed);
			}
			return Offer::Late;
		}
		if self.commitments.len() >= MAX_SIGNERS {
			return Offer::Full;
		}
		if let Some((original, _)) = self.commitments.iter().find(|(_, first)| same(first)) {
			let original = *original;
			self.copies.entry(signer).or_insert((original, signed));
			return Offer::Copied(original);
		}
		// Kept even when refused: a second, different commitment of the signer is evidence.
		let offer = if self.claims.allows(c) {
			Offer::Accepted
		} else {
			self.bad_claims.insert(signer);
			Offer::BadClaim { samples: c.samples, steps: c.steps, update_len: c.update_len }
		};
		self.commitments.insert(signer, signed);
		offer
	}

	/// `peer`'s commitment when it is in [`RoundBook::set`]`(base)`: it counts and trained
	/// from `base`.
	pub fn in_set(&self, peer: &PeerId, base: &Digest) -> Option<&SignedCommitment> {
		self.commitments.get(peer).filter(|s| self.counts(peer) && &s.commitment.base_state == base)
	}

	/// The commitments that count, by signer in canonical (peer id) order.
	fn counting(&self) -> impl Iterator<Item = (&PeerId, &SignedCommitment)> {
		self.commitments.iter().filter(|(peer, _)| self.counts(peer))
	}

	/// The commitments of [`RoundBook::set`]`(base)`, without copying them.
	fn trained_from<'a>(
		&'a self,
		base: &'a Digest,
	) -> impl Iterator<Item = (&'a PeerId, &'a SignedCommitment)> {
		self.counting().filter(move |(_, s)| &s.commitment.base_state == base)
	}

	/// Whether `peer`'s commitment counts: neither an equivocator's nor a bad claim.
	fn counts(&self, peer: &PeerId) -> bool {
		!self.equivocators.contains(peer) && !self.bad_claims.contains(peer)
	}

	/// Stops admitting new signers (the collection deadline passed).
	pub fn close(&mut self) {
		self.closed = true;
	}

	/// Sets the collection deadline: commitments heard from `at` on are late, however
	/// long the book stays open.
	pub fn close_at(&mut self, at: Instant) {
		self.closes_at = Some(at);
	}

	/// Whether a commitment that came as `arrival` says is late.
	fn is_late(&self, arrival: Arrival) -> bool {
		let past = |at: Instant| self.closes_at.is_some_and(|deadline| at >= deadline);
		self.closed || matches!(arrival, Arrival::Heard(at) if past(at))
	}

	/// Whether the collection deadline passed.
	pub fn is_closed(&self) -> bool {
		self.closed
	}

	/// Signers that equivocated this round.
	pub fn equivocators(&self) -> &BTreeSet<PeerId> {
		&self.equivocators
	}

	/// Number of signers heard.
	pub fn len(&self) -> usize {
		self.commitments.len()
	}

	/// Whether nobody committed.
	pub fn is_empty(&self) -> bool {
		self.commitments.is_empty()
	}

	/// Whether `peer` committed.
	pub fn has(&self, peer: &PeerId) -> bool {
		self.commitments.contains_key(peer)
	}

	/// Whether a commitment to the update `hash` was heard this round (in time, late, or
	/// a copy's).
	pub fn heard_update(&self, hash: &Digest) -> bool {
		let names = |s: &SignedCommitment| s.commitment.update_hash == *hash;
		self.commitments.values().any(names)
			|| self.late.values().any(names)
			|| self.copies.values().any(|(_, s)| names(s))
	}

	/// The base state most signers trained from, with their count (ties: the smaller hash,
	/// so every node picks the same). Equivocators and bad claims do not count.
	pub fn majority_base(&self) -> Option<(Digest, usize)> {
		let mut counts: BTreeMap<Digest, usize> = BTreeMap::new();
		for (_, s) in self.counting() {
			*counts.entry(s.commitment.base_state).or_default() += 1;
		}
		counts.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
	}

	/// The signers that trained from `base` (and count): the peers that hold that state.
	pub fn committers_from(&self, base: &Digest) -> Vec<PeerId> {
		self.trained_from(base).map(|(peer, _)| *peer).collect()
	}

	/// The copies of updates in [`RoundBook::set`]`(base)` whose signers committed nothing
	/// else that counts: (copier, original's signer, the copy's commitment). Their claims
	/// are what the fraud desk replays (a copier that went on to commit its own update is
	/// judged by that one).
	pub fn copies(&self, base: &Digest) -> Vec<(PeerId, PeerId, SignedCommitment)> {
		self.copies
			.iter()
			.filter(|(copier, (original, _))| {
				!self.commitments.contains_key(copier) && self.in_set(original, base).is_some()
			})
			.map(|(copier, (original, signed))| (*copier, *original, signed.clone()))
			.collect()
	}

	/// The signers whose first commitment came after the collection deadline: candidates
	/// that only a witness holding their update gets into the agreed set
	/// ([`super::witness`]).
	pub fn late_signers(&self) -> BTreeSet<PeerId> {
		self.late.keys().copied().collect()
	}

	/// The aggregation set for a node at `base`: commitments from that base, without
	/// equivocators and bad claims, in canonical (peer id) order.
	pub fn set(&self, base: &Digest) -> Vec<(PeerId, SignedCommitment)> {
		self.trained_from(base).map(|(p, s)| (*p, s.clone())).collect()
	}

	/// What the round's agreed set is chosen from at `base`: [`RoundBook::set`] and the late
	/// commitments from `base`, in canonical (peer id) order.
	pub fn candidates(&self, base: &Digest) -> Vec<(PeerId, SignedCommitment)> {
		let late = self
			.late
			.iter()
			.filter(|(p, s)| !self.equivocators.contains(p) && &s.commitment.base_state == base)
			.map(|(p, s)| (*p, s.clone()));
		let mut all: Vec<_> = self.set(base).into_iter().chain(late).collect();
		all.sort_by_key(|(p, _)| *p);
		all
	}
}

/// Most commitments for coming rounds kept (a bound on what a flood of signers costs).
pub const MAX_FUTURE: usize = 1024;
/// How many rounds ahead a commitment may be and still be kept for later.
const FUTURE_ROUNDS: RoundIndex = 2;

/// The open round's book, and the commitments heard early for the rounds after it.
#[derive(Clone, Debug)]
pub struct Books {
	current: RoundBook,
	/// With how each came: one heard before its round's collection deadline is in time
	/// even if this node opens the round's book after it (its last round ran long).
	future: Vec<(PeerId, SignedCommitment, Arrival)>,
}

impl Books {
	/// Books starting at `round` of `job`, whose commitments must keep to `claims`.
	pub fn new(job: JobId, round: RoundIndex, claims: ClaimRule) -> Self {
		Books { current: RoundBook::new(job, round, claims), future: Vec::new() }
	}

	/// The open round's book.
	pub fn current(&self) -> &RoundBook {
		&self.current
	}

	/// Closes the open round's book (its collection deadline passed).
	pub fn close(&mut self) {
		self.current.close();
	}

	/// Sets the open round's collection deadline ([`RoundBook::close_at`]).
	pub fn close_at(&mut self, at: Instant) {
		self.current.close_at(at);
	}

	/// Takes the open round's commitments only from `roster`'s signers
	/// ([`RoundBook::admit_only`]).
	pub fn admit_only(&mut self, roster: Roster) {
		self.current.admit_only(roster);
	}

	/// A fresh book for `round`, taking commitments from `roster`'s signers, closing at
	/// `closes_at` when known, offered the commitments kept for it as of how each came;
	/// returns what became of each (equivocations among them are evidence).
	pub fn open(
		&mut self,
		round: RoundIndex,
		roster: Roster,
		closes_at: Option<Instant>,
	) -> Vec<(PeerId, Offer)> {
		self.current = RoundBook::new(self.current.job, round, self.current.claims);
		self.current.roster = roster;
		if let Some(at) = closes_at {
			self.current.close_at(at);
		}
		let mut offers = Vec::new();
		for (peer, signed, arrival) in std::mem::take(&mut self.future) {
			match signed.commitment.round.cmp(&round) {
				std::cmp::Ordering::Equal => {
					offers.push((peer, self.current.offer_as(peer, signed, arrival)))
				}
				std::cmp::Ordering::Greater => self.future.push((peer, signed, arrival)),
				std::cmp::Ordering::Less => {}
			}
		}
		offers
	}

	/// A verified commitment of `signer` that came as `arrival` says: offered to the open
	/// round's book, kept for a coming round (`None`), or dropped (`None`: past, too far
	/// ahead, or too many).
	pub fn heard(
		&mut self,
		signer: PeerId,
		signed: SignedCommitment,
		arrival: Arrival,
	) -> Option<Offer> {
		let (round, open) = (signed.commitment.round, self.current.round());
		match round.cmp(&open) {
			std::cmp::Ordering::Equal => Some(self.current.offer_as(signer, signed, arrival)),
			std::cmp::Ordering::Greater
				if round <= open + FUTURE_ROUNDS && self.future.len() < MAX_FUTURE =>
			{
				self.future.push((signer, signed, arrival));
				None
			}
			_ => None,
		}
	}
}

#[cfg(test)]
pub(crate) mod tests {
	use super::*;
	use crate::round::messages::Commitment;
	use libp2p::identity::Keypair;

	/// The tests' job: batches of 32, no step cap.
	pub(crate) const RULE: ClaimRule =
		ClaimRule { batch: 32, max_steps: None, max_update_len: 1 << 20 };

	fn signed(key: &Keypair, round: RoundIndex, base: u8, update: u8) -> SignedCommitment {
		Commitment {
			job: 1,
			round,
			chain: [0; 32],
			manifest_hash: [0; 32],
			base_state: [base; 32],
			base_model_hash: [base; 32],
			update_hash: [update; 32],
			update_len: 10,
			samples: 32,
			steps: 1,
			start: crate::work_state::WorkState::fresh(1, false).digests(),
			trajectory: [base; 32],
			compute_millis: 5,
			train_loss_bits: 0,
		}
		.sign(key)
		.unwrap()
	}

	#[test]
	fn the_set_is_canonical_and_excludes_late_foreign_and_equivocating_signers() {
		let keys: Vec<Keypair> = (0..4).map(|_| Keypair::generate_ed25519()).collect();
		let peers: Vec<PeerId> = keys.iter().map(|k| k.public().to_peer_id()).collect();
		let offer_all = |order: &[usize]| {
			let mut book = RoundBook::new(1, 5, RULE);
			for &i in order {
				assert_eq!(book.offer(peers[i], signed(&keys[i], 5, 1, i as u8)), Offer::Accepted);
			}
			book
		};
		let a = offer_all(&[0, 1, 2]);
		let b = offer_all(&[2, 0, 1]);
		let set_a: Vec<PeerId> = a.set(&[1; 32]).into_iter().map(|(p, _)| p).collect();
		let set_b: Vec<PeerId> = b.set(&[1; 32]).into_iter().map(|(p, _)| p).collect();
		assert_eq!(set_a, set_b, "arrival order must not matter");
		let mut sorted = set_a.clone();
		sorted.sort();
		assert_eq!(set_a, sorted);

		let mut book = offer_all(&[0, 1]);
		assert_eq!(book.offer(peers[0], signed(&keys[0], 5, 1, 0)), Offer::Duplicate);
		assert_eq!(book.offer(peers[0], signed(&keys[0], 6, 1, 0)), Offer::OtherRound);
		match book.offer(peers[1], signed(&keys[1], 5, 1, 99)) {
			Offer::Equivocation(e) => assert_eq!(e.verify().unwrap(), peers[1]),
			other => panic!("expected equivocation, got {other:?}"),
		}
		// A peer on another base does not join the set but counts for the majority.
		assert_eq!(book.offer(peers[2], signed(&keys[2], 5, 2, 2)), Offer::Accepted);
		book.close();
		assert_eq!(book.offer(peers[3], signed(&keys[3], 5, 1, 3)), Offer::Late);
		let set: Vec<PeerId> = book.set(&[1; 32]).into_iter().map(|(p, _)| p).collect();
		assert_eq!(set, vec![peers[0]]);
		// A late commitment is no member of the set, only a candidate for the agreed one
		// (witnesses decide); a late copy of a kept update is not even that.
		let candidates: Vec<PeerId> =
			book.candidates(&[1; 32]).into_iter().map(|(p, _)| p).collect();
		let mut expected = vec![peers[0], peers[3]];
		expected.sort();
		assert_eq!(candidates, expected);
		let copier = Keypair::generate_ed25519();
		let copy = signed(&copier, 5, 1, 3);
		assert_eq!(book.offer(copier.public().to_peer_id(), copy), Offer::Late);
		assert_eq!(book.candidates(&[1; 32]).len(), 2);
		// What was heard, in time or late, is not asked of witnesses again.
		assert!([0, 1, 2, 3].iter().all(|&u| book.heard_update(&[u; 32])));
		assert!(!book.heard_update(&[99; 32]) && !book.heard_update(&[42; 32]));
		// Bases 1 and 2 have one honest signer each: the tie goes to the smaller hash.
		assert_eq!(book.majority_base(), Some(([1; 32], 1)));
	}

	#[test]
	fn a_copied_update_is_left_out_and_the_original_kept() {
		let keys: Vec<Keypair> = (0..3).map(|_| Keypair::generate_ed25519()).collect();
		let peers: Vec<PeerId> = keys.iter().map(|k| k.public().to_peer_id()).collect();
		let mut book = RoundBook::new(1, 5, RULE);
		assert_eq!(book.offer(peers[0], signed(&keys[0], 5, 1, 7)), Offer::Accepted);
		// A copier signs the honest update's hash under its own key.
		assert_eq!(book.offer(peers[1], signed(&keys[1], 5, 1, 7)), Offer::Copied(peers[0]));
		assert_eq!(book.offer(peers[2], signed(&keys[2], 5, 1, 8)), Offer::Accepted);
		let set: Vec<PeerId> = book.set(&[1; 32]).into_iter().map(|(p, _)| p).collect();
		assert!(set.contains(&peers[0]) && set.contains(&peers[2]) && !set.contains(&peers[1]));
		// Its claim is kept for the fraud desk, once.
		let copy = signed(&keys[1], 5, 1, 7);
		assert_eq!(book.copies(&[1; 32]), vec![(peers[1], peers[0], copy.clone())]);
		assert_eq!(book.offer(peers[1], copy), Offer::Copied(peers[0]));
		assert_eq!(book.copies(&[1; 32]).len(), 1);
		assert!(book.copies(&[2; 32]).is_empty(), "copies of updates from another base");
		// Left out, the copier can still commit its own update, which is then what counts.
		assert_eq!(book.offer(peers[1], signed(&keys[1], 5, 1, 9)), Offer::Accepted);
		assert!(book.copies(&[1; 32]).is_empty());
	}

	#[test]
	fn a_round_takes_a_bounded_number_of_signers() {
		let mut book = RoundBook::new(1, 0, RULE);
		for i in 0..MAX_SIGNERS {
			let key = Keypair::generate_ed25519();
			let offer = book.offer(key.public().to_peer_id(), signed(&key, 0, 1, i as u8));
			assert_eq!(offer, Offer::Accepted);
		}
		let key = Keypair::generate_ed25519();
		assert_eq!(book.offer(key.public().to_peer_id(), signed(&key, 0, 1, 0)), Offer::Full);
		assert_eq!(book.len(), MAX_SIGNERS);
	}

	#[test]
	fn early_commitments_wait_for_their_round_within_bounds() {
		let keys: Vec<Keypair> = (0..3).map(|_| Keypair::generate_ed25519()).collect();
		let peers: Vec<PeerId> = keys.iter().map(|k| k.public().to_peer_id()).collect();
		let mut books = Books::new(1, 5, RULE);
		let mut heard = |peer, signed| books.heard(peer, signed, Arrival::Heard(Instant::now()));
		assert_eq!(heard(peers[0], signed(&keys[0], 5, 1, 0)), Some(Offer::Accepted));
		assert_eq!(heard(peers[1], signed(&keys[1], 6, 1, 1)), None, "kept for round 6");
		assert_eq!(heard(peers[2], signed(&keys[2], 9, 1, 2)), None, "too far ahead");
		assert_eq!(heard(peers[2], signed(&keys[2], 4, 1, 2)), None, "past");
		// Round 6 opens with the early commitment, and an equivocation of it is caught.
		let offers = books.open(6, Roster::Open, None);
		assert_eq!(offers, vec![(peers[1], Offer::Accepted)]);
		assert!(books.current().has(&peers[1]) && !books.current().has(&peers[0]));
		let twin = books.heard(peers[1], signed(&keys[1], 6, 1, 7), Arrival::Heard(Instant::now()));
		assert!(matches!(twin, Some(Offer::Equivocation(_))), "{twin:?}");
		// Round 9's commitment was dropped, not kept.
		assert!(books.open(9, Roster::Open, None).is_empty());
		// A closed book takes no new signers.
		books.close();
		let late = books.heard(peers[0], signed(&keys[0], 9, 1, 0), Arrival::Heard(Instant::now()));
		assert_eq!(late, Some(Offer::Late));
	}

	/// Lateness is when a commitment was heard against the collection deadline, not when
	/// the round loop closed the book: a node whose own steps overran (every committer of
	/// a CI run's round was late) took the late commitments heard while it worked, and
	/// each node a different subset of them.
	#[test]
	fn lateness_is_judged_by_when_a_commitment_was_heard() {
		let keys: Vec<Keypair> = (0..5).map(|_| Keypair::generate_ed25519()).collect();
		let peers: Vec<PeerId> = keys.iter().map(|k| k.public().to_peer_id()).collect();
		let deadline = Instant::now();
		let before = Arrival::Heard(deadline - std::time::Duration::from_millis(10));
		let after = Arrival::Heard(deadline + std::time::Duration::from_millis(10));
		let mut books = Books::new(1, 5, RULE);
		books.close_at(deadline);
		assert_eq!(books.heard(peers[0], signed(&keys[0], 5, 1, 0), before), Some(Offer::Accepted));
		// Heard past the deadline while the book was still open: late all the same.
		assert_eq!(books.heard(peers[1], signed(&keys[1], 5, 1, 1), after), Some(Offer::Late));
		assert!(!books.current().is_closed());
		// Relayed (with a state a joiner fetched past the deadline): what the relayer heard;
		// late only once the book is closed.
		let relayed = books.heard(peers[4], signed(&keys[4], 5, 1, 4), Arrival::Relayed);
		assert_eq!(relayed, Some(Offer::Accepted));
		let set: Vec<PeerId> = books.current().set(&[1; 32]).into_iter().map(|(p, _)| p).collect();
		let mut expected = vec![peers[0], peers[4]];
		expected.sort();
		assert_eq!(set, expected);
		assert_eq!(books.current().late_signers(), [peers[1]].into());
		assert_eq!(books.current().candidates(&[1; 32]).len(), 3, "late, still a candidate");
		// A commitment for round 6 heard before round 6's deadline is in time though its
		// book opens after that deadline (this node's round 5 ran long); one heard after it
		// is late.
		assert_eq!(books.heard(peers[2], signed(&keys[2], 6, 1, 2), before), None);
		assert_eq!(books.heard(peers[3], signed(&keys[3], 6, 1, 3), after), None);
		let mut offers = books.open(6, Roster::Open, Some(deadline));
		offers.sort_by_key(|(p, _)| *p);
		let mut expected = vec![(peers[2], Offer::Accepted), (peers[3], Offer::Late)];
		expected.sort_by_key(|(p, _)| *p);
		assert_eq!(offers, expected);
		// Closed, a relayed one is late too; without a known deadline only a close makes a
		// heard one late.
		books.close();
		let relayed = books.heard(peers[4], signed(&keys[4], 6, 1, 4), Arrival::Relayed);
		assert_eq!(relayed, Some(Offer::Late));
		let mut book = RoundBook::new(1, 7, RULE);
		assert_eq!(book.offer_as(peers[0], signed(&keys[0], 7, 1, 0), after), Offer::Accepted);
	}

	#[test]
	fn claims_the_job_does_not_allow_are_left_out_of_the_set_and_still_bind_their_signer() {
		let keys: Vec<Keypair> = (0..4).map(|_| Keypair::generate_ed25519()).collect();
		let rule = ClaimRule { batch: 32, max_steps: Some(4), max_update_len: 1_000 };
		let mut book = RoundBook::new(1, 5, rule);
		let claim = |key: &Keypair, samples, steps, update_len| {
			let mut signed = signed(key, 5, 1, steps as u8);
			signed.commitment.samples = samples;
			signed.commitment.steps = steps;
			signed.commitment.update_len = update_len;
			signed.commitment.sign(key).unwrap()
		};
		// More samples than its steps train on (they would weigh its update up), more steps
		// than the job allows, an update longer than the model's longest encoding (each
		// fetcher would reserve its length: 2^62 bytes aborted them).
		let bad = [(33, 1, 10), (1_000_000, 2, 10), (5 * 32, 5, 10), (96, 3, 1 << 62)];
		for (key, (samples, steps, update_len)) in keys.iter().zip(bad) {
			let got = book.offer(key.public().to_peer_id(), claim(key, samples, steps, update_len));
			assert_eq!(got, Offer::BadClaim { samples, steps, update_len }, "{samples}, {steps}");
		}
		let keys: Vec<Keypair> =
			keys.into_iter().chain(std::iter::once(Keypair::generate_ed25519())).collect();
		let honest = keys[4].public().to_peer_id();
		assert_eq!(book.offer(honest, claim(&keys[4], 4 * 32, 4, 1_000)), Offer::Accepted);
		let set: Vec<PeerId> = book.set(&[1; 32]).into_iter().map(|(p, _)| p).collect();
		assert_eq!(set, vec![honest], "only the allowed claim is aggregated");
		assert_eq!(book.majority_base(), Some(([1; 32], 1)));
		// A refused signer that signs another commitment has equivocated.
		let cheat = keys[0].public().to_peer_id();
		assert!(matches!(book.offer(cheat, claim(&keys[0], 32, 1, 10)), Offer::Equivocation(_)));
		let overflow = ClaimRule { batch: u64::MAX, max_steps: None, max_update_len: 1 };
		assert!(!overflow.allows_work(u64::MAX, 2));
	}

	/// Keys are free: strangers that commit first must neither fill the round nor get into
	/// its set, and a book opened before its members were known forgets what they sent.
	#[test]
	fn strangers_neither_fill_a_rounds_book_nor_enter_its_set() {
		let members: Vec<Keypair> = (0..3).map(|_| Keypair::generate_ed25519()).collect();
		let ids: Vec<PeerId> = members.iter().map(|k| k.public().to_peer_id()).collect();
		let roster = Roster::Members(ids.iter().copied().collect());
		let mut books = Books::new(1, 4, RULE);
		assert!(books.open(5, roster.clone(), None).is_empty());
		let strangers: Vec<Keypair> =
			(0..MAX_SIGNERS + 1).map(|_| Keypair::generate_ed25519()).collect();
		let mut book = books.current().clone();
		for (i, key) in strangers.iter().enumerate() {
			// A stranger that copies a member's update cannot make the member a copier.
			let update = if i == 0 { 0 } else { (i % 200 + 10) as u8 };
			let got = book.offer(key.public().to_peer_id(), signed(key, 5, 1, update));
			assert_eq!(got, Offer::Stranger);
		}
		for (i, key) in members.iter().enumerate() {
			assert_eq!(book.offer(ids[i], signed(key, 5, 1, i as u8)), Offer::Accepted);
		}
		let set: Vec<PeerId> = book.set(&[1; 32]).into_iter().map(|(p, _)| p).collect();
		let mut sorted = ids.clone();
		sorted.sort();
		assert_eq!(set, sorted);
		// Taken before the roster was known (an open book), then forgotten once it is.
		let mut early = RoundBook::new(1, 5, RULE);
		let stranger = &strangers[0];
		let stranger_id = stranger.public().to_peer_id();
		assert_eq!(early.offer(stranger_id, signed(stranger, 5, 1, 0)), Offer::Accepted);
		assert_eq!(early.offer(ids[0], signed(&members[0], 5, 1, 0)), Offer::Copied(stranger_id));
		early.admit_only(roster);
		assert!(!early.has(&stranger_id));
		let set: Vec<PeerId> = early.set(&[1; 32]).into_iter().map(|(p, _)| p).collect();
		assert_eq!(set, vec![ids[0]], "the member the stranger front-ran is the original again");
		assert_eq!(early.offer(stranger_id, signed(stranger, 5, 1, 7)), Offer::Stranger);
		assert_eq!(early.offer(ids[1], signed(&members[1], 5, 1, 1)), Offer::Accepted);
	}
}
