//! Model-sized files two stores keep alike, on disk once. A round's base model is both the
//! fraud desk's evidence base of the round (`evidence.rs`) and the values of the first state
//! a sender's commitment of the round promises (`work_states.rs`): at 353M parameters two
//! copies of 1.4 GB a round for the whole challenge window. Each store still names its own
//! file and deletes it when it wants; the bytes are one inode, hard-linked from
//! `<data dir>/shared-values/<BLAKE3 of the bytes>.f32`, so the store that keeps them second
//! links instead of writing, and the filesystem frees them when the last name goes. Where a
//! link cannot be made (a filesystem without hard links) a store writes its own copy, as
//! before.

use std::{
	io::Write,
	path::{Path, PathBuf},
};

use crate::{
	checkpoint::{remove_if_there, write_atomic_with},
	error::{Error, Result},
	params::le_bytes,
};

/// What a shared file is named by: [`crate::work_state::values_digest`] of its values.
pub type ValuesKey = [u8; 32];

const EXTENSION: &str = "f32";

/// The directory of shared names.
#[derive(Clone, Debug)]
pub struct SharedValues {
	dir: PathBuf,
}

/// How a store's file came to hold its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kept {
	/// Linked to the same values another file holds: nothing written.
	Linked,
	/// Written (and shared for the next store that keeps them).
	Written,
}

impl SharedValues {
	/// The shared names under `data_dir` (created if missing).
	pub fn open(data_dir: &Path) -> Result<Self> {
		let dir = data_dir.join("shared-values");
		std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
		Ok(SharedValues { dir })
	}

	fn shared(&self, key: &ValuesKey) -> PathBuf {
		self.dir.join(format!("{}.{EXTENSION}", hex::encode(key)))
	}

	/// Keeps `values` (whose [`crate::work_state::values_digest`] is `key`) at `path`, replacing what it held: a
	/// link to the same values if a file holds them already, else a new file, then shared.
	pub fn keep(&self, path: &Path, values: &[f32], key: &ValuesKey) -> Result<Kept> {
		let shared = self.shared(key);
		if link_into_place(&shared, path).is_ok() {
			return Ok(Kept::Linked);
		}
		write_atomic_with(path, |f: &mut dyn Write| f.write_all(&le_bytes(values)))?;
		// Another store may have shared the same values meanwhile: then each keeps its own.
		if let Err(e) = std::fs::hard_link(path, &shared) {
			if e.kind() != std::io::ErrorKind::AlreadyExists {
				tracing::debug!("sharing {}: {e}", path.display());
			}
		}
		Ok(Kept::Written)
	}

	/// Deletes the shared names no store's file links to any more (their last name).
	pub fn prune(&self) -> Result<()> {
		use std::os::unix::fs::MetadataExt;
		let read = std::fs::read_dir(&self.dir).map_err(|e| Error::io("listing", &self.dir, e))?;
		for entry in read {
			let entry = entry.map_err(|e| Error::io("listing", &self.dir, e))?;
			let path = entry.path();
			let only = entry.metadata().map(|m| m.nlink() <= 1).unwrap_or(false);
			// A store that links to it between the check and the removal keeps its link; the
			// other store's prune may have removed it first.
			if only && path.extension().is_some_and(|e| e == EXTENSION) {
				remove_if_there(&path)?;
			}
		}
		Ok(())
	}
}

/// Makes `path` a link to `shared` in one rename (a reader of `path` sees the old file or
/// the new one, never none).
fn link_into_place(shared: &Path, path: &Path) -> std::io::Result<()> {
	let mut tmp = path.as_os_str().to_os_string();
	tmp.push(format!(".link-{}", std::process::id()));
	let tmp = PathBuf::from(tmp);
	let _ = std::fs::remove_file(&tmp);
	std::fs::hard_link(shared, &tmp)?;
	std::fs::rename(&tmp, path).inspect_err(|_| {
		let _ = std::fs::remove_file(&tmp);
	})
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::work_state::values_digest;
	use std::os::unix::fs::MetadataExt;

	fn nlink(path: &Path) -> u64 {
		std::fs::metadata(path).unwrap().nlink()
	}

	#[test]
	fn the_second_store_links_and_the_bytes_go_with_the_last_name() {
		let dir = tempfile::tempdir().unwrap();
		let shared = SharedValues::open(dir.path()).unwrap();
		let (a, b) = (dir.path().join("a.values"), dir.path().join("b.base"));
		let values = vec![1.5f32, -2.0, 3.25];
		let key = values_digest(&values);
		assert_eq!(shared.keep(&a, &values, &key).unwrap(), Kept::Written);
		assert_eq!(shared.keep(&b, &values, &key).unwrap(), Kept::Linked);
		assert_eq!(std::fs::read(&b).unwrap(), le_bytes(&values).to_vec());
		assert_eq!(nlink(&a), 3, "a, b and the shared name are one file");
		// Other values are not mistaken for them.
		let other = vec![1.5f32, -2.0, 3.5];
		let c = dir.path().join("c.values");
		assert_eq!(shared.keep(&c, &other, &values_digest(&other)).unwrap(), Kept::Written);
		assert_eq!(std::fs::read(&c).unwrap(), le_bytes(&other).to_vec());

		std::fs::remove_file(&a).unwrap();
		shared.prune().unwrap();
		assert_eq!(nlink(&b), 2, "b still shares its name");
		std::fs::remove_file(&b).unwrap();
		std::fs::remove_file(&c).unwrap();
		shared.prune().unwrap();
		assert_eq!(std::fs::read_dir(dir.path().join("shared-values")).unwrap().count(), 0);
	}

	#[test]
	fn keeping_over_an_existing_file_replaces_it() {
		let dir = tempfile::tempdir().unwrap();
		let shared = SharedValues::open(dir.path()).unwrap();
		let (a, b) = (dir.path().join("a"), dir.path().join("b"));
		let values = vec![7.0f32; 5];
		let key = values_digest(&values);
		shared.keep(&a, &values, &key).unwrap();
		std::fs::write(&b, b"stale").unwrap();
		assert_eq!(shared.keep(&b, &values, &key).unwrap(), Kept::Linked);
		assert_eq!(std::fs::read(&b).unwrap(), le_bytes(&values).to_vec());
		// Written again over a link, a file's name gets the new bytes and the link the old.
		let newer = vec![8.0f32; 5];
		shared.keep(&b, &newer, &values_digest(&newer)).unwrap();
		assert_eq!(std::fs::read(&a).unwrap(), le_bytes(&values).to_vec());
		assert_eq!(std::fs::read(&b).unwrap(), le_bytes(&newer).to_vec());
	}
}
