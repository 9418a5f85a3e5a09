//! `grid-trainer`: the trainer daemon and the buyer's commands.
//!
//! - `grid-trainer provide --config provider.toml`: a provider on a Grid network (register,
//!   join a job, train it, attest every round on chain).
//! - `grid-trainer run --config trainer.toml`: train a job from a file with the peers it
//!   names, without a chain (tests and benchmarks of the exchange).
//! - `grid-trainer job create|status|cancel|fetch`: the buyer's side.
//! - `grid-trainer data publish|fetch`: content-addressed datasets.
//! - `grid-trainer key generate|inspect`, `grid-trainer peer-id`: keys.

use std::{path::PathBuf, time::Duration};

/// Counts which threads hold the large blocks, for the provider's memory log lines
/// (`alloc_ledger`): a comparison per allocation, a table probe per block of 1 MiB or more.
#[global_allocator]
static ALLOCATOR: grid_trainer::alloc_ledger::Counting = grid_trainer::alloc_ledger::Counting;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use grid_primitives::{datasets::parse_hex32, job::JobId, manifest::DatasetFormat};
use grid_trainer::{
	chain::{keys, Chain},
	daemon::{
		buyer,
		config::TrainerConfig,
		data_node::UploadLimit,
		datasets::{self, Serving},
		provider::{self, ProviderConfig},
		trainer::Trainer,
	},
	data::DataStore,
	net::keypair_from_seed,
};
use libp2p::Multiaddr;
use polkadot_sdk::sp_core::H256;

#[derive(Parser)]
#[command(name = "grid-trainer", about = "Grid's trainer daemon and buyer CLI", version)]
struct Cli {
	#[command(subcommand)]
	command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
	/// Provide compute on a Grid network: register, join a job, train it, get paid.
	Provide {
		/// The provider file (TOML).
		#[arg(long)]
		config: PathBuf,
	},
	/// Print, as JSON, what registering this provider needs (its libp2p key's binding to its
	/// account on the chain at `chain.url`, addresses, measured capabilities), for the web
	/// UI's "Register" form; registers nothing.
	Registration {
		/// The provider file (TOML).
		#[arg(long)]
		config: PathBuf,
	},
	/// Train the job of a configuration file with the peers it names (no chain).
	Run {
		/// The configuration file (TOML).
		#[arg(long)]
		config: PathBuf,
	},
	/// Post, follow, cancel and download jobs.
	#[command(subcommand)]
	Job(JobCmd),
	/// Publish and fetch datasets.
	#[command(subcommand)]
	Data(DataCmd),
	/// Account keys.
	#[command(subcommand)]
	Key(KeyCmd),
	/// Print the peer id of the libp2p key derived from a seed.
	PeerId {
		/// The key seed.
		#[arg(long)]
		key_seed: String,
	},
}

/// Where the chain is and who signs.
#[derive(Args)]
struct ChainArgs {
	/// The node's WebSocket URL.
	#[arg(long, default_value = "ws://127.0.0.1:9944")]
	url: String,
	/// The buyer's secret (`//Alice` on a dev chain, a mnemonic or a 0x seed).
	#[arg(long, conflicts_with = "account_file")]
	account: Option<String>,
	/// A file holding the buyer's secret.
	#[arg(long)]
	account_file: Option<PathBuf>,
}

impl ChainArgs {
	fn signer(&self) -> anyhow::Result<subxt_signer::sr25519::Keypair> {
		Ok(match (&self.account, &self.account_file) {
			(Some(secret), _) => keys::account_from_secret(secret)?,
			(None, Some(file)) => keys::account_from_file(file)?,
			(None, None) => anyhow::bail!("this command signs: give --account or --account-file"),
		})
	}
}

