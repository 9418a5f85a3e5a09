//! Fetch bookkeeping: which requests are in flight and what they were for, the candidates
//! an update may come from, retries from the next candidate when one fails, and the checks
//! of fetched bytes against their commitment. It sends nothing: it returns the requests to
//! send ([`Outgoing`]) and what each answer meant ([`Answer`]); the daemon does the sending.

use std::{
	collections::{BTreeMap, BTreeSet, HashMap},
	sync::Arc,
	time::Instant,
};

use grid_primitives::job::{JobId, RoundIndex};
use libp2p::PeerId;

use super::{
	book::MAX_SIGNERS,
	messages::{Digest, Request, Response, SignedCommitment},
	state_transfer::{piece_range, PIECES_IN_FLIGHT, STATE_PIECE_BYTES},
	update_pieces::{
		address, join_pieces, piece_count, Patience, PieceCounts, PieceDownload, PieceHashes,
	},
	witness::Agreement,
};
use crate::{
	compress::{CompressedUpdate, Layout},
	state_assembly::{Assembly, Parts},
	trajectory::{StepState, Trajectory},
	work_state::{parts_format, WorkState},
};

/// A request to send to a peer, tagged with the id its answer will carry.
#[derive(Clone, Debug, PartialEq)]
pub struct Outgoing {
	/// The tag.
	pub id: u64,
	/// Who to ask.
	pub peer: PeerId,
	/// What to ask.
	pub request: Request,
}

/// What an answer meant.
#[derive(Debug)]
pub enum Answer {
	/// Not an answer to a request in flight (forgotten, or never asked).
	Unasked,
	/// The answer to a state request or a state piece request; taken with
	/// [`Fetches::take_state_answer`] and [`Fetches::take_piece_answers`].
	State,
	/// An update arrived and matches its commitment: serve it on.
	Update {
		/// Its hash.
		hash: Digest,
		/// Its bytes.
		bytes: Arc<Vec<u8>>,
		/// Its pieces' hashes (served with its pieces).
		hashes: PieceHashes,
		/// The bytes this answer brought over the link in the request's time, a measure of
		/// it (`None`: a keeper held the request until it had the piece, no measure).
		link_bytes: Option<usize>,
	},
	/// A checked piece of an update arrived (serve it on, so that those who ask this
	/// trainer for it get it).
	Piece {
		/// The update's hash.
		hash: Digest,
		/// The round.
		round: RoundIndex,
		/// Which piece.
		index: u32,
		/// The piece.
		piece: Vec<u8>,
		/// Every piece's hash (served with the piece).
		hashes: PieceHashes,
		/// As for [`Answer::Update`]: the piece's size where its committer sent it.
		link_bytes: Option<usize>,
	},
	/// A piece of an update did not come from `peer`. `retry`: the piece asked of the
	/// committer, or, where the committer failed it too and the round's set is known, the
	/// whole update (none: the decision asks for the whole update).
	PieceFailed {
		/// The update's hash.
		hash: Digest,
		/// Which piece.
		index: u32,
		/// Why.
		why: String,
		/// The request to the committer, if it was not asked yet.
		retry: Option<Outgoing>,
		/// Whether the committer failed this piece too (this trainer will not get it
		/// in pieces: those waiting on it here should ask elsewhere).
		given_up: bool,
	},
	/// A piece of a work state arrived and more are wanted: send these requests.
	WorkStatePieces(Vec<Outgoing>),
	/// The whole of a work state that was asked for, or why it did not come (checked
	/// against its commitment by the fraud desk, which asked).
	WorkState {
		/// The round whose start state it is.
		round: RoundIndex,
		/// Whose state it is (who was asked).
		peer: PeerId,
		/// What was asked for: a start state's id, a trajectory's root or a step state's
		/// digest.
		id: Digest,
		/// The state, or why there is none.
		result: Result<Fetched, String>,
	},
	/// The commitments of `round` a witness heard, or why they did not come (each is
	/// checked like a gossiped one before it counts).
	Commitments {
		/// The round asked about.
		round: RoundIndex,
		/// The signed commitments, or why there are none.
		result: Result<Vec<SignedCommitment>, String>,
	},
	/// A fetch of an update failed.
	Failed {
		/// The update's hash.
		hash: Digest,
		/// Why.
		why: String,
		/// Its request to the next candidate, if one is left (else nobody has it).
		retry: Option<Outgoing>,
	},
}

/// A request in flight.
enum Pending {
	Update { hash: Digest, tried: Vec<PeerId> },
	Piece { hash: Digest, index: u32 },
	State,
	StatePiece { index: u32 },
	WorkState { round: RoundIndex, id: Digest, index: u32 },
	Commitments { round: RoundIndex },
}

/// A fetched work state, step state or trajectory, as its download put it together.
#[derive(Clone, Debug, PartialEq)]
pub enum Fetched {
	/// A state in the parts format (a work state or a step state), its values in place and
	/// checked; not yet against its commitment.
	State(Parts),
	/// The bytes of anything else (a trajectory), joined from their pieces.
	Bytes(Vec<u8>),
}

impl Fetched {
	/// What a download of `bytes` in pieces makes, for a model of `len` values: tests and
	/// simulations that serve whole objects get what the daemon's desk gets.
	pub fn whole(bytes: Vec<u8>, len: usize) -> Result<Fetched, String> {
		let (mut download, total) = (Download::new(), bytes.len() as u64);
		let limits = (WorkState::max_encoded_len(len), len);
		let mut done = None;
		for (i, piece) in bytes.chunks(STATE_PIECE_BYTES as usize).enumerate() {
			done = download.accept(i as u32, total, piece.to_vec(), limits)?;
		}
		done.ok_or_else(|| "nothing came".to_string())
	}

	/// The work state committed to as `id`, for a model of `len` values.
	pub fn work_state(self, len: usize, id: &Digest) -> crate::error::Result<WorkState> {
		match self {
			Fetched::State(parts) => WorkState::from_parts(parts, len, id),
			Fetched::Bytes(bytes) => WorkState::decode_committed(&bytes, len, id),
		}
	}

	/// The step state committed to as `id`, for a model of `len` values.
	pub fn step_state(self, len: usize, id: &Digest) -> crate::error::Result<StepState> {
		match self {
			Fetched::State(parts) => StepState::from_parts(parts, len, id),
			Fetched::Bytes(bytes) => StepState::decode_committed(&bytes, len, id),
		}
	}

	/// The trajectory of at most `steps` steps committed to as `root`.
	pub fn trajectory(&self, steps: u32, root: &Digest) -> crate::error::Result<Trajectory> {
		match self {
			Fetched::State(parts) => Err(crate::error::Error::Decode(format!(
				"a {} where a trajectory was asked for",
				parts.format.kind
			))),
			Fetched::Bytes(bytes) => Trajectory::decode_committed(bytes, steps, root),
		}
	}
}

/// What of a work state has come.
enum Received {
	/// Nothing yet, or the pieces of a trajectory (small: joined at the end).
	Pieces(BTreeMap<u32, Vec<u8>>),
	/// A state in the parts format: each piece went to its values as it came.
	Assembling { assembly: Assembly, pieces: BTreeSet<u32> },
}

/// A work state arriving in pieces of [`STATE_PIECE_BYTES`]. Its first piece is asked for
/// alone and says (with its size) what the rest are for.
struct Download {
	/// Its size, from the first answer.
	total: Option<u64>,
	received: Received,
	/// The next piece to ask for.
	next: u32,
}

impl Download {
	fn new() -> Self {
		Download { total: None, received: Received::Pieces(BTreeMap::new()), next: 1 }
	}

	/// Pieces a state of `total` bytes comes in.
	fn count(total: u64) -> u64 {
		total.div_ceil(u64::from(STATE_PIECE_BYTES))
	}

