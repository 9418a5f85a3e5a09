//! Unit tests: every call, every error, settlement, slashing and the escrow invariant.

use crate::{
	mock::*, Agenda, AgendaItem, Error, Event, JobStatus, Jobs as JobsMap, Participants,
	RemovalReason, RoundResults, Rounds,
};
use grid_primitives::job::{
	max_claim, Compression, ExchangeWindow, GptConfig, JobId, ModelSpec, Nanos, OuterAnneal,
	TransformerConfig,
};
use pallet_providers::{traits::ProviderRegistry, SlashReason};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{
		frame_support::{assert_noop, assert_ok},
		sp_core::{Pair, H256},
	},
	prelude::*,
	traits::fungible::InspectHold,
};

fn escrow_held(who: AccountId) -> Balance {
	Balances::balance_on_hold(&crate::HoldReason::JobEscrow.into(), &who)
}

fn status(job: u64) -> JobStatus {
	JobsMap::<Test>::get(job).unwrap().status
}

fn round_index(job: u64) -> u32 {
	Rounds::<Test>::get(job).unwrap().index
}

#[test]
fn create_job_holds_the_budget() {
	new_test_ext().execute_with(|| {
		let id = create(spec());
		let job = JobsMap::<Test>::get(id).unwrap();
		assert_eq!(job.funded, 3 * ROUND_ESCROW);
		assert_eq!(job.status, JobStatus::Open);
		assert_eq!(escrow_held(BUYER), 3 * ROUND_ESCROW);
		assert_eq!(job.deposit, JOB_DEPOSIT);
		assert_eq!(free(BUYER), ENDOWMENT - 3 * ROUND_ESCROW - JOB_DEPOSIT);
		assert_eq!(
			job_events(),
			vec![Event::JobCreated { job: id, buyer: BUYER, budget: 3 * ROUND_ESCROW }]
		);
		assert_eq!(create(spec()), id + 1);
		check_invariants();
	});
}

/// A small Llama-style transformer with `kv_heads` key/value heads for its four query heads.
fn transformer(kv_heads: u16) -> TransformerConfig {
	use grid_primitives::job::{Activation, Norm, Position};
	TransformerConfig {
		vocab: 256,
		context: 16,
		layers: 2,
		width: 32,
		heads: 4,
		kv_heads,
		mlp_width: 64,
		activation: Activation::SwiGlu,
		norm: Norm::RmsNorm,
		position: Position::Rope,
		tied_embeddings: true,
	}
}

#[test]
fn a_transformer_described_by_its_knobs_is_a_job() {
	new_test_ext().execute_with(|| {
		let mut s = spec();
		s.model = ModelSpec::Transformer(transformer(2));
		let id = create(s.clone());
		assert_eq!(JobsMap::<Test>::get(id).unwrap().spec.model, s.model);
		check_invariants();
	});
}

