//! Segment checks of peers' rounds: a trainer draws, with its secret, which peers' rounds it
//! checks (about [`SEGMENT_RATE`] a round), fetches each one's trajectory (by the root its
//! signed commitment carries), draws one gap between two of its recorded states, fetches both
//! states (by their digests in the trajectory) and redoes the steps between them on the
//! verify thread ([`crate::verify::judge_segment`]). A trajectory that does not reach the
//! steps claimed, states not matching their digests, or steps that do not redo make the
//! update a suspect, which the desk replays in full before it accuses: a segment alone never
//! accuses anyone. A sender that serves nothing is asked again each round and replayed in
//! full after [`SEGMENT_PATIENCE`] rounds (a crashed trainer serves again once restarted).
//!
//! Why this and not only the loss screen: one redone step tells training on other data from
//! honest work outright, at a fraction of a step's cost per update and round
//! (`bench/reports/segment-power.md`), where the loss screen needs many forward passes and
//! still passes half of it.

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::{FraudDesk, FraudPort, Purpose, Received, MAX_STATE_TRIES};
use crate::{
	round::{fetch::Fetched, messages::Digest},
	trajectory::{StepState, Trajectory},
	verify::{CatchUpBases, Check, SegmentJudgement, SegmentRequest, SegmentStart},
};

/// Segment checks each trainer runs per round, on average (each of a peer drawn with its
/// secret): one in two rounds, so each update is checked about half a round's worth
/// whatever the job's size, which catches a sender training on other data in a round with
/// probability about 0.39 (99% within ten rounds), for about 1/60 of a 30-step round's steps
/// (`bench/redteam.sh` measures both).
pub const SEGMENT_RATE: f64 = 0.5;

/// Rounds a checked sender may serve nothing it recorded before its update is replayed in
/// full (whose start state it must then serve, or be judged invalid): a trainer that
/// crashed just after its round serves again from disk once it restarts, and one that never
/// serves is replayed all the same, two rounds later.
pub const SEGMENT_PATIENCE: RoundIndex = 2;

/// Where a segment check of one peer's round is.
pub(super) enum SegmentCheck {
	/// Waiting for the trajectory committed under `root` (asked `tries` times); the sender
	/// claimed `steps`; `since`: the round it first served nothing, if it did.
	Trajectory { root: Digest, steps: u32, tries: u32, since: Option<RoundIndex> },
	/// Waiting for the states around the drawn gap (the trajectory's `root` and the
	/// `claimed` steps kept to ask again); the start's parameters shared with the round's
	/// base where they are the same ([`SegmentStart::sharing`]).
	States {
		root: Digest,
		claimed: u32,
		first: u32,
		steps: u32,
		ids: [Digest; 2],
		got: Box<(Option<SegmentStart>, Option<StepState>)>,
		tries: u32,
		since: Option<RoundIndex>,
	},
	/// Nothing served when asked in the desk's round `since`: asked again each round, and
	/// replayed in full after [`SEGMENT_PATIENCE`] rounds.
	Unserved { root: Digest, steps: u32, since: RoundIndex },
	/// Redoing the steps on the verify thread.
	Checking,
}

impl SegmentCheck {
	/// Whether the desk is waiting on it now (not on a sender to come back).
	pub(super) fn under_way(&self) -> bool {
		!matches!(self, SegmentCheck::Unserved { .. })
	}
}

impl FraudDesk {
	/// Positions in `order` whose rounds this trainer segment-checks this round: how many is
	/// drawn from its secret (on average the desk's rate), which peers too; never itself, and
	/// not a peer already suspect.
	pub(super) fn segment_picks(
		&self,
		round: RoundIndex,
		order: &[PeerId],
		flagged: &[(PeerId, &str, f64)],
	) -> Vec<usize> {
		let draw = self.secret_rank(b"segment-count", round, &self.me);
		let fraction = u64::from_le_bytes(draw[..8].try_into().expect("8 bytes")) as f64
			/ (u64::MAX as f64 + 1.0);
		let count =
			self.segment_rate.floor() as usize + usize::from(fraction < self.segment_rate.fract());
		let mut picks: Vec<usize> = (0..order.len())
			.filter(|i| order[*i] != self.me && !flagged.iter().any(|(p, _, _)| *p == order[*i]))
			.collect();
		picks.sort_by_key(|i| self.secret_rank(b"segment", round, &order[*i]));
		picks.truncate(count);
		picks
	}

	/// Starts a segment check of `received`'s round: asks its sender for its trajectory.
	pub(super) fn begin_segment(&mut self, round: RoundIndex, received: &Received) {
		if received.steps == 0 || self.segments.contains_key(&(round, received.peer)) {
			return;
		}
		let root = received.trajectory;
		self.to_fetch.push((round, received.peer, root));
		let check = SegmentCheck::Trajectory { root, steps: received.steps, tries: 1, since: None };
		self.segments.insert((round, received.peer), check);
	}

