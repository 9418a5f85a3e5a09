//! Stake bookkeeping: every change to held funds goes through here so the record and the
//! hold never disagree (`do_try_state` checks it).

use polkadot_sdk::polkadot_sdk_frame::{
	prelude::*,
	traits::{
		fungible::{Inspect, MutateHold},
		tokens::{Fortitude, Precision, Preservation, Restriction},
	},
};

use crate::{BalanceOf, Config, Error, HoldReason, Providers, UnbondingChunk};

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
	Providers::<T>::try_mutate(who, |maybe| {
		let provider = maybe.as_mut().ok_or(Error::<T>::NotRegistered)?;
		ensure!(amount <= provider.stake, Error::<T>::InsufficientBond);
		let remaining = provider.stake - amount;
		if provider.active_jobs > 0 {
			ensure!(remaining >= T::MinStake::get(), Error::<T>::InJob);
		}
		ensure!(remaining.is_zero() || remaining >= T::MinStake::get(), Error::<T>::StakeTooLow);

		let unlock_at = frame_system::Pallet::<T>::block_number() + T::UnbondingPeriod::get();
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
	// A provider slashed below the minimum is out of admission until it bonds more.
	if !provider.stake.is_zero() && provider.stake < T::MinStake::get() {
		let rest = provider.stake;
		provider.stake = Zero::zero();
		let unlock_at = frame_system::Pallet::<T>::block_number() + T::UnbondingPeriod::get();
		if provider.unbonding.try_push(UnbondingChunk { amount: rest, unlock_at }).is_err() {
			// No room for a chunk: keep it active rather than lose track of held funds.
			provider.stake = rest;
		}
	}
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