#[test]
fn create_job_rejects_every_bad_field() {
	new_test_ext().execute_with(|| {
		type Mutation = fn(&mut grid_primitives::job::JobSpec<Balance, u64>);
		let cases: Vec<(Mutation, Error<Test>)> = vec![
			(
				|s| {
					s.model = ModelSpec::Gpt(GptConfig {
						vocab: 256,
						context: 8,
						layers: 1,
						heads: 3,
						width: 8,
					})
				},
				Error::BadModel,
			),
			(
				|s| {
					s.model = ModelSpec::Gpt(GptConfig {
						vocab: 256,
						context: 8,
						layers: 200,
						heads: 8,
						width: 8192,
					})
				},
				Error::ModelTooLarge,
			),
			// The attacker's MLP: 2^64 + 21,247,839 parameters, which used to wrap to 21M.
			(
				|s| {
					s.model = ModelSpec::MnistMlp(grid_primitives::job::MlpConfig {
						hidden: 1_920_767_687,
						layers: 6,
					})
				},
				Error::ModelTooLarge,
			),
			// Few parameters, but a context no trainer should be asked to hold.
			(
				|s| {
					s.model = ModelSpec::Gpt(GptConfig {
						vocab: 256,
						context: grid_primitives::job::model_bounds::GPT_CONTEXT + 1,
						layers: 1,
						heads: 1,
						width: 8,
					})
				},
				Error::ModelTooLarge,
			),
			// A transformer whose key/value heads do not divide its query heads, and one with
			// an MLP wider than any bound (hostile buyers' shapes no trainer can build).
			(|s| s.model = ModelSpec::Transformer(transformer(3)), Error::BadModel),
			(
				|s| {
					s.model = ModelSpec::Transformer(TransformerConfig {
						mlp_width: grid_primitives::job::model_bounds::HIDDEN + 1,
						..transformer(2)
					})
				},
				Error::ModelTooLarge,
			),
			(|s| s.dataset.uri = Default::default(), Error::BadDataset),
			(|s| s.dataset.content_hash = H256::zero(), Error::BadDataset),
			(
				|s| {
					s.initial_weights = Some(grid_primitives::job::DatasetRef {
						content_hash: H256::zero(),
						..s.dataset.clone()
					})
				},
				Error::BadInitialWeights,
			),
			(|s| s.training.batch_size = 0, Error::BadBatchSize),
			(
				|s| s.training.inner = grid_primitives::job::InnerOptimizer::Sgd { lr: Nanos(0) },
				Error::BadInnerLearningRate,
			),
			(|s| s.training.outer_lr = Nanos(4_000_000_001), Error::BadOuterLearningRate),
			(|s| s.training.outer_momentum = Nanos(1_000_000_000), Error::BadOuterMomentum),
			(|s| s.training.error_decay = Nanos(1_000_000_001), Error::BadErrorDecay),
			(
				|s| s.training.compression = Compression::TopK { chunk: 8, k: 0, value_bits: 2 },
				Error::BadCompression,
			),
			(|s| s.rounds = 0, Error::ZeroRounds),
			(|s| s.rounds = 51, Error::TooManyRounds),
			(|s| s.reward_per_round = 0, Error::ZeroReward),
			(|s| s.min_providers = 5, Error::BadProviderRange),
			(
				|s| {
					s.max_providers = MAX_PARTICIPANTS + 1;
				},
				Error::TooManyProviders,
			),
			(|s| s.training.round_blocks = 1, Error::RoundTooShort),
			(|s| s.training.round_blocks = 101, Error::RoundTooLong),
			(|s| s.challenge_window = 101, Error::ChallengeWindowTooLong),
			(
				|s| {
					// Challengeable, with only one member needed: nobody could judge it.
					s.min_providers = 1;
					s.challenge_window = 1;
				},
				Error::TooFewToVerify,
			),
			(
				|s| {
					// 50 rounds of 21 blocks: past `MaxJobBlocks` (1,000).
					s.rounds = 50;
					s.training.round_blocks = 21;
				},
				Error::JobTooLong,
			),
			(|s| s.training.max_steps = Some(0), Error::ZeroStepCap),
			(
				|s| {
					s.training.max_steps = Some(3);
					s.training.overlap_steps = 4;
				},
				Error::OverlapOverStepCap,
			),
			(|s| s.training.dense_rounds = s.rounds + 1, Error::DenseRoundsOverRounds),
			(
				|s| {
					s.training.outer_anneal =
						Some(OuterAnneal { rounds: s.rounds + 1, to_lr: Nanos(1) })
				},
				Error::BadOuterAnneal,
			),
			(|s| s.training.exchange.grace_ms = 0, Error::BadExchange),
			(|s| s.training.exchange.fetch_ms = 0, Error::BadExchange),
			(
				|s| {
					// Two blocks (12 s) with an allowance of 2 × 2 s + 4 s / 2 = 6 s is just
					// allowed; 1 ms more of grace is not.
					s.training.round_blocks = 2;
					s.training.exchange =
						ExchangeWindow { grace_ms: 2_001, fetch_ms: 4_000, fan_in: None };
				},
				Error::ExchangeOverHalfTheRound,
			),
			(|s| s.reward_per_round = Balance::MAX / 2, Error::BudgetOverflow),
			(|s| s.reward_per_round = ENDOWMENT, Error::InsufficientBalance),
		];
		for (mutate, error) in cases {
			let mut s = spec();
			mutate(&mut s);
			assert_noop!(
				Jobs::create_job(RuntimeOrigin::signed(BUYER), Box::new(s), Default::default()),
				error
			);
		}
		assert_eq!(escrow_held(BUYER), 0);
	});
}

#[test]
fn joining_starts_the_job_at_min_providers() {
	new_test_ext().execute_with(|| {
		let id = create(spec());
		register(P1);
		register(P2);
		assert_ok!(join(id, P1));
		assert_eq!(status(id), JobStatus::Open);
		assert_ok!(join(id, P2));
		assert_eq!(status(id), JobStatus::Running);
		let round = Rounds::<Test>::get(id).unwrap();
		assert_eq!(round.index, 0);
		assert_eq!(round.deadline, 1 + ROUND_BLOCKS);
		assert_eq!(round.members.len(), 2);
		let events = job_events();
		assert!(events.contains(&Event::JobStarted { job: id }));
		assert!(events.contains(&Event::RoundOpened {
			job: id,
			round: 0,
			deadline: 1 + ROUND_BLOCKS,
			members: 2
		}));
		// In a job: the provider cannot leave the registry.
		assert!(pallet_providers::Providers::<Test>::get(P1).unwrap().in_jobs());
		check_invariants();
	});
}

#[test]
fn admission_rules_turn_away_strangers_fresh_sybils_and_the_unhealthy() {
	new_test_ext().execute_with(|| {
		use grid_primitives::job::Admission;
		for who in [P1, P2, P3, P4] {
			register(who);
		}
		// The buyer admits P1, P2 and P4 only, registered 5 blocks or more, healthy.
		let admission = Admission {
			min_health: admission_health(),
			min_age: 5,
			allowlist: BoundedVec::truncate_from(vec![P1, P2, P4]),
		};
		let id = crate::NextJobId::<Test>::get();
		assert_ok!(Jobs::create_job(
			RuntimeOrigin::signed(BUYER),
			Box::new(spec()),
			admission.clone()
		));
		assert_eq!(Jobs::job(id).map(|v| v.admission), Some(admission));
		// A stranger with stake is not on the list.
		assert_noop!(join(id, P3), Error::<Test>::NotOnAllowlist);
		// A listed account that registered a moment ago waits out the minimum age (a Sybil
		// made for the job would have to).
		assert_noop!(join(id, P1), Error::<Test>::RegisteredTooRecently);
		run_to_block(System::block_number() + 5);
		assert_ok!(join(id, P1));
		// A listed account that lost fraud challenges and missed rounds is unhealthy.
		pallet_providers::HealthRecords::<Test>::mutate(P4, |h| {
			(h.rounds_delivered, h.rounds_missed, h.challenges_lost) = (1, 3, 1);
		});
		assert!(<Test as crate::Config>::Providers::health_score(&P4) < admission_health());
		assert_noop!(join(id, P4), Error::<Test>::HealthTooLow);
		assert_ok!(join(id, P2));
		assert_eq!(status(id), JobStatus::Running);
		// The rules go with the job once it is pruned.
		check_invariants();
	});
}

