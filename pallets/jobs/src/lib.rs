//! # Training jobs
//!
//! A buyer posts a [`JobSpec`](grid_primitives::job::JobSpec) and the full budget goes on hold
//! ([`HoldReason::JobEscrow`]). Registered providers join; when `min_providers` have joined the
//! job runs, one round at a time. Each participant signs a
//! [`ContributionProof`](grid_primitives::job::ContributionProof) per round with its sr25519
//! account key; anyone may submit it. A round settles when every member has attested, shortly
//! after two thirds attest the same result (`QuorumGrace`), or at its deadline, in bounded
//! `on_initialize`/`on_idle` work. Settlement pays the round's reward from escrow to the members
//! that attested the quorum result and whose update most others used, in proportion to samples
//! processed (capped by their declared hardware), and returns the rest to the buyer.
//!
//! Misbehaviour is slashed through `pallet-providers`: two different signed proofs for one
//! (job, round, provider) ([`Pallet::report_equivocation`]) or two different commitments
//! signed by its libp2p key ([`Pallet::report_commitment_equivocation`]), missing `MaxMissedRounds`
//! rounds in a row, and an update a verifier committee finds invalid after a fraud challenge
//! ([`Pallet::challenge`], [`Pallet::commit_vote`], [`Pallet::reveal_vote`]; see
//! `challenges.rs`) or after a random audit the chain opens by itself (`audits.rs`: each
//! paid contribution with probability `AuditRate`). Each round draws a random
//! seed from which every member's training data is derived
//! ([`grid_primitives::work::data_seed`]), so a challenged update can be recomputed.
//!
//! Invariant (checked by `try_state` and the tests): for every job, paid + fees + refunded +
//! held == funded, and each buyer's hold equals the sum of its jobs' held escrow.
//!
//! Layout: calls and storage here; per-block work and its weight in `tick.rs`, escrow
//! movements in `escrow.rs`, membership in `membership.rs`, proofs and settlement in
//! `rounds.rs`, the payout split in `payout.rs`, fraud challenges in `challenges.rs`, random
//! audits in `audits.rs`, the agenda in `agenda.rs`, pruning in `expiry.rs`, slashing paths
//! in `slashing.rs`, invariants in
//! `try_state.rs`, signature checks in [`signature`]; types in [`types`].
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

pub use pallet::*;

mod agenda;
mod audits;
mod challenges;
mod escrow;
mod expiry;
mod membership;
mod payout;
mod proof_check;
mod randomness;
mod rounds;
pub mod signature;
mod slashing;
mod tick;
mod try_state;
pub mod types;
pub mod weights;
mod worker;

#[cfg(test)]
mod audit_tests;
#[cfg(feature = "runtime-benchmarks")]
mod benchmarking;
#[cfg(test)]
mod challenge_tests;
#[cfg(test)]
mod economics_tests;
#[cfg(test)]
mod equivocation_tests;
#[cfg(test)]
mod expiry_tests;
#[cfg(any(test, feature = "mock-runtime"))]
pub mod mock;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod worker_tests;

#[cfg(feature = "runtime-benchmarks")]
pub use benchmarking::BenchmarkHelper;
pub use proof_check::{CheckProof, PROOF_PRIORITY};
pub use randomness::ParentHashRandomness;
pub use signature::{ProofVerifier, Sr25519Verifier};
pub use types::*;
pub use weights::WeightInfo;
pub use worker::{Host as WorkerHost, NOTHING_TO_REPORT};

/// Most challenges `assigned_challenges` lists at once.
const ASSIGNED_CHALLENGES_SHOWN: usize = 256;

#[polkadot_sdk::polkadot_sdk_frame::pallet]
pub mod pallet {
	use super::*;
	use alloc::{boxed::Box, vec::Vec};
	use grid_primitives::{
		commitment::SignedCommitmentBytes,
		job::{
			Admission, Deterrence, JobId, JobSpec, RoundIndex, SignedProof, SpecError, SpecLimits,
		},
		work::{Verdict, VoteSalt, WorkerReport},
	};
	use pallet_providers::traits::{ProviderHealth, ProviderRegistry, ProviderSlashing};
	use polkadot_sdk::polkadot_sdk_frame::{
		deps::{sp_core::H256, sp_runtime::RuntimeAppPublic},
		prelude::*,
		traits::{fungible, Randomness},
	};

	/// Balance type of the configured currency.
	pub type BalanceOf<T> = <<T as Config>::Currency as fungible::Inspect<
		<T as frame_system::Config>::AccountId,
	>>::Balance;

	/// A stored job.
	pub type JobOf<T> =
		Job<<T as frame_system::Config>::AccountId, BalanceOf<T>, BlockNumberFor<T>>;

	/// A job spec with this runtime's balance and block number.
	pub type JobSpecOf<T> = JobSpec<BalanceOf<T>, BlockNumberFor<T>>;

	/// A job's admission rules with this runtime's accounts and block number.
	pub type AdmissionOf<T> = Admission<<T as frame_system::Config>::AccountId, BlockNumberFor<T>>;

	/// The open round of a job.
	pub type RoundStateOf<T> = RoundState<
		<T as frame_system::Config>::AccountId,
		BlockNumberFor<T>,
		<T as Config>::MaxParticipants,
	>;

	/// A settled round.
	pub type RoundSummaryOf<T> = RoundSummary<BalanceOf<T>, BlockNumberFor<T>>;

	/// A job as the view functions return it.
	pub type JobViewOf<T> = JobView<
		<T as frame_system::Config>::AccountId,
		BalanceOf<T>,
		BlockNumberFor<T>,
		<T as Config>::MaxParticipants,
	>;

	/// A signed proof with this runtime's accounts.
	pub type SignedProofOf<T> = SignedProof<<T as frame_system::Config>::AccountId>;

	/// A validator's off-chain worker report.
	pub type WorkerReportOf<T> = WorkerReport<
		<T as frame_system::Config>::AccountId,
		BlockNumberFor<T>,
		<T as Config>::AuthorityId,
	>;

	/// A validator's signature over a worker report.
	pub type AuthoritySignatureOf<T> = <<T as Config>::AuthorityId as RuntimeAppPublic>::Signature;

	/// An open fraud challenge.
	pub type ChallengeOf<T> = Challenge<
		<T as frame_system::Config>::AccountId,
		BalanceOf<T>,
		BlockNumberFor<T>,
		<T as Config>::MaxCommittee,
	>;

	/// Version 1: job records gained `understaffed_rounds` and `cancel_requested`. No chain ran version 0 (the first layout), so there is no
	/// migration; later layout changes bump this and ship one.
	const STORAGE_VERSION: StorageVersion = StorageVersion::new(1);

