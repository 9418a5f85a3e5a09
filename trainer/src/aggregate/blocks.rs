//! The per-coordinate rules, run block by block: each block of coordinates is decoded from
//! every update into one matrix, then each coordinate's column is combined on its own. Blocks
//! go to rayon's threads; a coordinate's value never depends on the block it is in or the
//! thread that computed it.

use rayon::prelude::*;

use crate::{
	compress::CompressedUpdate,
	error::{Error, Result},
};

/// Coordinates per block: a block of 64 updates is 4 MiB of f32, so each thread's matrix
/// stays in its cache's reach while a block still amortizes finding its chunks.
pub const BLOCK: usize = 1 << 14;

/// An update, scaled by a factor when norm clipping shrinks it.
pub struct Scaled<'a> {
	/// As it was sent.
	pub update: &'a CompressedUpdate,
	/// The factor each value is multiplied by (in f64, rounded back to f32), if any.
	pub scale: Option<f64>,
}

/// The result vector of `updates`' common length, each coordinate `combine(column)` of its
/// values in the updates' order (`column` may be changed), with a thread's [`Scratch`].
fn by_coordinate<F>(updates: &[Scaled], combine: F) -> Vec<f32>
where
	F: Fn(&mut Vec<f32>, &mut Scratch) -> f32 + Sync,
{
	let n = updates.len();
	let mut out = vec![0f32; updates.first().map_or(0, |u| u.update.len())];
	out.par_chunks_mut(BLOCK).enumerate().for_each(|(b, slot)| {
		let width = slot.len();
		let mut matrix = vec![0f32; n * width];
		for (u, row) in updates.iter().zip(matrix.chunks_mut(width)) {
			u.update.write_range(b * BLOCK, row);
			if let Some(scale) = u.scale {
				for x in row.iter_mut() {
					*x = (f64::from(*x) * scale) as f32;
				}
			}
		}
		let (mut column, mut scratch) = (Vec::with_capacity(n), Scratch::default());
		for (j, value) in slot.iter_mut().enumerate() {
			column.clear();
			column.extend((0..n).map(|i| matrix[i * width + j]));
			*value = combine(&mut column, &mut scratch);
		}
	});
	out
}

/// The mean weighted by `samples` (one per update).
pub fn weighted_mean(updates: &[Scaled], samples: &[u64]) -> Result<Vec<f32>> {
	let total: f64 = samples.iter().map(|s| *s as f64).sum();
	if total <= 0.0 {
		return Err(Error::Aggregate("accepted updates processed zero samples".into()));
	}
	let weights: Vec<f64> = samples.iter().map(|s| *s as f64 / total).collect();
	Ok(by_coordinate(updates, |column, _| {
		column.iter().zip(&weights).fold(0f64, |acc, (x, w)| acc + w * f64::from(*x)) as f32
	}))
}

/// [`super::Rule::TrimmedMean`] of `updates`.
pub fn trimmed_mean(updates: &[Scaled], trim: usize) -> Result<Vec<f32>> {
	let n = updates.len();
	if 2 * trim >= n {
		return Err(Error::Aggregate(format!("cannot trim {trim} from each end of {n} updates")));
	}
	Ok(by_coordinate(updates, |column, scratch| {
		column.retain(|x| *x != 0.0);
		trimmed_support_mean(column, trim, n, scratch)
	}))
}

/// Per-thread room for a coordinate's trimming.
#[derive(Default)]
pub struct Scratch {
	/// Positions, partly ordered by rank.
	order: Vec<usize>,
	/// Whether each value was trimmed.
	dropped: Vec<bool>,
}

/// The trimmed mean of the values `sent` of a coordinate (its nonzero values, in the updates'
/// order) by `n` updates, on its support: up to `trim` dropped at each end (fewer when fewer
/// were sent), the rest averaged in the updates' order and weighted by the share of updates
/// that sent it. The ends are found by selection, not a sort (a round of 64 dense updates
/// spends most of its time here): values are ranked by value, then by position, so equal
/// values leave in a fixed order and which ones leave never depends on the algorithm.
fn trimmed_support_mean(sent: &[f32], trim: usize, n: usize, scratch: &mut Scratch) -> f32 {
	let m = sent.len();
	if m == 0 {
		return 0.0;
	}
	let trim = trim.min((m - 1) / 2);
	let Scratch { order, dropped } = scratch;
	dropped.clear();
	dropped.resize(m, false);
	if trim == 1 {
		// The chain's rule: one pass for the lowest (the first of equal lowest values) and
		// the highest (the last of equal highest).
		let (mut low, mut high) = (0, 0);
		for (i, x) in sent.iter().enumerate() {
			if x.total_cmp(&sent[low]).is_lt() {
				low = i;
			}
			if x.total_cmp(&sent[high]).is_ge() {
				high = i;
			}
		}
		dropped[low] = true;
		dropped[high] = true;
	} else if trim > 1 {
		let rank = |a: &usize, b: &usize| sent[*a].total_cmp(&sent[*b]).then(a.cmp(b));
		order.clear();
		order.extend(0..m);
		// The `trim` lowest end up before position `trim`; of the rest, the `trim` highest
		// after its position m − 2·trim − 1.
		order.select_nth_unstable_by(trim, rank);
		let (low, rest) = order.split_at_mut(trim);
		rest.select_nth_unstable_by(m - 2 * trim - 1, rank);
		for &i in low.iter().chain(&rest[m - 2 * trim..]) {
			dropped[i] = true;
		}
	}
	let sum: f64 = sent
		.iter()
		.zip(dropped.iter())
		.filter(|(_, gone)| !**gone)
		.map(|(x, _)| f64::from(*x))
		.sum();
	(sum / (m - 2 * trim) as f64 * m as f64 / n as f64) as f32
}
