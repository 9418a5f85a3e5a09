//! CIFAR-10 in its binary form (`cifar-10-binary.tar.gz` unpacked): `data_batch_*.bin` train,
//! `test_batch.bin` is held out. Each record is a label byte (0..9) and 3,072 pixel bytes, the
//! red, green and blue 32×32 planes in turn (channel-major, as the ResNet reads them); pixels
//! become f32 in 0..1. Records are read where they lie, one positioned read each, so a dataset
//! of any size is never loaded whole; opening it reads each label once, so a bad one is
//! refused before a provider joins rather than in the middle of a round.

use std::{fs::File, os::unix::fs::FileExt, path::PathBuf};

use candle_core::Device;
use grid_primitives::{
	datasets::ImageShape,
	manifest::{is_cifar10_train_file, CIFAR10_RECORD, CIFAR10_TEST_FILE},
};

use super::{check_samples, first_batches, image_batch, store::Located};
use crate::{
	error::{Error, Result},
	model::Batch,
};

/// Classes (`ImageShape::CIFAR10`'s).
const CLASSES: u16 = ImageShape::CIFAR10.classes;
/// Pixel bytes per image: the record but its label.
pub const PIXELS: usize = CIFAR10_RECORD as usize - 1;
/// Bytes per record: the label, then the pixels.
const RECORD: u64 = CIFAR10_RECORD;

/// Records in files, read in place.
struct Records {
	files: Vec<(PathBuf, File, u64)>,
	len: u64,
}

impl Records {
	/// Opens `paths` and checks that each is whole records with labels below 10.
	fn open(paths: &[PathBuf]) -> Result<Self> {
		let mut files = Vec::with_capacity(paths.len());
		let mut len = 0;
		for path in paths {
			let file = File::open(path).map_err(|e| Error::io("opening", path, e))?;
			let size = file.metadata().map_err(|e| Error::io("reading", path, e))?.len();
			if size == 0 || size % RECORD != 0 {
				return Err(Error::bad_data(
					path,
					format!("{size} bytes is not a whole number of {RECORD}-byte CIFAR-10 records"),
				));
			}
			let records = size / RECORD;
			for r in 0..records {
				let mut label = [0u8];
				file.read_exact_at(&mut label, r * RECORD)
					.map_err(|e| Error::io("reading", path, e))?;
				if label[0] >= CLASSES as u8 {
					return Err(Error::bad_data(
						path,
						format!("record {r} has label {}, not a class below {CLASSES}", label[0]),
					));
				}
			}
			files.push((path.clone(), file, records));
			len += records;
		}
		Ok(Records { files, len })
	}

	/// Record `sample`'s label and pixels (appended to `pixels`, scaled to 0..1).
	fn read(&self, sample: u64, pixels: &mut Vec<f32>) -> Result<u32> {
		let mut i = sample;
		for (path, file, records) in &self.files {
			if i < *records {
				let mut record = vec![0u8; RECORD as usize];
				file.read_exact_at(&mut record, i * RECORD)
					.map_err(|e| Error::io("reading", path, e))?;
				pixels.extend(record[1..].iter().map(|&p| f32::from(p) / 255.0));
				return Ok(u32::from(record[0]));
			}
			i -= records;
		}
		Err(Error::Config(format!("sample {sample} is outside the {} records", self.len)))
	}

	fn batch(&self, indices: &[u64], device: &Device) -> Result<Batch> {
		let mut pixels = Vec::with_capacity(indices.len() * PIXELS);
		let labels = indices.iter().map(|&i| self.read(i, &mut pixels)).collect::<Result<_>>()?;
		image_batch(pixels, labels, device)
	}
}

/// The training and held-out images of a CIFAR-10 dataset.
pub struct CifarDataset {
	train: Records,
	test: Records,
}

impl CifarDataset {
	/// The dataset held whole at `located` (its files checked against the manifest already,
	/// whose layout check admits only CIFAR-10's files, in whole records).
	pub fn open(located: &Located) -> Result<Self> {
		let named = |keep: &dyn Fn(&str) -> bool| -> Vec<PathBuf> {
			let files = located.manifest.files.iter().filter(|f| keep(&f.name));
			files.map(|f| located.dir.join(&f.name)).collect()
		};
		let train = named(&|name| is_cifar10_train_file(name));
		let test = named(&|name| name == CIFAR10_TEST_FILE);
		if train.is_empty() || test.is_empty() {
			return Err(Error::bad_data(
				&located.dir,
				"not CIFAR-10: its training or test batches are missing",
			));
		}
		Ok(CifarDataset { train: Records::open(&train)?, test: Records::open(&test)? })
	}

