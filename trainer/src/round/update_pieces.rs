//! An update sent in pieces, each from its own peer, so that a committer's uplink carries
//! its update about once rather than once for every member (issue 26).
//!
//! An update of `len` bytes is cut into [`piece_count`] pieces of equal size (the last may
//! be shorter): one per 64 KiB, at most [`MAX_UPDATE_PIECES`]. Its content address, the
//! [`update_hash`](super::messages::update_hash) every commitment signs, is the hash of its
//! length and its pieces' hashes, so each piece is checked on its own as it arrives and a
//! peer that sends a bad one is known. Each piece has a *keeper*, drawn from the members
//! by the update's hash: the keeper fetches that piece from the committer and every other
//! member fetches it from the keeper (whose network task holds the request until the piece
//! is there), and from the committer when the keeper fails or is slow.
//!
//! Pure bookkeeping: [`PieceDownload`] for the side that fetches; the daemon moves bytes.

use std::{
	collections::BTreeMap,
	ops::Range,
	sync::Arc,
	time::{Duration, Instant},
};

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;
use sp_crypto_hashing::blake2_256;

use super::messages::{Commitment, Digest};

/// Domain of an update's content address.
const UPDATE_DOMAIN: &[u8] = b"grid/update/v2";
/// The smallest piece an update is cut into (below it, a piece's request costs more than
/// the copies it spares the committer).
pub const UPDATE_PIECE_MIN_BYTES: u64 = 64 << 10;
/// Most pieces an update is cut into (the hashes of all of them come with a first answer).
pub const MAX_UPDATE_PIECES: u32 = 64;
/// How long a fetcher waits on a piece's source before asking the next holder as well, at
/// least ([`Patience`] waits longer on a keeper whose link needs longer). A keeper that
/// cannot get its piece says so at once (its waiting requests are refused); this is for
/// one that is silent. Too short, and a keeper whose uplink is busy serving its pieces is
/// asked past, and both send (a quick `bench/pieces.sh` run with 2 s: a trainer with a
/// 20 Mbit/s uplink served 25 MB in pieces against 18 MB whole, all-to-all).
pub const KEEPER_PATIENCE: Duration = Duration::from_secs(3);

/// How long a fetcher waits on each keeper: [`KEEPER_PATIENCE`], or longer where the link
/// from the keeper, at the rate it was measured at, needs longer to bring everything this
/// fetcher asked of it and has not had yet. A keeper keeps a member's share of every
/// fetched update's pieces, so what one fetcher asks of it grows with the round's updates,
/// and the rate measured on the link from it is this fetcher's share of its uplink, which
/// shrinks as members grow: at 64 members, 0.86 MB updates and 20 Mbit/s uplinks, about
/// 0.9 MB at about 0.3 Mbit/s, some 22 s. A fixed patience asks such a keeper past and
/// both send. It is capped (half the fetch window), so a keeper that trickles its pieces
/// to be waited on delays them by at most that and the committer still has the rest.
#[derive(Clone, Debug)]
pub struct Patience {
	/// Bytes per second measured on transfers from each peer.
	rates: BTreeMap<PeerId, f64>,
	/// The longest a keeper is waited on.
	cap: Duration,
	/// Bytes asked of each keeper this round and neither answered nor asked elsewhere.
	outstanding: BTreeMap<PeerId, u64>,
}

impl Default for Patience {
	/// [`KEEPER_PATIENCE`] for every keeper.
	fn default() -> Self {
		Patience::new(BTreeMap::new(), KEEPER_PATIENCE)
	}
}

impl Patience {
	/// A round's patience, with the links from peers measured at `rates` (bytes per
	/// second), at most `cap`.
	pub fn new(rates: BTreeMap<PeerId, f64>, cap: Duration) -> Self {
		Patience { rates, cap, outstanding: BTreeMap::new() }
	}

