//! Attacker tests of the job market's economics (stake bound to jobs, jobs per provider,
//! abandoned jobs, root's and buyers' cancels, frozen capabilities, per-job escrow): each
//! plays a hostile provider or buyer against a rule that protects money or stake.

use crate::{
	mock::*, Agenda, AgendaItem, Error, Event, JobStatus, Jobs as JobsMap, Participants,
	RemovalReason, Rounds,
};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::frame_support::{assert_noop, assert_ok},
	prelude::*,
};

type ProvidersError = pallet_providers::Error<Test>;

fn unbond(who: AccountId, amount: Balance) -> DispatchResult {
	Providers::unbond(RuntimeOrigin::signed(who), amount)
}

/// A job of [`spec`] that requires `min_stake` of each provider.
fn job_requiring(min_stake: Balance, min_providers: u32) -> u64 {
	let mut s = spec();
	s.min_provider_stake = min_stake;
	s.min_providers = min_providers;
	create(s)
}

#[test]
fn a_provider_cannot_unbond_what_its_job_requires_until_the_challenge_window_closes() {
	new_test_ext().execute_with(|| {
		register(P1);
		register(P2);
		let id = job_requiring(900, 2);
		assert_ok!(join(id, P1));
		assert_ok!(join(id, P2));
		// The attack: join a job that requires 900, then unbond down to the registry minimum.
		assert_noop!(unbond(P1, 200), ProvidersError::StakeLocked);
		// Stake above the requirement is free.
		assert_ok!(unbond(P1, 100));
		for round in 0..3 {
			deliver(id, round, &[P1, P2]);
		}
		assert!(matches!(status(id), JobStatus::Completed { .. }));
		// Paid rounds can still be challenged: the stake stays until window + voting pass.
		let free_at = System::block_number() + spec().challenge_window + VOTING_BLOCKS;
		assert_noop!(unbond(P1, 900), ProvidersError::StakeLocked);
		run_to_block(free_at - 1);
		assert_noop!(unbond(P1, 900), ProvidersError::StakeLocked);
		run_to_block(free_at);
		assert_ok!(unbond(P1, 900));
		check_invariants();
	});
}

#[test]
fn a_leaver_that_was_never_paid_is_free_at_once() {
	new_test_ext().execute_with(|| {
		register(P1);
		let id = job_requiring(900, 2);
		assert_ok!(join(id, P1));
		assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(P1), id));
		assert_ok!(unbond(P1, STAKE));
		check_invariants();
	});
}

#[test]
fn one_stake_cannot_back_two_jobs_beyond_its_size() {
	new_test_ext().execute_with(|| {
		register(P1);
		let (first, second, small) =
			(job_requiring(600, 2), job_requiring(600, 2), job_requiring(400, 2));
		assert_ok!(join(first, P1));
		assert_noop!(join(second, P1), Error::<Test>::NotEligible);
		assert_ok!(join(small, P1));
		check_invariants();
	});
}

#[test]
fn jobs_per_provider_are_capped() {
	new_test_ext().execute_with(|| {
		register(P1);
		let ids: Vec<u64> = (0..=MAX_JOBS_PER_PROVIDER).map(|_| job_requiring(0, 2)).collect();
		for id in &ids[..MAX_JOBS_PER_PROVIDER as usize] {
			assert_ok!(join(*id, P1));
		}
		assert_noop!(join(ids[MAX_JOBS_PER_PROVIDER as usize], P1), Error::<Test>::TooManyJobs);
		check_invariants();
	});
}

#[test]
fn a_provider_slashed_below_what_its_jobs_lock_leaves_them() {
	new_test_ext().execute_with(|| {
		// P1 backs two jobs: 100 for `cheap`, 800 for `dear` (900 of its 1,000 locked).
		let cheap = running_job(&[P1, P2, P3]);
		register(P4);
		let dear = job_requiring(800, 2);
		assert_ok!(join(dear, P1));
		assert_ok!(join(dear, P4));
		assert_eq!(status(dear), JobStatus::Running);
		job_events();

		// It equivocates in `cheap`: half its stake goes, and what is left no longer backs
		// `dear`.
		let first = proof(cheap, 0, P1, 42, 100, &[]);
		let second = proof(cheap, 0, P1, 43, 100, &[]);
		assert_ok!(Jobs::report_equivocation(RuntimeOrigin::signed(REPORTER), first, second));
		assert_eq!(pallet_providers::Providers::<Test>::get(P1).unwrap().stake, STAKE / 2);
		assert!(!Participants::<Test>::contains_key(dear, P1));
		assert_eq!(JobsMap::<Test>::get(dear).unwrap().participants, 1);
		assert!(job_events().contains(&Event::Removed {
			job: dear,
			who: P1,
			reason: RemovalReason::StakeShortfall
		}));
		check_invariants();
	});
}

