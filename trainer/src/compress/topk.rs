//! Chunked top-k sparsification with error feedback and low-bit values (the SparseLoCo / DeMo
//! family). Each chunk of `chunk` values keeps its `k` largest magnitudes; they are quantized
//! to `value_bits` bits against one f32 scale per chunk, and whatever the update leaves out
//! (unsent values and rounding error) is added to the next round's Δ.
//!
//! Payload: chunk (u32), k (u32), value bits (u8), one f32 scale per chunk, then a bit stream
//! (least significant bit first): for each chunk its kept indices in increasing order as
//! Rice-coded gaps, then their value codes (`value_bits` each), zero-padded to a byte. A gap
//! is the distance from the previous kept index less one (the first index itself); with the
//! Rice parameter r = ⌊log2(chunk / k)⌋, fixed by the header, it is written as `gap >> r` one
//! bits, a zero bit, then its low r bits. Kept positions are about `chunk / k` apart, so an
//! index costs about r + 2 bits instead of `⌈log2 chunk⌉` (5 instead of 8 for 8 of 256;
//! 8 instead of 12 for 64 of 4,096, SparseLoCo's density).
//! Value codes: one bit means sign only (value ±scale, scale = mean kept magnitude); with
//! b ≥ 2 bits the top bit is the sign and the rest a magnitude level m in 1..=2^(b-1)
//! (value ±scale·m/2^(b-1), scale = largest kept magnitude).

use grid_primitives::job::Compression;

use super::{chunks, CompressedUpdate, Compressor, Reader};
use crate::error::{Error, Result};

/// A sparse, quantized update.
#[derive(Clone, Debug, PartialEq)]
pub struct TopKUpdate {
	len: usize,
	chunk: usize,
	k: usize,
	bits: u8,
	scales: Vec<f32>,
	/// Kept positions within each chunk, increasing per chunk, chunk after chunk.
	indices: Vec<u32>,
	/// One value code per kept position.
	codes: Vec<u8>,
}

/// Top-k compressor with its error-feedback memory.
pub struct TopKCompressor {
	chunk: usize,
	k: usize,
	bits: u8,
	error: Vec<f32>,
	decay: f32,
}

fn check_params(chunk: usize, k: usize, bits: u8) -> Result<(), String> {
	if chunk == 0 || k == 0 || k > chunk || !(1..=8).contains(&bits) || chunk > u32::MAX as usize {
		return Err(format!(
			"top-k needs 1 ≤ k ≤ chunk and 1 ≤ bits ≤ 8 (chunk {chunk}, k {k}, bits {bits})"
		));
	}
	Ok(())
}

/// The Rice parameter of the index gaps: ⌊log2(chunk / k)⌋, about the log of the mean gap.
fn rice_bits(chunk: usize, k: usize) -> u32 {
	(chunk / k.max(1)).max(1).ilog2()
}

/// Magnitude levels for `bits`-bit codes (one for sign-only codes).
fn levels(bits: u8) -> u32 {
	1 << (bits - 1)
}

fn dequantize(code: u8, bits: u8, scale: f32) -> f32 {
	let negative = code >> (bits - 1) & 1 == 1;
	let magnitude = if bits == 1 {
		scale
	} else {
		let m = u32::from(code & ((1 << (bits - 1)) - 1)) + 1;
		scale * (m as f32 / levels(bits) as f32)
	};
	if negative {
		-magnitude
	} else {
		magnitude
	}
}

fn quantize(x: f32, bits: u8, scale: f32) -> u8 {
	let sign = u8::from(x < 0.0) << (bits - 1);
	if bits == 1 || scale == 0.0 {
		return sign;
	}
	let l = levels(bits) as f32;
	let m = (x.abs() / scale * l).round().clamp(1.0, l) as u8;
	sign | (m - 1)
}

impl TopKCompressor {
	/// A compressor for vectors of `len` values.
	pub fn new(chunk: u32, k: u32, bits: u8, len: usize) -> Result<Self> {
		check_params(chunk as usize, k as usize, bits).map_err(Error::Config)?;
		Ok(TopKCompressor {
			chunk: chunk as usize,
			k: k as usize,
			bits,
			error: vec![0.0; len],
			decay: 1.0,
		})
	}

