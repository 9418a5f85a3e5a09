//! What a participant carries from one round to the next besides the global model: the inner
//! optimizer's position (step counter, which is also the learning-rate schedule's position)
//! and moments, and the compressor's error-feedback residual.
//!
//! A round's update is a deterministic function of this state, the round's base model and the
//! participant's data seed and step count. So a commitment to the state's digests
//! ([`WorkDigests`]) lets anyone who fetches the state by them redo the round exactly
//! ([`crate::verify`]): honest work then replays to (nearly) the same update, anything else
//! does not.
//!
//! Encoding, little-endian: magic `GWS1`, step (u64), moments flag (u8: 0 none, 1 AdamW),
//! value count n (u64), then the first and second moments (n f32 each, when flagged) and the
//! residual (n f32). Decoding refuses anything malformed, truncated, non-finite or with a
//! negative second moment, so a hostile peer's state cannot put NaNs into a replay.

use std::io::Write;

use blake2::Digest as _;

use crate::{
	error::{Error, Result},
	params::{le_bytes, Blake2b256, Digest},
	state_assembly::{Assembly, Parts},
};

/// First bytes of an encoded state; the digit is the format version.
pub const MAGIC: &[u8; 4] = b"GWS1";
/// Domain separators of the digests; bump the versions when an encoding changes.
/// Bytes before the values: magic, step, moments flag, value count.
pub(crate) const HEADER_BYTES: usize = 4 + 8 + 1 + 8;
const OPTIMIZER_DOMAIN: &str = "grid/work-optimizer/v2";
const RESIDUAL_DOMAIN: &str = "grid/work-residual/v2";
const ID_DOMAIN: &[u8] = b"grid/work-state/v1";

/// AdamW's first and second moments, flat in manifest order.
#[derive(Clone, Debug, PartialEq)]
pub struct Moments {
	/// First moments.
	pub m: Vec<f32>,
	/// Second moments (never negative).
	pub v: Vec<f32>,
}

impl Moments {
	/// Errors unless both moments have `len` values.
	pub fn check_len(&self, len: usize) -> Result<()> {
		if self.m.len() != len || self.v.len() != len {
			return Err(Error::Layout(format!(
				"moments of {} and {} values for {len} parameters",
				self.m.len(),
				self.v.len()
			)));
		}
		Ok(())
	}
}

/// A participant's private training state at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkState {
	/// Inner steps taken so far: the schedule's position and AdamW's bias-correction count.
	pub step: u64,
	/// The inner optimizer's moments (`None` for SGD, which keeps none).
	pub moments: Option<Moments>,
	/// Error feedback: what compression has left out of earlier updates.
	pub residual: Vec<f32>,
}

/// What a commitment says about a [`WorkState`]: enough to fetch it and to check it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, codec::Encode, codec::Decode)]
pub struct WorkDigests {
	/// Inner steps taken before the round (the learning-rate position).
	pub step: u64,
	/// Digest of the step and the optimizer's moments.
	pub optimizer: Digest,
	/// Digest of the error-feedback residual.
	pub residual: Digest,
}

impl WorkDigests {
	/// The content address the state is served under.
	pub fn id(&self) -> Digest {
		let mut h = Blake2b256::new();
		h.update(ID_DOMAIN);
		h.update(self.step.to_le_bytes());
		h.update(self.optimizer);
		h.update(self.residual);
		h.finalize().into()
	}
}

impl WorkState {
	/// The state of a participant that has not trained yet: step 0, zero moments (for an
	/// optimizer that keeps them), zero residual, for a model of `len` values.
	pub fn fresh(len: usize, with_moments: bool) -> Self {
		let moments = with_moments.then(|| Moments { m: vec![0.0; len], v: vec![0.0; len] });
		WorkState { step: 0, moments, residual: vec![0.0; len] }
	}

	/// Number of model values it belongs to.
	pub fn len(&self) -> usize {
		self.residual.len()
	}

	/// Whether it belongs to an empty model.
	pub fn is_empty(&self) -> bool {
		self.residual.is_empty()
	}

	/// Its digests (what commitments carry).
	pub fn digests(&self) -> WorkDigests {
		WorkDigests {
			step: self.step,
			optimizer: optimizer_digest(self.step, self.moments.as_ref()),
			residual: residual_digest(&self.residual),
		}
	}

