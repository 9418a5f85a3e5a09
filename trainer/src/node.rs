//! The trainer daemon's round loop: train until the round's deadline, commit, collect the
//! round's commitments, fetch and verify the updates, aggregate the canonical set, apply the
//! outer step, checkpoint — and join, leave and re-sync as peers come and go.
//!
//! The loop runs on its own thread (training is CPU-bound) and talks to the network task
//! through channels, so serving peers never waits for a training step.

use std::{
	collections::{HashMap, VecDeque},
	io::Write,
	path::{Path, PathBuf},
	sync::{mpsc::RecvTimeoutError, Arc},
	time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use candle_core::Device;
use grid_primitives::{
	job::{JobId, RoundIndex},
	work::{data_seed, Verdict},
	Hash,
};
use libp2p::{identity::Keypair, Multiaddr, PeerId};
use serde::Serialize;

use crate::{
	aggregate::{aggregate, Contribution},
	checkpoint::Checkpoint,
	checks::{Checks, Received},
	compress::{adaptive::AdaptiveCompressor, CompressedUpdate},
	config::{Poison, Schedule, TrainerConfig},
	data::{batch_indices, Dataset},
	diloco::{train_round, LocalRound, OuterOptimizer},
	error::{Error, Result},
	exchange::{Offer, RoundBook},
	health::HealthBook,
	model::Batch,
	net::{
		behaviour::BehaviourConfig,
		keypair_from_seed,
		messages::{state_hash, update_hash},
		scenario::Scenario,
		service, Command, Commitment, Digest, Equivocation, Event, NetConfig, NetworkHandle,
		Request, Response, Shaper, SignedCommitment,
	},
	params::{hex, Manifest},
	rng::{blake2_256, Rng},
	train::{evaluate, InnerConfig, InnerTrainer},
	verify::Replayer,
};

/// Longest checkpoint or update a peer may send (a 100M-parameter model's state fits).
const MAX_RESPONSE_BYTES: u64 = 1 << 30;
/// Most commitments for coming rounds kept (a bound on what a flood of signers costs).
const MAX_FUTURE: usize = 1024;
/// How long a single state request may take.
const STATE_TIMEOUT: Duration = Duration::from_secs(20);

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> u64 {
	SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The instant at Unix time `ms` (now, if it has passed).
fn instant_at(ms: u64) -> Instant {
	let now = unix_ms();
	Instant::now() + Duration::from_millis(ms.saturating_sub(now))
}

/// The seed of a round's data when no chain provides one: a hash of the job and round.
pub fn offline_round_seed(job: JobId, round: RoundIndex) -> Hash {
	let mut bytes = b"grid/offline-round-seed".to_vec();
	bytes.extend_from_slice(&job.to_le_bytes());
	bytes.extend_from_slice(&round.to_le_bytes());
	Hash::from(blake2_256(&bytes))
}

/// What a trainer reports to its coordinator about a round it finished.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundReport {
	/// The round.
	pub round: RoundIndex,
	/// Model the round started from.
	pub base_model_hash: Digest,
	/// Model after the round's outer step.
	pub result_model_hash: Digest,
	/// This trainer's update (its hash) and the samples it trained on, when it contributed.
	pub own_update: Option<(Digest, u64)>,
	/// Its mean training loss, when it contributed.
	pub train_loss: Option<f32>,
	/// Other trainers whose updates went into the aggregate.
	pub received: Vec<PeerId>,
}

/// Sets a trainer's rounds from outside: on a Grid network, the chain. It says which round
/// is open and by when its update must be committed, gives the round's data seed, and takes
/// the trainer's report of each finished round (to attest it on chain).
pub trait Coordinator: Send {
	/// The round open now; `None` before the job runs.
	fn open_round(&self) -> Option<RoundIndex>;
	/// The job is over for this trainer (completed, cancelled, or it was removed).
	fn ended(&self) -> bool;
	/// Unix ms by which `round`'s update must be committed (0 for a round already past),
	/// once the round is open.
	fn commit_by(&self, round: RoundIndex) -> Option<u64>;
	/// This trainer's data seed for `round`, once the round is open.
	fn data_seed(&self, round: RoundIndex) -> Option<Hash>;
	/// A round finished here.
	fn round_done(&self, report: RoundReport);
	/// Proofs to announce to the job's peers (SCALE bytes), taken once.
	fn outgoing_proofs(&self) -> Vec<Vec<u8>> {
		Vec::new()
	}
	/// A proof a peer announced (shape and job checked, signature not).
	fn heard_proof(&self, _bytes: Vec<u8>) {}
	/// The data seed `peer` was given for `round`, when known (a replay of its update
	/// draws its batches from it).
	fn peer_seed(&self, _round: RoundIndex, _peer: &PeerId) -> Option<Hash> {
		None
	}
	/// `peer`'s update for `round` failed its replay: challenge it.
	fn accuse(&self, _round: RoundIndex, _peer: PeerId) {}
	/// Challenges this trainer was newly drawn to judge, taken once.
	fn assigned_checks(&self) -> Vec<CheckRequest> {
		Vec::new()
	}
	/// This trainer's verdict on a challenge.
	fn vote(&self, _challenge: u64, _verdict: Verdict) {}
}

/// A challenge a trainer must judge: the update `accused` sent for `round`.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckRequest {
	/// The challenge's id on chain.
	pub challenge: u64,
	/// The round of the disputed update.
	pub round: RoundIndex,
	/// Who sent it.
	pub accused: PeerId,
}

/// A coordinator shared with whoever started the trainer.
impl<C: Coordinator + Sync> Coordinator for Arc<C> {
	fn open_round(&self) -> Option<RoundIndex> {
		C::open_round(self)
	}
	fn ended(&self) -> bool {
		C::ended(self)
	}
	fn commit_by(&self, round: RoundIndex) -> Option<u64> {
		C::commit_by(self, round)
	}
	fn data_seed(&self, round: RoundIndex) -> Option<Hash> {
		C::data_seed(self, round)
	}
	fn round_done(&self, report: RoundReport) {
		C::round_done(self, report)
	}
	fn outgoing_proofs(&self) -> Vec<Vec<u8>> {
		C::outgoing_proofs(self)
	}
	fn heard_proof(&self, bytes: Vec<u8>) {
		C::heard_proof(self, bytes)
	}
	fn peer_seed(&self, round: RoundIndex, peer: &PeerId) -> Option<Hash> {
		C::peer_seed(self, round, peer)
	}
	fn accuse(&self, round: RoundIndex, peer: PeerId) {
		C::accuse(self, round, peer)
	}
	fn assigned_checks(&self) -> Vec<CheckRequest> {
		C::assigned_checks(self)
	}
	fn vote(&self, challenge: u64, verdict: Verdict) {
		C::vote(self, challenge, verdict)
	}
}

