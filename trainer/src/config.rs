//! The trainer daemon's configuration file (TOML): who the trainer is, where it listens and
//! whom it dials, the job it trains (until the chain link hands jobs out) and how rounds are
//! scheduled. Relative paths are relative to the file.

use std::path::{Path, PathBuf};

use grid_primitives::job::{
	CnnConfig, Compression, GptConfig, InnerOptimizer, JobId, MlpConfig, ModelSpec, Nanos,
	RoundIndex,
};
use serde::Deserialize;

pub use crate::round::{
	coordinator::Schedule,
	misbehave::{Misbehaviour, Poison},
};
use crate::{
	aggregate::Rule,
	data::{parse_hash, shipped_dir, Dataset, MnistDataset, TextDataset, SHAKESPEARE_HASH},
	device::DeviceChoice,
	error::{Error, Result},
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
	/// Listen addresses.
	#[serde(default = "default_listen")]
	pub listen: Vec<String>,
	/// Peers to dial (`/ip4/…/tcp/…/p2p/<peer id>`).
	#[serde(default)]
	pub bootstrap: Vec<String>,
	/// A link-shaping scenario file.
	pub scenario: Option<PathBuf>,
	/// Compute threads (0: Candle's default).
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
	/// The job.
	pub job: JobConfig,
	/// When rounds run.
	pub schedule: Schedule,
}

fn default_listen() -> Vec<String> {
	vec!["/ip4/127.0.0.1/tcp/0".into()]
}

fn one() -> f64 {
	1.0
}

/// The job to train.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobConfig {
	/// Job id (the gossip topic; on chain, the job's id).
	pub id: JobId,
	/// Rounds to run.
	pub rounds: RoundIndex,
	/// Dataset.
	pub dataset: DatasetName,
	/// Model.
	pub model: ModelConfig,
	/// Samples per inner step.
	pub batch_size: u32,
	/// Inner optimizer.
	#[serde(default)]
	pub optimizer: OptimizerKind,
	/// Inner peak learning rate.
	pub lr: f64,
	/// Inner warm-up steps.
	#[serde(default)]
	pub warmup_steps: u32,
	/// Inner weight decay.
	#[serde(default)]
	pub weight_decay: f64,
	/// Inner steps over which the learning rate decays.
	#[serde(default = "default_total_steps")]
	pub total_steps: u64,
	/// Outer (Nesterov) learning rate.
	#[serde(default = "default_outer_lr")]
	pub outer_lr: f64,
	/// Outer momentum.
	#[serde(default = "default_outer_momentum")]
	pub outer_momentum: f64,
	/// The job's compression (the weakest level of the ladder).
	pub compression: CompressionConfig,
	/// Follow measured link quality with stronger compression.
	#[serde(default = "yes")]
	pub adaptive_compression: bool,
	/// How updates are combined.
	pub aggregation: Rule,
	/// Norm screening: reject updates above this multiple of the median norm.
	pub screen_ratio: Option<f64>,
	/// At most this many inner steps per round (DiLoCo's H); unbounded: as many as fit.
	pub max_steps: Option<u32>,
	/// Held-out samples evaluated after each round (0: none).
	#[serde(default)]
	pub eval_samples: usize,
}

fn default_total_steps() -> u64 {
	10_000
}
fn default_outer_lr() -> f64 {
	0.7
}
fn default_outer_momentum() -> f64 {
	0.9
}
fn yes() -> bool {
	true
}

/// The inner optimizer.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum OptimizerKind {
	/// AdamW with warm-up and cosine decay.
	#[default]
	Adamw,
	/// Plain SGD.
	Sgd,
}

/// The shipped datasets.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetName {
	/// MNIST digits.
	Mnist,
	/// Tiny Shakespeare, byte level.
	Shakespeare,
}

impl DatasetName {
	/// Every shipped dataset.
	pub const ALL: [DatasetName; 2] = [DatasetName::Mnist, DatasetName::Shakespeare];

	/// Its name in job files.
	pub fn name(self) -> &'static str {
		match self {
			DatasetName::Mnist => "mnist",
			DatasetName::Shakespeare => "shakespeare",
		}
	}

	/// Whether `model` can train on it: a GPT on text, an MNIST model on MNIST.
	pub fn fits(self, model: &ModelConfig) -> bool {
		matches!(
			(self, model),
			(DatasetName::Mnist, ModelConfig::Mlp { .. } | ModelConfig::Cnn { .. })
				| (DatasetName::Shakespeare, ModelConfig::Gpt { .. })
		)
	}
}

/// A model.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ModelConfig {
	/// MNIST MLP.
	Mlp {
		/// Hidden width.
		hidden: u32,
		/// Hidden layers.
		layers: u16,
	},
	/// MNIST CNN.
	Cnn {
		/// Convolution channels.
		channels: u16,
		/// Hidden width.
		hidden: u32,
	},
	/// Byte-level GPT (vocabulary 256).
	Gpt {
		/// Context length.
		context: u32,
		/// Blocks.
		layers: u16,
		/// Attention heads.
		heads: u16,
		/// Embedding width.
		width: u32,
	},
}

/// A compression scheme.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(tag = "scheme", rename_all = "kebab-case", deny_unknown_fields)]
pub enum CompressionConfig {
	/// f32.
	None,
	/// int8 per chunk.
	Int8 {
		/// Values per chunk.
		chunk: u32,
	},
	/// Top-k per chunk.
	Topk {
		/// Values per chunk.
		chunk: u32,
		/// Kept per chunk.
		k: u32,
		/// Bits per value.
		value_bits: u8,
	},
}

