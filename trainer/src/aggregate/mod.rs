//! Combining participants' pseudo-gradients, robustly.
//!
//! Every honest participant must compute the same aggregate from the same accepted updates,
//! bit for bit. Each coordinate's value depends only on that coordinate's values, combined in
//! the given (canonical) order and accumulated in f64, ties broken by position; norms are
//! each summed in coordinate order. So the work is spread over threads by blocks of
//! coordinates ([`blocks`]) and the result does not depend on how many there are.
//!
//! Updates stay compressed: each block of coordinates is decoded from every update into one
//! small matrix and combined from there, so aggregating N updates of P values holds the
//! encoded updates, the P-value result and a block's N × [`blocks::BLOCK`] values per
//! thread, instead of N dense vectors (and N clipped copies).

mod blocks;

pub use blocks::{sampled_sent, BLOCK};
#[cfg(test)]
mod tests;

use std::sync::Arc;

use rayon::prelude::*;

use crate::{
	compress::CompressedUpdate,
	error::{Error, Result},
};

/// One participant's update and how many samples it trained on.
#[derive(Clone, Debug)]
pub struct Contribution {
	/// Δ = θ_global − θ_local, as it was sent.
	pub update: Arc<CompressedUpdate>,
	/// Samples processed in the round (the weight of the update).
	pub samples: u64,
}

impl Contribution {
	/// A contribution of the dense `delta` (uncompressed).
	pub fn dense(delta: Vec<f32>, samples: u64) -> Self {
		Contribution { update: Arc::new(CompressedUpdate::None(delta)), samples }
	}
}

/// How accepted updates are combined (in a trainer's configuration:
/// `aggregation = { rule = "trimmed-mean", trim = 1 }`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Rule {
	/// Mean weighted by samples processed (not robust: any one update can move it anywhere).
	Mean,
	/// Per coordinate, over the updates that sent it (a nonzero value: sparse updates send
	/// a few coordinates each), drop the `trim` largest and `trim` smallest values (fewer
	/// where fewer were sent, so that one always stays) and average the rest, scaled by the
	/// share of updates that sent it: the plain mean's weight, so a coordinate one update
	/// sent counts as its 1/n, as its sender's error feedback assumes, instead of being
	/// trimmed to zero. Dense updates get the classic trimmed mean. Unweighted: weights would
	/// let a liar who claims many samples dominate; a value sent alone is bounded by the
	/// norm screen.
	TrimmedMean {
		/// Values dropped at each end.
		trim: usize,
	},
	/// The [`Rule::TrimmedMean`] after per-peer norm clipping: every update whose norm is
	/// above the median of the updates' norms is scaled down to it first, so no one peer moves
	/// the aggregate further than a typical one does, whatever it sends (a coordinate it alone
	/// sent counts as at most a median update's share). Chain jobs use it.
	ClippedTrimmedMean {
		/// Values dropped at each end.
		trim: usize,
	},
	/// Centered clipping (Karimireddy, He & Jaggi 2021): start at the coordinate-wise median
	/// and move towards each update by at most a radius, `iters` times. The radius is
	/// `radius_ratio` × the median distance of the updates from the start. Its iterations
	/// need every update whole, so it decompresses them (not for large jobs).
	CenteredClip {
		/// Clipping radius relative to the median distance from the start.
		radius_ratio: f64,
		/// Iterations.
		iters: u32,
	},
}

impl Rule {
	/// The rule for `n` updates: a trimmed mean trims at most (n − 1) / 2 from each end, so
	/// that at least one update stays (two updates are averaged, not refused). Only
	/// [`aggregate`] applies it, to the updates that passed screening, so a screened-out
	/// update cannot leave a round with too few to trim (callers capping it to the updates
	/// they received did: a trainer exited on such a round).
	fn for_updates(self, n: usize) -> Rule {
		let most = n.saturating_sub(1) / 2;
		match self {
			Rule::TrimmedMean { trim } => Rule::TrimmedMean { trim: trim.min(most) },
			Rule::ClippedTrimmedMean { trim } => Rule::ClippedTrimmedMean { trim: trim.min(most) },
			rule => rule,
		}
	}
}

/// The result of an aggregation.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
	/// The combined Δ.
	pub delta: Vec<f32>,
	/// Positions of the updates that passed screening.
	pub accepted: Vec<usize>,
	/// Positions of the updates rejected by screening.
	pub rejected: Vec<usize>,
}

/// L2 norm in f64.
pub fn norm(v: &[f32]) -> f64 {
	v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt()
}

/// The lower median (deterministic for even counts).
fn median(mut xs: Vec<f64>) -> f64 {
	xs.sort_by(f64::total_cmp);
	xs[(xs.len() - 1) / 2]
}

/// Each update's norm, the updates spread over threads (each summed in order).
fn norms(updates: &[Contribution]) -> Vec<f64> {
	updates.par_iter().map(|u| u.update.norm()).collect()
}

/// Positions of updates that are finite and whose norm is at most `max_ratio` × the median
/// norm (`None`: only the finiteness check). Scaled-up updates fail; sign-flipped and random
/// ones of ordinary norm pass and are left to the robust rule.
pub fn screen(updates: &[Contribution], max_ratio: Option<f64>) -> Vec<usize> {
	screen_norms(&norms(updates), max_ratio)
}

