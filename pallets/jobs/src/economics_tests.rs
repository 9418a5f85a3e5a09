//! Attacker tests of the job market's economics (stake bound to jobs, jobs per provider,
//! abandoned jobs, root's and buyers' cancels, frozen capabilities, claim caps, copied
//! updates, per-job escrow): each
//! plays a hostile provider or buyer against a rule that protects money or stake.

use crate::{
	mock::*, Agenda, AgendaItem, Contributions, Error, Event, JobStatus, Jobs as JobsMap,
	Participants, RemovalReason, RoundResults, Rounds,
};
use grid_primitives::job::{max_claim, GptConfig, ModelSpec};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{
		frame_support::{assert_noop, assert_ok},
		sp_runtime::{
			self,
			transaction_validity::{InvalidTransaction, TransactionValidityError},
		},
	},
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
	if min_providers < 2 {
		// One member cannot be verified (`MinVerifiableProviders`): no window.
		s.challenge_window = 0;
	}
	create(s)
}

/// A job requiring `min_stake` that P1 and P2 registered for and joined.
fn joined_by_two(min_stake: Balance) -> u64 {
	register(P1);
	register(P2);
	let id = job_requiring(min_stake, 2);
	assert_ok!(join(id, P1));
	assert_ok!(join(id, P2));
	id
}

#[test]
fn a_provider_cannot_unbond_what_its_job_requires_until_the_challenge_window_closes() {
	new_test_ext().execute_with(|| {
		let id = joined_by_two(900);
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
fn leaving_and_joining_again_does_not_free_stake_a_paid_round_may_still_need() {
	new_test_ext().execute_with(|| {
		register(P1);
		register(P2);
		register(P3);
		let mut s = spec();
		(s.min_provider_stake, s.min_providers, s.rounds) = (900, 3, 10);
		let id = create(s);
		for who in [P1, P2, P3] {
			assert_ok!(join(id, who));
		}
		deliver(id, 0, &[P1, P2, P3]);
		// P1 was paid for round 0: its stake is locked through the challenge window.
		assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(P1), id));
		let free_at = System::block_number() + spec().challenge_window + VOTING_BLOCKS;
		// The attack: join again and leave at once, unpaid in the new membership, so that the
		// chain takes it for a provider that was never paid and frees its stake now.
		assert_ok!(join(id, P1));
		assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(P1), id));
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
		// Posted a block apart: a block has room for few jobs' `Unfilled` entries in the mock.
		let ids: Vec<u64> = (0..=MAX_JOBS_PER_PROVIDER)
			.map(|_| {
				advance(1);
				job_requiring(0, 2)
			})
			.collect();
		for id in &ids[..MAX_JOBS_PER_PROVIDER as usize] {
			assert_ok!(join(*id, P1));
		}
		assert_noop!(join(ids[MAX_JOBS_PER_PROVIDER as usize], P1), Error::<Test>::TooManyJobs);
		check_invariants();
	});
}

/// P1, in `cheap` (100 locked) and `dear` (`dear_lock`) besides the jobs it is in already,
/// equivocates in `cheap`: the report slashes half its stake, and what is left no longer
/// backs `dear`. Returns (cheap, dear).
fn slashed_below_its_locks(dear_lock: Balance) -> (u64, u64) {
	for who in [P1, P2, P4] {
		if pallet_providers::Providers::<Test>::get(who).is_none() {
			register(who);
		}
	}
	let cheap = job_requiring(MIN_STAKE, 2);
	assert_ok!(join(cheap, P1));
	assert_ok!(join(cheap, P2));
	let dear = job_requiring(dear_lock, 2);
	assert_ok!(join(dear, P1));
	assert_ok!(join(dear, P4));
	assert_eq!((status(cheap), status(dear)), (JobStatus::Running, JobStatus::Running));
	job_events();
	let first = proof(cheap, 0, P1, 42, 100, &[]);
	let second = proof(cheap, 0, P1, 43, 100, &[]);
	assert_ok!(Jobs::report_equivocation(RuntimeOrigin::signed(REPORTER), first, second));
	assert_eq!(pallet_providers::Providers::<Test>::get(P1).unwrap().stake, STAKE / 2);
	assert!(!Participants::<Test>::contains_key(cheap, P1));
	(cheap, dear)
}

