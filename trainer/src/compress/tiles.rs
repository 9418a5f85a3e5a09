//! SparseLoCo's codec ([`Compression::Tiles`]): every matrix of the model is cut into
//! [`TILE`] × [`TILE`] tiles, each keeping its `k` largest magnitudes; the kept values of a
//! tensor are sent as 2-bit codes against four centroids of that tensor, and whatever the
//! update leaves out goes to the error-feedback memory. Vectors (biases, norms) and tensors
//! smaller than one tile are sent densely at 8 bits, which their size makes cheap.
//!
//! Tiles follow the matrix (rows and columns of one tensor), not runs of the flat vector, so a
//! tile never straddles two tensors and a row's outliers compete with their neighbours only.
//! A tile at a matrix's right or bottom edge holds fewer values and keeps
//! ⌈k · values / TILE²⌉ of them.
//!
//! The 2-bit quantizer is statistical: a code is the value's sign and whether its magnitude
//! reaches the median kept magnitude of its tensor, and each of the four classes decodes to
//! the mean of the values in it (so the class's sum is sent exactly; the error memory keeps
//! each value's difference from its class mean).
//!
//! Payload: k (u32), the tensor count (u32), each tensor's rows and columns (u32 each), then
//! each tensor's body: dense ones an f32 scale and one i8 per value (value = scale · code,
//! codes in −127..=127); sparse ones their four centroids (f32; class = sign · 2 + large),
//! then a bit stream (see [`super::bits`]) zero-padded to a byte: tile after tile in
//! row-major order, the tile's kept positions (row-major within the tile, increasing) as
//! Rice-coded gaps, then their 2-bit codes.

use grid_primitives::job::{Compression, TILE};
use rayon::prelude::*;

use super::{
	bits::{rice_bits, BitReader, BitWriter},
	layout::{Layout, Matrix},
	topk::largest,
	Reader,
};
use crate::error::{Error, Result};

const SIDE: usize = TILE as usize;
/// Values in a full tile.
const FULL: usize = SIDE * SIDE;
/// Levels on each side of zero of a dense tensor's 8-bit codes.
const DENSE_LEVELS: f32 = 127.0;

/// Most values in one tensor (coordinates within a tensor are u32).
pub const MAX_TENSOR: usize = u32::MAX as usize;

/// Whether a tensor is sent densely: a vector, or smaller than one tile.
fn is_dense(m: Matrix) -> bool {
	m.rows < 2 || m.cols < 2 || m.numel() < FULL
}

/// Values kept in a tile of `values` values (`FULL` for a whole tile).
fn kept_in(values: usize, k: usize) -> usize {
	(k * values).div_ceil(FULL).clamp(1, values)
}

/// The tiles of a matrix in row-major order: for each, its first row and column and its
/// height and width.
fn tiles(m: Matrix) -> impl Iterator<Item = (usize, usize, usize, usize)> {
	(0..m.rows.div_ceil(SIDE)).flat_map(move |ti| {
		(0..m.cols.div_ceil(SIDE)).map(move |tj| {
			let (r, c) = (ti * SIDE, tj * SIDE);
			(r, c, SIDE.min(m.rows - r), SIDE.min(m.cols - c))
		})
	})
}

/// Where a value of a matrix lies in its tiles: the tile's index in row-major order, then the
/// value's position in the tile (row-major within it): the order of the bit stream.
fn tile_order(m: Matrix, coord: u32) -> (usize, u32) {
	let (row, col) = (coord as usize / m.cols, coord as usize % m.cols);
	let tile = (row / SIDE) * m.cols.div_ceil(SIDE) + col / SIDE;
	let width = SIDE.min(m.cols - col / SIDE * SIDE);
	(tile, ((row % SIDE) * width + col % SIDE) as u32)
}

/// One tensor of an update.
#[derive(Clone, Debug, PartialEq)]
enum Body {
	/// Every value at 8 bits: `scale · code`.
	Dense { scale: f32, codes: Vec<i8> },
	/// Kept values by coordinate within the tensor (increasing; a tensor holds at most
	/// [`MAX_TENSOR`] values), each with its class: 5 bytes a value, which ranges and norms
	/// read without the dense vector.
	Sparse { centroids: [f32; 4], coords: Vec<u32>, classes: Vec<u8> },
}

#[derive(Clone, Debug, PartialEq)]
struct Tensor {
	offset: usize,
	shape: Matrix,
	body: Body,
}

