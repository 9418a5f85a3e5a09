//! Job specs between the chain's form (`grid_primitives::job::JobSpec`, fixed point, block
//! counts) and the trainer's (`config::JobConfig`), and the buyer's job file (TOML).

use std::path::Path;

use grid_primitives::{
	currency::UNIT,
	job::{DatasetRef, JobId, JobSpec, ModelSpec, Nanos, TrainingParams},
	provider::BoundedBytes,
	Hash,
};
use serde::Deserialize;

use super::{ChainError, Result};
use crate::{
	config::{CompressionConfig, DatasetName, JobConfig, ModelConfig, OptimizerKind},
	data::{parse_hash, MNIST_TRAIN_IMAGES_HASH, SHAKESPEARE_HASH},
	round::decide::{CHAIN_AGGREGATION, CHAIN_SCREEN_RATIO},
};

const MNIST_URI: &str = "grid:mnist";
const SHAKESPEARE_URI: &str = "grid:shakespeare";

fn spec_error(what: impl std::fmt::Display) -> ChainError {
	ChainError::Spec(what.to_string())
}

/// The on-chain reference of a shipped dataset: its `grid:` name and content hash (for
/// MNIST, of the training images file).
pub fn dataset_ref(name: DatasetName) -> DatasetRef {
	let (uri, hash) = match name {
		DatasetName::Mnist => (MNIST_URI, MNIST_TRAIN_IMAGES_HASH),
		DatasetName::Shakespeare => (SHAKESPEARE_URI, SHAKESPEARE_HASH),
	};
	DatasetRef {
		content_hash: Hash::from(parse_hash(hash).expect("shipped hashes are valid")),
		uri: BoundedBytes::truncate_from(uri.as_bytes().to_vec()),
	}
}

/// The shipped dataset a reference names; anything else (another URI, or a hash that is not
/// the shipped file's) cannot be trained here.
pub fn dataset_name(dataset: &DatasetRef) -> Result<DatasetName> {
	let uri = String::from_utf8_lossy(&dataset.uri);
	let name = match uri.as_ref() {
		MNIST_URI => DatasetName::Mnist,
		SHAKESPEARE_URI => DatasetName::Shakespeare,
		other => {
			return Err(spec_error(format!("dataset {other:?} is not one this trainer ships")))
		}
	};
	if dataset_ref(name).content_hash != dataset.content_hash {
		return Err(spec_error(format!(
			"dataset {uri}: content hash {:?} is not the shipped file's",
			dataset.content_hash
		)));
	}
	Ok(name)
}

fn model_config(model: &ModelSpec) -> Result<ModelConfig> {
	Ok(match *model {
		ModelSpec::MnistMlp(c) => ModelConfig::Mlp { hidden: c.hidden, layers: c.layers },
		ModelSpec::MnistCnn(c) => ModelConfig::Cnn { channels: c.channels, hidden: c.hidden },
		ModelSpec::Gpt(c) if c.vocab == 256 => ModelConfig::Gpt {
			context: c.context,
			layers: c.layers,
			heads: c.heads,
			width: c.width,
		},
		ModelSpec::Gpt(c) => {
			return Err(spec_error(format!("a GPT over {} tokens (only bytes: 256)", c.vocab)))
		}
	})
}

fn compression_config(c: grid_primitives::job::Compression) -> CompressionConfig {
	use grid_primitives::job::Compression;
	match c {
		Compression::None => CompressionConfig::None,
		Compression::Int8 { chunk } => CompressionConfig::Int8 { chunk },
		Compression::TopK { chunk, k, value_bits } => {
			CompressionConfig::Topk { chunk, k, value_bits }
		}
	}
}

/// What the trainer runs for job `id` of the chain: the spec's model, data and
/// hyper-parameters, the protocol's aggregation, and the provider's local choices.
pub fn job_config(
	id: JobId,
	spec: &JobSpec<u128, u32>,
	eval_samples: usize,
	max_steps: Option<u32>,
) -> Result<JobConfig> {
	use grid_primitives::job::InnerOptimizer;
	let (optimizer, lr, weight_decay, warmup_steps) = match spec.training.inner {
		InnerOptimizer::AdamW { lr, weight_decay, warmup_steps } => {
			(OptimizerKind::Adamw, lr, weight_decay, warmup_steps)
		}
		InnerOptimizer::Sgd { lr } => (OptimizerKind::Sgd, lr, Nanos(0), 0),
	};
	let config = JobConfig {
		id,
		rounds: spec.rounds,
		dataset: dataset_name(&spec.dataset)?,
		model: model_config(&spec.model)?,
		batch_size: spec.training.batch_size,
		optimizer,
		lr: lr.to_f64(),
		warmup_steps,
		weight_decay: weight_decay.to_f64(),
		total_steps: 10_000,
		outer_lr: spec.training.outer_lr.to_f64(),
		outer_momentum: spec.training.outer_momentum.to_f64(),
		compression: compression_config(spec.training.compression),
		adaptive_compression: true,
		aggregation: CHAIN_AGGREGATION,
		screen_ratio: Some(CHAIN_SCREEN_RATIO),
		max_steps,
		eval_samples,
	};
	let (d, m) = (config.dataset, config.model);
	if !d.fits(&m) {
		return Err(spec_error(format!("model {m:?} cannot train on dataset {d:?}")));
	}
	Ok(config)
}

