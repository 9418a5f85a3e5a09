//! Checks of a claim by the trajectory its sender committed to. A committee member's, before
//! any full replay: with the start state in hand (fetched and checked as for a replay), the
//! member fetches the trajectory (by the root the sender's signed commitment carried), draws
//! one gap from the challenge's randomness (the same for every member, and revealed by the
//! chain after the sender committed, so it could not know which of its steps would be
//! redone), fetches the gap's two states and the trajectory's end, and on the verify thread
//! ([`crate::verify::Replayer::judge_trace`]) checks that the trajectory starts from the
//! committed start state, that its end gives the update sent, and that the gap's steps
//! redo. If all three hold, the claim is valid; if a check fails, the claim is replayed in
//! full, held to the trajectory's end ([`crate::verify::Replayer::judge_recorded`]), which
//! decides. A desk's own suspect goes straight to that full replay (its trajectory and end
//! fetched, no gap drawn).
//!
//! A sender that does not serve its trajectory or its end after [`MAX_STATE_TRIES`] asks, or
//! serves something its commitment does not name, has broken its commitment: its update is
//! invalid, as for a start state. A full replay without the end could not tell training
//! from a forged error-feedback residual (`Replayer::judge_recorded`), so withholding the
//! trajectory must not buy one.
//!
//! What it gives up: a sender that trained honestly on all but some of its gaps passes when
//! the drawn gap is an honest one. It saved only those gaps' work, and is caught with the
//! probability of their share of the round (the audits' economics in
//! `docs/architecture.md`); a sender that trained on other data, copied or sent noise fails
//! every gap.

use std::collections::HashMap;

use grid_primitives::{job::RoundIndex, work::Verdict, Hash};
use libp2p::PeerId;

use super::{CheckState, FraudDesk, FraudPort, Purpose, MAX_STATE_TRIES};
use crate::{
	round::{fetch::Fetched, messages::Digest},
	trajectory::{StepState, Trajectory},
	verify::{Check, Claim, TraceFinding, TraceRequest},
};

/// A committee's trajectory check under way.
pub(super) struct Tracing {
	/// The claim as a full replay would take it (start state checked).
	claim: Claim,
	/// The trajectory root the sender committed to.
	root: Digest,
	/// The challenge's randomness, which draws the gap redone (`None`: a full replay).
	draw: Option<Hash>,
	/// Times what it waits for was asked.
	tries: u32,
	stage: Stage,
}

/// What a trajectory check waits for.
enum Stage {
	/// The trajectory.
	Trajectory,
	/// The states around the drawn `gap` (if any) and at the end: `wanted`, and those `got`.
	States {
		trajectory: Trajectory,
		gap: Option<usize>,
		wanted: Vec<Digest>,
		got: HashMap<Digest, StepState>,
	},
	/// The verify thread's finding.
	Checking,
}

/// Which gap of `trajectory` a committee redoes: drawn from the challenge's randomness, so
/// every member redoes the same one, in proportion to the steps it covers
/// ([`Trajectory::gap_at`]).
fn drawn_gap(draw: &Hash, trajectory: &Trajectory) -> Option<usize> {
	let h = sp_crypto_hashing::blake2_256(
		&[b"grid/committee-gap".as_slice(), draw.as_bytes()].concat(),
	);
	trajectory.gap_at(u64::from_le_bytes(h[..8].try_into().expect("8 bytes")))
}

impl FraudDesk {
	/// The start state of `key`'s claim is in and checked: a claim whose trajectory root is
	/// known is checked by its trajectory (a committee's, with the challenge's `draw`, by a
	/// drawn gap first; anything else by a full replay held to its end); one without (its
	/// commitment unheard, or evidence kept before roots were) is replayed in full.
	pub(super) fn check_claim(
		&mut self,
		key: (RoundIndex, PeerId),
		purpose: Purpose,
		claim: Claim,
		trajectory: Option<Digest>,
		draw: Option<Hash>,
	) {
		let Some(root) = trajectory else { return self.replay_in_full(key, purpose, claim) };
		let draw = draw.filter(|_| !purpose.accuse && self.trace_claims);
		self.to_fetch.push((key.0, key.1, root));
		let trace = Tracing { claim, root, draw, tries: 1, stage: Stage::Trajectory };
		self.states.insert(key, CheckState::Tracing { purpose, trace: Box::new(trace) });
	}

	/// Replays `key`'s claim in full on the verify thread, without a trajectory to hold it to.
	pub(super) fn replay_in_full(
		&mut self,
		key: (RoundIndex, PeerId),
		purpose: Purpose,
		claim: Claim,
	) {
		self.count_replay(purpose.challenges.is_empty(), claim.steps);
		self.worker.submit(key, Check::Replay(claim));
		self.states.insert(key, CheckState::Replaying { purpose });
	}

	/// Counts a full replay of `steps`: the desk's `own` (for no challenge), or a committee
	/// member's.
	fn count_replay(&mut self, own: bool, steps: u32) {
		if own {
			self.costs.replay_steps += u64::from(steps);
		} else {
			self.costs.committee_steps += u64::from(steps);
		}
	}

	/// Whether a trajectory check of `peer`'s `round` waits for `id`.
	pub(super) fn trace_wants(&self, round: RoundIndex, peer: PeerId, id: &Digest) -> bool {
		let Some(CheckState::Tracing { trace, .. }) = self.states.get(&(round, peer)) else {
			return false;
		};
		match &trace.stage {
			Stage::Trajectory => trace.root == *id,
			Stage::States { wanted, .. } => wanted.contains(id),
			Stage::Checking => false,
		}
	}

