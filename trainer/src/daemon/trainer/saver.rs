//! Checkpoint writes on their own thread: a large model's state takes seconds to write and
//! sync, which the round loop would otherwise spend before the next round's training.
//!
//! The state a checkpoint holds is also what the trainer serves joiners. Served from memory
//! it held two model-and-momentum copies (this round's and the one before, kept so that a
//! fetch begun before the round ended can finish): 4 bytes × 4 per parameter, 1.4 GB at
//! 85M parameters. So once written, the state is served from its file instead, opened before
//! the next checkpoint's rename takes the name (the open file keeps the old bytes). Until
//! then it is served, and written, from the state itself ([`CheckpointView`]), not from an
//! encoded copy.

use std::{
	path::PathBuf,
	sync::{mpsc::Receiver, Arc},
};

use super::worker::Worker;
use crate::{
	checkpoint::write_atomic_with,
	error::Result,
	net::{Command, Commander, StoredBytes},
	round::{checkpoint_view::CheckpointView, messages::Digest},
};

/// A global state's checkpoint, and the state hash it is served under.
pub(super) struct Published {
	pub state_hash: Digest,
	pub view: Arc<CheckpointView>,
}

/// Writes each checkpoint given to it, in order, atomically, to one path, then serves the
/// state from the file.
pub(super) struct Saver {
	worker: Worker<Published>,
}

impl Saver {
	/// Starts the writer of `path`, moving the served state to it through `net`.
	pub fn start(path: PathBuf, net: Commander) -> Result<Self> {
		let worker = Worker::spawn("checkpoint writer", move |inbox: Receiver<Published>| {
			while let Ok(mut state) = inbox.recv() {
				// Only the newest state matters: skip those a later one replaced.
				while let Ok(newer) = inbox.try_recv() {
					state = newer;
				}
				if let Err(e) = write_atomic_with(&path, |out| state.view.write_to(out)) {
					// The state stays served from memory; a restart resumes from the last
					// checkpoint that was written.
					tracing::error!("saving the checkpoint: {e}");
					continue;
				}
				match std::fs::File::open(&path) {
					Ok(file) => net.send(Command::StateStored {
						state_hash: state.state_hash,
						bytes: StoredBytes::Open(Arc::new(file)),
					}),
					Err(e) => tracing::warn!("serving the state from {}: {e}", path.display()),
				}
			}
		})?;
		Ok(Saver { worker })
	}

	/// Queues `state` to be written.
	pub fn save(&self, state: Published) {
		if !self.worker.send(state) {
			tracing::error!("the checkpoint writer is gone; checkpoint not saved");
		}
	}

	/// Waits until every queued checkpoint is written.
	pub fn flush(&mut self) {
		self.worker.close();
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	/// A checkpoint whose every weight and momentum value is `i` (of 8,192 each).
	fn published(i: u8) -> Published {
		let manifest = crate::params::Manifest::new(vec![crate::params::ParamInfo {
			name: "w".into(),
			shape: vec![8192],
		}])
		.unwrap();
		let values = Arc::new(vec![f32::from(i); 8192]);
		let view = CheckpointView::new(1, &manifest, values.clone(), values).unwrap();
		Published { state_hash: [i; 32], view: Arc::new(view) }
	}

	/// The bytes of `i`'s checkpoint.
	fn bytes(i: u8) -> Vec<u8> {
		let mut out = Vec::new();
		published(i).view.write_to(&mut out).unwrap();
		out
	}

	/// The bytes `net` was told to serve each state from, in order.
	fn moved(net: &mut tokio::sync::mpsc::UnboundedReceiver<Command>) -> Vec<(Digest, Vec<u8>)> {
		std::iter::from_fn(|| net.try_recv().ok())
			.map(|command| match command {
				Command::StateStored { state_hash, bytes } => {
					let len = published(0).view.len();
					(state_hash, bytes.range(len, 0..len).unwrap())
				}
				other => panic!("unexpected {other:?}"),
			})
			.collect()
	}

	#[test]
	fn the_last_checkpoint_queued_is_the_one_on_disk_and_served_from_it() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("checkpoint.safetensors");
		let (net, mut commands) = Commander::channel();
		let mut saver = Saver::start(path.clone(), net).unwrap();
		for i in 0..20u8 {
			saver.save(published(i));
		}
		saver.flush();
		assert_eq!(std::fs::read(&path).unwrap(), bytes(19));
		let moved = moved(&mut commands);
		assert!(!moved.is_empty(), "at least the last state moves to its file");
		assert_eq!(moved.last().unwrap(), &([19; 32], bytes(19)));
		for (hash, served) in &moved {
			assert_eq!(served, &bytes(hash[0]), "each served from its own bytes");
		}
		let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
		assert_eq!(left.len(), 1, "no temporary files left behind");
	}

	#[test]
	fn a_state_served_from_its_file_keeps_its_bytes_when_the_next_checkpoint_replaces_it() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("checkpoint.safetensors");
		let (net, mut commands) = Commander::channel();
		let mut saver = Saver::start(path.clone(), net).unwrap();
		saver.save(published(1));
		let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
		let first = loop {
			if let Ok(Command::StateStored { bytes, .. }) = commands.try_recv() {
				break bytes;
			}
			assert!(
				std::time::Instant::now() < deadline,
				"the first state never moved to its file"
			);
			std::thread::sleep(std::time::Duration::from_millis(5));
		};
		saver.save(published(2));
		saver.flush();
		assert_eq!(std::fs::read(&path).unwrap(), bytes(2), "the file has the new state");
		let len = published(1).view.len();
		assert_eq!(first.range(len, 0..len).unwrap(), bytes(1), "the old one still serves");
		assert!(first.range(len + 1, 0..len).unwrap_err().contains("were served"));
	}

	#[test]
	fn a_checkpoint_read_from_its_state_serves_the_ranges_of_its_bytes() {
		let (view, bytes) = (published(5).view, bytes(5));
		let stored = StoredBytes::Checkpoint(view);
		let len = bytes.len() as u64;
		assert_eq!(stored.range(len, 10..len - 3).unwrap(), bytes[10..bytes.len() - 3]);
		assert_eq!(stored.range(len, 0..len).unwrap(), bytes);
		let err = stored.range(len - 1, 0..4).unwrap_err();
		assert!(err.contains("were served"), "{err}");
	}

	#[test]
	fn an_unwritable_checkpoint_leaves_the_state_served_from_memory() {
		let dir = tempfile::tempdir().unwrap();
		let (net, mut commands) = Commander::channel();
		let mut saver =
			Saver::start(dir.path().join("missing/checkpoint.safetensors"), net).unwrap();
		saver.save(published(3));
		saver.flush();
		assert!(moved(&mut commands).is_empty(), "nothing moves to a file that was not written");
	}
}