	/// Multiplies the residual by `decay` (in 0..=1) before adding each new Δ: 1 is plain
	/// error feedback; below 1 the backlog of unsent values fades instead of being released
	/// many rounds late (SparseLoCo decays its accumulator the same way). The memory is local
	/// to each participant, so peers need not agree on it.
	pub fn with_error_decay(mut self, decay: f32) -> Result<Self> {
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

	/// Compresses one chunk of values, appending to `out`.
	fn compress_chunk(&self, c: &[f32], out: &mut TopKUpdate) {
		let k = self.k.min(c.len());
		// Largest magnitudes first, ties to the lower index: a total order, so every node
		// picks the same positions.
		let by_magnitude =
			|a: &u32, b: &u32| c[*b as usize].abs().total_cmp(&c[*a as usize].abs()).then(a.cmp(b));
		let mut order: Vec<u32> = (0..c.len() as u32).collect();
		if k < c.len() {
			order.select_nth_unstable_by(k - 1, by_magnitude);
		}
		let mut kept = order[..k].to_vec();
		kept.sort_unstable();
		let mags = kept.iter().map(|&i| c[i as usize].abs());
		let scale =
			if self.bits == 1 { mags.sum::<f32>() / k as f32 } else { mags.fold(0f32, f32::max) };
		out.scales.push(scale);
		for &i in &kept {
			out.codes.push(quantize(c[i as usize], self.bits, scale));
		}
		out.indices.extend(kept);
	}
}

impl Compressor for TopKCompressor {
	fn compress(&mut self, delta: &[f32]) -> Result<CompressedUpdate> {
		if delta.len() != self.error.len() {
			return Err(Error::Layout(format!(
				"top-k compressor built for {} values, given {}",
				self.error.len(),
				delta.len()
			)));
		}
		let acc = super::adaptive::corrected(delta, &self.error, self.decay);
		if acc.iter().any(|x| !x.is_finite()) {
			return Err(Error::Config("cannot compress a non-finite update".into()));
		}
		let mut update = TopKUpdate {
			len: acc.len(),
			chunk: self.chunk,
			k: self.k,
			bits: self.bits,
			scales: Vec::with_capacity(chunks(acc.len(), self.chunk)),
			indices: Vec::new(),
			codes: Vec::new(),
		};
		for c in acc.chunks(self.chunk) {
			self.compress_chunk(c, &mut update);
		}
		let sent = update.decompress();
		self.error = acc.iter().zip(&sent).map(|(a, s)| a - s).collect();
		Ok(CompressedUpdate::TopK(update))
	}
}

/// Appends bits least-significant first.
struct BitWriter<'a> {
	out: &'a mut Vec<u8>,
	used: u32,
}

impl BitWriter<'_> {
	fn write(&mut self, value: u32, bits: u32) {
		for b in 0..bits {
			if self.used == 0 {
				self.out.push(0);
			}
			let last = self.out.len() - 1;
			self.out[last] |= (((value >> b) & 1) as u8) << self.used;
			self.used = (self.used + 1) % 8;
		}
	}

	/// `value` Rice-coded with parameter `r`: `value >> r` one bits, a zero, the low r bits.
	fn rice(&mut self, value: u32, r: u32) {
		for _ in 0..value >> r {
			self.write(1, 1);
		}
		self.write(0, 1);
		self.write(value & ((1 << r) - 1), r);
	}
}

/// Reads bits least-significant first, refusing to read past the end.
struct BitReader<'a> {
	bytes: &'a [u8],
	pos: usize,
}

