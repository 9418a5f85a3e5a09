//! The agreed set of a round, by availability attestations (as Psyche's witnesses do).
//!
//! A round's set used to be "the commitments a node heard in time whose updates it fetched
//! before its deadline": a node that missed one fetch aggregated another set, computed
//! another model and re-synced. Now, once its fetches end, every committer signs the list of
//! the round's updates it holds and gossips it ([`Attestation`]). A committed update is in
//! the agreed set when at least half of the *other* committers that attested hold it
//! ([`Witnesses::agree`]); a node that lacks one of those fetches it from the holders and
//! waits for it, rather than aggregate without it. Honest nodes that heard the same
//! attestations therefore aggregate the same set, whichever fetches failed for whom; an
//! update withheld from most is left out by everyone alike.
//!
//! A commitment late for a node (heard after its collection deadline,
//! [`super::book`]) is in only if some other committer holds it: a witness that heard it in
//! time. It never gets in for want of attesters, as an in-time one does for a node alone:
//! when every committer of a round was late, the first to decide heard no one else yet
//! and kept its own update, while the others, who heard it late, left it out.
//!
//! A node that has not heard every committer when its wait ends waits on, only while an
//! unheard attestation could still change a verdict ([`Witnesses::settled`]), as long as
//! its signer may still be fetching: an update held by about half is where nodes that heard
//! different attesters would part.
//!
//! What it does not give: consensus. A node that decides before an attestation reaches it
//! (both waits are bounded) counts fewer witnesses than the others, and an update held by
//! about half of them can then fall on different sides for different nodes; the chain's
//! 2/3 quorum on the result still settles what is paid, and such a node re-syncs.

use std::collections::{BTreeMap, BTreeSet};

use codec::{Decode, Encode};
use grid_primitives::job::{JobId, RoundIndex};
use libp2p::{identity::Keypair, PeerId};

use super::{
	book::MAX_SIGNERS,
	messages::{decode_bounded, sign_payload, signer_of, Digest, MessageError, SignedCommitment},
};

/// Domain separation for attestation signatures.
const ATTESTATION_DOMAIN: &[u8] = b"grid/attestation/v1";
/// Longest encoded attestation accepted on gossip (one naming [`MAX_SIGNERS`] updates is
/// about 8.3 KiB).
pub const MAX_ATTESTATION_BYTES: usize = 9 * 1024;
/// Most attestations kept for coming rounds.
const MAX_FUTURE: usize = 1024;
/// How many rounds ahead an attestation may be and still be kept for later.
const FUTURE_ROUNDS: RoundIndex = 2;

/// A committer's statement of which of a round's updates it holds, checked against their
/// commitments.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub struct Attestation {
	/// The job.
	pub job: JobId,
	/// The round.
	pub round: RoundIndex,
	/// The base state the attester trained from (only attesters from a node's own base
	/// count there).
	pub base_state: Digest,
	/// Hashes of the updates it holds, strictly ascending.
	pub holds: Vec<Digest>,
}

impl Attestation {
	fn signing_payload(&self) -> Vec<u8> {
		let mut payload = ATTESTATION_DOMAIN.to_vec();
		self.encode_to(&mut payload);
		payload
	}

	/// Signs it with the trainer's libp2p key; `holds` is sorted and deduplicated first.
	pub fn sign(mut self, key: &Keypair) -> Result<SignedAttestation, MessageError> {
		self.holds.sort_unstable();
		self.holds.dedup();
		let (public_key, signature) = sign_payload(key, &self.signing_payload())?;
		Ok(SignedAttestation { attestation: self, public_key, signature })
	}
}

/// An attestation with its signer's public key and signature.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub struct SignedAttestation {
	/// What is attested.
	pub attestation: Attestation,
	/// The signer's libp2p public key (protobuf encoding).
	pub public_key: Vec<u8>,
	/// Signature over the domain-separated encoding.
	pub signature: Vec<u8>,
}

