//! Deadline queues: `(due block, id)` entries kept sorted, earliest first.
//!
//! Two queues use them: the settlement queue (one entry per running job, due when its open
//! round settles) and the challenge queue (one entry per open challenge, due at its voting
//! deadline). A leaf: it only stores entries; `tick.rs` decides when to work them.

use grid_primitives::job::JobId;
use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{ChallengeId, ChallengeQueue, Config, Error, SettlementQueue};

/// Inserts `(due, id)` in order. Fails when the queue is full.
fn insert_sorted<B: Ord + Copy, I: Ord + Copy, S: Get<u32>>(
	queue: &mut BoundedVec<(B, I), S>,
	due: B,
	id: I,
) -> Result<(), ()> {
	let at = queue.partition_point(|entry| *entry <= (due, id));
	queue.try_insert(at, (due, id)).map_err(|_| ())
}

/// Queues `job` to settle at `due`.
pub(crate) fn insert<T: Config>(job: JobId, due: BlockNumberFor<T>) -> Result<(), Error<T>> {
	SettlementQueue::<T>::try_mutate(|queue| {
		insert_sorted(queue, due, job).map_err(|_| Error::<T>::TooManyRunningJobs)
	})
}

/// Takes `job` off the settlement queue.
pub(crate) fn remove<T: Config>(job: JobId) {
	SettlementQueue::<T>::mutate(|queue| queue.retain(|(_, j)| *j != job));
}

/// Moves `job` to settle at `due` (it is already queued, so there is room).
pub(crate) fn reschedule<T: Config>(job: JobId, due: BlockNumberFor<T>) {
	remove::<T>(job);
	// Cannot fail: the entry just removed made room.
	let _ = insert::<T>(job, due);
}

/// When the earliest queued round is due.
pub(crate) fn next_due<T: Config>() -> Option<BlockNumberFor<T>> {
	SettlementQueue::<T>::get().first().map(|(due, _)| *due)
}

/// Takes the earliest job off the settlement queue if it is due at or before `now`.
pub(crate) fn pop_due<T: Config>(now: BlockNumberFor<T>) -> Option<JobId> {
	let (due, job) = SettlementQueue::<T>::get().first().copied()?;
	if due > now {
		return None;
	}
	remove::<T>(job);
	Some(job)
}

/// Queues challenge `id` to be decided at `due`.
pub(crate) fn insert_challenge<T: Config>(
	id: ChallengeId,
	due: BlockNumberFor<T>,
) -> Result<(), Error<T>> {
	ChallengeQueue::<T>::try_mutate(|queue| {
		insert_sorted(queue, due, id).map_err(|_| Error::<T>::TooManyChallenges)
	})
}

/// Takes challenge `id` off the challenge queue.
pub(crate) fn remove_challenge<T: Config>(id: ChallengeId) {
	ChallengeQueue::<T>::mutate(|queue| queue.retain(|(_, c)| *c != id));
}

/// When the earliest queued challenge is due.
pub(crate) fn next_challenge_due<T: Config>() -> Option<BlockNumberFor<T>> {
	ChallengeQueue::<T>::get().first().map(|(due, _)| *due)
}

/// Takes the earliest challenge off the challenge queue if it is due at or before `now`.
pub(crate) fn pop_due_challenge<T: Config>(now: BlockNumberFor<T>) -> Option<ChallengeId> {
	let (due, id) = ChallengeQueue::<T>::get().first().copied()?;
	if due > now {
		return None;
	}
	remove_challenge::<T>(id);
	Some(id)
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::mock::{new_test_ext, Test, MAX_OPEN_CHALLENGES, MAX_RUNNING};

	fn jobs() -> Vec<(u64, JobId)> {
		SettlementQueue::<Test>::get().into_inner()
	}

	#[test]
	fn entries_stay_sorted_by_due_block_then_id() {
		new_test_ext().execute_with(|| {
			assert!(insert::<Test>(7, 9).is_ok());
			assert!(insert::<Test>(5, 9).is_ok());
			assert!(insert::<Test>(6, 3).is_ok());
			assert_eq!(jobs(), vec![(3, 6), (9, 5), (9, 7)]);
			assert_eq!(next_due::<Test>(), Some(3));
		});
	}

	#[test]
	fn a_full_queue_refuses_more() {
		new_test_ext().execute_with(|| {
			for job in 0..u64::from(MAX_RUNNING) {
				assert!(insert::<Test>(job, 5).is_ok());
			}
			assert!(matches!(insert::<Test>(99, 1), Err(Error::<Test>::TooManyRunningJobs)));
			for id in 0..u64::from(MAX_OPEN_CHALLENGES) {
				assert!(insert_challenge::<Test>(id, 5).is_ok());
			}
			assert!(matches!(
				insert_challenge::<Test>(99, 1),
				Err(Error::<Test>::TooManyChallenges)
			));
		});
	}

	#[test]
	fn reschedule_and_remove_move_only_their_entry() {
		new_test_ext().execute_with(|| {
			for (job, due) in [(1, 4), (2, 6), (3, 8)] {
				assert!(insert::<Test>(job, due).is_ok());
			}
			reschedule::<Test>(3, 2);
			assert_eq!(jobs(), vec![(2, 3), (4, 1), (6, 2)]);
			remove::<Test>(1);
			remove::<Test>(42);
			assert_eq!(jobs(), vec![(2, 3), (6, 2)]);
		});
	}

	#[test]
	fn pop_due_takes_only_due_entries_earliest_first() {
		new_test_ext().execute_with(|| {
			assert_eq!(pop_due::<Test>(100), None);
			for (job, due) in [(1, 5), (2, 3)] {
				assert!(insert::<Test>(job, due).is_ok());
			}
			assert_eq!(pop_due::<Test>(2), None);
			assert_eq!(pop_due::<Test>(5), Some(2));
			assert_eq!(pop_due::<Test>(4), None);
			assert_eq!(pop_due::<Test>(5), Some(1));
			assert_eq!(next_due::<Test>(), None);
		});
	}

	#[test]
	fn the_challenge_queue_works_the_same() {
		new_test_ext().execute_with(|| {
			for (id, due) in [(1, 5), (2, 3), (3, 5)] {
				assert!(insert_challenge::<Test>(id, due).is_ok());
			}
			assert_eq!(next_challenge_due::<Test>(), Some(3));
			assert_eq!(pop_due_challenge::<Test>(2), None);
			assert_eq!(pop_due_challenge::<Test>(3), Some(2));
			remove_challenge::<Test>(1);
			assert_eq!(pop_due_challenge::<Test>(9), Some(3));
			assert_eq!(pop_due_challenge::<Test>(9), None);
			assert!(SettlementQueue::<Test>::get().is_empty(), "the queues are separate");
		});
	}
}
