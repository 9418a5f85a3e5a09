//! Content-addressed datasets. A dataset is described by a manifest: its format and its files,
//! each file by its size and the BLAKE3 hash of each of its [`CHUNK_BYTES`] chunks. The
//! manifest's own hash (of its SCALE bytes) is what a job's
//! [`DatasetRef::content_hash`](crate::job::DatasetRef) names, so one 32-byte hash pins every
//! byte of the data: a trainer fetches the manifest, checks it against the hash, then checks
//! each chunk as it arrives from whoever serves it.

use alloc::{string::String, vec::Vec};
use core::fmt;

use codec::{Decode, Encode};
use polkadot_sdk::{
	sp_core::H256,
	sp_runtime::traits::{BlakeTwo256, Hash},
};

/// BLAKE2b-256 of `bytes`.
fn blake2_256(bytes: &[u8]) -> [u8; 32] {
	BlakeTwo256::hash(bytes).0
}

/// Bytes per chunk (the last chunk of a file may be shorter): the unit a holder serves and a
/// fetcher checks, small enough that a bad one costs little to refetch.
pub const CHUNK_BYTES: u64 = 1 << 20;
/// Most files a dataset holds.
pub const MAX_FILES: usize = 4096;
/// Longest file name (bytes).
pub const MAX_NAME_BYTES: usize = 255;
/// Largest manifest (bytes): about 500,000 chunk hashes, half a terabyte of data.
pub const MAX_MANIFEST_BYTES: usize = 16 << 20;

/// How a dataset's files are read (appended to, never reordered: the variant's index is in
/// every manifest's bytes, so in every dataset's reference).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Encode, Decode)]
pub enum DatasetFormat {
	/// UTF-8 text, one token per byte (a vocabulary of 256); several files are read as one
	/// stream in the manifest's (sorted) order.
	Text,
	/// Token ids as little-endian `u16` (nanoGPT's `.bin` files), read as one stream.
	TokensU16,
	/// Token ids as little-endian `u32`, read as one stream.
	TokensU32,
	/// MNIST's four IDX files under their usual names, each optionally gzipped
	/// (`train-images-idx3-ubyte[.gz]`, `train-labels-idx1-ubyte[.gz]`,
	/// `t10k-images-idx3-ubyte[.gz]`, `t10k-labels-idx1-ubyte[.gz]`).
	MnistIdx,
	/// UTF-8 text with a Hugging Face `tokenizer.json` among its files: the other files, in
	/// order, tokenized with it. The tokenizer is part of the dataset, so its hash pins it.
	TextBpe,
	/// A model's weights to start a job from (fine-tuning): one `safetensors` file, in Grid's
	/// parameter names or a Hugging Face layout Grid exports (Llama, GPT-2). Not training data.
	Weights,
	/// CIFAR-10's binary files: `data_batch_*.bin` train, `test_batch.bin` is held out; each
	/// record a label byte and 3x32x32 pixel bytes, channel-major.
	Cifar10,
	/// Labelled images as tensors in two `safetensors` files, `train.safetensors` and
	/// `test.safetensors` (held out), each holding `images` (`[N, channels, height, width]`:
	/// u8 pixels, scaled to 0..1, or f32 values used as they are) and `labels` (`[N]`: u8,
	/// u16, u32, i32 or i64 class ids).
	ImageSafetensors,
	/// The same as NumPy arrays (C order, little-endian): `train_images.npy`,
	/// `train_labels.npy`, `test_images.npy` and `test_labels.npy`.
	ImageNpy,
}

impl DatasetFormat {
	/// Every format, for messages and forms.
	pub const ALL: [DatasetFormat; 9] = [
		Self::Text,
		Self::TokensU16,
		Self::TokensU32,
		Self::TextBpe,
		Self::MnistIdx,
		Self::Cifar10,
		Self::ImageSafetensors,
		Self::ImageNpy,
		Self::Weights,
	];