/// The global state every participant holds at the start of a round.
struct GlobalState {
	round: RoundIndex,
	weights: Vec<f32>,
	outer: OuterOptimizer,
	model_hash: Digest,
	state_hash: Digest,
	/// Known to be the network's: computed here from a verified base, or the initial
	/// model. A restored or fetched state is not, until a round's commitments confirm it.
	verified: bool,
}

impl GlobalState {
	fn new(
		round: RoundIndex,
		manifest: &Manifest,
		weights: Vec<f32>,
		outer: OuterOptimizer,
	) -> Result<Self> {
		let model_hash = manifest.model_hash(&weights)?;
		let state_hash = state_hash(round, &model_hash, outer.velocity());
		Ok(GlobalState { round, weights, outer, model_hash, state_hash, verified: false })
	}

	fn checkpoint(&self, manifest: &Manifest) -> Checkpoint {
		Checkpoint {
			round: self.round,
			manifest: manifest.clone(),
			weights: self.weights.clone(),
			velocity: self.outer.velocity().to_vec(),
		}
	}
}

/// This trainer's own update of a round.
struct OwnUpdate {
	signed: SignedCommitment,
	update: CompressedUpdate,
	/// Its encoding (served to peers, and what the commitment hashes).
	bytes: Arc<Vec<u8>>,
	level: usize,
	compute: Duration,
}

/// A fetch in flight.
enum Pending {
	Update { hash: Digest, tried: Vec<PeerId> },
	State,
}

/// One line of `rounds.jsonl`.
#[derive(Serialize)]
struct RoundRecord {
	round: RoundIndex,
	unix_ms: u64,
	contributed: bool,
	committed: usize,
	aggregated: Vec<String>,
	screened_out: Vec<String>,
	missing: Vec<String>,
	model_hash: String,
	state_hash: String,
	train_loss: Option<f32>,
	eval_loss: Option<f64>,
	steps: u32,
	samples: u64,
	compression_level: Option<usize>,
	update_bytes: Option<u64>,
	compute_ms: u64,
	exchange_ms: u64,
	eval_ms: u64,
	wall_ms: u64,
	#[serde(skip)]
	base_model_hash: Digest,
	#[serde(skip)]
	accepted: Vec<PeerId>,
}

/// The status report (`status.json`), rewritten after every round.
#[derive(Serialize)]
struct Status<'a> {
	name: &'a str,
	peer_id: String,
	listen: Vec<String>,
	job: JobId,
	round: Option<RoundIndex>,
	synced: bool,
	model_hash: Option<String>,
	last_eval_loss: Option<f64>,
	last_train_loss: Option<f32>,
	rounds_contributed: u64,
	compute_ms: u64,
	wall_ms: u64,
	eval_ms: u64,
	utilization: f64,
	median_rtt_ms: Option<f64>,
	median_throughput_mbit: Option<f64>,
	equivocations_seen: usize,
	peers: Vec<crate::health::HealthRow>,
	network: crate::net::NetStats,
	/// The latest rounds' losses, oldest first, for the UI's loss curve.
	history: &'a VecDeque<LossPoint>,
	finished: bool,
}

/// One round's losses in the status report's `history`.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
struct LossPoint {
	round: RoundIndex,
	unix_ms: u64,
	train_loss: Option<f32>,
	eval_loss: Option<f64>,
}

/// Rounds kept in the status report's `history`: enough for any job the chain accepts to be
/// drawn whole at typical round counts, small enough that `/status` stays a few tens of KiB.
const HISTORY_ROUNDS: usize = 500;

/// Appends `point`, dropping the oldest beyond [`HISTORY_ROUNDS`].
fn push_history(history: &mut VecDeque<LossPoint>, point: LossPoint) {
	if history.len() == HISTORY_ROUNDS {
		history.pop_front();
	}
	history.push_back(point);
}

/// Totals over the run, for the utilization figure.
#[derive(Default)]
struct Totals {
	compute: Duration,
	eval: Duration,
	contributed: u64,
	last_eval: Option<f64>,
	last_train: Option<f32>,
	history: VecDeque<LossPoint>,
}

/// A running trainer.
pub struct Trainer {
	config: TrainerConfig,
	key: Keypair,
	me: PeerId,
	net: NetworkHandle,
	shaper: Shaper,
	scenario: Option<Scenario>,
	dataset: Arc<Dataset>,
	eval: Vec<Batch>,
	device: Device,
	inner: InnerTrainer,
	manifest: Manifest,
	compressor: AdaptiveCompressor,
	state: Option<GlobalState>,
	health: HealthBook,
	book: RoundBook,
	future: Vec<(PeerId, SignedCommitment)>,
	evidence: Vec<Equivocation>,
	pending: HashMap<u64, Pending>,
	arrived: HashMap<Digest, (Arc<Vec<u8>>, CompressedUpdate)>,
	expected_lens: HashMap<Digest, u64>,
	unavailable: Vec<Digest>,
	candidates: Vec<PeerId>,
	state_answer: Option<(PeerId, Result<Response, String>)>,
	next_id: u64,
	step_secs: Option<f64>,
	listen: Vec<Multiaddr>,
	started: Instant,
	totals: Totals,
	last_set: Vec<PeerId>,
	coordinator: Option<Box<dyn Coordinator>>,
	linger: Duration,
	status_sink: Option<crate::status_server::StatusSink>,
	checks: Checks,
	/// Norm of the last aggregated update (what a lazy trainer's noise imitates).
	last_update_norm: Option<f64>,
}

impl Trainer {
	/// Sets up a trainer whose rounds follow the configured schedule, with the libp2p key
	/// derived from the configured seed.
	pub fn new(config: TrainerConfig, runtime: &tokio::runtime::Handle) -> Result<Self> {
		let key = keypair_from_seed(&config.key_seed);
		Self::with_key(config, key, None, runtime)
	}

