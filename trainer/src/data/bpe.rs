//! BPE text ([`DatasetFormat::TextBpe`]): UTF-8 text tokenized with the Hugging Face
//! `tokenizer.json` that is one of the dataset's files. The tokens are written once to the
//! store's cache for the dataset (as little-endian `u32`, then memory-mapped like any token
//! stream): every honest trainer derives the same ids from the same hashed files with the
//! same pinned `tokenizers` version.
//!
//! Text is tokenized in blocks ending at line breaks (about [`BLOCK_BYTES`]), so memory stays
//! bounded; a token never spans two blocks.

use std::{
	io::Write,
	path::{Path, PathBuf},
};

use grid_primitives::manifest::TOKENIZER_FILE;
use memmap2::Mmap;
use tokenizers::Tokenizer;

use super::store::Located;
use crate::error::{Error, Result};

/// Bytes of text tokenized at once.
pub const BLOCK_BYTES: usize = 1 << 20;

/// The dataset's tokenizer, read from its files.
pub fn tokenizer(located: &Located) -> Result<Tokenizer> {
	let path = located.dir.join(TOKENIZER_FILE);
	Tokenizer::from_file(&path)
		.map_err(|e| Error::bad_data(&path, format!("not a Hugging Face tokenizer: {e}")))
}

/// The tokens of a BPE dataset (tokenizing it into the cache on first use) and its
/// tokenizer's vocabulary size.
pub fn tokens(located: &Located) -> Result<(PathBuf, u32)> {
	let tokenizer = tokenizer(located)?;
	let vocab = u32::try_from(tokenizer.get_vocab_size(true)).unwrap_or(u32::MAX);
	let cache = located.cache.as_ref().ok_or_else(|| {
		Error::bad_data(&located.dir, "BPE text needs a store to keep its tokens in")
	})?;
	let path = cache.join("tokens.u32");
	if !path.exists() {
		std::fs::create_dir_all(cache).map_err(|e| Error::io("creating", cache, e))?;
		let tmp = cache.join("tokens.u32.tmp");
		let mut out = std::io::BufWriter::new(
			std::fs::File::create(&tmp).map_err(|e| Error::io("creating", &tmp, e))?,
		);
		for file in located.manifest.files.iter().filter(|f| f.name != TOKENIZER_FILE) {
			tokenize_file(&tokenizer, &located.dir.join(&file.name), &mut out, &tmp)?;
		}
		out.flush().map_err(|e| Error::io("writing", &tmp, e))?;
		drop(out);
		std::fs::rename(&tmp, &path).map_err(|e| Error::io("renaming", &tmp, e))?;
	}
	Ok((path, vocab))
}

/// Appends the tokens of the text file at `path` to `out` (the file `tmp`).
fn tokenize_file(
	tokenizer: &Tokenizer,
	path: &Path,
	out: &mut impl Write,
	tmp: &Path,
) -> Result<()> {
	let file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
	// SAFETY: the dataset's files are only read, and were checked against their hashes.
	let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io("mapping", path, e))?;
	let text = std::str::from_utf8(&map)
		.map_err(|e| Error::bad_data(path, format!("not UTF-8 text: {e}")))?;
	for block in blocks(text) {
		let encoding = tokenizer
			.encode(block, false)
			.map_err(|e| Error::bad_data(path, format!("tokenizing: {e}")))?;
		for id in encoding.get_ids() {
			out.write_all(&id.to_le_bytes()).map_err(|e| Error::io("writing", tmp, e))?;
		}
	}
	Ok(())
}

/// `text` cut into blocks of about [`BLOCK_BYTES`] that end just after a line break (or at
/// the end).
fn blocks(text: &str) -> impl Iterator<Item = &str> {
	let mut rest = text;
	std::iter::from_fn(move || {
		if rest.is_empty() {
			return None;
		}
		let mut end = rest.len().min(BLOCK_BYTES);
		while !rest.is_char_boundary(end) {
			end += 1;
		}
		if end < rest.len() {
			end = rest[end..].find('\n').map_or(rest.len(), |i| end + i + 1);
		}
		let (block, tail) = rest.split_at(end);
		rest = tail;
		Some(block)
	})
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn blocks_end_at_line_breaks_and_cover_the_text() {
		let line = "é".repeat(1000) + "\n";
		let text = line.repeat(1200);
		let parts: Vec<&str> = blocks(&text).collect();
		assert!(parts.len() > 1);
		assert_eq!(parts.concat(), text);
		assert!(parts[..parts.len() - 1].iter().all(|p| p.ends_with('\n')));
		assert_eq!(blocks("").count(), 0);
		assert_eq!(blocks("no break").collect::<Vec<_>>(), ["no break"]);
	}
}