	/// The format's name in files and on the command line.
	pub fn name(self) -> &'static str {
		match self {
			Self::Text => "text",
			Self::TokensU16 => "tokens-u16",
			Self::TokensU32 => "tokens-u32",
			Self::TextBpe => "text-bpe",
			Self::MnistIdx => "mnist-idx",
			Self::Weights => "weights",
			Self::Cifar10 => "cifar10-bin",
			Self::ImageSafetensors => "image-safetensors",
			Self::ImageNpy => "image-npy",
		}
	}

	/// The format called `name`.
	pub fn named(name: &str) -> Option<Self> {
		Self::ALL.into_iter().find(|f| f.name() == name)
	}

	/// Bytes per token of a format stored as a token stream (text: one); none for text that
	/// needs a tokenizer, and for images.
	pub fn token_bytes(self) -> Option<usize> {
		match self {
			Self::Text => Some(1),
			Self::TokensU16 => Some(2),
			Self::TokensU32 => Some(4),
			Self::TextBpe
			| Self::MnistIdx
			| Self::Cifar10
			| Self::ImageSafetensors
			| Self::ImageNpy
			| Self::Weights => None,
		}
	}
}

/// The tokenizer file of a [`DatasetFormat::TextBpe`] dataset.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// Bytes per record of a [`DatasetFormat::Cifar10`] file: a label, then 3x32x32 pixels.
pub const CIFAR10_RECORD: u64 = 1 + 3 * 32 * 32;
/// The held-out file of a [`DatasetFormat::Cifar10`] dataset.
pub const CIFAR10_TEST_FILE: &str = "test_batch.bin";
/// Files CIFAR-10's archive has beside its batches, which hold no images.
pub const CIFAR10_EXTRAS: [&str; 2] = ["batches.meta.txt", "readme.html"];

/// Whether `name` is one of CIFAR-10's training files (`data_batch_*.bin`).
pub fn is_cifar10_train_file(name: &str) -> bool {
	name.starts_with("data_batch_") && name.ends_with(".bin")
}

/// The files of a [`DatasetFormat::ImageSafetensors`] dataset, sorted.
pub const IMAGE_SAFETENSORS_FILES: [&str; 2] = ["test.safetensors", "train.safetensors"];
/// The files of a [`DatasetFormat::ImageNpy`] dataset, sorted.
pub const IMAGE_NPY_FILES: [&str; 4] =
	["test_images.npy", "test_labels.npy", "train_images.npy", "train_labels.npy"];

/// The suffix of a [`DatasetFormat::Weights`] dataset's one file.
pub const WEIGHTS_SUFFIX: &str = ".safetensors";

/// The MNIST files a [`DatasetFormat::MnistIdx`] dataset holds, without `.gz`.
pub const MNIST_FILES: [&str; 4] = [
	"train-images-idx3-ubyte",
	"train-labels-idx1-ubyte",
	"t10k-images-idx3-ubyte",
	"t10k-labels-idx1-ubyte",
];

/// One file of a dataset.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode)]
pub struct ManifestFile {
	/// Its name: one path component, no separators.
	pub name: String,
	/// Its length in bytes.
	pub size: u64,
	/// BLAKE3 of each chunk, in order (the trainer's `data::store::chunk_hash`).
	pub chunks: Vec<H256>,
}

impl ManifestFile {
	/// The byte range of chunk `index` in the file.
	pub fn chunk_range(&self, index: u32) -> Option<core::ops::Range<u64>> {
		let start = u64::from(index).checked_mul(CHUNK_BYTES)?;
		(start < self.size).then(|| start..(start + CHUNK_BYTES).min(self.size))
	}
}

/// Chunks a file of `size` bytes has.
pub fn chunk_count(size: u64) -> u64 {
	size.div_ceil(CHUNK_BYTES)
}

/// A dataset: its format and files, sorted by name.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode)]
pub struct DatasetManifest {
	/// How its files are read.
	pub format: DatasetFormat,
	/// Its files, sorted by name, names unique.
	pub files: Vec<ManifestFile>,
}

/// Why a manifest is not a dataset's.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ManifestError {
	/// The bytes do not decode as a manifest (or have bytes left over).
	Malformed,
	/// The manifest is over [`MAX_MANIFEST_BYTES`].
	TooLarge(usize),
	/// The manifest's hash is not the one asked for.
	HashMismatch {
		/// Asked for.
		expected: H256,
		/// What the bytes hash to.
		actual: H256,
	},
	/// No files, or more than [`MAX_FILES`].
	FileCount(usize),
	/// A name that is empty, too long, has a separator or a NUL, or is `.` or `..`.
	BadName(String),
	/// Files not sorted by name, or a name twice.
	Unsorted(String),
	/// A file whose chunk list does not match its size.
	ChunkCount {
		/// The file.
		name: String,
		/// Chunks its size needs.
		expected: u64,
		/// Chunks listed.
		listed: usize,
	},
	/// A file the format needs is missing, or one it cannot read is there.
	Layout(String),
}

