//! The rounds of a trainer told to misbehave (`[misbehave]`, for the red-team suite) where
//! that takes the trainer's own state or network: what a trainer that does not train sends
//! (noise, a copy of a peer's update of the round, the previous round's direction), and a
//! griefer's challenges. What each behaviour computes is in [`crate::round::misbehave`].

use std::time::{Duration, Instant};

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::Trainer;
use crate::{
	diloco::LocalRound,
	error::Result,
	round::{
		coordinator::Schedule,
		misbehave::{self, FORGED_NORM, LAZY_FIRST_NORM},
	},
};

impl Trainer {
	/// A round without training: once an honest trainer would be done, noise (lazy), a copy
	/// of a peer's update of the round, or the previous round's direction, at the norm of
	/// the last aggregated update, claimed as `steps` full batches of `batch`.
	pub(super) fn untrained_round(
		&mut self,
		round: RoundIndex,
		stop_at: Option<Instant>,
		steps: u32,
		batch: u64,
	) -> LocalRound {
		if let Some(wait) = stop_at.and_then(|s| s.checked_duration_since(Instant::now())) {
			std::thread::sleep(wait);
		}
		let misbehave = self.config.misbehave;
		let norm = self.last_update_norm.unwrap_or(LAZY_FIRST_NORM);
		let weights = &self.state.as_ref().expect("compute runs with a state").weights;
		let len = weights.len();
		let stale = match (&self.stale_base, misbehave.stale) {
			(Some(previous), true) => Some(misbehave::stale_update(previous, weights, norm)),
			_ => None,
		};
		let copied = match misbehave.copy {
			Some(copy) => self.peer_update(round).map(|victim| {
				tracing::warn!("round {round}: sending a copy of another's update ({copy:?})");
				misbehave::copy_update(&victim, copy, round)
			}),
			None => None,
		};
		let delta = copied.or(stale).unwrap_or_else(|| {
			tracing::warn!("round {round}: sending noise instead of training");
			misbehave::noise(len, norm, u64::from(round) ^ 0x1a2e)
		});
		misbehave::untrained_round(delta, steps, batch)
	}

	/// A trainer forging its residual: the noise `local` carries goes, [`FORGED_NORM`] times
	/// as large and over the job's decay, into the error feedback, and nothing into the
	/// update, so the update it compresses is that noise and the start state it commits to
	/// holds the forgery. Where the job keeps no error (decay 0) there is nothing to forge:
	/// it stays a lazy trainer.
	pub(super) fn forge_residual(
		&mut self,
		round: RoundIndex,
		local: &mut LocalRound,
	) -> Result<()> {
		let decay = self.config.job.training.error_decay.to_f64() as f32;
		if decay <= 0.0 {
			return Ok(());
		}
		tracing::warn!("round {round}: stating a residual that outweighs any training");
		let scale = FORGED_NORM as f32 / decay;
		self.compressor.set_residual(local.delta.iter().map(|z| z * scale).collect())?;
		local.delta.iter_mut().for_each(|d| *d = 0.0);
		Ok(())
	}

	/// The first update of the round a peer commits to (from the majority's base), fetched
	/// within half the round's grace; `None` if none came.
	fn peer_update(&mut self, round: RoundIndex) -> Option<Vec<f32>> {
		let wait_ms = match self.config.schedule {
			Schedule::Deadline { grace_ms, .. } => grace_ms / 2,
			Schedule::FixedSteps { wait_ms, .. } => wait_ms / 2,
		};
		let until = Instant::now() + Duration::from_millis(wait_ms);
		self.pump_until(until, |s| s.books.current().majority_base().is_some());
		let (base, _) = self.books.current().majority_base()?;
		let victim = self.books.current().set(&base).into_iter().next()?;
		let hash = victim.1.commitment.update_hash;
		let members = self.members();
		let (requests, wanted) = self.fetches.want(&[victim], self.me, &members);
		for request in requests {
			self.send_request(request);
		}
		self.pump_until(until, |s| s.fetches.settled(&wanted));
		let update = self.fetches.update(&hash).map(|u| u.decompress());
		if update.is_none() {
			tracing::warn!("round {round}: no peer's update to copy");
		}
		update
	}

	/// Keeps the round's base for a stale trainer's next round.
	pub(super) fn keep_stale_base(&mut self) {
		if self.config.misbehave.stale {
			self.stale_base = self.state.as_ref().map(|s| s.weights.clone());
		}
	}

	/// A griefer challenges one of the round's other aggregated senders, honest or not.
	pub(super) fn grief(&self, round: RoundIndex, accepted: &[PeerId]) {
		let (Some(fraud), true) = (&self.fraud, self.config.misbehave.grief) else { return };
		if let Some(victim) = misbehave::grief_target(&self.me, accepted, round) {
			tracing::warn!("round {round}: challenging {victim}'s honest work (griefing)");
			fraud.port.accuse(round, victim);
		}
	}
}
