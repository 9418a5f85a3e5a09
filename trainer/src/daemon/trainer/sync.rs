//! Joining and re-syncing: fetching a peer's state and the round's commitments it heard.

use std::time::{Duration, Instant};

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::{Trainer, STATE_TIMEOUT};
use crate::round::{
	book::Arrival,
	coordinator::Clock,
	messages::{Digest, Response, SignedCommitment},
	state::GlobalState,
	state_transfer::{max_state_len, StateDownload, PIECES_IN_FLIGHT},
};

/// Which state a re-sync is after: the one most of a round's committers trained from, when
/// this trainer's was another. Without it, a trainer asked its best-scored peer again and
/// again and adopted the same minority state each time (64 trainers, `bench/scale.sh`: a
/// re-sync every 1.5 s for a whole round).
#[derive(Clone, Debug)]
pub(super) struct SyncHint {
	/// The round that state is the base of.
	pub round: RoundIndex,
	pub state_hash: Digest,
	/// Who trained from it (so holds it), asked first.
	pub holders: Vec<PeerId>,
}

impl SyncHint {
	/// Whether a peer's state of `round` with `hash` is worth downloading: the hinted state,
	/// or a later one (its holder has moved on).
	fn accepts(&self, round: RoundIndex, hash: &Digest) -> bool {
		round > self.round || (round == self.round && hash == &self.state_hash)
	}
}

/// Why a peer's state of `round` cannot be this job's latest (`None`: it may be): a round at
/// or past the job's last (adopting it would end the job here), or, where rounds open on a
/// clock, past the one after the round open now (a state is the base of the round after the
/// one its holder decided last; adopting a later one would sit out every round until then).
/// Its bytes are checked against its hash, but the hash is the sender's own.
fn implausible(round: RoundIndex, clock: Clock, rounds: RoundIndex) -> Option<String> {
	if round >= rounds {
		return Some(format!("it claims round {round} of a job of {rounds} rounds"));
	}
	let latest = match clock {
		Clock::Open(open) => open.saturating_add(1),
		Clock::NotStarted => 0,
		Clock::SelfPaced => return None,
	};
	(round > latest).then(|| format!("it claims round {round}, where the latest is {latest}"))
}

/// The peers to ask, in order: the hint's holders that are connected, then the rest.
fn ask_order(connected: Vec<PeerId>, hint: Option<&SyncHint>) -> Vec<PeerId> {
	let holders: Vec<PeerId> = hint
		.map(|h| h.holders.iter().filter(|p| connected.contains(p)).copied().collect())
		.unwrap_or_default();
	let rest = connected.into_iter().filter(|p| !holders.contains(p));
	holders.iter().copied().chain(rest).collect()
}

impl Trainer {
	/// Fetches a peer's latest state (the hinted one when the last round showed which).
	/// Returns the round it is the base of once one was adopted (tentatively: the round's
	/// commitments confirm it before it is trusted), `None` if `until` passed first. The
	/// state's round commitments that peer has seen come with it, so a joiner knows of those
	/// announced before it connected.
	pub(super) fn sync(&mut self, until: Instant) -> Option<RoundIndex> {
		tracing::info!("fetching the global state from peers");
		let hint = self.sync_hint.take();
		let mut turn = 0usize;
		while Instant::now() < until {
			let peers = ask_order(self.connected_members(), hint.as_ref());
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
				if let Some(round) = self.adopt_from(peer, answer, hint.as_ref(), until) {
					return Some(round);
				}
			}
			self.pump_until((Instant::now() + Duration::from_millis(300)).min(until), |_| false);
		}
		// Nothing adopted: the next try is after the same state.
		self.sync_hint = hint;
		None
	}

	/// Downloads and adopts the state whose header `peer` answered with; the round it is the
	/// base of, or `None` (and why, logged) when it was refused, did not come, or is not the
	/// state `hint` asks for.
	fn adopt_from(
		&mut self,
		peer: PeerId,
		answer: Result<Response, String>,
		hint: Option<&SyncHint>,
		until: Instant,
	) -> Option<RoundIndex> {
		let header = answer.map_err(|why| tracing::debug!("no state from {peer}: {why}")).ok()?;
		let max_len = max_state_len(self.manifest.numel() as u64);
		let download = StateDownload::from_header(peer, header, max_len)
			.map_err(|e| tracing::debug!("no state from {peer}: {e}"))
			.ok()?;
		let (round, state_hash) = (download.round, download.state_hash);
		if let Some(why) = implausible(round, self.clock(), self.config.job.rounds) {
			tracing::warn!("state from {peer} refused: {why}");
			return None;
		}
		if hint.is_some_and(|h| !h.accepts(round, &state_hash)) {
			tracing::info!(
				"{peer} holds state {} of round {round}, not the one most trained from; \
				 asking another",
				hex::encode(state_hash)
			);
			return None;
		}
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

	/// Offers commitments relayed by `peer` (with a state, or asked for by round) after checking
	/// each one.
	pub(super) fn learn(&mut self, peer: PeerId, commitments: Vec<SignedCommitment>) {
		let (job, manifest) = (self.config.job.id, self.manifest.hash());
		for signed in commitments {
			match signed.verify() {
				Ok(signer)
					if signed.commitment.job == job
						&& signed.commitment.manifest_hash == manifest =>
				{
					self.on_commitment(signer, signed, Arrival::Relayed, None)
				}
				Ok(_) => tracing::warn!("{peer} relayed a commitment of another job or layout"),
				Err(e) => tracing::warn!("{peer} relayed a bad commitment: {e}"),
			}
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn peer() -> PeerId {
		PeerId::random()
	}

	#[test]
	fn a_hint_puts_its_connected_holders_first() {
		let (a, b, c, d) = (peer(), peer(), peer(), peer());
		let gone = peer();
		let hint = SyncHint { round: 3, state_hash: [7; 32], holders: vec![c, gone, a] };
		assert_eq!(ask_order(vec![a, b, c, d], Some(&hint)), vec![c, a, b, d]);
		assert_eq!(ask_order(vec![a, b, c, d], None), vec![a, b, c, d]);
	}

	#[test]
	fn a_state_past_the_job_or_the_clock_is_refused_whatever_its_hash() {
		// A peer serving a "last" state of its own making would end the job for a joiner,
		// one of a later round would make it sit out the rounds until then.
		assert!(implausible(10, Clock::SelfPaced, 10).unwrap().contains("of a job of 10"));
		assert!(implausible(u32::MAX, Clock::Open(3), 10).is_some());
		assert!(implausible(6, Clock::Open(3), 10).unwrap().contains("the latest is 4"));
		assert!(implausible(1, Clock::NotStarted, 10).is_some());
		// The round open now, the one after it (its holder decided the open round) and
		// earlier ones are taken; self-paced rounds have no clock to bound them.
		for round in [0, 3, 4] {
			assert_eq!(implausible(round, Clock::Open(3), 10), None, "round {round}");
		}
		assert_eq!(implausible(0, Clock::NotStarted, 10), None);
		assert_eq!(implausible(9, Clock::SelfPaced, 10), None);
	}

	#[test]
	fn a_hint_takes_its_state_or_a_later_one_only() {
		let hint = SyncHint { round: 3, state_hash: [7; 32], holders: Vec::new() };
		assert!(hint.accepts(3, &[7; 32]));
		assert!(!hint.accepts(3, &[8; 32]), "another state of the same round: a minority's");
		assert!(hint.accepts(4, &[8; 32]), "its holder moved on");
		assert!(!hint.accepts(2, &[7; 32]), "an older round");
	}
}
