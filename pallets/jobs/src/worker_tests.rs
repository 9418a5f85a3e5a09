//! The off-chain worker's reports: authorization (every rejection), their effect on health
//! records and overdue settlement, and a whole worker run against offchain test
//! externalities with a mocked HTTP probe and a transaction pool.

use crate::{
	mock::*,
	worker::{NOT_A_PROBE_BLOCK, NOT_A_PROBE_TARGET, PROBED_TWICE},
	Agenda, Call, Event, LastWorkerReport, Pallet, WorkerReportOf, NOTHING_TO_REPORT,
};
use codec::Decode;
use grid_primitives::work::{worker_report_payload, ProbeResult};
use pallet_providers::HealthRecords;
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{
		frame_support::{assert_ok, dispatch::GetDispatchInfo},
		sp_core::offchain::{testing, OffchainDbExt, OffchainWorkerExt, TransactionPoolExt},
		sp_runtime::{
			testing::{TestSignature, UintAuthorityId},
			traits::Dispatchable,
			BoundedVec, RuntimeAppPublic,
		},
	},
	prelude::*,
	traits::fungible::Mutate,
};

fn report(
	validator: u64,
	at: u64,
	probes: &[(AccountId, bool, u32)],
	settle: bool,
) -> WorkerReportOf<Test> {
	let probes = probes
		.iter()
		.map(|&(provider, ok, latency_ms)| ProbeResult { provider, ok, latency_ms })
		.collect();
	WorkerReportOf::<Test> {
		validator: UintAuthorityId(validator),
		at,
		probes: BoundedVec::truncate_from(probes),
		settle,
	}
}

fn signed(report: &WorkerReportOf<Test>) -> TestSignature {
	let payload = worker_report_payload(&System::block_hash(0), report);
	report.validator.sign(&payload).expect("test keys sign")
}

fn authorize(
	report: &WorkerReportOf<Test>,
	signature: &TestSignature,
) -> Result<(), TransactionValidityError> {
	Pallet::<Test>::authorize_worker_report(TransactionSource::External, report, signature)
		.map(|_| ())
}

fn dispatch(report: WorkerReportOf<Test>) -> DispatchResultWithPostInfo {
	let signature = signed(&report);
	let call = RuntimeCall::Jobs(Call::submit_worker_report { report, signature });
	call.dispatch(frame_system::RawOrigin::Authorized.into())
}

#[test]
fn a_signed_recent_report_from_a_validator_is_authorized() {
	new_test_ext().execute_with(|| {
		register(P1);
		run_to_block(7);
		// Made at probe blocks (multiples of PROBE_INTERVAL), the newest and the oldest
		// still recent.
		let good = report(VALIDATOR, 6, &[(P1, true, 12)], false);
		assert_ok!(authorize(&good, &signed(&good)));
		let older = report(VALIDATOR + 1, 7 - REPORT_LONGEVITY, &[(P1, true, 12)], false);
		assert_ok!(authorize(&older, &signed(&older)));
	});
}

