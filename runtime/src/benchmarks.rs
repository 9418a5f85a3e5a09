//! The pallets whose calls `grid-node benchmark pallet` measures (built with the
//! `runtime-benchmarks` feature only; `bench/weights.sh` runs it and writes each `weights.rs`).

polkadot_sdk::frame_benchmarking::define_benchmarks!(
	[pallet_providers, Providers]
	[pallet_jobs, Jobs]
);
