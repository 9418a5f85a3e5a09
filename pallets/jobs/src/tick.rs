//! Per-block work: settling due rounds, drawing committees and deciding challenges from the
//! agenda, with its weight accounted here and nowhere else (as `pallet-broker`'s
//! `tick_impls.rs`).
//!
//! `on_initialize` works at most `MaxSettlementsPerBlock` items, `on_idle` as many as the
//! block's spare weight allows, and a validator's worker report the same bounded amount as
//! `on_initialize` (for items whose block ran out of weight). Items are worked block by block
//! from the agenda's cursor, in arrival order within a block; what does not fit waits for the
//! next pass, and the cursor stays on its block.

use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{
	agenda, audits, challenges, expiry, membership, rounds, AgendaCursor, AgendaItem, Config,
	WeightInfo,
};

/// Most agenda blocks one pass looks at. The cursor trails the chain only by blocks whose work
/// did not fit, so this bounds the reads of a pass without leaving work behind for long.
const MAX_BLOCKS_PER_PASS: u32 = 16;

/// What one pass did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Worked {
	/// Weight used, the agenda reads included.
	pub weight: Weight,
	/// Rounds settled and challenges decided.
	pub items: u32,
}

/// Whether work due before `now` is still on the agenda, within the blocks one pass looks at.
pub(crate) fn overdue<T: Config>(now: BlockNumberFor<T>) -> bool {
	agenda::overdue_within::<T>(now, MAX_BLOCKS_PER_PASS)
}

/// The `on_initialize` pass: a bounded number of items, whatever their weight.
pub(crate) fn on_initialize<T: Config>(now: BlockNumberFor<T>) -> Weight {
	work_due::<T>(now, T::MaxSettlementsPerBlock::get(), Weight::MAX).weight
}

/// The `on_idle` pass: as many items as fit in `remaining`; nothing, not even a look at the
/// cursor, when that does not fit (what `on_idle` returns is added to a full block).
pub(crate) fn on_idle<T: Config>(now: BlockNumberFor<T>, remaining: Weight) -> Weight {
	if !base::<T>().all_lte(remaining) {
		return Weight::zero();
	}
	work_due::<T>(now, u32::MAX, remaining).weight
}

/// The pass a worker report asks for: at most `MaxSettlementsPerBlock` items, whose
/// [`worst_case`] the report is charged up front and refunded down to what this returns.
pub(crate) fn on_worker_report<T: Config>(now: BlockNumberFor<T>) -> Worked {
	work_due::<T>(now, T::MaxSettlementsPerBlock::get(), Weight::MAX)
}

/// The most a pass of `items` items can weigh, whichever kind they are.
pub(crate) fn worst_case<T: Config>(items: u32) -> Weight {
	let blocks = per_block::<T>().saturating_mul(MAX_BLOCKS_PER_PASS.into());
	let item = per_round::<T>()
		.max(per_draw::<T>())
		.max(per_challenge::<T>())
		.max(per_expire::<T>())
		.max(per_unfilled::<T>())
		.max(per_audit::<T>());
	item.saturating_mul(items.into()).saturating_add(blocks)
}

/// Reading and writing the cursor, paid once per pass whether or not anything is due.
fn base<T: Config>() -> Weight {
	T::DbWeight::get().reads_writes(1, 1)
}

/// Reading (and rewriting) one block's agenda.
fn per_block<T: Config>() -> Weight {
	T::DbWeight::get().reads_writes(1, 1)
}

/// Settling one round of the largest job: paying its members and opening the next round, or
/// slashing them all and completing it, whichever costs more; with its agenda searches.
fn per_round<T: Config>() -> Weight {
	let p = T::MaxParticipants::get();
	T::WeightInfo::settle_round(p)
		.max(T::WeightInfo::settle_round_slashing(p))
		.saturating_add(agenda::settle_search_weight::<T>())
}

/// Searching for a block for an ended job's or a waiting round's `Expire`.
fn expire_search<T: Config>() -> Weight {
	agenda::search_weight::<T>(agenda::next_round_reach::<T>())
}

/// Drawing the committee of one challenge among the most members a round can have; a draw
/// that finds nobody decides the challenge at once.
fn per_draw<T: Config>() -> Weight {
	T::WeightInfo::draw_committee(T::MaxParticipants::get())
		// The job's record, whose rounds may overlap (read since the benchmark).
		.saturating_add(T::DbWeight::get().reads(1))
		.saturating_add(T::WeightInfo::resolve_challenge(0))
		.saturating_add(membership::conviction_weight::<T>())
}

/// Deciding one challenge of the largest committee.
fn per_challenge<T: Config>() -> Weight {
	T::WeightInfo::resolve_challenge(T::MaxCommittee::get())
		.saturating_add(membership::conviction_weight::<T>())
}

