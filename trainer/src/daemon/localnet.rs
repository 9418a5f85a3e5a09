//! A local network of `grid-trainer` processes on loopback: writes each trainer's
//! configuration (same job and schedule, every other trainer as a bootstrap peer, a free
//! port, its own data directory), starts and kills them, and reads back their round records
//! and status. Used by the multi-process tests and the network benchmarks.

use std::{
	collections::BTreeMap,
	path::{Path, PathBuf},
	process::{Child, Command, Stdio},
	time::{Duration, Instant},
};

use serde_json::Value;

use crate::{
	error::{Error, Result},
	net::keypair_from_seed,
};

/// What a network benchmark (a binary built beside `grid-trainer`) starts from: its
/// command line, the `grid-trainer` binary next to it, and a scratch directory for its
/// trainers (kept when `GRID_KEEP_TEST_DIRS` is set, for their logs and round records).
pub struct BenchSetup {
	args: Vec<String>,
	/// Where the reports go (`--out`; `bench/reports` by default).
	pub out: PathBuf,
	/// `--quick`: a shorter run.
	pub quick: bool,
	/// The `grid-trainer` binary.
	pub binary: PathBuf,
	/// The trainers' directory.
	pub dir: tempfile::TempDir,
}

impl BenchSetup {
	/// From this process's arguments and location.
	pub fn from_env() -> Result<Self> {
		let args: Vec<String> = std::env::args().collect();
		let exe = std::env::current_exe().map_err(|e| Error::io("locating", Path::new("."), e))?;
		let binary = exe.with_file_name("grid-trainer");
		if !binary.exists() {
			return Err(Error::Config(format!(
				"{} not found: build the grid-trainer binary first",
				binary.display()
			)));
		}
		let tmp = std::env::temp_dir();
		let mut dir =
			tempfile::tempdir().map_err(|e| Error::io("creating a directory in", &tmp, e))?;
		dir.disable_cleanup(std::env::var_os("GRID_KEEP_TEST_DIRS").is_some());
		eprintln!("runs in {}", dir.path().display());
		let mut setup = BenchSetup { args, out: PathBuf::new(), quick: false, binary, dir };
		setup.out =
			setup.arg("--out").map_or_else(|| PathBuf::from("bench/reports"), PathBuf::from);
		setup.quick = setup.args.iter().any(|a| a == "--quick");
		Ok(setup)
	}

	/// The value given after `name` on the command line.
	pub fn arg(&self, name: &str) -> Option<String> {
		self.args.iter().position(|a| a == name).and_then(|i| self.args.get(i + 1)).cloned()
	}
}

/// A loopback port free right now (see [`grid_primitives::ports`]).
pub fn free_port() -> Result<u16> {
	grid_primitives::ports::free_loopback_port()
		.map_err(|e| Error::Network(format!("finding a free loopback port: {e}")))
}

/// One trainer of a local network.
pub struct LocalNode {
	/// Seed of its libp2p key.
	pub seed: String,
	/// Its TCP port.
	pub port: u16,
	/// Its data directory.
	pub dir: PathBuf,
	/// Extra top-level configuration lines (misbehaviour, scenario, slowdown).
	pub extra: String,
	/// A `[job]` table of its own instead of the network's (a foreign trainer).
	pub job: Option<String>,
	child: Option<Child>,
}

impl LocalNode {
	/// Its peer id.
	pub fn peer_id(&self) -> String {
		keypair_from_seed(&self.seed).public().to_peer_id().to_string()
	}

	/// Its dialable address.
	pub fn addr(&self) -> String {
		format!("/ip4/127.0.0.1/tcp/{}/p2p/{}", self.port, self.peer_id())
	}

	/// Its round records (`rounds.jsonl`), oldest first.
	pub fn rounds(&self) -> Vec<Value> {
		std::fs::read_to_string(self.dir.join("rounds.jsonl"))
			.unwrap_or_default()
			.lines()
			.filter_map(|l| serde_json::from_str(l).ok())
			.collect()
	}

	/// Its status report (`status.json`), if written yet.
	pub fn status(&self) -> Option<Value> {
		let text = std::fs::read_to_string(self.dir.join("status.json")).ok()?;
		serde_json::from_str(&text).ok()
	}

	/// The last lines of its log.
	pub fn log_tail(&self, lines: usize) -> String {
		let text = std::fs::read_to_string(self.dir.join("log.txt")).unwrap_or_default();
		let all: Vec<&str> = text.lines().collect();
		all[all.len().saturating_sub(lines)..].join("\n")
	}
}

/// Trainers sharing one job and schedule.
pub struct LocalNet {
	binary: PathBuf,
	/// The trainers.
	pub nodes: Vec<LocalNode>,
	/// The `[job]` table.
	pub job: String,
	/// The `[schedule]` table.
	pub schedule: String,
	/// `RUST_LOG` for the trainers.
	pub log_filter: String,
}

impl LocalNet {
	/// `n` trainers named `<prefix>-<i>` in subdirectories of `dir`, running `binary`.
	pub fn new(
		binary: &Path,
		dir: &Path,
		prefix: &str,
		n: usize,
		job: String,
		schedule: String,
	) -> Result<Self> {
		let nodes = (0..n)
			.map(|i| {
				Ok(LocalNode {
					seed: format!("{prefix}-{i}"),
					port: free_port()?,
					dir: dir.join(format!("{prefix}-{i}")),
					extra: String::new(),
					job: None,
					child: None,
				})
			})
			.collect::<Result<_>>()?;
		Ok(LocalNet {
			binary: binary.to_path_buf(),
			nodes,
			job,
			schedule,
			log_filter: "info,libp2p_gossipsub=warn".into(),
		})
	}

