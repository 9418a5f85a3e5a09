//! Test runtime: System, Balances, the provider registry and the jobs pallet, with `u64`
//! accounts whose sr25519 keys are derived from the account number.

use crate as pallet_jobs;
use grid_primitives::{
	job::{
		proof_payload, Compression, ContributionProof, DatasetRef, InnerOptimizer, JobId, JobSpec,
		MlpConfig, ModelSpec, Nanos, ProofSignature, RoundIndex, SignedProof, TrainingParams,
	},
	provider::{peer_binding_payload, BoundedBytes, Capabilities, DeviceKind, Multiaddrs},
	work::{vote_commitment, Verdict, VoteSalt},
};
use polkadot_sdk::{
	pallet_balances,
	polkadot_sdk_frame::{
		deps::{
			frame_support::{
				self, derive_impl, parameter_types,
				traits::{ConstU64, VariantCountOf},
				weights::constants::ParityDbWeight,
			},
			sp_core::{ed25519, sr25519, Pair, H256},
			sp_io,
			sp_runtime::{testing::UintAuthorityId, BuildStorage},
		},
		prelude::*,
	},
};

pub type AccountId = u64;
pub type Balance = u128;
type Block = frame_system::mocking::MockBlock<Test>;

pub const BUYER: AccountId = 1;
pub const OTHER_BUYER: AccountId = 2;
pub const REPORTER: AccountId = 3;
/// Providers used by the tests.
pub const P1: AccountId = 11;
pub const P2: AccountId = 12;
pub const P3: AccountId = 13;
pub const P4: AccountId = 14;
pub const P5: AccountId = 15;
pub const FEES: AccountId = 99;
pub const ENDOWMENT: Balance = 1_000_000;
pub const MIN_STAKE: Balance = 100;
pub const STAKE: Balance = 1_000;
pub const REWARD: Balance = 1_000;
pub const ROUND_BLOCKS: u64 = 5;
pub const MAX_PARTICIPANTS: u32 = 8;
pub const AGENDA_PER_BLOCK: u32 = 3;
pub const AGENDA_REACH: u32 = 2;
pub const MAX_JOBS_PER_PROVIDER: u32 = 16;
pub const MAX_MISSED: u32 = 2;
pub const MAX_UNDERSTAFFED: u32 = 2;
pub const MAX_OPEN_BLOCKS: u64 = 500;
pub const DEPOSIT: Balance = 300;
pub const JOB_DEPOSIT: Balance = 50;
pub const CHALLENGE_FEE: Balance = 20;
pub const COMMITTEE: u32 = 3;
/// Blocks from a challenge to its verdict deadline: the draw a block later, commits, and
/// reveals in the last block.
pub const VOTING_BLOCKS: u64 = 4;
pub const COMMITTEE_DELAY: u64 = 1;
pub const REVEAL_BLOCKS: u64 = 1;
pub const MAX_CHALLENGES_PER_CHALLENGER: u32 = 3;
pub const MAX_CHALLENGES_PER_JOB: u32 = 4;
pub const AUDIT_COMMITTEE: u32 = 3;
pub const MAX_AUDITS_PER_ROUND: u32 = 2;
/// Authority id of the first test validator.
pub const VALIDATOR: u64 = 100;
pub const PROBE_INTERVAL: u64 = 3;
pub const REPORT_LONGEVITY: u64 = 4;

frame_support::construct_runtime!(
	pub enum Test {
		System: frame_system,
		Balances: pallet_balances,
		Providers: pallet_providers,
		Jobs: pallet_jobs,
	}
);

#[derive_impl(frame_system::config_preludes::TestDefaultConfig)]
impl frame_system::Config for Test {
	type Block = Block;
	type AccountData = pallet_balances::AccountData<Balance>;
	// The runtime's database weights, so that what calls charge for storage beyond their
	// benchmarks (agenda searches, storage added since) counts in tests.
	type DbWeight = ParityDbWeight;
}