impl fmt::Display for ManifestError {
	fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
		match self {
			Self::Malformed => f.write_str("the bytes are not a dataset manifest"),
			Self::TooLarge(n) => {
				write!(f, "a manifest of {n} bytes is over the limit of {MAX_MANIFEST_BYTES}")
			}
			Self::HashMismatch { expected, actual } => {
				write!(f, "the manifest hashes to {actual:?}, not the {expected:?} asked for")
			}
			Self::FileCount(n) => write!(f, "{n} files (a dataset has 1 to {MAX_FILES})"),
			Self::BadName(name) => write!(f, "{name:?} is not a plain file name"),
			Self::Unsorted(name) => write!(f, "files are not sorted by unique name at {name:?}"),
			Self::ChunkCount { name, expected, listed } => {
				write!(f, "{name}: its size needs {expected} chunks, {listed} are listed")
			}
			Self::Layout(why) => f.write_str(why),
		}
	}
}

impl DatasetManifest {
	/// The hash a job names the dataset by: BLAKE2b-256 of the manifest's SCALE bytes.
	pub fn hash(&self) -> H256 {
		H256(blake2_256(&self.encode()))
	}

	/// Total bytes of its files.
	pub fn size(&self) -> u64 {
		self.files.iter().map(|f| f.size).sum()
	}

	/// The manifest in `bytes`, checked to hash to `expected` and to be well formed.
	pub fn decode_checked(bytes: &[u8], expected: &H256) -> Result<Self, ManifestError> {
		if bytes.len() > MAX_MANIFEST_BYTES {
			return Err(ManifestError::TooLarge(bytes.len()));
		}
		let actual = H256(blake2_256(bytes));
		if actual != *expected {
			return Err(ManifestError::HashMismatch { expected: *expected, actual });
		}
		let mut input = bytes;
		let manifest = Self::decode(&mut input).map_err(|_| ManifestError::Malformed)?;
		if !input.is_empty() {
			return Err(ManifestError::Malformed);
		}
		manifest.validate()?;
		Ok(manifest)
	}

	/// Checks names, order, chunk counts and the format's layout.
	pub fn validate(&self) -> Result<(), ManifestError> {
		if self.files.is_empty() || self.files.len() > MAX_FILES {
			return Err(ManifestError::FileCount(self.files.len()));
		}
		for (i, file) in self.files.iter().enumerate() {
			if !plain_name(&file.name) {
				return Err(ManifestError::BadName(file.name.clone()));
			}
			if i > 0 && self.files[i - 1].name >= file.name {
				return Err(ManifestError::Unsorted(file.name.clone()));
			}
			let expected = chunk_count(file.size);
			if file.chunks.len() as u64 != expected {
				return Err(ManifestError::ChunkCount {
					name: file.name.clone(),
					expected,
					listed: file.chunks.len(),
				});
			}
		}
		self.check_layout()
	}

	/// CIFAR-10: training batches and one test batch of whole records (and the archive's
	/// other files, which are ignored), nothing else.
	fn check_cifar10(&self) -> Result<(), ManifestError> {
		let layout = |reason: alloc::string::String| Err(ManifestError::Layout(reason));
		let (mut train, mut test) = (0, 0);
		for file in &self.files {
			let name = file.name.as_str();
			if name == CIFAR10_TEST_FILE {
				test += 1;
			} else if is_cifar10_train_file(name) {
				train += 1;
			} else if CIFAR10_EXTRAS.contains(&name) {
				continue;
			} else {
				return layout(alloc::format!(
					"{name} is not one of CIFAR-10's files (data_batch_*.bin, {CIFAR10_TEST_FILE}, {})",
					CIFAR10_EXTRAS.join(", ")
				));
			}
			if file.size == 0 || file.size % CIFAR10_RECORD != 0 {
				return layout(alloc::format!(
					"{name}: {} bytes is not a whole number of {CIFAR10_RECORD}-byte records",
					file.size
				));
			}
		}
		match (train, test) {
			(0, _) => layout("CIFAR-10 needs at least one data_batch_*.bin".into()),
			(_, 0) => layout(alloc::format!("CIFAR-10 needs its {CIFAR10_TEST_FILE}")),
			_ => Ok(()),
		}
	}

