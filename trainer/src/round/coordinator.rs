//! The port through which rounds are set from outside the trainer: which round is open, by
//! when its update must be committed, its data seed, and the report of each finished round.
//! On a Grid network the chain implements it; [`LocalSchedule`] implements it from a
//! trainer's own configured schedule, so the round loop has one path for both.

use std::{collections::BTreeSet, time::Duration};

use grid_primitives::{
	job::{ExchangeWindow, JobId, RoundIndex},
	Hash,
};
use libp2p::PeerId;
use serde::Deserialize;
use sp_crypto_hashing::blake2_256;

use super::{messages::Digest, roster::Roster};

/// Where the job's rounds stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
	/// The job has not started (no round is open yet).
	NotStarted,
	/// Rounds open on a clock: this one is open now.
	Open(RoundIndex),
	/// Rounds follow the trainer's own progress (fixed steps): each opens when the last ends.
	SelfPaced,
}

impl Clock {
	/// The round whose compute window is open now (0 before the start, or self-paced).
	pub fn round(self) -> RoundIndex {
		match self {
			Clock::Open(round) => round,
			Clock::NotStarted | Clock::SelfPaced => 0,
		}
	}

	/// Whether `round` may start.
	pub fn has_opened(self, round: RoundIndex) -> bool {
		match self {
			Clock::Open(open) => open >= round,
			Clock::SelfPaced => true,
			Clock::NotStarted => false,
		}
	}
}

/// What a trainer reports to its coordinator about a round it finished.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundReport {
	/// The round.
	pub round: RoundIndex,
	/// Model the round started from.
	pub base_model_hash: Digest,
	/// Model after the round's outer step.
	pub result_model_hash: Digest,
	/// What this trainer committed to, when it contributed.
	pub own_update: Option<ClaimedWork>,
	/// Its mean training loss, when it contributed.
	pub train_loss: Option<f32>,
	/// Other trainers whose updates went into the aggregate.
	pub received: Vec<PeerId>,
}

/// A contribution to a round as its sender's signed commitment fixed it; its proof on chain
/// repeats it, so that a committee can tell that what it replays is what was paid for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClaimedWork {
	/// The update's content address.
	pub update: Digest,
	/// Its private state at the round's start, by content address ([`WorkDigests::id`]).
	///
	/// [`WorkDigests::id`]: crate::work_state::WorkDigests::id
	pub start_state: Digest,
	/// Inner steps it ran.
	pub steps: u32,
	/// Samples it trained on.
	pub samples: u64,
}

/// Sets a trainer's rounds: on a Grid network, the chain; offline, [`LocalSchedule`].
pub trait Coordinator: Send {
	/// Where the rounds stand at Unix time `now_ms`.
	fn clock(&self, now_ms: u64) -> Clock;
	/// The job is over for this trainer (completed, cancelled, or it was removed).
	fn ended(&self) -> bool;
	/// Unix ms by which `round`'s update must be committed; `None` when rounds have no
	/// deadline (fixed steps). A round already past gives 0.
	fn deadline(&self, round: RoundIndex) -> Option<u64>;
	/// This trainer's data seed for `round`, when the coordinator deals seeds (else the
	/// trainer derives one from the job and round).
	fn data_seed(&self, round: RoundIndex) -> Option<Hash>;
	/// The round's own seed, for what every member draws alike (the bounded fan-in's draw,
	/// [`crate::round::fan_in`]): the chain's, or off chain [`offline_round_seed`]; `None`
	/// when the chain's is not known here.
	fn round_seed(&self, round: RoundIndex) -> Option<Hash>;
	/// A round finished here.
	fn round_done(&self, report: RoundReport);
	/// Who may contribute to `round` ([`Roster`]): on chain the round's members, once it
	/// opened (a round not known here gets the latest roster known).
	fn roster(&self, round: RoundIndex) -> Roster;
	/// Peers that are no strangers though they may be in no round's roster: on chain every
	/// provider registered with stake (a joiner syncing before its first round, a verifier
	/// fetching evidence); off chain none. The network bounds what the rest, whose keys cost
	/// nothing, take of a trainer (`net/strangers.rs`).
	fn registered(&self) -> BTreeSet<PeerId>;
}

