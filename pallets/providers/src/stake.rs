//! Stake bookkeeping: every change to held funds goes through here so the record and the
//! hold never disagree (`do_try_state` checks it).

use polkadot_sdk::polkadot_sdk_frame::{
	prelude::*,
	traits::{
		fungible::{Inspect, MutateHold},
		tokens::{Fortitude, Precision, Preservation, Restriction},
	},
};

use grid_primitives::job::JobId;

use crate::{
	traits::LockRefusal, BalanceOf, Config, Error, HoldReason, JobLock, LockState, Pallet,
	ProviderOf, Providers, UnbondingChunk,
};

/// Puts `amount` of `who`'s free balance on hold as provider stake.
pub(crate) fn hold<T: Config>(who: &T::AccountId, amount: BalanceOf<T>) -> DispatchResult {
	let spendable = T::Currency::reducible_balance(who, Preservation::Preserve, Fortitude::Polite);
	ensure!(spendable >= amount, Error::<T>::InsufficientBalance);
	T::Currency::hold(&HoldReason::ProviderStake.into(), who, amount)
}

pub(crate) fn bond_more<T: Config>(who: &T::AccountId, amount: BalanceOf<T>) -> DispatchResult {
	ensure!(!amount.is_zero(), Error::<T>::ZeroAmount);
	Providers::<T>::try_mutate(who, |maybe| {
		let provider = maybe.as_mut().ok_or(Error::<T>::NotRegistered)?;
		let stake = provider.stake.saturating_add(amount);
		// A provider that unbonded everything comes back only with at least the minimum.
		ensure!(stake >= T::MinStake::get(), Error::<T>::StakeTooLow);
		hold::<T>(who, amount)?;
		provider.stake = stake;
		Ok(())
	})
}

/// Moves `amount` from active stake into a chunk that unlocks after the unbonding period.
pub(crate) fn unbond<T: Config>(
	who: &T::AccountId,
	amount: BalanceOf<T>,
) -> Result<BlockNumberFor<T>, DispatchError> {
	ensure!(!amount.is_zero(), Error::<T>::ZeroAmount);
	let now = frame_system::Pallet::<T>::block_number();
	Providers::<T>::try_mutate(who, |maybe| {
		let provider = maybe.as_mut().ok_or(Error::<T>::NotRegistered)?;
		ensure!(amount <= provider.stake, Error::<T>::InsufficientBond);
		let remaining = provider.stake - amount;
		if provider.in_jobs() {
			ensure!(remaining >= T::MinStake::get(), Error::<T>::InJob);
		}
		provider.prune_locks(now);
		ensure!(remaining >= provider.locked(now), Error::<T>::StakeLocked);
		ensure!(remaining.is_zero() || remaining >= T::MinStake::get(), Error::<T>::StakeTooLow);

		let unlock_at = now + T::UnbondingPeriod::get();
		// Two unbonds in one block share a chunk.
		match provider.unbonding.last_mut() {
			Some(chunk) if chunk.unlock_at == unlock_at => {
				chunk.amount = chunk.amount.saturating_add(amount)
			}
			_ => provider
				.unbonding
				.try_push(UnbondingChunk { amount, unlock_at })
				.map_err(|_| Error::<T>::TooManyUnbondingChunks)?,
		}
		provider.stake = remaining;
		Ok(unlock_at)
	})
}

/// Frees the registry seat of `seat` for a newcomer staking `stake`: `seat` must hold no
/// binding job lock (nothing it did can still be challenged or slashed) and less than
/// `stake` in all. Releases everything it holds and removes its records.
pub(crate) fn evict<T: Config>(seat: &T::AccountId, stake: BalanceOf<T>) -> DispatchResult {
	let provider = Providers::<T>::get(seat).ok_or(Error::<T>::NotRegistered)?;
	let now = frame_system::Pallet::<T>::block_number();
	ensure!(provider.jobs.iter().all(|lock| !lock.binds_at(now)), Error::<T>::SeatInUse);
	let held = provider.total_held();
	ensure!(stake > held, Error::<T>::StakeBelowSeat);
	T::Currency::release(&HoldReason::ProviderStake.into(), seat, held, Precision::Exact)?;
	Pallet::<T>::remove_record(seat, &provider);
	Ok(())
}

/// Releases every chunk that has unlocked; returns the amount released.
pub(crate) fn withdraw_unbonded<T: Config>(
	who: &T::AccountId,
) -> Result<BalanceOf<T>, DispatchError> {
	let now = frame_system::Pallet::<T>::block_number();
	Providers::<T>::try_mutate(who, |maybe| {
		let provider = maybe.as_mut().ok_or(Error::<T>::NotRegistered)?;
		let mut released = BalanceOf::<T>::zero();
		provider.unbonding.retain(|chunk| {
			let unlocked = chunk.unlock_at <= now;
			if unlocked {
				released = released.saturating_add(chunk.amount);
			}
			!unlocked
		});
		ensure!(!released.is_zero(), Error::<T>::NothingToWithdraw);
		T::Currency::release(&HoldReason::ProviderStake.into(), who, released, Precision::Exact)?;
		Ok(released)
	})
}

