//! Checkpoints: the global model, the outer optimizer's momentum and the round, in one
//! safetensors file written atomically (temporary file, fsync, rename), so a crash leaves
//! either the old checkpoint or the new one, never a torn file.
//!
//! Tensors are named `model/<param>` and `outer_velocity/<param>` (f32, the model's shapes);
//! the metadata holds the round, the manifest hash and the model hash, which `load` verifies.

use std::{
	borrow::Cow,
	collections::HashMap,
	io::Write,
	path::{Path, PathBuf},
};

use safetensors::{tensor::TensorView, Dtype, SafeTensors};

use crate::{
	error::{Error, Result},
	params::{le_bytes, Manifest, ParamInfo},
};

const FORMAT: &str = "grid-checkpoint-v1";
const MODEL_PREFIX: &str = "model/";
const VELOCITY_PREFIX: &str = "outer_velocity/";

/// What a checkpoint holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
	/// Rounds completed (the next round to run).
	pub round: u32,
	/// The parameter layout.
	pub manifest: Manifest,
	/// Global weights, flattened in manifest order.
	pub weights: Vec<f32>,
	/// Outer momentum, same layout.
	pub velocity: Vec<f32>,
}

fn bad(path: &Path, reason: impl Into<String>) -> Error {
	Error::Checkpoint { path: path.to_path_buf(), reason: reason.into() }
}

/// The safetensors bytes of named f32 tensors (shape, row-major values) with `metadata`;
/// otherwise why not.
pub fn f32_safetensors<'a>(
	tensors: impl IntoIterator<Item = (String, Vec<usize>, &'a [f32])>,
	metadata: HashMap<String, String>,
) -> std::result::Result<Vec<u8>, String> {
	// Borrowed on a little-endian machine: no transient copy of the whole state beside the
	// file's bytes at every publish and checkpoint.
	let buffers: Vec<(String, Vec<usize>, Cow<[u8]>)> =
		tensors.into_iter().map(|(name, shape, values)| (name, shape, le_bytes(values))).collect();
	let views = buffers
		.iter()
		.map(|(name, shape, bytes)| {
			let view = TensorView::new(Dtype::F32, shape.clone(), bytes)
				.map_err(|e| format!("{name}: {e}"))?;
			Ok((name.as_str(), view))
		})
		.collect::<std::result::Result<Vec<_>, String>>()?;
	safetensors::serialize(views, Some(metadata)).map_err(|e| e.to_string())
}

/// Writes `bytes` to `path` atomically: to a temporary file beside it, synced, then renamed
/// over it, so a crash leaves the old file or the new one, never a torn one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
	write_atomic_with(path, |f| f.write_all(bytes))
}

/// Removes `path`; one already gone is no error (another holder may have removed it).
pub fn remove_if_there(path: &Path) -> Result<()> {
	match std::fs::remove_file(path) {
		Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("removing", path, e)),
		_ => Ok(()),
	}
}

/// [`write_atomic`] of what `write` writes, streamed into the file (what is written need
/// not be in memory as one piece).
pub fn write_atomic_with(
	path: &Path,
	write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
	let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
	let file_name = path.file_name().ok_or_else(|| bad(path, "not a file path"))?;
	let mut tmp_name = file_name.to_os_string();
	tmp_name.push(format!(".tmp-{}", std::process::id()));
	let tmp: PathBuf = dir.join(tmp_name);
	let written = || -> std::io::Result<()> {
		let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
		write(&mut f)?;
		f.into_inner().map_err(|e| e.into_error())?.sync_all()
	};
	if let Err(e) = written() {
		let _ = std::fs::remove_file(&tmp);
		return Err(Error::io("writing", &tmp, e));
	}
	std::fs::rename(&tmp, path).map_err(|e| Error::io("renaming into place", path, e))?;
	// Persist the rename itself; not every platform can open a directory, so best effort.
	if let Ok(d) = std::fs::File::open(dir) {
		let _ = d.sync_all();
	}
	Ok(())
}

/// The checkpoint file's bytes of a state's parts, borrowed (a state publishing itself
/// needs no copy of its model and momentum to encode them); `path` names it in errors.
pub fn encode_parts(
	round: u32,
	manifest: &Manifest,
	weights: &[f32],
	velocity: &[f32],
	path: &Path,
) -> Result<Vec<u8>> {
	let (tensors, metadata) = layout(round, manifest, weights, velocity)?;
	let sources = [weights, velocity];
	let tensors = tensors.into_iter().map(|t| (t.name, t.shape, &sources[t.source][t.range]));
	f32_safetensors(tensors, metadata).map_err(|reason| bad(path, reason))
}

