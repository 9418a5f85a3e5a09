//! Fraud challenges: opening (every error), committee draws a block later, committed and
//! revealed votes (every error), each outcome with its money movements, absent verifiers, and
//! the hooks that draw and decide at their blocks.

use crate::{
	mock::*, Agenda, AgendaItem, Ballot, ChallengeOutcome, Challenged, Challenges, Contributions,
	Error, Event, HoldReason, Jobs as JobsMap, Participants, RemovalReason, RoundMembers,
	RoundResults, Rounds,
};
use grid_primitives::{
	job::{ContributionProof, JobSpec, SignedProof},
	work::{vote_commitment, Verdict},
};
use pallet_providers::{HealthRecords, Providers as ProviderRecords, SlashReason};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::frame_support::{assert_noop, assert_ok},
	prelude::*,
	traits::fungible::{InspectHold, Mutate},
	traits::tokens::Preservation,
};

/// Each of four members is paid a quarter of the reward for a round everyone delivered.
const SHARE: Balance = REWARD / 4;

/// A running four-member job whose round 0 every member delivered (and was paid for).
fn delivered_job() -> u64 {
	let members = [P1, P2, P3, P4];
	let id = running_job(&members);
	deliver(id, 0, &members);
	assert!(RoundResults::<Test>::contains_key(id, 0));
	job_events();
	id
}

/// A running job of six members (more candidates than a committee seats) whose round 0
/// every member delivered.
fn six_member_job() -> u64 {
	let members = [P1, P2, P3, P4, P5, 16];
	let id = running_job(&members);
	deliver(id, 0, &members);
	id
}

fn challenge(who: AccountId, job: u64, accused: AccountId) -> DispatchResult {
	Jobs::challenge(RuntimeOrigin::signed(who), job, 0, accused).map(|_| ()).map_err(|e| e.error)
}

/// Challenges `accused`'s round-0 contribution and runs to the committee's draw; the
/// challenge's id.
fn open(who: AccountId, job: u64, accused: AccountId) -> u64 {
	assert_ok!(challenge(who, job, accused));
	let id = crate::NextChallengeId::<Test>::get() - 1;
	run_to_block(Challenges::<Test>::get(id).unwrap().draw_at);
	assert!(Challenges::<Test>::get(id).is_some_and(|c| c.drawn()), "drawn");
	id
}

fn deposit_held(who: AccountId) -> Balance {
	Balances::balance_on_hold(&HoldReason::ChallengeDeposit.into(), &who)
}

fn stake(who: AccountId) -> Balance {
	ProviderRecords::<Test>::get(who).map(|p| p.stake).unwrap_or_default()
}

fn committee(id: u64) -> Vec<AccountId> {
	Challenges::<Test>::get(id).unwrap().committee.into_iter().map(|(who, _)| who).collect()
}

fn resolved(events: &[Event<Test>]) -> Option<Event<Test>> {
	events.iter().find(|e| matches!(e, Event::ChallengeResolved { .. })).cloned()
}

#[test]
fn paid_contributions_are_kept_as_evidence_with_the_round_seed() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		for who in [P1, P2, P3, P4] {
			let c = Contributions::<Test>::get((id, 0), who).expect("kept");
			assert_eq!(c.reward, SHARE);
			assert_eq!(c.samples_processed, 100);
			assert_eq!(c.update_commitment, H256::from_low_u64_be(who));
			// What a replay starts from and redoes, as the proof named them.
			assert_eq!(c.start_state, H256::from_low_u64_be(who ^ 0x5747));
			assert_eq!(c.inner_steps, 4, "100 samples at 32 a step");
			assert_eq!(c.base_model_hash, H256::repeat_byte(0));
		}
		let seed0 = RoundResults::<Test>::get(id, 0).unwrap().seed;
		let seed1 = Rounds::<Test>::get(id).unwrap().seed;
		assert_ne!(seed0, seed1, "every round draws its own seed");
		assert_ne!(seed0, H256::zero());
	});
}

/// A round's data seed is dealt when the round before opens (trainers of an overlapping job
/// start it early) and is the one the round then trains and is replayed on: drawing it again
/// when the round opens would let the blocks in between change a seed trainers already used.
#[test]
fn each_rounds_seed_is_dealt_when_the_round_before_opens_and_kept() {
	new_test_ext().execute_with(|| {
		let members = [P1, P2, P3, P4];
		let id = running_job(&members);
		let round0 = Rounds::<Test>::get(id).unwrap();
		assert_ne!(round0.next_seed, round0.seed);
		// New blocks, new parent hashes: randomness drawn now would differ.
		advance(3);
		deliver(id, 0, &members);
		let round1 = Rounds::<Test>::get(id).unwrap();
		assert_eq!(round1.index, 1);
		assert_eq!(round1.seed, round0.next_seed, "round 1 trains on the seed dealt ahead");
		assert_ne!(round1.next_seed, round1.seed);
		assert_ne!(round1.next_seed, round0.seed);
		assert_eq!(RoundResults::<Test>::get(id, 0).unwrap().seed, round0.seed);
	});
}

#[test]
fn a_challenge_holds_the_deposit_and_draws_a_committee_of_other_participants() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		assert_ok!(challenge(P1, id, P2));
		assert_eq!(deposit_held(P1), DEPOSIT);
		let now = System::block_number();
		let (draw_at, deadline) = (now + COMMITTEE_DELAY, now + VOTING_BLOCKS);
		assert_eq!(
			job_events(),
			vec![Event::ChallengeOpened {
				id: 0,
				job: id,
				round: 0,
				accused: P2,
				challenger: P1,
				draw_at,
				deadline,
			}]
		);
		assert!(committee(0).is_empty(), "nobody is drawn in the challenge's own block");
		assert_eq!(Challenged::<Test>::get((id, 0), P2), Some(0));
		assert_eq!(Agenda::<Test>::get(draw_at).to_vec(), vec![AgendaItem::Draw(0)]);
		assert_eq!(Agenda::<Test>::get(deadline).to_vec(), vec![AgendaItem::Decide(0)]);
		check_invariants();

		run_to_block(draw_at);
		let mut members = committee(0);
		members.sort();
		assert_eq!(members, vec![P3, P4], "everyone but the two parties, at most COMMITTEE");
		assert_eq!(
			job_events(),
			vec![Event::CommitteeDrawn {
				id: 0,
				committee: committee(0),
				reveal_from: deadline - REVEAL_BLOCKS
			}]
		);
		check_invariants();
	});
}

