//! Token streams: UTF-8 text read one token per byte, or token ids stored as little-endian
//! `u16`/`u32` (nanoGPT's `.bin` files). A dataset's files are read as one stream, each window
//! with a positioned read when it is drawn (never loaded whole, and not memory-mapped: the
//! kernel maps a file's pages in large blocks, so windows drawn across a big file kept most of
//! it resident in the process). Files named `val*` or `test*` (nanoGPT's `val.bin`) are held out for
//! evaluation; without them the last tenth is. A training sample is the context window
//! starting at a given token of the training region.

use std::{
	os::unix::fs::FileExt,
	path::{Path, PathBuf},
};

use candle_core::{Device, Tensor};

use super::read_verified;
use crate::{
	error::{Error, Result},
	model::Batch,
};

/// Share of the stream held out for evaluation, in tenths.
const EVAL_TENTHS: u64 = 1;

/// One file of the stream: bytes in memory, or a file on disk read where needed.
enum Part {
	Owned(Vec<u8>),
	File { file: std::fs::File, len: u64, path: PathBuf },
}

impl Part {
	fn len(&self) -> u64 {
		match self {
			Part::Owned(bytes) => bytes.len() as u64,
			Part::File { len, .. } => *len,
		}
	}

	/// Fills `out` with the bytes from `offset` on.
	fn read(&self, offset: u64, out: &mut [u8]) -> Result<()> {
		match self {
			Part::Owned(bytes) => {
				out.copy_from_slice(&bytes[offset as usize..offset as usize + out.len()]);
				Ok(())
			}
			Part::File { file, path, .. } => {
				file.read_exact_at(out, offset).map_err(|e| Error::io("reading", path, e))
			}
		}
	}
}

/// A token stream cut into a training and an evaluation region.
pub struct TokenDataset {
	parts: Vec<Part>,
	/// The token index each part starts at, and the total after the last.
	starts: Vec<u64>,
	/// Bytes per token: 1, 2 or 4.
	width: usize,
	context: usize,
	/// First token of the evaluation region.
	split: u64,
	/// Largest token in the stream.
	max_token: u32,
}

impl TokenDataset {
	/// Loads the text file `path` (checked against `expected` when given) into memory for
	/// windows of `context` tokens, one per byte.
	pub fn load(path: &Path, expected: Option<&[u8; 32]>, context: usize) -> Result<Self> {
		let tokens = read_verified(path, expected)?;
		Self::from_bytes(tokens, context).map_err(|reason| Error::bad_data(path, reason))
	}

	/// A byte-level dataset over bytes already in memory; errors (as text) when too short to
	/// hold a window in both regions.
	pub fn from_bytes(tokens: Vec<u8>, context: usize) -> Result<Self, String> {
		let max_token = tokens.iter().copied().max().map_or(0, u32::from);
		Self::new(vec![Part::Owned(tokens)], 1, context, 0, max_token)
	}