fn admission_health() -> Perbill {
	Perbill::from_percent(50)
}

#[test]
fn a_job_without_rules_admits_any_eligible_provider_and_stores_none() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2]);
		assert!(!crate::Admissions::<Test>::contains_key(id));
		assert_eq!(Jobs::job(id).map(|v| v.admission), Some(Default::default()));
	});
}

#[test]
fn join_rejects_each_bad_case() {
	new_test_ext().execute_with(|| {
		let id = create(spec());
		assert_noop!(join(99, P1), Error::<Test>::UnknownJob);
		assert_noop!(join(id, P1), Error::<Test>::NotEligible);
		let mut rich = spec();
		rich.min_provider_stake = 5_000;
		let rich = create(rich);
		register(P1);
		assert_noop!(join(rich, P1), Error::<Test>::NotEligible);
		register_with(P5, STAKE, 0);
		assert_noop!(join(id, P5), Error::<Test>::Underpowered);
		assert_ok!(join(id, P1));
		assert_noop!(join(id, P1), Error::<Test>::AlreadyJoined);
		let mut small = spec();
		small.max_providers = 2;
		small.min_providers = 2;
		let small = create(small);
		for who in [P2, P3, P4] {
			register(who);
		}
		assert_ok!(join(small, P2));
		assert_ok!(join(small, P3));
		assert_noop!(join(small, P4), Error::<Test>::JobFull);
		assert_ok!(Jobs::cancel_job(RuntimeOrigin::signed(BUYER), id));
		assert_noop!(join(id, P2), Error::<Test>::JobEnded);
		check_invariants();
	});
}

#[test]
fn a_running_job_admits_joiners_from_the_next_round() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2]);
		register(P3);
		assert_ok!(join(id, P3));
		assert_eq!(job_events(), vec![Event::Joined { job: id, who: P3, from_round: 1 }]);
		assert_noop!(
			Jobs::submit_proof(RuntimeOrigin::signed(P3), proof(id, 0, P3, 42, 100, &[P1, P2])),
			Error::<Test>::NotRoundMember
		);
		deliver(id, 0, &[P1, P2]);
		let round = Rounds::<Test>::get(id).unwrap();
		assert_eq!(round.index, 1);
		assert!(round.members.contains(&P3));
		assert_eq!(round.members.len(), 3);
		check_invariants();
	});
}

#[test]
fn submit_proof_rejects_each_bad_proof() {
	new_test_ext().execute_with(|| {
		let open = create(spec());
		let submit = |signed| Jobs::submit_proof(RuntimeOrigin::signed(REPORTER), signed);
		assert_noop!(submit(proof(open, 0, P1, 42, 1, &[])), Error::<Test>::NotRunning);
		assert_noop!(submit(proof(77, 0, P1, 42, 1, &[])), Error::<Test>::UnknownJob);
		let id = running_job(&[P1, P2, P3]);
		assert_noop!(submit(proof(id, 1, P1, 42, 1, &[])), Error::<Test>::WrongRound);
		assert_noop!(submit(proof(id, 0, P4, 42, 1, &[])), Error::<Test>::NotRoundMember);
		// Signed by another key.
		let mut forged = proof(id, 0, P1, 42, 1, &[]);
		forged.signature = account_key(P2).sign(b"anything").0;
		assert_noop!(submit(forged), Error::<Test>::BadSignature);
		// A field changed after signing.
		let mut tampered = proof(id, 0, P1, 42, 1, &[]);
		tampered.proof.train_loss_micros = 1;
		assert_noop!(submit(tampered), Error::<Test>::BadSignature);
		// More samples than its inner steps hold at the job's batch size (32), however
		// validly signed: a replay redoes the steps, so the rest was never trained.
		let mut inflated = proof(id, 0, P1, 42, 64, &[]).proof;
		inflated.inner_steps = 1;
		assert_noop!(submit(sign(inflated)), Error::<Test>::SamplesExceedSteps);
		// Signed for another chain.
		let mut other_chain = proof(id, 0, P1, 42, 1, &[]).proof;
		other_chain.samples_processed = 2;
		let payload = grid_primitives::job::proof_payload(&H256::repeat_byte(1), &other_chain);
		let signature = account_key(P1).sign(&payload).0;
		assert_noop!(
			submit(Box::new(grid_primitives::job::SignedProof { proof: other_chain, signature })),
			Error::<Test>::BadSignature
		);
		// Anyone may submit a valid proof, once.
		assert_ok!(submit(proof(id, 0, P1, 42, 1, &[])));
		assert_noop!(submit(proof(id, 0, P1, 42, 1, &[])), Error::<Test>::DuplicateProof);
		check_invariants();
	});
}