	/// The most bytes the encoding of a state of a model of `len` values takes (with
	/// moments): what a fetcher may accept for one.
	pub fn max_encoded_len(len: usize) -> u64 {
		max_parts_len(len)
	}

	/// The canonical bytes (see the module docs).
	pub fn encode(&self) -> Vec<u8> {
		encode_parts(MAGIC, self.step, self.moments.as_ref(), &self.residual)
	}

	/// Writes [`WorkState::encode`]'s bytes into `out`.
	pub fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
		write_parts(out, MAGIC, self.step, self.moments.as_ref(), &self.residual)
	}

	/// How many bytes [`WorkState::encode`] returns.
	pub fn encoded_len(&self) -> usize {
		parts_len(self.moments.is_some(), self.residual.len())
	}

	/// Parses bytes from [`WorkState::encode`] for a model of `len` values.
	pub fn decode(bytes: &[u8], len: usize) -> Result<Self> {
		let (step, moments, residual) = decode_parts(bytes, &WORK_STATE, len)?;
		Ok(WorkState { step, moments, residual })
	}

	/// Parses `bytes` and checks them against the content address `id` they were committed
	/// under ([`WorkDigests::id`], which binds the step and both digests).
	pub fn decode_committed(bytes: &[u8], len: usize, id: &Digest) -> Result<Self> {
		Self::committed(Self::decode(bytes, len)?, id)
	}

	/// The state a fetch put together ([`crate::state_assembly`]), checked as
	/// [`WorkState::decode_committed`] checks bytes.
	pub fn from_parts(parts: Parts, len: usize, id: &Digest) -> Result<Self> {
		let (step, moments, residual) = parts.into_format(&WORK_STATE)?;
		check_values(residual.len(), len, WORK_STATE.kind)?;
		Self::committed(WorkState { step, moments, residual }, id)
	}

	fn committed(state: Self, id: &Digest) -> Result<Self> {
		let got = state.digests();
		if &got.id() != id {
			return Err(Error::Decode(format!(
				"the work state does not match its commitment (step {}, id {} vs committed {})",
				got.step,
				hex::encode(&got.id()[..4]),
				hex::encode(&id[..4]),
			)));
		}
		Ok(state)
	}
}

/// [`WorkDigests::optimizer`] of an optimizer at step `step` with `moments`.
pub fn optimizer_digest(step: u64, moments: Option<&Moments>) -> Digest {
	let mut h = bulk_hasher(OPTIMIZER_DOMAIN);
	h.update(&step.to_le_bytes());
	hash_moments(&mut h, moments);
	h.finalize().into()
}

/// [`WorkDigests::residual`] of an error-feedback residual.
pub fn residual_digest(residual: &[f32]) -> Digest {
	let mut h = bulk_hasher(RESIDUAL_DOMAIN);
	hash_values(&mut h, residual);
	h.finalize().into()
}

/// Errors unless a state of `kind` has the `len` values of its model.
pub(crate) fn check_values(got: usize, len: usize, kind: &str) -> Result<()> {
	match got == len {
		true => Ok(()),
		false => Err(Error::Decode(format!("a {kind} of {got} values for a model of {len}"))),
	}
}

/// How one kind of recorded state is encoded: a step count, the optimizer's moments and one
/// vector of values (a [`WorkState`]'s residual, a [`crate::trajectory::StepState`]'s
/// parameters), under its own magic.
#[derive(Debug, PartialEq, Eq)]
pub struct StateFormat {
	/// First bytes of the encoding.
	pub magic: &'static [u8; 4],
	/// What the state is called in errors.
	pub kind: &'static str,
	/// What one of its values is called in errors.
	pub value: &'static str,
}

/// A [`WorkState`]'s format.
pub(crate) const WORK_STATE: StateFormat =
	StateFormat { magic: MAGIC, kind: "work state", value: "residual value" };

/// The most bytes [`encode_parts`] writes for a model of `len` values (with moments).
pub(crate) fn max_parts_len(len: usize) -> u64 {
	parts_len(true, len) as u64
}

/// Bytes [`encode_parts`] writes for `n` values, with or without moments.
pub(crate) fn parts_len(with_moments: bool, n: usize) -> usize {
	HEADER_BYTES + 4 * if with_moments { 3 * n } else { n }
}

/// Magic, step, moments flag, value count, then the moments (when flagged) and the values.
pub(crate) fn encode_parts(
	magic: &[u8; 4],
	step: u64,
	moments: Option<&Moments>,
	values: &[f32],
) -> Vec<u8> {
	let mut out = Vec::with_capacity(parts_len(moments.is_some(), values.len()));
	write_parts(&mut out, magic, step, moments, values).expect("writing to memory cannot fail");
	out
}

