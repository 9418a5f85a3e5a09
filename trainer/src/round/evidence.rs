//! What a round leaves for fraud checks: its base model and the updates that went into its
//! aggregate, as sent, with their senders' claimed steps, committed start digests and
//! trajectory roots. The
//! fraud desk holds the last rounds in memory and hands every round, encoded, to an
//! [`EvidenceArchive`] that keeps it for the job's whole challenge window (the daemon's
//! files), so a committee member can judge an update from any round that can still be
//! challenged, after a restart too.
//!
//! A round is kept in two parts ([`Archived`]): its base's values as they are, and the
//! magic `GEV3`, then deflate of the SCALE encoding of the round, the base's length and
//! [`values_digest`], and each update (sender's peer id, steps, start digests, trajectory
//! root, the update's canonical bytes). The base apart is the model a sender's first kept
//! state of the round holds too, so the daemon keeps it on disk once for both (deflated
//! into the evidence it was a second copy, and deflating 1.4 GB took the round loop
//! seconds a round at 353M parameters). Decoding checks every part: a file torn by a crash
//! or edited, or a base that is not the one listed, is refused, never half-read. `GEV2`
//! (the base deflated inside) and `GEV1` (written before trajectory roots were kept: its
//! updates' roots unknown, so a committee judges them by full replays) still decode, so a
//! trainer upgraded mid-job keeps the evidence of the rounds before and can vote on them (a
//! drawn member that does not vote is slashed as absent).

use std::{
	collections::{BTreeMap, HashMap},
	io::Read,
	sync::{Arc, Mutex, MutexGuard},
};

use codec::{Decode, Encode};
use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::messages::{decode_exact, Digest};
use crate::{
	compress::CompressedUpdate,
	work_state::{values_digest, WorkDigests},
};

/// First bytes of an encoded round's evidence.
const MAGIC: &[u8; 4] = b"GEV3";
/// First bytes of evidence written with its base deflated inside.
const MAGIC_V2: &[u8; 4] = b"GEV2";
/// First bytes of evidence written before trajectory roots were kept.
const MAGIC_V1: &[u8; 4] = b"GEV1";
/// Most bytes an encoded round may inflate to (in `GEV2` and `GEV1`, a 1 GiB base and its
/// updates; `GEV3` holds only the updates), so a hostile or corrupt file cannot exhaust
/// memory.
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

/// A round's evidence as an archive keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Archived {
	/// Its encoding without the base (`GEV3`), or, kept before the base was apart, with it.
	pub meta: Vec<u8>,
	/// The base's values, kept apart (`None` beside a `GEV1` or `GEV2` encoding).
	pub base: Option<Arc<Vec<f32>>>,
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
	/// Its base is missing, or not the one its encoding lists.
	#[error("bad base: {0}")]
	Base(String),
	/// A sender's peer id does not parse.
	#[error("bad peer id: {0}")]
	Peer(String),
	/// An update does not decode, or does not fit the base.
	#[error("bad update from {peer}: {why}")]
	Update { peer: PeerId, why: String },
}

/// Where rounds' evidence is kept for the challenge window (the daemon's files).
pub trait EvidenceArchive: Send {
	/// Keeps `round`'s evidence, whose base's [`values_digest`] is `base_digest`.
	fn put(&mut self, round: RoundIndex, archived: Archived, base_digest: &Digest);
	/// `round`'s evidence, if kept.
	fn get(&self, round: RoundIndex) -> Option<Archived>;
	/// Forgets the rounds before `round`.
	fn forget_before(&mut self, round: RoundIndex);
}

/// An archive in memory (tests). Clones share their rounds, as a restarted trainer shares
/// its files with the one before.
#[derive(Clone, Default)]
pub struct MemoryArchive(Arc<Mutex<BTreeMap<RoundIndex, Archived>>>);

impl MemoryArchive {
	fn rounds(&self) -> MutexGuard<'_, BTreeMap<RoundIndex, Archived>> {
		self.0.lock().unwrap_or_else(|e| e.into_inner())
	}
}

impl EvidenceArchive for MemoryArchive {
	fn put(&mut self, round: RoundIndex, archived: Archived, _: &Digest) {
		self.rounds().insert(round, archived);
	}
	fn get(&self, round: RoundIndex) -> Option<Archived> {
		self.rounds().get(&round).cloned()
	}
	fn forget_before(&mut self, round: RoundIndex) {
		self.rounds().retain(|r, _| *r >= round);
	}
}