#[test]
fn a_proof_claiming_more_steps_than_the_jobs_cap_is_refused() {
	new_test_ext().execute_with(|| {
		let mut capped = spec();
		capped.training.max_steps = Some(2);
		let id = running_job_of(capped, &[P1, P2]);
		let submit = |signed| Jobs::submit_proof(RuntimeOrigin::signed(REPORTER), signed);
		let batch = u64::from(spec().training.batch_size);
		// Three steps' samples, honestly counted and validly signed: over the cap, so the
		// round's replays need not redo them and the chain does not pay for them.
		assert_noop!(submit(proof(id, 0, P1, 42, 3 * batch, &[])), Error::<Test>::StepsOverCap);
		// Two steps claiming fewer samples is over nothing.
		let mut sneaky = proof(id, 0, P1, 42, 2 * batch, &[]).proof;
		sneaky.inner_steps = 3;
		assert_noop!(submit(sign(sneaky)), Error::<Test>::StepsOverCap);
		assert_ok!(submit(proof(id, 0, P1, 42, 2 * batch, &[])));
		check_invariants();
	});
}

#[test]
fn a_round_every_member_attests_settles_at_once_and_pays() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2]);
		let (p1, p2, fees) = (free(P1), free(P2), free(FEES));
		deliver(id, 0, &[P1, P2]);
		// Equal samples: each gets half of the reward; the fee is 10% of what was paid.
		assert_eq!(free(P1) - p1, REWARD / 2);
		assert_eq!(free(P2) - p2, REWARD / 2);
		assert_eq!(free(FEES) - fees, REWARD / 10);
		let summary = RoundResults::<Test>::get(id, 0).unwrap();
		assert_eq!((summary.paid, summary.fee, summary.refunded), (REWARD, REWARD / 10, 0));
		assert_eq!(summary.result_model_hash, Some(H256::repeat_byte(42)));
		let events = job_events();
		assert!(events.contains(&Event::QuorumReached {
			job: id,
			round: 0,
			result_model_hash: H256::repeat_byte(42)
		}));
		assert!(events.contains(&Event::RewardPaid {
			job: id,
			round: 0,
			who: P1,
			amount: REWARD / 2
		}));
		assert!(events.contains(&Event::RoundSettled {
			job: id,
			round: 0,
			result_model_hash: Some(H256::repeat_byte(42)),
			paid: REWARD,
			fee: REWARD / 10,
			refunded: 0
		}));
		assert_eq!(round_index(id), 1);
		let participant = Participants::<Test>::get(id, P1).unwrap();
		assert_eq!((participant.rounds_paid, participant.earned), (1, REWARD / 2));
		assert_eq!(pallet_providers::HealthRecords::<Test>::get(P1).rounds_delivered, 1);
		check_invariants();
	});
}

#[test]
fn a_quorum_settles_after_the_grace_and_refunds_missing_slots() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		let buyer = free(BUYER);
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P1),
			proof(id, 0, P1, 42, 100, &[P1, P2])
		));
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P2),
			proof(id, 0, P2, 42, 100, &[P1, P2])
		));
		assert_eq!(
			Rounds::<Test>::get(id).unwrap().due,
			2,
			"quorum moves the settlement to now + grace"
		);
		assert_eq!(round_index(id), 0, "still waiting for P3");
		advance(1);
		assert_eq!(round_index(id), 1);
		// Two of three slots delivered: 2/3 of the reward is split, the third slot refunded.
		let pool = REWARD * 2 / 3;
		let fee = pool / 10;
		let summary = RoundResults::<Test>::get(id, 0).unwrap();
		assert_eq!(
			(summary.paid, summary.fee, summary.refunded),
			(pool, fee, ROUND_ESCROW - pool - fee)
		);
		assert_eq!(free(BUYER) - buyer, ROUND_ESCROW - pool - fee);
		assert_eq!(pallet_providers::HealthRecords::<Test>::get(P3).rounds_missed, 1);
		assert_eq!(Participants::<Test>::get(id, P3).unwrap().missed_in_row, 1);
		check_invariants();
	});
}

#[test]
fn a_round_without_quorum_pays_no_one() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		let buyer = free(BUYER);
		assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(P1), proof(id, 0, P1, 1, 100, &[P1])));
		assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(P2), proof(id, 0, P2, 2, 100, &[P2])));
		advance(ROUND_BLOCKS);
		let summary = RoundResults::<Test>::get(id, 0).unwrap();
		assert_eq!(summary.result_model_hash, None);
		assert_eq!((summary.paid, summary.fee, summary.refunded), (0, 0, ROUND_ESCROW));
		assert_eq!(free(BUYER) - buyer, ROUND_ESCROW);
		// Those that submitted are not counted as absent.
		assert_eq!(Participants::<Test>::get(id, P1).unwrap().missed_in_row, 0);
		assert_eq!(Participants::<Test>::get(id, P3).unwrap().missed_in_row, 1);
		check_invariants();
	});
}