impl BitReader<'_> {
	fn bit(&mut self) -> Result<u32> {
		let byte = self.bytes.get(self.pos / 8).ok_or_else(|| {
			Error::Decode(format!("truncated: the index and value stream ends at bit {}", self.pos))
		})?;
		let bit = (byte >> (self.pos % 8)) & 1;
		self.pos += 1;
		Ok(u32::from(bit))
	}

	fn read(&mut self, bits: u32) -> Result<u32> {
		let mut v = 0;
		for b in 0..bits {
			v |= self.bit()? << b;
		}
		Ok(v)
	}

	/// A Rice-coded value with parameter `r`, refused once it would reach `limit`.
	fn rice(&mut self, r: u32, limit: u32) -> Result<u32> {
		let mut high = 0u32;
		while self.bit()? == 1 {
			high += 1;
			if u64::from(high) << r >= u64::from(limit) {
				return Err(Error::Decode(format!("an index gap reaches past {limit}")));
			}
		}
		Ok((high << r) | self.read(r)?)
	}
}

impl TopKUpdate {
	/// The scheme that produced it.
	pub fn scheme(&self) -> Compression {
		Compression::TopK { chunk: self.chunk as u32, k: self.k as u32, value_bits: self.bits }
	}

	/// Number of values it stands for.
	pub fn len(&self) -> usize {
		self.len
	}

	/// Whether it stands for no values.
	pub fn is_empty(&self) -> bool {
		self.len == 0
	}