	/// The format's needs: token streams a whole number of tokens per file; BPE text its
	/// tokenizer and some text; MNIST its four files and nothing else.
	fn check_layout(&self) -> Result<(), ManifestError> {
		if self.format == DatasetFormat::TextBpe {
			let tokenizers = self.files.iter().filter(|f| f.name == TOKENIZER_FILE).count();
			return match (tokenizers, self.files.len()) {
				(1, n) if n > 1 => Ok(()),
				(1, _) => Err(ManifestError::Layout("no text beside the tokenizer".into())),
				_ => Err(ManifestError::Layout(alloc::format!(
					"BPE text needs its {TOKENIZER_FILE} among its files"
				))),
			};
		}
		if self.format == DatasetFormat::Cifar10 {
			return self.check_cifar10();
		}
		let exact = match self.format {
			DatasetFormat::ImageSafetensors => Some(&IMAGE_SAFETENSORS_FILES[..]),
			DatasetFormat::ImageNpy => Some(&IMAGE_NPY_FILES[..]),
			_ => None,
		};
		if let Some(names) = exact {
			let held: alloc::vec::Vec<&str> = self.files.iter().map(|f| f.name.as_str()).collect();
			return if held == names {
				Ok(())
			} else {
				Err(ManifestError::Layout(alloc::format!(
					"{} data is exactly the files {}, not {}",
					self.format.name(),
					names.join(", "),
					held.join(", ")
				)))
			};
		}
		if self.format == DatasetFormat::Weights {
			return match self.files.as_slice() {
				[file] if file.name.ends_with(WEIGHTS_SUFFIX) => Ok(()),
				_ => Err(ManifestError::Layout(alloc::format!(
					"weights are one {WEIGHTS_SUFFIX} file"
				))),
			};
		}
		match self.format.token_bytes() {
			Some(width) => match self.files.iter().find(|f| f.size % width as u64 != 0) {
				Some(f) => Err(ManifestError::Layout(alloc::format!(
					"{}: {} bytes is not a whole number of {width}-byte tokens",
					f.name,
					f.size
				))),
				None => Ok(()),
			},
			None => {
				for file in &self.files {
					let stem = file.name.strip_suffix(".gz").unwrap_or(&file.name);
					if !MNIST_FILES.contains(&stem) {
						return Err(ManifestError::Layout(alloc::format!(
							"{} is not one of MNIST's files ({})",
							file.name,
							MNIST_FILES.join(", ")
						)));
					}
				}
				for stem in MNIST_FILES {
					let found = self
						.files
						.iter()
						.filter(|f| f.name.strip_suffix(".gz").unwrap_or(&f.name) == stem);
					if found.count() != 1 {
						return Err(ManifestError::Layout(alloc::format!(
							"MNIST needs exactly one {stem} (optionally .gz)"
						)));
					}
				}
				Ok(())
			}
		}
	}

	/// The file called `name`.
	pub fn file(&self, name: &str) -> Option<&ManifestFile> {
		self.files.iter().find(|f| f.name == name)
	}
}

/// Whether `name` is one path component a store can hold safely.
fn plain_name(name: &str) -> bool {
	!name.is_empty()
		&& name.len() <= MAX_NAME_BYTES
		&& name != "."
		&& name != ".."
		&& !name.contains(['/', '\\', '\0'])
}

#[cfg(test)]
mod tests {
	use super::*;
	use alloc::{string::ToString, vec};

	fn file(name: &str, size: u64) -> ManifestFile {
		let chunks = (0..chunk_count(size)).map(|i| H256::repeat_byte(i as u8)).collect();
		ManifestFile { name: name.into(), size, chunks }
	}

	#[test]
	fn a_manifest_round_trips_by_its_hash_and_tampering_is_refused() {
		let m = DatasetManifest {
			format: DatasetFormat::TokensU16,
			files: vec![file("a.bin", 10), file("b.bin", CHUNK_BYTES * 2 + 2)],
		};
		let bytes = m.encode();
		assert_eq!(DatasetManifest::decode_checked(&bytes, &m.hash()), Ok(m.clone()));
		let mut tampered = bytes.clone();
		*tampered.last_mut().unwrap() ^= 1;
		assert!(matches!(
			DatasetManifest::decode_checked(&tampered, &m.hash()),
			Err(ManifestError::HashMismatch { .. })
		));
		let mut trailing = bytes.clone();
		trailing.push(0);
		let hash = H256(blake2_256(&trailing));
		assert_eq!(
			DatasetManifest::decode_checked(&trailing, &hash),
			Err(ManifestError::Malformed)
		);
		assert_eq!(m.size(), CHUNK_BYTES * 2 + 12);
		assert_eq!(m.files[1].chunk_range(2), Some(2 * CHUNK_BYTES..2 * CHUNK_BYTES + 2));
		assert_eq!(m.files[1].chunk_range(3), None);
	}

