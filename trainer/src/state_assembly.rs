//! A recorded state in the parts format ([`crate::work_state`]: a work state or a step state)
//! put together from the pieces it is fetched in: each piece's bytes are copied straight to
//! where its values go and the piece is freed, so the encoded state never exists whole
//! beside its values. Joining the pieces first and decoding the joined bytes held the
//! state's pieces, then its bytes, then its bytes and its values at once: twice a state of
//! up to three model-sized vectors, and a segment check fetches two such states (half of
//! that now, and about a third of the time or less: `bench/join.sh`, `reports/assemble.md`). Decoding a whole encoding in memory
//! ([`crate::work_state::decode_parts`]) goes through the same steps, so both refuse the
//! same things with the same reasons.

use crate::{
	error::{Error, Result},
	params::from_le,
	work_state::{Moments, StateFormat, HEADER_BYTES},
};

/// A state's values, all in place and checked (finite, no negative second moment), and
/// the format they came in.
#[derive(Clone, Debug, PartialEq)]
pub struct Parts {
	/// The format its bytes were in.
	pub format: &'static StateFormat,
	/// Inner steps taken so far.
	pub step: u64,
	/// The optimizer's moments, when it keeps any.
	pub moments: Option<Moments>,
	/// The state's one vector of model values (a residual, or parameters).
	pub values: Vec<f32>,
}

impl Parts {
	/// Its step, moments and values if it is in `format`, else why not.
	pub fn into_format(self, format: &StateFormat) -> Result<(u64, Option<Moments>, Vec<f32>)> {
		if self.format.magic != format.magic {
			return Err(Error::Decode(format!(
				"a {} where a {} was asked for",
				self.format.kind, format.kind
			)));
		}
		Ok((self.step, self.moments, self.values))
	}
}

/// A state being put together: its header read, its vectors set aside at their full
/// length, filled as its bytes come in any order.
#[derive(Debug)]
pub struct Assembly {
	format: &'static StateFormat,
	step: u64,
	/// The first moments, the second moments (when the header flags them) and the values.
	vectors: Vec<Vec<f32>>,
	/// The encoding's length.
	total: u64,
}

impl Assembly {
	/// Starts a state in `format` from its first bytes (its header at least, from offset 0)
	/// and its whole length `total`, for a model of `len` values. Refuses a header that is
	/// malformed, for another model, or whose length is not `total`.
	pub fn start(
		format: &'static StateFormat,
		first: &[u8],
		total: u64,
		len: usize,
	) -> Result<Self> {
		if first.get(..4) != Some(&format.magic[..]) {
			return Err(Error::Decode(format!(
				"bad magic (not a Grid {}, or another version)",
				format.kind
			)));
		}
		let Some(header) = first.get(..HEADER_BYTES) else {
			return Err(Error::Decode(format!(
				"truncated: a {} header takes {HEADER_BYTES} bytes, {} came",
				format.kind,
				first.len()
			)));
		};
		let le_u64 =
			|at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
		let step = le_u64(4);
		let with_moments = match header[12] {
			0 => false,
			1 => true,
			flag => return Err(Error::Decode(format!("unknown moments flag {flag}"))),
		};
		let n = le_u64(13);
		if n != len as u64 {
			return Err(Error::Decode(format!(
				"a {} of {n} values for a model of {len}",
				format.kind
			)));
		}
		let expected = crate::work_state::parts_len(with_moments, len) as u64;
		if total < expected {
			return Err(Error::Decode(format!(
				"truncated: a {} of {len} values takes {expected} bytes, not {total}",
				format.kind
			)));
		}
		if total > expected {
			return Err(Error::Decode(format!("{} trailing bytes", total - expected)));
		}
		let count = if with_moments { 3 } else { 1 };
		// Zeroed vectors from the system are pages not yet touched: each fills as its bytes land.
		let vectors = (0..count).map(|_| vec![0.0f32; len]).collect();
		Ok(Assembly { format, step, vectors, total })
	}

	/// Copies `bytes`, found at `offset` of the encoding, to the values they encode (the
	/// header's bytes were read at the start).
	pub fn put(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
		let end = offset.checked_add(bytes.len() as u64).filter(|end| *end <= self.total);
		if end.is_none() {
			return Err(Error::Decode(format!(
				"{} bytes at offset {offset} of a {} of {} bytes",
				bytes.len(),
				self.format.kind,
				self.total
			)));
		}
		let header_left = (HEADER_BYTES as u64).saturating_sub(offset).min(bytes.len() as u64);
		let mut bytes = &bytes[header_left as usize..];
		if bytes.is_empty() {
			return Ok(());
		}
		// Past the header now: offset + header_left is at least HEADER_BYTES.
		let mut at = (offset + header_left) as usize - HEADER_BYTES;
		let vector_bytes = 4 * self.vectors[0].len();
		while !bytes.is_empty() {
			let (which, within) = (at / vector_bytes, at % vector_bytes);
			let take = (vector_bytes - within).min(bytes.len());
			let target: &mut [u8] = bytemuck::cast_slice_mut(&mut self.vectors[which]);
			target[within..within + take].copy_from_slice(&bytes[..take]);
			(at, bytes) = (at + take, &bytes[take..]);
		}
		Ok(())
	}

