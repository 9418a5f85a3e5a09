//! Pseudo-gradient compression with a stable byte encoding.
//!
//! Every scheme turns a Δ vector into a [`CompressedUpdate`], whose [`CompressedUpdate::encode`]
//! bytes are what peers exchange and content-address. The encoding is canonical (one byte
//! string per update) and [`CompressedUpdate::decode`] rejects anything malformed, truncated,
//! non-canonical or non-finite, so a hostile peer cannot smuggle NaNs into the aggregate.
//!
//! Layout, little-endian: magic `GDU2`, scheme (u8: 0 none, 1 int8, 2 top-k, 3 tiles), value
//! count (u64), the scheme's parameters (int8: chunk u32; top-k: chunk u32, k u32, value bits
//! u8; tiles: k u32 and the tensors' shapes), then the scheme's payload (see each module).

pub mod adaptive;
mod bits;
pub mod int8;
pub mod layout;
pub mod none;
pub mod tiles;
pub mod topk;

pub use layout::Layout;

use grid_primitives::job::Compression;
use rayon::prelude::*;

use crate::error::{Error, Result};

/// First bytes of every encoded update; the digit is the format version (2: top-k indices
/// Rice-coded).
pub const MAGIC: &[u8; 4] = b"GDU2";
/// Longest update accepted by `decode` (values), as a guard against absurd allocations.
pub const MAX_VALUES: u64 = 1 << 34;

/// The longest encoding of an update laid out as `layout` under any scheme and parameters
/// (a bound, not the size): what a commitment may claim before anyone fetches it. Headers
/// take under 64 bytes; tiles add 8 bytes of shape and at most 16 of centroids per tensor;
/// no scheme spends 8 bytes on a value (raw f32 4; int8 at chunk 1 a code and its 4-byte
/// scale; top-k at k = chunk = 1 the same and an index bit).
pub fn max_encoded_len(layout: &Layout) -> u64 {
	let (values, tensors) = (layout.len() as u64, layout.tensors().len() as u64);
	values.saturating_mul(8).saturating_add(tensors.saturating_mul(24)).saturating_add(64)
}

/// A compressed pseudo-gradient.
#[derive(Clone, Debug, PartialEq)]
pub enum CompressedUpdate {
	/// Raw f32 values.
	None(Vec<f32>),
	/// Per-chunk int8 quantization.
	Int8(int8::Int8Update),
	/// Per-chunk top-k with low-bit values.
	TopK(topk::TopKUpdate),
	/// Per-tile top-k of each matrix with 2-bit codes; vectors dense at 8 bits.
	Tiles(tiles::TilesUpdate),
}

/// Compresses pseudo-gradients; stateful schemes keep their error-feedback memory inside.
pub trait Compressor {
	/// Compresses `delta`. Schemes with error feedback add the residual of earlier rounds
	/// first and remember what this update leaves out.
	fn compress(&mut self, delta: &[f32]) -> Result<CompressedUpdate>;
}

/// The compressor for a job's [`Compression`] spec, for vectors laid out as `layout` (only
/// the tiled codec looks past their length).
pub fn compressor(spec: &Compression, layout: &Layout) -> Result<Box<dyn Compressor>> {
	Ok(match *spec {
		Compression::None => Box::new(none::Identity),
		Compression::Int8 { chunk } => Box::new(int8::Int8Quantizer::new(chunk)?),
		Compression::TopK { .. } | Compression::Tiles { .. } => {
			Box::new(FeedbackCompressor::new(*spec, layout)?)
		}
	})
}

/// A scheme with error feedback (what top-k and tiles jobs run): each round compresses Δ
/// plus the carried error, statelessly ([`compress_values`]), and carries what the update
/// left out.
pub struct FeedbackCompressor {
	scheme: Compression,
	layout: Layout,
	feedback: Feedback,
}