#[test]
fn bad_reports_are_refused_with_a_reason() {
	new_test_ext().execute_with(|| {
		register(P1);
		run_to_block(13);
		let probes = [(P1, true, 12)];
		let invalid = |e| TransactionValidityError::Invalid(e);

		let stranger = report(7, 12, &probes, false);
		assert_eq!(
			authorize(&stranger, &signed(&stranger)),
			Err(invalid(InvalidTransaction::BadSigner))
		);

		let future = report(VALIDATOR, 15, &probes, false);
		assert_eq!(authorize(&future, &signed(&future)), Err(invalid(InvalidTransaction::Future)));

		let stale = report(VALIDATOR, 13 - REPORT_LONGEVITY - 1, &probes, false);
		assert_eq!(authorize(&stale, &signed(&stale)), Err(invalid(InvalidTransaction::Stale)));

		// Probes only at probe blocks, each provider once, only providers the round covers.
		let between = report(VALIDATOR, 13, &probes, false);
		assert_eq!(
			authorize(&between, &signed(&between)),
			Err(invalid(InvalidTransaction::Custom(NOT_A_PROBE_BLOCK)))
		);
		let twice = report(VALIDATOR, 12, &[(P1, false, 0), (P1, false, 0)], false);
		assert_eq!(
			authorize(&twice, &signed(&twice)),
			Err(invalid(InvalidTransaction::Custom(PROBED_TWICE)))
		);
		let unknown = report(VALIDATOR, 12, &[(P1, true, 12), (99, false, 0)], false);
		assert_eq!(
			authorize(&unknown, &signed(&unknown)),
			Err(invalid(InvalidTransaction::Custom(NOT_A_PROBE_TARGET)))
		);

		let good = report(VALIDATOR, 12, &probes, false);
		let forged = report(VALIDATOR + 1, 12, &probes, false);
		assert_eq!(authorize(&good, &signed(&forged)), Err(invalid(InvalidTransaction::BadProof)));
		let mut altered = good.clone();
		altered.probes[0].ok = false;
		assert_eq!(authorize(&altered, &signed(&good)), Err(invalid(InvalidTransaction::BadProof)));

		let empty = report(VALIDATOR, 12, &[], true);
		assert_eq!(
			authorize(&empty, &signed(&empty)),
			Err(invalid(InvalidTransaction::Custom(NOTHING_TO_REPORT))),
			"asking to settle with nothing overdue is spam"
		);

		// Once applied, the same report (or an older one) is a duplicate.
		assert_ok!(dispatch(good.clone()));
		assert_eq!(authorize(&good, &signed(&good)), Err(invalid(InvalidTransaction::Stale)));
		let earlier = report(VALIDATOR, 9, &probes, false);
		assert_eq!(authorize(&earlier, &signed(&earlier)), Err(invalid(InvalidTransaction::Stale)));
	});
}

/// A hostile validator reports a competitor down in every block it can, to shut it out of
/// jobs that ask for health. It gets its reports in only at probe blocks, only for the rounds
/// that cover the provider and once each: exactly as often as an honest validator reporting
/// the provider up, so the provider keeps half the say over its uptime with two validators.
#[test]
fn a_validator_cannot_flood_a_providers_health_with_failed_probes() {
	new_test_ext().execute_with(|| {
		// 32 providers: a rotation of two probe rounds, so the victim is covered every other.
		for who in 200..232 {
			Balances::set_balance(&who, ENDOWMENT);
			register(who);
		}
		let victim = 200;
		let (mut covered, mut accepted) = (0, 0);
		for at in 1..=60u64 {
			run_to_block(at);
			let hostile = report(VALIDATOR + 1, at, &[(victim, false, 0)], false);
			if authorize(&hostile, &signed(&hostile)).is_ok() {
				accepted += 1;
				assert_ok!(dispatch(hostile));
			}
			// Doubling up inside one report never gets in.
			let doubled =
				report(VALIDATOR + 1, at, &[(victim, false, 0), (victim, false, 0)], false);
			assert!(authorize(&doubled, &signed(&doubled)).is_err());
			// The honest validator reports what its worker finds: the round's targets.
			let targets =
				<crate::WorkerHost<Test> as grid_offchain_worker::Chain>::probe_targets(at);
			if targets.iter().any(|(who, _)| *who == victim) {
				covered += 1;
				let honest = report(VALIDATOR, at, &[(victim, true, 20)], false);
				assert_ok!(authorize(&honest, &signed(&honest)));
				assert_ok!(dispatch(honest));
			}
		}
		// 20 probe blocks in 60, half of them the victim's rounds.
		assert_eq!(covered, 10, "the victim is covered every other probe round");
		assert_eq!(accepted, covered, "the hostile validator got in only where the honest one did");
		let health = HealthRecords::<Test>::get(victim);
		assert_eq!((health.probes_ok, health.probes_failed), (10, 10));
	});
}

#[test]
fn only_the_authorized_origin_may_dispatch_a_report() {
	new_test_ext().execute_with(|| {
		let r = report(VALIDATOR, 1, &[(P1, true, 1)], false);
		let signature = signed(&r);
		let call = RuntimeCall::Jobs(Call::submit_worker_report { report: r, signature });
		assert!(call.clone().dispatch(RuntimeOrigin::signed(P1)).is_err());
		assert!(call.dispatch(RuntimeOrigin::none()).is_err());
	});
}