	/// The state, once every byte is in: refuses non-finite values and negative second
	/// moments, naming the first.
	pub fn finish(mut self) -> Result<Parts> {
		for vector in &mut self.vectors {
			from_le(vector);
		}
		let values = self.vectors.pop().expect("a state has its values");
		let moments = match <[Vec<f32>; 2]>::try_from(self.vectors) {
			Ok([m, v]) => {
				all_finite(&m, "first moment")?;
				all_finite(&v, "second moment")?;
				if let Some(i) = v.iter().position(|x| *x < 0.0) {
					return Err(Error::Decode(format!("second moment {i} is negative")));
				}
				Some(Moments { m, v })
			}
			Err(_) => None,
		};
		all_finite(&values, self.format.value)?;
		Ok(Parts { format: self.format, step: self.step, moments, values })
	}
}

fn all_finite(values: &[f32], what: &str) -> Result<()> {
	match values.iter().position(|x| !x.is_finite()) {
		Some(i) => Err(Error::Decode(format!("{what} {i} is not finite"))),
		None => Ok(()),
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::work_state::{Moments, WorkState};

	fn sample(len: usize) -> WorkState {
		let at = |i: usize, k: f32| (i as f32 * 0.37 + k).sin();
		WorkState {
			step: 7,
			moments: Some(Moments {
				m: (0..len).map(|i| at(i, 1.0)).collect(),
				v: (0..len).map(|i| at(i, 2.0).abs()).collect(),
			}),
			residual: (0..len).map(|i| at(i, 3.0)).collect(),
		}
	}

	const WORK: &StateFormat = &crate::work_state::WORK_STATE;

	/// Puts `bytes` together from pieces of `piece` bytes, in the order `order` gives.
	fn assemble(bytes: &[u8], len: usize, piece: usize, order: &[usize]) -> Result<Parts> {
		let mut assembly = Assembly::start(WORK, &bytes[..HEADER_BYTES], bytes.len() as u64, len)?;
		let pieces: Vec<(usize, &[u8])> =
			bytes.chunks(piece).enumerate().map(|(i, c)| (i * piece, c)).collect();
		for &i in order {
			let (offset, chunk) = pieces[i];
			assembly.put(offset as u64, chunk)?;
		}
		assembly.finish()
	}

	#[test]
	fn pieces_in_any_order_and_across_vectors_make_the_state() {
		let state = sample(50);
		let bytes = state.encode();
		// Pieces of 7 bytes split values and straddle the header and every vector's end.
		let count = bytes.len().div_ceil(7);
		let forward: Vec<usize> = (0..count).collect();
		let backward: Vec<usize> = (0..count).rev().collect();
		for order in [forward, backward] {
			let parts = assemble(&bytes, 50, 7, &order).unwrap();
			let (step, moments, residual) = parts.into_format(WORK).unwrap();
			assert_eq!(WorkState { step, moments, residual }, state);
		}
		let sgd = WorkState { moments: None, ..state };
		let parts = assemble(&sgd.encode(), 50, 64, &(0..4).collect::<Vec<_>>()).unwrap();
		assert_eq!(parts.moments, None);
		assert_eq!(parts.values, sgd.residual);
	}

	#[test]
	fn a_hostile_sender_cannot_overflow_mislabel_or_poison_a_state() {
		let bytes = sample(8).encode();
		let total = bytes.len() as u64;
		let start = |first: &[u8], total: u64| {
			Assembly::start(WORK, first, total, 8).unwrap_err().to_string()
		};
		// A size that is not the header's.
		assert!(start(&bytes, total + 1).contains("1 trailing bytes"));
		assert!(start(&bytes, total - 1).contains("truncated"));
		assert!(start(&bytes[..10], total).contains("truncated"));
		// A state for another model, or another kind of state.
		assert!(Assembly::start(WORK, &bytes, total, 9)
			.unwrap_err()
			.to_string()
			.contains("for a model of 9"));
		let step_format = &crate::trajectory::STEP_STATE;
		let err = Assembly::start(step_format, &bytes, total, 8).unwrap_err().to_string();
		assert!(err.contains("bad magic (not a Grid step state"), "{err}");
		let parts =
			assemble(&bytes, 8, 16, &(0..bytes.len().div_ceil(16)).collect::<Vec<_>>()).unwrap();
		let err = parts.into_format(step_format).unwrap_err().to_string();
		assert!(err.contains("a work state where a step state was asked for"), "{err}");
		// Bytes past the end are refused, not written.
		let mut assembly = Assembly::start(WORK, &bytes, total, 8).unwrap();
		let err = assembly.put(total - 2, &[0; 4]).unwrap_err().to_string();
		assert!(err.contains("4 bytes at offset"), "{err}");
		assert!(assembly.put(u64::MAX, &[0]).is_err());
		// A NaN in a piece is found when the state is finished.
		let mut poisoned = bytes.clone();
		let at = HEADER_BYTES + 4 * 8 + 4 * 3;
		poisoned[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
		let err = assemble(&poisoned, 8, 16, &(0..poisoned.len().div_ceil(16)).collect::<Vec<_>>());
		assert!(err.unwrap_err().to_string().contains("second moment 3 is not finite"));
	}
}