/// A running job of P1, P2 and P3 whose round 0 settled, with P4 and P5 admitted from round 1.
fn job_with_two_joiners() -> JobId {
	let mut s = spec();
	s.max_providers = 5;
	let id = running_job_of(s, &[P1, P2, P3]);
	for joiner in [P4, P5] {
		register(joiner);
		assert_ok!(join(id, joiner));
	}
	deliver(id, 0, &[P1, P2, P3]);
	id
}

/// Two Sybils join a running job of three honest members and sit their first round out:
/// counted among the round's members they would raise its quorum to four of five, more than
/// the three honest members are, and the round would pay no one; leaving after it costs them
/// nothing (none of their rounds settled, so no lock outlives them). Absent joiners do not
/// count: the honest three settle the round and are paid as if the Sybils had never joined.
#[test]
fn joiners_that_sit_their_first_round_out_cannot_deny_the_others_their_quorum() {
	new_test_ext().execute_with(|| {
		let id = job_with_two_joiners();
		let round = Rounds::<Test>::get(id).unwrap();
		assert_eq!((round.index, round.members.len(), round.established), (1, 5, 3));
		let before = [P1, P2, P3].map(free);
		// P3 is slow (or crashed): two established members of three attest.
		for who in [P1, P2] {
			let signed = proof(id, 1, who, 42, 100, &[P1, P2]);
			assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(who), signed));
		}
		// Not two thirds of all five: no early settlement, the round waits for its deadline.
		assert_eq!(Rounds::<Test>::get(id).unwrap().quorum, None);
		advance(ROUND_BLOCKS);
		let summary = RoundResults::<Test>::get(id, 1).unwrap();
		assert_eq!(summary.result_model_hash, Some(H256::repeat_byte(42)));
		assert_eq!(summary.paid_participants, 2);
		assert!(free(P1) > before[0] && free(P2) > before[1], "the attesters are paid");
		assert_eq!(free(P3), before[2]);
		for sybil in [P4, P5] {
			assert_eq!(Participants::<Test>::get(id, sybil).unwrap().missed_in_row, 1);
			assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(sybil), id));
		}
		check_invariants();
	});
}

/// A joiner that delivers in its first round counts like any member: Sybil joiners attesting
/// a result of their own add to the members a quorum is two thirds of, so they cannot carry
/// one with fewer votes than the established members would need.
#[test]
fn joiners_that_deliver_count_and_cannot_carry_a_result_of_their_own() {
	new_test_ext().execute_with(|| {
		let id = job_with_two_joiners();
		// The Sybils attest 9 with one established member of theirs.
		for who in [P4, P5, P3] {
			let signed = proof(id, 1, who, 9, 100, &[P3, P4, P5]);
			assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(who), signed));
		}
		let round = Rounds::<Test>::get(id).unwrap();
		assert_eq!((round.joiners_in, round.counted(), round.quorum), (2, 5, None));
		for who in [P1, P2] {
			let signed = proof(id, 1, who, 42, 100, &[P1, P2]);
			assert_ok!(Jobs::submit_proof(RuntimeOrigin::signed(who), signed));
		}
		// All five in: settled at once, without a quorum.
		let summary = RoundResults::<Test>::get(id, 1).unwrap();
		assert_eq!((summary.result_model_hash, summary.paid), (None, 0));
		check_invariants();
	});
}

#[test]
fn an_update_the_others_did_not_use_is_not_paid() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		let p3 = free(P3);
		// P3 attests the result but neither P1 nor P2 used its update.
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P1),
			proof(id, 0, P1, 42, 100, &[P1, P2])
		));
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P2),
			proof(id, 0, P2, 42, 100, &[P1, P2])
		));
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P3),
			proof(id, 0, P3, 42, 100, &[P1, P2, P3])
		));
		assert_eq!(free(P3), p3);
		let summary = RoundResults::<Test>::get(id, 0).unwrap();
		assert_eq!(summary.paid_participants, 2);
		assert_eq!(summary.paid, REWARD * 2 / 3);
		check_invariants();
	});
}

#[test]
fn a_bounded_fan_in_pays_the_whole_reward_to_the_drawn_and_nothing_to_the_rest() {
	new_test_ext().execute_with(|| {
		let mut s = spec();
		s.training.exchange.fan_in = Some(3);
		let id = running_job_of(s, &[P1, P2, P3, P4]);
		let p4 = free(P4);
		// P1-P3 were drawn: every proof says it used their updates. P4 was not drawn; it
		// attests the result and claims the same samples, and even names itself as used.
		let drawn = [P1, P2, P3];
		for who in drawn {
			assert_ok!(Jobs::submit_proof(
				RuntimeOrigin::signed(who),
				proof(id, 0, who, 42, 100, &drawn)
			));
		}
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P4),
			proof(id, 0, P4, 42, 100, &[P1, P2, P3, P4])
		));
		advance(ROUND_BLOCKS);
		assert_eq!(free(P4), p4, "an update the others did not aggregate is not paid");
		let summary = RoundResults::<Test>::get(id, 0).unwrap();
		assert_eq!(summary.paid_participants, 3);
		// Three slots, not four: the drawn share the whole reward (less rounding dust).
		assert_eq!(summary.paid, 3 * (REWARD / 3));
		check_invariants();
	});
}