/// Writes what [`encode_parts`] returns into `out` as it goes: a state as large as the model
/// three times over goes to a file without a second copy in memory.
pub(crate) fn write_parts(
	out: &mut dyn Write,
	magic: &[u8; 4],
	step: u64,
	moments: Option<&Moments>,
	values: &[f32],
) -> std::io::Result<()> {
	out.write_all(&parts_header(magic, step, moments.is_some(), values.len()))?;
	if let Some(moments) = moments {
		out.write_all(&le_bytes(&moments.m))?;
		out.write_all(&le_bytes(&moments.v))?;
	}
	out.write_all(&le_bytes(values))
}

/// The bytes [`write_parts`] writes before the moments: magic, step, moments flag, value
/// count.
pub(crate) fn parts_header(
	magic: &[u8; 4],
	step: u64,
	with_moments: bool,
	n: usize,
) -> [u8; HEADER_BYTES] {
	let mut header = [0u8; HEADER_BYTES];
	header[..4].copy_from_slice(magic);
	header[4..12].copy_from_slice(&step.to_le_bytes());
	header[12] = u8::from(with_moments);
	header[13..].copy_from_slice(&(n as u64).to_le_bytes());
	header
}

/// Parses what [`encode_parts`] wrote in `format` for a model of `len` values, refusing
/// anything malformed, truncated, non-finite or with a negative second moment: the steps a
/// state fetched in pieces goes through ([`crate::state_assembly`]), with one piece.
pub(crate) fn decode_parts(
	bytes: &[u8],
	format: &'static StateFormat,
	len: usize,
) -> Result<(u64, Option<Moments>, Vec<f32>)> {
	let mut assembly = Assembly::start(format, bytes, bytes.len() as u64, len)?;
	assembly.put(0, bytes)?;
	assembly.finish()?.into_format(format)
}

/// The format of a state whose encoding begins with `first`, if it is in the parts format
/// (a work state or a step state; not a trajectory).
pub fn parts_format(first: &[u8]) -> Option<&'static StateFormat> {
	[&WORK_STATE, &crate::trajectory::STEP_STATE]
		.into_iter()
		.find(|format| first.get(..4) == Some(&format.magic[..]))
}

/// Feeds `moments` to a digest: a flag, then both moments when there are any.
pub(crate) fn hash_moments(h: &mut blake3::Hasher, moments: Option<&Moments>) {
	match moments {
		None => {
			h.update(&[0u8]);
		}
		Some(moments) => {
			h.update(&[1u8]);
			hash_values(h, &moments.m);
			hash_values(h, &moments.v);
		}
	}
}

/// A hasher of bulk values (moments, residuals, step states) under `domain`: BLAKE3, which
/// hashed a 0.2M-parameter GPT's step state (2.4 MB) about ten times faster than BLAKE2b on
/// one core of the build machine. Sealing a round hashes up to
/// [`crate::trajectory::MAX_MARKS`] + 1 such states between its last step and its
/// commitment, so this is time not trained (`bench/README.md`, network). None of these
/// digests goes on chain as anything but an opaque content address.
pub(crate) fn bulk_hasher(domain: &str) -> blake3::Hasher {
	blake3::Hasher::new_derive_key(domain)
}

/// Feeds `values` (little-endian) to a bulk hasher: a large vector on rayon's threads,
/// which BLAKE3's tree makes the same digest as one thread's. A 353M-parameter round's
/// sealing hashed three 4.2 GB states on one thread (9.5 s in all on an H200 host, its
/// update committed late: `bench/README.md`, "GPU providers end to end").
pub(crate) fn hash_values(h: &mut blake3::Hasher, values: &[f32]) {
	let bytes = le_bytes(values);
	if bytes.len() >= PARALLEL_HASH_BYTES {
		h.update_rayon(&bytes);
	} else {
		h.update(&bytes);
	}
}

/// BLAKE3 of `values`, little-endian: what a model-sized vector kept on disk is known by (a
/// round's base in its evidence, and the file two stores share for it).
pub fn values_digest(values: &[f32]) -> [u8; 32] {
	let mut h = bulk_hasher("grid/values/v1");
	hash_values(&mut h, values);
	h.finalize().into()
}

