//! Scale: one job trained by N real provider daemons (`grid-trainer provide`, each with its own
//! libp2p identity and chain account) on a real `grid-node --dev`, for several N (issue 26's
//! trainer sweep).
//!
//! For each N, on a fresh dev node: N accounts (`//scale-0` …) are funded by Alice; N
//! providers start (each registers itself with its stake and joins the job that fits); Alice
//! posts the quick MNIST job (`examples/mnist-job.toml`: an MLP, rounds of 5 blocks, capped at
//! 100 inner steps) needing all N, for R rounds, and it runs to completion or a deadline.
//! Read back from the chain's events: per round, its length in blocks, proofs accepted, the
//! share of members whose proof attested the quorum's model, blocks from the quorum to the
//! payment, proofs per block; from each trainer's files: the model it computed each round,
//! its exchange time, the updates it missed, and the bytes it served and fetched.
//!
//! The baseline of each ratio is the smallest N of the same invocation (these machines are
//! noisy, so every N runs in one invocation, one after the other).
//!
//! usage: scale [--trainers 4,8,16] [--rounds R] [--round-blocks B] [--fetch-timeout-ms T]
//!              [--out DIR] [--keep FILES]
//! Writes DIR/scale.md and DIR/scale.json.

use std::{
	collections::{BTreeMap, HashMap},
	path::{Path, PathBuf},
	sync::atomic::{AtomicBool, Ordering},
	time::{Duration, Instant},
};

use anyhow::{bail, ensure, Context, Result};
use grid_e2e_tests::{
	cpu::{Kind, Sampler},
	network::{dev_account, fund_providers, post_job, url, wait_status, MNIST_JOB, STAKE},
	rounds::{read_job, ChainRound},
	trainers::{wait_finished, Provider, ProviderSpec},
	wait_for, Node,
};
use grid_primitives::job::{ExchangeWindow, MIN_FAN_IN};
use polkadot_sdk::sp_core::crypto::AccountId32;
use serde_json::{json, Value};

/// Seconds per block of the dev chain.
const BLOCK_SECS: f64 = 6.0;

struct Args {
	trainers: Vec<usize>,
	rounds: u32,
	out: PathBuf,
	/// Where the runs' files go and stay (nodes' and trainers' logs); a temporary directory,
	/// removed at the end, when not given.
	keep: Option<PathBuf>,
	/// Blocks per round (the quick job's 5 unless told): longer rounds give each trainer more
	/// of the shared cores per round, which tells the machine's limits from the protocol's.
	round_blocks: u32,
	/// The job's exchange (1,500 ms of grace and a 4,000 ms fetch wait unless told): every
	/// member keeps its allowance, `2 × grace + fetch / 2`, between the commit deadline and
	/// its proof.
	exchange: ExchangeWindow,
	/// Also run each N with at most this many updates aggregated a round, after its
	/// all-to-all run.
	fan_in: Option<u16>,
}

fn args() -> Result<Args> {
	let mut parsed = Args {
		trainers: vec![4, 8, 16],
		rounds: 4,
		out: PathBuf::from("bench/reports"),
		keep: None,
		round_blocks: 5,
		exchange: ExchangeWindow::default(),
		fan_in: None,
	};
	let mut words = std::env::args().skip(1);
	while let Some(flag) = words.next() {
		let value = words.next().with_context(|| format!("{flag} needs a value"))?;
		match flag.as_str() {
			"--trainers" => {
				parsed.trainers = value
					.split(',')
					.map(|n| n.trim().parse().with_context(|| format!("--trainers {n:?}")))
					.collect::<Result<_>>()?
			}
			"--rounds" => parsed.rounds = value.parse()?,
			"--out" => parsed.out = value.into(),
			"--keep" => parsed.keep = Some(value.into()),
			"--round-blocks" => parsed.round_blocks = value.parse()?,
			"--grace-ms" => parsed.exchange.grace_ms = value.parse()?,
			"--fetch-ms" => parsed.exchange.fetch_ms = value.parse()?,
			"--fan-in" => parsed.fan_in = Some(value.parse()?),
			other => bail!(
				"unknown option {other} (--trainers, --rounds, --round-blocks, --grace-ms, \
				 --fetch-ms, --fan-in, --out, --keep)"
			),
		}
	}
	ensure!(
		!parsed.trainers.is_empty() && parsed.trainers.iter().all(|n| (2..=64).contains(n)),
		"--trainers takes counts of 2 to 64 (the chain's MaxParticipants)"
	);
	ensure!((2..=20).contains(&parsed.rounds), "--rounds must be 2..=20");
	ensure!(
		parsed.fan_in.is_none_or(|g| g >= MIN_FAN_IN),
		"--fan-in must be at least {MIN_FAN_IN}"
	);
	ensure!((2..=50).contains(&parsed.round_blocks), "--round-blocks must be 2..=50");
	ensure!((100..=10_000).contains(&parsed.exchange.grace_ms), "--grace-ms must be 100..=10000");
	ensure!(
		(1_000..=60_000).contains(&parsed.exchange.fetch_ms),
		"--fetch-ms must be 1000..=60000"
	);
	ensure!(
		parsed.exchange.fits(u64::from(parsed.round_blocks)),
		"the exchange's allowance (2 × grace + fetch / 2 = {} ms) may be at most half the \
		 round ({} blocks of 6 s)",
		parsed.exchange.allowance_ms(),
		parsed.round_blocks
	);
	Ok(parsed)
}

