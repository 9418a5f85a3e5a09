//! The trainer daemon's configuration file (TOML): who the trainer is, where it listens and
//! whom it dials, the job it trains (until the chain link hands jobs out) and how rounds are
//! scheduled. Relative paths are relative to the file.

use std::{
	collections::BTreeSet,
	path::{Path, PathBuf},
};

use candle_core::Device;
use grid_primitives::job::{
	DatasetRef, ExchangeWindow, JobId, ModelSpec, RoundIndex, TrainingParams, MIN_FAN_IN,
};
use libp2p::PeerId;
use serde::Deserialize;

use crate::{
	aggregate::Rule,
	compress::{adaptive::AdaptiveCompressor, Layout},
	data::{self, DataStore, Dataset},
	device::DeviceChoice,
	diloco::CatchUp,
	error::{Error, Result},
	round::{
		book::ClaimRule,
		coordinator::{LocalSchedule, Schedule},
		misbehave::Misbehaviour,
		roster::Roster,
		state::OuterSettings,
	},
	train::{InnerConfig, InnerTrainer},
};

/// The whole file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainerConfig {
	/// A name for logs and the status report.
	pub name: String,
	/// Seed of the libp2p identity (development: the key is derived from it).
	pub key_seed: String,
	/// Where the checkpoint, round log, status and evidence are written.
	pub data_dir: PathBuf,
	/// The dataset store (`<data_dir>/datasets` by default): the job's dataset must be in it
	/// (or shipped); `grid-trainer data fetch` puts it there.
	#[serde(default)]
	pub datasets: Option<PathBuf>,
	/// Listen addresses.
	#[serde(default = "default_listen")]
	pub listen: Vec<String>,
	/// Peers to dial (`/ip4/…/tcp/…/p2p/<peer id>`).
	#[serde(default)]
	pub bootstrap: Vec<String>,
	/// A link-shaping scenario file.
	pub scenario: Option<PathBuf>,
	/// Compute threads: rayon's pool, which runs the CPU steps and Candle's kernels (0: one
	/// per core, the libraries' defaults).
	#[serde(default)]
	pub threads: usize,
	/// Where to train: "auto" (a GPU when there is one), "cpu", "cuda" or "cuda:N".
	#[serde(default)]
	pub device: DeviceChoice,
	/// Makes each inner step take this many times longer (simulates a slower GPU).
	#[serde(default = "one")]
	pub compute_slowdown: f64,
	/// Deliberate misbehaviour, for tests and benchmarks.
	#[serde(default)]
	pub misbehave: Misbehaviour,
	/// Fetch every update whole from its committer, not in pieces from their keepers
	/// (`round/update_pieces.rs`): the baseline `bench/pieces.sh` measures pieces against.
	#[serde(default)]
	pub whole_updates: bool,
	/// Send an update of at most 32 KiB with its commitment, so peers hold it when they
	/// hear the commitment (`round/announcement.rs`; only at the job's own compression
	/// level: the adaptive ladder follows the throughput measured on fetches); false: every
	/// update is fetched
	/// (the baseline `bench_net --only speed --updates fetched,inline` runs beside it).
	#[serde(default = "yes")]
	pub inline_updates: bool,
	/// Bytes per piece of the state this trainer serves to joiners
	/// ([`crate::round::state_transfer`]; tests make it small to send a small model in
	/// several pieces).
	#[serde(default = "default_state_piece_bytes")]
	pub state_piece_bytes: u32,
	/// Whether checks that redo training steps (segment checks, replays, trajectory checks)
	/// run beside the rounds' own training (the default); false: they take turns
	/// ([`crate::compute_gate`]), which lowers the peak memory by what one of them holds
	/// and may start a round up to one check late.
	#[serde(default = "yes")]
	pub checks_beside_training: bool,
	/// The genesis hash of the chain the job's proofs are signed for (a provider's, set from
	/// the chain it follows): gossiped proofs that are not signed for it are refused.
	#[serde(skip)]
	pub proof_genesis: Option<[u8; 32]>,
	/// The job.
	pub job: JobConfig,
	/// When rounds run.
	pub schedule: Schedule,
}

fn default_listen() -> Vec<String> {
	vec!["/ip4/127.0.0.1/tcp/0".into()]
}

fn default_state_piece_bytes() -> u32 {
	crate::round::state_transfer::STATE_PIECE_BYTES
}

