//! Job specs as the daemon meets them: the buyer's job file (the chain's `JobSpec` in its one
//! `serde` form, see `examples/`) and the job a provider trains for a spec on chain.

use std::path::Path;

use grid_primitives::{
	job::{Admission, JobId, JobSpec, MaxAllowlist},
	time::CHALLENGE_VOTING_PERIOD,
};
use polkadot_sdk::{
	sp_core::Get,
	sp_runtime::{BoundedVec, Perbill},
};

use crate::{
	chain::AccountId,
	daemon::config::{JobConfig, DEFAULT_TOTAL_STEPS},
	data,
	error::{Error, Result},
	round::{
		decide::{CHAIN_AGGREGATION, CHAIN_SCREEN_RATIO},
		fraud::challengeable_rounds,
	},
};

/// A buyer's job file: the chain's spec, and who may join (an optional `[admission]` table).
#[derive(Clone, Debug, PartialEq)]
pub struct JobFile {
	/// The spec.
	pub spec: JobSpec<u128, u32>,
	/// The admission rules (the default admits every eligible provider).
	pub admission: Admission<AccountId, u32>,
}

/// The `[admission]` table of a job file.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct AdmissionTable {
	/// Lowest health score, a fraction.
	#[serde(default)]
	min_health: f64,
	/// Blocks a joiner must have been registered.
	#[serde(default)]
	min_age_blocks: u32,
	/// SS58 addresses of the only accounts that may join.
	#[serde(default)]
	allowlist: Vec<String>,
}

impl AdmissionTable {
	fn admission(self) -> std::result::Result<Admission<AccountId, u32>, String> {
		if !(0.0..=1.0).contains(&self.min_health) {
			return Err(format!("min_health {} is not a fraction in [0, 1]", self.min_health));
		}
		let most = <MaxAllowlist as Get<u32>>::get() as usize;
		if self.allowlist.len() > most {
			return Err(format!("{} accounts listed; at most {most}", self.allowlist.len()));
		}
		let allowlist = self
			.allowlist
			.iter()
			.map(|a| a.parse().map_err(|e| format!("allowlist entry {a:?}: {e}")))
			.collect::<std::result::Result<Vec<AccountId>, _>>()?;
		Ok(Admission {
			min_health: Perbill::from_float(self.min_health),
			min_age: self.min_age_blocks,
			allowlist: BoundedVec::truncate_from(allowlist),
		})
	}
}

/// Reads a buyer's job file. The chain checks the spec again against its limits.
pub fn load_job_file(path: &Path) -> Result<JobFile> {
	let bad = |e: String| Error::Config(format!("{}: {e}", path.display()));
	let text = std::fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))?;
	let mut table: toml::Table = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
	// The spec is read from the text (its errors then quote the line), less the table.
	let (admission, spec_text) = match table.remove("admission") {
		Some(value) => {
			let admission: AdmissionTable =
				value.try_into().map_err(|e| bad(format!("[admission]: {e}")))?;
			(admission, toml::to_string(&table).map_err(|e| bad(e.to_string()))?)
		}
		None => (AdmissionTable::default(), text),
	};
	let spec = toml::from_str(&spec_text).map_err(|e| bad(e.to_string()))?;
	let admission = admission.admission().map_err(|e| bad(format!("[admission]: {e}")))?;
	Ok(JobFile { spec, admission })
}

/// What the trainer runs for job `id` of the chain: the spec's model, data and
/// hyper-parameters, the protocol's aggregation, and the provider's local choices. Refuses
/// specs this trainer cannot run: a model outside the spec rules (checked again here, so a
/// chain with weaker rules cannot hand it one it cannot build), a dataset source it cannot
/// read, or a shipped dataset the model cannot read (other data is checked once fetched).
pub fn chain_job(
	id: JobId,
	spec: &JobSpec<u128, u32>,
	eval_samples: usize,
	max_steps: Option<u32>,
) -> Result<JobConfig> {
	spec.model.validate().map_err(|e| Error::Config(format!("model {:?}: {e:?}", spec.model)))?;
	data::check(&spec.dataset, &spec.model)?;
	if let Some(weights) = &spec.initial_weights {
		data::source(weights)?;
	}
	Ok(JobConfig {
		id,
		rounds: spec.rounds,
		dataset: spec.dataset.clone(),
		model: spec.model,
		training: spec.training,
		total_steps: schedule_steps(spec),
		adaptive_compression: true,
		aggregation: CHAIN_AGGREGATION,
		screen_ratio: Some(CHAIN_SCREEN_RATIO),
		own_max_steps: max_steps,
		eval_samples,
		evidence_rounds: challengeable_rounds(
			spec.challenge_window,
			CHALLENGE_VOTING_PERIOD,
			spec.training.round_blocks,
		),
		initial_weights: spec.initial_weights.clone(),
		// Each round's members come from the chain (`ChainCoordinator::roster`).
		members: None,
	})
}

