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

/// How a block's coordinates are combined; both give the same bits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Way {
	/// Each coordinate's column in turn: every rule (the only way until rows came).
	Columns,
	/// The mean and trims of at most one (the chain's rule) row by row over the whole
	/// block, every coordinate at once: the same operations on each coordinate in the same
	/// order, in loops the compiler runs in vector registers (`bench/reports/codec.md`).
	/// Larger trims, and trims of blocks with few values sent ([`rows_pay`]), still take
	/// columns.
	Rows,
}

/// The result vector of `updates`' common length, each block of coordinates decoded into a
/// matrix of one row per update (`matrix`, `slot.len()` wide) and combined into its `slot`
/// by `combine(matrix, slot)`.
fn by_block<F>(updates: &[Scaled], combine: F) -> Vec<f32>
where
	F: Fn(&[f32], &mut [f32]) + Sync,
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
		combine(&matrix, slot);
	});
	out
}

/// The result vector, each coordinate `combine(column)` of its values in the updates' order
/// (`column` may be changed), with a thread's [`Scratch`].
fn by_coordinate<F>(updates: &[Scaled], combine: F) -> Vec<f32>
where
	F: Fn(&mut Vec<f32>, &mut Scratch) -> f32 + Sync,
{
	let n = updates.len();
	by_block(updates, |matrix, slot| columns(matrix, n, slot, &combine))
}

/// Combines `matrix` (`n` rows of `slot.len()` values) into `slot`, each coordinate
/// `combine(column)`.
fn columns<F>(matrix: &[f32], n: usize, slot: &mut [f32], combine: &F)
where
	F: Fn(&mut Vec<f32>, &mut Scratch) -> f32,
{
	let width = slot.len();
	let (mut column, mut scratch) = (Vec::with_capacity(n), Scratch::default());
	for (j, value) in slot.iter_mut().enumerate() {
		column.clear();
		column.extend((0..n).map(|i| matrix[i * width + j]));
		*value = combine(&mut column, &mut scratch);
	}
}

/// Values a block's density is sampled at: every this many coordinates.
const SAMPLE_STRIDE: usize = 16;

/// A block's (`matrix`, rows of `width` values) sent (nonzero) values among those sampled
/// every [`SAMPLE_STRIDE`]th coordinate of every row, and how many were sampled.
pub fn sampled_sent(matrix: &[f32], width: usize) -> (usize, usize) {
	let sampled = width.div_ceil(SAMPLE_STRIDE) * (matrix.len() / width);
	let sent = matrix
		.chunks_exact(width)
		.map(|row| row.iter().step_by(SAMPLE_STRIDE).filter(|x| **x != 0.0).count())
		.sum();
	(sent, sampled)
}

/// Whether a block (`matrix`, rows of `width` values) has at least one sent value per
/// coordinate ([`sampled_sent`]): below that, its columns hold so few values that combining
/// each column's sent values costs less than passes over every row (`bench/codec.sh`: rows
/// took 0.59x of columns' speed for 4 tiled updates and 0.90x for 4 top-k 32/256 ones,
/// 1.2–1.3x at one or two sent values per coordinate).
fn rows_pay(matrix: &[f32], width: usize) -> bool {
	let (sent, sampled) = sampled_sent(matrix, width);
	let rows = matrix.len() / width;
	sent * rows >= sampled
}

/// The mean weighted by `samples` (one per update).
pub fn weighted_mean(updates: &[Scaled], samples: &[u64], way: Way) -> Result<Vec<f32>> {
	let total: f64 = samples.iter().map(|s| *s as f64).sum();
	if total <= 0.0 {
		return Err(Error::Aggregate("accepted updates processed zero samples".into()));
	}
	let weights: Vec<f64> = samples.iter().map(|s| *s as f64 / total).collect();
	if way == Way::Rows {
		return Ok(by_block(updates, |matrix, slot| {
			let mut acc = vec![0f64; slot.len()];
			for (row, w) in matrix.chunks_exact(slot.len()).zip(&weights) {
				for (a, x) in acc.iter_mut().zip(row) {
					*a += w * f64::from(*x);
				}
			}
			for (value, a) in slot.iter_mut().zip(&acc) {
				*value = *a as f32;
			}
		}));
	}
	Ok(by_coordinate(updates, |column, _| {
		column.iter().zip(&weights).fold(0f64, |acc, (x, w)| acc + w * f64::from(*x)) as f32
	}))
}

/// [`super::Rule::TrimmedMean`] of `updates`.
pub fn trimmed_mean(updates: &[Scaled], trim: usize, way: Way) -> Result<Vec<f32>> {
	let n = updates.len();
	if 2 * trim >= n {
		return Err(Error::Aggregate(format!("cannot trim {trim} from each end of {n} updates")));
	}
	let column = |column: &mut Vec<f32>, scratch: &mut Scratch| {
		column.retain(|x| *x != 0.0);
		trimmed_support_mean(column, trim, n, scratch)
	};
	Ok(by_block(updates, |matrix, slot| {
		if way == Way::Rows && trim <= 1 && rows_pay(matrix, slot.len()) {
			RowTrim::new(slot.len()).combine(matrix, n, trim, slot)
		} else {
			columns(matrix, n, slot, &column)
		}
	}))
}

/// The key `f32::total_cmp` orders by: the same order as signed integers.
fn total_key(x: f32) -> i32 {
	let bits = x.to_bits() as i32;
	bits ^ ((((bits >> 31) as u32) >> 1) as i32)
}

