//! What a round's commitment promises to show verifiers (its start state, the states it
//! recorded and their trajectory), served and kept off the round loop once the commitment
//! is out: an encoder thread encodes each and serves it from memory at once; a writer
//! thread writes them (atomically, synced) and then serves each from its files (a state
//! with moments in parts, its moments stored once however many kept states share them:
//! [`WorkStates`]), which survive a restart and free the memory. Two threads, so that a round's objects are
//! served while the round before's are still being written (for a large model that takes
//! seconds, and a verifier that asks for a start state three times without an answer
//! judges its update invalid). Written on the loop, a round's states (up to
//! [`crate::trajectory::TRAJECTORY_BYTES`]) took 0.3–0.9 s for a 0.2M-parameter GPT with
//! three trainers on one disk, time in which the loop heard no commitment: every trainer
//! closed its book with only its own.
//!
//! A round's report (on chain, its proof) waits until the writer is done with the round's
//! objects ([`Keeper::kept`]), or until waiting longer would make the proof late
//! ([`report_now`]): the chain challenges and audits only contributions whose proofs it
//! holds, so a trainer that crashes before its round's states are on disk (served from
//! memory alone, they are gone after a restart, and a check of that round would convict
//! it) loses the round's reward, not its stake, as long as the writer is done by the
//! proof's deadline. The writing starts when the commitment is out, usually long before
//! the round is decided; a large model's states can take longer.
//!
//! An object larger than [`MEMORY_SERVE_BYTES`] is not encoded into memory: the writer
//! streams it into its files and serves it from there once written. Encoded in memory beside
//! the states themselves, a round's objects took a second copy of the start state and of
//! every recorded state (a 350M model's round holds about 12.7 GB of them); a verifier asking in the seconds the writing takes
//! is answered on its next try.

use std::{
	collections::BTreeSet,
	io::Write,
	sync::{
		atomic::{AtomicU64, Ordering},
		mpsc::Receiver,
		Arc,
	},
};

use grid_primitives::job::RoundIndex;

use super::worker::Worker;
use crate::{
	daemon::work_states::{moments_key, MomentsKey, Split, WorkStates},
	error::Result,
	net::{Command, Commander, StoredBytes},
	round::messages::Digest,
	trajectory::{StepState, StepView, STEP_STATE},
	work_state::{parts_header, Moments, WorkState, MAGIC},
};

/// An object a commitment promises, as sealing left it (only its digest was needed).
pub(super) enum Kept {
	/// The round's start state.
	Start(Arc<WorkState>),
	/// Its trajectory's first state: the round's base with the start state's position and
	/// moments, encoded from them ([`StepView::at_start`]).
	FirstStep {
		/// The weights the round trained from.
		base: Arc<Vec<f32>>,
		/// The round's start state.
		start: Arc<WorkState>,
	},
	/// A state its trajectory recorded.
	Step(StepState),
	/// Already encoded (the trajectory: a few hundred bytes).
	Encoded(Vec<u8>),
}

/// Objects of more bytes than this go to disk without an encoded copy in memory.
pub(super) const MEMORY_SERVE_BYTES: usize = 64 << 20;

impl Kept {
	fn encode(&self) -> Vec<u8> {
		match self {
			Kept::Start(state) => state.encode(),
			Kept::FirstStep { base, start } => StepView::at_start(base, start).encode(),
			Kept::Step(state) => state.encode(),
			Kept::Encoded(bytes) => bytes.clone(),
		}
	}

	fn encoded_len(&self) -> usize {
		match self {
			Kept::Start(state) => state.encoded_len(),
			Kept::FirstStep { base, start } => StepView::at_start(base, start).encoded_len(),
			Kept::Step(state) => state.encoded_len(),
			Kept::Encoded(bytes) => bytes.len(),
		}
	}

	fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
		match self {
			Kept::Start(state) => state.write_to(out),
			Kept::FirstStep { base, start } => StepView::at_start(base, start).write_to(out),
			Kept::Step(state) => state.write_to(out),
			Kept::Encoded(bytes) => out.write_all(bytes),
		}
	}

	/// The round's start state, when it is that or the first recorded state (whose moments
	/// are the start's).
	fn start(&self) -> Option<&Arc<WorkState>> {
		match self {
			Kept::Start(start) | Kept::FirstStep { start, .. } => Some(start),
			Kept::Step(_) | Kept::Encoded(_) => None,
		}
	}

	/// Its parts, when it is a state with moments (kept in parts: [`WorkStates::save_split`]).
	fn split(&self) -> Option<Split<'_>> {
		match self {
			Kept::Start(state) => split(MAGIC, state.step, &state.moments, &state.residual, false),
			Kept::FirstStep { base, start } => {
				split(STEP_STATE.magic, start.step, &start.moments, base, true)
			}
			Kept::Step(state) => {
				split(STEP_STATE.magic, state.step, &state.moments, &state.params, false)
			}
			Kept::Encoded(_) => None,
		}
	}
}

