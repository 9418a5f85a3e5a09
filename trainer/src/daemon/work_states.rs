//! What this trainer's commitments promise to show, on disk (`<data dir>/work-states/`): the
//! encoded [`WorkState`] whose digests its commitment of a round carries, and the round's
//! [`Trajectory`] and its [`StepState`]s (under their root and digests). A verifier may ask
//! for any of them while the round can still be challenged, and one the trainer cannot show
//! makes its update invalid (a start state at once; a trajectory or its end once a full
//! replay, which is held to that end, needs it), so they outlive a restart: the trainer
//! serves again what it finds here when it starts.
//!
//! A state with AdamW's moments is kept in parts ([`Split`]), because its moments are
//! mostly another kept state's too: a round's first recorded state has its start state's
//! moments, and a round's start state has (in a blocking job) the moments its trainer's last
//! round ended with. Each is `round-<round>-<id>.gsp`, a splice of its header, a moments
//! file `moments-<BLAKE3 of m and v>.bin` (written once, kept while a state of the window
//! lists it) and its values `round-<round>-<id>.values` (the residual or the parameters), and
//! it is served by reading those runs ([`Spliced`]): 20 bytes a parameter a round (start,
//! first and last states) where whole files took 36. The first state's values are the
//! round's base, which the fraud desk keeps as the round's evidence too: that file is shared
//! with the evidence's through [`SharedValues`] (hard links), so it is on disk once. Anything else (a trajectory, a state of
//! an optimizer without moments) is one file, `round-<round>-<id>.gws`, its encoding.

use std::{
	collections::HashSet,
	io::Write,
	path::{Path, PathBuf},
};

use grid_primitives::job::RoundIndex;

use crate::{
	checkpoint::{write_atomic, write_atomic_with},
	daemon::shared_values::{self, SharedValues},
	error::{Error, Result},
	net::{Run, Spliced, StoredBytes},
	params::le_bytes,
	round::messages::Digest,
	trajectory::{StepState, Trajectory},
	work_state::{bulk_hasher, hash_values, values_digest, Moments, WorkState, HEADER_BYTES},
};

/// The content address of a stored object of a model of `len` values: a start state's id,
/// a step state's digest or a trajectory's root, by its magic; or why it is none of them.
fn content_id(bytes: &[u8], len: usize) -> Result<Digest> {
	match bytes.get(..4) {
		Some(b"GSS1") => Ok(StepState::decode(bytes, len)?.digest()),
		Some(b"GTR1") => Ok(Trajectory::decode(bytes, u32::MAX)?.root()),
		_ => Ok(WorkState::decode(bytes, len)?.digests().id()),
	}
}

/// A kept state in the parts format by its parts: its encoding is `header`, then the
/// moments' `m` and `v`, then `values`.
pub struct Split<'a> {
	/// Magic, step, moments flag, value count.
	pub header: [u8; HEADER_BYTES],
	/// AdamW's moments.
	pub moments: &'a Moments,
	/// The residual (a work state) or the parameters (a step state).
	pub values: &'a [f32],
	/// Whether the values are the round's base, which the fraud desk keeps as the round's
	/// evidence too: then they are on disk once ([`SharedValues`]).
	pub base: bool,
}

/// What a moments file is named by: BLAKE3 of the moments' bytes.
pub type MomentsKey = [u8; 32];

/// The key of `moments` (the name of the file that holds them).
pub fn moments_key(moments: &Moments) -> MomentsKey {
	let mut h = bulk_hasher(MOMENTS_DOMAIN);
	hash_values(&mut h, &moments.m);
	hash_values(&mut h, &moments.v);
	h.finalize().into()
}

const MOMENTS_DOMAIN: &str = "grid/kept-moments/v1";
const SPLICE_MAGIC: &[u8; 4] = b"GSP1";
/// More runs than any kept state has (three): a longer list is not one of ours.
const MAX_RUNS: u32 = 8;

/// A trainer's store of its own committed start states.
pub struct WorkStates {
	dir: PathBuf,
	shared: SharedValues,
}

/// One stored state.
#[derive(Clone, Debug)]
pub struct Stored {
	/// The round it is the start state of.
	pub round: RoundIndex,
	/// Its id (what verifiers ask for).
	pub id: Digest,
	/// Where its bytes are (served from there, a piece at a time).
	pub bytes: StoredBytes,
}