#[test]
fn every_challenge_costs_its_fee_whatever_the_outcome() {
	new_test_ext().execute_with(|| {
		// The attack: challenge freely, recycling the deposit (a tie or no votes returns it,
		// a rejection pays it to voters who may be the challenger's own accounts).
		let id = delivered_job();
		let total = |who| free(who) + deposit_held(who);
		let (challenger, collector) = (total(P1), free(FEES));
		assert_ok!(challenge(P1, id, P2));
		assert_eq!(free(FEES), collector + CHALLENGE_FEE);
		// Nobody votes: undecided at the deadline, the deposit returns, the fee does not.
		let deadline = Challenges::<Test>::get(0).unwrap().deadline;
		run_to_block(deadline);
		assert!(!Challenges::<Test>::contains_key(0));
		assert_eq!(total(P1), challenger - CHALLENGE_FEE);
		// A challenger that cannot pay the fee on top of the deposit cannot challenge.
		let spare = free(P3) - DEPOSIT - CHALLENGE_FEE / 2;
		assert_ok!(<Balances as Mutate<_>>::transfer(&P3, &FEES, spare, Preservation::Preserve));
		assert_noop!(challenge(P3, id, P4), Error::<Test>::InsufficientBalance);
		check_invariants();
	});
}

#[test]
fn committees_are_capped_and_drawn_by_randomness() {
	new_test_ext().execute_with(|| {
		let id = six_member_job();
		assert_ok!(challenge(P1, id, P2));
		assert_ok!(Jobs::challenge(RuntimeOrigin::signed(P2), id, 0, P1));
		advance(COMMITTEE_DELAY);
		let (first, second) = (committee(0), committee(1));
		for drawn in [&first, &second] {
			assert_eq!(drawn.len(), COMMITTEE as usize);
			assert!(!drawn.contains(&P1) && !drawn.contains(&P2));
		}
		// Two challenges over the same candidates draw independently.
		assert_ne!(first, second);
	});
}

#[test]
fn challenge_rejects_each_bad_case() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		assert_noop!(challenge(P1, id, P1), Error::<Test>::CannotChallengeSelf);
		assert_noop!(challenge(REPORTER, id, P1), Error::<Test>::NotEligible);
		assert_noop!(challenge(P1, 99, P2), Error::<Test>::UnknownJob);
		assert_noop!(
			Jobs::challenge(RuntimeOrigin::signed(P1), id, 1, P2),
			Error::<Test>::RoundNotSettled
		);
		register(P5);
		assert_noop!(challenge(P1, id, P5), Error::<Test>::NoSuchContribution);

		assert_ok!(challenge(P1, id, P2));
		assert_noop!(challenge(P3, id, P2), Error::<Test>::AlreadyChallenged);

		// Drain P3's free balance: it cannot put the deposit on hold.
		let spare = free(P3) - 10;
		assert_ok!(<Balances as Mutate<_>>::transfer(&P3, &FEES, spare, Preservation::Preserve));
		assert_noop!(challenge(P3, id, P4), Error::<Test>::InsufficientBalance);

		let settled_at = RoundResults::<Test>::get(id, 0).unwrap().settled_at;
		System::set_block_number(settled_at + spec().challenge_window + 1);
		assert_noop!(challenge(P4, id, P1), Error::<Test>::ChallengeWindowClosed);
	});
}

#[test]
fn a_job_posted_without_a_challenge_window_cannot_be_challenged_in_its_settling_block() {
	new_test_ext().execute_with(|| {
		// The settling block's number is public: a challenge sent for it once passed
		// `now <= settled_at + 0`, against a job its buyer posted as unchallengeable.
		let members = [P1, P2, P3, P4];
		let id = running_job_of(JobSpec { challenge_window: 0, ..spec() }, &members);
		deliver(id, 0, &members);
		let settled_at = RoundResults::<Test>::get(id, 0).unwrap().settled_at;
		assert_eq!(System::block_number(), settled_at, "still the settling block");
		assert_noop!(challenge(P1, id, P2), Error::<Test>::ChallengeWindowClosed);
	});
}

#[test]
fn a_challenge_needs_someone_to_verify() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2]);
		deliver(id, 0, &[P1, P2]);
		assert_noop!(challenge(P1, id, P2), Error::<Test>::NoVerifiers);
	});
}

#[test]
fn open_challenges_are_bounded_per_challenger_and_per_job() {
	new_test_ext().execute_with(|| {
		// The attack: one challenger (or a swarm on one job) opens so many challenges that
		// honest ones find no room (the agenda's per-block room is `agenda.rs`'s test).
		let id = delivered_job();
		deliver(id, 1, &[P1, P2, P3, P4]);
		let on_round_1 = |who, accused| Jobs::challenge(RuntimeOrigin::signed(who), id, 1, accused);
		for accused in [P2, P3, P4] {
			assert_ok!(challenge(P1, id, accused));
		}
		assert_eq!(MAX_CHALLENGES_PER_CHALLENGER, 3);
		assert_noop!(on_round_1(P1, P2), Error::<Test>::TooManyChallengesByChallenger);
		assert_ok!(challenge(P2, id, P1));
		assert_eq!(MAX_CHALLENGES_PER_JOB, 4);
		assert_noop!(on_round_1(P3, P4), Error::<Test>::TooManyChallengesOnJob);
		check_invariants();
		// A decided challenge frees its slots.
		let first = crate::NextChallengeId::<Test>::get() - 4;
		advance(COMMITTEE_DELAY);
		let ballots: Vec<_> = committee(first).into_iter().map(|m| (m, Verdict::Valid)).collect();
		vote(first, &ballots);
		assert!(Challenges::<Test>::get(first).is_none(), "decided");
		assert_ok!(on_round_1(P1, P2));
		check_invariants();
	});
}

