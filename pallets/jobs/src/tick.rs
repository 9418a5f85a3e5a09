//! Per-block work: settling due rounds and deciding due challenges, with its weight accounted
//! here and nowhere else (as `pallet-broker`'s `tick_impls.rs`).
//!
//! `on_initialize` works at most `MaxSettlementsPerBlock` items, `on_idle` as many as the
//! block's spare weight allows, and a validator's worker report the same bounded amount as
//! `on_initialize` (for items whose block ran out of weight). Rounds go first; what does not
//! fit waits for the next block.

use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{challenges, queue, rounds, Config, WeightInfo};

/// What one pass did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Worked {
	/// Weight used, the fixed queue reads included.
	pub weight: Weight,
	/// Rounds settled and challenges decided.
	pub items: u32,
}

/// The `on_initialize` pass: a bounded number of items, whatever their weight.
pub(crate) fn on_initialize<T: Config>(now: BlockNumberFor<T>) -> Weight {
	work_due::<T>(now, T::MaxSettlementsPerBlock::get(), Weight::MAX).weight
}

/// The `on_idle` pass: as many items as fit in `remaining`.
pub(crate) fn on_idle<T: Config>(now: BlockNumberFor<T>, remaining: Weight) -> Weight {
	work_due::<T>(now, u32::MAX, remaining).weight
}

/// The pass a worker report asks for; returns how many items it worked. Its weight is
/// charged up front by [`worst_case`].
pub(crate) fn on_worker_report<T: Config>(now: BlockNumberFor<T>) -> u32 {
	work_due::<T>(now, T::MaxSettlementsPerBlock::get(), Weight::MAX).items
}

/// The most `items` items can weigh, whichever kind they are.
pub(crate) fn worst_case<T: Config>(items: u32) -> Weight {
	per_round::<T>().max(per_challenge::<T>()).saturating_mul(items.into())
}

/// Reading both queue heads, paid once per pass whether or not anything is due.
fn base<T: Config>() -> Weight {
	T::DbWeight::get().reads(2)
}

/// Settling one round of the largest job.
fn per_round<T: Config>() -> Weight {
	T::WeightInfo::settle_round(T::MaxParticipants::get())
}

/// Deciding one challenge of the largest committee.
fn per_challenge<T: Config>() -> Weight {
	T::WeightInfo::resolve_challenge(T::MaxCommittee::get())
}

/// Weight used against a limit. The base is charged even past the limit and sums saturate,
/// as the hooks always did, which `WeightMeter` would not.
struct Meter {
	used: Weight,
	limit: Weight,
}

impl Meter {
	fn fits(&self, cost: Weight) -> bool {
		self.used.saturating_add(cost).all_lte(self.limit)
	}

	fn charge(&mut self, cost: Weight) {
		self.used = self.used.saturating_add(cost);
	}
}