	/// Takes piece `index` of a state its sender says is `total` bytes (at most `max`), for
	/// a model of `len` values. Returns the whole state once every piece is here.
	fn accept(
		&mut self,
		index: u32,
		total: u64,
		piece: Vec<u8>,
		(max, len): (u64, usize),
	) -> Result<Option<Fetched>, String> {
		if total == 0 || total > max {
			return Err(format!(
				"a work state of {total} bytes, where this model's takes 1 to {max}"
			));
		}
		if self.total.is_some_and(|t| t != total) {
			return Err("the work state's size changed between its pieces".into());
		}
		let Some(range) = piece_range(total, STATE_PIECE_BYTES, index) else {
			return Err(format!("piece {index} of a work state of {total} bytes"));
		};
		let expected = range.end - range.start;
		if piece.len() as u64 != expected {
			return Err(format!("piece {index} has {} bytes, not {expected}", piece.len()));
		}
		let first = self.total.is_none();
		self.total = Some(total);
		if first {
			if let Some(format) = parts_format(&piece) {
				let assembly =
					Assembly::start(format, &piece, total, len).map_err(|e| e.to_string())?;
				self.received = Received::Assembling { assembly, pieces: BTreeSet::new() };
			}
		}
		let have = match &mut self.received {
			Received::Pieces(pieces) => {
				pieces.insert(index, piece);
				pieces.len()
			}
			Received::Assembling { assembly, pieces } => {
				if !pieces.insert(index) {
					return Err(format!("piece {index} came twice"));
				}
				assembly.put(range.start, &piece).map_err(|e| e.to_string())?;
				pieces.len()
			}
		};
		if (have as u64) < Self::count(total) {
			return Ok(None);
		}
		let received = std::mem::replace(&mut self.received, Received::Pieces(BTreeMap::new()));
		Ok(Some(match received {
			Received::Pieces(pieces) => Fetched::Bytes(join_pieces(pieces)),
			Received::Assembling { assembly, .. } => {
				Fetched::State(assembly.finish().map_err(|e| e.to_string())?)
			}
		}))
	}

	/// Pieces received so far.
	fn received(&self) -> usize {
		match &self.received {
			Received::Pieces(pieces) => pieces.len(),
			Received::Assembling { pieces, .. } => pieces.len(),
		}
	}

	/// The pieces to ask for next so that [`PIECES_IN_FLIGHT`] are under way.
	fn wanted(&mut self) -> Vec<u32> {
		let Some(total) = self.total else { return Vec::new() };
		let count = Self::count(total);
		let in_flight = u64::from(self.next).saturating_sub(self.received() as u64);
		let room = (PIECES_IN_FLIGHT as u64).saturating_sub(in_flight);
		let last = (u64::from(self.next) + room).min(count);
		let wanted: Vec<u32> = (u64::from(self.next)..last).map(|i| i as u32).collect();
		self.next = last as u32;
		wanted
	}
}

/// The fetches of one trainer.
pub struct Fetches {
	job: JobId,
	/// The model's tensors, which an update must fit.
	layout: Layout,
	next_id: u64,
	pending: HashMap<u64, Pending>,
	arrived: HashMap<Digest, (Arc<Vec<u8>>, CompressedUpdate)>,
	expected_lens: HashMap<Digest, u64>,
	unavailable: Vec<Digest>,
	candidates: Vec<PeerId>,
	/// Who attested holding an update of the agreed set: asked before other candidates.
	holders: HashMap<Digest, Vec<PeerId>>,
	state_answer: Option<(PeerId, Result<Response, String>)>,
	piece_answers: Vec<(u32, Result<Vec<u8>, String>)>,
	/// Work states arriving, by (round, owner).
	downloads: HashMap<(RoundIndex, PeerId, Digest), Download>,
	/// Updates arriving in pieces, by hash.
	pieces: HashMap<Digest, PieceDownload>,
	/// The round's pieces that came, by who sent them.
	piece_counts: PieceCounts,
	/// When each update of the round was first asked for, until it came.
	asked_at: HashMap<Digest, Instant>,
	/// The longest time from asking for an update of the round to holding it.
	slowest: Option<std::time::Duration>,
	/// Updates are fetched whole from their committers and holders, never in pieces (the
	/// benchmarks' baseline).
	whole_updates: bool,
	/// How long keepers are waited on this round.
	patience: Patience,
}

impl Fetches {
	/// Fetches for `job` whose updates are plain vectors of `len` values (tests).
	#[cfg(test)]
	pub fn flat(job: JobId, len: usize) -> Self {
		Self::new(job, Layout::flat(len))
	}

	/// Fetches for `job`, whose updates fit the model's `layout`.
	pub fn new(job: JobId, layout: Layout) -> Self {
		Fetches {
			job,
			layout,
			next_id: 0,
			pending: HashMap::new(),
			arrived: HashMap::new(),
			expected_lens: HashMap::new(),
			unavailable: Vec::new(),
			candidates: Vec::new(),
			holders: HashMap::new(),
			state_answer: None,
			piece_answers: Vec::new(),
			downloads: HashMap::new(),
			pieces: HashMap::new(),
			piece_counts: PieceCounts::default(),
			asked_at: HashMap::new(),
			slowest: None,
			whole_updates: false,
			patience: Patience::default(),
		}
	}

	/// How long this round's keepers are waited on ([`Patience`]; set when a round opens).
	pub fn set_patience(&mut self, patience: Patience) {
		self.patience = patience;
	}

	/// Fetches updates whole, never in pieces (`whole_updates` in a trainer's configuration).
	pub fn fetch_whole(mut self, whole: bool) -> Self {
		self.whole_updates = whole;
		self
	}

	/// Forgets the last round's updates (state requests in flight stay).
	pub fn new_round(&mut self) {
		self.arrived.clear();
		self.expected_lens.clear();
		self.unavailable.clear();
		self.holders.clear();
		// The last round's set: an early fetch that fails before this round's set is known
		// is not retried from it (the decision's `want` asks again).
		self.candidates.clear();
		self.pieces.clear();
		self.piece_counts = PieceCounts::default();
		self.asked_at.clear();
		self.slowest = None;
		self.pending.retain(|_, p| {
			!matches!(
				p,
				Pending::Update { .. } | Pending::Piece { .. } | Pending::Commitments { .. }
			)
		});
	}

	fn request(&mut self, peer: PeerId, request: Request, pending: Pending) -> Outgoing {
		self.next_id += 1;
		let id = self.next_id;
		self.pending.insert(id, pending);
		Outgoing { id, peer, request }
	}

	/// A request to `peer` for the update `hash` of `round`, after the peers `tried`.
	fn request_update(
		&mut self,
		peer: PeerId,
		round: RoundIndex,
		hash: Digest,
		mut tried: Vec<PeerId>,
	) -> Outgoing {
		tried.push(peer);
		self.asked_at.entry(hash).or_insert_with(Instant::now);
		let request = Request::Update { job: self.job, round, hash };
		self.request(peer, request, Pending::Update { hash, tried })
	}

	/// A request for `peer`'s latest state.
	pub fn request_state(&mut self, peer: PeerId) -> Outgoing {
		self.request(peer, Request::State { job: self.job }, Pending::State)
	}

	/// A request for the commitments of `round` that `peer` heard.
	pub fn request_commitments(&mut self, peer: PeerId, round: RoundIndex) -> Outgoing {
		let request = Request::Commitments { job: self.job, round };
		self.request(peer, request, Pending::Commitments { round })
	}

	/// Whether a request for commitments is still unanswered.
	pub fn asking_commitments(&self) -> bool {
		self.pending.values().any(|p| matches!(p, Pending::Commitments { .. }))
	}

	/// A request for piece `index` of the state `state_hash` that `peer` serves.
	pub fn request_state_piece(
		&mut self,
		peer: PeerId,
		state_hash: Digest,
		index: u32,
	) -> Outgoing {
		let request = Request::StatePiece { job: self.job, state_hash, index };
		self.request(peer, request, Pending::StatePiece { index })
	}

	/// A request for the first piece of the work state `peer` committed to at the start of
	/// `round`; the rest are asked for as the answers come ([`Answer::WorkStatePieces`]).
	/// A download of the same state under way starts over.
	pub fn request_work_state(&mut self, peer: PeerId, round: RoundIndex, id: Digest) -> Outgoing {
		self.downloads.insert((round, peer, id), Download::new());
		self.work_state_piece(peer, round, id, 0)
	}

	fn work_state_piece(
		&mut self,
		peer: PeerId,
		round: RoundIndex,
		id: Digest,
		index: u32,
	) -> Outgoing {
		let request = Request::WorkState { job: self.job, id, index };
		self.request(peer, request, Pending::WorkState { round, id, index })
	}

