//! The exact replay of a claim (from the sender's own start state, on its data seed, for
//! its steps) and the judgement of the update it sent against that replay.

use std::sync::Arc;

use candle_core::Device;
use grid_primitives::{
	job::{InnerOptimizer, ModelSpec},
	work::Verdict,
	Hash,
};

use super::cosine;
use crate::{
	compress::{
		adaptive::{compress_once, corrected},
		CompressedUpdate, Layout,
	},
	data::{batch_indices, Dataset},
	diloco::{catch_up, train_from, CatchUp, RoundStart},
	error::{Error, Result},
	train::{InnerConfig, InnerTrainer},
	work_state::WorkState,
};

/// An update whose cosine with its exact replay reaches this (and whose norm is within
/// [`NORM_TOLERANCE`] of the replay's) is valid.
pub const VALID_COSINE: f64 = 0.95;
/// Largest relative difference between the norms of a valid update and its replay. The
/// direction alone does not always catch a claim of more steps than were run; the norm adds
/// to it. Measured in this module's test (MNIST MLP, 40 claimed steps, third round): under
/// int8, three quarters of the steps give cosine 0.959 and norm 0.83 of the replay's, nine
/// tenths 0.991 and 0.937 (both refused); under top-k (1/8 of the values, 2 bits) three
/// quarters give 0.905 (refused) but nine tenths 0.959 and 0.985, which passes. So a claim
/// can overstate the steps it ran by about a tenth; the claim caps bound what that buys.
pub const NORM_TOLERANCE: f64 = 0.05;

/// A contribution to check: what it started from, what it sent, what it was given to train.
#[derive(Clone)]
pub struct Claim {
	/// The round's base model (flat parameters).
	pub base: Arc<Vec<f32>>,
	/// The sender's committed private state at the round's start.
	pub start: Arc<WorkState>,
	/// The update it sent.
	pub sent: Arc<CompressedUpdate>,
	/// Its data seed for the round.
	pub seed: Hash,
	/// Inner steps it claimed.
	pub steps: u32,
	/// An overlapped round's start: the weights its first steps trained from until it
	/// caught up to `base` ([`CatchUp`]); `None` for a blocking round. Whoever builds the
	/// claim must pin it to public or committed weights (the previous round's base, or the
	/// last state of the sender's own previous trajectory): the replay redoes the steps from
	/// any start, and from an arbitrary one AdamW's weight decay alone would carry any
	/// vector into the update.
	pub from: Option<Arc<Vec<f32>>>,
}

impl Claim {
	/// The weights the round's first step trained from.
	pub fn start_weights(&self) -> &[f32] {
		self.from.as_deref().unwrap_or(&self.base)
	}
}

/// Where an overlapped claim's steps moved onto its base: before step `at` of the round
/// (or at its end, for a round no longer than that), by `to − from` ([`catch_up`]).
#[derive(Clone, Copy)]
pub struct Shift<'a> {
	/// Steps into the round it happened after.
	pub at: u32,
	/// The overlapped start.
	pub from: &'a [f32],
	/// The round's base.
	pub to: &'a [f32],
}

impl Shift<'_> {
	/// Moves `weights` as the catch-up did.
	pub fn apply(&self, weights: &mut [f32]) -> Result<()> {
		catch_up(weights, self.from, self.to)
	}

	/// Moves `weights` back (up to rounding).
	pub fn undo(&self, weights: &mut [f32]) -> Result<()> {
		catch_up(weights, self.to, self.from)
	}
}

/// A verifier's finding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
	/// The vote it supports.
	pub verdict: Verdict,
	/// Cosine between the sent update and the replay.
	pub cosine: f64,
	/// The sent update's norm over the replay's (1 for the same computation).
	pub norm_ratio: f64,
}

impl Judgement {
	/// An update refused without a replay.
	pub(super) fn refused() -> Self {
		Judgement { verdict: Verdict::Invalid, cosine: 0.0, norm_ratio: 0.0 }
	}

	/// The finding for a sent update and its replay (both dense).
	pub fn of(sent: &[f32], replayed: &[f32]) -> Self {
		let cosine = cosine(sent, replayed);
		let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
		let norm_ratio = norm(sent) / norm(replayed).max(f64::MIN_POSITIVE);
		let same = cosine >= VALID_COSINE && (norm_ratio - 1.0).abs() <= NORM_TOLERANCE;
		let verdict = if same { Verdict::Valid } else { Verdict::Invalid };
		Judgement { verdict, cosine, norm_ratio }
	}
}