#[test]
fn probe_results_feed_the_providers_health() {
	new_test_ext().execute_with(|| {
		register(P1);
		register(P2);
		run_to_block(3);
		job_events();
		assert_ok!(dispatch(report(
			VALIDATOR,
			3,
			&[(P1, true, 12), (P2, false, 2_000), (99, true, 1)],
			false
		)));
		let (h1, h2) = (HealthRecords::<Test>::get(P1), HealthRecords::<Test>::get(P2));
		assert_eq!((h1.probes_ok, h1.probes_failed), (1, 0));
		assert_eq!(h1.last_probe.map(|p| p.latency_ms), Some(12));
		assert_eq!((h2.probes_ok, h2.probes_failed), (0, 1));
		assert!(!HealthRecords::<Test>::contains_key(99), "unknown accounts are ignored");
		assert_eq!(LastWorkerReport::<Test>::get(UintAuthorityId(VALIDATOR)), Some(3));
		assert_eq!(
			job_events(),
			vec![Event::WorkerReported {
				validator: UintAuthorityId(VALIDATOR),
				at: 3,
				probes: 3,
				settled: 0
			}]
		);
	});
}

/// Three jobs whose rounds are all due at the same block; returns that block.
fn three_rounds_due_together() -> u64 {
	for (i, buyer) in [BUYER, OTHER_BUYER, REPORTER].into_iter().enumerate() {
		let mut s = spec();
		(s.min_providers, s.challenge_window) = (1, 0);
		let id = crate::NextJobId::<Test>::get();
		assert_ok!(Jobs::create_job(RuntimeOrigin::signed(buyer), Box::new(s), Default::default()));
		let who = P1 + i as u64;
		register(who);
		assert_ok!(join(id, who));
	}
	let due = 1 + ROUND_BLOCKS;
	assert_eq!(Agenda::<Test>::get(due).len(), 3);
	due
}

#[test]
fn a_report_settles_rounds_the_hooks_could_not_reach() {
	new_test_ext().execute_with(|| {
		let due = three_rounds_due_together();
		// The due block's on_initialize settles MaxSettlementsPerBlock (2) and, the block
		// being full, on_idle gets no weight.
		System::set_block_number(due);
		Jobs::on_initialize(due);
		Jobs::on_idle(due, Weight::zero());
		assert_eq!(Agenda::<Test>::get(due).len(), 1);

		System::set_block_number(due + 1);
		assert!(crate::worker::overdue::<Test>(due + 1));
		let r = report(VALIDATOR, due + 1, &[], true);
		assert_ok!(authorize(&r, &signed(&r)));
		job_events();
		assert_ok!(dispatch(r));
		assert!(Agenda::<Test>::iter_keys().all(|block| block > due + 1));
		assert!(job_events().contains(&Event::WorkerReported {
			validator: UintAuthorityId(VALIDATOR),
			at: due + 1,
			probes: 0,
			settled: 1,
		}));
		check_invariants();
	});
}

/// A backlog makes every validator ask to settle every block, and reports are free and rank
/// above users' transactions: a second settling report in a block is refused (unless it
/// carries probes, which are recorded while it settles nothing), and a report pays only what
/// its pass worked, so validators' reports cannot crowd users out of the block.
#[test]
fn validators_cannot_fill_a_block_with_settling_reports() {
	new_test_ext().execute_with(|| {
		// Three rounds due in a block that had no room for them: all three are overdue next
		// block, and a pass works at most MaxSettlementsPerBlock (2).
		let due = three_rounds_due_together();
		run_to_block(due - 1);
		let now = due + 1;
		System::set_block_number(now);
		let first = report(VALIDATOR, now, &[], true);
		let second = report(VALIDATOR + 1, now, &[], true);
		assert_ok!(authorize(&first, &signed(&first)));
		// Before the first lands, both may.
		assert_ok!(authorize(&second, &signed(&second)));
		let charged = {
			let signature = signed(&first);
			RuntimeCall::Jobs(Call::submit_worker_report { report: first.clone(), signature })
				.get_dispatch_info()
				.call_weight
		};
		job_events();
		let post = dispatch(first).expect("the first report settles");
		let used = post.actual_weight.expect("refunded to what it worked");
		assert!(used.all_lte(charged));
		assert!(job_events().iter().any(|e| matches!(e, Event::WorkerReported { settled: 2, .. })));
		assert!(crate::worker::overdue::<Test>(now), "one round is still overdue");

		assert_eq!(
			authorize(&second, &signed(&second)),
			Err(TransactionValidityError::Invalid(InvalidTransaction::Custom(NOTHING_TO_REPORT))),
			"a second settling report in the block is refused"
		);
		// One that carries probes (made at the last probe block) is still taken for them,
		// and settles nothing.
		let probe_block = now - now % PROBE_INTERVAL;
		let with_probe = report(VALIDATOR + 1, probe_block, &[(P1, true, 5)], true);
		assert_ok!(authorize(&with_probe, &signed(&with_probe)));
		let post = dispatch(with_probe).expect("its probe is recorded");
		assert!(job_events()
			.iter()
			.any(|e| matches!(e, Event::WorkerReported { probes: 1, settled: 0, .. })));
		assert!(post.actual_weight.expect("refunded").ref_time() < used.ref_time());
		assert!(crate::worker::overdue::<Test>(now));

		// The next block takes one settling report again; it works one item of the two it
		// was charged for, and pays for one.
		System::set_block_number(now + 1);
		let next = report(VALIDATOR + 1, now + 1, &[], true);
		assert_ok!(authorize(&next, &signed(&next)));
		let post = dispatch(next).expect("settles the last round");
		assert!(post.actual_weight.expect("refunded").ref_time() < charged.ref_time());
		assert!(!crate::worker::overdue::<Test>(now + 1));
		check_invariants();
	});
}