/// What a file of the store is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
	/// An object's encoding.
	Whole,
	/// An object's splice.
	Splice,
	/// An object's values (read through its splice).
	Values,
}

impl Kind {
	const ALL: [Kind; 3] = [Kind::Whole, Kind::Splice, Kind::Values];

	fn extension(self) -> &'static str {
		match self {
			Kind::Whole => "gws",
			Kind::Splice => "gsp",
			Kind::Values => "values",
		}
	}
}

impl WorkStates {
	/// The store under `data_dir` (created if missing).
	pub fn open(data_dir: &Path) -> Result<Self> {
		let dir = data_dir.join("work-states");
		std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
		Ok(WorkStates { dir, shared: SharedValues::open(data_dir)? })
	}

	fn path(&self, round: RoundIndex, id: &Digest, kind: Kind) -> PathBuf {
		self.dir.join(format!("round-{round}-{}.{}", hex::encode(id), kind.extension()))
	}

	fn moments_name(key: &MomentsKey) -> String {
		format!("moments-{}.bin", hex::encode(key))
	}

	/// Keeps the encoded state `bytes` with id `id`, committed for `round`; returns its file.
	#[cfg(test)]
	pub fn save(&self, round: RoundIndex, id: &Digest, bytes: &[u8]) -> Result<PathBuf> {
		self.save_with(round, id, |f| f.write_all(bytes))
	}

	/// [`WorkStates::save`] of the encoding `write` streams into the file.
	pub fn save_with(
		&self,
		round: RoundIndex,
		id: &Digest,
		write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
	) -> Result<PathBuf> {
		let path = self.path(round, id, Kind::Whole);
		write_atomic_with(&path, write)?;
		Ok(path)
	}

	/// Keeps the state `split` with id `id`, committed for `round`, in parts: its moments
	/// (under `key`, their [`moments_key`]) only if no kept state holds them already, its
	/// values, and last its splice (a crash before leaves no splice to files not written).
	/// Returns what serves its encoding and how many bytes it wrote.
	pub fn save_split(
		&self,
		round: RoundIndex,
		id: &Digest,
		split: &Split,
		key: &MomentsKey,
	) -> Result<(Spliced, u64)> {
		let n = split.values.len() as u64;
		let mut written = 0;
		let moments = self.dir.join(Self::moments_name(key));
		if !moments.exists() {
			write_atomic_with(&moments, |f| {
				f.write_all(&le_bytes(&split.moments.m))?;
				f.write_all(&le_bytes(&split.moments.v))
			})?;
			written += 8 * n;
		}
		let values = self.path(round, id, Kind::Values);
		let kept = if split.base {
			self.shared.keep(&values, split.values, &values_digest(split.values))?
		} else {
			write_atomic_with(&values, |f| f.write_all(&le_bytes(split.values)))?;
			shared_values::Kept::Written
		};
		if kept == shared_values::Kept::Written {
			written += 4 * n;
		}
		let file = |path: PathBuf, values: u64| Run::File { path, offset: 0, len: 4 * values };
		let spliced = Spliced::new(vec![
			Run::Bytes(split.header.to_vec()),
			file(moments, 2 * n),
			file(values, n),
		]);
		let splice = self.encode_splice(&spliced)?;
		write_atomic(&self.path(round, id, Kind::Splice), &splice)?;
		Ok((spliced, written + splice.len() as u64))
	}

	/// A splice as its file holds it: magic, run count (u32), then each run, bytes (tag 0,
	/// length u32, the bytes) or a run of a file of this store (tag 1, name length u16, the
	/// name, offset u64, length u64).
	fn encode_splice(&self, spliced: &Spliced) -> Result<Vec<u8>> {
		let mut out = SPLICE_MAGIC.to_vec();
		out.extend_from_slice(&(spliced.runs().len() as u32).to_le_bytes());
		for run in spliced.runs() {
			match run {
				Run::Bytes(bytes) => {
					out.push(0);
					out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
					out.extend_from_slice(bytes);
				}
				Run::File { path, offset, len } => {
					let name = path
						.strip_prefix(&self.dir)
						.ok()
						.and_then(|n| n.to_str())
						.ok_or_else(|| Error::io("splicing", path, not_ours()))?;
					out.push(1);
					out.extend_from_slice(&(name.len() as u16).to_le_bytes());
					out.extend_from_slice(name.as_bytes());
					out.extend_from_slice(&offset.to_le_bytes());
					out.extend_from_slice(&len.to_le_bytes());
				}
			}
		}
		Ok(out)
	}