	/// Whether a segment check of `peer`'s `round` waits for `id`.
	pub(super) fn segment_wants(&self, round: RoundIndex, peer: PeerId, id: &Digest) -> bool {
		match self.segments.get(&(round, peer)) {
			Some(SegmentCheck::Trajectory { root, .. }) => root == id,
			Some(SegmentCheck::States { ids, .. }) => ids.contains(id),
			_ => false,
		}
	}

	/// Takes `peer`'s answer for `id`, which a segment check of its `round` waits for
	/// ([`FraudDesk::segment_wants`]).
	pub(super) fn segment_arrived(
		&mut self,
		round: RoundIndex,
		peer: PeerId,
		id: &Digest,
		answer: Result<Fetched, String>,
		port: &dyn FraudPort,
	) {
		let key = (round, peer);
		if !self.segment_wants(round, peer, id) {
			return;
		}
		let check = self.segments.remove(&key).expect("looked up above");
		let tries = match &check {
			SegmentCheck::Trajectory { tries, .. } | SegmentCheck::States { tries, .. } => *tries,
			SegmentCheck::Unserved { .. } | SegmentCheck::Checking => 0,
		};
		let fetched = match answer {
			Ok(fetched) => fetched,
			Err(why) if tries < MAX_STATE_TRIES => {
				tracing::info!("round {round}: nothing from {peer} for its segment check ({why})");
				self.to_fetch.push((round, peer, *id));
				self.segments.insert(key, bump(check));
				return;
			}
			Err(why) => {
				let (root, steps, since) = match check {
					SegmentCheck::Trajectory { root, steps, since, .. } => (root, steps, since),
					SegmentCheck::States { root, claimed, since, .. } => (root, claimed, since),
					_ => return,
				};
				tracing::info!(
					"round {round}: {peer} serves nothing it recorded ({why}); asking again next \
					 round"
				);
				let since = since.unwrap_or(self.latest.unwrap_or(round));
				self.segments.insert(key, SegmentCheck::Unserved { root, steps, since });
				return;
			}
		};
		match check {
			SegmentCheck::Trajectory { root, steps, since, .. } => {
				match fetched.trajectory(steps, &root) {
					Ok(trajectory) => self.draw_gap(round, peer, (root, since), &trajectory, steps),
					Err(e) => self.segment_suspect(round, peer, &e.to_string()),
				}
			}
			SegmentCheck::States { root, claimed, first, steps, ids, mut got, tries, since } => {
				let Some(base) = self.evidence(round).map(|e| e.base.clone()) else { return };
				match fetched.step_state(base.len(), id) {
					Ok(mut state) => {
						if ids[1] == *id {
							// The segment is judged by what it added to the first moment and
							// the parameters: the end's second moments (a model's worth of
							// memory while the check waits and runs) are not needed.
							if let Some(moments) = &mut state.moments {
								moments.v = Vec::new();
							}
							got.1 = Some(state);
						} else {
							got.0 = Some(SegmentStart::sharing(state, &base));
						}
						if let (Some(start), Some(end)) = *got {
							self.submit_segment(round, peer, first, steps, start, end, port);
						} else {
							let check = SegmentCheck::States {
								root,
								claimed,
								first,
								steps,
								ids,
								got,
								tries,
								since,
							};
							self.segments.insert(key, check);
						}
					}
					Err(e) => self.segment_suspect(round, peer, &e.to_string()),
				}
			}
			SegmentCheck::Unserved { .. } | SegmentCheck::Checking => {}
		}
	}

	/// At the desk's round `now`: asks again for what senders did not serve, and replays in
	/// full the updates of those that served nothing for [`SEGMENT_PATIENCE`] rounds.
	pub(super) fn retry_unserved(&mut self, now: RoundIndex) {
		let waiting: Vec<_> = self
			.segments
			.iter()
			.filter_map(|(key, check)| match check {
				SegmentCheck::Unserved { root, steps, since } => {
					Some((*key, *root, *steps, *since))
				}
				_ => None,
			})
			.collect();
		for ((round, peer), root, steps, since) in waiting {
			if now.saturating_sub(since) >= SEGMENT_PATIENCE {
				let why = format!("served nothing it recorded for {SEGMENT_PATIENCE} rounds");
				self.segment_suspect(round, peer, &why);
			} else {
				// Unserved, the check read nothing and its round went from memory.
				self.hold(round);
				self.to_fetch.push((round, peer, root));
				let check = SegmentCheck::Trajectory { root, steps, tries: 1, since: Some(since) };
				self.segments.insert((round, peer), check);
			}
		}
	}

