//! The provider's configuration file (TOML): its account and stake, where it listens and
//! answers probes, which jobs it takes, and local training settings.

use std::path::{Path, PathBuf};

use grid_primitives::job::JobId;
use serde::Deserialize;
use subxt_signer::sr25519::Keypair;

use crate::{
	chain::{keys, ChainError},
	daemon::status_server,
	data::{HttpHosts, LocalFiles, MinRate, SourcePolicy},
	device::DeviceChoice,
	round::misbehave::Misbehaviour,
};

/// The provider's configuration file (TOML). Relative paths are relative to the file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
	/// A name for logs.
	pub name: String,
	/// Keys, checkpoints, proofs and logs (one sub-directory per job).
	pub data_dir: PathBuf,
	/// Directories whose files a job's `file://` dataset or weights may name (each must
	/// exist). None by default: a job's `file://` source is a path on this machine chosen by
	/// its buyer, and such jobs are passed over.
	#[serde(default)]
	pub local_datasets: Vec<PathBuf>,
	/// Whether a job's `http(s)://` source may be on a loopback, private or link-local
	/// address (a server on this provider's own network). False by default: a stranger's
	/// job would have the provider send requests to its own machine's or network's
	/// services (a cloud's metadata service at 169.254.169.254).
	#[serde(default)]
	pub private_http_sources: bool,
	/// The slowest mean rate (bytes/s, after a minute's grace) at which it goes on fetching
	/// a job's dataset or weights; 0: however slow. A stranger's source that trickles would
	/// otherwise hold a share of its download slots for as long as the stranger likes.
	#[serde(default = "min_fetch_bytes_per_sec")]
	pub min_fetch_bytes_per_sec: u64,
	/// The libp2p listen address, with a fixed port: it is registered on chain.
	pub listen: String,
	/// The address peers dial, when it differs from `listen` (behind NAT).
	pub advertise: Option<String>,
	/// Compute threads: rayon's pool, which runs the CPU steps and Candle's kernels (0: one
	/// per core, the libraries' defaults).
	#[serde(default)]
	pub threads: usize,
	/// Where to train: "auto" (a GPU when there is one), "cpu", "cuda" or "cuda:N".
	#[serde(default)]
	pub device: DeviceChoice,
	/// Makes each inner step take this many times longer (simulates a slower device).
	#[serde(default = "one")]
	pub compute_slowdown: f64,
	/// Whether checks of peers' work that redo training steps run beside this provider's
	/// own training (the default); false on a machine short of memory: they take turns
	/// (the peak without one of them, `bench/README.md`, *Memory per trainer*), and a round
	/// may start up to one check late.
	#[serde(default = "yes")]
	pub checks_beside_training: bool,
	/// Deliberate misbehaviour, for tests.
	#[serde(default)]
	pub misbehave: Misbehaviour,
	/// The chain.
	pub chain: ChainSection,
	/// Local choices that do not affect the model peers agree on.
	#[serde(default)]
	pub training: LocalTraining,
}

fn one() -> f64 {
	1.0
}

fn yes() -> bool {
	true
}

/// How the provider talks to the chain and which jobs it takes.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainSection {
	/// The node (`ws://…`).
	pub url: String,
	/// The account's secret (`//Alice`, a mnemonic, or a `0x` seed). Development only: use
	/// `account_file` otherwise.
	pub account: Option<String>,
	/// A file holding the account's secret (`grid-trainer key generate` writes one).
	pub account_file: Option<PathBuf>,
	/// Stake to put up when registering: written in GRID, held in units.
	#[serde(deserialize_with = "grid_primitives::spec_file::grid")]
	pub stake: u128,
	/// Join this job; otherwise the lowest-numbered one that fits.
	pub job: Option<JobId>,
	/// Largest model (parameters) it takes.
	#[serde(default = "max_parameters")]
	pub max_parameters: u64,
	/// Largest dataset (or initial weights) it fetches, in bytes: refused by its manifest
	/// (or announced length) before anything is fetched.
	#[serde(default = "max_dataset_bytes")]
	pub max_dataset_bytes: u64,
	/// Smallest reward per round it works for: written in GRID, held in units.
	#[serde(default, deserialize_with = "grid_primitives::spec_file::grid")]
	pub min_reward_per_round: u128,
	/// The URL validators probe for liveness (this trainer's status server).
	pub endpoint: String,
	/// How long to keep serving the final model after the job, for the buyer (s).
	#[serde(default = "serve_final_secs")]
	pub serve_final_secs: u64,
	/// Leave a job when this many of the last four rounds this provider worked settled
	/// without a quorum (nobody paid for them; a third of the members may be attesting other
	/// results); 0: never.
	#[serde(default = "leave_without_quorum")]
	pub leave_without_quorum: usize,
	/// Pass over the jobs of a buyer for this many blocks after leaving one of its jobs for
	/// lack of quorum (the daemon remembers the leave in `<data_dir>/left-buyers.json`); 0:
	/// never.
	#[serde(default = "avoid_buyer_blocks")]
	pub avoid_buyer_blocks: u32,
	/// Take jobs only from these buyers (SS58 addresses); from any buyer when absent.
	pub buyers: Option<Vec<crate::chain::AccountId>>,
}

