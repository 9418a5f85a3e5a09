//! Bit streams for the sparse codecs: values least-significant bit first, and Rice codes
//! for the gaps between kept positions.

use super::Reader;
use crate::error::{Error, Result};

/// The Rice parameter of the index gaps: ⌊log2(chunk / k)⌋, about the log of the mean gap.
pub(super) fn rice_bits(chunk: usize, k: usize) -> u32 {
	(chunk / k.max(1)).max(1).ilog2()
}

/// Appends bits least-significant first.
pub(super) struct BitWriter<'a> {
	out: &'a mut Vec<u8>,
	used: u32,
}

impl<'a> BitWriter<'a> {
	/// A writer appending to `out`.
	pub(super) fn new(out: &'a mut Vec<u8>) -> Self {
		BitWriter { out, used: 0 }
	}

	pub(super) fn write(&mut self, value: u32, bits: u32) {
		for b in 0..bits {
			if self.used == 0 {
				self.out.push(0);
			}
			let last = self.out.len() - 1;
			self.out[last] |= (((value >> b) & 1) as u8) << self.used;
			self.used = (self.used + 1) % 8;
		}
	}

	/// Increasing `positions` as Rice-coded gaps (each less one) with parameter `r`.
	pub(super) fn positions(&mut self, positions: impl IntoIterator<Item = u32>, r: u32) {
		let mut next = 0;
		for p in positions {
			self.rice(p - next, r);
			next = p + 1;
		}
	}

	/// `value` Rice-coded with parameter `r`: `value >> r` one bits, a zero, the low r bits.
	pub(super) fn rice(&mut self, value: u32, r: u32) {
		for _ in 0..value >> r {
			self.write(1, 1);
		}
		self.write(0, 1);
		self.write(value & ((1 << r) - 1), r);
	}
}

/// Reads bits least-significant first, refusing to read past the end.
pub(super) struct BitReader<'a> {
	bytes: &'a [u8],
	pos: usize,
}

impl<'a> BitReader<'a> {
	/// A reader at the start of `bytes`.
	pub(super) fn new(bytes: &'a [u8]) -> Self {
		BitReader { bytes, pos: 0 }
	}

	pub(super) fn bit(&mut self) -> Result<u32> {
		let byte = self.bytes.get(self.pos / 8).ok_or_else(|| {
			Error::Decode(format!("truncated: the index and value stream ends at bit {}", self.pos))
		})?;
		let bit = (byte >> (self.pos % 8)) & 1;
		self.pos += 1;
		Ok(u32::from(bit))
	}

	pub(super) fn read(&mut self, bits: u32) -> Result<u32> {
		let mut v = 0;
		for b in 0..bits {
			v |= self.bit()? << b;
		}
		Ok(v)
	}

	/// A Rice-coded value with parameter `r`, refused once it would reach `limit`.
	pub(super) fn rice(&mut self, r: u32, limit: u32) -> Result<u32> {
		let mut high = 0u32;
		while self.bit()? == 1 {
			high += 1;
			if u64::from(high) << r >= u64::from(limit) {
				return Err(Error::Decode(format!("an index gap reaches past {limit}")));
			}
		}
		Ok((high << r) | self.read(r)?)
	}

	/// `n` increasing positions below `size` written by [`BitWriter::positions`]; a position
	/// at or past `size` is refused as outside `place` (a chunk or tile, for the message).
	pub(super) fn positions(
		&mut self,
		n: usize,
		size: u32,
		r: u32,
		place: impl Fn() -> String,
	) -> Result<Vec<u32>> {
		// Each position takes at least a bit: a count the stream cannot hold reserves nothing
		// past it (a 32 KiB update claiming 2^32 positions asked for 16 GiB).
		let room = (self.bytes.len() * 8).saturating_sub(self.pos);
		let mut out = Vec::with_capacity(n.min(size as usize).min(room));
		let mut next = 0u32;
		for _ in 0..n {
			let p = next.saturating_add(self.rice(r, size)?);
			if p >= size {
				return Err(Error::Decode(format!(
					"{}: kept position {p} is outside its {size} values",
					place()
				)));
			}
			out.push(p);
			next = p + 1;
		}
		Ok(out)
	}

	/// Consumes the bytes this reader read from `r` (whose rest it was made from), refusing
	/// set padding bits so that every stream has exactly one encoding.
	pub(super) fn finish(self, r: &mut Reader) -> Result<()> {
		let stream = r.take(self.pos.div_ceil(8))?;
		if !self.pos.is_multiple_of(8) && stream[stream.len() - 1] >> (self.pos % 8) != 0 {
			return Err(Error::Decode("non-zero padding bits".into()));
		}
		Ok(())
	}
}
