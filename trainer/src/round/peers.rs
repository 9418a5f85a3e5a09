//! Per-peer health as this trainer sees it: compute speed, link reliability and speed,
//! update quality and uptime, combined into one score in `[0, 1]`.

use std::{collections::BTreeMap, time::Duration};

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;
use serde::Serialize;

/// Weight of a new sample in the moving averages.
const EWMA: f64 = 0.3;

fn ewma(old: Option<f64>, new: f64) -> Option<f64> {
	Some(old.map_or(new, |o| (1.0 - EWMA) * o + EWMA * new))
}

/// What is known about one peer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PeerHealth {
	/// Round trip time (ms, moving average).
	pub rtt_ms: Option<f64>,
	/// Download throughput from the peer (Mbit/s, moving average of update fetches).
	pub throughput_mbit: Option<f64>,
	/// Samples per second of computing, from its commitments (moving average).
	pub samples_per_sec: Option<f64>,
	/// Fetches that succeeded.
	pub fetch_ok: u64,
	/// Fetches that failed or timed out.
	pub fetch_failed: u64,
	/// Rounds its update was aggregated.
	pub accepted: u64,
	/// Rounds its update was screened out.
	pub rejected: u64,
	/// Rounds it equivocated.
	pub equivocations: u64,
	/// First round it committed in.
	pub first_round: Option<RoundIndex>,
	/// Rounds it committed in.
	pub rounds_committed: u64,
	/// Whether it is connected now.
	pub connected: bool,
}

impl PeerHealth {
	/// Fraction of fetches that worked (1 before any).
	pub fn reliability(&self) -> f64 {
		let total = self.fetch_ok + self.fetch_failed;
		if total == 0 {
			1.0
		} else {
			self.fetch_ok as f64 / total as f64
		}
	}

	/// Fraction of its aggregated-or-screened updates that were aggregated (1 before any);
	/// an equivocation zeroes it.
	pub fn quality(&self) -> f64 {
		if self.equivocations > 0 {
			return 0.0;
		}
		let total = self.accepted + self.rejected;
		if total == 0 {
			1.0
		} else {
			self.accepted as f64 / total as f64
		}
	}

	/// Fraction of rounds since it first appeared that it committed in.
	pub fn uptime(&self, current: RoundIndex) -> f64 {
		match self.first_round {
			Some(first) if current >= first => {
				(self.rounds_committed as f64 / f64::from(current - first + 1)).min(1.0)
			}
			_ => 0.0,
		}
	}
}

/// Health of every peer seen, with the score of each.
#[derive(Clone, Debug, Default)]
pub struct HealthBook {
	peers: BTreeMap<PeerId, PeerHealth>,
}

/// One row of the health report.
#[derive(Clone, Debug, Serialize)]
pub struct HealthRow {
	/// The peer.
	pub peer: String,
	/// Combined score in `[0, 1]`.
	pub score: f64,
	/// Compute speed relative to the fastest peer.
	pub compute: f64,
	/// Fetch reliability.
	pub reliability: f64,
	/// Update quality.
	pub quality: f64,
	/// Uptime.
	pub uptime: f64,
	/// The raw measurements.
	#[serde(flatten)]
	pub raw: PeerHealth,
}

impl HealthBook {
	/// The record of `peer`, created on first use.
	pub fn peer(&mut self, peer: PeerId) -> &mut PeerHealth {
		self.peers.entry(peer).or_default()
	}

	/// Records a round trip time.
	pub fn rtt(&mut self, peer: PeerId, rtt: Duration) {
		let p = self.peer(peer);
		p.rtt_ms = ewma(p.rtt_ms, rtt.as_secs_f64() * 1e3);
	}

	/// Records a fetch of `bytes` from `peer` that took `elapsed` (or failed).
	pub fn fetched(&mut self, peer: PeerId, bytes: Option<usize>, elapsed: Duration) {
		let p = self.peer(peer);
		match bytes {
			Some(bytes) => {
				p.fetch_ok += 1;
				// Take the round trip out so small transfers do not look slow.
				let rtt = p.rtt_ms.unwrap_or(0.0) / 1e3;
				let secs = (elapsed.as_secs_f64() - rtt).max(1e-3);
				if bytes >= 16 * 1024 {
					p.throughput_mbit = ewma(p.throughput_mbit, bytes as f64 * 8.0 / secs / 1e6);
				}
			}
			None => p.fetch_failed += 1,
		}
	}

