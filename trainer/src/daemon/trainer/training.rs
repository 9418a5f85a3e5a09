//! Training on its own thread: a round's inner steps run beside the round loop, which goes
//! on serving peers, and — in an overlapped job — exchanging and deciding the previous
//! round while the next one trains ([`crate::diloco::CatchUp`]).
//!
//! The inner trainer moves onto the round's thread and comes back with its result, so it
//! is owned by exactly one of them at a time ([`Inner`]).

use std::{
	sync::{
		atomic::{AtomicU64, Ordering},
		mpsc::{self, Sender},
		Arc, Mutex,
	},
	thread::JoinHandle,
	time::{Duration, Instant},
};

use candle_core::Device;
use grid_primitives::{job::RoundIndex, Hash};

use crate::{
	compute_gate::ComputeGate,
	data::{batch_indices, Dataset},
	diloco::{train_from, CatchUp, LocalRound, RoundStart},
	error::{Error, Result},
	model::Batch,
	train::InnerTrainer,
	trajectory::{Recorded, Recorder},
	work_state::WorkState,
};

use super::step_time::StepTime;

/// How a round's inner steps are paced and fed.
pub(super) struct Pace {
	pub dataset: Arc<Dataset>,
	pub device: Device,
	/// The round's data seed.
	pub seed: Hash,
	pub batch: u64,
	/// A fixed step count (naive rounds), else as many as fit before `stop_at`.
	pub fixed: Option<u32>,
	pub stop_at: StopAt,
	/// At most this many steps.
	pub cap: Option<u32>,
	/// Each step takes this many times as long (a slow machine, for tests).
	pub slowdown: f64,
	/// The running estimate of a step's duration.
	pub step_time: Option<StepTime>,
}

/// When a deadline round's steps stop, shared with the round loop: a chain job's
/// overlapped round starts before the chain opens it, and learns its deadline only then
/// (until then it trains on, within its step cap). Abandoning a round stops it now.
#[derive(Clone, Default)]
pub(super) struct StopAt(Arc<Mutex<Option<Instant>>>);

impl StopAt {
	pub fn new(stop: Option<Instant>) -> Self {
		StopAt(Arc::new(Mutex::new(stop)))
	}

	pub fn set(&self, stop: Instant) {
		*self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(stop);
	}

	fn get(&self) -> Option<Instant> {
		*self.0.lock().unwrap_or_else(|e| e.into_inner())
	}

	/// Whether the stop has come.
	fn passed(&self) -> bool {
		self.get().is_some_and(|stop| Instant::now() >= stop)
	}
}

/// Where a round's training starts.
pub(super) enum Start {
	/// From the round's base, S_r (a blocking round).
	Base(Arc<Vec<f32>>),
	/// Overlapped: caught up with S_r once the round loop has decided it
	/// ([`Inner::send_current`]), from `from` (S_(r−1), which verifiers hold, in a job
	/// whose contributions are checked) or, without, from the weights the trainer holds
	/// (where its last round ended: less loss, `bench/README.md`, but no verifier could
	/// tell those weights).
	Overlapped { catch_up: CatchUp, from: Option<Arc<Vec<f32>>> },
}

/// What a round's training produced.
pub(super) struct Trained {
	pub local: LocalRound,
	/// The inner trainer's position and moments before the first step (its residual is the
	/// compressor's, added when the update is sealed).
	pub start: WorkState,
	/// The weights the first steps trained from (the trajectory's start: [`Recorded::Start`]).
	pub base: Arc<Vec<f32>>,
	/// Whether it trained overlapped (from `base` until its catch-up step).
	pub overlapped: bool,
	/// The trajectory's kept states, the start first, the end's last.
	pub kept: Vec<(u32, Recorded)>,
	/// The step-duration estimate after the round.
	pub step_time: Option<StepTime>,
	/// Time spent training (waiting for S_r not counted).
	pub compute: Duration,
	/// Time an overlapped round waited at its catch-up step for S_r.
	pub waited: Duration,
	/// When its last step ended.
	pub ended: Instant,
}

/// A round training on its thread.
struct Running {
	round: RoundIndex,
	stop: StopAt,
	/// Gives an overlapped round S_r; dropped unsent, it ends the round in error.
	current: Option<Sender<Vec<f32>>>,
	thread: JoinHandle<(InnerTrainer, Result<Trained>)>,
}

