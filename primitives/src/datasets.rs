//! The datasets every trainer ships (in the repository's `data/`), named in job specs by a
//! `grid:` URI and their manifest's hash ([`crate::manifest`]): ordinary content-addressed
//! datasets that every trainer happens to hold already. The one registry: the
//! trainer, the buyer's job files and (through `frontend/src/lib/spec-rules.json`, which a
//! trainer test writes) the web UI read it from here.

use crate::{
	job::{DatasetRef, ModelSpec},
	manifest::DatasetFormat,
	provider::BoundedBytes,
};
use polkadot_sdk::sp_core::H256;

/// What a model reads, so what data it can train on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DataKind {
	/// Labelled square images (MNIST's IDX files: 1, 28, 10; CIFAR-10's binary files: 3, 32, 10).
	Images(ImageShape),
	/// A token stream over a vocabulary of this size (256: bytes).
	Tokens {
		/// Distinct tokens.
		vocab: u32,
	},
}

/// Square images of `channels` colour planes, `side` pixels a side, in `classes` classes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ImageShape {
	/// Colour planes.
	pub channels: u8,
	/// Pixels a side.
	pub side: u16,
	/// Classes.
	pub classes: u16,
}

impl ImageShape {
	/// MNIST's digits.
	pub const MNIST: ImageShape = ImageShape { channels: 1, side: 28, classes: 10 };
	/// CIFAR-10's images.
	pub const CIFAR10: ImageShape = ImageShape { channels: 3, side: 32, classes: 10 };
}

impl core::fmt::Display for ImageShape {
	/// `1x28x28 images in 10 classes`.
	fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
		let ImageShape { channels, side, classes } = self;
		write!(f, "{channels}x{side}x{side} images in {classes} classes")
	}
}

impl DataKind {
	/// MNIST's digits.
	pub const MNIST: DataKind = DataKind::Images(ImageShape::MNIST);
	/// CIFAR-10's images.
	pub const CIFAR10: DataKind = DataKind::Images(ImageShape::CIFAR10);
}

/// A dataset shipped with every trainer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ShippedDataset {
	/// Its name in job files and the web UI.
	pub name: &'static str,
	/// Its URI on chain.
	pub uri: &'static str,
	/// Its manifest's hash ([`DatasetManifest::hash`](crate::manifest::DatasetManifest::hash)
	/// of its files as shipped): its content-addressed reference.
	pub content_hash: [u8; 32],
	/// Its file or directory under the shipped data directory.
	pub path: &'static str,
	/// How its files are read.
	pub format: DatasetFormat,
	/// What it holds.
	pub kind: DataKind,
}

/// The 10,000-digit MNIST subset in `data/mnist`.
pub const MNIST: ShippedDataset = ShippedDataset {
	name: "mnist",
	uri: "grid:mnist",
	content_hash: hex32("ce7dc16f6a6e336d343c422bbe8ae8ae7f89620b578b6957b2fae20d8c1d1bb9"),
	path: "mnist",
	format: DatasetFormat::MnistIdx,
	kind: DataKind::MNIST,
};

/// Tiny Shakespeare (`data/shakespeare.txt`), read as bytes.
pub const SHAKESPEARE: ShippedDataset = ShippedDataset {
	name: "shakespeare",
	uri: "grid:shakespeare",
	content_hash: hex32("ea65bb632953dceb5587bc036052b72585b03638dedf0f31d18acaa8eacacbad"),
	path: "shakespeare.txt",
	format: DatasetFormat::Text,
	kind: DataKind::Tokens { vocab: 256 },
};

/// Every shipped dataset.
pub static SHIPPED: [ShippedDataset; 2] = [MNIST, SHAKESPEARE];

