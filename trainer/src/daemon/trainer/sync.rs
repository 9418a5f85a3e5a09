//! Joining and re-syncing: fetching a peer's state and the round's commitments it heard.

use std::time::{Duration, Instant};

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::{Trainer, STATE_TIMEOUT};
use crate::{
	net::Event,
	round::{
		messages::{Response, SignedCommitment},
		state::GlobalState,
	},
};

impl Trainer {
	/// Fetches a peer's latest state. Returns the round it is the base of once one was
	/// adopted (tentatively: the round's commitments confirm it before it is trusted), `None`
	/// if `until` passed first. The state's round commitments that peer has seen come with
	/// it, so a joiner knows of those announced before it connected.
	pub(super) fn sync(&mut self, until: Instant) -> Option<RoundIndex> {
		tracing::info!("fetching the global state from peers");
		let mut turn = 0usize;
		while Instant::now() < until {
			let peers = self.health.connected();
			if peers.is_empty() {
				self.pump_until((Instant::now() + Duration::from_millis(200)).min(until), |_| {
					false
				});
				continue;
			}
			let peer = peers[turn % peers.len()];
			turn += 1;
			let request = self.fetches.request_state(peer);
			let id = request.id;
			self.send_request(request);
			let deadline = (Instant::now() + STATE_TIMEOUT).min(until);
			self.pump_until(deadline, |s| s.fetches.has_state_answer());
			self.fetches.forget(id);
			match self.fetches.take_state_answer() {
				Some((
					peer,
					Ok(Response::State { round, state_hash, checkpoint, commitments }),
				)) => match GlobalState::adopt(
					peer,
					round,
					state_hash,
					&checkpoint,
					&self.manifest,
					self.outer,
				) {
					Ok(state) => {
						tracing::info!(
							"adopted state of round {round} from {peer}: {}",
							hex::encode(state.state_hash)
						);
						self.state = Some(state);
						self.open_book(round);
						self.learn(peer, commitments);
						return Some(round);
					}
					Err(e) => tracing::warn!("state from {peer} rejected: {e}"),
				},
				Some((peer, other)) => tracing::debug!("no state from {peer}: {other:?}"),
				None => {}
			}
			self.pump_until((Instant::now() + Duration::from_millis(300)).min(until), |_| false);
		}
		None
	}

	/// Offers commitments relayed by `peer` (with a state) after checking each one.
	pub(super) fn learn(&mut self, peer: PeerId, commitments: Vec<SignedCommitment>) {
		let (job, manifest) = (self.config.job.id, self.manifest.hash());
		for signed in commitments {
			match signed.verify() {
				Ok(signer)
					if signed.commitment.job == job
						&& signed.commitment.manifest_hash == manifest =>
				{
					self.on_event(Event::Commitment { signer, signed })
				}
				Ok(_) => tracing::warn!("{peer} relayed a commitment of another job or layout"),
				Err(e) => tracing::warn!("{peer} relayed a bad commitment: {e}"),
			}
		}
	}
}