	/// What piece `index` of `peer`'s work state `id` of `round` means: more pieces to ask
	/// for, the whole state, or why it will not come (the download ends at the first
	/// failure; pieces of a download that ended are not taken).
	fn on_work_state_piece(
		&mut self,
		(round, peer, id, index): (RoundIndex, PeerId, Digest, u32),
		result: Result<Response, String>,
	) -> Answer {
		let key = (round, peer, id);
		// A step state is as large as a start state at most; a trajectory is far smaller.
		let len = self.layout.len();
		let max = WorkState::max_encoded_len(len);
		let Some(download) = self.downloads.get_mut(&key) else {
			return Answer::Unasked;
		};
		let outcome = answer_of(result, |r| match r {
			Response::WorkState { total, piece } => Ok((total, piece)),
			other => Err(other),
		})
		.and_then(|(total, piece)| download.accept(index, total, piece, (max, len)));
		match outcome {
			Ok(None) => {
				let wanted = download.wanted();
				let requests =
					wanted.into_iter().map(|i| self.work_state_piece(peer, round, id, i)).collect();
				Answer::WorkStatePieces(requests)
			}
			Ok(Some(bytes)) => {
				self.downloads.remove(&key);
				Answer::WorkState { round, peer, id, result: Ok(bytes) }
			}
			Err(why) => {
				self.downloads.remove(&key);
				Answer::WorkState { round, peer, id, result: Err(why) }
			}
		}
	}

	/// Stops waiting for the answer to `id`.
	pub fn forget(&mut self, id: u64) {
		self.pending.remove(&id);
	}

	/// The answer to the last state request, once it came.
	pub fn take_state_answer(&mut self) -> Option<(PeerId, Result<Response, String>)> {
		self.state_answer.take()
	}

	/// The answers to state piece requests that came: each piece's index and its bytes, or
	/// why it did not come.
	pub fn take_piece_answers(&mut self) -> Vec<(u32, Result<Vec<u8>, String>)> {
		std::mem::take(&mut self.piece_answers)
	}

	/// Whether a piece answer is waiting.
	pub fn has_piece_answer(&self) -> bool {
		!self.piece_answers.is_empty()
	}

	/// Whether a state answer is waiting.
	pub fn has_state_answer(&self) -> bool {
		self.state_answer.is_some()
	}

	/// This trainer's own update, which needs no fetching.
	pub fn keep_own(&mut self, hash: Digest, bytes: Arc<Vec<u8>>, update: CompressedUpdate) {
		self.arrived.insert(hash, (bytes, update));
	}

	/// Takes the update `signed` commits to, which came with the commitment
	/// ([`super::announcement`]): checked as a fetched one is and kept. Returns it and its
	/// pieces' hashes, to serve on.
	pub fn deliver(
		&mut self,
		signed: &SignedCommitment,
		bytes: Vec<u8>,
	) -> Result<(Arc<Vec<u8>>, PieceHashes), String> {
		let c = &signed.commitment;
		self.expected_lens.insert(c.update_hash, c.update_len);
		self.check_update(c.update_hash, bytes, None)
	}

	/// The request for one update from its committer (`None`: here or asked for already):
	/// made as soon as its commitment is taken, so that updates download while the round's
	/// other commitments come, and by [`Fetches::want`] for the set at the decision, which
	/// asks again (from the set's other members too) for one whose early fetch failed.
	pub fn want_one(&mut self, committer: PeerId, signed: &SignedCommitment) -> Option<Outgoing> {
		let c = &signed.commitment;
		let hash = c.update_hash;
		if self.arrived.contains_key(&hash) || self.in_flight(&hash) {
			return None;
		}
		self.expected_lens.insert(hash, c.update_len);
		Some(self.request_update(committer, c.round, hash, Vec::new()))
	}

	/// The requests for one update in pieces, each from its keeper among `members` (see
	/// [`super::update_pieces`]), made as soon as its commitment is taken; an update of
	/// one piece, or any update where updates go whole, is asked of its committer whole
	/// ([`Fetches::want_one`]).
	pub fn want_pieces(
		&mut self,
		committer: PeerId,
		signed: &SignedCommitment,
		members: &[PeerId],
		me: PeerId,
		now: Instant,
	) -> Vec<Outgoing> {
		let c = &signed.commitment;
		if self.whole_updates || piece_count(c.update_len) < 2 {
			return self.want_one(committer, signed).into_iter().collect();
		}
		let hash = c.update_hash;
		if self.arrived.contains_key(&hash) || self.in_flight(&hash) {
			return Vec::new();
		}
		self.expected_lens.insert(hash, c.update_len);
		self.asked_at.entry(hash).or_insert(now);
		let mut download = PieceDownload::new(c.round, committer, hash, c.update_len);
		let plan = download.plan(members, me, now, &mut self.patience);
		self.pieces.insert(hash, download);
		plan.into_iter().map(|(index, peer)| self.request_piece(peer, hash, index)).collect()
	}

	/// A request to `peer` for piece `index` of the update `hash` arriving in pieces.
	fn request_piece(&mut self, peer: PeerId, hash: Digest, index: u32) -> Outgoing {
		let (round, with_hashes) = match self.pieces.get(&hash) {
			Some(d) => (d.round, !d.knows_hashes()),
			None => (0, true),
		};
		let request = Request::UpdatePiece { job: self.job, round, hash, index, with_hashes };
		self.request(peer, request, Pending::Piece { hash, index })
	}

	/// The requests for pieces whose keepers kept the fetcher waiting too long: each asked
	/// of its committer as well.
	pub fn overdue_pieces(&mut self, now: Instant) -> Vec<Outgoing> {
		let late: Vec<(Digest, u32, PeerId)> = self
			.pieces
			.iter_mut()
			.flat_map(|(hash, d)| {
				d.overdue(now, &mut self.patience).into_iter().map(|(i, p)| (*hash, i, p))
			})
			.collect();
		late.into_iter().map(|(hash, index, peer)| self.request_piece(peer, hash, index)).collect()
	}

	/// The longest time an update of this round took to come, from when it was first asked
	/// for (`None`: none came).
	pub fn slowest_fetch(&self) -> Option<std::time::Duration> {
		self.slowest
	}

	/// The pieces of this round's updates that came so far, by who sent them.
	pub fn piece_counts(&self) -> PieceCounts {
		self.piece_counts
	}

	/// What an answer for piece `index` of the update `hash` means.
	fn on_piece(
		&mut self,
		hash: Digest,
		index: u32,
		peer: PeerId,
		result: Result<Response, String>,
	) -> Answer {
		let a_piece = matches!(result, Ok(Response::UpdatePiece { .. }));
		let Some(download) = self.pieces.get_mut(&hash).filter(|d| !d.has(index)) else {
			// The piece came from another sender first (or the update is whole already).
			self.piece_counts.duplicates += u64::from(a_piece);
			return Answer::Unasked;
		};
		let round = download.round;
		// Answered: no longer waited on there.
		self.patience.settle(&peer, download.piece_len(index));
		let counts = &mut self.piece_counts;
		// A holder answers at once; a keeper may hold the request while it fetches.
		let from_holder = download.holds(&peer);
		let from = match (peer == download.committer, from_holder) {
			(true, _) => &mut counts.from_committers,
			(false, true) => &mut counts.from_holders,
			(false, false) => &mut counts.from_keepers,
		};
		let outcome = answer_of(result, |r| match r {
			Response::UpdatePiece { hashes, piece } => Ok((hashes, piece)),
			other => Err(other),
		})
		.and_then(|(hashes, piece)| {
			let accepted = download.accept(index, hashes, piece.clone());
			*from += u64::from(accepted.is_ok());
			accepted.map(|whole| (whole, piece))
		});
		match outcome {
			Ok((None, piece)) => {
				let hashes = download.hashes().expect("known once a piece is accepted").clone();
				let link_bytes = from_holder.then_some(piece.len());
				Answer::Piece { hash, round, index, piece, hashes, link_bytes }
			}
			Ok((Some(bytes), piece)) => {
				let checked = download.hashes().cloned();
				match self.check_update(hash, bytes, checked) {
					Ok((bytes, hashes)) => {
						self.pieces.remove(&hash);
						let link_bytes = from_holder.then_some(piece.len());
						Answer::Update { hash, bytes, hashes, link_bytes }
					}
					Err(why) => Answer::Failed { hash, why, retry: self.abandon_pieces(hash) },
				}
			}
			Err(why) => {
				let next = download.next_source(index);
				let given_up = next.is_none();
				let retry = match next {
					Some(peer) => Some(self.request_piece(peer, hash, index)),
					None => self.abandon_pieces(hash),
				};
				Answer::PieceFailed { hash, index, why, retry, given_up }
			}
		}
	}

