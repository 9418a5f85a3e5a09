//! A global state sent in pieces: the server answers a state request with a header (round,
//! state hash, size, piece length and each piece's BLAKE3 hash) and each piece on its own
//! request, so no response holds a whole model (one response was capped at 1 GiB: joiners
//! failed above about 134M parameters) and a bad piece is refused as it arrives, not after
//! the whole state was read. The assembled checkpoint is still checked against the state hash
//! when it is adopted ([`super::state::GlobalState::adopt`]).
//!
//! Pure bookkeeping: [`ServedState`] for the side that serves, [`StateDownload`] for the side
//! that fetches; the daemon moves the bytes.

use std::collections::{BTreeMap, BTreeSet};

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::{
	book::MAX_SIGNERS,
	checkpoint_view::CheckpointView,
	messages::{Digest, Response, SignedCommitment},
};
use crate::error::Result;

/// Bytes per piece of a served state (the last piece may be shorter).
pub const STATE_PIECE_BYTES: u32 = 4 << 20;
/// Largest piece a fetcher accepts: a piece is one response.
pub const MAX_STATE_PIECE_BYTES: u32 = 64 << 20;
/// Most pieces a state may have (256 GiB in pieces of 4 MiB, 4 TiB in the largest), so a
/// header cannot make a fetcher set aside room for millions.
pub const MAX_STATE_PIECES: usize = 1 << 16;
/// Pieces a fetcher asks for at once.
pub const PIECES_IN_FLIGHT: usize = 8;
/// Room for a checkpoint's safetensors header beyond its values (names, shapes and offsets
/// of every tensor twice, and the metadata): a few hundred bytes a tensor.
const CHECKPOINT_HEADER_ROOM: u64 = 16 << 20;

/// The longest checkpoint of a model of `params` parameters: its weights and outer momentum
/// in f32, and its header. What a state header may announce: a peer that announces more
/// would have its fetcher hold pieces until the claim ran out.
pub fn max_state_len(params: u64) -> u64 {
	params.saturating_mul(8).saturating_add(CHECKPOINT_HEADER_ROOM)
}

/// Why a state header or piece was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateTransferError {
	/// The header's size, piece length and piece count do not fit together.
	#[error("state header of {peer}: {why}")]
	BadHeader {
		/// Who sent it.
		peer: PeerId,
		/// What does not fit.
		why: String,
	},
	/// A piece has the wrong length or hash.
	#[error("piece {index} of the state from {peer}: {why}")]
	BadPiece {
		/// Who sent it.
		peer: PeerId,
		/// Which piece.
		index: u32,
		/// What is wrong.
		why: String,
	},
	/// The answer was not a state header.
	#[error("{peer} answered a state request with {what}")]
	NotAHeader {
		/// Who answered.
		peer: PeerId,
		/// What it sent instead.
		what: String,
	},
}

/// The byte range of piece `index` of `total` bytes sent in pieces of `piece_bytes` (the
/// last may be shorter); `None` past the end.
pub fn piece_range(total: u64, piece_bytes: u32, index: u32) -> Option<std::ops::Range<u64>> {
	let start = u64::from(index) * u64::from(piece_bytes);
	(start < total).then(|| start..(start + u64::from(piece_bytes)).min(total))
}

/// The hash of a piece.
pub fn piece_hash(bytes: &[u8]) -> Digest {
	blake3::hash(bytes).into()
}

/// A state as served: what a joiner is told about its checkpoint bytes (their size and their
/// pieces' hashes). The bytes themselves are the server's to keep (read from the state
/// itself until its checkpoint is written, then from that file: `net::StoredBytes`).
#[derive(Debug)]
pub struct ServedState {
	/// The round it is the base of.
	pub round: RoundIndex,
	/// Its state hash.
	pub state_hash: Digest,
	len: u64,
	piece_bytes: u32,
	pieces: Vec<Digest>,
}