#[test]
fn rewards_follow_samples_capped_by_declared_hardware() {
	new_test_ext().execute_with(|| {
		let mut s = spec();
		s.model =
			ModelSpec::Gpt(GptConfig { vocab: 256, context: 64, layers: 4, heads: 4, width: 128 });
		let id = create(s.clone());
		register(P1);
		// P2 declares hardware that can do fewer than 1000 samples in a round.
		let tflops_milli = 1;
		let cap = max_claim(&s.model, 32, tflops_milli, ROUND_BLOCKS * 6_000, 1);
		assert!(cap > 0 && cap < 1_000 && cap.is_multiple_of(32), "{cap}");
		register_with(P2, STAKE, tflops_milli);
		assert_ok!(join(id, P1));
		assert_ok!(join(id, P2));
		let (p1, p2) = (free(P1), free(P2));
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P1),
			proof(id, 0, P1, 42, 100, &[P1, P2])
		));
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P2),
			proof(id, 0, P2, 42, 1_000_000, &[P1, P2])
		));
		let total = 100 + cap as u128;
		// Shares are computed as a Perbill of the pool, rounded down.
		let share = |samples: u128| Perbill::from_rational(samples, total).mul_floor(REWARD);
		assert_eq!(free(P1) - p1, share(100));
		assert_eq!(free(P2) - p2, share(cap as u128));
		assert!(free(P2) - p2 < free(P1) - p1, "the claim above the cap does not count");
		check_invariants();
	});
}

#[test]
fn a_job_completes_after_its_rounds_and_releases_its_providers() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2]);
		let issuance = Balances::total_issuance();
		for round in 0..3 {
			deliver(id, round, &[P1, P2]);
		}
		assert_eq!(
			status(id),
			JobStatus::Completed { final_model_hash: Some(H256::repeat_byte(42)) }
		);
		let job = JobsMap::<Test>::get(id).unwrap();
		assert_eq!(job.held(), 0);
		assert_eq!(job.paid, 3 * REWARD);
		assert_eq!(job.fees, 3 * REWARD / 10);
		assert_eq!(escrow_held(BUYER), 0);
		assert!(Rounds::<Test>::get(id).is_none());
		let settles = Agenda::<Test>::iter_values().flatten();
		assert!(
			!settles.into_iter().any(|i| matches!(i, AgendaItem::Settle(_))),
			"nothing to settle"
		);
		assert!(!pallet_providers::Providers::<Test>::get(P1).unwrap().in_jobs());
		assert_eq!(Balances::total_issuance(), issuance, "payouts move funds, never mint");
		assert!(job_events().contains(&Event::JobCompleted {
			job: id,
			final_model_hash: Some(H256::repeat_byte(42))
		}));
		assert_noop!(Jobs::leave_job(RuntimeOrigin::signed(P1), id), Error::<Test>::JobEnded);
		check_invariants();
	});
}

#[test]
fn cancel_refunds_what_is_unspent() {
	new_test_ext().execute_with(|| {
		let open = create(spec());
		assert_ok!(Jobs::cancel_job(RuntimeOrigin::signed(BUYER), open));
		assert_eq!(status(open), JobStatus::Cancelled);
		assert_eq!(escrow_held(BUYER), 0);
		// The storage deposit returns when the job's records are pruned (`expiry_tests`).
		assert_eq!(free(BUYER), ENDOWMENT - JOB_DEPOSIT);
		assert_noop!(Jobs::cancel_job(RuntimeOrigin::signed(BUYER), open), Error::<Test>::JobEnded);
		assert_noop!(Jobs::cancel_job(RuntimeOrigin::signed(BUYER), 42), Error::<Test>::UnknownJob);

		// A running job ends when its open round settles, which pays as usual.
		let id = running_job(&[P1, P2, P3]);
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P1),
			proof(id, 0, P1, 42, 100, &[P1, P2])
		));
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P2),
			proof(id, 0, P2, 42, 100, &[P1, P2])
		));
		let p1 = free(P1);
		assert_ok!(Jobs::cancel_job(RuntimeOrigin::signed(BUYER), id));
		assert_eq!(status(id), JobStatus::Running);
		assert!(job_events().contains(&Event::CancelScheduled { job: id, round: 0 }));
		advance(ROUND_BLOCKS);
		assert_eq!(free(P1) - p1, REWARD / 3);
		let job = JobsMap::<Test>::get(id).unwrap();
		assert_eq!(job.status, JobStatus::Cancelled);
		assert_eq!(job.held(), 0);
		assert_eq!(job.refunded, job.funded - job.paid - job.fees);
		assert!(Rounds::<Test>::get(id).is_none());
		assert!(!pallet_providers::Providers::<Test>::get(P3).unwrap().in_jobs());
		assert_noop!(
			Jobs::submit_proof(RuntimeOrigin::signed(P3), proof(id, 1, P3, 42, 100, &[])),
			Error::<Test>::NotRunning
		);
		check_invariants();
	});
}