/// What one N's run measured.
struct Run {
	n: usize,
	/// The job's bounded fan-in (`None`: every member's update aggregated).
	fan_in: Option<u16>,
	completed: bool,
	/// From posting the job to its start (every provider registered and joined).
	setup_s: f64,
	rounds: BTreeMap<u32, ChainRound>,
	max_proofs_per_block: u32,
	/// Per trainer: its round records and its status report.
	records: Vec<Vec<Value>>,
	status: Vec<Option<Value>>,
	/// Chain reads the trainers' followers gave up waiting for (`chain: no answer`, over
	/// every trainer): how far the one node kept up with N followers.
	unanswered: usize,
	/// State fetches (joins and re-syncs), over every trainer: a storm shows here.
	resyncs: usize,
	/// Suspects the fraud desks replayed, over every trainer, and of those the ones the
	/// short-norm screen flagged.
	replays: usize,
	short_replays: usize,
	/// The node's answer time to a light read, once a second while the job ran (ms; a read
	/// that got no answer in 10 s counts as 10,000): whether the node or the trainers were
	/// the ones slow when reads went unanswered.
	probe_ms: Vec<f64>,
	/// Where the machine's CPU went while the job ran.
	cpu: CpuUse,
}

/// CPU used while the job ran (from its start to its end or deadline), sampled from `/proc`.
struct CpuUse {
	/// Wall seconds sampled.
	wall_s: f64,
	/// The machine's cores.
	cores: usize,
	/// Per trainer, CPU seconds of its compute threads and of the rest.
	compute_s: Vec<f64>,
	other_s: Vec<f64>,
	/// The node's CPU seconds.
	node_s: f64,
}

impl CpuUse {
	/// `seconds` of CPU as a share of one core over the wall time.
	fn core_share(&self, seconds: f64) -> f64 {
		seconds / self.wall_s.max(1e-9)
	}

	/// Mean over trainers of `seconds`, as a share of one core over the wall time.
	fn per_trainer_core_share(&self, seconds: &[f64]) -> Option<f64> {
		mean(seconds).map(|s| self.core_share(s))
	}

	/// All trainers' and the node's CPU as a share of the whole machine.
	fn machine_share(&self) -> f64 {
		let used: f64 = self.compute_s.iter().chain(&self.other_s).sum::<f64>() + self.node_s;
		self.core_share(used) / self.cores as f64
	}

	fn headline(&self) -> Value {
		json!({
			"wall_s": self.wall_s,
			"cores": self.cores,
			"trainer_compute_core_share_mean": self.per_trainer_core_share(&self.compute_s),
			"trainer_other_core_share_mean": self.per_trainer_core_share(&self.other_s),
			"node_core_share": self.core_share(self.node_s),
			"machine_share_used": self.machine_share(),
		})
	}
}

impl Run {
	/// N, and the fan-in when bounded.
	fn label(&self) -> String {
		match self.fan_in {
			Some(g) => format!("{} (fan-in {g})", self.n),
			None => self.n.to_string(),
		}
	}

	/// Blocks from each round's settlement to the next's (the round period as the chain
	/// lives it), for the rounds after the first.
	fn period_blocks(&self) -> Vec<u32> {
		let settled: Vec<u32> = self.rounds.values().filter_map(|r| r.settled).collect();
		settled.windows(2).map(|w| w[1] - w[0]).collect()
	}

	/// Per round, the share of trainers whose model is the most common one.
	fn agreement(&self) -> Vec<f64> {
		let rounds = self.records.iter().map(Vec::len).max().unwrap_or(0);
		(0..rounds)
			.map(|r| {
				let mut counts: HashMap<String, usize> = HashMap::new();
				for records in &self.records {
					if let Some(hash) = records.get(r).and_then(|x| x["model_hash"].as_str()) {
						*counts.entry(hash.to_owned()).or_default() += 1;
					}
				}
				counts.values().copied().max().unwrap_or(0) as f64 / self.n as f64
			})
			.collect()
	}