impl ServedState {
	/// Describes `bytes` (a checkpoint) served in pieces of `piece_bytes` (at least one byte).
	pub fn new(round: RoundIndex, state_hash: Digest, bytes: &[u8], piece_bytes: u32) -> Self {
		let piece_bytes = piece_bytes.max(1);
		let pieces = bytes.chunks(piece_bytes as usize).map(piece_hash).collect();
		ServedState { round, state_hash, len: bytes.len() as u64, piece_bytes, pieces }
	}

	/// Describes the checkpoint `view` reads (as [`ServedState::new`] its bytes), reading a
	/// piece at a time.
	pub fn of_view(
		round: RoundIndex,
		state_hash: Digest,
		view: &CheckpointView,
		piece_bytes: u32,
	) -> Result<Self> {
		let piece_bytes = piece_bytes.max(1);
		let len = view.len();
		let pieces = (0..)
			.map_while(|i| piece_range(len, piece_bytes, i))
			.map(|range| view.read(range).map(|piece| piece_hash(&piece)))
			.collect::<Result<_>>()?;
		Ok(ServedState { round, state_hash, len, piece_bytes, pieces })
	}

	/// The answer to a state request: the header, with the round's `commitments`.
	pub fn header(&self, commitments: Vec<SignedCommitment>) -> Response {
		Response::State {
			round: self.round,
			state_hash: self.state_hash,
			len: self.len,
			piece_bytes: self.piece_bytes,
			pieces: self.pieces.clone(),
			commitments,
		}
	}

	/// The checkpoint's size in bytes.
	pub fn size(&self) -> u64 {
		self.len
	}

	/// The byte range of piece `index`, if there is one.
	pub fn piece(&self, index: u32) -> Option<std::ops::Range<u64>> {
		piece_range(self.len, self.piece_bytes, index)
	}
}

/// A state being fetched from one peer, piece by piece. Pieces are appended to the state's
/// bytes as soon as every piece before them is there; a piece that arrives early waits (at
/// most a window of [`StateDownload::next_pieces`]'s `2 * in_flight` pieces ahead), so the
/// fetcher holds the state about once, not once in pieces and once assembled, and allocates
/// only as bytes arrive (a header's size alone reserves nothing).
#[derive(Debug)]
pub struct StateDownload {
	/// Who serves it.
	pub peer: PeerId,
	/// The round it is the base of.
	pub round: RoundIndex,
	/// Its state hash (what each piece request names).
	pub state_hash: Digest,
	/// The round's commitments that came with the header.
	pub commitments: Vec<SignedCommitment>,
	len: u64,
	piece_bytes: u32,
	pieces: Vec<Digest>,
	/// Pieces `0..next` in order.
	assembled: Vec<u8>,
	next: u32,
	/// Checked pieces past `next`.
	early: BTreeMap<u32, Vec<u8>>,
	asked: BTreeSet<u32>,
}

impl StateDownload {
	/// A download of the state `header` describes, after checking that its size, piece
	/// length and piece count fit together, that it is at most `max_len` bytes
	/// ([`max_state_len`]) and that it brings at most a round's commitments.
	pub fn from_header(
		peer: PeerId,
		header: Response,
		max_len: u64,
	) -> Result<Self, StateTransferError> {
		let Response::State { round, state_hash, len, piece_bytes, pieces, commitments } = header
		else {
			let what = format!("{header:?}").chars().take(60).collect();
			return Err(StateTransferError::NotAHeader { peer, what });
		};
		let bad = |why: String| StateTransferError::BadHeader { peer, why };
		if piece_bytes == 0 || piece_bytes > MAX_STATE_PIECE_BYTES {
			return Err(bad(format!(
				"pieces of {piece_bytes} bytes (1 to {MAX_STATE_PIECE_BYTES} allowed)"
			)));
		}
		if pieces.len() > MAX_STATE_PIECES {
			return Err(bad(format!("{} pieces (at most {MAX_STATE_PIECES})", pieces.len())));
		}
		let expected = len.div_ceil(u64::from(piece_bytes));
		if pieces.len() as u64 != expected || len == 0 {
			return Err(bad(format!(
				"{} piece hashes for {len} bytes in pieces of {piece_bytes} (expected {expected}, \
				 and at least one byte)",
				pieces.len()
			)));
		}
		if len > max_len {
			return Err(bad(format!(
				"{len} bytes, where this model's state has at most {max_len}"
			)));
		}
		if commitments.len() > MAX_SIGNERS {
			return Err(bad(format!(
				"{} commitments, where a round has at most {MAX_SIGNERS}",
				commitments.len()
			)));
		}
		Ok(StateDownload {
			peer,
			round,
			state_hash,
			commitments,
			len,
			piece_bytes,
			pieces,
			assembled: Vec::new(),
			next: 0,
			early: BTreeMap::new(),
			asked: BTreeSet::new(),
		})
	}