fn one() -> f64 {
	1.0
}

/// A job as this trainer runs it: the spec's training part (the chain's types, read by their
/// one `serde` form) and the trainer's local choices, which peers need not share.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobConfig {
	/// Job id (the gossip topic; on chain, the job's id).
	pub id: JobId,
	/// Rounds to run.
	pub rounds: RoundIndex,
	/// Dataset: a shipped one's name, or `{ uri, content_hash }`.
	pub dataset: DatasetRef,
	/// Model.
	pub model: ModelSpec,
	/// Batch size, inner optimizer, outer step and compression (the job's weakest level of
	/// the ladder); `round_blocks` is left out off chain.
	pub training: TrainingParams<u32>,
	/// Inner steps over which the learning rate decays.
	#[serde(default = "default_total_steps")]
	pub total_steps: u64,
	/// Follow measured link quality with stronger compression.
	#[serde(default = "yes")]
	pub adaptive_compression: bool,
	/// How updates are combined.
	pub aggregation: Rule,
	/// Norm screening: reject updates above this multiple of the median norm.
	pub screen_ratio: Option<f64>,
	/// This trainer's own cap on inner steps per round (a provider's `max_steps`), below
	/// the job's (`training.max_steps`, by which everyone judges claims): it paces only what
	/// this trainer trains, never what it accepts from others. Not read from files: an
	/// off-chain job sets the job's cap in `[job.training]`.
	#[serde(skip)]
	pub own_max_steps: Option<u32>,
	/// Held-out samples evaluated after each round (0: none).
	#[serde(default)]
	pub eval_samples: usize,
	/// Rounds a round's contributions stay challengeable (its challenge window and a vote,
	/// see [`crate::round::fraud::challengeable_rounds`]): how long this trainer keeps
	/// evidence and serves its start states. Off chain nothing is challenged.
	#[serde(default = "default_evidence_rounds")]
	pub evidence_rounds: RoundIndex,
	/// Weights to start from instead of the seeded initialisation (fine-tuning): a `weights`
	/// dataset in the store.
	#[serde(default)]
	pub initial_weights: Option<DatasetRef>,
	/// Off chain, the peer ids of the only trainers whose commitments, attestations and
	/// piece requests count (left out: anyone's). A chain job's come from the chain: each
	/// round's members ([`crate::round::roster`]).
	#[serde(default, deserialize_with = "peer_ids")]
	pub members: Option<BTreeSet<PeerId>>,
}

/// Reads a list of base58 peer ids, naming any that does not parse.
fn peer_ids<'de, D: serde::Deserializer<'de>>(
	d: D,
) -> std::result::Result<Option<BTreeSet<PeerId>>, D::Error> {
	let ids = Vec::<String>::deserialize(d)?;
	let parse = |id: &String| {
		id.parse::<PeerId>()
			.map_err(|e| serde::de::Error::custom(format!("member {id:?} is not a peer id: {e}")))
	};
	ids.iter().map(parse).collect::<std::result::Result<_, _>>().map(Some)
}

/// The learning-rate decay's length when a job does not say (the chain's jobs do not).
pub const DEFAULT_TOTAL_STEPS: u64 = 10_000;

fn default_total_steps() -> u64 {
	DEFAULT_TOTAL_STEPS
}
/// Rounds a trainer keeps evidence and serves its states when its job does not say (local
/// runs; a chain job's are its challenge window's, `challengeable_rounds`).
const DEFAULT_EVIDENCE_ROUNDS: RoundIndex = 4;

fn default_evidence_rounds() -> RoundIndex {
	DEFAULT_EVIDENCE_ROUNDS
}
fn yes() -> bool {
	true
}

impl TrainerConfig {
	/// The rounds of an off-chain run: its schedule, and the job's members if it lists them.
	pub fn local_schedule(&self) -> LocalSchedule {
		let roster = self.job.members.clone().map_or(Roster::Open, Roster::Members);
		LocalSchedule { schedule: self.schedule, job: self.job.id, roster }
	}

	/// The dataset store.
	pub fn store(&self) -> DataStore {
		DataStore::new(self.datasets.clone().unwrap_or_else(|| self.data_dir.join("datasets")))
	}