	/// Sets up the trainer: identity, data, model, checkpoint (if any) and network. With a
	/// coordinator, rounds open and close when it says, not on the configured schedule.
	pub fn with_key(
		config: TrainerConfig,
		key: Keypair,
		coordinator: Option<Box<dyn Coordinator>>,
		runtime: &tokio::runtime::Handle,
	) -> Result<Self> {
		std::fs::create_dir_all(&config.data_dir)
			.map_err(|e| Error::io("creating", &config.data_dir, e))?;
		let me = key.public().to_peer_id();
		let job = &config.job;
		let device = crate::device::select(config.device)?;
		tracing::info!("training on {:?}", device.location());
		let dataset = Arc::new(job.dataset()?);
		let eval = if job.eval_samples > 0 {
			dataset.eval_batches(job.eval_samples, 250, &device)?
		} else {
			Vec::new()
		};
		let seed = format!("grid/job/{}", job.id);
		let inner_config = InnerConfig { total_steps: job.total_steps, ..Default::default() };
		let inner = InnerTrainer::new(
			job.model_spec(),
			seed.as_bytes(),
			&device,
			&job.inner(),
			inner_config,
		)?;
		if device.is_cuda() {
			// The driver compiles Candle's kernels on their first use (seconds each on a new
			// machine): pay for that now rather than in the first round.
			let start = Instant::now();
			let indices: Vec<u64> = (0..u64::from(job.batch_size)).collect();
			inner.warm_up(&dataset.train_batch(&indices, &device)?)?;
			tracing::info!("GPU warmed up in {:.1} s", start.elapsed().as_secs_f64());
		}
		let manifest = inner.model().params().manifest();
		let replayer = Replayer {
			spec: job.model_spec(),
			inner: job.inner(),
			config: inner_config,
			batch_size: job.batch_size as u64,
			dataset: dataset.clone(),
			device: device.clone(),
		};
		let compressor = AdaptiveCompressor::new(job.compression(), manifest.numel());
		let state = Self::restore(&config.data_dir, &manifest, job)?;
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
				ping_interval: Duration::from_secs(2),
			},
		};
		let net = service::start(runtime, key.clone(), shaper.clone(), net_config)
			.map_err(Error::Network)?;
		let book = RoundBook::new(job.id, state.as_ref().map_or(0, |s| s.round));
		Ok(Trainer {
			key,
			me,
			net,
			shaper,
			scenario,
			dataset,
			eval,
			device,
			inner,
			manifest,
			compressor,
			state,
			health: HealthBook::default(),
			book,
			future: Vec::new(),
			evidence: Vec::new(),
			pending: HashMap::new(),
			arrived: HashMap::new(),
			expected_lens: HashMap::new(),
			unavailable: Vec::new(),
			candidates: Vec::new(),
			state_answer: None,
			next_id: 0,
			step_secs: None,
			listen: Vec::new(),
			started: Instant::now(),
			totals: Totals::default(),
			last_set: Vec::new(),
			coordinator,
			linger: Duration::from_secs(3),
			status_sink: None,
			checks: Checks::new(me, replayer),
			last_update_norm: None,
			config,
		})
	}

	/// The checkpoint in `dir`, if there is one; a fresh model at round 0 otherwise is
	/// decided later (only a trainer present from the start may use it).
	fn restore(
		dir: &Path,
		manifest: &Manifest,
		job: &crate::config::JobConfig,
	) -> Result<Option<GlobalState>> {
		let path = dir.join("checkpoint.safetensors");
		if !path.exists() {
			return Ok(None);
		}
		let ck = Checkpoint::load(&path)?;
		ck.check_manifest(manifest)?;
		let mut outer =
			OuterOptimizer::new(job.outer_lr as f32, job.outer_momentum as f32, ck.weights.len());
		outer.set_velocity(ck.velocity)?;
		tracing::info!("resuming from {} at round {}", path.display(), ck.round);
		Ok(Some(GlobalState::new(ck.round, manifest, ck.weights, outer)?))
	}

	/// How long the trainer keeps serving its final state after the last round (3 s unless
	/// set).
	pub fn set_linger(&mut self, linger: Duration) {
		self.linger = linger;
	}

	/// Where the status report also goes, after every round (the status server's).
	pub fn set_status_sink(&mut self, sink: crate::status_server::StatusSink) {
		self.status_sink = Some(sink);
	}

	/// This trainer's peer id.
	pub fn peer_id(&self) -> PeerId {
		self.me
	}

	fn fresh_state(&self) -> Result<GlobalState> {
		let weights = self.inner.model().params().flatten()?;
		let job = &self.config.job;
		let outer =
			OuterOptimizer::new(job.outer_lr as f32, job.outer_momentum as f32, weights.len());
		let mut state = GlobalState::new(0, &self.manifest, weights, outer)?;
		// Everyone derives the same initial model from the job's seed.
		state.verified = true;
		Ok(state)
	}

	/// Runs the job to its last round.
	pub fn run(mut self) -> Result<()> {
		let schedule = self.config.schedule;
		let start = instant_at(schedule.start_unix_ms());
		// Connect to peers before round 0.
		self.pump_until(start, |_| false);
		if !self.wait_open(0) {
			return self.finish();
		}
		if self.state.is_none() && self.clock_round() == 0 {
			self.state = Some(self.fresh_state()?);
		}
		self.publish_state()?;
		let mut round = self.state.as_ref().map_or_else(|| self.clock_round(), |s| s.round);
		while round < self.config.job.rounds {
			let usable = self
				.state
				.as_ref()
				.is_some_and(|s| s.round == round && (s.verified || s.round >= self.clock_round()));
			// Without a usable state, fetch one and observe the round it is the base of;
			// contribute from the next.
			let observe = !usable;
			if !usable {
				self.state = None;
				match self.sync(Instant::now() + STATE_TIMEOUT) {
					Some(at) => round = at,
					None => {
						round = round.max(self.clock_round());
						continue;
					}
				}
			}
			if round >= self.config.job.rounds || !self.wait_open(round) {
				break;
			}
			self.run_round(round, observe)?;
			round += 1;
		}
		self.finish()
	}

	/// Waits (serving peers) until the coordinator has opened `round`; false when the job
	/// ended first. Without a coordinator rounds follow the schedule and nothing waits.
	fn wait_open(&mut self, round: RoundIndex) -> bool {
		loop {
			let Some(c) = &self.coordinator else { return true };
			if c.ended() {
				return false;
			}
			if c.open_round().is_some_and(|open| open >= round) {
				return true;
			}
			self.pump_until(Instant::now() + Duration::from_millis(200), |_| false);
		}
	}

	fn finish(mut self) -> Result<()> {
		self.write_status(true)?;
		// Stay a while so peers can fetch the last update and state (and buyers the model).
		let linger = Instant::now() + self.linger;
		self.pump_until(linger, |_| false);
		Ok(())
	}

	/// The round whose compute window is open now (fixed-step rounds follow the state).
	fn clock_round(&self) -> RoundIndex {
		if let Some(c) = &self.coordinator {
			return c.open_round().unwrap_or(0);
		}
		match self.config.schedule {
			Schedule::Deadline { start_unix_ms, period_ms, .. } => {
				(unix_ms().saturating_sub(start_unix_ms) / period_ms) as RoundIndex
			}
			Schedule::FixedSteps { .. } => 0,
		}
	}

	fn round_end(&self, round: RoundIndex) -> Option<Instant> {
		if let Some(c) = &self.coordinator {
			return Some(instant_at(c.commit_by(round).unwrap_or(0)));
		}
		match self.config.schedule {
			Schedule::Deadline { start_unix_ms, period_ms, .. } => {
				Some(instant_at(start_unix_ms + (u64::from(round) + 1) * period_ms))
			}
			Schedule::FixedSteps { .. } => None,
		}
	}

	fn apply_scenario(&mut self, round: RoundIndex) {
		let Some(scenario) = self.scenario.clone() else { return };
		let me = self.me;
		let policy = scenario.clone();
		self.shaper.set_policy(Box::new(move |peer| policy.link(&me, peer, round)));
		for d in scenario.disconnects_at(&me, round) {
			self.shaper.disconnect(d.peer);
			self.net.send(Command::Disconnect(d.peer));
		}
		if scenario.disconnects_self(&me, round) {
			for row in self.health.report(round) {
				if let Ok(peer) = row.peer.parse::<PeerId>() {
					self.shaper.disconnect(peer);
					self.net.send(Command::Disconnect(peer));
				}
			}
		}
	}

	fn run_round(&mut self, round: RoundIndex, observe: bool) -> Result<()> {
		let round_start = Instant::now();
		self.apply_scenario(round);
		self.start_book(round);
		let end = self.round_end(round);
		// A trainer late for a round (its previous exchange overran) observes it too.
		let step = Duration::from_secs_f64(self.step_secs.unwrap_or(0.0));
		let in_time = end.is_none_or(|e| Instant::now() + step + Duration::from_millis(100) < e);
		let contribute = !observe && in_time;
		let own = if contribute { self.compute(round, end)? } else { None };
		let compute = own.as_ref().map_or(Duration::ZERO, |o| o.compute);
		let exchange_start = Instant::now();
		if let Some(own) = &own {
			self.publish(own)?;
		}
		self.collect(round, end);
		self.book.close();
		let outcome = self.finish_round(round, own.as_ref())?;
		let exchange = exchange_start.elapsed();
		let eval_start = Instant::now();
		let eval_loss = match (&self.state, self.eval.is_empty()) {
			(Some(s), false) if s.round == round + 1 => {
				self.inner.model().params().load_flat(&s.weights)?;
				Some(evaluate(self.inner.model(), &self.eval)?)
			}
			_ => None,
		};
		let eval = eval_start.elapsed();
		self.totals.compute += compute;
		self.totals.eval += eval;
		if own.is_some() {
			self.totals.contributed += 1;
		}
		if eval_loss.is_some() {
			self.totals.last_eval = eval_loss;
		}
		if let Some(own) = &own {
			self.totals.last_train = Some(own.signed.commitment.train_loss());
		}
		if let Some(mut record) = outcome {
			record.contributed = own.is_some();
			record.train_loss = own.as_ref().map(|o| o.signed.commitment.train_loss());
			record.steps = own.as_ref().map_or(0, |o| o.signed.commitment.steps);
			record.samples = own.as_ref().map_or(0, |o| o.signed.commitment.samples);
			record.compression_level = own.as_ref().map(|o| o.level);
			record.update_bytes = own.as_ref().map(|o| o.signed.commitment.update_len);
			record.eval_loss = eval_loss;
			record.compute_ms = compute.as_millis() as u64;
			record.exchange_ms = exchange.as_millis() as u64;
			record.eval_ms = eval.as_millis() as u64;
			record.wall_ms = round_start.elapsed().as_millis() as u64;
			self.append_record(&record)?;
			push_history(
				&mut self.totals.history,
				LossPoint {
					round: record.round,
					unix_ms: record.unix_ms,
					train_loss: record.train_loss,
					eval_loss,
				},
			);
			self.report_round(&record, own.as_ref());
			tracing::info!(
				"round {round}: {} aggregated, eval loss {:?}, model {}",
				record.aggregated.len(),
				eval_loss,
				&record.model_hash[..16]
			);
		}
		self.write_status(false)
	}

	/// Tells the coordinator how the round went.
	fn report_round(&self, record: &RoundRecord, own: Option<&OwnUpdate>) {
		let (Some(c), Some(state)) = (&self.coordinator, &self.state) else { return };
		c.round_done(RoundReport {
			round: record.round,
			base_model_hash: record.base_model_hash,
			result_model_hash: state.model_hash,
			own_update: own.map(|o| (o.signed.commitment.update_hash, o.signed.commitment.samples)),
			train_loss: record.train_loss,
			received: record.accepted.iter().copied().filter(|p| *p != self.me).collect(),
		});
	}

	/// Opens the round's book unless it is open already (a sync opened it with the round's
	/// commitments).
	fn start_book(&mut self, round: RoundIndex) {
		if self.book.round() != round || self.book.is_closed() {
			self.open_book(round);
		}
	}

	/// A fresh book for `round`, with the commitments already received for it.
	fn open_book(&mut self, round: RoundIndex) {
		self.book = RoundBook::new(self.config.job.id, round);
		self.arrived.clear();
		self.expected_lens.clear();
		self.unavailable.clear();
		self.pending.retain(|_, p| matches!(p, Pending::State));
		for (peer, signed) in std::mem::take(&mut self.future) {
			match signed.commitment.round.cmp(&round) {
				std::cmp::Ordering::Equal => self.offer(peer, signed),
				std::cmp::Ordering::Greater => self.future.push((peer, signed)),
				std::cmp::Ordering::Less => {}
			}
		}
	}

	/// Fetches a peer's latest state. Returns the round it is the base of once one was
	/// adopted (tentatively: the round's commitments confirm it before it is trusted), `None`
	/// if `until` passed first. The state's round commitments that peer has seen come with
	/// it, so a joiner knows of those announced before it connected.
	fn sync(&mut self, until: Instant) -> Option<RoundIndex> {
		tracing::info!("fetching the global state from peers");
		let mut turn = 0usize;
		while Instant::now() < until {
			let peers = self.connected_peers();
			if peers.is_empty() {
				self.pump_until((Instant::now() + Duration::from_millis(200)).min(until), |_| {
					false
				});
				continue;
			}
			let peer = peers[turn % peers.len()];
			turn += 1;
			let id = self.request(peer, Request::State { job: self.config.job.id }, Pending::State);
			let deadline = (Instant::now() + STATE_TIMEOUT).min(until);
			self.pump_until(deadline, |s| s.state_answer.is_some());
			self.pending.remove(&id);
			match self.state_answer.take() {
				Some((
					peer,
					Ok(Response::State { round, state_hash, checkpoint, commitments }),
				)) => match self.adopt(peer, round, state_hash, &checkpoint) {
					Ok(()) => {
						self.open_book(round);
						self.learn(peer, commitments);
						return Some(round);
					}
					Err(e) => tracing::warn!("state from {peer} rejected: {e}"),
				},
				Some((peer, other)) => tracing::debug!("no state from {peer}: {other:?}"),
				None => {}
			}
			self.pump_until((Instant::now() + Duration::from_millis(300)).min(until), |_| false);
		}
		None
	}

	/// Offers commitments relayed by `peer` (with a state) after checking each one.
	fn learn(&mut self, peer: PeerId, commitments: Vec<SignedCommitment>) {
		let (job, manifest) = (self.config.job.id, self.manifest.hash());
		for signed in commitments {
			match signed.verify() {
				Ok(signer)
					if signed.commitment.job == job
						&& signed.commitment.manifest_hash == manifest =>
				{
					self.on_event(Event::Commitment { signer, signed })
				}
				Ok(_) => tracing::warn!("{peer} relayed a commitment of another job or layout"),
				Err(e) => tracing::warn!("{peer} relayed a bad commitment: {e}"),
			}
		}
	}

	/// Verifies a peer's checkpoint and makes it the state.
	fn adopt(&mut self, peer: PeerId, at: RoundIndex, claimed: Digest, bytes: &[u8]) -> Result<()> {
		let origin = PathBuf::from(format!("state from {peer}"));
		let ck = Checkpoint::from_bytes(bytes, &origin)?;
		ck.check_manifest(&self.manifest)?;
		if ck.round != at {
			return Err(Error::Checkpoint {
				path: origin,
				reason: "round differs from the answer's".into(),
			});
		}
		let job = &self.config.job;
		let mut outer =
			OuterOptimizer::new(job.outer_lr as f32, job.outer_momentum as f32, ck.weights.len());
		outer.set_velocity(ck.velocity)?;
		let state = GlobalState::new(at, &self.manifest, ck.weights, outer)?;
		if state.state_hash != claimed {
			return Err(Error::Checkpoint {
				path: origin,
				reason: "state hash does not match".into(),
			});
		}
		tracing::info!("adopted state of round {at} from {peer}: {}", hex(&state.state_hash));
		self.state = Some(state);
		Ok(())
	}

	fn request(&mut self, peer: PeerId, request: Request, pending: Pending) -> u64 {
		self.next_id += 1;
		let id = self.next_id;
		self.pending.insert(id, pending);
		self.net.send(Command::Fetch { id, peer, request });
		id
	}

	/// Trains from the global state until the round's deadline (or the fixed step count)
	/// and compresses the result.
	fn compute(&mut self, round: RoundIndex, end: Option<Instant>) -> Result<Option<OwnUpdate>> {
		let started = Instant::now();
		let state = self.state.as_ref().expect("compute runs with a state");
		let job = &self.config.job;
		let seed = match self.coordinator.as_ref().and_then(|c| c.data_seed(round)) {
			Some(seed) => seed,
			None => {
				data_seed(&offline_round_seed(job.id, round), job.id, round, &self.me.to_bytes())
			}
		};
		let population = self.dataset.train_len();
		let batch = job.batch_size as u64;
		let slowdown = self.config.compute_slowdown;
		let max_steps = job.max_steps;
		let (fixed, margin) = match self.config.schedule {
			Schedule::FixedSteps { steps, .. } => (Some(steps), Duration::ZERO),
			Schedule::Deadline { .. } => (None, Duration::from_millis(50)),
		};
		let stop_at = end.map(|e| e.checked_sub(margin).unwrap_or(e));
		if self.config.misbehave.lazy {
			let steps = fixed.or(max_steps).unwrap_or(LAZY_STEPS);
			let norm = self.last_update_norm.unwrap_or(LAZY_FIRST_NORM);
			let local = lazy_round(state.weights.len(), norm, round, steps, batch, stop_at);
			return self.commit(round, local, started);
		}
		let mut step_secs = self.step_secs;
		let mut last: Option<Instant> = None;
		let mut i = 0u64;
		let (dataset, device) = (&self.dataset, &self.device);
		let batches = std::iter::from_fn(|| {
			let now = Instant::now();
			if let Some(prev) = last {
				let took = now - prev;
				if slowdown > 1.0 {
					std::thread::sleep(took.mul_f64(slowdown - 1.0));
				}
				let secs = took.as_secs_f64() * slowdown;
				step_secs = Some(step_secs.map_or(secs, |s| 0.8 * s + 0.2 * secs));
			}
			let capped = max_steps.is_some_and(|m| i >= u64::from(m));
			let go = !capped
				&& match (fixed, stop_at) {
					(Some(steps), _) => i < u64::from(steps),
					(None, Some(stop)) => {
						Instant::now() + Duration::from_secs_f64(step_secs.unwrap_or(0.0)) < stop
					}
					(None, None) => false,
				};
			if !go {
				return None;
			}
			last = Some(Instant::now());
			let indices = batch_indices(&seed, i, batch, population);
			i += 1;
			Some(dataset.train_batch(&indices, device))
		});
		let mut local = train_round(&mut self.inner, &state.weights, batches)?;
		self.step_secs = step_secs;
		if local.steps == 0 {
			return Ok(None);
		}
		if let Some(poison) = self.config.misbehave.poison {
			poison_update(&mut local.delta, poison, round);
		}
		self.commit(round, local, started)
	}

	/// Compresses a round's update, signs its commitment and serves it.
	fn commit(
		&mut self,
		round: RoundIndex,
		local: LocalRound,
		started: Instant,
	) -> Result<Option<OwnUpdate>> {
		let state = self.state.as_ref().expect("commit runs with a state");
		let job = &self.config.job;
		let budget = self.transfer_budget();
		let (update, bytes, level) = self.compressor.compress(&local.delta, budget)?;
		let bytes = Arc::new(bytes);
		let compute = started.elapsed();
		let commitment = Commitment {
			job: job.id,
			round,
			manifest_hash: self.manifest.hash(),
			base_state: state.state_hash,
			base_model_hash: state.model_hash,
			update_hash: update_hash(&bytes),
			update_len: bytes.len() as u64,
			samples: local.samples,
			steps: local.steps,
			compute_millis: compute.as_millis().min(u128::from(u32::MAX)) as u32,
			train_loss_bits: local.mean_loss.to_bits(),
		};
		let signed = commitment.sign(&self.key).map_err(|e| Error::Network(e.to_string()))?;
		self.net.send(Command::ServeUpdate {
			hash: signed.commitment.update_hash,
			round,
			bytes: bytes.clone(),
		});
		Ok(Some(OwnUpdate { signed, update, bytes, level, compute }))
	}

	/// Bytes an update may take so peers download it within the transfer budget, from the
	/// median throughput measured to peers (`None`: no budget yet, or not adaptive).
	fn transfer_budget(&self) -> Option<usize> {
		let Schedule::Deadline { transfer_budget_ms, .. } = self.config.schedule else {
			return None;
		};
		if !self.config.job.adaptive_compression {
			return None;
		}
		let mbit = self.health.median_throughput_mbit()?;
		Some((mbit * 1e6 / 8.0 * transfer_budget_ms as f64 / 1e3) as usize)
	}

	fn publish(&mut self, own: &OwnUpdate) -> Result<()> {
		self.net.send(Command::Publish(own.signed.clone()));
		self.offer(self.me, own.signed.clone());
		if self.config.misbehave.equivocate {
			let mut other = own.signed.commitment.clone();
			other.update_hash = blake2_256(&other.update_hash);
			other.samples += 1;
			let second = other.sign(&self.key).map_err(|e| Error::Network(e.to_string()))?;
			self.net.send(Command::Publish(second));
		}
		Ok(())
	}

	/// Waits for the round's commitments: until the grace period after the deadline, or
	/// (fixed steps) until every expected peer committed.
	fn collect(&mut self, round: RoundIndex, end: Option<Instant>) {
		match self.config.schedule {
			Schedule::Deadline { grace_ms, .. } => {
				let until = end.unwrap_or_else(Instant::now) + Duration::from_millis(grace_ms);
				self.pump_until(until, |_| false);
			}
			Schedule::FixedSteps { wait_ms, .. } => {
				let mut expected = self.last_set.clone();
				if expected.is_empty() || round == 0 {
					expected = self.connected_peers();
				}
				expected.retain(|p| *p != self.me);
				let until = Instant::now() + Duration::from_millis(wait_ms);
				self.pump_until(until, |s| expected.iter().all(|p| s.book.has(p)));
			}
		}
	}

	fn connected_peers(&self) -> Vec<PeerId> {
		self.health
			.report(0)
			.into_iter()
			.filter(|r| r.raw.connected)
			.filter_map(|r| r.peer.parse().ok())
			.collect()
	}

	/// Decides the round: check the base, fetch the set's updates, aggregate, step, save.
	fn finish_round(
		&mut self,
		round: RoundIndex,
		own: Option<&OwnUpdate>,
	) -> Result<Option<RoundRecord>> {
		let Some(state) = &self.state else { return Ok(None) };
		if own.is_none() && self.book.is_empty() && !state.verified {
			// An observer that heard nothing cannot tell whether its state is the network's.
			tracing::warn!("round {round}: no commitments heard; re-syncing");
			self.state = None;
			return Ok(None);
		}
		if let Some((base, count)) = self.book.majority_base() {
			if base != state.state_hash {
				tracing::warn!(
					"round {round}: {count} peers trained from {}, not from this trainer's {}; re-syncing",
					hex(&base),
					hex(&state.state_hash)
				);
				self.state = None;
				return Ok(None);
			}
		}
		let base = state.state_hash;
		let set = self.book.set(&base);
		if let Some(own) = own {
			let entry = (own.bytes.clone(), own.update.clone());
			self.arrived.insert(own.signed.commitment.update_hash, entry);
		}
		self.fetch_all(&set);
		let mut contributions = Vec::new();
		let mut members = Vec::new();
		let mut missing = Vec::new();
		// Evidence for fraud checks, which only a chain (a coordinator) asks for.
		let keep_evidence = self.coordinator.is_some();
		let mut received = Vec::new();
		for (peer, signed) in &set {
			match self.arrived.get(&signed.commitment.update_hash) {
				Some((_, update)) => {
					let delta = update.decompress();
					let steps = signed.commitment.steps;
					if keep_evidence {
						received.push(Received { peer: *peer, steps, delta: delta.clone() });
					}
					contributions.push(Contribution { delta, samples: signed.commitment.samples });
					members.push(*peer);
				}
				None => missing.push(peer.to_string()),
			}
		}
		let mut state = self.state.take().expect("checked above");
		if let Some(coordinator) = self.coordinator.as_deref() {
			self.checks.keep_round(round, &state.weights, received, coordinator);
		}
		let base_model_hash = state.model_hash;
		let mut record_sets = (Vec::new(), Vec::new());
		let mut accepted = Vec::new();
		if !contributions.is_empty() {
			let rule = self.config.job.rule(contributions.len());
			let agg = aggregate(&contributions, rule, self.config.job.screen_ratio)?;
			for &i in &agg.accepted {
				self.health.peer(members[i]).accepted += 1;
				record_sets.0.push(members[i].to_string());
				accepted.push(members[i]);
			}
			for &i in &agg.rejected {
				self.health.peer(members[i]).rejected += 1;
				record_sets.1.push(members[i].to_string());
			}
			self.last_update_norm = Some(crate::aggregate::norm(&agg.delta));
			state.outer.step(&mut state.weights, &agg.delta)?;
		}
		self.last_set = members;
		let mut next = GlobalState::new(round + 1, &self.manifest, state.weights, state.outer)?;
		next.verified = true;
		self.state = Some(next);
		self.publish_state()?;
		self.net.send(Command::Forget(round));
		let state = self.state.as_ref().expect("just set");
		Ok(Some(RoundRecord {
			round,
			unix_ms: unix_ms(),
			contributed: false,
			committed: self.book.len(),
			aggregated: record_sets.0,
			screened_out: record_sets.1,
			missing,
			model_hash: hex(&state.model_hash),
			state_hash: hex(&state.state_hash),
			train_loss: None,
			eval_loss: None,
			steps: 0,
			samples: 0,
			compression_level: None,
			update_bytes: None,
			compute_ms: 0,
			exchange_ms: 0,
			eval_ms: 0,
			wall_ms: 0,
			base_model_hash,
			accepted,
		}))
	}

	/// Saves the state as the checkpoint and serves it to joiners.
	fn publish_state(&mut self) -> Result<()> {
		let Some(state) = &self.state else { return Ok(()) };
		let ck = state.checkpoint(&self.manifest);
		ck.save(&self.config.data_dir.join("checkpoint.safetensors"))?;
		self.net.send(Command::ServeState {
			round: state.round,
			state_hash: state.state_hash,
			checkpoint: Arc::new(ck.encode()?),
		});
		Ok(())
	}

	/// Fetches every update of the set not yet here, from its committer first and from
	/// other members when that fails, until the fetch deadline.
	fn fetch_all(&mut self, set: &[(PeerId, SignedCommitment)]) {
		self.candidates = set.iter().map(|(p, _)| *p).filter(|p| *p != self.me).collect();
		let mut wanted = Vec::new();
		for (peer, signed) in set {
			let hash = signed.commitment.update_hash;
			if self.arrived.contains_key(&hash) {
				continue;
			}
			self.expected_lens.insert(hash, signed.commitment.update_len);
			wanted.push(hash);
			let request =
				Request::Update { job: self.config.job.id, round: signed.commitment.round, hash };
			self.request(*peer, request, Pending::Update { hash, tried: vec![*peer] });
		}
		if wanted.is_empty() {
			return;
		}
		let wait = match self.config.schedule {
			Schedule::Deadline { fetch_timeout_ms, .. } => fetch_timeout_ms,
			Schedule::FixedSteps { wait_ms, .. } => wait_ms,
		};
		let until = Instant::now() + Duration::from_millis(wait);
		self.pump_until(until, |s| {
			wanted.iter().all(|h| s.arrived.contains_key(h) || s.unavailable.contains(h))
		});
	}

	/// Handles network events until `until` or until `done` holds.
	fn pump_until(&mut self, until: Instant, done: impl Fn(&Self) -> bool) {
		loop {
			if let Some(c) = &self.coordinator {
				for proof in c.outgoing_proofs() {
					self.net.send(Command::PublishProof(proof));
				}
				self.checks.poll(c.as_ref());
			}
			if done(self) {
				return;
			}
			let now = Instant::now();
			if now >= until {
				return;
			}
			match self.net.events.recv_timeout(until - now) {
				Ok(event) => self.on_event(event),
				Err(RecvTimeoutError::Timeout) => return,
				Err(RecvTimeoutError::Disconnected) => {
					std::thread::sleep(until - now);
					return;
				}
			}
		}
	}

	fn on_event(&mut self, event: Event) {
		match event {
			Event::Listening(addr) => {
				tracing::info!("listening on {addr}/p2p/{}", self.me);
				self.listen.push(addr);
				let _ = self.write_status(false);
			}
			Event::Connected(peer) => self.health.peer(peer).connected = true,
			Event::Disconnected(peer) => self.health.peer(peer).connected = false,
			Event::Rtt { peer, rtt } => self.health.rtt(peer, rtt),
			Event::Commitment { signer, signed } => {
				let c = &signed.commitment;
				tracing::debug!(
					"commitment of {signer} for round {} (book {})",
					c.round,
					self.book.round()
				);
				self.health.committed(signer, c.round, c.samples, c.compute_millis);
				match c.round.cmp(&self.book.round()) {
					std::cmp::Ordering::Equal => self.offer(signer, signed),
					std::cmp::Ordering::Greater
						if c.round <= self.book.round() + 2 && self.future.len() < MAX_FUTURE =>
					{
						self.future.push((signer, signed));
					}
					_ => {}
				}
			}
			Event::Fetched { id, peer, result, elapsed } => {
				self.on_fetched(id, peer, result, elapsed)
			}
			Event::Proof(bytes) => {
				if let Some(c) = &self.coordinator {
					c.heard_proof(bytes);
				}
			}
		}
	}

	fn offer(&mut self, signer: PeerId, signed: SignedCommitment) {
		match self.book.offer(signer, signed) {
			Offer::Equivocation(evidence) => {
				tracing::warn!("{signer} equivocated in round {}", self.book.round());
				self.health.peer(signer).equivocations += 1;
				if let Err(e) = self.save_evidence(&evidence) {
					tracing::error!("saving equivocation evidence: {e}");
				}
				self.evidence.push(*evidence);
			}
			Offer::Late => tracing::info!("late commitment from {signer} left out"),
			Offer::Full => tracing::warn!("round full: commitment from {signer} left out"),
			_ => {}
		}
	}

	fn save_evidence(&self, evidence: &Equivocation) -> Result<()> {
		use codec::Encode;
		let dir = self.config.data_dir.join("evidence");
		std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
		let offender = evidence.verify().map_err(|e| Error::Network(e.to_string()))?;
		let path = dir.join(format!("round-{}-{offender}.scale", evidence.first.commitment.round));
		std::fs::write(&path, evidence.encode()).map_err(|e| Error::io("writing", &path, e))
	}

	fn on_fetched(
		&mut self,
		id: u64,
		peer: PeerId,
		result: Result<Response, String>,
		elapsed: Duration,
	) {
		let Some(pending) = self.pending.remove(&id) else { return };
		match pending {
			Pending::State => self.state_answer = Some((peer, result)),
			Pending::Update { hash, mut tried } => {
				let outcome = match result {
					Ok(Response::Update(bytes)) => self.check_update(hash, bytes),
					Ok(Response::Unavailable(why)) => Err(why),
					Ok(other) => Err(format!("unexpected answer {}", variant(&other))),
					Err(e) => Err(e),
				};
				match outcome {
					Ok(len) => {
						self.health.fetched(peer, Some(len), elapsed);
					}
					Err(why) => {
						tracing::info!("update {} from {peer}: {why}", &hex(&hash)[..12]);
						self.health.fetched(peer, None, elapsed);
						let next = self.candidates.iter().copied().find(|p| !tried.contains(p));
						if let Some(next) = next {
							tried.push(next);
							let request = Request::Update {
								job: self.config.job.id,
								round: self.book.round(),
								hash,
							};
							self.request(next, request, Pending::Update { hash, tried });
						} else {
							// Its committer and every other member failed: nobody has it.
							self.unavailable.push(hash);
						}
					}
				}
			}
		}
	}

	/// Checks a fetched update against its commitment and keeps it (and serves it on).
	fn check_update(&mut self, hash: Digest, bytes: Vec<u8>) -> std::result::Result<usize, String> {
		if update_hash(&bytes) != hash {
			return Err("bytes do not match the committed hash".into());
		}
		if self.expected_lens.get(&hash).is_some_and(|&l| l != bytes.len() as u64) {
			return Err("length differs from the commitment".into());
		}
		let update = CompressedUpdate::decode(&bytes).map_err(|e| e.to_string())?;
		if update.len() != self.manifest.numel() {
			return Err(format!(
				"{} values for a model of {}",
				update.len(),
				self.manifest.numel()
			));
		}
		let len = bytes.len();
		let bytes = Arc::new(bytes);
		self.net.send(Command::ServeUpdate {
			hash,
			round: self.book.round(),
			bytes: bytes.clone(),
		});
		self.arrived.insert(hash, (bytes, update));
		Ok(len)
	}

	fn append_record(&self, record: &RoundRecord) -> Result<()> {
		let path = self.config.data_dir.join("rounds.jsonl");
		let mut line = serde_json::to_string(record).map_err(|e| Error::Config(e.to_string()))?;
		line.push('\n');
		std::fs::OpenOptions::new()
			.create(true)
			.append(true)
			.open(&path)
			.and_then(|mut f| f.write_all(line.as_bytes()))
			.map_err(|e| Error::io("appending to", &path, e))
	}

	fn write_status(&self, finished: bool) -> Result<()> {
		let round = self.state.as_ref().map(|s| s.round);
		let wall = self.started.elapsed();
		let busy = wall.saturating_sub(self.totals.eval).as_secs_f64();
		let status = Status {
			name: &self.config.name,
			peer_id: self.me.to_string(),
			listen: self.listen.iter().map(|a| format!("{a}/p2p/{}", self.me)).collect(),
			job: self.config.job.id,
			round,
			synced: self.state.is_some(),
			model_hash: self.state.as_ref().map(|s| hex(&s.model_hash)),
			last_eval_loss: self.totals.last_eval,
			last_train_loss: self.totals.last_train,
			rounds_contributed: self.totals.contributed,
			compute_ms: self.totals.compute.as_millis() as u64,
			wall_ms: wall.as_millis() as u64,
			eval_ms: self.totals.eval.as_millis() as u64,
			utilization: if busy > 0.0 { self.totals.compute.as_secs_f64() / busy } else { 0.0 },
			median_rtt_ms: self.health.median_rtt_ms(),
			median_throughput_mbit: self.health.median_throughput_mbit(),
			equivocations_seen: self.evidence.len(),
			peers: self.health.report(round.unwrap_or(0)),
			network: self.net.stats(),
			history: &self.totals.history,
			finished,
		};
		let path = self.config.data_dir.join("status.json");
		let tmp = self.config.data_dir.join("status.json.tmp");
		let text = serde_json::to_vec_pretty(&status).map_err(|e| Error::Config(e.to_string()))?;
		if let Some(sink) = &self.status_sink {
			if let Ok(value) = serde_json::to_value(&status) {
				*sink.lock().unwrap_or_else(|e| e.into_inner()) = value;
			}
		}
		std::fs::write(&tmp, text).map_err(|e| Error::io("writing", &tmp, e))?;
		std::fs::rename(&tmp, &path).map_err(|e| Error::io("renaming", &path, e))
	}
}

