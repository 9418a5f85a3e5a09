//! Checks (replays, segment and trajectory checks, loss screens) on their own thread.

use std::{
	sync::{
		atomic::{AtomicBool, Ordering},
		mpsc, Arc,
	},
	thread::JoinHandle,
};

use grid_primitives::Hash;

use super::{Claim, Judgement, LossScreen, Replayer, SegmentJudgement, TraceFinding, TraceRequest};
use crate::{
	compress::CompressedUpdate,
	compute_gate::ComputeGate,
	error::Result,
	trajectory::{StepState, StepView},
	work_state::Moments,
};

/// A segment check to run: the steps `first..first + steps` of a sender's round redone from
/// its recorded `start` and judged against its recorded `end` ([`judge_segment`]).
pub struct SegmentRequest {
	/// The state the sender recorded before the segment.
	pub start: SegmentStart,
	/// The state it recorded after it.
	pub end: StepState,
	/// The sender's data seed for the round.
	pub seed: Hash,
	/// Steps into the round the segment starts at.
	pub first: u32,
	/// Steps it covers.
	pub steps: u32,
	/// In a job whose rounds overlap (after its first round): the bases an overlapped
	/// round caught up between.
	pub bases: Option<CatchUpBases>,
}

/// The state a segment starts from, whose parameters may be the round's base that the
/// verifier holds anyway: a blocking round's first recorded state is its base, so a check of
/// its first gap need not hold a second copy of the model beside it while it runs.
pub struct SegmentStart {
	pub params: StartParams,
	/// Inner steps taken so far.
	pub step: u64,
	/// AdamW's moments (`None` for SGD).
	pub moments: Option<Moments>,
}

/// Where a segment start's parameters are.
pub enum StartParams {
	/// As the sender recorded and served them.
	Fetched(Vec<f32>),
	/// The round's base, which the fetched parameters equalled bit for bit.
	Base(Arc<Vec<f32>>),
}

impl SegmentStart {
	/// `state`, its parameters shared with `base` where they are the same to the bit (the
	/// fetched copy freed).
	pub fn sharing(state: StepState, base: &Arc<Vec<f32>>) -> Self {
		let StepState { params, step, moments } = state;
		let same = params.len() == base.len()
			&& params.iter().zip(base.iter()).all(|(a, b)| a.to_bits() == b.to_bits());
		let params =
			if same { StartParams::Base(base.clone()) } else { StartParams::Fetched(params) };
		SegmentStart { params, step, moments }
	}

	/// This state, borrowed.
	pub fn view(&self) -> StepView<'_> {
		StepView { params: &self.params, step: self.step, moments: self.moments.as_ref() }
	}
}

impl From<StepState> for SegmentStart {
	fn from(state: StepState) -> Self {
		let StepState { params, step, moments } = state;
		SegmentStart { params: StartParams::Fetched(params), step, moments }
	}
}

impl std::ops::Deref for StartParams {
	type Target = [f32];

	fn deref(&self) -> &[f32] {
		match self {
			StartParams::Fetched(params) => params,
			StartParams::Base(base) => base,
		}
	}
}

/// An overlapped round's catch-up: its first steps trained from `from` (the round before's
/// base, which every verifier holds) and moved onto `to` (its own base).
#[derive(Clone)]
pub struct CatchUpBases {
	pub from: Arc<Vec<f32>>,
	pub to: Arc<Vec<f32>>,
}

/// A loss screen to run ([`Replayer::loss_screen`]).
pub struct ScreenRequest {
	/// The round's base model (flat parameters).
	pub base: Arc<Vec<f32>>,
	/// The screened update, as sent (decoded on the worker thread, one screen at a time:
	/// queued screens hold no dense copies).
	pub update: Arc<CompressedUpdate>,
	/// The update it is compared with, as sent.
	pub other: Arc<CompressedUpdate>,
	/// The screened sender's data seed for the round.
	pub seed: Hash,
	/// Inner steps it claimed.
	pub steps: u32,
}

/// A check the worker runs.
pub enum Check {
	/// The exact replay of a claim.
	Replay(Claim),
	/// A loss screen of an update.
	Screen(ScreenRequest),
	/// A segment check of a sender's recorded states.
	Segment(SegmentRequest),
	/// A committee member's check of a claim by its trajectory.
	Trace(Box<TraceRequest>),
}