impl SignedAttestation {
	/// Decodes gossip bytes, checks the signature, the job and the list's shape; returns
	/// the signer.
	pub fn decode_verified(bytes: &[u8], job: JobId) -> Result<(Self, PeerId), MessageError> {
		let signed = decode_bounded::<SignedAttestation>(bytes, MAX_ATTESTATION_BYTES)?;
		let a = &signed.attestation;
		if a.job != job {
			return Err(MessageError::WrongJob { got: a.job, expected: job });
		}
		if a.holds.len() > MAX_SIGNERS {
			return Err(MessageError::Malformed(format!(
				"an attestation of {} updates, where a round has at most {MAX_SIGNERS}",
				a.holds.len()
			)));
		}
		if !a.holds.windows(2).all(|w| w[0] < w[1]) {
			return Err(MessageError::Malformed(
				"an attestation's updates are not strictly ascending".into(),
			));
		}
		let signer = signer_of(&signed.public_key, &a.signing_payload(), &signed.signature)?;
		Ok((signed, signer))
	}
}

/// What became of a heard attestation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heard {
	/// The signer's first for the open round.
	Kept,
	/// The same one again.
	Duplicate,
	/// A different one from a signer that attested already: neither counts.
	Conflicting,
	/// For a coming round: kept for it.
	Early,
	/// For a past round, too far ahead, or beyond what is kept.
	Dropped,
}

/// The agreed set of a round, and what was left out of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Agreement {
	/// The updates to aggregate, in canonical (signer) order.
	pub set: Vec<(PeerId, SignedCommitment)>,
	/// Committers whose updates too few witnesses hold.
	pub left_out: Vec<PeerId>,
	/// Who attested holding each update of the set (its own committer excluded).
	pub holders: BTreeMap<Digest, Vec<PeerId>>,
}

/// The attestations of the open round, and those heard early for the next ones.
#[derive(Clone, Debug)]
pub struct Witnesses {
	job: JobId,
	round: RoundIndex,
	heard: BTreeMap<PeerId, SignedAttestation>,
	/// Signers that attested twice, differently, this round.
	conflicting: BTreeSet<PeerId>,
	future: Vec<(PeerId, SignedAttestation)>,
}

impl Witnesses {
	/// No attestations yet, for `round` of `job`.
	pub fn new(job: JobId, round: RoundIndex) -> Self {
		Witnesses {
			job,
			round,
			heard: BTreeMap::new(),
			conflicting: BTreeSet::new(),
			future: Vec::new(),
		}
	}

	/// The open round.
	pub fn round(&self) -> RoundIndex {
		self.round
	}

	/// Opens `round`, with the attestations kept for it. Opening the round that is open
	/// already (a trainer that re-synced and observes the round it left) keeps what was
	/// heard: those attestations are not sent again, and its own must stay the one it sent.
	pub fn open(&mut self, round: RoundIndex) {
		if round == self.round {
			return;
		}
		self.round = round;
		self.heard.clear();
		self.conflicting.clear();
		for (signer, signed) in std::mem::take(&mut self.future) {
			self.heard(signer, signed);
		}
	}

	/// Takes a verified attestation of `signer`.
	pub fn heard(&mut self, signer: PeerId, signed: SignedAttestation) -> Heard {
		let round = signed.attestation.round;
		if signed.attestation.job != self.job {
			return Heard::Dropped;
		}
		if round > self.round {
			if round > self.round + FUTURE_ROUNDS || self.future.len() >= MAX_FUTURE {
				return Heard::Dropped;
			}
			self.future.push((signer, signed));
			return Heard::Early;
		}
		if round < self.round {
			return Heard::Dropped;
		}
		if let Some(first) = self.heard.get(&signer) {
			if first.attestation == signed.attestation {
				return Heard::Duplicate;
			}
			self.conflicting.insert(signer);
			return Heard::Conflicting;
		}
		if self.heard.len() >= MAX_SIGNERS {
			return Heard::Dropped;
		}
		self.heard.insert(signer, signed);
		Heard::Kept
	}

	/// Whether `peer` attested this round (an attester that contradicted itself did too).
	pub fn attested(&self, peer: &PeerId) -> bool {
		self.heard.contains_key(peer)
	}

