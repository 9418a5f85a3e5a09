//! A thread fed through a queue, closed and joined when dropped: what the evaluation thread
//! and the checkpoint writer are built on.

use std::{
	sync::mpsc::{self, Receiver, Sender},
	thread::JoinHandle,
};

use crate::error::{Error, Result};

/// A named thread running over the items sent to it.
pub(super) struct Worker<T> {
	queue: Option<Sender<T>>,
	thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> Worker<T> {
	/// Starts thread `name` running `run` over the queue (it ends when the queue closes).
	pub fn spawn(name: &str, run: impl FnOnce(Receiver<T>) + Send + 'static) -> Result<Self> {
		let (queue, inbox) = mpsc::channel();
		let role = name.to_string();
		let thread = std::thread::Builder::new()
			.name(name.into())
			.spawn(move || {
				crate::alloc_ledger::tag_thread(&role);
				run(inbox)
			})
			.map_err(|e| Error::Config(format!("starting the {name} thread: {e}")))?;
		Ok(Worker { queue: Some(queue), thread: Some(thread) })
	}

	/// Queues `item`; false when the thread is gone or the queue closed.
	pub fn send(&self, item: T) -> bool {
		self.queue.as_ref().is_some_and(|q| q.send(item).is_ok())
	}

	/// Another way into the queue, for a thread that feeds this one (the thread runs until
	/// every such sender is dropped too).
	pub fn sender(&self) -> Option<Sender<T>> {
		self.queue.clone()
	}
}

impl<T> Worker<T> {
	/// Closes the queue and waits for the thread to finish what it holds.
	pub fn close(&mut self) {
		self.queue = None;
		if let Some(thread) = self.thread.take() {
			let _ = thread.join();
		}
	}
}

impl<T> Drop for Worker<T> {
	fn drop(&mut self) {
		self.close();
	}
}
