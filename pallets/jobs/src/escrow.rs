//! Moving a job's escrow: the buyer's budget on hold, payouts, fees and refunds.
//!
//! Every movement updates the job's `paid`/`fees`/`refunded` so that the invariant
//! `paid + fees + refunded + held == funded` holds after each call.

use polkadot_sdk::polkadot_sdk_frame::{
	prelude::*,
	traits::{
		fungible::MutateHold,
		tokens::{Fortitude, Precision, Restriction},
	},
};

use crate::{BalanceOf, Config, Error, HoldReason, JobOf, JobSpecOf};

/// Escrow of one round: the reward plus the protocol fee on it (rounded up, so the fee on any
/// split of the reward fits).
pub(crate) fn round_escrow<T: Config>(spec: &JobSpecOf<T>) -> BalanceOf<T> {
	spec.reward_per_round.saturating_add(T::ProtocolFee::get().mul_ceil(spec.reward_per_round))
}

/// The whole budget: `rounds × round_escrow`.
pub(crate) fn budget<T: Config>(spec: &JobSpecOf<T>) -> Result<BalanceOf<T>, Error<T>> {
	let reward = spec.reward_per_round;
	let per_round = reward
		.checked_add(&T::ProtocolFee::get().mul_ceil(reward))
		.ok_or(Error::<T>::BudgetOverflow)?;
	per_round.checked_mul(&spec.rounds.into()).ok_or(Error::<T>::BudgetOverflow)
}

/// Puts `amount` on hold from `buyer` for `reason` (its budget, or its storage deposit).
pub(crate) fn hold<T: Config>(
	reason: HoldReason,
	buyer: &T::AccountId,
	amount: BalanceOf<T>,
) -> DispatchResult {
	T::Currency::hold(&reason.into(), buyer, amount)
		.map_err(|_| Error::<T>::InsufficientBalance.into())
}

/// Returns a pruned job's storage deposit to its buyer.
pub(crate) fn release_deposit<T: Config>(job: &JobOf<T>) {
	let _ = T::Currency::release(
		&HoldReason::JobDeposit.into(),
		&job.buyer,
		job.deposit,
		Precision::BestEffort,
	);
}

/// Moves `amount` of the job's escrow to `to` as a reward. Returns what was paid: zero when
/// the transfer is impossible (e.g. it would create an account below the existential deposit),
/// in which case the amount stays held and is refunded with the round's rest. Never more than
/// the job still holds: a buyer's hold pools all its jobs' escrow, and one job must not pay
/// out of another's.
pub(crate) fn pay<T: Config>(
	job: &mut JobOf<T>,
	to: &T::AccountId,
	amount: BalanceOf<T>,
) -> BalanceOf<T> {
	let amount = amount.min(job.held());
	let moved = move_held::<T>(HoldReason::JobEscrow, &job.buyer, to, amount);
	job.paid = job.paid.saturating_add(moved);
	moved
}

/// Moves `amount` of the job's escrow (at most what it holds) to the fee collector. Returns
/// what was moved.
pub(crate) fn take_fee<T: Config>(job: &mut JobOf<T>, amount: BalanceOf<T>) -> BalanceOf<T> {
	let amount = amount.min(job.held());
	let moved = move_held::<T>(HoldReason::JobEscrow, &job.buyer, &T::FeeCollector::get(), amount);
	job.fees = job.fees.saturating_add(moved);
	moved
}

/// Releases up to `amount` of the job's escrow back to the buyer. Returns what was released.
pub(crate) fn refund<T: Config>(job: &mut JobOf<T>, amount: BalanceOf<T>) -> BalanceOf<T> {
	let amount = amount.min(job.held());
	if amount.is_zero() {
		return amount;
	}
	let released = T::Currency::release(
		&HoldReason::JobEscrow.into(),
		&job.buyer,
		amount,
		Precision::BestEffort,
	)
	.unwrap_or_default();
	job.refunded = job.refunded.saturating_add(released);
	released
}

/// Moves `amount` held from `from` for `reason` to `to`'s free balance. Returns what was
/// moved: zero when the transfer is impossible (the funds then stay held).
pub(crate) fn move_held<T: Config>(
	reason: HoldReason,
	from: &T::AccountId,
	to: &T::AccountId,
	amount: BalanceOf<T>,
) -> BalanceOf<T> {
	if amount.is_zero() {
		return amount;
	}
	T::Currency::transfer_on_hold(
		&reason.into(),
		from,
		to,
		amount,
		Precision::Exact,
		Restriction::Free,
		Fortitude::Polite,
	)
	.unwrap_or_default()
}
