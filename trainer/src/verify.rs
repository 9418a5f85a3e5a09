//! Fraud checks on peers' updates: redoing a contribution exactly from what its commitment
//! fixes (the round's base model, the sender's committed [`WorkState`] — inner optimizer
//! position and moments, error-feedback residual — its data seed and its step count) and
//! comparing the result with the update it sent.
//!
//! Because the replay starts from the sender's own state, it is the same computation: on
//! the same kind of device honest work replays bit for bit, and across devices (a GPU
//! contribution replayed on a CPU) only floating-point reassociation separates them, so the
//! threshold is high ([`VALID_COSINE`]). Anything that was not that computation lands far
//! below it: noise, another participant's update (scaled or noised or not), the previous
//! aggregate's direction, training on other data, or a claim of more steps than were run.
//! `verify`'s tests measure each of these; `bench/redteam.sh` measures them at scale.
//!
//! The same check serves the challenger and the committee. A trainer screens every round's
//! updates cheaply ([`suspects`]: agreement with the others' mean) and replays only the
//! suspects before putting a deposit on a challenge; committee members replay the challenged
//! update and vote.

use std::{
	sync::{mpsc, Arc},
	thread::JoinHandle,
};

use candle_core::Device;
use grid_primitives::{
	job::{InnerOptimizer, ModelSpec},
	work::Verdict,
	Hash,
};

use crate::{
	compress::{adaptive::compress_once, CompressedUpdate},
	data::{batch_indices, Dataset},
	diloco::train_round,
	error::{Error, Result},
	model::{Batch, Model},
	train::{evaluate, InnerConfig, InnerTrainer},
	work_state::WorkState,
};

/// An update whose cosine with the mean of the round's other updates is below this is a
/// suspect worth replaying (honest updates of a round share the data's gradient direction).
pub const SUSPECT_COSINE: f64 = 0.05;
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

/// Cosine similarity (0 when either side is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
	let (mut dot, mut aa, mut bb) = (0f64, 0f64, 0f64);
	for (x, y) in a.iter().zip(b) {
		let (x, y) = (f64::from(*x), f64::from(*y));
		dot += x * y;
		aa += x * x;
		bb += y * y;
	}
	if aa == 0.0 || bb == 0.0 {
		return 0.0;
	}
	dot / (aa.sqrt() * bb.sqrt())
}

/// Positions of the updates that disagree with the rest of the round (cosine with the sum of
/// the others below [`SUSPECT_COSINE`]), with that cosine. Needs three updates: with two,
/// neither can be told from the other.
pub fn suspects(updates: &[&[f32]]) -> Vec<(usize, f64)> {
	if updates.len() < 3 {
		return Vec::new();
	}
	let len = updates[0].len();
	let mut total = vec![0f64; len];
	for update in updates {
		for (t, x) in total.iter_mut().zip(update.iter()) {
			*t += f64::from(*x);
		}
	}
	let mut out = Vec::new();
	for (i, update) in updates.iter().enumerate() {
		let others: Vec<f32> =
			total.iter().zip(update.iter()).map(|(t, x)| (t - f64::from(*x)) as f32).collect();
		let agreement = cosine(update, &others);
		if agreement < SUSPECT_COSINE {
			out.push((i, agreement));
		}
	}
	out
}

/// Two updates of a round at least this close (cosine) are likely one update copied
/// (scaled, noised or re-quantized): both are replayed, and the replay tells the original
/// from the copy. Honest updates of a round are further apart (each is trained on other data
/// from its own state), but how far depends on the round: measured in this module's test
/// (MNIST MLP, third round, warm states) the closest honest pair is at 0.546 (int8), while
/// in the first round, all from the same fresh state, honest updates can be closer (the
/// fraud desk's test). So the screen stays high: a scaled copy is at 1.000, a copy with
/// noise of 0.3 times its norm at 0.962 (int8, caught) but 0.699 (top-k, missed). A copy
/// drowned in enough noise passes this screen (and, while it agrees with the round,
/// [`suspects`] too); only a replay of it would catch it.
pub const COPY_COSINE: f64 = 0.9;