/// What a replay needs of the job: model, inner optimizer, batch size, data.
#[derive(Clone)]
pub struct Replayer {
	/// The job's model.
	pub spec: ModelSpec,
	/// Its parameters' layout (what the tiled codec cuts along).
	pub layout: Layout,
	/// The job's inner optimizer.
	pub inner: InnerOptimizer,
	/// Its schedule settings.
	pub config: InnerConfig,
	/// Samples per inner step.
	pub batch_size: u64,
	/// The job's error-feedback decay (what share of the residual a round adds).
	pub error_decay: f32,
	/// Most inner steps the job lets a round claim (`None`: no cap). A claim of more is
	/// invalid without a replay, so a liar cannot buy an unbounded amount of verifiers' time.
	pub max_steps: Option<u32>,
	/// When the job's overlapped rounds catch up (`None`: its rounds do not overlap, and an
	/// overlapped claim is invalid).
	pub catch_up: Option<CatchUp>,
	/// The job's training data.
	pub dataset: Arc<Dataset>,
	/// Where to compute.
	pub device: Device,
}

impl Replayer {
	/// The update `claim.steps` inner steps from `claim.base` and `claim.start` on the
	/// claim's data give, compressed with the scheme of the update it sent.
	pub fn replay(&self, claim: &Claim) -> Result<CompressedUpdate> {
		let mut trainer =
			InnerTrainer::new(self.spec, b"grid/replay", &self.device, &self.inner, self.config)?;
		trainer.restore(&claim.start)?;
		let population = self.dataset.train_len();
		let batches = (0..u64::from(claim.steps)).map(|i| {
			let indices = batch_indices(&claim.seed, i, self.batch_size, population);
			self.dataset.train_batch(&indices, &self.device)
		});
		let start = match (&claim.from, self.catch_up) {
			(None, _) => RoundStart::Base(&claim.base),
			(Some(from), Some(catch_up)) => RoundStart::CatchingUp {
				from,
				catch_up,
				current: Box::new(|| Ok(claim.base.to_vec())),
			},
			(Some(_), None) => {
				return Err(Error::Config("an overlapped claim in a job without overlap".into()))
			}
		};
		let local = train_from(&mut trainer, start, batches, |_, _| Ok(()))?;
		self.sent_from(claim, &local.delta)
	}

	/// Where `claim`'s round caught up, when it overlapped (in a job whose rounds do).
	pub fn shift<'a>(&self, claim: &'a Claim) -> Option<Shift<'a>> {
		let (from, catch_up) = (claim.from.as_deref()?, self.catch_up?);
		Some(Shift { at: catch_up.after(), from, to: &claim.base })
	}

	/// Whether `claim` is refused without any work redone: nothing claimed, more than the
	/// job allows, or overlapped in a job whose rounds do not overlap.
	pub fn refuses(&self, claim: &Claim) -> bool {
		let steps = claim.steps;
		steps == 0
			|| self.max_steps.is_some_and(|cap| steps > cap)
			|| (claim.from.is_some() && self.catch_up.is_none())
	}

	/// What `claim`'s sender sends for a round whose pseudo-gradient is `delta`: the delta
	/// with its start state's residual, compressed with the scheme of the update it sent.
	pub fn sent_from(&self, claim: &Claim, delta: &[f32]) -> Result<CompressedUpdate> {
		let corrected = corrected(delta, &claim.start.residual, self.error_decay);
		compress_once(&claim.sent.scheme(), &self.layout, &corrected)
	}

	/// Judges a claim as its sender may have trained it: overlapped from `claim.from` and,
	/// if that does not hold, blocking from its base (an overlapping job's round trained
	/// after a restart, a re-sync or a join does not overlap). Both are honest
	/// computations, so either holding is valid; a claim without `from` is judged once.
	pub fn judge_overlapping(&self, claim: &Claim) -> Result<Judgement> {
		let overlapped = self.judge(claim)?;
		if overlapped.verdict == Verdict::Valid || claim.from.is_none() {
			return Ok(overlapped);
		}
		let blocking = self.judge(&Claim { from: None, ..claim.clone() })?;
		Ok(if blocking.verdict == Verdict::Valid { blocking } else { overlapped })
	}

	/// Replays `claim` and judges the update it sent.
	pub fn judge(&self, claim: &Claim) -> Result<Judgement> {
		let n = claim.base.len();
		let from = claim.from.as_ref().map_or(n, |f| f.len());
		if claim.sent.len() != n || claim.start.len() != n || from != n {
			return Err(Error::Config(format!(
				"an update of {} values, a work state of {} and a start of {from} for a model \
				 of {n}",
				claim.sent.len(),
				claim.start.len(),
			)));
		}
		if self.refuses(claim) {
			// Nothing claimed, more than the job allows, or an overlap the job does not
			// have: invalid without a replay.
			return Ok(Judgement::refused());
		}
		let replayed = self.replay(claim)?;
		Ok(Judgement::of(&claim.sent.decompress(), &replayed.decompress()))
	}
}