	/// Asks `keeper` for `bytes` more: how long to wait on it for them (a peer whose link
	/// was never measured: [`KEEPER_PATIENCE`]).
	pub fn ask(&mut self, keeper: PeerId, bytes: u64) -> Duration {
		let queued = self.outstanding.entry(keeper).or_default();
		*queued = queued.saturating_add(bytes);
		let Some(rate) = self.rates.get(&keeper).filter(|r| r.is_finite() && **r > 0.0) else {
			return KEEPER_PATIENCE;
		};
		let cap = self.cap.max(KEEPER_PATIENCE);
		let needed = Duration::try_from_secs_f64(*queued as f64 / rate).unwrap_or(cap);
		needed.clamp(KEEPER_PATIENCE, cap)
	}

	/// `bytes` asked of `keeper` are no longer waited on there (it answered, or they were
	/// asked elsewhere).
	pub fn settle(&mut self, keeper: &PeerId, bytes: u64) {
		if let Some(queued) = self.outstanding.get_mut(keeper) {
			*queued = queued.saturating_sub(bytes);
		}
	}
}

/// How many pieces an update of `len` bytes is cut into.
pub fn piece_count(len: u64) -> u32 {
	len.div_ceil(UPDATE_PIECE_MIN_BYTES).clamp(1, u64::from(MAX_UPDATE_PIECES)) as u32
}

/// The bytes of piece `index` of an update of `len` bytes; `None` past its last piece.
pub fn piece_range(len: u64, index: u32) -> Option<Range<u64>> {
	let size = len.div_ceil(u64::from(piece_count(len))).max(1);
	let start = u64::from(index) * size;
	(index < piece_count(len) && (start < len || len == 0)).then(|| start..(start + size).min(len))
}

/// The size of piece `index` of an update of `len` bytes (0 past its last piece).
pub fn piece_size(len: u64, index: u32) -> u64 {
	piece_range(len, index).map_or(0, |r| r.end - r.start)
}

/// The whole from its `pieces` in order, each piece freed once copied; called once every
/// piece is here and checked. It reserves what the pieces hold, never a length a peer
/// claimed. A collect of the pieces pushed byte by byte into a vector grown by doubling, on
/// the round loop: ten times as long, with room for up to twice the state (`bench/join.sh`).
pub fn join_pieces(pieces: BTreeMap<u32, Vec<u8>>) -> Vec<u8> {
	let mut whole = Vec::with_capacity(pieces.values().map(Vec::len).sum());
	for piece in pieces.into_values() {
		whole.extend_from_slice(&piece);
	}
	whole
}

/// Whether `c` commits to the update `hash` and that update has a piece `index`.
pub fn names_piece(c: &Commitment, hash: &Digest, index: u32) -> bool {
	c.update_hash == *hash && index < piece_count(c.update_len)
}

/// The hash of one piece.
pub fn piece_hash(piece: &[u8]) -> Digest {
	blake2_256(piece)
}

/// Every piece's hash of the update `bytes`, in order.
pub fn piece_hashes(bytes: &[u8]) -> Vec<Digest> {
	let len = bytes.len() as u64;
	(0..piece_count(len))
		.filter_map(|i| piece_range(len, i))
		.map(|r| piece_hash(&bytes[r.start as usize..r.end as usize]))
		.collect()
}

/// Every piece's hash of an update, in order: computed once (where it is sealed, or checked
/// on arrival) and shared with whatever serves its pieces.
pub type PieceHashes = Arc<Vec<Digest>>;

/// The content address of the update `bytes` and its pieces' hashes.
pub fn address(bytes: &[u8]) -> (Digest, PieceHashes) {
	let hashes = piece_hashes(bytes);
	(update_root(bytes.len() as u64, &hashes), Arc::new(hashes))
}

