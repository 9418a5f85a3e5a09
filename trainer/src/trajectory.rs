//! A round's trajectory: a trainer's whole inner state before its first step and after each
//! ([`StepState`]), each state's digest, and the root over them that a commitment would
//! carry, so that a verifier can check any few steps of the round from the states recorded
//! before and after them ([`crate::verify::judge_segment`]) and know that they are the states
//! the trainer committed to before it learnt which steps would be checked.
//!
//! A step state is encoded as a [`WorkState`](crate::work_state::WorkState) is (magic
//! `GSS1`, step, moments flag, value count, moments, then the parameters in place of the
//! residual), and refused on the same grounds. A trajectory's digests are encoded as magic
//! `GTR1`, a count (u32) and per state its position in the round (u32) and digest; its root
//! binds them all. A round keeps at most [`MAX_MARKS`] states (its start, its end, evenly
//! between: [`Recorder`]), so a check redoes the steps between two of them.
//!
//! The daemon records every round's trajectory as it trains (`daemon/trainer/compute.rs`),
//! signs its root in the round's commitment and serves the trajectory and its states for
//! the challenge window like its start states; peers' fraud desks check segments of it
//! (`round/fraud/segments.rs`).

use blake2::Digest as _;

use crate::{
	compress::Reader,
	error::{Error, Result},
	params::{Blake2b256, Digest},
	state_assembly::Parts,
	work_state::{
		bulk_hasher, check_values, decode_parts, encode_parts, hash_moments, hash_values,
		max_parts_len, parts_len, write_parts, Moments, StateFormat, WorkState,
	},
};

/// A step state's format.
pub(crate) const STEP_STATE: StateFormat =
	StateFormat { magic: b"GSS1", kind: "step state", value: "parameter" };
/// Domain separators of the digests; bump the versions when an encoding changes.
const STEP_DOMAIN: &str = "grid/step-state/v2";
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

/// A step state over values held elsewhere: a round's start state is its base model with
/// the committed start state's position and moments, which the trainer holds already.
#[derive(Clone, Copy, Debug)]
pub struct StepView<'a> {
	/// The model's parameters, flat in manifest order.
	pub params: &'a [f32],
	/// Inner steps taken so far.
	pub step: u64,
	/// AdamW's moments (`None` for SGD).
	pub moments: Option<&'a Moments>,
}

impl<'a> StepView<'a> {
	/// The state before a round's first step (see [`StepState::at_start`]), uncopied.
	pub fn at_start(base: &'a [f32], start: &'a WorkState) -> Self {
		StepView { params: base, step: start.step, moments: start.moments.as_ref() }
	}

	/// Its digest: binds the step, the moments and every parameter.
	pub fn digest(&self) -> Digest {
		let mut h = bulk_hasher(STEP_DOMAIN);
		h.update(&self.step.to_le_bytes());
		hash_moments(&mut h, self.moments);
		hash_values(&mut h, self.params);
		h.finalize().into()
	}

	/// The canonical bytes (see the module docs).
	pub fn encode(&self) -> Vec<u8> {
		encode_parts(STEP_STATE.magic, self.step, self.moments, self.params)
	}

	/// Writes [`StepView::encode`]'s bytes into `out`.
	pub fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
		write_parts(out, STEP_STATE.magic, self.step, self.moments, self.params)
	}

	/// How many bytes [`StepView::encode`] returns.
	pub fn encoded_len(&self) -> usize {
		parts_len(self.moments.is_some(), self.params.len())
	}
}

impl StepState {
	/// The state before a round's first step: its base model, with the position and moments
	/// of the trainer's committed start state (what the trajectory's first mark must be).
	pub fn at_start(base: &[f32], start: &WorkState) -> Self {
		StepState { params: base.to_vec(), step: start.step, moments: start.moments.clone() }
	}