/// Takes up to `amount` of `who`'s held stake: first active stake, then unbonding chunks
/// (newest first). Each recipient gets its share of what was taken; the rest is burned.
/// Returns `(taken, paid to recipients)`.
pub(crate) fn slash<T: Config>(
	who: &T::AccountId,
	amount: BalanceOf<T>,
	recipients: &[(T::AccountId, Perbill)],
) -> (BalanceOf<T>, BalanceOf<T>) {
	let reason: T::RuntimeHoldReason = HoldReason::ProviderStake.into();
	let Some(mut provider) = Providers::<T>::get(who) else {
		return (Zero::zero(), Zero::zero());
	};
	let taken = amount.min(provider.total_held());

	let mut left = taken;
	let from_stake = left.min(provider.stake);
	provider.stake -= from_stake;
	left -= from_stake;
	while !left.is_zero() {
		let Some(chunk) = provider.unbonding.last_mut() else { break };
		let from_chunk = left.min(chunk.amount);
		chunk.amount -= from_chunk;
		left -= from_chunk;
		if chunk.amount.is_zero() {
			provider.unbonding.pop();
		}
	}
	retire_below_minimum::<T>(&mut provider);
	Providers::<T>::insert(who, provider);

	let mut paid = BalanceOf::<T>::zero();
	for (recipient, share) in recipients {
		let part = (*share * taken).min(taken - paid);
		if part.is_zero() {
			continue;
		}
		// Best effort: a recipient that cannot receive (e.g. below existential deposit) just
		// leaves its part to be burned.
		if let Ok(moved) = T::Currency::transfer_on_hold(
			&reason,
			who,
			recipient,
			part,
			Precision::BestEffort,
			Restriction::Free,
			Fortitude::Force,
		) {
			paid = paid.saturating_add(moved);
		}
	}
	let to_burn = taken - paid;
	if !to_burn.is_zero() {
		let burned =
			T::Currency::burn_held(&reason, who, to_burn, Precision::BestEffort, Fortitude::Force);
		debug_assert!(burned.is_ok_and(|b| b == to_burn), "held funds match the record");
	}
	(taken, paid)
}

/// Locks `amount` of `who`'s active stake for `job`: the registry minimum and every other
/// lock must stay covered. A lock lingering from an earlier membership of the same job becomes
/// a member's lock again.
pub(crate) fn lock_for_job<T: Config>(
	who: &T::AccountId,
	job: JobId,
	amount: BalanceOf<T>,
) -> Result<(), LockRefusal> {
	let now = frame_system::Pallet::<T>::block_number();
	Providers::<T>::try_mutate(who, |maybe| {
		let provider = maybe.as_mut().ok_or(LockRefusal::NotEligible)?;
		provider.prune_locks(now);
		// A lingering lock (it still binds: pruned above otherwise) carries its open disputes
		// and how long it had to last over to the new one.
		let earlier = provider.jobs.iter().find(|l| l.job == job);
		let disputes = earlier.map_or(0, |l| l.disputes);
		let earlier_until = earlier.map_or(Zero::zero(), |l| match l.state {
			LockState::Until(until) => until.max(l.earlier_until),
			LockState::Member => l.earlier_until,
		});
		provider.jobs.retain(|lock| lock.job != job);
		let needed = provider.locked(now).saturating_add(amount);
		ensure!(
			provider.stake >= T::MinStake::get() && provider.stake >= needed,
			LockRefusal::NotEligible
		);
		let lock = JobLock { job, amount, state: LockState::Member, disputes, earlier_until };
		provider.jobs.try_push(lock).map_err(|_| LockRefusal::TooManyJobs)
	})
}

/// `who` no longer takes part in `job`: its lock lasts until `until` (dropped at once when
/// that is not in the future).
pub(crate) fn release_job<T: Config>(who: &T::AccountId, job: JobId, until: BlockNumberFor<T>) {
	let now = frame_system::Pallet::<T>::block_number();
	Providers::<T>::mutate(who, |maybe| {
		let Some(provider) = maybe else { return };
		for lock in provider.jobs.iter_mut().filter(|lock| lock.job == job) {
			lock.state = LockState::Until(until.max(lock.earlier_until));
		}
		provider.prune_locks(now);
		retire_below_minimum::<T>(provider);
	})
}

/// A challenge of `who`'s work in `job` opened (`open`) or was decided: while one is open its
/// lock for the job binds (see [`JobLock::disputes`]); the last decision lets it lapse.
pub(crate) fn note_dispute<T: Config>(who: &T::AccountId, job: JobId, open: bool) {
	let now = frame_system::Pallet::<T>::block_number();
	Providers::<T>::mutate(who, |maybe| {
		let Some(provider) = maybe else { return };
		for lock in provider.jobs.iter_mut().filter(|lock| lock.job == job) {
			lock.disputes = if open {
				lock.disputes.saturating_add(1)
			} else {
				lock.disputes.saturating_sub(1)
			};
		}
		provider.prune_locks(now);
		retire_below_minimum::<T>(provider);
	})
}

/// A provider below the minimum (after a slash) and in no job is out of admission until it
/// bonds more: its active stake starts unbonding, still held and slashable, and unlocks no
/// earlier than its job locks lapse. One still in a job keeps it active and locked until the
/// jobs pallet has removed it from its jobs.
fn retire_below_minimum<T: Config>(provider: &mut ProviderOf<T>) {
	if provider.stake.is_zero() || provider.stake >= T::MinStake::get() || provider.in_jobs() {
		return;
	}
	let rest = provider.stake;
	let now = frame_system::Pallet::<T>::block_number();
	let unlock_at = provider
		.jobs
		.iter()
		.filter_map(|lock| match lock.state {
			LockState::Until(until) => Some(until),
			LockState::Member => None,
		})
		.fold(now + T::UnbondingPeriod::get(), |latest, until| latest.max(until));
	if let Err(chunk) = provider.unbonding.try_push(UnbondingChunk { amount: rest, unlock_at }) {
		// No room for another chunk: join the last one, unlocking at the later of the two.
		let Some(last) = provider.unbonding.last_mut() else { return };
		last.amount = last.amount.saturating_add(chunk.amount);
		last.unlock_at = last.unlock_at.max(chunk.unlock_at);
	}
	provider.stake = Zero::zero();
}