#[test]
fn proven_fraud_claws_back_slashes_rewards_and_removes() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		let (buyer_before, challenger_before) = (free(BUYER), free(P1));
		let voters_before = (free(P3), free(P4));
		let issuance = Balances::total_issuance();
		let challenge = open(P1, id, P2);
		assert_ok!(commit(P3, challenge, Verdict::Invalid));
		assert_ok!(commit(P4, challenge, Verdict::Invalid));
		assert_ok!(reveal(P3, challenge, Verdict::Invalid));
		assert!(Challenges::<Test>::contains_key(0), "one of two votes is no majority");
		assert_ok!(reveal(P4, challenge, Verdict::Invalid));

		// Clawback first (the whole reward to the buyer), then 40% of what stake is left.
		let penalty = (STAKE - SHARE) * 40 / 100;
		let (to_challenger, to_buyer) = (penalty / 4, penalty / 4);
		// The verifiers that voted with the outcome share VerifierShare (20%) of it.
		let to_each_verifier = penalty / 10;
		assert_eq!(stake(P2), STAKE - SHARE - penalty);
		assert_eq!(free(BUYER), buyer_before + SHARE + to_buyer);
		assert_eq!(
			free(P1),
			challenger_before + to_challenger - CHALLENGE_FEE,
			"the fee stays paid"
		);
		assert_eq!(
			(free(P3), free(P4)),
			(voters_before.0 + to_each_verifier, voters_before.1 + to_each_verifier)
		);
		assert_eq!(deposit_held(P1), 0, "the deposit returned");
		let kept = to_challenger + to_buyer + 2 * to_each_verifier;
		assert_eq!(Balances::total_issuance(), issuance - (penalty - kept));
		assert_eq!(JobsMap::<Test>::get(id).unwrap().clawed_back, SHARE);
		assert!(!Participants::<Test>::contains_key(id, P2));
		assert_eq!(HealthRecords::<Test>::get(P2).challenges_lost, 1);

		let events = job_events();
		assert!(events.contains(&Event::Removed {
			job: id,
			who: P2,
			reason: RemovalReason::Fraud
		}));
		assert_eq!(
			resolved(&events),
			Some(Event::ChallengeResolved {
				id: 0,
				job: id,
				round: 0,
				accused: P2,
				outcome: ChallengeOutcome::FraudProven,
				slashed: penalty,
				clawed_back: SHARE,
				absent: 0,
				outvoted: 0,
			})
		);
		assert!(!Challenges::<Test>::contains_key(0));
		assert!(!Agenda::<Test>::iter_values().flatten().any(|item| item == AgendaItem::Decide(0)));
		check_invariants();
	});
}

#[test]
fn a_rejected_challenge_pays_the_deposit_to_the_verifiers() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		let before = [free(P1), free(P3), free(P4)];
		let challenge = open(P1, id, P2);
		vote(challenge, &[(P3, Verdict::Valid), (P4, Verdict::Valid)]);
		assert_eq!(free(P1), before[0] - DEPOSIT - CHALLENGE_FEE);
		assert_eq!(free(P3), before[1] + DEPOSIT / 2);
		assert_eq!(free(P4), before[2] + DEPOSIT / 2);
		assert_eq!(deposit_held(P1), 0);
		assert_eq!(stake(P2), STAKE, "the accused keeps its stake");
		assert!(Participants::<Test>::contains_key(id, P2));
		let outcome = match resolved(&job_events()) {
			Some(Event::ChallengeResolved { outcome, slashed, clawed_back, .. }) => {
				assert_eq!((slashed, clawed_back), (0, 0));
				outcome
			}
			other => panic!("not resolved: {other:?}"),
		};
		assert_eq!(outcome, ChallengeOutcome::Rejected);
		check_invariants();
	});
}

#[test]
fn the_buyer_challenges_without_stake_and_a_proven_fraud_pays_it_back() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		assert!(ProviderRecords::<Test>::get(BUYER).is_none(), "the buyer is no provider");
		// Another job's buyer, no provider either, may not question this job's work.
		assert_noop!(challenge(OTHER_BUYER, id, P2), Error::<Test>::NotEligible);
		let before = free(BUYER);
		let challenge = open(BUYER, id, P2);
		assert_eq!(deposit_held(BUYER), DEPOSIT);
		let members = committee(challenge);
		assert!(!members.contains(&P2) && !members.is_empty());
		let ballots: Vec<_> = members.iter().map(|m| (*m, Verdict::Invalid)).collect();
		vote(challenge, &ballots);
		let Some(Event::ChallengeResolved { outcome, slashed, clawed_back, .. }) =
			resolved(&job_events())
		else {
			panic!("not resolved")
		};
		assert_eq!(outcome, ChallengeOutcome::FraudProven);
		assert_eq!(clawed_back, SHARE);
		// The reward back, the buyer's and the reporter's shares of the slash, the deposit
		// back; only the fee spent.
		let (to_buyer, to_reporter) = (slashed / 4, slashed / 4);
		assert_eq!(free(BUYER), before + SHARE + to_buyer + to_reporter - CHALLENGE_FEE);
		assert_eq!(deposit_held(BUYER), 0);
		assert!(!Participants::<Test>::contains_key(id, P2));
		check_invariants();
	});
}

/// A hostile buyer challenges honest work to claw its payment back: the committee finds it
/// valid, the buyer loses its deposit to the voters and the fee, the provider loses nothing.
#[test]
fn a_buyer_challenging_honest_work_pays_for_it() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		let (buyer_before, honest_before) = (free(BUYER), free(P2));
		let challenge = open(BUYER, id, P2);
		let members = committee(challenge);
		let ballots: Vec<_> = members.iter().map(|m| (*m, Verdict::Valid)).collect();
		vote(challenge, &ballots);
		assert_eq!(free(BUYER), buyer_before - DEPOSIT - CHALLENGE_FEE);
		assert_eq!(deposit_held(BUYER), 0);
		assert_eq!((stake(P2), free(P2)), (STAKE, honest_before), "the accused keeps everything");
		assert_eq!(JobsMap::<Test>::get(id).unwrap().clawed_back, 0);
		assert!(Participants::<Test>::contains_key(id, P2));
		check_invariants();
	});
}

#[test]
fn a_tie_at_the_deadline_is_undecided_and_returns_the_deposit() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		let challenge = open(P1, id, P2);
		vote(challenge, &[(P3, Verdict::Invalid), (P4, Verdict::Valid)]);
		assert!(Challenges::<Test>::contains_key(0), "a tie waits for the deadline");
		job_events();
		run_to_block(Challenges::<Test>::get(0).unwrap().deadline);
		assert_eq!(deposit_held(P1), 0);
		assert_eq!(stake(P2), STAKE);
		match resolved(&job_events()) {
			Some(Event::ChallengeResolved { outcome, absent, .. }) => {
				assert_eq!(outcome, ChallengeOutcome::Undecided);
				assert_eq!(absent, 0);
			}
			other => panic!("not resolved: {other:?}"),
		}
		check_invariants();
	});
}