	#[pallet::pallet]
	#[pallet::storage_version(STORAGE_VERSION)]
	pub struct Pallet<T>(_);

	#[pallet::config]
	pub trait Config: frame_system::Config + CreateAuthorizedTransaction<Call<Self>> {
		/// The overarching event type.
		#[allow(deprecated)]
		type RuntimeEvent: From<Event<Self>> + IsType<<Self as frame_system::Config>::RuntimeEvent>;

		/// The currency budgets are held and paid in.
		type Currency: fungible::Inspect<Self::AccountId>
			+ fungible::Mutate<Self::AccountId>
			+ fungible::MutateHold<Self::AccountId, Reason = Self::RuntimeHoldReason>;

		/// The runtime's hold reasons, which include this pallet's.
		type RuntimeHoldReason: From<HoldReason>;

		/// The provider registry: eligibility, health records and slashing.
		type Providers: ProviderRegistry<Self::AccountId, BalanceOf<Self>, BlockNumberFor<Self>>
			+ ProviderHealth<Self::AccountId>
			+ ProviderSlashing<Self::AccountId, BalanceOf<Self>>;

		/// Checks proof signatures against the signing account.
		type ProofVerifier: ProofVerifier<Self::AccountId>;

		/// Most participants a job may have (at most 64, the most peers a proof can list).
		#[pallet::constant]
		type MaxParticipants: Get<u32>;

		/// Most rounds per job.
		#[pallet::constant]
		type MaxRounds: Get<RoundIndex>;

		/// Shortest round, in blocks.
		#[pallet::constant]
		type MinRoundBlocks: Get<BlockNumberFor<Self>>;

		/// Longest round, in blocks.
		#[pallet::constant]
		type MaxRoundBlocks: Get<BlockNumberFor<Self>>;

		/// Longest job, in blocks: its rounds times its round length.
		#[pallet::constant]
		type MaxJobBlocks: Get<BlockNumberFor<Self>>;

		/// How long a job may wait for `min_providers` to join before it ends and refunds:
		/// a job nobody fills must not hold its buyer's escrow, nor its early members' stake
		/// and job slots, for ever.
		#[pallet::constant]
		type MaxOpenBlocks: Get<BlockNumberFor<Self>>;

		/// Longest challenge window, in blocks.
		#[pallet::constant]
		type MaxChallengeWindow: Get<BlockNumberFor<Self>>;

		/// Fewest `min_providers` a job with a challenge window may ask for: a challenged
		/// update must leave a committee besides its sender and its challenger.
		#[pallet::constant]
		type MinVerifiableProviders: Get<u32>;

		/// Blocks a round waits after reaching a quorum for the remaining members' proofs.
		#[pallet::constant]
		type QuorumGrace: Get<BlockNumberFor<Self>>;

		/// Rounds `on_initialize` settles per block at most; `on_idle` settles more when the
		/// block has room.
		#[pallet::constant]
		type MaxSettlementsPerBlock: Get<u32>;

		/// Most rounds and challenges due in one block of the agenda.
		#[pallet::constant]
		type MaxAgendaPerBlock: Get<u32>;

		/// Blocks past its due block an entry may go when those blocks' agendas are full
		/// (a running job's next round may go four times as far).
		#[pallet::constant]
		type MaxAgendaReach: Get<u32>;

		/// Target block time, to turn a round's blocks into the time its hardware cap allows.
		#[pallet::constant]
		type MillisPerBlock: Get<u64>;

		/// Protocol fee on paid rewards; the buyer escrows it on top of the rewards.
		#[pallet::constant]
		type ProtocolFee: Get<Perbill>;

		/// Receives protocol fees.
		type FeeCollector: Get<Self::AccountId>;

		/// Part of a provider's stake taken for equivocation.
		#[pallet::constant]
		type EquivocationSlash: Get<Perbill>;

		/// Part of a provider's stake taken when it is removed for missing rounds.
		#[pallet::constant]
		type LivenessSlash: Get<Perbill>;

		/// Consecutive rounds without a proof after which a participant is removed.
		#[pallet::constant]
		type MaxMissedRounds: Get<u32>;

		/// Consecutive settlements after which fewer than `min_providers` take part, or of
		/// rounds without a quorum, that end a running job (the rest of its escrow goes back
		/// to the buyer).
		#[pallet::constant]
		type MaxUnderstaffedRounds: Get<u32>;

		/// Share of a slash that goes to whoever reported it.
		#[pallet::constant]
		type ReporterShare: Get<Perbill>;

		/// Share of a slash that goes to the job's buyer.
		#[pallet::constant]
		type BuyerShare: Get<Perbill>;

		/// Source of the round seeds and committee draws. Block authors can bias it a little
		/// (by withholding a block); see `docs/architecture.md` for the trust model.
		type Randomness: Randomness<H256, BlockNumberFor<Self>>;

		/// What a buyer puts on hold per job for the records the job leaves on chain; it
		/// returns when they are pruned (the challenge window and voting after the job ended).
		#[pallet::constant]
		type JobDeposit: Get<BalanceOf<Self>>;

		/// What a challenger pays the fee collector per challenge, whatever the outcome: the
		/// price of making a committee work.
		#[pallet::constant]
		type ChallengeFee: Get<BalanceOf<Self>>;

		/// Share of a fraud slash split among the verifiers that voted `Invalid` (a rejected
		/// challenge's deposit goes to those that voted `Valid`).
		#[pallet::constant]
		type VerifierShare: Get<Perbill>;

		/// What a challenger puts on hold; it goes to the verifiers if the challenge fails.
		#[pallet::constant]
		type ChallengeDeposit: Get<BalanceOf<Self>>;

		/// Verifiers drawn per challenge.
		#[pallet::constant]
		type MaxCommittee: Get<u32>;

		/// Fewest verifiers that may decide a challenge or an audit. With fewer holders of
		/// the update left to draw, a challenge cannot open, an audit does not, and a
		/// committee drawn short (holders left meanwhile) ends undecided: a verdict always
		/// takes a majority of at least this many, so one drawn Sybil never convicts or
		/// clears alone.
		#[pallet::constant]
		type MinCommittee: Get<u32>;

		/// Blocks from a challenge to its verdict deadline: the committee's draw, its commits
		/// and its reveals.
		#[pallet::constant]
		type VotingPeriod: Get<BlockNumberFor<Self>>;

		/// Blocks from a challenge to its committee's draw. At least one, so that the draw's
		/// randomness comes from a block the challenger had not seen.
		#[pallet::constant]
		type CommitteeDelay: Get<BlockNumberFor<Self>>;