#[test]
fn capabilities_cannot_be_raised_after_joining() {
	new_test_ext().execute_with(|| {
		let _ = running_job(&[P1, P2]);
		// The attack: claim more samples by declaring more hardware once in the job.
		assert_noop!(
			Providers::update(RuntimeOrigin::signed(P1), Some(hardware(4_000_000)), None, None),
			ProvidersError::InJob
		);
	});
}

fn status(job: u64) -> JobStatus {
	JobsMap::<Test>::get(job).unwrap().status
}

/// Starts `count` one-provider jobs of 50 rounds with `who` in each; returns their ids.
fn zombie_jobs(who: u64, count: u32) -> Vec<u64> {
	(0..count)
		.map(|_| {
			let mut s = spec();
			s.min_providers = 1;
			s.rounds = 50;
			let id = create(s);
			assert_ok!(join(id, who));
			id
		})
		.collect()
}

#[test]
fn a_job_its_providers_left_ends_and_refunds_instead_of_holding_agenda_slots() {
	new_test_ext().execute_with(|| {
		// The attack: fill a block's agenda with long jobs, then leave them, so that they
		// hold slots (and the buyer's escrow) for as long as they last.
		register(P1);
		let zombies = zombie_jobs(P1, AGENDA_PER_BLOCK);
		register(P2);
		let honest = job_requiring(MIN_STAKE, 1);
		// A full block does not keep the honest job out: its round settles a block later.
		assert_ok!(join(honest, P2));
		assert_eq!(Rounds::<Test>::get(honest).unwrap().due, 2 + ROUND_BLOCKS);
		for id in &zombies {
			assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(P1), *id));
		}
		job_events();
		// Understaffed for `MAX_UNDERSTAFFED` settlements in a row, each zombie ends.
		advance(ROUND_BLOCKS * u64::from(MAX_UNDERSTAFFED) + 1);
		let events = job_events();
		for id in &zombies {
			assert_eq!(status(*id), JobStatus::Cancelled);
			assert_eq!(JobsMap::<Test>::get(id).unwrap().held(), 0);
			assert!(events
				.iter()
				.any(|e| matches!(e, Event::JobAbandoned { job, .. } if job == id)));
		}
		assert!(!Agenda::<Test>::iter_values().flatten().any(|i| matches!(i,
			AgendaItem::Settle(job) if zombies.contains(&job))));
		check_invariants();
	});
}

#[test]
fn filling_the_agenda_within_reach_only_delays_a_start_by_a_block() {
	new_test_ext().execute_with(|| {
		// The attack: book every block a job starting now could settle its first round in.
		register(P1);
		zombie_jobs(P1, AGENDA_PER_BLOCK * (AGENDA_REACH + 1));
		register(P2);
		let honest = job_requiring(MIN_STAKE, 1);
		assert_noop!(join(honest, P2), Error::<Test>::AgendaFull);
		// To keep it up the attacker must start as many jobs again every block.
		advance(1);
		assert_ok!(join(honest, P2));
		assert_eq!(status(honest), JobStatus::Running);
		check_invariants();
	});
}

#[test]
fn a_running_job_whose_next_round_finds_no_room_ends_and_refunds() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2]);
		// Round 0 settles at block 2, so round 1 would be due at 2 + ROUND_BLOCKS.
		System::set_block_number(2);
		let next_deadline = 2 + ROUND_BLOCKS;
		// Book every block its next round could be due in (directly: no attacker can reach
		// this far, since callers' entries go at most `AGENDA_REACH` blocks past their due).
		let reach = u64::from(crate::agenda::next_round_reach::<Test>());
		for block in next_deadline..=next_deadline + reach {
			for n in 0..AGENDA_PER_BLOCK {
				let filler = AgendaItem::Decide(1_000 * block + u64::from(n));
				assert_eq!(crate::agenda::schedule::<Test>(filler, block, 0).ok(), Some(block));
			}
		}
		let held = JobsMap::<Test>::get(id).unwrap().held();
		let buyer = free(BUYER);
		job_events();
		deliver(id, 0, &[P1, P2]);
		let job = JobsMap::<Test>::get(id).unwrap();
		assert_eq!(job.status, JobStatus::Cancelled);
		assert_eq!(job.held(), 0);
		// The delivered round is paid; the rest of the escrow goes back.
		assert_eq!(job.paid, REWARD);
		assert_eq!(free(BUYER) - buyer, held - job.paid - job.fees);
		assert!(job_events()
			.iter()
			.any(|e| matches!(e, Event::JobCancelled { job, .. } if *job == id)));
		assert!(!Rounds::<Test>::contains_key(id));
	});
}

