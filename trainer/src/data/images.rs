//! Labelled images for classification as tensors: `safetensors` files
//! ([`DatasetFormat::ImageSafetensors`]: `train.safetensors` and `test.safetensors`, each with
//! `images` and `labels`) or NumPy arrays ([`DatasetFormat::ImageNpy`]: `train_images.npy`,
//! `train_labels.npy`, `test_images.npy`, `test_labels.npy`). Images are `[N, channels, height,
//! width]`, u8 pixels (scaled to 0..1) or f32 values (used as they are); labels are `[N]`
//! integer class ids. Arrays are read in place ([`super::arrays`]); opening checks the shapes
//! against the model and every label against its classes, so bad data is refused before a
//! provider joins rather than in the middle of a round.

use candle_core::Device;
use grid_primitives::{datasets::ImageShape, manifest::DatasetFormat};

use super::{
	arrays::{Array, Element},
	check_samples, first_batches, image_batch,
	store::Located,
};
use crate::{
	error::{Error, Result},
	model::Batch,
};

/// One split's images and labels.
struct Split {
	images: Array,
	labels: Array,
	/// Pixels are bytes, scaled to 0..1.
	scaled: bool,
}

impl Split {
	/// The split's arrays, checked against `shape`.
	fn checked(images: Array, labels: Array, shape: ImageShape) -> Result<Self> {
		let want = [usize::from(shape.channels), usize::from(shape.side), usize::from(shape.side)];
		if images.shape().len() != 4 || images.shape()[1..] != want || images.rows() == 0 {
			return Err(Error::bad_data(
				images.path(),
				format!(
					"images of shape {:?}; the model reads [N, {}, {}, {}] with N > 0",
					images.shape(),
					want[0],
					want[1],
					want[2]
				),
			));
		}
		let scaled = match images.element() {
			Element::U8 => true,
			Element::F32 => false,
			other => {
				return Err(Error::bad_data(
					images.path(),
					format!("images of {other:?}; Grid reads u8 pixels or f32 values"),
				))
			}
		};
		if labels.shape() != [images.rows()] || labels.element() == Element::F32 {
			return Err(Error::bad_data(
				labels.path(),
				format!(
					"labels of shape {:?} and type {:?}; {} images need [{}] integer labels",
					labels.shape(),
					labels.element(),
					images.rows(),
					images.rows()
				),
			));
		}
		for i in 0..labels.rows() {
			let mut label = 0.0;
			labels.row(i, |v| label = v)?;
			if !(0.0..f64::from(shape.classes)).contains(&label) {
				return Err(Error::bad_data(
					labels.path(),
					format!("label {i} is {label}, not a class below {}", shape.classes),
				));
			}
		}
		Ok(Split { images, labels, scaled })
	}

	fn len(&self) -> u64 {
		self.images.rows() as u64
	}

	fn batch(&self, indices: &[u64], device: &Device) -> Result<Batch> {
		let mut pixels = Vec::with_capacity(indices.len() * self.images.row_len());
		let mut labels = Vec::with_capacity(indices.len());
		let scale = if self.scaled { 1.0 / 255.0 } else { 1.0 };
		for &i in indices {
			let i = usize::try_from(i).map_err(|_| Error::Config(format!("sample {i}")))?;
			self.images.row(i, |v| pixels.push((v * scale) as f32))?;
			self.labels.row(i, |v| labels.push(v as u32))?;
		}
		image_batch(pixels, labels, device)
	}
}

/// The training and held-out images of a tensor image dataset.
pub struct ImageDataset {
	train: Split,
	test: Split,
}