#[test]
fn one_hostile_vote_cannot_convict_and_members_that_never_vote_are_lightly_slashed() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		let buyer_before = free(BUYER);
		let challenge = open(P1, id, P2);
		// A Sybil drawn onto the committee votes against honest work; its co-member stays
		// silent. One vote of two is no majority of the committee: nobody is convicted.
		vote(challenge, &[(P3, Verdict::Invalid)]);
		job_events();
		run_to_block(Challenges::<Test>::get(0).unwrap().deadline);
		assert_eq!(stake(P2), STAKE, "the accused keeps its stake");
		assert!(Participants::<Test>::contains_key(id, P2));
		assert_eq!(free(BUYER), buyer_before, "nothing clawed back");
		assert_eq!(deposit_held(P1), 0, "the deposit returns");
		// P4 never voted.
		assert_eq!(stake(P4), STAKE - STAKE * 5 / 100);
		assert_eq!(stake(P3), STAKE);
		let absence_slashed = System::events().iter().any(|r| {
			matches!(
				r.event,
				RuntimeEvent::Providers(pallet_providers::Event::Slashed {
					who: P4,
					reason: SlashReason::CommitteeAbsence,
					..
				})
			)
		});
		assert!(absence_slashed, "the absent verifier's slash is reported");
		match resolved(&job_events()) {
			Some(Event::ChallengeResolved { outcome, absent, .. }) => {
				assert_eq!(outcome, ChallengeOutcome::Undecided);
				assert_eq!(absent, 1);
			}
			other => panic!("not resolved: {other:?}"),
		}
		check_invariants();
	});
}

#[test]
fn a_challenge_nobody_votes_on_is_undecided_and_every_member_slashed() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		assert_ok!(challenge(P1, id, P2));
		advance(VOTING_BLOCKS);
		assert!(!Challenges::<Test>::contains_key(0));
		assert_eq!(deposit_held(P1), 0);
		assert_eq!(stake(P3), STAKE - STAKE * 5 / 100);
		assert_eq!(stake(P4), STAKE - STAKE * 5 / 100);
		assert_eq!(stake(P2), STAKE);
		check_invariants();
	});
}

#[test]
fn commits_and_reveals_reject_each_bad_case() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		assert_noop!(commit(P3, 0, Verdict::Valid), Error::<Test>::UnknownChallenge);
		assert_noop!(reveal(P3, 0, Verdict::Valid), Error::<Test>::UnknownChallenge);
		assert_ok!(challenge(P1, id, P2));
		// Nobody can vote before the draw: not even a member-to-be.
		assert_noop!(commit(P3, 0, Verdict::Valid), Error::<Test>::CommitteeNotDrawn);
		advance(COMMITTEE_DELAY);
		assert_noop!(commit(P2, 0, Verdict::Valid), Error::<Test>::NotOnCommittee);
		assert_noop!(commit(P1, 0, Verdict::Invalid), Error::<Test>::NotOnCommittee);
		assert_noop!(commit(P5, 0, Verdict::Invalid), Error::<Test>::NotOnCommittee);
		// Nothing is revealed before the reveal block while a member has not committed.
		assert_ok!(commit(P3, 0, Verdict::Invalid));
		assert_noop!(commit(P3, 0, Verdict::Valid), Error::<Test>::AlreadyVoted);
		assert_noop!(reveal(P3, 0, Verdict::Invalid), Error::<Test>::RevealTooEarly);
		let c = Challenges::<Test>::get(0).unwrap();
		System::set_block_number(c.reveal_from);
		assert_noop!(commit(P4, 0, Verdict::Invalid), Error::<Test>::CommitPhaseOver);
		assert_noop!(reveal(P4, 0, Verdict::Invalid), Error::<Test>::NotCommitted);
		// The attack: reveal the other verdict, or someone else's, than the one committed.
		assert_noop!(reveal(P3, 0, Verdict::Valid), Error::<Test>::RevealMismatch);
		let wrong_salt = Jobs::reveal_vote(RuntimeOrigin::signed(P3), 0, Verdict::Invalid, [0; 32]);
		assert_noop!(wrong_salt, Error::<Test>::RevealMismatch);
		assert_ok!(reveal(P3, 0, Verdict::Invalid));
		assert_noop!(reveal(P3, 0, Verdict::Invalid), Error::<Test>::AlreadyVoted);
		// At the deadline, before the hooks decide it, reveals are refused.
		System::set_block_number(c.deadline);
		assert_noop!(reveal(P4, 0, Verdict::Invalid), Error::<Test>::VotingClosed);
	});
}

#[test]
fn a_member_cannot_copy_another_members_revealed_vote() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		let challenge = open(P1, id, P2);
		// The attack: a lazy member commits P3's commitment as its own, then reveals what P3
		// revealed, without judging anything. The voter is part of the commitment.
		let p3 = vote_commitment(challenge, &P3, Verdict::Invalid, &salt(P3));
		assert_ok!(Jobs::commit_vote(RuntimeOrigin::signed(P3), challenge, p3));
		assert_ok!(Jobs::commit_vote(RuntimeOrigin::signed(P4), challenge, p3));
		assert_ok!(reveal(P3, challenge, Verdict::Invalid));
		let copied =
			Jobs::reveal_vote(RuntimeOrigin::signed(P4), challenge, Verdict::Invalid, salt(P3));
		assert_noop!(copied, Error::<Test>::RevealMismatch);
		assert_eq!(
			Challenges::<Test>::get(challenge).unwrap().committee.into_iter().find(|m| m.0 == P4),
			Some((P4, Ballot::Committed(p3))),
			"its ballot stays unrevealed: it is slashed as absent at the deadline"
		);
	});
}

#[test]
fn the_committee_is_drawn_with_randomness_from_after_the_challenge() {
	new_test_ext().execute_with(|| {
		let id = six_member_job();
		// What the challenger could know when it sent the challenge: this block's randomness.
		let known = <Test as crate::Config>::Randomness::random(b"").0;
		assert_ok!(challenge(P1, id, P2));
		let draw_at = Challenges::<Test>::get(0).unwrap().draw_at;
		assert!(draw_at > System::block_number());
		run_to_block(draw_at);
		let unknown_then = <Test as crate::Config>::Randomness::random(b"").0;
		assert_ne!(known, unknown_then, "the draw's block has its own randomness");
		// The committee is the draw of that later block's randomness.
		use polkadot_sdk::polkadot_sdk_frame::{
			deps::sp_runtime::traits::{BlakeTwo256, Hash},
			traits::Randomness,
		};
		let (seed, _) = <Test as crate::Config>::Randomness::random(
			&(&b"grid/committee/v1"[..], id, 0u64).encode(),
		);
		let mut ranked: Vec<_> =
			[P3, P4, P5, 16].into_iter().map(|w| (BlakeTwo256::hash_of(&(seed, w)), w)).collect();
		ranked.sort();
		let expected: Vec<_> =
			ranked.into_iter().take(COMMITTEE as usize).map(|(_, w)| w).collect();
		assert_eq!(committee(0), expected);
		check_invariants();
	});
}