	/// Per round, the share of members whose proof attested the quorum's model.
	fn attestation(&self) -> Vec<f64> {
		self.rounds.values().map(|r| f64::from(r.attested) / f64::from(r.members.max(1))).collect()
	}

	/// Blocks from each round's quorum to its first payment.
	fn payment_blocks(&self) -> Vec<u32> {
		self.rounds.values().filter_map(|r| Some(r.paid? - r.quorum?.0)).collect()
	}

	/// Per trainer, bytes served, fetched, and sent or heard with commitments over the run,
	/// divided by the rounds it recorded.
	fn bytes_per_round(&self) -> Vec<f64> {
		self.status
			.iter()
			.zip(&self.records)
			.filter_map(|(status, records)| {
				let net = &status.as_ref()?["network"];
				// Updates sent with their commitments count too (gossip's forwards do not).
				let bytes =
					["bytes_served", "bytes_fetched", "inline_bytes_sent", "inline_bytes_heard"]
						.iter()
						.map(|k| net[*k].as_f64().unwrap_or(0.0))
						.sum::<f64>();
				(!records.is_empty()).then(|| bytes / records.len() as f64)
			})
			.collect()
	}

	/// Over every trainer and round: mean of a round record's field (milliseconds).
	fn mean_field(&self, field: &str) -> Option<f64> {
		self.mean_of(|r| r[field].as_f64())
	}

	/// Over every trainer and round: mean of what `value` reads from a round record.
	fn mean_of(&self, value: impl Fn(&Value) -> Option<f64>) -> Option<f64> {
		mean(&self.records.iter().flatten().filter_map(value).collect::<Vec<_>>())
	}

	/// The decision's parts after the collection (`decision_ms` of the round records), each
	/// its mean over trainers and rounds.
	fn decision(&self) -> Value {
		let part = |name: &str| self.mean_of(|r| r["decision_ms"][name].as_f64());
		json!({
			"fetch": part("fetch"),
			"attest": part("attest"),
			"agreed_fetch": part("agreed_fetch"),
			"step": part("step"),
		})
	}

	/// Round records (any trainer) whose `field` lists at least one committer: `missing`
	/// (an agreed update that did not come) or `left_out` (too few witnesses held it).
	fn records_listing(&self, field: &str) -> usize {
		self.records
			.iter()
			.flatten()
			.filter(|r| r[field].as_array().is_some_and(|m| !m.is_empty()))
			.count()
	}

	fn headline(&self) -> Value {
		let period = mean(&self.period_blocks().iter().map(|b| f64::from(*b)).collect::<Vec<_>>());
		let bytes = self.bytes_per_round();
		let payment = self.payment_blocks().into_iter().max();
		let agreement = self.agreement();
		json!({
			"trainers": self.n,
			"fan_in": self.fan_in,
			"completed": self.completed,
			"setup_s": self.setup_s,
			"rounds_settled_with_result": self.rounds.values().filter(|r| r.result).count(),
			"round_period_s": period.map(|b| b * BLOCK_SECS),
			"exchange_ms_mean": self.mean_field("exchange_ms"),
			"decision_ms_mean": self.decision(),
			"compute_ms_mean": self.mean_field("compute_ms"),
			"steps_mean": self.mean_field("steps"),
			"bytes_per_trainer_per_round": { "mean": mean(&bytes), "max": bytes.iter().copied().reduce(f64::max) },
			"agreement_share_min": agreement.iter().copied().reduce(f64::min),
			"attestation_share_min": self.attestation().into_iter().reduce(f64::min),
			"records_with_missing_updates": self.records_listing("missing"),
			"records_leaving_updates_out": self.records_listing("left_out"),
			"payment_latency_s_max": payment.map(|b| f64::from(b) * BLOCK_SECS),
			"max_proofs_per_block": self.max_proofs_per_block,
			"chain_reads_unanswered": self.unanswered,
			"state_fetches": self.resyncs,
			"replays": { "all": self.replays, "short_norm": self.short_replays },
			"node_read_ms": { "median": quantile(&self.probe_ms, 0.5), "max": self.probe_ms.iter().copied().reduce(f64::max) },
			"cpu": self.cpu.headline(),
		})
	}
}

/// The `q` quantile of `xs` (nearest rank).
fn quantile(xs: &[f64], q: f64) -> Option<f64> {
	let mut sorted = xs.to_vec();
	sorted.sort_by(f64::total_cmp);
	let last = sorted.len().checked_sub(1)?;
	Some(sorted[((last as f64) * q).round() as usize])
}

