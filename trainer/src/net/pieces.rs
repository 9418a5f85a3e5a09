//! Serving updates in pieces ([`crate::round::update_pieces`]): a piece is answered from a
//! whole update held here or from a piece kept here; a request for a piece of an update the
//! round committed to that is not here yet is held (the asker is usually told to come here
//! because this trainer keeps that piece, and is fetching it) and answered when it comes,
//! or refused after [`HOLD`]. Generic over the answer channel, so it is tested without a
//! swarm.

use std::{
	collections::HashMap,
	time::{Duration, Instant},
};

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use crate::round::{
	messages::{Digest, Response},
	update_pieces::{piece_count, piece_range, PieceHashes, MAX_UPDATE_PIECES},
};

/// Longest a piece request waits here for its piece.
pub(super) const HOLD: Duration = Duration::from_secs(10);
/// Most requests held at once (beyond, a request for a piece not here is refused at once).
pub(super) const MAX_HELD: usize = 4096;
/// Most requests one peer may have held at once: what one connection's fetch streams carry
/// (`behaviour::FETCH_STREAMS`), twice what an honest member asks of a keeper at once. Without
/// it one peer could take every slot, and honest fetchers' requests were refused at once.
pub(super) const MAX_HELD_PER_PEER: usize = 4 * MAX_UPDATE_PIECES as usize;

/// A request waiting for its piece.
struct Held<C> {
	peer: PeerId,
	hash: Digest,
	index: u32,
	round: RoundIndex,
	with_hashes: bool,
	channel: C,
	until: Instant,
}

/// What this trainer serves of updates in pieces, and the requests that wait.
pub(super) struct ServedPieces<C> {
	/// Each update's pieces' hashes (an update here whole, or a piece of it).
	hashes: HashMap<Digest, (RoundIndex, PieceHashes)>,
	/// Pieces of updates not here whole.
	kept: HashMap<(Digest, u32), (RoundIndex, Vec<u8>)>,
	held: Vec<Held<C>>,
}

/// An answer to send on a held request's channel.
pub(super) type Reply<C> = (C, Response);

impl<C> ServedPieces<C> {
	pub(super) fn new() -> Self {
		ServedPieces { hashes: HashMap::new(), kept: HashMap::new(), held: Vec::new() }
	}

	/// The update `bytes` of `round`, with its pieces' `hashes`, is here whole: its pieces
	/// are served from it (the pieces kept of it go), and the requests waiting for any of
	/// them are answered.
	pub(super) fn whole(
		&mut self,
		hash: Digest,
		round: RoundIndex,
		bytes: &[u8],
		hashes: PieceHashes,
	) -> Vec<Reply<C>> {
		if piece_count(bytes.len() as u64) < 2 {
			return Vec::new();
		}
		self.hashes.insert(hash, (round, hashes.clone()));
		self.kept.retain(|(h, _), _| *h != hash);
		self.release(
			|held| held.hash == hash,
			|held| match slice(bytes, held.index) {
				Some(piece) => {
					Response::UpdatePiece { hashes: listed(&hashes, held.with_hashes), piece }
				}
				None => Response::Unavailable(format!("no piece {} of that update", held.index)),
			},
		)
	}

	/// Piece `index` of the update `hash` is here (checked against `hashes` by whoever
	/// fetched it): served from now on, and the requests waiting for it are answered.
	pub(super) fn piece(
		&mut self,
		hash: Digest,
		round: RoundIndex,
		index: u32,
		hashes: PieceHashes,
		piece: Vec<u8>,
	) -> Vec<Reply<C>> {
		let hashes = self.hashes.entry(hash).or_insert((round, hashes)).1.clone();
		let replies = self.release(
			|held| held.hash == hash && held.index == index,
			|held| Response::UpdatePiece {
				hashes: listed(&hashes, held.with_hashes),
				piece: piece.clone(),
			},
		);
		self.kept.insert((hash, index), (round, piece));
		replies
	}

	/// The answer to a request for piece `index` of `hash`, from `whole` (the update, where
	/// it is here whole) or a kept piece; `None` where the piece is not here.
	pub(super) fn answer(
		&self,
		hash: &Digest,
		index: u32,
		with_hashes: bool,
		whole: Option<&[u8]>,
	) -> Option<Response> {
		let (_, hashes) = self.hashes.get(hash)?;
		let piece = match whole {
			Some(bytes) => slice(bytes, index)?,
			None => self.kept.get(&(*hash, index))?.1.clone(),
		};
		Some(Response::UpdatePiece { hashes: listed(hashes, with_hashes), piece })
	}

