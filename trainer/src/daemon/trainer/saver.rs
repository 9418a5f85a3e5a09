//! Checkpoint writes on their own thread: a large model's state takes seconds to write and
//! sync, which the round loop would otherwise spend before the next round's training.

use std::{
	path::PathBuf,
	sync::{
		mpsc::{self, Sender},
		Arc,
	},
	thread::JoinHandle,
};

use crate::{
	checkpoint::write_atomic,
	error::{Error, Result},
};

/// Writes each checkpoint given to it, in order, atomically, to one path.
pub(super) struct Saver {
	queue: Option<Sender<Arc<Vec<u8>>>>,
	thread: Option<JoinHandle<()>>,
}

impl Saver {
	/// Starts the writer of `path`.
	pub fn start(path: PathBuf) -> Result<Self> {
		let (queue, inbox) = mpsc::channel::<Arc<Vec<u8>>>();
		let thread = std::thread::Builder::new()
			.name("checkpoint-writer".into())
			.spawn(move || {
				while let Ok(mut bytes) = inbox.recv() {
					// Only the newest state matters: skip those a later one replaced.
					while let Ok(newer) = inbox.try_recv() {
						bytes = newer;
					}
					if let Err(e) = write_atomic(&path, &bytes) {
						// The state stays served from memory; a restart resumes from the
						// last checkpoint that was written.
						tracing::error!("saving the checkpoint: {e}");
					}
				}
			})
			.map_err(|e| Error::Config(format!("starting the checkpoint writer: {e}")))?;
		Ok(Saver { queue: Some(queue), thread: Some(thread) })
	}

	/// Queues `bytes` to be written.
	pub fn save(&self, bytes: Arc<Vec<u8>>) {
		if self.queue.as_ref().is_none_or(|q| q.send(bytes).is_err()) {
			tracing::error!("the checkpoint writer is gone; checkpoint not saved");
		}
	}

	/// Waits until every queued checkpoint is written.
	pub fn flush(&mut self) {
		self.queue = None;
		if let Some(thread) = self.thread.take() {
			let _ = thread.join();
		}
	}
}

impl Drop for Saver {
	fn drop(&mut self) {
		self.flush();
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
