//! Training data: content-addressed datasets (a manifest of chunk hashes, named by its hash)
//! kept in a store, fetched from their source and checked chunk by chunk; read as token
//! streams (byte-level text, `u16`/`u32` token ids, BPE text), MNIST IDX files, CIFAR-10's
//! binary batches or image tensors (`safetensors`, `.npy`), with deterministic
//! per-(job, round, provider) shards and a held-out evaluation split.
//!
//! A job's `DatasetRef::content_hash` is the manifest's hash ([`grid_primitives::manifest`]);
//! the shipped datasets are ordinary references whose files every trainer holds.

pub mod arrays;
pub mod bpe;
pub mod cifar;
pub mod image_folder;
pub mod images;
pub mod mnist;
pub mod shard;
pub mod source;
pub mod store;
pub mod tokens;

use sp_crypto_hashing::blake2_256;
use std::path::{Path, PathBuf};

use candle_core::Device;

use grid_primitives::{
	datasets::{DataKind, ImageShape, SHAKESPEARE},
	job::{DatasetRef, ModelSpec},
	manifest::DatasetFormat,
};

use crate::{
	error::{Error, Result},
	model::Batch,
};

pub use cifar::CifarDataset;
pub use images::ImageDataset;
pub use mnist::MnistDataset;
pub use shard::{batch_indices, shard};
pub use source::{source, HttpHosts, LocalFiles, MinRate, Pace, Source, SourcePolicy};
pub use store::{DataStore, Located};
pub use tokens::TokenDataset;

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

/// What can be checked of `dataset` for `model` without its data: a source this trainer reads
/// and, for a shipped dataset, that the model can read it. The rest (the format against the
/// model, the vocabulary) is checked once the manifest and the data are here ([`open`]).
pub fn check(dataset: &DatasetRef, model: &ModelSpec) -> Result<()> {
	if let Source::Shipped(shipped) = source(dataset)? {
		if !shipped.fits(model) {
			return Err(Error::Config(format!(
				"model {model:?} cannot train on dataset {}",
				shipped.name
			)));
		}
	}
	Ok(())
}

/// Loads the dataset `dataset` names for `model` from `store` (which must hold it: the
/// daemon's `datasets::ensure` brings it), every chunk checked against its manifest.
pub fn load(store: &DataStore, dataset: &DatasetRef, model: &ModelSpec) -> Result<Dataset> {
	open(&store.open_verified(dataset)?, model)
}

/// Errors unless `model` reads data of `format` (token streams, or images).
pub fn format_fits(format: DatasetFormat, model: &ModelSpec) -> Result<()> {
	use DatasetFormat::*;
	match (format, model.reads()) {
		(Text | TokensU16 | TokensU32 | TextBpe, DataKind::Tokens { .. }) => Ok(()),
		(MnistIdx, DataKind::MNIST) | (Cifar10, DataKind::CIFAR10) => Ok(()),
		// Tensors of any image shape: checked against the model's when opened.
		(ImageSafetensors | ImageNpy, DataKind::Images(_)) => Ok(()),
		(MnistIdx | Cifar10, DataKind::Images(wanted)) => {
			let held = if format == MnistIdx { ImageShape::MNIST } else { ImageShape::CIFAR10 };
			Err(Error::Config(format!(
				"model {model:?} reads {wanted}; {} data holds {held}",
				format.name()
			)))
		}
		(Weights, _) => {
			Err(Error::Config("a model's weights (format weights) are not training data".into()))
		}
		_ => Err(Error::Config(format!("model {model:?} cannot train on {} data", format.name()))),
	}
}

/// Opens a dataset held whole for `model`: its format must be one the model reads, and a
/// token stream's tokens must be below the model's vocabulary.
pub fn open(located: &Located, model: &ModelSpec) -> Result<Dataset> {
	let format = located.manifest.format;
	format_fits(format, model)?;
	// Past `format_fits`, a model that reads no tokens reads the format's images.
	let (DataKind::Tokens { vocab }, Some(context)) = (model.reads(), model.context()) else {
		return Ok(match (format, model.reads()) {
			(DatasetFormat::Cifar10, _) => Dataset::Cifar(CifarDataset::open(located)?),
			(
				DatasetFormat::ImageSafetensors | DatasetFormat::ImageNpy,
				DataKind::Images(shape),
			) => Dataset::Images(Box::new(ImageDataset::open(located, shape)?)),
			_ => Dataset::Mnist(MnistDataset::open(located)?),
		});
	};
	let tokens = match format.token_bytes() {
		Some(width) => TokenDataset::open(&located.paths(), width, context as usize)?,
		// BPE text: tokenized with the dataset's own tokenizer.
		None => {
			let (path, tokenizer_vocab) = bpe::tokens(located)?;
			if tokenizer_vocab > vocab {
				return Err(Error::Config(format!(
					"the dataset's tokenizer has {tokenizer_vocab} tokens but the model's \
					 vocabulary has {vocab}"
				)));
			}
			TokenDataset::open(&[path], 4, context as usize)?
		}
	};
	tokens.check_vocab(vocab)?;
	Ok(Dataset::Tokens(tokens))
}

/// The shipped Shakespeare as bytes, for windows of `context` tokens (tests and benchmarks).
pub fn shakespeare(context: usize) -> Result<TokenDataset> {
	TokenDataset::open(&store::shipped_manifest(&SHAKESPEARE)?.paths(), 1, context)
}

/// Errors unless every index in `indices` is below `len` (`what` names the samples).
fn check_samples(indices: &[u64], len: u64, what: &str) -> Result<()> {
	match indices.iter().find(|&&i| i >= len) {
		Some(i) => Err(Error::Config(format!("sample {i} is outside the {len} {what}"))),
		None => Ok(()),
	}
}

