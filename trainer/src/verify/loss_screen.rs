//! The paired loss screen: whether an update owes its gain to its sender's own data.

use grid_primitives::Hash;

use super::Replayer;
use crate::{
	data::batch_indices,
	error::Result,
	model::{Batch, Model},
	train::evaluate,
};

/// Batches of a sender's own data the loss screen looks at first (its first step's: the
/// step whose gradient was taken at the round's base, so the update carries it most
/// plainly). Two forward passes each.
pub const GAUNTLET_BATCHES: u32 = 1;

/// Batches (its first steps') the loss screen confirms a first look's suspicion on before
/// anything is replayed: one batch flags about one honest update in seven, eight about one
/// in fifty (`bench/redteam.sh` measures both), and a replay costs a whole contribution.
pub const GAUNTLET_CONFIRM_BATCHES: u32 = 8;

/// In rounds of 30 steps or fewer, a suspect of the first look is cleared, and looked at no
/// further, as soon as its margin over the batches looked at is this many times the
/// threshold: honest updates' margins there are mostly far above it, so most of those the
/// first look flags clear within a batch or two, where looking at all eight cost 22 more
/// passes, while an update trained on other data seldom clears (its margin hovers about
/// zero). Longer rounds' lower threshold sits within the margins' noise: clearing there at
/// twice the threshold, or at twice a 30-step round's, let training on other data through
/// (caught within ten rounds in 82 to 92 of 100 attempts against 98 without), so they look
/// at every batch of the confirmation. `bench/redteam.sh` measures what it saves and what it
/// lets through.
pub const GAUNTLET_CLEAR_FACTOR: f64 = 2.0;

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
	/// The margin above which it is plainly not a suspect ([`GAUNTLET_CLEAR_FACTOR`]): zero
	/// on the first look.
	pub clear: f64,
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

	/// Whether the update is plainly not a suspect (its margin above `clear`), so that
	/// looking at more batches would not change the finding.
	pub fn cleared(&self) -> bool {
		self.margin > self.clear
	}
}

/// How many batches a loss screen may look at for an update that claimed some steps.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ScreenPlan {
	/// The first look's batches.
	first: u32,
	/// The confirmation's, at most.
	confirm: u32,
	/// The most it may look at: the extension's (the confirmation's in short rounds).
	last: u32,
	/// The threshold's share of the other update's gain.
	share: f64,
}

impl ScreenPlan {
	fn new(steps: u32) -> Self {
		let most = steps.max(1);
		let first = GAUNTLET_BATCHES.min(most);
		let confirm = GAUNTLET_CONFIRM_BATCHES.min(most).max(first);
		ScreenPlan {
			first,
			confirm,
			last: (steps / 4).min(GAUNTLET_EXTEND_BATCHES).max(confirm),
			// The share of the gain an honest update owes its own data: less in longer rounds.
			share: (OWN_DATA_STEPS / f64::from(most)).min(OWN_DATA_SHARE),
		}
	}

	/// Whether a confirmation or extension that found `found` stops: the update is cleared,
	/// or the confirmation ended without a suspect, or every batch it may look at was.
	fn done(&self, found: &LossScreen) -> bool {
		found.cleared()
			|| (found.batches >= self.confirm && !found.suspect())
			|| found.batches >= self.last
	}
}

/// Running sums of a loss screen's per-batch mean losses.
struct ScreenSums {
	own: f64,
	other: f64,
	/// The base's (from the confirmation on, over every batch looked at).
	base: f64,
	passes: u32,
}

impl ScreenSums {
	/// The finding after `batches` batches: margin over the mean losses; the threshold a
	/// `share` of the other update's gain (the base's loss minus the other's), or none.
	fn screen(&self, batches: u32, share: Option<f64>) -> LossScreen {
		let n = f64::from(batches.max(1));
		let gain = ((self.base - self.other) / n).max(0.0);
		let (threshold, clear) = match share {
			// Longer rounds' lower threshold sits within the margins' noise: no early clear.
			Some(share) if share < OWN_DATA_SHARE => (share * gain, f64::INFINITY),
			Some(share) => (share * gain, GAUNTLET_CLEAR_FACTOR * share * gain),
			None => (0.0, 0.0),
		};
		LossScreen {
			margin: (self.other - self.own) / n,
			threshold,
			clear,
			batches,
			passes: self.passes,
		}
	}
}