fn variant(response: &Response) -> &'static str {
	match response {
		Response::Update(_) => "update",
		Response::State { .. } => "state",
		Response::Unavailable(_) => "unavailable",
	}
}

/// Corrupts an update the way a Byzantine trainer would.
fn poison_update(delta: &mut [f32], poison: Poison, round: RoundIndex) {
	match poison {
		Poison::Scale { factor } => delta.iter_mut().for_each(|d| *d *= factor),
		Poison::Flip { factor } => delta.iter_mut().for_each(|d| *d *= -factor),
		Poison::Random { factor } => {
			let norm = factor as f64 * crate::aggregate::norm(delta);
			let noise = noise(delta.len(), norm, u64::from(round) ^ 0xbad);
			delta.copy_from_slice(&noise);
		}
	}
}

/// Gaussian noise of length `len` and L2 norm `norm`.
fn noise(len: usize, norm: f64, seed: u64) -> Vec<f32> {
	let mut rng = Rng::new(seed);
	let raw: Vec<f64> = (0..len).map(|_| rng.normal()).collect();
	let scale = norm / raw.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
	raw.into_iter().map(|x| (x * scale) as f32).collect()
}

/// Inner steps a lazy trainer claims when nothing caps a round.
const LAZY_STEPS: u32 = 100;
/// Norm of a lazy trainer's noise before it has seen an aggregate.
const LAZY_FIRST_NORM: f64 = 0.1;

