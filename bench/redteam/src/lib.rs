//! Grid's red-team suite: each [`Attacker`] placed next to four honest providers in a job on
//! the pallets' test runtime, everyone training MNIST with the real trainer library and the
//! honest providers screening, replaying, challenging and voting with the daemon's own
//! [`FraudDesk`](grid_trainer::round::fraud::FraudDesk); the chain's random audits at the
//! runtime's rate. [`suite`] runs many attempts per attacker and tallies, per attacker, how
//! often and how fast it was caught, and over all honest contributions how often an honest
//! provider was wrongly challenged or slashed, and what verification cost.
//!
//! `bench/redteam.sh` runs the full suite and writes `bench/reports/redteam.md` and
//! `redteam.json`; `tests/short.rs` runs a few attempts of each in CI. [`power`] measures
//! what one batch of the loss screen tells (`bench/screen_power.sh`), [`segments`] what a
//! segment check does (`bench/segment_power.sh`).

pub mod attack;
pub mod power;
pub mod report;
pub mod segments;
pub mod trio;
pub mod world;

use std::sync::Arc;

use anyhow::Result;
pub use attack::Attacker;
use grid_trainer::data::{Dataset, MnistDataset};
pub use report::{Report, Tally};
pub use world::{run_attempt, Outcome, Setup, STEPS};

/// How the honest desks check: peers loss-screened and segment checks run per round.
#[derive(Clone, Copy, Debug)]
pub struct Checks {
	/// Peers each honest desk loss-screens per round.
	pub screens: usize,
	/// Segment checks each honest desk runs per round, on average.
	pub segments: f64,
	/// Whether committees judge by trajectories before any full replay (the daemon's) or
	/// replay every claim in full (the baseline).
	pub committee_traces: bool,
}

impl Default for Checks {
	/// The daemon's.
	fn default() -> Self {
		Checks {
			screens: grid_trainer::round::fraud::GAUNTLET_PEERS,
			segments: grid_trainer::round::fraud::SEGMENT_RATE,
			committee_traces: true,
		}
	}
}

/// Runs `attempts` attempts of each of `attackers`, in rounds of `steps` inner steps with
/// the honest desks checking as `checks` says (attempt `k` of every attacker draws its own
/// chain randomness), calling `progress` after each.
pub fn suite(
	attackers: &[Attacker],
	attempts: u32,
	steps: u32,
	checks: Checks,
	mut progress: impl FnMut(Attacker, u32, &Outcome),
) -> Result<Report> {
	let data = Arc::new(Dataset::Mnist(MnistDataset::shipped()?));
	let setup = Setup::mnist(data, steps)
		.with_screens(checks.screens)
		.with_segments(checks.segments)
		.with_committee_traces(checks.committee_traces);
	let mut report = Report::default();
	for attacker in attackers {
		let mut tally = Tally::new(*attacker);
		// A Sybil voter attacks only when drawn: attempts go on until `attempts` attacked
		// (at most four times as many tries).
		let mut attempt = 0;
		while tally.attempts < attempts && attempt < attempts.saturating_mul(4) {
			let outcome = run_attempt(&setup, *attacker, attempt)?;
			progress(*attacker, attempt, &outcome);
			tally.add(&outcome);
			attempt += 1;
		}
		report.tallies.push(tally);
	}
	Ok(report)
}