	/// Draws which gap of `trajectory` to check (with this trainer's secret, after the
	/// sender committed to it, in proportion to the steps it covers) and asks for the
	/// states at its ends.
	fn draw_gap(
		&mut self,
		round: RoundIndex,
		peer: PeerId,
		(root, since): (Digest, Option<RoundIndex>),
		trajectory: &Trajectory,
		claimed: u32,
	) {
		let marks = trajectory.marks();
		if trajectory.steps() != claimed || marks.len() < 2 {
			let why = format!(
				"recorded states up to step {} of the {claimed} it claims",
				trajectory.steps()
			);
			return self.segment_suspect(round, peer, &why);
		}
		let draw = self.secret_rank(b"segment-gap", round, &peer);
		let draw = u64::from_le_bytes(draw[..8].try_into().expect("8 bytes"));
		let Some(gap) = trajectory.gap_at(draw) else {
			return self.segment_suspect(round, peer, "recorded no state after its start");
		};
		let ((first, start), (last, end)) = (marks[gap], marks[gap + 1]);
		for id in [start, end] {
			self.to_fetch.push((round, peer, id));
		}
		let check = SegmentCheck::States {
			root,
			claimed,
			first,
			steps: last - first,
			ids: [start, end],
			got: Box::new((None, None)),
			tries: 1,
			since,
		};
		self.segments.insert((round, peer), check);
	}

	/// Both states are in: the steps between them are redone on the verify thread.
	#[allow(clippy::too_many_arguments)]
	fn submit_segment(
		&mut self,
		round: RoundIndex,
		peer: PeerId,
		first: u32,
		steps: u32,
		start: SegmentStart,
		end: StepState,
		port: &dyn FraudPort,
	) {
		let Some(seed) = port.peer_seed(round, &peer) else {
			return tracing::warn!(
				"round {round}: no data seed known for {peer}; no segment check"
			);
		};
		let bases = match self.overlapped_from(round) {
			Ok(from) => from
				.zip(self.evidence(round))
				.map(|(from, evidence)| CatchUpBases { from, to: evidence.base.clone() }),
			Err(why) => return tracing::warn!("round {round}: {why}; no segment check of {peer}"),
		};
		self.costs.segment_steps += u64::from(steps);
		let request = SegmentRequest { start, end, seed, first, steps, bases };
		self.worker.submit((round, peer), Check::Segment(request));
		self.segments.insert((round, peer), SegmentCheck::Checking);
	}

	/// A segment check finished: steps that do not redo make a suspect.
	pub(super) fn segment_found(
		&mut self,
		round: RoundIndex,
		peer: PeerId,
		found: crate::error::Result<SegmentJudgement>,
	) {
		self.segments.remove(&(round, peer));
		match found {
			// At info, as its failure is at warn: an operator sees that checks run and pass
			// (a few a round: `SEGMENT_RATE`).
			Ok(j) if j.verdict == grid_primitives::work::Verdict::Valid => tracing::info!(
				"round {round}: segment check of {peer}: its steps redo (gradient cosine {:.4})",
				j.gradient_cosine
			),
			Ok(j) => self.segment_suspect(
				round,
				peer,
				&format!(
					"recorded steps that do not redo (gradient cosine {:.3}, parameters {:.3})",
					j.gradient_cosine, j.param_cosine
				),
			),
			Err(e) => tracing::warn!("round {round}: segment check of {peer}: {e}"),
		}
	}

	/// `peer`'s round failed its segment check: its update is replayed in full, and its
	/// sender accused if the replay refutes it.
	fn segment_suspect(&mut self, round: RoundIndex, peer: PeerId, why: &str) {
		self.segments.remove(&(round, peer));
		// A check already under way (a challenge's, or another screen's suspect) decides.
		if self.states.contains_key(&(round, peer)) {
			return;
		}
		tracing::warn!("round {round}: {peer} {why}; replaying its update");
		if let Some(target) = self.own_target(round, &peer) {
			self.start(round, peer, target, Purpose { accuse: true, challenges: vec![] });
		}
	}
}

/// The same check, asked once more.
fn bump(check: SegmentCheck) -> SegmentCheck {
	match check {
		SegmentCheck::Trajectory { root, steps, tries, since } => {
			SegmentCheck::Trajectory { root, steps, tries: tries + 1, since }
		}
		SegmentCheck::States { root, claimed, first, steps, ids, got, tries, since } => {
			SegmentCheck::States { root, claimed, first, steps, ids, got, tries: tries + 1, since }
		}
		other => other,
	}
}
