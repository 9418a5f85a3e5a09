//! The trainer's own contribution: training paced against the round's deadline (or its
//! fixed step count), the attacker behaviours tests switch on, and the sealed update served
//! and announced.

use std::{
	sync::Arc,
	time::{Duration, Instant},
};

use grid_primitives::job::RoundIndex;

use super::{
	keeper::{Keep, Kept},
	step_time::StepTime,
	training::{Pace, Start, StopAt},
	Trainer,
};
use crate::{
	diloco::LocalRound,
	error::Result,
	net::Command,
	params::Digest,
	round::{
		announcement::Announcement,
		book::Arrival,
		contribute::{self, Context, OwnUpdate},
		coordinator::Schedule,
		misbehave::{self, LAZY_STEPS},
	},
	trajectory::{Recorded, StepView, Trajectory},
	work_state::{WorkDigests, WorkState},
};

/// What verifiers redo a sealed round from, not yet served: its start state, recorded
/// states and trajectory, each under its content address. Only their digests are needed to
/// seal the round; the keeper encodes them once its commitment is out (encoding a
/// 0.2M-parameter GPT's 33 states took about 0.2 s of a 6 s round on the loop).
pub(super) struct Unserved {
	round: RoundIndex,
	objects: Vec<(Digest, Kept)>,
}

impl Unserved {
	/// The objects of `round` started from `start` at `base` and recorded as `kept`, and
	/// the commitment's digests of them: the start state's and the trajectory's root.
	fn new(
		round: RoundIndex,
		start: WorkState,
		base: Arc<Vec<f32>>,
		kept: Vec<(u32, Recorded)>,
	) -> (Self, WorkDigests, Digest) {
		let start = Arc::new(start);
		let digests = start.digests();
		let digest = |recorded: &Recorded| match recorded {
			Recorded::Start => StepView::at_start(&base, &start).digest(),
			Recorded::Step(state) => state.digest(),
		};
		let trajectory = Trajectory::new(kept.iter().map(|(at, r)| (*at, digest(r))).collect());
		let states = trajectory.marks().iter().zip(kept).map(|((_, d), (_, recorded))| {
			let kept = match recorded {
				Recorded::Start => Kept::FirstStep { base: base.clone(), start: start.clone() },
				Recorded::Step(state) => Kept::Step(state),
			};
			(*d, kept)
		});
		// What verifiers ask for first, first: the keeper serves them in this order.
		let objects = [
			(digests.id(), Kept::Start(start.clone())),
			(trajectory.root(), Kept::Encoded(trajectory.encode())),
		]
		.into_iter()
		.chain(states)
		.collect();
		(Unserved { round, objects }, digests, trajectory.root())
	}
}

/// This trainer's sealed contribution to a round.
pub(super) struct Computed {
	pub own: OwnUpdate,
	/// How long the round waited at its catch-up step for its base, when it was trained
	/// overlapped with the round before.
	pub overlap_wait: Option<Duration>,
}

