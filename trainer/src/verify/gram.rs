//! The dot products of every pair of a round's updates (their Gram matrix), taken straight
//! from the updates as sent: the cheap screens need nothing else (cosines, norms, agreement
//! with the others' sum), so a trainer screens a round of N updates of P values holding N
//! blocks of values at a time per thread, not N dense vectors.

use rayon::prelude::*;

use crate::{
	aggregate::BLOCK,
	compress::CompressedUpdate,
	error::{Error, Result},
};

/// Blocks summed one after another into one partial matrix; partials are then added in
/// their order. The grouping is fixed, not the thread count's, so every trainer's screens
/// get the same bits whatever its cores (the screens' suspects decide who replays what, and
/// a suspect is replayed only by its designated replayers, who must agree on it).
const BLOCKS_PER_GROUP: usize = 8;

/// The dot products of every pair of N updates, in f64 (the default: of none).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gram {
	n: usize,
	/// Row-major N × N, symmetric.
	dots: Vec<f64>,
}

impl Gram {
	/// The Gram matrix of `updates`, decoded a block of coordinates at a time on rayon's
	/// threads. Every update must be as long as the first.
	pub fn of(updates: &[&CompressedUpdate]) -> Result<Gram> {
		let n = updates.len();
		let len = updates.first().map_or(0, |u| u.len());
		if let Some(odd) = updates.iter().position(|u| u.len() != len) {
			return Err(Error::Layout(format!(
				"screening a round whose update {odd} has {} values where the first has {len}",
				updates[odd].len()
			)));
		}
		let group = BLOCK * BLOCKS_PER_GROUP;
		let groups = len.div_ceil(group);
		let partials: Vec<Vec<f64>> = (0..groups)
			.into_par_iter()
			.map(|g| {
				let end = ((g + 1) * group).min(len);
				let mut dots = vec![0f64; n * n];
				let mut matrix = Vec::new();
				for start in (g * group..end).step_by(BLOCK) {
					let width = BLOCK.min(end - start);
					matrix.resize(n * width, 0f32);
					for (u, row) in updates.iter().zip(matrix.chunks_mut(width)) {
						u.write_range(start, row);
					}
					add_block(&matrix, width, n, &mut dots);
				}
				dots
			})
			.collect();
		let mut dots = vec![0f64; n * n];
		for partial in &partials {
			for (d, p) in dots.iter_mut().zip(partial) {
				*d += p;
			}
		}
		// The lower triangle mirrors the upper one.
		for i in 0..n {
			for j in 0..i {
				dots[i * n + j] = dots[j * n + i];
			}
		}
		Ok(Gram { n, dots })
	}

	/// Updates it covers.
	pub fn len(&self) -> usize {
		self.n
	}

	/// Whether it covers none.
	pub fn is_empty(&self) -> bool {
		self.n == 0
	}

	/// The dot product of updates `i` and `j`.
	pub fn dot(&self, i: usize, j: usize) -> f64 {
		self.dots[i * self.n + j]
	}

	/// Update `i`'s Euclidean norm.
	pub fn norm(&self, i: usize) -> f64 {
		self.dot(i, i).max(0.0).sqrt()
	}

	/// The cosine of updates `i` and `j` (0 when either is zero).
	pub fn cosine(&self, i: usize, j: usize) -> f64 {
		let norms = self.norm(i) * self.norm(j);
		if norms == 0.0 {
			return 0.0;
		}
		self.dot(i, j) / norms
	}

	/// The cosine of update `i` with the sum of all the others (0 when either is zero).
	pub fn cosine_with_others(&self, i: usize) -> f64 {
		let others = |j: &usize| *j != i;
		let dot: f64 = (0..self.n).filter(others).map(|j| self.dot(i, j)).sum();
		let sum_sq: f64 = (0..self.n)
			.filter(others)
			.map(|j| (0..self.n).filter(others).map(|k| self.dot(j, k)).sum::<f64>())
			.sum();
		let norms = self.norm(i) * sum_sq.max(0.0).sqrt();
		if norms == 0.0 {
			return 0.0;
		}
		dot / norms
	}
}

