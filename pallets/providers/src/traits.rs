//! How other pallets (jobs, the off-chain worker's reports) use the registry.

use alloc::vec::Vec;
use grid_primitives::{
	job::JobId,
	provider::{Capabilities, Endpoint, PeerIdBytes},
};
use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{health, stake, BalanceOf, Config, Pallet, Providers, SlashReason};

/// Why a provider cannot take part in a job.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LockRefusal {
	/// Not registered, or its active stake does not cover the registry minimum, the job's
	/// stake and what its other jobs lock.
	NotEligible,
	/// It takes part in (or recently left) `MaxJobsPerProvider` jobs.
	TooManyJobs,
}

/// Read access and job membership.
pub trait ProviderRegistry<AccountId, Balance, BlockNumber> {
	/// Whether `who` is registered with at least `min_stake` active stake (and the registry
	/// minimum).
	fn is_eligible(who: &AccountId, min_stake: Balance) -> bool;
	/// Active stake of `who` (zero when unregistered).
	fn active_stake(who: &AccountId) -> Balance;
	/// Declared capabilities of `who`.
	fn capabilities(who: &AccountId) -> Option<Capabilities>;
	/// The libp2p identity bound to `who`.
	fn peer_id(who: &AccountId) -> Option<PeerIdBytes>;
	/// Health score of `who` (zero when unregistered).
	fn health_score(who: &AccountId) -> Perbill;
	/// The block `who` registered at (`None` when unregistered).
	fn registered_at(who: &AccountId) -> Option<BlockNumber>;
	/// `who` joins `job`, which locks `amount` of its active stake: it cannot unbond that,
	/// drop below the registry minimum, change its capabilities or deregister until it
	/// leaves and the lock lapses.
	fn lock_for_job(who: &AccountId, job: JobId, amount: Balance) -> Result<(), LockRefusal>;
	/// `who` left `job` (or the job ended); its lock lasts until `until`, so that its paid
	/// rounds can be challenged and slashed until then.
	fn release_job(who: &AccountId, job: JobId, until: BlockNumber);
	/// A challenge of `who`'s work in `job` opened: its lock for the job binds until every
	/// such challenge is decided ([`Self::dispute_closed`]).
	fn dispute_opened(who: &AccountId, job: JobId);
	/// A challenge of `who`'s work in `job` was decided.
	fn dispute_closed(who: &AccountId, job: JobId);
	/// The open challenges of `who`'s work in `job` its lock counts.
	fn open_disputes(who: &AccountId, job: JobId) -> u32;
	/// The jobs `who` takes part in.
	fn jobs_of(who: &AccountId) -> Vec<JobId>;
	/// The stake `who`'s membership of `job` locks (`None` when it is not a member).
	fn member_lock(who: &AccountId, job: JobId) -> Option<Balance>;
	/// Whether `who`'s active stake still covers the registry minimum and its job locks
	/// (true when it takes part in no job). A slash can break it; the jobs pallet then
	/// removes the provider from each of its jobs as that job's round settles.
	fn covers_jobs(who: &AccountId) -> bool;
}

/// Writes to the health record.
pub trait ProviderHealth<AccountId> {
	/// `who` delivered a paid round.
	fn round_delivered(who: &AccountId);
	/// `who` was in a round and did not deliver.
	fn round_missed(who: &AccountId);
	/// A fraud challenge against `who` was decided against it.
	fn challenge_lost(who: &AccountId);
	/// A validator probed `who`'s endpoint.
	fn probed(who: &AccountId, ok: bool, latency_ms: u32);
	/// Up to `max` of the providers probe round `round` covers, with their probe endpoints,
	/// never probed first, then least recently probed; only endpoints validators may probe
	/// under today's rule (a public IP address, loopback on development chains). Every
	/// provider is covered once in a rotation of rounds that grows with the registry. For
	/// off-chain workers: it reads every provider.
	fn probe_targets(round: u64, max: u32) -> Vec<(AccountId, Endpoint)>;
	/// Whether a validator may report `who` in probe round `round` (registered, its endpoint
	/// probeable, and covered by that round): two reads.
	fn is_probe_target(who: &AccountId, round: u64) -> bool;
}

/// Slashing with evidence checked by the caller.
pub trait ProviderSlashing<AccountId, Balance> {
	/// Takes up to `amount` of `who`'s held stake (active first, then unbonding). Each
	/// `(recipient, share)` gets `share` of what was taken; the rest is burned. Emits
	/// `Slashed`. Returns the amount taken.
	fn slash(
		who: &AccountId,
		amount: Balance,
		reason: SlashReason,
		recipients: &[(AccountId, Perbill)],
	) -> Balance;
}