/// Pruning a round of the largest job together with the job itself, and the job's
/// convictions (its benchmark predates them): at most one write per member; or, while a
/// challenge on the job is open, searching for a later block.
fn per_expire<T: Config>() -> Weight {
	let members = T::MaxParticipants::get();
	let prune =
		T::WeightInfo::expire(members).saturating_add(T::DbWeight::get().writes(members.into()));
	prune.max(expire_search::<T>())
}

/// Ending an unfilled job of the most members: bounded by a force cancel, which also
/// releases every member and refunds (and may settle a round besides).
fn per_unfilled<T: Config>() -> Weight {
	T::WeightInfo::force_cancel_job(T::MaxParticipants::get())
		.saturating_add(rounds::unfilled_weight::<T>())
		.saturating_add(expire_search::<T>())
}

/// Drawing the audits of a round of the most members: the draw over all of them, and the
/// most audits a round may get, each drawing a committee among them.
fn per_audit<T: Config>() -> Weight {
	let p = T::MaxParticipants::get();
	let audits = u64::from(T::MaxAuditsPerRound::get());
	let open = T::WeightInfo::open_audit(p)
		// The job's record, whose rounds may overlap (read since the benchmark).
		.saturating_add(T::DbWeight::get().reads(1))
		.saturating_add(agenda::search_weight::<T>(agenda::caller_reach::<T>()));
	T::WeightInfo::audit_round(p).saturating_add(open.saturating_mul(audits))
}

/// The worst case of one item.
fn cost_of<T: Config>(item: AgendaItem) -> Weight {
	match item {
		AgendaItem::Settle(_) => per_round::<T>(),
		AgendaItem::Draw(_) => per_draw::<T>(),
		AgendaItem::Decide(_) => per_challenge::<T>(),
		AgendaItem::Expire(..) => per_expire::<T>(),
		AgendaItem::Unfilled(_) => per_unfilled::<T>(),
		AgendaItem::Audit(..) => per_audit::<T>(),
	}
}