	/// The updates that attesters from `base` hold but whose commitments this trainer did
	/// not hear (`heard` says which it did: gossip lost the others on the way here), each
	/// with its holders, who can relay the commitment. Only updates that at least half of
	/// those attesters hold, so one attester naming hashes it made up sends nobody chasing
	/// them (with one other attester beside this trainer, it can make it ask once).
	pub fn unheard_held(
		&self,
		base: &Digest,
		heard: impl Fn(&Digest) -> bool,
	) -> BTreeMap<Digest, Vec<PeerId>> {
		let attesters: Vec<(&PeerId, &Attestation)> = self
			.heard
			.iter()
			.filter(|(p, s)| !self.conflicting.contains(*p) && s.attestation.base_state == *base)
			.map(|(p, s)| (p, &s.attestation))
			.collect();
		let mut held: BTreeMap<Digest, Vec<PeerId>> = BTreeMap::new();
		for (peer, attestation) in &attesters {
			for hash in attestation.holds.iter().filter(|h| !heard(h)) {
				held.entry(*hash).or_default().push(**peer);
			}
		}
		held.retain(|_, holders| 2 * holders.len() >= attesters.len());
		held
	}

	/// The agreed set among `candidates` (the round's commitments from `base`, in signer
	/// order, all heard in time): each update that at least half of the other candidates
	/// that attested from `base` hold; every candidate when none of the others attested (a
	/// node alone, or cut off, decides from what it has).
	pub fn agree(&self, base: &Digest, candidates: &[(PeerId, SignedCommitment)]) -> Agreement {
		self.agree_among(base, candidates, candidates, &BTreeSet::new())
	}

	/// [`Witnesses::agree`] on the updates of `candidates` only, witnessed by every one of
	/// `committers` (the round's commitments from `base`): with a bounded fan-in
	/// ([`crate::round::fan_in`]) the candidates are the drawn and spare updates, and every
	/// committer's attestation still counts. The commitments of `late` signers came after
	/// this node's collection deadline: in only when another committer holds them.
	pub fn agree_among(
		&self,
		base: &Digest,
		committers: &[(PeerId, SignedCommitment)],
		candidates: &[(PeerId, SignedCommitment)],
		late: &BTreeSet<PeerId>,
	) -> Agreement {
		let mut agreement = Agreement::default();
		for (peer, signed) in candidates {
			let tally = self.tally(base, committers, peer, &signed.commitment.update_hash);
			if tally.in_set(late.contains(peer)) {
				agreement.holders.insert(signed.commitment.update_hash, tally.holders);
				agreement.set.push((*peer, signed.clone()));
			} else {
				agreement.left_out.push(*peer);
			}
		}
		agreement
	}

	/// Whether the attestations of `committers` not heard yet could no longer change
	/// [`Witnesses::agree_among`]'s verdict on any of `candidates`: deciding before then
	/// may give another set than the peers that heard them.
	pub fn settled(
		&self,
		base: &Digest,
		committers: &[(PeerId, SignedCommitment)],
		candidates: &[(PeerId, SignedCommitment)],
		late: &BTreeSet<PeerId>,
	) -> bool {
		candidates.iter().all(|(peer, signed)| {
			let tally = self.tally(base, committers, peer, &signed.commitment.update_hash);
			tally.settled(late.contains(peer))
		})
	}

	/// How `committers` other than the update's own (`committer`) stand on `hash`.
	fn tally(
		&self,
		base: &Digest,
		committers: &[(PeerId, SignedCommitment)],
		committer: &PeerId,
		hash: &Digest,
	) -> Tally {
		let mut tally = Tally::default();
		for (witness, _) in committers.iter().filter(|(p, _)| p != committer) {
			let Some(heard) = self.heard.get(witness) else {
				tally.unheard += 1;
				continue;
			};
			// A contradicting attester, or one from another base, counts for nothing.
			let a = &heard.attestation;
			if self.conflicting.contains(witness) || a.base_state != *base {
				continue;
			}
			tally.attesting += 1;
			if a.holds.binary_search(hash).is_ok() {
				tally.holders.push(*witness);
			}
		}
		tally
	}
}

/// The witnesses of one update: who attested holding it, how many attested at all, and how
/// many committers have not been heard yet.
#[derive(Debug, Default)]
struct Tally {
	holders: Vec<PeerId>,
	attesting: usize,
	unheard: usize,
}

impl Tally {
	/// In the agreed set: at least half of the attesters hold it (all, when none attested,
	/// unless it is `late`: then it needs a holder).
	fn in_set(&self, late: bool) -> bool {
		let half = 2 * self.holders.len() >= self.attesting;
		if late {
			!self.holders.is_empty() && half
		} else {
			self.attesting == 0 || half
		}
	}