#[test]
fn a_provider_slashed_below_what_its_jobs_lock_is_unpaid_there_and_leaves_as_they_settle() {
	new_test_ext().execute_with(|| {
		let (_, dear) = slashed_below_its_locks(800);
		// The report's work is the job it names: P1 leaves its other jobs as they settle
		// (one settlement liveness-slashing many members once removed each from all of
		// theirs, work nothing charged).
		assert!(Participants::<Test>::contains_key(dear, P1));
		check_invariants();

		// It works `dear`'s round to the end with P4: P4 is paid, P1 is not, and leaves.
		let (p1, p4) = (free(P1), free(P4));
		deliver(dear, 0, &[P1, P4]);
		assert!(RoundResults::<Test>::contains_key(dear, 0), "settled");
		assert_eq!(free(P1), p1, "unpaid: its stake no longer backs its work");
		assert!(free(P4) > p4);
		assert!(!Participants::<Test>::contains_key(dear, P1));
		assert!(!Rounds::<Test>::get(dear).is_some_and(|r| r.members.contains(&P1)));
		assert!(job_events().contains(&Event::Removed {
			job: dear,
			who: P1,
			reason: RemovalReason::StakeShortfall
		}));
		check_invariants();
	});
}

#[test]
fn a_provider_slashed_below_what_its_jobs_lock_judges_nothing_meanwhile() {
	new_test_ext().execute_with(|| {
		// P1 delivered round 0 of `judged` with the others, each holding all updates.
		let members = [P1, P2, P3, P5];
		let judged = running_job(&members);
		deliver(judged, 0, &members);
		slashed_below_its_locks(700);
		assert!(Participants::<Test>::contains_key(judged, P1));
		// P5 challenges P2's update: its other holders are P1 and P3, but P1's stake no
		// longer backs its jobs.
		assert_ok!(Jobs::challenge(RuntimeOrigin::signed(P5), judged, 0, P2));
		let id = crate::NextChallengeId::<Test>::get() - 1;
		run_to_block(crate::Challenges::<Test>::get(id).unwrap().draw_at);
		let drawn = crate::Challenges::<Test>::get(id).unwrap().committee;
		assert_eq!(drawn.into_iter().map(|(who, _)| who).collect::<Vec<_>>(), vec![P3]);
		check_invariants();
	});
}

