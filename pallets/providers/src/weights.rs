//! Weights of `pallet_providers`, measured by `bench/weights.sh` (`grid-node benchmark pallet`,
//! frame-benchmarking-cli 64.0.0) on 2026-12-05: 20 steps, 10 repeats,
//! wasm runtime built with `runtime-benchmarks`, on `vm` (AMD EPYC).
//! Regenerate with `bash bench/weights.sh`; do not edit by hand.
//!
//! Each weight is the measured base time plus its slope per component, the storage reads and
//! writes the benchmark observed at the runtime's `DbWeight`, and the worst-case proof size.

#![cfg_attr(rustfmt, rustfmt_skip)]
#![allow(unused_parens)]
#![allow(unused_imports)]
#![allow(missing_docs)]

use polkadot_sdk::polkadot_sdk_frame::weights_prelude::*;

/// Weight functions of `pallet_providers`.
pub trait WeightInfo {
	fn register() -> Weight;
	fn update() -> Weight;
	fn bond_more() -> Weight;
	fn unbond() -> Weight;
	fn withdraw_unbonded(c: u32, ) -> Weight;
	fn deregister() -> Weight;
}

/// Weights at the runtime's `DbWeight`.
pub struct SubstrateWeight<T>(PhantomData<T>);
impl<T: frame_system::Config> WeightInfo for SubstrateWeight<T> {
	/// Storage: `Providers::CounterForProviders` (r:1 w:1)
	/// Proof: `Providers::CounterForProviders` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Providers::LoopbackEndpoints` (r:1 w:0)
	/// Proof: `Providers::LoopbackEndpoints` (`max_values`: Some(1), `max_size`: Some(1), added: 496, mode: `MaxEncodedLen`)
	/// Storage: `System::BlockHash` (r:1 w:0)
	/// Proof: `System::BlockHash` (`max_values`: None, `max_size`: Some(44), added: 2519, mode: `MaxEncodedLen`)
	/// Storage: `Providers::PeerOwners` (r:1 w:1)
	/// Proof: `Providers::PeerOwners` (`max_values`: None, `max_size`: Some(86), added: 2561, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:1 w:1)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:0 w:1)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	fn register() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `257`
		//  Estimated: `5769`
		// Minimum execution time: 134_180_000 picoseconds.
		Weight::from_parts(141_901_000, 5769)
			.saturating_add(T::DbWeight::get().reads(7_u64))
			.saturating_add(T::DbWeight::get().writes(6_u64))
	}
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Providers::EndpointChangedAt` (r:1 w:1)
	/// Proof: `Providers::EndpointChangedAt` (`max_values`: None, `max_size`: Some(52), added: 2527, mode: `MaxEncodedLen`)
	/// Storage: `Providers::LoopbackEndpoints` (r:1 w:0)
	/// Proof: `Providers::LoopbackEndpoints` (`max_values`: Some(1), `max_size`: Some(1), added: 496, mode: `MaxEncodedLen`)
	fn update() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1503`
		//  Estimated: `5769`
		// Minimum execution time: 30_625_000 picoseconds.
		Weight::from_parts(34_481_000, 5769)
			.saturating_add(T::DbWeight::get().reads(3_u64))
			.saturating_add(T::DbWeight::get().writes(2_u64))
	}
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:1 w:1)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	fn bond_more() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1732`
		//  Estimated: `5769`
		// Minimum execution time: 77_125_000 picoseconds.
		Weight::from_parts(81_561_000, 5769)
			.saturating_add(T::DbWeight::get().reads(3_u64))
			.saturating_add(T::DbWeight::get().writes(3_u64))
	}
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	fn unbond() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1503`
		//  Estimated: `5769`
		// Minimum execution time: 21_652_000 picoseconds.
		Weight::from_parts(24_406_000, 5769)
			.saturating_add(T::DbWeight::get().reads(1_u64))
			.saturating_add(T::DbWeight::get().writes(1_u64))
	}
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:1 w:1)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// The range of component `c` is `[1, 16]`.
	fn withdraw_unbonded(_c: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1732 + c * (20 ±0)`
		//  Estimated: `5769`
		// Minimum execution time: 66_159_000 picoseconds.
		Weight::from_parts(70_111_682, 5769)
			.saturating_add(T::DbWeight::get().reads(3_u64))
			.saturating_add(T::DbWeight::get().writes(3_u64))
	}
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Providers::CounterForProviders` (r:1 w:1)
	/// Proof: `Providers::CounterForProviders` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Providers::EndpointChangedAt` (r:0 w:1)
	/// Proof: `Providers::EndpointChangedAt` (`max_values`: None, `max_size`: Some(52), added: 2527, mode: `MaxEncodedLen`)
	/// Storage: `Providers::PeerOwners` (r:0 w:1)
	/// Proof: `Providers::PeerOwners` (`max_values`: None, `max_size`: Some(86), added: 2561, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:0 w:1)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	fn deregister() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1503`
		//  Estimated: `5769`
		// Minimum execution time: 28_473_000 picoseconds.
		Weight::from_parts(30_566_000, 5769)
			.saturating_add(T::DbWeight::get().reads(2_u64))
			.saturating_add(T::DbWeight::get().writes(5_u64))
	}
}

/// The same weights at ParityDB's costs, for tests and mocks.
impl WeightInfo for () {
	fn register() -> Weight {
		Weight::from_parts(141_901_000, 5769)
			.saturating_add(ParityDbWeight::get().reads(7_u64))
			.saturating_add(ParityDbWeight::get().writes(6_u64))
	}
	fn update() -> Weight {
		Weight::from_parts(34_481_000, 5769)
			.saturating_add(ParityDbWeight::get().reads(3_u64))
			.saturating_add(ParityDbWeight::get().writes(2_u64))
	}
	fn bond_more() -> Weight {
		Weight::from_parts(81_561_000, 5769)
			.saturating_add(ParityDbWeight::get().reads(3_u64))
			.saturating_add(ParityDbWeight::get().writes(3_u64))
	}
	fn unbond() -> Weight {
		Weight::from_parts(24_406_000, 5769)
			.saturating_add(ParityDbWeight::get().reads(1_u64))
			.saturating_add(ParityDbWeight::get().writes(1_u64))
	}
	fn withdraw_unbonded(_c: u32, ) -> Weight {
		Weight::from_parts(70_111_682, 5769)
			.saturating_add(ParityDbWeight::get().reads(3_u64))
			.saturating_add(ParityDbWeight::get().writes(3_u64))
	}
	fn deregister() -> Weight {
		Weight::from_parts(30_566_000, 5769)
			.saturating_add(ParityDbWeight::get().reads(2_u64))
			.saturating_add(ParityDbWeight::get().writes(5_u64))
	}
}
