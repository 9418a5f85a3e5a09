//! Arrays stored in files — a tensor of a `safetensors` file, or a NumPy `.npy` array — read
//! in place through a memory map: only the header is parsed when opened, and a row is
//! converted when asked for, so a dataset of any size is never loaded whole.

use std::{collections::HashMap, fs::File, path::Path};

use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};

use crate::error::{Error, Result};

/// The element types a dataset's arrays may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
	/// Unsigned bytes (pixels, small labels).
	U8,
	/// Little-endian u16.
	U16,
	/// Little-endian u32.
	U32,
	/// Little-endian i32.
	I32,
	/// Little-endian i64.
	I64,
	/// Little-endian f32.
	F32,
}

impl Element {
	/// Bytes per element.
	pub fn size(self) -> usize {
		match self {
			Element::U8 => 1,
			Element::U16 => 2,
			Element::U32 | Element::I32 | Element::F32 => 4,
			Element::I64 => 8,
		}
	}

	/// The element at the start of `bytes` (at least [`Element::size`] long) as f64: exact for
	/// every type but i64 beyond 2^53, which no class id reaches.
	fn read(self, bytes: &[u8]) -> f64 {
		let four = || [bytes[0], bytes[1], bytes[2], bytes[3]];
		match self {
			Element::U8 => f64::from(bytes[0]),
			Element::U16 => f64::from(u16::from_le_bytes([bytes[0], bytes[1]])),
			Element::U32 => f64::from(u32::from_le_bytes(four())),
			Element::I32 => f64::from(i32::from_le_bytes(four())),
			Element::F32 => f64::from(f32::from_le_bytes(four())),
			Element::I64 => {
				let mut eight = [0u8; 8];
				eight.copy_from_slice(&bytes[..8]);
				i64::from_le_bytes(eight) as f64
			}
		}
	}
}

/// An array in a file, mapped.
pub struct Array {
	path: std::path::PathBuf,
	map: Mmap,
	/// Where its first element is in the file.
	offset: usize,
	element: Element,
	shape: Vec<usize>,
}

fn bad(path: &Path, reason: impl Into<String>) -> Error {
	Error::bad_data(path, reason)
}

fn map(path: &Path) -> Result<Mmap> {
	let file = File::open(path).map_err(|e| Error::io("opening", path, e))?;
	// SAFETY: the store's files are written once, verified, and never modified in place.
	unsafe { Mmap::map(&file) }.map_err(|e| Error::io("mapping", path, e))
}

impl Array {
	/// The tensor called `name` in the `safetensors` file at `path`.
	pub fn safetensors(path: &Path, name: &str) -> Result<Self> {
		let map = map(path)?;
		let (header, metadata) = SafeTensors::read_metadata(&map)
			.map_err(|e| bad(path, format!("not a safetensors file: {e}")))?;
		let tensors = metadata.tensors();
		let info = tensors.get(name).ok_or_else(|| {
			let mut names: Vec<&String> = tensors.keys().collect();
			names.sort();
			bad(path, format!("has no tensor {name:?} (it holds {names:?})"))
		})?;
		let element = match info.dtype {
			Dtype::U8 => Element::U8,
			Dtype::U16 => Element::U16,
			Dtype::U32 => Element::U32,
			Dtype::I32 => Element::I32,
			Dtype::I64 => Element::I64,
			Dtype::F32 => Element::F32,
			other => {
				return Err(bad(path, format!("{name} is {other:?}, which Grid does not read")))
			}
		};
		let offset = 8 + header + info.data_offsets.0;
		Array::checked(path, map, offset, element, info.shape.clone())
	}

	/// The array of the NumPy `.npy` file at `path` (format 1, 2 or 3; C order;
	/// little-endian).
	pub fn npy(path: &Path) -> Result<Self> {
		let map = map(path)?;
		let (offset, header) = npy_header(&map).map_err(|why| bad(path, why))?;
		let fields = npy_fields(header).map_err(|why| bad(path, why))?;
		let descr = fields.get("descr").map(String::as_str).unwrap_or("");
		// A big-endian descr starts with '>', which the trim leaves, so it matches nothing.
		let element = match descr.trim_start_matches(['<', '|', '=']) {
			"u1" => Element::U8,
			"u2" => Element::U16,
			"u4" => Element::U32,
			"i4" => Element::I32,
			"i8" => Element::I64,
			"f4" => Element::F32,
			_ => {
				return Err(bad(
					path,
					format!(
						"holds {descr:?} elements; Grid reads u1, u2, u4, i4, i8 and f4, \
						 little-endian"
					),
				))
			}
		};
		if fields.get("fortran_order").map(String::as_str) != Some("False") {
			return Err(bad(path, "is in Fortran order; save it in C order"));
		}
		let shape = npy_shape(fields.get("shape").map(String::as_str).unwrap_or(""))
			.map_err(|why| bad(path, why))?;
		Array::checked(path, map, offset, element, shape)
	}