#[derive_impl(pallet_balances::config_preludes::TestDefaultConfig)]
impl pallet_balances::Config for Test {
	type Balance = Balance;
	type AccountStore = System;
	type RuntimeHoldReason = RuntimeHoldReason;
	type MaxFreezes = VariantCountOf<RuntimeFreezeReason>;
}

parameter_types! {
	pub const MinStake: Balance = MIN_STAKE;
	pub const UnbondingPeriod: u64 = 10;
	pub const FeeCollector: AccountId = FEES;
	pub const ProtocolFee: Perbill = Perbill::from_percent(10);
	pub const EquivocationSlash: Perbill = Perbill::from_percent(50);
	pub const LivenessSlash: Perbill = Perbill::from_percent(10);
	pub const ReporterShare: Perbill = Perbill::from_percent(25);
	pub const BuyerShare: Perbill = Perbill::from_percent(25);
	pub const ChallengeDeposit: Balance = DEPOSIT;
	pub const JobDeposit: Balance = JOB_DEPOSIT;
	pub const ChallengeFee: Balance = CHALLENGE_FEE;
	pub const VerifierShare: Perbill = Perbill::from_percent(20);
	pub const FraudSlash: Perbill = Perbill::from_percent(40);
	pub const AbsentVoterSlash: Perbill = Perbill::from_percent(5);
	/// Audits are off unless a test turns them on (they would draw committees in every
	/// other test's rounds).
	pub static AuditRate: Perbill = Perbill::zero();
	/// One, so that the small jobs most tests run can be judged; the runtime asks for two,
	/// and a test sets that.
	pub static MinCommittee: u32 = 1;
	/// The validator set; tests change it.
	pub static Validators: Vec<UintAuthorityId> = vec![UintAuthorityId(VALIDATOR), UintAuthorityId(VALIDATOR + 1)];
}

impl pallet_providers::Config for Test {
	type RuntimeEvent = RuntimeEvent;
	type Currency = Balances;
	type RuntimeHoldReason = RuntimeHoldReason;
	type MinStake = MinStake;
	type UnbondingPeriod = UnbondingPeriod;
	type MaxUnbondingChunks = ConstU32<3>;
	type MaxProviders = ConstU32<32>;
	type MaxJobsPerProvider = ConstU32<MAX_JOBS_PER_PROVIDER>;
	type EndpointCooldown = ConstU64<5>;
	type WeightInfo = ();
}

/// Verifies with the sr25519 key [`account_key`] derives for a `u64` account.
pub struct TestVerifier;

impl crate::ProofVerifier<AccountId> for TestVerifier {
	fn verify(who: &AccountId, payload: &[u8], signature: &ProofSignature) -> bool {
		let signature = sr25519::Signature::from_raw(*signature);
		sp_io::crypto::sr25519_verify(&signature, payload, &account_key(*who).public())
	}
}