	/// Reads and checks a configuration file.
	pub fn load(path: &Path) -> Result<Self> {
		let text = std::fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))?;
		let mut config: TrainerConfig =
			toml::from_str(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
		let base = path.parent().unwrap_or(Path::new("."));
		config.data_dir = base.join(&config.data_dir);
		config.scenario = config.scenario.map(|s| base.join(s));
		config.datasets = config.datasets.map(|d| base.join(d));
		config.validate()?;
		Ok(config)
	}

	/// Errors on values that cannot work.
	pub fn validate(&self) -> Result<()> {
		let bad = |m: &str| Err(Error::Config(m.to_string()));
		let j = &self.job;
		if j.training.batch_size == 0 || j.rounds == 0 {
			return bad("job.training.batch_size and job.rounds must be positive");
		}
		if j.training.inner.lr().0 == 0 {
			return bad("job.training.inner.lr must be positive");
		}
		if !(self.compute_slowdown.is_finite() && self.compute_slowdown >= 1.0) {
			return bad("compute_slowdown must be >= 1");
		}
		self.misbehave.check().map_err(Error::Config)?;
		let me = crate::net::keypair_from_seed(&self.key_seed).public().to_peer_id();
		if j.members.as_ref().is_some_and(|members| !members.contains(&me)) {
			return Err(Error::Config(format!(
				"job.members does not list this trainer's own peer id {me}: its own commitments \
				 would not count"
			)));
		}
		if !j.training.dense_rounds_fit(j.rounds) {
			return Err(Error::Config(format!(
				"job.training.dense_rounds ({}) must be at most job.rounds ({})",
				j.training.dense_rounds, j.rounds
			)));
		}
		if let Some(a) = j.training.outer_anneal {
			if !j.training.outer_anneal_fits(j.rounds) {
				return Err(Error::Config(format!(
					"job.training.outer_anneal must span 1 to job.rounds ({}) rounds (it spans \
					 {}) and end above 0, at most outer_lr ({}; it ends at {})",
					j.rounds,
					a.rounds,
					j.training.outer_lr.to_f64(),
					a.to_lr.to_f64()
				)));
			}
		}
		let overlap = j.training.overlap_steps;
		if let Some(max) = j.training.max_steps.filter(|m| overlap > 0 && overlap >= *m) {
			return Err(Error::Config(format!(
				"job.training.overlap_steps ({overlap}) must be below max_steps ({max}): a \
				 round must train from its base after catching up"
			)));
		}
		// A chain job (its round length set) brings its exchange, and the provider times its
		// schedule by it; off chain only its fan-in is read.
		let (exchange, default) = (j.training.exchange, ExchangeWindow::default());
		let timed = (exchange.grace_ms, exchange.fetch_ms) != (default.grace_ms, default.fetch_ms);
		if j.training.round_blocks == 0 && timed {
			return bad(
				"job.training.exchange times a chain job's exchange; off chain the schedule's \
				 grace_ms and fetch_timeout_ms do: give the default's (1500 and 4000) with a fan_in, \
				 or leave it out",
			);
		}
		if let Some(g) = exchange.fan_in.filter(|g| *g < MIN_FAN_IN) {
			return Err(Error::Config(format!(
				"job.training.exchange.fan_in ({g}) must be at least {MIN_FAN_IN}: a trimmed mean \
				 of fewer drops no outlier"
			)));
		}
		if j.training.max_steps == Some(0) {
			return bad("job.training.max_steps must be positive (leave it out for no cap)");
		}
		if let (Schedule::FixedSteps { steps, .. }, Some(max)) =
			(&self.schedule, j.training.max_steps)
		{
			if *steps > max {
				return Err(Error::Config(format!(
					"schedule.steps ({steps}) is over job.training.max_steps ({max}): every \
					 round's claim would be refused"
				)));
			}
		}
		let most = crate::round::state_transfer::MAX_STATE_PIECE_BYTES;
		if self.state_piece_bytes == 0 || self.state_piece_bytes > most {
			return Err(Error::Config(format!(
				"state_piece_bytes must be 1 to {most} (a piece is one response), not {}",
				self.state_piece_bytes
			)));
		}
		match self.schedule {
			Schedule::Deadline { period_ms, grace_ms, .. } if period_ms <= grace_ms => {
				bad("schedule.period_ms must exceed grace_ms")
			}
			Schedule::FixedSteps { steps: 0, .. } => bad("schedule.steps must be positive"),
			_ => Ok(()),
		}
	}
}