impl ShippedDataset {
	/// The shipped dataset called `name` in job files.
	pub fn named(name: &str) -> Option<&'static ShippedDataset> {
		SHIPPED.iter().find(|d| d.name == name)
	}

	/// The shipped dataset at `uri` (whatever its hash).
	pub fn at(uri: &[u8]) -> Option<&'static ShippedDataset> {
		SHIPPED.iter().find(|d| d.uri.as_bytes() == uri)
	}

	/// How a job spec names it.
	pub fn reference(&self) -> DatasetRef {
		DatasetRef {
			content_hash: H256(self.content_hash),
			uri: BoundedBytes::truncate_from(self.uri.as_bytes().to_vec()),
		}
	}

	/// Whether `model` can train on it.
	pub fn fits(&self, model: &ModelSpec) -> bool {
		model.reads() == self.kind
	}
}

/// A 64-digit hex string (with or without `0x`) as 32 bytes; `None` for anything else.
pub const fn parse_hex32(text: &str) -> Option<[u8; 32]> {
	let digits = match text.as_bytes() {
		[b'0', b'x', rest @ ..] => rest,
		digits => digits,
	};
	if digits.len() != 64 {
		return None;
	}
	let mut out = [0u8; 32];
	let mut i = 0;
	while i < 32 {
		let (Some(high), Some(low)) = (nibble(digits[2 * i]), nibble(digits[2 * i + 1])) else {
			return None;
		};
		out[i] = high << 4 | low;
		i += 1;
	}
	Some(out)
}

/// [`parse_hex32`] for constants: a malformed literal fails the build.
pub const fn hex32(text: &str) -> [u8; 32] {
	match parse_hex32(text) {
		Some(hash) => hash,
		None => panic!("not a 32-byte hex hash"),
	}
}

const fn nibble(digit: u8) -> Option<u8> {
	match digit {
		b'0'..=b'9' => Some(digit - b'0'),
		b'a'..=b'f' => Some(digit - b'a' + 10),
		b'A'..=b'F' => Some(digit - b'A' + 10),
		_ => None,
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::job::{CnnConfig, GptConfig, MlpConfig};

	#[test]
	fn shipped_datasets_are_found_by_name_and_uri_and_fit_their_models() {
		assert_eq!(ShippedDataset::named("mnist"), Some(&MNIST));
		assert_eq!(ShippedDataset::at(b"grid:shakespeare"), Some(&SHAKESPEARE));
		assert_eq!(ShippedDataset::named("imagenet"), None);
		assert_eq!(ShippedDataset::at(b"ipfs://Qm"), None);
		let reference = SHAKESPEARE.reference();
		assert_eq!(reference.content_hash.0, SHAKESPEARE.content_hash);
		assert_eq!(&reference.uri[..], b"grid:shakespeare");

		let gpt =
			|vocab| ModelSpec::Gpt(GptConfig { vocab, context: 8, layers: 1, heads: 1, width: 8 });
		let mlp = ModelSpec::MnistMlp(MlpConfig { hidden: 8, layers: 1 });
		let cnn = ModelSpec::MnistCnn(CnnConfig { channels: 2, hidden: 8 });
		assert!(MNIST.fits(&mlp) && MNIST.fits(&cnn) && !MNIST.fits(&gpt(256)));
		assert!(SHAKESPEARE.fits(&gpt(256)) && !SHAKESPEARE.fits(&gpt(50_257)));
		assert!(!SHAKESPEARE.fits(&mlp));
	}

	#[test]
	fn hex_hashes_parse_and_bad_ones_are_refused() {
		let text = "ea65bb632953dceb5587bc036052b72585b03638dedf0f31d18acaa8eacacbad";
		assert_eq!(parse_hex32(text), Some(SHAKESPEARE.content_hash));
		assert_eq!(parse_hex32(&["0x", text].concat()), Some(SHAKESPEARE.content_hash));
		assert_eq!(parse_hex32(&text.to_uppercase()), Some(SHAKESPEARE.content_hash));
		assert_eq!(parse_hex32("abc"), None);
		assert_eq!(parse_hex32(&"zz".repeat(32)), None);
		assert_eq!(parse_hex32(&"0".repeat(66)), None);
	}
}