/// A state in the parts format by its parts, if it has moments (`base`: its values are the
/// round's base).
fn split<'a>(
	magic: &[u8; 4],
	step: u64,
	moments: &'a Option<Moments>,
	values: &'a [f32],
	base: bool,
) -> Option<Split<'a>> {
	let header = parts_header(magic, step, true, values.len());
	Some(Split { header, moments: moments.as_ref()?, values, base })
}

/// A round's objects to keep, and the rounds no longer challengeable.
pub(super) struct Keep {
	pub round: RoundIndex,
	/// Each object under its content address.
	pub objects: Vec<(Digest, Kept)>,
	/// Rounds before this one are forgotten.
	pub forget_before: RoundIndex,
}

/// An object on its way to disk.
struct Pending {
	kept: Kept,
	/// Its encoding, served from memory until it is written (`None`: too large for a
	/// second copy, encoded straight into its file).
	memory: Option<Arc<Vec<u8>>>,
}

/// A round's objects, the small ones encoded and served from memory, to write.
struct Encoded {
	round: RoundIndex,
	objects: Vec<(Digest, Pending)>,
	forget_before: RoundIndex,
}

/// Which queued rounds the writer is done with: their objects are on disk (or could not be
/// written, which it logged, and are served from memory).
#[derive(Default)]
pub(super) struct KeptRounds {
	/// Rounds queued and not yet seen done.
	queued: BTreeSet<RoundIndex>,
	/// One more than the last round the writer finished (0: none); rounds are written in the
	/// order they are queued.
	written: Arc<AtomicU64>,
}

impl KeptRounds {
	fn queue(&mut self, round: RoundIndex) {
		self.queued.insert(round);
	}

	/// What the writer marks its rounds done with.
	fn marker(&self) -> Written {
		Written(self.written.clone())
	}

	/// Whether nothing of `round` is waiting to be written (a round never queued has
	/// nothing to write).
	pub fn kept(&mut self, round: RoundIndex) -> bool {
		let written = self.written.load(Ordering::Acquire);
		self.queued.retain(|r| u64::from(*r) >= written);
		!self.queued.contains(&round)
	}
}

/// The writer's side of [`KeptRounds`].
struct Written(Arc<AtomicU64>);

impl Written {
	fn done(&self, round: RoundIndex) {
		self.0.fetch_max(u64::from(round) + 1, Ordering::Release);
	}
}

/// Whether a contributed round's report goes out at `now_ms` (Unix ms): once its states are
/// kept, or once it is `due_ms`, when its proof must go out to reach the round (a late proof
/// costs the round's reward for certain, a crash before the writing ends only perhaps).
pub(super) fn report_now(kept: bool, now_ms: u64, due_ms: u64) -> bool {
	kept || now_ms >= due_ms
}

/// Encodes and serves kept objects, then writes them in order and serves them from their
/// files.
pub(super) struct Keeper {
	// Declared (so dropped) first: the writer runs until the encoder has handed it all.
	encoder: Worker<Keep>,
	writer: Worker<Encoded>,
	rounds: KeptRounds,
}

impl Keeper {
	/// Starts the encoder and the writer of `store`, serving through `net`.
	pub fn start(store: WorkStates, net: Commander) -> Result<Self> {
		Self::with_memory_limit(store, net, MEMORY_SERVE_BYTES)
	}

	/// [`Keeper::start`], serving objects of at most `memory_limit` bytes from memory before
	/// they are written.
	fn with_memory_limit(store: WorkStates, net: Commander, memory_limit: usize) -> Result<Self> {
		let serve = net.clone();
		let rounds = KeptRounds::default();
		let written = rounds.marker();
		let writer = Worker::spawn("work-state writer", move |inbox: Receiver<Encoded>| {
			while let Ok(encoded) = inbox.recv() {
				let round = encoded.round;
				write(&store, &net, encoded);
				written.done(round);
			}
		})?;
		let to_writer = writer.sender().expect("a new worker's queue is open");
		let encoder = Worker::spawn("work-state encoder", move |inbox: Receiver<Keep>| {
			while let Ok(keep) = inbox.recv() {
				if to_writer.send(encode(&serve, keep, memory_limit)).is_err() {
					tracing::error!("the work-state writer is gone; states stay in memory only");
				}
			}
		})?;
		Ok(Keeper { encoder, writer, rounds })
	}

