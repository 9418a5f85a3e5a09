//! Training on a CUDA GPU. Built only with `--features cuda` (scripts/gpu.sh runs it on a GPU
//! machine); every test returns early, saying so, where no GPU answers.
//!
//! - Gradients on the GPU match the CPU's: f32 closely, bf16 mixed precision within bf16's
//!   rounding.
//! - Training the ~100M GPT on the GPU follows PyTorch from the same start, step by step, in
//!   f32 and in bf16 mixed precision.
//! - The fused GPU AdamW and SGD give the host optimizers' update.
//! - bf16 training on the GPU learns.
//! - Token ids and targets outside the model are refused with a clear error.
//! - A provider on a GPU declares it (name, memory, measured bf16 throughput).
//! - A trainer on the GPU and two on the CPU train one model over libp2p: every round they
//!   reach the same model hash, with the GPU trainer's update aggregated by the CPU peers.
#![cfg(feature = "cuda")]

use std::{
	path::{Path, PathBuf},
	time::{Duration, SystemTime, UNIX_EPOCH},
};

use candle_core::{Device, Tensor, Var};
use grid_primitives::{
	job::{CnnConfig, GptConfig, InnerOptimizer, MlpConfig, ModelSpec, Nanos},
	provider::DeviceKind,
	Hash,
};
use grid_trainer::{
	daemon::localnet::LocalNet,
	data::{self, shard, MnistDataset},
	device::{DeviceChoice, Precision},
	model::{Batch, Model},
	optim::Optimizer,
	parity::{gap, trace, write_start, Settings, Tolerance, Trace},
	train::{evaluate, InnerConfig, InnerTrainer},
};

fn gpu() -> Option<Device> {
	match grid_trainer::device::select(DeviceChoice::Cuda(0)) {
		Ok(device) => Some(device),
		Err(e) => {
			eprintln!("skipped: no GPU ({e})");
			None
		}
	}
}

fn gpt() -> ModelSpec {
	// Shakespeare's characters are ASCII: a vocabulary of 128 covers them.
	ModelSpec::Gpt(GptConfig { vocab: 128, context: 32, layers: 2, heads: 4, width: 64 })
}

fn batch_for(spec: ModelSpec, device: &Device) -> Batch {
	match spec {
		ModelSpec::Gpt(_) => {
			let data = data::shakespeare(32).unwrap();
			data.train_batch(&(0..8).map(|i| i * 997).collect::<Vec<_>>(), device).unwrap()
		}
		_ => MnistDataset::shipped()
			.unwrap()
			.train_batch(&(0..16).collect::<Vec<_>>(), device)
			.unwrap(),
	}
}

/// All gradients of one backward pass, flattened in parameter order, and the loss.
fn gradients(spec: ModelSpec, device: &Device, precision: Precision) -> (f32, Vec<f32>) {
	let model = Model::with_precision(spec, b"gpu-test", device, precision).unwrap();
	let loss = model.loss(&batch_for(spec, device)).unwrap();
	let grads = loss.backward().unwrap();
	let mut flat = Vec::new();
	for (name, var) in model.params().iter() {
		let g = grads.get(var.as_tensor()).unwrap_or_else(|| panic!("{name}: no gradient"));
		flat.extend(g.flatten_all().unwrap().to_vec1::<f32>().unwrap());
	}
	(loss.to_scalar::<f32>().unwrap(), flat)
}

/// ‖a − b‖ / ‖b‖.
fn relative_error(a: &[f32], b: &[f32]) -> f64 {
	assert_eq!(a.len(), b.len());
	let diff: f64 = a.iter().zip(b).map(|(x, y)| f64::from(x - y).powi(2)).sum();
	let norm: f64 = b.iter().map(|y| f64::from(*y).powi(2)).sum();
	(diff / norm).sqrt()
}