	/// This state, borrowed.
	pub fn view(&self) -> StepView<'_> {
		StepView { params: &self.params, step: self.step, moments: self.moments.as_ref() }
	}

	/// Its digest: binds the step, the moments and every parameter.
	pub fn digest(&self) -> Digest {
		self.view().digest()
	}

	/// The most bytes a state of a model of `len` values encodes to (with moments).
	pub fn max_encoded_len(len: usize) -> u64 {
		max_parts_len(len)
	}

	/// The canonical bytes (see the module docs).
	pub fn encode(&self) -> Vec<u8> {
		self.view().encode()
	}

	/// Writes [`StepState::encode`]'s bytes into `out`.
	pub fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
		self.view().write_to(out)
	}

	/// How many bytes [`StepState::encode`] returns.
	pub fn encoded_len(&self) -> usize {
		self.view().encoded_len()
	}

	/// Parses bytes from [`StepState::encode`] for a model of `len` values.
	pub fn decode(bytes: &[u8], len: usize) -> Result<Self> {
		let (step, moments, params) = decode_parts(bytes, &STEP_STATE, len)?;
		Ok(StepState { params, step, moments })
	}

	/// Parses `bytes` and checks them against the digest `committed` for them.
	pub fn decode_committed(bytes: &[u8], len: usize, committed: &Digest) -> Result<Self> {
		Self::committed(Self::decode(bytes, len)?, committed)
	}

	/// The state a fetch put together ([`crate::state_assembly`]), checked as
	/// [`StepState::decode_committed`] checks bytes.
	pub fn from_parts(parts: Parts, len: usize, committed: &Digest) -> Result<Self> {
		let (step, moments, params) = parts.into_format(&STEP_STATE)?;
		check_values(params.len(), len, STEP_STATE.kind)?;
		Self::committed(StepState { params, step, moments }, committed)
	}

	fn committed(state: Self, committed: &Digest) -> Result<Self> {
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

/// Most states a round's trajectory keeps (its start, its end, and evenly between), within
/// [`TRAJECTORY_BYTES`]: a check redoes the steps between two of them, so this many keep a
/// check under a thirtieth of the round whatever its length (`bench/segment_power.sh`:
/// segments of up to eight steps still separate other data from honest work).
pub const MAX_MARKS: u32 = 32;

/// Bytes of step states a trainer keeps a round at most: a large model keeps fewer states
/// (never fewer than its start and end), so its checks redo longer segments.
pub const TRAJECTORY_BYTES: u64 = 1 << 30;

/// Where in a round a state was recorded (steps into the round) and its digest.
pub type Mark = (u32, Digest);

/// The digests of the states a round recorded, with where each was taken: the start's
/// first (at 0), then at increasing steps into the round; the last is the round's end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trajectory {
	marks: Vec<Mark>,
}

