//! The randomness behind round seeds and committee draws on a chain without a VRF.

use core::marker::PhantomData;
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{
		sp_core::H256,
		sp_runtime::traits::{BlakeTwo256, Hash},
	},
	prelude::*,
	traits::Randomness,
};

/// `blake2_256(subject, parent hash)`. Aura has no VRF, so this is the best the chain has:
/// unpredictable before the parent block exists, but the parent's author could withhold its
/// block to re-draw once. Committees are drawn from a job's participants, so an author gains
/// at most one alternative draw among the same set.
pub struct ParentHashRandomness<T>(PhantomData<T>);

impl<T: frame_system::Config> Randomness<H256, BlockNumberFor<T>> for ParentHashRandomness<T> {
	fn random(subject: &[u8]) -> (H256, BlockNumberFor<T>) {
		let parent = frame_system::Pallet::<T>::parent_hash();
		let known_since = frame_system::Pallet::<T>::block_number().saturating_sub(One::one());
		(BlakeTwo256::hash_of(&(subject, parent)), known_since)
	}
}
