//! Jobs' data brought in beside the search for a job: a job whose source is slow (a
//! stranger's, perhaps on purpose) holds back only itself, not the provider's search, and
//! the job whose data is ready first is joined.

use std::{
	collections::{HashMap, HashSet},
	future::Future,
};

use grid_primitives::job::JobId;
use tokio::task::JoinHandle;

/// How many jobs' data a provider fetches at once while it searches: a second slot keeps a
/// job with a slow source from holding up the next one, and few enough that a buyer who
/// posts many jobs does not split the provider's link and disk among them.
pub(super) const AT_ONCE: usize = 2;

/// The preparations under way, one task each; aborted when dropped.
#[derive(Default)]
pub(super) struct Preparing {
	tasks: HashMap<JobId, JoinHandle<Result<(), String>>>,
}

impl Preparing {
	/// Job `id`'s preparation: its outcome once it has ended; `None` while it goes on, or
	/// while every slot is taken (it is started, by `start`, when one is free).
	pub(super) async fn poll<F>(
		&mut self,
		id: JobId,
		start: impl FnOnce() -> F,
	) -> Option<Result<(), String>>
	where
		F: Future<Output = Result<(), String>> + Send + 'static,
	{
		match self.tasks.get(&id) {
			Some(task) if task.is_finished() => {
				let task = self.tasks.remove(&id)?;
				Some(task.await.unwrap_or_else(|e| Err(format!("preparing its data failed: {e}"))))
			}
			Some(_) => None,
			None if self.tasks.len() < AT_ONCE => {
				tracing::info!("job {id}: fetching its data (the search for a job goes on)");
				self.tasks.insert(id, tokio::spawn(start()));
				None
			}
			None => {
				tracing::debug!("job {id}: waits for a free slot to fetch its data");
				None
			}
		}
	}

	/// Stops the preparations of jobs not in `wanted` (they filled, ended or no longer fit),
	/// freeing their slots.
	pub(super) fn keep(&mut self, wanted: &HashSet<JobId>) {
		self.tasks.retain(|id, task| {
			let keep = wanted.contains(id);
			if !keep {
				task.abort();
			}
			keep
		});
	}
}

impl Drop for Preparing {
	fn drop(&mut self) {
		self.tasks.values().for_each(JoinHandle::abort);
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use std::time::Duration;

	/// A preparation that never ends, as a source that trickles.
	async fn endless() -> Result<(), String> {
		std::future::pending().await
	}

	async fn until_done(preparing: &mut Preparing, id: JobId) -> Result<(), String> {
		let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
		loop {
			if let Some(outcome) = preparing.poll(id, || async { unreachable!() }).await {
				return outcome;
			}
			assert!(tokio::time::Instant::now() < deadline, "job {id} never finished");
			tokio::time::sleep(Duration::from_millis(10)).await;
		}
	}

	#[tokio::test]
	async fn a_job_that_never_finishes_holds_one_slot_and_not_the_search() {
		let mut preparing = Preparing::default();
		assert_eq!(preparing.poll(0, endless).await, None);
		assert_eq!(preparing.poll(0, || async { unreachable!("started twice") }).await, None);
		// The next job is prepared beside it, and is ready while job 0 still goes on.
		assert_eq!(preparing.poll(1, || async { Ok(()) }).await, None);
		assert_eq!(until_done(&mut preparing, 1).await, Ok(()));
		// Refusals come back with their reason.
		assert_eq!(preparing.poll(2, || async { Err("bad data".into()) }).await, None);
		assert_eq!(until_done(&mut preparing, 2).await, Err("bad data".to_owned()));
		// With every slot taken by endless ones, another job waits for a slot...
		assert_eq!(preparing.poll(3, endless).await, None);
		assert_eq!(preparing.poll(4, || async { unreachable!("no slot was free") }).await, None);
		// ...which a job no longer wanted gives up.
		preparing.keep(&HashSet::from([3, 4]));
		assert_eq!(preparing.poll(4, || async { Ok(()) }).await, None);
		assert_eq!(until_done(&mut preparing, 4).await, Ok(()));
		assert_eq!(preparing.tasks.keys().collect::<Vec<_>>(), [&3]);
	}

	#[tokio::test]
	async fn dropped_preparations_are_stopped() {
		let (tx, rx) = tokio::sync::oneshot::channel::<()>();
		let mut preparing = Preparing::default();
		let held = async move {
			let _tx = tx;
			endless().await
		};
		assert_eq!(preparing.poll(0, move || held).await, None);
		drop(preparing);
		// The task, aborted, drops what it held: the sender closes.
		assert!(tokio::time::timeout(Duration::from_secs(30), rx).await.unwrap().is_err());
	}
}