impl Trainer {
	/// Trains the round from the global state until its deadline (or the fixed step count)
	/// — or, when an overlapped round already trains it, waits for that — and compresses
	/// the result. Serves peers meanwhile. `None` when no step ran.
	pub(super) fn compute(
		&mut self,
		round: RoundIndex,
		end: Option<Instant>,
	) -> Result<Option<Computed>> {
		if let Some(signed) = self.signed_rounds.signed(round)? {
			// Committed before a restart: a second commitment would be equivocation.
			tracing::warn!(
				"round {round}: committed to update {} before this start; sitting it out",
				hex::encode(signed.update_hash)
			);
			return Ok(None);
		}
		if self.config.misbehave.skips_training() {
			let own = self.untrained(round, end)?;
			return Ok(Some(Computed { own, overlap_wait: None }));
		}
		if self.inner.running() != Some(round) {
			let base = self.state.as_ref().expect("compute runs with a state").weights.clone();
			let pace = self.pace(round, end);
			self.inner.start(round, Start::Base(base), pace)?;
		} else if let Some(stop) = self.pacing(end).1 {
			// Trained ahead before its deadline was known (a chain opens a round only once
			// the one before settles).
			self.inner.stop_at(round, stop);
		}
		while !self.inner.is_done() {
			self.pump_until(Instant::now() + Duration::from_millis(50), |s| s.inner.is_done());
		}
		let trained = match self.inner.finish() {
			Some((_, Ok(trained))) => trained,
			Some((_, Err(e))) => {
				tracing::warn!("round {round}: training failed: {e}");
				return Ok(None);
			}
			None => return Ok(None),
		};
		self.step_time = trained.step_time;
		let mut local = trained.local;
		if local.steps == 0 {
			return Ok(None);
		}
		let mut start = trained.start;
		// The residual the update is compressed with: the round before may have given its
		// left-out update back to it after this round started training.
		start.residual = self.compressor.residual().to_vec();
		let (unserved, digests, trajectory) =
			Unserved::new(round, start, trained.base, trained.kept);
		self.unserved = Some(unserved);
		let misbehave = self.config.misbehave;
		if let Some(poison) = misbehave.poison {
			misbehave::poison_update(&mut local.delta, poison, round);
		}
		if let Some(share) = misbehave.inflate {
			let claim = misbehave::inflated_claim(local.steps, share, self.claimable_steps());
			tracing::warn!("round {round}: ran {} steps, claiming {claim}", local.steps);
			let batch = u64::from(self.config.job.training.batch_size);
			(local.steps, local.samples) = (claim, u64::from(claim) * batch);
		}
		let steps = local.steps;
		let own = self.commit(round, local, digests, trajectory, trained.compute)?;
		// One instant for both: the warning's sealing time is the one the pacing learns.
		let sealed = Instant::now();
		if let Some(end) = end {
			report_late(round, end, steps, trained.step_time, trained.ended, sealed);
		}
		let sealing = sealed.duration_since(trained.ended).as_secs_f64();
		tracing::info!(
			"round {round}: sealed {:.0} ms after its last step ({:.0} ms reserved)",
			sealing * 1e3,
			self.seal_secs.unwrap_or(0.0) * 1e3
		);
		self.seal_secs = Some(self.seal_secs.map_or(sealing, |s| 0.5 * s + 0.5 * sealing));
		Ok(Some(Computed { own, overlap_wait: trained.overlapped.then_some(trained.waited) }))
	}

	/// Starts training `round + 1` now, overlapped with `round`'s exchange, when the job
	/// overlaps and this trainer trained `round` (its weights are where `round` ended). In
	/// a job whose contributions are checked (a chain job) the overlapped steps start from
	/// `round`'s base, which verifiers hold, rather than from those weights, which no
	/// verifier could tell; its deadline is set when the chain opens it
	/// ([`Trainer::compute`]).
	pub(super) fn train_ahead(&mut self, round: RoundIndex) -> Result<()> {
		let next = round + 1;
		let job = &self.config.job;
		let Some(catch_up) = job.catch_up()? else { return Ok(()) };
		if next >= job.rounds || self.config.misbehave.skips_training() {
			return Ok(());
		}
		let opened = self.clock().has_opened(next);
		let end = opened.then(|| self.coordinator.deadline(next).map(super::instant_at)).flatten();
		let pace = self.pace(next, end);
		let state = self.state.as_ref().expect("a round was trained from a state");
		let from = self.fraud.is_some().then(|| state.weights.clone());
		self.inner.start(next, Start::Overlapped { catch_up, from }, pace)
	}

	/// Pacing of the round's steps: a fixed count (naive rounds) or a stop before its
	/// deadline `end`, early enough that the update is sealed by then (recording the last
	/// state, hashing the trajectory and compressing took 0.1–0.3 s for a 0.2M-parameter
	/// GPT with three trainers on two cores: enough to miss a 400 ms grace when not
	/// counted).
	fn pacing(&self, end: Option<Instant>) -> (Option<u32>, Option<Instant>) {
		let (fixed, margin) = match self.config.schedule {
			Schedule::FixedSteps { steps, .. } => (Some(steps), Duration::ZERO),
			Schedule::Deadline { .. } => {
				let left =
					end.map_or(Duration::MAX, |e| e.saturating_duration_since(Instant::now()));
				(None, seal_margin(self.seal_secs, left))
			}
		};
		(fixed, end.map(|e| e.checked_sub(margin).unwrap_or(e)))
	}

	/// The most steps a round of this trainer's may claim: the schedule's fixed count, else
	/// the cap it trains under.
	fn claimable_steps(&self) -> Option<u32> {
		self.pacing(None).0.or(self.config.job.train_cap())
	}

