//! The worker against offchain test externalities with mocked HTTP responses.

use super::*;
use core::cell::RefCell;
use polkadot_sdk::{
	sp_core::offchain::{testing, OffchainDbExt, OffchainWorkerExt},
	sp_io::TestExternalities,
};
use std::vec;

type Report = WorkerReport<u64, u32, u8>;

std::thread_local! {
	static VALIDATOR: RefCell<Option<u8>> = const { RefCell::new(Some(7)) };
	static TARGETS: RefCell<Vec<(u64, Vec<u8>)>> = const { RefCell::new(Vec::new()) };
	static OVERDUE: RefCell<bool> = const { RefCell::new(false) };
	static SENT: RefCell<Vec<Report>> = const { RefCell::new(Vec::new()) };
	static POOL_FULL: RefCell<bool> = const { RefCell::new(false) };
}

struct TestChain;

impl Chain for TestChain {
	type AccountId = u64;
	type BlockNumber = u32;
	type Authority = u8;

	fn local_validator() -> Option<u8> {
		VALIDATOR.with(|v| *v.borrow())
	}
	fn probe_targets(_now: u32) -> Vec<(u64, Vec<u8>)> {
		TARGETS.with(|t| t.borrow().clone())
	}
	fn overdue(_now: u32) -> bool {
		OVERDUE.with(|o| *o.borrow())
	}
	fn submit(report: Report) -> Result<(), SubmitError> {
		if POOL_FULL.with(|p| *p.borrow()) {
			return Err(SubmitError::Pool);
		}
		SENT.with(|s| s.borrow_mut().push(report));
		Ok(())
	}
}

/// Test externalities with offchain extensions; the second value gives access to their state.
fn ext() -> (TestExternalities, testing::TestOffchainExt) {
	let (offchain, _) = testing::TestOffchainExt::new();
	let mut ext = TestExternalities::default();
	ext.register_extension(OffchainDbExt::new(offchain.clone()));
	ext.register_extension(OffchainWorkerExt::new(offchain.clone()));
	(ext, offchain)
}

/// A GET of `url` answered with 200.
fn expect_get(url: &str) -> testing::PendingRequest {
	testing::PendingRequest {
		method: "GET".into(),
		uri: url.into(),
		response: Some(b"ok".to_vec()),
		sent: true,
		..Default::default()
	}
}

fn sent() -> Vec<Report> {
	SENT.with(|s| s.borrow_mut().drain(..).collect())
}

fn targets(list: Vec<(u64, &str)>) {
	TARGETS.with(|t| {
		*t.borrow_mut() = list.into_iter().map(|(a, u)| (a, u.as_bytes().to_vec())).collect()
	});
}

#[test]
fn probes_endpoints_and_reports_them_signed_by_the_validator() {
	let (mut ext, state) = ext();
	{
		let mut s = state.0.write();
		s.expect_request(expect_get("http://127.0.0.1:9001/health"));
		s.expect_request(expect_get("http://127.0.0.1:9002/health"));
	}
	targets(vec![
		(1, "http://127.0.0.1:9001/health"),
		(2, "http://127.0.0.1:9002/health"),
		(3, "ftp://x"),
	]);
	ext.execute_with(|| {
		assert_eq!(run::<TestChain>(10), Outcome::Submitted { probed: 3, up: 2, settle: false });
	});
	let reports = sent();
	assert_eq!(reports.len(), 1);
	let report = &reports[0];
	assert_eq!((report.validator, report.at, report.settle), (7, 10, false));
	let mut probes = report.probes.to_vec();
	probes.sort_by_key(|p| p.provider);
	assert_eq!(
		probes.iter().map(|p| (p.provider, p.ok)).collect::<Vec<_>>(),
		vec![(1, true), (2, true), (3, false)]
	);
	assert_eq!(probes[2].latency_ms, PROBE_TIMEOUT_MS as u32, "a bad URL counts as a timeout");
}

#[test]
fn malformed_endpoints_are_down_without_a_request() {
	let (mut ext, _state) = ext();
	targets(vec![(1, "not a url"), (2, "")]);
	TARGETS.with(|t| t.borrow_mut().push((3, vec![0xff, 0xfe])));
	ext.execute_with(|| {
		assert_eq!(run::<TestChain>(10), Outcome::Submitted { probed: 3, up: 0, settle: false });
	});
	assert!(sent()[0].probes.iter().all(|p| !p.ok));
}

#[test]
fn overdue_work_is_reported_even_without_probes() {
	let (mut ext, _state) = ext();
	targets(vec![]);
	OVERDUE.with(|o| *o.borrow_mut() = true);
	ext.execute_with(|| {
		assert_eq!(run::<TestChain>(11), Outcome::Submitted { probed: 0, up: 0, settle: true });
	});
	OVERDUE.with(|o| *o.borrow_mut() = false);
	assert!(sent()[0].settle);
}

#[test]
fn nothing_to_do_sends_nothing() {
	let (mut ext, _state) = ext();
	targets(vec![]);
	ext.execute_with(|| assert_eq!(run::<TestChain>(12), Outcome::Idle));
	assert!(sent().is_empty());
}

#[test]
fn a_node_without_a_validator_key_does_nothing() {
	let (mut ext, _state) = ext();
	targets(vec![(1, "http://127.0.0.1:1/health")]);
	VALIDATOR.with(|v| *v.borrow_mut() = None);
	ext.execute_with(|| assert_eq!(run::<TestChain>(13), Outcome::NotValidator));
	VALIDATOR.with(|v| *v.borrow_mut() = Some(7));
	assert!(sent().is_empty());
}

#[test]
fn a_refused_submission_is_reported() {
	let (mut ext, _state) = ext();
	targets(vec![]);
	OVERDUE.with(|o| *o.borrow_mut() = true);
	POOL_FULL.with(|p| *p.borrow_mut() = true);
	ext.execute_with(|| assert_eq!(run::<TestChain>(14), Outcome::Failed(SubmitError::Pool)));
	assert!(sent().is_empty());
}

#[test]
fn reports_carry_at_most_the_bound() {
	let (mut ext, _state) = ext();
	let many: Vec<(u64, Vec<u8>)> = (0..40).map(|i| (i, b"bad".to_vec())).collect();
	TARGETS.with(|t| *t.borrow_mut() = many);
	ext.execute_with(|| {
		let bound = <MaxProbesPerReport as Get<u32>>::get();
		assert_eq!(
			run::<TestChain>(15),
			Outcome::Submitted { probed: bound, up: 0, settle: false }
		);
	});
	assert_eq!(sent()[0].probes.len() as u32, <MaxProbesPerReport as Get<u32>>::get());
}