impl pallet_jobs::Config for Test {
	type RuntimeEvent = RuntimeEvent;
	type Currency = Balances;
	type RuntimeHoldReason = RuntimeHoldReason;
	type Providers = Providers;
	type ProofVerifier = TestVerifier;
	type MaxParticipants = ConstU32<MAX_PARTICIPANTS>;
	type MaxRounds = ConstU32<50>;
	type MinRoundBlocks = ConstU64<2>;
	type MaxRoundBlocks = ConstU64<100>;
	type MaxJobBlocks = ConstU64<1_000>;
	type MaxOpenBlocks = ConstU64<MAX_OPEN_BLOCKS>;
	type MaxChallengeWindow = ConstU64<100>;
	/// Two, so that two-member jobs with a window stay possible in tests; the runtime asks
	/// for four.
	type MinVerifiableProviders = ConstU32<2>;
	type QuorumGrace = ConstU64<1>;
	type MaxSettlementsPerBlock = ConstU32<2>;
	type MaxAgendaPerBlock = ConstU32<AGENDA_PER_BLOCK>;
	type MaxAgendaReach = ConstU32<AGENDA_REACH>;
	type MillisPerBlock = ConstU64<6_000>;
	type ProtocolFee = ProtocolFee;
	type FeeCollector = FeeCollector;
	type EquivocationSlash = EquivocationSlash;
	type LivenessSlash = LivenessSlash;
	type MaxMissedRounds = ConstU32<MAX_MISSED>;
	type MaxUnderstaffedRounds = ConstU32<MAX_UNDERSTAFFED>;
	type ReporterShare = ReporterShare;
	type BuyerShare = BuyerShare;
	type Randomness = crate::ParentHashRandomness<Test>;
	type JobDeposit = JobDeposit;
	type ChallengeDeposit = ChallengeDeposit;
	type ChallengeFee = ChallengeFee;
	type VerifierShare = VerifierShare;
	type MaxCommittee = ConstU32<COMMITTEE>;
	type MinCommittee = MinCommittee;
	type VotingPeriod = ConstU64<VOTING_BLOCKS>;
	type CommitteeDelay = ConstU64<COMMITTEE_DELAY>;
	type RevealPeriod = ConstU64<REVEAL_BLOCKS>;
	type MaxChallengesPerChallenger = ConstU32<MAX_CHALLENGES_PER_CHALLENGER>;
	type MaxChallengesPerJob = ConstU32<MAX_CHALLENGES_PER_JOB>;
	type FraudSlash = FraudSlash;
	type AbsentVoterSlash = AbsentVoterSlash;
	type AuditRate = AuditRate;
	type AuditCommittee = ConstU32<AUDIT_COMMITTEE>;
	type MaxAuditsPerRound = ConstU32<MAX_AUDITS_PER_ROUND>;
	type AuthorityId = UintAuthorityId;
	type Validators = Validators;
	type ProbeInterval = ConstU64<PROBE_INTERVAL>;
	type ReportLongevity = ConstU64<REPORT_LONGEVITY>;
	type ReportPriority = ConstU64<{ 1 << 20 }>;
	type WeightInfo = ();
	#[cfg(feature = "runtime-benchmarks")]
	type BenchmarkHelper = TestBenchmarkHelper;
}

/// Transactions the off-chain worker submits (only authorized calls are made).
pub type Extrinsic = polkadot_sdk::polkadot_sdk_frame::deps::sp_runtime::testing::TestXt<
	RuntimeCall,
	frame_system::AuthorizeCall<Test>,
>;

impl<LocalCall> frame_system::offchain::CreateTransactionBase<LocalCall> for Test
where
	RuntimeCall: From<LocalCall>,
{
	type RuntimeCall = RuntimeCall;
	type Extrinsic = Extrinsic;
}

impl<LocalCall> frame_system::offchain::CreateTransaction<LocalCall> for Test
where
	RuntimeCall: From<LocalCall>,
{
	type Extension = frame_system::AuthorizeCall<Test>;
	fn create_transaction(call: RuntimeCall, extension: Self::Extension) -> Extrinsic {
		Extrinsic::new_transaction(call, extension)
	}
}

impl<LocalCall> frame_system::offchain::CreateAuthorizedTransaction<LocalCall> for Test
where
	RuntimeCall: From<LocalCall>,
{
	fn create_extension() -> Self::Extension {
		frame_system::AuthorizeCall::new()
	}
}

/// Providers from account 100 on, registered like the tests' providers.
#[cfg(feature = "runtime-benchmarks")]
pub struct TestBenchmarkHelper;

#[cfg(feature = "runtime-benchmarks")]
impl crate::BenchmarkHelper<AccountId, UintAuthorityId> for TestBenchmarkHelper {
	fn provider(index: u32) -> AccountId {
		use polkadot_sdk::polkadot_sdk_frame::traits::fungible::Mutate;
		let who = 100 + u64::from(index);
		Balances::set_balance(&who, ENDOWMENT);
		register(who);
		who
	}

	fn sign(who: &AccountId, payload: &[u8]) -> ProofSignature {
		account_key(*who).sign(payload).0
	}

	fn validator() -> UintAuthorityId {
		UintAuthorityId(VALIDATOR)
	}

	fn sign_as_peer(who: &AccountId, payload: &[u8]) -> ([u8; 32], [u8; 64]) {
		let key = peer_key(*who);
		(key.public().0, key.sign(payload).0)
	}
}

