//! Property tests: random sequences of calls from several buyers and providers, with blocks
//! passing in between, checking after every step that
//! - every job's escrow adds up (paid + fees + refunded + held == funded) and matches the
//!   buyers' holds, and the registry's held stake matches its records (`do_try_state`);
//! - total issuance changes only by what slashes burned.
//!
//! Separately, random payout splits never pay more than the qualified members' slots, stay
//! proportional to the weights and lose only rounding.
//!
//! A small deterministic generator keeps failures reproducible: the failing seed is printed.

use crate::{mock::*, Challenges, Contributions, Jobs as JobsMap, Rounds};
use grid_primitives::work::Verdict;
use polkadot_sdk::polkadot_sdk_frame::{
	deps::frame_support::traits::{Hooks, UnfilteredDispatchable},
	prelude::*,
};

/// xorshift64*: tiny, deterministic, good enough to pick calls.
struct Rng(u64);

impl Rng {
	fn next(&mut self) -> u64 {
		self.0 ^= self.0 >> 12;
		self.0 ^= self.0 << 25;
		self.0 ^= self.0 >> 27;
		self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
	}

	fn below(&mut self, n: u64) -> u64 {
		self.next() % n.max(1)
	}

	fn pick<T: Copy>(&mut self, items: &[T]) -> T {
		items[self.below(items.len() as u64) as usize]
	}
}

const BUYERS: [AccountId; 2] = [BUYER, OTHER_BUYER];
const PROVIDERS: [AccountId; 6] = [11, 12, 13, 14, 15, 16];

fn dispatch(who: AccountId, call: crate::Call<Test>) {
	// Failures are expected (random calls are often invalid); they must change nothing, which
	// the invariants and the storage-layer semantics of dispatch guarantee.
	let _ = call.dispatch_bypass_filter(RuntimeOrigin::signed(who));
}

fn random_spec(rng: &mut Rng) -> grid_primitives::job::JobSpec<Balance, u64> {
	let mut s = spec();
	s.rounds = 1 + rng.below(4) as u32;
	s.reward_per_round = 1 + rng.below(5_000) as u128;
	s.min_providers = 1 + rng.below(3) as u32;
	s.max_providers = s.min_providers + rng.below(3) as u32;
	s.training.round_blocks = 2 + rng.below(5);
	s
}

fn random_job(rng: &mut Rng) -> u64 {
	rng.below(crate::NextJobId::<Test>::get() + 1)
}

/// A proof for the job's open round (or a wrong one), attesting one of two results.
fn random_proof(
	rng: &mut Rng,
	job: u64,
	who: AccountId,
) -> Box<grid_primitives::job::SignedProof<AccountId>> {
	let round = Rounds::<Test>::get(job).map(|r| r.index).unwrap_or(0) + (rng.below(8) == 0) as u32;
	let result = if rng.below(5) == 0 { 43 } else { 42 };
	let received: Vec<_> = PROVIDERS.iter().copied().filter(|_| rng.below(4) != 0).collect();
	proof(job, round, who, result, rng.below(300), &received)
}