/// A buyer's job file: what to train, for how long, and what it pays (amounts in GRID).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobFile {
	/// Shipped dataset.
	pub dataset: DatasetName,
	/// Model.
	pub model: ModelConfig,
	/// Rounds to train.
	pub rounds: u32,
	/// Round length in blocks (6 s each).
	pub round_blocks: u32,
	/// Samples per inner step.
	pub batch_size: u32,
	/// Inner optimizer.
	#[serde(default)]
	pub optimizer: OptimizerKind,
	/// Inner (peak) learning rate.
	pub lr: f64,
	/// Inner warm-up steps.
	#[serde(default)]
	pub warmup_steps: u32,
	/// Inner weight decay.
	#[serde(default)]
	pub weight_decay: f64,
	/// Outer learning rate.
	#[serde(default = "outer_lr")]
	pub outer_lr: f64,
	/// Outer momentum.
	#[serde(default = "outer_momentum")]
	pub outer_momentum: f64,
	/// Compression.
	pub compression: CompressionConfig,
	/// Paid per round, in GRID.
	pub reward_per_round: f64,
	/// Participants needed to start.
	pub min_providers: u32,
	/// Most participants.
	pub max_providers: u32,
	/// Stake a participant needs, in GRID.
	pub min_provider_stake: f64,
	/// Blocks after a round during which contributions can be challenged.
	#[serde(default)]
	pub challenge_window: u32,
}

fn outer_lr() -> f64 {
	0.7
}
fn outer_momentum() -> f64 {
	0.9
}

/// A fraction as the chain's fixed point, refusing values it cannot hold.
fn nanos(what: &str, x: f64) -> Result<Nanos> {
	let n = (x * 1e9).round();
	if !(x.is_finite() && x >= 0.0 && n <= f64::from(u32::MAX)) {
		return Err(spec_error(format!("{what} = {x} is outside [0, 4.29]")));
	}
	Ok(Nanos(n as u32))
}

/// GRID as the chain's smallest units.
pub fn grid_units(what: &str, grid: f64) -> Result<u128> {
	let units = grid * UNIT as f64;
	if !(grid.is_finite() && grid >= 0.0 && units < u128::MAX as f64) {
		return Err(spec_error(format!("{what} = {grid} GRID is not a usable amount")));
	}
	Ok(units.round() as u128)
}

impl JobFile {
	/// Reads a job file.
	pub fn load(path: &Path) -> Result<Self> {
		let text = std::fs::read_to_string(path)
			.map_err(|e| spec_error(format!("reading {}: {e}", path.display())))?;
		toml::from_str(&text).map_err(|e| spec_error(format!("{}: {e}", path.display())))
	}

