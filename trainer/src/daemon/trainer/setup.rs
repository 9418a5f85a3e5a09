//! Setting a trainer up: device, data, model, checkpoint, fraud desk and network.

use std::{
	collections::VecDeque,
	sync::Arc,
	time::{Duration, Instant},
};

use candle_core::Device;
use grid_primitives::job::{Compression, JobId};
use libp2p::{identity::Keypair, Multiaddr};

use super::{restore, Evaluator, Fraud, Saver, Trainer, MAX_RESPONSE_BYTES};
use crate::{
	compress::{compress_values, Layout},
	compute_gate::ComputeGate,
	daemon::{config::TrainerConfig, datasets},
	daemon::{
		evidence::EvidenceFiles, reports::Totals, signed_rounds::SignedRounds,
		work_states::WorkStates,
	},
	data::Dataset,
	error::{Error, Result},
	net::{behaviour::BehaviourConfig, scenario::Scenario, service, Command, NetConfig, Shaper},
	params::Manifest,
	round::{
		book::Books,
		coordinator::Coordinator,
		fetch::Fetches,
		fraud::{FraudDesk, FraudPort},
		peers::HealthBook,
		witness::Witnesses,
	},
	train::InnerTrainer,
	trajectory::{Recorder, StepState},
	verify::Replayer,
	work_state::Moments,
};

/// What a trainer builds before it needs a network or a chain: its device, data, evaluator,
/// model and optimizer (warmed up on a GPU) and a first estimate of its sealing time. A
/// provider builds it before it joins a job, since the chain opens round 0 when the last
/// member joins and a 353M model's took 27-34 s of a 90 s round 0 on an H200
/// (`bench/README.md`, "GPU providers end to end").
pub struct Prepared {
	job: JobId,
	device: Device,
	dataset: Arc<Dataset>,
	evaluator: Option<Evaluator>,
	inner: InnerTrainer,
	manifest: Manifest,
	seal_secs: f64,
}

impl Prepared {
	/// Builds what `config`'s job trains with, logging where the time goes.
	pub fn new(config: &TrainerConfig) -> Result<Self> {
		let job = &config.job;
		let setup_start = Instant::now();
		let device = crate::device::select(config.device)?;
		tracing::info!("training on {:?}", device.location());
		let dataset = Arc::new(job.dataset(&config.store())?);
		let evaluator = if job.eval_samples > 0 {
			let batches = dataset.eval_batches(
				job.eval_samples,
				super::evaluator::eval_rows(&job.model),
				&device,
			)?;
			Some(Evaluator::start(job.model, &device, batches)?)
		} else {
			None
		};
		let evaluator_ready = setup_start.elapsed();
		let inner = job.inner_trainer(&device)?;
		let manifest = inner.model().params().manifest();
		crate::malloc::return_model_sized_blocks(manifest.numel().saturating_mul(4));
		if let Some(weights) = &job.initial_weights {
			let located = config.store().open_verified(weights)?;
			let flat = datasets::initial_weights(weights, &located, &job.model, &manifest)?;
			inner.model().params().load_flat(&flat)?;
			tracing::info!(
				"starting from weights 0x{} (model 0x{})",
				hex::encode(weights.content_hash.0),
				hex::encode(inner.model().params().model_hash()?)
			);
		}
		let model_ready = setup_start.elapsed();
		if device.is_cuda() {
			// The driver compiles Candle's kernels on their first use (seconds each on a new
			// machine): pay for that now rather than in the first round.
			let indices: Vec<u64> = (0..u64::from(job.training.batch_size)).collect();
			inner.warm_up(&dataset.train_batch(&indices, &device)?)?;
		}
		let warmed_up = setup_start.elapsed();
		let seal_secs = sealing_estimate(manifest.numel(), &job.training.compression_in(0))?;
		tracing::info!(
			"prepared job {} in {:.1} s: data and evaluator {:.1} s, model and optimizer {:.1} s, \
			 warm-up {:.1} s, sealing estimate {:.1} s ({seal_secs:.2} s a round)",
			job.id,
			setup_start.elapsed().as_secs_f64(),
			evaluator_ready.as_secs_f64(),
			(model_ready - evaluator_ready).as_secs_f64(),
			(warmed_up - model_ready).as_secs_f64(),
			(setup_start.elapsed() - warmed_up).as_secs_f64(),
		);
		Ok(Prepared { job: job.id, device, dataset, evaluator, inner, manifest, seal_secs })
	}
}

