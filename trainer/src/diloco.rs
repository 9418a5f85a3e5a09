//! DiLoCo (Douillard et al. 2023): participants train locally from the global model, send the
//! pseudo-gradient Δ = θ_global − θ_local, and everyone applies the aggregated Δ with an outer
//! Nesterov step. The outer state lives in f32 on the CPU and is updated sequentially, so all
//! nodes that aggregate the same updates reach bit-identical weights.

use std::sync::Arc;

use grid_primitives::job::{Nanos, TrainingParams};
use rayon::prelude::*;

use crate::{
	compress::{CompressedUpdate, Compressor},
	error::{Error, Result},
	model::Batch,
	train::InnerTrainer,
};

/// Δ = θ_global − θ_local.
pub fn pseudo_gradient(global: &[f32], local: &[f32]) -> Result<Vec<f32>> {
	if global.len() != local.len() {
		return Err(Error::Layout(format!(
			"global has {} values, local {}",
			global.len(),
			local.len()
		)));
	}
	Ok(global.iter().zip(local).map(|(g, l)| g - l).collect())
}

/// One coordinate's outer step: `v ← μv + Δ; θ ← θ − lr·(Δ + μv)`, giving (θ, v). One
/// definition for the step, its lookahead and its finiteness check, so that all three do the
/// same arithmetic bit for bit.
#[inline]
fn nesterov(lr: f32, mu: f32, theta: f32, v: f32, d: f32) -> (f32, f32) {
	let v = mu * v + d;
	(theta - lr * (d + mu * v), v)
}

/// SGD with Nesterov momentum on the pseudo-gradient (the DiLoCo outer optimizer).
#[derive(Clone, Debug, PartialEq)]
pub struct OuterOptimizer {
	lr: f32,
	momentum: f32,
	/// Shared with the checkpoint served and written meanwhile
	/// ([`crate::round::checkpoint_view::CheckpointView`]); a step copies it only while
	/// that still reads it.
	velocity: Arc<Vec<f32>>,
}

impl OuterOptimizer {
	/// An optimizer for `len` parameters with zero initial velocity.
	pub fn new(lr: f32, momentum: f32, len: usize) -> Self {
		OuterOptimizer { lr, momentum, velocity: Arc::new(vec![0.0; len]) }
	}

	/// The job's outer learning rate and momentum.
	pub fn from_params<B>(params: &TrainingParams<B>, len: usize) -> Self {
		let f = |n: Nanos| n.to_f64() as f32;
		Self::new(f(params.outer_lr), f(params.outer_momentum), len)
	}

	/// The momentum buffer (saved in checkpoints).
	pub fn velocity(&self) -> &[f32] {
		&self.velocity
	}

	/// The momentum buffer, shared (a checkpoint read from it in place).
	pub fn shared_velocity(&self) -> Arc<Vec<f32>> {
		self.velocity.clone()
	}

	/// Restores a saved momentum buffer.
	pub fn set_velocity(&mut self, velocity: Vec<f32>) -> Result<()> {
		if velocity.len() != self.velocity.len() {
			return Err(Error::Layout(format!(
				"velocity has {} values, the model {}",
				velocity.len(),
				self.velocity.len()
			)));
		}
		self.velocity = Arc::new(velocity);
		Ok(())
	}

	/// `v ← μv + Δ; θ ← θ − lr·(Δ + μv)` (PyTorch's Nesterov SGD).
	pub fn step(&mut self, global: &mut [f32], delta: &[f32]) -> Result<()> {
		self.step_at(self.lr, global, delta)
	}

	/// [`step`](Self::step) at learning rate `lr` instead of its own (a round in the job's
	/// outer anneal, `TrainingParams::outer_anneal`).
	pub fn step_at(&mut self, lr: f32, global: &mut [f32], delta: &[f32]) -> Result<()> {
		self.check(global, delta)?;
		let mu = self.momentum;
		let velocity = Arc::make_mut(&mut self.velocity);
		for ((theta, v), d) in global.iter_mut().zip(velocity.iter_mut()).zip(delta) {
			(*theta, *v) = nesterov(lr, mu, *theta, *v, *d);
		}
		Ok(())
	}

	/// `θ ← θ − Δ`: the model moved to the mean of the models Δ averages (a job's dense
	/// rounds, `TrainingParams::dense_rounds`), the momentum left as it is.
	pub fn average(&self, global: &mut [f32], delta: &[f32]) -> Result<()> {
		self.check(global, delta)?;
		for (theta, d) in global.iter_mut().zip(delta) {
			*theta -= d;
		}
		Ok(())
	}