#[test]
fn a_job_that_recovers_its_providers_keeps_running() {
	new_test_ext().execute_with(|| {
		let mut s = spec();
		s.rounds = 10;
		let id = create(s);
		for who in [P1, P2, P3] {
			register(who);
		}
		assert_ok!(join(id, P1));
		assert_ok!(join(id, P2));
		assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(P2), id));
		// One settlement short, then a new provider comes: the count starts again.
		deliver(id, 0, &[P1]);
		advance(ROUND_BLOCKS);
		assert_eq!(JobsMap::<Test>::get(id).unwrap().understaffed_rounds, 1);
		assert_ok!(join(id, P3));
		// Its only member delivers: round 1 settles at once, with two participants.
		deliver(id, 1, &[P1]);
		assert_eq!(JobsMap::<Test>::get(id).unwrap().understaffed_rounds, 0);
		deliver(id, 2, &[P1, P3]);
		assert_eq!(status(id), JobStatus::Running);
		assert_eq!(JobsMap::<Test>::get(id).unwrap().understaffed_rounds, 0);
		check_invariants();
	});
}

#[test]
fn only_root_can_force_cancel_a_job() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2]);
		let held = JobsMap::<Test>::get(id).unwrap().held();
		let buyer = free(BUYER);
		for who in [P1, REPORTER, BUYER] {
			assert_noop!(
				Jobs::force_cancel_job(RuntimeOrigin::signed(who), id),
				DispatchError::BadOrigin
			);
		}
		assert_noop!(Jobs::force_cancel_job(RuntimeOrigin::root(), 99), Error::<Test>::UnknownJob);
		assert_ok!(Jobs::force_cancel_job(RuntimeOrigin::root(), id));
		assert_eq!(status(id), JobStatus::Cancelled);
		assert_eq!(free(BUYER) - buyer, held, "the buyer gets its escrow back");
		assert!(job_events().contains(&Event::JobCancelled { job: id, refunded: held }));
		assert_noop!(Jobs::force_cancel_job(RuntimeOrigin::root(), id), Error::<Test>::JobEnded);
		check_invariants();
	});
}

#[test]
fn a_buyer_cannot_cancel_away_a_round_about_to_reach_quorum() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		let before: Vec<Balance> = [P1, P2, P3].map(free).to_vec();
		// The attack: the members have trained; one proof is in, the quorum is one proof
		// away, and the buyer cancels to keep the round's reward.
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P1),
			proof(id, 0, P1, 42, 100, &[P1, P2, P3])
		));
		assert_ok!(Jobs::cancel_job(RuntimeOrigin::signed(BUYER), id));
		assert_noop!(
			Jobs::cancel_job(RuntimeOrigin::signed(BUYER), id),
			Error::<Test>::CancelPending
		);
		register(P4);
		assert_noop!(join(id, P4), Error::<Test>::CancelPending);
		// The round goes on: the other proofs land and everyone is paid for it.
		for who in [P2, P3] {
			assert_ok!(Jobs::submit_proof(
				RuntimeOrigin::signed(who),
				proof(id, 0, who, 42, 100, &[P1, P2, P3])
			));
		}
		for (who, was) in [P1, P2, P3].iter().zip(before) {
			assert_eq!(free(*who) - was, REWARD / 3, "provider {who} paid for round 0");
		}
		let job = JobsMap::<Test>::get(id).unwrap();
		assert_eq!(job.status, JobStatus::Cancelled);
		assert_eq!((job.rounds_settled, job.held()), (1, 0));
		let ended = job_events()
			.into_iter()
			.any(|e| matches!(e, Event::JobCancelled { job, .. } if job == id));
		assert!(ended);
		check_invariants();
	});
}

#[test]
fn a_cancelled_round_without_quorum_ends_at_its_deadline_and_refunds() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		assert_ok!(Jobs::cancel_job(RuntimeOrigin::signed(BUYER), id));
		advance(ROUND_BLOCKS);
		let job = JobsMap::<Test>::get(id).unwrap();
		assert_eq!((job.status, job.paid, job.held()), (JobStatus::Cancelled, 0, 0));
		assert_eq!(job.refunded, job.funded);
		check_invariants();
	});
}

#[test]
fn one_job_never_pays_out_of_another_jobs_escrow() {
	new_test_ext().execute_with(|| {
		// Both jobs' escrow sits in one hold of the buyer's: a payout larger than the first
		// job holds must stop at what it holds.
		let (first, second) = (create(spec()), create(spec()));
		let mut job = JobsMap::<Test>::get(first).unwrap();
		let held = job.held();
		let before = free(P1);
		assert_eq!(crate::escrow::pay::<Test>(&mut job, &P1, held * 2), held);
		assert_eq!(crate::escrow::take_fee::<Test>(&mut job, 1), 0, "nothing left for a fee");
		JobsMap::<Test>::insert(first, job);
		assert_eq!(free(P1) - before, held);
		assert_eq!(JobsMap::<Test>::get(second).unwrap().held(), 3 * ROUND_ESCROW);
		check_invariants();
	});
}