	/// Kept values per chunk, chunk by chunk.
	fn kept_per_chunk(&self) -> impl Iterator<Item = usize> + '_ {
		(0..chunks(self.len, self.chunk)).map(|c| self.k.min(self.len - c * self.chunk))
	}

	/// The dense vector (zeros where nothing was kept).
	pub fn decompress(&self) -> Vec<f32> {
		let mut out = vec![0f32; self.len];
		self.write_range(0, &mut out);
		out
	}

	/// The kept values, dequantized, in coordinate order.
	pub(super) fn kept_values(&self) -> impl Iterator<Item = f32> + '_ {
		self.codes.iter().enumerate().map(|(j, &code)| {
			// Every chunk but a short last one keeps k.
			dequantize(code, self.bits, self.scales[j / self.k])
		})
	}

	/// Writes values `start..start + out.len()` into `out` (zeros where nothing was kept),
	/// reading only the chunks the range covers: chunk c's kept values start at c·k.
	pub(super) fn write_range(&self, start: usize, out: &mut [f32]) {
		out.fill(0.0);
		let end = start + out.len();
		assert!(end <= self.len, "values {start}..{end} of an update of {}", self.len);
		if out.is_empty() {
			return;
		}
		for c in start / self.chunk..chunks(end, self.chunk) {
			let first = c * self.k;
			let kept = self.k.min(self.len - c * self.chunk);
			for j in first..first + kept {
				let pos = c * self.chunk + self.indices[j] as usize;
				if (start..end).contains(&pos) {
					out[pos - start] = dequantize(self.codes[j], self.bits, self.scales[c]);
				}
			}
		}
	}

	pub(super) fn encode_payload(&self, out: &mut Vec<u8>) {
		out.extend_from_slice(&(self.chunk as u32).to_le_bytes());
		out.extend_from_slice(&(self.k as u32).to_le_bytes());
		out.push(self.bits);
		for s in &self.scales {
			out.extend_from_slice(&s.to_le_bytes());
		}
		let r = rice_bits(self.chunk, self.k);
		let mut w = BitWriter { out, used: 0 };
		let mut at = 0;
		for kept in self.kept_per_chunk() {
			let mut next = 0;
			for &i in &self.indices[at..at + kept] {
				w.rice(i - next, r);
				next = i + 1;
			}
			for &code in &self.codes[at..at + kept] {
				w.write(u32::from(code), u32::from(self.bits));
			}
			at += kept;
		}
	}

	pub(super) fn decode_payload(r: &mut Reader, len: usize) -> Result<Self> {
		let (chunk, k, bits) = (r.u32()? as usize, r.u32()? as usize, r.u8()?);
		check_params(chunk, k, bits).map_err(Error::Decode)?;
		let scales = r.finite_f32s(chunks(len, chunk), "scale")?;
		if let Some(i) = scales.iter().position(|s| *s < 0.0) {
			return Err(Error::Decode(format!("scale {i} is negative")));
		}
		let mut update =
			TopKUpdate { len, chunk, k, bits, scales, indices: Vec::new(), codes: Vec::new() };
		let mut bits_in = BitReader { bytes: r.rest(), pos: 0 };
		let rice = rice_bits(chunk, k);
		let counts: Vec<usize> = update.kept_per_chunk().collect();
		for (c, kept) in counts.into_iter().enumerate() {
			let size = chunk.min(len - c * chunk) as u32;
			let mut next = 0u32;
			for _ in 0..kept {
				let i = next.saturating_add(bits_in.rice(rice, size)?);
				if i >= size {
					return Err(Error::Decode(format!(
						"chunk {c}: kept index {i} is outside its {size} values"
					)));
				}
				next = i + 1;
				update.indices.push(i);
			}
			for _ in 0..kept {
				let code = bits_in.read(u32::from(bits))? as u8;
				update.codes.push(code);
			}
		}
		let used = bits_in.pos;
		let stream = r.take(used.div_ceil(8))?;
		// Padding bits must be zero so that every update has exactly one encoding.
		if !used.is_multiple_of(8) && stream[stream.len() - 1] >> (used % 8) != 0 {
			return Err(Error::Decode("non-zero padding bits".into()));
		}
		Ok(update)
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::rng::Rng;

	#[test]
	fn keeps_the_largest_values_with_exact_low_bit_levels() {
		let x = [0.1f32, -0.9, 0.0, 0.4, 0.05, -0.2, 0.3, 0.8];
		let mut c = TopKCompressor::new(4, 2, 2, x.len()).unwrap();
		let dense = c.compress(&x).unwrap().decompress();
		// Chunk 1 keeps -0.9 (→ -0.9) and 0.4 (→ 0.45: level 1 of 2 at scale 0.9).
		// Chunk 2 keeps 0.3 and 0.8 (→ 0.4 and 0.8).
		assert_eq!(dense, [0.0, -0.9, 0.0, 0.45, 0.0, 0.0, 0.4, 0.8]);
		// The error memory holds exactly what was not sent.
		let expected: Vec<f32> = x.iter().zip(&dense).map(|(a, b)| a - b).collect();
		assert_eq!(c.error(), &expected[..]);
	}

	#[test]
	fn error_feedback_delivers_the_sum_over_rounds() {
		// Sending the same Δ for many rounds, the sum of what was sent tracks the sum of Δs:
		// the residual stays bounded instead of the dropped coordinates being lost.
		let mut rng = Rng::new(5);
		let x: Vec<f32> = (0..256).map(|_| rng.normal() as f32).collect();
		let mut c = TopKCompressor::new(64, 4, 2, x.len()).unwrap();
		let rounds = 200;
		let mut sent = vec![0f32; x.len()];
		for _ in 0..rounds {
			for (s, v) in sent.iter_mut().zip(c.compress(&x).unwrap().decompress()) {
				*s += v;
			}
		}
		let rel: f64 = x
			.iter()
			.zip(&sent)
			.map(|(a, s)| (f64::from(*s) / rounds as f64 - f64::from(*a)).abs())
			.fold(0.0, f64::max);
		assert!(rel < 0.1, "average of sent values is off by up to {rel}");
	}

	#[test]
	fn error_decay_zero_forgets_and_bad_decays_are_rejected() {
		let x: Vec<f32> = (0..64).map(|i| (i as f32 - 31.5) / 10.0).collect();
		let mut memoryless =
			TopKCompressor::new(16, 2, 2, 64).unwrap().with_error_decay(0.0).unwrap();
		let first = memoryless.compress(&x).unwrap();
		assert_eq!(memoryless.compress(&x).unwrap(), first);
		let mut plain = TopKCompressor::new(16, 2, 2, 64).unwrap();
		assert_eq!(plain.compress(&x).unwrap(), first);
		assert_ne!(plain.compress(&x).unwrap(), first, "plain error feedback remembers");
		assert!(TopKCompressor::new(16, 2, 2, 64).unwrap().with_error_decay(1.5).is_err());
	}

	/// Bits of the index and value stream of `u`: each gap Rice-coded, each code fixed.
	fn stream_bits(u: &TopKUpdate) -> usize {
		let r = rice_bits(u.chunk, u.k) as usize;
		let mut bits = 0;
		let mut at = 0;
		for kept in u.kept_per_chunk() {
			let mut next = 0;
			for &i in &u.indices[at..at + kept] {
				bits += (i - next) as usize >> r;
				bits += 1 + r + usize::from(u.bits);
				next = i + 1;
			}
			at += kept;
		}
		bits
	}

	#[test]
	fn indices_are_rice_coded_gaps_and_sizes_are_exact() {
		let mut rng = Rng::new(9);
		for (chunk, k, bits, len) in
			[(64u32, 8u32, 2u8, 4_096usize), (4_096, 64, 2, 10_000), (8, 3, 3, 10)]
		{
			let x: Vec<f32> = (0..len).map(|_| rng.normal() as f32).collect();
			let mut c = TopKCompressor::new(chunk, k, bits, x.len()).unwrap();
			let CompressedUpdate::TopK(u) = c.compress(&x).unwrap() else {
				panic!("a top-k compressor makes top-k updates")
			};
			let chunks = len.div_ceil(chunk as usize);
			let header = 4 + 1 + 8 + 9 + 4 * chunks;
			let bytes = CompressedUpdate::TopK(u.clone()).encode();
			assert_eq!(bytes.len(), header + stream_bits(&u).div_ceil(8), "{chunk}/{k}");
			// Fewer bits than fixed-width indices (⌈log2 chunk⌉ each) wherever k is well
			// below the chunk.
			let fixed = (usize::BITS - (chunk as usize - 1).leading_zeros()) as usize;
			let kept = u.indices.len();
			if chunk >= 8 * k {
				assert!(stream_bits(&u) < kept * (fixed + usize::from(bits)), "{chunk}/{k}");
			}
		}
		assert_eq!(
			(rice_bits(256, 8), rice_bits(4_096, 64), rice_bits(8, 8), rice_bits(8, 3)),
			(5, 6, 0, 1)
		);
	}

	#[test]
	fn non_canonical_or_hostile_bytes_are_rejected() {
		let x: Vec<f32> = (0..10).map(|i| i as f32 - 4.5).collect();
		let mut c = TopKCompressor::new(8, 3, 3, x.len()).unwrap();
		let CompressedUpdate::TopK(update) = c.compress(&x).unwrap() else {
			panic!("a top-k compressor makes top-k updates")
		};
		let bytes = CompressedUpdate::TopK(update.clone()).encode();
		let header = 4 + 1 + 8 + 9 + 2 * 4;
		// A kept index past its chunk (chunk 0 holds 8 values).
		let mut outside = update.clone();
		outside.indices[2] = 9;
		let err = CompressedUpdate::decode(&CompressedUpdate::TopK(outside).encode())
			.unwrap_err()
			.to_string();
		assert!(err.contains("outside") || err.contains("reaches past"), "{err}");
		// A run of one bits (an endless gap) is cut off at the chunk's size, not read on.
		let mut ones = bytes[..header].to_vec();
		ones.extend_from_slice(&[0xff; 64]);
		let err = CompressedUpdate::decode(&ones).unwrap_err().to_string();
		assert!(err.contains("reaches past"), "{err}");
		// A stream that stops short.
		let err = CompressedUpdate::decode(&bytes[..header + 1]).unwrap_err().to_string();
		assert!(err.contains("truncated"), "{err}");
		// Padding bits set.
		let used = stream_bits(&update);
		assert!(!used.is_multiple_of(8), "this case has padding");
		let mut padded = bytes.clone();
		let last = padded.len() - 1;
		padded[last] |= 0x80;
		let err = CompressedUpdate::decode(&padded).unwrap_err().to_string();
		assert!(err.contains("padding"), "{err}");
		// A NaN scale.
		let mut nan = bytes.clone();
		nan[4 + 1 + 8 + 9..4 + 1 + 8 + 9 + 4].copy_from_slice(&f32::NAN.to_le_bytes());
		assert!(CompressedUpdate::decode(&nan).unwrap_err().to_string().contains("not finite"));
		// k above chunk in the header.
		let mut bad_k = bytes;
		bad_k[4 + 1 + 8 + 4] = 9;
		assert!(CompressedUpdate::decode(&bad_k).is_err());
	}
}
