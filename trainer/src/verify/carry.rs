//! What a contribution hands on to its sender's next round, computed exactly from what its
//! commitment fixes.
//!
//! A trainer's private state moves from one round to the next by rule: its inner optimizer
//! goes on from where the round's trajectory ended (step count and moments), and its error
//! feedback keeps what compression left out of the round (the pseudo-gradient plus the
//! decayed residual the round started from, less the update sent), with the update added
//! back when the round left it out (`AdaptiveCompressor::give_back`). All of it follows from
//! the committed start state, the trajectory's recorded end and the update sent, by the same
//! element-wise arithmetic the trainer ran, so a verifier gets the same bits.
//!
//! A replay starts from whatever start state its sender committed to, and nothing yet ties
//! that state to the sender's previous round: a sender that trains honestly can state a
//! residual or moments that steer its update (`docs/architecture.md`, *Trust model*). The
//! tie is [`Carry`]: a start state must continue its sender's last round
//! ([`Carry::continued_by`]), or be a fresh one (after a restart). Commitments do not carry
//! it yet and no desk checks it; what is here is the rule, tested against the trainer's own
//! round-to-round moves (`verify/tests.rs`). The daemon keeps to it where a round fails or
//! is abandoned part-way (`daemon/trainer/training.rs` puts the optimizer back where the
//! round started). Before a desk may hold anyone to it, a commitment must name the round it
//! goes on from, which the checker must be able to trust: one that never reached the others
//! (late, or made up) was never checked itself.

use super::{Claim, Replayer};
use crate::{
	compress::Feedback,
	error::{Error, Result},
	params::Digest,
	trajectory::StepState,
	work_state::{optimizer_digest, residual_digest, WorkDigests},
};

/// The state a round hands on to its sender's next round, by its digests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Carry {
	/// Inner steps taken by the round's end.
	pub step: u64,
	/// Digest of that step and the optimizer's moments at the round's end.
	pub optimizer: Digest,
	/// Digest of the residual after the round, its update sent.
	pub kept: Digest,
	/// Digest of the residual after the round with its update given back (left out of the
	/// round's aggregate).
	pub returned: Digest,
}

impl Carry {
	/// Whether a start state with digests `next` goes on from this round: its position and
	/// moments, and its residual as kept or with the update given back.
	pub fn continued_by(&self, next: &WorkDigests) -> bool {
		next.step == self.step
			&& next.optimizer == self.optimizer
			&& (next.residual == self.kept || next.residual == self.returned)
	}
}

impl Replayer {
	/// What `claim`'s round hands on, its trajectory having ended at `end`.
	pub fn carry(&self, claim: &Claim, end: &StepState) -> Result<Carry> {
		let n = claim.base.len();
		if claim.sent.len() != n || claim.start.len() != n || end.params.len() != n {
			return Err(Error::Config(format!(
				"an update of {} values, a work state of {} and an end of {} for a model of {n}",
				claim.sent.len(),
				claim.start.len(),
				end.params.len(),
			)));
		}
		// The trainer's own error feedback, from the committed residual: the same arithmetic.
		let mut feedback = Feedback::new(n).with_decay(self.error_decay)?;
		feedback.restore(claim.start.residual.clone())?;
		let corrected = feedback.correct(&self.end_delta(claim, &end.params)?, "carry")?;
		feedback.keep_update(corrected, &claim.sent);
		let kept = residual_digest(feedback.error());
		feedback.take_back(&claim.sent.decompress())?;
		Ok(Carry {
			step: end.step,
			optimizer: optimizer_digest(end.step, end.moments.as_ref()),
			kept,
			returned: residual_digest(feedback.error()),
		})
	}
}
