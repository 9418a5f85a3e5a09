//! What a round's commitment promises to show verifiers (its start state, the states it
//! recorded and their trajectory), encoded, served and written to disk on its own thread
//! once the commitment is out: the keeper encodes each and serves it from memory, then
//! writes each (atomically, synced) and serves it from its file, which survives a restart
//! and frees the memory. Written on the loop, a round's states (up to
//! [`crate::trajectory::TRAJECTORY_BYTES`]) took 0.3–0.9 s for a 0.2M-parameter GPT with
//! three trainers on one disk, time in which the loop heard no commitment: every trainer
//! closed its book with only its own.

use std::sync::{mpsc::Receiver, Arc};

use grid_primitives::job::RoundIndex;

use super::worker::Worker;
use crate::{
	daemon::work_states::WorkStates,
	error::Result,
	net::{Command, Commander, WorkStateBytes},
	round::messages::Digest,
	trajectory::StepState,
	work_state::WorkState,
};

/// An object a commitment promises, as sealing left it (only its digest was needed).
pub(super) enum Kept {
	/// The round's start state.
	Start(WorkState),
	/// A state its trajectory recorded.
	Step(StepState),
	/// Already encoded (the trajectory: a few hundred bytes).
	Encoded(Vec<u8>),
}

impl Kept {
	fn encode(self) -> Vec<u8> {
		match self {
			Kept::Start(state) => state.encode(),
			Kept::Step(state) => state.encode(),
			Kept::Encoded(bytes) => bytes,
		}
	}
}

/// A round's objects to keep, and the rounds no longer challengeable.
pub(super) struct Keep {
	pub round: RoundIndex,
	/// Each object under its content address.
	pub objects: Vec<(Digest, Kept)>,
	/// Rounds before this one are forgotten.
	pub forget_before: RoundIndex,
}

/// Writes kept objects in order and serves them from their files.
pub(super) struct Keeper {
	worker: Worker<Keep>,
}

impl Keeper {
	/// Starts the writer of `store`, serving through `net`.
	pub fn start(store: WorkStates, net: Commander) -> Result<Self> {
		let worker = Worker::spawn("work-state writer", move |inbox: Receiver<Keep>| {
			while let Ok(keep) = inbox.recv() {
				write(&store, &net, keep);
			}
		})?;
		Ok(Keeper { worker })
	}

	/// Queues `keep`, whose commitment is out.
	pub fn keep(&self, keep: Keep) {
		if !self.worker.send(keep) {
			tracing::error!("the work-state writer is gone; states stay in memory only");
		}
	}

	/// Waits until everything queued is written.
	pub fn flush(&mut self) {
		self.worker.close();
	}
}

fn write(store: &WorkStates, net: &Commander, keep: Keep) {
	let Keep { round, objects, forget_before } = keep;
	if let Err(e) = store.prune(forget_before) {
		tracing::error!("round {round}: pruning kept states: {e}");
	}
	net.send(Command::ForgetWorkStates(forget_before));
	// Each served as soon as it is encoded, all before any is written: a verifier may ask
	// for them once it has the commitment (and asks again when one is not served yet).
	let objects: Vec<(Digest, Arc<Vec<u8>>)> = objects
		.into_iter()
		.map(|(id, kept)| {
			let bytes = Arc::new(kept.encode());
			let memory = WorkStateBytes::Memory(bytes.clone());
			net.send(Command::ServeWorkState { id, round, bytes: memory });
			(id, bytes)
		})
		.collect();
	for (id, bytes) in objects {
		match store.save(round, &id, &bytes) {
			// The file replaces the copy in memory.
			Ok(path) => {
				net.send(Command::ServeWorkState { id, round, bytes: WorkStateBytes::File(path) })
			}
			// Still served from memory.
			Err(e) => {
				tracing::error!("round {round}: keeping {} on disk: {e}", hex::encode(&id[..4]))
			}
		}
	}
}
