//! Training data: byte-level text and MNIST IDX files, verified against a content hash, with
//! deterministic per-(job, round, provider) shards and a held-out evaluation split.
//!
//! Content hashes are BLAKE2b-256 of the file's bytes as stored (for MNIST, of the `.gz`
//! files), which is what a job's `DatasetRef::content_hash` names.

pub mod mnist;
pub mod shard;
pub mod text;

use sp_crypto_hashing::blake2_256;
use std::path::{Path, PathBuf};

use candle_core::Device;

use grid_primitives::{
	datasets::{DataKind, ShippedDataset},
	job::{DatasetRef, ModelSpec},
};

use crate::{
	error::{Error, Result},
	model::Batch,
};

pub use mnist::MnistDataset;
pub use shard::{batch_indices, shard};
pub use text::TextDataset;

/// The shipped datasets' directory: `GRID_DATA_DIR` when set (a binary run away from its
/// checkout, e.g. on a GPU machine), else the repository's `data/`.
pub fn shipped_dir() -> PathBuf {
	match std::env::var_os("GRID_DATA_DIR") {
		Some(dir) => PathBuf::from(dir),
		None => Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("data"),
	}
}

/// Reads a whole file and, when `expected` is given, checks its BLAKE2b-256.
pub fn read_verified(path: &Path, expected: Option<&[u8; 32]>) -> Result<Vec<u8>> {
	let bytes = std::fs::read(path).map_err(|e| Error::io("reading", path, e))?;
	if let Some(expected) = expected {
		let actual = blake2_256(&bytes);
		if &actual != expected {
			return Err(Error::HashMismatch {
				path: path.to_path_buf(),
				expected: hex::encode(expected),
				actual: hex::encode(actual),
			});
		}
	}
	Ok(bytes)
}

/// The shipped dataset `dataset` names, when `model` can train on it; otherwise why not (a
/// URI this trainer does not ship, a hash that is not the shipped file's, or the wrong data
/// for the model).
pub fn shipped(dataset: &DatasetRef, model: &ModelSpec) -> Result<&'static ShippedDataset> {
	let uri = String::from_utf8_lossy(&dataset.uri);
	let shipped = ShippedDataset::at(&dataset.uri)
		.ok_or_else(|| Error::Config(format!("dataset {uri:?} is not one this trainer ships")))?;
	if dataset.content_hash.0 != shipped.content_hash {
		return Err(Error::Config(format!(
			"dataset {uri}: content hash {:?} is not the shipped file's",
			dataset.content_hash
		)));
	}
	if !shipped.fits(model) {
		return Err(Error::Config(format!(
			"model {model:?} cannot train on dataset {}",
			shipped.name
		)));
	}
	Ok(shipped)
}

/// Loads the shipped dataset `dataset` names for `model`, checked as [`shipped`] does and
/// against the files' hashes.
pub fn load_shipped(dataset: &DatasetRef, model: &ModelSpec) -> Result<Dataset> {
	let shipped = shipped(dataset, model)?;
	match (shipped.kind, model) {
		(DataKind::Tokens { .. }, ModelSpec::Gpt(gpt)) => {
			let path = shipped_dir().join("shakespeare.txt");
			let text = TextDataset::load(&path, Some(&shipped.content_hash), gpt.context as usize)?;
			Ok(Dataset::Text(text))
		}
		_ => Ok(Dataset::Mnist(MnistDataset::shipped()?)),
	}
}

/// A job's dataset: what the trainer draws batches from.
pub enum Dataset {
	/// Byte-level text for the GPT.
	Text(TextDataset),
	/// MNIST digits for the MLP and CNN.
	Mnist(MnistDataset),
}

impl Dataset {
	/// Number of training samples (the population shards are drawn from).
	pub fn train_len(&self) -> u64 {
		match self {
			Dataset::Text(d) => d.train_len(),
			Dataset::Mnist(d) => d.train_len(),
		}
	}

	/// The training batch of the given sample indices (each below [`Dataset::train_len`]).
	pub fn train_batch(&self, indices: &[u64], device: &Device) -> Result<Batch> {
		match self {
			Dataset::Text(d) => d.train_batch(indices, device),
			Dataset::Mnist(d) => d.train_batch(indices, device),
		}
	}

	/// The held-out evaluation set (at most `max_samples`, a fixed selection) in batches of
	/// `batch_size`.
	pub fn eval_batches(
		&self,
		max_samples: usize,
		batch_size: usize,
		device: &Device,
	) -> Result<Vec<Batch>> {
		match self {
			Dataset::Text(d) => d.eval_batches(max_samples, batch_size, device),
			Dataset::Mnist(d) => d.eval_batches(max_samples, batch_size, device),
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn hash_mismatch_names_both_hashes() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("x.txt");
		std::fs::write(&path, b"hello").unwrap();
		let good = blake2_256(b"hello");
		assert_eq!(read_verified(&path, Some(&good)).unwrap(), b"hello");
		let err = read_verified(&path, Some(&[0u8; 32])).unwrap_err().to_string();
		assert!(err.contains(&hex::encode(good)) && err.contains(&hex::encode([0u8; 32])), "{err}");
		let missing = read_verified(&dir.path().join("nope"), None).unwrap_err().to_string();
		assert!(missing.contains("nope"), "{missing}");
	}

	#[test]
	fn only_shipped_data_with_its_hash_and_a_model_that_fits_is_loaded() {
		use grid_primitives::{
			datasets::{MNIST, SHAKESPEARE},
			job::{GptConfig, MlpConfig},
			provider::BoundedBytes,
			Hash,
		};
		let mlp = ModelSpec::MnistMlp(MlpConfig { hidden: 8, layers: 1 });
		let gpt =
			ModelSpec::Gpt(GptConfig { vocab: 256, context: 8, layers: 1, heads: 1, width: 8 });
		assert_eq!(shipped(&MNIST.reference(), &mlp).unwrap(), &MNIST);
		assert_eq!(shipped(&SHAKESPEARE.reference(), &gpt).unwrap(), &SHAKESPEARE);
		let mut foreign = MNIST.reference();
		foreign.uri = BoundedBytes::truncate_from(b"ipfs://Qm".to_vec());
		let err = shipped(&foreign, &mlp).unwrap_err().to_string();
		assert!(err.contains("ipfs://Qm"), "{err}");
		let mut forged = MNIST.reference();
		forged.content_hash = Hash::repeat_byte(1);
		let err = shipped(&forged, &mlp).unwrap_err().to_string();
		assert!(err.contains("content hash"), "{err}");
		let err = shipped(&MNIST.reference(), &gpt).unwrap_err().to_string();
		assert!(err.contains("cannot train"), "{err}");
	}
}
