//! The dot products of every pair of a round's updates (their Gram matrix), taken straight
//! from the updates as sent: the cheap screens need nothing else (cosines, norms, agreement
//! with the others' sum), so a trainer screens a round of N updates of P values holding N
//! blocks of values at a time per thread, not N dense vectors.
//!
//! Every pair's dot product over every coordinate is N²P/2 products: at N = 64 and 100M
//! parameters about 27 s a round on 2 cores. Sparse updates (top-k, tiles) share few
//! coordinates, so in a block whose values are mostly zero each row's nonzero values are
//! marked in a bit mask, and a pair that shares few takes only the products of the
//! coordinates both sent. Both ways add the same nonzero products in the same order to the
//! same lanes, so they give the same bits (a product with a zero adds nothing: a lane is
//! never −0), and each pair is taken whichever way costs less.

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

/// How a block's dot products are taken.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Way {
	/// A sparse block's pairs over the coordinates both sent where that costs less
	/// ([`Support`]), else over every coordinate.
	Cheapest,
	/// Every pair over every coordinate.
	EveryCoordinate,
}

impl Gram {
	/// The Gram matrix of `updates`, decoded a block of coordinates at a time on rayon's
	/// threads, each block taken the cheaper way (see the module docs). Every update must
	/// be as long as the first.
	pub fn of(updates: &[&CompressedUpdate]) -> Result<Gram> {
		Self::by_blocks(updates, Way::Cheapest)
	}

	/// The same matrix, every pair's dot product taken over every coordinate (the screens'
	/// way until sparse pairs took only their shared coordinates: `bench_codec`'s baseline).
	pub fn of_every_coordinate(updates: &[&CompressedUpdate]) -> Result<Gram> {
		Self::by_blocks(updates, Way::EveryCoordinate)
	}