impl FeedbackCompressor {
	/// A compressor of `scheme` (its parameters checked) for vectors laid out as `layout`,
	/// keeping its error whole.
	pub fn new(scheme: Compression, layout: &Layout) -> Result<Self> {
		match scheme {
			Compression::TopK { chunk, k, value_bits } => {
				topk::check_params(chunk as usize, k as usize, value_bits).map_err(Error::Config)?
			}
			Compression::Tiles { k } => tiles::check_settings(k, layout)?,
			Compression::Int8 { chunk } => {
				int8::Int8Quantizer::new(chunk)?;
			}
			Compression::None => {}
		}
		let feedback = Feedback::new(layout.len());
		Ok(FeedbackCompressor { scheme, layout: layout.clone(), feedback })
	}

	/// Decays the error memory by `decay` each round (see [`Feedback::with_decay`]).
	pub fn with_error_decay(mut self, decay: f32) -> Result<Self> {
		self.feedback = self.feedback.with_decay(decay)?;
		Ok(self)
	}

	/// The residual carried to the next round.
	pub fn error(&self) -> &[f32] {
		self.feedback.error()
	}
}

impl Compressor for FeedbackCompressor {
	fn compress(&mut self, delta: &[f32]) -> Result<CompressedUpdate> {
		let acc = self.feedback.correct(delta, &format!("{:?}", self.scheme))?;
		let update = compress_values(&self.scheme, &self.layout, &acc)?;
		self.feedback.keep_update(acc, &update);
		Ok(update)
	}
}

/// `values` (a Δ with any carried error already added, laid out as `layout`) compressed with
/// `spec` and no error memory: what a replay recomputes, and what each round's compressor
/// sends. Refuses invalid parameters and non-finite values.
pub fn compress_values(
	spec: &Compression,
	layout: &Layout,
	values: &[f32],
) -> Result<CompressedUpdate> {
	Ok(match *spec {
		Compression::None => {
			check_finite(values)?;
			CompressedUpdate::None(values.to_vec())
		}
		Compression::Int8 { chunk } => int8::Int8Quantizer::new(chunk)?.compress(values)?,
		Compression::TopK { chunk, k, value_bits } => CompressedUpdate::TopK(
			topk::TopKUpdate::compress_checked(values, chunk, k, value_bits)?,
		),
		Compression::Tiles { k } => {
			CompressedUpdate::Tiles(tiles::TilesUpdate::compress_checked(values, layout, k)?)
		}
	})
}

/// Refuses values that are not all finite.
fn check_finite(values: &[f32]) -> Result<()> {
	if values.par_iter().any(|x| !x.is_finite()) {
		return Err(Error::Config("cannot compress a non-finite update".into()));
	}
	Ok(())
}

/// Error feedback: what earlier updates left out, decayed each round and added to the next
/// Δ before it is compressed.
#[derive(Clone, Debug)]
pub struct Feedback {
	error: Vec<f32>,
	decay: f32,
}

impl Feedback {
	/// No carried error yet, for vectors of `len` values, kept whole (decay 1).
	pub fn new(len: usize) -> Self {
		Feedback { error: vec![0.0; len], decay: 1.0 }
	}

	/// Multiplies the residual by `decay` (in 0..=1) before adding each new Δ: 1 is plain
	/// error feedback; below 1 the backlog of unsent values fades instead of being released
	/// many rounds late (SparseLoCo decays its accumulator the same way). The memory is local
	/// to each participant, so peers need not agree on it.
	pub fn with_decay(mut self, decay: f32) -> Result<Self> {
		if !(0.0..=1.0).contains(&decay) {
			return Err(Error::Config(format!("error decay {decay} is outside 0..=1")));
		}
		self.decay = decay;
		Ok(self)
	}

	/// The residual carried to the next round.
	pub fn error(&self) -> &[f32] {
		&self.error
	}

	/// `delta` plus the decayed residual: what a round compresses. Refuses a Δ of another
	/// length than the memory (`scheme` names the compressor) or a non-finite result.
	pub fn correct(&self, delta: &[f32], scheme: &str) -> Result<Vec<f32>> {
		self.check_len(delta.len(), &format!("a Δ for the {scheme} compressor"))?;
		let acc = adaptive::corrected(delta, &self.error, self.decay);
		check_finite(&acc)?;
		Ok(acc)
	}