/// The content address of an update of `len` bytes with these pieces' hashes.
pub fn update_root(len: u64, hashes: &[Digest]) -> Digest {
	let mut bytes = Vec::with_capacity(UPDATE_DOMAIN.len() + 8 + hashes.len() * 32);
	bytes.extend_from_slice(UPDATE_DOMAIN);
	bytes.extend_from_slice(&len.to_le_bytes());
	hashes.iter().for_each(|h| bytes.extend_from_slice(h));
	blake2_256(&bytes)
}

/// Who keeps piece `index` of the update `hash`: one of `members` (the committer left out
/// by the caller), taken in turn from a place the update's hash draws, so an update's
/// pieces spread over every member and each member keeps a share of every update.
pub fn keeper(hash: &Digest, index: u32, members: &[PeerId]) -> Option<PeerId> {
	if members.is_empty() {
		return None;
	}
	let start = u32::from_le_bytes([hash[0], hash[1], hash[2], hash[3]]) as usize;
	Some(members[(start + index as usize) % members.len()])
}

/// The pieces of a round's updates this trainer fetched ((the round's record)),
/// by who sent them: the piece's keeper, the update's committer (the keeper was this
/// trainer, or failed or was slow), or another member that attested holding the whole
/// update (an agreed set's update fetched at the decision).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct PieceCounts {
	/// From the members that keep them.
	pub from_keepers: u64,
	/// From the updates' committers.
	pub from_committers: u64,
	/// From other holders of the whole update.
	pub from_holders: u64,
	/// Pieces that came after the same piece had come from another sender (its first was
	/// past its patience and both answered).
	pub duplicates: u64,
}

impl std::ops::Add for PieceCounts {
	type Output = PieceCounts;

	/// Both counts together (several rounds' or trainers').
	fn add(self, other: PieceCounts) -> PieceCounts {
		PieceCounts {
			from_keepers: self.from_keepers + other.from_keepers,
			from_committers: self.from_committers + other.from_committers,
			from_holders: self.from_holders + other.from_holders,
			duplicates: self.duplicates + other.duplicates,
		}
	}
}

/// A piece asked for: from whom, in order, when it was last asked and how long its last
/// source is waited on.
struct Asked {
	from: Vec<PeerId>,
	at: Instant,
	patience: Duration,
}

impl Asked {
	/// Asked of `from` at `at`, waited on for `patience`.
	fn of(from: PeerId, at: Instant, patience: Duration) -> Self {
		Asked { from: vec![from], at, patience }
	}

	/// Asked of `next` as well at `at`, a holder that answers at once.
	fn pass(&mut self, next: PeerId, at: Instant) {
		self.from.push(next);
		self.at = at;
		self.patience = KEEPER_PATIENCE;
	}
}

/// One update arriving in pieces.
pub struct PieceDownload {
	/// Its round.
	pub round: RoundIndex,
	/// Who committed to it.
	pub committer: PeerId,
	/// Who holds it whole and answers at once, in the order they are asked for a piece
	/// another failed or was slow on: its committer, and, once a round's set is agreed,
	/// the members that attested holding it ([`PieceDownload::spread`]).
	holders: Vec<PeerId>,
	len: u64,
	hash: Digest,
	hashes: Option<PieceHashes>,
	pieces: BTreeMap<u32, Vec<u8>>,
	asked: BTreeMap<u32, Asked>,
}

impl PieceDownload {
	/// A download of the update `hash` of `len` bytes that `committer` committed to.
	pub fn new(round: RoundIndex, committer: PeerId, hash: Digest, len: u64) -> Self {
		let (hashes, pieces, asked) = (None, BTreeMap::new(), BTreeMap::new());
		let holders = vec![committer];
		PieceDownload { round, committer, holders, len, hash, hashes, pieces, asked }
	}