	/// Whether [`step`](Self::step) with `delta` leaves every weight and momentum finite: the
	/// same arithmetic, read only. Finite updates can still sum past f32's range (a peer's
	/// huge values, where no norm screen bounds them).
	pub fn step_stays_finite(&self, global: &[f32], delta: &[f32]) -> Result<bool> {
		self.step_at_stays_finite(self.lr, global, delta)
	}

	/// Whether [`step_at`](Self::step_at) with `lr` and `delta` leaves every weight and
	/// momentum finite.
	pub fn step_at_stays_finite(&self, lr: f32, global: &[f32], delta: &[f32]) -> Result<bool> {
		self.check(global, delta)?;
		let mu = self.momentum;
		let moves = global.par_iter().zip(self.velocity.par_iter()).zip(delta);
		Ok(moves.all(|((theta, v), d)| {
			let (theta, v) = nesterov(lr, mu, *theta, *v, *d);
			theta.is_finite() && v.is_finite()
		}))
	}

	/// Whether [`average`](Self::average) with `delta` leaves every weight finite.
	pub fn average_stays_finite(&self, global: &[f32], delta: &[f32]) -> Result<bool> {
		self.check(global, delta)?;
		Ok(global.par_iter().zip(delta).all(|(theta, d)| (theta - d).is_finite()))
	}

	/// The weights [`step`](Self::step) would give, leaving this optimizer as it is: the same
	/// arithmetic, so a lookahead with the aggregate is bit-identical to the step.
	pub fn lookahead(&self, global: &[f32], delta: &[f32]) -> Result<Vec<f32>> {
		self.check(global, delta)?;
		let (lr, mu) = (self.lr, self.momentum);
		let ahead = global
			.iter()
			.zip(self.velocity.iter())
			.zip(delta)
			.map(|((theta, v), d)| nesterov(lr, mu, *theta, *v, *d).0);
		Ok(ahead.collect())
	}

	fn check(&self, global: &[f32], delta: &[f32]) -> Result<()> {
		if global.len() != self.velocity.len() || delta.len() != self.velocity.len() {
			return Err(Error::Layout(format!(
				"outer step on {} weights with a Δ of {} for an optimizer of {}",
				global.len(),
				delta.len(),
				self.velocity.len()
			)));
		}
		Ok(())
	}
}

/// How a round's training relates to the exchange of the round before it.
///
/// Blocking, round r trains from S_r, the state the aggregate of round r − 1 gave: nothing
/// trains while updates are exchanged. Overlapped, round r starts at round r − 1's commit
/// deadline, while r − 1's updates are still being exchanged, so it can only start from what
/// is known then ([`Known`]): S_(r−1), the state that aggregate will be applied to, the
/// aggregate before it and the trainer's own updates. Its update is still applied to S_r (a
/// one-round-delayed outer step). The overlapped modes differ in what stands in for round
/// r − 1's aggregate, not yet known, when S_(r−1) is advanced by the outer step (the same
/// arithmetic as the step: [`OuterOptimizer::lookahead`]). Every input is public (canonical
/// states, aggregates and the trainer's own committed updates), so a verifier can rebuild
/// any trainer's start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overlap {
	/// Train from S_r after the exchange.
	#[default]
	Blocking,
	/// Train from S_(r−1) itself (naive delayed outer step).
	Delayed,
	/// Round r − 2's aggregate stands in: every trainer starts from the same state.
	Stale,
	/// The trainer's own round r − 1 update stands in.
	Own,
	/// Kale et al. 2025, "Eager updates for overlapped communication and computation in
	/// DiLoCo": round r − 2's aggregate with the trainer's own share replaced by its round
	/// r − 1 update, A_(r−2) + (own_(r−1) − own_(r−2)) / M.
	Eager,
	/// The trainer's own weights at the end of round r − 1, uncompressed: it goes on
	/// training its local model (committed as the last state of round r − 1's trajectory).
	Local,
	/// The trainer's own share of round r − 1's aggregate, own_(r−1) / M: the part of it
	/// the trainer knows, nothing standing in for the others' (the eager mixture without
	/// its stale part; [`Overlap::Own`] takes the whole of its update, M times its share).
	Share,
}

