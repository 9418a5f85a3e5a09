//! Property tests: random sequences of every call of both pallets (jobs, proofs, challenges,
//! votes, and the registry's update, bond, unbond, withdraw, deregister and register again)
//! from several buyers and providers, some of them hostile (wrong rounds, dissenting results,
//! equivocations, copied update commitments, challenges of anything, unbonding while in
//! jobs), and root's force cancel,
//! with blocks passing in between (one sequence in four with a full registry, so that newcomers
//! take seats with `register_in_place_of`), checking after every step and every block that
//! - every job's escrow adds up (paid + fees + refunded + held == funded) and matches the
//!   buyers' holds, and the registry's held stake matches its records (`do_try_state`);
//! - every participant's stake is locked for its job (below its locks only from a slash until
//!   the job's round settles and removes it, `StakeShortfall`); no job runs
//!   understaffed past `MaxUnderstaffedRounds`; the queues stay sorted and bounded;
//! - total issuance changes only by what slashes burned (after every step);
//! - in the end every job, filled or not, has ended with nothing held.
//!
//! `GRID_PROPTEST_SEQUENCES` sets how many sequences run (48 in CI; the benchmark run in
//! `bench/` uses 100,000).
//!
//! Separately, random payout splits never pay more than the qualified members' slots, stay
//! proportional to the weights and lose only rounding.
//!
//! A small deterministic generator keeps failures reproducible: the failing seed is printed.

use crate::{mock::*, Challenges, Contributions, Jobs as JobsMap, Rounds};
use grid_primitives::work::{vote_commitment, Verdict};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::frame_support::traits::{Hooks, UnfilteredDispatchable},
	prelude::*,
	traits::fungible::Mutate,
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

fn dispatch_registry(who: AccountId, call: pallet_providers::Call<Test>) {
	let _ = call.dispatch_bypass_filter(RuntimeOrigin::signed(who));
}

/// A registry call by `who`: moving stake in and out (often while in jobs), changing the
/// declared hardware, leaving the registry and coming back.
fn registry_step(rng: &mut Rng, who: AccountId) {
	use pallet_providers::Call as P;
	let amount = match rng.below(3) {
		0 => MIN_STAKE,
		1 => rng.below(3 * STAKE as u64) as Balance,
		_ => pallet_providers::Providers::<Test>::get(who).map(|p| p.stake).unwrap_or(STAKE),
	};
	match rng.below(7) {
		5 if registry_full() => newcomer_takes_a_seat(rng, amount),
		0 | 1 => dispatch_registry(who, P::unbond { amount }),
		2 => dispatch_registry(who, P::withdraw_unbonded {}),
		3 => dispatch_registry(who, P::bond_more { amount }),
		4 => {
			let capabilities = Some(hardware(1 + rng.below(400_000) as u32));
			dispatch_registry(who, P::update { capabilities, multiaddrs: None, endpoint: None });
		}
		_ if pallet_providers::Providers::<Test>::contains_key(who) => {
			// Leaving for good: unbond everything, wait, withdraw, deregister (each step
			// refused while it is in a job or its stake is locked).
			dispatch_registry(who, P::unbond { amount });
			advance_checked(UnbondingPeriod::get() + 1);
			dispatch_registry(who, P::withdraw_unbonded {});
			dispatch_registry(who, P::deregister {});
		}
		_ => {
			let tflops = 1 + rng.below(400_000) as u32;
			let _ = try_register(who, None, STAKE, tflops);
		}
	}
}

/// Accounts that fill the registry in some sequences (idle providers), and newcomers that
/// then need a seat.
fn fillers() -> core::ops::RangeInclusive<AccountId> {
	100..=131
}

fn registry_full() -> bool {
	pallet_providers::Providers::<Test>::count() >= max_providers()
}

/// A filler outside the registry asks for the seat of a random provider with `stake`: taken
/// only from one nothing binds any more and that holds less.
fn newcomer_takes_a_seat(rng: &mut Rng, stake: Balance) {
	let seats = registered();
	let Some(newcomer) = fillers().find(|f| !seats.contains(f)) else { return };
	let seat = rng.pick(&seats);
	let _ = try_register(newcomer, Some(seat), stake.max(MIN_STAKE), 1);
}

/// The registry's seats.
fn max_providers() -> u32 {
	<<Test as pallet_providers::Config>::MaxProviders as Get<u32>>::get()
}

/// Registered providers.
fn registered() -> Vec<AccountId> {
	pallet_providers::Providers::<Test>::iter_keys().collect()
}

/// Blocks pass one at a time, the invariants checked after each.
fn advance_checked(blocks: u64) {
	for _ in 0..blocks {
		advance(1);
		check_invariants("after a block");
	}
}

/// Both pallets' `try_state`; panics with `context` and the registry when one fails.
fn check_invariants(context: &str) {
	Jobs::do_try_state().unwrap_or_else(|e| panic!("{context}: jobs: {e:?}"));
	Providers::do_try_state().unwrap_or_else(|e| {
		let records: Vec<_> = pallet_providers::Providers::<Test>::iter().collect();
		panic!("{context}: providers: {e:?}\n{records:#?}")
	});
}

