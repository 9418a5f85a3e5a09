//! Configuration of every pallet in the runtime.

use polkadot_sdk::{
	frame_support::{
		derive_impl,
		dispatch::DispatchClass,
		parameter_types,
		traits::{ConstBool, ConstU32, ConstU64, ConstU8, VariantCountOf},
		weights::{
			constants::{ParityDbWeight, WEIGHT_REF_TIME_PER_SECOND},
			IdentityFee, Weight,
		},
		PalletId,
	},
	frame_system::{self, limits},
	pallet_aura, pallet_balances, pallet_grandpa, pallet_sudo, pallet_timestamp,
	pallet_transaction_payment::{self, FungibleAdapter, Multiplier, TargetedFeeAdjustment},
	sp_consensus_aura::sr25519::AuthorityId as AuraId,
	sp_core::Void,
	sp_runtime::{
		traits::{AccountIdConversion, Bounded, One},
		FixedPointNumber, Perbill, Perquintill,
	},
	sp_version::RuntimeVersion,
};

use crate::{
	AccountId, Aura, Balance, Balances, Block, BlockNumber, Hash, Nonce, PalletInfo, Providers,
	Runtime, RuntimeCall, RuntimeEvent, RuntimeFreezeReason, RuntimeHoldReason, RuntimeOrigin,
	RuntimeTask, EXISTENTIAL_DEPOSIT, SLOT_DURATION, VERSION,
};

/// Share of a block's weight and length open to normal transactions; the rest is kept for
/// operational ones (and inherents).
const NORMAL_DISPATCH_RATIO: Perbill = Perbill::from_percent(75);

/// Most validators a chain of this runtime can have.
pub const MAX_AUTHORITIES: u32 = 32;

parameter_types! {
	pub const BlockHashCount: u32 = 2400;
	pub const Version: RuntimeVersion = VERSION;
	/// Two seconds of compute per six-second block: the rest is import and propagation time.
	pub RuntimeBlockWeights: limits::BlockWeights = limits::BlockWeights::with_sensible_defaults(
		Weight::from_parts(2u64 * WEIGHT_REF_TIME_PER_SECOND, u64::MAX),
		NORMAL_DISPATCH_RATIO,
	);
	/// 5 MiB blocks, of which normal transactions may fill `NORMAL_DISPATCH_RATIO`.
	pub RuntimeBlockLength: limits::BlockLength = limits::BlockLength::builder()
		.max_length(5 * 1024 * 1024)
		.modify_max_length_for_class(DispatchClass::Normal, |max| *max = NORMAL_DISPATCH_RATIO * *max)
		.build();
	/// The generic Substrate SS58 prefix, so standard wallets display addresses as `5...`.
	pub const SS58Prefix: u16 = 42;
}

#[derive_impl(frame_system::config_preludes::SolochainDefaultConfig)]
impl frame_system::Config for Runtime {
	type Block = Block;
	type BlockWeights = RuntimeBlockWeights;
	type BlockLength = RuntimeBlockLength;
	type AccountId = AccountId;
	type Nonce = Nonce;
	type Hash = Hash;
	type BlockHashCount = BlockHashCount;
	// The node stores state in ParityDb (no RocksDB in the build), so use its weights.
	type DbWeight = ParityDbWeight;
	type Version = Version;
	type AccountData = pallet_balances::AccountData<Balance>;
	type SS58Prefix = SS58Prefix;
	type MaxConsumers = ConstU32<16>;
}

impl pallet_aura::Config for Runtime {
	type AuthorityId = AuraId;
	type DisabledValidators = ();
	type MaxAuthorities = ConstU32<MAX_AUTHORITIES>;
	type AllowMultipleBlocksPerSlot = ConstBool<false>;
	type SlotDuration = pallet_aura::MinimumPeriodTimesTwo<Runtime>;
}

impl pallet_grandpa::Config for Runtime {
	type RuntimeEvent = RuntimeEvent;
	type WeightInfo = ();
	type MaxAuthorities = ConstU32<MAX_AUTHORITIES>;
	type MaxNominators = ConstU32<0>;
	type MaxSetIdSessionEntries = ConstU64<0>;
	// No session/staking pallets: GRANDPA equivocations are not reportable on chain yet.
	type KeyOwnerProof = Void;
	type EquivocationReportSystem = ();
}

