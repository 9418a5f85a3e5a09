//! Checkpoint writes on their own thread: a large model's state takes seconds to write and
//! sync, which the round loop would otherwise spend before the next round's training.

use std::{
	path::PathBuf,
	sync::{mpsc::Receiver, Arc},
};

use super::worker::Worker;
use crate::{checkpoint::write_atomic, error::Result};

/// Writes each checkpoint given to it, in order, atomically, to one path.
pub(super) struct Saver {
	worker: Worker<Arc<Vec<u8>>>,
}

impl Saver {
	/// Starts the writer of `path`.
	pub fn start(path: PathBuf) -> Result<Self> {
		let worker = Worker::spawn("checkpoint writer", move |inbox: Receiver<Arc<Vec<u8>>>| {
			while let Ok(mut bytes) = inbox.recv() {
				// Only the newest state matters: skip those a later one replaced.
				while let Ok(newer) = inbox.try_recv() {
					bytes = newer;
				}
				if let Err(e) = write_atomic(&path, &bytes) {
					// The state stays served from memory; a restart resumes from the last
					// checkpoint that was written.
					tracing::error!("saving the checkpoint: {e}");
				}
			}
		})?;
		Ok(Saver { worker })
	}

	/// Queues `bytes` to be written.
	pub fn save(&self, bytes: Arc<Vec<u8>>) {
		if !self.worker.send(bytes) {
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

	#[test]
	fn the_last_checkpoint_queued_is_the_one_on_disk() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("checkpoint.safetensors");
		let mut saver = Saver::start(path.clone()).unwrap();
		for i in 0..20u8 {
			saver.save(Arc::new(vec![i; 1 << 16]));
		}
		saver.flush();
		assert_eq!(std::fs::read(&path).unwrap(), vec![19u8; 1 << 16]);
		saver.save(Arc::new(vec![1]));
		let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
		assert_eq!(left.len(), 1, "no temporary files left behind");
	}
}