/// Does one item.
fn work<T: Config>(item: AgendaItem) {
	match item {
		AgendaItem::Settle(job) => rounds::settle::<T>(job),
		AgendaItem::Draw(id) => challenges::draw::<T>(id),
		AgendaItem::Decide(id) => challenges::resolve::<T>(id),
		AgendaItem::Expire(job, round) => expiry::expire::<T>(job, round),
		AgendaItem::Unfilled(job) => rounds::end_if_unfilled::<T>(job),
		AgendaItem::Audit(job, round) => {
			audits::run::<T>(job, round);
		}
	}
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

/// Works the agenda from its cursor through `now`: at most `max` items, each only while
/// `limit` allows its worst case. The cursor moves past each block left empty (it is stored
/// as the pass goes, so that work scheduled meanwhile is never put behind it).
fn work_due<T: Config>(now: BlockNumberFor<T>, max: u32, limit: Weight) -> Worked {
	let mut meter = Meter { used: base::<T>(), limit };
	let mut items = 0u32;
	let mut block = AgendaCursor::<T>::get();
	for _ in 0..MAX_BLOCKS_PER_PASS {
		if block > now || !meter.fits(per_block::<T>()) {
			break;
		}
		meter.charge(per_block::<T>());
		while let Some(item) = agenda::first::<T>(block) {
			if items >= max || !meter.fits(cost_of::<T>(item)) {
				return Worked { weight: meter.used, items };
			}
			agenda::take_first::<T>(block);
			work::<T>(item);
			meter.charge(cost_of::<T>(item));
			items += 1;
		}
		block = block.saturating_add(One::one());
		AgendaCursor::<T>::put(block);
	}
	Worked { weight: meter.used, items }
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{mock::*, Agenda, Challenges, RoundResults};
	use polkadot_sdk::polkadot_sdk_frame::deps::frame_support::assert_ok;

	fn base() -> Weight {
		super::base::<Test>()
	}

	fn per_block() -> Weight {
		super::per_block::<Test>()
	}

	fn per_round() -> Weight {
		super::per_round::<Test>()
	}

	fn per_draw() -> Weight {
		super::per_draw::<Test>()
	}

	fn per_challenge() -> Weight {
		super::per_challenge::<Test>()
	}

	/// Moves to block `n` without running its hooks, the agenda's cursor on it as if every
	/// block before had been worked.
	fn jump_to(n: u64) {
		System::set_block_number(n);
		AgendaCursor::<Test>::put(n);
	}

	/// Three running jobs whose first rounds are due together; moves to that block and
	/// returns it.
	fn three_rounds_due() -> u64 {
		for providers in [[P1, P2], [P3, P4], [15, 16]] {
			running_job(&providers);
		}
		let due = 1 + ROUND_BLOCKS;
		jump_to(due);
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
	fn an_empty_agenda_costs_only_its_reads_and_moves_the_cursor() {
		new_test_ext().execute_with(|| {
			assert_eq!(on_initialize::<Test>(1), base() + per_block() * 2u64, "blocks 0 and 1");
			assert_eq!(AgendaCursor::<Test>::get(), 2);
			running_job(&[P1, P2]);
			assert_eq!(on_initialize::<Test>(1), base(), "block 1 was worked already");
			assert_eq!(on_idle::<Test>(1, Weight::MAX), base());
			assert_eq!(Agenda::<Test>::get(1 + ROUND_BLOCKS).len(), 1);
		});
	}

	#[test]
	fn on_initialize_works_a_bounded_number_and_charges_each() {
		new_test_ext().execute_with(|| {
			let due = three_rounds_due();
			let weight = on_initialize::<Test>(due);
			// MaxSettlementsPerBlock is 2.
			assert_eq!(settled(), 2);
			assert_eq!(weight, base() + per_block() + per_round() * 2u64);
			assert_eq!(AgendaCursor::<Test>::get(), due, "work is left at the due block");
			assert_eq!(on_worker_report::<Test>(due).items, 1);
			assert_eq!(settled(), 3);
			assert_eq!(AgendaCursor::<Test>::get(), due + 1);
			check_invariants();
		});
	}

	#[test]
	fn on_idle_works_what_fits_in_the_remaining_weight() {
		new_test_ext().execute_with(|| {
			let due = three_rounds_due();
			let overhead = base() + per_block();
			let short = overhead + per_round() - Weight::from_parts(1, 0);
			assert_eq!(on_idle::<Test>(due, short), overhead);
			assert_eq!(settled(), 0);
			assert_eq!(on_idle::<Test>(due, overhead + per_round()), overhead + per_round());
			assert_eq!(settled(), 1);
			assert_eq!(on_idle::<Test>(due, Weight::MAX), overhead + per_round() * 2u64);
			assert_eq!(settled(), 3);
			check_invariants();
		});
	}

	#[test]
	fn earlier_blocks_go_first_and_a_pass_catches_up_on_several() {
		new_test_ext().execute_with(|| {
			let members = [P1, P2, P3, P4];
			let id = running_job(&members);
			deliver(id, 0, &members);
			assert_ok!(Jobs::challenge(RuntimeOrigin::signed(P1), id, 0, P2));
			// The committee is drawn at 1 + COMMITTEE_DELAY and the challenge decided at
			// 1 + VOTING_BLOCKS, both before round 1 at 1 + ROUND_BLOCKS.
			const { assert!(VOTING_BLOCKS < ROUND_BLOCKS) };
			let now = 1 + ROUND_BLOCKS;
			System::set_block_number(now);
			AgendaCursor::<Test>::put(2);
			let first = work_due::<Test>(now, 1, Weight::MAX);
			// The draw at block 2, then blocks up to the decision's, where the pass stops.
			let blocks = per_block() * (VOTING_BLOCKS - COMMITTEE_DELAY + 1);
			assert_eq!(first, Worked { weight: base() + blocks + per_draw(), items: 1 });
			assert!(Challenges::<Test>::get(0).is_some_and(|c| c.drawn()));
			let second = work_due::<Test>(now, 1, Weight::MAX);
			// The decision, then block 6 with its round left for the next pass.
			assert_eq!(
				second,
				Worked { weight: base() + per_block() * 2 + per_challenge(), items: 1 }
			);
			assert!(!Challenges::<Test>::contains_key(0));
			assert!(!RoundResults::<Test>::contains_key(id, 1));
			let third = work_due::<Test>(now, 1, Weight::MAX);
			assert_eq!(third.items, 1);
			assert!(RoundResults::<Test>::contains_key(id, 1));
			check_invariants();
		});
	}

	#[test]
	fn one_pass_looks_at_a_bounded_number_of_blocks() {
		new_test_ext().execute_with(|| {
			let far = u64::from(MAX_BLOCKS_PER_PASS) * 3;
			System::set_block_number(far);
			let worked = on_initialize::<Test>(far);
			assert_eq!(worked, base() + per_block() * u64::from(MAX_BLOCKS_PER_PASS));
			assert_eq!(AgendaCursor::<Test>::get(), u64::from(MAX_BLOCKS_PER_PASS));
		});
	}

	#[test]
	fn the_worst_case_covers_either_kind_of_item_and_the_blocks_looked_at() {
		let worst = worst_case::<Test>(3);
		for item in [per_round(), per_draw(), per_challenge()] {
			assert!(worst.all_gte(item * 3u64));
		}
		assert_eq!(worst_case::<Test>(0), per_block() * u64::from(MAX_BLOCKS_PER_PASS));
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
