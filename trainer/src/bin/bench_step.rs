//! Throughput of one full Candle training step of the GPT (forward, backward, gradient clip,
//! AdamW). Prints one JSON line; `bench/step_throughput.sh` (CPU) and `bench/gpu_step.sh`
//! (GPU) run it next to the PyTorch reference (`bench/torch_ref/gpt.py`) of the same model
//! and batch.
//!
//! `cargo run --release -p grid-trainer --bin bench_step -- [--layers 4 --heads 4 --width 128
//! --context 64 --vocab 256 --batch 12 --steps 30 --warmup 5 --device cpu|cuda --profile 0|1]`
//! On a GPU the step is bf16 mixed precision (the trainer's default there).
//! Threads: set `RAYON_NUM_THREADS` (candle's CPU kernels use rayon's pool).

use std::time::Instant;

use candle_core::Tensor;
use grid_primitives::job::{GptConfig, InnerOptimizer, ModelSpec, Nanos};
use grid_trainer::{
	device::DeviceChoice,
	model::Batch,
	rng::Rng,
	train::{InnerConfig, InnerTrainer},
};

/// The daemon's allocator (`grid-trainer` counts its large blocks per thread), so the step
/// measured here is the step it runs.
#[global_allocator]
static ALLOCATOR: grid_trainer::alloc_ledger::Counting = grid_trainer::alloc_ledger::Counting;

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
		("profile", 0),
	];
	let args: Vec<String> = std::env::args().skip(1).collect();
	let mut choice = DeviceChoice::Cpu;
	for pair in args.chunks(2) {
		let [k, v] = pair else { return Err(format!("{} needs a value", pair[0]).into()) };
		if k == "--device" {
			choice = v.parse()?;
			continue;
		}
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
	let dev = grid_trainer::device::select(choice)?;
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
	let median_ms = median(times);
	// Where a step's time goes: the forward pass alone, and forward and backward together
	// (the optimizer is the rest of the step).
	let model = trainer.model();
	// On rayon's pool, as the step runs (`grid_trainer::pool`).
	let forward = median(timed(5, || {
		grid_trainer::pool::run(&dev, || -> grid_trainer::Result<()> {
			model.loss(&batch)?.to_scalar::<f32>()?;
			Ok(())
		})
	})?);
	let forward_backward = median(timed(5, || {
		grid_trainer::pool::run(&dev, || -> grid_trainer::Result<()> {
			model.loss(&batch)?.backward()?;
			Ok(())
		})?;
		dev.synchronize()?;
		Ok(())
	})?);
	println!(
		"{{\"impl\": \"candle\", \"params\": {}, \"threads\": {}, \"device\": \"{choice}\", \"precision\": \"{:?}\", \"batch\": {b}, \"context\": {t}, \"median_ms\": {median_ms:.2}, \"mean_ms\": {mean:.2}, \"forward_ms\": {forward:.2}, \"backward_ms\": {:.2}, \"final_loss\": {loss:.4}}}",
		spec.parameters().unwrap_or(0),
		candle_core::utils::get_num_threads(),
		trainer.model().precision(),
		forward_backward - forward,
	);
	if get("profile") > 0 {
		profile(&dev, config, b)?;
	}
	Ok(())
}

/// Forward and backward of the model's parts at this configuration's shapes, each alone
/// (median ms of 5, synchronised), printed to stderr: where a step's time goes.
fn profile(dev: &candle_core::Device, c: GptConfig, batch: usize) -> grid_trainer::Result<()> {
	use candle_core::{DType, Var};
	use grid_trainer::model::fused;
	let (t, w, v) = (c.context as usize, c.width as usize, c.vocab as usize);
	let (rows, heads) = (batch * t, usize::from(c.heads));
	let dtype = grid_trainer::device::Precision::for_device(dev).dtype();
	let var = |shape: &[usize], dtype: DType| -> grid_trainer::Result<Var> {
		let x = Tensor::randn(0f32, 0.02, shape, dev)?.to_dtype(dtype)?;
		Ok(Var::from_tensor(&x)?)
	};
	let run =
		|name: &str, f: &dyn Fn() -> grid_trainer::Result<Tensor>| -> grid_trainer::Result<()> {
			let once = || {
				f()?.to_dtype(DType::F32)?.sum_all()?.backward()?;
				dev.synchronize()?;
				Ok(())
			};
			once()?;
			eprintln!("profile {name}: {:.2} ms", median(timed(5, once)?));
			Ok(())
		};
	let ids = Tensor::from_vec((0..rows as u32).map(|i| i % c.vocab).collect(), rows, dev)?;
	let table = var(&[v, w], DType::F32)?;
	run("embedding", &|| Ok(fused::embedding(&table, &ids)?))?;
	run("embedding (candle's)", &|| Ok(table.embedding(&ids)?))?;
	let x = var(&[rows, w], dtype)?;
	let weight = var(&[w, 4 * w], DType::F32)?;
	run("matmul w x 4w", &|| Ok(x.matmul(&weight.to_dtype(dtype)?)?))?;
	let x32 = var(&[rows, w], DType::F32)?;
	run("normalize (f32)", &|| Ok(fused::normalize(&x32, 1e-5)?))?;
	let h = var(&[rows, 4 * w], dtype)?;
	run("gelu", &|| Ok(fused::gelu(&h)?))?;
	let d = w / heads;
	let q = var(&[batch, heads, t, d], dtype)?;
	let k = var(&[batch, heads, t, d], dtype)?;
	let vv = var(&[batch, heads, t, d], dtype)?;
	let scale = 1.0 / (d as f64).sqrt();
	run("attention scores", &|| Ok(q.matmul(&k.t()?)?))?;
	let s = var(&[batch, heads, t, t], dtype)?;
	run("causal softmax", &|| Ok(fused::causal_softmax(&s, scale)?))?;
	run("attention core (composed)", &|| {
		Ok(fused::causal_softmax(&q.matmul(&k.t()?)?, scale)?.matmul(&vv)?)
	})?;
	run("attention core", &|| Ok(fused::causal_attention(&q, &k, &vv, scale)?))?;
	let logits = var(&[rows, v], dtype)?;
	let targets =
		Tensor::from_vec((0..rows as u32).map(|i| (i * 7) % c.vocab).collect(), rows, dev)?;
	run("cross-entropy (candle-nn)", &|| {
		Ok(candle_nn::loss::cross_entropy(&logits.to_dtype(DType::F32)?, &targets)?)
	})?;
	run("cross-entropy", &|| Ok(fused::cross_entropy(&logits, &targets)?))?;
	let bias = var(&[4 * w], DType::F32)?;
	run("bias add w x 4w", &|| Ok(h.broadcast_add(&bias.to_dtype(dtype)?)?))?;
	run("cast and sum only, w x 4w", &|| Ok(h.as_tensor().clone()))?;
	Ok(())
}

/// Wall times of `runs` calls of `f`, in ms.
fn timed(
	runs: usize,
	mut f: impl FnMut() -> grid_trainer::Result<()>,
) -> grid_trainer::Result<Vec<f64>> {
	(0..runs)
		.map(|_| {
			let start = Instant::now();
			f()?;
			Ok(start.elapsed().as_secs_f64() * 1e3)
		})
		.collect()
}

fn median(mut times: Vec<f64>) -> f64 {
	times.sort_by(f64::total_cmp);
	times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
}