impl Trajectory {
	/// The trajectory of `kept` states, each with its position (steps into the round).
	pub fn of<'a>(kept: impl IntoIterator<Item = &'a (u32, StepState)>) -> Self {
		Self::new(kept.into_iter().map(|(at, s)| (*at, s.digest())).collect())
	}

	/// The trajectory of these marks (the start's first, positions increasing).
	pub fn new(marks: Vec<Mark>) -> Self {
		Trajectory { marks }
	}

	/// The trajectory of `kept` states and what its trainer serves for it: each state under
	/// its digest, then the trajectory itself under its root.
	pub fn served(kept: &[(u32, StepState)]) -> (Self, Vec<(Digest, Vec<u8>)>) {
		let trajectory = Self::of(kept);
		let mut objects: Vec<(Digest, Vec<u8>)> =
			trajectory.marks.iter().zip(kept).map(|((_, d), (_, s))| (*d, s.encode())).collect();
		objects.push((trajectory.root(), trajectory.encode()));
		(trajectory, objects)
	}

	/// Steps it covers: the last state's position.
	pub fn steps(&self) -> u32 {
		self.marks.last().map_or(0, |m| m.0)
	}

	/// Its marks, in order.
	pub fn marks(&self) -> &[Mark] {
		&self.marks
	}

	/// The gap (between marks `gap` and `gap + 1`) that holds the step a random `draw`
	/// falls on: a gap is drawn in proportion to the steps it covers, so a trainer that
	/// records uneven gaps and skips the work of a long one is caught as often as that
	/// gap's share of the round (drawn uniformly, a gap of most of the round would be drawn
	/// as rarely as a gap of one step). `None` without a step recorded after the start.
	pub fn gap_at(&self, draw: u64) -> Option<usize> {
		let steps = self.steps();
		if steps == 0 {
			return None;
		}
		let step = (draw % u64::from(steps)) as u32;
		// The last mark at or before the step starts its gap (the first is at 0).
		Some(self.marks.partition_point(|(at, _)| *at <= step) - 1)
	}

	/// What a commitment carries: binds every mark in order.
	pub fn root(&self) -> Digest {
		let mut h = Blake2b256::new();
		h.update(ROOT_DOMAIN);
		h.update((self.marks.len() as u32).to_le_bytes());
		for (at, digest) in &self.marks {
			h.update(at.to_le_bytes());
			h.update(digest);
		}
		h.finalize().into()
	}

	/// The canonical bytes (see the module docs).
	pub fn encode(&self) -> Vec<u8> {
		let mut out = Vec::with_capacity(8 + 36 * self.marks.len());
		out.extend_from_slice(TRAJECTORY_MAGIC);
		out.extend_from_slice(&(self.marks.len() as u32).to_le_bytes());
		for (at, digest) in &self.marks {
			out.extend_from_slice(&at.to_le_bytes());
			out.extend_from_slice(digest);
		}
		out
	}

	/// Parses bytes from [`Trajectory::encode`] of a round of at most `max_steps` steps:
	/// between one and [`MAX_MARKS`] marks, the first at 0, each later than the one before.
	pub fn decode(bytes: &[u8], max_steps: u32) -> Result<Self> {
		let mut r = Reader::new(bytes);
		if r.take(4)? != TRAJECTORY_MAGIC {
			return Err(Error::Decode(
				"bad magic (not a Grid trajectory, or another version)".into(),
			));
		}
		let count = r.u32()?;
		if count == 0 || count > MAX_MARKS {
			return Err(Error::Decode(format!(
				"a trajectory of {count} states (one to {MAX_MARKS})"
			)));
		}
		let mut marks: Vec<Mark> = Vec::with_capacity(count as usize);
		for _ in 0..count {
			let at = r.u32()?;
			let digest: Digest = r.take(32)?.try_into().expect("32 bytes taken");
			let in_order = match marks.last() {
				None => at == 0,
				Some(last) => at > last.0,
			};
			if !in_order || at > max_steps {
				return Err(Error::Decode(format!(
					"a state at step {at} after {:?} in a round of at most {max_steps} steps \
					 (the first at 0, each later than the one before)",
					marks.last().map(|m| m.0)
				)));
			}
			marks.push((at, digest));
		}
		if r.remaining() != 0 {
			return Err(Error::Decode(format!("{} trailing bytes", r.remaining())));
		}
		Ok(Trajectory { marks })
	}

	/// [`Trajectory::decode`], checked against the `root` committed for it.
	pub fn decode_committed(bytes: &[u8], max_steps: u32, root: &Digest) -> Result<Self> {
		let trajectory = Self::decode(bytes, max_steps)?;
		if &trajectory.root() != root {
			return Err(Error::Decode("the trajectory does not match its commitment".into()));
		}
		Ok(trajectory)
	}
}

/// A state a round recorded.
#[derive(Clone, Debug, PartialEq)]
pub enum Recorded {
	/// Its start (position 0): the round's base with the committed start state's position
	/// and moments ([`StepView::at_start`]), which the trainer holds already; a copy here
	/// was three of the model's sizes on the training thread.
	Start,
	/// A state taken after a step.
	Step(StepState),
}

impl Recorded {
	/// The state taken after a step (`None` for the start).
	pub fn step(&self) -> Option<&StepState> {
		match self {
			Recorded::Start => None,
			Recorded::Step(state) => Some(state),
		}
	}

	/// The state itself, for a round that started at `base` from `start` (the start's is
	/// a copy of them).
	pub fn into_state(self, base: &[f32], start: &WorkState) -> StepState {
		match self {
			Recorded::Start => StepState::at_start(base, start),
			Recorded::Step(state) => state,
		}
	}
}

/// Which states a round keeps as it trains: every `every` steps from its start, and its end.
/// It starts with every step and, whenever its room is full, drops every other state and
/// doubles `every`, so the states stay evenly spaced however long the round runs (a round's
/// length is known only when its deadline ends it).
pub struct Recorder {
	every: u32,
	/// States it may keep, its end's included.
	room: u32,
	kept: Vec<(u32, Recorded)>,
}

