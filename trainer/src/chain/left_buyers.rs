//! The buyers whose jobs this provider left because their rounds reached no quorum, kept on
//! disk so that the provider avoids their next jobs for a while.
//!
//! A buyer whose own accounts hold a third of a job's seats can keep its rounds from a quorum:
//! nobody is paid, the rewards go back to the buyer, and its accounts still receive the
//! honest members' updates. A trainer leaves such a job after a few rounds
//! (`follower/quorum.rs`), but the daemon ends with its job and is started again for the next
//! one, which the same buyer may have posted. So the leave is written here, in the provider's
//! data directory, and the next start passes over that buyer's jobs for `avoid_buyer_blocks`
//! (honest trouble, a partition or an overloaded machine, also ends in a leave, so the memory
//! fades). It is per account: a buyer that funds a fresh account for every job is not
//! recognised (the trust model in `docs/architecture.md` says what that costs it).
//!
//! The file is JSON, one entry per buyer (the latest job left of it: only that one decides
//! how long the buyer is avoided, so the file grows with the buyers left, not the jobs),
//! buyers written in SS58: an operator may read it and delete an entry to forgive a buyer.

use std::path::{Path, PathBuf};

use grid_primitives::job::JobId;
use serde::{Deserialize, Serialize};

use super::{AccountId, ChainError};

/// One job this provider left for lack of quorum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeftJob {
	/// The job's buyer.
	pub buyer: AccountId,
	/// The job.
	pub job: JobId,
	/// The block at which this provider decided to leave it.
	pub block: u32,
}

/// The jobs this provider left for lack of quorum, as its file holds them.
#[derive(Debug)]
pub struct LeftBuyers {
	path: PathBuf,
	jobs: Vec<LeftJob>,
}

impl LeftBuyers {
	/// The name of the file in a provider's data directory.
	pub const FILE: &'static str = "left-buyers.json";

	/// Reads the file at `path` (none yet: no job left).
	pub fn load(path: &Path) -> Result<Self, ChainError> {
		let bad = |why: String| {
			ChainError::Config(format!(
				"{}: {why} (the buyers whose jobs this provider left; fix or delete it)",
				path.display()
			))
		};
		let jobs = match std::fs::read(path) {
			Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?,
			Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
			Err(e) => return Err(bad(e.to_string())),
		};
		Ok(LeftBuyers { path: path.to_path_buf(), jobs })
	}

	/// Records `left` as its buyer's latest (an earlier leave of the same buyer is replaced,
	/// a later one kept) and writes the file, whole or not at all: a crash while writing
	/// leaves the previous file.
	pub fn record(&mut self, left: LeftJob) -> Result<(), ChainError> {
		match self.jobs.iter_mut().find(|j| j.buyer == left.buyer) {
			// A resent leave of the same job keeps the block it was first decided at.
			Some(known) if known.job == left.job || known.block >= left.block => return Ok(()),
			Some(known) => *known = left,
			None => self.jobs.push(left),
		}
		let failed =
			|e: std::io::Error| ChainError::Config(format!("writing {}: {e}", self.path.display()));
		let text = serde_json::to_vec_pretty(&self.jobs).expect("plain data serializes");
		let partial = self.path.with_extension("json.partial");
		std::fs::write(&partial, text).map_err(failed)?;
		std::fs::rename(&partial, &self.path).map_err(failed)
	}

	/// The latest job of `buyer` this provider left within `for_blocks` blocks before `now`
	/// (0: buyers are never avoided).
	pub fn avoids(&self, buyer: &AccountId, now: u32, for_blocks: u32) -> Option<&LeftJob> {
		self.jobs
			.iter()
			.filter(|j| j.buyer == *buyer && now < j.block.saturating_add(for_blocks))
			.max_by_key(|j| j.block)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn account(byte: u8) -> AccountId {
		AccountId::from([byte; 32])
	}

	#[test]
	fn a_left_buyer_is_avoided_for_its_window_and_survives_a_restart() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join(LeftBuyers::FILE);
		let mut left = LeftBuyers::load(&path).unwrap();
		assert_eq!(left.avoids(&account(1), 0, 100), None, "no file: nobody avoided");
		left.record(LeftJob { buyer: account(1), job: 3, block: 50 }).unwrap();
		left.record(LeftJob { buyer: account(1), job: 7, block: 80 }).unwrap();
		// The same job again (a resent leave), or an older one, changes nothing.
		left.record(LeftJob { buyer: account(1), job: 7, block: 90 }).unwrap();
		left.record(LeftJob { buyer: account(1), job: 3, block: 50 }).unwrap();
		left.record(LeftJob { buyer: account(3), job: 9, block: 10 }).unwrap();
		// A new process reads what the last one wrote: one entry per buyer, its latest.
		let left = LeftBuyers::load(&path).unwrap();
		assert_eq!(left.jobs.len(), 2);
		assert_eq!(left.jobs[0], LeftJob { buyer: account(1), job: 7, block: 80 });
		assert_eq!(left.avoids(&account(1), 100, 100).map(|j| j.job), Some(7), "the latest");
		assert_eq!(left.avoids(&account(1), 179, 100).map(|j| j.job), Some(7));
		assert_eq!(left.avoids(&account(1), 180, 100), None, "forgiven after its window");
		assert_eq!(left.avoids(&account(2), 100, 100), None, "another buyer");
		assert_eq!(left.avoids(&account(1), 100, 0), None, "0: never avoided");
		// Written in SS58, for an operator to read and edit.
		let text = std::fs::read_to_string(&path).unwrap();
		assert!(text.contains(&account(1).to_string()), "{text}");
	}

	#[test]
	fn a_damaged_file_is_refused_with_its_path() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join(LeftBuyers::FILE);
		for text in ["[{\"buyer\": \"not an address\", \"job\": 1, \"block\": 2}]", "{", "[1]"] {
			std::fs::write(&path, text).unwrap();
			let e = LeftBuyers::load(&path).unwrap_err().to_string();
			assert!(e.contains(LeftBuyers::FILE) && e.contains("fix or delete it"), "{e}");
		}
	}
}