		/// The last blocks of `VotingPeriod`, in which committed verdicts are revealed.
		#[pallet::constant]
		type RevealPeriod: Get<BlockNumberFor<Self>>;

		/// Most challenges one challenger may have open at once, so that no one can fill the
		/// agenda's blocks with challenges by itself.
		#[pallet::constant]
		type MaxChallengesPerChallenger: Get<u32>;

		/// Most challenges open at once against one job's contributions.
		#[pallet::constant]
		type MaxChallengesPerJob: Get<u32>;

		/// Part of a provider's stake taken when fraud is proven (besides the clawed-back
		/// reward).
		#[pallet::constant]
		type FraudSlash: Get<Perbill>;

		/// Part of a verifier's stake taken when it does not vote, or reveals the verdict its
		/// committee's majority decided against.
		#[pallet::constant]
		type AbsentVoterSlash: Get<Perbill>;

		/// Probability that a paid contribution to a job with a challenge window is audited:
		/// judged by a committee as if challenged, without anyone having to suspect it. With
		/// `FraudSlash` it sets the stake such a job must ask for
		/// ([`Deterrence::stake_for`]). Zero turns audits off.
		#[pallet::constant]
		type AuditRate: Get<Perbill>;

		/// Verifiers drawn per audit (at most `MaxCommittee`): each re-executes the update,
		/// so audits cost `AuditRate × AuditCommittee` of the training they check.
		#[pallet::constant]
		type AuditCommittee: Get<u32>;

		/// Most audits opened per settled round, whatever the draw says: bounds the work of
		/// an `Audit` agenda item.
		#[pallet::constant]
		type MaxAuditsPerRound: Get<u32>;

		/// The key validators sign their off-chain worker reports with.
		type AuthorityId: Member
			+ Parameter
			+ RuntimeAppPublic
			+ MaybeSerializeDeserialize
			+ MaxEncodedLen
			+ Ord;

		/// The current validators: only their reports are accepted.
		type Validators: Get<Vec<Self::AuthorityId>>;

		/// Blocks between two probe rounds of each validator's worker.
		#[pallet::constant]
		type ProbeInterval: Get<BlockNumberFor<Self>>;

		/// Blocks a worker report stays valid for.
		#[pallet::constant]
		type ReportLongevity: Get<BlockNumberFor<Self>>;

		/// Transaction pool priority of worker reports.
		#[pallet::constant]
		type ReportPriority: Get<TransactionPriority>;

		/// Weights of the calls and hooks.
		type WeightInfo: WeightInfo;

		/// Makes eligible providers and signs proofs for the benchmarks.
		#[cfg(feature = "runtime-benchmarks")]
		type BenchmarkHelper: BenchmarkHelper<Self::AccountId, Self::AuthorityId>;
	}

	/// Why this pallet holds funds.
	#[pallet::composite_enum]
	pub enum HoldReason {
		/// A buyer's budget for its jobs.
		JobEscrow,
		/// A challenger's deposit while its challenge is open.
		ChallengeDeposit,
		/// A buyer's storage deposit while its job's records are kept.
		JobDeposit,
	}

	/// The id the next job gets.
	#[pallet::storage]
	pub type NextJobId<T> = StorageValue<_, JobId, ValueQuery>;

	/// Every job ever created.
	#[pallet::storage]
	pub type Jobs<T: Config> = StorageMap<_, Twox64Concat, JobId, JobOf<T>>;

	/// The admission rules of jobs whose buyer set any (pruned with the job).
	#[pallet::storage]
	pub type Admissions<T: Config> = StorageMap<_, Twox64Concat, JobId, AdmissionOf<T>>;

	/// Participants of live jobs; the final participants of ended ones.
	#[pallet::storage]
	pub type Participants<T: Config> = StorageDoubleMap<
		_,
		Twox64Concat,
		JobId,
		Blake2_128Concat,
		T::AccountId,
		Participant<BalanceOf<T>>,
	>;

	/// The open round of each running job.
	#[pallet::storage]
	pub type Rounds<T: Config> = StorageMap<_, Twox64Concat, JobId, RoundStateOf<T>>;

	/// Proofs received for each job's open round (cleared when it settles).
	#[pallet::storage]
	pub type Proofs<T: Config> =
		StorageDoubleMap<_, Twox64Concat, JobId, Blake2_128Concat, T::AccountId, SignedProofOf<T>>;

	/// Outcome of every settled round.
	#[pallet::storage]
	pub type RoundResults<T: Config> =
		StorageDoubleMap<_, Twox64Concat, JobId, Twox64Concat, RoundIndex, RoundSummaryOf<T>>;

	/// What is due at each block: rounds to settle and challenges to decide, in arrival order.
	#[pallet::storage]
	pub type Agenda<T: Config> = StorageMap<
		_,
		Twox64Concat,
		BlockNumberFor<T>,
		BoundedVec<AgendaItem, T::MaxAgendaPerBlock>,
		ValueQuery,
	>;

	/// The earliest block whose agenda may still hold work; per-block work starts there.
	#[pallet::storage]
	pub type AgendaCursor<T: Config> = StorageValue<_, BlockNumberFor<T>, ValueQuery>;

	/// Paid contributions, the evidence a challenge disputes: by (job, round), then provider.
	#[pallet::storage]
	pub type Contributions<T: Config> = StorageDoubleMap<
		_,
		Twox64Concat,
		(JobId, RoundIndex),
		Blake2_128Concat,
		T::AccountId,
		Contribution<BalanceOf<T>>,
	>;

	/// The members of each round with paid contributions, in the round's order: the index
	/// space of [`Contribution::holders`]. Pruned with the contributions.
	#[pallet::storage]
	pub type RoundMembers<T: Config> = StorageDoubleMap<
		_,
		Twox64Concat,
		JobId,
		Twox64Concat,
		RoundIndex,
		BoundedVec<T::AccountId, T::MaxParticipants>,
	>;

	/// The id the next challenge gets.
	#[pallet::storage]
	pub type NextChallengeId<T> = StorageValue<_, ChallengeId, ValueQuery>;

	/// Open challenges (removed once decided).
	#[pallet::storage]
	pub type Challenges<T: Config> = StorageMap<_, Twox64Concat, ChallengeId, ChallengeOf<T>>;

	/// Every contribution challenged, with its challenge, by (job, round) then provider: each
	/// is judged once (pruned with the round); one whose challenge ended undecided is unmarked
	/// and may be challenged again.
	#[pallet::storage]
	pub type Challenged<T: Config> = StorageDoubleMap<
		_,
		Twox64Concat,
		(JobId, RoundIndex),
		Blake2_128Concat,
		T::AccountId,
		ChallengeId,
	>;

