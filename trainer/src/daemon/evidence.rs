//! The fraud desk's evidence archive on disk (`<data dir>/round-evidence/`): a round's
//! encoded [`crate::round::evidence::RoundEvidence`] without its base in `round-<round>.gev`,
//! and its base's values (little-endian `f32`) in `round-<round>.base`, kept through
//! [`SharedValues`] so that the base a sender's first kept state of the round holds too is
//! one file on disk. A restarted trainer can still judge every round of the challenge
//! window. The desk decides what to keep and for how long; a file that cannot be written or
//! read is logged and counts as missing (the desk then cannot vote on that round, which
//! costs this trainer at most an absence slash).

use std::{
	io::Read,
	path::{Path, PathBuf},
	sync::Arc,
};

use grid_primitives::job::RoundIndex;

use crate::{
	checkpoint::{remove_if_there, write_atomic},
	daemon::shared_values::{Kept, SharedValues},
	error::{Error, Result},
	params::from_le,
	round::{
		evidence::{Archived, EvidenceArchive},
		messages::Digest,
	},
};

/// Rounds' evidence as files.
pub struct EvidenceFiles {
	dir: PathBuf,
	shared: SharedValues,
}

/// The two files of a round.
#[derive(Clone, Copy)]
enum Part {
	/// The encoding without the base.
	Meta,
	/// The base's values.
	Base,
}

impl Part {
	const ALL: [Part; 2] = [Part::Meta, Part::Base];

	fn extension(self) -> &'static str {
		match self {
			Part::Meta => "gev",
			Part::Base => "base",
		}
	}
}

impl EvidenceFiles {
	/// The archive under `data_dir` (created if missing).
	pub fn open(data_dir: &Path) -> Result<Self> {
		let dir = data_dir.join("round-evidence");
		std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
		Ok(EvidenceFiles { dir, shared: SharedValues::open(data_dir)? })
	}

	fn path(&self, round: RoundIndex, part: Part) -> PathBuf {
		self.dir.join(format!("round-{round}.{}", part.extension()))
	}

	/// The rounds' files, with their paths.
	fn files(&self) -> Result<Vec<(RoundIndex, PathBuf)>> {
		let read = std::fs::read_dir(&self.dir).map_err(|e| Error::io("listing", &self.dir, e))?;
		let mut out = Vec::new();
		for entry in read {
			let entry = entry.map_err(|e| Error::io("listing", &self.dir, e))?;
			let name = entry.file_name();
			let round = name.to_str().and_then(|n| {
				let rest = n.strip_prefix("round-")?;
				Part::ALL.iter().find_map(|p| rest.strip_suffix(p.extension())?.strip_suffix('.'))
			});
			if let Some(round) = round.and_then(|r| r.parse().ok()) {
				out.push((round, entry.path()));
			}
		}
		Ok(out)
	}

	fn keep(&self, round: RoundIndex, archived: &Archived, base_digest: &Digest) -> Result<()> {
		// The base first: a crash between leaves no encoding whose base is missing.
		let base = match &archived.base {
			Some(base) => {
				let kept = self.shared.keep(&self.path(round, Part::Base), base, base_digest)?;
				let mb = 4.0 * base.len() as f64 / 1e6;
				match kept {
					Kept::Linked => format!("its base of {mb:.1} MB linked to a kept state's"),
					Kept::Written => format!("its base of {mb:.1} MB written"),
				}
			}
			None => {
				remove_if_there(&self.path(round, Part::Base))?;
				"its base inside".to_string()
			}
		};
		write_atomic(&self.path(round, Part::Meta), &archived.meta)?;
		let kb = archived.meta.len() as f64 / 1e3;
		tracing::info!("round {round}: evidence kept on disk, {kb:.1} kB of updates, {base}");
		Ok(())
	}

	fn read(&self, round: RoundIndex) -> Result<Option<Archived>> {
		let path = self.path(round, Part::Meta);
		let meta = match std::fs::read(&path) {
			Ok(meta) => meta,
			Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
			Err(e) => return Err(Error::io("reading", &path, e)),
		};
		let path = self.path(round, Part::Base);
		let base = match read_values(&path) {
			Ok(base) => Some(Arc::new(base)),
			Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
			Err(e) => return Err(Error::io("reading", &path, e)),
		};
		Ok(Some(Archived { meta, base }))
	}
}

/// A file of little-endian `f32`s, read straight into the values.
fn read_values(path: &Path) -> std::io::Result<Vec<f32>> {
	let mut file = std::fs::File::open(path)?;
	let len = file.metadata()?.len();
	if len % 4 != 0 {
		let why = format!("{len} bytes are not whole f32 values");
		return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
	}
	let mut values = vec![0f32; (len / 4) as usize];
	file.read_exact(bytemuck::cast_slice_mut(&mut values))?;
	from_le(&mut values);
	Ok(values)
}

impl EvidenceArchive for EvidenceFiles {
	fn put(&mut self, round: RoundIndex, archived: Archived, base_digest: &Digest) {
		if let Err(e) = self.keep(round, &archived, base_digest) {
			tracing::error!("round {round}: keeping its evidence on disk: {e}");
		}
	}

