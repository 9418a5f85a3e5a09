//! How much one batch of the loss screen tells: the margin (loss after another sender's
//! update minus loss after the screened one, on a batch of the screened sender's own data)
//! of honest updates and of updates trained on other data, batch by batch through a round.
//! The screen's cost follows from it: the fewer batches separate the two, the fewer forward
//! passes a screen needs for the same catch rate.
//!
//! Three providers train the suite's job ([`crate::trio`]): the screened one on its own
//! batches, another (whose update is the contrast, as the fraud desk's own update is) on its
//! own, and a third on other data. From the second round on
//! (warm optimizer states and residuals), each of the screened provider's batches gives one
//! honest margin and one wrong-data margin. Updates are screened as sent (int8 with error
//! feedback, decompressed), as the desk screens them.

use anyhow::Result;
use candle_core::Device;
use grid_trainer::{data::batch_indices, model::Model, train::evaluate};

use crate::{
	trio::{train_jobs, WRONG},
	world::{Setup, BATCH},
};

/// Margins by batch position in the round: `honest[t]` and `wrong[t]` hold one margin per
/// (job, round) on the screened provider's batch `t`.
pub struct Margins {
	/// Honest updates' margins.
	pub honest: Vec<Vec<f64>>,
	/// Margins of updates trained on other data.
	pub wrong: Vec<Vec<f64>>,
}

impl Margins {
	/// Each sample's mean margin over batch positions `batches` (honest, wrong).
	pub fn averaged(&self, batches: std::ops::Range<usize>) -> (Vec<f64>, Vec<f64>) {
		let mean = |by_position: &[Vec<f64>]| -> Vec<f64> {
			(0..by_position[0].len())
				.map(|k| {
					batches.clone().map(|t| by_position[t][k]).sum::<f64>() / batches.len() as f64
				})
				.collect()
		};
		(mean(&self.honest), mean(&self.wrong))
	}
}

/// Margins of `jobs` jobs of `rounds` rounds each (the first round of each not counted).
pub fn margins(setup: &Setup, jobs: u32, rounds: u32) -> Result<Margins> {
	let positions = setup.steps as usize;
	let mut found =
		Margins { honest: vec![Vec::new(); positions], wrong: vec![Vec::new(); positions] };
	let model = Model::new(setup.spec, b"grid/screen-power", &Device::Cpu)?;
	train_jobs(setup, "screen-power", jobs, rounds, false, |r| {
		if r.round == 0 {
			return Ok(());
		}
		let after = |update: &[f32]| -> Vec<f32> {
			r.base.iter().zip(update).map(|(b, u)| b - u).collect()
		};
		let (own, other, wrong) = (after(&r.sent[0]), after(&r.sent[1]), after(&r.sent[WRONG]));
		for t in 0..setup.steps {
			let indices = batch_indices(&r.seeds[0], u64::from(t), BATCH, setup.data.train_len());
			let batch = [setup.data.train_batch(&indices, &Device::Cpu)?];
			let loss = |params: &[f32]| -> Result<f64> {
				model.params().load_flat(params)?;
				Ok(evaluate(&model, &batch)?)
			};
			let contrast = loss(&other)?;
			found.honest[t as usize].push(contrast - loss(&own)?);
			found.wrong[t as usize].push(contrast - loss(&wrong)?);
		}
		Ok(())
	})?;
	Ok(found)
}

/// How far apart two samples' means are in their pooled standard deviations (d′), with each
/// one's mean and sample standard deviation.
pub fn separation(honest: &[f64], wrong: &[f64]) -> (f64, (f64, f64), (f64, f64)) {
	let (h, w) = (grid_trainer::stats::mean_sd(honest), grid_trainer::stats::mean_sd(wrong));
	let pooled = ((h.1 * h.1 + w.1 * w.1) / 2.0).sqrt();
	let d = if pooled > 0.0 { (h.0 - w.0) / pooled } else { 0.0 };
	(d, h, w)
}

/// A two-stage loss screen as modelled by [`best_two_stage`]: a first look on one batch that
/// clears the update when its margin is above `clear`; otherwise `more` batches, and the
/// update is replayed when the mean margin over all is at or below `flag`.
#[derive(Clone, Copy, Debug)]
pub struct TwoStage {
	/// The first look's clearing margin.
	pub clear: f64,
	/// Batches the confirmation adds.
	pub more: u32,
	/// The mean margin at or below which the update is replayed.
	pub flag: f64,
	/// Honest updates replayed (share of screens).
	pub honest_replayed: f64,
	/// Other-data updates replayed (share of screens).
	pub caught: f64,
	/// Forward passes per honest screen, the replays' included.
	pub passes: f64,
}

/// The cheapest two-stage screen, modelled with Gaussian margins of `honest` and `wrong`
/// (mean, sd) per batch, independent between batches (which flatters the screen: a round's
/// batches share how much its update's own data marked it), that still catches other data
/// in a round with probability 0.37 or more (99% within ten) when each of four trainers
/// screens `screens` of its four peers. A first-look batch costs two forward passes, each
/// further batch three (the base's loss scales the real screen's threshold), a replay of an
/// honest update `replay_passes`. `None` when no design in the grid catches enough.
pub fn best_two_stage(
	honest: (f64, f64),
	wrong: (f64, f64),
	screens: u32,
	replay_passes: f64,
) -> Option<TwoStage> {
	let draws = 20_000;
	let mut rng = grid_trainer::rng::Rng::new(17);
	let mut sample = |(mean, sd): (f64, f64)| -> Vec<[f64; 9]> {
		(0..draws).map(|_| std::array::from_fn(|_| mean + sd * rng.normal())).collect()
	};
	let (h, w) = (sample(honest), sample(wrong));
	let rate = |margins: &[[f64; 9]], clear: f64, more: u32, flag: f64| -> (f64, f64) {
		let (mut flagged, mut passes) = (0usize, 0f64);
		for m in margins {
			if m[0] > clear {
				passes += 2.0;
				continue;
			}
			passes += 3.0 + 3.0 * f64::from(more);
			let mean = m[..=more as usize].iter().sum::<f64>() / f64::from(more + 1);
			flagged += usize::from(mean <= flag);
		}
		(flagged as f64 / margins.len() as f64, passes / margins.len() as f64)
	};
	let mu = honest.0;
	let mut best: Option<TwoStage> = None;
	for clear in [0.0, 0.25, 0.5, 0.75, 1.0, 1.5].map(|c| c * mu) {
		for more in 1..=8 {
			for flag in [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6].map(|f| f * mu) {
				let (caught, _) = rate(&w, clear, more, flag);
				let per_round = 1.0 - (1.0 - caught * f64::from(screens) / 4.0).powi(4);
				if per_round < 0.37 {
					continue;
				}
				let (replayed, passes) = rate(&h, clear, more, flag);
				let design = TwoStage {
					clear,
					more,
					flag,
					honest_replayed: replayed,
					caught,
					passes: passes + replayed * replay_passes,
				};
				let cost = |d: &TwoStage| d.passes * f64::from(screens);
				if best.as_ref().is_none_or(|b| cost(&design) < cost(b)) {
					best = Some(design);
				}
			}
		}
	}
	best
}
