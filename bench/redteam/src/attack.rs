//! The attackers: what each sends, claims or does instead of honest work.

use std::fmt;

/// One kind of attacker, placed next to honest providers in a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Attacker {
	/// Nobody: a fifth honest provider (the baseline of false positives and cost).
	Nobody,
	/// Trains nothing; sends noise of an honest update's norm.
	Lazy,
	/// Sends another participant's update of the round, unchanged.
	ExactCopy,
	/// Sends another participant's update times 1.5.
	ScaledCopy,
	/// Sends another participant's update plus noise of 0.3 times its norm.
	NoisedCopy,
	/// Sends the previous round's aggregate direction.
	PreviousAggregate,
	/// Trains from its committed state, but on data other than its assigned shard.
	WrongData,
	/// Runs three quarters of the steps and claims them all (samples processed included).
	InflatedClaim,
	/// Trains nothing; sends noise of `FORGED_NORM` times an honest update's norm (the
	/// daemon's, `grid_trainer::round::misbehave`), and
	/// states as its start state's error-feedback residual that noise over the decay, so
	/// that a replay of any training from that state compresses to about the noise; its
	/// trajectory never leaves the base.
	ForgedResidual,
	/// Trains honestly, but votes against the truth on every committee it is drawn onto
	/// (a lazy provider trains next to it, so that there are challenges to vote on).
	SybilVoter,
	/// Trains honestly, and challenges an honest provider's contribution every round.
	GriefingChallenger,
}

impl Attacker {
	/// Every attacker, in report order.
	pub const ALL: [Attacker; 11] = [
		Attacker::Nobody,
		Attacker::Lazy,
		Attacker::ExactCopy,
		Attacker::ScaledCopy,
		Attacker::NoisedCopy,
		Attacker::PreviousAggregate,
		Attacker::WrongData,
		Attacker::InflatedClaim,
		Attacker::ForgedResidual,
		Attacker::SybilVoter,
		Attacker::GriefingChallenger,
	];

	/// Whether its own training is honest (its offence is elsewhere).
	pub fn trains_honestly(self) -> bool {
		matches!(self, Attacker::Nobody | Attacker::SybilVoter | Attacker::GriefingChallenger)
	}

	/// The report's name for it.
	pub fn name(self) -> &'static str {
		match self {
			Attacker::Nobody => "none (five honest)",
			Attacker::Lazy => "lazy (noise)",
			Attacker::ExactCopy => "exact copy",
			Attacker::ScaledCopy => "scaled copy",
			Attacker::NoisedCopy => "noised copy",
			Attacker::PreviousAggregate => "previous aggregate",
			Attacker::WrongData => "wrong data",
			Attacker::InflatedClaim => "inflated claim",
			Attacker::ForgedResidual => "forged residual",
			Attacker::SybilVoter => "Sybil voter",
			Attacker::GriefingChallenger => "griefing challenger",
		}
	}

	/// What "caught" means for it.
	pub fn caught_means(self) -> &'static str {
		match self {
			Attacker::Nobody => "nothing to catch",
			Attacker::SybilVoter => "slashed for a vote its committee's majority decided against",
			Attacker::GriefingChallenger => "a challenge rejected: its deposit went to the voters",
			_ => "fraud proven: reward clawed back, stake slashed, removed from the job",
		}
	}
}

impl fmt::Display for Attacker {
	fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
		f.write_str(self.name())
	}
}