	/// How many challenges each challenger has open.
	#[pallet::storage]
	pub type OpenChallengesBy<T: Config> =
		StorageMap<_, Blake2_128Concat, T::AccountId, u32, ValueQuery>;

	/// How many challenges are open against each job's contributions.
	#[pallet::storage]
	pub type OpenChallengesOn<T: Config> = StorageMap<_, Twox64Concat, JobId, u32, ValueQuery>;

	/// How many audits are open against each job's contributions (apart from challenges, so
	/// that audits never count against the challenges a job may have open).
	#[pallet::storage]
	pub type OpenAuditsOn<T: Config> = StorageMap<_, Twox64Concat, JobId, u32, ValueQuery>;

	/// The block of each validator's latest accepted worker report.
	#[pallet::storage]
	pub type LastWorkerReport<T: Config> =
		StorageMap<_, Blake2_128Concat, T::AuthorityId, BlockNumberFor<T>>;

	/// The latest block in which a worker report settled agenda work. One report a block may
	/// settle: every validator asks while work is overdue, and free reports at their priority
	/// would otherwise take a block's room from users' transactions while a backlog lasts.
	#[pallet::storage]
	pub type ReportSettledIn<T: Config> = StorageValue<_, BlockNumberFor<T>>;

	/// (job, round, provider) equivocations already punished.
	#[pallet::storage]
	pub type Equivocations<T: Config> =
		StorageDoubleMap<_, Twox64Concat, (JobId, RoundIndex), Blake2_128Concat, T::AccountId, ()>;

	/// Where an open job's `Unfilled` entry is on the agenda: taken off when the job starts or
	/// ends before it is due, so that a job posted and cancelled frees its slot at once.
	#[pallet::storage]
	pub type UnfilledAt<T: Config> = StorageMap<_, Twox64Concat, JobId, BlockNumberFor<T>>;

	/// (job, provider) convicted of fraud or equivocation in the job: it may not join the job
	/// again, where committees for its other rounds are drawn. Pruned with the job.
	#[pallet::storage]
	pub type Convicted<T: Config> =
		StorageDoubleMap<_, Twox64Concat, JobId, Blake2_128Concat, T::AccountId, ()>;

	#[pallet::event]
	#[pallet::generate_deposit(pub(super) fn deposit_event)]
	pub enum Event<T: Config> {
		/// A job was posted and its budget put in escrow.
		JobCreated { job: JobId, buyer: T::AccountId, budget: BalanceOf<T> },
		/// A provider joined; it contributes from `from_round`.
		Joined { job: JobId, who: T::AccountId, from_round: RoundIndex },
		/// A provider left.
		Left { job: JobId, who: T::AccountId },
		/// The chain removed a participant.
		Removed { job: JobId, who: T::AccountId, reason: RemovalReason },
		/// Enough providers joined: training starts.
		JobStarted { job: JobId },
		/// A round opened for proofs until `deadline`.
		RoundOpened { job: JobId, round: RoundIndex, deadline: BlockNumberFor<T>, members: u32 },
		/// A participant's proof was accepted.
		ProofAccepted {
			job: JobId,
			round: RoundIndex,
			provider: T::AccountId,
			result_model_hash: H256,
		},
		/// Two thirds of the round's members attested `result_model_hash`.
		QuorumReached { job: JobId, round: RoundIndex, result_model_hash: H256 },
		/// A participant was paid for a round.
		RewardPaid { job: JobId, round: RoundIndex, who: T::AccountId, amount: BalanceOf<T> },
		/// A round settled: `paid` to participants, `fee` to the protocol, `refunded` to the
		/// buyer. No result means no quorum, and nobody was paid.
		RoundSettled {
			job: JobId,
			round: RoundIndex,
			result_model_hash: Option<H256>,
			paid: BalanceOf<T>,
			fee: BalanceOf<T>,
			refunded: BalanceOf<T>,
		},
		/// Every round settled.
		JobCompleted { job: JobId, final_model_hash: Option<H256> },
		/// The buyer cancelled a running job: it ends when `round` settles.
		CancelScheduled { job: JobId, round: RoundIndex },
		/// The buyer (or root) cancelled; `refunded` went back.
		JobCancelled { job: JobId, refunded: BalanceOf<T> },
		/// Fewer than `min_providers` took part, or no quorum was reached, for
		/// `MaxUnderstaffedRounds` settlements in a row: the job ended and `refunded` went back
		/// to the buyer.
		JobAbandoned { job: JobId, refunded: BalanceOf<T> },
		/// The job never reached `min_providers` within `MaxOpenBlocks` of its creation: it
		/// ended and `refunded` went back to the buyer.
		JobUnfilled { job: JobId, refunded: BalanceOf<T> },
		/// An ended job's records were pruned (no challenge can need them any more) and its
		/// buyer's storage `deposit` returned.
		JobPruned { job: JobId, deposit: BalanceOf<T> },
		/// A provider was punished for signing two different proofs for one round.
		EquivocationPunished {
			job: JobId,
			round: RoundIndex,
			provider: T::AccountId,
			reporter: T::AccountId,
			slashed: BalanceOf<T>,
		},
		/// A contribution was challenged; its committee is drawn at `draw_at` and votes until
		/// `deadline`.
		ChallengeOpened {
			id: ChallengeId,
			job: JobId,
			round: RoundIndex,
			accused: T::AccountId,
			challenger: T::AccountId,
			draw_at: BlockNumberFor<T>,
			deadline: BlockNumberFor<T>,
		},
		/// The chain audits a paid contribution: judged like a challenge, with no challenger.
		/// Its committee is drawn at once (`CommitteeDrawn` follows).
		AuditOpened {
			id: ChallengeId,
			job: JobId,
			round: RoundIndex,
			accused: T::AccountId,
			deadline: BlockNumberFor<T>,
		},
		/// A challenge's committee was drawn: its members commit to verdicts, and reveal them
		/// from `reveal_from` (or once all committed).
		CommitteeDrawn {
			id: ChallengeId,
			committee: Vec<T::AccountId>,
			reveal_from: BlockNumberFor<T>,
		},
		/// A committee member committed to a hidden verdict.
		VoteCommitted { id: ChallengeId, who: T::AccountId },
		/// A validator's worker reported `probes` probe results and settled `settled` overdue
		/// rounds and challenges.
		WorkerReported {
			validator: T::AuthorityId,
			at: BlockNumberFor<T>,
			probes: u32,
			settled: u32,
		},
		/// A verifier revealed its verdict.
		Voted { id: ChallengeId, who: T::AccountId, verdict: Verdict },
		/// A challenge was decided. `slashed` is the penalty taken from the accused,
		/// `clawed_back` its reward returned to the buyer, `absent` the verifiers slashed for
		/// not voting, `outvoted` those slashed for revealing the verdict the committee's
		/// majority decided against.
		ChallengeResolved {
			id: ChallengeId,
			job: JobId,
			round: RoundIndex,
			accused: T::AccountId,
			outcome: ChallengeOutcome,
			slashed: BalanceOf<T>,
			clawed_back: BalanceOf<T>,
			absent: u32,
			outvoted: u32,
		},
	}

