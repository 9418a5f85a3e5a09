//! The dot products of every pair of a round's updates (their Gram matrix), taken straight
//! from the updates as sent: the cheap screens need nothing else (cosines, norms, agreement
//! with the others' sum), so a trainer screens a round of N updates of P values holding N
//! blocks of values at a time per thread, not N dense vectors.
//!
//! Every pair's dot product over every coordinate is N²P/2 products: at N = 64 and 100M
//! parameters about 25 s a round on 2 cores over decoded values (`bench/reports/codec.md`). Sparse updates (top-k, tiles) share few
//! coordinates, so in a block whose values are mostly zero each row's nonzero values are
//! marked in a bit mask, and a pair that shares few takes only the products of the
//! coordinates both sent. Both ways add the same nonzero products in the same order to the
//! same lanes, so they give the same bits (a product with a zero adds nothing: a lane is
//! never −0), and each pair is taken whichever way costs less.
//!
//! Dense int8 updates share every coordinate, so a pair of them (of one chunk size) takes its
//! products from their codes instead: per chunk, the codes' integer dot product (exact, so its
//! order does not matter) times the two scales. That is the dot product of the values the
//! codes stand for, rounded once per chunk, where the decoded values' is of values already
//! rounded to f32: the two differ in the last bits, and every trainer takes it the same way.

use rayon::prelude::*;

use crate::{
	aggregate::{sampled_sent, BLOCK},
	compress::{int8::Int8Update, CompressedUpdate},
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
	/// A pair of int8 updates from their codes ([`Codes`]); a sparse block's pairs over the
	/// coordinates both sent where that costs less ([`Support`]); else over every coordinate.
	Cheapest,
	/// Every pair over every coordinate of its decoded values.
	EveryCoordinate,
}

impl Gram {
	/// The Gram matrix of `updates`, decoded a block of coordinates at a time on rayon's
	/// threads, each block taken the cheaper way (see the module docs). Every update must
	/// be as long as the first.
	pub fn of(updates: &[&CompressedUpdate]) -> Result<Gram> {
		Self::by_blocks(updates, Way::Cheapest)
	}