	/// The pieces to ask for now: missing ones not asked yet, so that at most `in_flight` are
	/// asked at once and none lies `2 * in_flight` or more past the first missing one (a
	/// piece refused by [`StateDownload::arrived`] may be asked again).
	pub fn next_pieces(&mut self, in_flight: usize) -> Vec<u32> {
		let room = in_flight.saturating_sub(self.asked.len());
		let window = self.next.saturating_add(2 * in_flight as u32).min(self.pieces.len() as u32);
		let next: Vec<u32> = (self.next..window)
			.filter(|i| !self.early.contains_key(i) && !self.asked.contains(i))
			.take(room)
			.collect();
		self.asked.extend(&next);
		next
	}

	/// Takes piece `index`, checking its length and hash.
	pub fn arrived(&mut self, index: u32, bytes: Vec<u8>) -> Result<(), StateTransferError> {
		self.asked.remove(&index);
		let bad = |why: String| StateTransferError::BadPiece { peer: self.peer, index, why };
		let Some(expected_hash) = self.pieces.get(index as usize) else {
			return Err(bad(format!("the state has {} pieces", self.pieces.len())));
		};
		let expected_len =
			piece_range(self.len, self.piece_bytes, index).map_or(0, |r| r.end - r.start);
		if bytes.len() as u64 != expected_len {
			return Err(bad(format!("{} bytes, expected {expected_len}", bytes.len())));
		}
		if piece_hash(&bytes) != *expected_hash {
			return Err(bad("its hash differs from the header's".into()));
		}
		if index >= self.next {
			self.early.insert(index, bytes);
		}
		while let Some(piece) = self.early.remove(&self.next) {
			// Grown as pieces come, never reserved from the header's size: a hostile header
			// whose first piece checks out must not make the fetcher allocate its claim.
			if self.assembled.is_empty() {
				self.assembled = piece;
			} else {
				self.assembled.extend_from_slice(&piece);
			}
			self.next += 1;
		}
		Ok(())
	}

	/// Pieces received so far, and in all.
	pub fn progress(&self) -> (usize, usize) {
		(self.next as usize + self.early.len(), self.pieces.len())
	}

	/// Whether every piece arrived.
	pub fn is_complete(&self) -> bool {
		self.next as usize == self.pieces.len()
	}