	#[pallet::error]
	pub enum Error<T> {
		/// A model dimension is zero, or the GPT's heads do not divide its width.
		BadModel,
		/// The model is larger than the chain accepts.
		ModelTooLarge,
		/// The dataset URI is empty or not text, or its content hash is zero.
		BadDataset,
		/// The batch size is zero.
		BadBatchSize,
		/// The inner learning rate is zero or above one.
		BadInnerLearningRate,
		/// The outer learning rate is zero or above four.
		BadOuterLearningRate,
		/// The outer momentum is one or more.
		BadOuterMomentum,
		/// A compression parameter is out of range.
		BadCompression,
		/// Zero rounds.
		ZeroRounds,
		/// More rounds than `MaxRounds`.
		TooManyRounds,
		/// The reward per round is zero.
		ZeroReward,
		/// `min_providers` is zero or above `max_providers`.
		BadProviderRange,
		/// `max_providers` is above `MaxParticipants`.
		TooManyProviders,
		/// The round is shorter than `MinRoundBlocks`.
		RoundTooShort,
		/// The round is longer than `MaxRoundBlocks`.
		RoundTooLong,
		/// The challenge window is longer than `MaxChallengeWindow`.
		ChallengeWindowTooLong,
		/// rounds × round blocks is longer than `MaxJobBlocks`.
		JobTooLong,
		/// rounds × (reward + fee) overflows.
		BudgetOverflow,
		/// The buyer cannot put the budget on hold.
		InsufficientBalance,
		/// No such job.
		UnknownJob,
		/// Only the job's buyer may do that.
		NotBuyer,
		/// The job is completed or cancelled.
		JobEnded,
		/// The buyer cancelled the job: it ends when its open round settles.
		CancelPending,
		/// The caller is not a registered provider with the job's minimum stake (nor, to
		/// challenge, the job's buyer).
		NotEligible,
		/// The job's buyer admits only the accounts on its allowlist.
		NotOnAllowlist,
		/// The caller's health score is below the job's minimum.
		HealthTooLow,
		/// The caller registered more recently than the job's minimum age allows.
		RegisteredTooRecently,
		/// The job has a challenge window but too few `min_providers` to field a committee
		/// (`MinVerifiableProviders`).
		TooFewToVerify,
		/// The job has a challenge window but its `min_provider_stake` is too low for the
		/// chain's audits to make cheating a losing bet (`AuditRate`, `FraudSlash`).
		StakeTooLowToDeter,
		/// The provider's declared throughput, shared among its jobs and this one, cannot
		/// process a single batch in a round.
		Underpowered,
		/// Already a participant.
		AlreadyJoined,
		/// The job has `max_providers` participants.
		JobFull,
		/// The agenda's blocks this would be due in are full: try again a little later.
		AgendaFull,
		/// The provider takes part in (or recently left) as many jobs as it may.
		TooManyJobs,
		/// Not a participant of the job.
		NotParticipant,
		/// The job is not running.
		NotRunning,
		/// The proof is for another round than the open one.
		WrongRound,
		/// The open round's deadline has passed.
		RoundClosed,
		/// The proof's provider is not a member of the open round.
		NotRoundMember,
		/// A proof from this provider for this round is already on chain.
		DuplicateProof,
		/// The signature does not verify against the proof's provider.
		BadSignature,
		/// The two proofs are not for the same job, round and provider.
		DifferentSlots,
		/// The two proofs (or commitments) are identical: no equivocation.
		SameProof,
		/// A commitment's bytes do not start with its head (job, round, chain).
		MalformedCommitment,
		/// A commitment was signed for another chain.
		WrongChain,
		/// A commitment's key is not the libp2p key the provider bound at registration.
		NotProvidersKey,
		/// This equivocation was already punished.
		AlreadyReported,
		/// The round is neither open nor settled within its challenge window.
		NotReportable,
		/// A provider cannot challenge its own contribution.
		CannotChallengeSelf,
		/// The round has not been settled (or does not exist).
		RoundNotSettled,
		/// The provider was not paid for that round: there is nothing to challenge.
		NoSuchContribution,
		/// The job's challenge window for that round has passed.
		ChallengeWindowClosed,
		/// That contribution is being challenged, or a committee judged it already.
		AlreadyChallenged,
		/// Fewer than `MinCommittee` other registered participants of the job hold the
		/// update: nobody could decide the challenge.
		NoVerifiers,
		/// The challenger has `MaxChallengesPerChallenger` challenges open.
		TooManyChallengesByChallenger,
		/// The job has `MaxChallengesPerJob` challenges open.
		TooManyChallengesOnJob,
		/// No such open challenge.
		UnknownChallenge,
		/// The caller is not on the challenge's committee.
		NotOnCommittee,
		/// The caller already committed (to commit) or revealed (to reveal).
		AlreadyVoted,
		/// The voting deadline has passed.
		VotingClosed,
		/// The challenge's committee is not drawn yet.
		CommitteeNotDrawn,
		/// Commitments are no longer taken: verdicts are being revealed.
		CommitPhaseOver,
		/// Verdicts are revealed only from the reveal block, or once every member committed.
		RevealTooEarly,
		/// The caller committed to no verdict, so it has none to reveal.
		NotCommitted,
		/// The revealed verdict and salt are not what the caller committed to.
		RevealMismatch,
		/// The proof claims more samples than its inner steps hold at the job's batch size.
		SamplesExceedSteps,
		/// The initial weights' URI is empty or not text, or their content hash is zero.
		BadInitialWeights,
		/// The error-feedback decay is above one.
		BadErrorDecay,
		/// The job's cap on inner steps per round is zero.
		ZeroStepCap,
		/// The proof claims more inner steps than the job lets a round take.
		StepsOverCap,
		/// The job's overlapped steps are not below its cap on inner steps per round.
		OverlapOverStepCap,
		/// The job has more dense rounds than rounds.
		DenseRoundsOverRounds,
		/// The job's exchange grace or fetch wait is zero.
		BadExchange,
		/// The job's exchange allowance (twice the grace and half the fetch wait) is more
		/// than half its round.
		ExchangeOverHalfTheRound,
		/// The caller was convicted of fraud or equivocation in this job: it may not join it
		/// again (its members judge the job's other rounds).
		ConvictedInJob,
		/// The proof claims inner steps, samples or a start state but names no update (its
		/// update commitment is zero): work nobody can fetch or replay.
		WorkWithoutUpdate,
		/// The job's outer learning-rate anneal spans no round or more than the job has, or
		/// ends at zero or above its outer learning rate.
		BadOuterAnneal,
	}