#[test]
fn gradients_on_the_gpu_match_the_cpu() {
	let Some(gpu) = gpu() else { return };
	// bf16 keeps 8 bits of mantissa: about 4e-3 relative error per rounding. The CNN's
	// gradients pass through max-pooling and ReLU, where bf16 rounding of the dense layers'
	// output moves ties and kinks: measured 2.6e-2 (3.5e-3 and 3.7e-3 for the others).
	let specs = [
		(gpt(), 1e-2),
		(ModelSpec::MnistMlp(MlpConfig { hidden: 64, layers: 2 }), 1e-2),
		(ModelSpec::MnistCnn(CnnConfig { channels: 4, hidden: 32 }), 5e-2),
	];
	for (spec, bf16_tolerance) in specs {
		let (cpu_loss, cpu) = gradients(spec, &Device::Cpu, Precision::F32);
		let (f32_loss, f32_grads) = gradients(spec, &gpu, Precision::F32);
		let (bf16_loss, bf16_grads) = gradients(spec, &gpu, Precision::Bf16);
		let (e32, e16) = (relative_error(&f32_grads, &cpu), relative_error(&bf16_grads, &cpu));
		eprintln!(
			"{spec:?}: loss cpu {cpu_loss} gpu-f32 {f32_loss} gpu-bf16 {bf16_loss}; \
			 gradient error f32 {e32:.2e} bf16 {e16:.2e}"
		);
		assert!((f32_loss - cpu_loss).abs() < 1e-4 * cpu_loss, "{spec:?}: f32 loss");
		assert!((bf16_loss - cpu_loss).abs() < 2e-2 * cpu_loss, "{spec:?}: bf16 loss");
		assert!(e32 < 1e-4, "{spec:?}: f32 gradients off by {e32}");
		assert!(e16 < bf16_tolerance, "{spec:?}: bf16 gradients off by {e16}");
	}
}