/// What a trainer knows when round r opens.
#[derive(Clone, Copy, Debug, Default)]
pub struct Known<'a> {
	/// S_(r−1) with the outer optimizer it carried (`None` in round 0, where every mode
	/// starts from S_0).
	pub previous: Option<(&'a [f32], &'a OuterOptimizer)>,
	/// Round r − 2's aggregate, which took S_(r−2) to S_(r−1) (`None` before round 2 or when
	/// that round aggregated nothing).
	pub last_aggregate: Option<&'a [f32]>,
	/// The trainer's own updates of rounds r − 1 and r − 2 as it sent them (`None` for a
	/// round it sent nothing).
	pub own: [Option<&'a [f32]>; 2],
	/// M: how many updates an aggregate averages (the eager mixture's weight of one).
	pub members: usize,
	/// The trainer's weights at the end of round r − 1 (`None` when it did not train it).
	pub local: Option<&'a [f32]>,
}

impl Known<'_> {
	/// One update's weight in an aggregate of M: 1 / M.
	fn share(&self) -> f32 {
		1.0 / self.members.max(1) as f32
	}
}

impl Overlap {
	/// Where a trainer starts round r: S_r (`current`) when blocking, otherwise from what
	/// it `known`s.
	pub fn start(self, current: &[f32], known: &Known) -> Result<Vec<f32>> {
		let Some((weights, outer)) = known.previous else { return Ok(current.to_vec()) };
		let zero = || vec![0f32; weights.len()];
		let stand_in = match self {
			Overlap::Blocking => return Ok(current.to_vec()),
			Overlap::Delayed => return Ok(weights.to_vec()),
			Overlap::Local => return Ok(known.local.unwrap_or(weights).to_vec()),
			Overlap::Stale => known.last_aggregate.map_or_else(zero, <[f32]>::to_vec),
			Overlap::Own => known.own[0].map_or_else(zero, <[f32]>::to_vec),
			Overlap::Share => {
				let share = known.share();
				known.own[0].map_or_else(zero, |own| own.iter().map(|o| share * o).collect())
			}
			Overlap::Eager => {
				let mut mix = known.last_aggregate.map_or_else(zero, <[f32]>::to_vec);
				let share = known.share();
				for (sign, own) in [(1.0, known.own[0]), (-1.0, known.own[1])] {
					let Some(own) = own else { continue };
					if own.len() != mix.len() {
						return Err(Error::Layout(format!(
							"an own update of {} values for a model of {}",
							own.len(),
							mix.len()
						)));
					}
					for (m, o) in mix.iter_mut().zip(own) {
						*m += sign * share * o;
					}
				}
				mix
			}
		};
		outer.lookahead(weights, &stand_in)
	}
}

/// What the rounds so far leave for the next overlapped start ([`Known`]): the state before
/// the last aggregate with its optimizer, the last two aggregates and each participant's
/// last two updates as sent (a simulation keeps them for all its participants; a trainer
/// would keep its own).
pub struct OverlapHistory {
	previous: Option<(Vec<f32>, OuterOptimizer)>,
	/// Newest first.
	aggregates: [Option<Vec<f32>>; 2],
	/// Per participant, newest first.
	sent: Vec<[Option<Vec<f32>>; 2]>,
}

impl OverlapHistory {
	/// Nothing known yet, for `participants` participants.
	pub fn new(participants: usize) -> Self {
		OverlapHistory {
			previous: None,
			aggregates: [None, None],
			sent: vec![[None, None]; participants],
		}
	}

	/// What participant `p` knows when the next round opens, its aggregates averaging
	/// `members` updates.
	pub fn known(&self, p: usize, members: usize) -> Known<'_> {
		let own = &self.sent[p];
		Known {
			previous: self.previous.as_ref().map(|(w, o)| (&w[..], o)),
			last_aggregate: self.aggregates[1].as_deref(),
			own: [own[0].as_deref(), own[1].as_deref()],
			members,
			local: None,
		}
	}

	/// Participant `p` sent `update` (dense) this round.
	pub fn sent(&mut self, p: usize, update: Vec<f32>) {
		let own = &mut self.sent[p];
		*own = [Some(update), own[0].take()];
	}

	/// The round's `aggregate` is about to step `state` with `outer`.
	pub fn stepping(&mut self, state: &[f32], outer: &OuterOptimizer, aggregate: &[f32]) {
		self.previous = Some((state.to_vec(), outer.clone()));
		self.aggregates = [Some(aggregate.to_vec()), self.aggregates[0].take()];
	}
}

