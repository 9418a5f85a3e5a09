//! A checkpoint's bytes read from the state they encode: the file's header, built once, and
//! its tensors' values read from the global state's weights and outer momentum, which the
//! view shares. This is what a trainer serves joiners and writes to disk while the state is
//! the newest. Encoded into one buffer instead, the checkpoint was a second copy of the
//! model and its momentum, made at every round's decision and held while the checkpoint
//! writer wrote it (at 44M parameters the write ended before a provider's peak, so the peak
//! did not move: `bench/reports/memory_view.md`).

use std::{collections::BTreeMap, io::Write, ops::Range, sync::Arc};

use crate::{
	checkpoint::layout,
	error::{Error, Result},
	params::{le_bytes, Manifest},
};

/// Bytes of a value.
const VALUE_BYTES: usize = 4;

/// A checkpoint read in place from the state it encodes.
pub struct CheckpointView {
	/// The file's first bytes: the header's length and the header.
	header: Vec<u8>,
	/// The weights (0) and the outer momentum (1) the tensors are read from.
	sources: [Arc<Vec<f32>>; 2],
	/// The tensors in the file's order: which source, and which of its values.
	tensors: Vec<(usize, Range<usize>)>,
	/// Where each tensor's bytes start in the file.
	starts: Vec<u64>,
	/// The file's length.
	len: u64,
}

impl CheckpointView {
	/// The checkpoint of `weights` and `velocity` after `round` rounds: the bytes
	/// [`crate::checkpoint::encode_parts`] encodes (the metadata's order aside, which the
	/// header does not fix), read from the two vectors, which the view keeps.
	pub fn new(
		round: u32,
		manifest: &Manifest,
		weights: Arc<Vec<f32>>,
		velocity: Arc<Vec<f32>>,
	) -> Result<Self> {
		let (mut parts, metadata) = layout(round, manifest, &weights, &velocity)?;
		// The file's order: safetensors writes tensors sorted by dtype, then name (all are
		// f32 here), which `checkpoint::f32_safetensors` follows too.
		parts.sort_by(|a, b| a.name.cmp(&b.name));
		let mut starts = Vec::with_capacity(parts.len());
		let mut header = serde_json::Map::new();
		// Sorted, so that a state's checkpoint has the same bytes whoever renders it.
		let metadata: BTreeMap<String, String> = metadata.into_iter().collect();
		header.insert("__metadata__".into(), serde_json::json!(metadata));
		let mut offset = 0;
		for part in &parts {
			let end = offset + part.range.len() * VALUE_BYTES;
			let tensor = serde_json::json!({
				"dtype": "F32",
				"shape": part.shape,
				"data_offsets": [offset, end],
			});
			header.insert(part.name.clone(), tensor);
			starts.push(offset as u64);
			offset = end;
		}
		let header = framed(&serde_json::Value::Object(header))?;
		let head = header.len() as u64;
		let starts = starts.into_iter().map(|s| s + head).collect();
		let tensors = parts.into_iter().map(|p| (p.source, p.range)).collect();
		let len = head + offset as u64;
		Ok(CheckpointView { header, sources: [weights, velocity], tensors, starts, len })
	}

	/// The file's length in bytes.
	pub fn len(&self) -> u64 {
		self.len
	}

	/// Whether it has no bytes (never: the header is there).
	pub fn is_empty(&self) -> bool {
		self.len == 0
	}

	/// The bytes in `range`, or why not (a range past the end).
	pub fn read(&self, range: Range<u64>) -> Result<Vec<u8>> {
		if range.start > range.end || range.end > self.len {
			return Err(Error::Layout(format!(
				"bytes {}..{} of a checkpoint of {}",
				range.start, range.end, self.len
			)));
		}
		let mut out = Vec::with_capacity((range.end - range.start) as usize);
		self.visit(range, |bytes| {
			out.extend_from_slice(bytes);
			Ok(())
		})
		.map_err(|e| Error::Layout(format!("reading a checkpoint: {e}")))?;
		Ok(out)
	}