/// A lazy trainer's round: no training. It waits until an honest trainer would be done and
/// claims `steps` full batches for Gaussian noise the size of the last aggregated update
/// (small enough to pass norm screening, so only a replay can tell).
fn lazy_round(
	len: usize,
	norm: f64,
	round: RoundIndex,
	steps: u32,
	batch: u64,
	stop_at: Option<Instant>,
) -> LocalRound {
	if let Some(wait) = stop_at.and_then(|s| s.checked_duration_since(Instant::now())) {
		std::thread::sleep(wait);
	}
	tracing::warn!("round {round}: sending noise instead of training (lazy)");
	LocalRound {
		delta: noise(len, norm, u64::from(round) ^ 0x1a2e),
		samples: u64::from(steps) * batch,
		steps,
		mean_loss: 1.0,
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn loss_history_keeps_the_latest_rounds_in_order() {
		let mut history = VecDeque::new();
		let point = |round| LossPoint { round, unix_ms: 0, train_loss: None, eval_loss: None };
		for round in 0..HISTORY_ROUNDS as u32 + 3 {
			push_history(&mut history, point(round));
		}
		assert_eq!(history.len(), HISTORY_ROUNDS);
		assert_eq!(history.front().map(|p| p.round), Some(3));
		assert_eq!(history.back().map(|p| p.round), Some(HISTORY_ROUNDS as u32 + 2));
	}

	#[test]
	fn offline_seeds_differ_by_job_and_round() {
		assert_ne!(offline_round_seed(1, 0), offline_round_seed(1, 1));
		assert_ne!(offline_round_seed(1, 0), offline_round_seed(2, 0));
		assert_eq!(offline_round_seed(3, 4), offline_round_seed(3, 4));
	}

	#[test]
	fn poisons_change_updates_as_described() {
		let honest = vec![0.5f32, -1.0, 2.0];
		let mut d = honest.clone();
		poison_update(&mut d, Poison::Scale { factor: 10.0 }, 0);
		assert_eq!(d, vec![5.0, -10.0, 20.0]);
		let mut d = honest.clone();
		poison_update(&mut d, Poison::Flip { factor: 1.0 }, 0);
		assert_eq!(d, vec![-0.5, 1.0, -2.0]);
		let mut d = honest.clone();
		poison_update(&mut d, Poison::Random { factor: 2.0 }, 0);
		let ratio = crate::aggregate::norm(&d) / crate::aggregate::norm(&honest);
		assert!((ratio - 2.0).abs() < 1e-4, "{ratio}");
	}
}