/// One tensor of a checkpoint: its name and shape, and where its values are: `range` of
/// the weights (`source` 0) or of the velocity (1).
pub(crate) struct TensorPart {
	pub name: String,
	pub shape: Vec<usize>,
	pub source: usize,
	pub range: std::ops::Range<usize>,
}

/// A checkpoint's tensors (in manifest order, not yet the file's) and its metadata: what
/// [`encode_parts`] and [`crate::round::checkpoint_view::CheckpointView`] both encode.
pub(crate) fn layout(
	round: u32,
	manifest: &Manifest,
	weights: &[f32],
	velocity: &[f32],
) -> Result<(Vec<TensorPart>, HashMap<String, String>)> {
	manifest.check_len(weights.len())?;
	manifest.check_len(velocity.len())?;
	let mut tensors = Vec::new();
	let mut offset = 0;
	for e in manifest.entries() {
		let n = e.numel();
		for (source, prefix) in [MODEL_PREFIX, VELOCITY_PREFIX].into_iter().enumerate() {
			let (name, shape) = (format!("{prefix}{}", e.name), e.shape.clone());
			tensors.push(TensorPart { name, shape, source, range: offset..offset + n });
		}
		offset += n;
	}
	let metadata = HashMap::from([
		("format".to_string(), FORMAT.to_string()),
		("round".to_string(), round.to_string()),
		("manifest_hash".to_string(), hex::encode(manifest.hash())),
		("model_hash".to_string(), hex::encode(manifest.model_hash(weights)?)),
	]);
	Ok((tensors, metadata))
}

impl Checkpoint {
	/// The model hash of the weights.
	pub fn model_hash(&self) -> Result<[u8; 32]> {
		self.manifest.model_hash(&self.weights)
	}

	/// Errors unless the checkpoint has the layout `expected`.
	pub fn check_manifest(&self, expected: &Manifest) -> Result<()> {
		if &self.manifest != expected {
			return Err(Error::Layout(format!(
				"checkpoint manifest {} differs from the model's {}",
				hex::encode(self.manifest.hash()),
				hex::encode(expected.hash())
			)));
		}
		Ok(())
	}

	/// The checkpoint as safetensors bytes (what [`Checkpoint::save`] writes and peers send
	/// a joining trainer).
	pub fn encode(&self) -> Result<Vec<u8>> {
		self.to_bytes(Path::new("<memory>"))
	}

	/// The file's bytes.
	fn to_bytes(&self, path: &Path) -> Result<Vec<u8>> {
		encode_parts(self.round, &self.manifest, &self.weights, &self.velocity, path)
	}

	/// Writes the checkpoint to `path` atomically.
	pub fn save(&self, path: &Path) -> Result<()> {
		write_atomic(path, &self.to_bytes(path)?)
	}

	/// Reads and verifies a checkpoint written by [`Checkpoint::save`].
	pub fn load(path: &Path) -> Result<Self> {
		let bytes = std::fs::read(path).map_err(|e| Error::io("reading", path, e))?;
		Self::from_bytes(&bytes, path)
	}

	/// Parses and verifies checkpoint bytes; `origin` names where they came from in errors
	/// (a file, or a peer).
	pub fn from_bytes(bytes: &[u8], origin: &Path) -> Result<Self> {
		let path = origin;
		let st = SafeTensors::deserialize(bytes)
			.map_err(|e| bad(path, format!("not a safetensors file: {e}")))?;
		let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| bad(path, e.to_string()))?;
		let meta = meta.metadata().clone().unwrap_or_default();
		let field =
			|k: &str| meta.get(k).cloned().ok_or_else(|| bad(path, format!("metadata has no {k}")));
		if field("format")? != FORMAT {
			return Err(bad(path, format!("format is not {FORMAT}")));
		}
		let round =
			field("round")?.parse::<u32>().map_err(|e| bad(path, format!("bad round: {e}")))?;
		let mut entries = Vec::new();
		for name in st.names() {
			if let Some(p) = name.strip_prefix(MODEL_PREFIX) {
				let view = st.tensor(name).map_err(|e| bad(path, e.to_string()))?;
				entries.push(ParamInfo { name: p.to_string(), shape: view.shape().to_vec() });
			}
		}
		let manifest = Manifest::new(entries)?;
		if field("manifest_hash")? != hex::encode(manifest.hash()) {
			return Err(bad(path, "manifest hash does not match the tensors"));
		}
		let mut weights = Vec::with_capacity(manifest.numel());
		let mut velocity = Vec::with_capacity(manifest.numel());
		for e in manifest.entries() {
			for (prefix, out) in [(MODEL_PREFIX, &mut weights), (VELOCITY_PREFIX, &mut velocity)] {
				let name = format!("{prefix}{}", e.name);
				let view = st.tensor(&name).map_err(|err| bad(path, format!("{name}: {err}")))?;
				if view.dtype() != Dtype::F32 || view.shape() != e.shape.as_slice() {
					return Err(bad(
						path,
						format!(
							"{name} is {:?} {:?}, expected F32 {:?}",
							view.dtype(),
							view.shape(),
							e.shape
						),
					));
				}
				out.extend(
					view.data()
						.chunks_exact(4)
						.map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
				);
			}
		}
		let checkpoint = Checkpoint { round, manifest, weights, velocity };
		if field("model_hash")? != hex::encode(checkpoint.model_hash()?) {
			return Err(bad(path, "model hash does not match the weights"));
		}
		Ok(checkpoint)
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{diloco::OuterOptimizer, model::Model};
	use candle_core::Device;
	use grid_primitives::job::{GptConfig, ModelSpec};

