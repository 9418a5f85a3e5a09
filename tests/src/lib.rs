//! Helpers for end-to-end tests against real `grid-node` processes.
//!
//! Every node runs on free loopback ports with its state in a temporary directory and is
//! killed when its [`Node`] handle drops, so a failing test leaves nothing behind.

use std::{
	fs::File,
	path::{Path, PathBuf},
	process::{Child, Command, Output, Stdio},
	thread,
	time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

pub mod calls;
pub mod chain;
pub mod cpu;
pub mod network;
pub mod rounds;
pub mod trainers;

/// Path of the `grid-node` binary under test.
///
/// `GRID_NODE_BIN` wins; otherwise the binary built next to this test executable
/// (`target/<profile>/grid-node`, the test itself lives in `target/<profile>/deps/`).
pub fn node_binary() -> PathBuf {
	if let Some(path) = std::env::var_os("GRID_NODE_BIN") {
		return PathBuf::from(path);
	}
	let exe = std::env::current_exe().expect("test executable path");
	let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
	let bin = profile_dir.join("grid-node");
	assert!(
		bin.is_file(),
		"{} not found: build it first (`cargo build --release -p grid-node`) or set GRID_NODE_BIN",
		bin.display()
	);
	bin
}

/// A loopback TCP port nobody listens on right now (see [`grid_primitives::ports`]).
pub fn free_port() -> u16 {
	grid_primitives::ports::free_loopback_port().expect("a free loopback port")
}

/// Runs `grid-node` with `args` to completion (for subcommands and bad-input checks).
pub fn run_node_command(args: &[&str]) -> Result<Output> {
	Command::new(node_binary())
		.args(args)
		.output()
		.with_context(|| format!("running grid-node {args:?}"))
}

/// Kills a test's child process (SIGKILL: a crash) and reaps it.
pub fn kill_child(child: &mut Option<Child>) {
	if let Some(mut child) = child.take() {
		let _ = child.kill();
		let _ = child.wait();
	}
}

/// The last `lines` lines of a log file (empty if it cannot be read).
pub fn tail(path: &Path, lines: usize) -> String {
	let text = std::fs::read_to_string(path).unwrap_or_default();
	let all: Vec<&str> = text.lines().collect();
	all[all.len().saturating_sub(lines)..].join("\n")
}

/// Polls `check` every 500 ms until it returns `Some`, or fails after `timeout`.
pub fn wait_for<T>(
	what: &str,
	timeout: Duration,
	mut check: impl FnMut() -> Option<T>,
) -> Result<T> {
	let start = Instant::now();
	loop {
		if let Some(value) = check() {
			return Ok(value);
		}
		if start.elapsed() > timeout {
			bail!("timed out after {timeout:?} waiting for {what}");
		}
		thread::sleep(Duration::from_millis(500));
	}
}

/// Ports one node listens on, all on 127.0.0.1.
#[derive(Clone, Copy, Debug)]
pub struct Ports {
	/// libp2p.
	pub p2p: u16,
	/// JSON-RPC (HTTP and WebSocket).
	pub rpc: u16,
	/// Prometheus metrics.
	pub prometheus: u16,
}

impl Ports {
	/// Three distinct free ports.
	pub fn free() -> Self {
		loop {
			let ports = Ports { p2p: free_port(), rpc: free_port(), prometheus: free_port() };
			if ports.p2p != ports.rpc
				&& ports.rpc != ports.prometheus
				&& ports.p2p != ports.prometheus
			{
				return ports;
			}
		}
	}
}

/// A running `grid-node` process, killed on drop.
pub struct Node {
	/// Name used in logs and errors.
	pub name: String,
	/// Its ports.
	pub ports: Ports,
	/// Its `--base-path`; kept so a restarted node reuses its database and keystore.
	pub base_path: PathBuf,
	extra_args: Vec<String>,
	log_path: PathBuf,
	child: Option<Child>,
}

impl Node {
	/// Starts a node with its state in `base_path`, on fresh loopback ports, plus `extra_args`.
	pub fn start(name: &str, base_path: &Path, extra_args: &[String]) -> Result<Self> {
		let mut node = Node {
			name: name.to_string(),
			ports: Ports::free(),
			base_path: base_path.to_path_buf(),
			extra_args: extra_args.to_vec(),
			log_path: base_path.join(format!("{name}.log")),
			child: None,
		};
		node.spawn()?;
		Ok(node)
	}

	fn spawn(&mut self) -> Result<()> {
		std::fs::create_dir_all(&self.base_path)?;
		let log = File::options().create(true).append(true).open(&self.log_path)?;
		let p = self.ports;
		let child = Command::new(node_binary())
			.arg("--base-path")
			.arg(&self.base_path)
			.args(["--name", &self.name])
			.args(["--listen-addr", &format!("/ip4/127.0.0.1/tcp/{}", p.p2p)])
			.args(["--rpc-port", &p.rpc.to_string()])
			.args(["--prometheus-port", &p.prometheus.to_string()])
			// Stay on this machine: no multicast discovery, no telemetry.
			.args(["--no-mdns", "--no-telemetry"])
			.args(&self.extra_args)
			.stdout(log.try_clone()?)
			.stderr(log)
			.stdin(Stdio::null())
			.spawn()
			.with_context(|| format!("starting {}", self.name))?;
		self.child = Some(child);
		self.wait_rpc_ready()
	}

	fn wait_rpc_ready(&mut self) -> Result<()> {
		let start = Instant::now();
		while start.elapsed() < Duration::from_secs(60) {
			if let Some(child) = self.child.as_mut() {
				if let Some(status) = child.try_wait()? {
					bail!(
						"{} exited with {status} while starting:\n{}",
						self.name,
						self.log_tail()
					);
				}
			}
			if self.rpc("system_name", json!([])).is_ok() {
				return Ok(());
			}
			thread::sleep(Duration::from_millis(300));
		}
		bail!("{} did not open its RPC port within 60 s:\n{}", self.name, self.log_tail())
	}

	/// Kills the process (SIGKILL: a crash, not a clean shutdown).
	pub fn kill(&mut self) {
		kill_child(&mut self.child);
	}

	/// Starts the killed process again with the same base path and arguments (new ports).
	pub fn restart(&mut self) -> Result<()> {
		self.kill();
		self.ports = Ports::free();
		self.spawn()
	}

	/// Starts the killed process again with the same base path, arguments and ports (so
	/// clients configured with its URL find it again).
	pub fn restart_in_place(&mut self) -> Result<()> {
		self.kill();
		self.spawn()
	}

	/// The last lines of the node's log, for failure messages.
	pub fn log_tail(&self) -> String {
		tail(&self.log_path, 40)
	}

	/// Makes one JSON-RPC call over HTTP and returns its `result`.
	pub fn rpc(&self, method: &str, params: Value) -> Result<Value> {
		let url = format!("http://127.0.0.1:{}", self.ports.rpc);
		let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
		let response: Value = ureq::post(&url)
			.timeout(Duration::from_secs(10))
			.send_json(body)
			.with_context(|| format!("{}: {method}", self.name))?
			.into_json()?;
		if let Some(error) = response.get("error") {
			bail!("{}: {method} failed: {error}", self.name);
		}
		response.get("result").cloned().ok_or_else(|| anyhow!("{}: {method}: no result", self.name))
	}

	/// Its process id, while it runs.
	pub fn pid(&self) -> Option<u32> {
		self.child.as_ref().map(Child::id)
	}

	/// Number of the best block.
	pub fn best_number(&self) -> Result<u32> {
		header_number(&self.rpc("chain_getHeader", json!([]))?)
	}

	/// Hash of the last finalized block.
	pub fn finalized_hash(&self) -> Result<String> {
		as_string(self.rpc("chain_getFinalizedHead", json!([]))?)
	}

	/// Number of the last finalized block.
	pub fn finalized_number(&self) -> Result<u32> {
		let hash = self.finalized_hash()?;
		header_number(&self.rpc("chain_getHeader", json!([hash]))?)
	}

	/// How many peers the node is connected to.
	pub fn peers(&self) -> Result<u64> {
		self.rpc("system_health", json!([]))?["peers"]
			.as_u64()
			.ok_or_else(|| anyhow!("{}: system_health without peers", self.name))
	}

	/// The node's libp2p address on loopback, for `--bootnodes`.
	pub fn multiaddr(&self) -> Result<String> {
		let peer_id = as_string(self.rpc("system_localPeerId", json!([]))?)?;
		Ok(format!("/ip4/127.0.0.1/tcp/{}/p2p/{peer_id}", self.ports.p2p))
	}

	/// Waits until the node has finalized block `number`.
	pub fn wait_finalized(&self, number: u32, timeout: Duration) -> Result<u32> {
		wait_for(&format!("{} to finalize #{number}", self.name), timeout, || {
			self.finalized_number().ok().filter(|n| *n >= number)
		})
		.map_err(|e| anyhow!("{e}\n{} log:\n{}", self.name, self.log_tail()))
	}

	/// The Prometheus metrics page.
	pub fn metrics(&self) -> Result<String> {
		let url = format!("http://127.0.0.1:{}/metrics", self.ports.prometheus);
		Ok(ureq::get(&url).timeout(Duration::from_secs(10)).call()?.into_string()?)
	}
}

impl Drop for Node {
	fn drop(&mut self) {
		self.kill();
	}
}

fn as_string(value: Value) -> Result<String> {
	value.as_str().map(str::to_owned).ok_or_else(|| anyhow!("expected a string, got {value}"))
}

fn header_number(header: &Value) -> Result<u32> {
	let hex =
		header["number"].as_str().ok_or_else(|| anyhow!("header without number: {header}"))?;
	Ok(u32::from_str_radix(hex.trim_start_matches("0x"), 16)?)
}
