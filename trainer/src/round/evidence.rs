//! What a round leaves for fraud checks: its base model and the updates that went into its
//! aggregate, as sent, with their senders' claimed steps, committed start digests and
//! trajectory roots. The
//! fraud desk holds the last rounds in memory and hands every round, encoded, to an
//! [`EvidenceArchive`] that keeps it for the job's whole challenge window (the daemon's
//! files), so a committee member can judge an update from any round that can still be
//! challenged, after a restart too.
//!
//! The encoding is the magic `GEV2`, then deflate of the SCALE encoding of the round, the
//! base's values (little-endian `f32`) and each update (sender's peer id, steps, start
//! digests, trajectory root, the update's canonical bytes). Decoding checks every part: a
//! file torn by a crash or edited is refused, never half-read. `GEV1`, written before
//! trajectory roots were kept, still decodes (its updates' roots unknown: a committee judges
//! them by full replays), so a trainer upgraded mid-job keeps the evidence of the rounds
//! before and can vote on them (a drawn member that does not vote is slashed as absent).

use std::{
	collections::{BTreeMap, HashMap},
	io::{Read, Write},
	sync::{Arc, Mutex, MutexGuard},
};

use codec::{Decode, Encode};
use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::messages::{decode_exact, Digest};
use crate::{compress::CompressedUpdate, params::le_bytes, work_state::WorkDigests};

/// First bytes of an encoded round's evidence.
const MAGIC: &[u8; 4] = b"GEV2";
/// First bytes of evidence written before trajectory roots were kept.
const MAGIC_V1: &[u8; 4] = b"GEV1";
/// Most bytes an encoded round may inflate to (a 1 GiB base and its updates), so a hostile
/// or corrupt file cannot exhaust memory.
const MAX_INFLATED: u64 = 4 << 30;

/// One update kept as evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept {
	/// Inner steps its sender claimed.
	pub steps: u32,
	/// Its sender's committed start-state digests.
	pub start: WorkDigests,
	/// Its sender's committed trajectory root ([`crate::trajectory::Trajectory::root`]);
	/// unknown in evidence kept before roots were (`GEV1`).
	pub trajectory: Option<Digest>,
	/// The update as sent.
	pub update: Arc<CompressedUpdate>,
}

/// What one round leaves for checks.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundEvidence {
	/// The round.
	pub round: RoundIndex,
	/// The model the round's updates were trained from.
	pub base: Arc<Vec<f32>>,
	/// The updates, by sender.
	pub updates: HashMap<PeerId, Kept>,
}

/// Why encoded evidence was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EvidenceError {
	/// It does not start with [`MAGIC`].
	#[error("not Grid round evidence (bad magic)")]
	Magic,
	/// It does not inflate.
	#[error("does not inflate: {0}")]
	Inflate(String),
	/// Its content does not decode.
	#[error("malformed: {0}")]
	Malformed(String),
	/// A sender's peer id does not parse.
	#[error("bad peer id: {0}")]
	Peer(String),
	/// An update does not decode, or does not fit the base.
	#[error("bad update from {peer}: {why}")]
	Update { peer: PeerId, why: String },
}

/// Where rounds' evidence is kept for the challenge window (the daemon's files).
pub trait EvidenceArchive: Send {
	/// Keeps `round`'s encoded evidence.
	fn put(&mut self, round: RoundIndex, bytes: Vec<u8>);
	/// `round`'s encoded evidence, if kept.
	fn get(&self, round: RoundIndex) -> Option<Vec<u8>>;
	/// Forgets the rounds before `round`.
	fn forget_before(&mut self, round: RoundIndex);
}

/// An archive in memory (tests). Clones share their rounds, as a restarted trainer shares
/// its files with the one before.
#[derive(Clone, Default)]
pub struct MemoryArchive(Arc<Mutex<BTreeMap<RoundIndex, Vec<u8>>>>);

impl MemoryArchive {
	fn rounds(&self) -> MutexGuard<'_, BTreeMap<RoundIndex, Vec<u8>>> {
		self.0.lock().unwrap_or_else(|e| e.into_inner())
	}
}

impl EvidenceArchive for MemoryArchive {
	fn put(&mut self, round: RoundIndex, bytes: Vec<u8>) {
		self.rounds().insert(round, bytes);
	}
	fn get(&self, round: RoundIndex) -> Option<Vec<u8>> {
		self.rounds().get(&round).cloned()
	}
	fn forget_before(&mut self, round: RoundIndex) {
		self.rounds().retain(|r, _| *r >= round);
	}
}

/// The SCALE form of a round's evidence.
#[derive(Encode, Decode)]
struct Stored {
	round: RoundIndex,
	base: Vec<u8>,
	updates: Vec<StoredUpdate>,
}