/// An update in the tiled codec.
#[derive(Clone, Debug, PartialEq)]
pub struct TilesUpdate {
	len: usize,
	k: usize,
	tensors: Vec<Tensor>,
}

fn check_k(k: usize) -> Result<(), String> {
	if k == 0 || k > FULL {
		return Err(format!("tiles keep 1 to {FULL} values each, not {k}"));
	}
	Ok(())
}

/// Refuses a k outside 1..=4,096 or a layout with a tensor over [`MAX_TENSOR`] values.
pub(super) fn check_settings(k: u32, layout: &Layout) -> Result<()> {
	check_k(k as usize).map_err(Error::Config)?;
	if let Some(m) = layout.tensors().iter().find(|m| m.numel() > MAX_TENSOR) {
		return Err(Error::Config(format!(
			"a {} x {} tensor is over the tiled codec's {MAX_TENSOR} values",
			m.rows, m.cols
		)));
	}
	Ok(())
}

/// A dense tensor at 8 bits against its largest magnitude.
fn dense(values: &[f32]) -> Body {
	let max = values.iter().fold(0f32, |m, v| m.max(v.abs()));
	let scale = max / DENSE_LEVELS;
	let codes = values
		.iter()
		.map(|v| if scale == 0.0 { 0 } else { (v / scale).round().clamp(-127.0, 127.0) as i8 })
		.collect();
	Body::Dense { scale, codes }
}

/// The class of a kept value: its sign, and whether it reaches the tensor's median magnitude.
fn class(v: f32, median: f32) -> u8 {
	(u8::from(v < 0.0) << 1) | u8::from(v.abs() >= median)
}

/// A matrix's kept values at 2 bits: coordinates, classes and centroids.
fn sparse(values: &[f32], m: Matrix, k: usize) -> Body {
	let mut coords = Vec::new();
	let mut tile = Vec::with_capacity(FULL);
	for (r, c, h, w) in tiles(m) {
		tile.clear();
		for a in 0..h {
			let row = (r + a) * m.cols + c;
			tile.extend_from_slice(&values[row..row + w]);
		}
		let chosen = largest(&tile, kept_in(h * w, k));
		coords.extend(
			chosen.iter().map(|&p| ((r + p as usize / w) * m.cols + c + p as usize % w) as u32),
		);
	}
	// Tiles interleave rows: coordinate order is a sort (coordinates are distinct).
	coords.sort_unstable();
	let kept: Vec<f32> = coords.iter().map(|&i| values[i as usize]).collect();
	let mut magnitudes: Vec<f32> = kept.iter().map(|v| v.abs()).collect();
	magnitudes.sort_unstable_by(f32::total_cmp);
	let median = magnitudes[magnitudes.len() / 2];
	let classes: Vec<u8> = kept.iter().map(|&v| class(v, median)).collect();
	let mut sums = [0f64; 4];
	let mut counts = [0u32; 4];
	for (&v, &code) in kept.iter().zip(&classes) {
		sums[code as usize] += f64::from(v);
		counts[code as usize] += 1;
	}
	let centroids = std::array::from_fn(|c| {
		if counts[c] == 0 {
			0.0
		} else {
			(sums[c] / f64::from(counts[c])) as f32
		}
	});
	Body::Sparse { centroids, coords, classes }
}

impl TilesUpdate {
	/// Whether its tensors are `layout`'s, in order.
	pub fn fits(&self, layout: &Layout) -> bool {
		let shapes = self.tensors.iter().map(|t| t.shape);
		self.tensors.len() == layout.tensors().len() && shapes.eq(layout.tensors().iter().copied())
	}

	/// `values` (laid out as `layout`) compressed keeping `k` of every full tile.
	/// `values` laid out as `layout` compressed keeping `k` of every full tile, refused when
	/// k or the layout is invalid or the values are not finite: a compression with no error
	/// memory (what a replay does).
	pub fn compress_checked(values: &[f32], layout: &Layout, k: u32) -> Result<Self> {
		check_settings(k, layout)?;
		if layout.len() != values.len() {
			return Err(Error::Layout(format!(
				"{} values for a layout of {}",
				values.len(),
				layout.len()
			)));
		}
		super::check_finite(values)?;
		Ok(TilesUpdate::compress(values, layout, k as usize))
	}