fn random_spec(rng: &mut Rng) -> grid_primitives::job::JobSpec<Balance, u64> {
	let mut s = spec();
	s.rounds = 1 + rng.below(4) as u32;
	s.reward_per_round = 1 + rng.below(5_000) as u128;
	s.min_providers = 1 + rng.below(3) as u32;
	s.max_providers = s.min_providers + rng.below(3) as u32;
	s.training.round_blocks = 2 + rng.below(5);
	// A one-member job cannot be verified: it goes unchallengeable (or, rarely, is refused).
	if s.min_providers == 1 && rng.below(8) != 0 {
		s.challenge_window = 0;
	}
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
	let honest = proof(job, round, who, result, rng.below(300), &received);
	if rng.below(8) != 0 {
		return honest;
	}
	// A copier: another provider's update commitment under its own signature.
	let mut copy = honest.proof;
	copy.own_update_commitment = H256::from_low_u64_be(rng.pick(&PROVIDERS));
	sign(copy)
}

/// Three times in four, a (job, member) of an open round.
fn round_member(rng: &mut Rng) -> Option<(u64, AccountId)> {
	let open: Vec<_> = Rounds::<Test>::iter()
		.flat_map(|(job, round)| round.members.into_iter().map(move |who| (job, who)))
		.collect();
	(rng.below(4) != 0 && !open.is_empty()).then(|| open[rng.below(open.len() as u64) as usize])
}

fn step(rng: &mut Rng) {
	let job = random_job(rng);
	let provider = rng.pick(&PROVIDERS);
	match rng.below(16) {
		0 => dispatch(
			rng.pick(&BUYERS),
			crate::Call::create_job {
				spec: Box::new(random_spec(rng)),
				admission: Default::default(),
			},
		),
		1 => dispatch(rng.pick(&BUYERS), crate::Call::cancel_job { job }),
		2 | 3 => dispatch(provider, crate::Call::join_job { job }),
		4 => dispatch(provider, crate::Call::leave_job { job }),
		// Equivocations halve a stake: rarely enough that providers stay around.
		9 if rng.below(3) == 0 => {
			// Mostly a member of an open round (only members can equivocate), sometimes
			// anyone for any job.
			let (job, provider) = round_member(rng).unwrap_or((job, provider));
			let first = random_proof(rng, job, provider);
			let second = random_proof(rng, job, provider);
			dispatch(REPORTER, crate::Call::report_equivocation { first, second });
		}
		5..=9 => {
			// Mostly a member of an open round, sometimes anyone for any job.
			let (job, provider) = round_member(rng).unwrap_or((job, provider));
			let proof = random_proof(rng, job, provider);
			dispatch(rng.pick(&[provider, REPORTER]), crate::Call::submit_proof { proof });
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
			// Mostly an open challenge's whole committee takes its next step, sometimes anyone
			// votes on any challenge.
			let open: Vec<_> = Challenges::<Test>::iter().collect();
			if open.is_empty() || rng.below(4) == 0 {
				let id = rng.below(crate::NextChallengeId::<Test>::get() + 1);
				dispatch(provider, ballot_step(rng, id, provider, None));
				return;
			}
			// Twice: a committee that all committed may reveal at once.
			let id = open[rng.below(open.len() as u64) as usize].0;
			for _ in 0..2 {
				let Some(challenge) = Challenges::<Test>::get(id) else { return };
				for (voter, ballot) in challenge.committee {
					dispatch(voter, ballot_step(rng, id, voter, Some(ballot)));
				}
			}
		}
		11 => registry_step(rng, provider),
		// Root steps in rarely: a cancelled job is a job no one can explore further.
		14 if rng.below(8) == 0 => {
			let _ = crate::Call::<Test>::force_cancel_job { job }
				.dispatch_bypass_filter(RuntimeOrigin::root());
		}
		_ => advance_checked(1 + rng.below(3)),
	}
}