	/// How `round` trains until `end`: its data, its pace, and the misbehaviours that
	/// change them (wrong data; an inflating trainer stops early and claims the whole round).
	fn pace(&self, round: RoundIndex, end: Option<Instant>) -> Pace {
		let job = &self.config.job;
		let misbehave = self.config.misbehave;
		let seed =
			contribute::round_seed(self.coordinator.data_seed(round), job.id, round, &self.me);
		let seed = if misbehave.wrong_data { misbehave::wrong_seed(&seed) } else { seed };
		let (fixed, stop_at) = self.pacing(end);
		let stop_at = StopAt::new(stop_at);
		let cap = match misbehave.inflate {
			Some(share) => self.claimable_steps().map(|s| misbehave::inflated_run(s, share)),
			None => job.train_cap(),
		};
		Pace {
			dataset: self.dataset.clone(),
			device: self.device.clone(),
			seed,
			batch: u64::from(job.training.batch_size),
			fixed,
			stop_at,
			cap,
			slowdown: self.config.compute_slowdown,
			step_time: self.step_time,
		}
	}

	/// A round without training (a lazy, copying or stale trainer): nothing recorded but
	/// the start, which does not reach the steps claimed.
	fn untrained(&mut self, round: RoundIndex, end: Option<Instant>) -> Result<OwnUpdate> {
		let started = Instant::now();
		let stop_at = self.pacing(end).1;
		let steps = self.claimable_steps().unwrap_or(LAZY_STEPS);
		let batch = u64::from(self.config.job.training.batch_size);
		let mut local = self.untrained_round(round, stop_at, steps, batch);
		let forge = self.config.misbehave.forge_residual;
		if forge {
			self.forge_residual(round, &mut local)?;
		}
		let inner = self.inner.get()?;
		let start = inner.snapshot(self.compressor.residual().to_vec())?;
		let (weights, kept) = if forge {
			// From the round's base to the same weights the claimed steps on.
			let base = self.state.as_ref().expect("compute runs with a state").weights.clone();
			let end = misbehave::idle_end(&base, &start, steps);
			(base, vec![(0, Recorded::Start), (steps, Recorded::Step(end))])
		} else {
			(Arc::new(inner.model().params().flatten()?), vec![(0, Recorded::Start)])
		};
		let (unserved, digests, trajectory) = Unserved::new(round, start, weights, kept);
		self.unserved = Some(unserved);
		self.commit(round, local, digests, trajectory, started.elapsed())
	}

	/// Serves what verifiers redo the last sealed round from (its start state and the
	/// states it recorded, each under its content address) once its commitment is out:
	/// the keeper encodes them and serves them from memory, then from disk once written.
	pub(super) fn serve_unserved(&mut self) {
		let Some(Unserved { round, objects }) = self.unserved.take() else { return };
		let forget_before = round.saturating_sub(self.config.job.evidence_rounds);
		self.keeper.keep(Keep { round, objects, forget_before });
	}

	/// Compresses a round's update, signs its commitment and serves it.
	pub(super) fn commit(
		&mut self,
		round: RoundIndex,
		local: LocalRound,
		start: WorkDigests,
		trajectory: Digest,
		trained: Duration,
	) -> Result<OwnUpdate> {
		let state = self.state.as_ref().expect("commit runs with a state");
		let budget = self.transfer_budget();
		let context = Context {
			job: self.config.job.id,
			chain: self.config.proof_genesis.unwrap_or_default(),
			round,
			compression: self.config.job.training.compression_in(round),
			manifest: &self.manifest,
			base: state,
			start,
			trajectory,
		};
		let own =
			contribute::seal(local, context, &mut self.compressor, budget, &self.key, trained)?;
		self.signed_rounds.record(&own.signed.commitment)?;
		self.net.send(Command::ServeUpdate {
			hash: own.signed.commitment.update_hash,
			round,
			bytes: own.bytes.clone(),
			hashes: own.hashes.clone(),
		});
		Ok(own)
	}

	/// Bytes an update may take so peers download it within the transfer budget, from the
	/// median throughput measured to peers (`None`: no budget yet, or not adaptive).
	pub(super) fn transfer_budget(&self) -> Option<usize> {
		let Schedule::Deadline { transfer_budget_ms, .. } = self.config.schedule else {
			return None;
		};
		if !self.config.job.adaptive_compression {
			return None;
		}
		let mbit = self.health.median_throughput_mbit()?;
		Some(contribute::transfer_budget(mbit, transfer_budget_ms))
	}

