//! The Grid appchain runtime.
//!
//! A FRAME runtime with Aura block production, GRANDPA finality, balances with holds and
//! freezes, transaction payment and (for development chains) sudo. Grid's own pallets
//! (providers, jobs) plug in at the indices reserved in [`runtime`].
//!
//! Layout: pallet configuration in [`configs`], runtime APIs in [`apis`], genesis presets in
//! [`genesis_config_presets`].
#![cfg_attr(not(feature = "std"), no_std)]
// `#[frame_support::runtime]` expands to items without docs.
#![allow(missing_docs)]

#[cfg(feature = "std")]
include!(concat!(env!("OUT_DIR"), "/wasm_binary.rs"));

extern crate alloc;

// The runtime macros expand to code naming `Vec`, which `no_std` has no prelude for.
use alloc::vec::Vec;

// Before `apis`: it defines the `list_benchmarks!`/`add_benchmarks!` macros `apis` uses.
#[cfg(feature = "runtime-benchmarks")]
#[macro_use]
mod benchmarks;
pub mod apis;
pub mod configs;
pub mod genesis_config_presets;

use polkadot_sdk::{
	frame_support, frame_system, pallet_aura, pallet_balances, pallet_grandpa, pallet_sudo,
	pallet_timestamp, pallet_transaction_payment,
	sp_runtime::{self, generic, impl_opaque_keys},
	sp_version::{self, RuntimeVersion},
};

pub use grid_primitives::{
	AccountId, Balance, BlockNumber, Hash, Header, Nonce, OpaqueBlock, Signature,
};

/// Opaque types the node uses without knowing the runtime's extrinsic format, so it keeps
/// syncing across runtime upgrades that change it.
pub mod opaque {
	use super::*;
	pub use grid_primitives::{Header, OpaqueBlock as Block};
	pub use sp_runtime::OpaqueExtrinsic as UncheckedExtrinsic;

	impl_opaque_keys! {
		/// Keys a validator registers: one for block production, one for finality.
		pub struct SessionKeys {
			pub aura: Aura,
			pub grandpa: Grandpa,
		}
	}
}
pub use opaque::SessionKeys;

/// The runtime's identity. Bump `spec_version` on every change of runtime logic and
/// `transaction_version` whenever calls or their encoding change.
#[sp_version::runtime_version]
pub const VERSION: RuntimeVersion = RuntimeVersion {
	spec_name: alloc::borrow::Cow::Borrowed("grid"),
	impl_name: alloc::borrow::Cow::Borrowed("grid-node"),
	authoring_version: 1,
	spec_version: 100,
	impl_version: 1,
	apis: apis::RUNTIME_API_VERSIONS,
	transaction_version: 1,
	system_version: 1,
};

/// Aura's slot length: one block every slot when every validator is up.
pub const SLOT_DURATION: u64 = grid_primitives::time::MILLI_SECS_PER_BLOCK;

/// Minimum balance an account must hold to exist.
pub const EXISTENTIAL_DEPOSIT: Balance = grid_primitives::currency::MILLI_UNIT;

/// The address format of the chain's extrinsics.
pub type Address = sp_runtime::MultiAddress<AccountId, ()>;

/// Block type as the runtime sees it.
pub type Block = generic::Block<Header, UncheckedExtrinsic>;

/// Checks and payments applied to every signed transaction, in this order.
///
/// `AuthorizeCall` comes first so calls with a `#[pallet::authorize]` origin (the off-chain
/// worker's reports) are authorized before any signed-origin check runs.
pub type TxExtension = (
	frame_system::AuthorizeCall<Runtime>,
	frame_system::CheckNonZeroSender<Runtime>,
	frame_system::CheckSpecVersion<Runtime>,
	frame_system::CheckTxVersion<Runtime>,
	frame_system::CheckGenesis<Runtime>,
	frame_system::CheckEra<Runtime>,
	frame_system::CheckNonce<Runtime>,
	frame_system::CheckWeight<Runtime>,
	pallet_transaction_payment::ChargeTransactionPayment<Runtime>,
	pallet_jobs::CheckProof<Runtime>,
	frame_system::WeightReclaim<Runtime>,
);

/// An extrinsic as submitted to the chain.
pub type UncheckedExtrinsic =
	generic::UncheckedExtrinsic<Address, RuntimeCall, Signature, TxExtension>;

/// The payload a transaction's signer signs.
pub type SignedPayload = generic::SignedPayload<RuntimeCall, TxExtension>;

/// Storage migrations run on the next runtime upgrade (none yet).
type Migrations = ();

/// Dispatches blocks and extrinsics to the pallets.
pub type Executive = polkadot_sdk::frame_executive::Executive<
	Runtime,
	Block,
	frame_system::ChainContext<Runtime>,
	Runtime,
	AllPalletsWithSystem,
	Migrations,
>;

#[frame_support::runtime]
mod runtime {
	#[runtime::runtime]
	#[runtime::derive(
		RuntimeCall,
		RuntimeEvent,
		RuntimeError,
		RuntimeOrigin,
		RuntimeFreezeReason,
		RuntimeHoldReason,
		RuntimeSlashReason,
		RuntimeLockId,
		RuntimeTask,
		RuntimeViewFunction
	)]
	pub struct Runtime;

	#[runtime::pallet_index(0)]
	pub type System = frame_system;

	#[runtime::pallet_index(1)]
	pub type Timestamp = pallet_timestamp;

	#[runtime::pallet_index(2)]
	pub type Aura = pallet_aura;

	#[runtime::pallet_index(3)]
	pub type Grandpa = pallet_grandpa;

	#[runtime::pallet_index(4)]
	pub type Balances = pallet_balances;

	#[runtime::pallet_index(5)]
	pub type TransactionPayment = pallet_transaction_payment;

	#[runtime::pallet_index(6)]
	pub type Sudo = pallet_sudo;

	// Grid's own pallets start at 10.
	#[runtime::pallet_index(10)]
	pub type Providers = pallet_providers;

	#[runtime::pallet_index(11)]
	pub type Jobs = pallet_jobs;
}

#[cfg(test)]
mod tests;