	/// Takes `peer`'s answer for `id`, which a committee's trajectory check of its `round`
	/// waits for ([`FraudDesk::trace_wants`]).
	pub(super) fn trace_arrived(
		&mut self,
		round: RoundIndex,
		peer: PeerId,
		id: &Digest,
		answer: Result<Fetched, String>,
		port: &dyn FraudPort,
	) {
		let key = (round, peer);
		if !self.trace_wants(round, peer, id) {
			return;
		}
		let Some(CheckState::Tracing { trace, .. }) = self.states.get_mut(&key) else {
			return;
		};
		let fetched = match answer {
			Ok(fetched) => fetched,
			Err(why) if trace.tries < MAX_STATE_TRIES => {
				trace.tries += 1;
				tracing::info!("round {round}: nothing from {peer} for its trajectory ({why})");
				self.to_fetch.push((round, peer, *id));
				return;
			}
			Err(why) => {
				return self.trace_refused(
					key,
					&format!("serves nothing it recorded ({why})"),
					port,
				);
			}
		};
		let (steps, len, draw) = (trace.claim.steps, trace.claim.base.len(), trace.draw);
		if matches!(trace.stage, Stage::Trajectory) {
			match fetched.trajectory(steps, id) {
				Ok(trajectory) => self.ask_states(key, trajectory, draw.as_ref(), port),
				Err(e) => self.trace_refused(key, &e.to_string(), port),
			}
			return;
		}
		let state = match fetched.step_state(len, id) {
			Ok(state) => state,
			Err(e) => return self.trace_refused(key, &e.to_string(), port),
		};
		let Some(CheckState::Tracing { trace, .. }) = self.states.get_mut(&key) else {
			return;
		};
		if let Stage::States { wanted, got, .. } = &mut trace.stage {
			got.insert(*id, state);
			if wanted.iter().all(|w| got.contains_key(w)) {
				self.submit_trace(key);
			}
		}
	}

	/// The trajectory is in: draws the gap (with the challenge's `draw`, if any) and asks
	/// for the states the check needs: the gap's ends and the trajectory's end (the first
	/// mark's the verifier rebuilds from the base and the start state).
	fn ask_states(
		&mut self,
		key: (RoundIndex, PeerId),
		trajectory: Trajectory,
		draw: Option<&Hash>,
		port: &dyn FraudPort,
	) {
		let marks = trajectory.marks();
		let Some(&last) = marks.last().filter(|m| m.0 > 0) else {
			return self.trace_refused(key, "recorded no state after its start", port);
		};
		let gap = draw.and_then(|draw| drawn_gap(draw, &trajectory));
		let around = gap.map_or(Vec::new(), |gap| vec![marks[gap], marks[gap + 1]]);
		let mut wanted: Vec<Digest> = Vec::new();
		for (at, digest) in around.into_iter().chain([last]) {
			if at != 0 && !wanted.contains(&digest) {
				wanted.push(digest);
			}
		}
		for id in &wanted {
			self.to_fetch.push((key.0, key.1, *id));
		}
		if let Some(CheckState::Tracing { trace, .. }) = self.states.get_mut(&key) {
			trace.tries = 1;
			trace.stage = Stage::States { trajectory, gap, wanted, got: HashMap::new() };
		}
	}

	/// Every state is in: the check runs on the verify thread.
	fn submit_trace(&mut self, key: (RoundIndex, PeerId)) {
		let Some(CheckState::Tracing { trace, .. }) = self.states.get_mut(&key) else { return };
		let Stage::States { trajectory, gap, got, .. } =
			std::mem::replace(&mut trace.stage, Stage::Checking)
		else {
			return;
		};
		if let Some(gap) = gap {
			let marks = trajectory.marks();
			self.costs.committee_steps += u64::from(marks[gap + 1].0 - marks[gap].0);
		}
		let request = TraceRequest { claim: trace.claim.clone(), trajectory, gap, states: got };
		self.worker.submit(key, Check::Trace(Box::new(request)));
	}

	/// The verify thread's finding on `key`'s trajectory: a claim whose gap holds is valid;
	/// any other was replayed in full, held to its trajectory's end, which decided.
	pub(super) fn traced(
		&mut self,
		key: (RoundIndex, PeerId),
		found: crate::error::Result<TraceFinding>,
		port: &dyn FraudPort,
	) {
		match found {
			Ok(TraceFinding::Holds) => {
				tracing::info!(
					"round {}: the trajectory of {} holds (its start, its end and a segment)",
					key.0,
					key.1
				);
				self.conclude(key, Verdict::Valid, port);
			}
			Ok(TraceFinding::Replayed { why, judgement, steps }) => {
				if let Some(CheckState::Tracing { purpose, .. }) = self.states.get(&key) {
					self.count_replay(purpose.challenges.is_empty(), steps);
				}
				tracing::info!(
					"round {}: {} {why}; in full, held to its trajectory's end, its update is \
					 {:?} (cosine {:.4})",
					key.0,
					key.1,
					judgement.verdict,
					judgement.cosine
				);
				self.conclude(key, judgement.verdict, port);
			}
			Err(e) => {
				tracing::warn!("round {}: checking the update of {} failed: {e}", key.0, key.1);
				self.states.remove(&key);
			}
		}
	}

	/// `key`'s sender did not serve what its commitment names (its trajectory or a state
	/// of it), or served something else: its update is invalid.
	fn trace_refused(&mut self, key: (RoundIndex, PeerId), why: &str, port: &dyn FraudPort) {
		let Some(CheckState::Tracing { .. }) = self.states.get(&key) else { return };
		tracing::warn!("round {}: {} {why}: its update is invalid", key.0, key.1);
		self.conclude(key, Verdict::Invalid, port);
	}
}