/// What local training in a round produced, before compression.
pub struct LocalRound {
	/// Δ = θ_global − θ_local.
	pub delta: Vec<f32>,
	/// Samples trained on.
	pub samples: u64,
	/// Inner steps run.
	pub steps: u32,
	/// Mean training loss over the round's steps.
	pub mean_loss: f32,
}

/// Loads `global` into the trainer's model, trains on `batches` (stopping whenever the
/// iterator ends: a deadline can end it early) and returns the pseudo-gradient.
pub fn train_round(
	trainer: &mut InnerTrainer,
	global: &[f32],
	batches: impl IntoIterator<Item = Result<Batch>>,
) -> Result<LocalRound> {
	train_round_observed(trainer, global, batches, |_, _| Ok(()))
}

/// [`train_round`], showing the trainer to `observe` before the first step and after each
/// (with the steps taken so far in the round): what a trajectory's snapshots are taken from
/// ([`crate::verify::StepState`]).
pub fn train_round_observed(
	trainer: &mut InnerTrainer,
	global: &[f32],
	batches: impl IntoIterator<Item = Result<Batch>>,
	observe: impl FnMut(u32, &InnerTrainer) -> Result<()>,
) -> Result<LocalRound> {
	train_from(trainer, RoundStart::Base(global), batches, observe)
}

/// An overlapped round that catches up with the exchange it overlapped (the overlap of
/// Streaming DiLoCo, Douillard et al. 2025, with the early steps' progress kept rather than
/// mixed): its first `after` inner steps train from an overlapped start ([`Overlap::start`])
/// while round r − 1 is exchanged; then the weights move by S_r − start, keeping what those
/// steps learnt, and the round's Δ is measured from S_r. The outer step is therefore not
/// delayed: only `after` steps' gradients were taken away from where blocking training would
/// have taken them. Which step catches up is fixed in advance, not by when S_r happens to
/// arrive, so the round is the same computation on every machine (replayable from its
/// public or committed start, [`crate::verify::Claim`]); a trainer whose exchange is not
/// done by then waits. `bench/reports/overlap_catchup.md` measures the cost by start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatchUp {
	/// Inner steps trained from the overlapped start before moving to S_r (at least 1).
	after: u32,
}

impl CatchUp {
	/// Catches up after `after` steps (at least one: none would be a blocking round).
	pub fn new(after: u32) -> Result<Self> {
		if after == 0 {
			return Err(Error::Config("a catch-up after 0 steps is a blocking round".into()));
		}
		Ok(CatchUp { after })
	}

	/// Inner steps trained from the overlapped start.
	pub fn after(self) -> u32 {
		self.after
	}
}

/// Moves `weights`, trained from `start`, by `current − start`: what the steps since `start`
/// learnt, carried onto `current` ([`CatchUp`]).
pub fn catch_up(weights: &mut [f32], start: &[f32], current: &[f32]) -> Result<()> {
	if current.len() != weights.len() || start.len() != weights.len() {
		return Err(Error::Layout(format!(
			"catching up from a start of {} values to a state of {} for a model of {}",
			start.len(),
			current.len(),
			weights.len()
		)));
	}
	for ((w, c), s) in weights.iter_mut().zip(current).zip(start) {
		*w += c - s;
	}
	Ok(())
}

/// Where a round's training starts.
pub enum RoundStart<'a> {
	/// From S_r, the state its update is applied to (a blocking round).
	Base(&'a [f32]),
	/// Overlapped: from `from` until `catch_up.after` steps, then moved onto S_r, which
	/// `current` gives when asked (a trainer waits there for its exchange to decide it).
	CatchingUp {
		/// The overlapped start.
		from: &'a [f32],
		/// When it moves onto S_r.
		catch_up: CatchUp,
		/// S_r.
		current: Box<dyn FnOnce() -> Result<Vec<f32>> + Send + 'a>,
	},
}

/// [`train_round`] overlapped with a catch-up: starts from `from`, and after
/// `catch_up.after` steps asks `current` for S_r and moves the weights by S_r − `from`
/// ([`catch_up`]). Δ is measured from S_r.
pub fn train_round_catching_up(
	trainer: &mut InnerTrainer,
	from: &[f32],
	catch_up: CatchUp,
	current: impl FnOnce() -> Result<Vec<f32>> + Send,
	batches: impl IntoIterator<Item = Result<Batch>>,
) -> Result<LocalRound> {
	let start = RoundStart::CatchingUp { from, catch_up, current: Box::new(current) };
	train_from(trainer, start, batches, |_, _| Ok(()))
}

