//! The provider daemon (`grid-trainer provide`): a GPU (here: CPU) provider's trainer on a
//! Grid network. It registers its account with stake and binds its libp2p key to it, finds a
//! job it can run, joins it, trains it with the other participants — rounds opened and closed
//! by the chain — and attests every round on chain, where it is paid.

mod config;
mod preparing;
mod registration;

use std::time::Duration;

use grid_primitives::job::{max_claim, Admission, JobId, JobSpec, Refusal};
use polkadot_sdk::sp_runtime::Perbill;
use subxt_signer::sr25519::Keypair;

pub use config::{ChainSection, LocalTraining, ProviderConfig};
use registration::ensure_registered;
pub use registration::{capabilities, registration};

use crate::{
	chain::{
		api,
		client::JobStatus,
		follower::{self, FollowConfig},
		keys,
		left_buyers::LeftBuyers,
		AccountId, Chain, ChainError,
	},
	daemon::{
		config::TrainerConfig,
		datasets, job_spec,
		status_server::{self, Extra, StatusSink},
		trainer::{Prepared, Trainer},
	},
	data,
	model::Model,
	net::ProofLink,
	round::{coordinator::Schedule, fraud::FraudPort, misbehave::AgainstTruth},
};

/// This provider's standing as the chain sees it: declared TFLOP/s (thousandths), the jobs
/// it takes part in, which share them, and its stake not locked by jobs.
#[derive(Clone, Copy, Debug)]
struct Standing {
	tflops_milli: u32,
	jobs: u32,
	/// Active stake less what jobs lock, taken part in or left recently (a job left for lack
	/// of quorum locks its stake for the voting period after it); `None`: left to the chain.
	free_stake: Option<u128>,
}

impl Standing {
	/// What the chain has on record for `me` (nothing before it registers), and the jobs
	/// whose locks it holds.
	async fn of(chain: &Chain, me: &AccountId) -> Result<(Self, Vec<JobId>), ChainError> {
		use api::runtime_types::pallet_providers::types::LockState;
		let Some(view) = chain.best().await?.provider(me).await? else {
			return Ok((Standing { tflops_milli: 0, jobs: 0, free_stake: Some(0) }, Vec::new()));
		};
		let locks = &view.provider.jobs.0;
		let jobs = locks.iter().filter(|l| matches!(l.state, LockState::Member)).count() as u32;
		let standing = Standing {
			tflops_milli: view.provider.capabilities.tflops_milli,
			jobs,
			free_stake: Some(view.provider.stake.saturating_sub(view.locked)),
		};
		Ok((standing, locks.iter().map(|l| l.job).collect()))
	}

	/// As it stands for joining job `id`: a job whose lock it holds already (it left or was
	/// removed, and comes back) is the chain's to judge, since that lock is replaced, not
	/// added to.
	fn for_job(self, id: JobId, locked: &[JobId]) -> Self {
		match locked.contains(&id) {
			true => Standing { free_stake: None, ..self },
			false => self,
		}
	}
}

/// Whether this provider takes a job: a live job with room, a spec it can run within its
/// policy, a stake requirement its stake free of other jobs' locks meets, and room in its
/// throughput for a batch per round (the chain refuses the join otherwise: `NotEligible`,
/// `Underpowered`). (The search reads the two halves apart: a job outside the policy is not
/// read again.)
#[cfg(test)]
fn fits(
	spec: &JobSpec<u128, u32>,
	config: &ProviderConfig,
	standing: Standing,
) -> Result<(), String> {
	fits_policy(spec, config).and_then(|()| fits_standing(spec, standing))
}

