//! The trainer's part in the fraud path: it keeps what checks need (each round's base model
//! and the updates it aggregated, as sent, with their senders' committed start-state digests:
//! the last rounds in memory, every round of the challenge window in an
//! [`EvidenceArchive`]), screens every round's updates, replays suspects before accusing them,
//! and judges the contributions the chain asks it to judge as a committee member: by their
//! trajectories first, by a full replay where those do not hold.
//!
//! A replay is exact: it needs the sender's private start state, which only the sender holds.
//! The desk asks for it ([`FraudDesk::state_requests`]; the daemon fetches it from the sender)
//! and checks what comes back against the commitment's digests. A sender that serves a state
//! other than the one it committed to, or none after [`MAX_STATE_TRIES`] asks, has broken its
//! commitment: its update is judged invalid. The replays and loss screens themselves are in
//! [`crate::verify`] and run on their own thread; findings come back through
//! [`FraudDesk::poll`], which the round loop calls while it waits for the network.
//!
//! - [`port`]: what the desk needs from the chain, and the challenges it is asked to judge.
//! - [`screen`]: keeping each round's evidence and screening its updates.
//! - [`segments`]: segment checks of peers' recorded trajectories.
//! - [`committee`]: a committee member's check of a challenged claim by its trajectory.
//! - [`check`]: start states, replays, findings and votes.

mod check;
mod committee;
mod port;
mod screen;
mod segments;

use std::{
	collections::{BTreeSet, HashMap, HashSet, VecDeque},
	sync::Arc,
};

use grid_primitives::{job::RoundIndex, work::Verdict, Hash};
use libp2p::PeerId;

use committee::Tracing;
pub use port::{CheckRequest, FraudPort};
pub use screen::{GAUNTLET_PEERS, REPLAYERS};
use segments::SegmentCheck;
pub use segments::{SEGMENT_PATIENCE, SEGMENT_RATE};

use super::{
	evidence::{EvidenceArchive, Kept, RoundEvidence},
	messages::Digest,
};
use crate::{
	compress::CompressedUpdate,
	compute_gate::ComputeGate,
	verify::{Replayer, VerifyWorker},
	work_state::WorkDigests,
};

/// Most rounds whose evidence is always held in memory too, in a job whose rounds overlap:
/// the latest and the one before, which its overlapped steps trained from
/// ([`FraudDesk::memory_rounds`]). Where rounds block none is: the latest round's loss
/// screens carry what they read, and its checks hold it. A round that a check under way
/// reads (and, where rounds overlap, the round before it) stays as long as the check; other
/// rounds come back from the archive, which reads a base as it is (no inflating since
/// `GEV3`). Four rounds were held before, a base model each: two copies of the model more at
/// a provider's peak in any job of more than three rounds; then two in every job, then one
/// where rounds block.
pub const MEMORY_ROUNDS: usize = 2;

/// Rounds after its own that a round's contributions can still be challenged and voted on:
/// its challenge window and a challenge's voting period, in rounds, and the round itself.
/// Verifiers keep evidence, and senders serve their start states, this long.
pub fn challengeable_rounds(
	challenge_window: u32,
	voting_period: u32,
	round_blocks: u32,
) -> RoundIndex {
	challenge_window.saturating_add(voting_period).div_ceil(round_blocks.max(1)).saturating_add(1)
}

/// Times a sender's start state is asked for before its update is judged invalid.
pub const MAX_STATE_TRIES: u32 = 3;

/// An update as it went into a round's aggregate.
#[derive(Clone)]
pub struct Received {
	/// Who sent it.
	pub peer: PeerId,
	/// Inner steps it claimed.
	pub steps: u32,
	/// Its committed start state's digests.
	pub start: WorkDigests,
	/// Its committed trajectory's root ([`crate::trajectory::Trajectory::root`]).
	pub trajectory: Digest,
	/// The update as sent.
	pub update: Arc<CompressedUpdate>,
}

/// What a check's finding is for.
#[derive(Default)]
struct Purpose {
	/// Accuse the peer if the update is invalid (this trainer found it suspect).
	accuse: bool,
	/// Challenges to vote on with the finding.
	challenges: Vec<u64>,
}

/// What a check replays: an update with the start state and steps its sender claimed for it.
#[derive(Clone)]
struct Target {
	/// Inner steps claimed.
	steps: u32,
	/// The claimed start state's content address.
	start: Digest,
	/// The update.
	update: Arc<CompressedUpdate>,
	/// The trajectory root its sender committed to, where this trainer heard it: a full
	/// replay is held to the trajectory's end.
	trajectory: Option<Digest>,
	/// For a committee's check: the challenge's randomness, which draws the gap of the
	/// trajectory checked before any full replay.
	draw: Option<Hash>,
}

impl Target {
	/// What `kept`'s sender claimed.
	fn of(kept: &Kept) -> Self {
		let update = kept.update.clone();
		let (steps, start, trajectory) = (kept.steps, kept.start.id(), kept.trajectory);
		Target { steps, start, update, trajectory, draw: None }
	}
}