	/// The pieces not here yet and whom to ask for each, spread over `holders` (members
	/// known to hold the whole update; `me` left out): each fetcher starts at its own place
	/// in the list (drawn from its id and the update's hash), so the holders share the
	/// fetchers' requests and no one uplink carries the update to all of them. Pieces
	/// already asked of a keeper are asked again (the keeper may be what failed).
	pub fn spread(&mut self, holders: &[PeerId], me: PeerId, now: Instant) -> Vec<(u32, PeerId)> {
		let mut list: Vec<PeerId> = Vec::with_capacity(holders.len());
		holders.iter().filter(|p| **p != me).for_each(|p| {
			if !list.contains(p) {
				list.push(*p)
			}
		});
		if list.is_empty() {
			return Vec::new();
		}
		let mine = blake2_256(&[&self.hash[..], &me.to_bytes()].concat());
		let mut plan = Vec::new();
		for index in (0..piece_count(self.len)).filter(|i| !self.pieces.contains_key(i)) {
			let from = keeper(&mine, index, &list).expect("holders is not empty");
			self.asked.insert(index, Asked::of(from, now, KEEPER_PATIENCE));
			plan.push((index, from));
		}
		self.holders = list;
		plan
	}

	/// Whether `peer` holds the whole update (answers at once, not after a fetch of its
	/// own).
	pub fn holds(&self, peer: &PeerId) -> bool {
		self.holders.contains(peer)
	}

	/// The pieces to ask for first and from whom: each from its keeper among `members`
	/// (the committer and `me` left out), waited on for its `patience`, or from the
	/// committer where this trainer keeps it (or there is no other member).
	pub fn plan(
		&mut self,
		members: &[PeerId],
		me: PeerId,
		now: Instant,
		patience: &mut Patience,
	) -> Vec<(u32, PeerId)> {
		let others: Vec<PeerId> =
			members.iter().copied().filter(|p| *p != self.committer).collect();
		let mut plan = Vec::new();
		for index in 0..piece_count(self.len) {
			let (from, wait) = match keeper(&self.hash, index, &others) {
				Some(k) if k != me => (k, patience.ask(k, self.piece_len(index))),
				_ => (self.committer, KEEPER_PATIENCE),
			};
			self.asked.insert(index, Asked::of(from, now, wait));
			plan.push((index, from));
		}
		plan
	}

	/// The size of piece `index`.
	pub fn piece_len(&self, index: u32) -> u64 {
		piece_size(self.len, index)
	}

	/// Whether the pieces' hashes are known (else an answer should bring them).
	pub fn knows_hashes(&self) -> bool {
		self.hashes.is_some()
	}

	/// The pieces' hashes, once known (after the first piece is accepted).
	pub fn hashes(&self) -> Option<&PieceHashes> {
		self.hashes.as_ref()
	}

	/// Takes `peer`'s answer for piece `index` (with the pieces' hashes where it sent them).
	/// Returns the whole update once every piece is here, or why the answer was refused.
	pub fn accept(
		&mut self,
		index: u32,
		hashes: Vec<Digest>,
		piece: Vec<u8>,
	) -> Result<Option<Vec<u8>>, String> {
		if !hashes.is_empty() && self.hashes.is_none() {
			if hashes.len() != piece_count(self.len) as usize {
				return Err(format!(
					"{} piece hashes for an update of {} pieces",
					hashes.len(),
					piece_count(self.len)
				));
			}
			if update_root(self.len, &hashes) != self.hash {
				return Err("the pieces' hashes do not add up to the committed hash".into());
			}
			self.hashes = Some(Arc::new(hashes));
		}
		let Some(expected) = self.hashes.as_ref().and_then(|h| h.get(index as usize)) else {
			return Err(format!("piece {index} came without the pieces' hashes"));
		};
		// Checked as well as its hash: the hashes are the committer's, and pieces of its
		// choosing need not cut the committed length (one-byte pieces of a claimed 2^62 bytes
		// once made every fetcher reserve the claim, and abort).
		if piece.len() as u64 != self.piece_len(index) {
			let expected = self.piece_len(index);
			return Err(format!("piece {index} has {} bytes, not {expected}", piece.len()));
		}
		if piece_hash(&piece) != *expected {
			return Err(format!("piece {index} does not match its hash"));
		}
		self.pieces.entry(index).or_insert(piece);
		if self.pieces.len() < piece_count(self.len) as usize {
			return Ok(None);
		}
		Ok(Some(join_pieces(std::mem::take(&mut self.pieces))))
	}

