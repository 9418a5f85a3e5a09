//! Image folders packed into a [`DatasetFormat::ImageNpy`] dataset
//! (`grid-trainer data pack-images SRC OUT`): `SRC/train/<class>/<image>` and
//! `SRC/test/<class>/<image>`, PNG or JPEG, the way most image datasets come. The classes are
//! `train/`'s folders in name order (label 0 the first); `test/` holds some or all of them.
//! Every image must be square and of the first one's size (Grid does not resize: a
//! resampling filter would be one more thing the buyer did not choose); alpha is dropped, and
//! grey images become RGB (or RGB grey, ITU-R 601 luma) when the channels asked for differ.
//!
//! Packing rather than a folder format of its own: a dataset's manifest lists each file with
//! its chunk hashes, so a folder of 50,000 small images would be a manifest of 50,000
//! entries, fetched as 50,000 requests; packed, it is four files read in place like any
//! [`DatasetFormat::ImageNpy`] dataset. The packing is deterministic (folders and files in
//! name order, each image decoded the same way), so the same folder packs to the same bytes,
//! hence the same reference, with the same decoders. Images are decoded and written one at a
//! time: the folder is never held in memory.
//!
//! [`DatasetFormat::ImageNpy`]: grid_primitives::manifest::DatasetFormat::ImageNpy

use std::{
	fs::{self, File},
	io::{BufReader, BufWriter, Write},
	path::{Path, PathBuf},
};

use super::arrays::npy_header_for;
use crate::error::{Error, Result};

/// File extensions read (any case).
const EXTENSIONS: [&str; 3] = ["png", "jpg", "jpeg"];

/// Most classes: labels are written as `u16`.
pub const MAX_CLASSES: usize = 1 << 16;

/// What [`pack`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Packed {
	/// The class names, label 0 first.
	pub classes: Vec<String>,
	/// Training images.
	pub train: usize,
	/// Held-out images.
	pub test: usize,
	/// Colour planes of every image written (1 or 3).
	pub channels: usize,
	/// Pixels a side.
	pub side: usize,
}

/// A decoded image: 8-bit samples, rows top to bottom, each pixel's channels together.
struct Image {
	width: usize,
	height: usize,
	/// 1 grey, 2 grey and alpha, 3 RGB, 4 RGBA.
	channels: usize,
	samples: Vec<u8>,
}

/// Packs the image folder `src` into the four `.npy` files of an image-npy dataset in `out`
/// (made if missing; its other files are left alone), with `channels` colour planes (1 or 3;
/// the first training image's when `None`).
pub fn pack(src: &Path, out: &Path, channels: Option<usize>) -> Result<Packed> {
	for split in ["train", "test"] {
		if !src.join(split).is_dir() {
			let why = format!("no {split}/ folder: its images go in {split}/<class>/<image>");
			return Err(Error::bad_data(src, why));
		}
	}
	let classes = class_names(&src.join("train"))?;
	let train = split_images(&src.join("train"), &classes)?;
	let test = split_images(&src.join("test"), &classes)?;
	let Some((first_path, _)) = train.first() else {
		return Err(Error::bad_data(src.join("train"), "no images in any class folder"));
	};
	if test.is_empty() {
		return Err(Error::bad_data(src.join("test"), "no held-out images: test/<class>/<image>"));
	}
	let first = decode(first_path)?;
	if first.width != first.height {
		let why = format!(
			"{}x{} pixels: Grid's image models read square images",
			first.width, first.height
		);
		return Err(Error::bad_data(first_path, why));
	}
	let channels = channels.unwrap_or(match first.channels {
		1 | 2 => 1,
		_ => 3,
	});
	if channels != 1 && channels != 3 {
		let why = format!("{channels} channels asked for: 1 (grey) or 3 (RGB)");
		return Err(Error::bad_data(src, why));
	}
	let side = first.width;
	fs::create_dir_all(out).map_err(|e| Error::io("creating", out, e))?;
	write_split(out, "train", &train, channels, side)?;
	write_split(out, "test", &test, channels, side)?;
	Ok(Packed { classes, train: train.len(), test: test.len(), channels, side })
}