/// The copy screen's highest threshold. Where a round's honest updates are all close (the
/// first round of long rounds, all trained from one fresh state: pairs at 0.90 to 0.92 in
/// rounds of 120 steps, `bench/redteam.sh`), a pair is a copy only if it is closer than the
/// round's other pairs by half their distance, and never needs to be closer than this: a
/// copy with noise of 0.3 times its norm is at 0.96.
pub const MAX_COPY_COSINE: f64 = 0.95;

/// Positions of the updates that some other update of the round is close enough to to be a
/// copy, with the closest cosine: at least [`COPY_COSINE`], and, with other pairs to compare
/// with, at least the median of their cosines moved halfway to 1 (at most
/// [`MAX_COPY_COSINE`]). Pairwise: O(n²) dot products.
pub fn copy_suspects(updates: &[&[f32]]) -> Vec<(usize, f64)> {
	let n = updates.len();
	let mut pairs = Vec::new();
	for i in 0..n {
		for j in i + 1..n {
			pairs.push((i, j, cosine(updates[i], updates[j])));
		}
	}
	let mut closest = vec![f64::MIN; n];
	for (k, &(i, j, c)) in pairs.iter().enumerate() {
		let mut others: Vec<f64> =
			pairs.iter().enumerate().filter(|(m, _)| *m != k).map(|(_, p)| p.2).collect();
		others.sort_by(f64::total_cmp);
		let threshold = match others.get(others.len() / 2) {
			Some(median) if others.len() >= 2 => {
				(1.0 - (1.0 - median) / 2.0).clamp(COPY_COSINE, MAX_COPY_COSINE)
			}
			_ => COPY_COSINE,
		};
		if c >= threshold {
			closest[i] = closest[i].max(c);
			closest[j] = closest[j].max(c);
		}
	}
	closest.into_iter().enumerate().filter(|(_, c)| *c > f64::MIN).collect()
}

/// An update whose norm is below this share of the median norm of the round's other updates
/// is a suspect: with AdamW every inner step moves the weights by about the learning rate, so
/// an update of fewer steps than claimed is shorter than its peers' (three quarters of the
/// steps: about three quarters of the norm).
pub const SHORT_NORM: f64 = 0.85;

/// Positions of the updates shorter than [`SHORT_NORM`] of the median of the others' norms,
/// with that ratio. Needs three updates.
pub fn short_suspects(updates: &[&[f32]]) -> Vec<(usize, f64)> {
	if updates.len() < 3 {
		return Vec::new();
	}
	let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
	let norms: Vec<f64> = updates.iter().map(|u| norm(u)).collect();
	let mut out = Vec::new();
	for (i, own) in norms.iter().enumerate() {
		let mut others: Vec<f64> =
			norms.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, n)| *n).collect();
		others.sort_by(f64::total_cmp);
		let median = others[others.len() / 2];
		let ratio = own / median.max(f64::MIN_POSITIVE);
		if ratio < SHORT_NORM {
			out.push((i, ratio));
		}
	}
	out
}

/// Batches of a sender's own data the loss screen looks at first (its first step's: the
/// step whose gradient was taken at the round's base, so the update carries it most
/// plainly). Two forward passes each.
pub const GAUNTLET_BATCHES: u32 = 1;

/// Batches (its first steps') the loss screen confirms a first look's suspicion on before
/// anything is replayed: one batch flags about one honest update in seven, eight about one
/// in fifty (`bench/redteam.sh` measures both), and a replay costs a whole contribution.
pub const GAUNTLET_CONFIRM_BATCHES: u32 = 8;

/// Most batches a confirmation that still finds a suspect extends to before it is replayed,
/// in rounds long enough that a replay costs far more: a quarter of the steps claimed, at
/// most this many (three passes each). In rounds of 120 steps, eight batches let one honest
/// update in fourteen of those screened through to a replay of all 120 steps; the extension
/// costs at most a quarter of one (`bench/redteam.sh` measures both).
pub const GAUNTLET_EXTEND_BATCHES: u32 = 32;

/// The share of the other update's gain an update must owe to its own data on the
/// confirmation's batches not to be a suspect (its margin over the other's at least this
/// share of what the other lowered the loss by), in rounds of 30 steps or fewer. Honest
/// updates' margins are about a third of the other's gain there; training on other data
/// leaves none (`bench/redteam.sh` measures both).
pub const OWN_DATA_SHARE: f64 = 0.05;

