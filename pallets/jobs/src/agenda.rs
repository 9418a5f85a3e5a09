//! The agenda: per-block lists of what is due (a round to settle, a challenge to decide),
//! keyed by block as `pallet-scheduler`'s agenda is, and a cursor to the earliest block that
//! may still hold work. A leaf: it only stores entries; `tick.rs` decides when to work them.
//!
//! A block holds at most `MaxAgendaPerBlock` entries. An entry whose block is full goes to the
//! next block with room, at most `reach` blocks later (it is then worked a little late, which
//! only delays a settlement or a decision). So no single bounded list caps how many jobs run or
//! challenges are open chain-wide: filling the agenda means filling every block of a window.
//!
//! Housekeeping (ending a job nobody filled, pruning what a job left) takes at most half of a
//! block: anyone books both for a fee by posting a job and cancelling it (its `Unfilled` entry
//! stays a day ahead, its `Expire` entry a window ahead, and its deposit comes back at once
//! when no block has room for the `Expire`), so a flood of them once filled whole blocks and
//! ended running jobs whose next round found no room, refused challenges and skipped audits.

use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{Agenda, AgendaCursor, AgendaItem, Config, Error};

/// Blocks past its due block a caller's entry may go when those are full: a join that starts
/// a job, a challenge, a round moved up by its quorum.
pub(crate) fn caller_reach<T: Config>() -> u32 {
	T::MaxAgendaReach::get()
}

/// Blocks past its due block a running job's next round may go. Further than a caller's, so
/// that entries callers add cannot leave a running job without a slot; past it the job ends.
pub(crate) fn next_round_reach<T: Config>() -> u32 {
	T::MaxAgendaReach::get().saturating_mul(4)
}

/// What a search for room may read past the block it starts at (which the benchmarks, run on
/// an empty agenda, measured): one block's agenda for each further block within `reach`.
/// Charged at its worst to the call or agenda item that schedules: a loaded agenda makes every
/// search long, and nothing else bounds it.
pub(crate) fn search_weight<T: Config>(reach: u32) -> Weight {
	T::DbWeight::get().reads(reach.into())
}

/// The searches of a settlement: its job's next round (or, when the job ends, the job's
/// `Expire`) and its round's `Expire`, each at a next round's reach, and its audit draw, at a
/// caller's.
pub(crate) fn settle_search_weight<T: Config>() -> Weight {
	search_weight::<T>(next_round_reach::<T>())
		.saturating_mul(2)
		.saturating_add(search_weight::<T>(caller_reach::<T>()))
}

/// Whether `item` is housekeeping (ending a job nobody filled, pruning what a job left), which
/// anyone can book for a fee, rather than work that moves money or decides disputes.
pub(crate) fn is_housekeeping(item: &AgendaItem) -> bool {
	match item {
		AgendaItem::Unfilled(_) | AgendaItem::Expire(..) => true,
		AgendaItem::Settle(_)
		| AgendaItem::Draw(_)
		| AgendaItem::Decide(_)
		| AgendaItem::Audit(..) => false,
	}
}

/// How many housekeeping entries a block may hold: half of its room (see the module's docs).
pub(crate) fn housekeeping_room<T: Config>() -> usize {
	(T::MaxAgendaPerBlock::get() as usize / 2).max(1)
}

/// How many entries a block may hold for `item` to join them: all of its room for the work
/// that moves money and decides disputes, [`housekeeping_room`] for housekeeping.
fn room_for<T: Config>(item: AgendaItem) -> usize {
	if is_housekeeping(&item) {
		housekeeping_room::<T>()
	} else {
		T::MaxAgendaPerBlock::get() as usize
	}
}