	/// Queues `keep`, whose commitment is out.
	pub fn keep(&mut self, keep: Keep) {
		let round = keep.round;
		if self.encoder.send(keep) {
			self.rounds.queue(round);
		} else {
			tracing::error!("the work-state encoder is gone; a round's states are not served");
		}
	}

	/// Whether the writer is done with `round`'s objects (on disk, or logged as not
	/// written); true for a round never queued.
	pub fn kept(&mut self, round: RoundIndex) -> bool {
		self.rounds.kept(round)
	}

	/// Waits until everything queued is written.
	pub fn flush(&mut self) {
		self.encoder.close();
		self.writer.close();
	}
}

/// Encodes each object of at most `memory_limit` bytes and serves it as soon as it is (a
/// verifier may ask for them once it has the commitment, and asks again when one is not
/// served yet); larger ones are left to the writer.
fn encode(net: &Commander, keep: Keep, memory_limit: usize) -> Encoded {
	let Keep { round, objects, forget_before } = keep;
	let objects = objects
		.into_iter()
		.map(|(id, kept)| {
			if kept.encoded_len() > memory_limit {
				return (id, Pending { kept, memory: None });
			}
			let bytes = Arc::new(kept.encode());
			serve_memory(net, round, id, bytes.clone());
			(id, Pending { kept, memory: Some(bytes) })
		})
		.collect();
	Encoded { round, objects, forget_before }
}

fn serve_memory(net: &Commander, round: RoundIndex, id: Digest, bytes: Arc<Vec<u8>>) {
	net.send(Command::ServeWorkState { id, round, bytes: StoredBytes::Memory(bytes) });
}