#[derive(Encode, Decode)]
struct StoredUpdate {
	peer: Vec<u8>,
	steps: u32,
	start: WorkDigests,
	trajectory: Option<Digest>,
	update: Vec<u8>,
}

/// The SCALE form of a round's evidence in `GEV1`.
#[derive(Encode, Decode)]
struct StoredV1 {
	round: RoundIndex,
	base: Vec<u8>,
	updates: Vec<StoredUpdateV1>,
}

#[derive(Encode, Decode)]
struct StoredUpdateV1 {
	peer: Vec<u8>,
	steps: u32,
	start: WorkDigests,
	update: Vec<u8>,
}

impl From<StoredV1> for Stored {
	fn from(v1: StoredV1) -> Self {
		let updates = v1
			.updates
			.into_iter()
			.map(|u| StoredUpdate {
				peer: u.peer,
				steps: u.steps,
				start: u.start,
				trajectory: None,
				update: u.update,
			})
			.collect();
		Stored { round: v1.round, base: v1.base, updates }
	}
}

/// Writes the SCALE encoding of `Stored { round, base, updates }` piece by piece, the base's
/// values straight from `base`: joining them as bytes and then encoding the whole were two
/// transient copies of the model each round.
fn write_stored(
	w: &mut impl Write,
	round: RoundIndex,
	base: &[f32],
	updates: &[StoredUpdate],
) -> std::io::Result<()> {
	let bytes = le_bytes(base);
	w.write_all(&round.encode())?;
	// A `Vec<u8>`'s length prefix (the same compact bytes whatever the integer's width).
	w.write_all(&codec::Compact(bytes.len() as u64).encode())?;
	w.write_all(&bytes)?;
	w.write_all(&updates.encode())
}

/// Inflates what follows a magic, at most [`MAX_INFLATED`] bytes.
fn inflate(deflated: &[u8]) -> Result<Vec<u8>, EvidenceError> {
	let mut raw = Vec::new();
	flate2::read::DeflateDecoder::new(deflated)
		.take(MAX_INFLATED + 1)
		.read_to_end(&mut raw)
		.map_err(|e| EvidenceError::Inflate(e.to_string()))?;
	if raw.len() as u64 > MAX_INFLATED {
		return Err(EvidenceError::Inflate(format!("over {MAX_INFLATED} bytes")));
	}
	Ok(raw)
}

impl RoundEvidence {
	/// The bytes an archive keeps (see the module docs).
	pub fn encode(&self) -> Vec<u8> {
		let mut updates: Vec<StoredUpdate> = self
			.updates
			.iter()
			.map(|(peer, kept)| StoredUpdate {
				peer: peer.to_bytes(),
				steps: kept.steps,
				start: kept.start,
				trajectory: kept.trajectory,
				update: kept.update.encode(),
			})
			.collect();
		// One round's evidence always encodes to the same bytes.
		updates.sort_by(|a, b| a.peer.cmp(&b.peer));
		let mut deflate =
			flate2::write::DeflateEncoder::new(MAGIC.to_vec(), flate2::Compression::fast());
		write_stored(&mut deflate, self.round, &self.base, &updates)
			.expect("writing to memory cannot fail");
		deflate.finish().expect("writing to memory cannot fail")
	}

	/// Parses what [`RoundEvidence::encode`] wrote (or, before it kept trajectory roots,
	/// wrote as `GEV1`).
	pub fn decode(bytes: &[u8]) -> Result<Self, EvidenceError> {
		let malformed = |e: super::messages::MessageError| EvidenceError::Malformed(e.to_string());
		let stored: Stored = if let Some(deflated) = bytes.strip_prefix(MAGIC) {
			decode_exact(&inflate(deflated)?).map_err(malformed)?
		} else if let Some(deflated) = bytes.strip_prefix(MAGIC_V1) {
			decode_exact::<StoredV1>(&inflate(deflated)?).map_err(malformed)?.into()
		} else {
			return Err(EvidenceError::Magic);
		};
		if !stored.base.len().is_multiple_of(4) {
			return Err(EvidenceError::Malformed("the base is not whole f32 values".into()));
		}
		let base: Vec<f32> = stored
			.base
			.chunks_exact(4)
			.map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
			.collect();
		let mut updates = HashMap::new();
		for u in stored.updates {
			let peer =
				PeerId::from_bytes(&u.peer).map_err(|e| EvidenceError::Peer(e.to_string()))?;
			let bad = |why: String| EvidenceError::Update { peer, why };
			let update = CompressedUpdate::decode(&u.update).map_err(|e| bad(e.to_string()))?;
			if update.len() != base.len() {
				return Err(bad(format!("{} values for a base of {}", update.len(), base.len())));
			}
			let update = Arc::new(update);
			let kept = Kept { steps: u.steps, start: u.start, trajectory: u.trajectory, update };
			if updates.insert(peer, kept).is_some() {
				return Err(bad("listed twice".into()));
			}
		}
		Ok(RoundEvidence { round: stored.round, base: Arc::new(base), updates })
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		compress::{int8::Int8Quantizer, Compressor},
		work_state::WorkState,
	};

