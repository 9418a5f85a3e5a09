//! Replays on their own thread.

use std::{sync::mpsc, thread::JoinHandle};

use super::{Claim, Judgement, Replayer};
use crate::error::Result;

/// Replays run on their own thread, one at a time, so the trainer's round loop (and its
/// own training) goes on while a check runs. Each check carries a tag `T` that comes back
/// with its finding.
pub struct VerifyWorker<T> {
	jobs: Option<mpsc::Sender<(T, Claim)>>,
	findings: mpsc::Receiver<(T, Result<Judgement>)>,
	thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> VerifyWorker<T> {
	/// Starts the worker thread.
	pub fn start(replayer: Replayer) -> Self {
		let (jobs, inbox) = mpsc::channel::<(T, Claim)>();
		let (report, findings) = mpsc::channel();
		let thread = std::thread::Builder::new()
			.name("grid-verify".into())
			.spawn(move || {
				for (tag, claim) in inbox {
					if report.send((tag, replayer.judge(&claim))).is_err() {
						return;
					}
				}
			})
			.expect("spawning the verification thread");
		VerifyWorker { jobs: Some(jobs), findings, thread: Some(thread) }
	}

	/// Queues a check.
	pub fn submit(&self, tag: T, claim: Claim) {
		if let Some(jobs) = &self.jobs {
			let _ = jobs.send((tag, claim));
		}
	}

	/// Checks finished since the last call.
	pub fn finished(&self) -> Vec<(T, Result<Judgement>)> {
		self.findings.try_iter().collect()
	}
}

impl<T> Drop for VerifyWorker<T> {
	fn drop(&mut self) {
		// Closing the queue ends the thread after the check it is running.
		self.jobs.take();
		if let Some(thread) = self.thread.take() {
			let _ = thread.join();
		}
	}
}