	/// Starts trainer `i` (again, after a kill: it resumes from its checkpoint).
	pub fn start(&mut self, i: usize) -> Result<()> {
		let bootstrap: Vec<String> = self
			.nodes
			.iter()
			.enumerate()
			.filter(|(j, _)| *j != i)
			.map(|(_, n)| format!("{:?}", n.addr()))
			.collect();
		let node = &mut self.nodes[i];
		std::fs::create_dir_all(&node.dir).map_err(|e| Error::io("creating", &node.dir, e))?;
		let config = format!(
			"name = {:?}\nkey_seed = {:?}\ndata_dir = {:?}\nlisten = [\"/ip4/127.0.0.1/tcp/{}\"]\nbootstrap = [{}]\nthreads = 1\n{}\n{}\n{}\n",
			node.seed,
			node.seed,
			node.dir.display().to_string(),
			node.port,
			bootstrap.join(", "),
			node.extra,
			node.job.as_ref().unwrap_or(&self.job),
			self.schedule,
		);
		let path = node.dir.join("trainer.toml");
		std::fs::write(&path, config).map_err(|e| Error::io("writing", &path, e))?;
		let log_path = node.dir.join("log.txt");
		let log = std::fs::OpenOptions::new()
			.create(true)
			.append(true)
			.open(&log_path)
			.map_err(|e| Error::io("opening", &log_path, e))?;
		let child = Command::new(&self.binary)
			.args(["run", "--config"])
			.arg(&path)
			.env("RUST_LOG", &self.log_filter)
			.stdout(Stdio::null())
			.stderr(log)
			.spawn()
			.map_err(|e| Error::io("starting", &self.binary, e))?;
		node.child = Some(child);
		Ok(())
	}

	/// Kills trainer `i` (SIGKILL: a crash).
	pub fn kill(&mut self, i: usize) {
		if let Some(mut c) = self.nodes[i].child.take() {
			let _ = c.kill();
			let _ = c.wait();
		}
	}

	/// Errors if trainer `i` exited unsuccessfully.
	fn check_alive(&mut self, i: usize) -> Result<()> {
		let exited = self.nodes[i].child.as_mut().and_then(|c| c.try_wait().ok().flatten());
		match exited {
			Some(status) if !status.success() => Err(Error::Network(format!(
				"trainer {i} exited with {status}; log:\n{}",
				self.nodes[i].log_tail(40)
			))),
			_ => Ok(()),
		}
	}

	/// How many trainers are still running.
	pub fn running(&mut self) -> usize {
		self.nodes
			.iter_mut()
			.filter_map(|n| n.child.as_mut())
			.map(|c| c.try_wait())
			.filter(|w| matches!(w, Ok(None)))
			.count()
	}

	/// Waits until trainer `i` has recorded `n` rounds.
	pub fn wait_rounds(&mut self, i: usize, n: usize, timeout: Duration) -> Result<()> {
		let start = Instant::now();
		while self.nodes[i].rounds().len() < n {
			self.check_alive(i)?;
			if start.elapsed() > timeout {
				return Err(Error::Network(format!(
					"trainer {i} did not reach {n} rounds in {timeout:?}; log:\n{}",
					self.nodes[i].log_tail(40)
				)));
			}
			std::thread::sleep(Duration::from_millis(100));
		}
		Ok(())
	}

	/// Waits for every running trainer to finish successfully.
	pub fn wait_all(&mut self, timeout: Duration) -> Result<()> {
		let start = Instant::now();
		for i in 0..self.nodes.len() {
			while let Some(child) = self.nodes[i].child.as_mut() {
				let done =
					child.try_wait().map_err(|e| Error::io("waiting for", &self.binary, e))?;
				if let Some(status) = done {
					if !status.success() {
						return Err(Error::Network(format!(
							"trainer {i} failed with {status}; log:\n{}",
							self.nodes[i].log_tail(40)
						)));
					}
					self.nodes[i].child = None;
				} else if start.elapsed() > timeout {
					return Err(Error::Network(format!(
						"trainer {i} still running after {timeout:?}; log:\n{}",
						self.nodes[i].log_tail(40)
					)));
				} else {
					std::thread::sleep(Duration::from_millis(100));
				}
			}
		}
		Ok(())
	}

	/// Model hash per round, per trainer that recorded the round.
	pub fn hashes(&self) -> BTreeMap<u64, BTreeMap<usize, String>> {
		let mut by_round: BTreeMap<u64, BTreeMap<usize, String>> = BTreeMap::new();
		for (i, node) in self.nodes.iter().enumerate() {
			for r in node.rounds() {
				if let (Some(round), Some(hash)) = (r["round"].as_u64(), r["model_hash"].as_str()) {
					by_round.entry(round).or_default().insert(i, hash.to_string());
				}
			}
		}
		by_round
	}

	/// Rounds in which trainer `who`'s update was aggregated, as trainer `by` recorded.
	pub fn aggregated_rounds(&self, by: usize, who: usize) -> Vec<u64> {
		let id = Value::from(self.nodes[who].peer_id());
		self.nodes[by]
			.rounds()
			.iter()
			.filter(|r| r["aggregated"].as_array().is_some_and(|a| a.contains(&id)))
			.filter_map(|r| r["round"].as_u64())
			.collect()
	}
}

impl Drop for LocalNet {
	fn drop(&mut self) {
		for i in 0..self.nodes.len() {
			self.kill(i);
		}
	}
}