#[derive(Subcommand)]
enum JobCmd {
	/// Post a job from a TOML spec; its whole budget goes into escrow.
	Create {
		#[command(flatten)]
		chain: ChainArgs,
		/// The job file.
		#[arg(long)]
		spec: PathBuf,
		/// Then follow it until it ends.
		#[arg(long)]
		follow: bool,
		/// Post it without checking that its dataset can be had and fits the model (data
		/// published later; tests of providers' own checks).
		#[arg(long)]
		unchecked: bool,
	},
	/// Show a job; with `--follow`, its rounds as they settle.
	Status {
		#[command(flatten)]
		chain: ChainArgs,
		/// The job.
		#[arg(long)]
		job: JobId,
		/// Keep showing progress until the job ends.
		#[arg(long)]
		follow: bool,
	},
	/// Cancel a job (buyer only); the unspent escrow comes back.
	Cancel {
		#[command(flatten)]
		chain: ChainArgs,
		/// The job.
		#[arg(long)]
		job: JobId,
	},
	/// Dispute a provider's paid contribution to a round of a job (its buyer, or a
	/// registered provider): the chain's challenge deposit is held until a committee of the
	/// job's members decides, and its fee is paid. Proven fraud returns the round's payment
	/// and a share of the provider's slash; valid work costs the deposit.
	Challenge {
		#[command(flatten)]
		chain: ChainArgs,
		/// The job.
		#[arg(long)]
		job: JobId,
		/// The round.
		#[arg(long)]
		round: grid_primitives::job::RoundIndex,
		/// The provider's account (SS58).
		#[arg(long)]
		provider: String,
	},
	/// Download a completed job's model from a participant, checked against the chain.
	Fetch {
		#[command(flatten)]
		chain: ChainArgs,
		/// The job.
		#[arg(long)]
		job: JobId,
		/// Where to write the checkpoint (safetensors).
		#[arg(long)]
		out: PathBuf,
		/// Also write the model in the Hugging Face layout into this directory
		/// (`model.safetensors`, `config.json`, and a BPE dataset's `tokenizer.json`), loadable
		/// with `transformers`' `from_pretrained`.
		#[arg(long)]
		hf: Option<PathBuf>,
		/// The dataset store the tokenizer is copied from.
		#[arg(long, default_value = "grid-datasets")]
		store: PathBuf,
		/// How long to try (s).
		#[arg(long, default_value_t = 60)]
		timeout: u64,
	},
}

#[derive(Subcommand)]
enum DataCmd {
	/// Record a local file or flat directory as a dataset, print the reference a job names
	/// it by, and serve it over libp2p until stopped.
	Publish {
		/// The file or directory.
		path: PathBuf,
		/// How its files are read: text, tokens-u16, tokens-u32, text-bpe, mnist-idx,
		/// cifar10-bin, image-safetensors (train.safetensors and test.safetensors, each with
		/// `images` [N, C, H, W] and `labels` [N]), image-npy (train_images.npy,
		/// train_labels.npy, test_images.npy, test_labels.npy) or weights (a safetensors file
		/// of initial weights).
		#[arg(long, value_parser = parse_format)]
		format: DatasetFormat,
		/// The dataset store (keeps the manifest and the serving key).
		#[arg(long, default_value = "grid-datasets")]
		store: PathBuf,
		/// Where to serve from.
		#[arg(long, default_value = "/ip4/0.0.0.0/tcp/0")]
		listen: Multiaddr,
		/// Only print the reference (and a `file://` URI); serve nothing.
		#[arg(long)]
		no_serve: bool,
		/// Upload at most this many Mbit/s in all (unlimited when not given).
		#[arg(long)]
		max_upload_mbit: Option<UploadLimit>,
		/// Send chunks only over the encrypted libp2p stream, never over the plain bulk lane
		/// (faster; every chunk is checked against the reference either way, but on the lane
		/// an observer of the network path can read the data).
		#[arg(long)]
		encrypted_only: bool,
	},
	/// Show what a reference is: its manifest (format, files, sizes) from its source, checked
	/// against the reference, and who serves it; nothing is downloaded but the manifest.
	Info {
		/// The dataset's reference (its manifest's hash, 0x…).
		#[arg(long, value_parser = parse_hash)]
		reference: H256,
		/// Its source: holders' libp2p addresses, file://, http:// or https://.
		#[arg(long)]
		uri: String,
	},
	/// Bring a dataset into a store from its source, checked against its reference.
	Fetch {
		/// The dataset's reference (its manifest's hash, 0x…).
		#[arg(long, value_parser = parse_hash)]
		reference: H256,
		/// Its source: holders' libp2p addresses, file://, http:// or https://.
		#[arg(long)]
		uri: String,
		/// More holders to fetch from.
		#[arg(long)]
		holder: Vec<Multiaddr>,
		/// The dataset store.
		#[arg(long, default_value = "grid-datasets")]
		store: PathBuf,
		/// Serve what this node holds on this address while it fetches (other fetchers may
		/// list it as a holder), and go on serving once it has it all, until stopped.
		#[arg(long)]
		listen: Option<Multiaddr>,
		/// With --listen: upload at most this many Mbit/s in all.
		#[arg(long, requires = "listen")]
		max_upload_mbit: Option<UploadLimit>,
		/// With --listen: serve chunks only over the encrypted stream (as for `publish`).
		#[arg(long, requires = "listen")]
		encrypted_only: bool,
	},
	/// Pack an image folder (SRC/train/<class>/*.png|jpg, SRC/test/<class>/…; square images
	/// of one size) into an image-npy dataset in OUT, to publish with `--format image-npy`.
	PackImages {
		/// The folder holding train/ and test/.
		src: PathBuf,
		/// Where the four .npy files go.
		out: PathBuf,
		/// Colour planes to write: 1 (grey) or 3 (RGB); the first training image's if not
		/// given.
		#[arg(long)]
		channels: Option<usize>,
	},
}