#[test]
fn fraud_after_the_job_completed_is_still_punished() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		let members = [P1, P2, P3, P4];
		deliver(id, 1, &members);
		deliver(id, 2, &members);
		assert!(!JobsMap::<Test>::get(id).unwrap().status.is_live());
		let buyer_before = free(BUYER);
		assert_ok!(Jobs::challenge(RuntimeOrigin::signed(P1), id, 2, P2));
		advance(COMMITTEE_DELAY);
		vote(0, &[(P3, Verdict::Invalid), (P4, Verdict::Invalid)]);
		assert!(free(BUYER) > buyer_before + SHARE);
		assert_eq!(JobsMap::<Test>::get(id).unwrap().clawed_back, SHARE);
		check_invariants();
	});
}

/// A provider convicted after its job ended keeps its registration and most of its stake, but
/// no part in judging the job's other work: committees are drawn from the job's members.
#[test]
fn a_provider_convicted_after_its_job_ended_is_not_drawn_to_judge_it() {
	new_test_ext().execute_with(|| {
		let members = [P1, P2, P3, P4, P5];
		let id = running_job(&members);
		for round in 0..3 {
			deliver(id, round, &members);
		}
		assert!(!JobsMap::<Test>::get(id).unwrap().status.is_live());
		assert_ok!(Jobs::challenge(RuntimeOrigin::signed(P1), id, 2, P2));
		advance(COMMITTEE_DELAY);
		let first = crate::NextChallengeId::<Test>::get() - 1;
		let ballots: Vec<_> = committee(first).into_iter().map(|w| (w, Verdict::Invalid)).collect();
		job_events();
		vote(first, &ballots);
		let events = job_events();
		fraud_proven_in(&events);
		assert!(events.contains(&Event::Removed {
			job: id,
			who: P2,
			reason: RemovalReason::Fraud
		}));
		assert!(!Participants::<Test>::contains_key(id, P2));
		assert!(
			stake(P2) >= MIN_STAKE,
			"still eligible by stake: only the conviction keeps it out"
		);

		// P3's round-1 update was held by P2, P4 and P5 (P1 challenges).
		assert_ok!(Jobs::challenge(RuntimeOrigin::signed(P1), id, 1, P3));
		advance(COMMITTEE_DELAY);
		let second = crate::NextChallengeId::<Test>::get() - 1;
		let mut drawn = committee(second);
		drawn.sort();
		assert_eq!(drawn, vec![P4, P5]);
		check_invariants();
	});
}

fn fraud_proven_in(events: &[Event<Test>]) {
	assert!(
		matches!(
			resolved(events),
			Some(Event::ChallengeResolved { outcome: ChallengeOutcome::FraudProven, .. })
		),
		"{events:?}"
	);
}

#[test]
fn hooks_decide_due_challenges_within_the_block_budget() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		for (who, accused) in [(P1, P2), (P1, P3), (P1, P4)] {
			assert_ok!(challenge(who, id, accused));
		}
		// Three draws, two a block (on_initialize's limit): all drawn a block later.
		advance(COMMITTEE_DELAY + 1);
		assert!(Challenges::<Test>::iter_values().all(|c| c.drawn()));
		let deadline = Challenges::<Test>::get(0).unwrap().deadline;
		// on_initialize decides at most MaxSettlementsPerBlock (2) items...
		System::set_block_number(deadline);
		Jobs::on_initialize(deadline);
		assert_eq!(Agenda::<Test>::get(deadline).len(), 1);
		// ...and on_idle the rest while weight remains.
		Jobs::on_idle(deadline, Weight::MAX);
		assert!(!Agenda::<Test>::contains_key(deadline));
		assert_eq!(Challenges::<Test>::iter().count(), 0);
		assert_eq!(deposit_held(P1), 0);
		check_invariants();
	});
}

/// `copier`'s proof for round 0 of `id` naming `author`'s update commitment as its own.
fn submit_copy(id: u64, copier: AccountId, author: AccountId, received: &[AccountId]) {
	let mut copy = proof(id, 0, copier, 42, 100, received).proof;
	copy.own_update_commitment = H256::from_low_u64_be(author);
	assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(copier), sign(copy)));
}

#[test]
fn a_copier_is_unpaid_and_convicted_by_the_holders_of_the_update_it_claimed() {
	new_test_ext().execute_with(|| {
		let members = [P1, P2, P3, P4, P5];
		let id = running_job(&members);
		let copier_free = free(P3);
		// P3 proves P1's update as its own; honest trainers refused the copy, so nobody
		// lists P3 as used.
		let honest = [P1, P2, P4, P5];
		submit_copy(id, P3, P1, &members);
		for who in honest {
			assert_ok!(Jobs::submit_proof(
				RuntimeOrigin::signed(who),
				proof(id, 0, who, 42, 100, &honest)
			));
		}
		assert_eq!(free(P3), copier_free, "the copy earns nothing");
		let claim = Contributions::<Test>::get((id, 0), P3).expect("the claim is kept");
		let author = Contributions::<Test>::get((id, 0), P1).expect("the author was paid");
		assert_eq!((claim.reward, claim.update_commitment), (0, author.update_commitment));
		// Judged by those holding the update: its author and its holders (the copier too
		// listed the original, but is never drawn to judge itself).
		let author_at = RoundMembers::<Test>::get(id, 0).unwrap().iter().position(|m| *m == P1);
		assert_eq!(claim.holders, author.holders | 1 << author_at.unwrap());
		check_invariants();
		// Leaving at once does not free the copier's stake before its claim can be judged.
		assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(P3), id));
		assert_noop!(
			Providers::unbond(RuntimeOrigin::signed(P3), STAKE),
			pallet_providers::Error::<Test>::StakeLocked
		);

		let challenge = open(P2, id, P3);
		let drawn = committee(challenge);
		assert!(!drawn.is_empty() && drawn.iter().all(|w| [P1, P4, P5].contains(w)));
		let ballots: Vec<_> = drawn.iter().take(2).map(|w| (*w, Verdict::Invalid)).collect();
		vote(challenge, &ballots);
		let penalty = STAKE * 40 / 100;
		assert_eq!(stake(P3), STAKE - penalty, "nothing to claw back; the stake is slashed");
		assert!(matches!(
			resolved(&job_events()),
			Some(Event::ChallengeResolved {
				outcome: ChallengeOutcome::FraudProven,
				clawed_back: 0,
				..
			})
		));
		assert_eq!(stake(P1), STAKE, "the author loses nothing");
		check_invariants();
	});
}

/// `who`'s proof for round 0 of `id` naming no update, listing `received`: what a member
/// that trained nothing or sat the round out signs (no commitment, start state, steps or
/// samples).
fn sat_out(id: u64, who: AccountId, received: &[AccountId]) -> Box<SignedProof<AccountId>> {
	let mut nothing = proof(id, 0, who, 42, 0, received).proof;
	(nothing.own_update_commitment, nothing.start_state) = (H256::zero(), H256::zero());
	sign(nothing)
}