/// Buyers, the reporter, providers 11..=20 and the fee collector funded.
pub fn new_test_ext() -> sp_io::TestExternalities {
	let mut storage = frame_system::GenesisConfig::<Test>::default().build_storage().unwrap();
	let mut balances: Vec<_> =
		[BUYER, OTHER_BUYER, REPORTER, FEES].map(|a| (a, ENDOWMENT)).to_vec();
	balances.extend((11..=20).map(|who| (who, ENDOWMENT)));
	pallet_balances::GenesisConfig::<Test> { balances, ..Default::default() }
		.assimilate_storage(&mut storage)
		.unwrap();
	// The tests' providers run on this machine, like on a development chain.
	pallet_providers::GenesisConfig::<Test> { loopback_endpoints: true, ..Default::default() }
		.assimilate_storage(&mut storage)
		.unwrap();
	let mut ext = sp_io::TestExternalities::new(storage);
	ext.execute_with(|| System::set_block_number(1));
	ext
}

/// The sr25519 account key of test account `who`.
pub fn account_key(who: AccountId) -> sr25519::Pair {
	sr25519::Pair::from_seed(&[who as u8; 32])
}

/// Hardware declared by test providers: `tflops_milli` thousandths of a TFLOP/s.
pub fn hardware(tflops_milli: u32) -> Capabilities {
	Capabilities {
		device: DeviceKind::Cuda,
		device_name: BoundedBytes::truncate_from(b"NVIDIA H100".to_vec()),
		device_count: 1,
		memory_mib: 81_559,
		tflops_milli,
		bandwidth_mbps: 1_000,
		region: BoundedBytes::truncate_from(b"eu-west".to_vec()),
	}
}

/// The libp2p key `who` registers with.
pub fn peer_key(who: AccountId) -> ed25519::Pair {
	ed25519::Pair::from_seed(&[who as u8; 32])
}

/// Registers `who` as a provider with `stake` and the given throughput.
pub fn register_with(who: AccountId, stake: Balance, tflops_milli: u32) {
	try_register(who, None, stake, tflops_milli).expect("registers");
}

/// Registers `who` with `stake` and the given throughput, in the seat of `in_place_of` when
/// given (`register_in_place_of`, for a full registry).
pub fn try_register(
	who: AccountId,
	in_place_of: Option<AccountId>,
	stake: Balance,
	tflops_milli: u32,
) -> DispatchResult {
	let key = peer_key(who);
	let genesis = System::block_hash(0);
	let signature = key.sign(&peer_binding_payload(&genesis, &who));
	let addr =
		BoundedBytes::truncate_from(format!("/ip4/127.0.0.1/tcp/{}", 30_000 + who).into_bytes());
	let (origin, capabilities) = (RuntimeOrigin::signed(who), hardware(tflops_milli));
	let multiaddrs = Multiaddrs::truncate_from(vec![addr]);
	let endpoint = BoundedBytes::truncate_from(b"http://127.0.0.1:9000/health".to_vec());
	let (public, signature) = (key.public().0, signature.0);
	match in_place_of {
		None => Providers::register(
			origin,
			stake,
			capabilities,
			public,
			signature,
			multiaddrs,
			endpoint,
		),
		Some(seat) => Providers::register_in_place_of(
			origin,
			seat,
			stake,
			capabilities,
			public,
			signature,
			multiaddrs,
			endpoint,
		),
	}
}

/// Registers `who` with [`STAKE`] and fast hardware.
pub fn register(who: AccountId) {
	register_with(who, STAKE, 400_000);
}