impl pallet_timestamp::Config for Runtime {
	type Moment = u64;
	type OnTimestampSet = Aura;
	type MinimumPeriod = ConstU64<{ SLOT_DURATION / 2 }>;
	type WeightInfo = ();
}

impl pallet_balances::Config for Runtime {
	type RuntimeEvent = RuntimeEvent;
	type RuntimeHoldReason = RuntimeHoldReason;
	type RuntimeFreezeReason = RuntimeFreezeReason;
	type WeightInfo = pallet_balances::weights::SubstrateWeight<Runtime>;
	type Balance = Balance;
	type DustRemoval = ();
	type ExistentialDeposit = polkadot_sdk::frame_support::traits::ConstU128<EXISTENTIAL_DEPOSIT>;
	type AccountStore = frame_system::Pallet<Runtime>;
	type ReserveIdentifier = [u8; 8];
	type FreezeIdentifier = RuntimeFreezeReason;
	type MaxLocks = ConstU32<50>;
	type MaxReserves = ConstU32<0>;
	type MaxFreezes = VariantCountOf<RuntimeFreezeReason>;
	type DoneSlashHandler = ();
}

parameter_types! {
	/// Blocks fuller than a quarter of their normal-class weight raise the fee multiplier;
	/// emptier ones lower it, never below the base fee.
	pub const TargetBlockFullness: Perquintill = Perquintill::from_percent(25);
	/// How fast: each full block raises fees by about 0.75%, so a hundred full blocks in a row
	/// double them and a thousand multiply them by about 1,800 (stuffing blocks for long
	/// grows costly; see the trust model for what this does not stop).
	pub AdjustmentVariable: Multiplier = Multiplier::saturating_from_rational(1, 100);
	pub MinimumMultiplier: Multiplier = Multiplier::one();
	pub MaximumMultiplier: Multiplier = Bounded::max_value();
}

/// The fee multiplier follows congestion (the slow-adjusting mechanism of Polkadot's
/// runtimes, with a faster variable and a floor at the base fee).
pub type FeeMultiplierUpdate = TargetedFeeAdjustment<
	Runtime,
	TargetBlockFullness,
	AdjustmentVariable,
	MinimumMultiplier,
	MaximumMultiplier,
>;

impl pallet_transaction_payment::Config for Runtime {
	type RuntimeEvent = RuntimeEvent;
	type OnChargeTransaction = FungibleAdapter<Balances, ()>;
	type WeightToFee = IdentityFee<Balance>;
	type LengthToFee = IdentityFee<Balance>;
	type FeeMultiplierUpdate = FeeMultiplierUpdate;
	type OperationalFeeMultiplier = ConstU8<5>;
	type WeightInfo = pallet_transaction_payment::weights::SubstrateWeight<Runtime>;
}

impl pallet_sudo::Config for Runtime {
	type RuntimeEvent = RuntimeEvent;
	type RuntimeCall = RuntimeCall;
	type WeightInfo = pallet_sudo::weights::SubstrateWeight<Runtime>;
}

parameter_types! {
	/// Smallest active stake a GPU provider must keep: 100 GRID.
	pub const ProviderMinStake: Balance = 100 * grid_primitives::currency::UNIT;
	/// Stake leaves `unbond` only after the longest round, the longest challenge window and
	/// the voting that may follow, plus how late the agenda may work a round's settlement
	/// (a running job's next round reaches four times `MaxAgendaReach`) and a challenge's
	/// decision (once): whatever a provider was paid for before it unbonded can still be
	/// challenged and slashed (its job locks keep the job's stake bonded meanwhile).
	pub const ProviderUnbondingPeriod: u32 = JOB_MAX_ROUND_BLOCKS +
		JOB_MAX_CHALLENGE_WINDOW +
		JOB_VOTING_PERIOD +
		5 * JOB_MAX_AGENDA_REACH;
}

impl pallet_providers::Config for Runtime {
	type RuntimeEvent = RuntimeEvent;
	type Currency = Balances;
	type RuntimeHoldReason = RuntimeHoldReason;
	type MinStake = ProviderMinStake;
	type UnbondingPeriod = ProviderUnbondingPeriod;
	type MaxUnbondingChunks = ConstU32<16>;
	type MaxProviders = ConstU32<1024>;
	/// A provider's stake backs at most 16 jobs at once (current ones and those it left
	/// within their challenge windows).
	type MaxJobsPerProvider = ConstU32<16>;
	/// A provider may move its probe endpoint once an hour.
	type EndpointCooldown = ConstU32<{ grid_primitives::time::HOURS }>;
	type WeightInfo = pallet_providers::weights::SubstrateWeight<Runtime>;
}