	/// Opens `files` (in order) as one stream of `width`-byte tokens (1: UTF-8 text, checked
	/// to be UTF-8; 2 or 4: little-endian token ids). Files named `val*` or `test*` are held
	/// out when others are left to train on; otherwise the last tenth is.
	pub fn open(files: &[PathBuf], width: usize, context: usize) -> Result<Self> {
		let held = |path: &&PathBuf| {
			let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase());
			name.is_some_and(|n| n.starts_with("val") || n.starts_with("test"))
		};
		let (held, train): (Vec<&PathBuf>, Vec<&PathBuf>) = files.iter().partition(held);
		let held_parts = if train.is_empty() { 0 } else { held.len() };
		let ordered: Vec<&PathBuf> = train.into_iter().chain(held).collect();
		Self::open_parts(&ordered, width, context, held_parts)
	}

	fn open_parts(
		files: &[&PathBuf],
		width: usize,
		context: usize,
		held_parts: usize,
	) -> Result<Self> {
		let mut parts = Vec::with_capacity(files.len());
		let mut max_token = 0;
		for path in files {
			let file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
			max_token = max_token.max(scan_file(&file, path, width)?);
			let len = file.metadata().map_err(|e| Error::io("reading", path, e))?.len();
			parts.push(Part::File { file, len, path: path.to_path_buf() });
		}
		let name = files.first().map(|p| p.to_path_buf()).unwrap_or_default();
		Self::new(parts, width, context, held_parts, max_token)
			.map_err(|reason| Error::bad_data(name, reason))
	}

	/// The stream of `parts`, its last `held_parts` held out (none: its last tenth).
	fn new(
		parts: Vec<Part>,
		width: usize,
		context: usize,
		held_parts: usize,
		max_token: u32,
	) -> Result<Self, String> {
		if context == 0 {
			return Err("context must be at least one token".into());
		}
		if ![1, 2, 4].contains(&width) {
			return Err(format!("tokens of {width} bytes (1, 2 or 4 are read)"));
		}
		let mut starts = vec![0u64];
		for part in &parts {
			let last = *starts.last().expect("starts with 0");
			starts.push(last + part.len() / width as u64);
		}
		let total = *starts.last().expect("starts with 0");
		let split = match held_parts {
			0 => total - total * EVAL_TENTHS / 10,
			n => starts[parts.len() - n],
		};
		let eval_len = total - split;
		let context_len = context as u64;
		// A window needs context + 1 tokens (inputs plus the shifted targets).
		if split <= context_len || eval_len <= context_len {
			return Err(format!(
				"{total} tokens is too short for windows of {context} tokens in both the training \
				 and the held-out split"
			));
		}
		Ok(TokenDataset { parts, starts, width, context, split, max_token })
	}

	/// Total tokens in the stream.
	pub fn len(&self) -> u64 {
		*self.starts.last().expect("starts with 0")
	}

	/// Whether the stream is empty (never, once built).
	pub fn is_empty(&self) -> bool {
		self.len() == 0
	}

	/// Largest token in the stream: a model's vocabulary must exceed it.
	pub fn max_token(&self) -> u32 {
		self.max_token
	}

	/// Errors unless every token is below `vocab`.
	pub fn check_vocab(&self, vocab: u32) -> Result<()> {
		if self.max_token >= vocab {
			return Err(Error::Config(format!(
				"the data contains token {} but the model's vocabulary has {vocab} tokens",
				self.max_token
			)));
		}
		Ok(())
	}

	/// Window length.
	pub fn context(&self) -> usize {
		self.context
	}

	/// Number of training windows (start positions in the training region).
	pub fn train_len(&self) -> u64 {
		self.split - self.context as u64
	}

	/// Tokens `start..end` of the stream (below [`TokenDataset::len`]): one read per file
	/// they span.
	fn tokens(&self, start: u64, end: u64) -> Result<Vec<u32>> {
		let w = self.width as u64;
		let mut tokens = Vec::with_capacity((end - start) as usize);
		let mut bytes = Vec::new();
		let mut i = start;
		while i < end {
			let part = self.starts.partition_point(|&s| s <= i) - 1;
			let stop = end.min(self.starts[part + 1]);
			bytes.resize(((stop - i) * w) as usize, 0);
			self.parts[part].read((i - self.starts[part]) * w, &mut bytes)?;
			tokens.extend(bytes.chunks_exact(self.width).map(|t| token_at(t, self.width)));
			i = stop;
		}
		Ok(tokens)
	}

	fn window(&self, start: u64, batch: &mut (Vec<u32>, Vec<u32>)) -> Result<()> {
		let tokens = self.tokens(start, start + self.context as u64 + 1)?;
		batch.0.extend_from_slice(&tokens[..self.context]);
		batch.1.extend_from_slice(&tokens[1..]);
		Ok(())
	}

	fn to_batch(&self, (x, y): (Vec<u32>, Vec<u32>), device: &Device) -> Result<Batch> {
		let b = x.len() / self.context;
		Ok(Batch {
			inputs: Tensor::from_vec(x, (b, self.context), device)?,
			targets: Tensor::from_vec(y, (b, self.context), device)?,
		})
	}

	/// The windows starting at each of `indices` (each below [`TokenDataset::train_len`]).
	pub fn train_batch(&self, indices: &[u64], device: &Device) -> Result<Batch> {
		let mut out = (Vec::new(), Vec::new());
		for &i in indices {
			if i >= self.train_len() {
				return Err(Error::Config(format!(
					"sample {i} is outside the {} training windows",
					self.train_len()
				)));
			}
			self.window(i, &mut out)?;
		}
		self.to_batch(out, device)
	}

	/// Up to `max_samples` non-overlapping windows spread evenly over the held-out region, in
	/// batches of `batch_size`.
	pub fn eval_batches(
		&self,
		max_samples: usize,
		batch_size: usize,
		device: &Device,
	) -> Result<Vec<Batch>> {
		let t = self.context as u64;
		let region = self.len() - self.split - 1; // the last target token must exist
		let available = region / t;
		let n = (max_samples as u64).min(available).max(1);
		let step = region / n;
		let starts: Vec<u64> = (0..n).map(|i| self.split + i * step).collect();
		let mut batches = Vec::new();
		for chunk in starts.chunks(batch_size.max(1)) {
			let mut out = (Vec::new(), Vec::new());
			for &s in chunk {
				self.window(s, &mut out)?;
			}
			batches.push(self.to_batch(out, device)?);
		}
		Ok(batches)
	}
}