/// Inner steps over which a chain job's learning rate decays: the job's whole length when its
/// rounds are capped (`rounds × max_steps`, so a short job ends at its floor rate as the
/// benchmarks' runs do), otherwise [`DEFAULT_TOTAL_STEPS`] (a round's steps then depend on each
/// provider's speed, so no length is known in advance). Every member and verifier of the job
/// derives it from the spec alone: replays recompute each step's rate from it.
pub fn schedule_steps(spec: &JobSpec<u128, u32>) -> u64 {
	match spec.training.max_steps {
		Some(most) => u64::from(spec.rounds) * u64::from(most),
		None => DEFAULT_TOTAL_STEPS,
	}
}

#[cfg(test)]
mod tests {
	use grid_primitives::{
		currency::UNIT,
		datasets::{ShippedDataset, MNIST, SHIPPED},
		job::{CnnConfig, DatasetRef, GptConfig, InnerOptimizer, MlpConfig, ModelSpec, Nanos},
		provider::BoundedBytes,
		Hash,
	};

	use super::*;
	use crate::compress::Layout;

	const JOB: &str = include_str!("../../../examples/shakespeare-job.toml");

	fn job_file(text: &str) -> Result<JobSpec<u128, u32>> {
		admitted(text).map(|file| file.spec)
	}

	fn admitted(text: &str) -> Result<JobFile> {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("job.toml");
		std::fs::write(&path, text).unwrap();
		load_job_file(&path)
	}

	#[test]
	fn a_providers_own_step_cap_paces_its_training_and_never_judges_others() {
		let mut spec = job_file(JOB).unwrap();
		let batch = u64::from(spec.training.batch_size);
		// Uncapped job, provider capped at 10: it trains 10 steps, and accepts a peer's 50.
		let job = chain_job(0, &spec, 0, Some(10)).unwrap();
		assert_eq!(job.train_cap(), Some(10));
		assert!(job.claim_rule(&Layout::flat(1)).allows_work(50 * batch, 50));
		// A job capped at 40: claims of 40 pass and of 41 do not, for a provider capped at
		// 10 and one capped above the job alike.
		spec.training.max_steps = Some(40);
		for own in [Some(10), Some(100), None] {
			let job = chain_job(0, &spec, 0, own).unwrap();
			assert!(job.claim_rule(&Layout::flat(1)).allows_work(40 * batch, 40), "{own:?}");
			assert!(!job.claim_rule(&Layout::flat(1)).allows_work(41 * batch, 41), "{own:?}");
			assert_eq!(job.train_cap(), Some(own.unwrap_or(40).min(40)));
		}
	}

	#[test]
	fn a_job_file_may_name_admission_rules_and_bad_ones_say_why() {
		assert_eq!(admitted(JOB).unwrap().admission, Admission::default());
		let alice = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY";
		let rules = format!(
			"{JOB}\n[admission]\nmin_health = 0.8\nmin_age_blocks = 600\nallowlist = [\"{alice}\"]\n"
		);
		let file = admitted(&rules).unwrap();
		assert_eq!(file.spec, job_file(JOB).unwrap(), "the spec reads the same");
		assert_eq!(file.admission.min_health, Perbill::from_percent(80));
		assert_eq!(file.admission.min_age, 600);
		assert_eq!(file.admission.allowlist.to_vec(), vec![alice.parse::<AccountId>().unwrap()]);
		for (bad, why) in [
			("min_health = 1.5", "min_health 1.5"),
			("allowlist = [\"5Grw\"]", "allowlist entry \"5Grw\""),
			("max_age = 3", "max_age"),
		] {
			let err = admitted(&format!("{JOB}\n[admission]\n{bad}\n")).unwrap_err().to_string();
			assert!(err.contains(why) && err.contains("[admission]"), "{err}");
		}
	}

