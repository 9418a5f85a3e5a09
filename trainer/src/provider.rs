//! The provider daemon (`grid-trainer provide`): a GPU (here: CPU) provider's trainer on a
//! Grid network. It registers its account with stake and binds its libp2p key to it, finds a
//! job it can run, joins it, trains it with the other participants — rounds opened and closed
//! by the chain — and attests every round on chain, where it is paid.

use std::{
	path::{Path, PathBuf},
	time::Duration,
};

use grid_primitives::{
	job::{JobId, JobSpec},
	provider::{peer_binding_payload, BoundedBytes, Capabilities, Multiaddrs},
};
use libp2p::identity::Keypair as P2pKeypair;
use serde::Deserialize;
use subxt::utils::Static;
use subxt_signer::sr25519::Keypair;

use crate::{
	chain::{
		api,
		client::JobStatus,
		coordinator::{self, FollowConfig},
		keys, spec, AccountId, Chain, ChainError,
	},
	config::{Misbehaviour, Schedule, TrainerConfig},
	device::DeviceChoice,
	node::Trainer,
	status_server::{self, Extra, StatusSink},
};

/// The provider's configuration file (TOML). Relative paths are relative to the file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
	/// A name for logs.
	pub name: String,
	/// Keys, checkpoints, proofs and logs (one sub-directory per job).
	pub data_dir: PathBuf,
	/// The libp2p listen address, with a fixed port: it is registered on chain.
	pub listen: String,
	/// The address peers dial, when it differs from `listen` (behind NAT).
	pub advertise: Option<String>,
	/// Compute threads (0: Candle's default).
	#[serde(default)]
	pub threads: usize,
	/// Where to train: "auto" (a GPU when there is one), "cpu", "cuda" or "cuda:N".
	#[serde(default)]
	pub device: DeviceChoice,
	/// Makes each inner step take this many times longer (simulates a slower device).
	#[serde(default = "one")]
	pub compute_slowdown: f64,
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
	/// Stake to put up when registering, in GRID.
	pub stake: f64,
	/// Join this job; otherwise the lowest-numbered one that fits.
	pub job: Option<JobId>,
	/// Largest model (parameters) it takes.
	#[serde(default = "max_parameters")]
	pub max_parameters: u64,
	/// Smallest reward per round it works for, in GRID.
	#[serde(default)]
	pub min_reward_per_round: f64,
	/// The URL validators probe for liveness (this trainer's status server).
	pub endpoint: String,
	/// How long to keep serving the final model after the job, for the buyer (s).
	#[serde(default = "serve_final_secs")]
	pub serve_final_secs: u64,
}

fn serve_final_secs() -> u64 {
	120
}

fn max_parameters() -> u64 {
	50_000_000
}

/// Timing of the exchange and local evaluation.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalTraining {
	/// Commitments are taken this long after the commit deadline (ms).
	pub grace_ms: u64,
	/// Longest wait for updates after that (ms).
	pub fetch_timeout_ms: u64,
	/// Time an update should take to download (ms), which sets the compression level.
	pub transfer_budget_ms: u64,
	/// Held-out samples evaluated after each round (0: none).
	pub eval_samples: usize,
	/// At most this many inner steps per round.
	pub max_steps: Option<u32>,
}

impl Default for LocalTraining {
	fn default() -> Self {
		LocalTraining {
			grace_ms: 1_500,
			fetch_timeout_ms: 4_000,
			transfer_budget_ms: 500,
			eval_samples: 0,
			max_steps: None,
		}
	}
}

impl ProviderConfig {
	/// Reads and checks a provider file.
	pub fn load(path: &Path) -> Result<Self, ChainError> {
		let bad = |m: String| ChainError::Config(format!("{}: {m}", path.display()));
		let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
		let mut config: ProviderConfig = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
		let base = path.parent().unwrap_or(Path::new("."));
		config.data_dir = base.join(&config.data_dir);
		config.chain.account_file = config.chain.account_file.map(|f| base.join(f));
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
		crate::status_server::listen_address(&config.chain.endpoint).map_err(bad)?;
		if !(config.compute_slowdown.is_finite() && config.compute_slowdown >= 1.0) {
			return Err(bad("compute_slowdown must be >= 1".into()));
		}
		Ok(config)
	}