impl Trainer {
	/// Sets up the trainer from what was `prepared` for `config`'s job: identity, checkpoint
	/// (if any) and network. Rounds open and close when `coordinator` says; with a `fraud`
	/// port (the chain's), the trainer keeps evidence, screens and replays updates, and
	/// judges challenges.
	pub fn with_key(
		prepared: Prepared,
		config: TrainerConfig,
		key: Keypair,
		coordinator: Box<dyn Coordinator>,
		fraud: Option<Box<dyn FraudPort>>,
		runtime: &tokio::runtime::Handle,
	) -> Result<Self> {
		let job = &config.job;
		if prepared.job != job.id {
			return Err(Error::Config(format!(
				"prepared for job {}, configured for job {}",
				prepared.job, job.id
			)));
		}
		std::fs::create_dir_all(&config.data_dir)
			.map_err(|e| Error::io("creating", &config.data_dir, e))?;
		let me = key.public().to_peer_id();
		let setup_start = Instant::now();
		let Prepared { device, dataset, evaluator, inner, manifest, seal_secs, .. } = prepared;
		let inner_config = job.inner_config();
		let archive = match fraud {
			Some(_) => Some(EvidenceFiles::open(&config.data_dir)?),
			None => None,
		};
		// Derived from the node's private key: known to this trainer alone.
		let screen_secret = sp_crypto_hashing::blake2_256(
			&[
				b"grid/screen-picks".as_slice(),
				&key.to_protobuf_encoding().map_err(|e| Error::Config(e.to_string()))?,
			]
			.concat(),
		);
		let catch_up = job.catch_up()?;
		// Checks that redo training steps and the rounds' own training: beside each other
		// or, on a provider short of memory, by turns.
		let gate = if config.checks_beside_training {
			ComputeGate::open()
		} else {
			ComputeGate::one_at_a_time()
		};
		let fraud = fraud.zip(archive).map(|(port, archive)| {
			let replayer = Replayer {
				spec: job.model,
				layout: Layout::of(&manifest),
				inner: job.training.inner,
				config: inner_config,
				batch_size: u64::from(job.training.batch_size),
				error_decay: job.training.error_decay.to_f64() as f32,
				max_steps: job.training.max_steps,
				catch_up,
				dataset: dataset.clone(),
				device: device.clone(),
			};
			let archive = Box::new(archive);
			let gate = gate.clone();
			let desk =
				FraudDesk::gated(me, screen_secret, replayer, archive, job.evidence_rounds, gate);
			Fraud { desk, port, unkept: None }
		});
		let compressor = job.compressor(Layout::of(&manifest))?;
		let outer = job.outer();
		let state = restore(&config.data_dir, &manifest, outer)?;
		let scenario = config
			.scenario
			.as_deref()
			.map(Scenario::load)
			.transpose()
			.map_err(|e| Error::Config(e.to_string()))?;
		let shaper = Shaper::default();
		let parse = |list: &[String]| -> Result<Vec<Multiaddr>> {
			list.iter()
				.map(|a| a.parse().map_err(|e| Error::Config(format!("address {a:?}: {e}"))))
				.collect()
		};
		let net_config = NetConfig {
			listen: parse(&config.listen)?,
			bootstrap: parse(&config.bootstrap)?,
			job: job.id,
			manifest_hash: manifest.hash(),
			behaviour: BehaviourConfig {
				agent: format!("grid-trainer/{}", config.name),
				max_response_bytes: MAX_RESPONSE_BYTES,
				request_timeout: Duration::from_secs(60),
				// Round trips feed a slow average (`round::peers`), and each ping costs both
				// ends CPU, N − 1 times over: every 5 s (every 2 s cost 64 trainers on one
				// machine a tenth of their network CPU; every 10 s left the average short of
				// a shaped link's latency a minute in).
				ping_interval: Duration::from_secs(5),
			},
			datasets: Some(Arc::new(config.store())),
			proof_genesis: config.proof_genesis,
		};
		let net = service::start(runtime, key.clone(), shaper.clone(), net_config)
			.map_err(Error::Network)?;
		let work_states = WorkStates::open(&config.data_dir)?;
		let stored = work_states.load(manifest.numel())?;
		if let (Some(first), Some(last)) = (stored.first(), stored.last()) {
			let (n, from, to) = (stored.len(), first.round, last.round);
			tracing::info!(
				"serving {n} kept states of rounds {from}..={to} from the data directory"
			);
		}
		for stored in stored {
			let (id, round, bytes) = (stored.id, stored.round, stored.bytes);
			net.send(Command::ServeWorkState { id, round, bytes });
		}
		let keeper = super::keeper::Keeper::start(work_states, net.commander())?;
		let signed_rounds = SignedRounds::open(&config.data_dir, job.id, job.evidence_rounds)?;
		let saver = Saver::start(config.data_dir.join("checkpoint.safetensors"), net.commander())?;
		let first_round = state.as_ref().map_or(0, |s| s.round);
		let books = Books::new(job.id, first_round, job.claim_rule(&Layout::of(&manifest)));
		let witnesses = Witnesses::new(job.id, first_round);
		let fetches = Fetches::new(job.id, Layout::of(&manifest)).fetch_whole(config.whole_updates);
		tracing::info!(
			"state, network and keepers set up in {:.1} s",
			setup_start.elapsed().as_secs_f64()
		);
		Ok(Trainer {
			key,
			me,
			net,
			shaper,
			scenario,
			dataset,
			evaluator,
			unrecorded: VecDeque::new(),
			saver,
			device,
			inner: super::training::Inner::new(inner, gate),
			manifest,
			outer,
			compressor,
			state,
			health: HealthBook::default(),
			books,
			witnesses,
			late_attestations: Vec::new(),
			evidence_seen: 0,
			fetches,
			step_time: None,
			seal_secs: Some(seal_secs),
			last_decided: None,
			last_step: Duration::ZERO,
			unserved: None,
			sync_hint: None,
			listen: Vec::new(),
			started: Instant::now(),
			totals: Totals::default(),
			last_set: Vec::new(),
			coordinator,
			reports: VecDeque::new(),
			fraud,
			keeper,
			signed_rounds,
			linger: Duration::from_secs(3),
			status_sink: None,
			last_update_norm: None,
			stale_base: None,
			config,
		})
	}
}