/// PyTorch's trace of `settings` from `start` (bench/torch_ref/parity.py, run by python3) in
/// `precision`, its initial weights perturbed by `perturb` (relative; 0 for none).
fn pytorch_trace(settings: &Settings, start: &Path, precision: &str, perturb: f64) -> Trace {
	let script = ["bench/torch_ref/parity.py", "../bench/torch_ref/parity.py"]
		.into_iter()
		.map(PathBuf::from)
		.find(|p| p.exists())
		.expect("bench/torch_ref/parity.py: run from the repository root or trainer/");
	let out = start.with_file_name(format!("pytorch-{precision}-{perturb}.json"));
	let c = settings.config;
	let status = std::process::Command::new("python3")
		.arg(&script)
		.args(["--layers", &c.layers.to_string(), "--heads", &c.heads.to_string()])
		.args(["--width", &c.width.to_string(), "--context", &c.context.to_string()])
		.args(["--vocab", &c.vocab.to_string(), "--steps", &settings.steps.to_string()])
		.args(["--precision", precision, "--lr", &settings.lr.to_string()])
		.args(["--perturb", &perturb.to_string()])
		.arg("--start")
		.arg(start)
		.arg("--out")
		.arg(&out)
		.status()
		.expect("python3 with PyTorch (the GPU machine has it)");
	assert!(status.success(), "the PyTorch reference failed");
	serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

/// The ~100M GPT trained 50 steps on Shakespeare by Grid and by PyTorch from the same start,
/// in f32 and in bf16 mixed precision, held to [`Tolerance`] (which says why each bound). The
/// f32 bound scales with the trajectory's own sensitivity, measured here: PyTorch's drift from
/// a start perturbed by 1e-6.
#[test]
fn training_the_100m_gpt_follows_pytorch_from_the_same_start() {
	let Some(gpu) = gpu() else { return };
	let config = GptConfig { vocab: 8192, context: 512, layers: 12, heads: 12, width: 768 };
	let settings = Settings { config, batch: 16, steps: 50, lr: 6e-4 };
	let dir = tempfile::tempdir().unwrap();
	let start = dir.path().join("start.safetensors");
	write_start(&settings, &start).unwrap();
	let torch_f32 = pytorch_trace(&settings, &start, "f32", 0.0);
	let sensitivity = gap(&pytorch_trace(&settings, &start, "f32", 1e-6), &torch_f32).unwrap();
	let torch_bf16 = pytorch_trace(&settings, &start, "bf16", 0.0);
	eprintln!("PyTorch's sensitivity: {sensitivity:?}");
	let cases = [
		(Precision::F32, &torch_f32, Tolerance::f32(sensitivity.max_loss_diff)),
		(Precision::Bf16, &torch_bf16, Tolerance::bf16()),
	];
	for (precision, theirs, tolerance) in cases {
		let ours = trace(&settings, &gpu, precision).unwrap();
		let g = gap(&ours, theirs).unwrap();
		eprintln!("{precision:?}: {g:?}\n grid {:?}\n torch {:?}", ours.losses, theirs.losses);
		if let Err(e) = tolerance.check(&g) {
			panic!("{precision:?}: Grid parts from PyTorch: {e}");
		}
		assert!(ours.losses[49] < ours.losses[0] - 3.0, "{precision:?}: {:?}", ours.losses);
	}
}

#[test]
fn a_gpu_provider_declares_its_gpu_as_measured() {
	let Some(gpu) = gpu() else { return };
	let caps = grid_trainer::device::capabilities(&gpu, Duration::from_millis(300));
	let name = String::from_utf8_lossy(&caps.device_name).to_string();
	eprintln!(
		"declared: {name}, {} GPU(s), {} MiB, {:.1} TFLOP/s bf16",
		caps.device_count,
		caps.memory_mib,
		f64::from(caps.tflops_milli) / 1e3
	);
	assert_eq!(caps.device, DeviceKind::Cuda);
	assert!(!name.is_empty() && name != std::env::consts::ARCH, "{name}");
	assert!(caps.device_count >= 1);
	// What the driver reports (an H100 has 80 GiB); the throughput is measured, and any data
	// centre GPU does well over 10 TFLOP/s in bf16.
	assert!(caps.memory_mib >= 1024, "{} MiB", caps.memory_mib);
	assert!(caps.tflops_milli > 10_000, "{} mTFLOP/s", caps.tflops_milli);
	// `auto` picks this GPU.
	assert!(grid_trainer::device::select(DeviceChoice::Auto).unwrap().is_cuda());
}

#[test]
fn bad_token_ids_and_targets_are_refused_on_the_gpu() {
	let Some(gpu) = gpu() else { return };
	let model = Model::new(gpt(), b"gpu-test", &gpu).unwrap();
	let ids = Tensor::new(&[[1u32, 2, 300]], &gpu).unwrap();
	let targets = Tensor::new(&[[1u32, 2, 3]], &gpu).unwrap();
	let err = model.loss(&Batch { inputs: ids, targets: targets.clone() }).unwrap_err();
	assert!(err.to_string().contains("token id 300 is outside the vocabulary of 128"), "{err}");
	let ids = Tensor::new(&[[1u32, 2, 3]], &gpu).unwrap();
	let bad_targets = Tensor::new(&[[1u32, 200, 3]], &gpu).unwrap();
	let err = model.loss(&Batch { inputs: ids.clone(), targets: bad_targets }).unwrap_err();
	assert!(err.to_string().contains("target 200 is outside the 128 classes"), "{err}");
	// The model still computes afterwards.
	assert!(model.loss(&Batch { inputs: ids, targets }).unwrap().to_scalar::<f32>().unwrap() > 0.0);
}

/// `steps` updates of `optimizer` with the gradient of Σ c·w, which is exactly `c` on every
/// device; returns the weights after and the norms the optimizer reported.
fn optimize(spec: &InnerOptimizer, device: &Device, steps: usize) -> (Vec<f32>, Vec<f64>) {
	let mut rng = grid_trainer::rng::Rng::new(5);
	let mut values = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.normal() as f32).collect() };
	let w =
		Var::from_tensor(&Tensor::from_vec(values(3 * 1000), (3, 1000), device).unwrap()).unwrap();
	let b = Var::from_tensor(&Tensor::from_vec(values(777), 777, device).unwrap()).unwrap();
	let cw = Tensor::from_vec(values(3 * 1000), (3, 1000), device).unwrap();
	let cb = Tensor::from_vec(values(777), 777, device).unwrap();
	let vars = vec![("b".to_string(), b.clone()), ("w".to_string(), w.clone())];
	let mut optimizer = Optimizer::new(spec, vars).unwrap();
	let mut norms = Vec::new();
	for _ in 0..steps {
		let loss = ((w.as_tensor() * &cw).unwrap().sum_all().unwrap()
			+ (b.as_tensor() * &cb).unwrap().sum_all().unwrap())
		.unwrap();
		norms.push(optimizer.step(loss.backward().unwrap(), 0.01, Some(10.0)).unwrap());
	}
	let mut out = b.as_tensor().to_vec1::<f32>().unwrap();
	out.extend(w.as_tensor().flatten_all().unwrap().to_vec1::<f32>().unwrap());
	(out, norms)
}

#[test]
fn the_gpu_optimizers_give_the_host_optimizers_update() {
	let Some(gpu) = gpu() else { return };
	let adamw = InnerOptimizer::AdamW {
		lr: Nanos(10_000_000),
		weight_decay: Nanos(100_000_000),
		warmup_steps: 0,
	};
	for spec in [adamw, InnerOptimizer::Sgd { lr: Nanos(10_000_000) }] {
		let (host, host_norms) = optimize(&spec, &Device::Cpu, 5);
		let (device, device_norms) = optimize(&spec, &gpu, 5);
		let max_diff = host.iter().zip(&device).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
		eprintln!("{spec:?}: largest weight difference {max_diff:e}, norms {device_norms:?}");
		assert!(max_diff < 1e-5, "{spec:?}: weights differ by up to {max_diff}");
		for (h, d) in host_norms.iter().zip(&device_norms) {
			// The norm (about 66) exceeds the clip (10), so clipping is exercised too.
			assert!(*h > 10.0 && (h - d).abs() < 1e-6 * h, "{spec:?}: norms {h} vs {d}");
		}
	}
}