/// What a desk's checks have cost: forward passes and inner steps redone, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeskCosts {
	/// Forward passes the loss screens ran (each about a third of an inner step's work).
	pub screen_passes: u64,
	/// Inner steps the desk's own segment checks redid.
	pub segment_steps: u64,
	/// Inner steps of full replays of the desk's own suspects.
	pub replay_steps: u64,
	/// Inner steps redone as a committee member: segments of trajectories, and full replays
	/// of claims whose trajectories did not hold.
	pub committee_steps: u64,
}

/// A check of one peer's update for one round.
enum CheckState {
	/// Waiting for the sender's start state (asked `tries` times).
	Fetching { purpose: Purpose, tries: u32, target: Target },
	/// A check by the claim's trajectory (start state in hand).
	Tracing { purpose: Purpose, trace: Box<Tracing> },
	/// Replaying.
	Replaying { purpose: Purpose },
	/// Decided (a later challenge of the same update gets the same vote).
	Done(Verdict),
}

/// The fraud checks of one trainer (its fraud desk).
pub struct FraudDesk {
	me: PeerId,
	worker: VerifyWorker<(RoundIndex, PeerId)>,
	/// What its checks have cost.
	costs: DeskCosts,
	/// Loss screens on the worker thread: (round, sender).
	screening: HashSet<(RoundIndex, PeerId)>,
	/// This trainer's secret: it draws which peers it loss-screens each round, so that no
	/// sender can know in advance in which rounds nobody screens it.
	secret: [u8; 32],
	/// Peers it loss-screens per round ([`GAUNTLET_PEERS`] in the daemon).
	gauntlet_peers: usize,
	/// The last [`FraudDesk::memory_rounds`] rounds' evidence, and that of rounds checks under way
	/// read ([`FraudDesk::rounds_in_use`]), oldest first.
	history: VecDeque<Arc<RoundEvidence>>,
	/// The latest round kept (its evidence may be only in the archive).
	latest: Option<RoundIndex>,
	/// Every round's evidence for `keep_rounds` rounds.
	archive: Box<dyn EvidenceArchive>,
	keep_rounds: RoundIndex,
	states: HashMap<(RoundIndex, PeerId), CheckState>,
	/// Start states, trajectories and step states to fetch: (round, sender, id).
	to_fetch: Vec<(RoundIndex, PeerId, Digest)>,
	/// Segment checks under way: (round, sender).
	segments: HashMap<(RoundIndex, PeerId), SegmentCheck>,
	/// Segment checks each round, on average ([`SEGMENT_RATE`] in the daemon).
	segment_rate: f64,
	/// Whether committee checks follow the claim's trajectory before any full replay (the
	/// daemon's); without, every committee check is a full replay (the red-team suite's
	/// baseline).
	trace_claims: bool,
	/// Whether the job's rounds overlap (its replayer knows their catch-up step).
	overlaps: bool,
}

impl FraudDesk {
	/// The desk of the trainer `me` (whose loss screens pick peers with `secret`), replaying
	/// with `replayer`, keeping each round's evidence in `archive` for `keep_rounds` rounds
	/// (see [`challengeable_rounds`]).
	pub fn new(
		me: PeerId,
		secret: [u8; 32],
		replayer: Replayer,
		archive: Box<dyn EvidenceArchive>,
		keep_rounds: RoundIndex,
	) -> Self {
		Self::gated(me, secret, replayer, archive, keep_rounds, ComputeGate::open())
	}

	/// The same desk, whose checks that redo training steps take their turn at `gate`
	/// with the trainer's own rounds ([`ComputeGate`]: a provider short of memory).
	pub fn gated(
		me: PeerId,
		secret: [u8; 32],
		replayer: Replayer,
		archive: Box<dyn EvidenceArchive>,
		keep_rounds: RoundIndex,
		gate: ComputeGate,
	) -> Self {
		let overlaps = replayer.catch_up.is_some();
		FraudDesk {
			me,
			overlaps,
			costs: DeskCosts::default(),
			screening: HashSet::new(),
			secret,
			gauntlet_peers: GAUNTLET_PEERS,
			worker: VerifyWorker::gated(replayer, gate),
			history: VecDeque::new(),
			latest: None,
			archive,
			keep_rounds: keep_rounds.max(MEMORY_ROUNDS as RoundIndex),
			states: HashMap::new(),
			to_fetch: Vec::new(),
			segments: HashMap::new(),
			segment_rate: SEGMENT_RATE,
			trace_claims: true,
		}
	}

	/// The same desk running `rate` segment checks a round on average instead of
	/// [`SEGMENT_RATE`] (`bench/redteam.sh` weighs what each rate catches against its cost).
	pub fn with_segment_rate(mut self, rate: f64) -> Self {
		self.segment_rate = rate.max(0.0);
		self
	}