fn parse_format(name: &str) -> Result<DatasetFormat, String> {
	DatasetFormat::named(name).ok_or_else(|| {
		let names: Vec<&str> = DatasetFormat::ALL.iter().map(|f| f.name()).collect();
		format!("not a format ({})", names.join(", "))
	})
}

fn parse_hash(text: &str) -> Result<H256, String> {
	parse_hex32(text).map(H256).ok_or_else(|| "not a 32-byte hex hash".into())
}

fn data_command(command: DataCmd) -> anyhow::Result<()> {
	// Every chunk served or fetched is a fresh 1 MiB buffer: glibc would map and unmap
	// each, and the page faults and zeroing were a seventh of a publisher's CPU time in
	// `bench/datasets.sh`.
	grid_trainer::malloc::retain_freed_memory();
	let rt = runtime()?;
	match command {
		DataCmd::Publish {
			path,
			format,
			store,
			listen,
			no_serve,
			max_upload_mbit,
			encrypted_only,
		} => {
			let serving = (!no_serve).then(|| Serving {
				listen: vec![listen],
				upload: max_upload_mbit,
				plain: !encrypted_only,
			});
			rt.block_on(datasets::publish(&DataStore::new(store), &path, format, serving))
		}
		DataCmd::Info { reference, uri } => rt.block_on(datasets::info(reference, &uri)),
		DataCmd::Fetch {
			reference,
			uri,
			holder,
			store,
			listen,
			max_upload_mbit,
			encrypted_only,
		} => {
			let serving = listen.map(|a| Serving {
				listen: vec![a],
				upload: max_upload_mbit,
				plain: !encrypted_only,
			});
			let store = DataStore::new(store);
			rt.block_on(datasets::fetch(&store, reference, &uri, &holder, serving))
		}
		DataCmd::PackImages { src, out, channels } => {
			let packed = grid_trainer::data::image_folder::pack(&src, &out, channels)?;
			println!(
				"packed {} training and {} held-out images of {}x{}x{} into {}",
				packed.train,
				packed.test,
				packed.channels,
				packed.side,
				packed.side,
				out.display()
			);
			for (label, class) in packed.classes.iter().enumerate() {
				println!("label {label}: {class}");
			}
			println!("publish: grid-trainer data publish {} --format image-npy", out.display());
			Ok(())
		}
	}
}

#[derive(Subcommand)]
enum KeyCmd {
	/// Create a new random account key file (never overwrites one).
	Generate {
		/// The file.
		#[arg(long)]
		out: PathBuf,
	},
	/// Print the account of a key file.
	Inspect {
		/// The file.
		#[arg(long)]
		file: PathBuf,
	},
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
	// One thread is plenty for the network and the chain; training runs on its own threads.
	// (Two were tried for 64 trainers on 2 cores, `bench/scale.sh`: twice the threads
	// competing with the node made it slower to answer, not the followers faster.)
	tokio::runtime::Builder::new_multi_thread()
		.worker_threads(1)
		.enable_all()
		.build()
		.context("starting the async runtime")
}