#[test]
fn the_report_weight_covers_overdue_settlement() {
	new_test_ext().execute_with(|| {
		let plain = report(VALIDATOR, 1, &[(P1, true, 1)], false);
		let settling = report(VALIDATOR, 1, &[(P1, true, 1)], true);
		let weight = |r: WorkerReportOf<Test>| {
			let signature = signed(&r);
			RuntimeCall::Jobs(Call::submit_worker_report { report: r, signature })
				.get_dispatch_info()
				.call_weight
		};
		assert!(weight(settling).ref_time() > weight(plain).ref_time());
	});
}

#[test]
fn a_worker_run_probes_and_submits_a_signed_report() {
	let mut ext = new_test_ext();
	let (offchain, _) = testing::TestOffchainExt::new();
	let (pool, pool_state) = testing::TestTransactionPoolExt::new();
	ext.register_extension(OffchainDbExt::new(offchain.clone()));
	ext.register_extension(OffchainWorkerExt::new(offchain.clone()));
	ext.register_extension(TransactionPoolExt::new(pool));
	offchain.0.write().expect_request(testing::PendingRequest {
		method: "GET".into(),
		uri: "http://127.0.0.1:9000/health".into(),
		response: Some(b"ok".to_vec()),
		sent: true,
		..Default::default()
	});
	UintAuthorityId::set_all_keys(vec![VALIDATOR + 1, 55]);
	ext.execute_with(|| {
		register(P1);
		// Not a probe block: nothing to do.
		Jobs::offchain_worker(PROBE_INTERVAL + 1);
		assert!(pool_state.read().transactions.is_empty());
		run_to_block(PROBE_INTERVAL * 2);
		Jobs::offchain_worker(PROBE_INTERVAL * 2);
		let txs = &pool_state.read().transactions;
		assert_eq!(txs.len(), 1);
		let xt = Extrinsic::decode(&mut &txs[0][..]).expect("an extrinsic");
		let RuntimeCall::Jobs(Call::submit_worker_report { report, signature }) = xt.function
		else {
			panic!("not a worker report: {:?}", xt.function)
		};
		assert_eq!(report.validator, UintAuthorityId(VALIDATOR + 1), "the local validator key");
		assert_eq!(report.at, PROBE_INTERVAL * 2);
		assert_eq!(report.probes.len(), 1);
		assert!(report.probes[0].ok && report.probes[0].provider == P1);
		assert_ok!(authorize(&report, &signature));
	});
}

#[test]
fn a_node_without_a_validator_key_submits_nothing() {
	let mut ext = new_test_ext();
	let (offchain, _) = testing::TestOffchainExt::new();
	let (pool, pool_state) = testing::TestTransactionPoolExt::new();
	ext.register_extension(OffchainDbExt::new(offchain.clone()));
	ext.register_extension(OffchainWorkerExt::new(offchain));
	ext.register_extension(TransactionPoolExt::new(pool));
	UintAuthorityId::set_all_keys(vec![55u64]);
	ext.execute_with(|| {
		register(P1);
		run_to_block(PROBE_INTERVAL);
		Jobs::offchain_worker(PROBE_INTERVAL);
		assert!(pool_state.read().transactions.is_empty());
	});
}