/// The largest `width`-byte token of `file` (at `path`), read in blocks from its start;
/// errors unless the file is a whole number of tokens and, for text (`width` 1), UTF-8.
fn scan_file(file: &std::fs::File, path: &Path, width: usize) -> Result<u32> {
	use std::io::Read;
	let mut file = file;
	let mut block = vec![0u8; 1 << 20];
	// Bytes of the last block not yet scanned: part of a token, or of a UTF-8 character.
	let mut carried = 0;
	let (mut max, mut offset) = (0, 0u64);
	loop {
		let read = file.read(&mut block[carried..]).map_err(|e| Error::io("reading", path, e))?;
		let filled = carried + read;
		if read == 0 {
			if carried == 0 {
				return Ok(max);
			}
			let reason = match width {
				1 => format!("not UTF-8 text: a character cut off at byte {offset}"),
				_ => format!(
					"{} bytes is not a whole number of {width}-byte tokens",
					offset + carried as u64
				),
			};
			return Err(Error::bad_data(path, reason));
		}
		let whole = match width {
			1 => match std::str::from_utf8(&block[..filled]) {
				Ok(_) => filled,
				// A character cut at the block's end is scanned with the next block.
				Err(e) if e.error_len().is_none() => e.valid_up_to(),
				Err(e) => {
					let at = offset + e.valid_up_to() as u64;
					return Err(Error::bad_data(
						path,
						format!("not UTF-8 text: invalid byte at {at}"),
					));
				}
			},
			_ => filled - filled % width,
		};
		max = block[..whole].chunks_exact(width).map(|t| token_at(t, width)).fold(max, u32::max);
		block.copy_within(whole..filled, 0);
		carried = filled - whole;
		offset += whole as u64;
	}
}