impl<T: Config> ProviderRegistry<T::AccountId, BalanceOf<T>, BlockNumberFor<T>> for Pallet<T> {
	fn is_eligible(who: &T::AccountId, min_stake: BalanceOf<T>) -> bool {
		Providers::<T>::get(who)
			.is_some_and(|p| p.stake >= min_stake.max(<T as Config>::MinStake::get()))
	}

	fn active_stake(who: &T::AccountId) -> BalanceOf<T> {
		Providers::<T>::get(who).map(|p| p.stake).unwrap_or_default()
	}

	fn capabilities(who: &T::AccountId) -> Option<Capabilities> {
		Providers::<T>::get(who).map(|p| p.capabilities)
	}

	fn peer_id(who: &T::AccountId) -> Option<PeerIdBytes> {
		Providers::<T>::get(who).map(|p| p.peer_id)
	}

	fn health_score(who: &T::AccountId) -> Perbill {
		Pallet::<T>::view_of(who).map(|v| v.score).unwrap_or_default()
	}

	fn registered_at(who: &T::AccountId) -> Option<BlockNumberFor<T>> {
		Providers::<T>::get(who).map(|p| p.registered_at)
	}

	fn lock_for_job(
		who: &T::AccountId,
		job: JobId,
		amount: BalanceOf<T>,
	) -> Result<(), LockRefusal> {
		stake::lock_for_job::<T>(who, job, amount)
	}

	fn release_job(who: &T::AccountId, job: JobId, until: BlockNumberFor<T>) {
		stake::release_job::<T>(who, job, until)
	}

	fn dispute_opened(who: &T::AccountId, job: JobId) {
		stake::note_dispute::<T>(who, job, true)
	}

	fn dispute_closed(who: &T::AccountId, job: JobId) {
		stake::note_dispute::<T>(who, job, false)
	}

	fn open_disputes(who: &T::AccountId, job: JobId) -> u32 {
		Providers::<T>::get(who)
			.and_then(|p| p.jobs.iter().find(|lock| lock.job == job).map(|lock| lock.disputes))
			.unwrap_or_default()
	}

	fn jobs_of(who: &T::AccountId) -> Vec<JobId> {
		Providers::<T>::get(who)
			.map(|p| p.jobs.iter().filter(|lock| lock.is_member()).map(|lock| lock.job).collect())
			.unwrap_or_default()
	}

	fn member_lock(who: &T::AccountId, job: JobId) -> Option<BalanceOf<T>> {
		let record = Providers::<T>::get(who)?;
		record.jobs.iter().find(|lock| lock.job == job && lock.is_member()).map(|lock| lock.amount)
	}

	fn covers_jobs(who: &T::AccountId) -> bool {
		let now = frame_system::Pallet::<T>::block_number();
		Providers::<T>::get(who).is_none_or(|p| p.covers_jobs(<T as Config>::MinStake::get(), now))
	}
}

impl<T: Config> ProviderHealth<T::AccountId> for Pallet<T> {
	fn round_delivered(who: &T::AccountId) {
		health::update::<T>(who, |h| h.rounds_delivered = h.rounds_delivered.saturating_add(1));
	}

	fn round_missed(who: &T::AccountId) {
		health::update::<T>(who, |h| h.rounds_missed = h.rounds_missed.saturating_add(1));
	}

	fn challenge_lost(who: &T::AccountId) {
		health::update::<T>(who, |h| h.challenges_lost = h.challenges_lost.saturating_add(1));
	}

	fn probed(who: &T::AccountId, ok: bool, latency_ms: u32) {
		health::record_probe::<T>(who, ok, latency_ms);
	}

	fn probe_targets(round: u64, max: u32) -> Vec<(T::AccountId, Endpoint)> {
		health::probe_targets::<T>(round, max)
	}

	fn is_probe_target(who: &T::AccountId, round: u64) -> bool {
		health::is_probe_target::<T>(who, round)
	}
}

impl<T: Config> ProviderSlashing<T::AccountId, BalanceOf<T>> for Pallet<T> {
	fn slash(
		who: &T::AccountId,
		amount: BalanceOf<T>,
		reason: SlashReason,
		recipients: &[(T::AccountId, Perbill)],
	) -> BalanceOf<T> {
		let (taken, to_recipients) = stake::slash::<T>(who, amount, recipients);
		if !taken.is_zero() {
			Pallet::<T>::deposit_event(crate::Event::Slashed {
				who: who.clone(),
				reason,
				amount: taken,
				to_recipients,
			});
		}
		taken
	}
}