/// The inner trainer, idle here or training a round on its thread (exactly one of the two).
pub(super) struct Inner {
	idle: Option<InnerTrainer>,
	running: Option<Running>,
	/// A round's training takes its turn here with the checks that redo training steps.
	gate: ComputeGate,
}

impl Inner {
	/// The inner trainer, its rounds taking their turns at `gate`.
	pub fn new(trainer: InnerTrainer, gate: ComputeGate) -> Self {
		Inner { idle: Some(trainer), running: None, gate }
	}

	/// The round training now.
	pub fn running(&self) -> Option<RoundIndex> {
		self.running.as_ref().map(|r| r.round)
	}

	/// Whether the running round's thread has ended (or nothing runs).
	pub fn is_done(&self) -> bool {
		self.running.as_ref().is_none_or(|r| r.thread.is_finished())
	}

	/// Starts training `round` from `start`, paced by `pace`, on its own thread (after
	/// abandoning any other round still running).
	pub fn start(&mut self, round: RoundIndex, start: Start, pace: Pace) -> Result<()> {
		self.abandon();
		let mut trainer = self.idle()?;
		let overlapped = matches!(start, Start::Overlapped { .. });
		let stop = pace.stop_at.clone();
		let (current, inbox) = mpsc::channel();
		let (gate, stopped) = (self.gate.clone(), stop.clone());
		let run = move || {
			crate::priority::lower_this_thread();
			crate::alloc_ledger::tag_thread("training");
			let asked = Instant::now();
			let Some(_turn) = gate.enter_unless(|| stopped.passed()) else {
				let e = format!("round {round} stopped while a check held the compute gate");
				return (trainer, Err(Error::Training(e)));
			};
			if gate.is_exclusive() {
				tracing::info!(
					"round {round}: training began after {} ms waiting for a check",
					asked.elapsed().as_millis()
				);
			}
			let result = train(&mut trainer, start, pace, move || {
				inbox.recv().map_err(|_| {
					Error::Training("the exchange it overlapped did not decide a state".into())
				})
			});
			(trainer, result)
		};
		let thread = std::thread::Builder::new()
			.name(format!("train-{round}"))
			.spawn(run)
			.map_err(|e| Error::Training(format!("starting round {round}'s thread: {e}")))?;
		let current = overlapped.then_some(current);
		self.running = Some(Running { round, stop, current, thread });
		Ok(())
	}

	/// Gives the overlapped `round` its base S_r (nothing if it is not the round training).
	pub fn send_current(&mut self, round: RoundIndex, weights: &[f32]) {
		let Some(running) = self.running.as_mut().filter(|r| r.round == round) else { return };
		if let Some(current) = running.current.take() {
			let _ = current.send(weights.to_vec());
		}
	}

	/// Sets when the running `round`'s steps stop (nothing if it is not the round training).
	pub fn stop_at(&self, round: RoundIndex, stop: Instant) {
		if let Some(running) = self.running.as_ref().filter(|r| r.round == round) {
			running.stop.set(stop);
		}
	}

	/// Tells an overlapped round waiting for its base that none will come: it ends in error.
	pub fn no_current(&mut self) {
		if let Some(running) = &mut self.running {
			running.current = None;
		}
	}

	/// Waits for the running round to end and returns it with its result.
	pub fn finish(&mut self) -> Option<(RoundIndex, Result<Trained>)> {
		let running = self.running.take()?;
		let round = running.round;
		drop(running.current);
		match running.thread.join() {
			Ok((trainer, result)) => {
				self.idle = Some(trainer);
				Some((round, result))
			}
			Err(_) => {
				Some((round, Err(Error::Training(format!("round {round}'s thread panicked")))))
			}
		}
	}

