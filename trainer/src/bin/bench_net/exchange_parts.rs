//! Where a run's exchange went: each round record's exchange (from the end of its compute to
//! its decided model) split into the commitments' collection (publishing its own and waiting
//! for the others', stragglers' compute included) and the decision's parts (`decision_ms`:
//! fetching the set, waiting for attestations, fetching agreed updates, aggregating and
//! stepping), with the slowest update fetch and the update pieces fetched, by sender; means
//! over every trainer's rounds.

use std::fmt::Write as _;

use serde_json::Value;

use super::field;

/// A run's exchange in its parts (ms, or pieces, a round).
#[derive(Clone, Copy, Default)]
pub struct ExchangeParts {
	pub exchange: f64,
	pub collection: f64,
	pub fetch: f64,
	pub attest: f64,
	pub agreed_fetch: f64,
	pub step: f64,
	/// Over the rounds that fetched an update.
	pub slowest_fetch: Option<f64>,
	/// Pieces a round from keepers, committers and other holders, and duplicates.
	pub pieces: [f64; 4],
}

impl ExchangeParts {
	/// The means over `rounds` (round records of `rounds.jsonl`).
	pub fn of<'a>(rounds: impl IntoIterator<Item = &'a Value>) -> Self {
		let rounds: Vec<&Value> = rounds.into_iter().collect();
		let n = rounds.len().max(1) as f64;
		let mean = |f: &dyn Fn(&Value) -> f64| rounds.iter().map(|r| f(r)).sum::<f64>() / n;
		let decision = |k: &'static str| move |r: &Value| field(&r["decision_ms"], k);
		let piece = |k: &'static str| mean(&|r: &Value| field(&r["pieces"], k));
		let slowest: Vec<f64> =
			rounds.iter().filter_map(|r| r["slowest_fetch_ms"].as_f64()).collect();
		let parts = ExchangeParts {
			exchange: mean(&|r| field(r, "exchange_ms")),
			fetch: mean(&decision("fetch")),
			attest: mean(&decision("attest")),
			agreed_fetch: mean(&decision("agreed_fetch")),
			step: mean(&decision("step")),
			slowest_fetch: (!slowest.is_empty())
				.then(|| slowest.iter().sum::<f64>() / slowest.len() as f64),
			pieces: [
				piece("from_keepers"),
				piece("from_committers"),
				piece("from_holders"),
				piece("duplicates"),
			],
			collection: 0.0,
		};
		let decided = parts.fetch + parts.attest + parts.agreed_fetch + parts.step;
		ExchangeParts { collection: (parts.exchange - decided).max(0.0), ..parts }
	}

	pub fn json(&self) -> Value {
		serde_json::json!({
			"exchange_ms": self.exchange,
			"collection_ms": self.collection,
			"fetch_ms": self.fetch,
			"attest_ms": self.attest,
			"agreed_fetch_ms": self.agreed_fetch,
			"step_ms": self.step,
			"slowest_fetch_ms": self.slowest_fetch,
			"pieces_from_keepers": self.pieces[0],
			"pieces_from_committers": self.pieces[1],
			"pieces_from_holders": self.pieces[2],
			"pieces_duplicated": self.pieces[3],
		})
	}
}

/// The table of each named run's exchange in its parts.
pub fn exchange_table<'a>(
	md: &mut String,
	runs: impl IntoIterator<Item = (String, &'a ExchangeParts)>,
) {
	let _ = writeln!(md, "Where the exchange went (means over every trainer's rounds; *collection*: from the end of a trainer's compute to the end of the commitments' collection, its own published and the others' waited for, stragglers' compute included; the rest is the decision's parts as each trainer recorded them (`decision_ms`); *slowest fetch*: the longest any update took from being asked for to being whole, over rounds that fetched one):\n");
	let _ = writeln!(md, "| run | exchange | collection | fetching the set | waiting for attestations | fetching agreed updates | aggregating and stepping | slowest fetch | pieces a round: keepers / committers / holders / duplicates |");
	let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---|");
	for (name, p) in runs {
		let slowest = p.slowest_fetch.map_or("-".into(), |s| format!("{s:.0} ms"));
		let [k, c, h, d] = p.pieces;
		let _ = writeln!(
			md,
			"| {name} | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms | {slowest} | {k:.1} / {c:.1} / {h:.1} / {d:.1} |",
			p.exchange, p.collection, p.fetch, p.attest, p.agreed_fetch, p.step
		);
	}
	let _ = writeln!(md);
}
