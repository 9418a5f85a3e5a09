//! Thread priority: compute yields the CPU to the exchange and the chain.
//!
//! A provider's training keeps every core it is given busy for most of a round, while its
//! network and chain tasks need little CPU but need it on time: a commitment, an answer to a
//! fetch or a proof that waits for a time slice misses its deadline. So the compute threads
//! (training, replays, evaluation) run at the lowest priority, niceness 19, as volunteer
//! computing clients run their work (BOINC does), and the round loop, the network and the
//! chain follower keep the process's own. With every thread at one priority, 64 trainers on
//! 2 cores (`bench/scale.sh`) left each trainer's chain follower a 66th of the CPU, and its
//! reads of the node went unanswered for 10 s and more.
//!
//! The parallel part of that compute runs on shared thread pools (rayon's global pool, which
//! Candle's CPU kernels and ours use, and Candle's own), which start from their first user
//! and inherit its priority. The daemon starts them from a lowered thread before anything
//! computes ([`start_compute_pools`]), so their threads run at the lowest priority whoever
//! computes first: a trainer that decides a round before it trains one (a joiner observes
//! its first round) started them from the round loop, and its training then ran at the
//! round loop's priority. The round loop's own parallel work (aggregation, compression)
//! runs on them too, at the lowest priority, as it did whenever training came first: at
//! 64 trainers on 2 cores that made aggregating and stepping 11.3 s a trainer against 4.9 s
//! before (`bench/README.md`, scale). A pool of its own for the round loop was tried at its
//! priority and at niceness 10 (`bench/reports/scale_round_pool`): aggregating took
//! 0.2–0.4x the time, but no run at N = 64 on 2 cores settled more rounds or agreed better,
//! so it is left out until one where N = 64 settles shows it helps.

/// Niceness of compute threads: the lowest priority.
pub const COMPUTE_NICENESS: i32 = 19;

/// Lowers the calling thread to [`COMPUTE_NICENESS`] (on Linux niceness is per thread, and
/// threads it starts inherit it). Returns whether it took effect; a thread that cannot be
/// lowered still computes, at its priority.
pub fn lower_this_thread() -> bool {
	#[cfg(target_os = "linux")]
	{
		// SAFETY: `setpriority` only changes the scheduling priority of the task named; `who`
		// 0 names the calling thread.
		unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, COMPUTE_NICENESS) == 0 }
	}
	#[cfg(not(target_os = "linux"))]
	{
		false
	}
}

/// Starts rayon's global thread pool and Candle's barrier pool from a thread lowered to
/// [`COMPUTE_NICENESS`], so that every thread they run is lowered too. Call it before
/// anything computes (after `RAYON_NUM_THREADS` is set: the pools size themselves from it);
/// a pool already started stays as it is. Returns whether the thread was lowered.
pub fn start_compute_pools() -> bool {
	let starter = std::thread::Builder::new().name("pool starter".into()).spawn(|| {
		let lowered = lower_this_thread();
		// The threads inherit this thread's priority. Rayon's pool is named so that `top -H`
		// tells its threads apart (an error: it had started already, and stays as it is).
		let _ =
			rayon::ThreadPoolBuilder::new().thread_name(|i| format!("compute {i}")).build_global();
		// Candle's kernels' own pool starts on first use. (Its private rayon pool serves only
		// `Device::with_context`, which nothing here calls: not started, no idle threads.)
		let _ = candle_core::utils::barrier_pool();
		lowered
	});
	starter.is_ok_and(|s| s.join().unwrap_or(false))
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	#[cfg(target_os = "linux")]
	fn a_lowered_thread_runs_at_the_lowest_priority_and_its_caller_does_not() {
		let before = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
		let inside = std::thread::spawn(|| {
			assert!(lower_this_thread());
			unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
		})
		.join()
		.unwrap();
		assert_eq!(inside, COMPUTE_NICENESS);
		assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }, before);
	}
}