	/// Whether piece `index` of `hash` is kept here (not counting whole updates).
	pub(super) fn keeps(&self, hash: &Digest, index: u32) -> bool {
		self.kept.contains_key(&(*hash, index))
	}

	/// Holds `peer`'s request for a piece not here until it comes; gives the channel back
	/// when [`MAX_HELD`] wait already, or [`MAX_HELD_PER_PEER`] of `peer`'s.
	pub(super) fn hold(
		&mut self,
		peer: PeerId,
		(hash, index, round, with_hashes): (Digest, u32, RoundIndex, bool),
		channel: C,
		now: Instant,
	) -> Result<(), C> {
		let peers = self.held.iter().filter(|held| held.peer == peer).count();
		if self.held.len() >= MAX_HELD || peers >= MAX_HELD_PER_PEER {
			return Err(channel);
		}
		let until = now + HOLD;
		self.held.push(Held { peer, hash, index, round, with_hashes, channel, until });
		Ok(())
	}

	/// The refusals of the requests waiting for piece `index` of `hash`, which will not
	/// come here.
	pub(super) fn refuse(&mut self, hash: Digest, index: u32) -> Vec<Reply<C>> {
		let why = "this member could not get that piece";
		self.release(
			|held| held.hash == hash && held.index == index,
			|_| Response::Unavailable(why.into()),
		)
	}

	/// The refusals of requests that waited [`HOLD`] in vain.
	pub(super) fn expire(&mut self, now: Instant) -> Vec<Reply<C>> {
		let why = "the piece did not come here in time";
		self.release(|held| held.until <= now, |_| Response::Unavailable(why.into()))
	}

	/// Forgets the pieces of rounds before `before` and refuses the requests for them.
	pub(super) fn forget(&mut self, before: RoundIndex) -> Vec<Reply<C>> {
		self.hashes.retain(|_, (r, _)| *r >= before);
		self.kept.retain(|_, (r, _)| *r >= before);
		let why = "that round's updates are no longer served";
		self.release(|held| held.round < before, |_| Response::Unavailable(why.into()))
	}

	/// How many requests wait.
	#[cfg(test)]
	pub(super) fn waiting(&self) -> usize {
		self.held.len()
	}

	/// The `done` requests, each with its `reply`; the others wait on.
	fn release(
		&mut self,
		done: impl Fn(&Held<C>) -> bool,
		reply: impl Fn(&Held<C>) -> Response,
	) -> Vec<Reply<C>> {
		let (out, keep): (Vec<_>, Vec<_>) =
			std::mem::take(&mut self.held).into_iter().partition(&done);
		self.held = keep;
		out.into_iter()
			.map(|held| {
				let response = reply(&held);
				(held.channel, response)
			})
			.collect()
	}
}

/// The hashes, where they were asked for.
fn listed(hashes: &[Digest], with_hashes: bool) -> Vec<Digest> {
	if with_hashes {
		hashes.to_vec()
	} else {
		Vec::new()
	}
}

