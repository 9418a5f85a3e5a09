//! A committee member's check of a challenged claim by the trajectory its sender committed
//! to, before any full replay: with the start state in hand (fetched and checked as for a
//! replay), the member fetches the trajectory (by the root the sender's signed commitment
//! carried), draws one gap from the challenge's randomness (the same for every member, and
//! revealed by the chain after the sender committed, so it could not know which of its
//! steps would be redone), fetches the gap's two states and the trajectory's end, and on
//! the verify thread ([`crate::verify::Replayer::judge_trace`]) checks that the trajectory
//! starts from the committed start state, that its end gives the update sent, and that the
//! gap's steps redo. If all three hold, the claim is valid; anything else — a trajectory or
//! state not served after [`MAX_STATE_TRIES`] asks, or not matching its commitment, or a
//! check that fails — and the member replays the claim in full, which decides. So a verdict
//! of invalid always rests on a full replay, as before, while an honest claim (the common
//! case: audits are of random contributions, griefers challenge honest ones) costs a
//! segment's steps instead of the round's.
//!
//! What it gives up: a sender that trained honestly on all but some of its gaps passes when
//! the drawn gap is an honest one. It saved only those gaps' work, and is caught with the
//! probability of their share of the round (the audits' economics in
//! `docs/architecture.md`); a sender that trained on other data, copied or sent noise fails
//! every gap.

use std::collections::HashMap;

use grid_primitives::{job::RoundIndex, work::Verdict, Hash};
use libp2p::PeerId;

use super::{CheckState, FraudDesk, Purpose, MAX_STATE_TRIES};
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
	/// The challenge's randomness: which gap is redone.
	draw: Hash,
	/// Times what it waits for was asked.
	tries: u32,
	stage: Stage,
}

/// What a trajectory check waits for.
enum Stage {
	/// The trajectory.
	Trajectory,
	/// The states around the drawn `gap` and at the end: `wanted`, and those `got`.
	States {
		trajectory: Trajectory,
		gap: usize,
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
	/// The start state of `key`'s claim is in and checked: a committee check with a
	/// trajectory to follow asks for it; anything else is replayed in full.
	pub(super) fn check_claim(
		&mut self,
		key: (RoundIndex, PeerId),
		purpose: Purpose,
		claim: Claim,
		trace: Option<(Digest, Hash)>,
	) {
		match trace {
			Some((root, draw)) if !purpose.accuse && self.trace_claims => {
				self.to_fetch.push((key.0, key.1, root));
				let trace = Tracing { claim, root, draw, tries: 1, stage: Stage::Trajectory };
				self.states.insert(key, CheckState::Tracing { purpose, trace: Box::new(trace) });
			}
			_ => self.replay_in_full(key, purpose, claim),
		}
	}

	/// Replays `key`'s claim in full on the verify thread.
	pub(super) fn replay_in_full(
		&mut self,
		key: (RoundIndex, PeerId),
		purpose: Purpose,
		claim: Claim,
	) {
		let steps = u64::from(claim.steps);
		if purpose.challenges.is_empty() {
			self.costs.replay_steps += steps;
		} else {
			self.costs.committee_steps += steps;
		}
		self.worker.submit(key, Check::Replay(claim));
		self.states.insert(key, CheckState::Replaying { purpose });
	}

	/// Whether a committee's trajectory check of `peer`'s `round` waits for `id`.
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
				return self.trace_failed(key, &format!("serves nothing it recorded ({why})"));
			}
		};
		let (steps, len, draw) = (trace.claim.steps, trace.claim.base.len(), trace.draw);
		if matches!(trace.stage, Stage::Trajectory) {
			match fetched.trajectory(steps, id) {
				Ok(trajectory) => self.draw_committee_gap(key, trajectory, &draw),
				Err(e) => self.trace_failed(key, &e.to_string()),
			}
			return;
		}
		let state = match fetched.step_state(len, id) {
			Ok(state) => state,
			Err(e) => return self.trace_failed(key, &e.to_string()),
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

	/// The trajectory is in: draws the gap and asks for the states the check needs (the
	/// first mark's the verifier rebuilds from the base and the start state).
	fn draw_committee_gap(
		&mut self,
		key: (RoundIndex, PeerId),
		trajectory: Trajectory,
		draw: &Hash,
	) {
		let Some(gap) = drawn_gap(draw, &trajectory) else {
			return self.trace_failed(key, "recorded no state after its start");
		};
		let marks = trajectory.marks();
		let mut wanted: Vec<Digest> = Vec::new();
		for (at, digest) in [marks[gap], marks[gap + 1], marks[marks.len() - 1]] {
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
		let marks = trajectory.marks();
		self.costs.committee_steps += u64::from(marks[gap + 1].0 - marks[gap].0);
		let request = TraceRequest { claim: trace.claim.clone(), trajectory, gap, states: got };
		self.worker.submit(key, Check::Trace(Box::new(request)));
	}

	/// The verify thread's finding on `key`'s trajectory: a claim that holds is valid; any
	/// other is replayed in full.
	pub(super) fn traced(
		&mut self,
		key: (RoundIndex, PeerId),
		found: crate::error::Result<TraceFinding>,
		port: &dyn super::FraudPort,
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
			Ok(TraceFinding::Fails(why)) => self.trace_failed(key, &why),
			Err(e) => self.trace_failed(key, &format!("its trajectory could not be checked: {e}")),
		}
	}

	/// `key`'s trajectory does not settle the claim: it is replayed in full.
	fn trace_failed(&mut self, key: (RoundIndex, PeerId), why: &str) {
		let Some(CheckState::Tracing { purpose, trace }) = self.states.remove(&key) else {
			return;
		};
		tracing::warn!("round {}: {} {why}; replaying its update in full", key.0, key.1);
		self.replay_in_full(key, purpose, trace.claim);
	}
}
