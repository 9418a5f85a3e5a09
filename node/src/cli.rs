//! Command-line interface: the standard Substrate node commands.

#[cfg(feature = "benchmark-cli")]
use polkadot_sdk::frame_benchmarking_cli::BenchmarkCmd;
use polkadot_sdk::sc_cli;

/// Subcommands besides running the node.
#[derive(Debug, clap::Subcommand)]
#[allow(clippy::large_enum_variant)]
pub enum Subcommand {
	/// Key management: generate, inspect and insert keys into the node's keystore.
	#[command(subcommand)]
	Key(sc_cli::KeySubcommand),

	/// Print a chain specification (`--raw` for the storage form other nodes need).
	BuildSpec(sc_cli::BuildSpecCmd),

	/// Export the chain specification of a running chain's genesis.
	ExportChainSpec(sc_cli::ExportChainSpecCmd),

	/// Validate blocks.
	CheckBlock(sc_cli::CheckBlockCmd),

	/// Export blocks.
	ExportBlocks(sc_cli::ExportBlocksCmd),

	/// Export the state of a given block into a chain spec.
	ExportState(sc_cli::ExportStateCmd),

	/// Import blocks.
	ImportBlocks(sc_cli::ImportBlocksCmd),

	/// Remove the whole chain.
	PurgeChain(sc_cli::PurgeChainCmd),

	/// Revert the chain to a previous state.
	Revert(sc_cli::RevertCmd),

	/// Database metadata.
	ChainInfo(sc_cli::ChainInfoCmd),

	/// Benchmarks. Only `benchmark pallet` is wired: it runs the pallets' benchmarks in a
	/// runtime built with `--features runtime-benchmarks` (`--runtime <wasm>`), which is how
	/// `bench/weights.sh` measures each pallet's `weights.rs`. Only in a node built with the
	/// `benchmark-cli` feature.
	#[cfg(feature = "benchmark-cli")]
	#[command(subcommand)]
	Benchmark(BenchmarkCmd),
}

/// `grid-node [SUBCOMMAND] [OPTIONS]`.
#[derive(Debug, clap::Parser)]
pub struct Cli {
	/// What to do instead of running the node.
	#[command(subcommand)]
	pub subcommand: Option<Subcommand>,

	/// Options for running the node.
	#[clap(flatten)]
	pub run: sc_cli::RunCmd,
}