impl TrainerConfig {
	/// Reads and checks a configuration file.
	pub fn load(path: &Path) -> Result<Self> {
		let text = std::fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))?;
		let mut config: TrainerConfig =
			toml::from_str(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
		let base = path.parent().unwrap_or(Path::new("."));
		config.data_dir = base.join(&config.data_dir);
		config.scenario = config.scenario.map(|s| base.join(s));
		config.validate()?;
		Ok(config)
	}

	/// Errors on values that cannot work.
	pub fn validate(&self) -> Result<()> {
		let bad = |m: &str| Err(Error::Config(m.to_string()));
		let j = &self.job;
		if j.batch_size == 0 || j.rounds == 0 {
			return bad("job.batch_size and job.rounds must be positive");
		}
		if !(j.lr.is_finite() && j.lr > 0.0 && j.lr < 4.0) {
			return bad("job.lr must be in (0, 4)");
		}
		if !(self.compute_slowdown.is_finite() && self.compute_slowdown >= 1.0) {
			return bad("compute_slowdown must be >= 1");
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

/// The chain's form of a compression scheme.
pub fn compression_of(config: CompressionConfig) -> Compression {
	match config {
		CompressionConfig::None => Compression::None,
		CompressionConfig::Int8 { chunk } => Compression::Int8 { chunk },
		CompressionConfig::Topk { chunk, k, value_bits } => {
			Compression::TopK { chunk, k, value_bits }
		}
	}
}

fn nanos(x: f64) -> Nanos {
	Nanos((x * 1e9).round().clamp(0.0, f64::from(u32::MAX)) as u32)
}

impl JobConfig {
	/// The model spec.
	pub fn model_spec(&self) -> ModelSpec {
		Self::model_spec_of(self.model)
	}

	/// The spec of a model configuration.
	pub fn model_spec_of(model: ModelConfig) -> ModelSpec {
		match model {
			ModelConfig::Mlp { hidden, layers } => {
				ModelSpec::MnistMlp(MlpConfig { hidden, layers })
			}
			ModelConfig::Cnn { channels, hidden } => {
				ModelSpec::MnistCnn(CnnConfig { channels, hidden })
			}
			ModelConfig::Gpt { context, layers, heads, width } => {
				ModelSpec::Gpt(GptConfig { vocab: 256, context, layers, heads, width })
			}
		}
	}

	/// The inner optimizer.
	pub fn inner(&self) -> InnerOptimizer {
		match self.optimizer {
			OptimizerKind::Adamw => InnerOptimizer::AdamW {
				lr: nanos(self.lr),
				weight_decay: nanos(self.weight_decay),
				warmup_steps: self.warmup_steps,
			},
			OptimizerKind::Sgd => InnerOptimizer::Sgd { lr: nanos(self.lr) },
		}
	}

	/// The compression scheme.
	pub fn compression(&self) -> Compression {
		compression_of(self.compression)
	}

	/// The aggregation rule for `n` updates: a trimmed mean trims at most `(n - 1) / 2`
	/// values at each end, so something is left to average.
	pub fn rule(&self, n: usize) -> Rule {
		match self.aggregation {
			Rule::TrimmedMean { trim } => {
				Rule::TrimmedMean { trim: trim.min(n.saturating_sub(1) / 2) }
			}
			rule => rule,
		}
	}

	/// Loads the dataset from the shipped files, checking the model fits it.
	pub fn dataset(&self) -> Result<Dataset> {
		let (d, m) = (self.dataset, self.model);
		if !d.fits(&m) {
			return Err(Error::Config(format!("model {m:?} cannot train on dataset {d:?}")));
		}
		match (d, m) {
			(DatasetName::Shakespeare, ModelConfig::Gpt { context, .. }) => {
				let hash = parse_hash(SHAKESPEARE_HASH)?;
				let path = shipped_dir().join("shakespeare.txt");
				Ok(Dataset::Text(TextDataset::load(&path, Some(&hash), context as usize)?))
			}
			_ => Ok(Dataset::Mnist(MnistDataset::shipped()?)),
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	const GOOD: &str = r#"
		name = "t1"
		key_seed = "trainer-1"
		data_dir = "t1"
		bootstrap = []

		[job]
		id = 1
		rounds = 5
		dataset = "mnist"
		model = { kind = "mlp", hidden = 32, layers = 1 }
		batch_size = 32
		lr = 0.002
		compression = { scheme = "int8", chunk = 64 }
		aggregation = { rule = "trimmed-mean", trim = 1 }

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
		assert_eq!(c.job.rule(2), Rule::TrimmedMean { trim: 0 });
		assert_eq!(c.job.rule(5), Rule::TrimmedMean { trim: 1 });
		assert!(matches!(c.job.model_spec(), ModelSpec::MnistMlp(_)));

		let cases = [
			(GOOD.replace("lr = 0.002", "lr = -1.0"), "job.lr"),
			(GOOD.replace("period_ms = 3000", "period_ms = 100"), "period_ms"),
			(GOOD.replace("batch_size = 32", "batch_size = 32\nfoo = 1"), "unknown field"),
			(GOOD.replace("\"mlp\"", "\"rnn\""), "unknown variant"),
		];
		for (text, expected) in cases {
			std::fs::write(&path, text).unwrap();
			let err = TrainerConfig::load(&path).unwrap_err().to_string();
			assert!(err.contains(expected), "{expected}: {err}");
		}
		let mut c: TrainerConfig = toml::from_str(GOOD).unwrap();
		c.job.dataset = DatasetName::Shakespeare;
		let err = c.job.dataset().err().expect("GPT-less Shakespeare must fail").to_string();
		assert!(err.contains("cannot train"), "{err}");
	}
}