impl Recorder {
	/// A recorder for a model of `params` values: at most [`MAX_MARKS`] states and
	/// [`TRAJECTORY_BYTES`], never fewer than the start and the end.
	pub fn new(params: usize) -> Self {
		let state_bytes = StepState::max_encoded_len(params).max(1);
		let room = (TRAJECTORY_BYTES / state_bytes).clamp(2, u64::from(MAX_MARKS)) as u32;
		Recorder { every: 1, room, kept: Vec::new() }
	}

	/// The most states it keeps in a round.
	pub fn capacity(&self) -> u32 {
		self.room
	}

	/// Steps between two kept states now (the end's gap may be shorter).
	pub fn every(&self) -> u32 {
		self.every
	}

	/// Shown the trainer after `at` steps of the round (each `at` once, in order; at 0 the
	/// trainer holds the round's start, which is not copied: [`Recorded::Start`]).
	pub fn observe(&mut self, at: u32, trainer: &crate::train::InnerTrainer) -> Result<()> {
		if !at.is_multiple_of(self.every) {
			return Ok(());
		}
		// Room for the end's state stays free.
		while self.kept.len() as u32 >= self.room - 1 {
			self.every = self.every.saturating_mul(2);
			let every = self.every;
			self.kept.retain(|(p, _)| p.is_multiple_of(every));
			if !at.is_multiple_of(self.every) {
				return Ok(());
			}
		}
		let state = if at == 0 { Recorded::Start } else { Recorded::Step(trainer.state()?) };
		self.kept.push((at, state));
		Ok(())
	}

	/// The round's kept states, its end's (`trainer` after `steps` steps) last.
	pub fn finish(
		mut self,
		steps: u32,
		trainer: &crate::train::InnerTrainer,
	) -> Result<Vec<(u32, Recorded)>> {
		if self.kept.last().is_none_or(|k| k.0 != steps) {
			let state = if steps == 0 { Recorded::Start } else { Recorded::Step(trainer.state()?) };
			self.kept.push((steps, state));
		}
		Ok(self.kept)
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
		// A round's start, viewed over its base and committed start state, is the same
		// state, byte for byte.
		let start = WorkState { step: 7, moments: s.moments.clone(), residual: vec![9.0; 3] };
		let view = StepView::at_start(&s.params, &start);
		assert_eq!((view.digest(), view.encode()), (s.digest(), bytes.clone()));
		assert_eq!(view.encoded_len(), bytes.len());
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
		let kept: Vec<(u32, StepState)> =
			[0u32, 4, 8, 10].iter().map(|&at| (at, state(10 + u64::from(at), at as f32))).collect();
		let t = Trajectory::of(&kept);
		assert_eq!(t.steps(), 10);
		assert_eq!(t.marks()[2], (8, kept[2].1.digest()));
		let root = t.root();
		assert_eq!(Trajectory::decode_committed(&t.encode(), 10, &root).unwrap(), t);
		// Another order, a state fewer, a state changed, a state said to be elsewhere.
		let mut swapped = kept.clone();
		swapped.swap(1, 2);
		let mut changed = kept.clone();
		changed[3].1.params[0] = 9.0;
		let mut moved = kept.clone();
		moved[1].0 = 5;
		for other in [&swapped[..], &kept[..3], &changed[..], &moved[..]] {
			let other = Trajectory::of(other);
			assert_ne!(other.root(), root);
			let err = Trajectory::decode_committed(&other.encode(), 10, &root).unwrap_err();
			let err = err.to_string();
			assert!(err.contains("does not match") || err.contains("each later"), "{err}");
		}
		// Malformed, disordered or oversized encodings are refused before any root.
		let bytes = t.encode();
		let at = |marks: &[(u32, u8)]| {
			let mut b = b"GTR1".to_vec();
			b.extend((marks.len() as u32).to_le_bytes());
			for (p, d) in marks {
				b.extend(p.to_le_bytes());
				b.extend([*d; 32]);
			}
			b
		};
		let too_many: Vec<(u32, u8)> = (0..=MAX_MARKS).map(|p| (p, 0)).collect();
		let cases: Vec<(Vec<u8>, u32, &str)> = vec![
			(bytes.clone(), 9, "a state at step 10 after Some(8) in a round of at most 9"),
			(bytes[..bytes.len() - 1].to_vec(), 10, "truncated"),
			([bytes.clone(), vec![0]].concat(), 10, "trailing"),
			(at(&[]), 10, "a trajectory of 0 states"),
			(at(&too_many), 100, "a trajectory of 33 states"),
			(at(&[(1, 0)]), 10, "a state at step 1 after None"),
			(at(&[(0, 0), (3, 1), (3, 2)]), 10, "a state at step 3 after Some(3)"),
			(b"GWS1".to_vec(), 10, "bad magic"),
		];
		for (bytes, max, reason) in cases {
			let err = Trajectory::decode(&bytes, max).unwrap_err().to_string();
			assert!(err.contains(reason), "{reason}: {err}");
		}
	}