impl ImageDataset {
	/// The dataset held whole at `located` (its files checked against the manifest, whose
	/// layout check admits exactly the format's files), for a model reading `shape`.
	pub fn open(located: &Located, shape: ImageShape) -> Result<Self> {
		let path = |name: &str| located.dir.join(name);
		let split = |prefix: &str| -> Result<Split> {
			let (images, labels) = match located.manifest.format {
				DatasetFormat::ImageSafetensors => {
					let file = path(&format!("{prefix}.safetensors"));
					(Array::safetensors(&file, "images")?, Array::safetensors(&file, "labels")?)
				}
				DatasetFormat::ImageNpy => (
					Array::npy(&path(&format!("{prefix}_images.npy")))?,
					Array::npy(&path(&format!("{prefix}_labels.npy")))?,
				),
				other => {
					return Err(Error::Config(format!(
						"{} data is not image tensors",
						other.name()
					)))
				}
			};
			Split::checked(images, labels, shape)
		};
		Ok(ImageDataset { train: split("train")?, test: split("test")? })
	}

	/// Number of training images.
	pub fn train_len(&self) -> u64 {
		self.train.len()
	}

	/// The training images at `indices` (each below [`ImageDataset::train_len`]), flattened
	/// to `[n, channels × side × side]`.
	pub fn train_batch(&self, indices: &[u64], device: &Device) -> Result<Batch> {
		check_samples(indices, self.train.len(), "training images")?;
		self.train.batch(indices, device)
	}

	/// The first `max_samples` held-out images in batches of `batch_size`.
	pub fn eval_batches(
		&self,
		max_samples: usize,
		batch_size: usize,
		device: &Device,
	) -> Result<Vec<Batch>> {
		first_batches(self.test.len(), max_samples, batch_size, |c| self.test.batch(c, device))
	}
}

#[cfg(test)]
mod tests {
	use std::collections::HashMap;

	use candle_core::Tensor;

	use super::*;
	use crate::data::{arrays::tests::npy, DataStore};

	const SHAPE: ImageShape = ImageShape { channels: 1, side: 2, classes: 3 };

	/// A file's name and bytes.
	type Named = (String, Vec<u8>);

	fn publish(format: DatasetFormat, files: &[Named]) -> (tempfile::TempDir, Result<Located>) {
		let tmp = tempfile::tempdir().unwrap();
		let dir = tmp.path().join("images");
		std::fs::create_dir_all(&dir).unwrap();
		for (name, bytes) in files {
			std::fs::write(dir.join(name), bytes).unwrap();
		}
		let store = DataStore::new(tmp.path().join("store"));
		let located = store
			.publish(&dir, format)
			.and_then(|m| store.locate(&m.hash()).map(|l| l.expect("just published")));
		(tmp, located)
	}

	/// `n` 1x2x2 images whose pixels are `4i + p` and labels `i % 3`, as npy files of `prefix`.
	fn npy_split(prefix: &str, n: usize) -> Vec<Named> {
		let pixels: Vec<u8> = (0..n * 4).map(|v| v as u8).collect();
		let labels: Vec<u8> = (0..n as i64).flat_map(|i| (i % 3).to_le_bytes()).collect();
		vec![
			(format!("{prefix}_images.npy"), npy("|u1", &[n, 1, 2, 2], &pixels)),
			(format!("{prefix}_labels.npy"), npy("<i8", &[n], &labels)),
		]
	}

	/// The same as one safetensors file, with f32 images (values `4i + p`).
	fn safetensors_split(prefix: &str, n: usize) -> Named {
		let dev = Device::Cpu;
		let images =
			Tensor::from_vec((0..n * 4).map(|v| v as f32).collect::<Vec<_>>(), (n, 1, 2, 2), &dev);
		let labels = Tensor::from_vec((0..n as u32).map(|i| i % 3).collect::<Vec<_>>(), n, &dev);
		let tensors = HashMap::from([("images", images.unwrap()), ("labels", labels.unwrap())]);
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("x");
		candle_core::safetensors::save(&tensors, &path).unwrap();
		(format!("{prefix}.safetensors"), std::fs::read(path).unwrap())
	}