/// Puts `item` on the agenda of the first block from `due` on (never before the cursor) with
/// room for it ([`room_for`]), at most `reach` blocks later; returns that block.
pub(crate) fn schedule<T: Config>(
	item: AgendaItem,
	due: BlockNumberFor<T>,
	reach: u32,
) -> Result<BlockNumberFor<T>, Error<T>> {
	let mut at = due.max(AgendaCursor::<T>::get());
	let room = room_for::<T>(item);
	let push = |items: &mut BoundedVec<AgendaItem, T::MaxAgendaPerBlock>| {
		if items.len() >= room {
			return Err(());
		}
		items.try_push(item).map_err(|_| ())
	};
	for _ in 0..=reach {
		if Agenda::<T>::try_mutate(at, push).is_ok() {
			return Ok(at);
		}
		at = at.saturating_add(One::one());
	}
	Err(Error::<T>::AgendaFull)
}

/// Takes `item` off the agenda of block `at` (a no-op when it is not there).
pub(crate) fn unschedule<T: Config>(item: AgendaItem, at: BlockNumberFor<T>) {
	Agenda::<T>::mutate_exists(at, |items| {
		if let Some(list) = items {
			list.retain(|entry| *entry != item);
			if list.is_empty() {
				*items = None;
			}
		}
	});
}

/// Moves `item` from block `from` to an earlier block: the first with room from `due` on,
/// within a caller's reach; keeps it where it is when none before `from` has room. Returns
/// where it is now. (Searching up to `from` itself would add a second copy there, and taking
/// the item off `from` would then remove both.)
pub(crate) fn reschedule<T: Config>(
	item: AgendaItem,
	from: BlockNumberFor<T>,
	due: BlockNumberFor<T>,
) -> BlockNumberFor<T> {
	let mut at = due.max(AgendaCursor::<T>::get());
	for _ in 0..=caller_reach::<T>() {
		if at >= from {
			break;
		}
		if Agenda::<T>::try_mutate(at, |items| items.try_push(item)).is_ok() {
			unschedule::<T>(item, from);
			return at;
		}
		at = at.saturating_add(One::one());
	}
	from
}

/// The first entry of block `at`, if any.
pub(crate) fn first<T: Config>(at: BlockNumberFor<T>) -> Option<AgendaItem> {
	Agenda::<T>::get(at).first().copied()
}

/// Takes the first entry off block `at`'s agenda (an item is on the agenda at most once).
pub(crate) fn take_first<T: Config>(at: BlockNumberFor<T>) -> Option<AgendaItem> {
	let item = first::<T>(at)?;
	unschedule::<T>(item, at);
	Some(item)
}

