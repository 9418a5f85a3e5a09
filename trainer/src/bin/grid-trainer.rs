//! `grid-trainer`: the trainer daemon.
//!
//! - `grid-trainer run --config trainer.toml` trains the configured job with its peers.
//! - `grid-trainer peer-id --key-seed <seed>` prints the libp2p peer id of a key seed.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use grid_trainer::{config::TrainerConfig, net::keypair_from_seed, node::Trainer};

#[derive(Parser)]
#[command(name = "grid-trainer", about = "Grid's trainer daemon", version)]
struct Cli {
	#[command(subcommand)]
	command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
	/// Train the job of a configuration file with the peers it names.
	Run {
		/// The configuration file (TOML).
		#[arg(long)]
		config: PathBuf,
	},
	/// Print the peer id of the libp2p key derived from a seed.
	PeerId {
		/// The key seed.
		#[arg(long)]
		key_seed: String,
	},
}

fn main() -> anyhow::Result<()> {
	tracing_subscriber::fmt()
		.with_env_filter(
			tracing_subscriber::EnvFilter::try_from_default_env()
				.unwrap_or_else(|_| "info,libp2p_gossipsub=warn".into()),
		)
		.with_writer(std::io::stderr)
		.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
		.init();
	match Cli::parse().command {
		Cmd::PeerId { key_seed } => {
			println!("{}", keypair_from_seed(&key_seed).public().to_peer_id());
			Ok(())
		}
		Cmd::Run { config } => {
			let config = TrainerConfig::load(&config)
				.with_context(|| format!("loading {}", config.display()))?;
			if config.threads > 0 {
				// Candle's CPU kernels use rayon's global pool, sized from this variable.
				std::env::set_var("RAYON_NUM_THREADS", config.threads.to_string());
			}
			grid_trainer::malloc::retain_freed_memory();
			// One thread is plenty for the network; training runs on this thread.
			let runtime = tokio::runtime::Builder::new_multi_thread()
				.worker_threads(1)
				.enable_all()
				.build()
				.context("starting the async runtime")?;
			let trainer = Trainer::new(config, runtime.handle()).context("starting the trainer")?;
			tracing::info!("trainer {} started", trainer.peer_id());
			trainer.run().context("training")?;
			runtime.shutdown_timeout(std::time::Duration::from_secs(1));
			Ok(())
		}
	}
}