parameter_types! {
	/// Account that receives the protocol fee on job rewards.
	pub JobFeeCollector: AccountId = JOB_FEE_COLLECTOR.into_account_truncating();
	/// Protocol fee: 1% of paid rewards, escrowed by the buyer on top of them.
	pub const JobProtocolFee: Perbill = Perbill::from_percent(1);
	/// Equivocation is provable and deliberate: a fifth of the stake.
	pub const JobEquivocationSlash: Perbill = Perbill::from_percent(20);
	/// Missing rounds may be an outage: a light 1%.
	pub const JobLivenessSlash: Perbill = Perbill::from_percent(1);
	/// Of a slash: 20% to the reporter, 30% to the job's buyer, the rest burned.
	pub const JobReporterShare: Perbill = Perbill::from_percent(20);
	pub const JobBuyerShare: Perbill = Perbill::from_percent(30);
	/// Of a fraud slash, 20% more to the verifiers that voted `Invalid` (the rest burned).
	pub const JobVerifierShare: Perbill = Perbill::from_percent(20);
	/// Every challenge costs 10 GRID, kept whatever the outcome: a tenth of the deposit.
	pub const JobChallengeFee: Balance = 10 * grid_primitives::currency::UNIT;
	/// A challenger risks 100 GRID: enough to make frivolous challenges costly, small next to
	/// the stake a cheater loses.
	pub const JobChallengeDeposit: Balance = 100 * grid_primitives::currency::UNIT;
	/// A buyer's storage deposit per job: 1 GRID, back when the job's records are pruned
	/// (the challenge window and a vote after it ends).
	pub const JobStorageDeposit: Balance = grid_primitives::currency::UNIT;
	/// Proven fraud is deliberate: half the stake (besides the clawed-back reward).
	pub const JobFraudSlash: Perbill = Perbill::from_percent(50);
	/// A verifier that does not vote: 1%, like a missed round.
	pub const JobAbsentVoterSlash: Perbill = Perbill::from_percent(1);
	/// One paid contribution in a hundred is audited, by a committee of three: audits cost
	/// 3% of the training they check. With half the stake slashed, a job open to challenges
	/// asks a stake of 198 rounds' reward (`Deterrence::stake_for`).
	pub const JobAuditRate: Perbill = Perbill::from_percent(1);
}

/// Blocks from a challenge to its verdict deadline (one hour): the committee is drawn, re-executes
/// the challenged update, commits to its verdicts and reveals them.
pub const JOB_VOTING_PERIOD: BlockNumber = grid_primitives::time::CHALLENGE_VOTING_PERIOD;
/// The committee is drawn two blocks after the challenge, with randomness from a block the
/// challenger had not seen when it sent the challenge.
pub const JOB_COMMITTEE_DELAY: BlockNumber = 2;
/// The last ten minutes of the voting period are for revealing committed verdicts (they open
/// earlier once every member committed).
pub const JOB_REVEAL_PERIOD: BlockNumber = 10 * grid_primitives::time::MINUTES;
/// Longest round a job may ask for: a day.
pub const JOB_MAX_ROUND_BLOCKS: BlockNumber = grid_primitives::time::DAYS;
/// Longest challenge window a job may ask for. With the longest round and the voting period
/// it fits in the providers' unbonding period, so an accused provider cannot withdraw before
/// the verdict.
pub const JOB_MAX_CHALLENGE_WINDOW: BlockNumber = 12 * grid_primitives::time::HOURS;

/// Blocks past its due block an agenda entry may go when those blocks are full (a running
/// job's next round: four times as far).
pub const JOB_MAX_AGENDA_REACH: BlockNumber = 64;

/// The fee collector's pallet id; its account is endowed in genesis so fees below the
/// existential deposit can be paid to it.
pub const JOB_FEE_COLLECTOR: PalletId = PalletId(*b"grid/fee");

