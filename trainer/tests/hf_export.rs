//! Grid's models exported in the Hugging Face layout load in Python `transformers` and compute
//! the same logits as Grid on the same tokens: Llama (grouped-query, tied and untied) and GPT-2
//! (Grid's byte-level GPT, and a transformer with GPT-2's knobs). Knob mixes no `transformers`
//! architecture computes are refused.
//!
//! Needs the Python environment `scripts/setup.sh` makes (`$GRID_PYTHON`, by default
//! `~/.cache/grid-python/bin/python`).

use std::{path::PathBuf, process::Command};

use candle_core::{Device, Tensor};
use grid_primitives::job::{Activation, GptConfig, ModelSpec, Norm, Position, TransformerConfig};
use grid_trainer::{model::hf::hugging_face, model::Model, rng::Rng};

fn python() -> PathBuf {
	if let Some(p) = std::env::var_os("GRID_PYTHON") {
		return p.into();
	}
	let home = std::env::var_os("HOME").expect("HOME is set");
	let p = PathBuf::from(home).join(".cache/grid-python/bin/python");
	assert!(p.exists(), "{} is missing: run scripts/setup.sh (or set GRID_PYTHON)", p.display());
	p
}

fn config(llama: bool, tied: bool) -> TransformerConfig {
	TransformerConfig {
		vocab: 61,
		// Flax Llama (4.46) truncates its RoPE table to `context` columns, so it needs a
		// context of at least twice the head width (8); PyTorch's Llama has no such limit.
		context: 16,
		layers: 2,
		width: 32,
		heads: 4,
		kv_heads: if llama { 2 } else { 4 },
		mlp_width: 40,
		activation: if llama { Activation::SwiGlu } else { Activation::Gelu },
		norm: if llama { Norm::RmsNorm } else { Norm::LayerNorm },
		position: if llama { Position::Rope } else { Position::Learned },
		tied_embeddings: tied,
	}
}

fn transformer(llama: bool, tied: bool) -> ModelSpec {
	ModelSpec::Transformer(config(llama, tied))
}

/// A model with weights far from its initial ones (norm scales and biases included), so a
/// weight exported under the wrong name or orientation changes the logits.
fn trained_like(spec: ModelSpec, seed: u64) -> Model {
	let model = Model::new(spec, b"hf-export", &Device::Cpu).unwrap();
	let mut rng = Rng::new(seed);
	let flat: Vec<f32> =
		model.params().flatten().unwrap().iter().map(|w| w + (rng.normal() * 0.3) as f32).collect();
	model.params().load_flat(&flat).unwrap();
	model
}

#[test]
fn exported_models_give_grids_logits_in_transformers() {
	let specs = [
		("llama-gqa-untied", transformer(true, false)),
		("llama-tied", transformer(true, true)),
		("gpt2-like-transformer", transformer(false, true)),
		(
			"byte-gpt",
			ModelSpec::Gpt(GptConfig { vocab: 61, context: 16, layers: 2, heads: 4, width: 32 }),
		),
	];
	let tokens: Vec<Vec<u32>> =
		vec![(0..12).map(|i| (i * 7 + 3) % 61).collect(), (0..12).map(|i| (i * 13) % 61).collect()];
	let dir = tempfile::tempdir().unwrap();
	let tokens_file = dir.path().join("tokens.json");
	std::fs::write(&tokens_file, serde_json::to_vec(&tokens).unwrap()).unwrap();
	let mut expected = Vec::new();
	for (i, (name, spec)) in specs.iter().enumerate() {
		let model = trained_like(*spec, i as u64);
		let flat = model.params().flatten().unwrap();
		let out = dir.path().join(name);
		hugging_face(spec, &model.params().manifest(), &flat).unwrap().write(&out).unwrap();
		let ids = Tensor::new(tokens.clone(), &Device::Cpu).unwrap();
		let logits: Vec<f32> =
			model.forward(&ids).unwrap().flatten_all().unwrap().to_vec1().unwrap();
		expected.push((name, out, logits));
	}
	let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/python/hf_logits.py");
	let run = Command::new(python())
		.arg(&script)
		.arg(&tokens_file)
		.args(expected.iter().map(|(_, out, _)| out))
		.env("JAX_PLATFORMS", "cpu")
		.output()
		.unwrap();
	assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
	let theirs: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
	for (name, out, ours) in &expected {
		let got = &theirs[out.to_str().unwrap()];
		assert_eq!(got["shape"], serde_json::json!([2, 12, 61]), "{name}");
		let got: Vec<f32> = serde_json::from_value(got["logits"].clone()).unwrap();
		let scale = ours.iter().fold(0f32, |m, v| m.max(v.abs()));
		let worst = ours.iter().zip(&got).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
		// Both compute in f32; only the order of additions differs.
		assert!(scale > 1.0, "{name}: logits too flat to tell layouts apart ({scale})");
		assert!(worst <= 1e-3 * scale, "{name}: logits differ by {worst} (max |logit| {scale})");
	}
}

#[test]
fn knob_mixes_without_a_transformers_architecture_are_refused() {
	let mut mixed = config(true, false);
	mixed.position = Position::Learned;
	let spec = ModelSpec::Transformer(mixed);
	let model = Model::new(spec, b"x", &Device::Cpu).unwrap();
	let flat = model.params().flatten().unwrap();
	let err = hugging_face(&spec, &model.params().manifest(), &flat).unwrap_err().to_string();
	assert!(err.contains("match neither Llama"), "{err}");
	// GPT-2 has no grouped-query attention.
	let mut gqa = config(false, true);
	gqa.kv_heads = 2;
	let spec = ModelSpec::Transformer(gqa);
	let model = Model::new(spec, b"x", &Device::Cpu).unwrap();
	let flat = model.params().flatten().unwrap();
	assert!(hugging_face(&spec, &model.params().manifest(), &flat).is_err());
	// Weights that are not the spec's layout are refused, not written.
	let other = transformer(true, true);
	let err = hugging_face(&other, &model.params().manifest(), &flat).unwrap_err().to_string();
	assert!(err.contains("no parameter"), "{err}");
}
