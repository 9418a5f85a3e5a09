//! The buyer's commands (`grid-trainer job …`): post a job from a TOML file with its budget in
//! escrow, follow its rounds, cancel it, challenge a provider's paid round, and download the
//! final model from a participant, checked against the hash the chain recorded.

use std::{
	io::Write,
	path::{Path, PathBuf},
	time::Duration,
};

use anyhow::{anyhow, bail, Context};
use grid_primitives::{
	currency::UNIT,
	job::{JobId, JobSpec},
	manifest::{DatasetFormat, TOKENIZER_FILE},
};
use libp2p::PeerId;
use subxt::utils::Static;
use subxt_signer::sr25519::Keypair;

use crate::{
	chain::{api, client::JobStatus, Chain, JobView},
	checkpoint::Checkpoint,
	daemon::{datasets, state_fetch::fetch_state},
	data::DataStore,
	model::hf::hugging_face,
	net::{behaviour::BehaviourConfig, data::peer_of, service, NetConfig, Shaper},
};

/// GRID with three decimals.
pub fn grid(units: u128) -> String {
	format!("{:.3} GRID", units as f64 / UNIT as f64)
}

/// Posts the job in `spec_file` (with its admission rules, if it has any); returns its id.
/// Unless `unchecked`, its dataset is checked first ([`datasets::preflight`]): a job whose
/// data nobody serves, or that its model cannot read, is not posted (nor paid for).
pub async fn create(
	chain: &Chain,
	buyer: &Keypair,
	spec_file: &Path,
	unchecked: bool,
) -> anyhow::Result<JobId> {
	let file = super::job_spec::load_job_file(spec_file)?;
	if !unchecked {
		let manifest = datasets::preflight(&file.spec.dataset, &file.spec.model)
			.await
			.context("checking the job's dataset (--unchecked posts it anyway)")?;
		show_checked("dataset", manifest);
		if let Some(weights) = &file.spec.initial_weights {
			let manifest = datasets::preflight_weights(weights)
				.await
				.context("checking the job's initial weights (--unchecked posts it anyway)")?;
			show_checked("initial weights", manifest);
		}
	}
	let call = api::tx().jobs().create_job(Static(file.spec), Static(file.admission));
	let events = chain.submit("create_job", &call, buyer).await?;
	let created = events
		.find_first::<api::jobs::events::JobCreated>()
		.ok_or_else(|| anyhow!("create_job succeeded without a JobCreated event"))?
		.context("decoding JobCreated")?;
	println!("job {} created; {} in escrow", created.job, grid(created.budget));
	Ok(created.job)
}

/// Says what `job create` found at a reference (`what`: "dataset", "initial weights").
fn show_checked(what: &str, manifest: Option<grid_primitives::manifest::DatasetManifest>) {
	match manifest {
		Some(m) => println!("{what} {}", datasets::describe(&m)),
		None => println!("{what} not checked here (an http(s):// source): providers check it"),
	}
}

/// Cancels a job; prints what came back. A running job ends when its open round settles
/// (its members are paid for it), so the refund comes then.
pub async fn cancel(chain: &Chain, buyer: &Keypair, job: JobId) -> anyhow::Result<()> {
	let events = chain.submit("cancel_job", &api::tx().jobs().cancel_job(job), buyer).await?;
	if let Some(cancelled) = events.find_first::<api::jobs::events::JobCancelled>() {
		let cancelled = cancelled.context("decoding JobCancelled")?;
		println!("job {job} cancelled; {} refunded", grid(cancelled.refunded));
		return Ok(());
	}
	let scheduled = events
		.find_first::<api::jobs::events::CancelScheduled>()
		.ok_or_else(|| anyhow!("cancel_job succeeded without a cancel event"))?
		.context("decoding CancelScheduled")?;
	println!(
		"job {job} ends when its open round {} settles; the rest of its escrow is refunded then",
		scheduled.round
	);
	Ok(())
}

/// Challenges `provider`'s (SS58) contribution to `round` of `job` and prints when the
/// committee is drawn and the vote ends.
pub async fn challenge(
	chain: &Chain,
	challenger: &Keypair,
	job: JobId,
	round: grid_primitives::job::RoundIndex,
	provider: &str,
) -> anyhow::Result<()> {
	let accused: crate::chain::AccountId =
		provider.parse().map_err(|e| anyhow!("--provider {provider:?} is no SS58 account: {e}"))?;
	let call = api::tx().jobs().challenge(job, round, accused);
	let events = chain.submit("challenge", &call, challenger).await?;
	let opened = events
		.find_first::<api::jobs::events::ChallengeOpened>()
		.ok_or_else(|| anyhow!("challenge succeeded without a ChallengeOpened event"))?
		.context("decoding ChallengeOpened")?;
	println!(
		"challenge {} of {provider}'s round {round} in job {job}: committee drawn at block {}, \
		 decided by block {}",
		opened.id, opened.draw_at, opened.deadline
	);
	Ok(())
}