	/// Ends the piece download of `hash` (no source of a piece sent it, its committer
	/// included): once the round's set is known, the whole update is asked for of its
	/// holders and the set's other members, one after another (its committer, which failed
	/// a piece, only where nobody else is left); before, the decision's [`Fetches::want`]
	/// asks.
	fn abandon_pieces(&mut self, hash: Digest) -> Option<Outgoing> {
		let download = self.pieces.remove(&hash)?;
		if self.candidates.is_empty() {
			return None;
		}
		let committer = download.committer;
		let holders = self.holders.get(&hash).into_iter().flatten();
		let other = holders.chain(&self.candidates).copied().find(|p| *p != committer);
		Some(match other {
			Some(peer) => self.request_update(peer, download.round, hash, vec![committer]),
			None => self.request_update(committer, download.round, hash, Vec::new()),
		})
	}

	/// The requests for every update of the round's set (`me` excluded) neither here nor
	/// asked for yet: in pieces from their keepers among `members` as early fetches are
	/// (unless updates go whole), else whole from its committer first; other members are
	/// the candidates when that fails. Returns the requests and the hashes now wanted
	/// (those in flight too).
	pub fn want(
		&mut self,
		set: &[(PeerId, SignedCommitment)],
		me: PeerId,
		members: &[PeerId],
	) -> (Vec<Outgoing>, Vec<Digest>) {
		self.candidates = set.iter().map(|(p, _)| *p).filter(|p| *p != me).collect();
		let (mut requests, mut wanted) = (Vec::new(), Vec::new());
		for (peer, signed) in set {
			let hash = signed.commitment.update_hash;
			if self.arrived.contains_key(&hash) {
				continue;
			}
			wanted.push(hash);
			// An early fetch that failed gave up without candidates: asked again now.
			self.unavailable.retain(|h| *h != hash);
			requests.extend(self.want_pieces(*peer, signed, members, me, Instant::now()));
		}
		(requests, wanted)
	}

	/// Whether a request for the update `hash` is in flight.
	fn in_flight(&self, hash: &Digest) -> bool {
		self.pieces.contains_key(hash)
			|| self
				.pending
				.values()
				.any(|p| matches!(p, Pending::Update { hash: h, .. } if h == hash))
	}

	/// The requests for the agreed set's updates not here yet, each from the witnesses that
	/// hold it (then its committer, then the other members); an update given up on before
	/// is asked for again. An update of several pieces held by two or more comes in pieces
	/// spread over its holders ([`PieceDownload::spread`]; the pieces of an early download
	/// already here are kept). Returns the requests and the hashes now wanted.
	pub fn want_agreed(
		&mut self,
		agreement: &Agreement,
		me: PeerId,
	) -> (Vec<Outgoing>, Vec<Digest>) {
		let (mut requests, mut wanted) = (Vec::new(), Vec::new());
		for (committer, signed) in &agreement.set {
			let c = &signed.commitment;
			let hash = c.update_hash;
			if self.arrived.contains_key(&hash) {
				continue;
			}
			self.unavailable.retain(|h| *h != hash);
			self.expected_lens.insert(hash, c.update_len);
			let mut holders = agreement.holders.get(&hash).cloned().unwrap_or_default();
			holders.push(*committer);
			holders.retain(|p| *p != me);
			let Some(&first) = holders.first() else { continue };
			wanted.push(hash);
			self.holders.insert(hash, holders.clone());
			if !self.whole_updates && holders.len() > 1 && piece_count(c.update_len) > 1 {
				let download = self
					.pieces
					.entry(hash)
					.or_insert_with(|| PieceDownload::new(c.round, *committer, hash, c.update_len));
				let plan = download.spread(&holders, me, Instant::now());
				self.asked_at.entry(hash).or_insert_with(Instant::now);
				requests
					.extend(plan.into_iter().map(|(i, peer)| self.request_piece(peer, hash, i)));
				continue;
			}
			requests.push(self.request_update(first, c.round, hash, Vec::new()));
		}
		(requests, wanted)
	}

	/// Whether every hash in `wanted` arrived or is known to be unavailable.
	pub fn settled(&self, wanted: &[Digest]) -> bool {
		wanted.iter().all(|h| self.arrived.contains_key(h) || self.unavailable.contains(h))
	}

	/// The decompressed update with this hash, if it arrived.
	pub fn update(&self, hash: &Digest) -> Option<&CompressedUpdate> {
		self.arrived.get(hash).map(|(_, update)| update)
	}

	/// What `peer`'s answer to request `id` means; a failed update fetch is retried from the
	/// next candidate of `round`.
	pub fn on_answer(
		&mut self,
		id: u64,
		peer: PeerId,
		result: Result<Response, String>,
		round: RoundIndex,
	) -> Answer {
		let Some(pending) = self.pending.remove(&id) else { return Answer::Unasked };
		let (hash, tried) = match pending {
			Pending::State => {
				self.state_answer = Some((peer, result));
				return Answer::State;
			}
			Pending::StatePiece { index } => {
				let result = answer_of(result, |r| match r {
					Response::StatePiece(bytes) => Ok(bytes),
					other => Err(other),
				});
				self.piece_answers.push((index, result));
				return Answer::State;
			}
			Pending::WorkState { round, id, index } => {
				return self.on_work_state_piece((round, peer, id, index), result);
			}
			Pending::Piece { hash, index } => return self.on_piece(hash, index, peer, result),
			Pending::Commitments { round } => {
				let result = answer_of(result, |r| match r {
					Response::Commitments(list) => Ok(list),
					other => Err(other),
				})
				.and_then(|list| match list.len() {
					n if n <= MAX_SIGNERS => Ok(list),
					n => Err(format!("{n} commitments, more than a round takes")),
				});
				return Answer::Commitments { round, result };
			}
			Pending::Update { hash, tried } => (hash, tried),
		};
		let outcome = answer_of(result, |r| match r {
			Response::Update(bytes) => Ok(bytes),
			other => Err(other),
		})
		.and_then(|bytes| self.check_update(hash, bytes, None));
		match outcome {
			Ok((bytes, hashes)) => {
				Answer::Update { hash, link_bytes: Some(bytes.len()), bytes, hashes }
			}
			Err(why) => {
				let holders = self.holders.get(&hash).into_iter().flatten();
				let next = holders.chain(&self.candidates).copied().find(|p| !tried.contains(p));
				let retry = next.map(|next| self.request_update(next, round, hash, tried));
				if retry.is_none() {
					// Its committer and every other member failed: nobody has it.
					self.unavailable.push(hash);
				}
				Answer::Failed { hash, why, retry }
			}
		}
	}

	/// Checks a fetched update against its commitment and keeps it. `checked`: its pieces'
	/// hashes where it was assembled from pieces checked against them (and they against
	/// `hash`), so it is not hashed again.
	fn check_update(
		&mut self,
		hash: Digest,
		bytes: Vec<u8>,
		checked: Option<PieceHashes>,
	) -> Result<(Arc<Vec<u8>>, PieceHashes), String> {
		let hashes = match checked {
			Some(hashes) => hashes,
			None => {
				let (address, hashes) = address(&bytes);
				if address != hash {
					return Err("bytes do not match the committed hash".into());
				}
				hashes
			}
		};
		if self.expected_lens.get(&hash).is_some_and(|&l| l != bytes.len() as u64) {
			return Err("length differs from the commitment".into());
		}
		let update = CompressedUpdate::decode(&bytes).map_err(|e| e.to_string())?;
		update.check_layout(&self.layout)?;
		let bytes = Arc::new(bytes);
		self.arrived.insert(hash, (bytes.clone(), update));
		if let Some(asked) = self.asked_at.remove(&hash) {
			self.slowest = self.slowest.max(Some(asked.elapsed()));
		}
		Ok((bytes, hashes))
	}
}

/// What an answer carries when `expected` finds it the kind asked for; else why not (the
/// peer's refusal, the kind that came instead, or the request's failure).
fn answer_of<T>(
	result: Result<Response, String>,
	expected: impl FnOnce(Response) -> Result<T, Response>,
) -> Result<T, String> {
	match expected(result?) {
		Ok(value) => Ok(value),
		Err(Response::Unavailable(why)) => Err(why),
		Err(other) => Err(format!("unexpected answer {}", variant(&other))),
	}
}

fn variant(response: &Response) -> &'static str {
	match response {
		Response::Update(_) => "update",
		Response::State { .. } => "state",
		Response::WorkState { .. } => "work state",
		Response::StatePiece(_) => "state piece",
		Response::UpdatePiece { .. } => "update piece",
		Response::Unavailable(_) => "unavailable",
		Response::Commitments(_) => "commitments",
	}
}

