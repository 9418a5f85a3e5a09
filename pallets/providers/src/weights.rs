//! Weights of the provider registry's calls.
//!
//! Derived, not yet machine-measured: each call's storage accesses are counted from the code
//! (listed per function) and charged at the runtime's `DbWeight`; the compute part is a
//! conservative estimate (ed25519 verification ~60 µs, SCALE coding of a provider record
//! ~10 µs). The proof-size part is the `MaxEncodedLen` of the records touched. The benchmarks
//! in `benchmarking.rs` exercise the worst case of each call so `frame-benchmarking-cli` can
//! replace these numbers once the node ships the `benchmark` subcommand.
#![allow(unused_parens, unused_imports)]

use core::marker::PhantomData;
use polkadot_sdk::polkadot_sdk_frame::{prelude::*, weights_prelude::*};

/// Weight functions of `pallet-providers`.
pub trait WeightInfo {
	fn register() -> Weight;
	fn update() -> Weight;
	fn bond_more() -> Weight;
	fn unbond() -> Weight;
	fn withdraw_unbonded(chunks: u32) -> Weight;
	fn deregister() -> Weight;
}

/// Proof size of one provider record plus its health record and counter (bytes, rounded up).
const PROVIDER_PROOF: u64 = 2_200;
/// Proof size of an account's balance and holds (bytes, rounded up).
const BALANCE_PROOF: u64 = 400;

/// Weights for a runtime using `T::DbWeight`.
pub struct SubstrateWeight<T>(PhantomData<T>);
impl<T: frame_system::Config> WeightInfo for SubstrateWeight<T> {
	/// Reads: Providers, CounterForProviders, BlockHash(0), PeerOwners, Account, Holds.
	/// Writes: Providers, CounterForProviders, PeerOwners, HealthRecords, Account, Holds.
	fn register() -> Weight {
		Weight::from_parts(90_000_000, PROVIDER_PROOF + BALANCE_PROOF + 100)
			.saturating_add(T::DbWeight::get().reads_writes(6, 6))
	}
	/// Reads/writes: Providers.
	fn update() -> Weight {
		Weight::from_parts(25_000_000, PROVIDER_PROOF)
			.saturating_add(T::DbWeight::get().reads_writes(1, 1))
	}
	/// Reads: Providers, Account, Holds. Writes: Providers, Account, Holds.
	fn bond_more() -> Weight {
		Weight::from_parts(35_000_000, PROVIDER_PROOF + BALANCE_PROOF)
			.saturating_add(T::DbWeight::get().reads_writes(3, 3))
	}
	/// Reads/writes: Providers.
	fn unbond() -> Weight {
		Weight::from_parts(25_000_000, PROVIDER_PROOF)
			.saturating_add(T::DbWeight::get().reads_writes(1, 1))
	}
	/// Reads: Providers, Account, Holds. Writes: Providers, Account, Holds. Linear in the
	/// chunks scanned.
	fn withdraw_unbonded(chunks: u32) -> Weight {
		Weight::from_parts(35_000_000, PROVIDER_PROOF + BALANCE_PROOF)
			.saturating_add(Weight::from_parts(500_000, 0).saturating_mul(chunks.into()))
			.saturating_add(T::DbWeight::get().reads_writes(3, 3))
	}
	/// Reads: Providers, CounterForProviders. Writes: Providers, CounterForProviders,
	/// PeerOwners, HealthRecords.
	fn deregister() -> Weight {
		Weight::from_parts(30_000_000, PROVIDER_PROOF)
			.saturating_add(T::DbWeight::get().reads_writes(2, 4))
	}
}

/// Test weights: the same shape with a zero database cost.
impl WeightInfo for () {
	fn register() -> Weight {
		Weight::from_parts(90_000_000, PROVIDER_PROOF + BALANCE_PROOF + 100)
	}
	fn update() -> Weight {
		Weight::from_parts(25_000_000, PROVIDER_PROOF)
	}
	fn bond_more() -> Weight {
		Weight::from_parts(35_000_000, PROVIDER_PROOF + BALANCE_PROOF)
	}
	fn unbond() -> Weight {
		Weight::from_parts(25_000_000, PROVIDER_PROOF)
	}
	fn withdraw_unbonded(chunks: u32) -> Weight {
		Weight::from_parts(35_000_000 + 500_000 * chunks as u64, PROVIDER_PROOF + BALANCE_PROOF)
	}
	fn deregister() -> Weight {
		Weight::from_parts(30_000_000, PROVIDER_PROOF)
	}
}