	/// Restores a carried error saved from [`Feedback::error`].
	pub fn restore(&mut self, error: Vec<f32>) -> Result<()> {
		self.check_len(error.len(), "a residual")?;
		self.error = error;
		Ok(())
	}

	/// Adds `values` (an update that was sent but not delivered) back to the carried error.
	pub fn take_back(&mut self, values: &[f32]) -> Result<()> {
		self.check_len(values.len(), "an update")?;
		for (e, v) in self.error.iter_mut().zip(values) {
			*e += v;
		}
		Ok(())
	}

	/// Refuses `n` values (`what`) for a memory of another length.
	fn check_len(&self, n: usize, what: &str) -> Result<()> {
		if n != self.error.len() {
			return Err(Error::Layout(format!(
				"{what} of {n} values for a compressor of {}",
				self.error.len()
			)));
		}
		Ok(())
	}

	/// Remembers what `sent` left out of `acc` (what was compressed): `acc` becomes the
	/// carried error, less `sent`'s values read a block at a time on rayon's threads (no
	/// dense copy of `sent`, the same values on any number of threads).
	///
	/// # Panics
	/// If `sent` is shorter than `acc`.
	pub fn keep_update(&mut self, mut acc: Vec<f32>, sent: &CompressedUpdate) {
		const BLOCK: usize = 1 << 16;
		acc.par_chunks_mut(BLOCK).enumerate().for_each_init(
			|| vec![0f32; BLOCK],
			|buf, (b, chunk)| {
				let buf = &mut buf[..chunk.len()];
				sent.write_range(b * BLOCK, buf);
				for (a, s) in chunk.iter_mut().zip(buf.iter()) {
					*a -= *s;
				}
			},
		);
		self.error = acc;
	}
}

impl CompressedUpdate {
	/// Number of values it stands for.
	pub fn len(&self) -> usize {
		match self {
			CompressedUpdate::None(v) => v.len(),
			CompressedUpdate::Int8(u) => u.len(),
			CompressedUpdate::TopK(u) => u.len(),
			CompressedUpdate::Tiles(u) => u.len(),
		}
	}

	/// Why it cannot be an update of a model laid out as `layout`, if it cannot: it must
	/// stand for as many values, and a tiled update must be cut along the model's own
	/// tensors (one cut along other shapes puts its kept values where the model's tiles are
	/// not, and its receivers would aggregate what no honest sender compresses).
	pub fn check_layout(&self, layout: &Layout) -> std::result::Result<(), String> {
		if self.len() != layout.len() {
			return Err(format!("{} values for a model of {}", self.len(), layout.len()));
		}
		match self {
			CompressedUpdate::Tiles(u) if !u.fits(layout) => {
				Err("tiles cut along other tensors than the model's".into())
			}
			_ => Ok(()),
		}
	}

	/// Whether it stands for no values.
	pub fn is_empty(&self) -> bool {
		self.len() == 0
	}

	/// The scheme (with its parameters) that produced it.
	pub fn scheme(&self) -> Compression {
		match self {
			CompressedUpdate::None(_) => Compression::None,
			CompressedUpdate::Int8(u) => Compression::Int8 { chunk: u.chunk() },
			CompressedUpdate::TopK(u) => u.scheme(),
			CompressedUpdate::Tiles(u) => u.scheme(),
		}
	}

	/// The dense vector it represents.
	pub fn decompress(&self) -> Vec<f32> {
		match self {
			CompressedUpdate::None(v) => v.clone(),
			CompressedUpdate::Int8(u) => u.decompress(),
			CompressedUpdate::TopK(u) => u.decompress(),
			CompressedUpdate::Tiles(u) => u.decompress(),
		}
	}

