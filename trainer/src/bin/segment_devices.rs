//! A round trained on one device, checked on the CPU as a verifier without a GPU would
//! (`bench/segment_devices.sh`): every one-step segment of the recorded trajectory redone on
//! the CPU and judged ([`judge_segment`]), the same steps redone on another seed's batches
//! (what training on other data looks like to the same check), and the whole round replayed
//! on the CPU and judged against the update the device's round gave. On a GPU the round
//! trains in bf16 with f32 master weights; on the CPU in f32: this measures whether a CPU
//! verifier clears a GPU provider's honest steps (cosine ≥ 0.95) and still refuses other
//! data. On a CPU-only build it measures the CPU against itself (bit for bit).
//!
//! `segment_devices --out DIR [--device auto|cpu|cuda:N] [--steps 30]` (two rounds of
//! `steps`, the second recorded and checked) writes
//! `DIR/segment_devices.json`: per model (a small GPT on Shakespeare, the MNIST MLP), each
//! segment's gradient and parameter cosines, honest and other data, and the full replay's.

use std::{path::PathBuf, sync::Arc};

use candle_core::Device;
use grid_primitives::{
	job::{Compression, GptConfig, InnerOptimizer, MlpConfig, ModelSpec, Nanos},
	Hash,
};
use grid_trainer::{
	compress::{adaptive::compress_once, Layout},
	data::{self, batch_indices, Dataset, MnistDataset},
	device::DeviceChoice,
	diloco::{train_round, train_round_observed},
	train::{InnerConfig, InnerTrainer},
	trajectory::StepState,
	verify::{judge_segment, Claim, Replayer},
};
use serde_json::json;

type Failure = Box<dyn std::error::Error>;

/// Trains on `--device`, checks on the CPU, writes `--out/segment_devices.json`.
#[derive(clap::Parser)]
struct Args {
	/// Where the JSON goes.
	#[arg(long)]
	out: PathBuf,
	/// Where the rounds train: auto (the GPU if there is one), cpu, cuda or cuda:N.
	#[arg(long, default_value = "auto")]
	device: DeviceChoice,
	/// Inner steps a round.
	#[arg(long, default_value_t = 30)]
	steps: u32,
}

fn main() -> Result<(), Failure> {
	grid_trainer::malloc::retain_freed_memory();
	let Args { out, device, steps } = clap::Parser::parse();
	let dev = grid_trainer::device::select(device)?;
	let gpt = GptConfig { vocab: 256, context: 128, layers: 4, heads: 4, width: 256 };
	let models = [
		("gpt", ModelSpec::Gpt(gpt), Arc::new(Dataset::Tokens(data::shakespeare(128)?)), 16),
		(
			"mlp",
			ModelSpec::MnistMlp(MlpConfig { hidden: 64, layers: 1 }),
			Arc::new(Dataset::Mnist(MnistDataset::shipped()?)),
			32,
		),
	];
	let mut results = serde_json::Map::new();
	for (name, spec, dataset, batch) in models {
		let found = measure(spec, dataset, batch, &dev, steps)?;
		eprintln!("{name}: {found}");
		results.insert(name.into(), found);
	}
	let report = json!({ "device": format!("{dev:?}"), "steps": steps, "models": results });
	std::fs::create_dir_all(&out)?;
	let path = out.join("segment_devices.json");
	std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")?;
	println!("wrote {}", path.display());
	Ok(())
}

/// Trains a warm-up round and a recorded round of `steps` on `dev`; checks the recorded one
/// on the CPU.
fn measure(
	spec: ModelSpec,
	dataset: Arc<Dataset>,
	batch: u64,
	dev: &Device,
	steps: u32,
) -> Result<serde_json::Value, Failure> {
	let inner =
		InnerOptimizer::AdamW { lr: Nanos(1_000_000), weight_decay: Nanos(0), warmup_steps: 0 };
	let config = InnerConfig { total_steps: u64::from(4 * steps), ..Default::default() };
	let cpu = Replayer {
		spec,
		layout: Layout::of_spec(spec)?,
		inner,
		config,
		batch_size: batch,
		error_decay: 0.9,
		max_steps: Some(steps),
		catch_up: None,
		dataset: dataset.clone(),
		device: Device::Cpu,
	};
	let batches = |seed: Hash| {
		let data = dataset.clone();
		let dev = dev.clone();
		(0..u64::from(steps))
			.map(move |i| data.train_batch(&batch_indices(&seed, i, batch, data.train_len()), &dev))
	};
	let mut trainer = InnerTrainer::new(spec, b"segment-devices", dev, &inner, config)?;
	let init = trainer.model().params().flatten()?;
	// A first round, so that the recorded one starts with moments and a step count, from
	// where that round ended (as if the round's aggregate were this trainer's alone): at the
	// initial weights every batch's gradient points much the same way.
	train_round(&mut trainer, &init, batches(Hash::repeat_byte(1)))?;
	let base = trainer.model().params().flatten()?;
	let start = trainer.snapshot(vec![0.0; base.len()])?;
	let (seed, other) = (Hash::repeat_byte(2), Hash::repeat_byte(3));
	let mut states: Vec<StepState> = Vec::new();
	let local = train_round_observed(&mut trainer, &base, batches(seed), |_, t| {
		states.push(t.state()?);
		Ok(())
	})?;
	let (mut honest, mut wrong) = (Vec::new(), Vec::new());
	for k in 0..steps {
		let (from, to) = (&states[k as usize], &states[k as usize + 1]);
		for (on, into) in [(seed, &mut honest), (other, &mut wrong)] {
			let replayed = cpu.replay_segment(from, &on, k, 1, None)?;
			let j = judge_segment(from.view(), to.view(), replayed.view());
			into.push(json!({
				"step": k,
				"valid": j.verdict == grid_primitives::work::Verdict::Valid,
				"gradient_cosine": j.gradient_cosine,
				"param_cosine": j.param_cosine,
			}));
		}
	}
	let sent = compress_once(&Compression::None, &Layout::flat(local.delta.len()), &local.delta)?;
	let claim = Claim {
		base: Arc::new(base),
		start: Arc::new(start),
		sent: Arc::new(sent),
		seed,
		steps,
		from: None,
	};
	let full = cpu.judge(&claim)?;
	Ok(json!({
		"parameters": claim.base.len(),
		"segments": honest,
		"other_data_segments": wrong,
		"full_replay": {
			"valid": full.verdict == grid_primitives::work::Verdict::Valid,
			"cosine": full.cosine,
			"norm_ratio": full.norm_ratio,
		},
	}))
}