/// Whether a job's spec (which never changes) is within this provider's policy: a model it
/// may run, the reward it asks, a stake requirement its configured stake meets.
fn fits_policy(spec: &JobSpec<u128, u32>, config: &ProviderConfig) -> Result<(), String> {
	// Checks the model against the spec rules too, so its size is known.
	job_spec::chain_job(0, spec, 0, None).map_err(|e| e.to_string())?;
	let parameters = spec.model.parameters().unwrap_or(u64::MAX);
	if parameters > config.chain.max_parameters {
		return Err(format!("{parameters} parameters is above the limit"));
	}
	let overlap = spec.training.overlap_steps;
	if let Some(max) = config.training.max_steps.filter(|max| overlap > 0 && overlap >= *max) {
		return Err(format!(
			"it overlaps {overlap} steps a round, not below this provider's max_steps ({max})"
		));
	}
	if spec.reward_per_round < config.chain.min_reward_per_round {
		return Err("the reward is below this provider's minimum".into());
	}
	if config.chain.stake < spec.min_provider_stake {
		return Err("the job needs more stake".into());
	}
	Ok(())
}

/// Whether this provider's standing now (its stake free of other jobs' locks, its throughput
/// shared with its other jobs) takes a job of `spec`.
fn fits_standing(spec: &JobSpec<u128, u32>, standing: Standing) -> Result<(), String> {
	if let Some(free) = standing.free_stake.filter(|free| *free < spec.min_provider_stake) {
		let grid = |units: u128| units as f64 / grid_primitives::currency::UNIT as f64;
		return Err(format!(
			"the job needs {} GRID of stake and {} GRID of this provider's is free of other \
			 jobs' locks (taken part in or left recently)",
			grid(spec.min_provider_stake),
			grid(free)
		));
	}
	let millis =
		u64::from(spec.training.round_blocks) * grid_primitives::time::MILLI_SECS_PER_BLOCK;
	let batch = spec.training.batch_size;
	let Standing { tflops_milli, jobs, .. } = standing;
	if max_claim(&spec.model, batch, tflops_milli, millis, jobs.saturating_add(1)) == 0 {
		return Err("this GPU, shared with its other jobs, cannot train a batch in a round".into());
	}
	Ok(())
}

/// Whether the job's admission rules let this account join now (the chain refuses the join
/// otherwise).
async fn admitted(
	chain: &Chain,
	me: &AccountId,
	rules: &Admission<AccountId, u32>,
) -> Result<Result<(), String>, ChainError> {
	if *rules == Admission::default() {
		return Ok(Ok(()));
	}
	let block = chain.best().await?;
	let Some(view) = block.provider(me).await? else {
		return Ok(Err("this account is not registered".into()));
	};
	let now = block.number();
	let score = Perbill::from_parts(view.score.0);
	Ok(rules.admits(me, score, view.provider.registered_at, now).map_err(|refusal| match refusal {
		Refusal::NotListed => "the job's allowlist does not name this account".into(),
		Refusal::Unhealthy => "this account's health is below the job's minimum".into(),
		Refusal::TooNew => "this account registered too recently for the job".into(),
	}))
}

/// Whether this provider works for `buyer`: any buyer, or one its `buyers` list names.
fn works_for(buyer: &AccountId, config: &ProviderConfig) -> Result<(), String> {
	match &config.chain.buyers {
		Some(listed) if !listed.contains(buyer) => {
			Err(format!("its buyer {buyer} is not among this provider's buyers"))
		}
		_ => Ok(()),
	}
}

/// Whether this provider passes over a job of `buyer` at block `now`: it left one of the
/// buyer's jobs for lack of quorum within the last `avoid_buyer_blocks`.
fn avoided(
	left: &LeftBuyers,
	buyer: &AccountId,
	now: u32,
	config: &ProviderConfig,
) -> Result<(), String> {
	let window = config.chain.avoid_buyer_blocks;
	match left.avoids(buyer, now, window) {
		None => Ok(()),
		Some(j) => Err(format!(
			"its buyer {buyer} posted job {}, which this provider left at block {} because its \
			 rounds reached no quorum (its jobs are passed over until block {}; forgive it by \
			 deleting that entry of {})",
			j.job,
			j.block,
			j.block.saturating_add(window),
			config.left_buyers_file().display()
		)),
	}
}

