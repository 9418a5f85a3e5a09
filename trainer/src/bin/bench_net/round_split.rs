//! Where a run's rounds spent their time, from the trainers' round records (`rounds.jsonl`):
//! a round's wall time by part ([`RoundSplit`]: what utilization leaves out), and how its
//! updates came ([`Fetching`]: the slowest fetch, the pieces by sender). Means over every
//! trainer's rounds; the speed run and the utilization runs report them alike.

use std::fmt::Write as _;

use serde_json::Value;

use super::field;

/// What [`split_table`]'s columns mean, for a report's text.
pub const SPLIT_PARTS: &str = "collecting commitments runs from the update's sealing until every trainer's commitment was heard (the slowest trainer sets it), the fetches and attestations are the decision's waits, and \"before training\" is what is left of the round's wall time (below zero where an overlapped round trained before the round before was decided).";

/// Where a round's wall time went (ms, mean over every trainer's rounds), from the
/// trainers' round records: what utilization leaves out, by part. "Collecting commitments"
/// runs from the update's sealing until the collection ended (publishing, and waiting for
/// the slowest trainer's commitment); "before training" is the rest, from the decision of
/// the round before until training began (below zero where an overlapped round trained
/// before that decision).
pub struct RoundSplit(Vec<(&'static str, f64)>);

/// One part of a round's time, read from a round record.
type Part<'a> = (&'static str, &'a dyn Fn(&Value) -> f64);

impl RoundSplit {
	pub fn of(rounds: &[&Value]) -> Self {
		let decision = |r: &Value, k: &str| r["decision_ms"][k].as_f64().unwrap_or(0.0);
		let decided = |r: &Value| {
			["fetch", "attest", "agreed_fetch", "step"].iter().map(|k| decision(r, k)).sum::<f64>()
		};
		let parts: [Part; 9] = [
			("wall", &|r| field(r, "wall_ms")),
			("compute", &|r| field(r, "compute_ms")),
			("overlap wait", &|r| field(r, "overlap_wait_ms")),
			("collecting commitments", &|r| field(r, "exchange_ms") - decided(r)),
			("fetching updates", &|r| decision(r, "fetch")),
			("attestations", &|r| decision(r, "attest")),
			("fetching agreed updates", &|r| decision(r, "agreed_fetch")),
			("aggregate and outer step", &|r| decision(r, "step")),
			("before training", &|r| {
				field(r, "wall_ms")
					- field(r, "compute_ms")
					- field(r, "overlap_wait_ms")
					- field(r, "exchange_ms")
			}),
		];
		let n = rounds.len().max(1) as f64;
		RoundSplit(
			parts
				.iter()
				.map(|(name, f)| (*name, rounds.iter().map(|r| f(r)).sum::<f64>() / n))
				.collect(),
		)
	}

	/// The part named `name` (ms; 0 for a name it has not).
	pub fn part(&self, name: &str) -> f64 {
		self.0.iter().find(|(n, _)| *n == name).map_or(0.0, |(_, v)| *v)
	}

	/// The parts by name (spaces as underscores), for a report's JSON (`round_ms`).
	pub fn json(&self) -> Value {
		let parts = self.0.iter().map(|(k, v)| (k.replace(' ', "_"), Value::from(*v)));
		Value::Object(parts.collect())
	}
}

/// The table of each named run's [`RoundSplit`], `first` heading the runs' column.
pub fn split_table<'a>(
	md: &mut String,
	first: &str,
	runs: impl IntoIterator<Item = (String, &'a RoundSplit)>,
) {
	let mut runs = runs.into_iter().peekable();
	let Some((_, split)) = runs.peek() else { return };
	let names: Vec<&str> = split.0.iter().map(|p| p.0).collect();
	let _ = writeln!(md, "| {first} | {} |", names.join(" | "));
	let _ = writeln!(md, "|---{}|", "|---".repeat(names.len()));
	for (name, split) in runs {
		let cells: Vec<String> = split.0.iter().map(|(_, v)| format!("{v:.0}")).collect();
		let _ = writeln!(md, "| {name} | {} |", cells.join(" | "));
	}
	let _ = writeln!(md);
}

/// How a run's updates came: the slowest fetch (ms, mean over the rounds that fetched one)
/// and the pieces a round from keepers, committers and other holders, and duplicates.
pub struct Fetching {
	slowest: Option<f64>,
	pieces: [f64; 4],
}

/// The pieces' counters of a round record, in [`Fetching::pieces`]' order.
const PIECE_COUNTS: [&str; 4] = ["from_keepers", "from_committers", "from_holders", "duplicates"];

impl Fetching {
	pub fn of(rounds: &[&Value]) -> Self {
		let slowest: Vec<f64> =
			rounds.iter().filter_map(|r| r["slowest_fetch_ms"].as_f64()).collect();
		let n = rounds.len().max(1) as f64;
		let mean = |k| rounds.iter().map(|r| field(&r["pieces"], k)).sum::<f64>() / n;
		Fetching {
			slowest: (!slowest.is_empty())
				.then(|| slowest.iter().sum::<f64>() / slowest.len() as f64),
			pieces: PIECE_COUNTS.map(mean),
		}
	}

	pub fn json(&self) -> Value {
		let mut json = serde_json::json!({ "slowest_fetch_ms": self.slowest });
		for (k, v) in PIECE_COUNTS.iter().zip(self.pieces) {
			json[format!("pieces_{k}")] = Value::from(v);
		}
		json
	}
}

/// The table of each named run's [`Fetching`].
pub fn fetching_table<'a>(md: &mut String, runs: impl IntoIterator<Item = (String, &'a Fetching)>) {
	let _ = writeln!(md, "| run | slowest update fetch | pieces a round: keepers / committers / holders / duplicates |");
	let _ = writeln!(md, "|---|---:|---|");
	for (name, f) in runs {
		let slowest = f.slowest.map_or("-".into(), |s| format!("{s:.0} ms"));
		let [k, c, h, d] = f.pieces;
		let _ = writeln!(md, "| {name} | {slowest} | {k:.1} / {c:.1} / {h:.1} / {d:.1} |");
	}
	let _ = writeln!(md);
}
