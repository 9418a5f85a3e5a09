//! Random audits: drawn after settlement with randomness nobody had when the proofs were
//! sent, judged like challenges without a challenger, fraud punished, honest work untouched;
//! and the stake a job open to challenges must ask for so that cheating does not pay.

use crate::{
	audits, mock::*, Accuser, Agenda, AgendaItem, ChallengeOutcome, Challenged, Challenges, Error,
	Event, OpenAuditsOn, OpenChallengesOn, Participants, RoundResults,
};
use grid_primitives::work::Verdict;
use pallet_providers::HealthRecords;
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{
		frame_support::{self, assert_noop, assert_ok},
		sp_runtime,
	},
	prelude::*,
};

/// Each of four members is paid a quarter of the reward for a round everyone delivered.
const SHARE: Balance = REWARD / 4;

/// Four members, audits at `rate`, round 0 delivered and settled; the block it settled at.
fn settled_round(rate: Perbill) -> (u64, u64) {
	// Posted before audits are on: the stake rule is another test's.
	let id = running_job(&[P1, P2, P3, P4]);
	AuditRate::set(rate);
	deliver(id, 0, &[P1, P2, P3, P4]);
	let settled_at = RoundResults::<Test>::get(id, 0).expect("settled").settled_at;
	job_events();
	(id, settled_at)
}

/// The audits `events` opened: (id, accused).
fn opened(events: &[Event<Test>]) -> Vec<(u64, AccountId)> {
	events
		.iter()
		.filter_map(|e| match e {
			Event::AuditOpened { id, accused, .. } => Some((*id, *accused)),
			_ => None,
		})
		.collect()
}

fn committee(id: u64) -> Vec<AccountId> {
	Challenges::<Test>::get(id).unwrap().committee.into_iter().map(|(who, _)| who).collect()
}

fn stake(who: AccountId) -> Balance {
	pallet_providers::Providers::<Test>::get(who).map(|p| p.stake).unwrap_or_default()
}

/// Runs to the block that draws round 0's audits; the audits it opened.
fn draw_audits(settled_at: u64) -> Vec<(u64, AccountId)> {
	run_to_block(settled_at + COMMITTEE_DELAY);
	opened(&job_events())
}

#[test]
fn audits_are_drawn_a_block_after_settlement_and_judged_by_holders() {
	new_test_ext().execute_with(|| {
		let (id, settled_at) = settled_round(Perbill::one());
		// The draw is not made with the settlement's randomness: the last member to send its
		// proof settles the round, and it could time that proof to a block that spares it.
		assert!(Challenges::<Test>::iter().next().is_none(), "nothing audited at settlement");
		let draw_at = settled_at + COMMITTEE_DELAY;
		assert!(Agenda::<Test>::get(draw_at).contains(&AgendaItem::Audit(id, 0)));

		let audits = draw_audits(settled_at);
		assert_eq!(audits.len(), MAX_AUDITS_PER_ROUND as usize, "every one drawn, capped");
		for (audit, accused) in &audits {
			let challenge = Challenges::<Test>::get(audit).unwrap();
			assert_eq!(challenge.accuser, Accuser::Audit);
			assert_eq!(Challenged::<Test>::get((id, 0), accused), Some(*audit));
			let members = committee(*audit);
			assert_eq!(members.len(), AUDIT_COMMITTEE as usize);
			assert!(!members.contains(accused), "nobody judges its own update");
		}
		assert_eq!(OpenAuditsOn::<Test>::get(id), MAX_AUDITS_PER_ROUND);
		assert_eq!(OpenChallengesOn::<Test>::get(id), 0, "audits leave challengers their room");
		check_invariants();
	});
}