/// The first `max_samples` of `len` held-out samples in batches of `batch_size`, each made by
/// `batch`.
fn first_batches(
	len: u64,
	max_samples: usize,
	batch_size: usize,
	batch: impl Fn(&[u64]) -> Result<Batch>,
) -> Result<Vec<Batch>> {
	let all: Vec<u64> = (0..(max_samples as u64).min(len)).collect();
	all.chunks(batch_size.max(1)).map(batch).collect()
}

/// A batch of `labels.len()` flattened images (`pixels`, rows of equal length) and labels.
fn image_batch(pixels: Vec<f32>, labels: Vec<u32>, device: &Device) -> Result<Batch> {
	let n = labels.len();
	let row = pixels.len().checked_div(n).unwrap_or(0);
	Ok(Batch {
		inputs: candle_core::Tensor::from_vec(pixels, (n, row), device)?,
		targets: candle_core::Tensor::from_vec(labels, n, device)?,
	})
}

/// A job's dataset: what the trainer draws batches from.
pub enum Dataset {
	/// A token stream for the GPT.
	Tokens(TokenDataset),
	/// MNIST digits for the MLP, the CNN and a ResNet.
	Mnist(MnistDataset),
	/// CIFAR-10 images for a ResNet.
	Cifar(CifarDataset),
	/// Images as tensors (safetensors or npy) for a ResNet, the MLP or the CNN (boxed: four
	/// mapped arrays make it the largest variant by far).
	Images(Box<ImageDataset>),
}

impl Dataset {
	/// Number of training samples (the population shards are drawn from).
	pub fn train_len(&self) -> u64 {
		match self {
			Dataset::Tokens(d) => d.train_len(),
			Dataset::Mnist(d) => d.train_len(),
			Dataset::Cifar(d) => d.train_len(),
			Dataset::Images(d) => d.train_len(),
		}
	}

	/// The training batch of the given sample indices (each below [`Dataset::train_len`]).
	pub fn train_batch(&self, indices: &[u64], device: &Device) -> Result<Batch> {
		match self {
			Dataset::Tokens(d) => d.train_batch(indices, device),
			Dataset::Mnist(d) => d.train_batch(indices, device),
			Dataset::Cifar(d) => d.train_batch(indices, device),
			Dataset::Images(d) => d.train_batch(indices, device),
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
			Dataset::Tokens(d) => d.eval_batches(max_samples, batch_size, device),
			Dataset::Mnist(d) => d.eval_batches(max_samples, batch_size, device),
			Dataset::Cifar(d) => d.eval_batches(max_samples, batch_size, device),
			Dataset::Images(d) => d.eval_batches(max_samples, batch_size, device),
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
	fn shipped_datasets_open_for_the_models_that_read_them() {
		use grid_primitives::{
			datasets::{MNIST, SHAKESPEARE},
			job::{GptConfig, MlpConfig},
			provider::BoundedBytes,
		};
		let store = DataStore::new(tempfile::tempdir().unwrap().path().join("store"));
		let mlp = ModelSpec::MnistMlp(MlpConfig { hidden: 8, layers: 1 });
		let gpt =
			|vocab| ModelSpec::Gpt(GptConfig { vocab, context: 8, layers: 1, heads: 1, width: 8 });
		assert!(matches!(load(&store, &MNIST.reference(), &mlp).unwrap(), Dataset::Mnist(_)));
		assert!(matches!(
			load(&store, &SHAKESPEARE.reference(), &gpt(128)).unwrap(),
			Dataset::Tokens(_)
		));
		check(&MNIST.reference(), &mlp).unwrap();
		let err = check(&MNIST.reference(), &gpt(256)).unwrap_err().to_string();
		assert!(err.contains("cannot train"), "{err}");
		let err = load(&store, &MNIST.reference(), &gpt(256)).err().unwrap().to_string();
		assert!(err.contains("cannot train on mnist-idx data"), "{err}");
		let err = load(&store, &SHAKESPEARE.reference(), &gpt(65)).err().unwrap().to_string();
		assert!(err.contains("vocabulary has 65"), "{err}");
		// A ResNet reads MNIST when its images are MNIST's shape, and only then.
		let resnet = |channels, side| {
			ModelSpec::ResNet(grid_primitives::resnet::ResNetConfig {
				channels,
				side,
				classes: 10,
				width: 2,
				stages: 1,
				blocks: 1,
			})
		};
		assert!(matches!(
			load(&store, &MNIST.reference(), &resnet(1, 28)).unwrap(),
			Dataset::Mnist(_)
		));
		check(&MNIST.reference(), &resnet(1, 28)).unwrap();
		assert!(check(&MNIST.reference(), &resnet(3, 32)).is_err());
		let err = load(&store, &MNIST.reference(), &resnet(3, 32)).err().unwrap().to_string();
		assert!(err.contains("reads 3x32x32 images") && err.contains("holds 1x28x28"), "{err}");
		let mut foreign = MNIST.reference();
		foreign.uri = BoundedBytes::truncate_from(b"ipfs://Qm".to_vec());
		let err = check(&foreign, &mlp).unwrap_err().to_string();
		assert!(err.contains("ipfs://Qm"), "{err}");
		// A reference the store does not hold says how to get it.
		foreign.content_hash = polkadot_sdk::sp_core::H256::repeat_byte(1);
		let err = load(&store, &foreign, &mlp).err().unwrap().to_string();
		assert!(err.contains("data fetch"), "{err}");
	}
}