	/// Whether the verdict stands whatever the unheard say: in even if they all attest
	/// without it, or out even if they all attest holding it (out needs an attester: with
	/// none, any attestation may be the one that leaves it out; a `late` one with no holder
	/// among the attesters and none unheard is out for good).
	fn settled(&self, late: bool) -> bool {
		let (holders, attesting, unheard) = (self.holders.len(), self.attesting, self.unheard);
		let stays_in = (!late || holders > 0) && 2 * holders >= attesting + unheard;
		let could_be_in = if late {
			holders + unheard > 0 && 2 * (holders + unheard) >= attesting + unheard
		} else {
			attesting == 0 || 2 * (holders + unheard) >= attesting + unheard
		};
		stays_in || !could_be_in
	}
}

#[cfg(test)]
mod tests {
	use codec::Encode;

	use super::*;
	use crate::round::messages::{tests::commitment, Commitment};

	const BASE: Digest = [2; 32];
	/// No late commitments.
	const ON_TIME: BTreeSet<PeerId> = BTreeSet::new();

	fn attest(key: &Keypair, round: RoundIndex, holds: &[u8]) -> SignedAttestation {
		let holds = holds.iter().map(|&h| [h; 32]).collect();
		Attestation { job: 7, round, base_state: BASE, holds }.sign(key).unwrap()
	}

	/// `n` committers of round 3, committer `i` to update `i + 1`.
	fn committers(n: usize) -> (Vec<Keypair>, Vec<(PeerId, SignedCommitment)>) {
		let keys: Vec<Keypair> = (0..n).map(|_| Keypair::generate_ed25519()).collect();
		let mut set: Vec<(PeerId, SignedCommitment)> = keys
			.iter()
			.enumerate()
			.map(|(i, k)| {
				let c = Commitment { base_state: BASE, ..commitment(3, i as u8 + 1) };
				(k.public().to_peer_id(), c.sign(k).unwrap())
			})
			.collect();
		set.sort_by_key(|(p, _)| *p);
		(keys, set)
	}

	fn peer(key: &Keypair) -> PeerId {
		key.public().to_peer_id()
	}

	fn members(agreement: &Agreement) -> Vec<u8> {
		agreement.set.iter().map(|(_, s)| s.commitment.update_hash[0]).collect::<Vec<_>>()
	}

	#[test]
	fn attestations_round_trip_and_malformed_ones_are_refused_with_the_reason() {
		let key = Keypair::generate_ed25519();
		let signed = attest(&key, 3, &[9, 1, 9]);
		assert_eq!(signed.attestation.holds, vec![[1; 32], [9; 32]], "sorted, deduplicated");
		let (back, signer) = SignedAttestation::decode_verified(&signed.encode(), 7).unwrap();
		assert_eq!((back, signer), (signed.clone(), peer(&key)));
		let err =
			|bytes: Vec<u8>, job| SignedAttestation::decode_verified(&bytes, job).unwrap_err();
		assert!(matches!(err(signed.encode(), 8), MessageError::WrongJob { got: 7, expected: 8 }));
		// Forged: another list under the same signature.
		let mut forged = signed.clone();
		forged.attestation.holds.push([10; 32]);
		assert_eq!(err(forged.encode(), 7), MessageError::BadSignature(peer(&key)));
		// Unsorted lists are not canonical (one signer could count twice for a hash).
		let mut unsorted = signed.clone();
		unsorted.attestation.holds.reverse();
		assert!(err(unsorted.encode(), 7).to_string().contains("ascending"));
		let mut long = signed.clone();
		long.attestation.holds = (0..=MAX_SIGNERS as u32)
			.map(|i| {
				let mut h = [0; 32];
				h[..4].copy_from_slice(&i.to_be_bytes());
				h
			})
			.collect();
		assert!(err(long.encode(), 7).to_string().contains("at most 256"));
		let oversized = vec![0; MAX_ATTESTATION_BYTES + 1];
		assert!(matches!(err(oversized, 7), MessageError::Oversized { .. }));
		assert!(err(vec![1, 2, 3], 7).to_string().contains("malformed"));
	}