fn status_word(status: &JobStatus) -> &'static str {
	match status {
		JobStatus::Open => "open",
		JobStatus::Running => "running",
		JobStatus::Completed { .. } => "completed",
		JobStatus::Cancelled => "cancelled",
	}
}

/// A one-line summary of a job.
pub fn summary(id: JobId, view: &JobView) -> String {
	let job = &view.job;
	let mut line = format!(
		"job {id}: {}, round {}/{}, {} participants, paid {}, held {}",
		status_word(&job.status),
		job.rounds_settled,
		job.spec.0.rounds,
		job.participants,
		grid(job.paid),
		grid(view.held),
	);
	if let JobStatus::Completed { final_model_hash: Some(hash) } = &job.status {
		line.push_str(&format!(", final model 0x{}", hex::encode(hash.0)));
	}
	line
}

async fn job_view(chain: &Chain, job: JobId) -> anyhow::Result<JobView> {
	chain.best().await?.job(job).await?.ok_or_else(|| anyhow!("job {job} does not exist"))
}

/// The participants' training losses per round, from their proofs.
#[derive(Default)]
struct RoundLosses(std::collections::BTreeMap<u32, (f64, u32)>);

impl RoundLosses {
	fn add(&mut self, round: u32, loss: f64) {
		let entry = self.0.entry(round).or_default();
		*entry = (entry.0 + loss, entry.1 + 1);
	}

	/// Mean loss of `round`'s proofs.
	fn mean(&self, round: u32) -> Option<f64> {
		self.0.get(&round).map(|(sum, n)| sum / f64::from(*n))
	}

	/// Mean loss of the latest round with proofs.
	fn latest(&self) -> Option<f64> {
		let round = *self.0.keys().next_back()?;
		self.mean(round)
	}
}

fn show_loss(loss: Option<f64>) -> String {
	loss.map_or("-".into(), |l| format!("{l:.4}"))
}

/// Prints a job's state; with `follow`, shows its rounds advancing (with the participants'
/// training loss) until it ends.
pub async fn status(chain: &Chain, job: JobId, follow: bool) -> anyhow::Result<()> {
	let view = job_view(chain, job).await?;
	if !follow || !matches!(view.job.status, JobStatus::Open | JobStatus::Running) {
		println!("{}", summary(job, &view));
		return Ok(());
	}
	let bar = indicatif::ProgressBar::new(u64::from(view.job.spec.0.rounds));
	bar.set_style(
		indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} rounds  {msg}")
			.expect("a valid template"),
	);
	let mut losses = RoundLosses::default();
	let mut settled = view.job.rounds_settled;
	let mut next_block = chain.best().await?.number();
	loop {
		let head = chain.best().await?.number();
		for number in next_block..=head {
			for (round, loss) in chain.block(number).await?.proof_losses(job).await? {
				losses.add(round, loss);
			}
		}
		next_block = head + 1;
		let view = job_view(chain, job).await?;
		while view.job.rounds_settled > settled {
			// A line per settled round, above the bar (and in logs, where the bar is hidden).
			let line = format!(
				"round {}/{} settled: paid {} so far, training loss {}",
				settled + 1,
				view.job.spec.0.rounds,
				grid(view.job.paid),
				show_loss(losses.mean(settled))
			);
			bar.suspend(|| println!("{line}"));
			settled += 1;
		}
		let loss = losses.latest();
		bar.set_position(u64::from(view.job.rounds_settled));
		bar.set_message(format!(
			"{}, {} participants, loss {}, paid {}",
			status_word(&view.job.status),
			view.job.participants,
			show_loss(loss),
			grid(view.job.paid)
		));
		if !matches!(view.job.status, JobStatus::Open | JobStatus::Running) {
			bar.finish();
			println!("{}", summary(job, &view));
			return Ok(());
		}
		tokio::time::sleep(Duration::from_secs(2)).await;
	}
}