#[test]
fn leaving_keeps_the_round_threshold_and_refunds_the_slot() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		assert_noop!(Jobs::leave_job(RuntimeOrigin::signed(P4), id), Error::<Test>::NotParticipant);
		assert_ok!(Jobs::leave_job(RuntimeOrigin::signed(P3), id));
		assert_eq!(job_events(), vec![Event::Left { job: id, who: P3 }]);
		assert!(!pallet_providers::Providers::<Test>::get(P3).unwrap().in_jobs());
		// Even a proof P3 signed before leaving is not paid.
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P3),
			proof(id, 0, P3, 42, 100, &[P1, P2, P3])
		));
		deliver(id, 0, &[P1, P2]);
		let summary = RoundResults::<Test>::get(id, 0).unwrap();
		assert_eq!(summary.paid_participants, 2);
		assert_eq!(summary.paid, REWARD * 2 / 3);
		// The next round has only the two that stayed.
		assert_eq!(Rounds::<Test>::get(id).unwrap().members.len(), 2);
		check_invariants();
	});
}

#[test]
fn equivocation_is_slashed_rewarded_and_removed_once() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		let first = proof(id, 0, P1, 42, 100, &[P1, P2]);
		let second = proof(id, 0, P1, 43, 100, &[P1, P2]);
		let report = |a, b| Jobs::report_equivocation(RuntimeOrigin::signed(REPORTER), a, b);
		assert_noop!(
			report(first.clone(), proof(id, 1, P1, 43, 100, &[])),
			Error::<Test>::DifferentSlots
		);
		assert_noop!(
			report(first.clone(), proof(id, 0, P2, 43, 100, &[])),
			Error::<Test>::DifferentSlots
		);
		// The same proof signed twice (sr25519 signatures differ) is not an offence.
		assert_noop!(report(first.clone(), sign(first.proof.clone())), Error::<Test>::SameProof);
		let mut forged = second.clone();
		forged.signature = account_key(P2).sign(b"x").0;
		assert_noop!(report(first.clone(), forged), Error::<Test>::BadSignature);

		punished_for_equivocation(id, || report(first.clone(), second.clone()));
		assert_noop!(report(first, second), Error::<Test>::AlreadyReported);
		check_invariants();
	});
}

#[test]
fn a_participant_missing_rounds_is_removed_and_lightly_slashed() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		let buyer = free(BUYER);
		for round in 0..MAX_MISSED {
			deliver(id, round, &[P1, P2]);
			advance(1);
		}
		assert!(!Participants::<Test>::contains_key(id, P3));
		let slashed = STAKE / 10;
		assert_eq!(pallet_providers::Providers::<Test>::get(P3).unwrap().stake, STAKE - slashed);
		let slashed_event = System::events().into_iter().any(|r| {
			r.event
				== RuntimeEvent::Providers(pallet_providers::Event::Slashed {
					who: P3,
					reason: SlashReason::Liveness,
					amount: slashed,
					to_recipients: 0,
				})
		});
		assert!(slashed_event);
		let events = job_events();
		assert!(events.contains(&Event::Removed {
			job: id,
			who: P3,
			reason: RemovalReason::Liveness
		}));
		// The buyer gets the refunded slots, and no share of the slash: it must not profit
		// from its own job's members missing rounds (it could stuff blocks to cause that).
		let refunds: Balance =
			(0..MAX_MISSED).map(|r| RoundResults::<Test>::get(id, r).unwrap().refunded).sum();
		assert_eq!(free(BUYER) - buyer, refunds);
		assert_eq!(JobsMap::<Test>::get(id).unwrap().participants, 2);
		check_invariants();
	});
}

#[test]
fn settlement_work_per_block_is_bounded() {
	new_test_ext().execute_with(|| {
		let jobs: Vec<_> =
			[[P1, P2], [P3, P4], [15, 16]].iter().map(|ps| running_job(ps)).collect();
		assert_eq!(Agenda::<Test>::get(1 + ROUND_BLOCKS).len(), 3, "all three are due together");

		run_to_block(1 + ROUND_BLOCKS);
		let settled = jobs.iter().filter(|id| RoundResults::<Test>::get(**id, 0).is_some()).count();
		assert_eq!(settled, 2, "on_initialize settles MaxSettlementsPerBlock rounds");
		let late = *jobs.iter().find(|id| RoundResults::<Test>::get(**id, 0).is_none()).unwrap();
		// Its deadline passed: no more proofs.
		assert_noop!(
			Jobs::submit_proof(RuntimeOrigin::signed(P1), proof(late, 0, P1, 42, 1, &[])),
			Error::<Test>::RoundClosed
		);
		// on_idle with room settles the rest in the same block.
		use polkadot_sdk::polkadot_sdk_frame::traits::Hooks;
		let used = <crate::Pallet<Test> as Hooks<u64>>::on_idle(1 + ROUND_BLOCKS, Weight::MAX);
		assert!(used.ref_time() > 0);
		assert!(RoundResults::<Test>::get(late, 0).is_some());
		// on_idle without room does nothing.
		let none = <crate::Pallet<Test> as Hooks<u64>>::on_idle(1 + ROUND_BLOCKS, Weight::zero());
		assert_eq!(none, Weight::zero());
		check_invariants();
	});
}