	/// Number of training images.
	pub fn train_len(&self) -> u64 {
		self.train.len
	}

	/// The training images at `indices` (each below [`CifarDataset::train_len`]).
	pub fn train_batch(&self, indices: &[u64], device: &Device) -> Result<Batch> {
		check_samples(indices, self.train.len, "training images")?;
		self.train.batch(indices, device)
	}

	/// The first `max_samples` held-out images in batches of `batch_size`.
	pub fn eval_batches(
		&self,
		max_samples: usize,
		batch_size: usize,
		device: &Device,
	) -> Result<Vec<Batch>> {
		first_batches(self.test.len, max_samples, batch_size, |c| self.test.batch(c, device))
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::data::DataStore;
	use grid_primitives::manifest::DatasetFormat;

	/// `n` records whose label is `(i + salt) % 10` and whose pixels are `(i + p) % 256`.
	fn records(n: usize, salt: usize) -> Vec<u8> {
		(0..n)
			.flat_map(|i| {
				let label = ((i + salt) % 10) as u8;
				std::iter::once(label).chain((0..PIXELS).map(move |p| ((i + p) % 256) as u8))
			})
			.collect()
	}

	/// A file's name and bytes.
	type Named<'a> = (&'a str, Vec<u8>);

	fn publish(files: &[Named]) -> (tempfile::TempDir, Result<Located>) {
		let tmp = tempfile::tempdir().unwrap();
		let dir = tmp.path().join("cifar");
		std::fs::create_dir_all(&dir).unwrap();
		for (name, bytes) in files {
			std::fs::write(dir.join(name), bytes).unwrap();
		}
		let store = DataStore::new(tmp.path().join("store"));
		let located = store
			.publish(&dir, DatasetFormat::Cifar10)
			.and_then(|m| store.locate(&m.hash()).map(|l| l.expect("just published")));
		(tmp, located)
	}

	#[test]
	fn records_round_trip_from_every_batch_file() {
		let (_tmp, located) = publish(&[
			("data_batch_1.bin", records(3, 0)),
			("data_batch_2.bin", records(2, 5)),
			("test_batch.bin", records(4, 1)),
			("batches.meta.txt", b"airplane\nautomobile\n".to_vec()),
		]);
		let data = CifarDataset::open(&located.unwrap()).unwrap();
		assert_eq!(data.train_len(), 5);
		// Sample 3 is the second file's first record: label 5, pixels p % 256.
		let batch = data.train_batch(&[3, 0], &Device::Cpu).unwrap();
		assert_eq!(batch.inputs.dims(), [2, PIXELS]);
		assert_eq!(batch.targets.to_vec1::<u32>().unwrap(), [5, 0]);
		let rows = batch.inputs.to_vec2::<f32>().unwrap();
		assert_eq!(rows[0][..3], [0.0, 1.0 / 255.0, 2.0 / 255.0]);
		assert_eq!(rows[0][255], 1.0);
		assert!(data.train_batch(&[5], &Device::Cpu).is_err());
		let err = data.train.read(7, &mut Vec::new()).unwrap_err().to_string();
		assert!(err.contains("sample 7 is outside the 5 records"), "{err}");
		let eval = data.eval_batches(10, 3, &Device::Cpu).unwrap();
		let labels: Vec<Vec<u32>> = eval.iter().map(|b| b.targets.to_vec1().unwrap()).collect();
		assert_eq!(labels, [vec![1, 2, 3], vec![4]]);
	}

	#[test]
	fn malformed_files_are_refused_saying_why() {
		let mut bad_label = records(2, 0);
		bad_label[RECORD as usize] = 11;
		let cases: [(&[Named], &str); 5] = [
			(
				&[
					("data_batch_1.bin", records(2, 0)[..5000].to_vec()),
					("test_batch.bin", records(1, 0)),
				],
				"not a whole number",
			),
			(
				&[("data_batch_1.bin", bad_label), ("test_batch.bin", records(1, 0))],
				"record 1 has label 11",
			),
			(&[("data_batch_1.bin", records(1, 0))], "needs its test_batch.bin"),
			(&[("test_batch.bin", records(1, 0))], "at least one data_batch"),
			(
				&[
					("data_batch_1.bin", records(1, 0)),
					("test_batch.bin", records(1, 0)),
					("cat.png", vec![1]),
				],
				"not one of CIFAR-10's files",
			),
		];
		for (files, needle) in cases {
			let (_tmp, located) = publish(files);
			let err =
				located.and_then(|l| CifarDataset::open(&l).map(drop)).unwrap_err().to_string();
			assert!(err.contains(needle), "{needle}: {err}");
		}
	}
}