	fn evidence() -> RoundEvidence {
		let base: Vec<f32> = (0..300).map(|i| (i as f32 * 0.37).sin()).collect();
		let start = WorkState { step: 40, ..WorkState::fresh(300, true) }.digests();
		let updates = (0..3)
			.map(|i| {
				let delta: Vec<f32> = base.iter().map(|v| v * (i as f32 + 1.0) * 1e-3).collect();
				let update = match i {
					0 => CompressedUpdate::None(delta),
					_ => Int8Quantizer::new(64).unwrap().compress(&delta).unwrap(),
				};
				let trajectory = Some([i as u8; 32]);
				let kept = Kept { steps: 10 + i, start, trajectory, update: Arc::new(update) };
				(PeerId::random(), kept)
			})
			.collect();
		RoundEvidence { round: 7, base: Arc::new(base), updates }
	}

	#[test]
	fn evidence_round_trips_and_encodes_the_same_way_every_time() {
		let e = evidence();
		let bytes = e.encode();
		assert_eq!(bytes, e.encode());
		assert_eq!(RoundEvidence::decode(&bytes), Ok(e));
	}

	/// Written piece by piece, the evidence is the SCALE encoding of `Stored` to the byte.
	#[test]
	fn the_streamed_encoding_is_the_stored_form() {
		let e = evidence();
		let raw = inflate(&e.encode()[MAGIC.len()..]).unwrap();
		let stored = Stored::decode(&mut &raw[..]).unwrap();
		assert_eq!(stored.encode(), raw);
		let base: Vec<u8> = e.base.iter().flat_map(|v| v.to_le_bytes()).collect();
		assert_eq!((stored.round, stored.base), (e.round, base));
		assert_eq!(stored.updates.len(), e.updates.len());
	}

	#[test]
	fn torn_edited_or_foreign_bytes_are_refused_with_the_reason() {
		let e = evidence();
		let bytes = e.encode();
		assert_eq!(RoundEvidence::decode(b"GEV0rest"), Err(EvidenceError::Magic));
		let torn = RoundEvidence::decode(&bytes[..bytes.len() / 2]);
		assert!(matches!(torn, Err(EvidenceError::Inflate(_) | EvidenceError::Malformed(_))));
		let mut flipped = bytes.clone();
		let last = flipped.len() - 1;
		flipped[last] ^= 0xff;
		assert!(RoundEvidence::decode(&flipped).is_err(), "a flipped byte is caught");
		// An update that does not fit the base (another model's) is refused by name.
		let mut other = e.clone();
		let (peer, kept) = other.updates.iter_mut().next().unwrap();
		let peer = *peer;
		kept.update = Arc::new(CompressedUpdate::None(vec![0.5; 5]));
		let refused = RoundEvidence::decode(&other.encode());
		assert!(matches!(refused, Err(EvidenceError::Update { peer: p, .. }) if p == peer));
	}

	#[test]
	fn evidence_kept_before_trajectory_roots_still_decodes_without_them() {
		let e = evidence();
		let updates = e
			.updates
			.iter()
			.map(|(peer, kept)| StoredUpdateV1 {
				peer: peer.to_bytes(),
				steps: kept.steps,
				start: kept.start,
				update: kept.update.encode(),
			})
			.collect();
		let base = e.base.iter().flat_map(|v| v.to_le_bytes()).collect();
		let v1 = StoredV1 { round: e.round, base, updates };
		let mut deflate =
			flate2::write::DeflateEncoder::new(MAGIC_V1.to_vec(), flate2::Compression::fast());
		deflate.write_all(&v1.encode()).unwrap();
		let decoded = RoundEvidence::decode(&deflate.finish().unwrap()).unwrap();
		let mut expected = e.clone();
		expected.updates.values_mut().for_each(|kept| kept.trajectory = None);
		assert_eq!(decoded, expected);
		// Written again, it is GEV2.
		assert!(decoded.encode().starts_with(MAGIC));
	}

	#[test]
	fn the_memory_archive_forgets_only_older_rounds() {
		let mut archive = MemoryArchive::default();
		for round in 0..5 {
			archive.put(round, vec![round as u8]);
		}
		archive.forget_before(3);
		assert_eq!(archive.get(2), None);
		assert_eq!(archive.get(3), Some(vec![3]));
		assert_eq!(archive.get(4), Some(vec![4]));
	}
}