#[test]
fn bf16_training_on_the_gpu_learns() {
	let Some(gpu) = gpu() else { return };
	let spec =
		ModelSpec::Gpt(GptConfig { vocab: 128, context: 32, layers: 2, heads: 2, width: 32 });
	let data = data::shakespeare(32).unwrap();
	let inner = InnerOptimizer::AdamW {
		lr: Nanos(3_000_000),
		weight_decay: Nanos(100_000_000),
		warmup_steps: 5,
	};
	let config = InnerConfig { total_steps: 60, ..Default::default() };
	let mut trainer = InnerTrainer::new(spec, b"gpt", &gpu, &inner, config).unwrap();
	assert_eq!(trainer.model().precision(), Precision::Bf16);
	let eval = data.eval_batches(64, 32, &gpu).unwrap();
	let before = evaluate(trainer.model(), &eval).unwrap();
	for chunk in shard(&Hash::zero(), 1, 0, b"me", data.train_len(), 60 * 16).chunks(16) {
		let stats = trainer.step(&data.train_batch(chunk, &gpu).unwrap()).unwrap();
		assert!(stats.loss.is_finite() && stats.grad_norm > 0.0);
	}
	let after = evaluate(trainer.model(), &eval).unwrap();
	eprintln!("held-out loss {before} -> {after}");
	// The CPU test of the same model and steps (train.rs) asks the same.
	assert!(after < 3.3, "held-out loss {before} -> {after}");
}

#[test]
fn a_gpu_trainer_and_cpu_trainers_agree_on_every_round() {
	let Some(_) = gpu() else { return };
	let tmp = tempfile::tempdir().unwrap();
	// The GPU trainer warms up before round 0 (its first run on a machine compiles Candle's
	// kernels: seconds).
	let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 40_000;
	let job = r#"
		[job]
		id = 11
		rounds = 3
		dataset = "mnist"
		model = { kind = "mlp", hidden = 64, layers = 1 }
		total_steps = 3000
		aggregation = { rule = "trimmed-mean", trim = 1 }
		screen_ratio = 3.0
		eval_samples = 500

		[job.training]
		batch_size = 32
		max_steps = 25
		inner = { optimizer = "adamw", lr = 0.003, warmup_steps = 5 }
		compression = { scheme = "int8", chunk = 64 }
		outer_momentum = 0.5
		"#;
	let schedule = format!(
		"[schedule]\nmode = \"deadline\"\nstart_unix_ms = {start}\nperiod_ms = 4000\ngrace_ms = 700\nfetch_timeout_ms = 4000\n"
	);
	// GRID_TRAINER_BIN: the binary when this test runs away from its build (scripts/gpu.sh).
	let binary = std::env::var_os("GRID_TRAINER_BIN")
		.map_or_else(|| env!("CARGO_BIN_EXE_grid-trainer").into(), std::path::PathBuf::from);
	let mut net = LocalNet::new(&binary, tmp.path(), "gpu", 3, job.into(), schedule).unwrap();
	net.nodes[0].extra = "device = \"cuda\"".into();
	net.nodes[1].extra = "device = \"cpu\"".into();
	net.nodes[2].extra = "device = \"cpu\"".into();
	for i in 0..3 {
		net.start(i).unwrap();
	}
	net.wait_all(Duration::from_secs(120)).unwrap();
	let log = net.nodes[0].log_tail(10_000);
	assert!(log.contains("training on Cuda"), "trainer 0 is not on the GPU:\n{log}");
	assert!(log.contains("GPU warmed up"), "{log}");
	assert!(net.nodes[1].log_tail(10_000).contains("training on Cpu"));
	let hashes = net.hashes();
	let report = || {
		let mut text = String::new();
		for (i, node) in net.nodes.iter().enumerate() {
			text += &format!("--- trainer {i} ({})\n", node.peer_id());
			for r in node.rounds() {
				text += &format!("{r}\n");
			}
			text += &node.log_tail(25);
			text += "\n";
		}
		text
	};
	assert_eq!(hashes.len(), 3, "{hashes:?}\n{}", report());
	for (round, by_trainer) in &hashes {
		let first = by_trainer.values().next().unwrap();
		let agree = by_trainer.len() == 3 && by_trainer.values().all(|h| h == first);
		assert!(agree, "round {round}: {by_trainer:?}\n{}", report());
	}
	for cpu_peer in [1, 2] {
		assert_eq!(net.aggregated_rounds(cpu_peer, 0), vec![0, 1, 2], "GPU update not taken");
	}
}