	#[test]
	fn an_update_most_witnesses_hold_is_agreed_and_one_withheld_from_most_is_left_out() {
		let (keys, set) = committers(5);
		let mut witnesses = Witnesses::new(7, 3);
		// Update 5's committer served it to one peer only; update 4's to two of four others.
		let holds: [&[u8]; 5] =
			[&[1, 2, 3, 4, 5], &[1, 2, 3, 4], &[1, 2, 3], &[1, 2, 3], &[1, 2, 3, 5]];
		for (key, holds) in keys.iter().zip(holds) {
			assert_eq!(witnesses.heard(peer(key), attest(key, 3, holds)), Heard::Kept);
		}
		let agreement = witnesses.agree(&BASE, &set);
		let mut agreed = members(&agreement);
		agreed.sort();
		assert_eq!(agreed, vec![1, 2, 3, 4], "4 held by 2 of the 4 others: half is enough");
		assert_eq!(agreement.left_out, vec![peer(&keys[4])]);
		assert_eq!(agreement.holders[&[4; 32]].len(), 2);
		// Canonical order kept; own attestation never counts for its own update.
		assert_eq!(agreement.set.iter().map(|(p, _)| *p).collect::<Vec<_>>(), {
			let mut p: Vec<PeerId> = keys[..4].iter().map(peer).collect();
			p.sort();
			p
		});
		assert!(!agreement.holders[&[1; 32]].contains(&peer(&keys[0])));
	}

	#[test]
	fn with_a_bounded_fan_in_every_committer_witnesses_the_drawn_updates() {
		// Six committers; the draw's fetched list is updates 1-3. Each holds those (and
		// its own); committer 0's update 1 reached two of the five others.
		let (keys, set) = committers(6);
		let mut witnesses = Witnesses::new(7, 3);
		let holds: [&[u8]; 6] =
			[&[1, 2, 3], &[1, 2, 3], &[1, 2, 3], &[2, 3, 4], &[2, 3, 5], &[2, 3, 6]];
		for (key, holds) in keys.iter().zip(holds) {
			witnesses.heard(peer(key), attest(key, 3, holds));
		}
		let fetched: Vec<_> =
			set.iter().filter(|(_, s)| s.commitment.update_hash[0] <= 3).cloned().collect();
		let agreement = witnesses.agree_among(&BASE, &set, &fetched, &ON_TIME);
		assert_eq!(
			members(&agreement).len() + agreement.left_out.len(),
			3,
			"verdicts only on the fetched"
		);
		// Update 1: held by 2 of the 5 other committers (the three not fetching it count):
		// less than half, so out; among the fetched's committers alone it would be in.
		assert!(!members(&agreement).contains(&1));
		assert_eq!(agreement.left_out, vec![peer(&keys[0])]);
		assert!(members(&witnesses.agree(&BASE, &fetched)).contains(&1));
		assert_eq!(agreement.holders[&[2; 32]].len(), 5);
	}

	#[test]
	fn a_verdict_waits_only_for_the_attestations_that_could_still_change_it() {
		// Four committers, committer i's update i + 1; committer 0 is not heard at all.
		let (keys, set) = committers(4);
		let only = |n: u8| -> Vec<_> {
			set.iter().filter(|(_, s)| s.commitment.update_hash[0] == n).cloned().collect()
		};
		let mut witnesses = Witnesses::new(7, 3);
		assert!(
			!witnesses.settled(&BASE, &set, &only(1), &ON_TIME),
			"nobody heard: anything may come"
		);
		witnesses.heard(peer(&keys[1]), attest(&keys[1], 3, &[1, 2, 3, 4]));
		witnesses.heard(peer(&keys[2]), attest(&keys[2], 3, &[2, 3, 4]));
		// Update 4: held by both attesters, one unheard: in whatever it says.
		assert!(witnesses.settled(&BASE, &set, &only(4), &ON_TIME));
		// Update 1: held by one of two, committer 3 unheard: in now, out if 3 lacks it.
		assert!(!witnesses.settled(&BASE, &set, &only(1), &ON_TIME));
		assert!(members(&witnesses.agree(&BASE, &set)).contains(&1));
		let mut holding = witnesses.clone();
		holding.heard(peer(&keys[3]), attest(&keys[3], 3, &[1, 2, 3, 4]));
		witnesses.heard(peer(&keys[3]), attest(&keys[3], 3, &[2, 3, 4]));
		// Every other committer of update 1 heard (its own need not be): settled, both ways.
		assert!(
			witnesses.settled(&BASE, &set, &set, &ON_TIME)
				&& holding.settled(&BASE, &set, &set, &ON_TIME)
		);
		assert_eq!(witnesses.agree(&BASE, &set).left_out, vec![peer(&keys[0])]);
		assert!(members(&holding.agree(&BASE, &set)).contains(&1));
		// A conflicting attester is heard (it counts for nothing, and nothing is awaited).
		witnesses.heard(peer(&keys[0]), attest(&keys[0], 3, &[1]));
		witnesses.heard(peer(&keys[0]), attest(&keys[0], 3, &[1, 2]));
		assert!(witnesses.settled(&BASE, &set, &set, &ON_TIME));
	}