	/// The same desk judging every challenge and audit by a full replay, as committees did
	/// before they followed trajectories (`bench/redteam.sh` measures both side by side).
	pub fn with_full_committee_replays(mut self) -> Self {
		self.trace_claims = false;
		self
	}

	/// What its checks have cost so far.
	pub fn costs(&self) -> DeskCosts {
		self.costs
	}

	/// The same desk loss-screening `peers` peers per round instead of [`GAUNTLET_PEERS`]
	/// (`bench/redteam.sh` weighs what each number catches against what it costs).
	pub fn with_gauntlet_peers(mut self, peers: usize) -> Self {
		self.gauntlet_peers = peers;
		self
	}

	/// Whether a check is still under way (a loss screen, or waiting for a start state, or
	/// replaying).
	pub fn busy(&self) -> bool {
		!self.screening.is_empty()
			|| self.segments.values().any(SegmentCheck::under_way)
			|| self.states.values().any(|s| !matches!(s, CheckState::Done(_)))
	}

	/// Rounds whose evidence a check under way may still read: its own and, where rounds
	/// overlap, the one before (loss screens carry what they read).
	fn rounds_in_use(&self) -> BTreeSet<RoundIndex> {
		let checking = self.states.iter().filter(|(_, s)| !matches!(s, CheckState::Done(_)));
		let segments = self.segments.iter().filter(|(_, s)| s.under_way());
		checking
			.map(|((round, _), _)| *round)
			.chain(segments.map(|((round, _), _)| *round))
			.flat_map(|round| [round.checked_sub(1).filter(|_| self.overlaps), Some(round)])
			.flatten()
			.collect()
	}

	/// Rounds of evidence always held in memory: where rounds overlap the latest and the one
	/// before, else none (see [`MEMORY_ROUNDS`]).
	fn memory_rounds(&self) -> RoundIndex {
		if self.overlaps {
			MEMORY_ROUNDS as RoundIndex
		} else {
			0
		}
	}

	/// Lets go of the evidence in memory that neither the last [`FraudDesk::memory_rounds`] nor
	/// a check under way needs (the archive keeps it).
	fn release_evidence(&mut self) {
		let Some(latest) = self.latest else { return };
		let in_use = self.rounds_in_use();
		let recent = self.memory_rounds();
		self.history.retain(|e| e.round + recent > latest || in_use.contains(&e.round));
	}

	/// Brings `round`'s evidence (and, where rounds overlap, the round before's) back into
	/// memory from the archive for a check that starts on it, which reads it several times;
	/// [`FraudDesk::release_evidence`] lets it go once no check reads it.
	fn hold(&mut self, round: RoundIndex) {
		for r in [round.checked_sub(1).filter(|_| self.overlaps), Some(round)].into_iter().flatten()
		{
			if self.history.iter().any(|e| e.round == r) {
				continue;
			}
			let Some(evidence) = self.evidence(r) else { continue };
			let at = self.history.iter().position(|e| e.round > r).unwrap_or(self.history.len());
			self.history.insert(at, evidence);
		}
	}

	/// Rounds whose evidence is in memory (tests).
	#[cfg(test)]
	fn rounds_held(&self) -> Vec<RoundIndex> {
		self.history.iter().map(|e| e.round).collect()
	}

	/// `round`'s evidence: from memory, or else from the archive (a round that does not
	/// decode is as good as missing, and said so).
	fn evidence(&self, round: RoundIndex) -> Option<Arc<RoundEvidence>> {
		if let Some(e) = self.history.iter().find(|e| e.round == round) {
			return Some(e.clone());
		}
		let archived = self.archive.get(round)?;
		match RoundEvidence::decode(&archived) {
			Ok(e) if e.round == round => Some(Arc::new(e)),
			Ok(e) => {
				tracing::warn!("the archive's evidence for round {round} is round {}", e.round);
				None
			}
			Err(e) => {
				tracing::warn!("the archive's evidence for round {round}: {e}");
				None
			}
		}
	}

	/// What `round`'s first steps trained from if its sender overlapped it: the round
	/// before's base, which every verifier of that round holds (`Ok(None)` in a job whose
	/// rounds do not overlap, or in its first round). An error when this desk does not hold
	/// that round's evidence (it joined since), so it cannot judge the round as its sender
	/// may have run it.
	fn overlapped_from(&self, round: RoundIndex) -> Result<Option<Arc<Vec<f32>>>, String> {
		if !self.overlaps || round == 0 {
			return Ok(None);
		}
		match self.evidence(round - 1) {
			Some(before) => Ok(Some(before.base.clone())),
			None => Err(format!(
				"no base of round {} held here, which its overlapped steps trained from",
				round - 1
			)),
		}
	}

	/// Asks for `peer`'s start state of `round` to replay `target`.
	fn start(&mut self, round: RoundIndex, peer: PeerId, target: Target, purpose: Purpose) {
		self.hold(round);
		self.to_fetch.push((round, peer, target.start));
		self.states.insert((round, peer), CheckState::Fetching { purpose, tries: 1, target });
	}
}

#[cfg(test)]
mod tests;