	#[test]
	fn npy_and_safetensors_images_round_trip() {
		let mut files = npy_split("train", 5);
		files.extend(npy_split("test", 3));
		let (_tmp, located) = publish(DatasetFormat::ImageNpy, &files);
		let data = ImageDataset::open(&located.unwrap(), SHAPE).unwrap();
		assert_eq!(data.train_len(), 5);
		let batch = data.train_batch(&[4, 1], &Device::Cpu).unwrap();
		assert_eq!(batch.inputs.dims(), [2, 4]);
		assert_eq!(batch.targets.to_vec1::<u32>().unwrap(), [1, 1]);
		let rows = batch.inputs.to_vec2::<f32>().unwrap();
		assert_eq!(rows[1], [4.0 / 255.0, 5.0 / 255.0, 6.0 / 255.0, 7.0 / 255.0]);
		assert!(data.train_batch(&[5], &Device::Cpu).is_err());
		let eval = data.eval_batches(10, 2, &Device::Cpu).unwrap();
		let labels: Vec<Vec<u32>> = eval.iter().map(|b| b.targets.to_vec1().unwrap()).collect();
		assert_eq!(labels, [vec![0, 1], vec![2]]);

		let files = [safetensors_split("test", 2), safetensors_split("train", 4)];
		let (_tmp, located) = publish(DatasetFormat::ImageSafetensors, &files);
		let data = ImageDataset::open(&located.unwrap(), SHAPE).unwrap();
		assert_eq!(data.train_len(), 4);
		let batch = data.train_batch(&[3], &Device::Cpu).unwrap();
		// f32 images are used as they are.
		assert_eq!(batch.inputs.to_vec2::<f32>().unwrap(), [[12.0, 13.0, 14.0, 15.0]]);
		assert_eq!(batch.targets.to_vec1::<u32>().unwrap(), [0]);
	}

	#[test]
	fn a_model_opens_image_tensors_of_its_own_shape_only() {
		use grid_primitives::{job::ModelSpec, resnet::ResNetConfig};
		let mut files = npy_split("train", 4);
		files.extend(npy_split("test", 2));
		let (_tmp, located) = publish(DatasetFormat::ImageNpy, &files);
		let located = located.unwrap();
		let resnet = |channels, side, classes| {
			ModelSpec::ResNet(ResNetConfig {
				channels,
				side,
				classes,
				width: 4,
				stages: 1,
				blocks: 1,
			})
		};
		let data = crate::data::open(&located, &resnet(1, 2, 3)).unwrap();
		assert_eq!(data.train_len(), 4);
		let err = crate::data::open(&located, &resnet(3, 2, 3)).err().unwrap().to_string();
		assert!(err.contains("the model reads [N, 3, 2, 2]"), "{err}");
		let err = crate::data::open(&located, &resnet(1, 2, 2)).err().unwrap().to_string();
		assert!(err.contains("label 2 is 2, not a class below 2"), "{err}");
	}

	#[test]
	fn images_the_model_cannot_read_are_refused_saying_why() {
		let with = |name: &str, bytes: Vec<u8>| {
			let mut files = npy_split("train", 3);
			files.extend(npy_split("test", 2));
			files.iter_mut().find(|f| f.0 == name).unwrap().1 = bytes;
			files
		};
		let wrong_shape = npy("|u1", &[3, 3, 2, 2], &[0; 36]);
		let bad_label = npy("|u1", &[3], &[0, 1, 3]);
		let short_labels = npy("|u1", &[2], &[0, 1]);
		let float_labels = npy("<f4", &[3], &[0; 12]);
		let cases = [
			(with("train_images.npy", wrong_shape), "the model reads [N, 1, 2, 2]"),
			(with("train_labels.npy", bad_label), "label 2 is 3, not a class below 3"),
			(with("train_labels.npy", short_labels), "3 images need [3] integer labels"),
			(with("test_labels.npy", float_labels), "integer labels"),
			(with("test_images.npy", b"not an array".to_vec()), "not a NumPy .npy file"),
		];
		for (files, needle) in cases {
			let (_tmp, located) = publish(DatasetFormat::ImageNpy, &files);
			let err = ImageDataset::open(&located.unwrap(), SHAPE).err().unwrap().to_string();
			assert!(err.contains(needle), "{needle}: {err}");
		}
		let (_tmp, located) = publish(DatasetFormat::ImageNpy, &npy_split("train", 2));
		let err = located.err().unwrap().to_string();
		assert!(err.contains("exactly the files"), "{err}");
	}
}