	/// Tensors are cut on rayon's threads: each depends on its own values only, so the
	/// result is the same on any number of threads.
	fn compress(values: &[f32], layout: &Layout, k: usize) -> Self {
		let offsets: Vec<usize> = layout
			.tensors()
			.iter()
			.scan(0, |next, m| {
				let at = *next;
				*next += m.numel();
				Some(at)
			})
			.collect();
		let tensors = layout
			.tensors()
			.par_iter()
			.zip(offsets)
			.map(|(&shape, offset)| {
				let v = &values[offset..offset + shape.numel()];
				let body = if is_dense(shape) { dense(v) } else { sparse(v, shape, k) };
				Tensor { offset, shape, body }
			})
			.collect();
		TilesUpdate { len: values.len(), k, tensors }
	}

	/// The scheme that produced it.
	pub fn scheme(&self) -> Compression {
		Compression::Tiles { k: self.k as u32 }
	}

	/// Number of values it stands for.
	pub fn len(&self) -> usize {
		self.len
	}

	/// Whether it stands for no values.
	pub fn is_empty(&self) -> bool {
		self.len == 0
	}

	/// The layout it was cut along.
	pub fn layout(&self) -> Vec<Matrix> {
		self.tensors.iter().map(|t| t.shape).collect()
	}

	/// The dense vector (zeros where nothing was kept).
	pub fn decompress(&self) -> Vec<f32> {
		let mut out = vec![0f32; self.len];
		self.write_range(0, &mut out);
		out
	}

	/// Every value it sends (a dense tensor's all, a sparse one's kept), in coordinate order.
	pub(super) fn sent_values(&self) -> impl Iterator<Item = f32> + '_ {
		self.tensors.iter().flat_map(move |t| -> Box<dyn Iterator<Item = f32> + '_> {
			match &t.body {
				Body::Dense { scale, codes } => {
					Box::new(codes.iter().map(move |&q| scale * f32::from(q)))
				}
				Body::Sparse { centroids, classes, .. } => {
					Box::new(classes.iter().map(move |&q| centroids[q as usize]))
				}
			}
		})
	}

	/// Writes values `start..start + out.len()` into `out` (zeros where nothing was kept).
	pub(super) fn write_range(&self, start: usize, out: &mut [f32]) {
		out.fill(0.0);
		let end = start + out.len();
		assert!(end <= self.len, "values {start}..{end} of an update of {}", self.len);
		let first = self.tensors.partition_point(|t| t.offset + t.shape.numel() <= start);
		for t in self.tensors[first..].iter().take_while(|t| t.offset < end) {
			let (from, to) = (start.max(t.offset), end.min(t.offset + t.shape.numel()));
			match &t.body {
				Body::Dense { scale, codes } => {
					for pos in from..to {
						out[pos - start] = scale * f32::from(codes[pos - t.offset]);
					}
				}
				Body::Sparse { centroids, coords, classes } => {
					let local = (from - t.offset) as u32;
					let at = coords.partition_point(|&c| c < local);
					for (&c, &q) in coords[at..].iter().zip(&classes[at..]) {
						let pos = t.offset + c as usize;
						if pos >= to {
							break;
						}
						out[pos - start] = centroids[q as usize];
					}
				}
			}
		}
	}

	pub(super) fn encode_payload(&self, out: &mut Vec<u8>) {
		out.extend_from_slice(&(self.k as u32).to_le_bytes());
		out.extend_from_slice(&(self.tensors.len() as u32).to_le_bytes());
		for t in &self.tensors {
			out.extend_from_slice(&(t.shape.rows as u32).to_le_bytes());
			out.extend_from_slice(&(t.shape.cols as u32).to_le_bytes());
		}
		for t in &self.tensors {
			match &t.body {
				Body::Dense { scale, codes } => {
					out.extend_from_slice(&scale.to_le_bytes());
					out.extend(codes.iter().map(|&q| q as u8));
				}
				Body::Sparse { centroids, coords, classes } => {
					for c in centroids {
						out.extend_from_slice(&c.to_le_bytes());
					}
					self.encode_stream(t.shape, coords, classes, out);
				}
			}
		}
	}

	/// A sparse tensor's bit stream: its kept values taken in tile order.
	fn encode_stream(&self, shape: Matrix, coords: &[u32], classes: &[u8], out: &mut Vec<u8>) {
		let mut in_tiles: Vec<(usize, u32, u8)> = coords
			.iter()
			.zip(classes)
			.map(|(&c, &q)| {
				let (tile, p) = tile_order(shape, c);
				(tile, p, q)
			})
			.collect();
		in_tiles.sort_unstable();
		let mut w = BitWriter::new(out);
		let mut at = 0;
		for (_, _, h, width) in tiles(shape) {
			let n = kept_in(h * width, self.k);
			let tile = &in_tiles[at..at + n];
			let r = rice_bits(h * width, n);
			w.positions(tile.iter().map(|t| t.1), r);
			for &(_, _, q) in tile {
				w.write(u32::from(q), 2);
			}
			at += n;
		}
	}

	pub(super) fn decode_payload(r: &mut Reader, len: usize) -> Result<Self> {
		let k = r.u32()? as usize;
		check_k(k).map_err(Error::Decode)?;
		let shapes = decode_shapes(r, len)?;
		let mut tensors = Vec::with_capacity(shapes.len());
		let mut offset = 0;
		for (i, shape) in shapes.into_iter().enumerate() {
			let body = if is_dense(shape) {
				decode_dense(r, shape.numel(), i)?
			} else {
				decode_sparse(r, shape, k, i)?
			};
			tensors.push(Tensor { offset, shape, body });
			offset += shape.numel();
		}
		Ok(TilesUpdate { len, k, tensors })
	}
}