impl pallet_jobs::Config for Runtime {
	type RuntimeEvent = RuntimeEvent;
	type Currency = Balances;
	type RuntimeHoldReason = RuntimeHoldReason;
	type Providers = Providers;
	type ProofVerifier = pallet_jobs::Sr25519Verifier;
	type MaxParticipants = ConstU32<64>;
	type MaxRounds = ConstU32<100_000>;
	type MinRoundBlocks = ConstU32<2>;
	type MaxRoundBlocks = ConstU32<JOB_MAX_ROUND_BLOCKS>;
	/// A job runs at most 90 days (rounds × round blocks).
	type MaxJobBlocks = ConstU32<{ 90 * grid_primitives::time::DAYS }>;
	type MaxOpenBlocks = ConstU32<{ grid_primitives::time::DAYS }>;
	type MaxChallengeWindow = ConstU32<JOB_MAX_CHALLENGE_WINDOW>;
	/// A job open to challenges needs four members: a challenged update's sender and its
	/// challenger leave a committee of two, so one drawn Sybil can neither convict nor
	/// clear alone.
	type MinVerifiableProviders = ConstU32<4>;
	/// Two blocks (12 s) for the last third of a round's proofs after a quorum.
	type QuorumGrace = ConstU32<2>;
	type MaxSettlementsPerBlock = ConstU32<4>;
	/// 32 rounds or challenges due per block; a full block's entries go up to 64 blocks (six
	/// minutes) later, a running job's next round up to 256. Filling that means keeping 2,048
	/// jobs or challenges due within minutes of each other.
	type MaxAgendaPerBlock = ConstU32<32>;
	type MaxAgendaReach = ConstU32<JOB_MAX_AGENDA_REACH>;
	type MillisPerBlock = ConstU64<{ grid_primitives::time::MILLI_SECS_PER_BLOCK }>;
	type ProtocolFee = JobProtocolFee;
	type FeeCollector = JobFeeCollector;
	type EquivocationSlash = JobEquivocationSlash;
	type LivenessSlash = JobLivenessSlash;
	type MaxMissedRounds = ConstU32<3>;
	/// A job with fewer than `min_providers` for three settlements in a row ends and refunds.
	type MaxUnderstaffedRounds = ConstU32<3>;
	type ReporterShare = JobReporterShare;
	type BuyerShare = JobBuyerShare;
	type Randomness = pallet_jobs::ParentHashRandomness<Runtime>;
	type JobDeposit = JobStorageDeposit;
	type ChallengeDeposit = JobChallengeDeposit;
	type ChallengeFee = JobChallengeFee;
	type VerifierShare = JobVerifierShare;
	type MaxCommittee = ConstU32<5>;
	/// A verdict takes a majority of two at least: one drawn Sybil decides nothing alone.
	type MinCommittee = ConstU32<2>;
	type VotingPeriod = ConstU32<JOB_VOTING_PERIOD>;
	type CommitteeDelay = ConstU32<JOB_COMMITTEE_DELAY>;
	type RevealPeriod = ConstU32<JOB_REVEAL_PERIOD>;
	/// One challenger has at most 8 challenges open, one job at most 32.
	type MaxChallengesPerChallenger = ConstU32<8>;
	type MaxChallengesPerJob = ConstU32<32>;
	type FraudSlash = JobFraudSlash;
	type AbsentVoterSlash = JobAbsentVoterSlash;
	type AuditRate = JobAuditRate;
	type AuditCommittee = ConstU32<3>;
	/// Four audits per round at most (at 1%, a round of 64 expects 0.64).
	type MaxAuditsPerRound = ConstU32<4>;
	type AuthorityId = AuraId;
	type Validators = AuraValidators;
	/// Each validator probes up to 32 providers every 30 seconds.
	type ProbeInterval = ConstU32<5>;
	type ReportLongevity = ConstU32<5>;
	type ReportPriority = ConstU64<{ 1 << 20 }>;
	type WeightInfo = pallet_jobs::weights::SubstrateWeight<Runtime>;
	#[cfg(feature = "runtime-benchmarks")]
	type BenchmarkHelper = JobsBenchmarkHelper;
}

/// The block authors are the validators whose off-chain worker reports count. Their reports
/// are signed with their Aura key (no second key to manage); the report's domain-separated
/// payload can never be mistaken for a block seal, which signs a bare 32-byte hash.
pub struct AuraValidators;

