//! Byte-level text: any file, one token per byte. The last tenth is held out for evaluation;
//! a training sample is the context window starting at a given byte of the first nine tenths.

use std::path::Path;

use candle_core::{Device, Tensor};

use super::read_verified;
use crate::{
	error::{Error, Result},
	model::Batch,
};

/// Share of the file held out for evaluation, in tenths.
const EVAL_TENTHS: usize = 1;

/// A text corpus cut into a training and an evaluation region.
pub struct TextDataset {
	tokens: Vec<u8>,
	context: usize,
	/// First byte of the evaluation region.
	split: usize,
}

impl TextDataset {
	/// Loads `path` (checked against `expected` when given) for windows of `context` tokens.
	pub fn load(path: &Path, expected: Option<&[u8; 32]>, context: usize) -> Result<Self> {
		let tokens = read_verified(path, expected)?;
		Self::from_bytes(tokens, context).map_err(|reason| Error::bad_data(path, reason))
	}

	/// A dataset over bytes already in memory; errors (as text) when too short to hold a
	/// window in both regions.
	pub fn from_bytes(tokens: Vec<u8>, context: usize) -> Result<Self, String> {
		if context == 0 {
			return Err("context must be at least one token".into());
		}
		let split = tokens.len() - tokens.len() * EVAL_TENTHS / 10;
		let eval_len = tokens.len() - split;
		// A window needs context + 1 bytes (inputs plus the shifted targets).
		if split <= context || eval_len <= context {
			return Err(format!(
				"{} bytes is too short for windows of {context} tokens in both the training and \
				 the held-out split",
				tokens.len()
			));
		}
		Ok(TextDataset { tokens, context, split })
	}

	/// Largest byte value in the file: a model's vocabulary must exceed it.
	pub fn max_token(&self) -> u8 {
		self.tokens.iter().copied().max().unwrap_or(0)
	}

	/// Errors unless every byte is below `vocab`.
	pub fn check_vocab(&self, vocab: u32) -> Result<()> {
		if u32::from(self.max_token()) >= vocab {
			return Err(Error::Config(format!(
				"the text contains byte {} but the model's vocabulary has {vocab} tokens",
				self.max_token()
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
		(self.split - self.context) as u64
	}

	fn window(&self, start: usize, batch: &mut (Vec<u32>, Vec<u32>)) {
		let t = self.context;
		batch.0.extend(self.tokens[start..start + t].iter().map(|&b| u32::from(b)));
		batch.1.extend(self.tokens[start + 1..start + t + 1].iter().map(|&b| u32::from(b)));
	}

	fn to_batch(&self, (x, y): (Vec<u32>, Vec<u32>), device: &Device) -> Result<Batch> {
		let b = x.len() / self.context;
		Ok(Batch {
			inputs: Tensor::from_vec(x, (b, self.context), device)?,
			targets: Tensor::from_vec(y, (b, self.context), device)?,
		})
	}

	/// The windows starting at each of `indices` (each below [`TextDataset::train_len`]).
	pub fn train_batch(&self, indices: &[u64], device: &Device) -> Result<Batch> {
		let mut out = (Vec::new(), Vec::new());
		for &i in indices {
			if i >= self.train_len() {
				return Err(Error::Config(format!(
					"sample {i} is outside the {} training windows",
					self.train_len()
				)));
			}
			self.window(i as usize, &mut out);
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
		let t = self.context;
		let region = self.tokens.len() - self.split - 1; // last target byte must exist
		let available = region / t;
		let n = max_samples.min(available).max(1);
		let step = region / n;
		let starts: Vec<usize> = (0..n).map(|i| self.split + i * step).collect();
		let mut batches = Vec::new();
		for chunk in starts.chunks(batch_size.max(1)) {
			let mut out = (Vec::new(), Vec::new());
			for &s in chunk {
				self.window(s, &mut out);
			}
			batches.push(self.to_batch(out, device)?);
		}
		Ok(batches)
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::data::shipped_dir;
	use grid_primitives::datasets::SHAKESPEARE;

	#[test]
	fn windows_are_inputs_and_next_tokens() {
		let bytes: Vec<u8> = (0..100u8).collect();
		let d = TextDataset::from_bytes(bytes, 4).unwrap();
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
	fn short_files_and_wrong_hashes_are_rejected() {
		assert!(TextDataset::from_bytes(vec![1; 10], 4).is_err());
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("tiny.txt");
		std::fs::write(&path, b"abc").unwrap();
		let err = TextDataset::load(&path, None, 8).err().unwrap().to_string();
		assert!(err.contains("tiny.txt") && err.contains("too short"), "{err}");
		let shakespeare = shipped_dir().join("shakespeare.txt");
		let wrong = [1u8; 32];
		assert!(matches!(
			TextDataset::load(&shakespeare, Some(&wrong), 8),
			Err(Error::HashMismatch { .. })
		));
	}

	#[test]
	fn shipped_shakespeare_loads_with_its_hash() {
		let path = shipped_dir().join("shakespeare.txt");
		let hash = SHAKESPEARE.content_hash;
		let d = TextDataset::load(&path, Some(&hash), 64).unwrap();
		assert_eq!(d.tokens.len(), 5_057_198);
		assert!(d.check_vocab(128).is_ok());
		assert!(d.check_vocab(65).is_err());
	}
}
