//! Model compute on a thread of rayon's pool.
//!
//! Candle's matrix products and the fused kernels (`model::fused`) split their work over
//! rayon's global pool. Called from a thread outside the pool, each such op queues its work,
//! wakes the pool's threads and sleeps until they are done, hundreds of times a training step;
//! called from one of the pool's own threads, the caller works on its share at once and the
//! others steal the rest. So a CPU step runs on the pool: 0.87x of the time on 2 threads
//! (`bench/README.md`, trainer throughput). Values do not change (each op splits its work the
//! same way wherever it is called from). On a GPU the op runs where it was called: CUDA
//! binds its context per thread, and the kernels' launches do not go through the pool.

use candle_core::Device;

/// Runs `f` on a thread of rayon's global pool when `device` is the CPU and the pool has
/// several threads (else, or when already on a pool's thread, here), and returns what it
/// returns. The calling thread waits; what `f` allocates is charged to its role in the
/// allocation ledger, and the pool's threads have the priority they were started with
/// (`priority::start_compute_pools`).
pub fn run<R: Send>(device: &Device, f: impl FnOnce() -> R + Send) -> R {
	if !device.is_cpu()
		|| rayon::current_num_threads() < 2
		|| rayon::current_thread_index().is_some()
	{
		return f();
	}
	let role = crate::alloc_ledger::this_thread_role();
	rayon::scope(|_| crate::alloc_ledger::charged_to(role, f))
}

#[cfg(test)]
mod tests {
	use candle_core::Device;

	#[test]
	fn cpu_work_runs_on_the_pool_and_returns_its_result() {
		let on_pool = super::run(&Device::Cpu, || rayon::current_thread_index().is_some());
		assert_eq!(on_pool, rayon::current_num_threads() > 1, "ran on the pool iff it has 2+");
		// Already on a pool's thread (here a one-thread pool of its own): run in place.
		let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
		let here = pool.install(|| {
			let index = rayon::current_thread_index();
			super::run(&Device::Cpu, rayon::current_thread_index) == index
		});
		assert!(here);
		assert_eq!(super::run(&Device::Cpu, || 6 * 7), 42);
	}
}