fn step(rng: &mut Rng) {
	let job = random_job(rng);
	let provider = rng.pick(&PROVIDERS);
	match rng.below(16) {
		0 => dispatch(rng.pick(&BUYERS), crate::Call::create_job { spec: random_spec(rng) }),
		1 => dispatch(rng.pick(&BUYERS), crate::Call::cancel_job { job }),
		2 | 3 => dispatch(provider, crate::Call::join_job { job }),
		4 => dispatch(provider, crate::Call::leave_job { job }),
		5..=8 => {
			let proof = random_proof(rng, job, provider);
			dispatch(rng.pick(&[provider, REPORTER]), crate::Call::submit_proof { proof });
		}
		9 => {
			let first = random_proof(rng, job, provider);
			let second = random_proof(rng, job, provider);
			dispatch(REPORTER, crate::Call::report_equivocation { first, second });
		}
		10 => {
			let now = System::block_number();
			let _ = <crate::Pallet<Test> as Hooks<u64>>::on_idle(now, Weight::MAX);
		}
		12 | 15 => {
			// Mostly a paid contribution (challengeable), sometimes anything.
			let paid: Vec<_> = Contributions::<Test>::iter_keys().collect();
			let ((job, round), accused) = match paid.is_empty() || rng.below(4) == 0 {
				true => ((job, rng.below(4) as u32), rng.pick(&PROVIDERS)),
				false => paid[rng.below(paid.len() as u64) as usize],
			};
			dispatch(provider, crate::Call::challenge { job, round, provider: accused });
		}
		13 => {
			// Mostly a committee member of an open challenge, sometimes anyone.
			let open: Vec<_> = Challenges::<Test>::iter().collect();
			let (id, voter) = match open.is_empty() || rng.below(4) == 0 {
				true => (rng.below(crate::NextChallengeId::<Test>::get() + 1), provider),
				false => {
					let (id, challenge) = &open[rng.below(open.len() as u64) as usize];
					let members: Vec<_> = challenge.committee.iter().map(|(w, _)| *w).collect();
					(*id, rng.pick(&members))
				}
			};
			let verdict = rng.pick(&[Verdict::Valid, Verdict::Invalid, Verdict::Invalid]);
			dispatch(voter, crate::Call::vote { challenge: id, verdict });
		}
		_ => advance(1 + rng.below(3)),
	}
}

/// How often the interesting paths ran, so the test shows it explored them.
#[derive(Default, Debug)]
struct Coverage {
	created: u32,
	started: u32,
	rewards: u32,
	failed_rounds: u32,
	completed: u32,
	cancelled: u32,
	equivocations: u32,
	liveness: u32,
	challenges: u32,
	frauds: u32,
	rejected: u32,
}

/// Burned by slashes since the last call (slashed minus what went to recipients); counts
/// the paths taken.
fn burned_since_last(coverage: &mut Coverage) -> Balance {
	use crate::Event as E;
	let mut burned = 0;
	for record in System::events() {
		match record.event {
			RuntimeEvent::Providers(pallet_providers::Event::Slashed {
				amount,
				to_recipients,
				..
			}) => burned += amount - to_recipients,
			RuntimeEvent::Jobs(event) => match event {
				E::JobCreated { .. } => coverage.created += 1,
				E::JobStarted { .. } => coverage.started += 1,
				E::RewardPaid { .. } => coverage.rewards += 1,
				E::RoundSettled { result_model_hash: None, .. } => coverage.failed_rounds += 1,
				E::JobCompleted { .. } => coverage.completed += 1,
				E::JobCancelled { .. } => coverage.cancelled += 1,
				E::EquivocationPunished { .. } => coverage.equivocations += 1,
				E::Removed { reason: crate::RemovalReason::Liveness, .. } => coverage.liveness += 1,
				E::ChallengeOpened { .. } => coverage.challenges += 1,
				E::ChallengeResolved { outcome, .. } => match outcome {
					crate::ChallengeOutcome::FraudProven => coverage.frauds += 1,
					crate::ChallengeOutcome::Rejected => coverage.rejected += 1,
					crate::ChallengeOutcome::Undecided => {}
				},
				_ => {}
			},
			_ => {}
		}
	}
	System::reset_events();
	burned
}

fn run(seed: u64, steps: usize, coverage: &mut Coverage) {
	new_test_ext().execute_with(|| {
		for (i, who) in PROVIDERS.iter().enumerate() {
			register_with(*who, STAKE + 500 * i as u128, 1 + 100_000 * (i as u32 % 3));
		}
		let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
		let mut expected_issuance = Balances::total_issuance();
		System::reset_events();
		for i in 0..steps {
			step(&mut rng);
			expected_issuance -= burned_since_last(coverage);
			let context = format!("seed {seed}, step {i}");
			Jobs::do_try_state().unwrap_or_else(|e| panic!("{context}: jobs: {e:?}"));
			Providers::do_try_state().unwrap_or_else(|e| panic!("{context}: providers: {e:?}"));
			assert_eq!(Balances::total_issuance(), expected_issuance, "{context}: issuance");
		}
		// Let every running job run out: each must end with nothing held.
		advance(200);
		expected_issuance -= burned_since_last(coverage);
		for (id, job) in JobsMap::<Test>::iter() {
			assert!(
				!job.status.is_live() || job.status == crate::JobStatus::Open,
				"seed {seed}: job {id} still running"
			);
		}
		Jobs::do_try_state().unwrap_or_else(|e| panic!("seed {seed}, end: {e:?}"));
		assert_eq!(
			Balances::total_issuance(),
			expected_issuance,
			"seed {seed}: issuance at the end"
		);
	});
}