/// Trains a round from `start` on `batches` (stopping whenever the iterator ends: a
/// deadline can end it early), showing the trainer to `observe` before the first step and
/// after each (with the steps taken so far in the round; an overlapped round's state after
/// its catch-up step is shown before it catches up), and returns Δ from S_r. A round that
/// ends before its catch-up step catches up at its end.
pub fn train_from(
	trainer: &mut InnerTrainer,
	start: RoundStart,
	batches: impl IntoIterator<Item = Result<Batch>>,
	mut observe: impl FnMut(u32, &InnerTrainer) -> Result<()>,
) -> Result<LocalRound> {
	let params = trainer.model().params().clone();
	let (from, mut pending) = match start {
		RoundStart::Base(base) => (base, None),
		RoundStart::CatchingUp { from, catch_up, current } => (from, Some((catch_up, current))),
	};
	params.load_flat(from)?;
	let after = pending.as_ref().map(|(c, _): &(CatchUp, _)| c.after);
	let mut base: Option<Vec<f32>> = None;
	let mut catch_up_now = |base: &mut Option<Vec<f32>>| -> Result<()> {
		let Some((_, current)) = pending.take() else { return Ok(()) };
		let current = current()?;
		let mut weights = params.flatten()?;
		catch_up(&mut weights, from, &current)?;
		params.load_flat(&weights)?;
		*base = Some(current);
		Ok(())
	};
	let (mut samples, mut loss_sum, mut steps) = (0u64, 0f64, 0u32);
	observe(0, trainer)?;
	for batch in batches {
		if Some(steps) == after {
			catch_up_now(&mut base)?;
		}
		let batch = batch?;
		samples += batch.samples()? as u64;
		loss_sum += f64::from(trainer.step(&batch)?.loss);
		steps += 1;
		observe(steps, trainer)?;
	}
	catch_up_now(&mut base)?;
	let base = base.as_deref().unwrap_or(from);
	let delta = pseudo_gradient(base, &params.flatten()?)?;
	Ok(LocalRound { delta, samples, steps, mean_loss: (loss_sum / f64::from(steps.max(1))) as f32 })
}

/// What a participant produces in a round.
pub struct RoundOutput {
	/// Its compressed Δ.
	pub update: CompressedUpdate,
	/// Samples trained on.
	pub samples: u64,
	/// Mean training loss over the round's steps.
	pub mean_loss: f32,
}

/// One participant: a local trainer (whose optimizer state persists across rounds, as in
/// DiLoCo) and its compressor (whose error feedback does too).
pub struct Participant {
	trainer: InnerTrainer,
	compressor: Box<dyn Compressor>,
}

impl Participant {
	/// A participant from its trainer and compressor.
	pub fn new(trainer: InnerTrainer, compressor: Box<dyn Compressor>) -> Self {
		Participant { trainer, compressor }
	}

	/// The local trainer.
	pub fn trainer(&self) -> &InnerTrainer {
		&self.trainer
	}

	/// Starts from `global`, trains on `batches`, and returns the compressed Δ.
	pub fn run_round(
		&mut self,
		global: &[f32],
		batches: impl IntoIterator<Item = Result<Batch>>,
	) -> Result<RoundOutput> {
		let local = train_round(&mut self.trainer, global, batches)?;
		self.seal(local)
	}

	/// [`Participant::run_round`] overlapped with a catch-up ([`train_round_catching_up`]).
	pub fn run_round_catching_up(
		&mut self,
		start: &[f32],
		catch_up: CatchUp,
		current: impl FnOnce() -> Result<Vec<f32>> + Send,
		batches: impl IntoIterator<Item = Result<Batch>>,
	) -> Result<RoundOutput> {
		let local = train_round_catching_up(&mut self.trainer, start, catch_up, current, batches)?;
		self.seal(local)
	}

	fn seal(&mut self, local: LocalRound) -> Result<RoundOutput> {
		let update = self.compressor.compress(&local.delta)?;
		Ok(RoundOutput { update, samples: local.samples, mean_loss: local.mean_loss })
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		aggregate::{aggregate, Contribution, Rule},
		compress::{compressor, Layout},
		data::{shard, MnistDataset},
		model::Model,
		train::{evaluate, InnerConfig},
	};
	use candle_core::Device;
	use grid_primitives::{
		job::{Compression, InnerOptimizer, MlpConfig, ModelSpec},
		Hash,
	};