fn serve_final_secs() -> u64 {
	120
}

fn leave_without_quorum() -> usize {
	2
}

/// A week of 6 s blocks.
fn avoid_buyer_blocks() -> u32 {
	7 * 24 * 600
}

/// 1 MB/s (8 Mbit/s): a 10 GB dataset within three hours.
fn min_fetch_bytes_per_sec() -> u64 {
	1_000_000
}

/// How long a fetch may go before its mean rate is held to `min_fetch_bytes_per_sec`.
const FETCH_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// 64 GiB.
fn max_dataset_bytes() -> u64 {
	64 << 30
}

fn max_parameters() -> u64 {
	50_000_000
}

/// This provider's own pacing and local evaluation. The exchange's timing is the job's
/// (`training.exchange` in its spec), the same for every member: a provider that committed
/// later than the others' collection would be left out of their set.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalTraining {
	/// Time an update should take to download (ms), which sets the compression level.
	pub transfer_budget_ms: u64,
	/// Held-out samples evaluated after each round (0: none).
	pub eval_samples: usize,
	/// At most this many inner steps per round of this provider's own (below the job's
	/// `training.max_steps`, which alone decides what a peer's round may claim).
	pub max_steps: Option<u32>,
}

impl Default for LocalTraining {
	fn default() -> Self {
		LocalTraining { transfer_budget_ms: 500, eval_samples: 0, max_steps: None }
	}
}

impl ProviderConfig {
	/// The buyers whose jobs this provider left for lack of quorum.
	pub fn left_buyers_file(&self) -> PathBuf {
		self.data_dir.join(crate::chain::left_buyers::LeftBuyers::FILE)
	}

	/// The dataset store, shared by every job this provider takes.
	pub fn store(&self) -> crate::data::DataStore {
		crate::data::DataStore::new(self.data_dir.join("datasets"))
	}

	/// What a job's dataset source may make this provider read.
	pub fn source_policy(&self) -> SourcePolicy {
		let http = match self.private_http_sources {
			true => HttpHosts::Any,
			false => HttpHosts::Public,
		};
		SourcePolicy {
			local: LocalFiles::Under(self.local_datasets.clone()),
			http,
			max_bytes: self.chain.max_dataset_bytes,
			min_rate: std::num::NonZeroU64::new(self.min_fetch_bytes_per_sec)
				.map(|bytes_per_sec| MinRate { bytes_per_sec, grace: FETCH_GRACE }),
		}
	}

	/// Reads and checks a provider file.
	pub fn load(path: &Path) -> Result<Self, ChainError> {
		let bad = |m: String| ChainError::Config(format!("{}: {m}", path.display()));
		let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
		let mut config: ProviderConfig = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
		let base = path.parent().unwrap_or(Path::new("."));
		config.data_dir = base.join(&config.data_dir);
		config.chain.account_file = config.chain.account_file.map(|f| base.join(f));
		for dir in &mut config.local_datasets {
			let resolved = base.join(&*dir).canonicalize().ok().filter(|d| d.is_dir());
			let why = format!("local_datasets: {} is not a directory", dir.display());
			*dir = resolved.ok_or_else(|| bad(why))?;
		}
		if config.chain.account.is_some() == config.chain.account_file.is_some() {
			return Err(bad("give exactly one of chain.account and chain.account_file".into()));
		}
		for addr in [Some(&config.listen), config.advertise.as_ref()].into_iter().flatten() {
			let parsed: libp2p::Multiaddr =
				addr.parse().map_err(|e| bad(format!("address {addr:?}: {e}")))?;
			if parsed.iter().any(|p| matches!(p, libp2p::multiaddr::Protocol::Tcp(0))) {
				return Err(bad(format!("{addr}: a registered address needs a fixed port")));
			}
		}
		status_server::listen_address(&config.chain.endpoint).map_err(bad)?;
		if !(config.compute_slowdown.is_finite() && config.compute_slowdown >= 1.0) {
			return Err(bad("compute_slowdown must be >= 1".into()));
		}
		Ok(config)
	}