#[test]
fn fraud_found_by_an_audit_is_clawed_back_and_slashed_with_no_challenger_paid() {
	new_test_ext().execute_with(|| {
		let (id, settled_at) = settled_round(Perbill::one());
		let (audit, accused) = draw_audits(settled_at)[0];
		let members = committee(audit);
		let (buyer, stake_before) = (free(BUYER), stake(accused));
		let silent_before = stake(members[2]);
		// A strict majority (two of three) decides at once: the third let the commit phase
		// pass, so it has no verdict to come and is slashed as absent.
		let voters: Vec<_> = members[..2].iter().map(|who| (*who, Verdict::Invalid)).collect();
		vote(audit, &voters);
		assert_eq!(
			stake(members[2]),
			silent_before - AbsentVoterSlash::get().mul_floor(silent_before)
		);

		let events = job_events();
		// The reward is clawed back first; the slash is a share of what is left.
		let penalty = FraudSlash::get().mul_floor(STAKE - SHARE);
		assert!(events.contains(&Event::ChallengeResolved {
			id: audit,
			job: id,
			round: 0,
			accused,
			outcome: ChallengeOutcome::FraudProven,
			slashed: penalty,
			clawed_back: SHARE,
			absent: 1,
			outvoted: 0,
		}));
		assert_eq!(stake(accused), stake_before - SHARE - penalty);
		// The buyer gets its reward back and its share of the slash; the verifiers theirs;
		// nobody gets a reporter's share.
		assert_eq!(free(BUYER), buyer + SHARE + BuyerShare::get().mul_floor(penalty));
		for who in &members[..2] {
			let share = VerifierShare::get().mul_floor(penalty) / 2;
			assert!(free(*who) >= ENDOWMENT - STAKE + share, "verifier {who} paid its share");
		}
		assert!(!Participants::<Test>::contains_key(id, accused), "removed from the job");
		assert_eq!(HealthRecords::<Test>::get(accused).challenges_lost, 1);
		check_invariants();
	});
}

#[test]
fn an_honest_provider_passes_its_audit_and_loses_nothing() {
	new_test_ext().execute_with(|| {
		let (id, settled_at) = settled_round(Perbill::one());
		let (audit, accused) = draw_audits(settled_at)[0];
		let (balance, stake_before) = (free(accused), stake(accused));
		let voters: Vec<_> =
			committee(audit).into_iter().take(2).map(|w| (w, Verdict::Valid)).collect();
		vote(audit, &voters);
		let resolved = job_events().into_iter().find_map(|e| match e {
			Event::ChallengeResolved { id, outcome, slashed, .. } if id == audit => {
				Some((outcome, slashed))
			}
			_ => None,
		});
		assert_eq!(resolved, Some((ChallengeOutcome::Rejected, 0)));
		assert_eq!((free(accused), stake(accused)), (balance, stake_before));
		assert!(Participants::<Test>::contains_key(id, accused));
		assert_eq!(HealthRecords::<Test>::get(accused).challenges_lost, 0);
		assert_eq!(OpenAuditsOn::<Test>::get(id), MAX_AUDITS_PER_ROUND - 1);
		check_invariants();
	});
}

#[test]
fn a_lone_sybil_on_an_audit_committee_cannot_convict() {
	new_test_ext().execute_with(|| {
		let (_, settled_at) = settled_round(Perbill::one());
		let (audit, accused) = draw_audits(settled_at)[0];
		let sybil = committee(audit)[0];
		// One member votes Invalid and the others never vote: no strict majority of the
		// committee, so undecided at the deadline, the absent members lightly slashed.
		vote(audit, &[(sybil, Verdict::Invalid)]);
		let (stake_before, deadline) =
			(stake(accused), Challenges::<Test>::get(audit).unwrap().deadline);
		run_to_block(deadline);
		let outcome = job_events().into_iter().find_map(|e| match e {
			Event::ChallengeResolved { id, outcome, absent, .. } if id == audit => {
				Some((outcome, absent))
			}
			_ => None,
		});
		assert_eq!(outcome, Some((ChallengeOutcome::Undecided, AUDIT_COMMITTEE - 1)));
		assert_eq!(stake(accused), stake_before, "the accused keeps its stake");
		check_invariants();
	});
}

