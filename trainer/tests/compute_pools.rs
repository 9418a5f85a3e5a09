//! The daemon's shared compute pools run at the lowest priority whichever thread computes
//! first (`grid_trainer::priority::start_compute_pools`). Its own process: the pools are
//! global and start once, so a test binary whose other tests computed first could not tell.

#![cfg(target_os = "linux")]

use candle_core::{DType, Device, Tensor};
use grid_trainer::priority::{start_compute_pools, COMPUTE_NICENESS};

fn niceness() -> i32 {
	// SAFETY: `getpriority` only reads the calling thread's scheduling priority.
	unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
}

/// Niceness of each of this process's threads whose name starts with `prefix`, from
/// `/proc/self/task/*/stat` (the 19th field; the name in parentheses may hold spaces).
fn threads_niceness(prefix: &str) -> Vec<(String, i32)> {
	let tasks = std::fs::read_dir("/proc/self/task").expect("reading /proc/self/task");
	let mut found = Vec::new();
	for task in tasks.flatten() {
		let Ok(name) = std::fs::read_to_string(task.path().join("comm")) else { continue };
		let name = name.trim().to_string();
		if !name.starts_with(prefix) {
			continue;
		}
		let stat = std::fs::read_to_string(task.path().join("stat")).expect("reading stat");
		let after_name = &stat[stat.rfind(')').expect("a stat line names its thread") + 2..];
		// Field 3 (the state) comes first after the name: the niceness, field 19, is 16 on.
		let nice = after_name.split(' ').nth(16).and_then(|n| n.parse().ok());
		found.push((name, nice.expect("a niceness in the stat line")));
	}
	found
}

/// Started from a thread at the process's own priority — as a joiner's round loop decides a
/// round before it trains one — the pools' threads still run at the lowest priority, and the
/// calling thread keeps its own. Without the starter, rayon's pool would start from this
/// thread and run at its priority.
#[test]
fn pools_started_for_a_normal_priority_thread_run_at_the_lowest_priority() {
	let mine = niceness();
	assert!(start_compute_pools(), "the starter thread was not lowered");
	assert_eq!(niceness(), mine, "the caller's own priority changed");

	// Work this thread hands to rayon runs on the lowered pool.
	let pool: Vec<i32> = rayon::broadcast(|_| niceness());
	assert!(!pool.is_empty() && pool.iter().all(|&n| n == COMPUTE_NICENESS), "{pool:?}");

	// So do Candle's kernels and its own workers, started before this thread computed.
	let a = Tensor::ones((128, 128), DType::F32, &Device::Cpu).unwrap();
	let product = a.matmul(&a).unwrap().sum_all().unwrap().to_scalar::<f32>().unwrap();
	assert_eq!(product, 128.0 * 128.0 * 128.0);
	let candle = threads_niceness("candle-");
	assert!(candle.iter().all(|(_, n)| *n == COMPUTE_NICENESS), "{candle:?}");
	// A second start changes nothing (the pools start once).
	assert!(start_compute_pools());
	assert_eq!(rayon::broadcast(|_| niceness()), pool);
}

/// Steps of a small GPT (4 heads: the attention's per-head products are a batch of small
/// ones, which candle runs one per thread when it has several) in this process, with its
/// thread counts: the parameters after them, as bytes, to the file `GRID_THREADS_CHILD_OUT`
/// names. Run by the test below in a child process; ignored otherwise.
#[test]
#[ignore = "run by `training_does_not_depend_on_the_thread_count` in a child process"]
fn train_and_write_parameters() {
	use grid_primitives::job::{GptConfig, InnerOptimizer, ModelSpec, Nanos};
	use grid_trainer::{
		model::Batch,
		rng::Rng,
		train::{evaluate, InnerConfig, InnerTrainer},
	};
	let out = std::env::var("GRID_THREADS_CHILD_OUT").expect("run by the parent test");
	let config = GptConfig { vocab: 256, context: 32, layers: 2, heads: 4, width: 64 };
	let dev = Device::Cpu;
	let inner = InnerOptimizer::AdamW {
		lr: Nanos(3_000_000),
		weight_decay: Nanos(100_000_000),
		warmup_steps: 0,
	};
	let mut trainer = InnerTrainer::new(
		ModelSpec::Gpt(config),
		b"thread counts",
		&dev,
		&inner,
		InnerConfig::default(),
	)
	.unwrap();
	let mut rng = Rng::new(5);
	let mut tokens = |n: usize| -> Vec<u32> { (0..n).map(|_| rng.below(256) as u32).collect() };
	let (b, t) = (12, 32);
	let batch = Batch {
		inputs: Tensor::from_vec(tokens(b * t), (b, t), &dev).unwrap(),
		targets: Tensor::from_vec(tokens(b * t), (b, t), &dev).unwrap(),
	};
	for _ in 0..3 {
		trainer.step(&batch).unwrap();
	}
	let loss = evaluate(trainer.model(), std::slice::from_ref(&batch)).unwrap();
	let mut bytes: Vec<u8> =
		trainer.model().params().flatten().unwrap().iter().flat_map(|v| v.to_le_bytes()).collect();
	bytes.extend(loss.to_le_bytes());
	std::fs::write(out, bytes).unwrap();
}

/// Providers with different numbers of cores must reach the same model bit for bit (their
/// updates are compared, replayed and aggregated into one canonical state): training steps
/// and an evaluation on one thread and on three give the same parameters and loss, with the
/// step on rayon's pool (`grid_trainer::pool`) and the products of a batch one per thread.
#[test]
fn training_does_not_depend_on_the_thread_count() {
	let dir = tempfile::tempdir().unwrap();
	let run = |threads: usize| -> Vec<u8> {
		let out = dir.path().join(format!("threads-{threads}"));
		let status = std::process::Command::new(std::env::current_exe().unwrap())
			.args(["--ignored", "--exact", "train_and_write_parameters", "--test-threads", "1"])
			.env("GRID_THREADS_CHILD_OUT", &out)
			.env("RAYON_NUM_THREADS", threads.to_string())
			.env("CANDLE_NUM_THREADS", "1")
			.status()
			.unwrap();
		assert!(status.success(), "the child on {threads} threads failed: {status}");
		std::fs::read(&out).unwrap()
	};
	let (one, three) = (run(1), run(3));
	assert!(one.len() > 100_000, "{} bytes: the parameters were not written", one.len());
	assert!(one == three, "one thread and three trained different models");
}