#[cfg(test)]
mod tests {

	use libp2p::identity::Keypair;

	use super::*;
	use crate::round::messages::{tests::commitment, update_hash, Commitment};

	/// A signed commitment of `key` to `bytes` in round 3 of job 7.
	fn committed(key: &Keypair, bytes: &[u8]) -> (PeerId, SignedCommitment) {
		let commitment = Commitment {
			update_hash: update_hash(bytes),
			update_len: bytes.len() as u64,
			..commitment(3, 0)
		};
		(key.public().to_peer_id(), commitment.sign(key).unwrap())
	}

	/// Three trainers' updates of 2 values and their commitments; the first is this
	/// trainer's (`me`).
	#[allow(clippy::type_complexity)]
	fn three_committed() -> (PeerId, Vec<CompressedUpdate>, Vec<(PeerId, SignedCommitment)>) {
		let keys: Vec<Keypair> = (0..3).map(|_| Keypair::generate_ed25519()).collect();
		let updates: Vec<CompressedUpdate> =
			(0..3).map(|i| CompressedUpdate::None(vec![i as f32; 2])).collect();
		let set = keys.iter().zip(&updates).map(|(k, u)| committed(k, &u.encode())).collect();
		(keys[0].public().to_peer_id(), updates, set)
	}

	/// An update that came with its commitment is kept as a fetched one is, so the round's
	/// set is settled without asking anyone; one that does not fit the model (sent by a
	/// trainer of another layout under this job's manifest) is refused and not kept.
	#[test]
	fn an_update_sent_with_its_commitment_is_held_without_a_fetch_unless_it_does_not_fit() {
		let (me, updates, set) = three_committed();
		let mut fetches = Fetches::flat(7, 2);
		fetches.keep_own(
			set[0].1.commitment.update_hash,
			Arc::new(updates[0].encode()),
			updates[0].clone(),
		);
		let (bytes, hashes) = fetches.deliver(&set[1].1, updates[1].encode()).unwrap();
		assert_eq!(*bytes, updates[1].encode());
		assert_eq!(hashes.len(), 1);
		assert_eq!(fetches.update(&set[1].1.commitment.update_hash), Some(&updates[1]));
		// Only the update that did not come is asked for.
		let (requests, wanted) = fetches.want(&set, me, &[]);
		assert_eq!(wanted, vec![set[2].1.commitment.update_hash]);
		assert_eq!(requests.len(), 1);
		assert_eq!(requests[0].peer, set[2].0);
		// Three values where the model has two: refused, not held.
		let wide = CompressedUpdate::None(vec![1.0; 3]);
		let (_, signed) = committed(&Keypair::generate_ed25519(), &wide.encode());
		assert!(fetches.deliver(&signed, wide.encode()).is_err());
		assert!(fetches.update(&signed.commitment.update_hash).is_none());
	}

	/// The round's patience reaches the piece downloads: the first piece asked of a keeper
	/// whose link brings one in 10 s is not asked past at the fixed 3 s but at 10 s, the
	/// others later by their place in its queue, all within the cap.
	#[test]
	fn a_busy_keeper_is_waited_on_for_the_round_s_patience_before_the_committer_is_asked() {
		use std::{collections::BTreeMap, time::Duration};

		use crate::round::update_pieces::{piece_range, Patience, KEEPER_PATIENCE};
		let len = 50_000;
		let bytes = CompressedUpdate::None((0..len).map(|i| i as f32).collect()).encode();
		let (committer, signed) = committed(&Keypair::generate_ed25519(), &bytes);
		let (me, keeper) = (PeerId::random(), PeerId::random());
		let mut fetches = Fetches::flat(7, len);
		// The link from the keeper brings one of these pieces in 10 s.
		let piece = piece_range(bytes.len() as u64, 0).unwrap();
		let rate = (piece.end - piece.start) as f64 / 10.0;
		let rates = BTreeMap::from([(keeper, rate)]);
		fetches.set_patience(Patience::new(rates, Duration::from_secs(30)));
		let start = Instant::now();
		let requests = fetches.want_pieces(committer, &signed, &[committer, me, keeper], me, start);
		let from_keeper = requests.iter().filter(|r| r.peer == keeper).count();
		let count = requests.len();
		assert!(from_keeper > 0 && from_keeper < count, "{from_keeper} of {count}");
		assert!(fetches.overdue_pieces(start + KEEPER_PATIENCE).is_empty());
		assert!(fetches.overdue_pieces(start + Duration::from_secs(9)).is_empty());
		let first = fetches.overdue_pieces(start + Duration::from_secs(11));
		assert_eq!(first.len(), 1, "the first piece asked of the keeper, after 10 s");
		let rest = fetches.overdue_pieces(start + Duration::from_secs(31));
		assert_eq!(first.len() + rest.len(), from_keeper, "every piece within the cap");
		assert!(first.iter().chain(&rest).all(|r| r.peer == committer));
	}

	/// An update arrives in pieces from its keepers: the first answer brings the hashes, a
	/// keeper's forged piece sends the fetcher to the committer, a keeper's answer does not
	/// measure the link (a committer's does), and the last piece gives the checked update.
	#[test]
	fn an_update_in_pieces_comes_from_its_keepers_and_a_forged_piece_from_its_committer() {
		use crate::round::update_pieces::{piece_count, piece_range};
		let len = 50_000;
		let update = CompressedUpdate::None((0..len).map(|i| i as f32).collect());
		let bytes = update.encode();
		let committer_key = Keypair::generate_ed25519();
		let (committer, signed) = committed(&committer_key, &bytes);
		let (me, keeper) = (PeerId::random(), PeerId::random());
		let members = [committer, me, keeper];
		let mut fetches = Fetches::flat(7, len);
		let requests = fetches.want_pieces(committer, &signed, &members, me, Instant::now());
		let count = piece_count(bytes.len() as u64);
		assert!(count >= 3, "{count} pieces");
		assert_eq!(requests.len(), count as usize);
		assert!(fetches.want_pieces(committer, &signed, &members, me, Instant::now()).is_empty());
		let total = bytes.len() as u64;
		let piece = |i: u32| {
			let r = piece_range(total, i).unwrap();
			bytes[r.start as usize..r.end as usize].to_vec()
		};
		let hashes = crate::round::update_pieces::piece_hashes(&bytes);
		let mut answers = Vec::new();
		let mut forged = false;
		for r in &requests {
			let Request::UpdatePiece { index, with_hashes, .. } = r.request else { panic!() };
			assert!(with_hashes, "the hashes are asked for until they come");
			assert!(r.peer == committer || r.peer == keeper, "{}", r.peer);
			if r.peer == keeper && !forged {
				forged = true;
				let mut bad = piece(index);
				bad[0] ^= 1;
				let response = Response::UpdatePiece { hashes: hashes.clone(), piece: bad };
				let answer = fetches.on_answer(r.id, keeper, Ok(response), 3);
				let Answer::PieceFailed { retry: Some(retry), given_up: false, .. } = answer else {
					panic!("{answer:?}")
				};
				assert_eq!(retry.peer, committer);
				answers.push((retry.id, committer, index));
			} else {
				answers.push((r.id, r.peer, index));
			}
		}
		assert!(forged, "the keeper keeps some pieces");
		let last = answers.len() - 1;
		for (n, (id, peer, index)) in answers.into_iter().enumerate() {
			let response = Response::UpdatePiece { hashes: hashes.clone(), piece: piece(index) };
			let answer = fetches.on_answer(id, peer, Ok(response.clone()), 3);
			let measured = if peer == committer { Some(piece(index).len()) } else { None };
			match answer {
				Answer::Piece { link_bytes, .. } if n < last => assert_eq!(link_bytes, measured),
				Answer::Update { bytes: whole, link_bytes, .. } if n == last => {
					assert_eq!(*whole, bytes);
					assert_eq!(link_bytes, measured);
				}
				other => panic!("answer {n}: {other:?}"),
			}
		}
		assert_eq!(fetches.update(&signed.commitment.update_hash), Some(&update));
		let counts = fetches.piece_counts();
		assert_eq!(counts.from_keepers + counts.from_committers, u64::from(count));
		assert!(counts.from_committers >= 1 && counts.from_keepers >= 1, "{counts:?}");
		assert!(fetches.slowest_fetch().is_some());
	}