/// [`trimmed_support_mean`] with a trim of at most one, for a whole block at once: a pass
/// over the rows counts each coordinate's sent (nonzero) values and finds its lowest (the
/// first of equal lowest) and highest (the last of equal highest), a second adds its kept
/// values in the updates' order. Per coordinate the same comparisons and additions as
/// [`trimmed_support_mean`]'s, so the same bits.
struct RowTrim {
	/// Per coordinate: values sent so far.
	sent: Vec<u32>,
	/// Per coordinate: the lowest and highest value's [`total_key`] and row.
	low: Vec<i32>,
	low_at: Vec<u32>,
	high: Vec<i32>,
	high_at: Vec<u32>,
	sum: Vec<f64>,
}

impl RowTrim {
	fn new(width: usize) -> Self {
		RowTrim {
			sent: vec![0; width],
			low: vec![0; width],
			low_at: vec![0; width],
			high: vec![0; width],
			high_at: vec![0; width],
			sum: vec![0.0; width],
		}
	}

	/// Combines `matrix` (`n` rows of `out.len()` values) into `out`.
	fn combine(self, matrix: &[f32], n: usize, trim: usize, out: &mut [f32]) {
		#[cfg(target_arch = "x86_64")]
		if std::arch::is_x86_feature_detected!("avx2") {
			// SAFETY: this CPU has AVX2, the one thing `combine_avx2` needs.
			return unsafe { self.combine_avx2(matrix, n, trim, out) };
		}
		self.combine_inline(matrix, n, trim, out);
	}

	/// [`RowTrim::combine`] compiled for AVX2: twice the coordinates a vector. Every
	/// coordinate's operations are the same whatever the vectors' width, so the bits are.
	#[cfg(target_arch = "x86_64")]
	#[target_feature(enable = "avx2")]
	unsafe fn combine_avx2(self, matrix: &[f32], n: usize, trim: usize, out: &mut [f32]) {
		self.combine_inline(matrix, n, trim, out);
	}

	#[inline(always)]
	fn combine_inline(mut self, matrix: &[f32], n: usize, trim: usize, out: &mut [f32]) {
		let width = out.len();
		for (i, row) in matrix.chunks_exact(width).enumerate() {
			self.rank_row(row, i as u32);
		}
		for (i, row) in matrix.chunks_exact(width).enumerate() {
			self.add_row(row, i as u32, trim);
		}
		for (j, value) in out.iter_mut().enumerate() {
			let m = self.sent[j] as usize;
			let t = trim.min(m.saturating_sub(1) / 2);
			*value = if m == 0 {
				0.0
			} else {
				(self.sum[j] / (m - 2 * t) as f64 * m as f64 / n as f64) as f32
			};
		}
	}

	// Without branches (`&`, `|`, selects) so that the compiler vectorizes it.
	#[inline(always)]
	fn rank_row(&mut self, row: &[f32], i: u32) {
		let width = row.len();
		let (sent, low, low_at) =
			(&mut self.sent[..width], &mut self.low[..width], &mut self.low_at[..width]);
		let (high, high_at) = (&mut self.high[..width], &mut self.high_at[..width]);
		for j in 0..width {
			let (x, key) = (row[j], total_key(row[j]));
			let (is_sent, first) = (x != 0.0, sent[j] == 0);
			let lower = is_sent & (first | (key < low[j]));
			let higher = is_sent & (first | (key >= high[j]));
			low[j] = if lower { key } else { low[j] };
			low_at[j] = if lower { i } else { low_at[j] };
			high[j] = if higher { key } else { high[j] };
			high_at[j] = if higher { i } else { high_at[j] };
			sent[j] += u32::from(is_sent);
		}
	}

	/// Adds row `i`'s kept values: sent, and (where a coordinate's trim is one: at least
	/// three sent) not its lowest or highest.
	#[inline(always)]
	fn add_row(&mut self, row: &[f32], i: u32, trim: usize) {
		let width = row.len();
		let (sent, sum) = (&self.sent[..width], &mut self.sum[..width]);
		let (low_at, high_at) = (&self.low_at[..width], &self.high_at[..width]);
		for j in 0..width {
			let trimmed = (trim == 1) & (sent[j] >= 3) & ((low_at[j] == i) | (high_at[j] == i));
			let kept = (row[j] != 0.0) & !trimmed;
			sum[j] = if kept { sum[j] + f64::from(row[j]) } else { sum[j] };
		}
	}
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

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn rows_and_columns_trim_any_block_alike() {
		// Blocks from nearly empty to full, with ties, negative zeros (not sent) and
		// columns of one, two and three sent values; trims of none and one.
		let (n, width) = (7, 700);
		let mut rng = crate::rng::Rng::new(3);
		for zeros in [0.05, 0.5, 0.9, 0.99] {
			let matrix: Vec<f32> = (0..n * width)
				.map(|_| match rng.next_f64() {
					p if p < zeros => 0.0,
					p if p < zeros + 0.01 => -0.0,
					_ => ((rng.normal() * 2.0).round() / 2.0) as f32,
				})
				.collect();
			for trim in [0, 1] {
				let column = |column: &mut Vec<f32>, scratch: &mut Scratch| {
					column.retain(|x| *x != 0.0);
					trimmed_support_mean(column, trim, n, scratch)
				};
				let (mut by_columns, mut by_rows) = (vec![0f32; width], vec![0f32; width]);
				columns(&matrix, n, &mut by_columns, &column);
				RowTrim::new(width).combine(&matrix, n, trim, &mut by_rows);
				let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
				assert_eq!(bits(&by_rows), bits(&by_columns), "{zeros} zeros, trim {trim}");
			}
			assert_eq!(rows_pay(&matrix, width), zeros < 0.8, "{zeros} zeros");
		}
	}
}