	#[test]
	fn malformed_manifests_say_what_is_wrong() {
		let text = |files| DatasetManifest { format: DatasetFormat::Text, files };
		let cases = [
			(text(vec![]), "0 files"),
			(text(vec![file("../etc", 1)]), "not a plain file name"),
			(text(vec![file("", 1)]), "not a plain file name"),
			(text(vec![file("b", 1), file("a", 1)]), "not sorted"),
			(text(vec![file("a", 1), file("a", 1)]), "not sorted"),
			(
				DatasetManifest { format: DatasetFormat::TokensU32, files: vec![file("x", 6)] },
				"whole number of 4-byte tokens",
			),
			(
				DatasetManifest { format: DatasetFormat::MnistIdx, files: vec![file("x", 6)] },
				"not one of MNIST's files",
			),
			(
				DatasetManifest {
					format: DatasetFormat::MnistIdx,
					files: vec![file("train-images-idx3-ubyte", 6)],
				},
				"exactly one train-labels-idx1-ubyte",
			),
		];
		for (manifest, expected) in cases {
			let err = manifest.validate().unwrap_err().to_string();
			assert!(err.contains(expected), "{expected}: {err}");
		}
		let mut short = file("a", CHUNK_BYTES + 1);
		short.chunks.pop();
		let err = text(vec![short]).validate().unwrap_err();
		assert_eq!(err, ManifestError::ChunkCount { name: "a".into(), expected: 2, listed: 1 });
		let cifar = |files| DatasetManifest { format: DatasetFormat::Cifar10, files };
		let record = CIFAR10_RECORD;
		for (files, expected) in [
			(
				vec![file("data_batch_1.bin", record + 1), file(CIFAR10_TEST_FILE, record)],
				"whole number of 3073-byte records",
			),
			(
				vec![file("data_batch_1.bin", record), file("zebra.png", 3)],
				"zebra.png is not one of CIFAR-10's files",
			),
			(vec![file(CIFAR10_TEST_FILE, record)], "at least one data_batch"),
			(
				vec![file("batches.meta.txt", 9), file("data_batch_1.bin", record)],
				"needs its test_batch.bin",
			),
		] {
			let err = cifar(files).validate().unwrap_err().to_string();
			assert!(err.contains(expected), "{expected}: {err}");
		}
		let whole = vec![
			file("batches.meta.txt", 9),
			file("data_batch_1.bin", 2 * record),
			file("data_batch_2.bin", record),
			file(CIFAR10_TEST_FILE, record),
		];
		assert!(cifar(whole).validate().is_ok());
		let bpe = |files| DatasetManifest { format: DatasetFormat::TextBpe, files };
		let err = bpe(vec![file("a.txt", 3)]).validate().unwrap_err().to_string();
		assert!(err.contains("needs its tokenizer.json"), "{err}");
		let err = bpe(vec![file(TOKENIZER_FILE, 3)]).validate().unwrap_err().to_string();
		assert!(err.contains("no text beside"), "{err}");
		assert!(bpe(vec![file("a.txt", 3), file(TOKENIZER_FILE, 3)]).validate().is_ok());
		let images = |format, names: &[&str]| DatasetManifest {
			format,
			files: names.iter().map(|n| file(n, 6)).collect(),
		};
		assert!(images(DatasetFormat::ImageSafetensors, &IMAGE_SAFETENSORS_FILES)
			.validate()
			.is_ok());
		assert!(images(DatasetFormat::ImageNpy, &IMAGE_NPY_FILES).validate().is_ok());
		let err = images(DatasetFormat::ImageNpy, &["train_images.npy", "train_labels.npy"])
			.validate()
			.unwrap_err()
			.to_string();
		assert!(err.contains("exactly the files test_images.npy"), "{err}");
		let err = images(
			DatasetFormat::ImageSafetensors,
			&["test.safetensors", "train.safetensors", "x"],
		)
		.validate()
		.unwrap_err();
		assert!(matches!(err, ManifestError::Layout(_)), "{err}");
		assert_eq!(DatasetFormat::named("image-npy"), Some(DatasetFormat::ImageNpy));
		assert_eq!(DatasetFormat::named("tokens-u16"), Some(DatasetFormat::TokensU16));
		assert_eq!(DatasetFormat::named("csv"), None);
	}
}