/// Piece `index` of the whole update `bytes` (`None` past its last piece).
fn slice(bytes: &[u8], index: u32) -> Option<Vec<u8>> {
	let range = piece_range(bytes.len() as u64, index)?;
	Some(bytes[range.start as usize..range.end as usize].to_vec())
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::round::{messages::update_hash, update_pieces::piece_hashes};

	fn update() -> Vec<u8> {
		(0..(5 << 16) + 3).map(|i| (i % 253) as u8).collect()
	}

	fn piece_of(bytes: &[u8], index: u32) -> Vec<u8> {
		slice(bytes, index).unwrap()
	}

	fn hashes(bytes: &[u8]) -> PieceHashes {
		std::sync::Arc::new(piece_hashes(bytes))
	}

	#[test]
	fn a_held_request_is_answered_when_its_piece_comes_and_others_wait_on() {
		let bytes = update();
		let hash = update_hash(&bytes);
		let mut served = ServedPieces::new();
		let now = Instant::now();
		assert!(served.answer(&hash, 1, true, None).is_none());
		served.hold(PeerId::random(), (hash, 1, 4, true), "a", now).unwrap();
		served.hold(PeerId::random(), (hash, 2, 4, false), "b", now).unwrap();
		let replies = served.piece(hash, 4, 1, hashes(&bytes), piece_of(&bytes, 1));
		assert_eq!(replies.len(), 1);
		let (channel, response) = &replies[0];
		assert_eq!(*channel, "a");
		assert_eq!(
			*response,
			Response::UpdatePiece { hashes: piece_hashes(&bytes), piece: piece_of(&bytes, 1) }
		);
		assert_eq!(served.waiting(), 1);
		// The kept piece answers later requests at once, without the hashes unless asked.
		assert_eq!(
			served.answer(&hash, 1, false, None),
			Some(Response::UpdatePiece { hashes: Vec::new(), piece: piece_of(&bytes, 1) })
		);
		// The whole update answers the rest.
		let replies = served.whole(hash, 4, &bytes, hashes(&bytes));
		assert_eq!(replies.len(), 1);
		assert_eq!(
			replies[0].1,
			Response::UpdatePiece { hashes: Vec::new(), piece: piece_of(&bytes, 2) }
		);
		assert_eq!(
			served.answer(&hash, 4, true, Some(&bytes)),
			Some(Response::UpdatePiece {
				hashes: piece_hashes(&bytes),
				piece: piece_of(&bytes, 4)
			})
		);
		assert!(served.answer(&hash, 6, true, Some(&bytes)).is_none(), "past the last piece");
	}

	#[test]
	fn a_request_that_waits_too_long_or_past_its_round_is_refused_and_the_wait_is_bounded() {
		let mut served = ServedPieces::new();
		let now = Instant::now();
		let peer = PeerId::random();
		served.hold(peer, ([1; 32], 0, 2, true), 1, now).unwrap();
		served.hold(peer, ([1; 32], 0, 5, true), 2, now + HOLD / 2).unwrap();
		served.hold(peer, ([3; 32], 1, 5, true), 3, now).unwrap();
		let refused = served.refuse([3; 32], 1);
		assert_eq!(refused.len(), 1);
		assert!(matches!(refused[0].1, Response::Unavailable(_)));
		let expired = served.expire(now + HOLD);
		assert_eq!(expired.len(), 1);
		assert_eq!(expired[0].0, 1);
		assert!(matches!(expired[0].1, Response::Unavailable(_)));
		let forgotten = served.forget(6);
		assert_eq!(forgotten.iter().map(|(c, _)| *c).collect::<Vec<_>>(), vec![2]);
		let peers: Vec<PeerId> =
			(0..MAX_HELD / MAX_HELD_PER_PEER).map(|_| PeerId::random()).collect();
		for i in 0..MAX_HELD {
			served.hold(peers[i / MAX_HELD_PER_PEER], ([2; 32], 0, 9, true), i, now).unwrap();
		}
		let stranger = PeerId::random();
		assert_eq!(served.hold(stranger, ([2; 32], 0, 9, true), MAX_HELD, now), Err(MAX_HELD));
	}

	/// A hostile peer asks for pieces that are not here, as many as its connections carry:
	/// it gets its share of the hold slots and no more, and an honest fetcher still waits.
	#[test]
	fn one_peer_cannot_take_every_hold_slot() {
		let mut served = ServedPieces::new();
		let (now, hostile, honest) = (Instant::now(), PeerId::random(), PeerId::random());
		let mut refused = 0;
		for i in 0..MAX_HELD {
			let key = ([7; 32], (i % 64) as u32, 3, false);
			refused += usize::from(served.hold(hostile, key, i, now).is_err());
		}
		assert_eq!(served.waiting(), MAX_HELD_PER_PEER);
		assert_eq!(refused, MAX_HELD - MAX_HELD_PER_PEER);
		assert_eq!(served.hold(honest, ([8; 32], 0, 3, false), MAX_HELD, now), Ok(()));
		// Its slots come back as its requests are answered.
		let replies = served.refuse([7; 32], 0);
		assert_eq!(replies.len(), MAX_HELD_PER_PEER / 64);
		assert_eq!(served.hold(hostile, ([7; 32], 0, 3, false), 0, now), Ok(()));
	}
}