/// What an honest update owes to its sender's own data, in steps' worth of its gain: in
/// longer rounds the threshold is `OWN_DATA_STEPS / steps` of the other's gain, below
/// [`OWN_DATA_SHARE`]. Each sample is trained on once, so the own data's mark on the loss
/// stays about a step's worth while the gain grows with the steps: honest margins are about
/// a fifteenth of the gain in rounds of 120 steps, where 5% flagged one honest update in
/// five of those the confirmation looked at.
pub const OWN_DATA_STEPS: f64 = 1.5;

/// The loss screen's finding on one update (a paired version of Templar's Gauntlet): how
/// much lower the loss on its sender's own data is after the update than after another
/// sender's update of the round. An update trained on its sender's data lowers the loss on
/// that data more than an update trained elsewhere does; one trained on other data (or not at
/// all) does not. Both are measured on the same samples, so the samples' own difficulty
/// cancels (comparing with random samples, as Templar's Gauntlet does, leaves it in, and with
/// few batches it drowns the signal).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossScreen {
	/// Mean loss after the other update minus mean loss after this one, on the batches
	/// looked at.
	pub margin: f64,
	/// The margin at or below which the update is a suspect: none (0) on the first look;
	/// on the confirmation and its extension, a share of what the other update lowered the
	/// loss by ([`OWN_DATA_SHARE`], less in long rounds: [`OWN_DATA_STEPS`]).
	pub threshold: f64,
	/// Batches looked at (the first look's, then the confirmation's and its extension's).
	pub batches: u32,
	/// Forward passes it took (its cost: about a third of an inner step each).
	pub passes: u32,
}

impl LossScreen {
	/// Whether the update shows no sign of training on its sender's data.
	pub fn suspect(&self) -> bool {
		self.margin <= self.threshold
	}
}

/// Running sums of a loss screen's per-batch mean losses.
#[derive(Default)]
struct ScreenSums {
	own: f64,
	other: f64,
	/// The base's, over its first `base_batches` batches.
	base: f64,
	base_batches: u32,
	passes: u32,
}

