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
