//! Initial weights for fine-tuning: a `safetensors` file read into a model's flat parameter
//! vector. The file may name its tensors as Grid does (its parameter names, or a Grid
//! checkpoint's `model/<name>`, whose `outer_velocity/` tensors are ignored), or in one of the
//! Hugging Face layouts Grid exports ([`super::hf`]), so a buyer can start from a model from the
//! Hub or from a previous job's export. f32, f16, bf16 and f64 tensors are read as f32.

use std::{collections::HashMap, path::Path};

use candle_core::{DType, Device, Tensor};
use grid_primitives::job::ModelSpec;
use safetensors::{Dtype, SafeTensors};

use super::hf::{self, NamedTensors};
use crate::{
	error::{Error, Result},
	params::Manifest,
};

/// A Grid checkpoint's prefix of model tensors, and of the momentum it also holds.
const CHECKPOINT_MODEL: &str = "model/";
const CHECKPOINT_VELOCITY: &str = "outer_velocity/";

fn bad(path: &Path, reason: impl Into<String>) -> Error {
	Error::bad_data(path, reason)
}

/// Every tensor of a safetensors file, as f32: name → (shape, values).
fn read_tensors(path: &Path) -> Result<NamedTensors> {
	let bytes = std::fs::read(path).map_err(|e| Error::io("reading", path, e))?;
	let file = SafeTensors::deserialize(&bytes)
		.map_err(|e| bad(path, format!("not a safetensors file: {e}")))?;
	let mut tensors = HashMap::new();
	for (name, view) in file.tensors() {
		let dtype = match view.dtype() {
			Dtype::F32 => DType::F32,
			Dtype::F16 => DType::F16,
			Dtype::BF16 => DType::BF16,
			Dtype::F64 => DType::F64,
			other => return Err(bad(path, format!("{name} is {other:?}, not floating point"))),
		};
		let shape = view.shape().to_vec();
		let values = Tensor::from_raw_buffer(view.data(), dtype, &shape, &Device::Cpu)
			.and_then(|t| t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>())
			.map_err(|e| bad(path, format!("{name}: {e}")))?;
		if let Some(at) = values.iter().position(|v| !v.is_finite()) {
			return Err(bad(path, format!("{name} holds a non-finite value at {at}")));
		}
		tensors.insert(name, (shape, values));
	}
	Ok(tensors)
}

/// The weights of a model of spec `spec` (layout `manifest`) in the file at `path`.
pub fn load(path: &Path, spec: &ModelSpec, manifest: &Manifest) -> Result<Vec<f32>> {
	let mut tensors = read_tensors(path)?;
	// A Grid checkpoint: its model part under Grid's names.
	if tensors.keys().any(|k| k.starts_with(CHECKPOINT_MODEL)) {
		tensors.retain(|k, _| !k.starts_with(CHECKPOINT_VELOCITY));
		tensors = tensors
			.into_iter()
			.map(|(k, v)| (k.strip_prefix(CHECKPOINT_MODEL).unwrap_or(&k).to_owned(), v))
			.collect();
	}
	let grid_names = manifest.entries().iter().all(|e| tensors.contains_key(&e.name));
	if !grid_names {
		return hf::import(spec, manifest, &tensors).map_err(|e| {
			bad(path, format!("neither Grid's parameter names nor a Hugging Face layout: {e}"))
		});
	}
	if let Some(extra) = tensors.keys().find(|k| !manifest.entries().iter().any(|e| &e.name == *k))
	{
		return Err(bad(path, format!("{extra} is no parameter of the job's model")));
	}
	let mut flat = Vec::with_capacity(manifest.numel());
	for entry in manifest.entries() {
		let (shape, values) = &tensors[&entry.name];
		if *shape != entry.shape {
			return Err(bad(
				path,
				format!(
					"{} has shape {shape:?}; the job's model needs {:?}",
					entry.name, entry.shape
				),
			));
		}
		flat.extend_from_slice(values);
	}
	Ok(flat)
}

