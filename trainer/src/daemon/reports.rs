//! What a trainer writes about itself: one line per round in `rounds.jsonl`, the status
//! report (`status.json`, also served by the status server) with its loss history, and the
//! equivocation evidence it heard.

use std::{
	collections::VecDeque,
	io::Write,
	path::Path,
	time::{Duration, SystemTime, UNIX_EPOCH},
};

use codec::Encode;
use grid_primitives::job::{JobId, RoundIndex};
use libp2p::PeerId;
use serde::Serialize;

use crate::{
	error::{Error, Result},
	net::NetStats,
	round::{messages::Equivocation, peers::HealthRow, update_pieces::PieceCounts},
};

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> u64 {
	SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// One line of `rounds.jsonl`.
#[derive(Serialize)]
pub struct RoundRecord {
	pub round: RoundIndex,
	pub unix_ms: u64,
	pub contributed: bool,
	pub committed: usize,
	pub aggregated: Vec<String>,
	pub screened_out: Vec<String>,
	pub missing: Vec<String>,
	/// Committers whose updates too few witnesses held to be in the agreed set.
	pub left_out: Vec<String>,
	/// Members of the agreed set past the job's fan-in (`training.exchange.fan_in`): not
	/// drawn this round.
	pub not_drawn: Vec<String>,
	pub model_hash: String,
	pub state_hash: String,
	pub train_loss: Option<f32>,
	pub eval_loss: Option<f64>,
	pub steps: u32,
	pub samples: u64,
	pub compression_level: Option<usize>,
	pub update_bytes: Option<u64>,
	/// Trained overlapped with the round before: how long it waited at its catch-up step
	/// for that round's state (`None`: not overlapped).
	pub overlap_wait_ms: Option<u64>,
	pub compute_ms: u64,
	pub exchange_ms: u64,
	/// When the commitments' collection ended (Unix ms): before the round's collection
	/// deadline when every member expected had committed.
	pub collected_unix_ms: u64,
	/// Where the decision spent its time once the commitments' collection ended.
	pub decision_ms: DecisionMs,
	/// Pieces of updates fetched this round, by who sent them.
	pub pieces: PieceCounts,
	/// The longest any update fetched this round took to come, from when it was first
	/// asked for (ms; `None`: none was fetched).
	pub slowest_fetch_ms: Option<u64>,
	pub eval_ms: u64,
	pub wall_ms: u64,
}

/// A round's decision after the commitments' collection, in its waits and its work (ms):
/// what of it exceeds the exchange allowance makes the proof late.
#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct DecisionMs {
	/// Fetching the set's updates not here yet.
	pub fetch: u64,
	/// Waiting for the other candidates' attestations.
	pub attest: u64,
	/// Fetching the agreed updates still lacking, from their holders.
	pub agreed_fetch: u64,
	/// Aggregating and stepping the model.
	pub step: u64,
}

/// The status report (`status.json`), rewritten after every round.
#[derive(Serialize)]
pub struct Status<'a> {
	pub name: &'a str,
	pub peer_id: String,
	pub listen: Vec<String>,
	pub job: JobId,
	pub round: Option<RoundIndex>,
	pub synced: bool,
	pub model_hash: Option<String>,
	pub last_eval_loss: Option<f64>,
	pub last_train_loss: Option<f32>,
	pub rounds_contributed: u64,
	pub compute_ms: u64,
	pub wall_ms: u64,
	pub eval_ms: u64,
	pub utilization: f64,
	pub median_rtt_ms: Option<f64>,
	pub median_throughput_mbit: Option<f64>,
	pub equivocations_seen: usize,
	pub peers: Vec<HealthRow>,
	pub network: NetStats,
	/// The latest rounds' losses, oldest first, for the UI's loss curve.
	pub history: &'a VecDeque<LossPoint>,
	pub finished: bool,
}

/// One round's losses in the status report's `history`.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct LossPoint {
	pub round: RoundIndex,
	pub unix_ms: u64,
	pub train_loss: Option<f32>,
	pub eval_loss: Option<f64>,
}

/// Rounds kept in the status report's `history`: enough for any job the chain accepts to be
/// drawn whole at typical round counts, small enough that `/status` stays a few tens of KiB.
pub const HISTORY_ROUNDS: usize = 500;

/// Appends `point`, dropping the oldest beyond [`HISTORY_ROUNDS`].
pub fn push_history(history: &mut VecDeque<LossPoint>, point: LossPoint) {
	if history.len() == HISTORY_ROUNDS {
		history.pop_front();
	}
	history.push_back(point);
}

/// Totals over the run, for the utilization figure.
#[derive(Default)]
pub struct Totals {
	pub compute: Duration,
	pub eval: Duration,
	pub contributed: u64,
	pub last_eval: Option<f64>,
	pub last_train: Option<f32>,
	pub history: VecDeque<LossPoint>,
}

impl Totals {
	/// Compute time over wall time. Evaluation runs on its own thread beside training, so
	/// it is not taken out of the wall time: whatever it costs the loop shows here.
	pub fn utilization(&self, wall: Duration) -> f64 {
		let wall = wall.as_secs_f64();
		if wall > 0.0 {
			self.compute.as_secs_f64() / wall
		} else {
			0.0
		}
	}
}

/// Appends `record` to `<dir>/rounds.jsonl`.
pub fn append_record(dir: &Path, record: &RoundRecord) -> Result<()> {
	let path = dir.join("rounds.jsonl");
	let mut line = serde_json::to_string(record).map_err(|e| Error::Config(e.to_string()))?;
	line.push('\n');
	std::fs::OpenOptions::new()
		.create(true)
		.append(true)
		.open(&path)
		.and_then(|mut f| f.write_all(line.as_bytes()))
		.map_err(|e| Error::io("appending to", &path, e))
}

/// Replaces `<dir>/status.json` with `status` (written aside, then renamed).
pub fn write_status(dir: &Path, status: &Status<'_>) -> Result<()> {
	let path = dir.join("status.json");
	let tmp = dir.join("status.json.tmp");
	let text = serde_json::to_vec_pretty(status).map_err(|e| Error::Config(e.to_string()))?;
	std::fs::write(&tmp, text).map_err(|e| Error::io("writing", &tmp, e))?;
	std::fs::rename(&tmp, &path).map_err(|e| Error::io("renaming", &path, e))
}

/// Keeps the evidence of an equivocation in `<dir>/evidence/round-<r>-<offender>.scale`.
pub fn save_evidence(dir: &Path, evidence: &Equivocation) -> Result<()> {
	let dir = dir.join("evidence");
	std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
	let offender: PeerId = evidence.verify().map_err(|e| Error::Network(e.to_string()))?;
	let path = dir.join(format!("round-{}-{offender}.scale", evidence.first.commitment.round));
	std::fs::write(&path, evidence.encode()).map_err(|e| Error::io("writing", &path, e))
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn loss_history_keeps_the_latest_rounds_in_order() {
		let mut history = VecDeque::new();
		let point = |round| LossPoint { round, unix_ms: 0, train_loss: None, eval_loss: None };
		for round in 0..HISTORY_ROUNDS as u32 + 3 {
			push_history(&mut history, point(round));
		}
		assert_eq!(history.len(), HISTORY_ROUNDS);
		assert_eq!(history.front().map(|p| p.round), Some(3));
		assert_eq!(history.back().map(|p| p.round), Some(HISTORY_ROUNDS as u32 + 2));
	}
}
