//! CPU time per process, split by thread kind, read from Linux's `/proc` (the scale benchmark's
//! answer to "is it the machine or the protocol": how much of each trainer's CPU went to
//! training and how much to everything else, against what the machine had).
//!
//! Sampled, not read once at the end: a round's training thread exits with its round, and an
//! exited thread's time is only in its process's total. A sample every second loses at most
//! a second of each exited thread.

use std::collections::HashMap;

/// Ticks per second of `/proc`'s times (`USER_HZ`; 100 on every Linux this runs on).
const TICKS_PER_SEC: f64 = 100.0;

/// What a thread does, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
	/// Training, replays and evaluation: the trainer's compute threads (`train-<round>`,
	/// `grid-verify`, `evaluation`), all at the lowest priority.
	Compute,
	/// Everything else: the async runtime (libp2p, the chain follower, the round loop),
	/// checkpoint and state writers, the main thread.
	Other,
}

impl Kind {
	/// The kind of a thread named `name` (as `/proc` shows it: at most 15 bytes).
	pub fn of(name: &str) -> Kind {
		if name.starts_with("train-") || name == "grid-verify" || name == "evaluation" {
			Kind::Compute
		} else {
			Kind::Other
		}
	}
}

/// Accumulated CPU seconds per (process, kind), from repeated samples.
#[derive(Default)]
pub struct Sampler {
	/// Last ticks seen per (pid, tid), with the thread's kind.
	last: HashMap<(u32, u32), (Kind, u64)>,
	/// Ticks per (pid, kind) since the first sample.
	total: HashMap<(u32, Kind), u64>,
}

impl Sampler {
	/// Reads every thread of `pids` and adds what each used since the last sample (a thread
	/// first seen counts from zero when it appeared after the first sample of its process).
	pub fn sample(&mut self, pids: &[u32]) {
		for &pid in pids {
			let first = !self.last.keys().any(|(p, _)| *p == pid);
			for (tid, kind, ticks) in threads(pid) {
				let before = match self.last.get(&(pid, tid)) {
					Some((_, before)) => *before,
					// A process's threads at its first sample: count from here on.
					None if first => ticks,
					None => 0,
				};
				*self.total.entry((pid, kind)).or_default() += ticks.saturating_sub(before);
				self.last.insert((pid, tid), (kind, ticks));
			}
		}
	}

	/// CPU seconds of `pid`'s threads of `kind` since its first sample.
	pub fn seconds(&self, pid: u32, kind: Kind) -> f64 {
		self.total.get(&(pid, kind)).copied().unwrap_or(0) as f64 / TICKS_PER_SEC
	}
}

/// Each live thread of `pid`: its id, kind and user + system ticks (none when the process is
/// gone).
fn threads(pid: u32) -> Vec<(u32, Kind, u64)> {
	let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
	dir.flatten()
		.filter_map(|entry| {
			let tid = entry.file_name().to_str()?.parse().ok()?;
			let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
			let (name, ticks) = parse_stat(&stat)?;
			Some((tid, Kind::of(name), ticks))
		})
		.collect()
}

/// A `/proc/<pid>/task/<tid>/stat` line's name and user + system ticks. The name is in
/// parentheses and may hold spaces or parentheses itself, so the fields are counted from the
/// last `)`: utime and stime are the 14th and 15th fields of the line.
fn parse_stat(stat: &str) -> Option<(&str, u64)> {
	let open = stat.find('(')?;
	let close = stat.rfind(')')?;
	let name = stat.get(open + 1..close)?;
	let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
	// `rest` starts at field 3 (state): utime is field 14, stime 15.
	let utime: u64 = rest.get(11)?.parse().ok()?;
	let stime: u64 = rest.get(12)?.parse().ok()?;
	Some((name, utime + stime))
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_stat_line_gives_its_name_and_ticks() {
		let line = "4242 (train-3) R 1 2 3 4 5 6 7 8 9 10 150 25 0 0 39 19 1 0 77 0 0";
		assert_eq!(parse_stat(line), Some(("train-3", 175)));
		let odd = "7 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 3 4 0 0";
		assert_eq!(parse_stat(odd), Some(("a (b) c", 7)));
		assert_eq!(parse_stat("7 (x) S 1 2"), None);
	}

	#[test]
	fn thread_names_sort_into_compute_and_the_rest() {
		for name in ["train-0", "train-12", "grid-verify", "evaluation"] {
			assert_eq!(Kind::of(name), Kind::Compute, "{name}");
		}
		for name in ["grid-trainer", "tokio-runtime-w", "checkpoint writ"] {
			assert_eq!(Kind::of(name), Kind::Other, "{name}");
		}
	}

	#[test]
	fn this_process_uses_some_cpu_between_samples() {
		let pid = std::process::id();
		let mut sampler = Sampler::default();
		sampler.sample(&[pid]);
		let spin = std::thread::Builder::new()
			.name("train-0".into())
			// A fixed amount of work (a few tenths of a second of CPU), not a time: on a busy
			// machine it takes longer and uses the same CPU.
			.spawn(|| {
				let mut x = 0u64;
				for i in 0..300_000_000u64 {
					x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
				}
				x
			})
			.unwrap();
		// Sample while the thread runs, so its time is seen before it exits.
		let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
		while !spin.is_finished() && std::time::Instant::now() < deadline {
			sampler.sample(&[pid]);
			std::thread::sleep(std::time::Duration::from_millis(20));
		}
		std::hint::black_box(spin.join().unwrap());
		assert!(sampler.seconds(pid, Kind::Compute) > 0.0);
		assert_eq!(sampler.seconds(pid + 1_000_000, Kind::Other), 0.0);
	}
}