	/// A scenario's starved trainer holds its commitment of `round` until the time the
	/// scenario names past the round's commit deadline `end`, serving peers meanwhile.
	pub(super) fn hold_commitment(&mut self, round: RoundIndex, end: Option<Instant>) {
		let lateness = self.scenario.as_ref().and_then(|s| s.commit_lateness(&self.me, round));
		let (Some(lateness), Some(end)) = (lateness, end) else { return };
		tracing::info!(
			"scenario: committing round {round} {} ms after its deadline",
			lateness.as_millis()
		);
		self.pump_until(end + lateness, |_| false);
	}

	/// A scenario's starved trainer, once it committed `round`, handles no network event
	/// until the time the scenario names past the round's commit deadline `end` (its loop
	/// held as a machine short of CPU holds it), while its peers' commitments queue up.
	pub(super) fn stall_loop(&self, round: RoundIndex, end: Option<Instant>) {
		let stall = self.scenario.as_ref().and_then(|s| s.loop_stall(&self.me, round));
		let (Some(stall), Some(end)) = (stall, end) else { return };
		tracing::info!(
			"scenario: loop stalled until {} ms after round {round}'s deadline",
			stall.as_millis()
		);
		std::thread::sleep((end + stall).saturating_duration_since(Instant::now()));
	}

	pub(super) fn publish(&mut self, own: &OwnUpdate) -> Result<()> {
		// Only at the job's own level: a stronger level means a slow link, and the ladder
		// follows the throughput measured on fetches. A hostile holder's (`corrupt_serving`)
		// are fetched too, so the peers it serves go through the fetch paths it corrupts.
		let inline =
			self.config.inline_updates && own.level == 0 && !self.config.misbehave.corrupt_serving;
		let announcement = Announcement::new(own.signed.clone(), &own.bytes, inline);
		self.net.send(Command::Publish(Box::new(announcement)));
		let offer = self.books.heard(self.me, own.signed.clone(), Arrival::Heard(Instant::now()));
		if let Some(offer) = offer {
			self.on_offer(self.me, offer, None);
		}
		if self.config.misbehave.equivocate {
			let twin = misbehave::equivocation_twin(&own.signed.commitment);
			let twin = contribute::sign(twin, &self.key)?;
			let twin = Announcement { signed: twin, update: None };
			self.net.send(Command::Publish(Box::new(twin)));
		}
		Ok(())
	}
}

/// How long before a deadline round's end its steps stop so that the update is sealed by
/// then: the sealing estimate and 50 ms, but at most half of what is `left` of the round.
/// The first estimate is timed once at set-up and scaled up fourfold, so a machine busy
/// elsewhere for that moment can make it longer than a round; uncapped, every stop would
/// fall before its round's start, no round would take a step, and nothing sealed would
/// correct the estimate. Capped, half the round trains and the sealing measured then
/// corrects it.
fn seal_margin(seal_secs: Option<f64>, left: Duration) -> Duration {
	let sealing = Duration::from_secs_f64(seal_secs.unwrap_or(0.0).max(0.0));
	Duration::from_millis(50) + sealing.min(left / 2)
}

/// Warns when the update was committed after the round's commit deadline `end`: peers close
/// their books a grace after it, so a later commitment is left out of the round (and its
/// proof unpaid). Says where the time went: steps that ran past it, or sealing after them.
fn report_late(
	round: RoundIndex,
	end: Instant,
	steps: u32,
	step_time: Option<StepTime>,
	ended: Instant,
	sealed: Instant,
) {
	if sealed <= end {
		return;
	}
	let past = |at: Instant| at.saturating_duration_since(end).as_millis();
	tracing::warn!(
		"round {round}: update committed {} ms after the commit deadline: its {steps} steps \
		 (estimated {:.2} s each) ended {} ms past it, sealing took {} ms",
		past(sealed),
		step_time.map_or(0.0, |t| t.mean()),
		past(ended),
		sealed.duration_since(ended).as_millis()
	);
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_sealing_estimate_longer_than_the_round_leaves_half_of_it_to_train() {
		let left = Duration::from_secs(12);
		// A fair estimate is kept whole.
		assert_eq!(seal_margin(Some(0.3), left), Duration::from_millis(350));
		assert_eq!(seal_margin(None, left), Duration::from_millis(50));
		// One timed on a busy machine (20 s for a 12 s round) stops half-way, not before the
		// round starts.
		assert_eq!(seal_margin(Some(20.0), left), Duration::from_millis(6_050));
	}
}