#[test]
fn an_audited_contribution_cannot_be_challenged_again_nor_a_challenged_one_audited() {
	new_test_ext().execute_with(|| {
		let (id, settled_at) = settled_round(Perbill::one());
		// P1 challenges P2 before the audit draw: P2's update is not audited as well.
		assert_ok!(Jobs::challenge(RuntimeOrigin::signed(P1), id, 0, P2));
		let audits = draw_audits(settled_at);
		assert!(audits.iter().all(|(_, accused)| *accused != P2));
		assert!(!audits.is_empty());
		let (_, audited) = audits[0];
		let challenger = if audited == P3 { P4 } else { P3 };
		assert_noop!(
			Jobs::challenge(RuntimeOrigin::signed(challenger), id, 0, audited),
			Error::<Test>::AlreadyChallenged
		);
		check_invariants();
	});
}

#[test]
fn no_audits_at_rate_zero_nor_without_a_challenge_window() {
	new_test_ext().execute_with(|| {
		let (_, settled_at) = settled_round(Perbill::zero());
		assert!(draw_audits(settled_at).is_empty());

		AuditRate::set(Perbill::one());
		let mut s = spec();
		(s.min_providers, s.challenge_window) = (2, 0);
		let id = create(s);
		for who in [P1, P2] {
			assert_ok!(join(id, who));
		}
		deliver(id, 0, &[P1, P2]);
		advance(COMMITTEE_DELAY);
		assert!(opened(&job_events()).is_empty(), "the buyer chose no verification");
		assert!(!Agenda::<Test>::iter_values().any(|items| items
			.iter()
			.any(|i| matches!(i, AgendaItem::Audit(job, _) if *job == id))));
		check_invariants();
	});
}

#[test]
fn which_contributions_are_audited_follows_the_draw_blocks_randomness() {
	new_test_ext().execute_with(|| {
		let (id, _) = settled_round(Perbill::from_percent(50));
		// The same round drawn under different parent hashes picks different members: what
		// decides it is a block that did not exist when the proofs were sent.
		let picks: Vec<Vec<AccountId>> = (0u8..8)
			.map(|i| {
				frame_support::storage::with_transaction(|| {
					System::set_parent_hash(H256::repeat_byte(i));
					let ids = audits::run::<Test>(id, 0);
					let accused =
						ids.iter().map(|a| Challenges::<Test>::get(a).unwrap().accused).collect();
					sp_runtime::TransactionOutcome::Rollback(Ok::<_, DispatchError>(accused))
				})
				.unwrap()
			})
			.collect();
		assert!(picks.iter().any(|p| *p != picks[0]), "the draw ignores the randomness: {picks:?}");
		assert!(picks.iter().all(|p| p.len() <= MAX_AUDITS_PER_ROUND as usize));
	});
}

#[test]
fn a_job_open_to_challenges_must_stake_enough_that_cheating_does_not_pay() {
	new_test_ext().execute_with(|| {
		// Audits of 10%, 40% of the stake slashed: S >= 9 R asks 22.5 rounds' reward.
		AuditRate::set(Perbill::from_percent(10));
		let needed = REWARD * 9 * 10 / 4;
		let mut s = spec();
		s.min_provider_stake = needed - 1;
		assert_noop!(
			Jobs::create_job(RuntimeOrigin::signed(BUYER), Box::new(s.clone()), Default::default()),
			Error::<Test>::StakeTooLowToDeter
		);
		s.min_provider_stake = needed;
		assert_ok!(Jobs::create_job(
			RuntimeOrigin::signed(BUYER),
			Box::new(s.clone()),
			Default::default()
		));
		// A job without a challenge window is not verified: no stake to ask for.
		(s.min_provider_stake, s.challenge_window, s.min_providers) = (0, 0, 1);
		assert_ok!(Jobs::create_job(RuntimeOrigin::signed(BUYER), Box::new(s), Default::default()));
		check_invariants();
	});
}
