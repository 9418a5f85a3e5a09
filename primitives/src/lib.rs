//! Types shared by every part of Grid.
//!
//! The pallets, the runtime, the node, the trainer and the tests all import the chain's basic
//! types from here, so each side agrees on one definition (and therefore on the SCALE bytes).
//! Later additions (job specs, contribution proofs, signed payloads) belong here too.
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

pub mod commitment;
pub mod datasets;
pub mod endpoint;
pub mod job;
pub mod manifest;
#[cfg(feature = "std")]
pub mod ports;
pub mod provider;
pub mod resnet;
#[cfg(feature = "serde")]
pub mod spec_file;
pub mod work;

use polkadot_sdk::{
	sp_core::H256,
	sp_runtime::{
		generic,
		traits::{BlakeTwo256, IdentifyAccount, Verify},
		MultiSignature, OpaqueExtrinsic,
	},
};

/// Block number: a `u32` lasts 400+ years at six-second blocks.
pub type BlockNumber = u32;

/// A signature over the chain's transactions and payloads (sr25519, ed25519 or ecdsa).
pub type Signature = MultiSignature;

/// An account on chain: the public key behind [`Signature`].
pub type AccountId = <<Signature as Verify>::Signer as IdentifyAccount>::AccountId;

/// Token amounts. 12 decimals, like Polkadot's Planck-style units.
pub type Balance = u128;

/// Per-account transaction counter.
pub type Nonce = u32;

/// The chain's block and state hash.
pub type Hash = H256;

/// The hashing algorithm behind [`Hash`].
pub type Hashing = BlakeTwo256;

/// Block header shared by the runtime and the node.
pub type Header = generic::Header<BlockNumber, Hashing>;

/// A block whose extrinsics are opaque bytes: what the node handles without knowing the runtime.
pub type OpaqueBlock = generic::Block<Header, OpaqueExtrinsic>;

/// Currency units.
pub mod currency {
	use super::Balance;

	/// Decimal places of the native token.
	pub const DECIMALS: u8 = 12;
	/// One whole token.
	pub const UNIT: Balance = 1_000_000_000_000;
	/// A thousandth of a token.
	pub const MILLI_UNIT: Balance = UNIT / 1_000;
	/// A millionth of a token.
	pub const MICRO_UNIT: Balance = UNIT / 1_000_000;
	/// Token symbol shown by wallets.
	pub const TOKEN_SYMBOL: &str = "GRID";
}

/// Timing of block production.
pub mod time {
	use super::BlockNumber;

	/// Target time between blocks. Aura's slot is this long.
	pub const MILLI_SECS_PER_BLOCK: u64 = 6_000;
	/// Blocks per minute at the target block time.
	pub const MINUTES: BlockNumber = 60_000 / (MILLI_SECS_PER_BLOCK as BlockNumber);
	/// Blocks per hour.
	pub const HOURS: BlockNumber = MINUTES * 60;
	/// Blocks per day.
	pub const DAYS: BlockNumber = HOURS * 24;
	/// Blocks from a fraud challenge to its verdict deadline (the runtime's `VotingPeriod`):
	/// trainers keep a round's evidence for its challenge window and this long after it.
	pub const CHALLENGE_VOTING_PERIOD: BlockNumber = HOURS;
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn block_time_constants_are_consistent() {
		assert_eq!(time::MINUTES, 10);
		assert_eq!(time::DAYS, 14_400);
		assert_eq!(currency::UNIT, 10u128.pow(currency::DECIMALS as u32));
	}
}