	/// The spec to post. The chain checks it again against its limits.
	pub fn to_spec(&self) -> Result<JobSpec<u128, u32>> {
		use grid_primitives::job::InnerOptimizer;
		let lr = nanos("lr", self.lr)?;
		let inner = match self.optimizer {
			OptimizerKind::Adamw => InnerOptimizer::AdamW {
				lr,
				weight_decay: nanos("weight_decay", self.weight_decay)?,
				warmup_steps: self.warmup_steps,
			},
			OptimizerKind::Sgd => InnerOptimizer::Sgd { lr },
		};
		let model = JobConfig::model_spec_of(self.model);
		Ok(JobSpec {
			model,
			dataset: dataset_ref(self.dataset),
			training: TrainingParams {
				round_blocks: self.round_blocks,
				batch_size: self.batch_size,
				inner,
				outer_lr: nanos("outer_lr", self.outer_lr)?,
				outer_momentum: nanos("outer_momentum", self.outer_momentum)?,
				compression: crate::config::compression_of(self.compression),
			},
			rounds: self.rounds,
			reward_per_round: grid_units("reward_per_round", self.reward_per_round)?,
			min_providers: self.min_providers,
			max_providers: self.max_providers,
			min_provider_stake: grid_units("min_provider_stake", self.min_provider_stake)?,
			challenge_window: self.challenge_window,
		})
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	const JOB: &str = r#"
		dataset = "shakespeare"
		model = { kind = "gpt", context = 64, layers = 2, heads = 4, width = 64 }
		rounds = 5
		round_blocks = 10
		batch_size = 8
		lr = 0.001
		outer_momentum = 0.5
		compression = { scheme = "int8", chunk = 256 }
		reward_per_round = 10.5
		min_providers = 2
		max_providers = 4
		min_provider_stake = 100
	"#;

	#[test]
	fn a_job_file_round_trips_through_the_chain_spec() {
		let file: JobFile = toml::from_str(JOB).unwrap();
		let spec = file.to_spec().unwrap();
		assert_eq!(spec.reward_per_round, 10 * UNIT + UNIT / 2);
		assert_eq!(spec.training.outer_momentum, Nanos(500_000_000));
		let config = job_config(7, &spec, 100, None).unwrap();
		assert_eq!(config.id, 7);
		assert_eq!(config.dataset, DatasetName::Shakespeare);
		assert_eq!(config.model_spec(), spec.model);
		assert_eq!(config.compression(), spec.training.compression);
		assert_eq!(config.inner(), spec.training.inner);
		assert!((config.lr - 0.001).abs() < 1e-12);
	}

	#[test]
	fn specs_this_trainer_cannot_run_are_refused_with_the_reason() {
		let file: JobFile = toml::from_str(JOB).unwrap();
		let mut spec = file.to_spec().unwrap();
		spec.dataset.uri = BoundedBytes::truncate_from(b"ipfs://Qm".to_vec());
		let err = job_config(0, &spec, 0, None).unwrap_err().to_string();
		assert!(err.contains("ipfs://Qm"), "{err}");

		let mut spec = file.to_spec().unwrap();
		spec.dataset.content_hash = Hash::repeat_byte(1);
		let err = job_config(0, &spec, 0, None).unwrap_err().to_string();
		assert!(err.contains("content hash"), "{err}");

		let mut spec = file.to_spec().unwrap();
		spec.dataset = dataset_ref(DatasetName::Mnist);
		let err = job_config(0, &spec, 0, None).unwrap_err().to_string();
		assert!(err.contains("cannot train"), "{err}");

		let bad = JOB.replace("lr = 0.001", "lr = -1.0");
		let err = toml::from_str::<JobFile>(&bad).unwrap().to_spec().unwrap_err().to_string();
		assert!(err.contains("lr = -1"), "{err}");
		let bad = JOB.replace("reward_per_round = 10.5", "reward_per_round = -3.0");
		let err = toml::from_str::<JobFile>(&bad).unwrap().to_spec().unwrap_err().to_string();
		assert!(err.contains("reward_per_round"), "{err}");
	}

	/// What the web UI must agree with: the shipped datasets, which models fit which, and
	/// the fixed-point rule for hyper-parameters (`null`: refused).
	fn web_ui_rules() -> serde_json::Value {
		let models = [
			("mlp", ModelConfig::Mlp { hidden: 1, layers: 1 }),
			("cnn", ModelConfig::Cnn { channels: 1, hidden: 1 }),
			("gpt", ModelConfig::Gpt { context: 1, layers: 1, heads: 1, width: 1 }),
		];
		let mut datasets = serde_json::Map::new();
		let mut fits = serde_json::Map::new();
		for d in DatasetName::ALL {
			let r = dataset_ref(d);
			let uri = String::from_utf8(r.uri.to_vec()).unwrap();
			let hash = format!("0x{}", hex::encode(r.content_hash));
			datasets.insert(d.name().into(), serde_json::json!({ "uri": uri, "hash": hash }));
			let kinds: Vec<&str> =
				models.iter().filter(|(_, m)| d.fits(m)).map(|(kind, _)| *kind).collect();
			fits.insert(d.name().into(), serde_json::json!(kinds));
		}
		let samples = [0.0, 1e-9, 0.003, 0.0004, 0.7, 0.9, 1.0, 4.294967295, 4.3, -0.1, f64::NAN];
		let nanos: Vec<serde_json::Value> = samples
			.iter()
			.map(|&x| {
				let value =
					if x.is_nan() { serde_json::json!("NaN") } else { serde_json::json!(x) };
				serde_json::json!([value, nanos("x", x).ok().map(|n| n.0)])
			})
			.collect();
		serde_json::json!({ "datasets": datasets, "fits": fits, "nanos": nanos })
	}

	/// The web UI tests its job form against `frontend/src/lib/spec-rules.json`, which must
	/// be what the trainer says; `GRID_UPDATE_SPEC_RULES=1` rewrites it.
	#[test]
	fn the_web_uis_spec_rules_are_the_trainers() {
		let path =
			Path::new(env!("CARGO_MANIFEST_DIR")).join("../frontend/src/lib/spec-rules.json");
		let text = serde_json::to_string_pretty(&web_ui_rules()).unwrap() + "\n";
		if std::env::var_os("GRID_UPDATE_SPEC_RULES").is_some() {
			std::fs::write(&path, &text).unwrap();
		}
		let committed = std::fs::read_to_string(&path).unwrap_or_default();
		assert!(
			committed == text,
			"{} is stale: run this test with GRID_UPDATE_SPEC_RULES=1 and commit it",
			path.display()
		);
	}
}
