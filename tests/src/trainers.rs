//! `grid-trainer` processes for end-to-end tests: providers started from generated
//! configuration files on free loopback ports, and the buyer's CLI.

use std::{
	fs::File,
	io::{BufRead, BufReader},
	path::{Path, PathBuf},
	process::{Child, Command, Output, Stdio},
	sync::mpsc,
	time::Duration,
};

use anyhow::{anyhow, Context, Result};
use serde_json::Value;

use crate::{free_port, wait_for};

/// Path of the `grid-trainer` binary (`GRID_TRAINER_BIN`, or next to `grid-node`).
pub fn trainer_binary() -> PathBuf {
	if let Some(path) = std::env::var_os("GRID_TRAINER_BIN") {
		return PathBuf::from(path);
	}
	let bin = crate::node_binary().with_file_name("grid-trainer");
	assert!(bin.is_file(), "{} not found: build the workspace first", bin.display());
	bin
}

/// Runs the buyer CLI (`grid-trainer job …`) against the node at `url` to completion.
pub fn job_cli(url: &str, args: &[&str]) -> Result<Output> {
	let mut command = Command::new(trainer_binary());
	command.arg("job").arg(args[0]).args(["--url", url]).args(&args[1..]);
	command.output().with_context(|| format!("running grid-trainer job {args:?}"))
}

/// Logits `[rows, time, vocab]` (flat) that Hugging Face `transformers` computes for `tokens`
/// with the model exported into `dir`, and the architecture it loaded, through
/// `scripts/python/hf_logits.py` in the Python environment `scripts/setup.sh` makes
/// (`$GRID_PYTHON`, by default `~/.cache/grid-python/bin/python`).
pub fn hf_logits(dir: &Path, tokens: &[Vec<u32>]) -> Result<(String, Vec<f32>)> {
	let python = match std::env::var_os("GRID_PYTHON") {
		Some(p) => PathBuf::from(p),
		None => PathBuf::from(std::env::var_os("HOME").context("HOME")?)
			.join(".cache/grid-python/bin/python"),
	};
	anyhow::ensure!(python.exists(), "{} is missing: run scripts/setup.sh", python.display());
	let tokens_file = dir.join("tokens.json");
	std::fs::write(&tokens_file, serde_json::to_vec(tokens)?)?;
	let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/python/hf_logits.py");
	let out = Command::new(&python)
		.arg(script)
		.arg(&tokens_file)
		.arg(dir)
		.env("JAX_PLATFORMS", "cpu")
		.output()
		.context("running hf_logits.py")?;
	anyhow::ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
	let all: Value = serde_json::from_slice(&out.stdout)?;
	let model =
		all.as_object().and_then(|m| m.values().next()).context("no model in the output")?;
	let architecture = model["architecture"].as_str().unwrap_or_default().to_owned();
	Ok((architecture, serde_json::from_value(model["logits"].clone())?))
}

/// What a test provider is told.
pub struct ProviderSpec<'a> {
	/// Name (and directory).
	pub name: &'a str,
	/// Its account's secret URI (`//Bob`).
	pub account: &'a str,
	/// Stake in GRID.
	pub stake: u32,
	/// Extra lines for the file's top level (before any table).
	pub extra: &'a str,
	/// Compute threads (1 keeps many providers on a 2-core machine apart; a GPU provider
	/// wants more for the host's share of a large model's round: codec, aggregation).
	pub threads: usize,
	/// Held-out samples evaluated after each round.
	pub eval_samples: usize,
	/// The largest model it takes (the daemon's default, 50M parameters, unless given).
	pub max_parameters: Option<u64>,
	/// Its `leave_without_quorum` (the daemon's default, 2, unless given).
	pub leave_without_quorum: Option<usize>,
}

impl<'a> ProviderSpec<'a> {
	/// A provider as most tests run one: one compute thread, 500 held-out samples a round,
	/// the daemon's default model limit.
	pub fn new(name: &'a str, account: &'a str, stake: u32, extra: &'a str) -> Self {
		ProviderSpec {
			name,
			account,
			stake,
			extra,
			threads: 1,
			eval_samples: 500,
			max_parameters: None,
			leave_without_quorum: None,
		}
	}
}

/// A running provider daemon, killed on drop.
pub struct Provider {
	/// Its name.
	pub name: String,
	/// Its data directory.
	pub dir: PathBuf,
	config: PathBuf,
	log_path: PathBuf,
	child: Option<Child>,
}

