//! What this trainer's commitments promise to show, on disk (`<data dir>/work-states/`), one
//! file per object: `round-<round>-<id>.gws`, the encoded [`WorkState`] whose digests its
//! commitment of that round carries, and the round's [`Trajectory`] and its [`StepState`]s
//! (under their root and digests). A verifier may ask for any of them while the round can
//! still be challenged, and one the trainer cannot show makes its update a suspect (a start
//! state: invalid), so they outlive a restart: the trainer serves again what it finds here
//! when it starts.

use std::{
	io::Write,
	path::{Path, PathBuf},
};

use grid_primitives::job::RoundIndex;

use crate::{
	checkpoint::write_atomic_with,
	error::{Error, Result},
	round::messages::Digest,
	trajectory::{StepState, Trajectory},
	work_state::WorkState,
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

/// A trainer's store of its own committed start states.
pub struct WorkStates {
	dir: PathBuf,
}

/// One stored state.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
	/// The round it is the start state of.
	pub round: RoundIndex,
	/// Its id (what verifiers ask for).
	pub id: Digest,
	/// Its file (served from there, a piece at a time).
	pub path: PathBuf,
}

impl WorkStates {
	/// The store under `data_dir` (created if missing).
	pub fn open(data_dir: &Path) -> Result<Self> {
		let dir = data_dir.join("work-states");
		std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
		Ok(WorkStates { dir })
	}

	fn path(&self, round: RoundIndex, id: &Digest) -> PathBuf {
		self.dir.join(format!("round-{round}-{}.gws", hex::encode(id)))
	}

	/// Keeps the encoded state `bytes` with id `id`, committed for `round`; returns its file.
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
		let path = self.path(round, id);
		write_atomic_with(&path, write)?;
		Ok(path)
	}

	/// The round and id a file name stands for (`None`: not one of ours).
	fn parse(name: &str) -> Option<(RoundIndex, Digest)> {
		let rest = name.strip_prefix("round-")?.strip_suffix(".gws")?;
		let (round, id) = rest.split_once('-')?;
		let id: Digest = hex::decode(id).ok()?.try_into().ok()?;
		Some((round.parse().ok()?, id))
	}

	fn entries(&self) -> Result<Vec<(RoundIndex, Digest, PathBuf)>> {
		let read = std::fs::read_dir(&self.dir).map_err(|e| Error::io("listing", &self.dir, e))?;
		let mut out = Vec::new();
		for entry in read {
			let entry = entry.map_err(|e| Error::io("listing", &self.dir, e))?;
			let name = entry.file_name();
			if let Some((round, id)) = name.to_str().and_then(Self::parse) {
				out.push((round, id, entry.path()));
			}
		}
		out.sort_by_key(|(round, _, _)| *round);
		Ok(out)
	}

	/// Deletes the states of rounds before `before`.
	pub fn prune(&self, before: RoundIndex) -> Result<()> {
		for (round, _, path) in self.entries()? {
			if round < before {
				std::fs::remove_file(&path).map_err(|e| Error::io("removing", &path, e))?;
			}
		}
		Ok(())
	}

	/// Every stored state of a model of `len` values whose content matches its id, oldest
	/// round first (each read once to check it, then left on disk). A file that does not
	/// (torn by a crash, edited, of another model) is left out with a warning: serving it
	/// would only prove the trainer wrong.
	pub fn load(&self, len: usize) -> Result<Vec<Stored>> {
		let mut out = Vec::new();
		for (round, id, path) in self.entries()? {
			let bytes = std::fs::read(&path).map_err(|e| Error::io("reading", &path, e))?;
			match content_id(&bytes, len) {
				Ok(got) if got == id => out.push(Stored { round, id, path }),
				Ok(_) => {
					tracing::warn!("{}: content does not match its id; skipped", path.display())
				}
				Err(e) => tracing::warn!("{}: {e}; skipped", path.display()),
			}
		}
		Ok(out)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn state(step: u64) -> (Digest, Vec<u8>) {
		let state = WorkState { step, ..WorkState::fresh(3, true) };
		(state.digests().id(), state.encode())
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
		std::fs::write(store.path(7, &id), &bytes[..bytes.len() - 2]).unwrap();
		let (other, _) = state(98);
		std::fs::write(store.path(8, &other), &bytes).unwrap();
		std::fs::write(dir.path().join("work-states/notes.txt"), b"hi").unwrap();

		// A round's trajectory and a step state of it are kept alike.
		let step = StepState { params: vec![1.0; 3], step: 5, moments: None };
		let trajectory = Trajectory::of(&[(0, step.clone())]);
		store.save(3, &step.digest(), &step.encode()).unwrap();
		store.save(3, &trajectory.root(), &trajectory.encode()).unwrap();
		// A step state filed under another's digest is skipped like a work state.
		let other = StepState { step: 6, ..step.clone() };
		std::fs::write(store.path(9, &other.digest()), step.encode()).unwrap();

		let reopened = WorkStates::open(dir.path()).unwrap();
		let loaded = reopened.load(3).unwrap();
		assert_eq!(loaded.iter().map(|s| s.round).collect::<Vec<_>>(), vec![0, 1, 2, 3, 3, 3]);
		let ids: Vec<Digest> = loaded.iter().map(|s| s.id).collect();
		assert!(ids.contains(&step.digest()) && ids.contains(&trajectory.root()));
		let path = store.path(2, &state(20).0);
		assert_eq!(loaded[2], Stored { round: 2, id: state(20).0, path: path.clone() });
		assert_eq!(std::fs::read(&path).unwrap(), state(20).1);
		// States of another model are skipped (a trajectory is of no size).
		let of_four: Vec<Digest> = reopened.load(4).unwrap().iter().map(|s| s.id).collect();
		assert_eq!(of_four, vec![trajectory.root()]);
		reopened.prune(2).unwrap();
		let rounds: Vec<_> = reopened.load(3).unwrap().iter().map(|s| s.round).collect();
		assert_eq!(rounds, vec![2, 3, 3, 3]);
	}
}
