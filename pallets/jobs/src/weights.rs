//! Weights of `pallet_jobs`, measured by `bench/weights.sh` (`grid-node benchmark pallet`,
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

/// Weight functions of `pallet_jobs`.
pub trait WeightInfo {
	fn create_job() -> Weight;
	fn cancel_job(p: u32, ) -> Weight;
	fn force_cancel_job(p: u32, ) -> Weight;
	fn join_job(p: u32, ) -> Weight;
	fn leave_job() -> Weight;
	fn submit_proof(p: u32, ) -> Weight;
	fn record_proof(p: u32, ) -> Weight;
	fn report_equivocation() -> Weight;
	fn report_commitment_equivocation() -> Weight;
	fn settle_round(p: u32, ) -> Weight;
	fn settle_round_slashing(p: u32, ) -> Weight;
	fn challenge(p: u32, ) -> Weight;
	fn draw_committee(p: u32, ) -> Weight;
	fn commit_vote() -> Weight;
	fn reveal_vote() -> Weight;
	fn resolve_challenge(k: u32, ) -> Weight;
	fn audit_round(p: u32, ) -> Weight;
	fn open_audit(p: u32, ) -> Weight;
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
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Admissions` (r:0 w:1)
	/// Proof: `Jobs::Admissions` (`max_values`: None, `max_size`: Some(2074), added: 4549, mode: `MaxEncodedLen`)
	fn create_job() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `146`
		//  Estimated: `3894`
		// Minimum execution time: 120_991_000 picoseconds.
		Weight::from_parts(125_346_000, 3894)
			.saturating_add(T::DbWeight::get().reads(5_u64))
			.saturating_add(T::DbWeight::get().writes(6_u64))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:0)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4485), added: 6960, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:1 w:1)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:64 w:0)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:63 w:63)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:1 w:1)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn cancel_job(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `4 + p * (1524 ±0)`
		//  Estimated: `10548 + p * (4448 ±0)`
		// Minimum execution time: 136_804_000 picoseconds.
		Weight::from_parts(125_646_946, 10548)
			// Standard Error: 172_108
			.saturating_add(Weight::from_parts(16_732_277, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(5_u64))
			.saturating_add(T::DbWeight::get().reads((2_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(3_u64))
			.saturating_add(T::DbWeight::get().writes((1_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4448).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4485), added: 6960, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:4 w:4)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Proofs` (r:44 w:43)
	/// Proof: `Jobs::Proofs` (`max_values`: None, `max_size`: Some(2366), added: 4841, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:65 w:64)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:64 w:64)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
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
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(200), added: 2675, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:0 w:1)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:0 w:1)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn force_cancel_job(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `0 + p * (3343 ±0)`
		//  Estimated: `12038 + p * (4779 ±0)`
		// Minimum execution time: 556_509_000 picoseconds.
		Weight::from_parts(223_007_720, 12038)
			// Standard Error: 312_775
			.saturating_add(Weight::from_parts(95_511_978, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(13_u64))
			.saturating_add(T::DbWeight::get().reads((4_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(11_u64))
			.saturating_add(T::DbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4779).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:65 w:1)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Admissions` (r:1 w:0)
	/// Proof: `Jobs::Admissions` (`max_values`: None, `max_size`: Some(2074), added: 4549, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:1 w:0)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:1 w:1)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `System::ParentHash` (r:1 w:0)
	/// Proof: `System::ParentHash` (`max_values`: Some(1), `max_size`: Some(32), added: 527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:0 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4485), added: 6960, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[1, 64]`.
	fn join_job(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `4919 + p * (98 ±0)`
		//  Estimated: `5769 + p * (2567 ±0)`
		// Minimum execution time: 117_645_000 picoseconds.
		Weight::from_parts(147_785_860, 5769)
			// Standard Error: 60_615
			.saturating_add(Weight::from_parts(4_741_940, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(8_u64))
			.saturating_add(T::DbWeight::get().reads((1_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(5_u64))
			.saturating_add(Weight::from_parts(0, 2567).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:1 w:1)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	fn leave_job() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `2727`
		//  Estimated: `5769`
		// Minimum execution time: 47_390_000 picoseconds.
		Weight::from_parts(53_960_000, 5769)
			.saturating_add(T::DbWeight::get().reads(3_u64))
			.saturating_add(T::DbWeight::get().writes(3_u64))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4485), added: 6960, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Proofs` (r:65 w:64)
	/// Proof: `Jobs::Proofs` (`max_values`: None, `max_size`: Some(2366), added: 4841, mode: `MaxEncodedLen`)
	/// Storage: `System::BlockHash` (r:1 w:0)
	/// Proof: `System::BlockHash` (`max_values`: None, `max_size`: Some(44), added: 2519, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:4 w:4)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:65 w:64)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:64 w:0)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
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
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(200), added: 2675, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:0 w:1)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:0 w:1)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[1, 64]`.
	fn submit_proof(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `0 + p * (4039 ±0)`
		//  Estimated: `12606 + p * (4841 ±0)`
		// Minimum execution time: 346_476_000 picoseconds.
		Weight::from_parts(113_369_253, 12606)
			// Standard Error: 588_295
			.saturating_add(Weight::from_parts(115_123_717, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(14_u64))
			.saturating_add(T::DbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(11_u64))
			.saturating_add(T::DbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4841).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Jobs` (r:1 w:0)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4485), added: 6960, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Proofs` (r:1 w:1)
	/// Proof: `Jobs::Proofs` (`max_values`: None, `max_size`: Some(2366), added: 4841, mode: `MaxEncodedLen`)
	/// Storage: `System::BlockHash` (r:1 w:0)
	/// Proof: `System::BlockHash` (`max_values`: None, `max_size`: Some(44), added: 2519, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:2 w:2)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn record_proof(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1451 + p * (38 ±0)`
		//  Estimated: `7950`
		// Minimum execution time: 116_193_000 picoseconds.
		Weight::from_parts(125_433_815, 7950)
			// Standard Error: 21_793
			.saturating_add(Weight::from_parts(474_222, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(7_u64))
			.saturating_add(T::DbWeight::get().writes(4_u64))
	}
	/// Storage: `Jobs::Rounds` (r:1 w:0)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4485), added: 6960, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Equivocations` (r:1 w:1)
	/// Proof: `Jobs::Equivocations` (`max_values`: None, `max_size`: Some(68), added: 2543, mode: `MaxEncodedLen`)
	/// Storage: `System::BlockHash` (r:1 w:0)
	/// Proof: `System::BlockHash` (`max_values`: None, `max_size`: Some(44), added: 2519, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:3 w:3)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:1 w:1)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	fn report_equivocation() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `3355`
		//  Estimated: `8799`
		// Minimum execution time: 324_854_000 picoseconds.
		Weight::from_parts(339_375_000, 8799)
			.saturating_add(T::DbWeight::get().reads(10_u64))
			.saturating_add(T::DbWeight::get().writes(8_u64))
	}
	/// Storage: `System::BlockHash` (r:1 w:0)
	/// Proof: `System::BlockHash` (`max_values`: None, `max_size`: Some(44), added: 2519, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:0)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4485), added: 6960, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Equivocations` (r:1 w:1)
	/// Proof: `Jobs::Equivocations` (`max_values`: None, `max_size`: Some(68), added: 2543, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:1 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:3 w:3)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:1 w:1)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	fn report_commitment_equivocation() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `3355`
		//  Estimated: `8799`
		// Minimum execution time: 325_064_000 picoseconds.
		Weight::from_parts(345_635_000, 8799)
			.saturating_add(T::DbWeight::get().reads(10_u64))
			.saturating_add(T::DbWeight::get().writes(8_u64))
	}
	/// Storage: `Jobs::Agenda` (r:4 w:4)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4485), added: 6960, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Proofs` (r:64 w:63)
	/// Proof: `Jobs::Proofs` (`max_values`: None, `max_size`: Some(2366), added: 4841, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:65 w:64)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:64 w:0)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
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
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(200), added: 2675, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:0 w:1)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:0 w:1)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn settle_round(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `0 + p * (4103 ±0)`
		//  Estimated: `12038 + p * (4841 ±0)`
		// Minimum execution time: 414_908_000 picoseconds.
		Weight::from_parts(12_369_331, 12038)
			// Standard Error: 487_592
			.saturating_add(Weight::from_parts(110_797_882, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(11_u64))
			.saturating_add(T::DbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(8_u64))
			.saturating_add(T::DbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4841).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Agenda` (r:2 w:2)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Rounds` (r:1 w:1)
	/// Proof: `Jobs::Rounds` (`max_values`: None, `max_size`: Some(4485), added: 6960, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Proofs` (r:1 w:0)
	/// Proof: `Jobs::Proofs` (`max_values`: None, `max_size`: Some(2366), added: 4841, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:65 w:65)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:65 w:65)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:65 w:64)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:64 w:64)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:64 w:64)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:0 w:1)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn settle_round_slashing(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1498 + p * (1779 ±0)`
		//  Estimated: `7950 + p * (4779 ±0)`
		// Minimum execution time: 398_343_000 picoseconds.
		Weight::from_parts(154_410_610, 7950)
			// Standard Error: 179_014
			.saturating_add(Weight::from_parts(92_946_287, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(9_u64))
			.saturating_add(T::DbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(7_u64))
			.saturating_add(T::DbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4779).saturating_mul(p.into()))
	}
	/// Storage: `Providers::Providers` (r:4 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:0)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:1 w:0)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:1 w:0)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(200), added: 2675, mode: `MaxEncodedLen`)
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
	/// Storage: `Jobs::Participants` (r:2 w:0)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:2 w:2)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:2 w:2)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Challenges` (r:0 w:1)
	/// Proof: `Jobs::Challenges` (`max_values`: None, `max_size`: Some(451), added: 2926, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[4, 64]`.
	fn challenge(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `8421 + p * (71 ±0)`
		//  Estimated: `20106`
		// Minimum execution time: 251_915_000 picoseconds.
		Weight::from_parts(266_594_485, 20106)
			// Standard Error: 36_321
			.saturating_add(Weight::from_parts(335_479, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(20_u64))
			.saturating_add(T::DbWeight::get().writes(11_u64))
	}
	/// Storage: `Jobs::Agenda` (r:1 w:1)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Challenges` (r:1 w:1)
	/// Proof: `Jobs::Challenges` (`max_values`: None, `max_size`: Some(451), added: 2926, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:1 w:0)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(200), added: 2675, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:1 w:0)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `System::ParentHash` (r:1 w:0)
	/// Proof: `System::ParentHash` (`max_values`: Some(1), `max_size`: Some(32), added: 527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:62 w:0)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:62 w:0)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[4, 64]`.
	fn draw_committee(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `0 + p * (1556 ±0)`
		//  Estimated: `10548 + p * (4338 ±29)`
		// Minimum execution time: 81_321_000 picoseconds.
		Weight::from_parts(29_871_971, 10548)
			// Standard Error: 71_504
			.saturating_add(Weight::from_parts(14_273_249, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(1_u64))
			.saturating_add(T::DbWeight::get().reads((2_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(2_u64))
			.saturating_add(Weight::from_parts(0, 4338).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Challenges` (r:1 w:1)
	/// Proof: `Jobs::Challenges` (`max_values`: None, `max_size`: Some(451), added: 2926, mode: `MaxEncodedLen`)
	fn commit_vote() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `532`
		//  Estimated: `3916`
		// Minimum execution time: 24_597_000 picoseconds.
		Weight::from_parts(28_212_000, 3916)
			.saturating_add(T::DbWeight::get().reads(1_u64))
			.saturating_add(T::DbWeight::get().writes(1_u64))
	}
	/// Storage: `Jobs::Challenges` (r:1 w:1)
	/// Proof: `Jobs::Challenges` (`max_values`: None, `max_size`: Some(451), added: 2926, mode: `MaxEncodedLen`)
	fn reveal_vote() -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `564`
		//  Estimated: `3916`
		// Minimum execution time: 24_186_000 picoseconds.
		Weight::from_parts(28_563_000, 3916)
			.saturating_add(T::DbWeight::get().reads(1_u64))
			.saturating_add(T::DbWeight::get().writes(1_u64))
	}
	/// Storage: `Jobs::Agenda` (r:1 w:1)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Challenges` (r:1 w:1)
	/// Proof: `Jobs::Challenges` (`max_values`: None, `max_size`: Some(451), added: 2926, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::OpenChallengesBy` (r:1 w:1)
	/// Proof: `Jobs::OpenChallengesBy` (`max_values`: None, `max_size`: Some(52), added: 2527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::OpenChallengesOn` (r:1 w:1)
	/// Proof: `Jobs::OpenChallengesOn` (`max_values`: None, `max_size`: Some(20), added: 2495, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:1 w:0)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(200), added: 2675, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:3 w:3)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:4 w:4)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:8 w:8)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:1 w:1)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:1 w:1)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// The range of component `k` is `[2, 5]`.
	fn resolve_challenge(k: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `2804 + k * (988 ±0)`
		//  Estimated: `8799 + k * (2748 ±0)`
		// Minimum execution time: 460_114_000 picoseconds.
		Weight::from_parts(365_385_594, 8799)
			// Standard Error: 605_414
			.saturating_add(Weight::from_parts(56_010_400, 0).saturating_mul(k.into()))
			.saturating_add(T::DbWeight::get().reads(12_u64))
			.saturating_add(T::DbWeight::get().reads((2_u64).saturating_mul(k.into())))
			.saturating_add(T::DbWeight::get().writes(11_u64))
			.saturating_add(T::DbWeight::get().writes((2_u64).saturating_mul(k.into())))
			.saturating_add(Weight::from_parts(0, 2748).saturating_mul(k.into()))
	}
	/// Storage: `Jobs::RoundMembers` (r:1 w:0)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `System::ParentHash` (r:1 w:0)
	/// Proof: `System::ParentHash` (`max_values`: Some(1), `max_size`: Some(32), added: 527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:64 w:0)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(200), added: 2675, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[4, 64]`.
	fn audit_round(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `264 + p * (117 ±0)`
		//  Estimated: `5543 + p * (2675 ±0)`
		// Minimum execution time: 38_137_000 picoseconds.
		Weight::from_parts(20_484_689, 5543)
			// Standard Error: 13_012
			.saturating_add(Weight::from_parts(5_230_431, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(2_u64))
			.saturating_add(T::DbWeight::get().reads((1_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 2675).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::Challenged` (r:1 w:1)
	/// Proof: `Jobs::Challenged` (`max_values`: None, `max_size`: Some(76), added: 2551, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:1 w:0)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(200), added: 2675, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::NextChallengeId` (r:1 w:1)
	/// Proof: `Jobs::NextChallengeId` (`max_values`: Some(1), `max_size`: Some(8), added: 503, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:1 w:0)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `System::ParentHash` (r:1 w:0)
	/// Proof: `System::ParentHash` (`max_values`: Some(1), `max_size`: Some(32), added: 527, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:63 w:0)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `Providers::Providers` (r:64 w:1)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::AgendaCursor` (r:1 w:0)
	/// Proof: `Jobs::AgendaCursor` (`max_values`: Some(1), `max_size`: Some(4), added: 499, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Agenda` (r:1 w:1)
	/// Proof: `Jobs::Agenda` (`max_values`: None, `max_size`: Some(429), added: 2904, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::OpenAuditsOn` (r:1 w:1)
	/// Proof: `Jobs::OpenAuditsOn` (`max_values`: None, `max_size`: Some(20), added: 2495, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Challenges` (r:0 w:1)
	/// Proof: `Jobs::Challenges` (`max_values`: None, `max_size`: Some(451), added: 2926, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[4, 64]`.
	fn open_audit(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `812 + p * (1556 ±0)`
		//  Estimated: `8691 + p * (4779 ±0)`
		// Minimum execution time: 117_294_000 picoseconds.
		Weight::from_parts(61_989_655, 8691)
			// Standard Error: 56_205
			.saturating_add(Weight::from_parts(14_280_617, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(7_u64))
			.saturating_add(T::DbWeight::get().reads((2_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(6_u64))
			.saturating_add(Weight::from_parts(0, 4779).saturating_mul(p.into()))
	}
	/// Storage: `Jobs::OpenChallengesOn` (r:1 w:0)
	/// Proof: `Jobs::OpenChallengesOn` (`max_values`: None, `max_size`: Some(20), added: 2495, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::OpenAuditsOn` (r:1 w:0)
	/// Proof: `Jobs::OpenAuditsOn` (`max_values`: None, `max_size`: Some(20), added: 2495, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Contributions` (r:64 w:64)
	/// Proof: `Jobs::Contributions` (`max_values`: None, `max_size`: Some(200), added: 2675, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Challenged` (r:64 w:64)
	/// Proof: `Jobs::Challenged` (`max_values`: None, `max_size`: Some(76), added: 2551, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Equivocations` (r:64 w:64)
	/// Proof: `Jobs::Equivocations` (`max_values`: None, `max_size`: Some(68), added: 2543, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Jobs` (r:1 w:1)
	/// Proof: `Jobs::Jobs` (`max_values`: None, `max_size`: Some(951), added: 3426, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Participants` (r:64 w:64)
	/// Proof: `Jobs::Participants` (`max_values`: None, `max_size`: Some(92), added: 2567, mode: `MaxEncodedLen`)
	/// Storage: `System::Account` (r:1 w:1)
	/// Proof: `System::Account` (`max_values`: None, `max_size`: Some(128), added: 2603, mode: `MaxEncodedLen`)
	/// Storage: `Balances::Holds` (r:1 w:1)
	/// Proof: `Balances::Holds` (`max_values`: None, `max_size`: Some(121), added: 2596, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundMembers` (r:0 w:1)
	/// Proof: `Jobs::RoundMembers` (`max_values`: None, `max_size`: Some(2078), added: 4553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::Admissions` (r:0 w:1)
	/// Proof: `Jobs::Admissions` (`max_values`: None, `max_size`: Some(2074), added: 4549, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::RoundResults` (r:0 w:1)
	/// Proof: `Jobs::RoundResults` (`max_values`: None, `max_size`: Some(157), added: 2632, mode: `MaxEncodedLen`)
	/// The range of component `p` is `[3, 64]`.
	fn expire(p: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `1689 + p * (291 ±0)`
		//  Estimated: `4416 + p * (2675 ±0)`
		// Minimum execution time: 116_263_000 picoseconds.
		Weight::from_parts(110_141_096, 4416)
			// Standard Error: 27_788
			.saturating_add(Weight::from_parts(4_566_801, 0).saturating_mul(p.into()))
			.saturating_add(T::DbWeight::get().reads(5_u64))
			.saturating_add(T::DbWeight::get().reads((4_u64).saturating_mul(p.into())))
			.saturating_add(T::DbWeight::get().writes(6_u64))
			.saturating_add(T::DbWeight::get().writes((4_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 2675).saturating_mul(p.into()))
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
		// Minimum execution time: 71_907_000 picoseconds.
		Weight::from_parts(74_801_000, 3517)
			.saturating_add(T::DbWeight::get().reads(3_u64))
	}
	/// Storage: `Providers::Providers` (r:32 w:0)
	/// Proof: `Providers::Providers` (`max_values`: None, `max_size`: Some(2304), added: 4779, mode: `MaxEncodedLen`)
	/// Storage: `Providers::HealthRecords` (r:32 w:32)
	/// Proof: `Providers::HealthRecords` (`max_values`: None, `max_size`: Some(78), added: 2553, mode: `MaxEncodedLen`)
	/// Storage: `Jobs::LastWorkerReport` (r:0 w:1)
	/// Proof: `Jobs::LastWorkerReport` (`max_values`: None, `max_size`: Some(52), added: 2527, mode: `MaxEncodedLen`)
	/// The range of component `n` is `[1, 32]`.
	fn apply_worker_report(n: u32, ) -> Weight {
		// Proof Size summary in bytes:
		//  Measured:  `126 + n * (161 ±0)`
		//  Estimated: `990 + n * (4779 ±0)`
		// Minimum execution time: 27_411_000 picoseconds.
		Weight::from_parts(22_245_875, 990)
			// Standard Error: 43_271
			.saturating_add(Weight::from_parts(12_247_810, 0).saturating_mul(n.into()))
			.saturating_add(T::DbWeight::get().reads((2_u64).saturating_mul(n.into())))
			.saturating_add(T::DbWeight::get().writes(1_u64))
			.saturating_add(T::DbWeight::get().writes((1_u64).saturating_mul(n.into())))
			.saturating_add(Weight::from_parts(0, 4779).saturating_mul(n.into()))
	}
}

/// The same weights at ParityDB's costs, for tests and mocks.
impl WeightInfo for () {
	fn create_job() -> Weight {
		Weight::from_parts(125_346_000, 3894)
			.saturating_add(ParityDbWeight::get().reads(5_u64))
			.saturating_add(ParityDbWeight::get().writes(6_u64))
	}
	fn cancel_job(p: u32, ) -> Weight {
		Weight::from_parts(125_646_946, 10548)
			.saturating_add(Weight::from_parts(16_732_277, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(5_u64))
			.saturating_add(ParityDbWeight::get().reads((2_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(3_u64))
			.saturating_add(ParityDbWeight::get().writes((1_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4448).saturating_mul(p.into()))
	}
	fn force_cancel_job(p: u32, ) -> Weight {
		Weight::from_parts(223_007_720, 12038)
			.saturating_add(Weight::from_parts(95_511_978, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(13_u64))
			.saturating_add(ParityDbWeight::get().reads((4_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(11_u64))
			.saturating_add(ParityDbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4779).saturating_mul(p.into()))
	}
	fn join_job(p: u32, ) -> Weight {
		Weight::from_parts(147_785_860, 5769)
			.saturating_add(Weight::from_parts(4_741_940, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(8_u64))
			.saturating_add(ParityDbWeight::get().reads((1_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(5_u64))
			.saturating_add(Weight::from_parts(0, 2567).saturating_mul(p.into()))
	}
	fn leave_job() -> Weight {
		Weight::from_parts(53_960_000, 5769)
			.saturating_add(ParityDbWeight::get().reads(3_u64))
			.saturating_add(ParityDbWeight::get().writes(3_u64))
	}
	fn submit_proof(p: u32, ) -> Weight {
		Weight::from_parts(113_369_253, 12606)
			.saturating_add(Weight::from_parts(115_123_717, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(14_u64))
			.saturating_add(ParityDbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(11_u64))
			.saturating_add(ParityDbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4841).saturating_mul(p.into()))
	}
	fn record_proof(p: u32, ) -> Weight {
		Weight::from_parts(125_433_815, 7950)
			.saturating_add(Weight::from_parts(474_222, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(7_u64))
			.saturating_add(ParityDbWeight::get().writes(4_u64))
	}
	fn report_equivocation() -> Weight {
		Weight::from_parts(339_375_000, 8799)
			.saturating_add(ParityDbWeight::get().reads(10_u64))
			.saturating_add(ParityDbWeight::get().writes(8_u64))
	}
	fn report_commitment_equivocation() -> Weight {
		Weight::from_parts(345_635_000, 8799)
			.saturating_add(ParityDbWeight::get().reads(10_u64))
			.saturating_add(ParityDbWeight::get().writes(8_u64))
	}
	fn settle_round(p: u32, ) -> Weight {
		Weight::from_parts(12_369_331, 12038)
			.saturating_add(Weight::from_parts(110_797_882, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(11_u64))
			.saturating_add(ParityDbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(8_u64))
			.saturating_add(ParityDbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4841).saturating_mul(p.into()))
	}
	fn settle_round_slashing(p: u32, ) -> Weight {
		Weight::from_parts(154_410_610, 7950)
			.saturating_add(Weight::from_parts(92_946_287, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(9_u64))
			.saturating_add(ParityDbWeight::get().reads((5_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(7_u64))
			.saturating_add(ParityDbWeight::get().writes((5_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 4779).saturating_mul(p.into()))
	}
	fn challenge(p: u32, ) -> Weight {
		Weight::from_parts(266_594_485, 20106)
			.saturating_add(Weight::from_parts(335_479, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(20_u64))
			.saturating_add(ParityDbWeight::get().writes(11_u64))
	}
	fn draw_committee(p: u32, ) -> Weight {
		Weight::from_parts(29_871_971, 10548)
			.saturating_add(Weight::from_parts(14_273_249, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(1_u64))
			.saturating_add(ParityDbWeight::get().reads((2_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(2_u64))
			.saturating_add(Weight::from_parts(0, 4338).saturating_mul(p.into()))
	}
	fn commit_vote() -> Weight {
		Weight::from_parts(28_212_000, 3916)
			.saturating_add(ParityDbWeight::get().reads(1_u64))
			.saturating_add(ParityDbWeight::get().writes(1_u64))
	}
	fn reveal_vote() -> Weight {
		Weight::from_parts(28_563_000, 3916)
			.saturating_add(ParityDbWeight::get().reads(1_u64))
			.saturating_add(ParityDbWeight::get().writes(1_u64))
	}
	fn resolve_challenge(k: u32, ) -> Weight {
		Weight::from_parts(365_385_594, 8799)
			.saturating_add(Weight::from_parts(56_010_400, 0).saturating_mul(k.into()))
			.saturating_add(ParityDbWeight::get().reads(12_u64))
			.saturating_add(ParityDbWeight::get().reads((2_u64).saturating_mul(k.into())))
			.saturating_add(ParityDbWeight::get().writes(11_u64))
			.saturating_add(ParityDbWeight::get().writes((2_u64).saturating_mul(k.into())))
			.saturating_add(Weight::from_parts(0, 2748).saturating_mul(k.into()))
	}
	fn audit_round(p: u32, ) -> Weight {
		Weight::from_parts(20_484_689, 5543)
			.saturating_add(Weight::from_parts(5_230_431, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(2_u64))
			.saturating_add(ParityDbWeight::get().reads((1_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 2675).saturating_mul(p.into()))
	}
	fn open_audit(p: u32, ) -> Weight {
		Weight::from_parts(61_989_655, 8691)
			.saturating_add(Weight::from_parts(14_280_617, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(7_u64))
			.saturating_add(ParityDbWeight::get().reads((2_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(6_u64))
			.saturating_add(Weight::from_parts(0, 4779).saturating_mul(p.into()))
	}
	fn expire(p: u32, ) -> Weight {
		Weight::from_parts(110_141_096, 4416)
			.saturating_add(Weight::from_parts(4_566_801, 0).saturating_mul(p.into()))
			.saturating_add(ParityDbWeight::get().reads(5_u64))
			.saturating_add(ParityDbWeight::get().reads((4_u64).saturating_mul(p.into())))
			.saturating_add(ParityDbWeight::get().writes(6_u64))
			.saturating_add(ParityDbWeight::get().writes((4_u64).saturating_mul(p.into())))
			.saturating_add(Weight::from_parts(0, 2675).saturating_mul(p.into()))
	}
	fn authorize_worker_report() -> Weight {
		Weight::from_parts(74_801_000, 3517)
			.saturating_add(ParityDbWeight::get().reads(3_u64))
	}
	fn apply_worker_report(n: u32, ) -> Weight {
		Weight::from_parts(22_245_875, 990)
			.saturating_add(Weight::from_parts(12_247_810, 0).saturating_mul(n.into()))
			.saturating_add(ParityDbWeight::get().reads((2_u64).saturating_mul(n.into())))
			.saturating_add(ParityDbWeight::get().writes(1_u64))
			.saturating_add(ParityDbWeight::get().writes((1_u64).saturating_mul(n.into())))
			.saturating_add(Weight::from_parts(0, 4779).saturating_mul(n.into()))
	}
}
