//! A check's course: the sender's start state asked for and checked against its commitment,
//! the replay, and the finding turned into votes and accusations.

use std::sync::Arc;

use grid_primitives::{job::RoundIndex, work::Verdict};
use libp2p::PeerId;

use super::{CheckRequest, CheckState, FraudDesk, FraudPort, Purpose, Target, MAX_STATE_TRIES};
use crate::{
	round::{
		fetch::Fetched,
		messages::{update_hash, Digest},
	},
	verify::{Claim, Finding, LossScreen},
};

impl FraudDesk {
	/// Start states to fetch, each from its owner: (round, owner, state id). Taken once;
	/// every answer goes to [`FraudDesk::state_arrived`].
	pub fn state_requests(&mut self) -> Vec<(RoundIndex, PeerId, Digest)> {
		std::mem::take(&mut self.to_fetch)
	}

	/// `peer`'s answer to the request for `id` of `round` (its start state, or its
	/// trajectory or a step state of it for a segment check): the fetched object, or why
	/// there is none.
	pub fn state_arrived(
		&mut self,
		round: RoundIndex,
		peer: PeerId,
		id: Digest,
		answer: std::result::Result<Fetched, String>,
		port: &dyn FraudPort,
	) {
		// A segment check and a committee's trajectory check may both wait for the same
		// object: each takes the answer (a copy only then).
		match (self.segment_wants(round, peer, &id), self.trace_wants(round, peer, &id)) {
			(true, true) => {
				self.segment_arrived(round, peer, &id, answer.clone(), port);
				return self.trace_arrived(round, peer, &id, answer, port);
			}
			(true, false) => return self.segment_arrived(round, peer, &id, answer, port),
			(false, true) => return self.trace_arrived(round, peer, &id, answer, port),
			(false, false) => {}
		}
		let key = (round, peer);
		let Some(CheckState::Fetching { tries, target, .. }) = self.states.get_mut(&key) else {
			return;
		};
		if target.start != id {
			return;
		}
		let target = target.clone();
		let fetched = match answer {
			Ok(fetched) => fetched,
			Err(why) if *tries < MAX_STATE_TRIES => {
				*tries += 1;
				tracing::info!(
					"round {round}: no start state from {peer} yet ({why}); asking again"
				);
				self.to_fetch.push((round, peer, target.start));
				return;
			}
			Err(why) => {
				tracing::warn!(
					"round {round}: {peer} did not serve the start state it committed to \
					 ({why}): its update is invalid"
				);
				return self.conclude(key, Verdict::Invalid, port);
			}
		};
		// Held while its check runs (`FraudDesk::start`); read only for an answer it awaits.
		let Some(evidence) = self.evidence(round) else { return };
		match fetched.work_state(evidence.base.len(), &target.start) {
			Ok(state) => {
				let Some(seed) = port.peer_seed(round, &peer) else {
					tracing::warn!("round {round}: no data seed known for {peer}; cannot replay");
					self.states.remove(&key);
					return;
				};
				let from = match self.overlapped_from(round) {
					Ok(from) => from,
					Err(why) => {
						tracing::warn!("round {round}: {why}; cannot replay {peer}'s update");
						self.states.remove(&key);
						return;
					}
				};
				// Judged overlapped from `from` and, failing that, blocking.
				let claim = Claim {
					base: evidence.base.clone(),
					start: Arc::new(state),
					sent: target.update,
					seed,
					steps: target.steps,
					from,
				};
				if let Some(CheckState::Fetching { purpose, .. }) = self.states.remove(&key) {
					self.check_claim(key, purpose, claim, target.trajectory, target.draw);
				}
			}
			Err(e) => {
				tracing::warn!(
					"round {round}: {peer} served a start state it did not commit to: {e}"
				);
				self.conclude(key, Verdict::Invalid, port);
			}
		}
	}

	/// Takes the challenges assigned by the chain and the finished replays; votes and
	/// accuses through `port`.
	pub fn poll(&mut self, port: &dyn FraudPort) {
		let requests = port.assigned_checks();
		let any = !requests.is_empty();
		for request in requests {
			// Read from memory by what follows (once from the archive), let go below unless
			// a check starts on it.
			self.hold(request.round);
			if let Some(why) = self.proven_differs(&request) {
				tracing::warn!(
					"challenge {}: {} proved on chain {why} than it sent for round {}: invalid",
					request.challenge,
					request.accused,
					request.round
				);
				port.vote(request.challenge, Verdict::Invalid);
				continue;
			}
			let key = (request.round, request.accused);
			match self.states.get_mut(&key) {
				Some(CheckState::Done(verdict)) => port.vote(request.challenge, *verdict),
				Some(
					CheckState::Fetching { purpose, .. }
					| CheckState::Tracing { purpose, .. }
					| CheckState::Replaying { purpose },
				) => purpose.challenges.push(request.challenge),
				None => {
					let purpose = Purpose { accuse: false, challenges: vec![request.challenge] };
					if let Some(target) = self.proven_target(&request) {
						self.start(request.round, request.accused, target, purpose);
					} else {
						tracing::warn!(
							"challenge {}: this trainer does not hold the update of {} for \
							 round {}; it cannot vote",
							request.challenge,
							request.accused,
							request.round
						);
					}
				}
			}
		}
		if any {
			self.release_evidence();
		}
		for ((round, peer), finding) in self.worker.finished() {
			match finding {
				Finding::Screen(screen) => self.screened(round, peer, screen),
				Finding::Segment(found) => self.segment_found(round, peer, found),
				Finding::Trace(found) => self.traced((round, peer), found, port),
				Finding::Replay(Ok(judgement)) => {
					tracing::info!(
						"round {round}: the update of {peer} is {:?} (cosine with its exact \
						 replay {:.4})",
						judgement.verdict,
						judgement.cosine
					);
					self.conclude((round, peer), judgement.verdict, port);
				}
				Finding::Replay(Err(e)) => {
					tracing::warn!("round {round}: replaying the update of {peer} failed: {e}");
					self.states.remove(&(round, peer));
				}
			}
		}
	}