/// The job to work on: one this account is in already (a restart), the configured one, or
/// a live job that fits, has room and is not from a buyer it avoids: the lowest-numbered one
/// whose data this provider holds, else the first whose data it has fetched and checked
/// (up to [`preparing::AT_ONCE`] fetched at once, beside the search). Waits until there is
/// one.
async fn choose_job(
	chain: &Chain,
	me: &AccountId,
	config: &ProviderConfig,
) -> Result<(JobId, JobSpec<u128, u32>), ChainError> {
	let left = LeftBuyers::load(&config.left_buyers_file())?;
	// Jobs whose data could not be had or does not fit the model, or whose spec or buyer
	// this provider's policy refuses (neither changes): not read or tried again (an
	// attacker's thousand cheap jobs cost each provider three reads apiece every pass).
	let mut refused = std::collections::HashSet::new();
	// Why each job was last passed over: said once at info (a provider that never joins
	// should say why), again only when the reason changes.
	let mut passed_over: std::collections::HashMap<JobId, String> = Default::default();
	// Jobs before this one have ended: they are not listed again.
	let mut from: JobId = 0;
	let mut preparing = preparing::Preparing::default();
	loop {
		// The jobs whose data is being fetched that are still worth fetching it for.
		let mut wanted = std::collections::HashSet::new();
		let (standing, locked) = Standing::of(chain, me).await?;
		let block = chain.best().await?;
		let listed = block.jobs_from(from).await?;
		from = first_live(&listed, from);
		for (id, status) in listed {
			if config.chain.job.is_some_and(|j| j != id)
				|| !matches!(status, JobStatus::Open | JobStatus::Running)
				|| refused.contains(&id)
			{
				continue;
			}
			let Some(view) = block.job(id).await? else { continue };
			let spec = view.job.spec.0.clone();
			let member = block.participant(id, me).await?.is_some();
			// A member (after a restart) takes its job up again whatever it would decide now;
			// a job named in the file is taken from a buyer it would otherwise avoid.
			let verdict = match member {
				true => Ok(()),
				false => {
					let admitted = admitted(chain, me, &view.admission.0).await?;
					let avoided = match avoided(&left, &view.job.buyer, block.number(), config) {
						Err(why) if config.chain.job.is_some() => {
							if passed_over.insert(id, why.clone()).as_ref() != Some(&why) {
								tracing::warn!("job {id} is taken as configured, though {why}");
							}
							Ok(())
						}
						verdict => verdict,
					};
					let policy = fits_policy(&spec, config).and(works_for(&view.job.buyer, config));
					if policy.is_err() {
						refused.insert(id);
					}
					let standing = standing.for_job(id, &locked);
					policy.and(fits_standing(&spec, standing)).and(admitted).and(avoided)
				}
			};
			match verdict {
				Ok(()) if member || view.job.participants < spec.max_providers => {
					// The data is fetched and checked before the join, never after: here
					// when there is no other job to search for or nothing to wait for,
					// otherwise beside the search.
					let only = member || config.chain.job == Some(id);
					let prepared = match only || holds_data(config, &spec) {
						true => Some(prepare_data(chain, config, id, &spec, me).await),
						false => {
							wanted.insert(id);
							let job = (chain.clone(), config.clone(), spec.clone(), *me);
							let start = move || async move {
								let (chain, config, spec, me) = job;
								prepare_data(&chain, &config, id, &spec, &me).await
							};
							preparing.poll(id, start).await
						}
					};
					match prepared {
						None => {}
						Some(Ok(())) => return Ok((id, spec)),
						Some(Err(why)) if only => {
							return Err(ChainError::Spec(format!("job {id}: {why}")))
						}
						Some(Err(why)) => {
							tracing::warn!("job {id} skipped: {why}");
							refused.insert(id);
						}
					}
				}
				Ok(()) => tracing::debug!("job {id} is full"),
				Err(why) if config.chain.job == Some(id) => {
					return Err(ChainError::Spec(format!("job {id}: {why}")))
				}
				Err(why) => {
					if passed_over.get(&id) != Some(&why) {
						tracing::info!("job {id} skipped: {why}");
						passed_over.insert(id, why);
					}
				}
			}
		}
		preparing.keep(&wanted);
		tokio::time::sleep(Duration::from_secs(2)).await;
	}
}

