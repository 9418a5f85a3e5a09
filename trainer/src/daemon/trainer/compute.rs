//! The trainer's own contribution: training paced against the round's deadline (or its
//! fixed step count), the attacker behaviours tests switch on, and the sealed update served
//! and announced.

use std::{
	sync::Arc,
	time::{Duration, Instant},
};

use grid_primitives::job::RoundIndex;

use super::Trainer;
use crate::{
	data::batch_indices,
	diloco::{train_round_observed, LocalRound},
	error::Result,
	net::{Command, WorkStateBytes},
	params::Digest,
	round::{
		contribute::{self, Context, OwnUpdate},
		coordinator::Schedule,
		misbehave::{self, LAZY_STEPS},
	},
	trajectory::{Recorder, StepState, Trajectory},
	work_state::WorkDigests,
};

impl Trainer {
	/// Trains from the global state until the round's deadline (or the fixed step count)
	/// and compresses the result.
	pub(super) fn compute(
		&mut self,
		round: RoundIndex,
		end: Option<Instant>,
	) -> Result<Option<OwnUpdate>> {
		let started = Instant::now();
		let start = self.keep_start_state(round)?;
		let state = self.state.as_ref().expect("compute runs with a state");
		let job = &self.config.job;
		let seed =
			contribute::round_seed(self.coordinator.data_seed(round), job.id, round, &self.me);
		let population = self.dataset.train_len();
		let batch = u64::from(job.training.batch_size);
		let slowdown = self.config.compute_slowdown;
		let max_steps = job.max_steps;
		let (fixed, margin) = match self.config.schedule {
			Schedule::FixedSteps { steps, .. } => (Some(steps), Duration::ZERO),
			Schedule::Deadline { .. } => (None, Duration::from_millis(50)),
		};
		let stop_at = end.map(|e| e.checked_sub(margin).unwrap_or(e));
		let misbehave = self.config.misbehave;
		if misbehave.skips_training() {
			let steps = fixed.or(max_steps).unwrap_or(LAZY_STEPS);
			let local = self.untrained_round(round, stop_at, steps, batch);
			// Nothing trained, nothing recorded: the start alone, which does not reach the
			// steps claimed.
			let trajectory = self.keep_trajectory(round, &[(0, self.inner.state()?)]);
			return self.commit(round, local, start, trajectory, started).map(Some);
		}
		let seed = if misbehave.wrong_data { misbehave::wrong_seed(&seed) } else { seed };
		// An inflating trainer stops early (and claims the whole round below).
		let claimable = fixed.or(max_steps);
		let run_cap = match misbehave.inflate {
			Some(share) => claimable.map(|steps| misbehave::inflated_run(steps, share)),
			None => max_steps,
		};
		let mut step_secs = self.step_secs;
		let mut last: Option<Instant> = None;
		let mut i = 0u64;
		let (dataset, device) = (&self.dataset, &self.device);
		let batches = std::iter::from_fn(|| {
			let now = Instant::now();
			if let Some(prev) = last {
				let took = now - prev;
				if slowdown > 1.0 {
					std::thread::sleep(took.mul_f64(slowdown - 1.0));
				}
				let secs = took.as_secs_f64() * slowdown;
				step_secs = Some(step_secs.map_or(secs, |s| 0.8 * s + 0.2 * secs));
			}
			let capped = run_cap.is_some_and(|m| i >= u64::from(m));
			let go = !capped
				&& match (fixed, stop_at) {
					(Some(steps), _) => i < u64::from(steps),
					(None, Some(stop)) => {
						Instant::now() + Duration::from_secs_f64(step_secs.unwrap_or(0.0)) < stop
					}
					(None, None) => false,
				};
			if !go {
				return None;
			}
			last = Some(Instant::now());
			let indices = batch_indices(&seed, i, batch, population);
			i += 1;
			Some(dataset.train_batch(&indices, device))
		});
		let mut recorder = Recorder::new(self.manifest.numel());
		let mut local = train_round_observed(&mut self.inner, &state.weights, batches, |at, t| {
			recorder.observe(at, t)
		})?;
		self.step_secs = step_secs;
		if local.steps == 0 {
			return Ok(None);
		}
		let trajectory = self.keep_trajectory(round, &recorder.finish(local.steps, &self.inner)?);
		if let Some(poison) = misbehave.poison {
			misbehave::poison_update(&mut local.delta, poison, round);
		}
		if let Some(share) = misbehave.inflate {
			let claim = misbehave::inflated_claim(local.steps, share, claimable);
			tracing::warn!("round {round}: ran {} steps, claiming {claim}", local.steps);
			(local.steps, local.samples) = (claim, u64::from(claim) * batch);
		}
		self.commit(round, local, start, trajectory, started).map(Some)
	}