	#[test]
	fn a_job_file_round_trips_through_the_chain_spec() {
		let spec = job_file(JOB).unwrap();
		assert_eq!(spec.reward_per_round, 30 * UNIT);
		assert_eq!(spec.training.outer_momentum, Nanos(500_000_000));
		let config = chain_job(7, &spec, 100, None).unwrap();
		assert_eq!(config.id, 7);
		assert_eq!(config.dataset, spec.dataset);
		assert_eq!(config.model, spec.model);
		assert_eq!(config.training, spec.training);
		assert!((config.training.inner.lr().to_f64() - 0.003).abs() < 1e-12);
		assert_eq!(config.aggregation, CHAIN_AGGREGATION);
		assert_eq!(config.total_steps, DEFAULT_TOTAL_STEPS, "uncapped: no length known");
	}

	#[test]
	fn a_capped_jobs_learning_rate_decays_over_the_whole_job() {
		let mut spec = job_file(JOB).unwrap();
		spec.training.max_steps = Some(200);
		let config = chain_job(0, &spec, 0, Some(50)).unwrap();
		assert_eq!(config.total_steps, u64::from(spec.rounds) * 200, "the job's, not the own cap");
		let inner = config.inner_config();
		let InnerOptimizer::AdamW { warmup_steps, .. } = spec.training.inner else { panic!() };
		let schedule = crate::optim::Schedule {
			peak: spec.training.inner.lr().to_f64(),
			warmup: u64::from(warmup_steps),
			total: inner.total_steps,
			min_ratio: inner.min_lr_ratio,
		};
		// The last step of the last round trains at (about) the floor, not near the peak.
		let last = schedule.lr(config.total_steps - 1) / schedule.peak;
		assert!((last - inner.min_lr_ratio).abs() < 1e-3, "{last}");
	}

	#[test]
	fn specs_this_trainer_cannot_run_are_refused_with_the_reason() {
		let good = job_file(JOB).unwrap();
		let mut spec = good.clone();
		spec.dataset.uri = BoundedBytes::truncate_from(b"ipfs://Qm".to_vec());
		let err = chain_job(0, &spec, 0, None).unwrap_err().to_string();
		assert!(err.contains("ipfs://Qm"), "{err}");

		let mut spec = good.clone();
		spec.dataset.content_hash = Hash::repeat_byte(1);
		let err = chain_job(0, &spec, 0, None).unwrap_err().to_string();
		assert!(err.contains("not shipped shakespeare's"), "{err}");

		let mut spec = good.clone();
		spec.dataset = MNIST.reference();
		let err = chain_job(0, &spec, 0, None).unwrap_err().to_string();
		assert!(err.contains("cannot train"), "{err}");

		let mut spec = good;
		spec.model = ModelSpec::Gpt(GptConfig {
			vocab: 50_257,
			context: 64,
			layers: 2,
			heads: 4,
			width: 64,
		});
		let err = chain_job(0, &spec, 0, None).unwrap_err().to_string();
		assert!(err.contains("cannot train"), "{err}");

		let err = job_file(&JOB.replace("lr = 0.003", "lr = -1.0")).unwrap_err().to_string();
		assert!(err.contains("lr = -1"), "{err}");
		let bad = JOB.replace("reward_per_round = 30", "reward_per_round = -3.0");
		let err = job_file(&bad).unwrap_err().to_string();
		assert!(err.contains("reward_per_round"), "{err}");
		let err = load_job_file(Path::new("/nonexistent/job.toml")).unwrap_err().to_string();
		assert!(err.contains("/nonexistent/job.toml"), "{err}");
	}

	#[test]
	fn the_transformer_example_job_is_one_this_trainer_runs() {
		let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/llama-job.toml");
		let spec = load_job_file(&path).unwrap().spec;
		let ModelSpec::Transformer(c) = spec.model else { panic!("{:?}", spec.model) };
		assert_eq!((c.heads, c.kv_heads, c.tied_embeddings), (4, 2, true));
		chain_job(0, &spec, 0, None).unwrap();
		// A knob misspelled or missing is refused with its name.
		let text = std::fs::read_to_string(&path).unwrap();
		for (from, to, expected) in [
			("norm = \"rmsnorm\"", "norm = \"batchnorm\"", "unknown variant `batchnorm`"),
			("kv_heads = 2\n", "", "missing field `kv_heads`"),
		] {
			let err = admitted(&text.replace(from, to)).err().unwrap().to_string();
			assert!(err.contains(expected), "{expected}: {err}");
		}
	}

