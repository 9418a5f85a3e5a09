//! What the fraud desk needs from the chain, and the challenges it is asked to judge.

use std::sync::Arc;

use grid_primitives::{job::RoundIndex, work::Verdict, Hash};
use libp2p::PeerId;

use crate::round::messages::{Digest, Equivocation};

/// What the fraud desk needs from the chain: peers' data seeds, and where its accusations,
/// votes and reports of equivocation go.
pub trait FraudPort: Send {
	/// The data seed `peer` was given for `round`, when known (a replay of its update
	/// draws its batches from it).
	fn peer_seed(&self, round: RoundIndex, peer: &PeerId) -> Option<Hash>;
	/// `peer`'s update for `round` failed its replay: challenge it.
	fn accuse(&self, round: RoundIndex, peer: PeerId);
	/// Challenges this trainer was newly drawn to judge, taken once.
	fn assigned_checks(&self) -> Vec<CheckRequest>;
	/// This trainer's verdict on a challenge.
	fn vote(&self, challenge: u64, verdict: Verdict);
	/// A peer signed two commitments for one round (checked evidence): report it.
	fn report_equivocation(&self, evidence: Equivocation);
}

/// A port shared with whoever started the trainer.
impl<P: FraudPort + Sync> FraudPort for Arc<P> {
	fn peer_seed(&self, round: RoundIndex, peer: &PeerId) -> Option<Hash> {
		P::peer_seed(self, round, peer)
	}
	fn accuse(&self, round: RoundIndex, peer: PeerId) {
		P::accuse(self, round, peer)
	}
	fn assigned_checks(&self) -> Vec<CheckRequest> {
		P::assigned_checks(self)
	}
	fn vote(&self, challenge: u64, verdict: Verdict) {
		P::vote(self, challenge, verdict)
	}
	fn report_equivocation(&self, evidence: Equivocation) {
		P::report_equivocation(self, evidence)
	}
}

/// A challenge a trainer must judge: the update `accused` sent for `round`.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckRequest {
	/// The challenge's id on chain.
	pub challenge: u64,
	/// The round of the disputed update.
	pub round: RoundIndex,
	/// Who proved it.
	pub accused: PeerId,
	/// The content address of the update its proof on chain names (its own, or, for a
	/// copier's claim, the one it copied): the one replayed.
	pub update: Digest,
	/// The start state its proof on chain names (the chain's record of the paid
	/// contribution): a replay starts from it.
	pub start_state: Digest,
	/// The inner steps its proof on chain claims: a replay redoes them.
	pub steps: u32,
	/// Randomness the chain revealed after the challenge and the same for every member of
	/// its committee (the hash of the block before the one that drew the committee, whose
	/// hash the committee's draw came from): which segment of the accused's trajectory the
	/// committee redoes ([`super::committee`]), unknown to the accused when it committed.
	pub draw: Hash,
}