	fn account(&self) -> Result<Keypair, ChainError> {
		match (&self.chain.account, &self.chain.account_file) {
			(Some(secret), _) => keys::account_from_secret(secret),
			(None, Some(file)) => keys::account_from_file(file),
			(None, None) => Err(ChainError::Key("no account configured".into())),
		}
	}
}

/// What this machine declares for the device it will train on: measured with a short
/// matrix-multiply run, so the chain's cap on claimable samples reflects the hardware.
pub fn capabilities(choice: DeviceChoice) -> Result<Capabilities, ChainError> {
	let device = crate::device::select(choice).map_err(|e| ChainError::Device(e.to_string()))?;
	Ok(crate::device::capabilities(&device, Duration::from_millis(300)))
}

/// The libp2p key's half of a registration: its ed25519 public key and its signature binding
/// it to `account` on the chain with genesis `genesis`.
fn peer_binding(
	p2p: &P2pKeypair,
	genesis: &grid_primitives::Hash,
	account: &AccountId,
) -> Result<([u8; 32], [u8; 64]), ChainError> {
	let public = keys::p2p_public(p2p)?;
	let binding = p2p
		.sign(&peer_binding_payload(genesis, account))
		.map_err(|e| ChainError::Key(e.to_string()))?;
	let signature: [u8; 64] =
		binding.try_into().map_err(|_| ChainError::Key("ed25519 signature length".into()))?;
	Ok((public, signature))
}

/// The address peers dial, as registered: the advertised (or listen) address with the peer id.
fn registered_address(config: &ProviderConfig, p2p: &P2pKeypair) -> String {
	let peer_id = p2p.public().to_peer_id();
	format!("{}/p2p/{peer_id}", config.advertise.as_ref().unwrap_or(&config.listen))
}

/// Registers `account` with `stake` unless it is registered; refuses to go on when the chain
/// binds it to another libp2p key.
async fn ensure_registered(
	chain: &Chain,
	account: &Keypair,
	p2p: &P2pKeypair,
	config: &ProviderConfig,
) -> Result<(), ChainError> {
	let me = account.public_key().to_account_id();
	let peer_id = p2p.public().to_peer_id();
	if let Some(view) = chain.provider(&me).await? {
		if view.provider.peer_id.to_vec() != peer_id.to_bytes() {
			return Err(ChainError::Key(format!(
				"{me} is registered with another libp2p key than {peer_id}"
			)));
		}
		tracing::info!("{me} is registered already");
		return Ok(());
	}
	let (public, signature) = peer_binding(p2p, &chain.genesis(), &me)?;
	let address = registered_address(config, p2p);
	let multiaddrs: Multiaddrs =
		Multiaddrs::truncate_from(vec![BoundedBytes::truncate_from(address.into_bytes())]);
	let call = api::tx().providers().register(
		spec::grid_units("stake", config.chain.stake)?,
		Static(capabilities(config.device)?),
		public,
		signature,
		api::runtime_types::bounded_collections::bounded_vec::BoundedVec(
			multiaddrs
				.into_iter()
				.map(|a| {
					api::runtime_types::bounded_collections::bounded_vec::BoundedVec(a.into_inner())
				})
				.collect(),
		),
		api::runtime_types::bounded_collections::bounded_vec::BoundedVec(
			config.chain.endpoint.as_bytes().to_vec(),
		),
	);
	chain.submit("register", &call, account).await?;
	tracing::info!("registered {me} with peer id {peer_id}");
	Ok(())
}

