//! A round's trajectory: a trainer's whole inner state before its first step and after each
//! ([`StepState`]), each state's digest, and the root over them that a commitment would
//! carry, so that a verifier can check any few steps of the round from the states recorded
//! before and after them ([`crate::verify::judge_segment`]) and know that they are the states
//! the trainer committed to before it learnt which steps would be checked.
//!
//! A step state is encoded as a [`WorkState`](crate::work_state::WorkState) is (magic
//! `GSS1`, step, moments flag, value count, moments, then the parameters in place of the
//! residual), and refused on the same grounds. A trajectory's digests are encoded as magic
//! `GTR1`, a count (u32) and the digests; its root binds the count and every digest.
//!
//! What is not built yet (issue 23): recording the trajectory in the daemon's rounds,
//! the root in the signed commitment, serving the states, and the check in the fraud desk.

use blake2::Digest as _;

use crate::{
	compress::Reader,
	error::{Error, Result},
	params::{hash_f32s, Blake2b256, Digest},
	work_state::{decode_parts, encode_parts, hash_moments, Moments, StateFormat, HEADER_BYTES},
};

/// A step state's format.
const STEP_STATE: StateFormat =
	StateFormat { magic: b"GSS1", kind: "step state", value: "parameter" };
/// Domain separators of the digests; bump the versions when an encoding changes.
const STEP_DOMAIN: &[u8] = b"grid/step-state/v1";
const ROOT_DOMAIN: &[u8] = b"grid/trajectory/v1";
/// First bytes of an encoded trajectory.
const TRAJECTORY_MAGIC: &[u8; 4] = b"GTR1";

/// A trainer's whole inner state after some step of a round.
#[derive(Clone, Debug, PartialEq)]
pub struct StepState {
	/// The model's parameters, flat in manifest order.
	pub params: Vec<f32>,
	/// Inner steps taken so far (the schedule's position).
	pub step: u64,
	/// AdamW's moments (`None` for SGD).
	pub moments: Option<Moments>,
}

impl StepState {
	/// Its digest: binds the step, the moments and every parameter.
	pub fn digest(&self) -> Digest {
		let mut h = Blake2b256::new();
		h.update(STEP_DOMAIN);
		h.update(self.step.to_le_bytes());
		hash_moments(&mut h, self.moments.as_ref());
		hash_f32s(&mut h, &self.params);
		h.finalize().into()
	}

	/// The most bytes a state of a model of `len` values encodes to (with moments).
	pub fn max_encoded_len(len: usize) -> u64 {
		HEADER_BYTES as u64 + 12 * len as u64
	}

	/// The canonical bytes (see the module docs).
	pub fn encode(&self) -> Vec<u8> {
		encode_parts(STEP_STATE.magic, self.step, self.moments.as_ref(), &self.params)
	}

	/// Parses bytes from [`StepState::encode`] for a model of `len` values.
	pub fn decode(bytes: &[u8], len: usize) -> Result<Self> {
		let (step, moments, params) = decode_parts(bytes, &STEP_STATE, len)?;
		Ok(StepState { params, step, moments })
	}

	/// Parses `bytes` and checks them against the digest `committed` for them.
	pub fn decode_committed(bytes: &[u8], len: usize, committed: &Digest) -> Result<Self> {
		let state = Self::decode(bytes, len)?;
		let got = state.digest();
		if &got != committed {
			return Err(Error::Decode(format!(
				"the step state does not match its commitment (step {}, digest {} vs committed {})",
				state.step,
				hex::encode(&got[..4]),
				hex::encode(&committed[..4]),
			)));
		}
		Ok(state)
	}
}

/// The digests of a round's states, the start's first: one more than the steps it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trajectory {
	digests: Vec<Digest>,
}

impl Trajectory {
	/// The trajectory of `states`, the round's start first.
	pub fn of(states: &[StepState]) -> Self {
		Trajectory { digests: states.iter().map(StepState::digest).collect() }
	}

	/// Steps it covers.
	pub fn steps(&self) -> u32 {
		self.digests.len().saturating_sub(1) as u32
	}

	/// The digest of the state after `step` steps of the round (0: its start).
	pub fn digest(&self, step: u32) -> Option<&Digest> {
		self.digests.get(step as usize)
	}

	/// What a commitment carries: binds the count and every digest in order.
	pub fn root(&self) -> Digest {
		let mut h = Blake2b256::new();
		h.update(ROOT_DOMAIN);
		h.update((self.digests.len() as u32).to_le_bytes());
		for d in &self.digests {
			h.update(d);
		}
		h.finalize().into()
	}

	/// The canonical bytes (see the module docs).
	pub fn encode(&self) -> Vec<u8> {
		let mut out = Vec::with_capacity(8 + 32 * self.digests.len());
		out.extend_from_slice(TRAJECTORY_MAGIC);
		out.extend_from_slice(&(self.digests.len() as u32).to_le_bytes());
		self.digests.iter().for_each(|d| out.extend_from_slice(d));
		out
	}