/// The little-endian token in `bytes` (`width` of them).
fn token_at(bytes: &[u8], width: usize) -> u32 {
	match width {
		1 => u32::from(bytes[0]),
		2 => u32::from(u16::from_le_bytes([bytes[0], bytes[1]])),
		_ => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::data::shipped_dir;

	#[test]
	fn windows_are_inputs_and_next_tokens() {
		let bytes: Vec<u8> = (0..100u8).collect();
		let d = TokenDataset::from_bytes(bytes, 4).unwrap();
		assert_eq!(d.train_len(), 90 - 4);
		let b = d.train_batch(&[0, 10], &Device::Cpu).unwrap();
		assert_eq!(b.inputs.to_vec2::<u32>().unwrap(), [[0, 1, 2, 3], [10, 11, 12, 13]]);
		assert_eq!(b.targets.to_vec2::<u32>().unwrap(), [[1, 2, 3, 4], [11, 12, 13, 14]]);
		assert!(d.train_batch(&[86], &Device::Cpu).is_err());
		let eval = d.eval_batches(100, 2, &Device::Cpu).unwrap();
		let firsts: Vec<u32> =
			eval.iter().flat_map(|b| b.inputs.to_vec2::<u32>().unwrap()).map(|r| r[0]).collect();
		// Held-out windows start in the last tenth and never read past the end.
		assert!(firsts.iter().all(|&s| (90..=95).contains(&s)), "{firsts:?}");
	}

	#[test]
	fn token_files_are_one_stream_across_files() {
		let dir = tempfile::tempdir().unwrap();
		let tokens: Vec<u16> = (0..300u16).map(|i| i * 200).collect();
		let bytes = |ts: &[u16]| ts.iter().flat_map(|t| t.to_le_bytes()).collect::<Vec<u8>>();
		let (a, b) = (dir.path().join("a.bin"), dir.path().join("b.bin"));
		std::fs::write(&a, bytes(&tokens[..101])).unwrap();
		std::fs::write(&b, bytes(&tokens[101..])).unwrap();
		let d = TokenDataset::open(&[a.clone(), b.clone()], 2, 8).unwrap();
		assert_eq!((d.len(), d.max_token()), (300, 299 * 200));
		// A window that crosses from one file into the next.
		let batch = d.train_batch(&[97], &Device::Cpu).unwrap();
		let want: Vec<u32> = (97..105).map(|i| u32::from(tokens[i])).collect();
		assert_eq!(batch.inputs.to_vec2::<u32>().unwrap(), [want]);
		let err = d.check_vocab(50_257).unwrap_err().to_string();
		assert!(err.contains("token 59800") && err.contains("50257"), "{err}");
		assert!(d.check_vocab(65_536).is_ok());

		// A file named val* is the held-out region, wherever it sorts.
		let val = dir.path().join("val.bin");
		std::fs::write(&val, bytes(&tokens[..40])).unwrap();
		let d = TokenDataset::open(&[a.clone(), b.clone(), val.clone()], 2, 8).unwrap();
		assert_eq!((d.len(), d.train_len()), (340, 300 - 8));
		let eval = d.eval_batches(100, 100, &Device::Cpu).unwrap();
		let first = eval[0].inputs.to_vec2::<u32>().unwrap()[0][0];
		assert_eq!(first, u32::from(tokens[0]), "held-out windows read val.bin");
		let err = TokenDataset::open(&[a.clone(), b, val.clone()], 2, 64).err();
		assert!(err.unwrap().to_string().contains("too short"));
		// Only val* files: nothing else to train on, so the last tenth is held out as usual.
		assert_eq!(TokenDataset::open(&[val], 2, 2).unwrap().train_len(), 36 - 2);

		// Odd bytes for u16 tokens, and text that is not UTF-8, are refused by name.
		std::fs::write(&a, [1u8, 2, 3]).unwrap();
		let err = TokenDataset::open(std::slice::from_ref(&a), 2, 8).err().unwrap().to_string();
		assert!(err.contains("a.bin") && err.contains("whole number"), "{err}");
		std::fs::write(&a, [0xffu8; 400]).unwrap();
		let err = TokenDataset::open(&[a], 1, 8).err().unwrap().to_string();
		assert!(err.contains("not UTF-8"), "{err}");
	}

	#[test]
	fn short_files_and_wrong_hashes_are_rejected() {
		assert!(TokenDataset::from_bytes(vec![1; 10], 4).is_err());
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("tiny.txt");
		std::fs::write(&path, b"abc").unwrap();
		let err = TokenDataset::load(&path, None, 8).err().unwrap().to_string();
		assert!(err.contains("tiny.txt") && err.contains("too short"), "{err}");
		let err = TokenDataset::open(&[path], 1, 8).err().unwrap().to_string();
		assert!(err.contains("tiny.txt") && err.contains("too short"), "{err}");
		let shakespeare = shipped_dir().join("shakespeare.txt");
		let wrong = [1u8; 32];
		assert!(matches!(
			TokenDataset::load(&shakespeare, Some(&wrong), 8),
			Err(Error::HashMismatch { .. })
		));
	}

	#[test]
	fn shipped_shakespeare_opens_as_bytes() {
		let d = TokenDataset::open(&[shipped_dir().join("shakespeare.txt")], 1, 64).unwrap();
		assert_eq!(d.len(), 5_057_198);
		assert!(d.check_vocab(128).is_ok());
		assert!(d.check_vocab(65).is_err());
	}

	/// The scan reads in 1 MiB blocks: a character or token cut by a block's end is read
	/// whole with the next, and what is wrong is found wherever it is.
	#[test]
	fn files_are_scanned_across_blocks() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("f");
		let open = |p: &Path| std::fs::File::open(p).unwrap();
		// A 3-byte character across the first block's end, the largest byte in the second.
		let mut text = vec![b'a'; (1 << 20) - 1];
		text.extend_from_slice("€ tail".as_bytes());
		std::fs::write(&path, &text).unwrap();
		assert_eq!(scan_file(&open(&path), &path, 1).unwrap(), u32::from(0xe2u8));
		// An invalid byte in the second block, and a character cut off at the end.
		text.push(0xff);
		std::fs::write(&path, &text).unwrap();
		let err = scan_file(&open(&path), &path, 1).unwrap_err().to_string();
		assert!(err.contains(&format!("invalid byte at {}", text.len() - 1)), "{err}");
		text.pop();
		text.extend_from_slice(&"€".as_bytes()[..2]);
		std::fs::write(&path, &text).unwrap();
		assert!(scan_file(&open(&path), &path, 1).unwrap_err().to_string().contains("cut off"));
		// u16 tokens: the largest one past the first block; an odd length refused.
		let mut tokens: Vec<u8> =
			(0..600_000u32).flat_map(|i| (i as u16 % 700).to_le_bytes()).collect();
		tokens.extend_from_slice(&9_999u16.to_le_bytes());
		std::fs::write(&path, &tokens).unwrap();
		assert_eq!(scan_file(&open(&path), &path, 2).unwrap(), 9_999);
		tokens.push(1);
		std::fs::write(&path, &tokens).unwrap();
		let err = scan_file(&open(&path), &path, 2).unwrap_err().to_string();
		assert!(err.contains("not a whole number of 2-byte tokens"), "{err}");
	}
}