impl ScreenSums {
	/// The finding after `batches` batches: margin over the mean losses; the threshold a
	/// `share` of the other update's gain (the base's loss minus the other's), or none.
	fn screen(&self, batches: u32, share: Option<f64>) -> LossScreen {
		let n = f64::from(batches.max(1));
		let threshold = share.map_or(0.0, |share| share * ((self.base - self.other) / n).max(0.0));
		LossScreen { margin: (self.other - self.own) / n, threshold, batches, passes: self.passes }
	}
}

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
	fn refused() -> Self {
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
	/// The job's inner optimizer.
	pub inner: InnerOptimizer,
	/// Its schedule settings.
	pub config: InnerConfig,
	/// Samples per inner step.
	pub batch_size: u64,
	/// Most inner steps the job lets a round claim (`None`: no cap). A claim of more is
	/// invalid without a replay, so a liar cannot buy an unbounded amount of verifiers' time.
	pub max_steps: Option<u32>,
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
		let local = train_round(&mut trainer, &claim.base, batches)?;
		let corrected: Vec<f32> =
			local.delta.iter().zip(&claim.start.residual).map(|(d, e)| d + e).collect();
		compress_once(&claim.sent.scheme(), &corrected)
	}

	/// The loss screen of `update` (dense) sent from `base` by a sender whose data seed is
	/// `seed` and who claimed `steps` steps, against `other`, another sender's update of the
	/// round: a first look on [`GAUNTLET_BATCHES`] of the sender's batches; while it finds a
	/// suspect, a confirmation on [`GAUNTLET_CONFIRM_BATCHES`], then its extension (in long
	/// rounds) to [`GAUNTLET_EXTEND_BATCHES`]. Each batch is built and evaluated once.
	pub fn loss_screen(
		&self,
		base: &[f32],
		update: &[f32],
		other: &[f32],
		seed: &Hash,
		steps: u32,
	) -> Result<LossScreen> {
		let model = Model::new(self.spec, b"grid/gauntlet", &self.device)?;
		let after =
			|delta: &[f32]| -> Vec<f32> { base.iter().zip(delta).map(|(b, u)| b - u).collect() };
		let (own, other) = (after(update), after(other));
		let most = steps.max(1);
		let stages = [
			GAUNTLET_BATCHES,
			GAUNTLET_CONFIRM_BATCHES.min(most),
			(steps / 4).min(GAUNTLET_EXTEND_BATCHES),
		];
		// The share of the gain an honest update owes its own data: less in longer rounds.
		let share = (OWN_DATA_STEPS / f64::from(most)).min(OWN_DATA_SHARE);
		let shares = [None, Some(share), Some(share)];
		let mut sums = ScreenSums::default();
		let mut found = sums.screen(0, None);
		let mut seen: Vec<Batch> = Vec::new();
		let mut looked = 0;
		for (stage, upto) in stages.into_iter().enumerate() {
			if upto <= looked {
				continue;
			}
			let batches = self.batches(seed, looked..upto)?;
			sums.own += self.loss_sum(&model, &own, &batches)?;
			sums.other += self.loss_sum(&model, &other, &batches)?;
			sums.passes += 2 * (upto - looked);
			seen.extend(batches);
			if stage > 0 {
				// The base's loss, for the other update's gain: on every batch looked at.
				let missing = &seen[sums.base_batches as usize..];
				sums.base += self.loss_sum(&model, base, missing)?;
				sums.passes += upto - sums.base_batches;
				sums.base_batches = upto;
			}
			looked = upto;
			found = sums.screen(looked, shares[stage]);
			if !found.suspect() {
				break;
			}
		}
		Ok(found)
	}

	/// The batches of `steps` of the data seed `seed`.
	fn batches(&self, seed: &Hash, steps: std::ops::Range<u32>) -> Result<Vec<Batch>> {
		let population = self.dataset.train_len();
		steps
			.map(|step| {
				let indices = batch_indices(seed, u64::from(step), self.batch_size, population);
				self.dataset.train_batch(&indices, &self.device)
			})
			.collect()
	}

	/// The sum over `batches` of each one's mean loss with `model` at `params`.
	fn loss_sum(&self, model: &Model, params: &[f32], batches: &[Batch]) -> Result<f64> {
		if batches.is_empty() {
			return Ok(0.0);
		}
		model.params().load_flat(params)?;
		Ok(evaluate(model, batches)? * batches.len() as f64)
	}

	/// Replays `claim` and judges the update it sent.
	pub fn judge(&self, claim: &Claim) -> Result<Judgement> {
		let n = claim.base.len();
		if claim.sent.len() != n || claim.start.len() != n {
			return Err(Error::Config(format!(
				"an update of {} values and a work state of {} for a model of {n}",
				claim.sent.len(),
				claim.start.len(),
			)));
		}
		let over_cap = self.max_steps.is_some_and(|cap| claim.steps > cap);
		if claim.steps == 0 || over_cap {
			// Nothing claimed, or more than the job allows: invalid without a replay.
			return Ok(Judgement::refused());
		}
		let replayed = self.replay(claim)?;
		Ok(Judgement::of(&claim.sent.decompress(), &replayed.decompress()))
	}
}