/// Adds the dot products of a block's rows (`n` rows of `width` values in `matrix`) to the
/// upper triangle of `dots`.
fn add_block(matrix: &[f32], width: usize, n: usize, dots: &mut [f64]) {
	for i in 0..n {
		let a = &matrix[i * width..(i + 1) * width];
		for j in i..n {
			dots[i * n + j] += dot(a, &matrix[j * width..(j + 1) * width]);
		}
	}
}

/// Lanes a dot product is summed in: independent sums the compiler can keep in vector
/// registers (one running sum is a chain of dependent additions, several times slower).
const LANES: usize = 8;

/// The dot product of `a` and `b` in f64: value k goes to lane k mod [`LANES`], the lanes
/// are added in order, so the bits depend only on the values.
fn dot(a: &[f32], b: &[f32]) -> f64 {
	let mut lanes = [0f64; LANES];
	let (a_body, b_body) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
	let (a_tail, b_tail) = (a_body.remainder(), b_body.remainder());
	for (x, y) in a_body.zip(b_body) {
		for k in 0..LANES {
			lanes[k] += f64::from(x[k]) * f64::from(y[k]);
		}
	}
	for (k, (x, y)) in a_tail.iter().zip(b_tail).enumerate() {
		lanes[k] += f64::from(*x) * f64::from(*y);
	}
	lanes.iter().sum()
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		compress::{compressor, Layout},
		rng::Rng,
		verify::cosine,
	};
	use grid_primitives::job::Compression;

	fn random(seed: u64, len: usize) -> Vec<f32> {
		let mut rng = Rng::new(seed);
		(0..len).map(|_| rng.normal() as f32).collect()
	}

	#[test]
	fn the_gram_matrix_of_sent_updates_is_that_of_their_dense_values() {
		// Lengths straddling blocks and groups, every scheme.
		let len = BLOCK * BLOCKS_PER_GROUP + BLOCK + 77;
		let dense: Vec<Vec<f32>> = (0..4).map(|s| random(s, len)).collect();
		let schemes = [
			Compression::None,
			Compression::Int8 { chunk: 256 },
			Compression::TopK { chunk: 64, k: 8, value_bits: 3 },
			Compression::Tiles { k: 64 },
		];
		for scheme in schemes {
			let sent: Vec<CompressedUpdate> = dense
				.iter()
				.map(|d| compressor(&scheme, &Layout::rows(len, 100)).unwrap().compress(d).unwrap())
				.collect();
			let refs: Vec<&CompressedUpdate> = sent.iter().collect();
			let gram = Gram::of(&refs).unwrap();
			let values: Vec<Vec<f32>> = sent.iter().map(CompressedUpdate::decompress).collect();
			for i in 0..4 {
				for j in 0..4 {
					let want = cosine(&values[i], &values[j]);
					assert!((gram.cosine(i, j) - want).abs() < 1e-9, "{scheme:?} {i} {j}");
				}
				assert!((gram.norm(i) - sent[i].norm()).abs() < 1e-6 * gram.norm(i));
				let others: Vec<f32> = (0..len)
					.map(|k| (0..4).filter(|j| *j != i).map(|j| values[j][k]).sum())
					.collect();
				let want = cosine(&values[i], &others);
				assert!((gram.cosine_with_others(i) - want).abs() < 1e-6, "{scheme:?} {i}");
			}
		}
	}

	#[test]
	fn the_same_bits_on_any_thread_count() {
		let len = 3 * BLOCK * BLOCKS_PER_GROUP + 5;
		let sent: Vec<CompressedUpdate> =
			(0..3).map(|s| CompressedUpdate::None(random(10 + s, len))).collect();
		let refs: Vec<&CompressedUpdate> = sent.iter().collect();
		let on = |threads| {
			let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
			pool.install(|| Gram::of(&refs).unwrap())
		};
		assert_eq!(on(1), on(3));
	}

	#[test]
	fn updates_of_different_lengths_are_refused() {
		let (a, b) = (CompressedUpdate::None(vec![1.0; 4]), CompressedUpdate::None(vec![1.0; 5]));
		let err = Gram::of(&[&a, &b]).unwrap_err().to_string();
		assert!(err.contains("update 1 has 5 values where the first has 4"), "{err}");
		assert!(Gram::of(&[]).unwrap().is_empty());
	}
}