	/// Ends any running round at its next step, dropping its work: the optimizer goes back
	/// to where the round started (a failed round's does in [`train`]), so the next round
	/// starts from the state the last committed round ended in.
	pub fn abandon(&mut self) {
		if let Some(running) = &self.running {
			running.stop.set(Instant::now());
		}
		let Some((round, result)) = self.finish() else { return };
		match result {
			Ok(trained) => {
				tracing::info!("round {round}: training abandoned");
				let start = trained.start;
				if let Some(trainer) = self.idle.as_mut() {
					if let Err(e) = trainer.restore_owned_at(start.step, start.moments) {
						tracing::warn!("round {round}: the optimizer was not put back: {e}");
					}
				}
			}
			Err(e) => tracing::info!("round {round}: training abandoned: {e}"),
		}
	}

	/// The idle trainer, after abandoning any running round; an error if a round's thread
	/// panicked and took it.
	pub fn get(&mut self) -> Result<&mut InnerTrainer> {
		self.abandon();
		self.idle.as_mut().ok_or_else(lost)
	}

	/// Takes the idle trainer onto a round's thread.
	fn idle(&mut self) -> Result<InnerTrainer> {
		self.idle.take().ok_or_else(lost)
	}
}

/// The error of a trainer whose inner trainer went down with a panicked round's thread.
fn lost() -> Error {
	Error::Training("the inner trainer was lost".into())
}

impl Drop for Inner {
	fn drop(&mut self) {
		// A round waiting for its base ends; its thread is not left behind.
		self.abandon();
	}
}

/// Trains one round: as many steps as `pace` allows, recording the trajectory. `current`
/// gives an overlapped round its base at the catch-up step. A round that fails part-way
/// leaves the optimizer where it started: its steps went into no commitment, and the next
/// round's start state must go on from the last one that did (`verify::Carry`).
fn train(
	trainer: &mut InnerTrainer,
	start: Start,
	pace: Pace,
	current: impl FnOnce() -> Result<Vec<f32>> + Send + 'static,
) -> Result<Trained> {
	let first = trainer.snapshot(Vec::new())?;
	match train_steps(trainer, start, pace, current) {
		Ok(steps) => Ok(Trained { start: first, ..steps }),
		Err(e) => {
			trainer.restore_owned_at(first.step, first.moments)?;
			Err(e)
		}
	}
}

/// [`train`]'s steps; the result's `start` is left empty for [`train`] to fill.
fn train_steps(
	trainer: &mut InnerTrainer,
	start: Start,
	pace: Pace,
	current: impl FnOnce() -> Result<Vec<f32>> + Send + 'static,
) -> Result<Trained> {
	let began = Instant::now();
	let numel = trainer.model().params().manifest().numel();
	// Nanoseconds spent waiting for S_r: not training, so neither compute time nor a step.
	let waited = Arc::new(AtomicU64::new(0));
	let (from, catch_up) = match start {
		Start::Base(base) => (base, None),
		Start::Overlapped { catch_up, from: Some(from) } => (from, Some(catch_up)),
		Start::Overlapped { catch_up, from: None } => {
			(Arc::new(trainer.model().params().flatten()?), Some(catch_up))
		}
	};
	let round_start = match catch_up {
		None => RoundStart::Base(&from),
		Some(catch_up) => {
			let waited = waited.clone();
			let current = move || {
				let at = Instant::now();
				let weights = current();
				waited.fetch_add(at.elapsed().as_nanos() as u64, Ordering::Relaxed);
				weights
			};
			RoundStart::CatchingUp { from: &from, catch_up, current: Box::new(current) }
		}
	};
	let mut step_time = pace.step_time;
	let mut recorder = Recorder::new(numel);
	let local = {
		let batches = paced_batches(&pace, &mut step_time, &waited);
		train_from(trainer, round_start, batches, |at, t| recorder.observe(at, t))?
	};
	let ended = Instant::now();
	let kept = recorder.finish(local.steps, trainer)?;
	let waited = Duration::from_nanos(waited.load(Ordering::Relaxed));
	Ok(Trained {
		local,
		start: WorkState { step: 0, moments: None, residual: Vec::new() },
		base: from,
		overlapped: catch_up.is_some(),
		kept,
		step_time,
		compute: began.elapsed().saturating_sub(waited),
		waited,
		ended,
	})
}