	fn by_blocks(updates: &[&CompressedUpdate], way: Way) -> Result<Gram> {
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
				let (mut matrix, mut support) = (Vec::new(), Support::default());
				for start in (g * group..end).step_by(BLOCK) {
					let width = BLOCK.min(end - start);
					matrix.resize(n * width, 0f32);
					for (u, row) in updates.iter().zip(matrix.chunks_mut(width)) {
						u.write_range(start, row);
					}
					let sparse = way == Way::Cheapest && support.load(&matrix, width, n);
					add_block(&matrix, width, n, &mut dots, sparse.then_some(&support));
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

	/// Its dot products' bits, row by row (two matrices with NaNs compare equal by these).
	pub fn bits(&self) -> Vec<u64> {
		self.dots.iter().map(|d| d.to_bits()).collect()
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
/// upper triangle of `dots`, each pair over the coordinates both sent where `support`
/// (the block's) says that costs less.
fn add_block(matrix: &[f32], width: usize, n: usize, dots: &mut [f64], support: Option<&Support>) {
	for i in 0..n {
		let a = &matrix[i * width..(i + 1) * width];
		for j in i..n {
			let b = &matrix[j * width..(j + 1) * width];
			dots[i * n + j] += match support {
				Some(support) => support.dot(i, j, a, b),
				None => dot(a, b),
			};
		}
	}
}

/// Lanes a dot product is summed in: independent sums the compiler can keep in vector
/// registers (one running sum is a chain of dependent additions, several times slower).
const LANES: usize = 8;

/// Values a block's density is sampled at: every this many coordinates.
const SAMPLE_STRIDE: usize = 16;

/// Fewest updates whose block is marked: marking costs a pass over every value, which is
/// more than the few pairs of a small round save (`bench/codec.sh` without this bound:
/// 0.72–0.79x at N = 4).
const MIN_MARKED: usize = 8;

/// What one product over the coordinates two rows both sent costs against one of the
/// products over every coordinate (those run in vector registers; these are found bit by
/// bit). Only speed depends on it: both ways give the same bits. Measured by
/// `bench/codec.sh`.
const SHARED_PRODUCT_COST: usize = 12;

/// A block's rows as bit masks of their nonzero values (bit b of word w: coordinate
/// 64w + b), and whether each row's values are all finite.
#[derive(Default)]
struct Support {
	words: usize,
	/// N rows × `words`.
	masks: Vec<u64>,
	finite: Vec<bool>,
}

impl Support {
	/// Marks the block `matrix` (`n` rows of `width` values) when it has at least
	/// [`MIN_MARKED`] rows and its sampled values (every [`SAMPLE_STRIDE`]th coordinate)
	/// are mostly zero; false, marking nothing, when not.
	fn load(&mut self, matrix: &[f32], width: usize, n: usize) -> bool {
		if n < MIN_MARKED {
			return false;
		}
		let sampled = width.div_ceil(SAMPLE_STRIDE) * n;
		let nonzero = (0..n)
			.flat_map(|i| matrix[i * width..(i + 1) * width].iter().step_by(SAMPLE_STRIDE))
			.filter(|x| **x != 0.0)
			.count();
		// Mostly zero: at most a quarter of the sampled values sent.
		if nonzero * 4 > sampled {
			return false;
		}
		self.words = width.div_ceil(64);
		self.masks.clear();
		self.masks.resize(n * self.words, 0);
		self.finite.clear();
		for (row, masks) in matrix.chunks_exact(width).zip(self.masks.chunks_mut(self.words)) {
			let mut finite = true;
			for (values, mask) in row.chunks(64).zip(masks.iter_mut()) {
				for (bit, x) in values.iter().enumerate() {
					*mask |= u64::from(*x != 0.0) << bit;
					finite &= x.is_finite();
				}
			}
			self.finite.push(finite);
		}
		true
	}

	/// The dot product of rows `i` and `j` (whose values are `a` and `b`), bit for bit
	/// [`dot`]'s: over the coordinates both sent when they share few and their values are
	/// finite (a zero times an infinity is not zero), else [`dot`] itself.
	fn dot(&self, i: usize, j: usize, a: &[f32], b: &[f32]) -> f64 {
		if !(self.finite[i] && self.finite[j]) {
			return dot(a, b);
		}
		let (mi, mj) = (
			&self.masks[i * self.words..][..self.words],
			&self.masks[j * self.words..][..self.words],
		);
		let shared: usize = mi.iter().zip(mj).map(|(x, y)| (x & y).count_ones() as usize).sum();
		if shared * SHARED_PRODUCT_COST >= a.len() {
			return dot(a, b);
		}
		// Coordinate 64w + bit goes to lane bit mod LANES, as in `dot` (64 is a multiple of
		// LANES), in coordinate order.
		let mut lanes = [0f64; LANES];
		for (w, (x, y)) in mi.iter().zip(mj).enumerate() {
			let mut both = x & y;
			while both != 0 {
				let bit = both.trailing_zeros() as usize;
				let k = w * 64 + bit;
				lanes[bit % LANES] += f64::from(a[k]) * f64::from(b[k]);
				both &= both - 1;
			}
		}
		lanes.iter().sum()
	}
}

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

	fn sent(scheme: &Compression, dense: &[Vec<f32>]) -> Vec<CompressedUpdate> {
		let layout = Layout::rows(dense[0].len(), 1024);
		dense.iter().map(|d| compressor(scheme, &layout).unwrap().compress(d).unwrap()).collect()
	}

	#[test]
	fn sparse_pairs_take_only_their_shared_coordinates_with_the_same_bits() {
		let len = BLOCK * BLOCKS_PER_GROUP + BLOCK + 77;
		let dense: Vec<Vec<f32>> = (0..16).map(|s| random(20 + s, len)).collect();
		let topk = Compression::TopK { chunk: 256, k: 32, value_bits: 1 };
		let tiles = Compression::Tiles { k: 64 };
		let int8 = Compression::Int8 { chunk: 256 };
		// One scheme a round, and a round of sparse and dense updates together (the
		// adaptive ladder's levels differ between senders).
		let mut mixed = sent(&topk, &dense[..8]);
		mixed.extend(sent(&int8, &dense[8..9]));
		mixed.extend(sent(&tiles, &dense[9..]));
		let rounds = [sent(&topk, &dense), sent(&tiles, &dense), sent(&int8, &dense), mixed];
		for (r, round) in rounds.iter().enumerate() {
			for n in [1, 2, 3, 16] {
				let refs: Vec<&CompressedUpdate> = round[..n].iter().collect();
				let (cheapest, every) =
					(Gram::of(&refs).unwrap(), Gram::of_every_coordinate(&refs).unwrap());
				assert_eq!(cheapest.bits(), every.bits(), "round {r}, {n} updates");
			}
		}
		// Which way a block of 16 goes: a sparse one is marked and its pairs share few
		// coordinates, so they take only those; a dense one is not marked.
		let block = |round: &[CompressedUpdate]| {
			let mut matrix = vec![0f32; round.len() * BLOCK];
			for (u, row) in round.iter().zip(matrix.chunks_mut(BLOCK)) {
				u.write_range(0, row);
			}
			matrix
		};
		let mut support = Support::default();
		let words = BLOCK / 64;
		for round in &rounds[..2] {
			assert!(support.load(&block(round), BLOCK, 16), "a sparse block");
			let (first, second) = support.masks.split_at(words);
			let shared: u32 = first.iter().zip(second).map(|(x, y)| (x & y).count_ones()).sum();
			assert!((shared as usize) * SHARED_PRODUCT_COST < BLOCK, "{shared} shared");
		}
		assert!(!support.load(&block(&rounds[2]), BLOCK, 16), "an int8 block is dense");
		// A row with a value that is not finite takes every coordinate with every other
		// (zero times infinity is not zero).
		let mut odd = block(&rounds[0]);
		let zero = odd.iter().position(|x| *x == 0.0).unwrap();
		for bad in [f32::INFINITY, f32::NAN] {
			odd[zero] = bad;
			assert!(support.load(&odd, BLOCK, 16));
			assert!(!support.finite[0] && support.finite[1..].iter().all(|f| *f), "{bad}");
			let row = |i: usize| &odd[i * BLOCK..(i + 1) * BLOCK];
			for j in 0..16 {
				let (sparse, dense) = (support.dot(0, j, row(0), row(j)), dot(row(0), row(j)));
				assert_eq!(sparse.to_bits(), dense.to_bits(), "{bad} with row {j}");
			}
		}
		// Such a round still gives the same bits both ways, its NaNs included.
		let mut round = rounds[0].clone();
		let mut values = round[3].decompress();
		values[BLOCK + 5] = f32::INFINITY;
		round[3] = CompressedUpdate::None(values);
		let refs: Vec<&CompressedUpdate> = round.iter().collect();
		let (cheapest, every) =
			(Gram::of(&refs).unwrap(), Gram::of_every_coordinate(&refs).unwrap());
		assert!(cheapest.dots.iter().any(|d| d.is_nan()), "zero times infinity");
		assert_eq!(cheapest.bits(), every.bits());
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