impl polkadot_sdk::frame_support::traits::Get<alloc::vec::Vec<AuraId>> for AuraValidators {
	fn get() -> alloc::vec::Vec<AuraId> {
		pallet_aura::Authorities::<Runtime>::get().into_inner()
	}
}

impl<LocalCall> frame_system::offchain::CreateTransactionBase<LocalCall> for Runtime
where
	RuntimeCall: From<LocalCall>,
{
	type RuntimeCall = RuntimeCall;
	type Extrinsic = crate::UncheckedExtrinsic;
}

impl<LocalCall> frame_system::offchain::CreateTransaction<LocalCall> for Runtime
where
	RuntimeCall: From<LocalCall>,
{
	type Extension = crate::TxExtension;

	fn create_transaction(
		call: RuntimeCall,
		extension: crate::TxExtension,
	) -> crate::UncheckedExtrinsic {
		crate::UncheckedExtrinsic::new_transaction(call, extension)
	}
}

/// Authorized calls (the off-chain worker's reports) are general transactions: no signer, so
/// no nonce, immortal, and no fee (the payment extension charges only signed origins).
impl<LocalCall> frame_system::offchain::CreateAuthorizedTransaction<LocalCall> for Runtime
where
	RuntimeCall: From<LocalCall>,
{
	fn create_extension() -> crate::TxExtension {
		(
			frame_system::AuthorizeCall::<Runtime>::new(),
			frame_system::CheckNonZeroSender::<Runtime>::new(),
			frame_system::CheckSpecVersion::<Runtime>::new(),
			frame_system::CheckTxVersion::<Runtime>::new(),
			frame_system::CheckGenesis::<Runtime>::new(),
			frame_system::CheckEra::<Runtime>::from(
				polkadot_sdk::sp_runtime::generic::Era::Immortal,
			),
			frame_system::CheckNonce::<Runtime>::from(0),
			frame_system::CheckWeight::<Runtime>::new(),
			pallet_transaction_payment::ChargeTransactionPayment::<Runtime>::from(0),
			pallet_jobs::CheckProof::<Runtime>::new(),
			frame_system::WeightReclaim::<Runtime>::new(),
		)
	}
}

/// Benchmark providers: sr25519 keys generated in the benchmark's keystore (their public key
/// is the account), registered through the provider registry's benchmark helper.
#[cfg(feature = "runtime-benchmarks")]
pub struct JobsBenchmarkHelper;

#[cfg(feature = "runtime-benchmarks")]
const JOBS_BENCH_KEY: polkadot_sdk::sp_core::crypto::KeyTypeId =
	polkadot_sdk::sp_core::crypto::KeyTypeId(*b"gjob");

#[cfg(feature = "runtime-benchmarks")]
impl pallet_jobs::BenchmarkHelper<AccountId, AuraId> for JobsBenchmarkHelper {
	fn provider(index: u32) -> AccountId {
		let seed = alloc::format!("//grid-bench-provider-{index}").into_bytes();
		let public = polkadot_sdk::sp_io::crypto::sr25519_generate(JOBS_BENCH_KEY, Some(seed));
		let who = AccountId::from(public);
		pallet_providers::register_for_benchmarks::<Runtime>(&who);
		who
	}

	fn sign(who: &AccountId, payload: &[u8]) -> [u8; 64] {
		let public = polkadot_sdk::sp_core::sr25519::Public::from_raw(*who.as_ref());
		polkadot_sdk::sp_io::crypto::sr25519_sign(JOBS_BENCH_KEY, &public, payload)
			.expect("the key was generated in the keystore")
			.0
	}

	fn sign_as_peer(who: &AccountId, payload: &[u8]) -> ([u8; 32], [u8; 64]) {
		pallet_providers::sign_as_peer::<Runtime>(who, payload)
	}

	/// A fresh Aura key in the benchmark's keystore, made the only authority.
	fn validator() -> AuraId {
		use polkadot_sdk::sp_runtime::RuntimeAppPublic;
		let key = AuraId::generate_pair(None);
		pallet_aura::Authorities::<Runtime>::put(
			polkadot_sdk::sp_runtime::BoundedVec::truncate_from(alloc::vec![key.clone()]),
		);
		key
	}
}