/// Times a light read of `node` (`chain_getHeader`) once a second until `stop` is set.
fn probe(node: &Node, stop: &AtomicBool) -> Vec<f64> {
	let mut times = Vec::new();
	while !stop.load(Ordering::Relaxed) {
		let start = Instant::now();
		let answered = node.best_number().is_ok();
		times.push(if answered { start.elapsed().as_secs_f64() * 1e3 } else { 10_000.0 });
		std::thread::sleep(Duration::from_secs(1));
	}
	times
}

/// Samples the CPU of the trainers and the node once a second until `stop`.
fn sample_cpu(pids: &[u32], node: u32, stop: &AtomicBool) -> (Sampler, f64) {
	let mut sampler = Sampler::default();
	let all: Vec<u32> = pids.iter().copied().chain([node]).collect();
	let start = Instant::now();
	sampler.sample(&all);
	while !stop.load(Ordering::Relaxed) {
		std::thread::sleep(Duration::from_secs(1));
		sampler.sample(&all);
	}
	(sampler, start.elapsed().as_secs_f64())
}

fn mean(xs: &[f64]) -> Option<f64> {
	(!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// A dev node that takes a connection from every trainer with room to spare: its JSON-RPC
/// server's default of 100 connections was reached at N = 64 while followers leaked a
/// connection at each reconnect (fixed since, `Chain::open`), and then refused every new one
/// (a validator serving many providers is configured for more).
fn scale_node(dir: &Path) -> Result<Node> {
	let args = ["--dev", "--rpc-max-connections", "1000"].map(String::from);
	let node = Node::start("dev", dir, &args)?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	Ok(node)
}

/// Runs the job with `n` providers, as `args` say (rounds, their length, the exchange).
fn run(n: usize, fan_in: Option<u16>, args: &Args, root: &Path) -> Result<Run> {
	let (rounds, round_blocks, exchange) = (args.rounds, args.round_blocks, args.exchange);
	let dir = root.join(match fan_in {
		Some(g) => format!("n{n}-fan-in-{g}"),
		None => format!("n{n}"),
	});
	std::fs::create_dir_all(&dir)?;
	let node = scale_node(&dir)?;
	let url = url(&node);
	let start = node.best_number()?;
	let names: Vec<String> = (0..n).map(|i| format!("scale-{i}")).collect();
	let accounts: Vec<AccountId32> =
		names.iter().map(|name| dev_account(name)).collect::<Result<_>>()?;
	fund_providers(&node, &accounts)?;
	eprintln!("n = {n}: funded");
	let providers: Vec<Provider> = names
		.iter()
		.map(|name| {
			let account = format!("//{name}");
			// The run measures the exchange of N trainers on one overloaded machine, where
			// rounds can miss their quorum; a trainer leaving the job over that (the daemon's
			// policy against buyers who block quorums) would end the run, not measure it.
			let spec = ProviderSpec {
				leave_without_quorum: Some(0),
				..ProviderSpec::new(name, &account, STAKE, "")
			};
			Provider::start(&dir, &url, &spec)
		})
		.collect::<Result<_>>()?;
	let posted = Instant::now();
	let spec = MNIST_JOB
		.replace("rounds = 3\n", &format!("rounds = {rounds}\n"))
		.replace("min_providers = 3\n", &format!("min_providers = {n}\n"))
		.replace("max_providers = 4\n", &format!("max_providers = {n}\n"))
		.replace(
			"round_blocks = 5\n",
			&format!(
				"round_blocks = {round_blocks}\nexchange = {{ grace_ms = {}, fetch_ms = {}{} }}\n",
				exchange.grace_ms,
				exchange.fetch_ms,
				fan_in.map_or(String::new(), |g| format!(", fan_in = {g}")),
			),
		);
	post_job(&url, &dir, &spec, 0)?;
	let started = wait_for("the job to start", Duration::from_secs(120 + 10 * n as u64), || {
		read_job(&node, 0, start).ok()?.started
	})
	.map(|_| posted.elapsed().as_secs_f64());
	let setup_s = match started {
		Ok(secs) => secs,
		Err(e) => bail!("n = {n}: {e}\n{}", grid_e2e_tests::network::logs(&providers)),
	};
	eprintln!("n = {n}: started after {setup_s:.0} s");
	// Allow three times each round's blocks per round and a minute more.
	let budget = Duration::from_secs(60 + 3 * 6 * u64::from(round_blocks * rounds));
	let stop = AtomicBool::new(false);
	let pids: Vec<u32> = providers.iter().filter_map(Provider::pid).collect();
	let node_pid = node.pid().context("the node is not running")?;
	let (completed, probe_ms, (sampler, wall_s)) = std::thread::scope(|scope| {
		let probing = scope.spawn(|| probe(&node, &stop));
		let sampling = scope.spawn(|| sample_cpu(&pids, node_pid, &stop));
		let done = wait_status(&url, 0, budget, &providers, |s| s.contains("completed"));
		stop.store(true, Ordering::Relaxed);
		let sampled = sampling.join().unwrap_or_else(|_| (Sampler::default(), 0.0));
		(done.is_ok(), probing.join().unwrap_or_default(), sampled)
	});
	let cpu = CpuUse {
		wall_s,
		cores: std::thread::available_parallelism().map_or(1, usize::from),
		compute_s: pids.iter().map(|&p| sampler.seconds(p, Kind::Compute)).collect(),
		other_s: pids.iter().map(|&p| sampler.seconds(p, Kind::Other)).collect(),
		node_s: sampler.seconds(node_pid, Kind::Compute) + sampler.seconds(node_pid, Kind::Other),
	};
	eprintln!("n = {n}: {}", if completed { "completed" } else { "not completed in time" });
	if completed {
		wait_finished(&providers, 0);
	}
	let events = read_job(&node, 0, start)?;
	let (rounds_read, max_proofs_per_block) = (events.rounds, events.max_proofs_per_block);
	let records = providers.iter().map(|p| p.rounds(0)).collect();
	let status = providers.iter().map(|p| p.status(0)).collect();
	// Log lines with `text`, all trainers together.
	let lines = |text: &str| -> usize { providers.iter().map(|p| p.log_lines_with(text)).sum() };
	let (unanswered, resyncs) = (lines("chain: no answer"), lines("fetching the global state"));
	let (replays, short_replays) = (lines("); replaying it"), lines("short next to its peers"));
	Ok(Run {
		n,
		fan_in,
		completed,
		setup_s,
		rounds: rounds_read,
		max_proofs_per_block,
		records,
		status,
		unanswered,
		resyncs,
		replays,
		short_replays,
		probe_ms,
		cpu,
	})
}

fn fmt(x: Option<f64>, digits: usize) -> String {
	x.map_or("n/a".into(), |x| format!("{x:.digits$}"))
}

fn markdown(runs: &[Run], failed: &[(usize, String)], args: &Args) -> String {
	let (rounds, round_blocks) = (args.rounds, args.round_blocks);
	let (grace_ms, fetch_ms) = (args.exchange.grace_ms, args.exchange.fetch_ms);
	let allowance_ms = args.exchange.allowance_ms();
	let mut md = format!(
		"# Scale: one job, N provider daemons, a dev chain\n\n\
		 Generated by `bench/scale.sh` (`tests/src/bin/scale.rs`); do not edit by hand. \
		 Headline figures in `scale.json`, with the chain load test's proofs per block and \
		 the largest state a joiner synced (from `chain_load.json` and `state_sync.json` \
		 beside it).\n\n\
		 For each N, on a fresh `grid-node --dev` (6 s blocks): N accounts funded by Alice, N \
		 `grid-trainer provide` processes on loopback (each its own libp2p identity and \
		 account, one compute thread at the lowest priority (niceness 19, as every \
		 provider's training runs), all on this machine's cores), and the quick MNIST job \
		 (`examples/mnist-job.toml`: an MLP of 50,890 parameters, int8 updates, rounds of \
		 {round_blocks} blocks, at most 100 inner steps) needing all N, for {rounds} rounds. Every trainer \
		 fetches every other's update (all-to-all), from its committer first, then from the \
		 members that attest holding it (the round's agreed set). The job's exchange \
		 (`training.exchange`, the same for every member): commitments taken for {grace_ms} ms \
		 past the commit deadline, updates waited for at most {fetch_ms} ms, so the commit \
		 deadline is {allowance_ms} ms (`2 × grace + fetch / 2`) before the time the proofs must \
		 go. Ratios are against the smallest N of this run.\n\n\
		 | N | completed | setup (s) | rounds with a result | inner steps per round | round period (s) | exchange and wait per round (ms) | vs smallest N | bytes per trainer per round (mean / max) | vs smallest N | trainers agreeing (worst round) | members attesting the quorum (worst round) | records missing an update | records leaving one out | quorum to payment (s, worst) | most proofs in a block | chain reads unanswered | node read ms (median / max) | state fetches | replays (short-norm) |\n\
		 |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
	);
	let base = runs.first().map(Run::headline);
	let ratio = |h: &Value, key: &str, sub: Option<&str>| {
		let get = |v: &Value| {
			let v = &v[key];
			sub.map_or(v.as_f64(), |s| v[s].as_f64())
		};
		match (get(h), base.as_ref().and_then(get)) {
			(Some(x), Some(b)) if b > 0.0 => format!("{:.2}x", x / b),
			_ => "n/a".into(),
		}
	};
	for run in runs {
		let h = run.headline();
		let share =
			|key: &str| h[key].as_f64().map_or("n/a".into(), |x| format!("{:.0}%", 100.0 * x));
		md += &format!(
			"| {} | {} | {:.0} | {}/{} | {} | {} | {} | {} | {} / {} KB | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} ({}) |\n",
			run.label(),
			if run.completed { "yes" } else { "no" },
			run.setup_s,
			h["rounds_settled_with_result"],
			rounds,
			fmt(h["steps_mean"].as_f64(), 0),
			fmt(h["round_period_s"].as_f64(), 0),
			fmt(h["exchange_ms_mean"].as_f64(), 0),
			ratio(&h, "exchange_ms_mean", None),
			fmt(h["bytes_per_trainer_per_round"]["mean"].as_f64().map(|b| b / 1e3), 0),
			fmt(h["bytes_per_trainer_per_round"]["max"].as_f64().map(|b| b / 1e3), 0),
			ratio(&h, "bytes_per_trainer_per_round", Some("mean")),
			share("agreement_share_min"),
			share("attestation_share_min"),
			h["records_with_missing_updates"],
			h["records_leaving_updates_out"],
			fmt(h["payment_latency_s_max"].as_f64(), 0),
			h["max_proofs_per_block"],
			h["chain_reads_unanswered"],
			fmt(h["node_read_ms"]["median"].as_f64(), 0),
			fmt(h["node_read_ms"]["max"].as_f64(), 0),
			h["state_fetches"],
			h["replays"]["all"],
			h["replays"]["short_norm"],
		);
	}
	for (n, why) in failed {
		md += &format!("| {n} | failed: {} |\n", why.lines().next().unwrap_or_default());
	}
	md += &fan_in_table(runs);
	md += &cpu_table(runs);
	md += &decision_table(runs, &args.exchange);
	md += "\n## Per round\n\n| N | round | opened (block) | members | proofs | attesting the quorum | quorum (block) | paid (block) | settled (block) |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
	for run in runs {
		for (index, r) in &run.rounds {
			let block = |b: Option<u32>| b.map_or("-".into(), |b| b.to_string());
			md += &format!(
				"| {} | {index} | {} | {} | {} | {} | {} | {} | {} |\n",
				run.label(),
				block(r.opened),
				r.members,
				r.proofs,
				r.attested,
				block(r.quorum.map(|(b, _)| b)),
				block(r.paid),
				block(r.settled),
			);
		}
	}
	md += &format!(
		"\n## Reading it\n\n\
		- *Round period*: blocks between consecutive settlements × 6 s; a round is \
		  {round_blocks} blocks ({} s) at most, less when every proof is in before its deadline, so growth here is \
		  exchange and proof latency. *Exchange and wait*: the trainers' own `exchange_ms`, \
		  from the end of a round's compute to its aggregated model, their mean over trainers \
		  and rounds; compute is capped at 100 steps (a second or two), so most of it is the \
		  wait for the round's commitments, and its growth with N is the exchange's.\n\
		- *Bytes*: what each trainer's network task served plus fetched (update fetches, state \
		  transfers, segment checks; not gossip), over the rounds it recorded. All-to-all, a \
		  trainer fetches N − 1 updates and serves its own N − 1 times, so this grows linearly \
		  in N.\n\
		- *Trainers agreeing*: the share of trainers whose round record holds the round's most \
		  common model; *members attesting*: the share of the round's members whose proof \
		  named the quorum's model (a trainer that could not get an agreed update re-syncs \
		  instead of deciding the round, and is not paid for it). *Missing*: records that \
		  aggregated without an agreed update (none since the agreed set: such a trainer \
		  re-syncs); *leaving one out*: records whose agreed set left out a committed update \
		  because fewer than half of the other attesters held it.\n\
		- All N processes share this machine's cores with the node, so compute per trainer \
		  shrinks as N grows; rounds are time-boxed, so it shows as fewer steps, not longer \
		  rounds. *Chain reads unanswered*: the trainers' chain followers' reads that got no \
		  answer from the one node within 10 s (log lines `chain: no answer`, all trainers \
		  together). Each follower polls the best block's hash and opens a block once per \
		  new block for all of that block's reads. *Node read*: the benchmark's own light read \
		  of the node (`chain_getHeader`) once a second while the job ran: when it stays fast \
		  while the followers' reads go unanswered, the trainers, not the node, were too busy. \
		  *State fetches*: the trainers' state fetches from peers (a join or a re-sync each, \
		  log lines `fetching the global state`, all trainers together): a re-sync storm shows \
		  here. *Replays*: the suspects the trainers' fraud desks replayed (log lines \
		  `replaying it`, all trainers together; each fetches the suspect's work state), and \
		  in brackets those the short-norm screen flagged.\n\
		- *CPU*: sampled from `/proc` once a second from the job's start to its end, per \
		  thread: a trainer's *compute* is its training, replay and evaluation threads (at the \
		  lowest priority), *the rest* everything else in it (libp2p, the chain follower, the \
		  round loop, writers); each as a share of one core over the wall time, the mean over \
		  trainers. *Machine used*: all trainers and the node over all cores. When it is near \
		  100% and the rest alone takes most of it, the machine, not the protocol's time \
		  limits, is what stops a round.\n",
		f64::from(round_blocks) * BLOCK_SECS
	);
	md
}

/// Per N run both ways, the bounded fan-in's figures over all-to-all's.
fn fan_in_ratios(runs: &[Run]) -> Vec<Value> {
	let decision = |h: &Value| -> Option<f64> {
		["fetch", "attest", "agreed_fetch", "step"]
			.iter()
			.map(|p| h["decision_ms_mean"][p].as_f64())
			.sum()
	};
	let over = |a: Option<f64>, b: Option<f64>| match (a, b) {
		(Some(a), Some(b)) if b > 0.0 => Some(a / b),
		_ => None,
	};
	runs.iter()
		.filter(|r| r.fan_in.is_some())
		.filter_map(|bounded| {
			let all = runs.iter().find(|r| r.n == bounded.n && r.fan_in.is_none())?;
			let (b, a) = (bounded.headline(), all.headline());
			let bytes = |h: &Value| h["bytes_per_trainer_per_round"]["mean"].as_f64();
			let step = |h: &Value| h["decision_ms_mean"]["step"].as_f64();
			Some(json!({
				"trainers": bounded.n,
				"fan_in": bounded.fan_in,
				"bytes_ratio": over(bytes(&b), bytes(&a)),
				"decision_ratio": over(decision(&b), decision(&a)),
				"step_ratio": over(step(&b), step(&a)),
				"rounds_with_result": [b["rounds_settled_with_result"], a["rounds_settled_with_result"]],
				"agreement_share_min": [b["agreement_share_min"], a["agreement_share_min"]],
			}))
		})
		.collect()
}

/// The bounded fan-in against all-to-all at the same N, when both ran.
fn fan_in_table(runs: &[Run]) -> String {
	let ratios = fan_in_ratios(runs);
	if ratios.is_empty() {
		return String::new();
	}
	let mut md = String::from(
		"\n## Bounded fan-in against all-to-all\n\nThe same N run twice in this invocation, one after the other: every member's update aggregated, then at most G drawn a round (`training.exchange.fan_in`, `round/fan_in.rs`). Ratios are the bounded run's over the all-to-all run's.\n\n| N | G | bytes per trainer per round | decision after the collection | aggregating and stepping | rounds with a result (G / all) | trainers agreeing, worst round (G / all) |\n|---:|---:|---:|---:|---:|---:|---:|\n",
	);
	let x = |v: &Value| v.as_f64().map_or("n/a".into(), |r| format!("{r:.2}x"));
	let pct = |v: &Value| v.as_f64().map_or("n/a".into(), |r| format!("{:.0}%", 100.0 * r));
	for r in &ratios {
		md += &format!(
			"| {} | {} | {} | {} | {} | {} / {} | {} / {} |\n",
			r["trainers"],
			r["fan_in"],
			x(&r["bytes_ratio"]),
			x(&r["decision_ratio"]),
			x(&r["step_ratio"]),
			r["rounds_with_result"][0],
			r["rounds_with_result"][1],
			pct(&r["agreement_share_min"][0]),
			pct(&r["agreement_share_min"][1]),
		);
	}
	md
}

/// Where the CPU went, per N.
fn cpu_table(runs: &[Run]) -> String {
	let mut md = String::from(
		"\n## CPU\n\n| N | wall (s) | cores | per trainer: compute (share of a core) | per trainer: the rest | node | machine used |\n|---:|---:|---:|---:|---:|---:|---:|\n",
	);
	let percent = |x: Option<f64>| fmt(x.map(|x| 100.0 * x), 1) + "%";
	for run in runs {
		let cpu = &run.cpu;
		md += &format!(
			"| {} | {:.0} | {} | {} | {} | {} | {} |\n",
			run.label(),
			cpu.wall_s,
			cpu.cores,
			percent(cpu.per_trainer_core_share(&cpu.compute_s)),
			percent(cpu.per_trainer_core_share(&cpu.other_s)),
			percent(Some(cpu.core_share(cpu.node_s))),
			percent(Some(cpu.machine_share())),
		);
	}
	md
}

/// The decision's parts after the collection against the time left for them.
fn decision_table(runs: &[Run], exchange: &ExchangeWindow) -> String {
	let mut md = format!(
		"\n## The decision after the collection\n\nEach trainer's round record splits the time from the end of its commitments' collection (its commit deadline plus {} ms) to its decision; each part is its mean over trainers and rounds. What the parts add up to past {} ms (the allowance less the collection's grace) makes the proof late.\n\n| N | fetching the set (ms) | waiting for attestations (ms) | fetching agreed updates (ms) | aggregating and stepping (ms) | total (ms) |\n|---:|---:|---:|---:|---:|---:|\n",
		exchange.grace_ms,
		exchange.allowance_ms().saturating_sub(u64::from(exchange.grace_ms)),
	);
	for run in runs {
		let d = run.decision();
		let part = |name: &str| d[name].as_f64();
		let total: Option<f64> =
			["fetch", "attest", "agreed_fetch", "step"].iter().map(|p| part(p)).sum();
		md += &format!(
			"| {} | {} | {} | {} | {} | {} |\n",
			run.label(),
			fmt(part("fetch"), 0),
			fmt(part("attest"), 0),
			fmt(part("agreed_fetch"), 0),
			fmt(part("step"), 0),
			fmt(total, 0),
		);
	}
	md
}

/// A sibling report's JSON in `dir`, when it is there and parses.
fn sibling(dir: &Path, name: &str) -> Option<Value> {
	let text = std::fs::read_to_string(dir.join(name)).ok()?;
	serde_json::from_str(&text).ok()
}

/// The other scale headlines, from `bench/chain_load.sh`'s report beside this one:
/// proofs in one block and the quorum-to-settlement latency (null when it has not run).
fn chain_load_headline(dir: &Path) -> Value {
	let Some(load) = sibling(dir, "chain_load.json") else { return Value::Null };
	json!({
		"from": "chain_load.json",
		"most_proofs_in_a_block": load["most_proofs_in_a_block"],
		"target_proofs_in_a_block": load["target_proofs_in_a_block"],
		"quorum_to_settlement_blocks": load["quorum_to_settlement_blocks"],
	})
}

/// The largest state a joiner synced in `bench/state_sync.sh`'s report beside this one, and
/// how long it took (null when it has not run).
fn state_sync_headline(dir: &Path) -> Value {
	let Some(sync) = sibling(dir, "state_sync.json") else { return Value::Null };
	let largest = sync["sizes"]
		.as_array()
		.and_then(|sizes| sizes.iter().max_by_key(|size| size["params"].as_u64().unwrap_or(0)));
	let Some(largest) = largest else { return Value::Null };
	json!({
		"from": "state_sync.json",
		"largest_model_synced_params": largest["params"],
		"state_bytes": largest["bytes"],
		"sync_seconds": largest["sync_seconds"],
		"fetcher_peak_rss_mib": largest["fetcher_peak_rss_mib"],
	})
}

fn main() -> Result<()> {
	let args = args()?;
	let temporary = tempfile::tempdir()?;
	let root = args.keep.clone().unwrap_or_else(|| temporary.path().to_owned());
	let (mut runs, mut failed) = (Vec::new(), Vec::new());
	// With a fan-in, each N runs all-to-all and then bounded, side by side.
	let fan_ins: Vec<Option<u16>> = std::iter::once(None).chain(args.fan_in.map(Some)).collect();
	for &n in &args.trainers {
		for &fan_in in &fan_ins {
			// A size that fails is a finding: reported, and the next size still runs.
			match run(n, fan_in, &args, &root) {
				Ok(done) => runs.push(done),
				Err(e) => {
					eprintln!("n = {n} (fan-in {fan_in:?}) failed: {e:#}");
					failed.push((n, format!("{e:#}")));
				}
			}
		}
	}
	std::fs::create_dir_all(&args.out)?;
	std::fs::write(args.out.join("scale.md"), markdown(&runs, &failed, &args))?;
	let json = json!({
		"rounds": args.rounds,
		"round_blocks": args.round_blocks,
		"exchange": { "grace_ms": args.exchange.grace_ms, "fetch_ms": args.exchange.fetch_ms },
		"fan_in": args.fan_in,
		"fan_in_vs_all": fan_in_ratios(&runs),
		"block_secs": BLOCK_SECS,
		"runs": runs.iter().map(Run::headline).collect::<Vec<_>>(),
		"failed": failed.iter().map(|(n, why)| json!({ "trainers": n, "why": why })).collect::<Vec<_>>(),
		"chain_load": chain_load_headline(&args.out),
		"state_sync": state_sync_headline(&args.out),
	});
	std::fs::write(args.out.join("scale.json"), serde_json::to_string_pretty(&json)? + "\n")?;
	eprintln!("wrote {}", args.out.join("scale.md").display());
	Ok(())
}