	/// Writes its values `start..start + out.len()` into `out` (every value of `out` is
	/// written: zeros where a sparse update kept nothing), without the dense vector: the
	/// aggregation reads updates a block of coordinates at a time.
	///
	/// # Panics
	/// If the range is not within the update.
	pub fn write_range(&self, start: usize, out: &mut [f32]) {
		match self {
			CompressedUpdate::None(v) => out.copy_from_slice(&v[start..start + out.len()]),
			CompressedUpdate::Int8(u) => u.write_range(start, out),
			CompressedUpdate::TopK(u) => u.write_range(start, out),
			CompressedUpdate::Tiles(u) => u.write_range(start, out),
		}
	}

	/// The L2 norm of its values (accumulated in f64 in coordinate order: bit for bit
	/// `aggregate::norm` of [`CompressedUpdate::decompress`], without the dense vector).
	pub fn norm(&self) -> f64 {
		let sum = match self {
			CompressedUpdate::None(v) => squares(v.iter().copied()),
			CompressedUpdate::Int8(u) => squares(u.values()),
			CompressedUpdate::TopK(u) => squares(u.kept_values()),
			CompressedUpdate::Tiles(u) => squares(u.sent_values()),
		};
		sum.sqrt()
	}

	/// The canonical bytes (see the module docs).
	pub fn encode(&self) -> Vec<u8> {
		let mut out = MAGIC.to_vec();
		match self {
			CompressedUpdate::None(v) => {
				out.push(0);
				out.extend_from_slice(&(v.len() as u64).to_le_bytes());
				none::encode_payload(v, &mut out);
			}
			CompressedUpdate::Int8(u) => {
				out.push(1);
				out.extend_from_slice(&(u.len() as u64).to_le_bytes());
				u.encode_payload(&mut out);
			}
			CompressedUpdate::TopK(u) => {
				out.push(2);
				out.extend_from_slice(&(u.len() as u64).to_le_bytes());
				u.encode_payload(&mut out);
			}
			CompressedUpdate::Tiles(u) => {
				out.push(3);
				out.extend_from_slice(&(u.len() as u64).to_le_bytes());
				u.encode_payload(&mut out);
			}
		}
		out
	}

	/// Parses bytes produced by [`CompressedUpdate::encode`].
	pub fn decode(bytes: &[u8]) -> Result<Self> {
		let mut r = Reader::new(bytes);
		if r.take(4)? != MAGIC {
			return Err(Error::Decode("bad magic (not a Grid update, or another version)".into()));
		}
		let scheme = r.u8()?;
		let len = r.u64()?;
		if len > MAX_VALUES {
			return Err(Error::Decode(format!("{len} values is over the limit of {MAX_VALUES}")));
		}
		let len = usize::try_from(len).map_err(|_| Error::Decode("length overflows".into()))?;
		let update = match scheme {
			0 => CompressedUpdate::None(none::decode_payload(&mut r, len)?),
			1 => CompressedUpdate::Int8(int8::Int8Update::decode_payload(&mut r, len)?),
			2 => CompressedUpdate::TopK(topk::TopKUpdate::decode_payload(&mut r, len)?),
			3 => CompressedUpdate::Tiles(tiles::TilesUpdate::decode_payload(&mut r, len)?),
			s => return Err(Error::Decode(format!("unknown scheme {s}"))),
		};
		if r.remaining() != 0 {
			return Err(Error::Decode(format!("{} trailing bytes", r.remaining())));
		}
		Ok(update)
	}
}

/// A bounds-checked cursor over encoded bytes.
pub struct Reader<'a> {
	bytes: &'a [u8],
	pos: usize,
}

impl<'a> Reader<'a> {
	/// A reader at the start of `bytes`.
	pub fn new(bytes: &'a [u8]) -> Self {
		Reader { bytes, pos: 0 }
	}

	/// Bytes left.
	pub fn remaining(&self) -> usize {
		self.bytes.len() - self.pos
	}