/// Whether this provider's store holds the job's dataset and initial weights already
/// (shipped, or fetched for an earlier job): preparing it reads nothing from elsewhere.
fn holds_data(config: &ProviderConfig, spec: &JobSpec<u128, u32>) -> bool {
	let store = config.store();
	std::iter::once(&spec.dataset)
		.chain(&spec.initial_weights)
		.all(|data| matches!(store.locate(&data.content_hash), Ok(Some(_))))
}

/// Where the next listing of jobs may start: the lowest id of `listed` still open or running,
/// else past the last listed (ids are sequential, and an ended job never runs again); `from`
/// when nothing was listed.
fn first_live(listed: &[(JobId, JobStatus)], from: JobId) -> JobId {
	let live =
		listed.iter().find(|(_, status)| matches!(status, JobStatus::Open | JobStatus::Running));
	match (live, listed.last()) {
		(Some((id, _)), _) => *id,
		(None, Some((last, _))) => last.saturating_add(1),
		(None, None) => from,
	}
}

/// Brings job `id`'s dataset (and its initial weights, if it names any) into this provider's
/// store (from its source and the job's other participants), checked against its reference,
/// and opens it for the job's model: bad or unreachable data or weights, data the model cannot
/// read, or weights of another model, are refused here, before the join.
async fn prepare_data(
	chain: &Chain,
	config: &ProviderConfig,
	id: JobId,
	spec: &JobSpec<u128, u32>,
	me: &AccountId,
) -> Result<(), String> {
	let store = config.store();
	let block = chain.best().await.map_err(|e| e.to_string())?;
	let holders = block.participant_addresses(id, Some(me)).await.map_err(|e| e.to_string())?;
	let policy = config.source_policy();
	let located = datasets::ensure(&store, &spec.dataset, &holders, &policy, false)
		.await
		.map_err(|e| format!("its dataset: {e}"))?;
	data::open(&located, &spec.model).map_err(|e| format!("its dataset: {e}"))?;
	let Some(weights) = &spec.initial_weights else { return Ok(()) };
	let located = datasets::ensure(&store, weights, &holders, &policy, false)
		.await
		.map_err(|e| format!("its initial weights: {e}"))?;
	// The weights must fit the job's model: build it (on the CPU) for its layout.
	let model = Model::new(spec.model, b"grid/layout", &candle_core::Device::Cpu)
		.map_err(|e| format!("its model: {e}"))?;
	datasets::initial_weights(weights, &located, &spec.model, &model.params().manifest())
		.map(drop)
		.map_err(|e| format!("its initial weights: {e}"))
}

/// Joins `job` unless this account is in it already.
async fn ensure_joined(chain: &Chain, account: &Keypair, job: JobId) -> Result<(), ChainError> {
	let me = account.public_key().to_account_id();
	if chain.best().await?.participant(job, &me).await?.is_some() {
		return Ok(());
	}
	chain.submit("join_job", &api::tx().jobs().join_job(job), account).await?;
	tracing::info!("joined job {job}");
	Ok(())
}

/// Whether a join failed because the job filled, ended or is being cancelled since this
/// provider chose it (it prepared in between: seconds for a large model), so that another
/// job may be chosen.
fn lost_the_join(e: &ChainError) -> bool {
	matches!(e, ChainError::Dispatch { call: "join_job", error }
		if ["JobFull", "JobEnded", "CancelPending"].iter().any(|why| error.contains(why)))
}