fn screen_norms(norms: &[f64], max_ratio: Option<f64>) -> Vec<usize> {
	let finite: Vec<usize> = (0..norms.len()).filter(|&i| norms[i].is_finite()).collect();
	let Some(ratio) = max_ratio else { return finite };
	if finite.is_empty() {
		return finite;
	}
	let limit = ratio * median(finite.iter().map(|&i| norms[i]).collect());
	finite.into_iter().filter(|&i| norms[i] <= limit).collect()
}

/// Screens `updates` (given in canonical order, all the same length) and combines the
/// accepted ones with `rule`, its trim capped to how many were accepted
/// ([`Rule::for_updates`]).
pub fn aggregate(
	updates: &[Contribution],
	rule: Rule,
	screen_ratio: Option<f64>,
) -> Result<Aggregate> {
	aggregate_by(updates, rule, screen_ratio, blocks::Way::Rows)
}

/// [`aggregate`] with every rule combining one coordinate's column at a time (the way
/// until the mean and the chain's trim ran row by row over a block): the same bits,
/// `bench_codec`'s baseline.
pub fn aggregate_by_columns(
	updates: &[Contribution],
	rule: Rule,
	screen_ratio: Option<f64>,
) -> Result<Aggregate> {
	aggregate_by(updates, rule, screen_ratio, blocks::Way::Columns)
}

fn aggregate_by(
	updates: &[Contribution],
	rule: Rule,
	screen_ratio: Option<f64>,
	way: blocks::Way,
) -> Result<Aggregate> {
	let len = updates
		.first()
		.map(|u| u.update.len())
		.ok_or_else(|| Error::Aggregate("no updates".into()))?;
	if let Some(i) = updates.iter().position(|u| u.update.len() != len) {
		return Err(Error::Layout(format!(
			"update {i} has {} values, update 0 has {len}",
			updates[i].update.len()
		)));
	}
	let norms = norms(updates);
	let accepted = screen_norms(&norms, screen_ratio);
	let rejected = (0..updates.len()).filter(|i| !accepted.contains(i)).collect();
	if accepted.is_empty() {
		return Err(Error::Aggregate("every update was rejected".into()));
	}
	let chosen: Vec<&Contribution> = accepted.iter().map(|&i| &updates[i]).collect();
	let rule = rule.for_updates(chosen.len());
	let unscaled: Vec<blocks::Scaled> =
		chosen.iter().map(|u| blocks::Scaled { update: &u.update, scale: None }).collect();
	let delta = match rule {
		Rule::Mean => {
			let samples: Vec<u64> = chosen.iter().map(|u| u.samples).collect();
			blocks::weighted_mean(&unscaled, &samples, way)?
		}
		Rule::TrimmedMean { trim } => blocks::trimmed_mean(&unscaled, trim, way)?,
		Rule::ClippedTrimmedMean { trim } => {
			let chosen_norms: Vec<f64> = accepted.iter().map(|&i| norms[i]).collect();
			blocks::trimmed_mean(&clip_to_median(&chosen, &chosen_norms), trim, way)?
		}
		Rule::CenteredClip { radius_ratio, iters } => centered_clip(&chosen, radius_ratio, iters)?,
	};
	Ok(Aggregate { delta, accepted, rejected })
}

/// The updates, each whose norm is above the (lower) median norm scaled down to it.
fn clip_to_median<'a>(updates: &[&'a Contribution], norms: &[f64]) -> Vec<blocks::Scaled<'a>> {
	let limit = median(norms.to_vec());
	updates
		.iter()
		.zip(norms)
		.map(|(u, &n)| blocks::Scaled { update: &u.update, scale: (n > limit).then(|| limit / n) })
		.collect()
}

fn coordinate_median(deltas: &[Vec<f32>]) -> Vec<f32> {
	let n = deltas.len();
	let mut column = vec![0f32; n];
	(0..deltas[0].len())
		.map(|j| {
			for (c, d) in column.iter_mut().zip(deltas) {
				*c = d[j];
			}
			column.sort_by(f32::total_cmp);
			column[(n - 1) / 2]
		})
		.collect()
}

fn centered_clip(updates: &[&Contribution], radius_ratio: f64, iters: u32) -> Result<Vec<f32>> {
	let total: f64 = updates.iter().map(|u| u.samples as f64).sum();
	if total <= 0.0 {
		return Err(Error::Aggregate("accepted updates processed zero samples".into()));
	}
	let deltas: Vec<Vec<f32>> = updates.iter().map(|u| u.update.decompress()).collect();
	let mut center: Vec<f64> = coordinate_median(&deltas).into_iter().map(f64::from).collect();
	let distance = |d: &[f32], c: &[f64]| {
		d.iter().zip(c).map(|(x, c)| (f64::from(*x) - c).powi(2)).sum::<f64>().sqrt()
	};
	let radius = radius_ratio * median(deltas.iter().map(|d| distance(d, &center)).collect());
	for _ in 0..iters {
		let mut step = vec![0f64; center.len()];
		for (u, d) in updates.iter().zip(&deltas) {
			let dist = distance(d, &center);
			let clip = if dist > radius { radius / dist } else { 1.0 };
			let w = u.samples as f64 / total * clip;
			for ((s, x), c) in step.iter_mut().zip(d).zip(&center) {
				*s += w * (f64::from(*x) - c);
			}
		}
		for (c, s) in center.iter_mut().zip(&step) {
			*c += s;
		}
	}
	Ok(center.into_iter().map(|c| c as f32).collect())
}