/// What a check found.
pub enum Finding {
	/// A replay's judgement.
	Replay(Result<Judgement>),
	/// A loss screen's finding.
	Screen(Result<LossScreen>),
	/// A segment check's finding.
	Segment(Result<SegmentJudgement>),
	/// A trajectory check's finding.
	Trace(Result<TraceFinding>),
}

impl Check {
	/// Whether it redoes training steps (holding a trainer, its moments, gradients and
	/// activations beside the states it starts and ends at): the checks that take turns
	/// with the round's training behind a closed [`ComputeGate`]. A loss screen only runs
	/// forward passes.
	fn trains(&self) -> bool {
		!matches!(self, Check::Screen(_))
	}
}

impl Replayer {
	/// Runs `check` (consumed: a segment check's states move into its replay).
	fn run(&self, check: Check) -> Finding {
		match check {
			Check::Replay(claim) => Finding::Replay(self.judge_overlapping(&claim)),
			Check::Screen(s) => {
				let (update, other) = (s.update.decompress(), s.other.decompress());
				Finding::Screen(self.loss_screen(&s.base, &update, &other, &s.seed, s.steps))
			}
			Check::Segment(s) => Finding::Segment(self.check_segment(s)),
			Check::Trace(t) => Finding::Trace(self.judge_trace(*t)),
		}
	}
}

/// Checks run on their own thread, one at a time, so the trainer's round loop (its own
/// training, and the proof of its round) goes on while a check runs: a loss screen of a
/// large model takes seconds on a CPU, and run in the loop it made a screening trainer's
/// proof miss its round (`tests/tests/own_images.rs`). Each check carries a tag `T` that
/// comes back with its finding.
pub struct VerifyWorker<T> {
	jobs: Option<mpsc::Sender<(T, Check)>>,
	findings: mpsc::Receiver<(T, Finding)>,
	/// Set when the worker is dropped: a check waiting for its turn at the gate stops
	/// waiting (the turn may be held by a round whose base the dropping loop would give).
	closing: Arc<AtomicBool>,
	thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> VerifyWorker<T> {
	/// Starts the worker thread, its checks never waiting for training.
	pub fn start(replayer: Replayer) -> Self {
		Self::gated(replayer, ComputeGate::open())
	}

	/// Starts the worker thread; a check that trains takes its turn at `gate`.
	pub fn gated(replayer: Replayer, gate: ComputeGate) -> Self {
		let (jobs, inbox) = mpsc::channel::<(T, Check)>();
		let (report, findings) = mpsc::channel();
		let closing = Arc::new(AtomicBool::new(false));
		let stop = closing.clone();
		let thread = std::thread::Builder::new()
			.name("grid-verify".into())
			.spawn(move || {
				// Replays are background work: the round's exchange comes first.
				crate::priority::lower_this_thread();
				crate::alloc_ledger::tag_thread("verification");
				for (tag, check) in inbox {
					// A check that trains waits for its turn; dropped while it waits, the
					// worker ends.
					let turn =
						check.trains().then(|| gate.enter_unless(|| stop.load(Ordering::Relaxed)));
					if let Some(None) = turn {
						return;
					}
					let finding = replayer.run(check);
					drop(turn);
					if report.send((tag, finding)).is_err() {
						return;
					}
				}
			})
			.expect("spawning the verification thread");
		VerifyWorker { jobs: Some(jobs), findings, closing, thread: Some(thread) }
	}

	/// Queues a check.
	pub fn submit(&self, tag: T, check: Check) {
		if let Some(jobs) = &self.jobs {
			let _ = jobs.send((tag, check));
		}
	}

	/// Checks finished since the last call.
	pub fn finished(&self) -> Vec<(T, Finding)> {
		self.findings.try_iter().collect()
	}
}

impl<T> Drop for VerifyWorker<T> {
	fn drop(&mut self) {
		// Closing the queue ends the thread after the check it is running.
		self.jobs.take();
		self.closing.store(true, Ordering::Relaxed);
		if let Some(thread) = self.thread.take() {
			let _ = thread.join();
		}
	}
}