/// How the trainer runs `job` (`spec`) for this provider: rounds opened by the chain, no
/// peers to dial yet (they are known once it has joined).
fn chain_trainer_config(
	config: &ProviderConfig,
	job: JobId,
	spec: &JobSpec<u128, u32>,
	genesis: [u8; 32],
) -> anyhow::Result<TrainerConfig> {
	let local = &config.training;
	let trainer_config = TrainerConfig {
		name: config.name.clone(),
		key_seed: String::new(),
		data_dir: config.data_dir.join(format!("job-{job}")),
		datasets: Some(config.store().root().to_path_buf()),
		listen: vec![config.listen.clone()],
		bootstrap: Vec::new(),
		scenario: None,
		threads: config.threads,
		device: config.device,
		compute_slowdown: config.compute_slowdown,
		checks_beside_training: config.checks_beside_training,
		misbehave: config.misbehave,
		whole_updates: false,
		inline_updates: true,
		state_piece_bytes: crate::round::state_transfer::STATE_PIECE_BYTES,
		proof_genesis: Some(genesis),
		job: job_spec::chain_job(job, spec, local.eval_samples, local.max_steps)?,
		// Rounds are opened by the chain; the period only bounds the grace.
		schedule: Schedule::Deadline {
			start_unix_ms: 0,
			period_ms: u64::from(spec.training.round_blocks)
				* grid_primitives::time::MILLI_SECS_PER_BLOCK,
			grace_ms: u64::from(spec.training.exchange.grace_ms),
			fetch_timeout_ms: u64::from(spec.training.exchange.fetch_ms),
			transfer_budget_ms: local.transfer_budget_ms,
		},
	};
	trainer_config.validate()?;
	Ok(trainer_config)
}