/// `voter`'s next call on challenge `id` given its ballot: reveal what it committed to (a
/// quarter of the time the other verdict), else commit to a verdict.
fn ballot_step(
	rng: &mut Rng,
	id: u64,
	voter: AccountId,
	ballot: Option<crate::Ballot>,
) -> crate::Call<Test> {
	let commitment = |verdict| vote_commitment(id, &voter, verdict, &salt(voter));
	match ballot {
		Some(crate::Ballot::Committed(hash)) => {
			let committed = [Verdict::Valid, Verdict::Invalid]
				.into_iter()
				.find(|v| commitment(*v) == hash)
				.unwrap_or(Verdict::Valid);
			let verdict = match (rng.below(4), committed) {
				(0, Verdict::Valid) => Verdict::Invalid,
				(0, Verdict::Invalid) => Verdict::Valid,
				_ => committed,
			};
			crate::Call::reveal_vote { challenge: id, verdict, salt: salt(voter) }
		}
		_ => {
			// Committees mostly agree (on fraud for even challenges), so both outcomes and
			// splits all happen.
			let usual = if id.is_multiple_of(2) { Verdict::Invalid } else { Verdict::Valid };
			let verdict = match rng.below(4) {
				0 => rng.pick(&[Verdict::Valid, Verdict::Invalid]),
				_ => usual,
			};
			crate::Call::commit_vote { challenge: id, commitment: commitment(verdict) }
		}
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
	abandoned: u32,
	unfilled: u32,
	shortfalls: u32,
	unbonded: u32,
	withdrawn: u32,
	deregistered: u32,
	evicted: u32,
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
			RuntimeEvent::Providers(pallet_providers::Event::Unbonding { .. }) => {
				coverage.unbonded += 1
			}
			RuntimeEvent::Providers(pallet_providers::Event::Withdrawn { .. }) => {
				coverage.withdrawn += 1
			}
			RuntimeEvent::Providers(pallet_providers::Event::Deregistered { .. }) => {
				coverage.deregistered += 1
			}
			RuntimeEvent::Providers(pallet_providers::Event::Evicted { .. }) => {
				coverage.evicted += 1
			}
			RuntimeEvent::Jobs(event) => match event {
				E::JobCreated { .. } => coverage.created += 1,
				E::JobStarted { .. } => coverage.started += 1,
				E::RewardPaid { .. } => coverage.rewards += 1,
				E::RoundSettled { result_model_hash: None, .. } => coverage.failed_rounds += 1,
				E::JobCompleted { .. } => coverage.completed += 1,
				E::JobCancelled { .. } => coverage.cancelled += 1,
				E::EquivocationPunished { .. } => coverage.equivocations += 1,
				E::Removed { reason: crate::RemovalReason::Liveness, .. } => coverage.liveness += 1,
				E::Removed { reason: crate::RemovalReason::StakeShortfall, .. } => {
					coverage.shortfalls += 1
				}
				E::JobAbandoned { .. } => coverage.abandoned += 1,
				E::JobUnfilled { .. } => coverage.unfilled += 1,
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
		// One sequence in four starts with a full registry: idle providers hold the other
		// seats, with stakes around the newcomers'.
		if seed.is_multiple_of(4) {
			for filler in fillers() {
				Balances::set_balance(&filler, ENDOWMENT);
			}
			for filler in fillers().take(max_providers() as usize - PROVIDERS.len()) {
				register_with(filler, MIN_STAKE + 10 * (filler - 100) as Balance, 1);
			}
		}
		let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
		let mut expected_issuance = Balances::total_issuance();
		System::reset_events();
		for i in 0..steps {
			step(&mut rng);
			expected_issuance -= burned_since_last(coverage);
			let context = format!("seed {seed}, step {i}");
			check_invariants(&context);
			assert_eq!(Balances::total_issuance(), expected_issuance, "{context}: issuance");
		}
		// Let every job run out or, never filled, expire: each must end with nothing held.
		advance(MAX_OPEN_BLOCKS + 200);
		expected_issuance -= burned_since_last(coverage);
		for (id, job) in JobsMap::<Test>::iter() {
			assert!(!job.status.is_live(), "seed {seed}: job {id} still {:?}", job.status);
		}
		Jobs::do_try_state().unwrap_or_else(|e| panic!("seed {seed}, end: {e:?}"));
		assert_eq!(
			Balances::total_issuance(),
			expected_issuance,
			"seed {seed}: issuance at the end"
		);
	});
}

/// A number from the environment, or `default`.
fn env_or(name: &str, default: u64) -> u64 {
	std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

#[test]
fn random_call_sequences_keep_the_invariants() {
	let mut coverage = Coverage::default();
	// `GRID_PROPTEST_SEQUENCES` sequences from seed `GRID_PROPTEST_FIRST_SEED` (the benchmark
	// run shards its seeds this way).
	let count = env_or("GRID_PROPTEST_SEQUENCES", 48);
	let first = env_or("GRID_PROPTEST_FIRST_SEED", 0);
	for seed in first..first + count {
		run(seed, 300, &mut coverage);
	}
	// Every path the invariants are about was taken, many times.
	let c = &coverage;
	let counts = [c.created, c.started, c.rewards, c.failed_rounds, c.completed, c.cancelled];
	assert!(counts.iter().all(|n| *n >= 10), "{coverage:?}");
	assert!(c.equivocations >= 10 && c.liveness >= 1, "{coverage:?}");
	assert!(c.challenges >= 5 && c.frauds >= 1 && c.rejected >= 1, "{coverage:?}");
	assert!(c.abandoned >= 1 && c.unbonded >= 10 && c.withdrawn >= 1, "{coverage:?}");
	assert!(c.deregistered >= 1 && c.unfilled >= 1 && c.evicted >= 1, "{coverage:?}");
	println!("{count} sequences: {coverage:?}");
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