/// A small MNIST job: 3 rounds of [`REWARD`], 2 to 4 providers.
pub fn spec() -> JobSpec<Balance, u64> {
	JobSpec {
		model: ModelSpec::MnistMlp(MlpConfig { hidden: 32, layers: 1 }),
		dataset: DatasetRef {
			content_hash: H256::repeat_byte(7),
			uri: BoundedBytes::truncate_from(b"grid:mnist-10k".to_vec()),
		},
		training: TrainingParams {
			round_blocks: ROUND_BLOCKS,
			batch_size: 32,
			inner: InnerOptimizer::AdamW {
				lr: Nanos(1_000_000),
				weight_decay: Nanos(0),
				warmup_steps: 0,
			},
			outer_lr: Nanos(700_000_000),
			outer_momentum: Nanos(900_000_000),
			error_decay: Nanos(900_000_000),
			dense_rounds: 0,
			outer_anneal: None,
			overlap_steps: 0,
			max_steps: None,
			exchange: Default::default(),
			compression: Compression::Int8 { chunk: 256 },
		},
		rounds: 3,
		reward_per_round: REWARD,
		min_providers: 2,
		max_providers: 4,
		min_provider_stake: MIN_STAKE,
		challenge_window: 10,
		initial_weights: None,
	}
}

/// The escrow of one round of [`spec`]: reward plus 10% fee.
pub const ROUND_ESCROW: Balance = REWARD + REWARD / 10;

/// Creates `spec` as [`BUYER`]; returns its id.
pub fn create(spec: JobSpec<Balance, u64>) -> JobId {
	let id = crate::NextJobId::<Test>::get();
	Jobs::create_job(RuntimeOrigin::signed(BUYER), Box::new(spec), Default::default())
		.expect("creates");
	id
}

/// A proof by `who` for `round` attesting `result`, using the updates of `received`, claiming
/// `samples` in as few inner steps as the job's batch size allows.
pub fn proof(
	job: JobId,
	round: RoundIndex,
	who: AccountId,
	result: u8,
	samples: u64,
	received: &[AccountId],
) -> Box<SignedProof<AccountId>> {
	let batch = crate::Jobs::<Test>::get(job).map_or(1, |j| j.spec.training.batch_size.max(1));
	let proof = ContributionProof {
		job,
		round,
		provider: who,
		base_model_hash: H256::repeat_byte(round as u8),
		own_update_commitment: H256::from_low_u64_be(who),
		start_state: H256::from_low_u64_be(who ^ 0x5747),
		inner_steps: u32::try_from(samples.div_ceil(u64::from(batch))).unwrap_or(u32::MAX),
		result_model_hash: H256::repeat_byte(result),
		samples_processed: samples,
		train_loss_micros: 2_000_000,
		received: BoundedVec::truncate_from(received.to_vec()),
	};
	sign(proof)
}

/// Signs `proof` with its provider's key for the test chain.
pub fn sign(proof: ContributionProof<AccountId>) -> Box<SignedProof<AccountId>> {
	let payload = proof_payload(&System::block_hash(0), &proof);
	let signature = account_key(proof.provider).sign(&payload).0;
	Box::new(SignedProof { proof, signature })
}

/// Runs `report`, REPORTER's report of P1's equivocation in round 0 of `job`, and checks
/// the punishment: half of P1's stake slashed, a quarter of that each to the reporter and
/// the buyer and the rest burned, P1 removed from the job, the offence recorded.
pub fn punished_for_equivocation(job: JobId, report: impl FnOnce() -> DispatchResult) {
	use crate::{Equivocations, Event, Participants, RemovalReason};
	let (issuance, reporter, buyer) = (Balances::total_issuance(), free(REPORTER), free(BUYER));
	assert_eq!(report(), Ok(()));
	let slashed = STAKE / 2;
	assert_eq!(free(REPORTER) - reporter, slashed / 4);
	assert_eq!(free(BUYER) - buyer, slashed / 4);
	assert_eq!(issuance - Balances::total_issuance(), slashed / 2, "the rest is burned");
	assert_eq!(pallet_providers::Providers::<Test>::get(P1).unwrap().stake, STAKE - slashed);
	assert!(!Participants::<Test>::contains_key(job, P1));
	assert!(Equivocations::<Test>::contains_key((job, 0), P1));
	let events = job_events();
	let removed = Event::Removed { job, who: P1, reason: RemovalReason::Equivocation };
	assert!(events.contains(&removed));
	let (round, provider) = (0, P1);
	let punished =
		Event::EquivocationPunished { job, round, provider, reporter: REPORTER, slashed };
	assert!(events.contains(&punished));
}