#[test]
fn view_functions_read_jobs_rounds_and_rewards() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2]);
		let open = create(spec());
		deliver(id, 0, &[P1, P2]);
		let view = Jobs::job(id).unwrap();
		assert_eq!(view.held, 2 * ROUND_ESCROW);
		assert_eq!(view.round.unwrap().index, 1);
		assert_eq!(Jobs::jobs(0, 10), vec![(id, JobStatus::Running), (open, JobStatus::Open)]);
		assert_eq!(Jobs::jobs(open, 10), vec![(open, JobStatus::Open)]);
		let participants = Jobs::participants(id);
		assert_eq!(participants.len(), 2);
		assert!(participants.iter().all(|(_, p)| p.earned == REWARD / 2));
		assert_eq!(Jobs::round_result(id, 0).unwrap().paid, REWARD);
		assert!(Jobs::round_proofs(id).is_empty());
		assert_ok!(Jobs::submit_proof(
			RuntimeOrigin::signed(P1),
			proof(id, 1, P1, 42, 100, &[P1, P2])
		));
		assert_eq!(Jobs::round_proofs(id).len(), 1);
		assert!(Jobs::job(99).is_none());
	});
}

#[test]
fn the_rounding_dust_of_a_split_goes_back_to_the_buyer() {
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		let buyer = free(BUYER);
		deliver(id, 0, &[P1, P2, P3]);
		// A third of the reward each, rounded down: a unit of the reward is not paid.
		let paid = 3 * (REWARD / 3);
		assert_eq!(paid, REWARD - 1);
		let fee = paid / 10;
		let summary = RoundResults::<Test>::get(id, 0).unwrap();
		assert_eq!((summary.paid, summary.fee), (paid, fee));
		assert_eq!(summary.refunded, ROUND_ESCROW - paid - fee);
		assert_eq!(free(BUYER) - buyer, ROUND_ESCROW - paid - fee);
		check_invariants();
	});
}

#[test]
fn calls_whose_cost_grows_with_members_charge_what_the_job_allows() {
	use crate::weights::WeightInfo;
	use polkadot_sdk::polkadot_sdk_frame::deps::frame_support::dispatch::GetDispatchInfo;
	new_test_ext().execute_with(|| {
		// spec() allows 4 providers; the chain's bound is MAX_PARTICIPANTS (8).
		let id = create(spec());
		register(P1);
		let join_extra = crate::membership::join_extra_weight::<Test>();
		let declared = crate::Call::<Test>::join_job { job: id }.get_dispatch_info().call_weight;
		assert_eq!(declared, <() as WeightInfo>::join_job(MAX_PARTICIPANTS) + join_extra);
		let post = Jobs::join_job(RuntimeOrigin::signed(P1), id).unwrap();
		assert_eq!(post.actual_weight, Some(<() as WeightInfo>::join_job(4) + join_extra));
		assert!(post.actual_weight.unwrap().all_lte(declared));
		let post = Jobs::cancel_job(RuntimeOrigin::signed(BUYER), id).unwrap();
		let cancel_extra = crate::rounds::cancel_extra_weight::<Test>();
		assert_eq!(post.actual_weight, Some(<() as WeightInfo>::cancel_job(4) + cancel_extra));
	});
}

#[test]
fn a_proof_that_settles_nothing_is_charged_its_recording_only() {
	use crate::weights::WeightInfo;
	use polkadot_sdk::polkadot_sdk_frame::deps::frame_support::dispatch::GetDispatchInfo;
	new_test_ext().execute_with(|| {
		let id = running_job(&[P1, P2, P3]);
		// spec() allows 4 providers: what the calls are charged for afterwards.
		let bound = Jobs::members_bound(id);
		assert_eq!(bound, 4);
		let all = [P1, P2, P3];
		let call = crate::Call::<Test>::submit_proof { proof: proof(id, 0, P1, 42, 100, &all) };
		let declared = call.get_dispatch_info().call_weight;
		let reschedule = crate::agenda::search_weight::<Test>(AGENDA_REACH);
		let settling = <() as WeightInfo>::submit_proof(MAX_PARTICIPANTS)
			+ reschedule
			+ crate::agenda::settle_search_weight::<Test>();
		assert_eq!(declared, settling);
		let recorded = <() as WeightInfo>::record_proof(bound);
		let settled = <() as WeightInfo>::submit_proof(bound)
			+ reschedule
			+ crate::agenda::settle_search_weight::<Test>();
		assert!(recorded.all_lt(settled), "recording {recorded:?}, settling {settled:?}");
		// The first proof is recorded only; the one completing the quorum also searches for
		// the earlier block its settlement moves to.
		for (who, charged) in [(P1, recorded), (P2, recorded + reschedule)] {
			let post =
				Jobs::submit_proof(RuntimeOrigin::signed(who), proof(id, 0, who, 42, 100, &all))
					.unwrap();
			assert_eq!(post.actual_weight, Some(charged));
		}
		assert!(crate::Rounds::<Test>::get(id).unwrap().quorum.is_some());
		assert!(!RoundResults::<Test>::contains_key(id, 0));
		// The last settles the round and pays for it.
		let post =
			Jobs::submit_proof(RuntimeOrigin::signed(P3), proof(id, 0, P3, 42, 100, &all)).unwrap();
		assert_eq!(post.actual_weight, Some(settled));
		assert!(RoundResults::<Test>::contains_key(id, 0));
		assert!(settled.all_lte(declared));
	});
}