/// The round's batches, one per step while the pace allows another, updating the
/// step-duration estimate as they are taken (less what was spent `waited` for S_r).
fn paced_batches<'a>(
	pace: &'a Pace,
	step_time: &'a mut Option<StepTime>,
	waited: &'a AtomicU64,
) -> impl Iterator<Item = Result<Batch>> + 'a {
	let population = pace.dataset.train_len();
	let mut last: Option<(Instant, u64)> = None;
	let mut i = 0u64;
	std::iter::from_fn(move || {
		let now = Instant::now();
		let waited_now = waited.load(Ordering::Relaxed);
		if let Some((prev, waited_then)) = last {
			let wait = Duration::from_nanos(waited_now - waited_then);
			let took = (now - prev).saturating_sub(wait);
			if pace.slowdown > 1.0 {
				std::thread::sleep(took.mul_f64(pace.slowdown - 1.0));
			}
			let secs = took.as_secs_f64() * pace.slowdown;
			*step_time = Some(StepTime::observe(*step_time, secs));
		}
		let capped = pace.cap.is_some_and(|m| i >= u64::from(m));
		let go = !capped
			&& match (pace.fixed, pace.stop_at.get()) {
				// A fixed round has no stop unless it is abandoned.
				(Some(steps), stop) => i < u64::from(steps) && stop.is_none_or(|s| now < s),
				(None, Some(stop)) => Instant::now() + allowed(*step_time, i) < stop,
				// Not known yet: the round's deadline comes when the chain opens it.
				(None, None) => true,
			};
		if !go {
			return None;
		}
		last = Some((Instant::now(), waited_now));
		let indices = batch_indices(&pace.seed, i, pace.batch, population);
		i += 1;
		Some(pace.dataset.train_batch(&indices, &pace.device))
	})
}

/// How long step `i` of a deadline round must have before the stop: a later step its
/// estimate's bound (the mean and four deviations), the round's first only the mean. The
/// estimate learns only from steps taken, and after one step its bound is three times that
/// step: a provider whose step takes over a third of what a round leaves for training (a
/// 99.7M GPT's 48 s in 97 s on a shared 2-core machine) would take no step in any later
/// round. A first step that overruns is left out of its round, as a round without a step
/// is anyway; one that fits is paid and teaches the estimate.
fn allowed(step_time: Option<StepTime>, i: u64) -> Duration {
	match step_time {
		None => Duration::ZERO,
		Some(t) if i == 0 => Duration::from_secs_f64(t.mean().max(0.0)),
		Some(t) => t.bound(),
	}
}

#[cfg(test)]
mod tests {
	use grid_primitives::job::{InnerOptimizer, MlpConfig, ModelSpec, Nanos};

	use super::*;
	use crate::{data::MnistDataset, train::InnerConfig};

	const SPEC: ModelSpec = ModelSpec::MnistMlp(MlpConfig { hidden: 16, layers: 1 });
	const ADAMW: InnerOptimizer =
		InnerOptimizer::AdamW { lr: Nanos(3_000_000), weight_decay: Nanos(0), warmup_steps: 2 };

	fn trainer() -> InnerTrainer {
		InnerTrainer::new(SPEC, b"job", &Device::Cpu, &ADAMW, InnerConfig::default()).unwrap()
	}

	fn pace(dataset: &Arc<Dataset>, round: u8, steps: u32) -> Pace {
		Pace {
			dataset: dataset.clone(),
			device: Device::Cpu,
			seed: Hash::repeat_byte(round + 1),
			batch: 16,
			fixed: Some(steps),
			stop_at: StopAt::default(),
			cap: None,
			slowdown: 1.0,
			step_time: None,
		}
	}

	/// A deadline round's pace: `left` until its stop, steps estimated by `step_time`.
	fn deadline_pace(dataset: &Arc<Dataset>, left: Duration, step_time: Option<StepTime>) -> Pace {
		let mut p = pace(dataset, 0, 0);
		p.fixed = None;
		p.stop_at = StopAt::new(Some(Instant::now() + left));
		p.step_time = step_time;
		p
	}