/// Submits an honest proof for every one of `members`, each using all others' updates.
pub fn deliver(job: JobId, round: RoundIndex, members: &[AccountId]) {
	for who in members {
		let signed = proof(job, round, *who, 42, 100, members);
		Jobs::submit_proof(RuntimeOrigin::signed(*who), signed).expect("proof accepted");
	}
}

pub fn run_to_block(n: u64) {
	// Every block gets its own parent hash, as on a chain, so that randomness drawn in a
	// block differs from the one drawn in the block before.
	let hooks = frame_system::RunToBlockHooks::default().before_initialize(|bn: u64| {
		System::set_parent_hash(sp_io::hashing::blake2_256(&bn.to_le_bytes()).into())
	});
	System::run_to_block_with::<AllPalletsWithSystem>(n, hooks);
}

/// Runs `n` more blocks.
pub fn advance(n: u64) {
	run_to_block(System::block_number() + n);
}

/// Each member's secret salt in these tests.
pub fn salt(who: AccountId) -> VoteSalt {
	[who as u8; 32]
}

pub fn commit(who: AccountId, id: u64, verdict: Verdict) -> DispatchResult {
	let commitment = vote_commitment(id, &who, verdict, &salt(who));
	Jobs::commit_vote(RuntimeOrigin::signed(who), id, commitment)
}

pub fn reveal(who: AccountId, id: u64, verdict: Verdict) -> DispatchResult {
	Jobs::reveal_vote(RuntimeOrigin::signed(who), id, verdict, salt(who))
}

/// `ballots` are committed, then (from the reveal block when some member did not commit)
/// revealed in order, each accepted.
pub fn vote(id: u64, ballots: &[(AccountId, Verdict)]) {
	for (who, verdict) in ballots {
		frame_support::assert_ok!(commit(*who, id, *verdict));
	}
	let reveal_from = crate::Challenges::<Test>::get(id).unwrap().reveal_from;
	if System::block_number() < reveal_from
		&& !crate::Challenges::<Test>::get(id).unwrap().revealing(System::block_number())
	{
		run_to_block(reveal_from);
	}
	for (who, verdict) in ballots {
		frame_support::assert_ok!(reveal(*who, id, *verdict));
	}
}

/// Events of this pallet since the last call, oldest first.
pub fn job_events() -> Vec<pallet_jobs::Event<Test>> {
	let events = System::events()
		.into_iter()
		.filter_map(|record| match record.event {
			RuntimeEvent::Jobs(event) => Some(event),
			_ => None,
		})
		.collect();
	System::reset_events();
	events
}

/// Checks both pallets' `try_state` invariants.
pub fn check_invariants() {
	Jobs::do_try_state().expect("jobs invariants hold");
	Providers::do_try_state().expect("providers invariants hold");
}

/// Free balance of `who`.
pub fn free(who: AccountId) -> Balance {
	use polkadot_sdk::polkadot_sdk_frame::traits::fungible::Inspect;
	Balances::balance(&who)
}

/// `who` joins `job`.
pub fn join(job: JobId, who: AccountId) -> DispatchResult {
	Jobs::join_job(RuntimeOrigin::signed(who), job).map(|_| ()).map_err(|e| e.error)
}

/// A job with `providers` registered and joined (min_providers = their number, and room for
/// them), running.
pub fn running_job(providers: &[AccountId]) -> JobId {
	running_job_of(spec(), providers)
}

/// A job of spec `s` that `providers` (registered here) joined and started.
pub fn running_job_of(mut s: JobSpec<Balance, u64>, providers: &[AccountId]) -> JobId {
	s.min_providers = providers.len() as u32;
	s.max_providers = s.max_providers.max(s.min_providers);
	let id = create(s);
	for who in providers {
		register(*who);
		join(id, *who).expect("joins");
	}
	let job = crate::Jobs::<Test>::get(id).expect("created");
	assert_eq!(job.status, crate::JobStatus::Running);
	job_events();
	id
}