#[test]
fn a_buyer_punished_in_its_own_job_gets_none_of_its_slash_back() {
	new_test_ext().execute_with(|| {
		// The buyer takes a seat in its own job as a provider, and equivocates there.
		let id = running_job(&[BUYER, P2]);
		let issuance = Balances::total_issuance();
		let (buyer, reporter) = (free(BUYER), free(REPORTER));
		let first = proof(id, 0, BUYER, 42, 100, &[]);
		let second = proof(id, 0, BUYER, 43, 100, &[]);
		assert_ok!(Jobs::report_equivocation(RuntimeOrigin::signed(REPORTER), first, second));
		let slashed = STAKE / 2;
		assert_eq!(pallet_providers::Providers::<Test>::get(BUYER).unwrap().stake, STAKE - slashed);
		assert_eq!(free(REPORTER) - reporter, slashed / 4);
		assert_eq!(free(BUYER), buyer, "none of its own slash comes back to it as the buyer");
		assert_eq!(issuance - Balances::total_issuance(), slashed - slashed / 4, "burned instead");
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
			(s.min_providers, s.challenge_window) = (1, 0);
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
		// Understaffed for `MAX_UNDERSTAFFED` settlements in a row, each zombie ends (a few
		// blocks late at most, where its round's evidence pruning shares the agenda).
		advance(ROUND_BLOCKS * u64::from(MAX_UNDERSTAFFED) + 1);
		for _ in 0..ROUND_BLOCKS {
			if zombies.iter().all(|id| status(*id) != JobStatus::Running) {
				break;
			}
			advance(1);
		}
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

/// The attack: post jobs and cancel them at once, every block. Each once left its `Unfilled`
/// entry a day ahead and an `Expire` entry a window ahead, and got its deposit back at once
/// when no block had room for the `Expire`: for fees alone the attacker filled whole blocks a
/// day ahead, and a job starting (or a running job's next round) then found no room, a
/// challenge none for its decision, an audit none for its draw.
#[test]
fn posting_and_cancelling_jobs_cannot_fill_the_agenda() {
	new_test_ext().execute_with(|| {
		let attack = |blocks: u64| {
			for _ in 0..blocks {
				for _ in 0..AGENDA_PER_BLOCK {
					let id = crate::NextJobId::<Test>::get();
					let posted = Jobs::create_job(
						RuntimeOrigin::signed(OTHER_BUYER),
						Box::new(spec()),
						Default::default(),
					);
					if posted.is_ok() {
						assert_ok!(Jobs::cancel_job(RuntimeOrigin::signed(OTHER_BUYER), id));
					}
				}
				advance(1);
			}
		};
		attack(MAX_OPEN_BLOCKS + 1);
		// A cancelled job's day-ahead slot is free again; their pruning takes at most half
		// of any block.
		let unfilled = Agenda::<Test>::iter_values()
			.flatten()
			.filter(|i| matches!(i, AgendaItem::Unfilled(_)))
			.count();
		assert_eq!(unfilled, 0);
		check_invariants();
		// A job posted now starts, runs and is paid for every round while the attack goes on.
		let id = running_job(&[P1, P2]);
		for round in 0..spec().rounds {
			deliver(id, round, &[P1, P2]);
			attack(1);
		}
		assert!(matches!(status(id), JobStatus::Completed { .. }), "{:?}", status(id));
		assert_eq!(JobsMap::<Test>::get(id).unwrap().paid, REWARD * u128::from(spec().rounds));
		check_invariants();
	});
}

#[test]
fn a_search_of_a_loaded_agenda_is_charged_to_the_call_that_makes_it() {
	use crate::weights::WeightInfo;
	use polkadot_sdk::polkadot_sdk_frame::deps::frame_support::{
		dispatch::GetDispatchInfo, weights::constants::ParityDbWeight,
	};
	new_test_ext().execute_with(|| {
		let call = crate::Call::<Test>::create_job {
			spec: Box::new(spec()),
			admission: Default::default(),
		};
		let charged = call.get_dispatch_info().call_weight;
		// Jobs posted in one block book their `Unfilled` entries a day ahead, one a block
		// (housekeeping's half of a block's room): each searches one block further.
		let (due, reach) = (System::block_number() + MAX_OPEN_BLOCKS, u64::from(4 * AGENDA_REACH));
		for past in 0..=reach {
			let id = create(spec());
			assert_eq!(crate::UnfilledAt::<Test>::get(id), Some(due + past));
		}
		let post =
			|| Jobs::create_job(RuntimeOrigin::signed(BUYER), Box::new(spec()), Default::default());
		assert_noop!(post(), Error::<Test>::AgendaFull);
		// The last read `reach` blocks past its first, which its benchmark (on an empty agenda)
		// did not: each caller is charged that much more.
		let benchmarked = <() as WeightInfo>::create_job() + ParityDbWeight::get().writes(1);
		assert!(charged.all_gte(benchmarked + ParityDbWeight::get().reads(reach)));
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
		// this far, since callers' entries go at most `AGENDA_REACH` blocks past their due,
		// and housekeeping, which goes further, takes at most half of a block).
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

/// The attack: a buyer whose own accounts hold a third of a job's seats has them attest
/// another result (or none), so no round reaches a quorum: nobody is paid, each round's
/// reward is refunded, and its accounts still receive the honest members' updates. The job
/// ends after `MAX_UNDERSTAFFED` such rounds in a row, so the free work is bounded; a round
/// with a quorum in between starts the count again.
#[test]
fn a_buyer_blocking_the_quorum_gets_few_rounds_of_unpaid_work() {
	new_test_ext().execute_with(|| {
		let mut s = spec();
		s.rounds = 10;
		// P3 is the buyer's own account; P1 and P2 are honest.
		let id = running_job_of(s, &[P1, P2, P3]);
		// A fourth member joins for round 1 on, the buyer's too.
		register(P4);
		assert_ok!(join(id, P4));
		// Round 0: two honest attestations of three members are a quorum, paid.
		deliver(id, 0, &[P1, P2]);
		let wrong = proof(id, 0, P3, 7, 100, &[P1, P2, P3]);
		assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(P3), wrong));
		assert!(RoundResults::<Test>::get(id, 0).unwrap().result_model_hash.is_some());
		assert_eq!(JobsMap::<Test>::get(id).unwrap().understaffed_rounds, 0);
		// From round 1 two of four members attest another result: no quorum.
		let mut unpaid = 0;
		for round in 1..10 {
			if status(id) != JobStatus::Running {
				break;
			}
			deliver(id, round, &[P1, P2]);
			for sybil in [P3, P4] {
				let wrong = proof(id, round, sybil, 7, 100, &[P1, P2, P3, P4]);
				assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(sybil), wrong));
			}
			// Every member's proof is in: the round settled.
			let summary = RoundResults::<Test>::get(id, round).unwrap();
			assert_eq!((summary.result_model_hash, summary.paid), (None, 0));
			unpaid += 1;
		}
		assert_eq!(unpaid, MAX_UNDERSTAFFED, "the job ended after that many unpaid rounds");
		assert_eq!(status(id), JobStatus::Cancelled);
		assert_eq!(JobsMap::<Test>::get(id).unwrap().held(), 0);
		assert!(job_events()
			.iter()
			.any(|e| matches!(e, Event::JobAbandoned { job, .. } if *job == id)));
		check_invariants();
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

/// A small GPT: its flops make the hardware cap bite at small declared throughput.
const SMALL_GPT: GptConfig = GptConfig { vocab: 256, context: 64, layers: 4, heads: 4, width: 128 };
/// A GPT of which one thousandth of a TFLOP/s trains less than a sample per round.
const LARGE_GPT: GptConfig =
	GptConfig { vocab: 256, context: 256, layers: 8, heads: 8, width: 512 };

/// A two-provider job of `model` that requires no stake.
fn gpt_job(model: GptConfig) -> u64 {
	let mut s = spec();
	s.model = ModelSpec::Gpt(model);
	s.min_provider_stake = 0;
	create(s)
}

/// The cap on one member's claim in a round of [`gpt_job`] while it is in `jobs` jobs.
fn gpt_cap(model: GptConfig, tflops_milli: u32, jobs: u32) -> u64 {
	let model = ModelSpec::Gpt(model);
	max_claim(&model, spec().training.batch_size, tflops_milli, ROUND_BLOCKS * 6_000, jobs)
}

#[test]
fn one_gpu_in_two_jobs_is_paid_for_its_share_of_the_round_in_each() {
	new_test_ext().execute_with(|| {
		let weak = 8;
		assert!(gpt_cap(SMALL_GPT, weak, 2) > 0);
		assert!(gpt_cap(SMALL_GPT, weak, 2) < gpt_cap(SMALL_GPT, weak, 1));
		register_with(P1, STAKE, weak);
		register(P2);
		let (first, second) = (gpt_job(SMALL_GPT), gpt_job(SMALL_GPT));
		for id in [first, second] {
			assert_ok!(join(id, P1));
			assert_ok!(join(id, P2));
		}
		let before = free(P1);
		// The attack: claim the whole GPU's throughput in both jobs at once.
		for id in [first, second] {
			for (who, samples) in [(P1, 1_000_000), (P2, 100)] {
				let signed = proof(id, 0, who, 42, samples, &[P1, P2]);
				assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(who), signed));
			}
		}
		let counted = gpt_cap(SMALL_GPT, weak, 2) as u128;
		let share = Perbill::from_rational(counted, counted + 100).mul_floor(REWARD);
		assert_eq!(free(P1) - before, 2 * share, "each job counts half the GPU");
		let alone = gpt_cap(SMALL_GPT, weak, 1) as u128;
		assert!(share < Perbill::from_rational(alone, alone + 100).mul_floor(REWARD));
		check_invariants();
	});
}

#[test]
fn a_gpu_with_no_round_time_left_for_another_job_cannot_join_it() {
	new_test_ext().execute_with(|| {
		// Enough hardware for one batch per round alone, not when shared by two jobs.
		let fits = |t: &u32| gpt_cap(LARGE_GPT, *t, 1) > 0;
		let tflops = (1..1_000_000).find(fits).expect("some hardware fits");
		assert_eq!(gpt_cap(LARGE_GPT, tflops, 2), 0);
		register_with(P1, STAKE, tflops);
		let (first, second) = (gpt_job(LARGE_GPT), gpt_job(LARGE_GPT));
		assert_ok!(join(first, P1));
		assert_noop!(join(second, P1), Error::<Test>::Underpowered);
		check_invariants();
	});
}

#[test]
fn a_claim_counts_only_whole_batches_the_hardware_fits() {
	new_test_ext().execute_with(|| {
		let weak = 8;
		let cap = gpt_cap(SMALL_GPT, weak, 1);
		assert!(cap.is_multiple_of(u64::from(spec().training.batch_size)));
		register_with(P1, STAKE, weak);
		register(P2);
		let id = gpt_job(SMALL_GPT);
		assert_ok!(join(id, P1));
		assert_ok!(join(id, P2));
		let before = free(P1);
		for (who, samples) in [(P1, cap + 31), (P2, cap)] {
			let signed = proof(id, 0, who, 42, samples, &[P1, P2]);
			assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(who), signed));
		}
		// The 31 samples past the last whole batch that fits are not paid: equal shares.
		assert_eq!(free(P1) - before, REWARD / 2);
		check_invariants();
	});
}

/// A running job of `members` (any number up to `MAX_PARTICIPANTS`).
fn running_with(members: &[AccountId]) -> u64 {
	let mut s = spec();
	(s.min_providers, s.max_providers) = (members.len() as u32, members.len() as u32);
	let id = create(s);
	for who in members {
		register(*who);
		assert_ok!(join(id, *who));
	}
	id
}

/// Round 0 of a running job of `members`, each using every other's update, where `copier`
/// submits (first) a proof carrying `author`'s update commitment.
fn copied_round(members: &[AccountId], author: AccountId, copier: AccountId) -> u64 {
	let id = running_with(members);
	let mut copy = proof(id, 0, copier, 42, 100, members).proof;
	copy.own_update_commitment = H256::from_low_u64_be(author);
	assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(copier), sign(copy)));
	for who in members.iter().filter(|who| **who != copier) {
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(*who),
			proof(id, 0, *who, 42, 100, members)
		));
	}
	id
}