/// Runs the provider until its job ends.
pub fn run(config: ProviderConfig, runtime: &tokio::runtime::Runtime) -> anyhow::Result<()> {
	use anyhow::Context;
	std::fs::create_dir_all(&config.data_dir)
		.with_context(|| format!("creating {}", config.data_dir.display()))?;
	let account = config.account()?;
	let me = account.public_key().to_account_id();
	let p2p = keys::p2p_key(&config.data_dir.join("p2p.key"))?;
	// Both ports are taken before the provider registers or joins: one in use is refused now,
	// not after the provider has staked into a job, and nobody takes them meanwhile.
	let address =
		status_server::listen_address(&config.chain.endpoint).map_err(ChainError::Spec)?;
	let status_listener = status_server::bind(address)
		.with_context(|| format!("serving {}", config.chain.endpoint))?;
	let held_p2p = hold_port(&config.listen)
		.with_context(|| format!("listening on {} for the job's peers", config.listen))?;
	let chain = runtime.block_on(async {
		let chain = Chain::connect(&config.chain.url, Duration::from_secs(60)).await?;
		ensure_registered(&chain, &account, &p2p, &config).await?;
		Ok::<_, ChainError>(chain)
	})?;
	let (job, spec, trainer_config, prepared) = loop {
		let (job, spec) = runtime.block_on(choose_job(&chain, &me, &config))?;
		let mut trainer_config = chain_trainer_config(&config, job, &spec, chain.genesis().0)?;
		// Before the join: the chain opens round 0 when the last member joins, and a large
		// model's set-up would otherwise eat into it.
		let prepared = Prepared::new(&trainer_config)?;
		let joined = runtime.block_on(async {
			ensure_joined(&chain, &account, job).await?;
			// The job's other participants, to dial first.
			let addresses = chain.best().await?.participant_addresses(job, Some(&me)).await?;
			Ok::<_, ChainError>(addresses.iter().map(ToString::to_string).collect())
		});
		match joined {
			Ok(bootstrap) => {
				trainer_config.bootstrap = bootstrap;
				break (job, spec, trainer_config, prepared);
			}
			Err(e) if config.chain.job.is_none() && lost_the_join(&e) => {
				tracing::warn!("job {job} was taken while this provider prepared for it ({e})");
			}
			Err(e) => return Err(e.into()),
		}
	};
	let job_dir = trainer_config.data_dir.clone();
	let follow = FollowConfig {
		job,
		proof_dir: job_dir.join("proofs"),
		vote_secret: job_dir.join("vote-secret"),
		exchange_ms: spec.training.exchange.allowance_ms(),
		equivocate: config.misbehave.equivocate_proofs,
		attest_other: config.misbehave.attest_other,
		leave_without_quorum: config.chain.leave_without_quorum,
		left_buyers: config.left_buyers_file(),
	};
	let coordinator = follower::start(runtime.handle(), chain, account, follow)?;
	let handle = std::sync::Arc::new(coordinator);
	let fraud: Box<dyn FraudPort> = if config.misbehave.vote_against_truth {
		Box::new(AgainstTruth(handle.clone()))
	} else {
		Box::new(handle.clone())
	};
	// Let go of the libp2p port just before the trainer's swarm listens on it.
	drop(held_p2p);
	let mut trainer = Trainer::with_key(
		prepared,
		trainer_config,
		p2p,
		Box::new(handle.clone()),
		Some(fraud),
		runtime.handle(),
	)?;
	if let Some(link) = trainer.take_proof_link() {
		relay_proofs(handle.clone(), link);
	}
	trainer.set_linger(Duration::from_secs(config.chain.serve_final_secs));
	let sink: StatusSink = std::sync::Arc::new(std::sync::Mutex::new(serde_json::json!({})));
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
		.block_on(status_server::serve(status_listener, sink.clone(), extra))
		.with_context(|| format!("serving {}", config.chain.endpoint))?;
	trainer.set_status_sink(sink);
	let exchange = spec.training.exchange;
	tracing::info!(
		"provider {me} trains job {job} as {}; the job's exchange: commitments for {} ms, \
		 updates within {} ms, committing {} ms before each proof deadline",
		trainer.peer_id(),
		exchange.grace_ms,
		exchange.fetch_ms,
		exchange.allowance_ms()
	);
	trainer.run()?;
	if !handle.flush(Duration::from_secs(60)) {
		tracing::warn!("some proofs were not seen on chain before exiting");
	}
	let (earned, rounds, slashed) = handle.earnings();
	tracing::info!("job {job} done: earned {earned} units for {rounds} rounds; {slashed} slashed");
	Ok(())
}

/// Binds the TCP port of `listen` (an `/ip4|ip6/…/tcp/N` address with N above 0) and holds
/// it until dropped; nothing for any other address (the swarm reports its own errors).
fn hold_port(listen: &str) -> std::io::Result<Option<std::net::TcpListener>> {
	use libp2p::multiaddr::Protocol;
	let Ok(listen) = listen.parse::<libp2p::Multiaddr>() else { return Ok(None) };
	let port = listen.iter().find_map(|part| match part {
		Protocol::Tcp(p) if p > 0 => Some(p),
		_ => None,
	});
	match (crate::net::data::ip_of(&listen), port) {
		(Some(ip), Some(port)) => std::net::TcpListener::bind((ip, port)).map(Some),
		_ => Ok(None),
	}
}

/// Relays contribution proofs between the chain task and the job's peers, on a thread of
/// its own (proofs never pass through the round loop): this trainer's proofs go out on the
/// proofs topic, and the proofs peers announce go to the chain task, which reports
/// equivocations among them. It ends when the network task does.
fn relay_proofs(chain: std::sync::Arc<follower::ChainCoordinator>, link: ProofLink) {
	std::thread::spawn(move || loop {
		for proof in chain.outgoing_proofs() {
			link.publish(proof);
		}
		match link.heard.recv_timeout(Duration::from_millis(100)) {
			Ok(proof) => chain.heard_proof(proof),
			Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
			Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
		}
	});
}

/// A valid provider file, for the tests of this module's parts.
#[cfg(test)]
const TEST_FILE: &str = r#"
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