/// Whether work due before `now` is still on the agenda (some block's hooks ran out of
/// weight): looks at the blocks from the cursor, at most `scan` of them.
pub(crate) fn overdue_within<T: Config>(now: BlockNumberFor<T>, scan: u32) -> bool {
	let mut block = AgendaCursor::<T>::get();
	for _ in 0..scan {
		if block >= now {
			return false;
		}
		if Agenda::<T>::contains_key(block) {
			return true;
		}
		block = block.saturating_add(One::one());
	}
	false
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::mock::{new_test_ext, Test, AGENDA_PER_BLOCK, AGENDA_REACH};

	fn at(block: u64) -> Vec<AgendaItem> {
		Agenda::<Test>::get(block).into_inner()
	}

	fn settle(job: u64) -> AgendaItem {
		AgendaItem::Settle(job)
	}

	/// Fills blocks `from..from + count` to the brim with challenge decisions.
	fn fill(from: u64, count: u64) {
		for block in from..from + count {
			for id in 0..AGENDA_PER_BLOCK {
				let item = AgendaItem::Decide(block * 1_000 + u64::from(id));
				assert_eq!(schedule::<Test>(item, block, 0).ok(), Some(block));
			}
		}
	}

	#[test]
	fn entries_go_to_their_due_block_in_arrival_order() {
		new_test_ext().execute_with(|| {
			assert_eq!(schedule::<Test>(settle(7), 9, 0).ok(), Some(9));
			assert_eq!(schedule::<Test>(AgendaItem::Decide(7), 9, 0).ok(), Some(9));
			assert_eq!(schedule::<Test>(settle(5), 3, 0).ok(), Some(3));
			assert_eq!(at(9), vec![settle(7), AgendaItem::Decide(7)]);
			assert_eq!(at(3), vec![settle(5)]);
		});
	}

	#[test]
	fn a_full_block_spills_into_the_next_with_room_within_reach() {
		new_test_ext().execute_with(|| {
			fill(10, 2);
			assert_eq!(schedule::<Test>(settle(1), 10, AGENDA_REACH).ok(), Some(12));
			assert!(
				matches!(schedule::<Test>(settle(2), 10, 1), Err(Error::<Test>::AgendaFull)),
				"blocks 10 and 11 are full"
			);
			assert_eq!(schedule::<Test>(settle(2), 11, 1).ok(), Some(12), "block 12 has room");
		});
	}

	#[test]
	fn nothing_is_scheduled_behind_the_cursor() {
		new_test_ext().execute_with(|| {
			AgendaCursor::<Test>::put(20);
			assert_eq!(schedule::<Test>(settle(1), 4, 0).ok(), Some(20));
		});
	}

	#[test]
	fn unschedule_removes_only_its_entry_and_empty_blocks() {
		new_test_ext().execute_with(|| {
			for job in 1..=2 {
				assert_eq!(schedule::<Test>(settle(job), 4, 0).ok(), Some(4));
			}
			unschedule::<Test>(settle(1), 4);
			unschedule::<Test>(settle(42), 4);
			assert_eq!(at(4), vec![settle(2)]);
			unschedule::<Test>(settle(2), 4);
			assert!(!Agenda::<Test>::contains_key(4), "an empty block's agenda is deleted");
		});
	}

	#[test]
	fn reschedule_moves_or_keeps_the_entry() {
		new_test_ext().execute_with(|| {
			assert_eq!(schedule::<Test>(settle(1), 30, 0).ok(), Some(30));
			assert_eq!(reschedule::<Test>(settle(1), 30, 10), 10);
			assert_eq!((at(10), at(30)), (vec![settle(1)], vec![]));
			fill(2, u64::from(AGENDA_REACH) + 1);
			assert_eq!(reschedule::<Test>(settle(1), 10, 2), 10, "no room: it stays");
			assert_eq!(at(10), vec![settle(1)]);
		});
	}

	#[test]
	fn rescheduling_into_a_full_block_keeps_the_one_entry_where_it_was() {
		new_test_ext().execute_with(|| {
			// Block 20 is full, so the entry went to 21; a quorum asks for 20 again.
			fill(20, 1);
			assert_eq!(schedule::<Test>(settle(1), 20, 1).ok(), Some(21));
			assert_eq!(reschedule::<Test>(settle(1), 21, 20), 21);
			assert_eq!(at(21), vec![settle(1)], "still there, once");
		});
	}

	#[test]
	fn take_first_pops_in_order_and_deletes_the_emptied_block() {
		new_test_ext().execute_with(|| {
			assert_eq!(take_first::<Test>(5), None);
			for job in [3, 1] {
				assert!(schedule::<Test>(settle(job), 5, 0).is_ok());
			}
			assert_eq!(first::<Test>(5), Some(settle(3)));
			assert_eq!(take_first::<Test>(5), Some(settle(3)));
			assert_eq!(take_first::<Test>(5), Some(settle(1)));
			assert!(!Agenda::<Test>::contains_key(5));
		});
	}

	#[test]
	fn overdue_means_work_left_before_now_within_the_scan() {
		new_test_ext().execute_with(|| {
			assert!(!overdue_within::<Test>(10, 16), "an empty agenda");
			assert_eq!(schedule::<Test>(settle(1), 5, 0).ok(), Some(5));
			assert!(!overdue_within::<Test>(5, 16), "due now is not overdue yet");
			assert!(overdue_within::<Test>(6, 16));
			assert!(!overdue_within::<Test>(6, 3), "block 5 is past a scan of blocks 0 to 2");
			AgendaCursor::<Test>::put(5);
			assert!(overdue_within::<Test>(6, 1));
		});
	}
}