/// Sizes the compute thread pools and starts them at the lowest priority
/// (`grid_trainer::priority`), before anything computes.
fn set_threads(threads: usize) {
	if threads > 0 {
		// Candle's CPU kernels use rayon's global pool, sized from this variable.
		std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
	}
	// Candle's own pool for element-wise binary ops spin-waits beside rayon's threads for
	// the same cores: a two-thread step of the 0.87M GPT took 54.4 ms with it against 42.0
	// with those ops on the calling thread (`bench/reports/step_throughput.md`, "barrier pool
	// off"). Kept off unless the operator sets it.
	if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
		std::env::set_var("CANDLE_NUM_THREADS", "1");
	}
	if !grid_trainer::priority::start_compute_pools() {
		tracing::warn!(
			"the compute thread pools could not be lowered: they run at this process's priority"
		);
	}
}

fn job_command(command: JobCmd) -> anyhow::Result<()> {
	let rt = runtime()?;
	let connect = |url: &str| rt.block_on(Chain::connect(url, Duration::from_secs(10)));
	match command {
		JobCmd::Create { chain, spec, follow, unchecked } => {
			let signer = chain.signer()?;
			let node = connect(&chain.url)?;
			let job = rt.block_on(buyer::create(&node, &signer, &spec, unchecked))?;
			if follow {
				rt.block_on(buyer::status(&node, job, true))?;
			}
			Ok(())
		}
		JobCmd::Status { chain, job, follow } => {
			let node = connect(&chain.url)?;
			rt.block_on(buyer::status(&node, job, follow))
		}
		JobCmd::Cancel { chain, job } => {
			let signer = chain.signer()?;
			let node = connect(&chain.url)?;
			rt.block_on(buyer::cancel(&node, &signer, job))
		}
		JobCmd::Challenge { chain, job, round, provider } => {
			let signer = chain.signer()?;
			let node = connect(&chain.url)?;
			rt.block_on(buyer::challenge(&node, &signer, job, round, &provider))
		}
		JobCmd::Fetch { chain, job, out, hf, store, timeout } => {
			let node = connect(&chain.url)?;
			let export = hf.map(|dir| buyer::HfExport { dir, store: DataStore::new(store) });
			buyer::fetch(&rt, &node, job, &out, export.as_ref(), Duration::from_secs(timeout))
		}
	}
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
		Cmd::Key(KeyCmd::Generate { out }) => {
			let key = keys::generate_account_file(&out)?;
			println!("{}", key.public_key().to_account_id());
			Ok(())
		}
		Cmd::Key(KeyCmd::Inspect { file }) => {
			println!("{}", keys::account_from_file(&file)?.public_key().to_account_id());
			Ok(())
		}
		Cmd::Job(command) => job_command(command),
		Cmd::Data(command) => data_command(command),
		Cmd::Provide { config } => {
			let config = ProviderConfig::load(&config)?;
			set_threads(config.threads);
			grid_trainer::malloc::retain_freed_memory();
			let rt = runtime()?;
			provider::run(config, &rt)?;
			rt.shutdown_timeout(Duration::from_secs(1));
			Ok(())
		}
		Cmd::Registration { config } => {
			let config = ProviderConfig::load(&config)?;
			let rt = runtime()?;
			let node = rt.block_on(Chain::connect(&config.chain.url, Duration::from_secs(10)))?;
			let registration = provider::registration(&config, &node.genesis())?;
			println!("{}", serde_json::to_string_pretty(&registration)?);
			Ok(())
		}
		Cmd::Run { config } => {
			let config = TrainerConfig::load(&config)
				.with_context(|| format!("loading {}", config.display()))?;
			set_threads(config.threads);
			grid_trainer::malloc::retain_freed_memory();
			let rt = runtime()?;
			let trainer = Trainer::new(config, rt.handle()).context("starting the trainer")?;
			tracing::info!("trainer {} started", trainer.peer_id());
			trainer.run().context("training")?;
			rt.shutdown_timeout(Duration::from_secs(1));
			Ok(())
		}
	}
}