#[test]
fn a_member_that_sat_a_round_out_cannot_be_made_the_copy_of_work_claimed_without_an_update() {
	new_test_ext().execute_with(|| {
		let members = [P1, P2, P3, P4, P5];
		let id = running_job(&members);
		AuditRate::set(Perbill::one());
		// P4 restarted inside round 0 after committing to its update, before it went out: it
		// sits the round out (a second commitment would be equivocation), names no update,
		// and nobody lists it as used. P3 claims paid work under that zero commitment: as its
		// only holder-backed claimant P3 would be paid, and P4's claim of nothing would be
		// kept as a copy of P3's, open to the first challenge or audit (a claim of no steps
		// fails any replay). However validly signed, such a claim is refused, in every form.
		let used = [P1, P2, P3, P5];
		let mut forged = proof(id, 0, P3, 42, 100, &used).proof;
		forged.own_update_commitment = H256::zero();
		let refused = |claim: &ContributionProof<AccountId>| {
			assert_noop!(
				Jobs::submit_proof(RuntimeOrigin::signed(P3), sign(claim.clone())),
				Error::<Test>::WorkWithoutUpdate
			);
		};
		refused(&forged);
		forged.samples_processed = 0;
		refused(&forged);
		(forged.inner_steps, forged.start_state) = (0, H256::repeat_byte(7));
		refused(&forged);

		let (p4_free, p4_stake) = (free(P4), stake(P4));
		assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(P4), sat_out(id, P4, &used)));
		for who in used {
			assert_ok!(Jobs::submit_proof(
				RuntimeOrigin::signed(who),
				proof(id, 0, who, 42, 100, &used)
			));
		}
		let settled_at = RoundResults::<Test>::get(id, 0).expect("every proof is in").settled_at;
		// Nothing claimed: nothing paid and nothing kept to dispute, by a challenger...
		assert_eq!(free(P4), p4_free);
		assert!(Contributions::<Test>::get((id, 0), P4).is_none());
		assert_noop!(
			Jobs::challenge(RuntimeOrigin::signed(P3), id, 0, P4),
			Error::<Test>::NoSuchContribution
		);
		// ...or by an audit: every paid claim is audited, P4's nothing is not.
		run_to_block(settled_at + COMMITTEE_DELAY);
		let audited: Vec<AccountId> = job_events()
			.into_iter()
			.filter_map(|e| match e {
				Event::AuditOpened { accused, .. } => Some(accused),
				_ => None,
			})
			.collect();
		assert!(!audited.is_empty() && !audited.contains(&P4), "audited {audited:?}");
		assert_eq!(stake(P4), p4_stake);
		assert!(Participants::<Test>::contains_key(id, P4), "it stays in the job");
		check_invariants();
	});
}

#[test]
fn a_copier_that_leaves_before_its_round_settles_leaves_no_claim_its_stake_does_not_back() {
	new_test_ext().execute_with(|| {
		let members = [P1, P2, P3, P4, P5];
		let id = running_job(&members);
		// P3 proves P1's update as its own in its first round and leaves before the round
		// settles: none of its rounds settled, so its stake lock lapses as it leaves.
		submit_copy(id, P3, P1, &members);
		assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(P3), id));
		let honest = [P1, P2, P4, P5];
		for who in honest {
			assert_ok!(Jobs::submit_proof(
				RuntimeOrigin::signed(who),
				proof(id, 0, who, 42, 100, &honest)
			));
		}
		assert!(RoundResults::<Test>::contains_key(id, 0), "every member's proof is in");
		// Kept, its claim could be challenged with nothing locked to slash, and the stake
		// locks would not count the dispute; a leaver is not paid, and its claim is not kept.
		assert!(Contributions::<Test>::get((id, 0), P3).is_none());
		assert!(Contributions::<Test>::get((id, 0), P1).is_some(), "the author is paid");
		assert_noop!(
			Jobs::challenge(RuntimeOrigin::signed(P2), id, 0, P3),
			Error::<Test>::NoSuchContribution
		);
		check_invariants();
	});
}

#[test]
fn an_honest_author_named_a_copy_by_a_racing_copier_is_cleared() {
	new_test_ext().execute_with(|| {
		let members = [P1, P2, P3, P4, P5];
		let id = running_job(&members);
		// P3 landed P1's commitment first and its Sybils P4 and P5 listed it, not P1: the
		// chain pays P3 and keeps P1's claim unpaid. Challenging the author gets nowhere:
		// its update replays from its own state, and holders vote so.
		submit_copy(id, P3, P1, &members);
		let sybils = [P2, P3, P4, P5];
		for (who, received) in [(P1, &members[..]), (P2, &members), (P4, &sybils), (P5, &sybils)] {
			assert_ok!(Jobs::submit_proof(
				RuntimeOrigin::signed(who),
				proof(id, 0, who, 42, 100, received)
			));
		}
		assert_eq!(Contributions::<Test>::get((id, 0), P1).map(|c| c.reward), Some(0));
		let challenge = open(P4, id, P1);
		let ballots: Vec<_> =
			committee(challenge).iter().take(2).map(|w| (*w, Verdict::Valid)).collect();
		vote(challenge, &ballots);
		assert_eq!(stake(P1), STAKE, "the author keeps its stake");
		assert!(Participants::<Test>::contains_key(id, P1));
		check_invariants();
	});
}

#[test]
fn members_that_never_held_the_update_are_neither_drawn_nor_slashed_for_absence() {
	new_test_ext().execute_with(|| {
		let members = [P1, P2, P3, P4];
		let id = running_job(&members);
		// P4 did not use P1's update (it never had it); P2 and P3 did.
		for (who, received) in
			[(P1, vec![P1, P2, P3, P4]), (P2, vec![P1, P2, P3, P4]), (P3, vec![P1, P2, P3, P4])]
				.into_iter()
				.chain([(P4, vec![P2, P3, P4])])
		{
			assert_ok!(Jobs::submit_proof(
				RuntimeOrigin::signed(who),
				proof(id, 0, who, 42, 100, &received)
			));
		}
		assert!(Contributions::<Test>::contains_key((id, 0), P1), "P1 was paid");
		register(P5);
		// The attack this defends against: a challenger hoping the draw lands on members that
		// cannot judge the update, so that they are slashed for not voting.
		let challenge = open(P5, id, P1);
		let mut drawn = committee(challenge);
		drawn.sort();
		assert_eq!(drawn, vec![P2, P3], "only holders of the update are drawn");
		advance(VOTING_BLOCKS);
		assert_eq!(stake(P4), STAKE, "a member without the update is never slashed for absence");
		assert!(stake(P2) < STAKE && stake(P3) < STAKE, "holders that did not vote are");
		check_invariants();
	});
}