/// Everything `Providers::register` takes for this provider except the signature of the
/// account itself, as JSON: what the web UI's "Register" form reads, so an account held in the
/// browser registers the trainer's libp2p key without that key leaving the machine.
pub fn registration(
	config: &ProviderConfig,
	genesis: &grid_primitives::Hash,
) -> Result<serde_json::Value, ChainError> {
	std::fs::create_dir_all(&config.data_dir)
		.map_err(|e| ChainError::Key(format!("creating {}: {e}", config.data_dir.display())))?;
	let me = config.account()?.public_key().to_account_id();
	let p2p = keys::p2p_key(&config.data_dir.join("p2p.key"))?;
	let (public, signature) = peer_binding(&p2p, genesis, &me)?;
	let caps = capabilities(config.device)?;
	Ok(serde_json::json!({
		"format": "grid/registration/v1",
		"genesis": format!("{genesis:?}"),
		"account": me.to_string(),
		"peer_id": p2p.public().to_peer_id().to_string(),
		"peer_public": format!("0x{}", hex::encode(public)),
		"peer_signature": format!("0x{}", hex::encode(signature)),
		"multiaddrs": [registered_address(config, &p2p)],
		"endpoint": config.chain.endpoint,
		"stake_grid": config.chain.stake,
		"capabilities": {
			"device": format!("{:?}", caps.device),
			"device_name": String::from_utf8_lossy(caps.device_name.as_ref()).into_owned(),
			"device_count": caps.device_count,
			"memory_mib": caps.memory_mib,
			"tflops_milli": caps.tflops_milli,
			"bandwidth_mbps": caps.bandwidth_mbps,
			"region": String::from_utf8_lossy(caps.region.as_ref()).into_owned(),
		},
	}))
}

/// Whether this provider takes a job: a live job with room, a spec it can run within its
/// policy, and a stake requirement it meets.
fn fits(spec: &JobSpec<u128, u32>, config: &ProviderConfig) -> Result<(), String> {
	spec::job_config(0, spec, 0, None).map_err(|e| e.to_string())?;
	if spec.model.parameters() > config.chain.max_parameters {
		return Err(format!("{} parameters is above the limit", spec.model.parameters()));
	}
	let min_reward =
		spec::grid_units("min_reward_per_round", config.chain.min_reward_per_round).unwrap_or(0);
	if spec.reward_per_round < min_reward {
		return Err("the reward is below this provider's minimum".into());
	}
	let stake = spec::grid_units("stake", config.chain.stake).unwrap_or(0);
	if stake < spec.min_provider_stake {
		return Err("the job needs more stake".into());
	}
	Ok(())
}

/// The job to work on: one this account is in already (a restart), the configured one, or
/// the lowest-numbered live job that fits and has room. Waits until there is one.
async fn choose_job(
	chain: &Chain,
	me: &AccountId,
	config: &ProviderConfig,
) -> Result<(JobId, JobSpec<u128, u32>), ChainError> {
	loop {
		for (id, status) in chain.jobs().await? {
			if config.chain.job.is_some_and(|j| j != id)
				|| !matches!(status, JobStatus::Open | JobStatus::Running)
			{
				continue;
			}
			let Some(view) = chain.job(id).await? else { continue };
			let spec = view.job.spec.0.clone();
			let member = chain.participants(id).await?.iter().any(|(who, _)| who == me);
			if member {
				return Ok((id, spec));
			}
			match fits(&spec, config) {
				Ok(()) if view.job.participants < spec.max_providers => return Ok((id, spec)),
				Ok(()) => tracing::debug!("job {id} is full"),
				Err(why) if config.chain.job == Some(id) => {
					return Err(ChainError::Spec(format!("job {id}: {why}")))
				}
				Err(why) => tracing::debug!("job {id} skipped: {why}"),
			}
		}
		tokio::time::sleep(Duration::from_secs(2)).await;
	}
}

/// Joins `job` unless this account is in it already.
async fn ensure_joined(chain: &Chain, account: &Keypair, job: JobId) -> Result<(), ChainError> {
	let me = account.public_key().to_account_id();
	if chain.participants(job).await?.iter().any(|(who, _)| *who == me) {
		return Ok(());
	}
	chain.submit("join_job", &api::tx().jobs().join_job(job), account).await?;
	tracing::info!("joined job {job}");
	Ok(())
}