	#[test]
	fn gaps_are_drawn_in_proportion_to_the_steps_they_cover() {
		// A trajectory of gaps of 1, 1 and 28 steps (a forger's: most of the round in one
		// gap): the long gap holds 28 of every 30 draws, not a third of them.
		let marks = [(0, [0; 32]), (1, [1; 32]), (2, [2; 32]), (30, [3; 32])];
		let trajectory = Trajectory { marks: marks.to_vec() };
		let mut count = [0u32; 3];
		for draw in 0..3000u64 {
			count[trajectory.gap_at(draw.wrapping_mul(0x9e37_79b9_7f4a_7c15)).unwrap()] += 1;
		}
		assert_eq!(count.iter().sum::<u32>(), 3000);
		assert!(count[2] > 2600 && count[0] > 50 && count[1] > 50, "{count:?}");
		assert_eq!(trajectory.gap_at(1), Some(1));
		assert_eq!(trajectory.gap_at(29), Some(2));
		assert_eq!(Trajectory { marks: vec![(0, [0; 32])] }.gap_at(7), None);
	}

	#[test]
	fn a_recorder_keeps_evenly_spaced_states_and_always_the_end() {
		use candle_core::Device;
		use grid_primitives::job::{InnerOptimizer, MlpConfig, ModelSpec, Nanos};
		let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 4, layers: 1 });
		let inner =
			InnerOptimizer::AdamW { lr: Nanos(1_000_000), weight_decay: Nanos(0), warmup_steps: 0 };
		let trainer = crate::train::InnerTrainer::new(
			spec,
			b"t",
			&Device::Cpu,
			&inner,
			crate::train::InnerConfig::default(),
		)
		.unwrap();
		let positions = |ran: u32, params: usize| {
			let mut r = Recorder::new(params);
			for at in 0..=ran {
				r.observe(at, &trainer).unwrap();
			}
			let every = r.every();
			let kept = r.finish(ran, &trainer).unwrap();
			// The start is the round's base and committed start state: not copied here.
			assert_eq!(kept[0].1, Recorded::Start);
			assert!(kept[1..].iter().all(|k| k.1.step().is_some()));
			(every, kept.iter().map(|k| k.0).collect::<Vec<_>>())
		};
		// A short round keeps every state.
		assert_eq!(positions(30, 100), (1, (0..=30).collect()));
		// Longer ones keep evenly spaced states from the start, and the end, within the cap.
		for ran in [31, 45, 120, 300, 1000, 5000] {
			let (every, kept) = positions(ran, 100);
			assert!(kept.len() as u32 <= MAX_MARKS && kept.len() >= 16, "{ran}: {kept:?}");
			assert_eq!((kept[0], *kept.last().unwrap()), (0, ran));
			for pair in kept.windows(2) {
				assert!(pair[1] - pair[0] <= every, "{ran}: {kept:?}");
			}
			assert!(kept[..kept.len() - 1].iter().all(|p| p % every == 0), "{ran}: {kept:?}");
		}
		// A model too large for more than two states keeps its start and end.
		let huge = (TRAJECTORY_BYTES / 12) as usize;
		assert_eq!(positions(30, huge).1, vec![0, 30]);
	}
}
