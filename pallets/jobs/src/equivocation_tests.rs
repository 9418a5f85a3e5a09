//! Equivocation of commitments: two different commitments signed by a provider's libp2p key
//! for one slot are punished as two proofs are, and nothing else is.

use crate::{mock::*, Equivocations, Error, Participants};
use grid_primitives::{
	commitment::{commitment_payload, CommitmentHead, SignedCommitmentBytes},
	job::{JobId, RoundIndex},
};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{
		frame_support::{assert_noop, assert_ok},
		sp_core::Pair,
	},
	prelude::*,
};

/// This test chain's genesis hash, as a commitment names it.
fn here() -> [u8; 32] {
	System::block_hash(0).0
}

/// A commitment for (`job`, `round`) on `chain`, its body `fill`, signed by `signer`'s libp2p
/// key.
fn commitment_on(
	chain: [u8; 32],
	signer: AccountId,
	job: JobId,
	round: RoundIndex,
	fill: u8,
) -> Box<SignedCommitmentBytes> {
	let mut bytes = codec::Encode::encode(&CommitmentHead { job, round, chain });
	bytes.extend_from_slice(&[fill; 300]);
	let key = peer_key(signer);
	let signature = key.sign(&commitment_payload(&bytes)).0;
	let commitment = BoundedVec::truncate_from(bytes);
	Box::new(SignedCommitmentBytes { commitment, public: key.public().0, signature })
}

fn commitment(
	signer: AccountId,
	job: JobId,
	round: RoundIndex,
	fill: u8,
) -> Box<SignedCommitmentBytes> {
	commitment_on(here(), signer, job, round, fill)
}

fn report(
	provider: AccountId,
	first: Box<SignedCommitmentBytes>,
	second: Box<SignedCommitmentBytes>,
) -> DispatchResult {
	Jobs::report_commitment_equivocation(RuntimeOrigin::signed(REPORTER), provider, first, second)
}

#[test]
fn two_commitments_for_one_slot_are_slashed_rewarded_and_removed_once() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		let (first, second) = (commitment(P1, id, 0, 1), commitment(P1, id, 0, 2));
		punished_for_equivocation(id, || report(P1, first.clone(), second.clone()));
		// Once a slot, whatever the evidence: the same commitments, a third one, or two proofs.
		assert_noop!(report(P1, first, second), Error::<Test>::AlreadyReported);
		assert_noop!(
			report(P1, commitment(P1, id, 0, 3), commitment(P1, id, 0, 4)),
			Error::<Test>::AlreadyReported
		);
		let proofs = (proof(id, 0, P1, 42, 100, &[P1]), proof(id, 0, P1, 43, 100, &[P1]));
		assert_noop!(
			Jobs::report_equivocation(RuntimeOrigin::signed(REPORTER), proofs.0, proofs.1),
			Error::<Test>::AlreadyReported
		);
		check_invariants();
	});
}

/// A hostile reporter's attempts to have an honest provider (one commitment a round)
/// slashed: none moves a balance or a membership.
#[test]
fn what_is_not_two_commitments_of_the_provider_for_one_slot_is_refused() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		let honest = commitment(P1, id, 0, 1);
		let stake = pallet_providers::Providers::<Test>::get(P1).unwrap().stake;
		// Its commitments of two rounds, or of two jobs.
		assert_noop!(
			report(P1, honest.clone(), commitment(P1, id, 1, 2)),
			Error::<Test>::DifferentSlots
		);
		assert_noop!(
			report(P1, honest.clone(), commitment(P1, id + 1, 0, 2)),
			Error::<Test>::DifferentSlots
		);
		// Its commitment for the same slot on another network (a chain sharing job numbers).
		assert_noop!(
			report(P1, honest.clone(), commitment_on([7; 32], P1, id, 0, 2)),
			Error::<Test>::WrongChain
		);
		// The same commitment twice.
		assert_noop!(report(P1, honest.clone(), honest.clone()), Error::<Test>::SameProof);
		// Another provider's commitment, or two of another's, reported as this one's.
		assert_noop!(
			report(P1, honest.clone(), commitment(P2, id, 0, 2)),
			Error::<Test>::NotProvidersKey
		);
		assert_noop!(
			report(P1, commitment(P2, id, 0, 1), commitment(P2, id, 0, 2)),
			Error::<Test>::NotProvidersKey
		);
		// A commitment altered after signing, or with its signature replaced.
		let mut altered = commitment(P1, id, 0, 2);
		let last = altered.commitment.len() - 1;
		altered.commitment[last] ^= 1;
		assert_noop!(report(P1, honest.clone(), altered), Error::<Test>::BadSignature);
		let mut forged = commitment(P1, id, 0, 2);
		forged.signature = peer_key(P2).sign(&forged.payload()).0;
		assert_noop!(report(P1, honest.clone(), forged), Error::<Test>::BadSignature);
		// Bytes too short to name a slot.
		let mut short = commitment(P1, id, 0, 2);
		short.commitment = BoundedVec::truncate_from(vec![1, 2, 3]);
		assert_noop!(report(P1, honest.clone(), short), Error::<Test>::MalformedCommitment);
		// A round that is not open (nor settled within its window).
		assert_noop!(
			report(P1, commitment(P1, id, 5, 1), commitment(P1, id, 5, 2)),
			Error::<Test>::NotReportable
		);
		// An account that is no provider has no key to sign with.
		assert_noop!(
			report(REPORTER, commitment(REPORTER, id, 0, 1), commitment(REPORTER, id, 0, 2)),
			Error::<Test>::NotProvidersKey
		);
		assert_eq!(pallet_providers::Providers::<Test>::get(P1).unwrap().stake, stake);
		assert!(Participants::<Test>::contains_key(id, P1));
		check_invariants();
	});
}