	/// Whether piece `index` is here.
	pub fn has(&self, index: u32) -> bool {
		self.pieces.contains_key(&index)
	}

	/// Who to ask for piece `index` after a failed answer: the first holder not asked for
	/// it yet (`None`: every holder failed it too).
	pub fn next_source(&mut self, index: u32) -> Option<PeerId> {
		let asked = self.asked.get_mut(&index)?;
		let next = *self.holders.iter().find(|h| !asked.from.contains(h))?;
		asked.pass(next, Instant::now());
		Some(next)
	}

	/// The pieces whose last source has not answered within its patience and that a
	/// holder was not asked for yet: each is asked of the next holder now as well (and no
	/// longer waited on at the last source, in `patience`).
	pub fn overdue(&mut self, now: Instant, patience: &mut Patience) -> Vec<(u32, PeerId)> {
		let (holders, pieces, len) = (&self.holders, &self.pieces, self.len);
		let mut late = Vec::new();
		for (index, asked) in &mut self.asked {
			if pieces.contains_key(index) || now.duration_since(asked.at) < asked.patience {
				continue;
			}
			if let Some(next) = holders.iter().find(|h| !asked.from.contains(h)) {
				if let Some(last) = asked.from.last() {
					patience.settle(last, piece_size(len, *index));
				}
				asked.pass(*next, now);
				late.push((*index, *next));
			}
		}
		late
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn update(len: usize) -> Vec<u8> {
		(0..len).map(|i| (i * 7 % 251) as u8).collect()
	}

	#[test]
	fn an_update_is_cut_into_pieces_that_cover_it_once() {
		for len in [0u64, 1, 1000, 64 << 10, (64 << 10) + 1, 3 << 20, 40 << 20] {
			let count = piece_count(len);
			assert!((1..=MAX_UPDATE_PIECES).contains(&count));
			let mut next = 0;
			for i in 0..count {
				let r = piece_range(len, i).expect("a piece in range");
				assert_eq!(r.start, next, "len {len} piece {i}");
				next = r.end;
			}
			assert_eq!(next, len);
			assert!(piece_range(len, count).is_none());
		}
		assert_eq!(piece_count(1000), 1);
		assert_eq!(piece_count(3 << 20), 48);
		assert_eq!(piece_count(40 << 20), MAX_UPDATE_PIECES);
	}

	#[test]
	fn pieces_join_in_order_into_exactly_their_length() {
		let len = (3 << 20) + 5;
		let whole = update(len);
		// Arrived in any order: joined by index.
		let mut pieces = BTreeMap::new();
		for i in (0..piece_count(len as u64)).rev() {
			let r = piece_range(len as u64, i).unwrap();
			pieces.insert(i, whole[r.start as usize..r.end as usize].to_vec());
		}
		let joined = join_pieces(pieces);
		assert_eq!(joined, whole);
		assert_eq!(joined.capacity(), len, "no room grown past the whole");
		assert!(join_pieces(BTreeMap::new()).is_empty());
	}

	#[test]
	fn pieces_spread_over_every_member_except_the_committer() {
		let members: Vec<PeerId> = (0..5).map(|_| PeerId::random()).collect();
		let (committer, me) = (members[0], members[1]);
		let bytes = update(20 * (64 << 10));
		let hash = update_root(bytes.len() as u64, &piece_hashes(&bytes));
		let mut download = PieceDownload::new(0, committer, hash, bytes.len() as u64);
		let plan = download.plan(&members, me, Instant::now(), &mut Patience::default());
		assert_eq!(plan.len(), 20);
		// Those this trainer keeps come from the committer; every other member keeps some.
		for m in &members[2..] {
			assert!(plan.iter().filter(|(_, p)| p == m).count() >= 4, "{m} keeps its share");
		}
		assert_eq!(plan.iter().filter(|(_, p)| *p == committer).count(), 5);
	}

	#[test]
	fn only_pieces_a_commitment_names_are_held_for() {
		let mut c = crate::round::messages::tests::commitment(0, 2);
		c.update_len = 3 * (64 << 10);
		let hash = c.update_hash;
		assert!(names_piece(&c, &hash, 0) && names_piece(&c, &hash, 2));
		assert!(!names_piece(&c, &hash, 3), "past its last piece");
		assert!(!names_piece(&c, &hash, u32::MAX));
		assert!(!names_piece(&c, &[0xee; 32], 0), "another update");
	}

	#[test]
	fn pieces_must_cut_the_committed_length_whatever_their_hashes_say() {
		// A committer claims 2^62 bytes and hashes 64 one-byte pieces of its own into the
		// commitment's root: every piece is refused for its length.
		let len = 1u64 << 62;
		let pieces: Vec<Vec<u8>> = (0..MAX_UPDATE_PIECES).map(|i| vec![i as u8]).collect();
		let hashes: Vec<Digest> = pieces.iter().map(|p| piece_hash(p)).collect();
		let hash = update_root(len, &hashes);
		let mut download = PieceDownload::new(0, PeerId::random(), hash, len);
		for (i, piece) in pieces.into_iter().enumerate() {
			let why = download.accept(i as u32, hashes.clone(), piece).unwrap_err();
			assert!(why.contains("has 1 bytes, not"), "{why}");
		}
		assert!(!download.has(0));
		// An honest update's pieces pass, and a piece one byte short is refused.
		let bytes = update(3 * (64 << 10));
		let hashes = piece_hashes(&bytes);
		let len = bytes.len() as u64;
		let mut download = PieceDownload::new(0, PeerId::random(), update_root(len, &hashes), len);
		let short = bytes[..(64 << 10) - 1].to_vec();
		assert!(download.accept(0, hashes.clone(), short).unwrap_err().contains("bytes, not"));
		for i in 0..3u32 {
			let r = piece_range(len, i).unwrap();
			let got = download.accept(
				i,
				hashes.clone(),
				bytes[r.start as usize..r.end as usize].to_vec(),
			);
			assert_eq!(got.unwrap().is_some(), i == 2);
		}
	}

	#[test]
	fn an_update_assembles_from_checked_pieces_and_a_forged_one_is_refused() {
		let bytes = update(5 * (64 << 10) + 17);
		let hashes = piece_hashes(&bytes);
		let len = bytes.len() as u64;
		let hash = update_root(len, &hashes);
		let committer = PeerId::random();
		let mut download = PieceDownload::new(3, committer, hash, len);
		let piece = |i: u32| {
			let r = piece_range(len, i).unwrap();
			bytes[r.start as usize..r.end as usize].to_vec()
		};
		// A piece before the hashes are known cannot be checked.
		assert!(download.accept(1, Vec::new(), piece(1)).is_err());
		// Hashes that are not the committed ones.
		let mut forged = hashes.clone();
		forged[2] = [9; 32];
		let err = download.accept(2, forged, piece(2)).unwrap_err();
		assert!(err.contains("do not add up"), "{err}");
		assert!(download.accept(0, hashes[..2].to_vec(), piece(0)).is_err());
		// A forged piece under the right hashes.
		let mut bad = piece(0);
		bad[0] ^= 1;
		let err = download.accept(0, hashes.clone(), bad).unwrap_err();
		assert!(err.contains("does not match"), "{err}");
		assert!(download.knows_hashes());
		let count = piece_count(len);
		let mut whole = None;
		for i in (0..count).rev() {
			whole = download.accept(i, Vec::new(), piece(i)).unwrap();
			assert_eq!(whole.is_some(), i == 0);
		}
		assert_eq!(whole.unwrap(), bytes);
	}

	#[test]
	fn a_silent_or_failing_keeper_sends_the_fetcher_to_the_committer_once() {
		let members: Vec<PeerId> = (0..4).map(|_| PeerId::random()).collect();
		let (committer, me) = (members[0], members[3]);
		let len = 8 * (64 << 10);
		let mut download = PieceDownload::new(0, committer, [5; 32], len);
		let start = Instant::now();
		let plan = download.plan(&members, me, start, &mut Patience::default());
		let from_keepers: Vec<u32> =
			plan.iter().filter(|(_, p)| *p != committer).map(|(i, _)| *i).collect();
		assert!(!from_keepers.is_empty());
		assert!(download.overdue(start + KEEPER_PATIENCE / 2, &mut Patience::default()).is_empty());
		let failed = from_keepers[0];
		assert_eq!(download.next_source(failed), Some(committer));
		assert_eq!(download.next_source(failed), None, "the committer failed too");
		let late = download.overdue(start + KEEPER_PATIENCE, &mut Patience::default());
		assert_eq!(late.len(), from_keepers.len() - 1);
		assert!(late.iter().all(|(i, p)| *p == committer && *i != failed));
		assert!(
			download.overdue(start + 2 * KEEPER_PATIENCE, &mut Patience::default()).is_empty(),
			"asked once"
		);
	}

	#[test]
	fn patience_grows_with_what_is_waited_on_from_a_keeper_over_its_link_within_the_cap() {
		let (slow, fast, unmeasured) = (PeerId::random(), PeerId::random(), PeerId::random());
		// 0.3 Mbit/s (a fetcher's share of a busy 20 Mbit/s uplink) and 1 Gbit/s.
		let rates = BTreeMap::from([(slow, 37_500.0), (fast, 125e6)]);
		let mut patience = Patience::new(rates.clone(), Duration::from_secs(60));
		let piece = 64 << 10;
		// Each piece asked waits behind those asked before it and not had yet.
		let first = patience.ask(slow, piece);
		assert_eq!(first, KEEPER_PATIENCE, "1.7 s: the floor");
		let waits: Vec<Duration> = (0..13).map(|_| patience.ask(slow, piece)).collect();
		let last = waits.last().unwrap().as_secs_f64();
		assert!((24.0..24.6).contains(&last), "14 pieces at 0.3 Mbit/s: {last} s");
		assert!(waits.windows(2).all(|w| w[0] <= w[1]));
		// Settled pieces (answered, or asked elsewhere) no longer count.
		patience.settle(&slow, 10 * piece);
		let wait = patience.ask(slow, piece).as_secs_f64();
		assert!((8.5..9.0).contains(&wait), "5 pieces: {wait} s");
		patience.settle(&slow, u64::MAX);
		assert_eq!(patience.ask(slow, piece), KEEPER_PATIENCE);
		assert_eq!(patience.ask(fast, 100 * piece), KEEPER_PATIENCE, "never below the floor");
		assert_eq!(patience.ask(unmeasured, 100 * piece), KEEPER_PATIENCE);
		let mut capped = Patience::new(rates, Duration::from_secs(8));
		assert_eq!(capped.ask(slow, 100 * piece), Duration::from_secs(8));
		// A cap below the floor, a rate of zero or not a number: the floor.
		let odd = BTreeMap::from([(slow, 0.0), (fast, f64::NAN)]);
		let mut patience = Patience::new(odd, Duration::from_secs(1));
		assert_eq!(patience.ask(slow, u64::MAX), KEEPER_PATIENCE);
		assert_eq!(patience.ask(fast, u64::MAX), KEEPER_PATIENCE);
		assert_eq!(Patience::default().ask(slow, u64::MAX), KEEPER_PATIENCE);
	}

	#[test]
	fn a_busy_keeper_is_waited_on_for_its_patience_and_a_silent_one_no_longer() {
		let members: Vec<PeerId> = (0..4).map(|_| PeerId::random()).collect();
		let (committer, me, busy) = (members[0], members[3], members[1]);
		let len = 8 * (64 << 10);
		let mut download = PieceDownload::new(0, committer, [5; 32], len);
		// The busy keeper's link brings a piece in 3.5 s; the other keeper is unmeasured.
		let rate = f64::from(64 << 10) / 3.5;
		let mut patience = Patience::new(BTreeMap::from([(busy, rate)]), Duration::from_secs(20));
		let start = Instant::now();
		let plan = download.plan(&members, me, start, &mut patience);
		let of = |p: PeerId| plan.iter().filter(|(_, k)| *k == p).count();
		assert_eq!(of(busy), 3, "{plan:?}");
		assert_eq!(of(members[2]), 2, "{plan:?}");
		let at = |ms: u64| start + Duration::from_millis(ms);
		let late = download.overdue(at(3_000), &mut patience);
		assert_eq!(late.len(), 2, "only the unmeasured keeper's pieces");
		assert!(late.iter().all(|(_, p)| *p == committer));
		// The busy keeper's pieces wait 3.5, 7 and 10.5 s by their place in its queue.
		for (ms, passed) in
			[(3_400, 0), (3_600, 1), (6_900, 0), (7_100, 1), (10_400, 0), (10_600, 1)]
		{
			assert_eq!(download.overdue(at(ms), &mut patience).len(), passed, "at {ms} ms");
		}
		assert!(download.overdue(at(60_000), &mut patience).is_empty(), "asked once");
		// What was asked of the committer instead is no longer waited on at the keeper.
		assert_eq!(patience.ask(busy, 0), KEEPER_PATIENCE);
	}

	#[test]
	fn an_agreed_update_is_spread_over_its_holders_and_a_failed_or_slow_one_is_passed() {
		let holders: Vec<PeerId> = (0..4).map(|_| PeerId::random()).collect();
		let (committer, me) = (PeerId::random(), holders[3]);
		let bytes = update(12 * (64 << 10));
		let (hash, hashes) = address(&bytes);
		let len = bytes.len() as u64;
		let mut download = PieceDownload::new(0, committer, hash, len);
		let r = piece_range(len, 5).unwrap();
		let piece5 = bytes[r.start as usize..r.end as usize].to_vec();
		assert_eq!(download.accept(5, hashes.to_vec(), piece5), Ok(None));
		let start = Instant::now();
		let plan = download.spread(&holders, me, start);
		assert_eq!(plan.len(), 11, "the piece here is not asked again");
		assert!(plan.iter().all(|(i, _)| *i != 5));
		// Every holder but this trainer takes its share.
		for h in &holders[..3] {
			assert!(plan.iter().filter(|(_, p)| p == h).count() >= 3, "{h} serves its share");
			assert!(download.holds(h));
		}
		assert!(!download.holds(&me) && !download.holds(&committer));
		// A failed piece goes to the next holders in turn, then nobody is left.
		let (failed, first) = plan[0];
		let a = download.next_source(failed).unwrap();
		let b = download.next_source(failed).unwrap();
		assert!(a != first && b != first && a != b);
		assert_eq!(download.next_source(failed), None, "every holder failed it");
		// A silent holder's pieces are asked of another after the patience, once each.
		assert!(download.overdue(start + KEEPER_PATIENCE / 2, &mut Patience::default()).is_empty());
		let late = download.overdue(start + KEEPER_PATIENCE, &mut Patience::default());
		assert_eq!(late.len(), 10);
		assert!(late.iter().all(|(i, p)| *i != failed && plan.iter().all(|q| q != &(*i, *p))));
	}
}