	/// The splice a file holds, its runs' files in this store, or why it is none.
	fn decode_splice(&self, bytes: &[u8]) -> std::result::Result<Spliced, String> {
		let mut at = Cursor(bytes.strip_prefix(SPLICE_MAGIC).ok_or("not a splice (bad magic)")?);
		let count = at.u32()?;
		if count > MAX_RUNS {
			return Err(format!("a splice of {count} runs (at most {MAX_RUNS})"));
		}
		let mut runs = Vec::new();
		for _ in 0..count {
			let run = match at.take(1)?[0] {
				0 => {
					let len = at.u32()? as usize;
					Run::Bytes(at.take(len)?.to_vec())
				}
				1 => {
					let len = u16::from_le_bytes(at.array()?) as usize;
					let name = std::str::from_utf8(at.take(len)?)
						.map_err(|_| "a run's file name is not UTF-8")?;
					if name.is_empty() || name.contains('/') || name.starts_with('.') {
						return Err(format!("a run of {name:?}, not a file of this store"));
					}
					let path = self.dir.join(name);
					let offset = u64::from_le_bytes(at.array()?);
					Run::File { path, offset, len: u64::from_le_bytes(at.array()?) }
				}
				tag => return Err(format!("a run of unknown kind {tag}")),
			};
			runs.push(run);
		}
		if !at.0.is_empty() {
			return Err(format!("{} bytes after the splice's runs", at.0.len()));
		}
		Ok(Spliced::new(runs))
	}

	/// The round, id and kind a file name stands for (`None`: not one of those).
	fn parse(name: &str) -> Option<(RoundIndex, Digest, Kind)> {
		let rest = name.strip_prefix("round-")?;
		let (rest, kind) = Kind::ALL.into_iter().find_map(|kind| {
			let rest = rest.strip_suffix(kind.extension())?.strip_suffix('.')?;
			Some((rest, kind))
		})?;
		let (round, id) = rest.split_once('-')?;
		let id: Digest = hex::decode(id).ok()?.try_into().ok()?;
		Some((round.parse().ok()?, id, kind))
	}

	fn names(&self) -> Result<Vec<(String, PathBuf)>> {
		let read = std::fs::read_dir(&self.dir).map_err(|e| Error::io("listing", &self.dir, e))?;
		let mut out = Vec::new();
		for entry in read {
			let entry = entry.map_err(|e| Error::io("listing", &self.dir, e))?;
			if let Ok(name) = entry.file_name().into_string() {
				out.push((name, entry.path()));
			}
		}
		Ok(out)
	}

	fn entries(&self) -> Result<Vec<(RoundIndex, Digest, Kind, PathBuf)>> {
		let mut out: Vec<_> = self
			.names()?
			.into_iter()
			.filter_map(|(name, path)| {
				let (round, id, kind) = Self::parse(&name)?;
				Some((round, id, kind, path))
			})
			.collect();
		out.sort_by_key(|(round, ..)| *round);
		Ok(out)
	}

	/// Deletes the states of rounds before `before`, and the moments no state left lists.
	pub fn prune(&self, before: RoundIndex) -> Result<()> {
		let mut listed = HashSet::new();
		for (round, _, kind, path) in self.entries()? {
			if round < before {
				std::fs::remove_file(&path).map_err(|e| Error::io("removing", &path, e))?;
			} else if kind == Kind::Splice {
				// One that cannot be read lists nothing: `load` skips it too.
				if let Ok(spliced) = self.read_splice(&path) {
					listed.extend(spliced.runs().iter().filter_map(|run| match run {
						Run::File { path, .. } => Some(path.clone()),
						Run::Bytes(_) => None,
					}));
				}
			}
		}
		for (name, path) in self.names()? {
			if name.starts_with("moments-") && !listed.contains(&path) {
				std::fs::remove_file(&path).map_err(|e| Error::io("removing", &path, e))?;
			}
		}
		self.shared.prune()
	}