	pub(super) fn account(&self) -> Result<Keypair, ChainError> {
		match (&self.chain.account, &self.chain.account_file) {
			(Some(secret), _) => keys::account_from_secret(secret),
			(None, Some(file)) => keys::account_from_file(file),
			(None, None) => Err(ChainError::Key("no account configured".into())),
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::daemon::provider::TEST_FILE as GOOD;

	#[test]
	fn provider_files_parse_and_bad_ones_say_why() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("p.toml");
		std::fs::write(&path, GOOD).unwrap();
		let config = ProviderConfig::load(&path).unwrap();
		assert_eq!(config.data_dir, dir.path().join("bob"));
		assert_eq!(config.training.eval_samples, 100);
		assert_eq!(config.training.transfer_budget_ms, LocalTraining::default().transfer_budget_ms);
		assert_eq!(
			config.account().unwrap().public_key().0,
			subxt_signer::sr25519::dev::bob().public_key().0
		);
		assert!(config.checks_beside_training, "checks run beside training unless told");
		let by_turns = GOOD.replacen("[chain]", "checks_beside_training = false\n[chain]", 1);
		std::fs::write(&path, by_turns).unwrap();
		assert!(!ProviderConfig::load(&path).unwrap().checks_beside_training);
		let local = LocalFiles::Under(vec![]);
		let bytes_per_sec = std::num::NonZeroU64::new(1_000_000).unwrap();
		let min_rate = Some(MinRate { bytes_per_sec, grace: FETCH_GRACE });
		let policy = SourcePolicy { local, http: HttpHosts::Public, max_bytes: 64 << 30, min_rate };
		assert_eq!(config.source_policy(), policy);
		let unhurried = GOOD.replacen("[chain]", "min_fetch_bytes_per_sec = 0\n[chain]", 1);
		std::fs::write(&path, unhurried).unwrap();
		assert_eq!(ProviderConfig::load(&path).unwrap().source_policy().min_rate, None);
		std::fs::write(&path, GOOD).unwrap();
		std::fs::create_dir(dir.path().join("corpora")).unwrap();
		let local = GOOD.replacen("[chain]", "local_datasets = [\"corpora\"]\n[chain]", 1);
		std::fs::write(&path, local).unwrap();
		let resolved = dir.path().join("corpora").canonicalize().unwrap();
		assert_eq!(ProviderConfig::load(&path).unwrap().local_datasets, vec![resolved]);
		let cases = [
			(
				GOOD.replacen("[chain]", "local_datasets = [\"missing\"]\n[chain]", 1),
				"local_datasets: missing is not a directory",
			),
			(GOOD.replace("account = \"//Bob\"", ""), "exactly one of"),
			(
				GOOD.replace("account = \"//Bob\"", "account = \"//Bob\"\naccount_file = \"k\""),
				"exactly one of",
			),
			(GOOD.replace("tcp/4001", "tcp/0"), "fixed port"),
			(GOOD.replace("http://127.0.0.1:9101/health", "ftp://x"), "http://"),
			(GOOD.replace("stake = 200", "stake = 200\nfoo = 1"), "unknown field"),
			(GOOD.replace("stake = 200", "stake = -5"), "-5 GRID is not a usable amount"),
			(
				GOOD.replacen("[chain]", "checks_beside_training = \"no\"\n[chain]", 1),
				"invalid type: string \"no\", expected a boolean",
			),
			// The exchange's timing is the job's, not a provider's.
			(GOOD.replace("[training]", "[training]\ngrace_ms = 500"), "unknown field `grace_ms`"),
		];
		for (text, expected) in cases {
			std::fs::write(&path, text).unwrap();
			let err = ProviderConfig::load(&path).unwrap_err().to_string();
			assert!(err.contains(expected), "{expected}: {err}");
		}
	}
}