/// A coordinator shared with whoever started the trainer.
impl<C: Coordinator + Sync> Coordinator for std::sync::Arc<C> {
	fn clock(&self, now_ms: u64) -> Clock {
		C::clock(self, now_ms)
	}
	fn ended(&self) -> bool {
		C::ended(self)
	}
	fn deadline(&self, round: RoundIndex) -> Option<u64> {
		C::deadline(self, round)
	}
	fn data_seed(&self, round: RoundIndex) -> Option<Hash> {
		C::data_seed(self, round)
	}
	fn round_seed(&self, round: RoundIndex) -> Option<Hash> {
		C::round_seed(self, round)
	}
	fn round_done(&self, report: RoundReport) {
		C::round_done(self, report)
	}
	fn roster(&self, round: RoundIndex) -> Roster {
		C::roster(self, round)
	}
	fn registered(&self) -> BTreeSet<PeerId> {
		C::registered(self)
	}
}

/// When rounds run.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(tag = "mode", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Schedule {
	/// Network-aware: round `r` ends at `start + (r + 1) · period` for everyone; each
	/// trainer computes as many steps as fit, commitments are taken until `grace` after the
	/// end, and updates are fetched for at most `fetch_timeout` more.
	Deadline {
		/// Start of round 0 (Unix ms).
		start_unix_ms: u64,
		/// Round length (ms).
		period_ms: u64,
		/// Commitments accepted this long after the round's end (ms).
		grace_ms: u64,
		/// Longest wait for updates after that (ms).
		fetch_timeout_ms: u64,
		/// Time an update should take to download (ms), which sets the compression level.
		#[serde(default = "default_transfer_budget")]
		transfer_budget_ms: u64,
	},
	/// Naive synchronous rounds: a fixed number of steps, then wait for every peer.
	FixedSteps {
		/// Start of round 0 (Unix ms).
		start_unix_ms: u64,
		/// Inner steps per round.
		steps: u32,
		/// Longest wait for peers' commitments and updates (ms).
		wait_ms: u64,
	},
}

fn default_transfer_budget() -> u64 {
	500
}

impl Schedule {
	/// How long a gossip is waited for once due: the commitments' grace (deadline rounds),
	/// or the whole wait (fixed steps). The round's attestations get as long.
	pub fn gossip_wait(&self) -> Duration {
		Duration::from_millis(match *self {
			Schedule::Deadline { grace_ms, .. } => grace_ms,
			Schedule::FixedSteps { wait_ms, .. } => wait_ms,
		})
	}

	/// Longest wait for updates being fetched.
	pub fn fetch_wait(&self) -> Duration {
		Duration::from_millis(match *self {
			Schedule::Deadline { fetch_timeout_ms, .. } => fetch_timeout_ms,
			Schedule::FixedSteps { wait_ms, .. } => wait_ms,
		})
	}

	/// Time between a round's commit deadline and its proof's deadline (ms; 0 for fixed
	/// steps): the job's exchange allowance ([`ExchangeWindow::allowance_ms`]) over this
	/// schedule's waits, which a provider takes from its job's exchange window.
	pub fn allowance_ms(&self) -> u64 {
		match *self {
			Schedule::Deadline { grace_ms, fetch_timeout_ms, .. } => {
				let ms = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
				let window = ExchangeWindow {
					grace_ms: ms(grace_ms),
					fetch_ms: ms(fetch_timeout_ms),
					fan_in: None,
				};
				window.allowance_ms()
			}
			Schedule::FixedSteps { .. } => 0,
		}
	}

	/// When round 0 starts.
	pub fn start_unix_ms(&self) -> u64 {
		match *self {
			Schedule::Deadline { start_unix_ms, .. }
			| Schedule::FixedSteps { start_unix_ms, .. } => start_unix_ms,
		}
	}
}

/// Rounds set by a trainer's own [`Schedule`] (no chain): nothing deals seeds or takes
/// reports, and the job never ends early. The job's id gives its rounds' seeds.
#[derive(Clone, Debug)]
pub struct LocalSchedule {
	/// When rounds run.
	pub schedule: Schedule,
	/// The job.
	pub job: JobId,
	/// Who may contribute (the same for every round).
	pub roster: Roster,
}