	#[test]
	fn nesterov_matches_the_reference() {
		let mut opt = OuterOptimizer::new(0.7, 0.9, 1);
		let mut theta = [1.0f32];
		opt.step(&mut theta, &[0.1]).unwrap(); // v = 0.1, θ = 1 − 0.7·(0.1 + 0.09)
		assert!((theta[0] - (1.0 - 0.7 * 0.19)).abs() < 1e-7);
		opt.step(&mut theta, &[0.1]).unwrap(); // v = 0.19, θ −= 0.7·(0.1 + 0.171)
		assert!((theta[0] - (1.0 - 0.7 * 0.19 - 0.7 * 0.271)).abs() < 1e-6);
		assert!(opt.step(&mut theta, &[0.1, 0.2]).is_err());
		// Averaging moves by Δ itself and leaves the momentum alone.
		let before = opt.clone();
		let mut averaged = theta;
		opt.average(&mut averaged, &[0.25]).unwrap();
		assert_eq!((averaged[0], &opt), (theta[0] - 0.25, &before));
		assert!(opt.average(&mut averaged, &[0.1, 0.2]).is_err());
		// With lr 1 and no momentum the outer step returns exactly the averaged local model.
		let mut plain = OuterOptimizer::new(1.0, 0.0, 2);
		let global = [1.0f32, 2.0];
		let local = [0.5f32, 2.5];
		let mut theta = global;
		plain.step(&mut theta, &pseudo_gradient(&global, &local).unwrap()).unwrap();
		assert_eq!(theta, local);
	}

	#[test]
	fn a_lookahead_is_the_step_without_taking_it() {
		let mut opt = OuterOptimizer::new(0.7, 0.9, 3);
		let mut theta = vec![1.0f32, -2.0, 0.5];
		opt.step(&mut theta, &[0.1, 0.2, -0.3]).unwrap();
		let before = opt.clone();
		let delta = [0.05f32, -0.4, 0.25];
		let ahead = opt.lookahead(&theta, &delta).unwrap();
		assert_eq!(opt, before, "the lookahead leaves the momentum alone");
		opt.step(&mut theta, &delta).unwrap();
		assert_eq!(ahead, theta, "bit for bit what the step gives");
		assert!(before.lookahead(&theta, &[0.1]).is_err());
	}

	#[test]
	fn each_overlap_mode_starts_where_it_says() {
		let outer = OuterOptimizer::new(1.0, 0.0, 2);
		let current = [5.0f32, 5.0];
		let previous = [1.0f32, 2.0];
		let (own, own_before, last) = ([0.5f32, -0.5], [0.1f32, 0.3], [0.2f32, 0.2]);
		let known = Known {
			previous: Some((&previous, &outer)),
			last_aggregate: Some(&last),
			own: [Some(&own), Some(&own_before)],
			members: 4,
			local: Some(&own_before),
		};
		let start = |mode: Overlap, known: &Known| mode.start(&current, known).unwrap();
		assert_eq!(start(Overlap::Blocking, &known), current);
		assert_eq!(start(Overlap::Delayed, &known), previous);
		assert_eq!(start(Overlap::Stale, &known), [0.8, 1.8]);
		assert_eq!(start(Overlap::Own, &known), [0.5, 2.5]);
		// A + (own − own_before) / 4 = [0.3, 0.0]: lr 1, no momentum.
		let eager = start(Overlap::Eager, &known);
		assert!((eager[0] - 0.7).abs() < 1e-6 && (eager[1] - 2.0).abs() < 1e-6, "{eager:?}");
		let first = Known { own: [Some(&own), None], last_aggregate: None, ..known };
		let eager = start(Overlap::Eager, &first);
		assert!((eager[0] - 0.875).abs() < 1e-6 && (eager[1] - 2.125).abs() < 1e-6, "{eager:?}");
		assert_eq!(start(Overlap::Own, &Known { own: [None, None], ..known }), previous);
		// S_(r−1) − own / 4 = [1 − 0.125, 2 + 0.125]: the eager mixture's first round.
		assert_eq!(start(Overlap::Share, &known), [0.875, 2.125]);
		assert_eq!(start(Overlap::Share, &Known { own: [None, None], ..known }), previous);
		assert_eq!(start(Overlap::Local, &known), own_before, "its own weights as they are");
		assert_eq!(start(Overlap::Local, &Known { local: None, ..known }), previous);
		let round0 = Known { previous: None, ..known };
		for mode in [
			Overlap::Delayed,
			Overlap::Stale,
			Overlap::Own,
			Overlap::Eager,
			Overlap::Local,
			Overlap::Share,
		] {
			assert_eq!(start(mode, &round0), current, "round 0 starts from S_0");
		}
		let short = [1.0f32];
		let bad = Known { own: [Some(&short), None], ..known };
		assert!(Overlap::Eager.start(&current, &bad).is_err());
	}