	/// A loss screen of `peer`'s update of `round` finished: a suspect is replayed, and
	/// accused if the replay refutes it.
	fn screened(
		&mut self,
		round: RoundIndex,
		peer: PeerId,
		screen: crate::error::Result<LossScreen>,
	) {
		self.screening.remove(&(round, peer));
		let screen = match screen {
			Ok(screen) => screen,
			Err(e) => return tracing::warn!("round {round}: loss screen of {peer}: {e}"),
		};
		self.costs.screen_passes += u64::from(screen.passes);
		tracing::debug!(
			"round {round}: loss screen of {peer}: margin {:.5} (suspect at or below {:.5}) over {} batches",
			screen.margin,
			screen.threshold,
			screen.batches
		);
		// A check already under way (a challenge's, or a cheap screen's suspect) decides.
		if !screen.suspect() || self.states.contains_key(&(round, peer)) {
			return;
		}
		tracing::warn!(
			"round {round}: the update of {peer} lowers the loss on its own data no more than \
			 another's update does (the other's loss minus its own: {:.5}); replaying it",
			screen.margin
		);
		if let Some(target) = self.own_target(round, &peer) {
			self.start(round, peer, target, Purpose { accuse: true, challenges: vec![] });
		}
	}

	/// Records the verdict on `key`'s update: votes on its challenges, accuses its sender
	/// if this trainer suspected it and it is invalid.
	pub(super) fn conclude(
		&mut self,
		key: (RoundIndex, PeerId),
		verdict: Verdict,
		port: &dyn FraudPort,
	) {
		let purpose = match self.states.remove(&key) {
			Some(
				CheckState::Fetching { purpose, .. }
				| CheckState::Tracing { purpose, .. }
				| CheckState::Replaying { purpose },
			) => purpose,
			_ => Purpose::default(),
		};
		for challenge in purpose.challenges {
			port.vote(challenge, verdict);
		}
		if purpose.accuse && verdict == Verdict::Invalid {
			port.accuse(key.0, key.1);
		}
		self.states.insert(key, CheckState::Done(verdict));
	}

	/// How what the accused proved on chain differs from what its signed commitment to this
	/// trainer said, if this trainer heard one: another update, start state or step count
	/// than it told its peers makes the replay say nothing about what they aggregated.
	fn proven_differs(&self, request: &CheckRequest) -> Option<&'static str> {
		let evidence = self.evidence(request.round)?;
		let kept = evidence.updates.get(&request.accused)?;
		if request.start_state != kept.start.id() {
			Some("another start state")
		} else if request.steps != kept.steps {
			Some("other inner steps")
		} else if request.update != update_hash(&kept.update.encode()) {
			Some("another update")
		} else {
			None
		}
	}

	/// What the accused's claim as `round`'s sender, heard by this trainer, replays.
	pub(super) fn own_target(&self, round: RoundIndex, peer: &PeerId) -> Option<Target> {
		Some(Target::of(self.evidence(round)?.updates.get(peer)?))
	}

	/// What a challenge replays: the claim the accused proved on chain, with the update it
	/// names, which this trainer holds when any sender of the round sent it (its own, or
	/// for a copy, the original's), checked by the trajectory the accused committed to
	/// where this trainer heard its commitment. `None` when it holds no such update.
	fn proven_target(&self, request: &CheckRequest) -> Option<Target> {
		let evidence = self.evidence(request.round)?;
		let own = evidence.updates.get(&request.accused);
		let update = own
			.into_iter()
			.chain(evidence.updates.values())
			.map(|kept| &kept.update)
			.find(|update| update_hash(&update.encode()) == request.update)?;
		let trajectory = own.and_then(|kept| kept.trajectory);
		let (steps, start, update) = (request.steps, request.start_state, update.clone());
		Some(Target { steps, start, update, trajectory, draw: Some(request.draw) })
	}
}