	/// The main job's file, with the dataset line `local-network.sh` puts in (the buyer's
	/// published BPE text), and with initial weights too.
	#[test]
	fn the_main_example_job_runs_once_its_dataset_is_filled_in() {
		let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/llama-bpe-job.toml");
		let text = std::fs::read_to_string(path).unwrap();
		let published = "dataset = { uri = \"/ip4/127.0.0.1/tcp/1/p2p/12D3KooWRn7631sbaAbbnj18JWZYC7jBny5QHovn3N1RhW6pYwVi\", content_hash = \"0x0b019e89d2c5f5b8f2b75797ecdf81dc1e48ea7504b61dcddf695c99e10a29b6\" }";
		let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("dataset = ")).collect();
		let filled = format!("{published}\n{}", lines.join("\n"));
		let spec = admitted(&filled).unwrap().spec;
		let ModelSpec::Transformer(c) = spec.model else { panic!("{:?}", spec.model) };
		assert_eq!(c.vocab, 512);
		assert_eq!(spec.initial_weights, None);
		chain_job(0, &spec, 0, None).unwrap();
		let weights = published.replacen("dataset", "initial_weights", 1);
		let tuned =
			admitted(&format!("{published}\n{weights}\n{}", lines.join("\n"))).unwrap().spec;
		assert_eq!(tuned.initial_weights.as_ref(), Some(&spec.dataset));
		assert_eq!(chain_job(0, &tuned, 0, None).unwrap().initial_weights, Some(spec.dataset));
		// The file as shipped names no data: no trainer runs it until the line is filled in.
		let err = chain_job(0, &admitted(&text).unwrap().spec, 0, None).unwrap_err().to_string();
		assert!(err.contains("published at run time"), "{err}");
	}

	#[test]
	fn the_quick_example_job_is_one_this_trainer_runs() {
		let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mnist-job.toml");
		let spec = load_job_file(&path).unwrap().spec;
		assert_eq!(spec.dataset, MNIST.reference());
		chain_job(0, &spec, 0, None).unwrap();
	}

	#[test]
	fn the_resnet_example_job_is_one_this_trainer_runs() {
		let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/resnet-mnist-job.toml");
		let spec = load_job_file(&path).unwrap().spec;
		assert!(matches!(spec.model, ModelSpec::ResNet(c) if c.width == 8 && c.stages == 2));
		assert!(grid_primitives::datasets::MNIST.fits(&spec.model));
		chain_job(0, &spec, 0, None).unwrap();
	}

	/// What the web UI must agree with: the shipped datasets, which models fit which, the
	/// bound of each model dimension and the fixed-point rule for hyper-parameters (`null`:
	/// refused).
	fn web_ui_rules() -> serde_json::Value {
		let models = [
			("mlp", ModelSpec::MnistMlp(MlpConfig { hidden: 1, layers: 1 })),
			("cnn", ModelSpec::MnistCnn(CnnConfig { channels: 1, hidden: 1 })),
			(
				"resnet",
				ModelSpec::ResNet(grid_primitives::resnet::ResNetConfig {
					channels: 1,
					side: 28,
					classes: 10,
					width: 1,
					stages: 1,
					blocks: 1,
				}),
			),
			(
				"gpt",
				ModelSpec::Gpt(GptConfig { vocab: 256, context: 1, layers: 1, heads: 1, width: 1 }),
			),
			(
				"transformer",
				ModelSpec::Transformer(grid_primitives::job::TransformerConfig {
					vocab: 256,
					context: 1,
					layers: 1,
					width: 2,
					heads: 1,
					kv_heads: 1,
					mlp_width: 1,
					activation: grid_primitives::job::Activation::SwiGlu,
					norm: grid_primitives::job::Norm::RmsNorm,
					position: grid_primitives::job::Position::Rope,
					tied_embeddings: true,
				}),
			),
		];
		let mut datasets = serde_json::Map::new();
		let mut fits = serde_json::Map::new();
		for shipped in &SHIPPED {
			let hash = format!("0x{}", hex::encode(shipped.content_hash));
			let entry = serde_json::json!({ "uri": shipped.uri, "hash": hash });
			datasets.insert(shipped.name.into(), entry);
			let kinds: Vec<&str> =
				models.iter().filter(|(_, m)| shipped.fits(m)).map(|(kind, _)| *kind).collect();
			fits.insert(shipped.name.into(), serde_json::json!(kinds));
		}
		let samples = [0.0, 1e-9, 0.003, 0.0004, 0.7, 0.9, 1.0, 4.294967295, 4.3, -0.1, f64::NAN];
		let nanos: Vec<serde_json::Value> = samples
			.iter()
			.map(|&x| {
				let value =
					if x.is_nan() { serde_json::json!("NaN") } else { serde_json::json!(x) };
				serde_json::json!([value, Nanos::from_f64(x).map(|n| n.0)])
			})
			.collect();
		use grid_primitives::job::model_bounds::*;
		let model_bounds = serde_json::json!({
			"gptVocab": GPT_VOCAB,
			"gptContext": GPT_CONTEXT,
			"gptWidth": GPT_WIDTH,
			"layers": LAYERS,
			"hidden": HIDDEN,
			"cnnChannels": CNN_CHANNELS,
			"resnetChannels": grid_primitives::resnet::bounds::CHANNELS,
			"resnetSide": grid_primitives::resnet::bounds::SIDE,
			"resnetClasses": grid_primitives::resnet::bounds::CLASSES,
			"resnetWidth": grid_primitives::resnet::bounds::WIDTH,
			"resnetStages": grid_primitives::resnet::bounds::STAGES,
			"resnetBlocks": grid_primitives::resnet::bounds::BLOCKS,
		});
		// [audit rate, fraud slash (both in billionths), reward, the deterrent stake or null
		// without audits]; amounts as decimal strings (they pass 2^53).
		let deterrence: Vec<serde_json::Value> = [
			(10_000_000u32, 500_000_000u32, 30 * UNIT),
			(10_000_000, 500_000_000, 1),
			(30_000_000, 1_000_000_000, 1),
			(70_000_000, 330_000_000, 1_234_567_890_123),
			(0, 500_000_000, 5),
			(10_000_000, 0, 5),
			(10_000_000, 500_000_000, u128::MAX / 2),
		]
		.iter()
		.map(|&(q, slash, reward)| {
			let rule = grid_primitives::job::Deterrence {
				audit_rate: Perbill::from_parts(q),
				fraud_slash: Perbill::from_parts(slash),
			};
			let stake = rule.stake_for(reward).map(|s| s.to_string());
			serde_json::json!([q, slash, reward.to_string(), stake])
		})
		.collect();
		serde_json::json!({
			"datasets": datasets,
			"fits": fits,
			"model_bounds": model_bounds,
			"nanos": nanos,
			"deterrence": deterrence,
			"uris": uri_cases(),
			"exchange": exchange_cases(),
			"outer_defaults": outer_defaults(),
			"error_decay_default": grid_primitives::job::DEFAULT_ERROR_DECAY.0,
		})
	}

	/// `{scheme: [outer lr, outer momentum]}` (billionths) a job file that names no outer
	/// step gets: the web UI's form suggests the same when its compression changes.
	fn outer_defaults() -> serde_json::Value {
		use grid_primitives::job::Compression;
		let schemes = [
			("none", Compression::None),
			("int8", Compression::Int8 { chunk: 256 }),
			("topk", Compression::TopK { chunk: 256, k: 32, value_bits: 1 }),
			("tiles", Compression::Tiles { k: 64 }),
		];
		let map: serde_json::Map<String, serde_json::Value> = schemes
			.iter()
			.map(|(name, c)| {
				let o = c.default_outer_step();
				(name.to_string(), serde_json::json!([o.lr.0, o.momentum.0]))
			})
			.collect();
		map.into()
	}

	/// The job's exchange as the chain checks it (`JobSpec::validate`): the default window,
	/// and `[round blocks, grace ms, fetch ms, whether it is allowed]` around the bound of
	/// half the round, for the web UI's form to take and refuse alike.
	fn exchange_cases() -> serde_json::Value {
		use grid_primitives::job::{Deterrence, ExchangeWindow, SpecError, SpecLimits, MIN_FAN_IN};
		let limits = SpecLimits {
			max_rounds: u32::MAX,
			max_participants: 64,
			min_round_blocks: 2,
			max_round_blocks: u32::MAX,
			max_challenge_window: u32::MAX,
			max_job_blocks: u32::MAX,
			min_verifiable_providers: 0,
			deterrence: Deterrence { audit_rate: Perbill::zero(), fraud_slash: Perbill::zero() },
		};
		let mut spec = job_file(JOB).unwrap();
		spec.challenge_window = 0;
		let cases: Vec<serde_json::Value> = [
			(2, 2_000, 4_000),
			(2, 2_000, 4_002),
			(2, 2_001, 4_000),
			(5, 1_500, 4_000),
			(5, 7_500, 0),
		]
		.into_iter()
		.chain([(5, 0, 4_000), (10, 10_000, 20_000), (10, 10_000, 20_002)])
		.map(|(blocks, grace_ms, fetch_ms)| {
			spec.training.round_blocks = blocks;
			spec.training.exchange = ExchangeWindow { grace_ms, fetch_ms, fan_in: None };
			let verdict = spec.validate(&limits);
			assert!(
				matches!(
					verdict,
					Ok(()) | Err(SpecError::BadExchange | SpecError::ExchangeOverHalfTheRound)
				),
				"{verdict:?}"
			);
			serde_json::json!([blocks, grace_ms, fetch_ms, verdict.is_ok()])
		})
		.collect();
		let default = ExchangeWindow::default();
		let fan_in: Vec<serde_json::Value> =
			[None, Some(0), Some(MIN_FAN_IN - 1), Some(MIN_FAN_IN), Some(64)]
				.into_iter()
				.map(|fan_in| {
					spec.training.round_blocks = 5;
					spec.training.exchange = ExchangeWindow { fan_in, ..default };
					serde_json::json!([fan_in, spec.validate(&limits).is_ok()])
				})
				.collect();
		serde_json::json!({
			"default": [default.grace_ms, default.fetch_ms],
			"cases": cases,
			"fan_in": fan_in,
		})
	}

	/// `[uri, whether the trainers read it]` for dataset URIs of every kind, good and bad, as
	/// `data::source` reads them (a `grid:` URI under its own dataset's reference): the web
	/// UI's form must take and refuse the same.
	fn uri_cases() -> Vec<serde_json::Value> {
		let peer = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN";
		let holder = format!("/ip4/127.0.0.1/tcp/4001/p2p/{peer}");
		let uris = [
			"grid:shakespeare".to_string(),
			"grid:mnist".into(),
			"grid:imagenet".into(),
			"grid:".into(),
			"file:///srv/data".into(),
			"file://".into(),
			"http://example.org/data.bin".into(),
			"https://example.org/data.bin".into(),
			"http://".into(),
			"https://".into(),
			holder.clone(),
			format!("{holder} /ip4/10.0.0.2/tcp/4001/p2p/{peer}"),
			format!("{holder},/ip6/::1/tcp/4001/p2p/{peer}"),
			"/ip4/127.0.0.1/tcp/4001".into(),
			format!("/ip4/999.0.0.1/tcp/4001/p2p/{peer}"),
			format!("/ip4/127.0.0.1/tcp/99999/p2p/{peer}"),
			"/ip4/127.0.0.1/tcp/4001/p2p/0OIl".into(),
			format!("/dns4/holder.example/tcp/4001/p2p/{peer}"),
			format!("{holder} data.bin"),
			"ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG".into(),
			"s3://bucket/data.bin".into(),
			"data.bin".into(),
			"".into(),
		];
		uris.iter()
			.map(|uri| {
				let hash = ShippedDataset::at(uri.as_bytes())
					.map_or(Hash::repeat_byte(1), |d| Hash::from(d.content_hash));
				let reference = DatasetRef {
					content_hash: hash,
					uri: BoundedBytes::truncate_from(uri.as_bytes().to_vec()),
				};
				serde_json::json!([uri, crate::data::source(&reference).is_ok()])
			})
			.collect()
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
