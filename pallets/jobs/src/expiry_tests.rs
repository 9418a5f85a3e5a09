//! Pruning: a settled round's evidence and an ended job's record go once no challenge can
//! need them, the buyer's storage deposit comes back then, and nothing is pruned that an open
//! challenge or a late report could still use.

use crate::{
	mock::*, Challenged, Challenges, Contributions, Equivocations, Error, Event, HoldReason,
	Jobs as JobsMap, Participants, RoundResults,
};
use grid_primitives::work::Verdict;
use polkadot_sdk::polkadot_sdk_frame::{
	deps::frame_support::{assert_noop, assert_ok},
	traits::fungible::InspectHold,
};

/// Blocks after a settlement at which its evidence is pruned: the spec's challenge window
/// (10), the voting period, and one.
const EXPIRY: u64 = 10 + VOTING_BLOCKS + 1;

fn deposit_held(who: AccountId) -> Balance {
	Balances::balance_on_hold(&HoldReason::JobDeposit.into(), &who)
}

fn evidence_of(id: u64, round: u32) -> usize {
	usize::from(RoundResults::<Test>::contains_key(id, round))
		+ Contributions::<Test>::iter_prefix((id, round)).count()
}

#[test]
fn an_ended_job_is_pruned_after_its_window_and_its_deposit_returns() {
	new_test_ext().execute_with(|| {
		let members = [P1, P2];
		let id = running_job(&members);
		for round in 0..3 {
			deliver(id, round, &members);
		}
		assert!(!JobsMap::<Test>::get(id).unwrap().status.is_live());
		assert_eq!(deposit_held(BUYER), JOB_DEPOSIT);
		let buyer = free(BUYER);
		run_to_block(EXPIRY);
		assert!(JobsMap::<Test>::contains_key(id), "still challengeable until then");
		assert!(evidence_of(id, 2) > 0);
		job_events();
		// Four items fall due together (a block after EXPIRY: the job settled in block 1);
		// housekeeping takes one of a block's three places.
		run_to_block(EXPIRY + 3);
		assert!(JobsMap::<Test>::contains_key(id), "the job's own item is the fourth");
		run_to_block(EXPIRY + 4);
		assert!(!JobsMap::<Test>::contains_key(id));
		assert_eq!((0..3).map(|round| evidence_of(id, round)).sum::<usize>(), 0);
		assert_eq!(Participants::<Test>::iter_prefix(id).count(), 0);
		assert_eq!(free(BUYER) - buyer, JOB_DEPOSIT);
		assert_eq!(deposit_held(BUYER), 0);
		assert!(job_events().contains(&Event::JobPruned { job: id, deposit: JOB_DEPOSIT }));
		check_invariants();
	});
}

#[test]
fn a_running_job_keeps_only_the_rounds_still_challengeable() {
	new_test_ext().execute_with(|| {
		let mut s = spec();
		s.rounds = 20;
		s.min_providers = 2;
		let id = create(s);
		for who in [P1, P2] {
			register(who);
			assert_ok!(join(id, who));
		}
		deliver(id, 0, &[P1, P2]);
		assert!(evidence_of(id, 0) > 0);
		// One round a block, each delivered by both.
		for block in 2..=1 + EXPIRY {
			run_to_block(block);
			let round = crate::Rounds::<Test>::get(id).unwrap().index;
			deliver(id, round, &[P1, P2]);
		}
		assert!(JobsMap::<Test>::get(id).unwrap().status.is_live());
		assert!(evidence_of(id, 1) > 0, "round 1, settled at block 2, is still challengeable");
		assert_eq!(evidence_of(id, 0), 0, "round 0's window and vote are over");
		check_invariants();
	});
}

#[test]
fn an_open_challenge_keeps_the_evidence_until_it_is_decided() {
	new_test_ext().execute_with(|| {
		// The attack: an accused provider counts on its contribution being pruned before the
		// committee's verdict can claw the reward back.
		let members = [P1, P2, P3, P4];
		let id = running_job(&members);
		deliver(id, 0, &members);
		run_to_block(5);
		assert_ok!(Jobs::challenge(RuntimeOrigin::signed(P1), id, 0, P2));
		advance(COMMITTEE_DELAY);
		let challenge = Challenges::<Test>::get(0).unwrap();
		// Expiry comes while the challenge is open (as it would if its decision spilled past).
		crate::expiry::expire::<Test>(id, 0);
		assert!(evidence_of(id, 0) > 0, "nothing pruned while a challenge on the job is open");
		assert!(Challenged::<Test>::contains_key((id, 0), P2));
		let stake = pallet_providers::Providers::<Test>::get(P2).unwrap().stake;
		let ballots: Vec<_> =
			challenge.committee.iter().map(|(who, _)| (*who, Verdict::Invalid)).take(2).collect();
		vote(0, &ballots);
		assert!(!Challenges::<Test>::contains_key(0), "decided by a majority");
		assert!(pallet_providers::Providers::<Test>::get(P2).unwrap().stake < stake);
		assert!(JobsMap::<Test>::get(id).unwrap().clawed_back > 0);
		// Expiry prunes once nothing is open.
		run_to_block(2 + EXPIRY);
		assert_eq!(evidence_of(id, 0), 0);
		check_invariants();
	});
}

#[test]
fn an_offence_cannot_be_punished_again_once_its_record_could_be_pruned() {
	new_test_ext().execute_with(|| {
		// The attack: report the same equivocation again after its record is pruned, to
		// slash the provider twice and take a second reporter's share.
		let id = running_job(&[P1, P2, P3]);
		let first = proof(id, 0, P1, 42, 100, &[P1, P2]);
		let second = proof(id, 0, P1, 43, 100, &[P1, P2]);
		let report = |a, b| Jobs::report_equivocation(RuntimeOrigin::signed(REPORTER), a, b);
		assert_ok!(report(first.clone(), second.clone()));
		deliver(id, 0, &[P2, P3]);
		assert_noop!(report(first.clone(), second.clone()), Error::<Test>::AlreadyReported);
		// Two of the three members attested: the round settles after the quorum grace.
		run_to_block(3);
		let settled = RoundResults::<Test>::get(id, 0).unwrap().settled_at;
		// After the round's challenge window the report is refused before its record goes.
		run_to_block(settled + 11);
		assert!(Equivocations::<Test>::contains_key((id, 0), P1));
		assert_noop!(report(first.clone(), second.clone()), Error::<Test>::NotReportable);
		run_to_block(settled + EXPIRY);
		assert!(!Equivocations::<Test>::contains_key((id, 0), P1));
		assert_noop!(report(first, second), Error::<Test>::NotReportable);
		// A future round's proofs are not reportable either.
		let (a, b) = (proof(id, 9, P2, 1, 100, &[]), proof(id, 9, P2, 2, 100, &[]));
		assert_noop!(report(a, b), Error::<Test>::NotReportable);
		check_invariants();
	});
}