	/// The next `n` bytes, or a truncation error.
	pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
		if self.remaining() < n {
			return Err(Error::Decode(format!(
				"truncated: needed {n} more bytes at offset {}, {} left",
				self.pos,
				self.remaining()
			)));
		}
		let out = &self.bytes[self.pos..self.pos + n];
		self.pos += n;
		Ok(out)
	}

	/// Everything not yet read, without consuming it.
	pub fn rest(&self) -> &'a [u8] {
		&self.bytes[self.pos..]
	}

	/// A byte.
	pub fn u8(&mut self) -> Result<u8> {
		Ok(self.take(1)?[0])
	}

	/// A little-endian u32.
	pub fn u32(&mut self) -> Result<u32> {
		let b = self.take(4)?;
		Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
	}

	/// A little-endian u64.
	pub fn u64(&mut self) -> Result<u64> {
		let mut a = [0u8; 8];
		a.copy_from_slice(self.take(8)?);
		Ok(u64::from_le_bytes(a))
	}

	/// `n` finite little-endian f32 values.
	pub fn finite_f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>> {
		let bytes =
			self.take(n.checked_mul(4).ok_or_else(|| Error::Decode("length overflows".into()))?)?;
		let mut out = Vec::with_capacity(n);
		for (i, c) in bytes.chunks_exact(4).enumerate() {
			let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
			if !x.is_finite() {
				return Err(Error::Decode(format!("{what} {i} is not finite")));
			}
			out.push(x);
		}
		Ok(out)
	}
}

/// The sum of the values' squares, in f64 and in order. Zeros left out add nothing: a sum of
/// squares plus +0 is itself exactly, so a sparse update's sum is its dense vector's.
fn squares(values: impl Iterator<Item = f32>) -> f64 {
	values.map(|x| f64::from(x) * f64::from(x)).sum()
}