	/// The state's bytes, once complete.
	pub fn into_bytes(self) -> Option<Vec<u8>> {
		self.is_complete().then_some(self.assembled)
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use libp2p::identity::Keypair;

	fn served(len: usize, piece_bytes: u32) -> (ServedState, Vec<u8>) {
		let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
		(ServedState::new(3, [5; 32], &bytes, piece_bytes), bytes)
	}

	/// Piece `index` of `bytes` as `served` describes it.
	fn cut(served: &ServedState, bytes: &[u8], index: u32) -> Vec<u8> {
		let range = served.piece(index).unwrap();
		bytes[range.start as usize..range.end as usize].to_vec()
	}

	#[test]
	fn a_state_served_from_a_checkpoint_view_is_described_as_its_bytes_are() {
		use crate::params::{Manifest, ParamInfo};
		use std::sync::Arc;
		let shape = |name: &str, shape| ParamInfo { name: name.into(), shape };
		let manifest = Manifest::new(vec![shape("w", vec![40, 3]), shape("b", vec![7])]).unwrap();
		let weights = Arc::new((0..127).map(|i| i as f32 / 9.0).collect::<Vec<_>>());
		let velocity = Arc::new((0..127).map(|i| -(i as f32) / 7.0).collect::<Vec<_>>());
		let view = CheckpointView::new(4, &manifest, weights, velocity).unwrap();
		let mut bytes = Vec::new();
		view.write_to(&mut bytes).unwrap();
		for piece_bytes in [1, 64, 100, 4096] {
			let of_view = ServedState::of_view(4, [2; 32], &view, piece_bytes).unwrap();
			let of_bytes = ServedState::new(4, [2; 32], &bytes, piece_bytes);
			assert_eq!(of_view.header(vec![]), of_bytes.header(vec![]), "pieces of {piece_bytes}");
		}
		// Within what a fetcher of this model accepts, at the longest round number too; the
		// header of its two tensors takes under a thousandth of the room left for headers.
		assert!(bytes.len() as u64 <= max_state_len(127));
		let last =
			CheckpointView::new(u32::MAX, &manifest, view_weights(), view_weights()).unwrap();
		let mut longest = Vec::new();
		last.write_to(&mut longest).unwrap();
		assert!(longest.len() as u64 <= max_state_len(127));
		assert!(longest.len() as u64 - 127 * 8 < CHECKPOINT_HEADER_ROOM / 1_000);
	}

	fn view_weights() -> std::sync::Arc<Vec<f32>> {
		std::sync::Arc::new(vec![0.5; 127])
	}

	#[test]
	fn a_state_arrives_piece_by_piece_in_any_order_and_reassembles() {
		let (served, bytes) = served(1000, 64);
		let peer = PeerId::random();
		let mut download =
			StateDownload::from_header(peer, served.header(vec![]), u64::MAX).unwrap();
		assert_eq!((download.round, download.state_hash), (3, [5; 32]));
		assert_eq!(download.progress(), (0, 16));
		let mut asked = Vec::new();
		loop {
			let next = download.next_pieces(PIECES_IN_FLIGHT);
			assert!(next.len() <= PIECES_IN_FLIGHT);
			if next.is_empty() {
				break;
			}
			// Answered last first.
			for index in next.into_iter().rev() {
				asked.push(index);
				let piece = cut(&served, &bytes, index);
				download.arrived(index, piece).unwrap();
			}
		}
		asked.sort();
		assert_eq!(asked, (0..16).collect::<Vec<_>>(), "every piece asked once");
		assert!(download.is_complete());
		assert_eq!(download.into_bytes().unwrap(), bytes);
		assert!(served.piece(16).is_none());
	}

	#[test]
	fn a_bad_or_short_piece_is_refused_and_asked_again() {
		let (served, bytes) = served(300, 128);
		let peer = PeerId::random();
		let mut download =
			StateDownload::from_header(peer, served.header(vec![]), u64::MAX).unwrap();
		assert_eq!(download.next_pieces(8), vec![0, 1, 2]);
		let mut flipped = cut(&served, &bytes, 0);
		flipped[5] ^= 1;
		let err = download.arrived(0, flipped).unwrap_err();
		assert!(err.to_string().contains("hash differs"), "{err}");
		let short = cut(&served, &bytes, 2)[..10].to_vec();
		let err = download.arrived(2, short).unwrap_err();
		assert!(err.to_string().contains("10 bytes, expected 44"), "{err}");
		let err = download.arrived(9, vec![1]).unwrap_err();
		assert!(err.to_string().contains("has 3 pieces"), "{err}");
		download.arrived(1, cut(&served, &bytes, 1)).unwrap();
		assert!(!download.is_complete());
		assert_eq!(download.next_pieces(8), vec![0, 2], "refused pieces are asked again");
		download.arrived(0, cut(&served, &bytes, 0)).unwrap();
		download.arrived(2, cut(&served, &bytes, 2)).unwrap();
		assert_eq!(download.into_bytes().unwrap(), bytes);
	}

	#[test]
	fn headers_whose_sizes_do_not_fit_are_refused() {
		let peer = PeerId::random();
		let header = |len: u64, piece_bytes: u32, pieces: usize| Response::State {
			round: 1,
			state_hash: [0; 32],
			len,
			piece_bytes,
			pieces: vec![[0; 32]; pieces],
			commitments: vec![],
		};
		for (h, why) in [
			(header(100, 0, 1), "pieces of 0 bytes"),
			(header(100, MAX_STATE_PIECE_BYTES + 1, 1), "1 to"),
			(header(100, 10, 9), "9 piece hashes for 100 bytes"),
			(header(100, 10, 11), "expected 10"),
			(header(0, 10, 0), "at least one byte"),
			(header(u64::MAX, 1, 1), "expected"),
			(header(1 << 40, 1, MAX_STATE_PIECES + 1), "at most"),
			// Longer than the model's state can be: a fetcher would take pieces until the
			// claim (up to 4 TiB) ran out.
			(header(101, 10, 11), "101 bytes, where this model's state has at most 100"),
		] {
			let err = StateDownload::from_header(peer, h, 100).unwrap_err();
			assert!(err.to_string().contains(why), "{err} lacks {why}");
		}
		// More commitments than a round has signers: each would be decoded and verified.
		let Response::State { round, state_hash, len, piece_bytes, pieces, .. } =
			header(100, 10, 10)
		else {
			unreachable!()
		};
		let one =
			crate::round::messages::tests::commitment(3, 1).sign(&Keypair::generate_ed25519());
		let commitments = vec![one.unwrap(); MAX_SIGNERS + 1];
		let crowded = Response::State { round, state_hash, len, piece_bytes, pieces, commitments };
		let err = StateDownload::from_header(peer, crowded, 100).unwrap_err().to_string();
		assert!(err.contains("commitments, where a round has at most"), "{err}");
		let err =
			StateDownload::from_header(peer, Response::Unavailable("no".into()), 100).unwrap_err();
		assert!(matches!(err, StateTransferError::NotAHeader { .. }), "{err}");
		assert!(StateDownload::from_header(peer, header(100, 10, 10), 100).is_ok());
	}

	#[test]
	fn pieces_past_a_missing_one_are_asked_only_within_a_window() {
		let (served, bytes) = served(100, 1);
		let mut download =
			StateDownload::from_header(PeerId::random(), served.header(vec![]), u64::MAX).unwrap();
		assert_eq!(download.next_pieces(2), vec![0, 1]);
		// Piece 0 is slow; the others come and wait, but no more than the window ahead.
		let mut asked = vec![1];
		while let Some(index) = asked.pop() {
			download.arrived(index, cut(&served, &bytes, index)).unwrap();
			asked.extend(download.next_pieces(2));
		}
		assert_eq!(download.progress(), (3, 100), "pieces 1, 2 and 3 wait for piece 0");
		assert!(download.next_pieces(2).is_empty());
		download.arrived(0, cut(&served, &bytes, 0)).unwrap();
		// A piece that comes twice changes nothing.
		download.arrived(2, cut(&served, &bytes, 2)).unwrap();
		assert_eq!(download.progress(), (4, 100));
		while !download.is_complete() {
			for index in download.next_pieces(2) {
				download.arrived(index, cut(&served, &bytes, index)).unwrap();
			}
		}
		assert_eq!(download.into_bytes().unwrap(), bytes);
	}

	#[test]
	fn an_incomplete_download_gives_no_bytes() {
		let (served, bytes) = served(200, 100);
		let mut download =
			StateDownload::from_header(PeerId::random(), served.header(vec![]), u64::MAX).unwrap();
		download.arrived(1, cut(&served, &bytes, 1)).unwrap();
		assert_eq!(download.progress(), (1, 2));
		assert!(download.into_bytes().is_none());
	}
}
