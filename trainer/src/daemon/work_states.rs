//! This trainer's committed start states on disk (`<data dir>/work-states/`), one file per
//! round: `round-<round>-<id>.gws`, the encoded [`WorkState`] whose digests its commitment
//! of that round carries. A verifier may ask for any of them while the round can still be
//! challenged, and one the trainer cannot show makes its update invalid, so they outlive a
//! restart: the trainer serves again what it finds here when it starts.

use std::path::{Path, PathBuf};

use grid_primitives::job::RoundIndex;

use crate::{
	checkpoint::write_atomic,
	error::{Error, Result},
	round::messages::Digest,
	work_state::WorkState,
};

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
		let path = self.path(round, id);
		write_atomic(&path, bytes)?;
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
			match WorkState::decode(&bytes, len) {
				Ok(state) if state.digests().id() == id => out.push(Stored { round, id, path }),
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

		let reopened = WorkStates::open(dir.path()).unwrap();
		let loaded = reopened.load(3).unwrap();
		assert_eq!(loaded.iter().map(|s| s.round).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
		let path = store.path(2, &state(20).0);
		assert_eq!(loaded[2], Stored { round: 2, id: state(20).0, path: path.clone() });
		assert_eq!(std::fs::read(&path).unwrap(), state(20).1);
		assert!(reopened.load(4).unwrap().is_empty(), "states of another model are skipped");
		reopened.prune(2).unwrap();
		let rounds: Vec<_> = reopened.load(3).unwrap().iter().map(|s| s.round).collect();
		assert_eq!(rounds, vec![2, 3]);
	}
}