impl JobConfig {
	/// What a round of this job may claim: the same for every trainer of it, whatever each
	/// trains itself ([`Self::train_cap`]); commitments and replays are judged by it.
	/// `layout` is the job's model's.
	pub fn claim_rule(&self, layout: &Layout) -> ClaimRule {
		ClaimRule {
			batch: u64::from(self.training.batch_size),
			max_steps: self.training.max_steps,
			max_update_len: crate::compress::max_encoded_len(layout),
		}
	}

	/// Most inner steps this trainer trains a round: the job's cap, or its own if lower.
	pub fn train_cap(&self) -> Option<u32> {
		match (self.training.max_steps, self.own_max_steps) {
			(Some(job), Some(own)) => Some(job.min(own)),
			(job, own) => job.or(own),
		}
	}

	/// When an overlapped round catches up (`None`: rounds do not overlap): after the
	/// job's `training.overlap_steps` (`TrainingParams::overlap_steps`: each round's first
	/// steps train while the round before is exchanged — off chain from where the
	/// trainer's last round ended, in a chain job from the round before's base — then
	/// catch up with its decided state, [`crate::diloco::CatchUp`]).
	pub fn catch_up(&self) -> Result<Option<CatchUp>> {
		match self.training.overlap_steps {
			0 => Ok(None),
			steps => CatchUp::new(steps).map(Some),
		}
	}

	/// Loads the dataset from `store` (or the shipped files), checked against its reference
	/// and the model.
	pub fn dataset(&self, store: &DataStore) -> Result<Dataset> {
		data::load(store, &self.dataset, &self.model)
	}

	/// The inner trainer's schedule: the learning rate decays over the job's total steps.
	pub fn inner_config(&self) -> InnerConfig {
		InnerConfig { total_steps: self.total_steps, ..Default::default() }
	}

	/// A member's inner trainer before its first round: the model every member derives from
	/// the job's seed (the job's initial weights, if any, are loaded over it by the caller).
	pub fn inner_trainer(&self, device: &Device) -> Result<InnerTrainer> {
		let seed = format!("grid/job/{}", self.id);
		InnerTrainer::new(
			self.model,
			seed.as_bytes(),
			device,
			&self.training.inner,
			self.inner_config(),
		)
	}

	/// A member's compressor: the job's scheme as the ladder's weakest level, with the job's
	/// error-feedback decay.
	pub fn compressor(&self, layout: Layout) -> Result<AdaptiveCompressor> {
		let decay = self.training.error_decay.to_f64() as f32;
		AdaptiveCompressor::new(self.training.compression, layout, decay)
	}

	/// The outer step's settings.
	pub fn outer(&self) -> OuterSettings {
		OuterSettings {
			lr: self.training.outer_lr.to_f64() as f32,
			momentum: self.training.outer_momentum.to_f64() as f32,
		}
	}
}

#[cfg(test)]
pub(crate) mod tests {
	use super::*;

	/// A valid configuration (an MLP job on the shipped MNIST), for tests elsewhere too.
	pub(crate) const GOOD: &str = r#"
		name = "t1"
		key_seed = "trainer-1"
		data_dir = "t1"
		bootstrap = []

		[job]
		id = 1
		rounds = 5
		dataset = "mnist"
		model = { kind = "mlp", hidden = 32, layers = 1 }
		aggregation = { rule = "trimmed-mean", trim = 1 }

		[job.training]
		batch_size = 32
		inner = { optimizer = "adamw", lr = 0.002 }
		compression = { scheme = "int8", chunk = 64 }

		[schedule]
		mode = "deadline"
		start_unix_ms = 0
		period_ms = 3000
		grace_ms = 400
		fetch_timeout_ms = 3000
	"#;

	#[test]
	fn a_good_file_parses_and_bad_ones_say_why() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("t.toml");
		std::fs::write(&path, GOOD).unwrap();
		let c = TrainerConfig::load(&path).unwrap();
		assert_eq!(c.data_dir, dir.path().join("t1"));
		assert_eq!(c.job.aggregation, Rule::TrimmedMean { trim: 1 });
		assert!(matches!(c.job.model, ModelSpec::MnistMlp(_)));
		assert_eq!(c.job.catch_up().unwrap(), None, "rounds block unless the job overlaps");
		let mut overlapped = c.job.clone();
		overlapped.training.overlap_steps = 3;
		assert_eq!(overlapped.catch_up().unwrap().map(CatchUp::after), Some(3));
		// A trainer trains at most the job's cap, or its own where that is lower.
		let mut capped = c.job.clone();
		assert_eq!(capped.train_cap(), None);
		capped.own_max_steps = Some(40);
		assert_eq!(capped.train_cap(), Some(40));
		capped.training.max_steps = Some(25);
		assert_eq!(capped.train_cap(), Some(25));
		capped.own_max_steps = Some(10);
		assert_eq!(capped.train_cap(), Some(10));