/// Replays run on their own thread, one at a time, so the trainer's round loop (and its
/// own training) goes on while a check runs. Each check carries a tag `T` that comes back
/// with its finding.
pub struct VerifyWorker<T> {
	jobs: Option<mpsc::Sender<(T, Claim)>>,
	findings: mpsc::Receiver<(T, Result<Judgement>)>,
	thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> VerifyWorker<T> {
	/// Starts the worker thread.
	pub fn start(replayer: Replayer) -> Self {
		let (jobs, inbox) = mpsc::channel::<(T, Claim)>();
		let (report, findings) = mpsc::channel();
		let thread = std::thread::Builder::new()
			.name("grid-verify".into())
			.spawn(move || {
				for (tag, claim) in inbox {
					if report.send((tag, replayer.judge(&claim))).is_err() {
						return;
					}
				}
			})
			.expect("spawning the verification thread");
		VerifyWorker { jobs: Some(jobs), findings, thread: Some(thread) }
	}

	/// Queues a check.
	pub fn submit(&self, tag: T, claim: Claim) {
		if let Some(jobs) = &self.jobs {
			let _ = jobs.send((tag, claim));
		}
	}

	/// Checks finished since the last call.
	pub fn finished(&self) -> Vec<(T, Result<Judgement>)> {
		self.findings.try_iter().collect()
	}
}

impl<T> Drop for VerifyWorker<T> {
	fn drop(&mut self) {
		// Closing the queue ends the thread after the check it is running.
		self.jobs.take();
		if let Some(thread) = self.thread.take() {
			let _ = thread.join();
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		compress::adaptive::AdaptiveCompressor, data::MnistDataset, diloco::OuterOptimizer,
		model::Model, rng::Rng,
	};
	use grid_primitives::job::{Compression, MlpConfig, Nanos};

	#[test]
	fn cosines_and_suspects() {
		assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-12);
		assert!(cosine(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-12);
		assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
		let a = [1.0f32, 1.0, 0.0];
		let b = [1.0f32, 0.8, 0.1];
		let c = [0.9f32, 1.1, -0.1];
		let odd = [0.0f32, 0.0, 5.0];
		assert!(suspects(&[&a, &b]).is_empty(), "two updates cannot be told apart");
		assert!(suspects(&[&a, &b, &c]).is_empty());
		let found = suspects(&[&a, &odd, &b, &c]);
		assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), vec![1]);
	}

	fn replayer(data: &Arc<Dataset>, spec: ModelSpec, inner: InnerOptimizer) -> Replayer {
		Replayer {
			spec,
			inner,
			config: InnerConfig { total_steps: 400, ..Default::default() },
			batch_size: 32,
			max_steps: Some(100),
			dataset: data.clone(),
			device: Device::Cpu,
		}
	}

	/// One participant as the daemon runs it: a trainer whose optimizer state persists and
	/// an adaptive compressor whose error feedback does.
	struct Worker {
		trainer: InnerTrainer,
		compressor: AdaptiveCompressor,
	}

	impl Worker {
		fn start_state(&self) -> WorkState {
			self.trainer.snapshot(self.compressor.residual().to_vec()).unwrap()
		}

		/// Trains `steps` from `base` on `seed`'s batches; returns (raw Δ, sent update).
		fn round(&mut self, rep: &Replayer, base: &[f32], seed: Hash, steps: u32) -> Vec<f32> {
			let data = &rep.dataset;
			let batches = (0..u64::from(steps)).map(|i| {
				data.train_batch(&batch_indices(&seed, i, 32, data.train_len()), &Device::Cpu)
			});
			train_round(&mut self.trainer, base, batches).unwrap().delta
		}
	}

	fn worker(rep: &Replayer, compression: Compression, len: usize) -> Worker {
		Worker {
			trainer: InnerTrainer::new(rep.spec, b"job", &Device::Cpu, &rep.inner, rep.config)
				.unwrap(),
			compressor: AdaptiveCompressor::new(compression, len),
		}
	}