/// Runs the provider until its job ends.
pub fn run(config: ProviderConfig, runtime: &tokio::runtime::Runtime) -> anyhow::Result<()> {
	use anyhow::Context;
	std::fs::create_dir_all(&config.data_dir)
		.with_context(|| format!("creating {}", config.data_dir.display()))?;
	let account = config.account()?;
	let me = account.public_key().to_account_id();
	let p2p = keys::p2p_key(&config.data_dir.join("p2p.key"))?;
	let (chain, job, spec, bootstrap) = runtime.block_on(async {
		let chain = Chain::connect(&config.chain.url, Duration::from_secs(60)).await?;
		ensure_registered(&chain, &account, &p2p, &config).await?;
		let (job, spec) = choose_job(&chain, &me, &config).await?;
		ensure_joined(&chain, &account, job).await?;
		// The job's other participants, to dial first.
		let bootstrap = chain.participant_addresses(job, Some(&me)).await?;
		let bootstrap: Vec<String> = bootstrap.iter().map(ToString::to_string).collect();
		Ok::<_, ChainError>((chain, job, spec, bootstrap))
	})?;
	let local = &config.training;
	let job_config = spec::job_config(job, &spec, local.eval_samples, local.max_steps)?;
	let job_dir = config.data_dir.join(format!("job-{job}"));
	let trainer_config = TrainerConfig {
		name: config.name.clone(),
		key_seed: String::new(),
		data_dir: job_dir.clone(),
		listen: vec![config.listen.clone()],
		bootstrap,
		scenario: None,
		threads: config.threads,
		device: config.device,
		compute_slowdown: config.compute_slowdown,
		misbehave: config.misbehave,
		job: job_config,
		// Rounds are opened by the chain; the period only bounds the grace.
		schedule: Schedule::Deadline {
			start_unix_ms: 0,
			period_ms: u64::from(spec.training.round_blocks)
				* grid_primitives::time::MILLI_SECS_PER_BLOCK,
			grace_ms: local.grace_ms,
			fetch_timeout_ms: local.fetch_timeout_ms,
			transfer_budget_ms: local.transfer_budget_ms,
		},
	};
	trainer_config.validate()?;
	let follow = FollowConfig {
		job,
		proof_dir: job_dir.join("proofs"),
		// Commitments are taken for `grace`; fetching and aggregating on top of that.
		exchange_ms: local.grace_ms + local.fetch_timeout_ms / 2,
		equivocate: config.misbehave.equivocate,
	};
	let coordinator = coordinator::start(runtime.handle(), chain, account, follow)?;
	let handle = std::sync::Arc::new(coordinator);
	let mut trainer =
		Trainer::with_key(trainer_config, p2p, Some(Box::new(handle.clone())), runtime.handle())?;
	trainer.set_linger(Duration::from_secs(config.chain.serve_final_secs));
	let sink: StatusSink = std::sync::Arc::new(std::sync::Mutex::new(serde_json::json!({})));
	let address =
		status_server::listen_address(&config.chain.endpoint).map_err(ChainError::Spec)?;
	let extra: Extra = {
		let (handle, me) = (handle.clone(), me.to_string());
		std::sync::Arc::new(move || {
			let (earned, rounds_paid, slashed) = handle.earnings();
			serde_json::json!({ "chain": {
				"account": me,
				"job": job,
				"earned": earned.to_string(),
				"earned_grid": earned as f64 / grid_primitives::currency::UNIT as f64,
				"rounds_paid": rounds_paid,
				"slashed": slashed.to_string(),
			}})
		})
	};
	runtime
		.block_on(status_server::serve(address, sink.clone(), extra))
		.with_context(|| format!("serving {}", config.chain.endpoint))?;
	trainer.set_status_sink(sink);
	tracing::info!("provider {me} trains job {job} as {}", trainer.peer_id());
	trainer.run()?;
	if !handle.flush(Duration::from_secs(60)) {
		tracing::warn!("some proofs were not seen on chain before exiting");
	}
	let (earned, rounds, slashed) = handle.earnings();
	tracing::info!("job {job} done: earned {earned} units for {rounds} rounds; {slashed} slashed");
	Ok(())
}

#[cfg(test)]
mod tests {
	use super::*;

	const GOOD: &str = r#"
		name = "bob"
		data_dir = "bob"
		listen = "/ip4/127.0.0.1/tcp/4001"

		[chain]
		url = "ws://127.0.0.1:9944"
		account = "//Bob"
		stake = 200
		endpoint = "http://127.0.0.1:9101/health"

		[training]
		eval_samples = 100
	"#;