/// Downloads a completed job's final model from its participants into `out` (a
/// safetensors checkpoint), refusing any whose model hash is not the one on chain.
pub fn fetch(
	runtime: &tokio::runtime::Runtime,
	chain: &Chain,
	job: JobId,
	out: &Path,
	export: Option<&HfExport>,
	patience: Duration,
) -> anyhow::Result<()> {
	let (view, addresses) = runtime.block_on(async {
		let view = job_view(chain, job).await?;
		let addresses = chain.best().await?.participant_addresses(job, None).await?;
		Ok::<_, anyhow::Error>((view, addresses))
	})?;
	let expected = match &view.job.status {
		JobStatus::Completed { final_model_hash: Some(hash) } => hash.0,
		JobStatus::Completed { final_model_hash: None } => {
			bail!("job {job} completed without a result any quorum attested")
		}
		other => bail!("job {job} is {}: no final model yet", status_word(other)),
	};
	let peers: Vec<PeerId> = addresses.iter().filter_map(peer_of).collect();
	if peers.is_empty() {
		bail!("job {job} has no participant with a reachable address");
	}
	let key = libp2p::identity::Keypair::generate_ed25519();
	let config = NetConfig {
		listen: Vec::new(),
		bootstrap: addresses,
		job,
		manifest_hash: [0; 32],
		behaviour: BehaviourConfig {
			agent: "grid-trainer/fetch".into(),
			max_response_bytes: 1 << 30,
			request_timeout: Duration::from_secs(60),
			ping_interval: Duration::from_secs(5),
		},
		datasets: None,
		proof_genesis: None,
	};
	let net = service::start(runtime.handle(), key, Shaper::default(), config)
		.map_err(|e| anyhow!("starting the network: {e}"))?;
	let params = view.job.spec.model.parameters().unwrap_or(u64::MAX);
	let limits = (patience, crate::round::state_transfer::max_state_len(params));
	let (peer, ck) = fetch_state(&net, job, &peers, limits, |peer, bytes| {
		Ok((peer, verified(&bytes, &peer, &expected)?))
	})
	.map_err(|e| anyhow!("job {job}'s final model: {e}"))?;
	ck.save(out)?;
	println!(
		"final model of job {job} (0x{}) from {peer}: {}",
		hex::encode(expected),
		out.display()
	);
	if let Some(export) = export {
		export.write(&view.job.spec, &ck)?;
	}
	std::io::stdout().flush().ok();
	Ok(())
}

/// Where and how `job fetch` also writes the model in the Hugging Face layout.
pub struct HfExport {
	/// The directory (`model.safetensors`, `config.json`, `tokenizer.json`).
	pub dir: PathBuf,
	/// The buyer's dataset store: a BPE dataset's tokenizer is copied from it when it is there.
	pub store: DataStore,
}

impl HfExport {
	fn write(&self, spec: &JobSpec<u128, u32>, ck: &Checkpoint) -> anyhow::Result<()> {
		let model = hugging_face(&spec.model, &ck.manifest, &ck.weights)?;
		model.write(&self.dir)?;
		let architecture = &model.config["architectures"][0];
		println!("Hugging Face export ({architecture}): {}", self.dir.display());
		// A BPE dataset carries the tokenizer that goes with the model.
		match self.store.locate(&spec.dataset.content_hash)? {
			Some(l) if l.manifest.format == DatasetFormat::TextBpe => {
				let to = self.dir.join(TOKENIZER_FILE);
				std::fs::copy(l.dir.join(TOKENIZER_FILE), &to)
					.with_context(|| format!("copying the tokenizer to {}", to.display()))?;
				println!("tokenizer: {}", to.display());
			}
			Some(_) => {}
			None => println!(
				"the job's dataset is not in {}: no tokenizer copied",
				self.store.root().display()
			),
		}
		Ok(())
	}
}

fn verified(bytes: &[u8], peer: &PeerId, expected: &[u8; 32]) -> anyhow::Result<Checkpoint> {
	let origin = std::path::PathBuf::from(format!("peer {peer}"));
	let ck = Checkpoint::from_bytes(bytes, &origin)?;
	let hash = ck.model_hash()?;
	if &hash != expected {
		bail!(
			"{peer} sent model 0x{}, not the chain's 0x{}",
			hex::encode(hash),
			hex::encode(expected)
		);
	}
	Ok(ck)
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn round_losses_average_each_rounds_proofs() {
		let mut losses = RoundLosses::default();
		assert_eq!((losses.mean(0), losses.latest()), (None, None));
		losses.add(0, 2.0);
		losses.add(0, 3.0);
		losses.add(1, 1.5);
		assert_eq!(losses.mean(0), Some(2.5));
		assert_eq!(losses.latest(), Some(1.5));
		assert_eq!(show_loss(losses.mean(2)), "-");
		assert_eq!(show_loss(Some(1.23456)), "1.2346");
	}
}