	fn read_splice(&self, path: &Path) -> Result<Spliced> {
		let bytes = std::fs::read(path).map_err(|e| Error::io("reading", path, e))?;
		self.decode_splice(&bytes)
			.map_err(|why| Error::io("reading", path, std::io::Error::other(why)))
	}

	/// The bytes an object's file stands for, and what serves them.
	fn read_object(&self, path: &Path, kind: Kind) -> Result<(Vec<u8>, StoredBytes)> {
		let unreadable = |e| Error::io("reading", path, e);
		if kind == Kind::Whole {
			let bytes = std::fs::read(path).map_err(unreadable)?;
			return Ok((bytes, StoredBytes::File(path.to_owned())));
		}
		let spliced = self.read_splice(path)?;
		let bytes = spliced.read(0..spliced.len()).map_err(unreadable)?;
		Ok((bytes, StoredBytes::Spliced(std::sync::Arc::new(spliced))))
	}

	/// Every stored state of a model of `len` values whose content matches its id, oldest
	/// round first (each read once to check it, then left on disk). A file that does not
	/// (torn by a crash, edited, of another model, a splice of a file gone) is left out
	/// with a warning: serving it would only prove the trainer wrong.
	pub fn load(&self, len: usize) -> Result<Vec<Stored>> {
		let mut out = Vec::new();
		for (round, id, kind, path) in self.entries()? {
			if kind == Kind::Values {
				continue;
			}
			let checked = self
				.read_object(&path, kind)
				.and_then(|(bytes, stored)| Ok((content_id(&bytes, len)?, stored)));
			match checked {
				Ok((got, bytes)) if got == id => out.push(Stored { round, id, bytes }),
				Ok(_) => {
					tracing::warn!("{}: content does not match its id; skipped", path.display())
				}
				Err(e) => tracing::warn!("{}: {e}; skipped", path.display()),
			}
		}
		Ok(out)
	}
}

/// Reads a splice's file front to back.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
	fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
		if self.0.len() < n {
			return Err("a splice cut short".into());
		}
		let (head, tail) = self.0.split_at(n);
		self.0 = tail;
		Ok(head)
	}

	fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
		Ok(self.take(N)?.try_into().expect("N bytes taken"))
	}

	fn u32(&mut self) -> std::result::Result<u32, String> {
		Ok(u32::from_le_bytes(self.array()?))
	}
}