/// A first estimate of the time from a round's last step to its sealed update (s), before
/// a round has measured it: copying the last state out of the model, hashing as many states
/// as a round's trajectory keeps (encoding them waits until the commitment is out:
/// `keeper.rs`) and compressing the update with the first round's `compression`, timed on a
/// sample of at most [`ESTIMATE_VALUES`] parameters (with AdamW's moments) and scaled to the
/// model's `params`, so that start-up copies no large model's state for it. Times four: a
/// sample's timing misses the device's copy, memory traffic past the caches and a first
/// round's fresh allocations (on an H200 host, 2026-12-04, a 353M provider's first round
/// sealed in 9.5-11.2 s, past the 50 ms reserved then, and its update missed the commit
/// deadline; on 2 cores two 19.2M CPU providers' first rounds sealed in 1.5-1.8 s where
/// this timing tripled gave 1.28-1.60 s, their second rounds in 0.79-0.89 s), and a round
/// that stops a little early loses a few steps where one sealed late loses its whole
/// payment. From the second round on, the pacing uses the rounds' own measurements.
fn sealing_estimate(params: usize, compression: &Compression) -> Result<f64> {
	let sample = params.clamp(1, ESTIMATE_VALUES);
	// Values that vary, so that top-k and quantizers do their usual work.
	let values: Vec<f32> = (0..sample).map(|i| ((i as f32) * 0.618_034).sin() * 1e-3).collect();
	let start = Instant::now();
	let moments = Some(Moments { m: values.clone(), v: values.clone() });
	let state = StepState { params: values.clone(), step: 0, moments };
	let copied = start.elapsed().as_secs_f64();
	let start = Instant::now();
	let _ = state.digest();
	let hashed = start.elapsed().as_secs_f64() * f64::from(Recorder::new(params).capacity());
	let start = Instant::now();
	compress_values(compression, &Layout::rows(sample, 1024), &values)?;
	let compressed = start.elapsed().as_secs_f64();
	Ok(4.0 * (copied + hashed + compressed) * params as f64 / sample as f64)
}

/// Parameters of the state [`sealing_estimate`] times (48 MiB with its moments: past a
/// CPU's caches, as a large model's state is).
const ESTIMATE_VALUES: usize = 1 << 22;

#[cfg(test)]
mod tests {
	use super::*;
	use crate::daemon::config::tests::GOOD;

	fn config(dir: &std::path::Path) -> TrainerConfig {
		let path = dir.join("t.toml");
		std::fs::write(&path, GOOD).unwrap();
		TrainerConfig::load(&path).unwrap()
	}

	#[test]
	fn a_trainer_is_built_from_what_was_prepared_for_its_job_and_no_other() {
		let dir = tempfile::tempdir().unwrap();
		let runtime = tokio::runtime::Runtime::new().unwrap();
		let build = |prepared: Prepared, config: TrainerConfig| {
			let schedule = Box::new(config.local_schedule());
			let key = Keypair::generate_ed25519();
			Trainer::with_key(prepared, config, key, schedule, None, runtime.handle())
		};
		let mine = config(dir.path());
		let prepared = Prepared::new(&mine).unwrap();
		assert!(prepared.seal_secs > 0.0, "a first sealing estimate is timed");
		let mut other = mine.clone();
		other.job.id = 2;
		let refused = build(prepared, other).err().expect("another job's preparation is refused");
		assert!(
			refused.to_string().contains("prepared for job 1, configured for job 2"),
			"{refused}"
		);
		let trainer = build(Prepared::new(&mine).unwrap(), mine).expect("its own job's is taken");
		drop(trainer);
	}
}