/// Evidence of a settled round is taken within the round's challenge window only: after it
/// the offence's record may be pruned, and a second report could punish it again.
#[test]
fn a_settled_round_is_reportable_until_its_challenge_window_closes() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		deliver(id, 0, &[P1, P2, P3]);
		run_to_block(3);
		let settled = crate::RoundResults::<Test>::get(id, 0).unwrap().settled_at;
		run_to_block(settled + 11);
		assert_noop!(
			report(P2, commitment(P2, id, 0, 1), commitment(P2, id, 0, 2)),
			Error::<Test>::NotReportable
		);
		check_invariants();
	});
}

#[test]
fn a_settled_round_within_its_window_is_reportable() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		deliver(id, 0, &[P1, P2, P3]);
		run_to_block(3);
		assert!(crate::RoundResults::<Test>::contains_key(id, 0));
		assert_ok!(report(P2, commitment(P2, id, 0, 1), commitment(P2, id, 0, 2)));
		assert!(Equivocations::<Test>::contains_key((id, 0), P2));
		check_invariants();
	});
}

#[test]
fn a_key_outside_the_round_cannot_write_an_equivocation_record() {
	new_test_ext().execute_with(|| {
		// P4 is registered but not in the job; P5 is any key at all. Each signs two proofs
		// for the open round (and P4 two commitments), which once wrote a record of an
		// "offence" each, never pruned past a round's members, for a fee.
		let id = running_job(&[P1, P2]);
		register(P4);
		for outsider in [P4, P5] {
			let (first, second) =
				(proof(id, 0, outsider, 1, 100, &[P1]), proof(id, 0, outsider, 2, 100, &[P1]));
			let report = Jobs::report_equivocation(RuntimeOrigin::signed(REPORTER), first, second);
			assert_noop!(report, Error::<Test>::NotParticipant);
			assert!(!Equivocations::<Test>::contains_key((id, 0), outsider));
		}
		let (first, second) = (commitment(P4, id, 0, 1), commitment(P4, id, 0, 2));
		assert_noop!(report(P4, first, second), Error::<Test>::NotParticipant);
		// A member's two proofs are still an offence.
		let (first, second) = (proof(id, 0, P1, 1, 100, &[P2]), proof(id, 0, P1, 2, 100, &[P2]));
		assert_ok!(Jobs::report_equivocation(RuntimeOrigin::signed(REPORTER), first, second));
	});
}

#[test]
fn a_member_equivocating_in_a_round_that_paid_nobody_is_punished_after_it_settled() {
	new_test_ext().execute_with(|| {
		// Two members attest different results: no quorum, nobody paid, no members kept for
		// the round; P1 signed a second proof, reported only once the round settled.
		let id = running_job(&[P1, P2, P3]);
		let honest = proof(id, 0, P1, 1, 100, &[P2, P3]);
		assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(P1), honest.clone()));
		let other = proof(id, 0, P2, 2, 100, &[P1, P3]);
		assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(P2), other));
		let due = crate::Rounds::<Test>::get(id).unwrap().due;
		run_to_block(due);
		assert!(crate::RoundResults::<Test>::contains_key(id, 0), "settled");
		assert!(!crate::RoundMembers::<Test>::contains_key(id, 0), "paid nobody");
		let second = proof(id, 0, P1, 3, 100, &[P2, P3]);
		punished_for_equivocation(id, || {
			Jobs::report_equivocation(RuntimeOrigin::signed(REPORTER), honest, second)
		});
	});
}

#[test]
fn a_provider_punished_for_equivocation_cannot_join_the_job_again() {
	new_test_ext().execute_with(|| {
		// Convicted, it would otherwise come back (its stake still covers the job) and sit on
		// the committees of the job's other rounds.
		let id = running_job(&[P1, P2, P3]);
		let (first, second) = (commitment(P1, id, 0, 1), commitment(P1, id, 0, 2));
		punished_for_equivocation(id, || report(P1, first, second));
		assert!(pallet_providers::Providers::<Test>::get(P1).unwrap().stake >= MIN_STAKE);
		assert_noop!(join(id, P1), Error::<Test>::ConvictedInJob);
		assert!(!Participants::<Test>::contains_key(id, P1));
		// Another job takes it.
		let other = create(spec());
		assert_ok!(join(other, P1));
		check_invariants();
	});
}