/// Number of chunks of `chunk` values covering `len` values.
pub fn chunks(len: usize, chunk: usize) -> usize {
	len.div_ceil(chunk)
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::rng::Rng;

	fn vector(n: usize, seed: u64) -> Vec<f32> {
		let mut rng = Rng::new(seed);
		(0..n).map(|_| (rng.normal() * 0.01) as f32).collect()
	}

	fn specs() -> Vec<Compression> {
		vec![
			Compression::None,
			Compression::Int8 { chunk: 64 },
			Compression::TopK { chunk: 64, k: 4, value_bits: 2 },
			Compression::TopK { chunk: 100, k: 100, value_bits: 8 },
			Compression::TopK { chunk: 32, k: 3, value_bits: 1 },
			Compression::Tiles { k: 64 },
		]
	}

	#[test]
	fn every_scheme_round_trips_through_bytes_and_rejects_corruption() {
		for spec in specs() {
			// 1000 is not a multiple of any chunk size: the last chunk is partial.
			let x = vector(1_000, 1);
			let update = compressor(&spec, &Layout::flat(x.len())).unwrap().compress(&x).unwrap();
			let bytes = update.encode();
			let back = CompressedUpdate::decode(&bytes).unwrap();
			assert_eq!(back, update, "{spec:?}");
			assert_eq!(back.encode(), bytes);
			assert_eq!(back.len(), 1_000);
			for cut in [0, 3, 5, 13, bytes.len() / 2, bytes.len() - 1] {
				let err = CompressedUpdate::decode(&bytes[..cut]).unwrap_err().to_string();
				assert!(
					err.contains("truncated") || err.contains("magic"),
					"{spec:?} cut {cut}: {err}"
				);
			}
			let mut long = bytes.clone();
			long.push(0);
			assert!(CompressedUpdate::decode(&long).unwrap_err().to_string().contains("trailing"));
			let mut scheme = bytes.clone();
			scheme[4] = 9;
			assert!(CompressedUpdate::decode(&scheme)
				.unwrap_err()
				.to_string()
				.contains("scheme 9"));
		}
	}

	#[test]
	fn no_scheme_encodes_past_the_bound_a_commitment_may_claim() {
		// Tensors of one value, a partial tile and a vector: every scheme's worst case.
		let layout = Layout::new(vec![
			layout::Matrix { rows: 1, cols: 1 },
			layout::Matrix { rows: 65, cols: 70 },
			layout::Matrix { rows: 1, cols: 33 },
		]);
		let worst = [
			Compression::None,
			Compression::Int8 { chunk: 1 },
			Compression::TopK { chunk: 1, k: 1, value_bits: 8 },
			Compression::TopK { chunk: 2, k: 1, value_bits: 8 },
			Compression::Tiles { k: 1 },
			Compression::Tiles { k: 4_096 },
		];
		let bound = max_encoded_len(&layout);
		for spec in worst {
			let x = vector(layout.len(), 4);
			let bytes = compress_values(&spec, &layout, &x).unwrap().encode();
			assert!(bytes.len() as u64 <= bound, "{spec:?}: {} bytes > {bound}", bytes.len());
		}
		assert_eq!(max_encoded_len(&Layout::flat(0)), 64);
	}

	#[test]
	fn ranges_and_norms_match_the_dense_vector() {
		let dense_norm = |v: &[f32]| v.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
		for spec in specs() {
			let x = vector(1_000, 3);
			let update = compressor(&spec, &Layout::flat(x.len())).unwrap().compress(&x).unwrap();
			let dense = update.decompress();
			assert_eq!(update.norm().to_bits(), dense_norm(&dense).to_bits(), "{spec:?}");
			// Ranges that start and end inside chunks, span several, or are empty.
			for (start, end) in [(0, 1_000), (0, 1), (63, 65), (100, 517), (999, 1_000), (5, 5)] {
				let mut out = vec![f32::NAN; end - start];
				update.write_range(start, &mut out);
				let bits = |v: &[f32]| v.iter().map(|a| a.to_bits()).collect::<Vec<_>>();
				assert_eq!(bits(&out), bits(&dense[start..end]), "{spec:?} {start}..{end}");
			}
		}
	}

	#[test]
	fn sizes_are_exact_and_errors_are_bounded() {
		let x = vector(4_096, 2);
		let norm = |v: &[f32]| v.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
		let err = |a: &[f32], b: &[f32]| {
			norm(&a.iter().zip(b).map(|(p, q)| p - q).collect::<Vec<_>>()) / norm(a)
		};
		let header = 4 + 1 + 8;
		let none =
			compressor(&Compression::None, &Layout::flat(x.len())).unwrap().compress(&x).unwrap();
		assert_eq!(none.encode().len(), header + 4 * 4_096);
		assert_eq!(none.decompress(), x);
		let int8 = compressor(&Compression::Int8 { chunk: 64 }, &Layout::flat(x.len()))
			.unwrap()
			.compress(&x)
			.unwrap();
		assert_eq!(int8.encode().len(), header + 4 + 64 * 4 + 4_096);
		// Rounding to 255 levels of the chunk's max: relative error well under 2%.
		assert!(err(&x, &int8.decompress()) < 0.02, "int8 error {}", err(&x, &int8.decompress()));
		let spec = Compression::TopK { chunk: 64, k: 8, value_bits: 2 };
		let topk = compressor(&spec, &Layout::flat(x.len())).unwrap().compress(&x).unwrap();
		// 64 chunks × (f32 scale + 8 × (a Rice-coded index gap, r = 3: at least 4 bits,
		// + 2 value bits)), below the 6 + 2 bits of fixed-width indices (exact sizes:
		// `topk`'s tests).
		let size = topk.encode().len();
		assert!(size >= header + 9 + 64 * 4 + 64 * 6 && size < header + 9 + 64 * 4 + 64 * 8);
		let dense = topk.decompress();
		assert_eq!(dense.iter().filter(|v| **v != 0.0).count(), 64 * 8);
		// Keeping the 8 largest of 64 Gaussian values keeps about half the energy.
		let e = err(&x, &dense);
		assert!(e > 0.4 && e < 0.9, "top-k error {e}");
	}
}
