//! Storage and event types of the provider registry.

use codec::{Decode, DecodeWithMemTracking, Encode, MaxEncodedLen};
use grid_primitives::{
	job::JobId,
	provider::{Capabilities, Endpoint, Multiaddrs, PeerIdBytes},
};
use polkadot_sdk::polkadot_sdk_frame::prelude::*;
use scale_info::TypeInfo;

/// Stake that stops counting towards admission and waits out the unbonding period. It stays
/// on hold (and slashable) until `unlock_at`.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
pub struct UnbondingChunk<Balance, BlockNumber> {
	/// Amount waiting.
	pub amount: Balance,
	/// First block at which `withdraw_unbonded` releases it.
	pub unlock_at: BlockNumber,
}

/// How long a job's stake lock lasts.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
pub enum LockState<BlockNumber> {
	/// The provider takes part in the job: the lock lasts as long as it does.
	Member,
	/// It left, was removed, or the job ended: the lock lasts until this block, so that the
	/// rounds it was paid for can still be challenged and its stake slashed.
	Until(BlockNumber),
}

/// Active stake a job requires, locked for it: it cannot be unbonded while locked.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
pub struct JobLock<Balance, BlockNumber> {
	/// Which job.
	pub job: JobId,
	/// The job's `min_provider_stake`.
	pub amount: Balance,
	/// While it lasts.
	pub state: LockState<BlockNumber>,
	/// Open challenges of the provider's work in this job: while any is open the lock binds,
	/// whatever its state, so the stake a verdict may slash stays put however late it comes.
	pub disputes: u32,
	/// Until when the lock of an earlier membership of the same job still bound when the
	/// provider joined again (zero if none): leaving again never lets it lapse sooner, so
	/// re-joining cannot free stake that rounds paid before may still be slashed from.
	pub earlier_until: BlockNumber,
}

impl<Balance, BlockNumber: PartialOrd + Copy> JobLock<Balance, BlockNumber> {
	/// Whether the lock still binds stake at block `now`.
	pub fn binds_at(&self, now: BlockNumber) -> bool {
		self.disputes > 0
			|| match self.state {
				LockState::Member => true,
				LockState::Until(until) => now < until,
			}
	}

	/// Whether the provider still takes part in the job.
	pub fn is_member(&self) -> bool {
		self.state == LockState::Member
	}
}

/// A registered provider.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
#[scale_info(skip_type_params(MaxChunks, MaxJobs))]
pub struct Provider<Balance, BlockNumber, MaxChunks: Get<u32>, MaxJobs: Get<u32>> {
	/// Active stake: counts for admission and reward weight. On hold.
	pub stake: Balance,
	/// Stake on its way out. Also on hold.
	pub unbonding: BoundedVec<UnbondingChunk<Balance, BlockNumber>, MaxChunks>,
	/// Declared hardware.
	pub capabilities: Capabilities,
	/// libp2p identity, proven by a signature of its key over this account.
	pub peer_id: PeerIdBytes,
	/// Where trainers dial it.
	pub multiaddrs: Multiaddrs,
	/// HTTP endpoint validators probe.
	pub endpoint: Endpoint,
	/// Block of registration.
	pub registered_at: BlockNumber,
	/// Stake locked for the jobs it takes part in or recently left (maintained by the jobs
	/// pallet): at most one lock per job.
	pub jobs: BoundedVec<JobLock<Balance, BlockNumber>, MaxJobs>,
}