	/// Snapshots this trainer's private state at the start of `round` (inner optimizer and
	/// error feedback) and serves it, so verifiers can redo the round from it; returns its
	/// digests for the commitment.
	fn keep_start_state(&mut self, round: RoundIndex) -> Result<WorkDigests> {
		let state = self.inner.snapshot(self.compressor.residual().to_vec())?;
		let digests = state.digests();
		self.serve_kept(round, digests.id(), state.encode());
		let keep = round.saturating_sub(self.config.job.evidence_rounds);
		if let Err(e) = self.work_states.prune(keep) {
			tracing::error!("round {round}: pruning start states: {e}");
		}
		self.net.send(Command::ForgetWorkStates(keep));
		Ok(digests)
	}

	/// Serves the states `kept` through `round` (the start's first, the end's last) and
	/// their trajectory, so verifiers can redo the steps between any two; returns the
	/// trajectory's root for the commitment.
	fn keep_trajectory(&mut self, round: RoundIndex, kept: &[(u32, StepState)]) -> Digest {
		let (trajectory, objects) = Trajectory::served(kept);
		for (id, bytes) in objects {
			self.serve_kept(round, id, bytes);
		}
		trajectory.root()
	}

	/// Serves `bytes` under `id` as long as `round` can be challenged: from disk, a piece at
	/// a time (a window of a large model's states does not fit in memory), where a restart
	/// finds them again; from memory only where the disk failed.
	fn serve_kept(&mut self, round: RoundIndex, id: Digest, bytes: Vec<u8>) {
		let bytes = match self.work_states.save(round, &id, &bytes) {
			Ok(path) => WorkStateBytes::File(path),
			Err(e) => {
				tracing::error!("round {round}: keeping {} on disk: {e}", hex::encode(&id[..4]));
				WorkStateBytes::Memory(Arc::new(bytes))
			}
		};
		self.net.send(Command::ServeWorkState { id, round, bytes });
	}

	/// Compresses a round's update, signs its commitment and serves it.
	pub(super) fn commit(
		&mut self,
		round: RoundIndex,
		local: LocalRound,
		start: WorkDigests,
		trajectory: Digest,
		started: Instant,
	) -> Result<OwnUpdate> {
		let state = self.state.as_ref().expect("commit runs with a state");
		let budget = self.transfer_budget();
		let context = Context {
			job: self.config.job.id,
			round,
			manifest: &self.manifest,
			base: state,
			start,
			trajectory,
		};
		let own =
			contribute::seal(local, context, &mut self.compressor, budget, &self.key, started)?;
		self.net.send(Command::ServeUpdate {
			hash: own.signed.commitment.update_hash,
			round,
			bytes: own.bytes.clone(),
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

	pub(super) fn publish(&mut self, own: &OwnUpdate) -> Result<()> {
		self.net.send(Command::Publish(own.signed.clone()));
		let offer = self.books.heard(self.me, own.signed.clone());
		if let Some(offer) = offer {
			self.on_offer(self.me, offer);
		}
		if self.config.misbehave.equivocate {
			let twin = misbehave::equivocation_twin(&own.signed.commitment);
			self.net.send(Command::Publish(contribute::sign(twin, &self.key)?));
		}
		Ok(())
	}
}