	/// Three honest participants train three DiLoCo rounds on MNIST (optimizer state and
	/// error feedback carried over, as in a job). In the last round every honest update is
	/// judged from its sender's committed start state, and so is each attacker's, who
	/// commits participant 0's true start state and seed but sends something else.
	fn honest_and_attackers(compression: Compression) -> Vec<(&'static str, Judgement, Verdict)> {
		let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 64, layers: 1 });
		let inner =
			InnerOptimizer::AdamW { lr: Nanos(2_000_000), weight_decay: Nanos(0), warmup_steps: 5 };
		let data = Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()));
		let rep = replayer(&data, spec, inner);
		let model = Model::new(spec, b"job", &Device::Cpu).unwrap();
		let mut global = model.params().flatten().unwrap();
		let n = global.len();
		let mut people: Vec<Worker> = (0..3).map(|_| worker(&rep, compression, n)).collect();
		let mut outer = OuterOptimizer::new(0.7, 0.5, n);
		let steps = 40u32;
		let mut previous_mean = vec![0f32; n];
		let seed_of = |round: u8, p: usize| Hash::repeat_byte(16 * round + p as u8 + 1);
		let mut found = Vec::new();
		for round in 0..3u8 {
			let base = Arc::new(global.clone());
			let mut claims = Vec::new();
			let mut corrected = Vec::new();
			for (p, person) in people.iter_mut().enumerate() {
				let start = Arc::new(person.start_state());
				let seed = seed_of(round, p);
				let delta = person.round(&rep, &base, seed, steps);
				corrected.push(
					delta.iter().zip(&start.residual).map(|(d, e)| d + e).collect::<Vec<f32>>(),
				);
				let (sent, _, _) = person.compressor.compress(&delta, None).unwrap();
				claims.push(Claim { base: base.clone(), start, sent: Arc::new(sent), seed, steps });
			}
			let mean: Vec<f32> = (0..n)
				.map(|j| claims.iter().map(|c| c.sent.decompress()[j]).sum::<f32>() / 3.0)
				.collect();
			if round < 2 {
				outer.step(&mut global, &mean).unwrap();
				previous_mean = mean;
				continue;
			}
			for claim in &claims {
				let j = rep.judge(claim).unwrap();
				found.push(("honest", j, j.verdict));
			}
			let me = &claims[0];
			let scheme = me.sent.scheme();
			let send = |values: &[f32]| Arc::new(compress_once(&scheme, values).unwrap());
			let scaled = |v: &[f32], k: f32| v.iter().map(|x| x * k).collect::<Vec<f32>>();
			let mut rng = Rng::new(7);
			let noise: Vec<f32> = (0..n).map(|_| rng.normal() as f32).collect();
			let norm = |v: &[f32]| crate::aggregate::norm(v) as f32;
			let noise = scaled(&noise, norm(&corrected[0]) / norm(&noise));
			let other = &corrected[1];
			let noised: Vec<f32> = other.iter().zip(&noise).map(|(o, z)| o + 0.3 * z).collect();
			// Trained from the committed state, but on other data or for fewer steps.
			let retrain = |seed: Hash, ran: u32| {
				let mut w = worker(&rep, compression, n);
				w.trainer.restore(me.start.as_ref()).unwrap();
				w.compressor.set_residual(me.start.residual.clone()).unwrap();
				let delta = w.round(&rep, &base, seed, ran);
				Arc::new(w.compressor.compress(&delta, None).unwrap().0)
			};
			let attacks = [
				("lazy: noise", send(&noise)),
				("exact copy", claims[1].sent.clone()),
				("scaled copy", send(&scaled(other, 1.5))),
				("noised copy", send(&noised)),
				("previous aggregate", send(&scaled(&previous_mean, 1.0))),
				("wrong data", retrain(Hash::repeat_byte(0xee), steps)),
				("inflated steps (ran 3/4)", retrain(me.seed, steps * 3 / 4)),
			];
			let honest: Vec<Vec<f32>> = claims.iter().map(|c| c.sent.decompress()).collect();
			for (name, sent) in attacks {
				let j = rep.judge(&Claim { sent: sent.clone(), ..me.clone() }).unwrap();
				found.push((name, j, j.verdict));
				// The copy screen: the attacker's update among the other two honest ones.
				let copy = sent.decompress();
				let round_updates = [copy.as_slice(), &honest[1], &honest[2]];
				let flagged: Vec<usize> =
					copy_suspects(&round_updates).into_iter().map(|(i, _)| i).collect();
				let to_original = cosine(&copy, &honest[1]);
				eprintln!(
					"{compression:?}: {name}: cosine {to_original:.3} to participant 1's update, \
					 copy screen flags {flagged:?}"
				);
				let caught = name.contains("copy")
					&& !(name == "noised copy" && matches!(compression, Compression::TopK { .. }));
				if caught {
					assert_eq!(flagged, vec![0, 1], "{compression:?}: {name} and its original");
				}
			}
			let over = Claim { steps: 101, ..me.clone() };
			let j = rep.judge(&over).unwrap();
			found.push(("claims over the job's cap", j, j.verdict));
			let updates: Vec<&[f32]> = honest.iter().map(Vec::as_slice).collect();
			assert!(suspects(&updates).is_empty(), "honest updates are not suspects");
			let closest = (0..3)
				.flat_map(|i| (i + 1..3).map(move |j| (i, j)))
				.map(|(i, j)| cosine(updates[i], updates[j]))
				.fold(f64::MIN, f64::max);
			eprintln!("{compression:?}: closest honest pair: cosine {closest:.3}");
			assert!(copy_suspects(&updates).is_empty(), "honest updates are not copies");
		}
		found
	}

	#[test]
	fn exact_replays_accept_honest_work_and_refuse_every_attacker() {
		for compression in
			[Compression::Int8 { chunk: 256 }, Compression::TopK { chunk: 64, k: 8, value_bits: 2 }]
		{
			let found = honest_and_attackers(compression);
			for (name, cosine, verdict) in &found {
				eprintln!("{compression:?}: {name}: {cosine:?} -> {verdict:?}");
			}
			for (name, cosine, verdict) in found {
				let expected = if name == "honest" { Verdict::Valid } else { Verdict::Invalid };
				assert_eq!(verdict, expected, "{compression:?}: {name} at {cosine:?}");
			}
		}
	}

	/// A replayer of a tiny MLP, and that model's initial parameters.
	fn tiny() -> (Replayer, Arc<Vec<f32>>) {
		let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 8, layers: 1 });
		let inner =
			InnerOptimizer::AdamW { lr: Nanos(2_000_000), weight_decay: Nanos(0), warmup_steps: 0 };
		let data = Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()));
		let base = Model::new(spec, b"x", &Device::Cpu).unwrap().params().flatten().unwrap();
		(replayer(&data, spec, inner), Arc::new(base))
	}

	/// A claim of `steps` on the tiny model whose update is `values`.
	fn tiny_claim(base: &Arc<Vec<f32>>, values: Vec<f32>, steps: u32) -> Claim {
		Claim {
			base: base.clone(),
			start: Arc::new(WorkState::fresh(base.len(), true)),
			sent: Arc::new(CompressedUpdate::None(values)),
			seed: Hash::zero(),
			steps,
		}
	}

	#[test]
	fn an_update_shorter_than_its_peers_is_a_suspect() {
		let a = [1.0f32, 0.0, 0.0];
		let b = [0.0f32, 1.0, 0.0];
		let c = [0.0f32, 0.0, 1.0];
		let short = [0.0f32, 0.6, 0.6];
		assert!(short_suspects(&[&a, &b]).is_empty(), "two updates cannot be told apart");
		assert!(short_suspects(&[&a, &b, &c]).is_empty());
		let found = short_suspects(&[&a, &b, &c, &short]);
		assert_eq!(found.len(), 1);
		assert_eq!(found[0].0, 3);
		assert!((found[0].1 - 0.6 * 2f64.sqrt()).abs() < 1e-6);
	}

	#[test]
	fn the_copy_screen_finds_a_copy_among_updates_that_are_all_close() {
		// Honest updates of a first round all from one fresh state: a shared direction and
		// their own parts, pairwise at about 0.91.
		let n = 4000;
		let mut rng = Rng::new(3);
		let mut draw =
			|scale: f64| -> Vec<f32> { (0..n).map(|_| (rng.normal() * scale) as f32).collect() };
		let shared = draw(1.0);
		let honest: Vec<Vec<f32>> =
			(0..4).map(|_| shared.iter().zip(draw(0.31)).map(|(s, e)| s + e).collect()).collect();
		let refs: Vec<&[f32]> = honest.iter().map(Vec::as_slice).collect();
		assert!(cosine(refs[0], refs[1]) > COPY_COSINE, "as close as copies used to be");
		assert!(copy_suspects(&refs).is_empty(), "honest updates close to each other");
		// A copy of participant 1's update with noise of 0.3 times its norm stands out.
		let norm = crate::aggregate::norm(&honest[1]);
		let noise = draw(0.3 * norm / (n as f64).sqrt());
		let copy: Vec<f32> = honest[1].iter().zip(&noise).map(|(u, z)| u + z).collect();
		let mut with_copy = refs.clone();
		with_copy.push(&copy);
		let flagged: Vec<usize> = copy_suspects(&with_copy).into_iter().map(|(i, _)| i).collect();
		assert_eq!(flagged, vec![1, 4], "the copy and its original");
	}

	#[test]
	fn the_loss_screen_tells_training_on_its_own_data_from_training_on_other_data() {
		let (rep, base) = tiny();
		let train = |seed: Hash| {
			let mut w = worker(&rep, Compression::None, base.len());
			w.round(&rep, &base, seed, 30)
		};
		let mine = Hash::repeat_byte(3);
		let (other, elsewhere) = (train(Hash::repeat_byte(5)), train(Hash::repeat_byte(9)));
		// A few noisy batches decide a single screen (honest work is flagged now and then:
		// `bench/redteam.sh` measures how often); what holds every time is the order.
		let honest = rep.loss_screen(&base, &train(mine), &other, &mine, 30).unwrap();
		let wrong = rep.loss_screen(&base, &elsewhere, &other, &mine, 30).unwrap();
		assert!(wrong.margin < honest.margin, "{wrong:?} against {honest:?}");
		let nothing = rep.loss_screen(&base, &vec![0.0; base.len()], &other, &mine, 30).unwrap();
		assert!(nothing.suspect(), "no training: {nothing:?}");
		// A suspect of the first look is looked at again, on more batches.
		assert_eq!(nothing.batches, GAUNTLET_CONFIRM_BATCHES);
		assert_eq!(nothing.passes, 3 * GAUNTLET_CONFIRM_BATCHES, "the base too, on each batch");
		let short = rep.loss_screen(&base, &vec![0.0; base.len()], &other, &mine, 3).unwrap();
		assert_eq!(short.batches, 3, "no more batches than the steps it claimed");
		// In a long round a suspect is looked at on a quarter of its batches before anyone
		// replays all its steps.
		let long = rep.loss_screen(&base, &vec![0.0; base.len()], &other, &mine, 120).unwrap();
		assert!(long.suspect(), "no training: {long:?}");
		assert_eq!((long.batches, long.passes), (30, 90));
	}

	#[test]
	fn claims_that_do_not_fit_the_model_or_claim_no_work_are_refused() {
		let (rep, base) = tiny();
		let n = base.len();
		let err = rep.judge(&tiny_claim(&base, vec![0.0; 3], 1)).unwrap_err().to_string();
		assert!(err.contains("an update of 3 values"), "{err}");
		let short_state = Claim {
			start: Arc::new(WorkState::fresh(2, true)),
			..tiny_claim(&base, vec![0.1; n], 1)
		};
		let err = rep.judge(&short_state).unwrap_err().to_string();
		assert!(err.contains("a work state of 2"), "{err}");
		// A state of the wrong kind (SGD's, for an AdamW job) cannot be replayed.
		let sgd_state = Claim {
			start: Arc::new(WorkState::fresh(n, false)),
			..tiny_claim(&base, vec![0.1; n], 1)
		};
		let err = rep.judge(&sgd_state).unwrap_err().to_string();
		assert!(err.contains("AdamW needs its moments"), "{err}");
		assert_eq!(
			rep.judge(&tiny_claim(&base, vec![0.1; n], 0)).unwrap().verdict,
			Verdict::Invalid
		);
	}

	#[test]
	fn the_worker_reports_each_check_with_its_tag() {
		let (rep, base) = tiny();
		let n = base.len();
		let worker = VerifyWorker::start(rep);
		worker.submit(1u32, tiny_claim(&base, vec![0.0; 2], 3));
		worker.submit(2u32, tiny_claim(&base, vec![0.5; n], 0));
		let mut got = Vec::new();
		let start = std::time::Instant::now();
		while got.len() < 2 && start.elapsed() < std::time::Duration::from_secs(60) {
			got.extend(worker.finished());
			std::thread::sleep(std::time::Duration::from_millis(10));
		}
		assert_eq!(got.len(), 2);
		assert_eq!(got[0].0, 1);
		assert!(got[0].1.is_err());
		assert_eq!(got[1].0, 2);
		assert_eq!(got[1].1.as_ref().unwrap().verdict, Verdict::Invalid);
	}
}