impl<
		Balance: AtLeast32BitUnsigned + Copy,
		BlockNumber: PartialOrd + Copy,
		MaxChunks: Get<u32>,
		MaxJobs: Get<u32>,
	> Provider<Balance, BlockNumber, MaxChunks, MaxJobs>
{
	/// Everything held for this provider: active stake plus unbonding chunks.
	pub fn total_held(&self) -> Balance {
		self.unbonding.iter().fold(self.stake, |sum, chunk| sum.saturating_add(chunk.amount))
	}

	/// Active stake locked for jobs at block `now`: it may not be unbonded.
	pub fn locked(&self, now: BlockNumber) -> Balance {
		self.jobs
			.iter()
			.filter(|lock| lock.binds_at(now))
			.fold(Zero::zero(), |sum: Balance, lock| sum.saturating_add(lock.amount))
	}

	/// Whether it takes part in any job.
	pub fn in_jobs(&self) -> bool {
		self.jobs.iter().any(JobLock::is_member)
	}

	/// Whether its active stake still backs every job it takes part in: the registry
	/// minimum and every lock.
	pub fn covers_jobs(&self, min_stake: Balance, now: BlockNumber) -> bool {
		!self.in_jobs() || (self.stake >= min_stake && self.stake >= self.locked(now))
	}

	/// Drops the locks that no longer bind at `now`.
	pub fn prune_locks(&mut self, now: BlockNumber) {
		self.jobs.retain(|lock| lock.binds_at(now));
	}
}

/// The result of one probe of a provider's endpoint by a validator.
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub struct Probe<BlockNumber> {
	/// Block the probe was recorded in.
	pub at: BlockNumber,
	/// Whether the endpoint answered correctly.
	pub ok: bool,
	/// Round-trip time in milliseconds (meaningful when `ok`).
	pub latency_ms: u32,
}

/// What the chain knows about how well a provider behaves.
#[derive(Clone, PartialEq, Eq, Debug, Default, Encode, Decode, MaxEncodedLen, TypeInfo)]
pub struct Health<BlockNumber> {
	/// Rounds it was paid for.
	pub rounds_delivered: u32,
	/// Rounds it was in but did not deliver.
	pub rounds_missed: u32,
	/// Fraud challenges decided against it.
	pub challenges_lost: u32,
	/// Probes that succeeded (uptime numerator).
	pub probes_ok: u32,
	/// Probes that failed.
	pub probes_failed: u32,
	/// The latest probe.
	pub last_probe: Option<Probe<BlockNumber>>,
}

impl<BlockNumber> Health<BlockNumber> {
	/// Score in `[0, 1]`: delivery ratio × uptime ratio, divided by `1 + challenges lost`.
	///
	/// Both ratios use add-one smoothing so a new provider starts at 1 and a single miss does
	/// not zero it; a lost fraud challenge halves the score, two divide it by three, and so on.
	pub fn score(&self) -> Perbill {
		let ratio = |good: u32, bad: u32| {
			let good = u64::from(good) + 1;
			Perbill::from_rational(good, good + u64::from(bad))
		};
		let delivery = ratio(self.rounds_delivered, self.rounds_missed);
		let uptime = ratio(self.probes_ok, self.probes_failed);
		let penalty = Perbill::from_rational(1u64, 1 + u64::from(self.challenges_lost));
		delivery * uptime * penalty
	}
}

/// Why stake was slashed (recorded in the `Slashed` event).
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum SlashReason {
	/// Two different signed proofs for the same job, round and provider.
	Equivocation,
	/// A fraud challenge found its update was not computed as claimed.
	Fraud,
	/// It missed rounds of a job it joined without leaving.
	Liveness,
	/// A verifier committee member that did not vote.
	CommitteeAbsence,
	/// A verifier committee member that revealed the verdict its committee's strict majority
	/// decided against (under an honest majority, a vote against the truth).
	Outvoted,
}

/// A provider as read through the view functions: its record, health and score.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, TypeInfo)]
#[scale_info(skip_type_params(MaxChunks, MaxJobs))]
pub struct ProviderView<Balance, BlockNumber, MaxChunks: Get<u32>, MaxJobs: Get<u32>> {
	/// The registry record.
	pub provider: Provider<Balance, BlockNumber, MaxChunks, MaxJobs>,
	/// Its health record.
	pub health: Health<BlockNumber>,
	/// Active stake locked for jobs now.
	pub locked: Balance,
	/// `health.score()`.
	pub score: Perbill,
}
