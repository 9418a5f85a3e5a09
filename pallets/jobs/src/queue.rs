//! The settlement queue: one entry per running job, `(due block, job)`, earliest first.
//!
//! Hooks settle the rounds whose due block has come, a bounded number per block in
//! `on_initialize` and more in `on_idle` when the block has room; what they cannot reach
//! waits for the next block (or, later, the validators' off-chain worker).

use grid_primitives::job::JobId;
use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{rounds, Config, Error, SettlementQueue, WeightInfo};

/// Queues `job` to settle at `due`.
pub(crate) fn insert<T: Config>(job: JobId, due: BlockNumberFor<T>) -> Result<(), Error<T>> {
	SettlementQueue::<T>::try_mutate(|queue| {
		let at = queue.partition_point(|entry| *entry <= (due, job));
		queue.try_insert(at, (due, job)).map_err(|_| Error::<T>::TooManyRunningJobs)
	})
}

/// Takes `job` off the queue.
pub(crate) fn remove<T: Config>(job: JobId) {
	SettlementQueue::<T>::mutate(|queue| queue.retain(|(_, j)| *j != job));
}

/// Moves `job` to settle at `due` (it is already queued, so there is room).
pub(crate) fn reschedule<T: Config>(job: JobId, due: BlockNumberFor<T>) {
	remove::<T>(job);
	// Cannot fail: the entry just removed made room.
	let _ = insert::<T>(job, due);
}

/// Settles rounds due at or before `now`, at most `max` of them and while `budget` allows the
/// worst case of one more. Returns the weight used.
pub(crate) fn settle_due<T: Config>(now: BlockNumberFor<T>, max: u32, budget: Weight) -> Weight {
	let per_round = T::WeightInfo::settle_round(T::MaxParticipants::get());
	let mut used = T::DbWeight::get().reads(1);
	let mut settled = 0u32;
	while settled < max && used.saturating_add(per_round).all_lte(budget) {
		let Some((due, job)) = SettlementQueue::<T>::get().first().copied() else { break };
		if due > now {
			break;
		}
		remove::<T>(job);
		rounds::settle::<T>(job);
		used = used.saturating_add(per_round);
		settled += 1;
	}
	used
}
