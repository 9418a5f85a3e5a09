//! Throughput of one full Candle training step of the GPT (forward, backward, gradient clip,
//! AdamW) on the CPU. Prints one JSON line; `bench/step_throughput.sh` runs it next to the
//! PyTorch reference (`bench/torch_ref/gpt.py`) of the same model and batch.
//!
//! `cargo run --release -p grid-trainer --bin bench_step -- [--layers 4 --heads 4 --width 128
//! --context 64 --vocab 256 --batch 12 --steps 30 --warmup 5]`
//! Threads: set `RAYON_NUM_THREADS` (candle's CPU kernels use rayon's pool).

use std::time::Instant;

use candle_core::{Device, Tensor};
use grid_primitives::job::{GptConfig, InnerOptimizer, ModelSpec, Nanos};
use grid_trainer::{
	model::Batch,
	rng::Rng,
	train::{InnerConfig, InnerTrainer},
};

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
	grid_trainer::malloc::retain_freed_memory();
	let mut opts = [
		("layers", 4usize),
		("heads", 4),
		("width", 128),
		("context", 64),
		("vocab", 256),
		("batch", 12),
		("steps", 30),
		("warmup", 5),
	];
	let args: Vec<String> = std::env::args().skip(1).collect();
	for pair in args.chunks(2) {
		let [k, v] = pair else { return Err(format!("{} needs a value", pair[0]).into()) };
		let slot = opts
			.iter_mut()
			.find(|(name, _)| *name == k.trim_start_matches("--"))
			.ok_or_else(|| format!("unknown option {k}"))?;
		slot.1 = v.parse()?;
	}
	let get = |name: &str| opts.iter().find(|(n, _)| *n == name).map(|o| o.1).unwrap_or(0);
	let config = GptConfig {
		vocab: get("vocab") as u32,
		context: get("context") as u32,
		layers: get("layers") as u16,
		heads: get("heads") as u16,
		width: get("width") as u32,
	};
	let (b, t) = (get("batch"), get("context"));
	let spec = ModelSpec::Gpt(config);
	let dev = Device::Cpu;
	let inner = InnerOptimizer::AdamW {
		lr: Nanos(1_000_000),
		weight_decay: Nanos(100_000_000),
		warmup_steps: 0,
	};
	let mut trainer = InnerTrainer::new(spec, b"bench-step", &dev, &inner, InnerConfig::default())?;
	let mut rng = Rng::new(1);
	let mut tokens =
		|| -> Vec<u32> { (0..b * t).map(|_| rng.below(u64::from(config.vocab)) as u32).collect() };
	let batch = Batch {
		inputs: Tensor::from_vec(tokens(), (b, t), &dev)?,
		targets: Tensor::from_vec(tokens(), (b, t), &dev)?,
	};
	for _ in 0..get("warmup") {
		trainer.step(&batch)?;
	}
	let mut times = Vec::new();
	let mut loss = 0.0;
	for _ in 0..get("steps") {
		let start = Instant::now();
		loss = trainer.step(&batch)?.loss;
		times.push(start.elapsed().as_secs_f64() * 1e3);
	}
	let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
	times.sort_by(f64::total_cmp);
	let median = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
	println!(
		"{{\"impl\": \"candle\", \"params\": {}, \"threads\": {}, \"batch\": {b}, \"context\": {t}, \"median_ms\": {median:.2}, \"mean_ms\": {mean:.2}, \"final_loss\": {loss:.4}}}",
		spec.parameters(),
		candle_core::utils::get_num_threads()
	);
	Ok(())
}