	#[test]
	fn registration_binds_the_trainers_key_to_its_account_on_this_chain() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("p.toml");
		std::fs::write(&path, GOOD.replace("[chain]", "device = \"cpu\"\n[chain]")).unwrap();
		let config = ProviderConfig::load(&path).unwrap();
		let genesis = grid_primitives::Hash::repeat_byte(9);
		let json = registration(&config, &genesis).unwrap();
		let field = |k: &str| json[k].as_str().unwrap().to_string();
		let bytes = |k: &str| hex::decode(field(k).trim_start_matches("0x")).unwrap();

		// The key `provide` will use (same data dir) is the one bound.
		let p2p = keys::p2p_key(&config.data_dir.join("p2p.key")).unwrap();
		assert_eq!(field("peer_id"), p2p.public().to_peer_id().to_string());
		assert_eq!(bytes("peer_public"), keys::p2p_public(&p2p).unwrap());
		let bob = config.account().unwrap().public_key().to_account_id();
		assert_eq!(field("account"), bob.to_string());
		assert_eq!(bytes("genesis"), genesis.as_bytes());

		// The signature is over this chain and this account only.
		let public = p2p.public();
		let signature = bytes("peer_signature");
		assert!(public.verify(&peer_binding_payload(&genesis, &bob), &signature));
		let other = grid_primitives::Hash::repeat_byte(8);
		assert!(!public.verify(&peer_binding_payload(&other, &bob), &signature));

		assert_eq!(
			json["multiaddrs"][0].as_str().unwrap(),
			format!("/ip4/127.0.0.1/tcp/4001/p2p/{}", field("peer_id"))
		);
		assert_eq!(field("endpoint"), "http://127.0.0.1:9101/health");
		assert_eq!(json["capabilities"]["device"], "Cpu");
		assert!(json["capabilities"]["tflops_milli"].as_u64().unwrap() > 0);
	}

	#[test]
	fn provider_files_parse_and_bad_ones_say_why() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("p.toml");
		std::fs::write(&path, GOOD).unwrap();
		let config = ProviderConfig::load(&path).unwrap();
		assert_eq!(config.data_dir, dir.path().join("bob"));
		assert_eq!(config.training.eval_samples, 100);
		assert_eq!(config.training.grace_ms, LocalTraining::default().grace_ms);
		assert_eq!(
			config.account().unwrap().public_key().0,
			subxt_signer::sr25519::dev::bob().public_key().0
		);
		let cases = [
			(GOOD.replace("account = \"//Bob\"", ""), "exactly one of"),
			(
				GOOD.replace("account = \"//Bob\"", "account = \"//Bob\"\naccount_file = \"k\""),
				"exactly one of",
			),
			(GOOD.replace("tcp/4001", "tcp/0"), "fixed port"),
			(GOOD.replace("http://127.0.0.1:9101/health", "ftp://x"), "http://"),
			(GOOD.replace("stake = 200", "stake = 200\nfoo = 1"), "unknown field"),
		];
		for (text, expected) in cases {
			std::fs::write(&path, text).unwrap();
			let err = ProviderConfig::load(&path).unwrap_err().to_string();
			assert!(err.contains(expected), "{expected}: {err}");
		}
	}

	#[test]
	fn jobs_outside_the_policy_are_not_taken() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("p.toml");
		std::fs::write(&path, GOOD).unwrap();
		let mut config = ProviderConfig::load(&path).unwrap();
		let file: spec::JobFile = toml::from_str(
			r#"
			dataset = "mnist"
			model = { kind = "mlp", hidden = 32, layers = 1 }
			rounds = 2
			round_blocks = 5
			batch_size = 32
			lr = 0.002
			compression = { scheme = "int8", chunk = 64 }
			reward_per_round = 10
			min_providers = 2
			max_providers = 4
			min_provider_stake = 100
			"#,
		)
		.unwrap();
		let spec = file.to_spec().unwrap();
		assert_eq!(fits(&spec, &config), Ok(()));
		config.chain.max_parameters = 1_000;
		assert!(fits(&spec, &config).unwrap_err().contains("parameters"));
		config.chain.max_parameters = u64::MAX;
		config.chain.min_reward_per_round = 11.0;
		assert!(fits(&spec, &config).unwrap_err().contains("reward"));
		config.chain.min_reward_per_round = 0.0;
		config.chain.stake = 50.0;
		assert!(fits(&spec, &config).unwrap_err().contains("stake"));
	}
}