	/// An array whose elements must lie within the file.
	fn checked(
		path: &Path,
		map: Mmap,
		offset: usize,
		element: Element,
		shape: Vec<usize>,
	) -> Result<Self> {
		let bytes = shape
			.iter()
			.try_fold(element.size(), |n, &d| n.checked_mul(d))
			.and_then(|n| n.checked_add(offset));
		match bytes {
			Some(end) if end <= map.len() => {
				Ok(Array { path: path.to_path_buf(), map, offset, element, shape })
			}
			_ => Err(bad(
				path,
				format!(
					"an array of shape {shape:?} does not fit in the file's {} bytes (truncated?)",
					map.len()
				),
			)),
		}
	}

	/// Its shape.
	pub fn shape(&self) -> &[usize] {
		&self.shape
	}

	/// Its element type.
	pub fn element(&self) -> Element {
		self.element
	}

	/// The file it is in.
	pub fn path(&self) -> &Path {
		&self.path
	}

	/// Elements per row (the product of all dimensions but the first).
	pub fn row_len(&self) -> usize {
		self.shape.iter().skip(1).product()
	}

	/// Rows (the first dimension; a scalar array has none).
	pub fn rows(&self) -> usize {
		self.shape.first().copied().unwrap_or(0)
	}

	/// Row `i`'s elements as f64, passed to `each` in order.
	pub fn row(&self, i: usize, mut each: impl FnMut(f64)) -> Result<()> {
		if i >= self.rows() {
			return Err(Error::Config(format!(
				"row {i} is outside the {} rows of {}",
				self.rows(),
				self.path.display()
			)));
		}
		let size = self.element.size();
		let start = self.offset + i * self.row_len() * size;
		let bytes = &self.map[start..start + self.row_len() * size];
		bytes.chunks_exact(size).for_each(|e| each(self.element.read(e)));
		Ok(())
	}
}

