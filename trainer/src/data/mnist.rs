//! MNIST in the standard IDX format (gzip'd or raw): training images and labels, and the test
//! files as the held-out split. Pixels become f32 in 0..1.

use std::{io::Read, path::Path};

use candle_core::Device;

use grid_primitives::{datasets::MNIST, manifest::MNIST_FILES};

use super::{
	check_samples, first_batches, image_batch,
	store::{shipped_manifest, Located},
};
use crate::{
	error::{Error, Result},
	model::{mnist::PIXELS, Batch},
};

/// IDX type code of unsigned bytes.
const IDX_UBYTE: u8 = 0x08;
/// Largest decompressed IDX file accepted (guards against gzip bombs).
const MAX_IDX_BYTES: u64 = 1 << 30;

/// Where to find one split's two files (checked against their dataset's manifest before).
pub struct MnistFiles<'a> {
	/// Images, `idx3-ubyte` (optionally `.gz`).
	pub images: &'a Path,
	/// Labels, `idx1-ubyte` (optionally `.gz`).
	pub labels: &'a Path,
}

/// Images `[n, 784]` as bytes and their labels.
struct Split {
	images: Vec<u8>,
	labels: Vec<u8>,
}

/// The training and held-out digits.
pub struct MnistDataset {
	train: Split,
	test: Split,
}

fn gunzip_if_needed(path: &Path, bytes: Vec<u8>) -> Result<Vec<u8>> {
	if bytes.starts_with(&[0x1f, 0x8b]) {
		let mut out = Vec::new();
		flate2::read::GzDecoder::new(&bytes[..])
			.take(MAX_IDX_BYTES)
			.read_to_end(&mut out)
			.map_err(|e| Error::bad_data(path, format!("corrupt or truncated gzip: {e}")))?;
		Ok(out)
	} else {
		Ok(bytes)
	}
}

/// Parses an IDX file of unsigned bytes with `rank` dimensions; returns dims and the data.
fn parse_idx(path: &Path, bytes: &[u8], rank: u8) -> Result<(Vec<usize>, Vec<u8>)> {
	let bad = |reason: String| Error::bad_data(path, reason);
	if bytes.len() < 4 || bytes[0] != 0 || bytes[1] != 0 {
		return Err(bad("not an IDX file (bad magic number)".into()));
	}
	if bytes[2] != IDX_UBYTE || bytes[3] != rank {
		return Err(bad(format!(
			"IDX type 0x{:02x} with {} dimensions; expected unsigned bytes with {rank}",
			bytes[2], bytes[3]
		)));
	}
	let header = 4 + 4 * usize::from(rank);
	if bytes.len() < header {
		return Err(bad(format!("truncated IDX header ({} bytes)", bytes.len())));
	}
	let dims: Vec<usize> = bytes[4..header]
		.chunks_exact(4)
		.map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
		.collect();
	let expected = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
	let data = &bytes[header..];
	match expected {
		Some(n) if n == data.len() => Ok((dims, data.to_vec())),
		Some(n) => Err(bad(format!(
			"IDX dimensions {dims:?} need {n} data bytes, the file has {} (truncated?)",
			data.len()
		))),
		None => Err(bad(format!("IDX dimensions {dims:?} overflow"))),
	}
}

/// Reads, hash-checks, decompresses and parses one IDX file.
fn read_idx(path: &Path, rank: u8) -> Result<(Vec<usize>, Vec<u8>)> {
	let raw = std::fs::read(path).map_err(|e| Error::io("reading", path, e))?;
	parse_idx(path, &gunzip_if_needed(path, raw)?, rank)
}

fn load_split(files: &MnistFiles) -> Result<Split> {
	let (dims, images) = read_idx(files.images, 3)?;
	if dims[1] * dims[2] != PIXELS {
		return Err(Error::bad_data(files.images, format!("images are {dims:?}, not n×28×28")));
	}
	let (ldims, labels) = read_idx(files.labels, 1)?;
	if ldims[0] != dims[0] {
		return Err(Error::bad_data(
			files.labels,
			format!("{} labels for {} images", ldims[0], dims[0]),
		));
	}
	if let Some(bad) = labels.iter().find(|&&l| l > 9) {
		return Err(Error::bad_data(files.labels, format!("label {bad} is not a digit")));
	}
	if dims[0] == 0 {
		return Err(Error::bad_data(files.images, "no images"));
	}
	Ok(Split { images, labels })
}

impl MnistDataset {
	/// Loads a training and a held-out split.
	pub fn load(train: &MnistFiles, test: &MnistFiles) -> Result<Self> {
		Ok(MnistDataset { train: load_split(train)?, test: load_split(test)? })
	}