/// The tensors' shapes, which must cover exactly `len` values.
fn decode_shapes(r: &mut Reader, len: usize) -> Result<Vec<Matrix>> {
	let count = r.u32()? as usize;
	if count > len {
		return Err(Error::Decode(format!("{count} tensors for {len} values")));
	}
	// Room for the shapes the bytes can hold, not for what a hostile count claims.
	let mut shapes = Vec::with_capacity(count.min(r.remaining() / 8));
	let mut total = 0u64;
	for i in 0..count {
		let (rows, cols) = (r.u32()?, r.u32()?);
		if rows == 0 || cols == 0 {
			return Err(Error::Decode(format!("tensor {i} is empty ({rows} x {cols})")));
		}
		let numel = u64::from(rows) * u64::from(cols);
		if numel > MAX_TENSOR as u64 {
			return Err(Error::Decode(format!("tensor {i} holds over {MAX_TENSOR} values")));
		}
		total += numel;
		if total > len as u64 {
			return Err(Error::Decode(format!("tensors hold more than the update's {len} values")));
		}
		shapes.push(Matrix { rows: rows as usize, cols: cols as usize });
	}
	if total != len as u64 {
		return Err(Error::Decode(format!("tensors hold {total} values, the update {len}")));
	}
	Ok(shapes)
}

fn decode_dense(r: &mut Reader, n: usize, i: usize) -> Result<Body> {
	let scale = r.finite_f32s(1, "scale")?[0];
	if scale < 0.0 {
		return Err(Error::Decode(format!("tensor {i}: negative scale")));
	}
	let codes: Vec<i8> = r.take(n)?.iter().map(|&b| b as i8).collect();
	if codes.contains(&i8::MIN) {
		return Err(Error::Decode(format!("tensor {i}: code -128 is outside -127..=127")));
	}
	Ok(Body::Dense { scale, codes })
}