/// The `.npy` header: where the data starts and the header's dictionary text.
fn npy_header(bytes: &[u8]) -> std::result::Result<(usize, &str), String> {
	const MAGIC: &[u8] = b"\x93NUMPY";
	if !bytes.starts_with(MAGIC) || bytes.len() < 10 {
		return Err("is not a NumPy .npy file (no \\x93NUMPY magic)".into());
	}
	let (len, start) = match bytes[6] {
		1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
		2 | 3 if bytes.len() >= 12 => {
			(u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
		}
		v => return Err(format!("is .npy format version {v}, not 1, 2 or 3")),
	};
	let text = bytes.get(start..start + len).ok_or("its header runs past the end of the file")?;
	let text = std::str::from_utf8(text).map_err(|_| "its header is not text")?;
	Ok((start + len, text))
}

/// The `'key': value` pairs of the header's dictionary (values as written, quotes removed).
fn npy_fields(header: &str) -> std::result::Result<HashMap<String, String>, String> {
	let body = header.trim().trim_start_matches('{').trim_end_matches('}');
	let mut fields = HashMap::new();
	let mut rest = body;
	while let Some(open) = rest.find('\'') {
		let after = &rest[open + 1..];
		let close = after.find('\'').ok_or("its header has an unclosed quote")?;
		let key = &after[..close];
		let value_start = after[close + 1..]
			.trim_start()
			.strip_prefix(':')
			.ok_or("its header is not a dictionary")?;
		let value_start = value_start.trim_start();
		// A value runs to the next comma outside parentheses and quotes.
		let (mut depth, mut quoted, mut end) = (0i32, false, value_start.len());
		for (j, c) in value_start.char_indices() {
			match c {
				'\'' => quoted = !quoted,
				'(' if !quoted => depth += 1,
				')' if !quoted => depth -= 1,
				',' if !quoted && depth == 0 => {
					end = j;
					break;
				}
				_ => {}
			}
		}
		fields.insert(key.to_string(), value_start[..end].trim().trim_matches('\'').to_string());
		rest = &value_start[end..];
	}
	Ok(fields)
}

/// `(60000, 1, 28, 28)` → `[60000, 1, 28, 28]`.
fn npy_shape(text: &str) -> std::result::Result<Vec<usize>, String> {
	let inner = text
		.strip_prefix('(')
		.and_then(|t| t.strip_suffix(')'))
		.ok_or_else(|| format!("its shape {text:?} is not a tuple"))?;
	inner
		.split(',')
		.map(str::trim)
		.filter(|d| !d.is_empty())
		.map(|d| d.parse().map_err(|_| format!("its shape {text:?} is not a tuple of sizes")))
		.collect()
}

/// The header of a version-1 `.npy` file of `descr` elements (`|u1`, `<u4`, …) of `shape`, C
/// order: the data follows it.
pub fn npy_header_for(descr: &str, shape: &[usize]) -> Vec<u8> {
	let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
	let shape =
		if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
	let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
	// NumPy pads the header with spaces to a multiple of 64 bytes, ending in a newline.
	while (10 + header.len() + 1) % 64 != 0 {
		header.push(' ');
	}
	header.push('\n');
	let mut out = b"\x93NUMPY\x01\x00".to_vec();
	out.extend((header.len() as u16).to_le_bytes());
	out.extend(header.as_bytes());
	out
}

#[cfg(test)]
pub(crate) mod tests {
	use super::*;

	/// A version-1 `.npy` file of `descr` elements of `shape` holding `data`.
	pub(crate) fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
		let mut out = npy_header_for(descr, shape);
		out.extend(data);
		out
	}

	#[test]
	fn npy_arrays_are_read_in_place() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("a.npy");
		let data: Vec<u8> =
			[1.5f32, -2.0, 3.25, 4.0, 5.0, 6.0].iter().flat_map(|v| v.to_le_bytes()).collect();
		std::fs::write(&path, npy("<f4", &[3, 2], &data)).unwrap();
		let a = Array::npy(&path).unwrap();
		assert_eq!((a.shape(), a.element(), a.row_len()), (&[3, 2][..], Element::F32, 2));
		let mut row = Vec::new();
		a.row(1, |v| row.push(v)).unwrap();
		assert_eq!(row, [3.25, 4.0]);
		assert!(a.row(3, |_| ()).is_err());
		let labels = dir.path().join("l.npy");
		std::fs::write(
			&labels,
			npy("<i8", &[2], &[7u8, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0]),
		)
		.unwrap();
		let l = Array::npy(&labels).unwrap();
		let mut values = Vec::new();
		(0..2).for_each(|i| l.row(i, |v| values.push(v)).unwrap());
		assert_eq!(values, [7.0, 9.0]);
	}

	#[test]
	fn safetensors_tensors_are_read_in_place() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("t.safetensors");
		let images = candle_core::Tensor::from_vec(
			(0u8..12).collect::<Vec<_>>(),
			(3, 1, 2, 2),
			&candle_core::Device::Cpu,
		)
		.unwrap();
		let labels =
			candle_core::Tensor::from_vec(vec![2u32, 0, 1], 3, &candle_core::Device::Cpu).unwrap();
		candle_core::safetensors::save(
			&HashMap::from([("images", images), ("labels", labels)]),
			&path,
		)
		.unwrap();
		let a = Array::safetensors(&path, "images").unwrap();
		assert_eq!((a.shape(), a.element()), (&[3, 1, 2, 2][..], Element::U8));
		let mut row = Vec::new();
		a.row(2, |v| row.push(v)).unwrap();
		assert_eq!(row, [8.0, 9.0, 10.0, 11.0]);
		let l = Array::safetensors(&path, "labels").unwrap();
		let mut first = Vec::new();
		l.row(0, |v| first.push(v)).unwrap();
		assert_eq!(first, [2.0]);
		let err = Array::safetensors(&path, "pixels").err().unwrap().to_string();
		assert!(err.contains("has no tensor \"pixels\"") && err.contains("images"), "{err}");
	}

	#[test]
	fn malformed_arrays_are_refused_saying_why() {
		let dir = tempfile::tempdir().unwrap();
		let write = |name: &str, bytes: Vec<u8>| {
			let path = dir.path().join(name);
			std::fs::write(&path, bytes).unwrap();
			path
		};
		// Same header length: 'False' becomes 'True ' (padding keeps the layout).
		let mut fortran = npy("|u1", &[2], &[1, 2]);
		let at = fortran.windows(5).position(|w| w == b"False").unwrap();
		fortran[at..at + 5].copy_from_slice(b"True ");
		let cases = [
			(write("short.npy", npy("|u1", &[4, 4], &[0; 10])), "does not fit"),
			(write("big.npy", npy(">f4", &[1], &[0; 4])), "little-endian"),
			(write("obj.npy", npy("|O", &[1], &[0; 8])), "\"|O\""),
			(write("text.npy", b"hello, world".to_vec()), "not a NumPy .npy file"),
			(write("fortran.npy", fortran), "Fortran order"),
		];
		for (path, needle) in cases {
			let err = Array::npy(&path).err().map(|e| e.to_string()).unwrap_or_default();
			assert!(err.contains(needle), "{needle}: {err}");
		}
		let header_only = write("t.safetensors", b"\x02\x00\x00\x00\x00\x00\x00\x00{}".to_vec());
		assert!(Array::safetensors(&header_only, "images").is_err());
		let garbage = write("g.safetensors", b"\xff\xff\xff\xff\xff\xff\xff\x00{}".to_vec());
		let err = Array::safetensors(&garbage, "images").err().unwrap().to_string();
		assert!(err.contains("not a safetensors file"), "{err}");
	}
}