	/// The MNIST dataset held whole at `located` (its files checked against the manifest
	/// already): the `train-*` files train, the `t10k-*` files are held out.
	pub fn open(located: &Located) -> Result<Self> {
		let path = |stem: &str| -> Result<std::path::PathBuf> {
			let file = located
				.manifest
				.files
				.iter()
				.find(|f| f.name.strip_suffix(".gz").unwrap_or(&f.name) == stem);
			file.map(|f| located.dir.join(&f.name)).ok_or_else(|| {
				Error::bad_data(&located.dir, format!("no {stem} among the dataset's files"))
			})
		};
		let [train_images, train_labels, test_images, test_labels] = MNIST_FILES;
		let paths =
			[path(train_images)?, path(train_labels)?, path(test_images)?, path(test_labels)?];
		let train = MnistFiles { images: &paths[0], labels: &paths[1] };
		let test = MnistFiles { images: &paths[2], labels: &paths[3] };
		Self::load(&train, &test)
	}

	/// The 10,000-digit subset shipped in the repository's `data/mnist`, hash-checked.
	pub fn shipped() -> Result<Self> {
		Self::open(&shipped_manifest(&MNIST)?)
	}

	/// Number of training digits.
	pub fn train_len(&self) -> u64 {
		self.train.labels.len() as u64
	}

	fn batch(split: &Split, indices: &[u64], device: &Device) -> Result<Batch> {
		let mut pixels = Vec::with_capacity(indices.len() * PIXELS);
		let mut labels = Vec::with_capacity(indices.len());
		for &i in indices {
			let i = i as usize;
			let img = &split.images[i * PIXELS..(i + 1) * PIXELS];
			pixels.extend(img.iter().map(|&p| f32::from(p) / 255.0));
			labels.push(u32::from(split.labels[i]));
		}
		image_batch(pixels, labels, device)
	}

	/// The training digits at `indices` (each below [`MnistDataset::train_len`]).
	pub fn train_batch(&self, indices: &[u64], device: &Device) -> Result<Batch> {
		check_samples(indices, self.train_len(), "training digits")?;
		Self::batch(&self.train, indices, device)
	}

	/// The first `max_samples` held-out digits in batches of `batch_size`.
	pub fn eval_batches(
		&self,
		max_samples: usize,
		batch_size: usize,
		device: &Device,
	) -> Result<Vec<Batch>> {
		let len = self.test.labels.len() as u64;
		first_batches(len, max_samples, batch_size, |c| Self::batch(&self.test, c, device))
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::data::shipped_dir;

	#[test]
	fn shipped_subset_loads_with_the_documented_sizes() {
		let d = MnistDataset::shipped().unwrap();
		assert_eq!(d.train_len(), 8_990);
		assert_eq!(d.test.labels.len(), 1_010);
		let b = d.train_batch(&[0, 1, 2], &Device::Cpu).unwrap();
		assert_eq!(b.inputs.dims(), &[3, 784]);
		let max = b.inputs.max_all().unwrap().to_scalar::<f32>().unwrap();
		assert!(max > 0.5 && max <= 1.0);
		assert!(d.train_batch(&[8_990], &Device::Cpu).is_err());
	}

	#[test]
	fn truncated_and_malformed_files_get_clear_errors() {
		let dir = tempfile::tempdir().unwrap();
		let src = shipped_dir().join("mnist/t10k-labels-idx1-ubyte.gz");
		let gz = std::fs::read(&src).unwrap();
		let labels = gunzip_if_needed(&src, gz.clone()).unwrap();
		let write = |name: &str, bytes: &[u8]| {
			let p = dir.path().join(name);
			std::fs::write(&p, bytes).unwrap();
			p
		};
		let cases = [
			(write("cut.gz", &gz[..gz.len() / 2]), "truncated gzip"),
			(write("short-labels", &labels[..labels.len() - 3]), "truncated?"),
			(write("not-idx", b"hello world"), "bad magic"),
			(write("header", &[0, 0, 8, 1, 0]), "truncated IDX header"),
			(write("wrong-type", &[0, 0, 0x0d, 1, 0, 0, 0, 0]), "IDX type 0x0d"),
		];
		for (path, needle) in &cases {
			let err = read_idx(path, 1).err().unwrap().to_string();
			assert!(err.contains(needle) && err.contains(&*path.to_string_lossy()), "{err}");
		}
		// Labels that do not match the images in number.
		let images = shipped_dir().join("mnist/t10k-images-idx3-ubyte.gz");
		let mut few = labels[..8].to_vec();
		few[4..8].copy_from_slice(&5u32.to_be_bytes()); // claims 5 labels
		few.extend_from_slice(&[1, 2, 3, 4, 5]);
		let few = write("few-labels", &few);
		let files = MnistFiles { images: &images, labels: &few };
		let err = load_split(&files).err().unwrap().to_string();
		assert!(err.contains("5 labels for 1010 images"), "{err}");
		// A label that is not a digit.
		let mut bad = labels.clone();
		bad[8] = 12;
		let bad = write("bad-label", &bad);
		let files = MnistFiles { images: &images, labels: &bad };
		let err = load_split(&files).err().unwrap().to_string();
		assert!(err.contains("label 12"), "{err}");
	}
}