fn decode_sparse(r: &mut Reader, shape: Matrix, k: usize, i: usize) -> Result<Body> {
	let c = r.finite_f32s(4, "centroid")?;
	let centroids = [c[0], c[1], c[2], c[3]];
	let mut kept: Vec<(u32, u8)> = Vec::new();
	let mut bits = BitReader::new(r.rest());
	for (t, (row, col, h, w)) in tiles(shape).enumerate() {
		let size = (h * w) as u32;
		let n = kept_in(h * w, k);
		let rice = rice_bits(h * w, n);
		let place = || format!("tensor {i}, tile {t}");
		for p in bits.positions(n, size, rice, place)? {
			let coord = (row + p as usize / w) * shape.cols + col + p as usize % w;
			kept.push((coord as u32, bits.read(2)? as u8));
		}
	}
	bits.finish(r)?;
	kept.sort_unstable();
	let (coords, classes) = kept.into_iter().unzip();
	Ok(Body::Sparse { centroids, coords, classes })
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		compress::{CompressedUpdate, Compressor, FeedbackCompressor},
		rng::Rng,
	};

	/// A tiled compressor with error feedback keeping `k` of every full tile of `layout`.
	fn with_feedback(k: u32, layout: &Layout) -> Result<FeedbackCompressor> {
		FeedbackCompressor::new(Compression::Tiles { k }, layout)
	}

	fn normal(n: usize, seed: u64) -> Vec<f32> {
		let mut rng = Rng::new(seed);
		(0..n).map(|_| rng.normal() as f32).collect()
	}

	/// A GPT-like layout: a 130 × 100 matrix (edge tiles on both sides), a bias, a 64 × 64
	/// matrix (one tile), a small 8 × 8 matrix (dense).
	fn layout() -> Layout {
		let manifest = crate::params::Manifest::new(
			[("a", vec![130, 100]), ("b", vec![100]), ("c", vec![64, 64]), ("d", vec![8, 8])]
				.into_iter()
				.map(|(n, shape)| crate::params::ParamInfo { name: n.into(), shape })
				.collect(),
		)
		.unwrap();
		Layout::of(&manifest)
	}

	fn update(values: &[f32], k: u32) -> TilesUpdate {
		let CompressedUpdate::Tiles(u) =
			with_feedback(k, &layout()).unwrap().compress(values).unwrap()
		else {
			panic!("a tiles compressor makes tiles updates")
		};
		u
	}

	#[test]
	fn tiles_keep_their_largest_values_and_classes_decode_to_their_means() {
		let layout = layout();
		let x = normal(layout.len(), 1);
		let u = update(&x, 64);
		let dense = u.decompress();
		// The 130 × 100 matrix has tiles of 64×64, 64×36, 64×64, 64×36, 2×64, 2×36: it keeps
		// 64 + 36 + 64 + 36 + 2 + 2 values.
		let kept =
			|range: std::ops::Range<usize>| dense[range].iter().filter(|v| **v != 0.0).count();
		assert_eq!(kept(0..13_000), 204);
		assert_eq!(kept(13_100..17_196), 64);
		// Within the first tile, every kept value is at least as large as every dropped one.
		let tile: Vec<(f32, bool)> = (0..64)
			.flat_map(|a| (0..64).map(move |b| a * 100 + b))
			.map(|i| (x[i], dense[i] != 0.0))
			.collect();
		let smallest_kept = tile.iter().filter(|t| t.1).map(|t| t.0.abs()).fold(f32::MAX, f32::min);
		let largest_dropped = tile.iter().filter(|t| !t.1).map(|t| t.0.abs()).fold(0.0, f32::max);
		assert!(smallest_kept >= largest_dropped);
		// Each class's values decode to their mean: the sum of kept values is sent exactly
		// (up to rounding).
		let (sent, kept_sum): (f64, f64) = (0..13_000)
			.filter(|&i| dense[i] != 0.0)
			.map(|i| (f64::from(dense[i]), f64::from(x[i])))
			.fold((0.0, 0.0), |(a, b), (s, v)| (a + s, b + v));
		assert!((sent - kept_sum).abs() < 1e-3, "{sent} vs {kept_sum}");
		let classes: std::collections::BTreeSet<u32> =
			dense[..13_000].iter().filter(|v| **v != 0.0).map(|v| v.to_bits()).collect();
		assert_eq!(classes.len(), 4, "four centroids");
		// The bias and the 8 × 8 matrix are dense, within half a level of their largest value.
		for range in [13_000..13_100, 17_196..17_260] {
			let max = x[range.clone()].iter().fold(0f32, |m, v| m.max(v.abs()));
			for i in range {
				assert!((dense[i] - x[i]).abs() <= max / 254.0 + 1e-6, "value {i}");
			}
		}
	}

	#[test]
	fn bytes_round_trip_and_ranges_and_norms_match_the_dense_vector() {
		let x = normal(layout().len(), 2);
		for k in [1, 64, 700, 4_096] {
			let u = CompressedUpdate::Tiles(update(&x, k));
			let bytes = u.encode();
			let back = CompressedUpdate::decode(&bytes).unwrap();
			assert_eq!(back, u, "k {k}");
			assert_eq!(back.encode(), bytes);
			let dense = u.decompress();
			let norm = dense.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
			assert_eq!(u.norm().to_bits(), norm.to_bits());
			for (start, end) in [(0, 17_260), (99, 101), (12_990, 13_110), (17_259, 17_260), (5, 5)]
			{
				let mut out = vec![f32::NAN; end - start];
				u.write_range(start, &mut out);
				let bits = |v: &[f32]| v.iter().map(|a| a.to_bits()).collect::<Vec<_>>();
				assert_eq!(bits(&out), bits(&dense[start..end]), "k {k}: {start}..{end}");
			}
		}
	}

	#[test]
	fn an_update_of_a_large_model_is_small() {
		// 1.56% of the values at about 10 bits each (a Rice-coded position of 8 bits for 64
		// of 4,096, and 2 bits of code), plus 16 bytes of centroids per tensor.
		let layout = Layout::of(
			&crate::params::Manifest::new(vec![crate::params::ParamInfo {
				name: "w".into(),
				shape: vec![512, 1_024],
			}])
			.unwrap(),
		);
		let x = normal(layout.len(), 3);
		let mut c = with_feedback(64, &layout).unwrap();
		let bytes = c.compress(&x).unwrap().encode();
		let kept = 512 * 1_024 / 64;
		assert!(bytes.len() < 4 + 1 + 8 + 8 + 8 + 16 + kept * 11 / 8, "{} bytes", bytes.len());
		assert!(bytes.len() > kept * 9 / 8, "{} bytes", bytes.len());
		// f32 would take 2 MiB: over 150x more.
		assert!(4 * layout.len() > 150 * bytes.len());
	}

	#[test]
	fn error_feedback_sends_what_was_left_out_later() {
		let layout = layout();
		let x = normal(layout.len(), 4);
		// One value in eight kept: a value waits about eight rounds to be sent.
		let mut c = with_feedback(512, &layout).unwrap();
		let rounds = 1_000;
		let mut sent = vec![0f64; x.len()];
		for _ in 0..rounds {
			for (s, v) in sent.iter_mut().zip(c.compress(&x).unwrap().decompress()) {
				*s += f64::from(v);
			}
		}
		let worst = x
			.iter()
			.zip(&sent)
			.map(|(a, s)| (s / f64::from(rounds) - f64::from(*a)).abs())
			.fold(0.0, f64::max);
		assert!(worst < 0.1, "the average of what was sent is off by up to {worst}");
		let residual: Vec<f32> = c.error().to_vec();
		assert!(residual.iter().all(|v| v.is_finite()));
		assert!(with_feedback(64, &layout).unwrap().with_error_decay(1.5).is_err());
		assert!(with_feedback(0, &layout).is_err());
		assert!(with_feedback(4_097, &layout).is_err());
	}

	#[test]
	fn hostile_bytes_are_rejected() {
		let x = normal(layout().len(), 5);
		let bytes = CompressedUpdate::Tiles(update(&x, 64)).encode();
		let header = 4 + 1 + 8;
		let err = |b: &[u8]| CompressedUpdate::decode(b).unwrap_err().to_string();
		let patched = |at: usize, v: &[u8]| {
			let mut b = bytes.clone();
			b[at..at + v.len()].copy_from_slice(v);
			b
		};
		// k of zero or above a tile.
		assert!(err(&patched(header, &0u32.to_le_bytes())).contains("not 0"));
		assert!(err(&patched(header, &5_000u32.to_le_bytes())).contains("not 5000"));
		// Tensors that do not add up to the update's length, or an empty one.
		assert!(err(&patched(header + 8, &131u32.to_le_bytes())).contains("more than"));
		assert!(err(&patched(header + 8, &129u32.to_le_bytes())).contains("hold 17160"));
		assert!(err(&patched(header + 12, &0u32.to_le_bytes())).contains("empty"));
		assert!(err(&patched(header + 4, &u32::MAX.to_le_bytes())).contains("tensors for"));
		// An update claiming the most values and tensors there may be, with no shapes after:
		// refused as truncated, without room made for four billion shapes first.
		let mut huge = bytes[..4].to_vec();
		huge.push(3);
		huge.extend_from_slice(&super::super::MAX_VALUES.to_le_bytes());
		huge.extend_from_slice(&64u32.to_le_bytes());
		huge.extend_from_slice(&u32::MAX.to_le_bytes());
		huge.extend_from_slice(&[1, 0, 0, 0]);
		assert!(err(&huge).contains("truncated"), "{}", err(&huge));
		// A NaN centroid (the first tensor's body follows 4 shapes).
		let body = header + 8 + 4 * 8;
		assert!(err(&patched(body, &f32::NAN.to_le_bytes())).contains("not finite"));
		// Truncation anywhere, and trailing bytes.
		for cut in [header + 3, body + 2, body + 40, bytes.len() - 1] {
			assert!(err(&bytes[..cut]).contains("truncated"), "cut at {cut}");
		}
		let mut long = bytes.clone();
		long.push(0);
		assert!(err(&long).contains("trailing"));
		// A run of one bits (an endless position gap) stops at the tile's size.
		let mut ones = bytes[..body + 16].to_vec();
		ones.extend_from_slice(&[0xff; 64]);
		assert!(err(&ones).contains("reaches past"));
		// A dense code of -128 (the last byte is the 8 × 8 matrix's last code).
		let mut min = bytes.clone();
		*min.last_mut().unwrap() = 0x80;
		assert!(err(&min).contains("-128"));
	}
}