/// Whether a directory entry is hidden (`.DS_Store`, `.git`): skipped everywhere.
fn hidden(name: &str) -> bool {
	name.starts_with('.')
}

/// The visible entries of `dir`, in name order, as (name, path); each name UTF-8.
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
	let read = fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))?;
	let mut out = Vec::new();
	for entry in read {
		let path = entry.map_err(|e| Error::io("listing", dir, e))?.path();
		let name = path.file_name().and_then(|n| n.to_str()).map(str::to_owned);
		let name = name.ok_or_else(|| Error::bad_data(&path, "not a UTF-8 name"))?;
		if !hidden(&name) {
			out.push((name, path));
		}
	}
	out.sort();
	Ok(out)
}

/// The class folders of `train`, in name order.
fn class_names(train: &Path) -> Result<Vec<String>> {
	let mut classes = Vec::new();
	for (name, path) in entries(train)? {
		if !path.is_dir() {
			return Err(Error::bad_data(path, "train/ holds one folder of images per class"));
		}
		classes.push(name);
	}
	if classes.is_empty() || classes.len() > MAX_CLASSES {
		let why = format!("{} class folders (1 to {MAX_CLASSES})", classes.len());
		return Err(Error::bad_data(train, why));
	}
	Ok(classes)
}

/// The images of one split (`dir`: `train/` or `test/`) with their labels, class by class
/// and in name order within each; a folder that is not a class of `classes` is refused.
fn split_images(dir: &Path, classes: &[String]) -> Result<Vec<(PathBuf, u16)>> {
	let folders = entries(dir)?;
	if let Some((name, path)) = folders.iter().find(|(n, _)| !classes.contains(n)) {
		let why = format!("{name} is not one of train/'s class folders ({})", classes.join(", "));
		return Err(Error::bad_data(path, why));
	}
	let mut images = Vec::new();
	for (label, class) in classes.iter().enumerate() {
		let Some((_, folder)) = folders.iter().find(|(n, _)| n == class) else { continue };
		if !folder.is_dir() {
			return Err(Error::bad_data(folder, "a class is a folder of images"));
		}
		for (name, path) in entries(folder)? {
			let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
			if !path.is_file() || !extension.is_some_and(|e| EXTENSIONS.contains(&e.as_str())) {
				let why = "not a PNG or JPEG image (.png, .jpg, .jpeg)";
				return Err(Error::bad_data(path, why));
			}
			images.push((path, label as u16));
		}
	}
	Ok(images)
}

/// Writes `<split>_images.npy` (u8, `[N, channels, side, side]`) and `<split>_labels.npy`
/// (u16, `[N]`) for `images`, each through a temporary file.
fn write_split(
	out: &Path,
	split: &str,
	images: &[(PathBuf, u16)],
	channels: usize,
	side: usize,
) -> Result<()> {
	let labels: Vec<u8> = images.iter().flat_map(|(_, label)| label.to_le_bytes()).collect();
	let mut bytes = npy_header_for("<u2", &[images.len()]);
	bytes.extend(labels);
	let path = out.join(format!("{split}_labels.npy"));
	write_atomically(&path, |w| w.write_all(&bytes))?;
	let path = out.join(format!("{split}_images.npy"));
	let mut first_error = None;
	write_atomically(&path, |w| {
		w.write_all(&npy_header_for("|u1", &[images.len(), channels, side, side]))?;
		for (image, _) in images {
			let planes = match decode(image).and_then(|i| planes(image, &i, channels, side)) {
				Ok(planes) => planes,
				Err(e) => {
					first_error = Some(e);
					return Err(std::io::Error::other("an image could not be packed"));
				}
			};
			w.write_all(&planes)?;
		}
		Ok(())
	})
	.map_err(|e| first_error.take().unwrap_or(e))
}