#[test]
fn one_update_claimed_by_two_members_used_alike_pays_neither() {
	new_test_ext().execute_with(|| {
		let id = copied_round(&[P1, P2, P3], P1, P3);
		let paid = |who| Contributions::<Test>::contains_key((id, 0), who);
		assert!(!paid(P3), "the copy is not paid");
		assert!(!paid(P1), "nor, on a tie, the update claimed twice");
		assert!(paid(P2));
		check_invariants();
	});
}

#[test]
fn a_copier_that_lands_its_proof_first_does_not_lock_out_the_author() {
	new_test_ext().execute_with(|| {
		let members = [P1, P2, P3, P4, P5];
		let id = running_with(&members);
		let before = free(P1);
		// P3 copies P1's commitment and lands its proof first; its Sybil P4 lists it. Honest
		// P1, P2 and P5 kept the first commitment of the update they heard: P1's.
		let mut copy = proof(id, 0, P3, 42, 100, &members).proof;
		copy.own_update_commitment = H256::from_low_u64_be(P1);
		assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(P3), sign(copy)));
		let honest = [P1, P2, P4, P5];
		for (who, received) in [(P1, &honest[..]), (P2, &honest), (P5, &honest), (P4, &members)] {
			assert_ok!(Jobs::submit_proof(
				RuntimeOrigin::signed(who),
				proof(id, 0, who, 42, 100, received)
			));
		}
		assert!(free(P1) > before, "the author is paid");
		let claim = Contributions::<Test>::get((id, 0), P3).expect("the copier's claim is kept");
		assert_eq!(claim.reward, 0, "the copier is not paid");
		check_invariants();
	});
}