	fn get(&self, round: RoundIndex) -> Option<Archived> {
		self.read(round).unwrap_or_else(|e| {
			tracing::warn!("round {round}'s evidence: {e}");
			None
		})
	}

	fn forget_before(&mut self, round: RoundIndex) {
		let files = match self.files() {
			Ok(files) => files,
			Err(e) => return tracing::warn!("pruning evidence: {e}"),
		};
		for (_, path) in files.into_iter().filter(|(r, _)| *r < round) {
			if let Err(e) = std::fs::remove_file(&path) {
				tracing::warn!("removing {}: {e}", path.display());
			}
		}
		if let Err(e) = self.shared.prune() {
			tracing::warn!("pruning shared values: {e}");
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		daemon::work_states::{moments_key, Split, WorkStates},
		round::evidence::RoundEvidence,
		trajectory::STEP_STATE,
		work_state::{parts_header, values_digest, Moments},
	};

	fn archived(round: RoundIndex) -> (Archived, Digest) {
		let base: Vec<f32> = (0..50).map(|i| i as f32 + round as f32).collect();
		let evidence = RoundEvidence { round, base: Arc::new(base), updates: Default::default() };
		evidence.encode()
	}

	#[test]
	fn evidence_files_survive_a_reopen_and_are_pruned_by_round() {
		let dir = tempfile::tempdir().unwrap();
		let mut files = EvidenceFiles::open(dir.path()).unwrap();
		for round in 0..4 {
			let (kept, digest) = archived(round);
			files.put(round, kept, &digest);
		}
		// Kept before the base was apart: one file.
		let legacy = Archived { meta: b"GEV2 old".to_vec(), base: None };
		files.put(4, legacy.clone(), &[0; 32]);
		std::fs::write(dir.path().join("round-evidence/notes.txt"), b"hi").unwrap();
		let mut reopened = EvidenceFiles::open(dir.path()).unwrap();
		assert_eq!(reopened.get(2), Some(archived(2).0));
		assert_eq!(reopened.get(4), Some(legacy));
		assert_eq!(reopened.get(9), None);
		reopened.forget_before(2);
		assert_eq!((reopened.get(1), reopened.get(2)), (None, Some(archived(2).0)));
		assert!(!dir.path().join("round-evidence/round-1.base").exists());
		assert!(dir.path().join("round-evidence/notes.txt").exists(), "strangers are left alone");
	}

	#[test]
	fn a_base_that_cannot_be_read_whole_is_missing_evidence_not_a_panic() {
		let dir = tempfile::tempdir().unwrap();
		let mut files = EvidenceFiles::open(dir.path()).unwrap();
		let (kept, digest) = archived(0);
		files.put(0, kept, &digest);
		let base = dir.path().join("round-evidence/round-0.base");
		let bytes = std::fs::read(&base).unwrap();
		std::fs::remove_file(&base).unwrap();
		std::fs::write(&base, &bytes[..bytes.len() - 1]).unwrap();
		assert_eq!(files.get(0), None, "a ragged base");
		std::fs::remove_file(&base).unwrap();
		let left = files.get(0).unwrap();
		assert_eq!(left.base, None);
		assert!(RoundEvidence::decode(&left).is_err(), "a base gone is refused when decoded");
	}

	/// The round's base is the values of a sender's first kept state of the round: on disk
	/// once, however the two stores prune.
	#[test]
	fn the_evidence_base_and_the_first_kept_state_are_one_file() {
		use std::os::unix::fs::MetadataExt;
		let dir = tempfile::tempdir().unwrap();
		let (kept, digest) = archived(3);
		let base = kept.base.clone().unwrap();
		let states = WorkStates::open(dir.path()).unwrap();
		let moments = Moments { m: vec![0.5; base.len()], v: vec![0.25; base.len()] };
		let split = Split {
			header: parts_header(STEP_STATE.magic, 9, true, base.len()),
			moments: &moments,
			values: &base,
			base: true,
		};
		let (_, written) = states.save_split(3, &[1; 32], &split, &moments_key(&moments)).unwrap();
		assert!(written >= 12 * base.len() as u64, "the first keeper writes the values");
		let mut files = EvidenceFiles::open(dir.path()).unwrap();
		files.put(3, kept, &digest);
		let path = dir.path().join("round-evidence/round-3.base");
		assert_eq!(std::fs::metadata(&path).unwrap().nlink(), 3, "linked, not written again");
		assert_eq!(files.get(3).unwrap().base.as_deref(), Some(&*base));
		assert_eq!(values_digest(&base), digest);
		// The work states go first; the evidence keeps the base, then it goes too.
		states.prune(4).unwrap();
		assert_eq!(files.get(3).unwrap().base.as_deref(), Some(&*base));
		files.forget_before(4);
		assert_eq!(std::fs::read_dir(dir.path().join("shared-values")).unwrap().count(), 0);
	}
}