/// The SCALE form of a round's evidence, its base apart.
#[derive(Encode, Decode)]
struct Stored {
	round: RoundIndex,
	base_len: u64,
	base_digest: Digest,
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

/// The SCALE form of a round's evidence in `GEV2`.
#[derive(Encode, Decode)]
struct StoredV2 {
	round: RoundIndex,
	base: Vec<u8>,
	updates: Vec<StoredUpdate>,
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

impl From<StoredV1> for StoredV2 {
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
		StoredV2 { round: v1.round, base: v1.base, updates }
	}
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

/// Values from their little-endian bytes (the older formats' base).
fn values_from_le(bytes: &[u8]) -> Result<Vec<f32>, EvidenceError> {
	if !bytes.len().is_multiple_of(4) {
		return Err(EvidenceError::Malformed("the base is not whole f32 values".into()));
	}
	Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

impl RoundEvidence {
	/// The parts an archive keeps (see the module docs), and the base's [`values_digest`].
	pub fn encode(&self) -> (Archived, Digest) {
		let updates = self.stored_updates();
		let base_digest = values_digest(&self.base);
		let stored =
			Stored { round: self.round, base_len: self.base.len() as u64, base_digest, updates };
		let meta = deflated(MAGIC, &stored.encode());
		(Archived { meta, base: Some(self.base.clone()) }, base_digest)
	}

	/// The updates as stored, by sender's peer id: one round's evidence always encodes to
	/// the same bytes.
	fn stored_updates(&self) -> Vec<StoredUpdate> {
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
		updates.sort_by(|a, b| a.peer.cmp(&b.peer));
		updates
	}

	/// Parses what [`RoundEvidence::encode`] made (or, before the base was kept apart, what
	/// was kept as `GEV2` or `GEV1`).
	pub fn decode(archived: &Archived) -> Result<Self, EvidenceError> {
		let malformed = |e: super::messages::MessageError| EvidenceError::Malformed(e.to_string());
		let bytes = &archived.meta;
		let (round, base, updates) = if let Some(deflated) = bytes.strip_prefix(MAGIC) {
			let stored: Stored = decode_exact(&inflate(deflated)?).map_err(malformed)?;
			let base =
				archived.base.clone().ok_or_else(|| EvidenceError::Base("missing".into()))?;
			if base.len() as u64 != stored.base_len {
				let why = format!("{} values where {} are listed", base.len(), stored.base_len);
				return Err(EvidenceError::Base(why));
			}
			if values_digest(&base) != stored.base_digest {
				return Err(EvidenceError::Base("not the base its evidence lists".into()));
			}
			(stored.round, base, stored.updates)
		} else {
			let stored: StoredV2 = if let Some(deflated) = bytes.strip_prefix(MAGIC_V2) {
				decode_exact(&inflate(deflated)?).map_err(malformed)?
			} else if let Some(deflated) = bytes.strip_prefix(MAGIC_V1) {
				decode_exact::<StoredV1>(&inflate(deflated)?).map_err(malformed)?.into()
			} else {
				return Err(EvidenceError::Magic);
			};
			(stored.round, Arc::new(values_from_le(&stored.base)?), stored.updates)
		};
		let mut kept_updates = HashMap::new();
		for u in updates {
			let peer =
				PeerId::from_bytes(&u.peer).map_err(|e| EvidenceError::Peer(e.to_string()))?;
			let bad = |why: String| EvidenceError::Update { peer, why };
			let update = CompressedUpdate::decode(&u.update).map_err(|e| bad(e.to_string()))?;
			if update.len() != base.len() {
				return Err(bad(format!("{} values for a base of {}", update.len(), base.len())));
			}
			let update = Arc::new(update);
			let kept = Kept { steps: u.steps, start: u.start, trajectory: u.trajectory, update };
			if kept_updates.insert(peer, kept).is_some() {
				return Err(bad("listed twice".into()));
			}
		}
		Ok(RoundEvidence { round, base, updates: kept_updates })
	}
}

/// `magic`, then `raw` deflated.
fn deflated(magic: &[u8; 4], raw: &[u8]) -> Vec<u8> {
	use std::io::Write;
	let mut deflate =
		flate2::write::DeflateEncoder::new(magic.to_vec(), flate2::Compression::fast());
	deflate.write_all(raw).expect("writing to memory cannot fail");
	deflate.finish().expect("writing to memory cannot fail")
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
		let (archived, digest) = e.encode();
		assert_eq!(e.encode(), (archived.clone(), digest));
		assert_eq!(digest, values_digest(&e.base));
		assert!(Arc::ptr_eq(archived.base.as_ref().unwrap(), &e.base), "the base is not copied");
		assert_eq!(RoundEvidence::decode(&archived), Ok(e));
	}

	#[test]
	fn torn_edited_or_foreign_bytes_are_refused_with_the_reason() {
		let e = evidence();
		let (archived, _) = e.encode();
		let with = |meta: &[u8]| Archived { meta: meta.to_vec(), base: archived.base.clone() };
		assert_eq!(RoundEvidence::decode(&with(b"GEV0rest")), Err(EvidenceError::Magic));
		let bytes = &archived.meta;
		let torn = RoundEvidence::decode(&with(&bytes[..bytes.len() / 2]));
		assert!(matches!(torn, Err(EvidenceError::Inflate(_) | EvidenceError::Malformed(_))));
		let mut flipped = bytes.clone();
		let last = flipped.len() - 1;
		flipped[last] ^= 0xff;
		assert!(RoundEvidence::decode(&with(&flipped)).is_err(), "a flipped byte is caught");
		// A base missing, cut short, or altered in one value.
		let refused = |base: Option<Vec<f32>>| {
			let archived = Archived { meta: bytes.clone(), base: base.map(Arc::new) };
			RoundEvidence::decode(&archived).unwrap_err()
		};
		assert_eq!(refused(None), EvidenceError::Base("missing".into()));
		let short = e.base[1..].to_vec();
		assert!(matches!(refused(Some(short)), EvidenceError::Base(why) if why.contains("299")));
		let mut altered = e.base.to_vec();
		altered[17] += 1e-6;
		assert!(matches!(refused(Some(altered)), EvidenceError::Base(why) if why.contains("not")));
		// An update that does not fit the base (another model's) is refused by name.
		let mut other = e.clone();
		let (peer, kept) = other.updates.iter_mut().next().unwrap();
		let peer = *peer;
		kept.update = Arc::new(CompressedUpdate::None(vec![0.5; 5]));
		let refused = RoundEvidence::decode(&other.encode().0);
		assert!(matches!(refused, Err(EvidenceError::Update { peer: p, .. }) if p == peer));
	}

	#[test]
	fn evidence_kept_with_its_base_inside_still_decodes() {
		let e = evidence();
		let base: Vec<u8> = e.base.iter().flat_map(|v| v.to_le_bytes()).collect();
		let v2 = StoredV2 { round: e.round, base: base.clone(), updates: e.stored_updates() };
		let archived = Archived { meta: deflated(MAGIC_V2, &v2.encode()), base: None };
		assert_eq!(RoundEvidence::decode(&archived), Ok(e.clone()));
		let ragged = StoredV2 { base: base[1..].to_vec(), ..v2 };
		let archived = Archived { meta: deflated(MAGIC_V2, &ragged.encode()), base: None };
		assert!(matches!(RoundEvidence::decode(&archived), Err(EvidenceError::Malformed(_))));
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
		let archived = Archived { meta: deflated(MAGIC_V1, &v1.encode()), base: None };
		let decoded = RoundEvidence::decode(&archived).unwrap();
		let mut expected = e.clone();
		expected.updates.values_mut().for_each(|kept| kept.trajectory = None);
		assert_eq!(decoded, expected);
		// Written again, it is GEV3, its base apart.
		let (again, _) = decoded.encode();
		assert!(again.meta.starts_with(MAGIC) && again.base.is_some());
	}

	#[test]
	fn the_memory_archive_forgets_only_older_rounds() {
		let mut archive = MemoryArchive::default();
		let kept = |round: RoundIndex| Archived { meta: vec![round as u8], base: None };
		for round in 0..5 {
			archive.put(round, kept(round), &[0; 32]);
		}
		archive.forget_before(3);
		assert_eq!(archive.get(2), None);
		assert_eq!(archive.get(3), Some(kept(3)));
		assert_eq!(archive.get(4), Some(kept(4)));
	}
}
