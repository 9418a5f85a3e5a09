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
		state_transfer::{StateDownload, PIECES_IN_FLIGHT},
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
			if let Some((peer, answer)) = self.fetches.take_state_answer() {
				if let Some(round) = self.adopt_from(peer, answer, until) {
					return Some(round);
				}
			}
			self.pump_until((Instant::now() + Duration::from_millis(300)).min(until), |_| false);
		}
		None
	}

	/// Downloads and adopts the state whose header `peer` answered with; the round it is the
	/// base of, or `None` (and why, logged) when it was refused or did not come.
	fn adopt_from(
		&mut self,
		peer: PeerId,
		answer: Result<Response, String>,
		until: Instant,
	) -> Option<RoundIndex> {
		let header = answer.map_err(|why| tracing::debug!("no state from {peer}: {why}")).ok()?;
		let download = StateDownload::from_header(peer, header)
			.map_err(|e| tracing::debug!("no state from {peer}: {e}"))
			.ok()?;
		let (round, state_hash) = (download.round, download.state_hash);
		let (checkpoint, commitments) = self.download_state(download, until)?;
		match GlobalState::adopt(peer, round, state_hash, &checkpoint, &self.manifest, self.outer) {
			Ok(state) => {
				tracing::info!(
					"adopted state of round {round} from {peer}: {}",
					hex::encode(state.state_hash)
				);
				self.state = Some(state);
				self.open_book(round);
				self.learn(peer, commitments);
				Some(round)
			}
			Err(e) => {
				tracing::warn!("state from {peer} rejected: {e}");
				None
			}
		}
	}

	/// Fetches the pieces of the state `download` describes from its peer, a few at a time,
	/// until every piece came (its bytes and the commitments its header brought), a piece
	/// was refused, or nothing arrived for [`STATE_TIMEOUT`] (or `until` passed).
	fn download_state(
		&mut self,
		mut download: StateDownload,
		until: Instant,
	) -> Option<(Vec<u8>, Vec<SignedCommitment>)> {
		let (peer, hash) = (download.peer, download.state_hash);
		let mut asked = Vec::new();
		let mut stalled = Instant::now() + STATE_TIMEOUT;
		while !download.is_complete() {
			for index in download.next_pieces(PIECES_IN_FLIGHT) {
				let request = self.fetches.request_state_piece(peer, hash, index);
				asked.push(request.id);
				self.send_request(request);
			}
			let now = Instant::now();
			if now >= stalled.min(until) {
				let (got, all) = download.progress();
				tracing::warn!("state from {peer}: {got} of {all} pieces came in time");
				break;
			}
			self.pump_until(stalled.min(until), |s| s.fetches.has_piece_answer());
			for (index, answer) in self.fetches.take_piece_answers() {
				let taken = answer
					.and_then(|bytes| download.arrived(index, bytes).map_err(|e| e.to_string()));
				match taken {
					Ok(()) => stalled = Instant::now() + STATE_TIMEOUT,
					Err(why) => {
						tracing::warn!("state piece {index} from {peer}: {why}");
						for id in asked.drain(..) {
							self.fetches.forget(id);
						}
						return None;
					}
				}
			}
		}
		for id in asked {
			self.fetches.forget(id);
		}
		let commitments = std::mem::take(&mut download.commitments);
		Some((download.into_bytes()?, commitments))
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