	/// A deadline round starts a later step only while the step's bound fits before the
	/// stop, not merely its mean: after steps of 0.2 and 1.8 s in turn (a mean near 1 s) the
	/// round's first step starts 1.5 s before the stop (its mean fits) and no second one;
	/// after steady 0.5 s steps two start 1.5 s before it.
	#[test]
	fn a_deadline_round_starts_no_later_step_its_spread_says_may_overrun() {
		let dataset = Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()));
		let estimate =
			|steps: Vec<f64>| steps.into_iter().fold(None, |e, s| Some(StepTime::observe(e, s)));
		let deadline = |step_time| deadline_pace(&dataset, Duration::from_millis(1_500), step_time);
		let waited = AtomicU64::new(0);
		let varied = estimate([0.2, 1.8].repeat(10));
		assert!(varied.unwrap().mean() < 1.2, "{varied:?}");
		assert!(varied.unwrap().bound() > Duration::from_secs(3), "{varied:?}");
		let mut step_time = varied;
		assert_eq!(paced_batches(&deadline(varied), &mut step_time, &waited).count(), 1);
		let steady = estimate(vec![0.5; 30]);
		let mut step_time = steady;
		assert_eq!(paced_batches(&deadline(steady), &mut step_time, &waited).take(2).count(), 2);
	}

	/// A step that takes over a third of the time a round leaves for training still trains
	/// every round: after one 48 s step (bound 144 s) a round with 97 s left starts its
	/// first step on the mean, and a round with 40 s left (under the mean) starts none.
	#[test]
	fn a_slow_first_step_does_not_stop_later_rounds_from_training() {
		let dataset = Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()));
		let first = StepTime::first(48.0);
		assert_eq!(first.bound(), Duration::from_secs(144));
		let one = Some(first);
		let round = |left: u64| {
			let p = deadline_pace(&dataset, Duration::from_secs(left), one);
			let (mut step_time, waited) = (one, AtomicU64::new(0));
			paced_batches(&p, &mut step_time, &waited).take(2).count()
		};
		assert_eq!(round(97), 1);
		assert_eq!(round(40), 0);
	}

	fn trained(inner: &mut Inner, round: RoundIndex) -> Trained {
		let (at, result) = inner.finish().expect("a round was training");
		assert_eq!(at, round);
		result.unwrap()
	}

	/// The round a trainer trains ahead on its thread waits at its catch-up step for the
	/// state the round before decides, and is then exactly the round `diloco::train_from`
	/// computes (what the benchmarks measure and verifiers replay) from its committed
	/// start. Told that no state will come, it ends in error; abandoned while it waits, it
	/// gives the trainer back.
	#[test]
	fn a_round_trained_ahead_waits_for_its_base_and_is_the_round_verifiers_replay() {
		let dataset = Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()));
		let mut inner = Inner::new(trainer(), ComputeGate::open());
		let base = inner.get().unwrap().model().params().flatten().unwrap();
		inner.start(0, Start::Base(Arc::new(base.clone())), pace(&dataset, 0, 4)).unwrap();
		let blocking = trained(&mut inner, 0);
		assert_eq!((blocking.local.steps, blocking.overlapped), (4, false));
		assert_eq!(blocking.kept.last().unwrap().0, 4);

		// Round 1 trains ahead from where round 0 ended; S_1 is some other state.
		let s1: Vec<f32> = base.iter().map(|w| w * 0.5).collect();
		let catch_up = CatchUp::new(2).unwrap();
		let started = std::time::Instant::now();
		inner.start(1, Start::Overlapped { catch_up, from: None }, pace(&dataset, 1, 5)).unwrap();
		assert_eq!(inner.running(), Some(1));
		std::thread::sleep(Duration::from_millis(300));
		assert!(!inner.is_done(), "the round went on past its catch-up step without S_1");
		inner.send_current(0, &base);
		inner.send_current(1, &s1);
		let ahead = trained(&mut inner, 1);
		let round = started.elapsed();
		assert_eq!(ahead.local.steps, 5);
		// The wait is measured (how long depends on how soon the thread reached its
		// catch-up step on a loaded machine: no lower bound in time) and is not compute.
		assert!(ahead.waited > Duration::ZERO && ahead.waited < round, "waited {:?}", ahead.waited);
		assert!(ahead.compute + ahead.waited <= round, "{:?} + {:?}", ahead.compute, ahead.waited);
		assert!(ahead.overlapped, "an overlapped round records its start");
		let from = ahead.base.clone();
		let ended = blocking.kept.last().unwrap().1.step().unwrap();
		assert_eq!(*from, ended.params, "it starts where 0 ended");
		assert_eq!(&blocking.base[..], &base[..]);
		assert_eq!(blocking.kept[0], (0, Recorded::Start));

		let mut replay = trainer();
		replay.restore(&ahead.start).unwrap();
		let again = pace(&dataset, 1, 5);
		let population = dataset.train_len();
		let batches = (0..5).map(|i| {
			dataset
				.train_batch(&batch_indices(&again.seed, i, again.batch, population), &again.device)
		});
		let current = Box::new(move || Ok(s1));
		let start = RoundStart::CatchingUp { from: &from, catch_up, current };
		let replayed = train_from(&mut replay, start, batches, |_, _| Ok(())).unwrap();
		assert_eq!(replayed.delta, ahead.local.delta, "the thread's round is not the replay's");
		assert_eq!(&replay.state().unwrap(), ahead.kept.last().unwrap().1.step().unwrap());

		// No state comes: the round ends in error and the trainer is idle again, its
		// optimizer where round 1 left it (the two steps before the catch-up undone).
		let end_1 = ahead.kept.last().unwrap().1.step().unwrap().clone();
		let at_end_1 = |inner: &mut Inner| {
			let now = inner.get().unwrap().snapshot(Vec::new()).unwrap();
			assert_eq!((now.step, now.moments), (end_1.step, end_1.moments.clone()));
		};
		inner.start(2, Start::Overlapped { catch_up, from: None }, pace(&dataset, 2, 5)).unwrap();
		inner.no_current();
		let (_, result) = inner.finish().unwrap();
		assert!(matches!(result, Err(Error::Training(_))), "{:?}", result.err());
		at_end_1(&mut inner);
		// Abandoned while it waits: the trainer comes back, and so does its optimizer.
		inner.start(3, Start::Overlapped { catch_up, from: None }, pace(&dataset, 3, 5)).unwrap();
		assert!(inner.running().is_some());
		assert!(inner.get().is_ok() && inner.running().is_none());
		at_end_1(&mut inner);
		// Abandoned part-way through its steps (it ends without error): the same.
		let long = pace(&dataset, 4, 1_000_000);
		inner.start(4, Start::Base(Arc::new(base.clone())), long).unwrap();
		std::thread::sleep(Duration::from_millis(300));
		inner.abandon();
		at_end_1(&mut inner);
	}

	/// Behind a closed gate a round trains only once the check holding the turn lets it
	/// go, and that wait is not compute; a deadline round whose stop comes while it waits
	/// ends in error without a step; abandoned while it waits, it gives the trainer back.
	#[test]
	fn a_round_behind_a_check_waits_for_its_turn_and_gives_up_at_its_stop() {
		let dataset = Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()));
		let gate = ComputeGate::one_at_a_time();
		let mut inner = Inner::new(trainer(), gate.clone());
		let base = Arc::new(inner.get().unwrap().model().params().flatten().unwrap());
		let check = gate.enter();
		inner.start(0, Start::Base(base.clone()), pace(&dataset, 0, 3)).unwrap();
		std::thread::sleep(Duration::from_millis(300));
		assert!(!inner.is_done(), "the round trained while a check held the turn");
		let released = Instant::now();
		drop(check);
		let (at, result) = inner.finish().expect("a round was training");
		let round = result.unwrap();
		assert_eq!((at, round.local.steps), (0, 3));
		assert!(round.compute <= released.elapsed(), "the wait counted as compute");

		// A deadline round whose stop passes while a check holds the turn.
		let check = gate.enter();
		let mut late = pace(&dataset, 1, 3);
		late.fixed = None;
		late.stop_at = StopAt::new(Some(Instant::now() + Duration::from_millis(200)));
		inner.start(1, Start::Base(base.clone()), late).unwrap();
		let (_, result) = inner.finish().unwrap();
		let err = result.err().expect("a round past its stop trained").to_string();
		assert!(err.contains("while a check held the compute gate"), "{err}");
		// Abandoned while it waits: the trainer comes back, and the check still holds it.
		inner.start(2, Start::Base(base), pace(&dataset, 2, 3)).unwrap();
		assert!(inner.get().is_ok() && inner.running().is_none());
		drop(check);
		drop(gate.enter());
	}
}