	/// Writes the whole file to `out`.
	pub fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
		self.visit(0..self.len, |bytes| out.write_all(bytes))
	}

	/// Hands `f` the bytes of `range` (within the file), in order, a borrowed slice at a
	/// time.
	fn visit(
		&self,
		range: Range<u64>,
		mut f: impl FnMut(&[u8]) -> std::io::Result<()>,
	) -> std::io::Result<()> {
		let (start, end) = (range.start, range.end);
		let head = self.header.len() as u64;
		if start < head {
			f(&self.header[start as usize..end.min(head) as usize])?;
		}
		// The first tensor that ends after `start`.
		let first = self.starts.partition_point(|s| *s <= start).saturating_sub(1);
		for (i, (source, values)) in self.tensors.iter().enumerate().skip(first) {
			let at = self.starts[i];
			if at >= end {
				break;
			}
			let bytes = le_bytes(&self.sources[*source][values.clone()]);
			let from = start.saturating_sub(at) as usize;
			let to = ((end - at) as usize).min(bytes.len());
			if from < to {
				f(&bytes[from..to])?;
			}
		}
		Ok(())
	}
}

impl std::fmt::Debug for CheckpointView {
	fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
		f.debug_struct("CheckpointView").field("len", &self.len).finish_non_exhaustive()
	}
}

/// A safetensors header: its length (8 bytes, little-endian) and its JSON, padded with
/// spaces to a multiple of 8 bytes as safetensors pads it. Written here because the crate
/// has no public way to build a header alone (`serialize` reserves the whole file's size,
/// `serialize_to_file` writes without syncing); the tests hold it to
/// [`crate::checkpoint::encode_parts`]'s file and to [`crate::checkpoint::Checkpoint`]'s
/// reader.
fn framed(json: &serde_json::Value) -> Result<Vec<u8>> {
	let mut text = serde_json::to_vec(json)
		.map_err(|e| Error::Layout(format!("a checkpoint's header: {e}")))?;
	text.resize(text.len().next_multiple_of(8), b' ');
	let mut header = (text.len() as u64).to_le_bytes().to_vec();
	header.extend(text);
	Ok(header)
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		checkpoint::{encode_parts, Checkpoint},
		params::ParamInfo,
	};
	use std::path::Path;

	fn manifest() -> Manifest {
		Manifest::new(vec![
			ParamInfo { name: "b".into(), shape: vec![3] },
			ParamInfo { name: "a".into(), shape: vec![2, 2] },
			ParamInfo { name: "c".into(), shape: vec![1] },
		])
		.unwrap()
	}

	#[test]
	fn a_view_reads_the_checkpoint_that_encode_parts_writes() {
		let manifest = manifest();
		let weights: Vec<f32> = (0..8).map(|i| i as f32 * 0.5 - 1.0).collect();
		let velocity: Vec<f32> = (0..8).map(|i| -(i as f32) * 0.25).collect();
		let view = CheckpointView::new(
			7,
			&manifest,
			Arc::new(weights.clone()),
			Arc::new(velocity.clone()),
		)
		.unwrap();
		let mut written = Vec::new();
		view.write_to(&mut written).unwrap();
		assert_eq!(written.len() as u64, view.len());
		let encoded = encode_parts(7, &manifest, &weights, &velocity, Path::new("x")).unwrap();
		// The same tensors' bytes in the same order; the headers' keys may come in another
		// order (the metadata is a hash map), so they are compared by what they read as.
		let header_len = |b: &[u8]| 8 + u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
		let head = header_len(&written);
		assert_eq!(head, view.header.len());
		assert_eq!(written[head..], encoded[header_len(&encoded)..]);
		let read = Checkpoint::from_bytes(&written, Path::new("view")).unwrap();
		let expected = Checkpoint { round: 7, manifest, weights, velocity };
		assert_eq!(read, expected);
		// Any range reads as the written file's.
		let n = view.len();
		for (start, end) in [(0, n), (0, 3), (5, head as u64 + 9), (head as u64, n), (n - 5, n)] {
			assert_eq!(view.read(start..end).unwrap(), written[start as usize..end as usize]);
		}
		for start in 0..n {
			let end = (start + 13).min(n);
			assert_eq!(view.read(start..end).unwrap(), written[start as usize..end as usize]);
		}
		assert!(view.read(n - 1..n + 1).is_err(), "past the end");
	}

	#[test]
	fn a_view_of_a_state_not_of_the_manifest_is_refused() {
		let manifest = manifest();
		let short = Arc::new(vec![0.0; 7]);
		let err = CheckpointView::new(1, &manifest, short.clone(), Arc::new(vec![0.0; 8]));
		assert!(err.is_err(), "weights of 7 values for a manifest of 8");
		let err = CheckpointView::new(1, &manifest, Arc::new(vec![0.0; 8]), short);
		assert!(err.is_err(), "a velocity of 7 values");
	}
}