	#[test]
	fn a_write_that_fails_leaves_neither_the_file_nor_its_temporary() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("state.gws");
		let err = write_atomic_with(&path, |f| {
			f.write_all(b"half")?;
			Err(std::io::Error::other("disk full"))
		})
		.unwrap_err();
		assert!(err.to_string().contains("disk full"), "{err}");
		assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing left behind");
		write_atomic_with(&path, |f| f.write_all(b"whole")).unwrap();
		assert_eq!(std::fs::read(&path).unwrap(), b"whole");
	}

	#[test]
	fn save_load_resume_reproduces_the_hash() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("ckpt.safetensors");
		let spec =
			ModelSpec::Gpt(GptConfig { vocab: 32, context: 8, layers: 2, heads: 2, width: 8 });
		let model = Model::new(spec, b"ck", &Device::Cpu).unwrap();
		let manifest = model.params().manifest();
		let mut weights = model.params().flatten().unwrap();
		let mut outer = OuterOptimizer::new(0.7, 0.9, weights.len());
		let delta: Vec<f32> = (0..weights.len()).map(|i| (i % 7) as f32 * 1e-3).collect();
		outer.step(&mut weights, &delta).unwrap();
		let ck = Checkpoint {
			round: 1,
			manifest: manifest.clone(),
			weights: weights.clone(),
			velocity: outer.velocity().to_vec(),
		};
		ck.save(&path).unwrap();
		let loaded = Checkpoint::load(&path).unwrap();
		assert_eq!(loaded, ck);
		loaded.check_manifest(&manifest).unwrap();
		// Resuming: the next outer step from the checkpoint equals the uninterrupted one.
		outer.step(&mut weights, &delta).unwrap();
		let mut resumed = OuterOptimizer::new(0.7, 0.9, weights.len());
		resumed.set_velocity(loaded.velocity.clone()).unwrap();
		let mut w = loaded.weights.clone();
		resumed.step(&mut w, &delta).unwrap();
		assert_eq!(manifest.model_hash(&w).unwrap(), manifest.model_hash(&weights).unwrap());
		model.params().load_flat(&w).unwrap();
		assert_eq!(model.params().model_hash().unwrap(), manifest.model_hash(&weights).unwrap());
		// No temporary files are left behind.
		assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
	}

	#[test]
	fn corrupt_checkpoints_are_rejected() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("c.safetensors");
		let manifest =
			Manifest::new(vec![ParamInfo { name: "w".into(), shape: vec![2, 2] }]).unwrap();
		let ck = Checkpoint {
			round: 3,
			manifest,
			weights: vec![1.0, 2.0, 3.0, 4.0],
			velocity: vec![0.0; 4],
		};
		ck.save(&path).unwrap();
		let good = std::fs::read(&path).unwrap();
		// Flip a byte of the last weight value: the model hash no longer matches.
		let mut flipped = good.clone();
		let n = flipped.len();
		// The file ends with model/w then outer_velocity/w (sorted); find the weights' bytes.
		let pos = good.windows(4).rposition(|w| w == 4.0f32.to_le_bytes()).unwrap();
		flipped[pos] ^= 1;
		std::fs::write(&path, &flipped).unwrap();
		let err = Checkpoint::load(&path).unwrap_err().to_string();
		assert!(err.contains("model hash"), "{err}");
		std::fs::write(&path, &good[..n / 2]).unwrap();
		let err = Checkpoint::load(&path).unwrap_err().to_string();
		assert!(err.contains("c.safetensors"), "{err}");
		let other = Manifest::new(vec![ParamInfo { name: "w".into(), shape: vec![4] }]).unwrap();
		assert!(ck.check_manifest(&other).is_err());
	}
}