impl Coordinator for LocalSchedule {
	fn clock(&self, now_ms: u64) -> Clock {
		match self.schedule {
			Schedule::Deadline { start_unix_ms, period_ms, .. } => {
				Clock::Open((now_ms.saturating_sub(start_unix_ms) / period_ms) as RoundIndex)
			}
			Schedule::FixedSteps { .. } => Clock::SelfPaced,
		}
	}

	fn ended(&self) -> bool {
		false
	}

	fn deadline(&self, round: RoundIndex) -> Option<u64> {
		match self.schedule {
			Schedule::Deadline { start_unix_ms, period_ms, .. } => {
				Some(start_unix_ms + (u64::from(round) + 1) * period_ms)
			}
			Schedule::FixedSteps { .. } => None,
		}
	}

	fn data_seed(&self, _round: RoundIndex) -> Option<Hash> {
		None
	}

	fn round_seed(&self, round: RoundIndex) -> Option<Hash> {
		Some(offline_round_seed(self.job, round))
	}

	fn round_done(&self, _report: RoundReport) {}

	fn roster(&self, _round: RoundIndex) -> Roster {
		self.roster.clone()
	}

	fn registered(&self) -> BTreeSet<PeerId> {
		BTreeSet::new()
	}
}

/// The seed of a round's data when no chain provides one: a hash of the job and round.
pub fn offline_round_seed(job: JobId, round: RoundIndex) -> Hash {
	let mut bytes = b"grid/offline-round-seed".to_vec();
	bytes.extend_from_slice(&job.to_le_bytes());
	bytes.extend_from_slice(&round.to_le_bytes());
	Hash::from(blake2_256(&bytes))
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn offline_seeds_differ_by_job_and_round() {
		assert_ne!(offline_round_seed(1, 0), offline_round_seed(1, 1));
		assert_ne!(offline_round_seed(1, 0), offline_round_seed(2, 0));
		assert_eq!(offline_round_seed(3, 4), offline_round_seed(3, 4));
	}

	#[test]
	fn a_deadline_schedule_opens_rounds_by_the_clock() {
		let schedule = LocalSchedule {
			schedule: Schedule::Deadline {
				start_unix_ms: 10_000,
				period_ms: 1_000,
				grace_ms: 100,
				fetch_timeout_ms: 100,
				transfer_budget_ms: 100,
			},
			job: 3,
			roster: Roster::Open,
		};
		assert_eq!(schedule.clock(0), Clock::Open(0), "before the start, round 0 is next");
		assert_eq!(schedule.clock(12_500), Clock::Open(2));
		assert!(schedule.clock(12_500).has_opened(2) && !schedule.clock(12_500).has_opened(3));
		assert_eq!(schedule.deadline(2), Some(13_000));
		assert!(!schedule.ended() && schedule.data_seed(2).is_none());
		assert_eq!(schedule.round_seed(2), Some(offline_round_seed(3, 2)), "one for every member");
	}

	#[test]
	fn fixed_steps_are_self_paced_without_deadlines() {
		let schedule = LocalSchedule {
			schedule: Schedule::FixedSteps { start_unix_ms: 0, steps: 5, wait_ms: 100 },
			job: 3,
			roster: Roster::Open,
		};
		let clock = schedule.clock(123_456);
		assert_eq!(clock, Clock::SelfPaced);
		assert_eq!(clock.round(), 0);
		assert!(clock.has_opened(1_000));
		assert_eq!(schedule.deadline(3), None);
		assert!(!Clock::NotStarted.has_opened(0));
		assert_eq!(schedule.schedule.allowance_ms(), 0, "no proof deadline to keep");
	}

	/// A provider's schedule takes its job's exchange window, and its proofs' deadline (how
	/// long a round's decision may wait) is the one the chain's commit deadline leaves.
	#[test]
	fn a_deadline_schedules_allowance_is_its_exchange_windows() {
		let window = ExchangeWindow { grace_ms: 1_500, fetch_ms: 4_000, fan_in: None };
		let schedule = Schedule::Deadline {
			start_unix_ms: 0,
			period_ms: 30_000,
			grace_ms: u64::from(window.grace_ms),
			fetch_timeout_ms: u64::from(window.fetch_ms),
			transfer_budget_ms: 500,
		};
		assert_eq!(schedule.allowance_ms(), window.allowance_ms());
		assert_eq!(schedule.allowance_ms(), 5_000);
	}
}