	#[test]
	fn a_failed_fetch_moves_to_the_next_member_then_gives_up() {
		let (me, updates, set) = three_committed();
		let mut fetches = Fetches::flat(7, 2);
		let own = set[0].1.commitment.update_hash;
		fetches.keep_own(own, Arc::new(updates[0].encode()), updates[0].clone());
		let (requests, wanted) = fetches.want(&set, me, &[]);
		assert_eq!(wanted.len(), 2, "its own update is not fetched");
		assert_eq!(requests[0].peer, set[1].0, "asked from its committer first");
		// The committer answers garbage: the other member is asked.
		let answer = fetches.on_answer(requests[0].id, set[1].0, Ok(Response::Update(vec![9])), 3);
		let Answer::Failed { why, retry: Some(retry), .. } = answer else { panic!("{answer:?}") };
		assert!(why.contains("hash"), "{why}");
		assert_eq!(retry.peer, set[2].0);
		assert!(!fetches.settled(&wanted));
		// It has nothing either: nobody does.
		let none = Ok(Response::Unavailable("no".into()));
		let answer = fetches.on_answer(retry.id, retry.peer, none, 3);
		assert!(matches!(answer, Answer::Failed { retry: None, .. }), "{answer:?}");
		// A second answer to the same request is not taken.
		let late = fetches.on_answer(retry.id, retry.peer, Ok(Response::Update(vec![])), 3);
		assert!(matches!(late, Answer::Unasked));
		let answer = fetches.on_answer(
			requests[1].id,
			set[2].0,
			Ok(Response::Update(updates[2].encode())),
			3,
		);
		assert!(matches!(answer, Answer::Update { .. }), "{answer:?}");
		assert!(fetches.settled(&wanted));
		assert!(fetches.update(&wanted[0]).is_none());
		assert_eq!(fetches.update(&wanted[1]), Some(&updates[2]));
		assert_eq!(fetches.update(&own), Some(&updates[0]));
	}

	#[test]
	fn an_early_fetch_is_waited_for_not_asked_twice_and_asked_again_when_it_failed() {
		let (me, updates, set) = three_committed();
		let own = |fetches: &mut Fetches| {
			let hash = set[0].1.commitment.update_hash;
			fetches.keep_own(hash, Arc::new(updates[0].encode()), updates[0].clone());
		};
		let mut fetches = Fetches::flat(7, 2);
		own(&mut fetches);
		// Both commitments are taken before the decision: each is asked for at once, once.
		let early: Vec<Outgoing> =
			set[1..].iter().map(|(p, s)| fetches.want_one(*p, s).unwrap()).collect();
		assert_eq!(early[0].peer, set[1].0, "asked from its committer");
		assert!(fetches.want_one(set[1].0, &set[1].1).is_none(), "already in flight");
		// 1's arrives; 2's committer does not serve it yet and nobody else is known.
		let answer =
			fetches.on_answer(early[0].id, set[1].0, Ok(Response::Update(updates[1].encode())), 3);
		assert!(matches!(answer, Answer::Update { .. }), "{answer:?}");
		assert!(fetches.want_one(set[1].0, &set[1].1).is_none(), "here already");
		let not_yet = Ok(Response::Unavailable("not yet".into()));
		let answer = fetches.on_answer(early[1].id, set[2].0, not_yet, 3);
		assert!(matches!(answer, Answer::Failed { retry: None, .. }), "{answer:?}");
		// The decision wants the failed one only, asks for it again, and waits for it.
		let (requests, wanted) = fetches.want(&set, me, &[]);
		assert_eq!(wanted, vec![set[2].1.commitment.update_hash]);
		assert_eq!(requests.len(), 1);
		assert_eq!(requests[0].peer, set[2].0);
		assert!(!fetches.settled(&wanted), "no longer given up on");
		// An early fetch still in flight at the decision is waited for, not asked twice.
		let mut fresh = Fetches::flat(7, 2);
		own(&mut fresh);
		let pending = fresh.want_one(set[2].0, &set[2].1).unwrap();
		let (requests, wanted) = fresh.want(&set, me, &[]);
		assert_eq!(requests.len(), 1, "only 1's: {requests:?}");
		assert!(!fresh.settled(&wanted));
		// When it fails now, the set's other member is asked.
		let answer = fresh.on_answer(pending.id, set[2].0, Ok(Response::Update(vec![9])), 3);
		let Answer::Failed { retry: Some(retry), .. } = answer else { panic!("{answer:?}") };
		assert_eq!(retry.peer, set[1].0);
	}

	#[test]
	fn an_agreed_update_given_up_on_is_asked_again_from_its_holders_first() {
		let keys: Vec<Keypair> = (0..4).map(|_| Keypair::generate_ed25519()).collect();
		let me = keys[0].public().to_peer_id();
		let update = CompressedUpdate::None(vec![1.0, 2.0]);
		let (committer, signed) = committed(&keys[1], &update.encode());
		let mut fetches = Fetches::flat(7, 2);
		// The round's fetch from the committer failed and nobody else was a candidate.
		let (requests, wanted) = fetches.want(&[(committer, signed.clone())], me, &[]);
		let none = || Ok(Response::Unavailable("cut off".into()));
		let answer = fetches.on_answer(requests[0].id, committer, none(), 3);
		assert!(matches!(answer, Answer::Failed { retry: None, .. }), "{answer:?}");
		assert!(fetches.settled(&wanted));
		// Witnesses 2 and 3 hold it: they are asked, in turn, before its committer.
		let holders = vec![keys[2].public().to_peer_id(), keys[3].public().to_peer_id()];
		let agreement = Agreement {
			set: vec![(committer, signed)],
			left_out: vec![],
			holders: [(wanted[0], holders.clone())].into(),
		};
		let (requests, again) = fetches.want_agreed(&agreement, me);
		assert_eq!(again, wanted);
		assert!(!fetches.settled(&again), "no longer given up on");
		assert_eq!(requests[0].peer, holders[0]);
		let answer = fetches.on_answer(requests[0].id, holders[0], none(), 3);
		let Answer::Failed { retry: Some(retry), .. } = answer else { panic!("{answer:?}") };
		assert_eq!(retry.peer, holders[1]);
		let answer =
			fetches.on_answer(retry.id, holders[1], Ok(Response::Update(update.encode())), 3);
		assert!(matches!(answer, Answer::Update { .. }), "{answer:?}");
		assert_eq!(fetches.update(&wanted[0]), Some(&update));
		// Nothing left to ask for.
		assert!(fetches.want_agreed(&agreement, me).0.is_empty());
	}

	/// The piece a request asks for.
	fn index_of(r: &Outgoing) -> u32 {
		match r.request {
			Request::UpdatePiece { index, .. } => index,
			ref other => panic!("not a piece request: {other:?}"),
		}
	}

	/// At the decision, an agreed update of several pieces that is not here yet comes in
	/// pieces spread over the members that hold it (the pieces of the early download that
	/// came are kept); a holder that fails a piece sends the fetcher to the next holder.
	#[test]
	fn an_agreed_update_in_pieces_is_spread_over_its_holders() {
		use crate::round::update_pieces::{piece_count, piece_hashes, piece_range};
		let len = 50_000;
		let update = CompressedUpdate::None((0..len).map(|i| i as f32).collect());
		let bytes = update.encode();
		let (committer, signed) = committed(&Keypair::generate_ed25519(), &bytes);
		let (me, keeper) = (PeerId::random(), PeerId::random());
		let holders = vec![PeerId::random(), PeerId::random(), me];
		let total = bytes.len() as u64;
		let count = piece_count(total);
		let piece = |i: u32| {
			let r = piece_range(total, i).unwrap();
			bytes[r.start as usize..r.end as usize].to_vec()
		};
		let answer =
			|i: u32| Ok(Response::UpdatePiece { hashes: piece_hashes(&bytes), piece: piece(i) });
		let mut fetches = Fetches::flat(7, len);
		// The early download got one piece; the rest of its sources went silent.
		let early =
			fetches.want_pieces(committer, &signed, &[committer, me, keeper], me, Instant::now());
		let first = &early[0];
		let got = fetches.on_answer(first.id, first.peer, answer(index_of(first)), 3);
		assert!(matches!(got, Answer::Piece { .. }), "{got:?}");
		let hash = signed.commitment.update_hash;
		let agreement = Agreement {
			set: vec![(committer, signed)],
			left_out: vec![],
			holders: [(hash, holders.clone())].into(),
		};
		let (requests, wanted) = fetches.want_agreed(&agreement, me);
		assert_eq!(wanted, vec![hash]);
		assert_eq!(requests.len(), count as usize - 1, "the piece here is not asked again");
		assert!(requests.iter().all(|r| r.peer != me && r.peer != keeper), "{requests:?}");
		let asked: std::collections::BTreeSet<PeerId> = requests.iter().map(|r| r.peer).collect();
		assert!(asked.len() >= 2, "spread over the holders: {asked:?}");
		// The first holder asked fails its piece: the next holder is asked for it.
		let (failed, rest) = requests.split_first().unwrap();
		let none = Ok(Response::Unavailable("gone".into()));
		let got = fetches.on_answer(failed.id, failed.peer, none, 3);
		let Answer::PieceFailed { retry: Some(retry), given_up: false, .. } = got else {
			panic!("{got:?}")
		};
		assert_ne!(retry.peer, failed.peer);
		assert!(retry.peer != me && retry.peer != keeper);
		let mut last = None;
		for r in rest.iter().chain([&retry]) {
			last = Some(fetches.on_answer(r.id, r.peer, answer(index_of(r)), 3));
		}
		let Some(Answer::Update { bytes: whole, link_bytes, .. }) = last else {
			panic!("{last:?}")
		};
		assert_eq!(*whole, bytes);
		assert!(link_bytes.is_some(), "a holder answers at once: its answer measures the link");
		assert_eq!(fetches.update(&hash), Some(&update));
		let counts = fetches.piece_counts();
		assert!(counts.from_holders >= 1, "{counts:?}");
		assert_eq!(
			counts.from_holders + counts.from_committers + counts.from_keepers,
			u64::from(count)
		);
		assert!(fetches.settled(&wanted));
	}