#[cfg(test)]
mod tests {
	use super::*;
	use crate::daemon::provider::TEST_FILE as GOOD;
	use grid_primitives::{
		currency::UNIT,
		job::{MlpConfig, ModelSpec},
	};

	/// `text` written as a provider file in a fresh directory, and loaded (the directory
	/// lives as long as the returned guard).
	fn config_of(text: &str) -> (tempfile::TempDir, std::path::PathBuf, ProviderConfig) {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("p.toml");
		std::fs::write(&path, text).unwrap();
		let config = ProviderConfig::load(&path).unwrap();
		(dir, path, config)
	}

	#[test]
	fn only_a_join_lost_to_the_job_filling_or_ending_chooses_again() {
		let join = |error: &str| ChainError::Dispatch { call: "join_job", error: error.into() };
		assert!(lost_the_join(&join("Jobs::JobFull")));
		assert!(lost_the_join(&join("Jobs::JobEnded")));
		assert!(lost_the_join(&join("Jobs::CancelPending")));
		// This provider's own standing does not change with another job: it stops and says why.
		assert!(!lost_the_join(&join("Jobs::NotEligible")));
		assert!(!lost_the_join(&join("Jobs::Underpowered")));
		let other_call =
			ChainError::Dispatch { call: "submit_proof", error: "Jobs::JobEnded".into() };
		assert!(!lost_the_join(&other_call));
		let rpc = ChainError::Rpc { what: "join_job", reason: "JobFull".into() };
		assert!(!lost_the_join(&rpc), "only a decided dispatch error, not a dropped connection");
	}

	/// A listing starts at the oldest job still live: ended jobs before it are not read
	/// again, and nothing live is skipped.
	#[test]
	fn the_next_listing_starts_at_the_oldest_live_job() {
		let done = || JobStatus::Completed { final_model_hash: None };
		let listed =
			[(3, done()), (5, JobStatus::Cancelled), (8, JobStatus::Running), (9, JobStatus::Open)];
		assert_eq!(first_live(&listed, 0), 8);
		assert_eq!(first_live(&listed[..2], 0), 6, "all ended: past the last");
		assert_eq!(first_live(&[], 6), 6, "nothing new");
		assert_eq!(first_live(&[(12, JobStatus::Open), (13, done())], 6), 12);
	}

	#[test]
	fn jobs_outside_the_policy_are_not_taken() {
		let (_dir, _, mut config) = config_of(GOOD);
		let spec: JobSpec<u128, u32> = toml::from_str(
			r#"
			dataset = "mnist"
			model = { kind = "mlp", hidden = 32, layers = 1 }
			rounds = 2
			reward_per_round = 10
			min_providers = 2
			max_providers = 4
			min_provider_stake = 100

			[training]
			round_blocks = 5
			batch_size = 32
			inner = { optimizer = "adamw", lr = 0.002 }
			compression = { scheme = "int8", chunk = 64 }
			"#,
		)
		.unwrap();
		let gpu = Standing { tflops_milli: 400_000, jobs: 0, free_stake: Some(200 * UNIT) };
		assert_eq!(fits(&spec, &config, gpu), Ok(()));
		// The chain would refuse the join: a job left recently still locks most of the stake.
		let locked = Standing { free_stake: Some(99 * UNIT), ..gpu };
		let err = fits(&spec, &config, locked).unwrap_err();
		assert!(err.contains("100 GRID") && err.contains("99 GRID"), "{err}");
		// Unless that lock is this job's own: coming back replaces it.
		assert_eq!(fits(&spec, &config, locked.for_job(7, &[7])), Ok(()));
		assert!(fits(&spec, &config, locked.for_job(7, &[6])).is_err());
		// No batch fits this provider's share of a round.
		let busy = Standing { tflops_milli: 1, jobs: 3, free_stake: Some(200 * UNIT) };
		let slow = ModelSpec::MnistMlp(MlpConfig { hidden: 4096, layers: 4 });
		let heavy = JobSpec { model: slow, ..spec.clone() };
		config.chain.max_parameters = u64::MAX;
		let err = fits(&heavy, &config, busy).unwrap_err();
		assert!(err.contains("batch"), "{err}");
		assert_eq!(fits(&heavy, &config, gpu), Ok(()));
		config.chain.max_parameters = 1_000;
		assert!(fits(&spec, &config, gpu).unwrap_err().contains("parameters"));
		config.chain.max_parameters = u64::MAX;
		config.chain.min_reward_per_round = 11 * UNIT;
		assert!(fits(&spec, &config, gpu).unwrap_err().contains("reward"));
		config.chain.min_reward_per_round = 0;
		config.chain.stake = 50 * UNIT;
		assert!(fits(&spec, &config, gpu).unwrap_err().contains("stake"));

		// A model whose size wraps a u64 (5 h² + … = 2^64 + 21,247,839) is not taken for a
		// 21M-parameter one, even if a chain let it through.
		config.chain.stake = 200 * UNIT;
		let mut wrapping = spec.clone();
		wrapping.model = ModelSpec::MnistMlp(MlpConfig { hidden: 1_920_767_687, layers: 6 });
		let err = fits(&wrapping, &config, gpu).unwrap_err();
		assert!(err.contains("ModelTooLarge"), "{err}");
	}