impl Replayer {
	/// The loss screen of `update` (dense) sent from `base` by a sender whose data seed is
	/// `seed` and who claimed `steps` steps, against `other`, another sender's update of the
	/// round: a first look on [`GAUNTLET_BATCHES`] of the sender's batches; while it finds a
	/// suspect, a confirmation on up to [`GAUNTLET_CONFIRM_BATCHES`], then its extension (in
	/// long rounds) to [`GAUNTLET_EXTEND_BATCHES`], one batch at a time, stopping as soon as
	/// the update is cleared ([`LossScreen::cleared`]). Each batch is built and evaluated once.
	pub fn loss_screen(
		&self,
		base: &[f32],
		update: &[f32],
		other: &[f32],
		seed: &Hash,
		steps: u32,
	) -> Result<LossScreen> {
		let model = Model::for_inference(self.spec, b"grid/gauntlet", &self.device)?;
		let after =
			|delta: &[f32]| -> Vec<f32> { base.iter().zip(delta).map(|(b, u)| b - u).collect() };
		let (own, other) = (after(update), after(other));
		let plan = ScreenPlan::new(steps);
		// The first look: own and other update only.
		let first = self.batches(seed, 0..plan.first)?;
		let mut sums = ScreenSums {
			own: self.loss_sum(&model, &own, &first)?,
			other: self.loss_sum(&model, &other, &first)?,
			base: 0.0,
			passes: 2 * plan.first,
		};
		let mut found = sums.screen(plan.first, None);
		if !found.suspect() {
			return Ok(found);
		}
		// Then one batch at a time, with the base's loss too (on the first look's batches
		// as well, the first time), until the plan says stop.
		let mut looked = plan.first;
		while looked < plan.last {
			let batch = self.batches(seed, looked..looked + 1)?;
			sums.own += self.loss_sum(&model, &own, &batch)?;
			sums.other += self.loss_sum(&model, &other, &batch)?;
			if looked == plan.first {
				sums.base += self.loss_sum(&model, base, &first)?;
				sums.passes += plan.first;
			}
			sums.base += self.loss_sum(&model, base, &batch)?;
			sums.passes += 3;
			looked += 1;
			found = sums.screen(looked, Some(plan.share));
			if plan.done(&found) {
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
}

#[cfg(test)]
mod tests {
	use super::*;

	/// What `plan` finds after `batches` batches of mean margin `margin` where the other
	/// update lowered the loss by `gain` from the base's 2.0.
	fn found(plan: &ScreenPlan, batches: u32, margin: f64, gain: f64) -> LossScreen {
		let n = f64::from(batches);
		let other = 2.0 - gain;
		ScreenSums { own: (other - margin) * n, other: other * n, base: 2.0 * n, passes: 0 }
			.screen(batches, Some(plan.share))
	}

	#[test]
	fn a_screen_looks_at_more_batches_only_while_the_update_stays_unclear() {
		let short = ScreenPlan::new(30);
		assert_eq!((short.first, short.confirm, short.last), (1, 8, 8));
		let done = |batches, margin, gain| short.done(&found(&short, batches, margin, gain));
		// Cleared early: the margin is well above the threshold (5% of the gain) after two
		// batches.
		assert!(done(2, 0.3, 1.0));
		// Above the threshold but not twice it: one more batch.
		assert!(!done(2, 0.07, 1.0));
		// Where the other update gained nothing, any positive margin clears.
		assert!(done(3, 0.001, 0.0));
		assert!(!done(3, 0.0, 0.0));
		// The confirmation's end decides in a short round, suspect or not.
		assert!(done(8, 0.07, 1.0));
		assert!(done(8, 0.01, 1.0));
		assert!(found(&short, 8, 0.01, 1.0).suspect());
		// A long round's threshold is lower, within the margins' noise: nothing clears early
		// there, the confirmation looks at all its batches.
		let long = ScreenPlan::new(120);
		assert_eq!((long.confirm, long.last), (8, 30));
		assert!(long.share < short.share);
		let done = |batches, margin, gain| long.done(&found(&long, batches, margin, gain));
		assert!(!done(2, 0.05, 1.0));
		assert!(!done(2, 0.5, 1.0));
		// A suspect at the confirmation's end is looked at on up to a quarter of its steps.
		assert!(!done(8, 0.01, 1.0));
		assert!(done(8, 0.05, 1.0), "not a suspect at the confirmation's end");
		assert!(done(30, 0.01, 1.0));
		// No more batches than the steps claimed.
		let tiny = ScreenPlan::new(3);
		assert_eq!((tiny.first, tiny.confirm, tiny.last), (1, 3, 3));
		assert_eq!(ScreenPlan::new(0).last, 1);
	}
}