	impl<T> From<SpecError> for Error<T> {
		fn from(error: SpecError) -> Self {
			match error {
				SpecError::BadModel => Error::BadModel,
				SpecError::ModelTooLarge => Error::ModelTooLarge,
				SpecError::BadDataset => Error::BadDataset,
				SpecError::BadBatchSize => Error::BadBatchSize,
				SpecError::BadInnerLearningRate => Error::BadInnerLearningRate,
				SpecError::BadOuterLearningRate => Error::BadOuterLearningRate,
				SpecError::BadOuterMomentum => Error::BadOuterMomentum,
				SpecError::BadCompression => Error::BadCompression,
				SpecError::BadErrorDecay => Error::BadErrorDecay,
				SpecError::ZeroRounds => Error::ZeroRounds,
				SpecError::TooManyRounds => Error::TooManyRounds,
				SpecError::ZeroReward => Error::ZeroReward,
				SpecError::BadProviderRange => Error::BadProviderRange,
				SpecError::TooManyProviders => Error::TooManyProviders,
				SpecError::RoundTooShort => Error::RoundTooShort,
				SpecError::RoundTooLong => Error::RoundTooLong,
				SpecError::ChallengeWindowTooLong => Error::ChallengeWindowTooLong,
				SpecError::JobTooLong => Error::JobTooLong,
				SpecError::TooFewToVerify => Error::TooFewToVerify,
				SpecError::StakeTooLowToDeter => Error::StakeTooLowToDeter,
				SpecError::BadInitialWeights => Error::BadInitialWeights,
				SpecError::ZeroStepCap => Error::ZeroStepCap,
				SpecError::OverlapOverStepCap => Error::OverlapOverStepCap,
				SpecError::DenseRoundsOverRounds => Error::DenseRoundsOverRounds,
				SpecError::BadOuterAnneal => Error::BadOuterAnneal,
				SpecError::BadExchange => Error::BadExchange,
				SpecError::ExchangeOverHalfTheRound => Error::ExchangeOverHalfTheRound,
			}
		}
	}

