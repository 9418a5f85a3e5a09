//! Updates in pieces from their keepers against whole updates from their committers
//! (`round/update_pieces.rs`), side by side in one invocation: real `grid-trainer`
//! processes on loopback, every trainer's uplink shaped to the same rate (the shaper's
//! `uplink_mbit`: everything a trainer sends, to all peers, shares it), all-to-all and with
//! a bounded fan-in.
//!
//! `bench_pieces --out bench/reports [--repeats R] [--quick]` (run by `bench/pieces.sh`).
//! Writes `pieces.md`, its headline figures in `pieces.json`, and `pieces.svg`.

use std::{
	fmt::Write as _,
	time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::Result;
use grid_trainer::{
	daemon::localnet::{BenchSetup, LocalNet},
	plot::{line_plot, Axes, Series},
	round::update_pieces::PieceCounts,
	stats::mean_sd,
};
use serde_json::{json, Value};

/// Trainers per run.
const N: usize = 8;
/// Each trainer's uplink (Mbit/s).
const UPLINK_MBIT: f64 = 20.0;
/// Updates aggregated a round in the bounded runs.
const FAN_IN: usize = 3;

fn unix_ms() -> u64 {
	SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// An MLP of 814K parameters on MNIST: int8 updates of about 0.86 MB, 14 pieces each; few
/// inner steps, so the rounds are about the exchange.
fn job(rounds: u32, fan_in: Option<usize>) -> String {
	// Off chain the schedule times the exchange: the job's exchange only names the fan-in.
	let exchange = fan_in.map_or(String::new(), |g| {
		format!("exchange = {{ grace_ms = 1500, fetch_ms = 4000, fan_in = {g} }}")
	});
	format!(
		r#"
		[job]
		id = 9
		rounds = {rounds}
		dataset = "mnist"
		model = {{ kind = "mlp", hidden = 1024, layers = 1 }}
		total_steps = 3000
		aggregation = {{ rule = "mean" }}
		screen_ratio = 4.0
		eval_samples = 200

		[job.training]
		batch_size = 32
		max_steps = 5
		{exchange}
		inner = {{ optimizer = "adamw", lr = 0.001, warmup_steps = 2 }}
		compression = {{ scheme = "int8", chunk = 64 }}
		outer_momentum = 0.5
		"#
	)
}

fn schedule(start: u64, period_ms: u64) -> String {
	format!(
		"[schedule]\nmode = \"deadline\"\nstart_unix_ms = {start}\nperiod_ms = {period_ms}\ngrace_ms = 500\nfetch_timeout_ms = 9000\ntransfer_budget_ms = 600000\n"
	)
}

/// One run's figures.
struct Run {
	whole: bool,
	fan_in: Option<usize>,
	/// Mean over trainers and rounds: the longest an update took to come, from when it was
	/// asked for (ms).
	slowest_ms: f64,
	/// Mean over trainers and rounds: fetching after the collection (ms).
	fetch_ms: f64,
	/// Bytes each trainer served per round: mean and most.
	served_mean: f64,
	served_max: f64,
	/// Rounds all trainers recorded alike, of those recorded.
	agreed: usize,
	rounds: usize,
	/// Pieces fetched, by who sent them.
	pieces: PieceCounts,
}

fn field(r: &Value, path: &[&str]) -> f64 {
	path.iter().fold(r, |v, k| &v[*k]).as_f64().unwrap_or(0.0)
}

fn run(
	dir: &std::path::Path,
	binary: &std::path::Path,
	whole: bool,
	fan_in: Option<usize>,
	rounds: u32,
) -> Result<Run> {
	let period = 12_000;
	let start = unix_ms() + 6000;
	let name = format!("{}-{}", if whole { "whole" } else { "pieces" }, fan_in.unwrap_or(N));
	let run_dir = dir.join(format!("{name}-{start}"));
	let mut net =
		LocalNet::new(binary, &run_dir, "bench", N, job(rounds, fan_in), schedule(start, period))?;
	let scenario = run_dir.join("scenario.toml");
	std::fs::create_dir_all(&run_dir)?;
	std::fs::write(
		&scenario,
		format!("uplink_mbit = {UPLINK_MBIT}\n\n[default]\nlatency_ms = 10\n"),
	)?;
	for node in &mut net.nodes {
		node.extra =
			format!("scenario = {:?}\nwhole_updates = {whole}\n", scenario.display().to_string());
	}
	for i in 0..N {
		net.start(i)?;
	}
	net.wait_all(Duration::from_secs(u64::from(rounds) * period / 1000 + 120))?;
	let records: Vec<Vec<Value>> = net.nodes.iter().map(|n| n.rounds()).collect();
	// Round 0 pays for start-up (connections, first steps): left out of every figure.
	let all: Vec<&Value> =
		records.iter().flatten().filter(|r| r["round"].as_u64() != Some(0)).collect();
	let count = all.len().max(1) as f64;
	let slowest_ms = all.iter().map(|r| field(r, &["slowest_fetch_ms"])).sum::<f64>() / count;
	let fetch_ms = all
		.iter()
		.map(|r| field(r, &["decision_ms", "fetch"]) + field(r, &["decision_ms", "agreed_fetch"]))
		.sum::<f64>()
		/ count;
	let served: Vec<f64> = net
		.nodes
		.iter()
		.zip(&records)
		.map(|(n, r)| {
			let bytes = n.status().map_or(0.0, |s| field(&s, &["network", "bytes_served"]));
			bytes / r.len().max(1) as f64
		})
		.collect();
	let mut hashes = net.hashes();
	hashes.remove(&0);
	let agreed = hashes
		.values()
		.filter(|h| h.len() == N && h.values().all(|v| Some(v) == h.values().next()))
		.count();
	let pieces = all
		.iter()
		.map(|r| serde_json::from_value::<PieceCounts>(r["pieces"].clone()).unwrap_or_default())
		.fold(PieceCounts::default(), |sum, p| sum + p);
	eprintln!(
		"{name}: slowest fetch {slowest_ms:.0} ms, fetch {fetch_ms:.0} ms, agreed {agreed}/{}",
		hashes.len()
	);
	Ok(Run {
		whole,
		fan_in,
		slowest_ms,
		fetch_ms,
		served_mean: served.iter().sum::<f64>() / served.len() as f64,
		served_max: served.iter().copied().fold(0.0, f64::max),
		agreed,
		rounds: hashes.len(),
		pieces,
	})
}

fn main() -> Result<()> {
	let setup = BenchSetup::from_env()?;
	let repeats: usize = setup.arg("--repeats").map_or(Ok(3), |r| r.parse())?;
	let rounds = if setup.quick { 3 } else { 6 };
	let (dir, binary, out) = (&setup.dir, &setup.binary, &setup.out);
	let configs = [None, Some(FAN_IN)];
	let mut runs = Vec::new();
	for repeat in 0..repeats {
		for fan_in in configs {
			// Alternate which goes first, so neither always runs on a machine warmed up.
			let order = if repeat % 2 == 0 { [true, false] } else { [false, true] };
			for whole in order {
				runs.push(run(dir.path(), binary, whole, fan_in, rounds)?);
			}
		}
	}
	let (md, json, svg) = report(&runs, repeats, rounds);
	std::fs::create_dir_all(out)?;
	std::fs::write(out.join("pieces.md"), md)?;
	std::fs::write(out.join("pieces.json"), serde_json::to_string_pretty(&json)?)?;
	std::fs::write(out.join("pieces.svg"), svg)?;
	Ok(())
}

/// The figures of the runs of one configuration and mode.
fn of(runs: &[Run], whole: bool, fan_in: Option<usize>) -> Vec<&Run> {
	runs.iter().filter(|r| r.whole == whole && r.fan_in == fan_in).collect()
}

fn report(runs: &[Run], repeats: usize, rounds: u32) -> (String, Value, String) {
	let mut md = String::new();
	let _ = writeln!(md, "# Updates in pieces against whole updates\n");
	let _ = writeln!(md, "Generated by `{}` on {} CPU threads; do not edit by hand. Headline figures in `pieces.json`.\n", std::env::var("BENCH_COMMAND").unwrap_or_else(|_| "bench_pieces".into()), std::thread::available_parallelism().map_or(0, |n| n.get()));
	let _ = writeln!(md, "{N} `grid-trainer` processes on loopback, each with one compute thread, every trainer's uplink shaped to {UPLINK_MBIT} Mbit/s (everything it sends, to all peers together) and 10 ms one way to every peer; an MLP of 814K parameters on MNIST, int8 updates of 0.86 MB (14 pieces), a transfer budget too large for the adaptive ladder to compress further (every update int8), 5 inner steps (so every trainer commits at about the same time, early in the round) and {rounds} rounds of 12 s. *Slowest update to come*: per trainer and round, the longest any update took from when it was first asked for (its commitment's arrival) to being here and checked, averaged over trainers and rounds. Round 0 (start-up) is left out of every figure but the bytes served (a trainer's whole run over its rounds). *Whole*: every update fetched whole from its committer (`whole_updates = true`, the old path); *pieces*: each piece from the member that keeps it (`round/update_pieces.rs`). Each configuration ran {repeats} times, whole and pieces one after the other (order alternating); figures are mean ± standard deviation over the runs, each run's figure the mean over its trainers and rounds. Ratios are pieces over whole.\n");
	let _ = writeln!(md, "| aggregated | mode | slowest update to come (ms) | fetching after the collection (ms) | bytes served per trainer per round, mean (KB) | most by one trainer (KB) | rounds all {N} agree | pieces from keepers / committers / other holders / twice |");
	let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|");
	let mut json = serde_json::Map::new();
	let mut series = Vec::new();
	for fan_in in [None, Some(FAN_IN)] {
		let label = fan_in.map_or_else(|| format!("all {N}"), |g| format!("{g} of {N}"));
		let mut means = Vec::new();
		for whole in [true, false] {
			let r = of(runs, whole, fan_in);
			let stat =
				|f: &dyn Fn(&Run) -> f64| mean_sd(&r.iter().map(|r| f(r)).collect::<Vec<_>>());
			let (ex, ex_sd) = stat(&|r| r.slowest_ms);
			let (fe, fe_sd) = stat(&|r| r.fetch_ms);
			let (sm, _) = stat(&|r| r.served_mean / 1e3);
			let (sx, sx_sd) = stat(&|r| r.served_max / 1e3);
			let agreed: Vec<String> =
				r.iter().map(|r| format!("{}/{}", r.agreed, r.rounds)).collect();
			let p = r.iter().fold(PieceCounts::default(), |sum, r| sum + r.pieces);
			let mode = if whole { "whole" } else { "pieces" };
			let _ = writeln!(md, "| {label} | {mode} | {ex:.0} ± {ex_sd:.0} | {fe:.0} ± {fe_sd:.0} | {sm:.0} | {sx:.0} ± {sx_sd:.0} | {} | {} / {} / {} / {} |", agreed.join(", "), p.from_keepers, p.from_committers, p.from_holders, p.duplicates);
			means.push((ex, fe, sx));
			series.push(Series {
				name: format!("{label}, {mode}"),
				points: r.iter().enumerate().map(|(i, r)| (i as f64 + 1.0, r.slowest_ms)).collect(),
			});
		}
		let (whole, pieces) = (means[0], means[1]);
		let key = fan_in.map_or_else(|| "all_to_all".to_string(), |g| format!("fan_in_{g}"));
		json.insert(key, json!({
			"slowest_fetch_ms": { "whole": whole.0, "pieces": pieces.0, "ratio": pieces.0 / whole.0 },
			"fetch_after_collection_ms": { "whole": whole.1, "pieces": pieces.1, "ratio": pieces.1 / whole.1.max(1.0) },
			"most_served_per_round_kb": { "whole": whole.2, "pieces": pieces.2, "ratio": pieces.2 / whole.2 },
		}));
	}
	let _ = writeln!(md, "\n## Ratios (pieces / whole)\n");
	let _ = writeln!(md, "| aggregated | slowest update to come | fetching after the collection | most served by one trainer |");
	let _ = writeln!(md, "|---|---:|---:|---:|");
	for (key, value) in &json {
		let r = |k: &str| value[k]["ratio"].as_f64().unwrap_or(f64::NAN);
		let _ = writeln!(
			md,
			"| {key} | {:.2}x | {:.2}x | {:.2}x |",
			r("slowest_fetch_ms"),
			r("fetch_after_collection_ms"),
			r("most_served_per_round_kb")
		);
	}
	let _ = writeln!(md, "\n![the slowest update to come, per run](pieces.svg)\n");
	json.insert("trainers".into(), json!(N));
	json.insert("uplink_mbit".into(), json!(UPLINK_MBIT));
	json.insert("repeats".into(), json!(repeats));
	let svg = line_plot(
		&series,
		&Axes { x_label: "run", y_label: "slowest update to come (ms)", log_x: false },
	);
	(md, Value::Object(json), svg)
}