	/// A small MNIST trainer (the same initial model every call).
	fn small_trainer() -> InnerTrainer {
		let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 16, layers: 1 });
		let inner =
			InnerOptimizer::AdamW { lr: Nanos(2_000_000), weight_decay: Nanos(0), warmup_steps: 2 };
		let config = InnerConfig { total_steps: 40, ..Default::default() };
		InnerTrainer::new(spec, b"job", &Device::Cpu, &inner, config).unwrap()
	}

	/// `n` batches of 16 MNIST samples.
	fn round_batches(n: usize) -> Vec<Batch> {
		let data = MnistDataset::shipped().unwrap();
		let idx = shard(&Hash::zero(), 7, 0, &[0], data.train_len(), 16 * n);
		idx.chunks(16).map(|c| data.train_batch(c, &Device::Cpu).unwrap()).collect()
	}

	#[test]
	fn a_catch_up_from_the_state_itself_is_a_blocking_round() {
		let (mut trainer, mut twin, batches) = (small_trainer(), small_trainer(), round_batches(6));
		let global = trainer.model().params().flatten().unwrap();
		let ok = |b: &Batch| Ok(b.clone());
		let blocking = train_round(&mut trainer, &global, batches.iter().map(ok)).unwrap();
		let catch_up = CatchUp::new(3).unwrap();
		let current = || Ok(global.clone());
		let caught =
			train_round_catching_up(&mut twin, &global, catch_up, current, batches.iter().map(ok))
				.unwrap();
		assert_eq!(blocking.delta, caught.delta, "moving by S_r − S_r changes nothing");
		assert_eq!((blocking.steps, blocking.samples), (caught.steps, caught.samples));
		assert!(CatchUp::new(0).is_err());
	}

	#[test]
	fn a_catch_up_carries_the_early_steps_onto_the_state_and_measures_from_it() {
		let batches = round_batches(6);
		let global = small_trainer().model().params().flatten().unwrap();
		let ok = |b: &Batch| Ok(b.clone());
		let from: Vec<f32> = global.iter().map(|x| x + 0.01).collect();
		// A round that ends at its catch-up step sends exactly what it learnt from its start.
		let mut a = small_trainer();
		let mut b = small_trainer();
		let plain = train_round(&mut a, &from, batches.iter().map(ok)).unwrap();
		let late = CatchUp::new(6).unwrap();
		let caught = train_round_catching_up(
			&mut b,
			&from,
			late,
			|| Ok(global.clone()),
			batches.iter().map(ok),
		)
		.unwrap();
		let gap =
			plain.delta.iter().zip(&caught.delta).map(|(p, c)| (p - c).abs()).fold(0f32, f32::max);
		assert!(gap < 1e-5, "Δ from S_r of a round caught up at its end: off by {gap}");
		// Caught up earlier, the later steps train at S_r plus the early progress: another Δ,
		// which asked for S_r exactly once.
		let mut c = small_trainer();
		let mut asked = 0;
		let early = CatchUp::new(2).unwrap();
		let current = || {
			asked += 1;
			Ok(global.clone())
		};
		let mid =
			train_round_catching_up(&mut c, &from, early, current, batches.iter().map(ok)).unwrap();
		assert_eq!(asked, 1);
		assert_ne!(mid.delta, caught.delta);
		assert_eq!(mid.steps, 6);
		// A state of another model is refused, not stepped into.
		let mut d = small_trainer();
		let short = || Ok(vec![0f32; 3]);
		assert!(
			train_round_catching_up(&mut d, &from, early, short, batches.iter().map(ok)).is_err()
		);
	}

	/// What a simulated run ends with.
	struct Run {
		hash: [u8; 32],
		before: f64,
		after: f64,
		/// Mean over participants and rounds after the first of ‖start − S_r‖, where S_r is
		/// the state the round's aggregate is applied to.
		drift: f64,
	}

	/// `people` participants, `rounds` rounds of DiLoCo on MNIST.
	fn simulate(compression: Compression, overlap: Overlap, rounds: u32, people: usize) -> Run {
		let dev = Device::Cpu;
		let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 32, layers: 1 });
		let data = MnistDataset::shipped().unwrap();
		let inner =
			InnerOptimizer::AdamW { lr: Nanos(2_000_000), weight_decay: Nanos(0), warmup_steps: 2 };
		let config = InnerConfig { total_steps: 20 * u64::from(rounds), ..Default::default() };
		let model = Model::new(spec, b"job", &dev).unwrap();
		let mut global = model.params().flatten().unwrap();
		let eval = data.eval_batches(500, 250, &dev).unwrap();
		let before = evaluate(&model, &eval).unwrap();
		let mut people: Vec<Participant> = (0..people)
			.map(|_| {
				let t = InnerTrainer::new(spec, b"job", &dev, &inner, config).unwrap();
				let layout = Layout::of(&model.params().manifest());
				Participant::new(t, compressor(&compression, &layout).unwrap())
			})
			.collect();
		let mut outer = OuterOptimizer::new(0.7, 0.9, global.len());
		let mut history = OverlapHistory::new(people.len());
		let (mut drift, mut starts, members) = (0.0, 0, people.len());
		for round in 0..rounds {
			let mut updates = Vec::new();
			for (p, person) in people.iter_mut().enumerate() {
				let start = overlap.start(&global, &history.known(p, members)).unwrap();
				if round > 0 {
					let gap: Vec<f32> = start.iter().zip(&global).map(|(a, b)| a - b).collect();
					drift += crate::aggregate::norm(&gap);
					starts += 1;
				}
				let idx = shard(&Hash::zero(), 7, round, &[p as u8], data.train_len(), 20 * 32);
				let batches = idx.chunks(32).map(|c| data.train_batch(c, &dev)).collect::<Vec<_>>();
				let out = person.run_round(&start, batches).unwrap();
				// Through the wire format, as peers would see it.
				let wire = CompressedUpdate::decode(&out.update.encode()).unwrap();
				history.sent(p, wire.decompress());
				updates.push(Contribution { update: wire.into(), samples: out.samples });
			}
			let agg = aggregate(&updates, Rule::TrimmedMean { trim: 0 }, Some(3.0)).unwrap();
			history.stepping(&global, &outer, &agg.delta);
			outer.step(&mut global, &agg.delta).unwrap();
		}
		model.params().load_flat(&global).unwrap();
		let after = evaluate(&model, &eval).unwrap();
		let hash = model.params().manifest().model_hash(&global).unwrap();
		Run { hash, before, after, drift: drift / f64::from(starts.max(1)) }
	}

	#[test]
	fn diloco_rounds_are_reproducible_and_learn() {
		// Top-k sends an eighth of the values per round, so two rounds get less far.
		let cases = [
			(Compression::None, 0.5),
			(Compression::TopK { chunk: 64, k: 8, value_bits: 2 }, 0.7),
			(Compression::Tiles { k: 256 }, 0.7),
		];
		for (compression, factor) in cases {
			let run = simulate(compression, Overlap::Blocking, 2, 3);
			let again = simulate(compression, Overlap::Blocking, 2, 3);
			assert_eq!(run.hash, again.hash, "{compression:?}");
			let (before, after) = (run.before, run.after);
			assert!(after < factor * before, "{compression:?}: held-out loss {before} -> {after}");
		}
	}

	/// Overlapped rounds train from a state one aggregate behind. With a single participant
	/// the eager mixture is exactly the aggregate it stands in for, so the eager start is the
	/// state its update is applied to, where the delayed one is a round behind; with several
	/// it learns, as reproducibly as blocking rounds.
	#[test]
	fn eager_overlap_starts_where_the_state_will_be_and_learns() {
		let alone = |mode| simulate(Compression::None, mode, 4, 1);
		let (delayed, eager) = (alone(Overlap::Delayed), alone(Overlap::Eager));
		assert!(delayed.drift > 0.1, "{}", delayed.drift);
		assert!(
			eager.drift < 1e-4 * delayed.drift,
			"eager {} delayed {}",
			eager.drift,
			delayed.drift
		);
		assert_eq!(alone(Overlap::Blocking).drift, 0.0);
		for compression in [Compression::None, Compression::Tiles { k: 256 }] {
			let eager = simulate(compression, Overlap::Eager, 4, 3);
			assert!(eager.drift > 0.0, "{compression:?}: several participants differ");
			assert_eq!(eager.hash, simulate(compression, Overlap::Eager, 4, 3).hash);
			let factor = 0.6;
			assert!(eager.after < factor * eager.before, "{compression:?}: {}", eager.after);
		}
	}
}
