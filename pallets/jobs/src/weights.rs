//! Weights of `pallet_jobs`, measured by `bench/weights.sh` (`grid-node benchmark pallet`,
//! frame-benchmarking-cli 64.0.0) on 2026-11-24: 20 steps, 10 repeats,
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

/// Weight functions of `pallet_jobs`.
pub trait WeightInfo {
	fn create_job() -> Weight;
	fn cancel_job(p: u32, ) -> Weight;
	fn force_cancel_job(p: u32, ) -> Weight;
	fn join_job(p: u32, ) -> Weight;
	fn leave_job() -> Weight;
	fn submit_proof(p: u32, ) -> Weight;
	fn report_equivocation() -> Weight;
	fn settle_round(p: u32, ) -> Weight;
	fn settle_round_slashing(p: u32, ) -> Weight;
	fn challenge(p: u32, ) -> Weight;
	fn vote() -> Weight;
	fn resolve_challenge(k: u32, ) -> Weight;
	fn expire(p: u32, ) -> Weight;
	fn authorize_worker_report() -> Weight;
	fn apply_worker_report(n: u32, ) -> Weight;
}

/// Weights at the runtime's `DbWeight`.
pub struct SubstrateWeight<T>(PhantomData<T>);
impl<T: frame_system::Config> WeightInfo for SubstrateWeight<T> {
	/// Storage: `System::Account` (r:1 w:1)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::NextJobId` (r:1 w:1)
	/// Proof: `Jobs::NextJobId` (`max_values`: Some(1), `max_size`: Some(8), added: 503, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:1 w:1)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:0 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	fn create_job() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `146`
		//  Estimated: `3894`
		// Minimum execution time: 80_190_000 picoseconds.
		Weight::from_parts(85_498_000, 3894)
			.saturating_add(T::DbWeight::get().reads(5_u64))
			.saturating_add(T::DbWeight::get().writes(5_u64))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:0)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4453), added: 6928, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:1 w:1)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:64 w:0)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:63 w:63)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:1 w:1)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn cancel_job(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `0 + p * (1520 ±0)`
		//  Estimated: `10420 + p * (4389 ±0)`
		// Minimum execution time: 95_182_000 picoseconds.
		Weight::from_parts(66_013_714, 10420)
			// Standard Error: 68_120
			.saturating_add(Weight::from_parts(13_522_400, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(5_u64))
			.saturating_add(T::DbWeight::get().reads((2_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(3_u64))
			.saturating_add(T::DbWeight::get().writes((1_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4389).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4453), added: 6928, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:3 w:3)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Proofs` (r:44 w:43)
	/// Proof: `Jobs::Proofs` (`max_values`: None, `max_size`: Some(2330), added: 4805, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:65 w:64)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:64 w:64)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:45 w:45)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:64 w:64)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `System::ParentHash` (r:1 w:0)
	/// Proof: `System::ParentHash` (`max_values`: Some(1), `max_size`: Some(32), added: 527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:0 w:43)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(164), added: 2639, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:0 w:1)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:0 w:1)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn force_cancel_job(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `0 + p * (3315 ±0)`
		//  Estimated: `9702 + p * (4715 ±8)`
		// Minimum execution time: 379_346_000 picoseconds.
		Weight::from_parts(146_493_020, 9702)
			// Standard Error: 216_339
			.saturating_add(Weight::from_parts(71_677_340, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(12_u64))
			.saturating_add(T::DbWeight::get().reads((4_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(10_u64))
			.saturating_add(T::DbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4715).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:65 w:1)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:1 w:1)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `System::ParentHash` (r:1 w:0)
	/// Proof: `System::ParentHash` (`max_values`: Some(1), `max_size`: Some(32), added: 527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:0 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4453), added: 6928, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[1, 64]`.
	fn join_job(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `2264 + p * (90 ±0)`
		//  Estimated: `5705 + p * (2567 ±0)`
		// Minimum execution time: 59_890_000 picoseconds.
		Weight::from_parts(81_048_398, 5705)
			// Standard Error: 38_168
			.saturating_add(Weight::from_parts(4_025_145, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(6_u64))
			.saturating_add(T::DbWeight::get().reads((1_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(5_u64))
			.saturating_add(Weight::from_parts(0, 2567).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:1 w:1)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	fn leave_job() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `2410`
		//  Estimated: `5705`
		// Minimum execution time: 31_858_000 picoseconds.
		Weight::from_parts(35_273_000, 5705)
			.saturating_add(T::DbWeight::get().reads(3_u64))
			.saturating_add(T::DbWeight::get().writes(3_u64))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4453), added: 6928, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Proofs` (r:65 w:64)
	/// Proof: `Jobs::Proofs` (`max_values`: None, `max_size`: Some(2330), added: 4805, mode: `MaxEncodedLen`)
	/// Storage: `System::BlockHash` (r:1 w:0)
	/// Proof: `System::BlockHash` (`max_values`: None, `max_size`: Some(44), added: 2519, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:3 w:3)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:65 w:64)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:64 w:0)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:66 w:66)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:64 w:64)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `System::ParentHash` (r:1 w:0)
	/// Proof: `System::ParentHash` (`max_values`: Some(1), `max_size`: Some(32), added: 527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:0 w:64)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(164), added: 2639, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:0 w:1)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:0 w:1)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[1, 64]`.
	fn submit_proof(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `0 + p * (3999 ±0)`
		//  Estimated: `10241 + p * (4805 ±0)`
		// Minimum execution time: 238_226_000 picoseconds.
		Weight::from_parts(91_004_751, 10241)
			// Standard Error: 399_581
			.saturating_add(Weight::from_parts(84_734_879, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(13_u64))
			.saturating_add(T::DbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(10_u64))
			.saturating_add(T::DbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4805).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Rounds` (r:1 w:0)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4453), added: 6928, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Equivocations` (r:1 w:1)
	/// Proof: `Jobs::Equivocations` (`max_values`: None, `max_size`: Some(68), added: 2543, mode: `MaxEncodedLen`)
	/// Storage: `System::BlockHash` (r:1 w:0)
	/// Proof: `System::BlockHash` (`max_values`: None, `max_size`: Some(44), added: 2519, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:3 w:3)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:1 w:1)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	fn report_equivocation() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `3006`
		//  Estimated: `8799`
		// Minimum execution time: 237_134_000 picoseconds.
		Weight::from_parts(256_613_000, 8799)
			.saturating_add(T::DbWeight::get().reads(10_u64))
			.saturating_add(T::DbWeight::get().writes(8_u64))
	}
	/// Storage: `Jobs::Agenda` (r:3 w:3)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4453), added: 6928, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Proofs` (r:64 w:63)
	/// Proof: `Jobs::Proofs` (`max_values`: None, `max_size`: Some(2330), added: 4805, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:65 w:64)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:64 w:0)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:65 w:65)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:64 w:64)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `System::ParentHash` (r:1 w:0)
	/// Proof: `System::ParentHash` (`max_values`: Some(1), `max_size`: Some(32), added: 527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:0 w:63)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(164), added: 2639, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:0 w:1)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:0 w:1)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn settle_round(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `0 + p * (4063 ±0)`
		//  Estimated: `9702 + p * (4805 ±0)`
		// Minimum execution time: 307_008_000 picoseconds.
		Weight::from_parts(312_436_000, 9702)
			// Standard Error: 405_864
			.saturating_add(Weight::from_parts(76_515_767, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(10_u64))
			.saturating_add(T::DbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(7_u64))
			.saturating_add(T::DbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4805).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Agenda` (r:2 w:2)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4453), added: 6928, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Proofs` (r:1 w:0)
	/// Proof: `Jobs::Proofs` (`max_values`: None, `max_size`: Some(2330), added: 4805, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:65 w:65)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:65 w:65)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:65 w:64)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:64 w:64)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:64 w:64)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:0 w:1)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn settle_round_slashing(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1153 + p * (1775 ±0)`
		//  Estimated: `7918 + p * (4715 ±0)`
		// Minimum execution time: 295_882_000 picoseconds.
		Weight::from_parts(123_116_940, 7918)
			// Standard Error: 204_427
			.saturating_add(Weight::from_parts(67_967_499, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(9_u64))
			.saturating_add(T::DbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(7_u64))
			.saturating_add(T::DbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4715).saturating_mul(p.into()))
	}
	/// Storage: `Providers::Providers` (r:64 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:0)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:1 w:0)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:1 w:0)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(164), added: 2639, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Challenged` (r:1 w:1)
	/// Proof: `Jobs::Challenged` (`max_values`: None, `max_size`: Some(76), added: 2551, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::OpenChallengesBy` (r:1 w:1)
	/// Proof: `Jobs::OpenChallengesBy` (`max_values`: None, `max_size`: Some(52), added: 2527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::OpenChallengesOn` (r:1 w:1)
	/// Proof: `Jobs::OpenChallengesOn` (`max_values`: None, `max_size`: Some(20), added: 2495, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::NextChallengeId` (r:1 w:1)
	/// Proof: `Jobs::NextChallengeId` (`max_values`: Some(1), `max_size`: Some(8), added: 503, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:1 w:0)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `System::ParentHash` (r:1 w:0)
	/// Proof: `System::ParentHash` (`max_values`: Some(1), `max_size`: Some(32), added: 527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:62 w:0)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:2 w:2)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:1 w:1)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Challenges` (r:0 w:1)
	/// Proof: `Jobs::Challenges` (`max_values`: None, `max_size`: Some(287), added: 2762, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn challenge(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1885 + p * (1563 ±0)`
		//  Estimated: `6196 + p * (4715 ±22)`
		// Minimum execution time: 175_742_000 picoseconds.
		Weight::from_parts(141_395_839, 6196)
			// Standard Error: 67_727
			.saturating_add(Weight::from_parts(11_329_756, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(12_u64))
			.saturating_add(T::DbWeight::get().reads((2_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(10_u64))
			.saturating_add(Weight::from_parts(0, 4715).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Challenges` (r:1 w:1)
	/// Proof: `Jobs::Challenges` (`max_values`: None, `max_size`: Some(287), added: 2762, mode: `MaxEncodedLen`)
	fn vote() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `523`
		//  Estimated: `3752`
		// Minimum execution time: 17_035_000 picoseconds.
		Weight::from_parts(22_313_000, 3752)
			.saturating_add(T::DbWeight::get().reads(1_u64))
			.saturating_add(T::DbWeight::get().writes(1_u64))
	}
	/// Storage: `Jobs::Agenda` (r:1 w:1)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Challenges` (r:1 w:1)
	/// Proof: `Jobs::Challenges` (`max_values`: None, `max_size`: Some(287), added: 2762, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::OpenChallengesBy` (r:1 w:1)
	/// Proof: `Jobs::OpenChallengesBy` (`max_values`: None, `max_size`: Some(52), added: 2527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::OpenChallengesOn` (r:1 w:1)
	/// Proof: `Jobs::OpenChallengesOn` (`max_values`: None, `max_size`: Some(20), added: 2495, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:8 w:8)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:6 w:6)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:1 w:0)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(164), added: 2639, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:5 w:5)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:1 w:1)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:1 w:1)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// The range of component `k` is `[1, 5]`.
	fn resolve_challenge(k: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `2416 + k * (1704 ±0)`
		//  Estimated: `5387 + k * (3997 ±183)`
		// Minimum execution time: 119_148_000 picoseconds.
		Weight::from_parts(93_966_548, 5387)
			// Standard Error: 2_214_538
			.saturating_add(Weight::from_parts(96_333_715, 0).saturating_mul(k.into()))
			.saturating_add(T::DbWeight::get().reads(7_u64))
			.saturating_add(T::DbWeight::get().reads((4_u64).saturating_mul(k.into())))
			.saturating_add(T::DbWeight::get().writes(7_u64))
			.saturating_add(T::DbWeight::get().writes((4_u64).saturating_mul(k.into())))
			.saturating_add(Weight::from_parts(0, 3997).saturating_mul(k.into()))
	}
	/// Storage: `Jobs::OpenChallengesOn` (r:1 w:0)
	/// Proof: `Jobs::OpenChallengesOn` (`max_values`: None, `max_size`: Some(20), added: 2495, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:64 w:64)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(164), added: 2639, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Challenged` (r:64 w:64)
	/// Proof: `Jobs::Challenged` (`max_values`: None, `max_size`: Some(76), added: 2551, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Equivocations` (r:64 w:64)
	/// Proof: `Jobs::Equivocations` (`max_values`: None, `max_size`: Some(68), added: 2543, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(622), added: 3097, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:64 w:64)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:1 w:1)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:0 w:1)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:0 w:1)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn expire(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1376 + p * (291 ±0)`
		//  Estimated: `4087 + p * (2639 ±0)`
		// Minimum execution time: 79_729_000 picoseconds.
		Weight::from_parts(71_991_825, 4087)
			// Standard Error: 44_900
			.saturating_add(Weight::from_parts(3_919_525, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(4_u64))
			.saturating_add(T::DbWeight::get().reads((4_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(5_u64))
			.saturating_add(T::DbWeight::get().writes((4_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 2639).saturating_mul(p.into()))
	}
	/// Storage: `Aura::Authorities` (r:1 w:0)
	/// Proof: `Aura::Authorities` (`max_values`: Some(1), `max_size`: Some(1025), added: 1520, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::LastWorkerReport` (r:1 w:0)
	/// Proof: `Jobs::LastWorkerReport` (`max_values`: None, `max_size`: Some(52), added: 2527, mode: `MaxEncodedLen`)
	/// Storage: `System::BlockHash` (r:1 w:0)
	/// Proof: `System::BlockHash` (`max_values`: None, `max_size`: Some(44), added: 2519, mode: `MaxEncodedLen`)
	fn authorize_worker_report() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `195`
		//  Estimated: `3517`
		// Minimum execution time: 57_366_000 picoseconds.
		Weight::from_parts(63_154_000, 3517)
			.saturating_add(T::DbWeight::get().reads(3_u64))
	}
	/// Storage: `Providers::Providers` (r:32 w:0)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2240), added: 4715, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:32 w:32)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::LastWorkerReport` (r:0 w:1)
	/// Proof: `Jobs::LastWorkerReport` (`max_values`: None, `max_size`: Some(52), added: 2527, mode: `MaxEncodedLen`)
	/// The range of component `n` is `[1, 32]`.
	fn apply_worker_report(n: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `126 + n * (161 ±0)`
		//  Estimated: `990 + n * (4715 ±0)`
		// Minimum execution time: 18_057_000 picoseconds.
		Weight::from_parts(13_249_980, 990)
			// Standard Error: 28_183
			.saturating_add(Weight::from_parts(9_701_661, 0).saturating_mul(n.into()))
			.saturating_add(T::DbWeight::get().reads((2_u64).saturating_mul(n.into())))
			.saturating_add(T::DbWeight::get().writes(1_u64))
			.saturating_add(T::DbWeight::get().writes((1_u64).saturating_mul(n.into())))
			.saturating_add(Weight::from_parts(0, 4715).saturating_mul(n.into()))
	}
}

/// The same weights at ParityDB's costs, for tests and mocks.
impl WeightInfo for () {
	fn create_job() -> Weight {
		Weight::from_parts(85_498_000, 3894)
			.saturating_add(ParityDbWeight::get().reads(5_u64))
			.saturating_add(ParityDbWeight::get().writes(5_u64))
	}
	fn cancel_job(p: u32, ) -> Weight {
		Weight::from_parts(66_013_714, 10420)
			.saturating_add(Weight::from_parts(13_522_400, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(5_u64))
			.saturating_add(ParityDbWeight::get().reads((2_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(3_u64))
			.saturating_add(ParityDbWeight::get().writes((1_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4389).saturating_mul(p.into()))
	}
	fn force_cancel_job(p: u32, ) -> Weight {
		Weight::from_parts(146_493_020, 9702)
			.saturating_add(Weight::from_parts(71_677_340, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(12_u64))
			.saturating_add(ParityDbWeight::get().reads((4_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(10_u64))
			.saturating_add(ParityDbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4715).saturating_mul(p.into()))
	}
	fn join_job(p: u32, ) -> Weight {
		Weight::from_parts(81_048_398, 5705)
			.saturating_add(Weight::from_parts(4_025_145, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(6_u64))
			.saturating_add(ParityDbWeight::get().reads((1_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(5_u64))
			.saturating_add(Weight::from_parts(0, 2567).saturating_mul(p.into()))
	}
	fn leave_job() -> Weight {
		Weight::from_parts(35_273_000, 5705)
			.saturating_add(ParityDbWeight::get().reads(3_u64))
			.saturating_add(ParityDbWeight::get().writes(3_u64))
	}
	fn submit_proof(p: u32, ) -> Weight {
		Weight::from_parts(91_004_751, 10241)
			.saturating_add(Weight::from_parts(84_734_879, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(13_u64))
			.saturating_add(ParityDbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(10_u64))
			.saturating_add(ParityDbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4805).saturating_mul(p.into()))
	}
	fn report_equivocation() -> Weight {
		Weight::from_parts(256_613_000, 8799)
			.saturating_add(ParityDbWeight::get().reads(10_u64))
			.saturating_add(ParityDbWeight::get().writes(8_u64))
	}
	fn settle_round(p: u32, ) -> Weight {
		Weight::from_parts(312_436_000, 9702)
			.saturating_add(Weight::from_parts(76_515_767, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(10_u64))
			.saturating_add(ParityDbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(7_u64))
			.saturating_add(ParityDbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4805).saturating_mul(p.into()))
	}
	fn settle_round_slashing(p: u32, ) -> Weight {
		Weight::from_parts(123_116_940, 7918)
			.saturating_add(Weight::from_parts(67_967_499, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(9_u64))
			.saturating_add(ParityDbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(7_u64))
			.saturating_add(ParityDbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4715).saturating_mul(p.into()))
	}
	fn challenge(p: u32, ) -> Weight {
		Weight::from_parts(141_395_839, 6196)
			.saturating_add(Weight::from_parts(11_329_756, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(12_u64))
			.saturating_add(ParityDbWeight::get().reads((2_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(10_u64))
			.saturating_add(Weight::from_parts(0, 4715).saturating_mul(p.into()))
	}
	fn vote() -> Weight {
		Weight::from_parts(22_313_000, 3752)
			.saturating_add(ParityDbWeight::get().reads(1_u64))
			.saturating_add(ParityDbWeight::get().writes(1_u64))
	}
	fn resolve_challenge(k: u32, ) -> Weight {
		Weight::from_parts(93_966_548, 5387)
			.saturating_add(Weight::from_parts(96_333_715, 0).saturating_mul(k.into()))
			.saturating_add(ParityDbWeight::get().reads(7_u64))
			.saturating_add(ParityDbWeight::get().reads((4_u64).saturating_mul(k.into())))
			.saturating_add(ParityDbWeight::get().writes(7_u64))
			.saturating_add(ParityDbWeight::get().writes((4_u64).saturating_mul(k.into())))
			.saturating_add(Weight::from_parts(0, 3997).saturating_mul(k.into()))
	}
	fn expire(p: u32, ) -> Weight {
		Weight::from_parts(71_991_825, 4087)
			.saturating_add(Weight::from_parts(3_919_525, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(4_u64))
			.saturating_add(ParityDbWeight::get().reads((4_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(5_u64))
			.saturating_add(ParityDbWeight::get().writes((4_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 2639).saturating_mul(p.into()))
	}
	fn authorize_worker_report() -> Weight {
		Weight::from_parts(63_154_000, 3517)
			.saturating_add(ParityDbWeight::get().reads(3_u64))
	}
	fn apply_worker_report(n: u32, ) -> Weight {
		Weight::from_parts(13_249_980, 990)
			.saturating_add(Weight::from_parts(9_701_661, 0).saturating_mul(n.into()))
			.saturating_add(ParityDbWeight::get().reads((2_u64).saturating_mul(n.into())))
			.saturating_add(ParityDbWeight::get().writes(1_u64))
			.saturating_add(ParityDbWeight::get().writes((1_u64).saturating_mul(n.into())))
			.saturating_add(Weight::from_parts(0, 4715).saturating_mul(n.into()))
	}
}