#[cfg(test)]
mod tests {
	use grid_primitives::job::{Activation, GptConfig, Norm, Position, TransformerConfig};

	use super::*;
	use crate::{checkpoint::Checkpoint, model::Model, rng::Rng};

	fn llama(tied: bool) -> ModelSpec {
		ModelSpec::Transformer(TransformerConfig {
			vocab: 50,
			context: 16,
			layers: 2,
			width: 16,
			heads: 4,
			kv_heads: 2,
			mlp_width: 24,
			activation: Activation::SwiGlu,
			norm: Norm::RmsNorm,
			position: Position::Rope,
			tied_embeddings: tied,
		})
	}

	fn gpt2_like() -> ModelSpec {
		let ModelSpec::Transformer(c) = llama(true) else { unreachable!() };
		ModelSpec::Transformer(TransformerConfig {
			kv_heads: 4,
			activation: Activation::Gelu,
			norm: Norm::LayerNorm,
			position: Position::Learned,
			..c
		})
	}

	fn byte_gpt() -> ModelSpec {
		ModelSpec::Gpt(GptConfig { vocab: 50, context: 16, layers: 2, heads: 4, width: 16 })
	}

	/// A model of `spec` with weights unlike anyone's initial ones.
	fn model(spec: ModelSpec, seed: u64) -> (Manifest, Vec<f32>) {
		let model = Model::new(spec, b"weights", &Device::Cpu).unwrap();
		let mut rng = Rng::new(seed);
		let flat = model.params().flatten().unwrap();
		let flat = flat.iter().map(|w| w + rng.normal() as f32).collect();
		(model.params().manifest(), flat)
	}

	fn write(path: &Path, tensors: &[(&str, Vec<usize>, Vec<f32>)]) {
		let named = tensors.iter().map(|(n, s, v)| (n.to_string(), s.clone(), v.as_slice()));
		let bytes = crate::checkpoint::f32_safetensors(named, Default::default()).unwrap();
		std::fs::write(path, bytes).unwrap();
	}

	#[test]
	fn a_hugging_face_export_loads_back_exactly() {
		let dir = tempfile::tempdir().unwrap();
		for (i, spec) in
			[llama(false), llama(true), gpt2_like(), byte_gpt()].into_iter().enumerate()
		{
			let (manifest, flat) = model(spec, i as u64);
			let out = dir.path().join(i.to_string());
			hf::hugging_face(&spec, &manifest, &flat).unwrap().write(&out).unwrap();
			let loaded = load(&out.join("model.safetensors"), &spec, &manifest).unwrap();
			assert_eq!(loaded, flat, "{spec:?}");
		}
	}

	#[test]
	fn grid_names_and_grid_checkpoints_load() {
		let dir = tempfile::tempdir().unwrap();
		let spec = llama(true);
		let (manifest, flat) = model(spec, 7);
		let ck = Checkpoint {
			round: 3,
			manifest: manifest.clone(),
			weights: flat.clone(),
			velocity: vec![0.5; flat.len()],
		};
		let path = dir.path().join("ck.safetensors");
		ck.save(&path).unwrap();
		assert_eq!(load(&path, &spec, &manifest).unwrap(), flat);
		// Plain parameter names.
		let mut offset = 0;
		let tensors: Vec<_> = manifest
			.entries()
			.iter()
			.map(|e| {
				let values = flat[offset..offset + e.numel()].to_vec();
				offset += e.numel();
				(e.name.as_str(), e.shape.clone(), values)
			})
			.collect();
		let path = dir.path().join("plain.safetensors");
		write(&path, &tensors);
		assert_eq!(load(&path, &spec, &manifest).unwrap(), flat);
		// One more tensor than the model has.
		let mut extra = tensors.clone();
		extra.push(("stowaway", vec![1], vec![1.0]));
		write(&path, &extra);
		let err = load(&path, &spec, &manifest).unwrap_err().to_string();
		assert!(err.contains("stowaway is no parameter"), "{err}");
	}