#[test]
fn an_update_nobody_else_holds_cannot_be_challenged_into_an_empty_committee() {
	new_test_ext().execute_with(|| {
		let members = [P1, P2];
		let id = running_job(&members);
		// Two members: one other attester using an update is enough to pay it. P2 used P1's
		// update; P1 used only its own.
		assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(P1), proof(id, 0, P1, 42, 100, &[P1])));
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P2),
			proof(id, 0, P2, 42, 100, &[P1, P2])
		));
		assert!(Contributions::<Test>::contains_key((id, 0), P1));
		register(P5);
		// P1's only holder is P2: challenged by P2 there is nobody left to judge.
		assert_noop!(challenge(P2, id, P1), Error::<Test>::NoVerifiers);
		let challenge = open(P5, id, P1);
		assert_eq!(committee(challenge), vec![P2]);
		check_invariants();
	});
}

#[test]
fn a_lone_holder_decides_nothing_where_a_verdict_takes_two() {
	new_test_ext().execute_with(|| {
		MinCommittee::set(2);
		// P2 challenges P1's update, held by P3 and P4. P4 leaves before the draw: had the
		// draw seated P3 alone, one vote (a Sybil's) would convict or clear P1.
		let id = delivered_job();
		assert_ok!(challenge(P2, id, P1));
		let challenge_id = crate::NextChallengeId::<Test>::get() - 1;
		assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(P4), id));
		job_events();
		run_to_block(Challenges::<Test>::get(challenge_id).unwrap().draw_at);
		assert!(!Challenges::<Test>::contains_key(challenge_id), "decided at the draw");
		match resolved(&job_events()) {
			Some(Event::ChallengeResolved { outcome, absent, slashed, .. }) => {
				assert_eq!(outcome, ChallengeOutcome::Undecided);
				assert_eq!((absent, slashed), (0, 0), "nobody drawn, nobody slashed");
			}
			other => panic!("not resolved: {other:?}"),
		}
		assert_eq!((stake(P1), stake(P3)), (STAKE, STAKE));
		assert_eq!(deposit_held(P2), 0, "the deposit came back");
		check_invariants();
	});
}

#[test]
fn an_update_one_member_holds_is_neither_challenged_nor_audited_where_a_verdict_takes_two() {
	new_test_ext().execute_with(|| {
		MinCommittee::set(2);
		let id = running_job(&[P1, P2]);
		AuditRate::set(Perbill::one());
		deliver(id, 0, &[P1, P2]);
		let settled_at = RoundResults::<Test>::get(id, 0).expect("settled").settled_at;
		// P2 alone holds P1's update (and P1 alone P2's): nobody could judge either by
		// a majority of two.
		register(P5);
		assert_noop!(challenge(P5, id, P1), Error::<Test>::NoVerifiers);
		run_to_block(settled_at + COMMITTEE_DELAY);
		let audits = job_events().into_iter().filter(|e| matches!(e, Event::AuditOpened { .. }));
		assert_eq!(audits.count(), 0, "every contribution was drawn, none could be judged");
		check_invariants();
	});
}

#[test]
fn an_accused_stays_locked_while_its_challenge_is_decided_after_its_lock_would_lapse() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		let settled_at = System::block_number();
		// The accused leaves at once: its lock lasts through the window and a vote.
		assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(P2), id));
		let lapses = settled_at + spec().challenge_window + VOTING_BLOCKS;
		// The others finish the job (and so stay members that can judge P2's update).
		for round in 1..spec().rounds {
			while Rounds::<Test>::get(id).is_some_and(|r| r.index < round) {
				advance(1);
			}
			for who in [P1, P3, P4] {
				let signed = proof(id, round, who, 42, 100, &[P1, P2, P3, P4]);
				assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(who), signed));
			}
		}
		// The challenge opens on the window's last block, so its deadline is the lapse block,
		// and that block's agenda is full: the decision comes a block later.
		let filler: Vec<AgendaItem> =
			(0..AGENDA_PER_BLOCK as u64).map(|job| AgendaItem::Expire(1_000 + job, 0)).collect();
		Agenda::<Test>::insert(lapses, BoundedVec::truncate_from(filler));
		run_to_block(settled_at + spec().challenge_window);
		assert_ok!(challenge(P1, id, P2));
		run_to_block(lapses);
		assert!(Challenges::<Test>::contains_key(0), "not decided yet");
		// The attack: unbond and walk away before the verdict, however late it comes.
		while Challenges::<Test>::contains_key(0) {
			assert!(System::block_number() < lapses + 10, "the challenge is decided");
			assert_noop!(
				Providers::unbond(RuntimeOrigin::signed(P2), STAKE),
				pallet_providers::Error::<Test>::StakeLocked
			);
			check_invariants();
			advance(1);
		}
		assert!(System::block_number() > lapses, "decided after the lock would have lapsed");
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(P2), stake(P2)));
		check_invariants();
	});
}

#[test]
fn a_verifier_that_votes_against_its_committees_majority_is_slashed() {
	// The attack: a Sybil drawn onto the committee votes to clear a cheat (or to convict an
	// honest provider). Under an honest majority its vote loses, and costs it, whether it
	// reveals before the honest members or after them (it escaped when it revealed last: the
	// honest two decided the challenge, and its late reveal found nothing to slash it in).
	for sybil_reveals_last in [false, true] {
		sybil_is_outvoted(sybil_reveals_last);
	}
}

/// A job of five that delivered round 0, P1's challenge of P2's contribution, and its
/// committee of three: (job, challenge, the member playing the Sybil, the other two).
fn sybil_on_committee() -> (u64, u64, AccountId, Vec<AccountId>) {
	let members = [P1, P2, P3, P4, P5];
	let id = running_job(&members);
	deliver(id, 0, &members);
	let challenge = open(P1, id, P2);
	let drawn = committee(challenge);
	assert_eq!(drawn.len(), 3);
	(id, challenge, drawn[0], drawn[1..].to_vec())
}

/// Asserts that the challenge decided since the last events read proved fraud, with
/// `outvoted` and `absent` members slashed.
fn fraud_proven_with(outvoted: u32, absent: u32) {
	let outcome = resolved(&job_events());
	let Some(Event::ChallengeResolved {
		outcome: ChallengeOutcome::FraudProven,
		outvoted: o,
		absent: a,
		..
	}) = outcome.clone()
	else {
		panic!("not fraud proven: {outcome:?}")
	};
	assert_eq!((o, a), (outvoted, absent), "{outcome:?}");
}

