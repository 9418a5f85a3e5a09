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