fn write(store: &WorkStates, net: &Commander, encoded: Encoded) {
	let Encoded { round, objects, forget_before } = encoded;
	let started = std::time::Instant::now();
	if let Err(e) = store.prune(forget_before) {
		tracing::error!("round {round}: pruning kept states: {e}");
	}
	net.send(Command::ForgetWorkStates(forget_before));
	// A round's start state and its first recorded state share their moments (one
	// `Arc`, held here so that no other state can take its address): hashed once.
	let mut start_key: Option<(Arc<WorkState>, MomentsKey)> = None;
	let (mut encoded_bytes, mut written) = (0u64, 0u64);
	for (id, Pending { kept, memory }) in objects {
		encoded_bytes += kept.encoded_len() as u64;
		let saved = match kept.split() {
			Some(split) => {
				let start = kept.start();
				let key = match (&start_key, start) {
					(Some((held, key)), Some(start)) if Arc::ptr_eq(held, start) => *key,
					_ => {
						let key = moments_key(split.moments);
						if let Some(start) = start {
							start_key = Some((start.clone(), key));
						}
						key
					}
				};
				store.save_split(round, &id, &split, &key).map(|(spliced, bytes)| {
					written += bytes;
					StoredBytes::Spliced(Arc::new(spliced))
				})
			}
			None => store.save_with(round, &id, |f| kept.write_to(f)).map(|path| {
				written += kept.encoded_len() as u64;
				StoredBytes::File(path)
			}),
		};
		match saved {
			// The files replace the copy in memory.
			Ok(bytes) => net.send(Command::ServeWorkState { id, round, bytes }),
			Err(e) => {
				tracing::error!("round {round}: keeping {} on disk: {e}", hex::encode(&id[..4]));
				// Served from memory, then, as long as this trainer runs.
				if memory.is_none() {
					serve_memory(net, round, id, Arc::new(kept.encode()));
				}
			}
		}
	}
	// How long a round's writing takes is what decides whether its proof waits for it.
	tracing::info!(
		"round {round}: kept states of {:.1} MB in {:.1} MB written to disk in {:.1} s",
		encoded_bytes as f64 / 1e6,
		written as f64 / 1e6,
		started.elapsed().as_secs_f64()
	);
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::work_state::Moments;

	fn state(n: usize, seed: f32) -> WorkState {
		let moments = Moments { m: vec![seed; n], v: vec![0.5; n] };
		WorkState {
			step: 7,
			moments: Some(moments),
			residual: (0..n).map(|i| i as f32 * seed).collect(),
		}
	}

	/// One serve: the object's id (its first byte), whether from its file, the bytes.
	type Served = (u8, bool, Vec<u8>);

	/// Keeps one round of a small start state (id 1), a large one (id 2), a large step
	/// state without moments (id 3), the large trajectory start over the large start state
	/// (id 4) and two large step states with moments of their own (ids 5, 6) with room in
	/// memory for the small one only; returns the serves in order and each object's
	/// canonical encoding.
	fn keep_round(remove_store: bool) -> (Vec<Served>, [Vec<u8>; 6]) {
		let dir = tempfile::tempdir().unwrap();
		let store = WorkStates::open(dir.path()).unwrap();
		if remove_store {
			std::fs::remove_dir_all(dir.path().join("work-states")).unwrap();
		}
		let (net, mut commands) = Commander::channel();
		let (small, large) = (state(10, 1.0), state(1000, 2.0));
		let step = StepState { params: vec![3.0; 1000], step: 9, moments: None };
		let base = Arc::new(vec![5.0; 1000]);
		// What a copy of the trajectory's start would have encoded to.
		let first = StepState::at_start(&base, &large).encode();
		// Two recorded states with moments of their own, one after the other.
		let with_moments = |seed: f32| StepState {
			params: vec![seed; 1000],
			step: seed as u64,
			moments: state(1000, seed).moments,
		};
		let (fifth, sixth) = (with_moments(11.0), with_moments(12.0));
		let encodings =
			[small.encode(), large.encode(), step.encode(), first, fifth.encode(), sixth.encode()];
		let mut keeper = Keeper::with_memory_limit(store, net, small.encoded_len()).unwrap();
		let large = Arc::new(large);
		let objects = vec![
			([1; 32], Kept::Start(Arc::new(small))),
			([2; 32], Kept::Start(large.clone())),
			([3; 32], Kept::Step(step)),
			([4; 32], Kept::FirstStep { base, start: large }),
			([5; 32], Kept::Step(fifth)),
			([6; 32], Kept::Step(sixth)),
		];
		keeper.keep(Keep { round: 4, objects, forget_before: 0 });
		keeper.flush();
		assert!(keeper.kept(4), "written, or logged as not, once flushed");
		let mut served = Vec::new();
		while let Ok(command) = commands.try_recv() {
			let Command::ServeWorkState { id, round, bytes } = command else { continue };
			assert_eq!(round, 4);
			let (file, bytes) = match bytes {
				StoredBytes::File(path) => (true, std::fs::read(path).unwrap()),
				StoredBytes::Spliced(spliced) => (true, spliced.read(0..spliced.len()).unwrap()),
				StoredBytes::Memory(bytes) => (false, bytes.to_vec()),
				StoredBytes::Open(_) | StoredBytes::Checkpoint(_) => {
					panic!("the keeper serves files or bytes, not open files or checkpoints")
				}
			};
			served.push((id[0], file, bytes));
		}
		(served, encodings)
	}

	#[test]
	fn a_large_object_goes_to_its_file_without_a_copy_in_memory_a_small_one_is_served_at_once() {
		let (served, encodings) = keep_round(false);
		let from = |id: u8| served.iter().filter(|s| s.0 == id).map(|s| s.1).collect::<Vec<_>>();
		assert_eq!(from(1), [false, true], "the small state: from memory, then its file");
		assert_eq!(from(2), [true], "the large start state: only ever from its file");
		assert_eq!(from(3), [true], "the large step state: only ever from its file");
		assert_eq!(from(4), [true], "the trajectory's start: only ever from its file");
		assert_eq!((from(5), from(6)), (vec![true], vec![true]), "the later states: from files");
		for (id, _, bytes) in &served {
			assert_eq!(bytes, &encodings[usize::from(id - 1)], "object {id}: its canonical bytes");
		}
	}

	#[test]
	fn a_round_is_kept_once_the_writer_is_done_with_it_not_when_queued() {
		let mut rounds = KeptRounds::default();
		let written = rounds.marker();
		assert!(rounds.kept(2), "a round never queued has nothing to wait for");
		rounds.queue(3);
		rounds.queue(4);
		assert!(!rounds.kept(3) && !rounds.kept(4), "queued, not written");
		written.done(3);
		assert!(rounds.kept(3), "written");
		assert!(!rounds.kept(4), "round 4 is still being written");
		written.done(4);
		assert!(rounds.kept(4) && rounds.kept(3));
	}

	#[test]
	fn a_report_waits_for_its_states_until_its_proof_would_be_late() {
		let due = 10_000;
		assert!(!report_now(false, due - 1, due), "not kept, still time: it waits");
		assert!(report_now(true, due - 1, due), "kept: at once");
		assert!(report_now(false, due, due), "due: it goes, kept or not");
		assert!(report_now(false, 5, 0), "no deadline known (or past): at once");
	}

	#[test]
	fn a_large_object_that_cannot_be_written_is_served_from_memory() {
		let (served, encodings) = keep_round(true);
		assert!(served.iter().all(|s| !s.1), "nothing could be written: {served:?}");
		for id in 1..=6u8 {
			let bytes = served.iter().filter(|s| s.0 == id).map(|s| &s.2).collect::<Vec<_>>();
			assert_eq!(bytes, [&encodings[usize::from(id - 1)]], "object {id} served once, whole");
		}
	}
}
