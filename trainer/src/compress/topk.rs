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

use super::{
	bits::{rice_bits, BitReader, BitWriter},
	chunks, Reader,
};
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

/// Refuses a k outside 1..=chunk, a chunk over 2^32 values or bits outside 1..=8.
pub(super) fn check_params(chunk: usize, k: usize, bits: u8) -> Result<(), String> {
	if chunk == 0 || k == 0 || k > chunk || !(1..=8).contains(&bits) || chunk > u32::MAX as usize {
		return Err(format!(
			"top-k needs 1 ≤ k ≤ chunk and 1 ≤ bits ≤ 8 (chunk {chunk}, k {k}, bits {bits})"
		));
	}
	Ok(())
}

/// The positions of the `keep` (at least one) largest magnitudes of `values`, increasing.
/// Ties go to the lower position: a total order, so every node picks the same.
pub(super) fn largest(values: &[f32], keep: usize) -> Vec<u32> {
	let by_magnitude = |a: &u32, b: &u32| {
		values[*b as usize].abs().total_cmp(&values[*a as usize].abs()).then(a.cmp(b))
	};
	let mut order: Vec<u32> = (0..values.len() as u32).collect();
	if keep < values.len() {
		order.select_nth_unstable_by(keep - 1, by_magnitude);
	}
	order.truncate(keep);
	order.sort_unstable();
	order
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

impl TopKUpdate {
	/// `values` (finite) compressed: each chunk keeps its `k` largest magnitudes at `bits`
	/// bits (parameters checked by the caller).
	pub(super) fn compress(values: &[f32], chunk: usize, k: usize, bits: u8) -> Self {
		let mut out = TopKUpdate {
			len: values.len(),
			chunk,
			k,
			bits,
			scales: Vec::with_capacity(chunks(values.len(), chunk)),
			indices: Vec::new(),
			codes: Vec::new(),
		};
		for c in values.chunks(chunk) {
			let kept = largest(c, k.min(c.len()));
			let mags = kept.iter().map(|&i| c[i as usize].abs());
			let scale = if bits == 1 {
				mags.sum::<f32>() / kept.len() as f32
			} else {
				mags.fold(0f32, f32::max)
			};
			out.scales.push(scale);
			out.codes.extend(kept.iter().map(|&i| quantize(c[i as usize], bits, scale)));
			out.indices.extend(kept);
		}
		out
	}

	/// `values` compressed with the scheme's parameters, refused when they are invalid or
	/// the values are not finite: a compression with no error memory (what a replay does).
	pub fn compress_checked(values: &[f32], chunk: u32, k: u32, bits: u8) -> Result<Self> {
		check_params(chunk as usize, k as usize, bits).map_err(Error::Config)?;
		super::check_finite(values)?;
		Ok(TopKUpdate::compress(values, chunk as usize, k as usize, bits))
	}

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
		let mut w = BitWriter::new(out);
		let mut at = 0;
		for kept in self.kept_per_chunk() {
			w.positions(self.indices[at..at + kept].iter().copied(), r);
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
		let mut bits_in = BitReader::new(r.rest());
		let rice = rice_bits(chunk, k);
		let counts: Vec<usize> = update.kept_per_chunk().collect();
		for (c, kept) in counts.into_iter().enumerate() {
			let size = chunk.min(len - c * chunk) as u32;
			update.indices.extend(bits_in.positions(kept, size, rice, || format!("chunk {c}"))?);
			for _ in 0..kept {
				let code = bits_in.read(u32::from(bits))? as u8;
				update.codes.push(code);
			}
		}
		bits_in.finish(r)?;
		Ok(update)
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		compress::{CompressedUpdate, Compressor, FeedbackCompressor, Layout},
		rng::Rng,
	};

	/// A top-k compressor with error feedback for vectors of `len` values.
	fn topk(chunk: u32, k: u32, value_bits: u8, len: usize) -> FeedbackCompressor {
		FeedbackCompressor::new(Compression::TopK { chunk, k, value_bits }, &Layout::flat(len))
			.unwrap()
	}

	#[test]
	fn a_header_claiming_more_positions_than_its_stream_holds_is_truncated() {
		// 2^32 - 1 values in one chunk keeping them all, one scale, 4 KiB of stream.
		let mut bytes = crate::compress::MAGIC.to_vec();
		bytes.push(2);
		bytes.extend_from_slice(&u64::from(u32::MAX).to_le_bytes());
		bytes.extend_from_slice(&u32::MAX.to_le_bytes());
		bytes.extend_from_slice(&u32::MAX.to_le_bytes());
		bytes.push(8);
		bytes.extend_from_slice(&1.0f32.to_le_bytes());
		bytes.extend_from_slice(&[0u8; 4_096]);
		let err = CompressedUpdate::decode(&bytes).unwrap_err().to_string();
		assert!(err.contains("truncated"), "{err}");
	}

	#[test]
	fn keeps_the_largest_values_with_exact_low_bit_levels() {
		let x = [0.1f32, -0.9, 0.0, 0.4, 0.05, -0.2, 0.3, 0.8];
		let mut c = topk(4, 2, 2, x.len());
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
		let mut c = topk(64, 4, 2, x.len());
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
		let mut memoryless = topk(16, 2, 2, 64).with_error_decay(0.0).unwrap();
		let first = memoryless.compress(&x).unwrap();
		assert_eq!(memoryless.compress(&x).unwrap(), first);
		let mut plain = topk(16, 2, 2, 64);
		assert_eq!(plain.compress(&x).unwrap(), first);
		assert_ne!(plain.compress(&x).unwrap(), first, "plain error feedback remembers");
		assert!(topk(16, 2, 2, 64).with_error_decay(1.5).is_err());
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
			let mut c = topk(chunk, k, bits, x.len());
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
		let mut c = topk(8, 3, 3, x.len());
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
