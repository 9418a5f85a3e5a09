//! The payout split of a round, as a pure function so its arithmetic can be tested alone.
//!
//! `rounds.rs` decides who qualifies and with what weight (samples processed, capped by
//! declared hardware); this file only divides the reward.

use alloc::{vec, vec::Vec};
use polkadot_sdk::polkadot_sdk_frame::prelude::*;

/// Splits `reward` among qualified members with `weights`, in a round of `members` members.
///
/// The reward has one slot per member, so the qualified members' pool is
/// `len / members` of it: the slots of members that do not qualify are not paid. The pool is
/// shared in proportion to weight. Both ratios are `Perbill`s rounded down, so the amounts
/// never add up to more than `reward`; the rounding dust stays in escrow and goes back to the
/// buyer with the round's rest. Returns one amount per weight, in order (zero when all
/// weights are zero).
pub(crate) fn split<B: AtLeast32BitUnsigned + Copy>(
	reward: B,
	members: u32,
	weights: &[u64],
) -> Vec<B> {
	// Exact: at most 64 weights of at most 2^64 each. (A saturating u64 sum let two members
	// claiming `u64::MAX` samples each take the whole pool each.)
	let total: u128 = weights.iter().map(|&weight| u128::from(weight)).sum();
	if total == 0 {
		return vec![B::zero(); weights.len()];
	}
	let pool = Perbill::from_rational(weights.len() as u32, members).mul_floor(reward);
	weights
		.iter()
		.map(|&weight| Perbill::from_rational(u128::from(weight), total).mul_floor(pool))
		.collect()
}

#[cfg(test)]
mod tests {
	use super::split;

	/// What a split leaves unpaid (returned to the buyer by settlement).
	fn unpaid(reward: u128, amounts: &[u128]) -> u128 {
		reward - amounts.iter().sum::<u128>()
	}

	#[test]
	fn equal_weights_share_the_reward_equally() {
		assert_eq!(split(1_000u128, 2, &[100, 100]), vec![500, 500]);
		assert_eq!(split(1_000u128, 4, &[7, 7, 7, 7]), vec![250; 4]);
	}

	#[test]
	fn shares_follow_the_weights_in_order() {
		assert_eq!(split(1_000u128, 2, &[100, 300]), vec![250, 750]);
		assert_eq!(split(1_000u128, 2, &[300, 100]), vec![750, 250]);
	}

	#[test]
	fn slots_of_members_that_do_not_qualify_are_not_paid() {
		// Two of three members qualify: two thirds of the reward is shared.
		let amounts = split(1_000u128, 3, &[100, 100]);
		assert_eq!(amounts, vec![333, 333]);
		assert_eq!(unpaid(1_000, &amounts), 334);
		assert_eq!(split(1_000u128, 4, &[100]), vec![250]);
	}

	#[test]
	fn rounding_dust_is_left_unpaid() {
		let amounts = split(10u128, 3, &[1, 1, 1]);
		assert_eq!(amounts, vec![3, 3, 3]);
		assert_eq!(unpaid(10, &amounts), 1);
		let amounts = split(1_000u128, 3, &[1, 1, 1]);
		assert_eq!(amounts, vec![333, 333, 333]);
		assert_eq!(unpaid(1_000, &amounts), 1);
	}

	#[test]
	fn perbill_precision_makes_the_dust_grow_with_the_reward() {
		// Each third is 333_333_333 parts per billion: a billionth of the reward stays unpaid.
		let reward = 1_000_000_000_000_000_000u128;
		let amounts = split(reward, 3, &[1, 1, 1]);
		assert_eq!(amounts, vec![333_333_333_000_000_000; 3]);
		assert_eq!(unpaid(reward, &amounts), 1_000_000_000);
	}

	#[test]
	fn no_contributors_get_nothing() {
		assert!(split(1_000u128, 4, &[]).is_empty());
		assert!(split(0u128, 0, &[]).is_empty());
	}

	#[test]
	fn zero_weights_get_nothing() {
		assert_eq!(split(1_000u128, 2, &[0, 0]), vec![0, 0]);
	}

	#[test]
	fn a_member_without_samples_still_brings_its_slot() {
		// Both qualified: the whole reward is the pool, and all of it goes to the one with
		// samples.
		assert_eq!(split(1_000u128, 2, &[0, 50]), vec![0, 1_000]);
	}

	#[test]
	fn a_share_under_a_billionth_rounds_to_zero() {
		assert_eq!(split(1_000u128, 2, &[1, 999_999_999_999]), vec![0, 999]);
	}

	#[test]
	fn a_zero_reward_pays_zero() {
		assert_eq!(split(0u128, 2, &[5, 10]), vec![0, 0]);
	}

	#[test]
	fn large_values_do_not_overflow() {
		assert_eq!(split(u128::MAX, 1, &[u64::MAX]), vec![u128::MAX]);
		// 64 equal weights adding up to just under `u64::MAX`: each gets exactly 1/64.
		let amounts = split(u128::MAX, 64, &[u64::MAX / 64; 64]);
		assert_eq!(amounts, vec![u128::MAX / 64; 64]);
		assert!(amounts.iter().try_fold(0u128, |sum, a| sum.checked_add(*a)).is_some());
		assert_eq!(split(u64::MAX, 2, &[u64::MAX / 2, u64::MAX / 2]), vec![u64::MAX / 2; 2]);
	}

	#[test]
	fn weights_whose_sum_passes_u64_max_share_the_pool_not_double_it() {
		// Two members each claiming (and capped at) u64::MAX samples: half each, not all each.
		assert_eq!(split(1_000u128, 2, &[u64::MAX, u64::MAX]), vec![500, 500]);
		let amounts = split(1_000u128, 3, &[u64::MAX, u64::MAX, u64::MAX / 2]);
		assert_eq!(amounts[..2], [400, 400]);
		assert!((199..=200).contains(&amounts[2]), "{amounts:?}");
		assert!(amounts.iter().sum::<u128>() <= 1_000);
	}

	#[test]
	fn works_for_any_balance_type() {
		assert_eq!(split(1_000u64, 3, &[100, 100]), vec![333u64, 333]);
		assert_eq!(split(1_000u32, 2, &[1, 3]), vec![250u32, 750]);
	}
}