/// Settles rounds and then decides challenges due at or before `now`: at most `max` items,
/// each only while `limit` allows its worst case.
fn work_due<T: Config>(now: BlockNumberFor<T>, max: u32, limit: Weight) -> Worked {
	let mut meter = Meter { used: base::<T>(), limit };
	let mut items = 0u32;
	let per_round = per_round::<T>();
	while items < max && meter.fits(per_round) {
		let Some(job) = queue::pop_due::<T>(now) else { break };
		rounds::settle::<T>(job);
		meter.charge(per_round);
		items += 1;
	}
	let per_challenge = per_challenge::<T>();
	while items < max && meter.fits(per_challenge) {
		let Some(id) = queue::pop_due_challenge::<T>(now) else { break };
		challenges::resolve::<T>(id);
		meter.charge(per_challenge);
		items += 1;
	}
	Worked { weight: meter.used, items }
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{mock::*, Challenges, RoundResults, SettlementQueue};
	use polkadot_sdk::polkadot_sdk_frame::deps::frame_support::assert_ok;

	fn base() -> Weight {
		super::base::<Test>()
	}

	fn per_round() -> Weight {
		super::per_round::<Test>()
	}

	fn per_challenge() -> Weight {
		super::per_challenge::<Test>()
	}

	/// Three running jobs whose first rounds are due together; moves to that block without
	/// running its hooks and returns it.
	fn three_rounds_due() -> u64 {
		for providers in [[P1, P2], [P3, P4], [15, 16]] {
			running_job(&providers);
		}
		let due = 1 + ROUND_BLOCKS;
		System::set_block_number(due);
		due
	}

	fn settled() -> usize {
		(0..3).filter(|id| RoundResults::<Test>::contains_key(id, 0)).count()
	}

	#[test]
	fn the_per_item_weights_are_not_zero() {
		// Otherwise the tests below could not tell a charged item from a free one.
		assert!(per_round().ref_time() > 0 && per_challenge().ref_time() > 0);
	}

	#[test]
	fn nothing_due_costs_only_the_queue_reads() {
		new_test_ext().execute_with(|| {
			assert_eq!(on_initialize::<Test>(1), base());
			running_job(&[P1, P2]);
			assert_eq!(on_initialize::<Test>(1), base());
			assert_eq!(on_idle::<Test>(1, Weight::MAX), base());
			assert_eq!(SettlementQueue::<Test>::get().len(), 1);
		});
	}

	#[test]
	fn on_initialize_works_a_bounded_number_and_charges_each() {
		new_test_ext().execute_with(|| {
			let due = three_rounds_due();
			let weight = on_initialize::<Test>(due);
			// MaxSettlementsPerBlock is 2.
			assert_eq!(settled(), 2);
			assert_eq!(weight, base() + per_round() * 2u64);
			assert_eq!(on_worker_report::<Test>(due), 1);
			assert_eq!(settled(), 3);
			check_invariants();
		});
	}

	#[test]
	fn on_idle_works_what_fits_in_the_remaining_weight() {
		new_test_ext().execute_with(|| {
			let due = three_rounds_due();
			let short = base() + per_round() - Weight::from_parts(1, 0);
			assert_eq!(on_idle::<Test>(due, short), base());
			assert_eq!(settled(), 0);
			assert_eq!(on_idle::<Test>(due, base() + per_round()), base() + per_round());
			assert_eq!(settled(), 1);
			assert_eq!(on_idle::<Test>(due, Weight::MAX), base() + per_round() * 2u64);
			assert_eq!(settled(), 3);
			check_invariants();
		});
	}

	#[test]
	fn rounds_go_before_challenges() {
		new_test_ext().execute_with(|| {
			let members = [P1, P2, P3, P4];
			let id = running_job(&members);
			deliver(id, 0, &members);
			assert_ok!(Jobs::challenge(RuntimeOrigin::signed(P1), id, 0, P2));
			// Round 1 is due at 1 + ROUND_BLOCKS, the challenge at 1 + VOTING_BLOCKS.
			let now = 1 + ROUND_BLOCKS.max(VOTING_BLOCKS);
			System::set_block_number(now);
			let first = work_due::<Test>(now, 1, Weight::MAX);
			assert_eq!(first, Worked { weight: base() + per_round(), items: 1 });
			assert!(RoundResults::<Test>::contains_key(id, 1));
			assert!(Challenges::<Test>::contains_key(0));
			let second = work_due::<Test>(now, 1, Weight::MAX);
			assert_eq!(second, Worked { weight: base() + per_challenge(), items: 1 });
			assert!(!Challenges::<Test>::contains_key(0));
			check_invariants();
		});
	}

	#[test]
	fn the_worst_case_covers_either_kind_of_item() {
		let worst = worst_case::<Test>(3);
		assert!(worst.all_gte(per_round() * 3u64) && worst.all_gte(per_challenge() * 3u64));
		assert_eq!(worst_case::<Test>(0), Weight::zero());
	}

	#[test]
	fn the_base_is_charged_even_past_the_limit() {
		let meter = Meter { used: Weight::from_parts(5, 5), limit: Weight::from_parts(3, 3) };
		assert!(!meter.fits(Weight::zero()));
		let mut meter = Meter { used: Weight::MAX, limit: Weight::MAX };
		assert!(meter.fits(Weight::from_parts(1, 1)), "sums saturate");
		meter.charge(Weight::from_parts(1, 1));
		assert_eq!(meter.used, Weight::MAX);
	}
}