	/// Records a commitment: the peer was up in `round` and computed at this speed.
	pub fn committed(&mut self, peer: PeerId, round: RoundIndex, samples: u64, millis: u32) {
		let p = self.peer(peer);
		p.first_round.get_or_insert(round);
		p.rounds_committed += 1;
		if millis > 0 {
			p.samples_per_sec = ewma(p.samples_per_sec, samples as f64 * 1e3 / f64::from(millis));
		}
	}

	/// Median download throughput over peers with a measurement (this trainer's own link,
	/// as far as it can tell).
	pub fn median_throughput_mbit(&self) -> Option<f64> {
		let mut t: Vec<f64> = self.peers.values().filter_map(|p| p.throughput_mbit).collect();
		t.sort_by(f64::total_cmp);
		t.get(t.len().checked_sub(1)? / 2).copied()
	}

	/// The measured download rate from each peer with a measurement, in bytes per second.
	pub fn link_rates(&self) -> BTreeMap<PeerId, f64> {
		let rate = |p: &PeerHealth| p.throughput_mbit.map(|mbit| mbit * 1e6 / 8.0);
		self.peers.iter().filter_map(|(peer, p)| Some((*peer, rate(p)?))).collect()
	}

	/// Median round trip time over peers (ms).
	pub fn median_rtt_ms(&self) -> Option<f64> {
		let mut t: Vec<f64> = self.peers.values().filter_map(|p| p.rtt_ms).collect();
		t.sort_by(f64::total_cmp);
		t.get(t.len().checked_sub(1)? / 2).copied()
	}

	/// Peers connected now, best score first.
	pub fn connected(&self) -> Vec<PeerId> {
		self.report(0)
			.into_iter()
			.filter(|r| r.raw.connected)
			.filter_map(|r| r.peer.parse().ok())
			.collect()
	}

	/// The report at `round`, best score first.
	pub fn report(&self, round: RoundIndex) -> Vec<HealthRow> {
		let fastest = self.peers.values().filter_map(|p| p.samples_per_sec).fold(0.0, f64::max);
		let mut rows: Vec<HealthRow> = self
			.peers
			.iter()
			.map(|(peer, p)| {
				let compute = match (p.samples_per_sec, fastest > 0.0) {
					(Some(s), true) => s / fastest,
					_ => 0.0,
				};
				let (reliability, quality, uptime) =
					(p.reliability(), p.quality(), p.uptime(round));
				HealthRow {
					peer: peer.to_string(),
					score: (compute + reliability + quality + uptime) / 4.0,
					compute,
					reliability,
					quality,
					uptime,
					raw: p.clone(),
				}
			})
			.collect();
		rows.sort_by(|a, b| b.score.total_cmp(&a.score));
		rows
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn scores_fall_with_failures_rejections_and_absence() {
		let (good, bad) = (PeerId::random(), PeerId::random());
		let mut book = HealthBook::default();
		for round in 0..4 {
			book.committed(good, round, 1000, 1000);
			book.peer(good).accepted += 1;
			book.fetched(good, Some(1 << 20), Duration::from_millis(100));
		}
		book.committed(bad, 0, 100, 1000);
		book.peer(bad).rejected += 1;
		book.fetched(bad, None, Duration::from_secs(5));
		let report = book.report(3);
		assert_eq!(report[0].peer, good.to_string());
		assert!((report[0].score - 1.0).abs() < 1e-9, "{report:?}");
		let b = &report[1];
		assert_eq!((b.reliability, b.quality, b.uptime), (0.0, 0.0, 0.25));
		assert!((b.compute - 0.1).abs() < 1e-9);
		assert!(book.median_throughput_mbit().unwrap() > 80.0);
		book.peer(good).equivocations = 1;
		assert_eq!(
			book.report(3).iter().find(|r| r.peer == good.to_string()).unwrap().quality,
			0.0
		);
	}
}