#[cfg(test)]
mod dataset_tests {
	use super::*;
	use crate::data::{open, DataStore, Dataset};
	use grid_primitives::{
		job::{Activation, ModelSpec, Norm, Position, TransformerConfig},
		manifest::DatasetFormat,
	};
	use tokenizers::{models::bpe::BPE, pre_tokenizers::byte_level::ByteLevel};

	/// A byte-level BPE tokenizer with two merges ("th", "the"): 258 tokens.
	fn write_tokenizer(path: &Path) {
		let mut chars: Vec<char> = ByteLevel::alphabet().into_iter().collect();
		chars.sort();
		let mut names: Vec<String> = chars.iter().map(char::to_string).collect();
		names.extend(["th".to_owned(), "the".to_owned()]);
		let vocab: tokenizers::models::bpe::Vocab =
			names.into_iter().enumerate().map(|(i, n)| (n, i as u32)).collect();
		let merges = vec![("t".into(), "h".into()), ("th".into(), "e".into())];
		let bpe = BPE::builder().vocab_and_merges(vocab, merges).build().unwrap();
		let mut tokenizer = Tokenizer::new(bpe);
		tokenizer.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
		tokenizer.save(path, false).unwrap();
	}

	fn transformer(vocab: u32) -> ModelSpec {
		ModelSpec::Transformer(TransformerConfig {
			vocab,
			context: 16,
			layers: 1,
			width: 8,
			heads: 2,
			kv_heads: 1,
			mlp_width: 8,
			activation: Activation::SwiGlu,
			norm: Norm::RmsNorm,
			position: Position::Rope,
			tied_embeddings: true,
		})
	}

	#[test]
	fn bpe_text_is_tokenized_once_with_its_own_tokenizer_and_checked_against_the_model() {
		let tmp = tempfile::tempdir().unwrap();
		let dir = tmp.path().join("corpus");
		std::fs::create_dir_all(&dir).unwrap();
		write_tokenizer(&dir.join(TOKENIZER_FILE));
		std::fs::write(dir.join("a.txt"), "the thin theme then\n".repeat(200)).unwrap();
		std::fs::write(dir.join("b.txt"), "other text there\n".repeat(200)).unwrap();
		let store = DataStore::new(tmp.path().join("store"));
		let manifest = store.publish(&dir, DatasetFormat::TextBpe).unwrap();
		let located = store.locate(&manifest.hash()).unwrap().unwrap();

		let Dataset::Tokens(tokens) = open(&located, &transformer(258)).unwrap() else {
			panic!("a token stream")
		};
		// "the" is one token (257), fewer tokens than bytes, and every id below 258.
		let bytes = 200 * ("the thin theme then\n".len() + "other text there\n".len()) as u64;
		assert!(tokens.len() < bytes && tokens.max_token() == 257, "{}", tokens.len());
		let first = tokens.train_batch(&[0], &candle_core::Device::Cpu).unwrap();
		assert_eq!(first.inputs.to_vec2::<u32>().unwrap()[0][0], 257);
		// The cached tokens are reused, and read the same.
		let again = match open(&located, &transformer(300)).unwrap() {
			Dataset::Tokens(t) => t.train_batch(&[5], &candle_core::Device::Cpu).unwrap(),
			_ => panic!(),
		};
		let before = tokens.train_batch(&[5], &candle_core::Device::Cpu).unwrap();
		assert_eq!(again.inputs.to_vec2::<u32>().unwrap(), before.inputs.to_vec2::<u32>().unwrap());

		// A model whose vocabulary the tokenizer's exceeds is refused by both numbers.
		let err = open(&located, &transformer(200)).err().unwrap().to_string();
		assert!(
			err.contains("tokenizer has 258 tokens") && err.contains("vocabulary has 200"),
			"{err}"
		);
		// A tokenizer file that is not one is refused by name.
		let bad = tmp.path().join("bad");
		std::fs::create_dir_all(&bad).unwrap();
		std::fs::write(bad.join(TOKENIZER_FILE), "{\"model\": 3}").unwrap();
		std::fs::write(bad.join("a.txt"), "text\n").unwrap();
		let manifest = store.publish(&bad, DatasetFormat::TextBpe).unwrap();
		let located = store.locate(&manifest.hash()).unwrap().unwrap();
		let err = open(&located, &transformer(300)).err().unwrap().to_string();
		assert!(
			err.contains("tokenizer.json") && err.contains("not a Hugging Face tokenizer"),
			"{err}"
		);
	}
}