	/// A round every committer was late for (each heard the others' commitments, and its
	/// own, after its collection deadline): the first to decide has heard no other
	/// committer yet and must not keep its own update for want of witnesses, since the
	/// others, who heard it late, hold none of it. A late update some witness heard in
	/// time and holds still gets in on the usual half.
	#[test]
	fn a_late_update_needs_a_witness_that_holds_it() {
		let (keys, set) = committers(3);
		let late: BTreeSet<PeerId> = set.iter().map(|(p, _)| *p).collect();
		let first = |n: usize| set[..n].to_vec();
		let mut witnesses = Witnesses::new(7, 3);
		// Alone so far: out, and for good (no unheard committer could hold it).
		assert!(witnesses.agree_among(&BASE, &first(1), &first(1), &late).set.is_empty());
		assert!(witnesses.settled(&BASE, &first(1), &first(1), &late));
		// On time, the same node alone would keep it.
		assert_eq!(witnesses.agree(&BASE, &first(1)).set.len(), 1);
		// Each attests holding nothing (its in-time set is empty): all out everywhere.
		for key in &keys {
			witnesses.heard(peer(key), attest(key, 3, &[]));
		}
		let agreement = witnesses.agree_among(&BASE, &set, &set, &late);
		assert!(agreement.set.is_empty() && agreement.left_out.len() == 3, "{agreement:?}");
		// Late here, but another committer heard it in time and holds it: in on the half.
		let (keys, set) = committers(3);
		let late_one: BTreeSet<PeerId> = [peer(&keys[0])].into();
		let mut witnesses = Witnesses::new(7, 3);
		let zeros: Vec<_> = set.iter().filter(|(p, _)| *p == peer(&keys[0])).cloned().collect();
		// The others not heard yet: a holder may still come.
		assert!(!witnesses.settled(&BASE, &set, &zeros, &late_one));
		witnesses.heard(peer(&keys[1]), attest(&keys[1], 3, &[1, 2]));
		witnesses.heard(peer(&keys[2]), attest(&keys[2], 3, &[2, 3]));
		let agreement = witnesses.agree_among(&BASE, &set, &set, &late_one);
		assert!(members(&agreement).contains(&1), "held by one of two others: half");
	}

	#[test]
	fn hostile_witnesses_cannot_push_in_or_keep_out_an_update_as_a_minority() {
		let (keys, set) = committers(5);
		let mut witnesses = Witnesses::new(7, 3);
		// Committer 4 withholds its update; it and committer 3 (an accomplice) claim to hold
		// it and to lack committer 0's, which the three honest ones hold.
		let holds: [&[u8]; 5] =
			[&[1, 2, 3, 4], &[1, 2, 3, 4], &[1, 2, 3, 4], &[2, 3, 4, 5], &[2, 3, 4, 5]];
		for (key, holds) in keys.iter().zip(holds) {
			witnesses.heard(peer(key), attest(key, 3, holds));
		}
		let agreement = witnesses.agree(&BASE, &set);
		assert!(members(&agreement).contains(&1), "the 2 honest others hold update 1: half");
		assert!(!members(&agreement).contains(&5), "only 1 of 4 others claims update 5");
		// An attester that says two things counts for neither; an attestation from another
		// base, or a signer that did not commit, counts for nothing.
		let mut witnesses = Witnesses::new(7, 3);
		for (key, holds) in keys.iter().zip(holds) {
			witnesses.heard(peer(key), attest(key, 3, holds));
		}
		assert_eq!(witnesses.heard(peer(&keys[3]), attest(&keys[3], 3, &[5])), Heard::Conflicting);
		assert_eq!(
			witnesses.heard(peer(&keys[3]), attest(&keys[3], 3, &[2, 3, 4, 5])),
			Heard::Duplicate
		);
		let stranger = Keypair::generate_ed25519();
		witnesses.heard(peer(&stranger), attest(&stranger, 3, &[5]));
		let agreement = witnesses.agree(&BASE, &set);
		assert_eq!(agreement.holders[&[2; 32]].len(), 3, "witnesses 0, 2 and 4 for update 2");
		assert!(!agreement.holders[&[2; 32]].contains(&peer(&stranger)));
		assert!(!members(&agreement).contains(&5), "none of the 3 counted others holds it");
	}