fn sybil_is_outvoted(sybil_reveals_last: bool) {
	new_test_ext().execute_with(|| {
		let (_, challenge, sybil, honest) = sybil_on_committee();
		let stake_before = stake(sybil);
		let mut ballots: Vec<_> = honest.iter().map(|who| (*who, Verdict::Invalid)).collect();
		if sybil_reveals_last {
			ballots.push((sybil, Verdict::Valid));
		} else {
			ballots.insert(0, (sybil, Verdict::Valid));
		}
		for (who, verdict) in &ballots {
			assert_ok!(commit(*who, challenge, *verdict));
		}
		for (i, (who, verdict)) in ballots.iter().enumerate() {
			assert!(resolved(&job_events()).is_none(), "decided before every verdict was out");
			assert!(Challenges::<Test>::contains_key(challenge), "before reveal {i}");
			assert_ok!(reveal(*who, challenge, *verdict));
		}
		fraud_proven_with(1, 0);
		assert_eq!(stake(sybil), stake_before - AbsentVoterSlash::get().mul_floor(stake_before));
		for who in &honest {
			assert!(stake(*who) >= STAKE, "honest verifiers keep their stake");
		}
		check_invariants();
	});
}

#[test]
fn a_member_that_commits_and_withholds_its_verdict_holds_the_decision_and_is_slashed() {
	new_test_ext().execute_with(|| {
		// The attack: a Sybil commits, sees the honest majority reveal, and never reveals, so
		// that no wrong vote of its is on record. The challenge waits for its verdict until
		// the deadline, and then decides by the majority and slashes it as absent.
		let (id, challenge, sybil, honest) = sybil_on_committee();
		let stake_before = stake(sybil);
		assert_ok!(commit(sybil, challenge, Verdict::Valid));
		for who in &honest {
			assert_ok!(commit(*who, challenge, Verdict::Invalid));
		}
		for who in &honest {
			assert_ok!(reveal(*who, challenge, Verdict::Invalid));
		}
		let c = Challenges::<Test>::get(challenge).expect("still open");
		assert_eq!(c.settled_verdict(), Some(Verdict::Invalid), "the majority is in");
		run_to_block(c.deadline - 1);
		assert!(Challenges::<Test>::contains_key(challenge), "held to the deadline");
		run_to_block(c.deadline);
		fraud_proven_with(0, 1);
		assert_eq!(stake(sybil), stake_before - AbsentVoterSlash::get().mul_floor(stake_before));
		assert!(!Participants::<Test>::contains_key(id, P2), "the cheat is removed");
		check_invariants();
	});
}

/// The attack: a cheat's Sybil, drawn beside one honest holder, votes `Valid` against the
/// honest `Invalid`. The tie decides nothing; had it marked the contribution for good, no
/// challenger (nor audit) could ever reach the fraud again. Another challenger's committee
/// judges it, convicts the cheat and slashes its Sybil as outvoted.
#[test]
fn a_tied_committee_does_not_clear_a_fraud() {
	new_test_ext().execute_with(|| {
		let id = delivered_job();
		// P2 cheated; P4 is its Sybil. P1's challenge draws P3 and P4 (the others are the
		// parties).
		let first = open(P1, id, P2);
		assert_eq!(committee(first).len(), 2);
		vote(first, &[(P3, Verdict::Invalid), (P4, Verdict::Valid)]);
		run_to_block(Challenges::<Test>::get(first).unwrap().deadline);
		assert!(matches!(
			resolved(&job_events()),
			Some(Event::ChallengeResolved { outcome: ChallengeOutcome::Undecided, .. })
		));
		assert!(!Challenged::<Test>::contains_key((id, 0), P2), "open to another challenge");
		// The buyer challenges again: P1, P3 and P4 hold the update, a committee of three.
		let second = open(BUYER, id, P2);
		let mut drawn = committee(second);
		drawn.sort();
		assert_eq!(drawn, vec![P1, P3, P4]);
		assert_noop!(challenge(P3, id, P2), Error::<Test>::AlreadyChallenged);
		vote(second, &[(P1, Verdict::Invalid), (P3, Verdict::Invalid), (P4, Verdict::Valid)]);
		match resolved(&job_events()) {
			Some(Event::ChallengeResolved { outcome, outvoted, .. }) => {
				assert_eq!(outcome, ChallengeOutcome::FraudProven);
				assert_eq!(outvoted, 1, "the Sybil that voted against the truth");
			}
			other => panic!("not resolved: {other:?}"),
		}
		assert!(stake(P2) < STAKE && !Participants::<Test>::contains_key(id, P2));
		assert!(stake(P4) < STAKE);
		// Judged now: not again.
		assert_noop!(challenge(P3, id, P2), Error::<Test>::AlreadyChallenged);
		check_invariants();
	});
}

#[test]
fn committees_of_four_or_more_are_drawn_odd() {
	use crate::challenges::odd;
	// (most seats, candidates) → seats taken.
	for (size, available, taken) in
		[(5, 2, 2), (5, 3, 3), (5, 4, 3), (5, 5, 5), (5, 9, 5), (4, 9, 3), (6, 6, 5), (1, 4, 1)]
	{
		assert_eq!(odd(size, available), taken, "{size} seats, {available} candidates");
	}
}

/// In a job whose rounds overlap, a round's first steps trained from the round before's base,
/// which a member that joined at the round never held: it cannot replay the round, and had
/// been drawn, and slashed as absent, all the same. It is not drawn; in a job whose rounds do
/// not overlap it is.
#[test]
fn a_member_that_joined_at_an_overlapped_round_is_not_drawn_to_judge_it() {
	for overlap_steps in [0, 2] {
		new_test_ext().execute_with(|| {
			let mut s = spec();
			s.max_providers = 5;
			s.training.overlap_steps = overlap_steps;
			let id = running_job_of(s, &[P1, P2, P3, P4]);
			register(P5);
			assert_ok!(join(id, P5));
			assert_eq!(Participants::<Test>::get(id, P5).unwrap().from_round, 1);
			deliver(id, 0, &[P1, P2, P3, P4]);
			deliver(id, 1, &[P1, P2, P3, P4, P5]);
			assert_ok!(Jobs::challenge(RuntimeOrigin::signed(P1), id, 1, P2));
			run_to_block(Challenges::<Test>::get(0).unwrap().draw_at);
			let mut drawn = committee(0);
			drawn.sort();
			let expected = match overlap_steps {
				0 => vec![P3, P4, P5],
				_ => vec![P3, P4],
			};
			assert_eq!(drawn, expected, "overlap {overlap_steps}");
		});
	}
}