/// Bytes from which [`hash_values`] spreads over threads (BLAKE3's documentation: below
/// about 128 KiB the threads cost more than they save).
const PARALLEL_HASH_BYTES: usize = 1 << 20;

#[cfg(test)]
mod tests {
	use super::*;

	fn sample() -> WorkState {
		WorkState {
			step: 42,
			moments: Some(Moments { m: vec![0.5, -1.0, 2.0], v: vec![0.25, 1.0, 0.0] }),
			residual: vec![0.1, 0.0, -0.3],
		}
	}

	#[test]
	fn large_vectors_hash_on_threads_to_the_same_digest() {
		let values: Vec<f32> = (0..1_000_003).map(|i| (i as f32 * 0.37).sin()).collect();
		let mut one_thread = bulk_hasher("grid/test");
		one_thread.update(&le_bytes(&values));
		let mut threads = bulk_hasher("grid/test");
		hash_values(&mut threads, &values);
		assert_eq!(one_thread.finalize(), threads.finalize());
		assert!(values.len() * 4 >= PARALLEL_HASH_BYTES, "the threaded path is the one tested");
	}

	#[test]
	fn round_trips_and_digests_bind_every_part() {
		let state = sample();
		let bytes = state.encode();
		assert_eq!(bytes.len() as u64, WorkState::max_encoded_len(3), "the bound is exact");
		assert_eq!(WorkState::decode(&bytes, 3).unwrap(), state);
		let digests = state.digests();
		assert_eq!(WorkState::decode_committed(&bytes, 3, &digests.id()).unwrap(), state);
		let sgd = WorkState { moments: None, ..state.clone() };
		assert_eq!(WorkState::decode(&sgd.encode(), 3).unwrap(), sgd);
		// Changing any part changes a digest, and the id.
		let mut variants = vec![sgd, WorkState { step: 43, ..state.clone() }];
		let mut m = state.clone();
		m.moments.as_mut().unwrap().m[1] = -1.5;
		variants.push(m);
		let mut v = state.clone();
		v.moments.as_mut().unwrap().v[2] = 1e-9;
		variants.push(v);
		let mut r = state.clone();
		r.residual[0] = 0.2;
		variants.push(r);
		for other in variants {
			assert_ne!(other.digests(), digests, "{other:?}");
			assert_ne!(other.digests().id(), digests.id());
			let err = WorkState::decode_committed(&other.encode(), 3, &digests.id()).unwrap_err();
			assert!(err.to_string().contains("does not match its commitment"), "{err}");
		}
	}

	#[test]
	fn hostile_encodings_are_refused_with_the_reason() {
		let good = sample().encode();
		let mut cases: Vec<(Vec<u8>, usize, &str)> = vec![
			(b"GWS0".to_vec(), 3, "bad magic"),
			(good[..good.len() - 1].to_vec(), 3, "truncated"),
			([good.clone(), vec![0]].concat(), 3, "trailing"),
			(good.clone(), 4, "a work state of 3 values for a model of 4"),
		];
		let mut flag = good.clone();
		flag[12] = 7;
		cases.push((flag, 3, "unknown moments flag 7"));
		let nan_at = |offset: usize| {
			let mut b = good.clone();
			b[offset..offset + 4].copy_from_slice(&f32::NAN.to_le_bytes());
			b
		};
		// Header: magic 4, step 8, flag 1, count 8; then m (3 values), v (3), residual (3).
		cases.push((nan_at(21), 3, "first moment 0 is not finite"));
		cases.push((nan_at(21 + 12 + 4), 3, "second moment 1 is not finite"));
		cases.push((nan_at(21 + 24 + 8), 3, "residual value 2 is not finite"));
		let mut negative = good.clone();
		negative[33..37].copy_from_slice(&(-1.0f32).to_le_bytes());
		cases.push((negative, 3, "second moment 0 is negative"));
		for (bytes, len, reason) in cases {
			let err = WorkState::decode(&bytes, len).unwrap_err().to_string();
			assert!(err.contains(reason), "{reason}: {err}");
		}
	}

	#[test]
	fn a_fresh_state_is_all_zero() {
		let fresh = WorkState::fresh(4, true);
		assert_eq!(fresh.step, 0);
		assert_eq!(fresh.moments.as_ref().unwrap().v, vec![0.0; 4]);
		assert_eq!(WorkState::fresh(4, false).moments, None);
		assert_eq!(fresh.len(), 4);
	}
}