fn not_ours() -> std::io::Error {
	std::io::Error::other("a run of a file outside the store")
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		trajectory::{StepView, STEP_STATE},
		work_state::{parts_header, MAGIC},
	};

	fn state(step: u64) -> (Digest, Vec<u8>) {
		let state = WorkState { step, ..WorkState::fresh(3, false) };
		(state.digests().id(), state.encode())
	}

	/// The bytes `stored` serves.
	fn served(stored: &StoredBytes) -> Vec<u8> {
		let (total, _) = stored.piece(0).unwrap();
		stored.range(total, 0..total).unwrap()
	}

	#[test]
	fn states_survive_a_reopen_are_pruned_by_round_and_bad_files_are_skipped() {
		let dir = tempfile::tempdir().unwrap();
		let store = WorkStates::open(dir.path()).unwrap();
		for round in 0..4 {
			let (id, bytes) = state(u64::from(round) * 10);
			store.save(round, &id, &bytes).unwrap();
		}
		// A torn file, a file whose content is another state, and a stranger.
		let (id, bytes) = state(99);
		std::fs::write(store.path(7, &id, Kind::Whole), &bytes[..bytes.len() - 2]).unwrap();
		let (other, _) = state(98);
		std::fs::write(store.path(8, &other, Kind::Whole), &bytes).unwrap();
		std::fs::write(dir.path().join("work-states/notes.txt"), b"hi").unwrap();

		// A round's trajectory and a step state of it are kept alike.
		let step = StepState { params: vec![1.0; 3], step: 5, moments: None };
		let trajectory = Trajectory::of(&[(0, step.clone())]);
		store.save(3, &step.digest(), &step.encode()).unwrap();
		store.save(3, &trajectory.root(), &trajectory.encode()).unwrap();
		// A step state filed under another's digest is skipped like a work state.
		let other = StepState { step: 6, ..step.clone() };
		std::fs::write(store.path(9, &other.digest(), Kind::Whole), step.encode()).unwrap();

		let reopened = WorkStates::open(dir.path()).unwrap();
		let loaded = reopened.load(3).unwrap();
		assert_eq!(loaded.iter().map(|s| s.round).collect::<Vec<_>>(), vec![0, 1, 2, 3, 3, 3]);
		let ids: Vec<Digest> = loaded.iter().map(|s| s.id).collect();
		assert!(ids.contains(&step.digest()) && ids.contains(&trajectory.root()));
		assert_eq!((loaded[2].round, loaded[2].id), (2, state(20).0));
		assert_eq!(served(&loaded[2].bytes), state(20).1);
		// States of another model are skipped (a trajectory is of no size).
		let of_four: Vec<Digest> = reopened.load(4).unwrap().iter().map(|s| s.id).collect();
		assert_eq!(of_four, vec![trajectory.root()]);
		reopened.prune(2).unwrap();
		let rounds: Vec<_> = reopened.load(3).unwrap().iter().map(|s| s.round).collect();
		assert_eq!(rounds, vec![2, 3, 3, 3]);
	}

	fn moments(n: usize, seed: f32) -> Moments {
		Moments { m: vec![seed; n], v: (0..n).map(|i| i as f32 * seed).collect() }
	}

	/// A round of a blocking job as its trainer keeps it: the start state, the first
	/// recorded state (the base with the start's moments) and the last (new moments).
	struct Round {
		start: WorkState,
		base: Vec<f32>,
		last: StepState,
	}

	impl Round {
		fn new(n: usize, start_moments: Moments, end: f32) -> Self {
			let residual = (0..n).map(|i| end - i as f32).collect();
			let start = WorkState { step: 10, moments: Some(start_moments), residual };
			let last_moments = Some(moments(n, end));
			let last = StepState { params: vec![end; n], step: 20, moments: last_moments };
			Round { start, base: vec![end / 2.0; n], last }
		}

		/// Each object's id, encoding and parts.
		fn objects(&self) -> Vec<(Digest, Vec<u8>, Split<'_>)> {
			let n = self.base.len();
			let first = StepView::at_start(&self.base, &self.start);
			vec![
				(
					self.start.digests().id(),
					self.start.encode(),
					Split {
						header: parts_header(MAGIC, self.start.step, true, n),
						moments: self.start.moments.as_ref().unwrap(),
						values: &self.start.residual,
						base: false,
					},
				),
				(
					first.digest(),
					first.encode(),
					Split {
						header: parts_header(STEP_STATE.magic, self.start.step, true, n),
						moments: self.start.moments.as_ref().unwrap(),
						values: &self.base,
						base: true,
					},
				),
				(
					self.last.digest(),
					self.last.encode(),
					Split {
						header: parts_header(STEP_STATE.magic, self.last.step, true, n),
						moments: self.last.moments.as_ref().unwrap(),
						values: &self.last.params,
						base: false,
					},
				),
			]
		}
	}

	fn keep(store: &WorkStates, round: RoundIndex, kept: &Round) -> Vec<(Digest, Spliced)> {
		kept.objects()
			.into_iter()
			.map(|(id, bytes, split)| {
				let key = moments_key(split.moments);
				let (spliced, _) = store.save_split(round, &id, &split, &key).unwrap();
				assert_eq!(spliced.read(0..spliced.len()).unwrap(), bytes, "its encoding");
				(id, spliced)
			})
			.collect()
	}

	fn moments_files(dir: &Path) -> usize {
		let names = std::fs::read_dir(dir.join("work-states")).unwrap();
		names
			.filter(|e| e.as_ref().unwrap().file_name().to_str().unwrap().starts_with("moments-"))
			.count()
	}

	#[test]
	fn moments_kept_states_share_are_stored_once_served_whole_and_outlive_their_round() {
		let n = 1000;
		let dir = tempfile::tempdir().unwrap();
		let store = WorkStates::open(dir.path()).unwrap();
		// Round 1 starts with the moments round 0 ended with.
		let round0 = Round::new(n, moments(n, 1.0), 2.0);
		let round1 = Round::new(n, round0.last.moments.clone().unwrap(), 3.0);
		keep(&store, 0, &round0);
		keep(&store, 1, &round1);
		assert_eq!(moments_files(dir.path()), 3, "six states of three distinct moments");
		let (mut data, mut splices) = (0, 0);
		for entry in std::fs::read_dir(dir.path().join("work-states")).unwrap() {
			let entry = entry.unwrap();
			let len = entry.metadata().unwrap().len();
			match entry.file_name().to_str().unwrap().ends_with(".gsp") {
				true => splices += len,
				false => data += len,
			}
		}
		let whole: u64 =
			[&round0, &round1].iter().flat_map(|r| r.objects()).map(|o| o.1.len() as u64).sum();
		// Whole files: 2 rounds × 3 states × 12 bytes a parameter; split: 3 moments files
		// of 8 and 6 values files of 4 (28 bytes a parameter in the first round, 20 after),
		// and six splices of a few hundred bytes.
		assert_eq!(whole, 2 * 3 * (12 * n as u64 + HEADER_BYTES as u64));
		assert_eq!(data, (3 * 8 + 6 * 4) * n as u64);
		assert!(splices < 6 * 400, "{splices} bytes of splices");

		// A restart serves each from its splice, checked.
		let loaded = WorkStates::open(dir.path()).unwrap().load(n).unwrap();
		assert_eq!(loaded.len(), 6);
		for (round, kept) in [(0, &round0), (1, &round1)] {
			for (id, bytes, _) in kept.objects() {
				let stored = loaded.iter().find(|s| s.id == id).expect("loaded");
				assert_eq!(stored.round, round);
				assert!(matches!(stored.bytes, StoredBytes::Spliced(_)));
				assert_eq!(served(&stored.bytes), bytes);
			}
		}
		// Round 0 forgotten: its start's moments go, its last state's stay with round 1's
		// start, which still serves whole.
		store.prune(1).unwrap();
		assert_eq!(moments_files(dir.path()), 2);
		let loaded = store.load(n).unwrap();
		assert_eq!(loaded.iter().map(|s| s.round).collect::<Vec<_>>(), [1, 1, 1]);
		for (id, bytes, _) in round1.objects() {
			let stored = loaded.iter().find(|s| s.id == id).unwrap();
			assert_eq!(served(&stored.bytes), bytes);
		}
	}

	#[test]
	fn a_splice_whose_parts_are_gone_or_altered_or_that_reaches_outside_is_skipped() {
		let n = 100;
		let dir = tempfile::tempdir().unwrap();
		let store = WorkStates::open(dir.path()).unwrap();
		let round = Round::new(n, moments(n, 1.0), 2.0);
		let kept = keep(&store, 0, &round);
		let [(start, _), (first, _), (last, _)] = &kept[..] else { panic!() };
		// The last state's values altered; the first state's values gone.
		let values = store.path(0, last, Kind::Values);
		let mut bytes = std::fs::read(&values).unwrap();
		bytes[0] ^= 1;
		std::fs::write(&values, bytes).unwrap();
		std::fs::remove_file(store.path(0, first, Kind::Values)).unwrap();
		// A splice naming a file outside the store, filed under a fresh id.
		let outside =
			Spliced::new(vec![Run::File { path: "/etc/passwd".into(), offset: 0, len: 4 }]);
		assert!(store.encode_splice(&outside).is_err(), "no splice of a file not ours is written");
		let mut bad = SPLICE_MAGIC.to_vec();
		bad.extend_from_slice(&1u32.to_le_bytes());
		bad.push(1);
		bad.extend_from_slice(&(b"../x".len() as u16).to_le_bytes());
		bad.extend_from_slice(b"../x");
		bad.extend_from_slice(&[0; 16]);
		std::fs::write(store.path(0, &[7; 32], Kind::Splice), &bad).unwrap();
		let why = store.decode_splice(&bad).unwrap_err();
		assert!(why.contains("not a file of this store"), "{why}");
		let why = store.decode_splice(&bad[..6]).unwrap_err();
		assert!(why.contains("cut short"), "{why}");

		let loaded = store.load(n).unwrap();
		assert_eq!(loaded.iter().map(|s| s.id).collect::<Vec<_>>(), [*start]);
	}
}