	/// The matrix of the decoded values, every pair's dot product taken over every
	/// coordinate (the screens' way until sparse pairs took only their shared coordinates
	/// and int8 pairs their codes: `bench_codec`'s baseline). The same bits as [`Gram::of`]
	/// for a round without two int8 updates; within rounding of them with.
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
		let by_codes = way == Way::Cheapest && updates.iter().any(|u| int8(u).is_some());
		let partials: Vec<Vec<f64>> = (0..groups)
			.into_par_iter()
			.map(|g| {
				let end = ((g + 1) * group).min(len);
				let mut dots = vec![0f64; n * n];
				let (mut values, mut support) = (Vec::new(), Support::default());
				let mut codes = by_codes.then(|| Codes::new(updates));
				let decoded = codes.as_ref().is_none_or(Codes::leaves_pairs);
				for start in (g * group..end).step_by(BLOCK) {
					let width = BLOCK.min(end - start);
					if decoded {
						values.resize(n * width, 0f32);
						for (u, row) in updates.iter().zip(values.chunks_mut(width)) {
							u.write_range(start, row);
						}
					}
					if let Some(codes) = codes.as_mut() {
						codes.load(start, width);
					}
					let sparse = decoded && way == Way::Cheapest && support.load(&values, width, n);
					let block = Block {
						n,
						width,
						values: &values,
						support: sparse.then_some(&support),
						codes: codes.as_ref(),
					};
					block.add_to(&mut dots);
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

/// One block of `width` coordinates of a round's `n` updates, as the pairs read it.
struct Block<'a> {
	n: usize,
	width: usize,
	/// The decoded values, `n` rows of `width` (empty when every pair is in `codes`).
	values: &'a [f32],
	/// The block's nonzero values, when it is sparse.
	support: Option<&'a Support>,
	/// The block's int8 codes, when the round has int8 updates and this is [`Way::Cheapest`].
	codes: Option<&'a Codes<'a>>,
}

impl Block<'_> {
	/// Adds the dot product of every pair of rows to the upper triangle of `dots`: the pairs
	/// of int8 updates of one chunk size from their codes, the others from their values.
	fn add_to(&self, dots: &mut [f64]) {
		if let Some(codes) = self.codes {
			codes.add_pairs(dots);
		}
		for i in 0..self.n {
			for j in i..self.n {
				if !self.codes.is_some_and(|codes| codes.pairs(i, j)) {
					dots[i * self.n + j] += self.dot(i, j);
				}
			}
		}
	}

	/// Rows `i` and `j`'s dot product over the coordinates both sent where `support` says
	/// that costs less, else over every coordinate.
	fn dot(&self, i: usize, j: usize) -> f64 {
		let row = |i: usize| &self.values[i * self.width..(i + 1) * self.width];
		match self.support {
			Some(support) => support.dot(i, j, row(i), row(j)),
			None => dot(row(i), row(j)),
		}
	}
}

// A block's integer dot product cannot overflow.
const _: () = assert!(BLOCK * 127 * 127 <= i32::MAX as usize);

/// The int8 updates among a round's, and a block of their codes widened to i16 (whose
/// products the compiler multiplies and adds pairwise in vector registers: several times
/// the f64 products of the decoded values, `bench/reports/codec.md`).
struct Codes<'a> {
	/// Per update: itself when it is int8.
	rows: Vec<Option<&'a Int8Update>>,
	/// The block's codes, one row of `width` per update (zeros for one that is not int8).
	block: Vec<i16>,
	start: usize,
	width: usize,
}

impl<'a> Codes<'a> {
	fn new(updates: &[&'a CompressedUpdate]) -> Self {
		let rows = updates.iter().map(|u| int8(u)).collect();
		Codes { rows, block: Vec::new(), start: 0, width: 0 }
	}

	/// Whether some pair is not two int8 updates of one chunk size (so the decoded values
	/// are needed too).
	fn leaves_pairs(&self) -> bool {
		let chunk = |r: &Option<&Int8Update>| r.map(Int8Update::chunk);
		let first = self.rows.first().and_then(chunk);
		self.rows.iter().any(|r| r.is_none() || chunk(r) != first)
	}

	/// Widens the codes of coordinates `start..start + width`.
	fn load(&mut self, start: usize, width: usize) {
		(self.start, self.width) = (start, width);
		self.block.clear();
		for row in &self.rows {
			match row {
				Some(u) => {
					self.block.extend(u.codes()[start..start + width].iter().map(|&q| i16::from(q)))
				}
				None => self.block.resize(self.block.len() + width, 0),
			}
		}
	}

	/// Whether rows `i` and `j` are both int8 of one chunk size (their pair is taken here).
	fn pairs(&self, i: usize, j: usize) -> bool {
		match (self.rows[i], self.rows[j]) {
			(Some(a), Some(b)) => a.chunk() == b.chunk(),
			_ => false,
		}
	}

	/// Adds the dot products of the block's pairs it takes ([`Codes::pairs`]) to the upper
	/// triangle of `dots`, [`TILE`] coordinates of every pair at a time (a tile of every
	/// row stays in the core's cache while its pairs read it).
	fn add_pairs(&self, dots: &mut [f64]) {
		#[cfg(target_arch = "x86_64")]
		if std::arch::is_x86_feature_detected!("avx2") {
			// SAFETY: this CPU has AVX2, the one thing `add_pairs_avx2` needs.
			unsafe { self.add_pairs_avx2(dots) };
			return;
		}
		self.add_pairs_inline(dots);
	}

	/// [`Codes::add_pairs`] compiled for AVX2: 16 products a vector instead of 8. Integer
	/// sums are exact, so the bits are the same on every CPU.
	#[cfg(target_arch = "x86_64")]
	#[target_feature(enable = "avx2")]
	unsafe fn add_pairs_avx2(&self, dots: &mut [f64]) {
		self.add_pairs_inline(dots);
	}

	#[inline(always)]
	fn add_pairs_inline(&self, dots: &mut [f64]) {
		let n = self.rows.len();
		for lo in (0..self.width).step_by(TILE) {
			let hi = (lo + TILE).min(self.width);
			for i in 0..n {
				for j in i..n {
					if self.pairs(i, j) {
						dots[i * n + j] += self.dot(i, j, lo..hi);
					}
				}
			}
		}
	}

	/// The dot product of rows `i` and `j` (a pair it takes) over the block's coordinates
	/// `range`: each chunk's part's integer dot product, exact in i32 (at most `BLOCK`
	/// products of at most 127²), times its two scales, summed in coordinate order.
	#[inline(always)]
	fn dot(&self, i: usize, j: usize, range: std::ops::Range<usize>) -> f64 {
		let (a, b) = (self.rows[i].expect("an int8 row"), self.rows[j].expect("an int8 row"));
		let chunk = a.chunk() as usize;
		let row = |i: usize| &self.block[i * self.width..(i + 1) * self.width];
		let (qa, qb) = (row(i), row(j));
		let mut sum = 0f64;
		let mut at = range.start;
		while at < range.end {
			let c = (self.start + at) / chunk;
			let end = ((c + 1) * chunk - self.start).min(range.end);
			let ints: i32 = qa[at..end]
				.iter()
				.zip(&qb[at..end])
				.map(|(x, y)| i32::from(*x) * i32::from(*y))
				.sum();
			let scales = f64::from(a.scales()[c]) * f64::from(b.scales()[c]);
			sum += scales * f64::from(ints);
			at = end;
		}
		sum
	}
}

/// Coordinates of every int8 row a block's code pairs take at a time: 64 rows' tiles (256
/// KiB of i16) stay in a core's cache, where a whole block's rows (2 MiB) would be read
/// from memory again for every row they pair with.
const TILE: usize = 2048;

/// `update` when it is int8.
fn int8(update: &CompressedUpdate) -> Option<&Int8Update> {
	match update {
		CompressedUpdate::Int8(u) => Some(u),
		_ => None,
	}
}

/// Lanes a dot product is summed in: independent sums the compiler can keep in vector
/// registers (one running sum is a chain of dependent additions, several times slower).
const LANES: usize = 8;

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
	/// [`MIN_MARKED`] rows and its sampled values ([`sampled_sent`])
	/// are mostly zero; false, marking nothing, when not.
	fn load(&mut self, matrix: &[f32], width: usize, n: usize) -> bool {
		if n < MIN_MARKED {
			return false;
		}
		let (nonzero, sampled) = sampled_sent(&matrix[..n * width], width);
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
		// Without two int8 updates (their pairs take their codes: the next test).
		for (r, round) in rounds[..2].iter().enumerate() {
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

	/// The dot products of the values int8 updates stand for, each exact product summed in
	/// f64 one coordinate at a time.
	fn exact(updates: &[CompressedUpdate]) -> Vec<Vec<f64>> {
		let value = |u: &CompressedUpdate, k: usize| match u {
			CompressedUpdate::Int8(u) => {
				f64::from(u.codes()[k]) * f64::from(u.scales()[k / u.chunk() as usize])
			}
			other => f64::from(other.decompress()[k]),
		};
		let pair = |a: &CompressedUpdate, b: &CompressedUpdate| -> f64 {
			(0..a.len()).map(|k| value(a, k) * value(b, k)).sum()
		};
		updates.iter().map(|a| updates.iter().map(|b| pair(a, b)).collect()).collect()
	}

	#[test]
	fn int8_pairs_take_their_codes() {
		// Chunks that straddle blocks (1000 does not divide a block), chunks of two sizes in
		// one round, and an update of another scheme beside them.
		let len = BLOCK * 2 + 3001;
		let dense: Vec<Vec<f32>> = (0..9).map(|s| random(40 + s, len)).collect();
		let mut round = sent(&Compression::Int8 { chunk: 1000 }, &dense[..6]);
		round.extend(sent(&Compression::Int8 { chunk: 256 }, &dense[6..8]));
		round.extend(sent(&Compression::TopK { chunk: 256, k: 32, value_bits: 3 }, &dense[8..]));
		let want = exact(&round);
		for n in [2, 6, 9] {
			let refs: Vec<&CompressedUpdate> = round[..n].iter().collect();
			let (codes, decoded) =
				(Gram::of(&refs).unwrap(), Gram::of_every_coordinate(&refs).unwrap());
			for (i, want) in want.iter().enumerate().take(n) {
				for (j, want) in want.iter().enumerate().take(n) {
					let scale = codes.norm(i) * codes.norm(j);
					let off = |gram: &Gram| (gram.dot(i, j) - want).abs() / scale;
					assert!(off(&decoded) < 1e-8, "{n}: {i} {j}: {}", off(&decoded));
					// A pair of one chunk size from its codes: nearer the exact value than
					// the decoded values (rounded to f32 before their products); any other
					// pair from its decoded values.
					let by_codes = (i < 6 && j < 6) || ((6..8).contains(&i) && (6..8).contains(&j));
					if by_codes {
						assert!(off(&codes) < 1e-12, "{n}: {i} {j}: {}", off(&codes));
					} else {
						assert_eq!(codes.dot(i, j).to_bits(), decoded.dot(i, j).to_bits());
					}
				}
			}
		}
		// A round of int8 updates alone reads no decoded values, and gives the same matrix.
		let refs: Vec<&CompressedUpdate> = round[..6].iter().collect();
		assert!(!Codes::new(&refs).leaves_pairs() && !Codes::new(&refs[..1]).leaves_pairs());
		assert!(Codes::new(&round.iter().collect::<Vec<_>>()).leaves_pairs());
		let alone = Gram::of(&refs).unwrap();
		let all = Gram::of(&round.iter().collect::<Vec<_>>()).unwrap();
		for i in 0..6 {
			for j in 0..6 {
				assert_eq!(alone.dot(i, j).to_bits(), all.dot(i, j).to_bits(), "{i} {j}");
			}
		}
	}

	#[test]
	fn int8_pairs_give_the_same_bits_with_vectors_of_any_width() {
		let dense: Vec<Vec<f32>> = (0..5).map(|s| random(60 + s, BLOCK)).collect();
		let round = sent(&Compression::Int8 { chunk: 1000 }, &dense);
		let refs: Vec<&CompressedUpdate> = round.iter().collect();
		let mut codes = Codes::new(&refs);
		codes.load(0, BLOCK);
		let (mut dispatched, mut plain) = (vec![0f64; 25], vec![0f64; 25]);
		codes.add_pairs(&mut dispatched);
		codes.add_pairs_inline(&mut plain);
		let bits = |v: &[f64]| v.iter().map(|d| d.to_bits()).collect::<Vec<_>>();
		assert_eq!(bits(&dispatched), bits(&plain));
		assert!(plain[1] != 0.0 && plain[5] == 0.0, "the upper triangle only");
	}

	#[test]
	fn the_same_bits_on_any_thread_count() {
		let len = 3 * BLOCK * BLOCKS_PER_GROUP + 5;
		let dense: Vec<Vec<f32>> = (0..3).map(|s| random(10 + s, len)).collect();
		let plain: Vec<CompressedUpdate> =
			dense.iter().cloned().map(CompressedUpdate::None).collect();
		for round in [plain, sent(&Compression::Int8 { chunk: 1000 }, &dense)] {
			let refs: Vec<&CompressedUpdate> = round.iter().collect();
			let on = |threads| {
				let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
				pool.install(|| Gram::of(&refs).unwrap())
			};
			assert_eq!(on(1), on(3));
		}
	}

	#[test]
	fn updates_of_different_lengths_are_refused() {
		let (a, b) = (CompressedUpdate::None(vec![1.0; 4]), CompressedUpdate::None(vec![1.0; 5]));
		let err = Gram::of(&[&a, &b]).unwrap_err().to_string();
		assert!(err.contains("update 1 has 5 values where the first has 4"), "{err}");
		assert!(Gram::of(&[]).unwrap().is_empty());
	}
}