		let cases = [
			(GOOD.replace("lr = 0.002", "lr = -1.0"), "lr = -1"),
			(GOOD.replace("lr = 0.002", "lr = 0.0"), "job.training.inner.lr"),
			(GOOD.replace("period_ms = 3000", "period_ms = 100"), "period_ms"),
			(GOOD.replace("batch_size = 32", "batch_size = 32\nfoo = 1"), "unknown field"),
			(GOOD.replace("id = 1", "id = 1\nlr = 0.1"), "unknown field"),
			(GOOD.replace("\"mlp\"", "\"rnn\""), "unknown variant"),
			(GOOD.replace("data_dir = \"t1\"", "data_dir = \"t1\"\nstate_piece_bytes = 0"), "1 to"),
			(
				GOOD.replace(
					"batch_size = 32",
					"batch_size = 32\nmax_steps = 5\noverlap_steps = 5",
				),
				"below max_steps",
			),
			(
				GOOD.replace("batch_size = 32", "batch_size = 32\ndense_rounds = 6"),
				"dense_rounds (6) must be at most job.rounds (5)",
			),
			(
				GOOD.replace(
					"batch_size = 32",
					"batch_size = 32\nouter_anneal = { rounds = 6, to_lr = 0.1 }",
				),
				"outer_anneal must span 1 to job.rounds (5) rounds (it spans 6)",
			),
			(
				GOOD.replace(
					"batch_size = 32",
					"batch_size = 32\nouter_lr = 0.5\nouter_anneal = { rounds = 2, to_lr = 0.7 }",
				),
				"at most outer_lr (0.5; it ends at 0.7)",
			),
			// The job's cap is in [job.training] (one definition with the chain's spec).
			(GOOD.replace("id = 1", "id = 1\nmax_steps = 5"), "unknown field"),
			(GOOD.replace("batch_size = 32", "batch_size = 32\nmax_steps = 0"), "positive"),
			(
				GOOD.replace("id = 1", "id = 1\nmembers = [\"nope\"]"),
				"member \"nope\" is not a peer id",
			),
			(
				GOOD.replace(
					"id = 1",
					"id = 1\nmembers = [\"12D3KooWRn7631sbaAbbnj18JWZYC7jBny5QHovn3N1RhW6pYwVi\"]",
				),
				"does not list this trainer's own peer id",
			),
			(
				GOOD.replace(
					"batch_size = 32",
					"batch_size = 32\nexchange = { grace_ms = 400, fetch_ms = 9000 }",
				),
				"off chain the schedule's",
			),
			(
				GOOD.replace(
					"batch_size = 32",
					"batch_size = 32\nexchange = { grace_ms = 1500, fetch_ms = 4000, fan_in = 2 }",
				),
				"must be at least 3",
			),
		];
		for (text, expected) in cases {
			std::fs::write(&path, text).unwrap();
			let err = TrainerConfig::load(&path).unwrap_err().to_string();
			assert!(err.contains(expected), "{expected}: {err}");
		}
		// A chain job (a provider's) brings its own exchange: that is no configuration error.
		let mut chain: TrainerConfig = toml::from_str(GOOD).unwrap();
		chain.job.training.round_blocks = 5;
		chain.job.training.exchange =
			ExchangeWindow { grace_ms: 2_000, fetch_ms: 14_000, fan_in: None };
		assert_eq!(chain.validate().map_err(|e| e.to_string()), Ok(()));
		let mut c: TrainerConfig = toml::from_str(GOOD).unwrap();
		c.job.dataset = grid_primitives::datasets::SHAKESPEARE.reference();
		let err =
			c.job.dataset(&c.store()).err().expect("GPT-less Shakespeare must fail").to_string();
		assert!(err.contains("cannot train"), "{err}");
	}
}
