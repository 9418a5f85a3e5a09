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
/// unpredictable to anyone but the parent block's author before that block exists. That
/// author can grind: every choice of the block's transactions, their order or its timestamp
/// is another parent hash, so it can try as many draws as it can build blocks in its slot
/// and publish the one it likes (or withhold the block). Committees are drawn from a job's
/// participants that hold the update, so a grinding author picks among those members only;
/// mixing more block hashes would not help (the last author still grinds its own); a VRF
/// (BABE) or a commit-reveal beacon would.
pub struct ParentHashRandomness<T>(PhantomData<T>);

impl<T: frame_system::Config> Randomness<H256, BlockNumberFor<T>> for ParentHashRandomness<T> {
	fn random(subject: &[u8]) -> (H256, BlockNumberFor<T>) {
		let parent = frame_system::Pallet::<T>::parent_hash();
		let known_since = frame_system::Pallet::<T>::block_number().saturating_sub(One::one());
		(BlakeTwo256::hash_of(&(subject, parent)), known_since)
	}
}
