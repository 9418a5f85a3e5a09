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

use crate::{
	error::{Error, Result},
	model::Batch,
};

pub use mnist::MnistDataset;
pub use shard::{batch_indices, shard};
pub use text::TextDataset;

/// BLAKE2b-256 of the shipped `data/shakespeare.txt`.
pub const SHAKESPEARE_HASH: &str =
	"c408e3deb0f6b0c7a74ed68df5507bda3b8f5e8b5453d6d3b4586876d76f2565";
/// BLAKE2b-256 of the shipped `data/mnist/train-images-idx3-ubyte.gz`.
pub const MNIST_TRAIN_IMAGES_HASH: &str =
	"1388f86419e599423f67d82f3549d590c382aa5a5a16023d8a1e0912b345803c";
/// BLAKE2b-256 of the shipped `data/mnist/train-labels-idx1-ubyte.gz`.
pub const MNIST_TRAIN_LABELS_HASH: &str =
	"d213929edbbd12222a906ef9ad8796618f3c225b94b757bc1f9c8ed6a3eadc14";
/// BLAKE2b-256 of the shipped `data/mnist/t10k-images-idx3-ubyte.gz`.
pub const MNIST_TEST_IMAGES_HASH: &str =
	"e4061da825a644c4e0499abaa8147b65df76ff83a5801d5794595785174ac3de";
/// BLAKE2b-256 of the shipped `data/mnist/t10k-labels-idx1-ubyte.gz`.
pub const MNIST_TEST_LABELS_HASH: &str =
	"58bd167323a8f0d0af5cbdfc2b20eb939e5e18b5cb7a34e86b124c6ea20d94d6";

/// The shipped datasets' directory: `GRID_DATA_DIR` when set (a binary run away from its
/// checkout, e.g. on a GPU machine), else the repository's `data/`.
pub fn shipped_dir() -> PathBuf {
	match std::env::var_os("GRID_DATA_DIR") {
		Some(dir) => PathBuf::from(dir),
		None => Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("data"),
	}
}

/// Parses a 64-digit hex hash.
pub fn parse_hash(hex_str: &str) -> Result<[u8; 32]> {
	let bad = || Error::Config(format!("{hex_str:?} is not a 32-byte hex hash"));
	if hex_str.len() != 64 || !hex_str.is_ascii() {
		return Err(bad());
	}
	let mut out = [0u8; 32];
	for (i, byte) in out.iter_mut().enumerate() {
		*byte = u8::from_str_radix(&hex_str[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
	}
	Ok(out)
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
	fn hex_hashes_parse_and_bad_ones_are_rejected() {
		assert_eq!(hex::encode(parse_hash(SHAKESPEARE_HASH).unwrap()), SHAKESPEARE_HASH);
		assert!(parse_hash("abc").is_err());
		assert!(parse_hash(&"zz".repeat(32)).is_err());
	}
}