/// What the pool makes of `call` sent by `who`: `CheckProof`'s verdict.
fn pool_verdict(
	who: AccountId,
	call: RuntimeCall,
) -> Result<sp_runtime::transaction_validity::ValidTransaction, TransactionValidityError> {
	use sp_runtime::traits::DispatchTransaction;
	let info = call.get_dispatch_info();
	crate::CheckProof::<Test>::new()
		.validate_only(RuntimeOrigin::signed(who), &call, &info, 0, TransactionSource::External, 0)
		.map(|(valid, _, _)| valid)
}

fn submit_call(signed: Box<grid_primitives::job::SignedProof<AccountId>>) -> RuntimeCall {
	RuntimeCall::Jobs(crate::Call::submit_proof { proof: signed })
}

/// The code `CheckProof` gives a proof dispatching would refuse with `error`.
fn refused(error: Error<Test>) -> TransactionValidityError {
	use codec::Encode;
	InvalidTransaction::Custom(error.encode()[0]).into()
}

#[test]
fn only_proofs_the_chain_would_accept_enter_the_pool_and_one_per_member() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2]);
		register(P3);
		// A stuffer's proofs: not a member, a forged signature, the wrong round.
		let outsider = proof(id, 0, P3, 42, 100, &[P1, P2]);
		assert_eq!(pool_verdict(P3, submit_call(outsider)), Err(refused(Error::NotRoundMember)));
		let mut forged = *proof(id, 0, P1, 42, 100, &[P1, P2]);
		forged.signature = [7; 64];
		assert_eq!(
			pool_verdict(P3, submit_call(Box::new(forged))),
			Err(refused(Error::BadSignature))
		);
		let early = proof(id, 1, P1, 42, 100, &[P1, P2]);
		assert_eq!(pool_verdict(P1, submit_call(early)), Err(refused(Error::WrongRound)));
		// An honest proof goes first in the pool, once per (job, round, member), whoever
		// relays it.
		let honest = submit_call(proof(id, 0, P1, 42, 100, &[P1, P2]));
		let valid = pool_verdict(P3, honest.clone()).expect("a member's proof is admitted");
		assert_eq!(valid.priority, crate::PROOF_PRIORITY);
		assert_eq!(valid.provides.len(), 1);
		assert_eq!(pool_verdict(P1, honest.clone()).unwrap().provides, valid.provides);
		let RuntimeCall::Jobs(crate::Call::submit_proof { proof: signed }) = honest else {
			unreachable!()
		};
		assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(P1), signed.clone()));
		assert_eq!(pool_verdict(P1, submit_call(signed)), Err(refused(Error::DuplicateProof)));
		// Other calls pass through untouched.
		let other = RuntimeCall::Jobs(crate::Call::leave_job { job: id });
		assert_eq!(pool_verdict(P1, other), Ok(Default::default()));
	});
}