	#[pallet::call]
	impl<T: Config> Pallet<T> {
		/// Posts a job and puts `rounds × (reward_per_round + fee)` on hold from the caller.
		/// `admission` says who may join besides holding `min_provider_stake` (the default
		/// admits every eligible provider). The spec is boxed: it is most of the call's size,
		/// and every other call would otherwise be as large.
		#[pallet::call_index(0)]
		#[pallet::weight(
			T::WeightInfo::create_job()
				.saturating_add(T::DbWeight::get().writes(1))
				.saturating_add(agenda::search_weight::<T>(agenda::next_round_reach::<T>()))
		)]
		pub fn create_job(
			origin: OriginFor<T>,
			spec: Box<JobSpecOf<T>>,
			admission: AdmissionOf<T>,
		) -> DispatchResult {
			let buyer = ensure_signed(origin)?;
			spec.validate(&Self::spec_limits()).map_err(Error::<T>::from)?;
			let budget = escrow::budget::<T>(&spec)?;
			escrow::hold::<T>(HoldReason::JobEscrow, &buyer, budget)?;
			let deposit = T::JobDeposit::get();
			escrow::hold::<T>(HoldReason::JobDeposit, &buyer, deposit)?;
			let id = NextJobId::<T>::mutate(|next| {
				let id = *next;
				*next = next.saturating_add(1);
				id
			});
			let now = frame_system::Pallet::<T>::block_number();
			let unfilled_at = now.saturating_add(T::MaxOpenBlocks::get());
			// A day's wait need not end on the block: the longest reach leaves room for many
			// jobs posted in one block.
			let reach = agenda::next_round_reach::<T>();
			let unfilled_at = agenda::schedule::<T>(AgendaItem::Unfilled(id), unfilled_at, reach)?;
			UnfilledAt::<T>::insert(id, unfilled_at);
			let job = Job {
				buyer: buyer.clone(),
				spec: *spec,
				status: JobStatus::Open,
				created_at: now,
				participants: 0,
				rounds_settled: 0,
				understaffed_rounds: 0,
				cancel_requested: false,
				last_result: None,
				funded: budget,
				paid: Zero::zero(),
				fees: Zero::zero(),
				refunded: Zero::zero(),
				clawed_back: Zero::zero(),
				deposit,
			};
			Jobs::<T>::insert(id, job);
			if admission != AdmissionOf::<T>::default() {
				Admissions::<T>::insert(id, admission);
			}
			Self::deposit_event(Event::JobCreated { job: id, buyer, budget });
			Ok(())
		}

		/// Cancels a live job (buyer only). An open job ends at once. A running job ends when
		/// its open round settles (at its deadline, or earlier with a quorum), paid as usual:
		/// members that are working on it cannot be left unpaid. The rest of the escrow goes
		/// back to the buyer.
		#[pallet::call_index(1)]
		#[pallet::weight(
			T::WeightInfo::cancel_job(T::MaxParticipants::get())
				.saturating_add(rounds::cancel_extra_weight::<T>())
		)]
		pub fn cancel_job(origin: OriginFor<T>, job: JobId) -> DispatchResultWithPostInfo {
			let who = ensure_signed(origin)?;
			let record = Jobs::<T>::get(job).ok_or(Error::<T>::UnknownJob)?;
			ensure!(record.buyer == who, Error::<T>::NotBuyer);
			ensure!(record.status.is_live(), Error::<T>::JobEnded);
			ensure!(!record.cancel_requested, Error::<T>::CancelPending);
			let members = record.spec.max_providers;
			rounds::cancel_after_round::<T>(job, record);
			let extra = rounds::cancel_extra_weight::<T>();
			Ok(Some(T::WeightInfo::cancel_job(members).saturating_add(extra)).into())
		}

		/// Cancels any live job at once (root only): the way out of a job that harms the
		/// chain, without a runtime upgrade. An open round with a quorum is settled (paid)
		/// first; one without is dropped.
		#[pallet::call_index(9)]
		#[pallet::weight(
			T::WeightInfo::force_cancel_job(T::MaxParticipants::get())
				.saturating_add(rounds::force_cancel_extra_weight::<T>())
		)]
		pub fn force_cancel_job(origin: OriginFor<T>, job: JobId) -> DispatchResultWithPostInfo {
			ensure_root(origin)?;
			let record = Jobs::<T>::get(job).ok_or(Error::<T>::UnknownJob)?;
			ensure!(record.status.is_live(), Error::<T>::JobEnded);
			rounds::cancel_now::<T>(job);
			let extra = rounds::force_cancel_extra_weight::<T>();
			Ok(Some(
				T::WeightInfo::force_cancel_job(record.spec.max_providers).saturating_add(extra),
			)
			.into())
		}

		/// Joins a job as a participant. A running job admits the caller from its next round;
		/// an open job starts when this join brings it to `min_providers`.
		#[pallet::call_index(2)]
		#[pallet::weight(
			T::WeightInfo::join_job(T::MaxParticipants::get())
				.saturating_add(membership::join_extra_weight::<T>())
		)]
		pub fn join_job(origin: OriginFor<T>, job: JobId) -> DispatchResultWithPostInfo {
			let who = ensure_signed(origin)?;
			membership::join::<T>(job, who)?;
			let extra = membership::join_extra_weight::<T>();
			Ok(Some(T::WeightInfo::join_job(Self::members_bound(job)).saturating_add(extra)).into())
		}

		/// Leaves a job. Rounds already delivered stay paid; the open round's share of a
		/// leaver that has not been paid goes back to the buyer.
		#[pallet::call_index(3)]
		#[pallet::weight(T::WeightInfo::leave_job())]
		pub fn leave_job(origin: OriginFor<T>, job: JobId) -> DispatchResult {
			let who = ensure_signed(origin)?;
			membership::leave::<T>(job, who)
		}

		/// Records a participant's signed proof for the open round. Anyone may submit it (so
		/// proofs can be batched); the signature is what counts. Operational and, once
		/// accepted, free: see [`CheckProof`] for why stuffing blocks cannot crowd it out.
		/// Charged up front for the worst case, a last proof settling a round of the most
		/// members; a proof that settles nothing is charged only its recording afterwards
		/// (`record_proof`), so a block's weight holds as many proofs as that allows rather
		/// than as many settlements.
		#[pallet::call_index(4)]
		#[pallet::weight((
			rounds::proof_weight::<T>(T::MaxParticipants::get(), rounds::Submitted::Settled),
			DispatchClass::Operational
		))]
		pub fn submit_proof(
			origin: OriginFor<T>,
			proof: Box<SignedProofOf<T>>,
		) -> DispatchResultWithPostInfo {
			ensure_signed(origin)?;
			let job = proof.proof.job;
			let members = Self::members_bound(job);
			let actual = rounds::proof_weight::<T>(members, rounds::submit::<T>(*proof)?);
			Ok(PostDispatchInfo { actual_weight: Some(actual), pays_fee: Pays::No })
		}

		/// Punishes a provider that signed two different proofs for one (job, round): its
		/// stake is slashed (shares to the caller and the buyer), and it leaves the job.
		#[pallet::call_index(5)]
		#[pallet::weight(
			T::WeightInfo::report_equivocation().saturating_add(membership::conviction_weight::<T>())
		)]
		pub fn report_equivocation(
			origin: OriginFor<T>,
			first: Box<SignedProofOf<T>>,
			second: Box<SignedProofOf<T>>,
		) -> DispatchResult {
			let reporter = ensure_signed(origin)?;
			slashing::equivocation::<T>(reporter, *first, *second)
		}

		/// Punishes `provider` for two different commitments to its update for one (job,
		/// round), signed by the libp2p key it bound at registration: as for two proofs, its
		/// stake is slashed (shares to the caller and the buyer) and it leaves the job. One
		/// punishment a slot, whichever the evidence.
		#[pallet::call_index(11)]
		#[pallet::weight(
			T::WeightInfo::report_commitment_equivocation()
				.saturating_add(membership::conviction_weight::<T>())
		)]
		pub fn report_commitment_equivocation(
			origin: OriginFor<T>,
			provider: T::AccountId,
			first: Box<SignedCommitmentBytes>,
			second: Box<SignedCommitmentBytes>,
		) -> DispatchResult {
			let reporter = ensure_signed(origin)?;
			slashing::commitment_equivocation::<T>(reporter, provider, *first, *second)
		}

		/// Disputes `provider`'s paid contribution to `round` of `job` during the job's
		/// challenge window. The caller must be a registered provider or the job's buyer (who
		/// pays for the work, and needs no stake to question it); `ChallengeDeposit` goes on
		/// hold, `ChallengeFee` is paid, and a committee of the job's other participants is
		/// drawn to re-execute the update and vote.
		#[pallet::call_index(6)]
		#[pallet::weight(
			T::WeightInfo::challenge(T::MaxParticipants::get())
				.saturating_add(challenges::open_search_weight::<T>())
		)]
		pub fn challenge(
			origin: OriginFor<T>,
			job: JobId,
			round: RoundIndex,
			provider: T::AccountId,
		) -> DispatchResultWithPostInfo {
			let challenger = ensure_signed(origin)?;
			challenges::open::<T>(challenger, job, round, provider)?;
			let search = challenges::open_search_weight::<T>();
			Ok(Some(T::WeightInfo::challenge(Self::members_bound(job)).saturating_add(search))
				.into())
		}

		/// A committee member's commitment to its verdict on a challenged contribution:
		/// [`grid_primitives::work::vote_commitment`] of the challenge, the member, the verdict
		/// and a secret salt. Taken from the draw until the reveal block.
		#[pallet::call_index(7)]
		#[pallet::weight(T::WeightInfo::commit_vote())]
		pub fn commit_vote(
			origin: OriginFor<T>,
			challenge: ChallengeId,
			commitment: H256,
		) -> DispatchResult {
			let who = ensure_signed(origin)?;
			challenges::commit_vote::<T>(who, challenge, commitment)
		}

		/// Reveals a committed verdict. The challenge is decided as soon as a strict majority
		/// of the committee has revealed the same verdict.
		#[pallet::call_index(10)]
		#[pallet::weight(
			T::WeightInfo::reveal_vote()
				.saturating_add(T::WeightInfo::resolve_challenge(T::MaxCommittee::get()))
				.saturating_add(membership::conviction_weight::<T>())
		)]
		pub fn reveal_vote(
			origin: OriginFor<T>,
			challenge: ChallengeId,
			verdict: Verdict,
			salt: VoteSalt,
		) -> DispatchResult {
			let who = ensure_signed(origin)?;
			challenges::reveal_vote::<T>(who, challenge, verdict, salt)
		}

		/// A validator's off-chain worker report: probe results for the provider registry's
		/// health records, and a request to settle rounds and challenges the hooks could not
		/// reach (one report a block settles; the others are refused unless they carry
		/// probes). Sent without a signed origin: the validator's signature over the report is
		/// checked when the transaction is authorized (see `worker.rs`). Charged up front for
		/// a bounded settlement pass, refunded to what the pass worked.
		#[pallet::call_index(8)]
		#[pallet::weight(Pallet::<T>::worker_report_weight(report))]
		#[pallet::weight_of_authorize(worker::authorize_weight::<T>())]
		#[pallet::authorize(Pallet::<T>::authorize_worker_report)]
		pub fn submit_worker_report(
			origin: OriginFor<T>,
			report: WorkerReportOf<T>,
			// Checked by the authorization above.
			_signature: AuthoritySignatureOf<T>,
		) -> DispatchResultWithPostInfo {
			frame_system::ensure_authorized(origin)?;
			Ok(Some(worker::apply::<T>(report)).into())
		}
	}

	#[pallet::hooks]
	impl<T: Config> Hooks<BlockNumberFor<T>> for Pallet<T> {
		fn on_initialize(now: BlockNumberFor<T>) -> Weight {
			tick::on_initialize::<T>(now)
		}

		fn on_idle(now: BlockNumberFor<T>, remaining: Weight) -> Weight {
			tick::on_idle::<T>(now, remaining)
		}

		fn offchain_worker(now: BlockNumberFor<T>) {
			worker::offchain_worker::<T>(now);
		}

		fn integrity_test() {
			assert!(
				T::MaxParticipants::get()
					<= <grid_primitives::job::MaxProofPeers as Get<u32>>::get(),
				"MaxParticipants above the most peers a proof can list"
			);
			assert!(T::MaxParticipants::get() <= 64, "contribution holders are a 64-bit set");
			assert!(T::ReporterShare::get().saturating_add(T::BuyerShare::get()) <= Perbill::one());
			assert!(T::MinRoundBlocks::get() > Zero::zero(), "rounds must last a block");
			assert!(
				T::CommitteeDelay::get() > Zero::zero(),
				"a draw needs a later block's randomness"
			);
			assert!(T::RevealPeriod::get() > Zero::zero(), "reveals need a block");
			assert!(
				T::CommitteeDelay::get().saturating_add(T::RevealPeriod::get())
					< T::VotingPeriod::get(),
				"committees need a block to commit"
			);
			assert!(T::MinCommittee::get() > 0, "a committee needs a member");
			assert!(
				(T::MinCommittee::get()..=T::MaxCommittee::get())
					.contains(&T::AuditCommittee::get()),
				"an audit committee is a committee"
			);
			// An audit's committee is every member but the accused.
			assert!(
				T::MinVerifiableProviders::get() > T::MinCommittee::get(),
				"a verifiable job must be able to field a committee"
			);
		}

		#[cfg(feature = "try-runtime")]
		fn try_state(
			_n: BlockNumberFor<T>,
		) -> Result<(), polkadot_sdk::polkadot_sdk_frame::deps::sp_runtime::TryRuntimeError> {
			Self::do_try_state()
		}
	}

	#[pallet::view_functions]
	impl<T: Config> Pallet<T> {
		/// A job with its held escrow and open round.
		pub fn job(job: JobId) -> Option<JobViewOf<T>> {
			let record = Jobs::<T>::get(job)?;
			Some(JobView {
				held: record.held(),
				round: Rounds::<T>::get(job),
				admission: Admissions::<T>::get(job).unwrap_or_default(),
				job: record,
			})
		}

		/// Ids and states of up to `limit` (at most
		/// [`MAX_JOBS_LISTED`](grid_primitives::job::MAX_JOBS_LISTED)) jobs from `start` on
		/// (ids are sequential; pruned ones are skipped): the next page starts after the last.
		pub fn jobs(start: JobId, limit: u32) -> Vec<(JobId, JobStatus)> {
			let end = NextJobId::<T>::get();
			let limit = limit.min(grid_primitives::job::MAX_JOBS_LISTED);
			(start..end)
				.filter_map(|id| Jobs::<T>::get(id).map(|job| (id, job.status)))
				.take(limit as usize)
				.collect()
		}

		/// Participants of a job with their rewards.
		pub fn participants(job: JobId) -> Vec<(T::AccountId, Participant<BalanceOf<T>>)> {
			Participants::<T>::iter_prefix(job).take(T::MaxParticipants::get() as usize).collect()
		}

		/// The proofs received so far in a job's open round.
		pub fn round_proofs(job: JobId) -> Vec<SignedProofOf<T>> {
			Proofs::<T>::iter_prefix_values(job).take(T::MaxParticipants::get() as usize).collect()
		}

		/// The outcome of a settled round.
		pub fn round_result(job: JobId, round: RoundIndex) -> Option<RoundSummaryOf<T>> {
			RoundResults::<T>::get(job, round)
		}

		/// A paid contribution (the evidence a challenge disputes).
		pub fn contribution(
			job: JobId,
			round: RoundIndex,
			provider: T::AccountId,
		) -> Option<Contribution<BalanceOf<T>>> {
			Contributions::<T>::get((job, round), provider)
		}

		/// An open challenge.
		pub fn open_challenge(id: ChallengeId) -> Option<ChallengeOf<T>> {
			Challenges::<T>::get(id)
		}

		/// Open challenges whose committee includes `who`, for verifiers to find their work.
		pub fn assigned_challenges(who: T::AccountId) -> Vec<(ChallengeId, ChallengeOf<T>)> {
			Challenges::<T>::iter()
				.filter(|(_, c)| c.committee.iter().any(|(member, _)| *member == who))
				.take(ASSIGNED_CHALLENGES_SHOWN)
				.collect()
		}
	}

	impl<T: Config> Pallet<T> {
		/// The most members or participants any loop over `job` can meet: its `max_providers`
		/// (what calls whose cost grows with them are charged after the fact).
		pub(crate) fn members_bound(job: JobId) -> u32 {
			Jobs::<T>::get(job).map_or(T::MaxParticipants::get(), |j| j.spec.max_providers)
		}

		/// The chain's limits job specs are validated against.
		pub fn spec_limits() -> SpecLimits<BlockNumberFor<T>> {
			SpecLimits {
				max_rounds: T::MaxRounds::get(),
				max_participants: T::MaxParticipants::get(),
				min_round_blocks: T::MinRoundBlocks::get(),
				max_round_blocks: T::MaxRoundBlocks::get(),
				max_job_blocks: T::MaxJobBlocks::get(),
				max_challenge_window: T::MaxChallengeWindow::get(),
				min_verifiable_providers: T::MinVerifiableProviders::get(),
				deterrence: Deterrence {
					audit_rate: T::AuditRate::get(),
					fraud_slash: T::FraudSlash::get(),
				},
			}
		}
	}
}
