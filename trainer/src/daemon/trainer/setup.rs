//! Setting a trainer up: device, data, model, checkpoint, fraud desk and network.

use std::{
	collections::VecDeque,
	sync::Arc,
	time::{Duration, Instant},
};

use libp2p::{identity::Keypair, Multiaddr};

use super::{restore, Evaluator, Fraud, Saver, Trainer, MAX_RESPONSE_BYTES};
use crate::{
	compress::Layout,
	compute_gate::ComputeGate,
	daemon::{config::TrainerConfig, datasets},
	daemon::{evidence::EvidenceFiles, reports::Totals, work_states::WorkStates},
	error::{Error, Result},
	net::{
		behaviour::BehaviourConfig, scenario::Scenario, service, Command, NetConfig, Shaper,
		StoredBytes,
	},
	round::{
		book::Books,
		coordinator::Coordinator,
		fetch::Fetches,
		fraud::{FraudDesk, FraudPort},
		peers::HealthBook,
		witness::Witnesses,
	},
	trajectory::{Recorder, StepState},
	verify::Replayer,
	work_state::Moments,
};

impl Trainer {
	/// Sets up the trainer: identity, data, model, checkpoint (if any) and network. Rounds
	/// open and close when `coordinator` says; with a `fraud` port (the chain's), the trainer
	/// keeps evidence, screens and replays updates, and judges challenges.
	pub fn with_key(
		config: TrainerConfig,
		key: Keypair,
		coordinator: Box<dyn Coordinator>,
		fraud: Option<Box<dyn FraudPort>>,
		runtime: &tokio::runtime::Handle,
	) -> Result<Self> {
		std::fs::create_dir_all(&config.data_dir)
			.map_err(|e| Error::io("creating", &config.data_dir, e))?;
		let me = key.public().to_peer_id();
		let job = &config.job;
		// Where a large model's set-up time goes (a 353M provider took 34 s on an H200 from
		// joining to listening, longer than a 10-block round 0 left it): logged once.
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
		let inner_config = job.inner_config();
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
			let took = setup_start.elapsed() - model_ready;
			tracing::info!("GPU warmed up in {:.1} s", took.as_secs_f64());
		}
		let warmed_up = setup_start.elapsed();
		let seal_secs = sealing_estimate(manifest.numel());
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
				max_steps: job.claim_rule().max_steps,
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
		for stored in work_states.load(manifest.numel())? {
			let bytes = StoredBytes::File(stored.path);
			net.send(Command::ServeWorkState { id: stored.id, round: stored.round, bytes });
		}
		let keeper = super::keeper::Keeper::start(work_states, net.commander())?;
		let saver = Saver::start(config.data_dir.join("checkpoint.safetensors"), net.commander())?;
		let first_round = state.as_ref().map_or(0, |s| s.round);
		let books = Books::new(job.id, first_round, job.claim_rule());
		let witnesses = Witnesses::new(job.id, first_round);
		let fetches = Fetches::new(job.id, Layout::of(&manifest)).fetch_whole(config.whole_updates);
		let set_up = setup_start.elapsed();
		tracing::info!(
			"set up in {:.1} s: data and evaluator {:.1} s, model and optimizer {:.1} s, \
			 warm-up {:.1} s, state, network and keepers {:.1} s",
			set_up.as_secs_f64(),
			evaluator_ready.as_secs_f64(),
			(model_ready - evaluator_ready).as_secs_f64(),
			(warmed_up - model_ready).as_secs_f64(),
			(set_up - warmed_up).as_secs_f64()
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
			unserved: None,
			sync_hint: None,
			listen: Vec::new(),
			started: Instant::now(),
			totals: Totals::default(),
			last_set: Vec::new(),
			coordinator,
			fraud,
			keeper,
			linger: Duration::from_secs(3),
			status_sink: None,
			last_update_norm: None,
			stale_base: None,
			config,
		})
	}
}

/// A first estimate of the time from a round's last step to its sealed update (s), before
/// a round has measured it: hashing as many states as a round's trajectory keeps (encoding
/// them waits until the commitment is out: `keeper.rs`), timed on a state of at most
/// [`ESTIMATE_VALUES`] parameters (with AdamW's moments) and scaled to the model's
/// `params`, so that start-up copies no large model's state for it.
fn sealing_estimate(params: usize) -> f64 {
	let sample = params.clamp(1, ESTIMATE_VALUES);
	let zeros = || vec![0f32; sample];
	let moments = Some(Moments { m: zeros(), v: zeros() });
	let state = StepState { params: zeros(), step: 0, moments };
	let start = Instant::now();
	let _ = state.digest();
	let per_state = start.elapsed().as_secs_f64() * params as f64 / sample as f64;
	per_state * f64::from(Recorder::new(params).capacity())
}

/// Parameters of the state [`sealing_estimate`] times.
const ESTIMATE_VALUES: usize = 1 << 20;