#[test]
fn an_accepted_proof_is_operational_and_free() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2]);
		let call = submit_call(proof(id, 0, P1, 42, 100, &[P1, P2]));
		assert_eq!(call.get_dispatch_info().class, DispatchClass::Operational);
		let RuntimeCall::Jobs(crate::Call::submit_proof { proof: signed }) = call else {
			unreachable!()
		};
		let post = Jobs::submit_proof(RuntimeOrigin::signed(P1), signed.clone()).unwrap();
		assert_eq!(post.pays_fee, Pays::No);
		// A proof that fails pays as usual.
		let refused = Jobs::submit_proof(RuntimeOrigin::signed(P1), signed).unwrap_err();
		assert_eq!(refused.post_info.pays_fee, Pays::Yes);
	});
}

#[test]
fn an_open_job_nobody_fills_ends_and_frees_its_members_stake() {
	new_test_ext().execute_with(|| {
		register(P1);
		register(P2);
		// The attack: a job that needs more providers than will ever come, posted to catch
		// auto-joining providers and hold their stake and job slots.
		let bait = job_requiring(STAKE / 2, 3);
		let filled = job_requiring(STAKE / 2, 1);
		assert_ok!(join(bait, P1));
		assert_noop!(unbond(P1, STAKE / 2 + 1), ProvidersError::StakeLocked);
		assert_ok!(join(filled, P2));
		let funded = JobsMap::<Test>::get(bait).unwrap().funded;
		job_events();
		advance(MAX_OPEN_BLOCKS - 1);
		assert_eq!(status(bait), JobStatus::Open, "not before its time");
		advance(1);
		assert_eq!(status(bait), JobStatus::Cancelled);
		let job = JobsMap::<Test>::get(bait).unwrap();
		assert_eq!((job.held(), job.refunded), (0, funded));
		let events = job_events();
		assert!(events.contains(&Event::JobUnfilled { job: bait, refunded: funded }));
		// Never paid, P1's stake is free at once; the job that filled is not ended for it.
		assert_ok!(unbond(P1, STAKE));
		assert!(!events
			.iter()
			.any(|e| matches!(e, Event::JobUnfilled { job, .. } if *job == filled)));
		check_invariants();
	});
}

#[test]
fn the_invariants_notice_a_member_whose_lock_is_below_its_jobs_minimum() {
	new_test_ext().execute_with(|| {
		let id = joined_by_two(900);
		check_invariants();
		// A lock smaller than the job requires would let the member unbond what backs it.
		pallet_providers::Providers::<Test>::mutate(P1, |record| {
			let lock = record.as_mut().unwrap().jobs.iter_mut().find(|l| l.job == id).unwrap();
			lock.amount = 100;
		});
		let error = Jobs::do_try_state().unwrap_err();
		assert!(format!("{error:?}").contains("not the job's minimum"), "{error:?}");
	});
}
