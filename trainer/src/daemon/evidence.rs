//! The fraud desk's evidence archive on disk (`<data dir>/round-evidence/round-<round>.gev`, one
//! encoded [`crate::round::evidence::RoundEvidence`] per round), so a restarted trainer can
//! still judge every round of the challenge window. The desk decides what to keep and for how
//! long; a file that cannot be written or read is logged and counts as missing (the desk then
//! cannot vote on that round, which costs this trainer at most an absence slash).

use std::path::{Path, PathBuf};

use grid_primitives::job::RoundIndex;

use crate::{
	checkpoint::write_atomic,
	error::{Error, Result},
	round::evidence::EvidenceArchive,
};

/// Rounds' evidence as files.
pub struct EvidenceFiles {
	dir: PathBuf,
}

impl EvidenceFiles {
	/// The archive under `data_dir` (created if missing).
	pub fn open(data_dir: &Path) -> Result<Self> {
		let dir = data_dir.join("round-evidence");
		std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
		Ok(EvidenceFiles { dir })
	}

	fn path(&self, round: RoundIndex) -> PathBuf {
		self.dir.join(format!("round-{round}.gev"))
	}

	/// The rounds with a file, with their paths.
	fn rounds(&self) -> Result<Vec<(RoundIndex, PathBuf)>> {
		let read = std::fs::read_dir(&self.dir).map_err(|e| Error::io("listing", &self.dir, e))?;
		let mut out = Vec::new();
		for entry in read {
			let entry = entry.map_err(|e| Error::io("listing", &self.dir, e))?;
			let name = entry.file_name();
			let round = name
				.to_str()
				.and_then(|n| n.strip_prefix("round-")?.strip_suffix(".gev")?.parse().ok());
			if let Some(round) = round {
				out.push((round, entry.path()));
			}
		}
		Ok(out)
	}
}

impl EvidenceArchive for EvidenceFiles {
	fn put(&mut self, round: RoundIndex, bytes: Vec<u8>) {
		if let Err(e) = write_atomic(&self.path(round), &bytes) {
			tracing::error!("round {round}: keeping its evidence on disk: {e}");
		}
	}

	fn get(&self, round: RoundIndex) -> Option<Vec<u8>> {
		let path = self.path(round);
		match std::fs::read(&path) {
			Ok(bytes) => Some(bytes),
			Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
			Err(e) => {
				tracing::warn!("reading {}: {e}", path.display());
				None
			}
		}
	}

	fn forget_before(&mut self, round: RoundIndex) {
		let rounds = match self.rounds() {
			Ok(rounds) => rounds,
			Err(e) => return tracing::warn!("pruning evidence: {e}"),
		};
		for (_, path) in rounds.into_iter().filter(|(r, _)| *r < round) {
			if let Err(e) = std::fs::remove_file(&path) {
				tracing::warn!("removing {}: {e}", path.display());
			}
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn evidence_files_survive_a_reopen_and_are_pruned_by_round() {
		let dir = tempfile::tempdir().unwrap();
		let mut files = EvidenceFiles::open(dir.path()).unwrap();
		for round in 0..4 {
			files.put(round, vec![round as u8; 3]);
		}
		std::fs::write(dir.path().join("round-evidence/notes.txt"), b"hi").unwrap();
		let mut reopened = EvidenceFiles::open(dir.path()).unwrap();
		assert_eq!(reopened.get(2), Some(vec![2; 3]));
		assert_eq!(reopened.get(9), None);
		reopened.forget_before(2);
		assert_eq!((reopened.get(1), reopened.get(2)), (None, Some(vec![2; 3])));
		assert!(dir.path().join("round-evidence/notes.txt").exists(), "strangers are left alone");
	}
}
