//! Dispatch of the command line to the node service or a subcommand.

use grid_primitives::{Hash, OpaqueBlock as Block};
#[cfg(feature = "benchmark-cli")]
use polkadot_sdk::{frame_benchmarking_cli::BenchmarkCmd, sp_runtime::traits::HashingFor};
use polkadot_sdk::{
	sc_cli::{self, SubstrateCli},
	sc_network::{config::NetworkBackendType, Litep2pNetworkBackend, NetworkWorker},
	sc_service::{self, PartialComponents},
};

use crate::{
	chain_spec,
	cli::{Cli, Subcommand},
	service,
};

impl SubstrateCli for Cli {
	fn impl_name() -> String {
		"Grid Node".into()
	}

	fn impl_version() -> String {
		env!("SUBSTRATE_CLI_IMPL_VERSION").into()
	}

	fn description() -> String {
		env!("CARGO_PKG_DESCRIPTION").into()
	}

	fn author() -> String {
		env!("CARGO_PKG_AUTHORS").into()
	}

	fn support_url() -> String {
		"https://github.com/grid-network/grid/issues".into()
	}

	fn copyright_start_year() -> i32 {
		2026
	}

	fn load_spec(&self, id: &str) -> Result<Box<dyn sc_service::ChainSpec>, String> {
		chain_spec::load(id).map_err(|e| e.to_string())
	}
}

/// Parses the command line and runs the node or the chosen subcommand.
pub fn run() -> sc_cli::Result<()> {
	let cli = Cli::from_args();

	match &cli.subcommand {
		Some(Subcommand::Key(cmd)) => cmd.run(&cli),
		Some(Subcommand::BuildSpec(cmd)) => {
			let runner = cli.create_runner(cmd)?;
			runner.sync_run(|config| cmd.run(config.chain_spec, config.network))
		}
		Some(Subcommand::ExportChainSpec(cmd)) => {
			let spec = cli.load_spec(&cmd.chain)?;
			cmd.run(spec)
		}
		Some(Subcommand::CheckBlock(cmd)) => {
			let runner = cli.create_runner(cmd)?;
			runner.async_run(|config| {
				let PartialComponents { client, task_manager, import_queue, .. } =
					service::new_partial(&config)?;
				Ok((cmd.run(client, import_queue), task_manager))
			})
		}
		Some(Subcommand::ExportBlocks(cmd)) => {
			let runner = cli.create_runner(cmd)?;
			runner.async_run(|config| {
				let PartialComponents { client, task_manager, .. } = service::new_partial(&config)?;
				Ok((cmd.run(client, config.database), task_manager))
			})
		}
		Some(Subcommand::ExportState(cmd)) => {
			let runner = cli.create_runner(cmd)?;
			runner.async_run(|config| {
				let PartialComponents { client, task_manager, .. } = service::new_partial(&config)?;
				Ok((cmd.run(client, config.chain_spec), task_manager))
			})
		}
		Some(Subcommand::ImportBlocks(cmd)) => {
			let runner = cli.create_runner(cmd)?;
			runner.async_run(|config| {
				let PartialComponents { client, task_manager, import_queue, .. } =
					service::new_partial(&config)?;
				Ok((cmd.run(client, import_queue), task_manager))
			})
		}
		Some(Subcommand::PurgeChain(cmd)) => {
			let runner = cli.create_runner(cmd)?;
			runner.sync_run(|config| cmd.run(config.database))
		}
		Some(Subcommand::Revert(cmd)) => {
			let runner = cli.create_runner(cmd)?;
			runner.async_run(|config| {
				let PartialComponents { client, task_manager, backend, .. } =
					service::new_partial(&config)?;
				// GRANDPA keeps its authority-set changes in aux storage: revert them too.
				let aux_revert = Box::new(|client, _, blocks| {
					polkadot_sdk::sc_consensus_grandpa::revert(client, blocks)?;
					Ok(())
				});
				Ok((cmd.run(client, backend, Some(aux_revert)), task_manager))
			})
		}
		Some(Subcommand::ChainInfo(cmd)) => {
			let runner = cli.create_runner(cmd)?;
			runner.sync_run(|config| cmd.run::<Block>(&config))
		}
		#[cfg(feature = "benchmark-cli")]
		Some(Subcommand::Benchmark(BenchmarkCmd::Pallet(cmd))) => {
			// The runtime comes from `--runtime` (a wasm built with benchmarks) or `--chain`.
			cmd.run_with_spec::<HashingFor<Block>, ()>(None)
		}
		#[cfg(feature = "benchmark-cli")]
		Some(Subcommand::Benchmark(_)) => Err("only `grid-node benchmark pallet` is supported".into()),
		None => {
			let runner = cli.create_runner(&cli.run)?;
			runner.run_node_until_exit(|config| async move {
				match config.network.network_backend {
					NetworkBackendType::Libp2p => {
						service::new_full::<NetworkWorker<Block, Hash>>(config)
					}
					NetworkBackendType::Litep2p => {
						service::new_full::<Litep2pNetworkBackend>(config)
					}
				}
				.map_err(sc_cli::Error::Service)
			})
		}
	}
}