	/// At the decision, an update of the set that did not come early is asked for in pieces
	/// from its keepers (not whole from its committer by every member at once), unless the
	/// trainer fetches updates whole.
	#[test]
	fn the_decision_asks_for_an_update_of_several_pieces_from_its_keepers() {
		let len = 50_000;
		let update = CompressedUpdate::None((0..len).map(|i| i as f32).collect());
		let (committer, signed) = committed(&Keypair::generate_ed25519(), &update.encode());
		let another = CompressedUpdate::None(vec![0.5; len]).encode();
		let (other, other_signed) = committed(&Keypair::generate_ed25519(), &another);
		let me = PeerId::random();
		let members = [committer, me, other, PeerId::random()];
		let set = [(committer, signed), (other, other_signed)];
		let mut fetches = Fetches::flat(7, len);
		let (requests, wanted) = fetches.want(&set[..1], me, &members);
		assert_eq!(wanted.len(), 1);
		assert!(requests.len() > 1, "{requests:?}");
		assert!(requests.iter().all(|r| matches!(r.request, Request::UpdatePiece { .. })));
		assert!(requests.iter().any(|r| r.peer != committer), "keepers are asked");
		// A piece this trainer keeps is asked of the committer; when the committer fails it,
		// the whole update is asked of the set's other member, not of the committer again.
		let mine = requests.iter().find(|r| r.peer == committer).expect("this trainer keeps one");
		fetches.want(&set, me, &members);
		let none = Ok(Response::Unavailable("cut off".into()));
		let got = fetches.on_answer(mine.id, committer, none, 3);
		let Answer::PieceFailed { retry: Some(retry), given_up: true, .. } = got else {
			panic!("{got:?}")
		};
		assert_eq!(retry.peer, other);
		assert!(matches!(retry.request, Request::Update { .. }));
		let (requests, _) = Fetches::flat(7, len).fetch_whole(true).want(&set[..1], me, &members);
		assert_eq!(requests.len(), 1);
		assert!(matches!(requests[0].request, Request::Update { .. }));
		assert_eq!(requests[0].peer, committer);
	}

	#[test]
	fn fetched_updates_must_match_their_commitment_and_the_model() {
		let key = Keypair::generate_ed25519();
		let me = Keypair::generate_ed25519().public().to_peer_id();
		let update = CompressedUpdate::None(vec![1.0, 2.0, 3.0]);
		let (peer, signed) = committed(&key, &update.encode());
		// A model of 2 values cannot take an update of 3.
		let mut fetches = Fetches::flat(7, 2);
		let (requests, _) = fetches.want(&[(peer, signed.clone())], me, &[]);
		let answer =
			fetches.on_answer(requests[0].id, peer, Ok(Response::Update(update.encode())), 3);
		assert!(
			matches!(&answer, Answer::Failed { why, .. } if why.contains("3 values")),
			"{answer:?}"
		);
		// The right model takes it, and serves it on.
		let mut fetches = Fetches::flat(7, 3);
		let (requests, wanted) = fetches.want(&[(peer, signed)], me, &[]);
		let answer =
			fetches.on_answer(requests[0].id, peer, Ok(Response::Update(update.encode())), 3);
		assert!(matches!(answer, Answer::Update { hash, .. } if hash == wanted[0]));
		assert_eq!(fetches.update(&wanted[0]), Some(&update));
		assert!(fetches.settled(&wanted));
		// The next round starts empty.
		fetches.new_round();
		assert!(!fetches.settled(&wanted));
	}

	/// A tiled update of the right size cut along other tensors than the model's is refused:
	/// its kept values would sit where the model's tiles are not.
	#[test]
	fn tiled_updates_must_be_cut_along_the_models_tensors() {
		use crate::compress::{compress_values, layout::Matrix};
		use grid_primitives::job::Compression;
		let me = Keypair::generate_ed25519().public().to_peer_id();
		let model = Layout::new(vec![Matrix { rows: 64, cols: 128 }, Matrix { rows: 1, cols: 8 }]);
		let other = Layout::new(vec![Matrix { rows: 128, cols: 64 }, Matrix { rows: 1, cols: 8 }]);
		let values: Vec<f32> =
			(0..model.len()).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
		let tiles = Compression::Tiles { k: 64 };
		for (layout, accepted) in [(&other, false), (&model, true)] {
			let update = compress_values(&tiles, layout, &values).unwrap();
			let (peer, signed) = committed(&Keypair::generate_ed25519(), &update.encode());
			let mut fetches = Fetches::new(7, model.clone());
			let (requests, wanted) = fetches.want(&[(peer, signed)], me, &[]);
			let answer =
				fetches.on_answer(requests[0].id, peer, Ok(Response::Update(update.encode())), 3);
			if accepted {
				assert!(matches!(answer, Answer::Update { .. }), "{answer:?}");
				assert_eq!(fetches.update(&wanted[0]), Some(&update));
			} else {
				let Answer::Failed { why, .. } = answer else { panic!("{answer:?}") };
				assert!(why.contains("other tensors than the model's"), "{why}");
				assert!(fetches.update(&wanted[0]).is_none());
			}
		}
	}

	#[test]
	fn piece_answers_survive_a_new_round_and_wrong_answers_are_failures() {
		let peer = PeerId::random();
		let mut fetches = Fetches::flat(7, 2);
		let pieces: Vec<Outgoing> =
			(0..3).map(|i| fetches.request_state_piece(peer, [4; 32], i)).collect();
		assert_eq!(
			pieces[2].request,
			Request::StatePiece { job: 7, state_hash: [4; 32], index: 2 }
		);
		fetches.new_round();
		assert!(!fetches.has_piece_answer());
		let answers = [
			Ok(Response::StatePiece(vec![1, 2])),
			Ok(Response::Update(vec![3])),
			Ok(Response::Unavailable("gone".into())),
		];
		for (out, answer) in pieces.iter().zip(answers) {
			assert!(matches!(fetches.on_answer(out.id, peer, answer, 5), Answer::State));
		}
		let taken = fetches.take_piece_answers();
		assert_eq!(taken[0], (0, Ok(vec![1, 2])));
		assert!(matches!(&taken[1], (1, Err(e)) if e.contains("unexpected answer update")));
		assert_eq!(taken[2], (2, Err("gone".into())));
		assert!(!fetches.has_piece_answer());
	}

	#[test]
	fn state_answers_wait_to_be_taken_and_survive_a_new_round() {
		let peer = PeerId::random();
		let mut fetches = Fetches::flat(7, 2);
		let out = fetches.request_state(peer);
		assert_eq!(out.request, Request::State { job: 7 });
		fetches.new_round();
		let answer = fetches.on_answer(out.id, peer, Err("timeout".into()), 0);
		assert!(matches!(answer, Answer::State));
		assert!(fetches.has_state_answer());
		assert!(matches!(fetches.take_state_answer(), Some((p, Err(_))) if p == peer));
		assert!(!fetches.has_state_answer());
	}