	/// Weights of another model, or that would compute something else than the layout says,
	/// are refused with the reason, never loaded.
	#[test]
	fn weights_that_do_not_fit_are_refused() {
		let dir = tempfile::tempdir().unwrap();
		let refused = |spec: ModelSpec, hf_model: hf::HfModel| {
			let out = dir.path().join("m");
			hf_model.write(&out).unwrap();
			let manifest = Model::new(spec, b"x", &Device::Cpu).unwrap().params().manifest();
			load(&out.join("model.safetensors"), &spec, &manifest).unwrap_err().to_string()
		};
		// Another width.
		let (manifest, flat) = model(llama(false), 1);
		let export = hf::hugging_face(&llama(false), &manifest, &flat).unwrap();
		let ModelSpec::Transformer(c) = llama(false) else { unreachable!() };
		let wider = ModelSpec::Transformer(TransformerConfig { width: 32, ..c });
		let err = refused(wider, export.clone());
		assert!(err.contains("has shape") && err.contains("needs"), "{err}");
		// An untied model into a tied one: the head is not the embedding.
		let err = refused(llama(true), export.clone());
		assert!(err.contains("differs from the weights the job's model ties it to"), "{err}");
		// A missing tensor.
		let mut missing = export.clone();
		missing.tensors.retain(|t| t.name != "model.norm.weight");
		let err = refused(llama(false), missing);
		assert!(err.contains("no tensor model.norm.weight"), "{err}");
		// GPT-2 with biases Grid's transformer does not have.
		let (manifest, flat) = model(gpt2_like(), 2);
		let mut biased = hf::hugging_face(&gpt2_like(), &manifest, &flat).unwrap();
		let bias = biased.tensors.iter_mut().find(|t| t.name.ends_with("c_fc.bias")).unwrap();
		bias.values[3] = 0.25;
		let err = refused(gpt2_like(), biased);
		assert!(err.contains("is not zero"), "{err}");
		// Not a safetensors file at all, and a non-float tensor.
		let path = dir.path().join("junk.safetensors");
		std::fs::write(&path, b"not safetensors").unwrap();
		let err = load(&path, &llama(false), &manifest).unwrap_err().to_string();
		assert!(err.contains("not a safetensors file"), "{err}");
		let ints =
			safetensors::tensor::TensorView::new(Dtype::I32, vec![1], &[0, 0, 0, 0]).unwrap();
		std::fs::write(&path, safetensors::serialize([("ids", ints)], None).unwrap()).unwrap();
		let err = load(&path, &llama(false), &manifest).unwrap_err().to_string();
		assert!(err.contains("not floating point"), "{err}");
		// A non-finite weight.
		let mut nan = hf::hugging_face(&gpt2_like(), &manifest, &flat).unwrap();
		nan.tensors[0].values[0] = f32::NAN;
		let err = refused(gpt2_like(), nan);
		assert!(err.contains("non-finite"), "{err}");
	}

	#[test]
	fn half_precision_weights_load_as_f32() {
		let dir = tempfile::tempdir().unwrap();
		let spec = byte_gpt();
		let (manifest, flat) = model(spec, 3);
		// Round to bf16 first, so the f32 values are exactly what the file holds.
		let rounded: Vec<f32> =
			flat.iter().map(|v| f32::from_bits(v.to_bits() & 0xffff_0000)).collect();
		let export = hf::hugging_face(&spec, &manifest, &rounded).unwrap();
		let bytes: Vec<Vec<u8>> = export
			.tensors
			.iter()
			.map(|t| {
				t.values.iter().flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes()).collect()
			})
			.collect();
		let views = export.tensors.iter().zip(&bytes).map(|(t, b)| {
			(
				t.name.as_str(),
				safetensors::tensor::TensorView::new(Dtype::BF16, t.shape.clone(), b).unwrap(),
			)
		});
		let path = dir.path().join("bf16.safetensors");
		std::fs::write(&path, safetensors::serialize(views, None).unwrap()).unwrap();
		assert_eq!(load(&path, &spec, &manifest).unwrap(), rounded);
	}
}
