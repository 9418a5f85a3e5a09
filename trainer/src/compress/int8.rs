//! Int8 per-chunk quantization (as in INTELLECT-1): each chunk of `chunk` values is scaled by
//! its largest magnitude and rounded to -127..=127. Payload: chunk (u32), one f32 scale per
//! chunk, then one i8 per value.

use super::{chunks, CompressedUpdate, Compressor, Reader};
use crate::error::{Error, Result};

/// A quantized update.
#[derive(Clone, Debug, PartialEq)]
pub struct Int8Update {
	chunk: usize,
	scales: Vec<f32>,
	values: Vec<i8>,
}

/// Quantizes with one scale per `chunk` values.
pub struct Int8Quantizer {
	chunk: usize,
}

impl Int8Quantizer {
	/// A quantizer with `chunk` values per scale (at least one).
	pub fn new(chunk: u32) -> Result<Self> {
		if chunk == 0 {
			return Err(Error::Config("int8 chunk must be at least 1".into()));
		}
		Ok(Int8Quantizer { chunk: chunk as usize })
	}
}

impl Compressor for Int8Quantizer {
	fn compress(&mut self, delta: &[f32]) -> Result<CompressedUpdate> {
		let mut scales = Vec::with_capacity(chunks(delta.len(), self.chunk));
		let mut values = Vec::with_capacity(delta.len());
		for c in delta.chunks(self.chunk) {
			let max = c.iter().fold(0f32, |m, x| m.max(x.abs()));
			if !max.is_finite() {
				return Err(Error::Config("cannot quantize a non-finite update".into()));
			}
			let scale = max / 127.0;
			scales.push(scale);
			values.extend(c.iter().map(|x| {
				if scale == 0.0 {
					0
				} else {
					(x / scale).round().clamp(-127.0, 127.0) as i8
				}
			}));
		}
		Ok(CompressedUpdate::Int8(Int8Update { chunk: self.chunk, scales, values }))
	}
}

impl Int8Update {
	/// Number of values.
	pub fn len(&self) -> usize {
		self.values.len()
	}

	/// Whether there are no values.
	pub fn is_empty(&self) -> bool {
		self.values.is_empty()
	}

	/// Values per scale.
	pub fn chunk(&self) -> u32 {
		self.chunk as u32
	}

	/// The quantized values, one per coordinate (value k is `codes()[k]` times
	/// `scales()[k / chunk]`).
	pub fn codes(&self) -> &[i8] {
		&self.values
	}

	/// One scale per chunk of values.
	pub fn scales(&self) -> &[f32] {
		&self.scales
	}

	/// The dense vector.
	pub fn decompress(&self) -> Vec<f32> {
		let mut out = vec![0f32; self.values.len()];
		self.write_range(0, &mut out);
		out
	}

	/// The values, dequantized, in order.
	pub(super) fn values(&self) -> impl Iterator<Item = f32> + '_ {
		let chunks = self.values.chunks(self.chunk).zip(&self.scales);
		chunks.flat_map(|(c, &scale)| c.iter().map(move |&q| f32::from(q) * scale))
	}

	/// Writes values `start..start + out.len()` into `out`, a chunk's part at a time.
	pub(super) fn write_range(&self, start: usize, out: &mut [f32]) {
		let values = &self.values[start..start + out.len()];
		let mut at = 0;
		while at < out.len() {
			let chunk = (start + at) / self.chunk;
			let end = ((chunk + 1) * self.chunk - start).min(out.len());
			let scale = self.scales[chunk];
			for (o, &q) in out[at..end].iter_mut().zip(&values[at..end]) {
				*o = f32::from(q) * scale;
			}
			at = end;
		}
	}

	pub(super) fn encode_payload(&self, out: &mut Vec<u8>) {
		out.extend_from_slice(&(self.chunk as u32).to_le_bytes());
		for s in &self.scales {
			out.extend_from_slice(&s.to_le_bytes());
		}
		out.extend(self.values.iter().map(|&q| q as u8));
	}

	pub(super) fn decode_payload(r: &mut Reader, len: usize) -> Result<Self> {
		let chunk = r.u32()? as usize;
		if chunk == 0 {
			return Err(Error::Decode("int8 chunk of zero".into()));
		}
		let scales = r.finite_f32s(chunks(len, chunk), "scale")?;
		if let Some(i) = scales.iter().position(|s| *s < 0.0) {
			return Err(Error::Decode(format!("scale {i} is negative")));
		}
		let raw = r.take(len)?;
		if raw.contains(&0x80) {
			// -128 is never produced; accepting it would give two encodings of one update.
			return Err(Error::Decode("int8 value -128 is not canonical".into()));
		}
		let values = raw.iter().map(|&b| b as i8).collect();
		Ok(Int8Update { chunk, scales, values })
	}
}