	#[test]
	fn a_buyer_whose_job_was_left_for_lack_of_quorum_is_passed_over_for_a_while() {
		use crate::chain::left_buyers::LeftJob;
		let (_dir, _, mut config) = config_of(GOOD);
		assert_eq!(config.chain.avoid_buyer_blocks, 100_800, "a week of 6 s blocks by default");
		std::fs::create_dir_all(&config.data_dir).unwrap();
		let (blocker, other) = (AccountId::from([1; 32]), AccountId::from([2; 32]));
		let mut left = LeftBuyers::load(&config.left_buyers_file()).unwrap();
		assert_eq!(avoided(&left, &blocker, 10, &config), Ok(()));
		left.record(LeftJob { buyer: blocker, job: 4, block: 100 }).unwrap();
		// What the next start of the daemon reads.
		let left = LeftBuyers::load(&config.left_buyers_file()).unwrap();
		let why = avoided(&left, &blocker, 101, &config).unwrap_err();
		assert!(why.contains("job 4") && why.contains("no quorum"), "{why}");
		assert!(why.contains("block 100900") && why.contains("left-buyers.json"), "{why}");
		assert_eq!(avoided(&left, &other, 101, &config), Ok(()), "only that buyer");
		assert_eq!(avoided(&left, &blocker, 100_900, &config), Ok(()), "forgiven in time");
		config.chain.avoid_buyer_blocks = 0;
		assert_eq!(avoided(&left, &blocker, 101, &config), Ok(()), "0: never avoided");
	}

	#[test]
	fn a_provider_with_a_list_of_buyers_takes_only_their_jobs() {
		let (listed, other) = (AccountId::from([1; 32]), AccountId::from([2; 32]));
		let file = GOOD.replace("[chain]\n", &format!("[chain]\nbuyers = [\"{listed}\"]\n"));
		let (_dir, path, config) = config_of(&file);
		assert_eq!(works_for(&listed, &config), Ok(()));
		let why = works_for(&other, &config).unwrap_err();
		assert!(why.contains(&other.to_string()) && why.contains("not among"), "{why}");
		// No list: any buyer.
		std::fs::write(&path, GOOD).unwrap();
		assert_eq!(works_for(&other, &ProviderConfig::load(&path).unwrap()), Ok(()));
		// A mistyped address is refused when the file is read, with its place.
		std::fs::write(&path, GOOD.replace("[chain]\n", "[chain]\nbuyers = [\"5Fxyz\"]\n"))
			.unwrap();
		let e = ProviderConfig::load(&path).unwrap_err().to_string();
		assert!(e.contains("p.toml") && e.contains("buyers"), "{e}");
	}
}