#[test]
fn random_call_sequences_keep_the_invariants() {
	let mut coverage = Coverage::default();
	for seed in 0..48 {
		run(seed, 150, &mut coverage);
	}
	// Every path the invariants are about was taken, many times.
	let c = &coverage;
	let counts = [c.created, c.started, c.rewards, c.failed_rounds, c.completed, c.cancelled];
	assert!(counts.iter().all(|n| *n >= 10), "{coverage:?}");
	assert!(c.equivocations >= 10 && c.liveness >= 1, "{coverage:?}");
	assert!(c.challenges >= 5 && c.frauds >= 1 && c.rejected >= 1, "{coverage:?}");
	println!("{coverage:?}");
}

/// A reward of any size: small, mid-range or near `Balance::MAX`.
fn random_reward(rng: &mut Rng) -> Balance {
	match rng.below(3) {
		0 => rng.below(10_000) as Balance,
		1 => Balance::from(rng.next()),
		_ => Balance::MAX - Balance::from(rng.next()),
	}
}

/// Weights of any size: capped sample counts reach `u64::MAX` each (a small model, the
/// largest declared throughput, the longest round), so their sum can pass it.
fn random_weights(rng: &mut Rng, count: u64) -> Vec<u64> {
	let ceiling = match rng.below(4) {
		0 => 1_000,
		1 => 1 << 32,
		2 => u64::MAX / count.max(1),
		_ => u64::MAX,
	};
	let weight = |rng: &mut Rng| match rng.below(8) {
		0 => 0,
		1 if ceiling == u64::MAX => u64::MAX,
		_ => rng.below(ceiling),
	};
	(0..count).map(|_| weight(rng)).collect()
}

#[test]
fn payout_splits_never_pay_more_than_the_qualified_slots() {
	use polkadot_sdk::polkadot_sdk_frame::deps::sp_core::U256;
	let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
	for case in 0..20_000 {
		// Up to 64 members, the most a proof can list.
		let members = 1 + rng.below(64) as u32;
		let qualified = rng.below(u64::from(members) + 1);
		let reward = random_reward(&mut rng);
		let weights = random_weights(&mut rng, qualified);
		let amounts = crate::payout::split(reward, members, &weights);
		let context = format!("case {case}: {reward} among {members}, weights {weights:?}");

		assert_eq!(amounts.len(), weights.len(), "{context}");
		let paid = amounts.iter().fold(U256::zero(), |sum, a| sum + U256::from(*a));
		// Never more than the qualified members' slots: reward × qualified / members.
		let slots = U256::from(reward) * U256::from(qualified) / U256::from(members);
		assert!(paid <= slots, "{context}: paid {paid} above {slots}");
		let total = weights.iter().fold(U256::zero(), |sum, w| sum + U256::from(*w));
		if total.is_zero() {
			assert!(amounts.iter().all(|a| *a == 0), "{context}");
			continue;
		}
		for (weight, amount) in weights.iter().zip(&amounts) {
			// At most the exact proportional share of the slots.
			let exact = slots * U256::from(*weight) / total;
			assert!(U256::from(*amount) <= exact, "{context}: {amount} above {exact}");
		}
		// What is left unpaid is rounding: under a billionth of the reward and a unit per
		// member, twice (once for the pool, once for each share).
		let dust = slots - paid;
		let (billion, one) = (U256::from(1_000_000_000u64), U256::one());
		let bound = (U256::from(reward) / billion + one) * U256::from(2 * (qualified + 1));
		assert!(dust <= bound, "{context}: {dust} unpaid, more than {bound}");
		// A larger weight never gets less; equal weights get the same.
		let mut ranked: Vec<_> = weights.iter().zip(&amounts).collect();
		ranked.sort();
		for pair in ranked.windows(2) {
			let ((w0, a0), (w1, a1)) = (pair[0], pair[1]);
			assert!(a0 <= a1 && (w0 != w1 || a0 == a1), "{context}");
		}
	}
}