	#[test]
	fn without_witnesses_every_candidate_counts_and_early_attestations_wait_for_their_round() {
		let (keys, set) = committers(3);
		let mut witnesses = Witnesses::new(7, 3);
		assert_eq!(members(&witnesses.agree(&BASE, &set)).len(), 3, "a node alone keeps its set");
		// A round ahead: kept until its round opens; past and far rounds are dropped.
		assert_eq!(witnesses.heard(peer(&keys[0]), attest(&keys[0], 4, &[2])), Heard::Early);
		assert_eq!(witnesses.heard(peer(&keys[0]), attest(&keys[0], 2, &[2])), Heard::Dropped);
		assert_eq!(witnesses.heard(peer(&keys[0]), attest(&keys[0], 9, &[2])), Heard::Dropped);
		assert!(!witnesses.attested(&peer(&keys[0])));
		witnesses.open(4);
		assert!(witnesses.attested(&peer(&keys[0])));
		// Opening round 4 again (a trainer that re-synced observes the round it left) keeps
		// what it heard: nobody sends those again, and its own must not be signed twice.
		witnesses.open(4);
		assert!(witnesses.attested(&peer(&keys[0])), "a re-opened round forgot its witnesses");
		// An attester from another base does not count at this one.
		let other = Attestation { job: 7, round: 4, base_state: [8; 32], holds: vec![] };
		witnesses.heard(peer(&keys[1]), other.sign(&keys[1]).unwrap());
		let set4: Vec<_> = set
			.iter()
			.map(|(p, s)| {
				let c = Commitment { round: 4, ..s.commitment.clone() };
				let key = keys.iter().find(|k| peer(k) == *p).unwrap();
				(*p, c.sign(key).unwrap())
			})
			.collect();
		let agreement = witnesses.agree(&BASE, &set4);
		assert_eq!(members(&agreement).len(), 2, "update 2 and the attester's own are agreed");
		assert_eq!(agreement.left_out.len(), 1);
	}

	/// Gossip lost committer 2's commitment on its way to committer 0 (`me`), whose book
	/// has updates 1 and 2 only: the witnesses that hold update 3 say so, and who they are.
	/// A hash one attester alone names is not chased, nor one attesters from another base
	/// or a self-contradicting attester name.
	#[test]
	fn updates_most_attesters_hold_but_this_trainer_never_heard_of_are_named_with_holders() {
		let (keys, _) = committers(4);
		let [me, one, two, three] = [0, 1, 2, 3].map(|i| peer(&keys[i]));
		let mut witnesses = Witnesses::new(7, 3);
		let heard_here = |h: &Digest| h[0] == 1 || h[0] == 2;
		witnesses.heard(me, attest(&keys[0], 3, &[1, 2]));
		witnesses.heard(one, attest(&keys[1], 3, &[1, 2, 3]));
		witnesses.heard(two, attest(&keys[2], 3, &[1, 2, 3, 9]));
		let unheard = witnesses.unheard_held(&BASE, heard_here);
		assert_eq!(unheard.keys().map(|h| h[0]).collect::<Vec<_>>(), vec![3], "9: one of 3");
		let mut holders = unheard[&[3; 32]].clone();
		holders.sort();
		let mut expected = vec![one, two];
		expected.sort();
		assert_eq!(holders, expected);
		// Another base's attester, and one that contradicted itself, count for nothing.
		let other = Attestation { job: 7, round: 3, base_state: [8; 32], holds: vec![[9; 32]] };
		witnesses.heard(three, other.sign(&keys[3]).unwrap());
		assert_eq!(witnesses.unheard_held(&BASE, heard_here).len(), 1);
		witnesses.heard(two, attest(&keys[2], 3, &[3]));
		let unheard = witnesses.unheard_held(&BASE, heard_here);
		assert_eq!(unheard.into_iter().collect::<Vec<_>>(), vec![([3; 32], vec![one])]);
		assert!(witnesses.unheard_held(&BASE, |_| true).is_empty());
	}
}