/// Writes `path` through `path.tmp` (a failure leaves no half-written file under `path`).
fn write_atomically(
	path: &Path,
	write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<()> {
	let tmp = path.with_extension("npy.tmp");
	let file = File::create(&tmp).map_err(|e| Error::io("creating", &tmp, e))?;
	let mut writer = BufWriter::new(file);
	let written = write(&mut writer).and_then(|()| writer.flush());
	if let Err(e) = written {
		let _ = fs::remove_file(&tmp);
		return Err(Error::io("writing", path, e));
	}
	fs::rename(&tmp, path).map_err(|e| Error::io("renaming", &tmp, e))
}

/// `image` (read from `path`) as `channels` planes of `side` x `side`, channel-major.
fn planes(path: &Path, image: &Image, channels: usize, side: usize) -> Result<Vec<u8>> {
	if image.width != side || image.height != side {
		let why = format!(
			"{}x{} pixels where the first training image is {side}x{side}: Grid does not \
			 resize, every image must be the same size",
			image.width, image.height
		);
		return Err(Error::bad_data(path, why));
	}
	let pixels = side * side;
	let mut out = vec![0u8; channels * pixels];
	for p in 0..pixels {
		let px = &image.samples[p * image.channels..(p + 1) * image.channels];
		match (image.channels, channels) {
			(1 | 2, 1) => out[p] = px[0],
			(1 | 2, _) => (0..3).for_each(|c| out[c * pixels + p] = px[0]),
			(_, 1) => {
				let luma = 299 * u32::from(px[0]) + 587 * u32::from(px[1]) + 114 * u32::from(px[2]);
				out[p] = ((luma + 500) / 1000) as u8;
			}
			_ => (0..3).for_each(|c| out[c * pixels + p] = px[c]),
		}
	}
	Ok(out)
}

/// Decodes the PNG or JPEG image at `path` (by its extension).
fn decode(path: &Path) -> Result<Image> {
	let file = File::open(path).map_err(|e| Error::io("reading", path, e))?;
	let reader = BufReader::new(file);
	let png = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
	let image = if png { decode_png(reader) } else { decode_jpeg(reader) };
	let image = image.map_err(|why| Error::bad_data(path, why))?;
	let expected = image.width * image.height * image.channels;
	if image.width == 0 || image.samples.len() != expected {
		return Err(Error::bad_data(path, "the decoder returned a truncated image"));
	}
	Ok(image)
}

/// A PNG image as 8-bit samples (palettes expanded, 16-bit samples cut to their high byte).
fn decode_png(reader: BufReader<File>) -> std::result::Result<Image, String> {
	let bad = |e: png::DecodingError| format!("not a PNG image Grid can read: {e}");
	let mut decoder = png::Decoder::new(reader);
	decoder.set_transformations(png::Transformations::normalize_to_color8());
	let mut reader = decoder.read_info().map_err(bad)?;
	let size = reader.output_buffer_size().ok_or("a PNG image too large to decode")?;
	let mut samples = vec![0u8; size];
	let info = reader.next_frame(&mut samples).map_err(bad)?;
	samples.truncate(info.buffer_size());
	let channels = match info.color_type {
		png::ColorType::Grayscale => 1,
		png::ColorType::GrayscaleAlpha => 2,
		png::ColorType::Rgb => 3,
		png::ColorType::Rgba => 4,
		png::ColorType::Indexed => return Err("a palette PNG the decoder did not expand".into()),
	};
	Ok(Image { width: info.width as usize, height: info.height as usize, channels, samples })
}

/// A JPEG image as 8-bit samples (grey or RGB; CMYK and 16-bit JPEGs are refused).
fn decode_jpeg(reader: BufReader<File>) -> std::result::Result<Image, String> {
	let mut decoder = jpeg_decoder::Decoder::new(reader);
	let samples = decoder.decode().map_err(|e| format!("not a JPEG image Grid can read: {e}"))?;
	let info = decoder.info().ok_or("a JPEG image without a frame")?;
	let channels = match info.pixel_format {
		jpeg_decoder::PixelFormat::L8 => 1,
		jpeg_decoder::PixelFormat::RGB24 => 3,
		other => return Err(format!("a {other:?} JPEG: Grid reads 8-bit grey or RGB ones")),
	};
	let (width, height) = (usize::from(info.width), usize::from(info.height));
	Ok(Image { width, height, channels, samples })
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::data::arrays::{Array, Element};

	/// Writes a `side` x `side` PNG of `color` (1 grey, 2 grey and alpha, 3 RGB, 4 RGBA) whose
	/// pixel p has samples `f(p, channel)`.
	fn png(path: &Path, side: u32, color: png::ColorType, f: impl Fn(usize, usize) -> u8) {
		let channels = color.samples();
		let samples: Vec<u8> =
			(0..(side * side) as usize * channels).map(|i| f(i / channels, i % channels)).collect();
		fs::create_dir_all(path.parent().unwrap()).unwrap();
		let mut encoder = png::Encoder::new(File::create(path).unwrap(), side, side);
		encoder.set_color(color);
		encoder.set_depth(png::BitDepth::Eight);
		encoder.write_header().unwrap().write_image_data(&samples).unwrap();
	}

	/// Copies the shipped test JPEG `name` to `path`.
	fn jpeg(path: &Path, name: &str) {
		let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/data/testdata").join(name);
		fs::create_dir_all(path.parent().unwrap()).unwrap();
		fs::copy(src, path).unwrap();
	}

	/// A folder of 8x8 images: cat (two grey PNGs, one with alpha, and a grey JPEG) and dog
	/// (an RGB PNG) in train, one of each class in test.
	fn folder(dir: &Path) {
		let grey = png::ColorType::Grayscale;
		png(&dir.join("train/cat/a.png"), 8, grey, |p, _| p as u8);
		png(&dir.join("train/cat/b.PNG"), 8, png::ColorType::GrayscaleAlpha, |_, c| 10 + c as u8);
		jpeg(&dir.join("train/cat/c.jpg"), "gray.jpg");
		png(&dir.join("train/dog/a.png"), 8, png::ColorType::Rgb, |p, c| (p * 3 + c) as u8);
		png(&dir.join("test/cat/x.png"), 8, grey, |_, _| 7);
		png(&dir.join("test/dog/y.png"), 8, png::ColorType::Rgba, |_, c| [1, 2, 3, 4][c]);
		fs::write(dir.join("train/.DS_Store"), b"skipped").unwrap();
	}

	fn read(out: &Path, name: &str) -> (Vec<usize>, Vec<f64>) {
		let array = Array::npy(&out.join(name)).unwrap();
		let mut values = Vec::new();
		for row in 0..array.rows() {
			array.row(row, |v| values.push(v)).unwrap();
		}
		(array.shape().to_vec(), values)
	}

	#[test]
	fn an_image_folder_packs_to_image_npy_deterministically() {
		let tmp = tempfile::tempdir().unwrap();
		let src = tmp.path().join("pets");
		folder(&src);
		let out = tmp.path().join("packed");
		let packed = pack(&src, &out, None).unwrap();
		let expected = Packed {
			classes: vec!["cat".into(), "dog".into()],
			train: 4,
			test: 2,
			channels: 1,
			side: 8,
		};
		assert_eq!(packed, expected);
		let (shape, labels) = read(&out, "train_labels.npy");
		assert_eq!((shape, labels), (vec![4], vec![0.0, 0.0, 0.0, 1.0]));
		assert_eq!(Array::npy(&out.join("train_images.npy")).unwrap().element(), Element::U8);
		let (shape, pixels) = read(&out, "train_images.npy");
		assert_eq!(shape, [4, 1, 8, 8]);
		let image = |i: usize| &pixels[i * 64..(i + 1) * 64];
		// A grey PNG as it is; alpha dropped; a JPEG of grey 128 within its rounding; the RGB
		// PNG as luma.
		assert!(image(0).iter().enumerate().all(|(p, v)| *v == p as f64));
		assert!(image(1).iter().all(|v| *v == 10.0));
		assert!(image(2).iter().all(|v| (v - 128.0).abs() <= 2.0), "{:?}", image(2));
		let luma =
			|p: usize| ((299 * 3 * p + 587 * (3 * p + 1) + 114 * (3 * p + 2) + 500) / 1000) as f64;
		assert!(image(3).iter().enumerate().all(|(p, v)| *v == luma(p)));
		let (_, test) = read(&out, "test_images.npy");
		assert_eq!(test[64], ((299 + 587 * 2 + 114 * 3 + 500) / 1000) as f64);
		// As RGB: grey replicated, RGB as it is (channel-major).
		let rgb = tmp.path().join("rgb");
		assert_eq!(pack(&src, &rgb, Some(3)).unwrap().channels, 3);
		let (shape, pixels) = read(&rgb, "train_images.npy");
		assert_eq!(shape, [4, 3, 8, 8]);
		let dog = &pixels[3 * 192..4 * 192];
		assert_eq!((dog[5], dog[64 + 5], dog[128 + 5]), (15.0, 16.0, 17.0));
		assert!(pixels[..192].chunks(64).all(|plane| plane[9] == 9.0));
		// The same folder packs to the same bytes.
		let again = tmp.path().join("again");
		pack(&src, &again, None).unwrap();
		for name in grid_primitives::manifest::IMAGE_NPY_FILES {
			assert_eq!(fs::read(out.join(name)).unwrap(), fs::read(again.join(name)).unwrap());
		}
	}

	/// Spoils a good folder.
	type Spoil<'a> = dyn Fn(&Path) + 'a;

	#[test]
	fn bad_folders_are_refused_saying_why() {
		let grey = png::ColorType::Grayscale;
		let cases: [(&str, &Spoil<'_>, &str); 8] = [
			("no test split", &|d| fs::remove_dir_all(d.join("test")).unwrap(), "no test/ folder"),
			(
				"a size apart",
				&|d| png(&d.join("train/dog/b.png"), 9, grey, |_, _| 0),
				"9x9 pixels where the first training image is 8x8",
			),
			(
				"not square",
				&|d| {
					let mut e =
						png::Encoder::new(File::create(d.join("train/cat/a.png")).unwrap(), 8, 4);
					e.set_color(grey);
					e.write_header().unwrap().write_image_data(&[0; 32]).unwrap();
				},
				"square images",
			),
			(
				"a text file",
				&|d| fs::write(d.join("train/cat/notes.txt"), b"hi").unwrap(),
				"not a PNG or JPEG",
			),
			(
				"a broken PNG",
				&|d| fs::write(d.join("train/dog/z.png"), b"\x89PNG garbage").unwrap(),
				"not a PNG image Grid can read",
			),
			("a CMYK JPEG", &|d| jpeg(&d.join("train/dog/k.jpg"), "cmyk.jpg"), "CMYK32 JPEG"),
			(
				"an unknown test class",
				&|d| png(&d.join("test/bird/q.png"), 8, grey, |_, _| 0),
				"bird is not one of train/'s class folders (cat, dog)",
			),
			(
				"a stray file among the classes",
				&|d| fs::write(d.join("train/labels.csv"), b"x").unwrap(),
				"one folder of images per class",
			),
		];
		for (what, spoil, expected) in cases {
			let tmp = tempfile::tempdir().unwrap();
			folder(tmp.path());
			spoil(tmp.path());
			let out = tmp.path().join("out");
			let err = pack(tmp.path(), &out, None).unwrap_err().to_string();
			assert!(err.contains(expected), "{what}: {err}");
			// Nothing half-written is left under a dataset file's name.
			for name in grid_primitives::manifest::IMAGE_NPY_FILES {
				let path = out.join(name);
				assert!(!path.exists() || Array::npy(&path).is_ok(), "{what}: {name}");
			}
		}
		let tmp = tempfile::tempdir().unwrap();
		folder(tmp.path());
		let err = pack(tmp.path(), &tmp.path().join("out"), Some(2)).unwrap_err().to_string();
		assert!(err.contains("2 channels asked for"), "{err}");
	}
}
