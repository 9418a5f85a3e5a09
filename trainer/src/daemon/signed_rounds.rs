//! The rounds this trainer signed a commitment for, on disk (`<data dir>/signed-commitments/`,
//! one file a round): two different commitments for one round are equivocation, which the
//! chain slashes, and a trainer restarted within a round it had committed would train that
//! round again and sign a second, different one (its compute time alone differs). So a round
//! with a commitment here is sat out after a restart, and each commitment is written here
//! before it is published.

use std::path::{Path, PathBuf};

use codec::{Decode, Encode};
use grid_primitives::job::{JobId, RoundIndex};

use crate::{
	checkpoint::{remove_if_there, write_atomic},
	error::{Error, Result},
	round::messages::Commitment,
};

/// Rounds kept at least: the checkpoint a restart resumes from is written in the background
/// after each decision, so it may trail the rounds committed by a round or two.
pub const MIN_KEPT: RoundIndex = 4;

/// The commitments signed, one file a round.
pub struct SignedRounds {
	dir: PathBuf,
	job: JobId,
	/// Rounds kept behind the latest one recorded (the job's evidence window): a restart
	/// resumes at its checkpoint's round, which may trail the rounds committed.
	keep: RoundIndex,
}

impl SignedRounds {
	/// The record of `job`'s commitments under `data_dir`, keeping `keep` rounds behind the
	/// latest, and at least [`MIN_KEPT`].
	pub fn open(data_dir: &Path, job: JobId, keep: RoundIndex) -> Result<Self> {
		let dir = data_dir.join("signed-commitments");
		std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
		Ok(SignedRounds { dir, job, keep: keep.max(MIN_KEPT) })
	}

	fn path(&self, round: RoundIndex) -> PathBuf {
		self.dir.join(format!("job-{}-round-{round}.scale", self.job))
	}

	/// The commitment signed for `round`, if any.
	pub fn signed(&self, round: RoundIndex) -> Result<Option<Commitment>> {
		let path = self.path(round);
		let bytes = match std::fs::read(&path) {
			Ok(bytes) => bytes,
			Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
			Err(e) => return Err(Error::io("reading", &path, e)),
		};
		let commitment = Commitment::decode(&mut bytes.as_slice())
			.map_err(|e| Error::bad_data(&path, format!("not a commitment: {e}")))?;
		Ok(Some(commitment))
	}

	/// Records `commitment` as this trainer's for its round, durably, before it is published;
	/// refuses a different one for a round already signed. Forgets rounds out of the window.
	pub fn record(&self, commitment: &Commitment) -> Result<()> {
		let round = commitment.round;
		if let Some(signed) = self.signed(round)? {
			if &signed != commitment {
				return Err(Error::AlreadySigned { round });
			}
			return Ok(());
		}
		write_atomic(&self.path(round), &commitment.encode())?;
		if let Some(before) = round.checked_sub(self.keep) {
			self.forget_before(before)?;
		}
		Ok(())
	}

	/// Removes the records of rounds before `round`.
	fn forget_before(&self, round: RoundIndex) -> Result<()> {
		let prefix = format!("job-{}-round-", self.job);
		let entries =
			std::fs::read_dir(&self.dir).map_err(|e| Error::io("listing", &self.dir, e))?;
		for entry in entries {
			let entry = entry.map_err(|e| Error::io("listing", &self.dir, e))?;
			let name = entry.file_name();
			let old = name
				.to_str()
				.and_then(|n| n.strip_prefix(&prefix)?.strip_suffix(".scale")?.parse().ok())
				.is_some_and(|r: RoundIndex| r < round);
			if old {
				remove_if_there(&entry.path())?;
			}
		}
		Ok(())
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::round::messages::tests::commitment;

	#[test]
	fn a_round_is_signed_once_and_the_record_outlives_a_restart() {
		let dir = tempfile::tempdir().unwrap();
		let first = commitment(3, 9);
		{
			let signed = SignedRounds::open(dir.path(), 7, 4).unwrap();
			assert_eq!(signed.signed(3).unwrap(), None);
			signed.record(&first).unwrap();
			// The same commitment again (published twice) is fine.
			signed.record(&first).unwrap();
		}
		let reopened = SignedRounds::open(dir.path(), 7, 4).unwrap();
		assert_eq!(reopened.signed(3).unwrap(), Some(first));
		let err = reopened.record(&commitment(3, 10)).unwrap_err();
		assert!(matches!(err, Error::AlreadySigned { round: 3 }), "{err}");
		// Another job's rounds are its own.
		let other_job = SignedRounds::open(dir.path(), 8, 4).unwrap();
		assert_eq!(other_job.signed(3).unwrap(), None);
	}

	#[test]
	fn rounds_out_of_the_window_are_forgotten() {
		let dir = tempfile::tempdir().unwrap();
		let signed = SignedRounds::open(dir.path(), 7, 6).unwrap();
		for round in 0..10 {
			signed.record(&commitment(round, 1)).unwrap();
		}
		let kept: Vec<_> = (0..10).filter(|r| signed.signed(*r).unwrap().is_some()).collect();
		assert_eq!(kept, [3, 4, 5, 6, 7, 8, 9]);
		// A job that keeps nothing behind still keeps the rounds a restart may resume at.
		let short = SignedRounds::open(dir.path(), 8, 0).unwrap();
		for round in 0..10 {
			short.record(&commitment(round, 1)).unwrap();
		}
		let kept: Vec<_> = (0..10).filter(|r| short.signed(*r).unwrap().is_some()).collect();
		assert_eq!(kept, [5, 6, 7, 8, 9]);
	}

	#[test]
	fn a_damaged_record_is_an_error_that_names_the_file() {
		let dir = tempfile::tempdir().unwrap();
		let signed = SignedRounds::open(dir.path(), 7, 2).unwrap();
		std::fs::write(dir.path().join("signed-commitments/job-7-round-3.scale"), [1, 2]).unwrap();
		let err = signed.signed(3).unwrap_err();
		assert!(err.to_string().contains("job-7-round-3.scale"), "{err}");
	}
}
