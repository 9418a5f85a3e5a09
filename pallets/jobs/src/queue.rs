//! Deadline queues: `(due block, id)` entries kept sorted, earliest first.
//!
//! Two queues use them: the settlement queue (one entry per running job, due when its open
//! round settles) and the challenge queue (one entry per open challenge, due at its voting
//! deadline). Hooks work them, a bounded number per block in `on_initialize` and more in
//! `on_idle` when the block has room; what they cannot reach waits for the next block.

use grid_primitives::job::JobId;
use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{
	challenges, rounds, ChallengeId, ChallengeQueue, Config, Error, SettlementQueue, WeightInfo,
};

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

/// Settles rounds and decides challenges due at or before `now`, at most `max` items and
/// while `budget` allows the worst case of one more. Returns the weight used and the number
/// of items done.
pub(crate) fn work_due<T: Config>(
	now: BlockNumberFor<T>,
	max: u32,
	budget: Weight,
) -> (Weight, u32) {
	let mut used = T::DbWeight::get().reads(2);
	let mut done = 0u32;
	let per_round = T::WeightInfo::settle_round(T::MaxParticipants::get());
	while done < max && used.saturating_add(per_round).all_lte(budget) {
		let Some((due, job)) = SettlementQueue::<T>::get().first().copied() else { break };
		if due > now {
			break;
		}
		remove::<T>(job);
		rounds::settle::<T>(job);
		used = used.saturating_add(per_round);
		done += 1;
	}
	let per_challenge = T::WeightInfo::resolve_challenge(T::MaxCommittee::get());
	while done < max && used.saturating_add(per_challenge).all_lte(budget) {
		let Some((due, id)) = ChallengeQueue::<T>::get().first().copied() else { break };
		if due > now {
			break;
		}
		remove_challenge::<T>(id);
		challenges::resolve::<T>(id);
		used = used.saturating_add(per_challenge);
		done += 1;
	}
	(used, done)
}