	/// A witness's answer with the round's commitments comes back as them; a refusal, a
	/// wrong answer or a list longer than a round takes as why not; an answer after the
	/// round moved on as nothing asked.
	#[test]
	fn commitments_asked_of_a_witness_come_back_checked_for_shape() {
		let peer = PeerId::random();
		let mut fetches = Fetches::flat(7, 2);
		let key = Keypair::generate_ed25519();
		let signed = commitment(3, 1).sign(&key).unwrap();
		let mut answer = |response: Result<Response, String>| {
			let out = fetches.request_commitments(peer, 3);
			assert_eq!(out.request, Request::Commitments { job: 7, round: 3 });
			assert!(fetches.asking_commitments());
			let answer = fetches.on_answer(out.id, peer, response, 3);
			assert!(!fetches.asking_commitments());
			match answer {
				Answer::Commitments { round: 3, result } => result,
				other => panic!("not a commitments answer: {other:?}"),
			}
		};
		let list = vec![signed.clone()];
		assert_eq!(answer(Ok(Response::Commitments(list.clone()))), Ok(list));
		assert_eq!(answer(Ok(Response::Unavailable("other job".into()))), Err("other job".into()));
		let wrong = answer(Ok(Response::StatePiece(vec![1]))).unwrap_err();
		assert!(wrong.contains("state piece"), "{wrong}");
		let flood = vec![signed; MAX_SIGNERS + 1];
		let flood = answer(Ok(Response::Commitments(flood))).unwrap_err();
		assert!(flood.contains("257 commitments"), "{flood}");
		// Asked in a round that has been decided since: the answer is not waited for.
		let out = fetches.request_commitments(peer, 3);
		fetches.new_round();
		assert!(!fetches.asking_commitments());
		let late = fetches.on_answer(out.id, peer, Ok(Response::Commitments(vec![])), 4);
		assert!(matches!(late, Answer::Unasked));
	}

	/// The answer to a work-state piece request: piece `index` of `bytes`.
	fn piece_of(bytes: &[u8], index: u32) -> Result<Response, String> {
		let size = STATE_PIECE_BYTES as usize;
		let start = index as usize * size;
		let piece = bytes[start..(start + size).min(bytes.len())].to_vec();
		Ok(Response::WorkState { total: bytes.len() as u64, piece })
	}

	/// A work state with moments for a model of `len` values, each value different.
	fn work_state(len: usize) -> WorkState {
		let at = |i: usize, k: usize| ((i * 7 + k) % 1_000) as f32 * 1e-3;
		let moments = crate::work_state::Moments {
			m: (0..len).map(|i| at(i, 1)).collect(),
			v: (0..len).map(|i| at(i, 2)).collect(),
		};
		WorkState {
			step: 5,
			moments: Some(moments),
			residual: (0..len).map(|i| at(i, 3)).collect(),
		}
	}

	#[test]
	fn a_work_state_arrives_in_pieces_in_any_order_across_rounds() {
		// Two and a bit pieces: each vector's end falls inside a piece, and values straddle
		// the pieces' ends.
		let len = 700_000;
		let state = work_state(len);
		let (bytes, id) = (state.encode(), state.digests().id());
		assert_eq!(bytes.len().div_ceil(STATE_PIECE_BYTES as usize), 3);
		let mut fetches = Fetches::flat(7, len);
		let peer = PeerId::random();
		let first = fetches.request_work_state(peer, 3, id);
		assert_eq!(first.request, Request::WorkState { job: 7, id, index: 0 });
		// A new round does not drop a pending check's download.
		fetches.new_round();
		let Answer::WorkStatePieces(more) =
			fetches.on_answer(first.id, peer, piece_of(&bytes, 0), 4)
		else {
			panic!("more pieces wanted")
		};
		let indices: Vec<_> = more
			.iter()
			.map(|o| match o.request {
				Request::WorkState { index, .. } => index,
				_ => panic!("{o:?}"),
			})
			.collect();
		assert_eq!(indices, vec![1, 2]);
		let last = fetches.on_answer(more[1].id, peer, piece_of(&bytes, 2), 4);
		assert!(matches!(&last, Answer::WorkStatePieces(r) if r.is_empty()), "{last:?}");
		match fetches.on_answer(more[0].id, peer, piece_of(&bytes, 1), 4) {
			Answer::WorkState { round: 3, peer: p, result: Ok(fetched), .. } => {
				assert_eq!(p, peer);
				// Put together straight into its vectors, and it is the state committed to.
				assert!(matches!(&fetched, Fetched::State(_)), "assembled");
				assert!(fetched.work_state(len, &id).unwrap() == state, "the state sent");
			}
			other => panic!("{other:?}"),
		}
	}

	#[test]
	fn downloads_from_one_peer_for_one_round_are_told_apart_by_id() {
		// A segment check asks a sender for its trajectory and two states, and a replay
		// for its start state, all of one round.
		let mut fetches = Fetches::flat(7, 1_000);
		let peer = PeerId::random();
		let (a, b) = (vec![1u8; 10], vec![2u8; 20]);
		let first = fetches.request_work_state(peer, 3, [1; 32]);
		let second = fetches.request_work_state(peer, 3, [2; 32]);
		for (out, id, bytes) in [(second, [2; 32], &b), (first, [1; 32], &a)] {
			match fetches.on_answer(out.id, peer, piece_of(bytes, 0), 3) {
				Answer::WorkState { id: got, result: Ok(fetched), .. } => {
					assert_eq!((got, fetched), (id, Fetched::Bytes(bytes.clone())))
				}
				other => panic!("{other:?}"),
			}
		}
	}

	#[test]
	fn a_hostile_or_failed_work_state_download_ends_with_the_reason() {
		let peer = PeerId::random();
		// A model of 10 values: its state takes at most 141 bytes.
		let mut fetches = Fetches::flat(7, 10);
		let max = WorkState::max_encoded_len(10);
		let answer =
			|total: u64, len: usize| Ok(Response::WorkState { total, piece: vec![0; len] });
		let cases = [
			(answer(max + 1, 10), "takes 1 to 141"),
			(answer(0, 0), "takes 1 to"),
			(answer(100, 99), "has 99 bytes, not 100"),
			(Ok(Response::Unavailable("gone".into())), "gone"),
			(Ok(Response::Update(vec![])), "unexpected answer update"),
			(Err("timeout".to_string()), "timeout"),
		];
		for (result, why) in cases {
			let out = fetches.request_work_state(peer, 3, [9; 32]);
			match fetches.on_answer(out.id, peer, result, 4) {
				Answer::WorkState { result: Err(e), .. } => assert!(e.contains(why), "{e}"),
				other => panic!("{other:?}"),
			}
			// A late answer to a download that ended is not taken.
			let late = fetches.on_answer(out.id, peer, answer(100, 100), 4);
			assert!(matches!(late, Answer::Unasked));
		}
		// A state in the parts format whose header lies, or whose values are not numbers: the
		// reason, and nothing put together.
		let good = work_state(10).encode();
		let mut nan = good.clone();
		let residual_3 = good.len() - 4 * 7;
		nan[residual_3..residual_3 + 4].copy_from_slice(&f32::NAN.to_le_bytes());
		let cases = [
			(work_state(9).encode(), "a work state of 9 values for a model of 10"),
			(good[..good.len() - 1].to_vec(), "truncated"),
			(nan, "residual value 3 is not finite"),
		];
		for (bytes, why) in cases {
			let out = fetches.request_work_state(peer, 3, [9; 32]);
			match fetches.on_answer(out.id, peer, piece_of(&bytes, 0), 4) {
				Answer::WorkState { result: Err(e), .. } => assert!(e.contains(why), "{e}"),
				other => panic!("{other:?}"),
			}
		}
		// A state whose size changes between its pieces.
		let mut fetches = Fetches::flat(7, 1_000_000);
		let big = 2 * u64::from(STATE_PIECE_BYTES);
		let out = fetches.request_work_state(peer, 3, [9; 32]);
		let piece = STATE_PIECE_BYTES as usize;
		let Answer::WorkStatePieces(more) = fetches.on_answer(out.id, peer, answer(big, piece), 4)
		else {
			panic!("more pieces wanted")
		};
		match fetches.on_answer(more[0].id, peer, answer(big + 1, piece), 4) {
			Answer::WorkState { result: Err(e), .. } => assert!(e.contains("changed"), "{e}"),
			other => panic!("{other:?}"),
		}
	}
}