	/// Parses bytes from [`Trajectory::encode`] of a round of at most `max_steps` steps and
	/// checks them against the `root` committed for them.
	pub fn decode_committed(bytes: &[u8], max_steps: u32, root: &Digest) -> Result<Self> {
		let mut r = Reader::new(bytes);
		if r.take(4)? != TRAJECTORY_MAGIC {
			return Err(Error::Decode(
				"bad magic (not a Grid trajectory, or another version)".into(),
			));
		}
		let count = r.u32()?;
		if count == 0 || count - 1 > max_steps {
			return Err(Error::Decode(format!(
				"a trajectory of {count} states for a round of at most {max_steps} steps"
			)));
		}
		let digests = (0..count)
			.map(|_| Ok(r.take(32)?.try_into().expect("32 bytes taken")))
			.collect::<Result<Vec<Digest>>>()?;
		if r.remaining() != 0 {
			return Err(Error::Decode(format!("{} trailing bytes", r.remaining())));
		}
		let trajectory = Trajectory { digests };
		if &trajectory.root() != root {
			return Err(Error::Decode("the trajectory does not match its commitment".into()));
		}
		Ok(trajectory)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn state(step: u64, x: f32) -> StepState {
		StepState {
			params: vec![x, -x, 0.5],
			step,
			moments: Some(Moments { m: vec![0.1, x, 0.0], v: vec![0.2, 0.0, x * x] }),
		}
	}

	#[test]
	fn step_states_round_trip_and_their_digest_binds_every_part() {
		let s = state(7, 1.5);
		let bytes = s.encode();
		assert_eq!(bytes.len() as u64, StepState::max_encoded_len(3), "the bound is exact");
		assert_eq!(StepState::decode(&bytes, 3).unwrap(), s);
		assert_eq!(StepState::decode_committed(&bytes, 3, &s.digest()).unwrap(), s);
		let sgd = StepState { moments: None, ..s.clone() };
		assert_eq!(StepState::decode(&sgd.encode(), 3).unwrap(), sgd);
		let mut variants = vec![sgd, StepState { step: 8, ..s.clone() }];
		let mut p = s.clone();
		p.params[2] = 0.25;
		variants.push(p);
		let mut m = s.clone();
		m.moments.as_mut().unwrap().m[0] = 0.3;
		variants.push(m);
		let mut v = s.clone();
		v.moments.as_mut().unwrap().v[1] = 1e-9;
		variants.push(v);
		for other in variants {
			assert_ne!(other.digest(), s.digest(), "{other:?}");
			let err = StepState::decode_committed(&other.encode(), 3, &s.digest()).unwrap_err();
			assert!(err.to_string().contains("does not match its commitment"), "{err}");
		}
	}

	#[test]
	fn hostile_step_states_are_refused_with_the_reason() {
		let good = state(7, 1.5).encode();
		let work_state = crate::work_state::WorkState::fresh(3, true).encode();
		let mut nan = good.clone();
		// Header 21 bytes, then m (3 values), v (3), the parameters (3).
		nan[21 + 24 + 4..21 + 24 + 8].copy_from_slice(&f32::NAN.to_le_bytes());
		let mut negative = good.clone();
		negative[33..37].copy_from_slice(&(-1.0f32).to_le_bytes());
		let cases: Vec<(Vec<u8>, usize, &str)> = vec![
			(work_state, 3, "bad magic (not a Grid step state"),
			(good[..good.len() - 2].to_vec(), 3, "truncated"),
			([good.clone(), vec![1]].concat(), 3, "trailing"),
			(good.clone(), 2, "a step state of 3 values for a model of 2"),
			(nan, 3, "parameter 1 is not finite"),
			(negative, 3, "second moment 0 is negative"),
		];
		for (bytes, len, reason) in cases {
			let err = StepState::decode(&bytes, len).unwrap_err().to_string();
			assert!(err.contains(reason), "{reason}: {err}");
		}
	}

	#[test]
	fn a_trajectory_is_bound_by_its_root_and_refused_when_anything_differs() {
		let states: Vec<StepState> = (0..4).map(|t| state(10 + t, t as f32)).collect();
		let t = Trajectory::of(&states);
		assert_eq!(t.steps(), 3);
		assert_eq!(t.digest(2), Some(&states[2].digest()));
		assert_eq!(t.digest(4), None);
		let root = t.root();
		assert_eq!(Trajectory::decode_committed(&t.encode(), 3, &root).unwrap(), t);
		// Another order, one state fewer, one state changed: other roots.
		let mut swapped = states.clone();
		swapped.swap(1, 2);
		let mut changed = states.clone();
		changed[3].params[0] = 9.0;
		for other in [&swapped[..], &states[..3], &changed[..]] {
			let other = Trajectory::of(other);
			assert_ne!(other.root(), root);
			let err = Trajectory::decode_committed(&other.encode(), 3, &root).unwrap_err();
			assert!(err.to_string().contains("does not match its commitment"), "{err}");
		}
		// Malformed or oversized encodings are refused before anything is hashed.
		let bytes = t.encode();
		let cases: Vec<(Vec<u8>, u32, &str)> = vec![
			(bytes.clone(), 2, "a trajectory of 4 states for a round of at most 2 steps"),
			(bytes[..bytes.len() - 1].to_vec(), 3, "truncated"),
			([bytes.clone(), vec![0]].concat(), 3, "trailing"),
			([b"GTR1".as_slice(), &0u32.to_le_bytes()].concat(), 3, "a trajectory of 0 states"),
			(b"GWS1".to_vec(), 3, "bad magic"),
		];
		for (bytes, max, reason) in cases {
			let err = Trajectory::decode_committed(&bytes, max, &root).unwrap_err().to_string();
			assert!(err.contains(reason), "{reason}: {err}");
		}
	}
}