impl Provider {
	/// Writes the provider's file under `root` and starts it against the node at `url`.
	pub fn start(root: &Path, url: &str, spec: &ProviderSpec) -> Result<Self> {
		let dir = root.join(spec.name);
		std::fs::create_dir_all(&dir)?;
		let config = root.join(format!("{}.toml", spec.name));
		let text = format!(
			r#"name = "{name}"
data_dir = "{name}"
listen = "/ip4/127.0.0.1/tcp/{p2p}"
threads = {threads}
{extra}

[chain]
url = "{url}"
account = "{account}"
stake = {stake}
endpoint = "http://127.0.0.1:{status}/health"
serve_final_secs = 60
{max_parameters}
{leave_without_quorum}

[training]
eval_samples = {eval_samples}
# A 10k-image dataset: uncapped, a round of MNIST steps overfits it.
max_steps = 100
"#,
			name = spec.name,
			p2p = free_port(),
			extra = spec.extra,
			threads = spec.threads,
			eval_samples = spec.eval_samples,
			max_parameters =
				spec.max_parameters.map_or(String::new(), |p| format!("max_parameters = {p}")),
			leave_without_quorum = spec
				.leave_without_quorum
				.map_or(String::new(), |n| format!("leave_without_quorum = {n}")),
			account = spec.account,
			stake = spec.stake,
			status = free_port(),
		);
		std::fs::write(&config, text)?;
		let mut provider = Provider {
			name: spec.name.to_string(),
			log_path: root.join(format!("{}.log", spec.name)),
			dir,
			config,
			child: None,
		};
		provider.spawn()?;
		Ok(provider)
	}

	fn spawn(&mut self) -> Result<()> {
		let log = File::options().create(true).append(true).open(&self.log_path)?;
		let child = Command::new(trainer_binary())
			.args(["provide", "--config"])
			.arg(&self.config)
			.env("RUST_LOG", "info,libp2p_gossipsub=warn")
			.stdout(Stdio::null())
			.stderr(log)
			.spawn()
			.with_context(|| format!("starting provider {}", self.name))?;
		self.child = Some(child);
		Ok(())
	}

	/// Kills the process (a crash).
	pub fn kill(&mut self) {
		crate::kill_child(&mut self.child);
	}

	/// Starts it again with the same files.
	pub fn restart(&mut self) -> Result<()> {
		self.kill();
		self.spawn()
	}

	/// Its process id, while it runs.
	pub fn pid(&self) -> Option<u32> {
		self.child.as_ref().map(Child::id)
	}

	/// Whether the process has exited (and how).
	pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
		self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
	}

	/// Its whole log.
	pub fn log(&self) -> String {
		std::fs::read_to_string(&self.log_path).unwrap_or_default()
	}

	/// The last lines of its log.
	pub fn log_tail(&self) -> String {
		format!("--- {} ---\n{}", self.name, crate::tail(&self.log_path, 30))
	}

	/// Lines of its log that contain `needle`.
	pub fn log_lines_with(&self, needle: &str) -> usize {
		self.log().lines().filter(|l| l.contains(needle)).count()
	}

	/// Its `rounds.jsonl` records for `job`.
	pub fn rounds(&self, job: u64) -> Vec<Value> {
		let path = self.dir.join(format!("job-{job}")).join("rounds.jsonl");
		std::fs::read_to_string(path)
			.unwrap_or_default()
			.lines()
			.filter_map(|l| serde_json::from_str(l).ok())
			.collect()
	}

	/// Its `status.json` for job `job`, if it wrote one.
	pub fn status(&self, job: u64) -> Option<Value> {
		let text = std::fs::read_to_string(self.dir.join(format!("job-{job}")).join("status.json"));
		serde_json::from_str(&text.ok()?).ok()
	}
}

/// Waits, a minute at most, until every one of `providers` says it finished job `job`: it
/// writes its last round's record once it sees the job end and that round's evaluation is
/// in, which can take longer than any fixed pause. Says on stderr when it gave up.
pub fn wait_finished(providers: &[Provider], job: u64) {
	let finished = |p: &Provider| p.status(job).is_some_and(|s| s["finished"] == true);
	let waited = wait_for("every provider to finish the job", Duration::from_secs(60), || {
		providers.iter().all(finished).then_some(())
	});
	if let Err(e) = waited {
		eprintln!("job {job}: {e:#}");
	}
}

impl Drop for Provider {
	fn drop(&mut self) {
		self.kill();
	}
}

/// Stops the publisher however the test ends.
pub struct Publisher(Child);

impl Drop for Publisher {
	fn drop(&mut self) {
		let _ = self.0.kill();
		let _ = self.0.wait();
	}
}

/// Publishes `path` in `format` and returns the publisher with the job-file line it printed
/// (`dataset = { uri = "…", content_hash = "0x…" }`, or `initial_weights = …` for weights).
pub fn publish(
	path: &std::path::Path,
	format: &str,
	store: &std::path::Path,
) -> Result<(Publisher, String)> {
	let child = Command::new(trainer_binary())
		.args(["data", "publish", "--format", format, "--listen", "/ip4/127.0.0.1/tcp/0"])
		.arg("--store")
		.arg(store)
		.arg(path)
		.stdout(Stdio::piped())
		.stderr(Stdio::null())
		.spawn()
		.context("starting grid-trainer data publish")?;
	let mut publisher = Publisher(child);
	let stdout = publisher.0.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
	let (tx, rx) = mpsc::channel();
	std::thread::spawn(move || {
		for line in BufReader::new(stdout).lines().map_while(Result::ok) {
			let _ = tx.send(line);
		}
	});
	loop {
		let line = rx.recv_timeout(Duration::from_secs(60)).context("the publisher's address")?;
		if let Some(job_line) = line.strip_prefix("job file: ") {
			return Ok((publisher, job_line.to_owned()));
		}
	}
}
