//! The Hugging Face layout: a `model.safetensors` with the tensor names, shapes and orientation
//! `transformers` expects, and the `config.json` that selects the architecture. Export lets a
//! buyer load Grid's result with `AutoModelForCausalLM.from_pretrained(dir)` (or
//! `candle-transformers`) unchanged; import lets a job start from such a model (fine-tuning).
//! Both come from one description of the layout ([`layout`]): import lays out each parameter's
//! index instead of its value and reads the mapping back.
//!
//! Two families have a standard layout, and each is an exact match for Grid's models:
//! - **Llama** (`LlamaForCausalLM`): RMS norm, RoPE, SwiGLU, no biases, grouped-query attention.
//! - **GPT-2** (`GPT2LMHeadModel`): layer norm, learned positions, tanh-GELU MLP, multi-head
//!   attention. Grid's byte-level GPT is one; so is a transformer with those knobs (its missing
//!   biases are written as zeros).
//!
//! Any other mix of knobs (say RMS norm with learned positions) has no architecture in
//! `transformers` that computes the same function, so it is refused rather than written in a
//! layout that would load and compute something else.
//!
//! Grid stores a linear layer's weight `[in, out]`; PyTorch's `nn.Linear` (Llama) stores
//! `[out, in]`, GPT-2's `Conv1D` stores `[in, out]`.

use std::{collections::HashMap, path::Path};

use grid_primitives::job::{Activation, GptConfig, ModelSpec, Norm, Position, TransformerConfig};
use serde_json::{json, Value};

use crate::{
	checkpoint::{f32_safetensors, write_atomic},
	error::{Error, Result},
	params::Manifest,
};

/// Layer norm's and RMS norm's epsilon in every Grid model.
const NORM_EPS: f64 = 1e-5;
/// RoPE's base frequency in Grid's transformer.
const ROPE_THETA: f64 = 10_000.0;

/// One tensor of the layout: its Hugging Face name, shape and row-major elements (values, or
/// for import the index of each element's Grid parameter value).
#[derive(Clone, Debug, PartialEq)]
pub struct HfTensor<T = f32> {
	pub name: String,
	pub shape: Vec<usize>,
	pub values: Vec<T>,
}

/// A model in the Hugging Face layout.
#[derive(Clone, Debug, PartialEq)]
pub struct HfModel<T = f32> {
	/// The tensors of `model.safetensors`, in the order written.
	pub tensors: Vec<HfTensor<T>>,
	/// `config.json`.
	pub config: Value,
}

fn refuse(reason: impl Into<String>) -> Error {
	Error::Config(format!("no Hugging Face export: {}", reason.into()))
}

/// Grid's parameters by name: shape and elements; `zero` stands for a tensor Grid's model
/// does not have and the layout holds as zeros (GPT-2's biases).
struct Weights<'a, T> {
	by_name: HashMap<&'a str, (&'a [usize], &'a [T])>,
	zero: T,
}

impl<'a, T: Copy> Weights<'a, T> {
	fn new(manifest: &'a Manifest, flat: &'a [T], zero: T) -> Result<Self> {
		manifest.check_len(flat.len())?;
		let mut by_name = HashMap::new();
		let mut offset = 0;
		for entry in manifest.entries() {
			let n = entry.numel();
			by_name
				.insert(entry.name.as_str(), (entry.shape.as_slice(), &flat[offset..offset + n]));
			offset += n;
		}
		Ok(Weights { by_name, zero })
	}

	fn get(&self, name: &str) -> Result<(&'a [usize], &'a [T])> {
		self.by_name
			.get(name)
			.copied()
			.ok_or_else(|| refuse(format!("the checkpoint has no parameter {name}")))
	}

	/// `name` as it is stored.
	fn same(&self, name: &str, to: String) -> Result<HfTensor<T>> {
		let (shape, values) = self.get(name)?;
		Ok(HfTensor { name: to, shape: shape.to_vec(), values: values.to_vec() })
	}

	/// A `[in, out]` matrix as `[out, in]`.
	fn transposed(&self, name: &str, to: String) -> Result<HfTensor<T>> {
		let (shape, values) = self.get(name)?;
		let [rows, cols] = *shape else {
			return Err(refuse(format!("{name} has shape {shape:?}, not a matrix")));
		};
		let out = (0..cols).flat_map(|c| (0..rows).map(move |r| values[r * cols + c])).collect();
		Ok(HfTensor { name: to, shape: vec![cols, rows], values: out })
	}

	/// `[in, out]` matrices side by side: `[in, out₁ + out₂ + …]`.
	fn concat_columns(&self, names: &[String], to: String) -> Result<HfTensor<T>> {
		let parts = names.iter().map(|n| self.get(n)).collect::<Result<Vec<_>>>()?;
		let rows = parts[0].0[0];
		let cols: usize = parts.iter().map(|(s, _)| s[1]).sum();
		let mut values = Vec::with_capacity(rows * cols);
		for r in 0..rows {
			for (shape, v) in &parts {
				values.extend_from_slice(&v[r * shape[1]..(r + 1) * shape[1]]);
			}
		}
		Ok(HfTensor { name: to, shape: vec![rows, cols], values })
	}

	/// A vector of `len` zeros.
	fn zeros(&self, name: String, len: usize) -> HfTensor<T> {
		HfTensor { name, shape: vec![len], values: vec![self.zero; len] }
	}
}

/// The Hugging Face form of a model with spec `spec` and weights `flat` (in `manifest` order).
pub fn hugging_face(spec: &ModelSpec, manifest: &Manifest, flat: &[f32]) -> Result<HfModel> {
	layout(spec, &Weights::new(manifest, flat, 0.0)?)
}

/// The layout of `spec`'s model, with `weights`' elements where its parameters go.
fn layout<T: Copy>(spec: &ModelSpec, weights: &Weights<T>) -> Result<HfModel<T>> {
	match spec {
		ModelSpec::Gpt(c) => gpt2_from_gpt(c, weights),
		ModelSpec::Transformer(c) => match (c.norm, c.position, c.activation) {
			(Norm::RmsNorm, Position::Rope, Activation::SwiGlu) => llama(c, weights),
			(Norm::LayerNorm, Position::Learned, Activation::Gelu) if c.kv_heads == c.heads => {
				gpt2_from_transformer(c, weights)
			}
			_ => Err(refuse(format!(
				"{:?} norm, {:?} positions, {:?} and {} of {} heads for keys and values match \
				 neither Llama (RMS norm, RoPE, SwiGLU) nor GPT-2 (layer norm, learned positions, \
				 GELU, as many key/value heads as heads)",
				c.norm, c.position, c.activation, c.kv_heads, c.heads
			))),
		},
		ModelSpec::MnistMlp(_) | ModelSpec::MnistCnn(_) | ModelSpec::ResNet(_) => {
			Err(refuse("image classifiers have no Hugging Face causal-LM layout"))
		}
	}
}

fn llama<T: Copy>(c: &TransformerConfig, w: &Weights<T>) -> Result<HfModel<T>> {
	let mut tensors = vec![w.same("tok_emb.weight", "model.embed_tokens.weight".into())?];
	for i in 0..usize::from(c.layers) {
		let (ours, theirs) = (format!("blocks.{i}"), format!("model.layers.{i}"));
		tensors.push(
			w.same(&format!("{ours}.norm1.weight"), format!("{theirs}.input_layernorm.weight"))?,
		);
		for (a, b) in [("attn.q", "self_attn.q_proj"), ("attn.k", "self_attn.k_proj")]
			.into_iter()
			.chain([("attn.v", "self_attn.v_proj"), ("attn.o", "self_attn.o_proj")])
		{
			tensors
				.push(w.transposed(&format!("{ours}.{a}.weight"), format!("{theirs}.{b}.weight"))?);
		}
		tensors.push(w.same(
			&format!("{ours}.norm2.weight"),
			format!("{theirs}.post_attention_layernorm.weight"),
		)?);
		for (a, b) in [
			("mlp.gate", "mlp.gate_proj"),
			("mlp.up", "mlp.up_proj"),
			("mlp.down", "mlp.down_proj"),
		] {
			tensors
				.push(w.transposed(&format!("{ours}.{a}.weight"), format!("{theirs}.{b}.weight"))?);
		}
	}
	tensors.push(w.same("norm_f.weight", "model.norm.weight".into())?);
	// A tied head is written out too: PyTorch's Llama ties it to the embedding again on
	// loading, and Flax's Llama has no tying and reads it from the file.
	tensors.push(match c.tied_embeddings {
		true => w.same("tok_emb.weight", "lm_head.weight".into())?,
		false => w.transposed("head.weight", "lm_head.weight".into())?,
	});
	let config = json!({
		"architectures": ["LlamaForCausalLM"],
		"model_type": "llama",
		"vocab_size": c.vocab,
		"hidden_size": c.width,
		"intermediate_size": c.mlp_width,
		"num_hidden_layers": c.layers,
		"num_attention_heads": c.heads,
		"num_key_value_heads": c.kv_heads,
		"head_dim": c.width / u32::from(c.heads),
		"max_position_embeddings": c.context,
		"hidden_act": "silu",
		"rms_norm_eps": NORM_EPS,
		"rope_theta": ROPE_THETA,
		"rope_scaling": Value::Null,
		"attention_bias": false,
		"mlp_bias": false,
		"tie_word_embeddings": c.tied_embeddings,
		"torch_dtype": "float32",
	});
	Ok(HfModel { tensors, config })
}

/// GPT-2's config for a model of these sizes.
fn gpt2_config(
	vocab: u32,
	context: u32,
	width: u32,
	layers: u16,
	heads: u16,
	inner: u32,
	tied: bool,
) -> Value {
	json!({
		"architectures": ["GPT2LMHeadModel"],
		"model_type": "gpt2",
		"vocab_size": vocab,
		"n_positions": context,
		"n_embd": width,
		"n_layer": layers,
		"n_head": heads,
		"n_inner": inner,
		"activation_function": "gelu_new",
		"layer_norm_epsilon": NORM_EPS,
		"scale_attn_weights": true,
		"tie_word_embeddings": tied,
		"torch_dtype": "float32",
	})
}

fn gpt2_from_gpt<T: Copy>(c: &GptConfig, w: &Weights<T>) -> Result<HfModel<T>> {
	let mut tensors = vec![
		w.same("tok_emb.weight", "transformer.wte.weight".into())?,
		w.same("pos_emb.weight", "transformer.wpe.weight".into())?,
	];
	for i in 0..usize::from(c.layers) {
		let (ours, theirs) = (format!("blocks.{i}"), format!("transformer.h.{i}"));
		for (a, b) in [("ln1", "ln_1"), ("attn.qkv", "attn.c_attn"), ("attn.proj", "attn.c_proj")]
			.into_iter()
			.chain([("ln2", "ln_2"), ("mlp.fc", "mlp.c_fc"), ("mlp.proj", "mlp.c_proj")])
		{
			for part in ["weight", "bias"] {
				tensors
					.push(w.same(&format!("{ours}.{a}.{part}"), format!("{theirs}.{b}.{part}"))?);
			}
		}
	}
	tensors.push(w.same("ln_f.weight", "transformer.ln_f.weight".into())?);
	tensors.push(w.same("ln_f.bias", "transformer.ln_f.bias".into())?);
	tensors.push(w.transposed("head.weight", "lm_head.weight".into())?);
	let config = gpt2_config(c.vocab, c.context, c.width, c.layers, c.heads, 4 * c.width, false);
	Ok(HfModel { tensors, config })
}

fn gpt2_from_transformer<T: Copy>(c: &TransformerConfig, w: &Weights<T>) -> Result<HfModel<T>> {
	let (width, inner) = (c.width as usize, c.mlp_width as usize);
	let mut tensors = vec![
		w.same("tok_emb.weight", "transformer.wte.weight".into())?,
		w.same("pos_emb.weight", "transformer.wpe.weight".into())?,
	];
	for i in 0..usize::from(c.layers) {
		let (ours, theirs) = (format!("blocks.{i}"), format!("transformer.h.{i}"));
		let norm = |tensors: &mut Vec<HfTensor<T>>, a: &str, b: &str| -> Result<()> {
			for part in ["weight", "bias"] {
				tensors
					.push(w.same(&format!("{ours}.{a}.{part}"), format!("{theirs}.{b}.{part}"))?);
			}
			Ok(())
		};
		// Grid's transformer has no biases; GPT-2's are there and zero.
		let linear = |tensors: &mut Vec<HfTensor<T>>, a: &str, b: &str, out: usize| -> Result<()> {
			tensors.push(w.same(&format!("{ours}.{a}.weight"), format!("{theirs}.{b}.weight"))?);
			tensors.push(w.zeros(format!("{theirs}.{b}.bias"), out));
			Ok(())
		};
		norm(&mut tensors, "norm1", "ln_1")?;
		let qkv = ["q", "k", "v"].map(|p| format!("{ours}.attn.{p}.weight"));
		tensors.push(w.concat_columns(&qkv, format!("{theirs}.attn.c_attn.weight"))?);
		tensors.push(w.zeros(format!("{theirs}.attn.c_attn.bias"), 3 * width));
		linear(&mut tensors, "attn.o", "attn.c_proj", width)?;
		norm(&mut tensors, "norm2", "ln_2")?;
		linear(&mut tensors, "mlp.up", "mlp.c_fc", inner)?;
		linear(&mut tensors, "mlp.down", "mlp.c_proj", width)?;
	}
	tensors.push(w.same("norm_f.weight", "transformer.ln_f.weight".into())?);
	tensors.push(w.same("norm_f.bias", "transformer.ln_f.bias".into())?);
	if !c.tied_embeddings {
		tensors.push(w.transposed("head.weight", "lm_head.weight".into())?);
	}
	let config =
		gpt2_config(c.vocab, c.context, c.width, c.layers, c.heads, c.mlp_width, c.tied_embeddings);
	Ok(HfModel { tensors, config })
}

/// Tensors by name: shape and row-major values.
pub type NamedTensors = HashMap<String, (Vec<usize>, Vec<f32>)>;

fn bad_import(reason: impl Into<String>) -> Error {
	Error::Config(format!("weights in the Hugging Face layout: {}", reason.into()))
}

/// The weights (in `manifest` order) of a model of spec `spec` held in the Hugging Face layout,
/// from `tensors` by name (shape, values). The file must hold every tensor of the layout with
/// its shape, and nothing else; the zeros the layout has where Grid's model has no weights
/// (GPT-2's biases) must be zeros, and a tied head must equal the embedding it is tied to.
pub fn import(spec: &ModelSpec, manifest: &Manifest, tensors: &NamedTensors) -> Result<Vec<f32>> {
	// The layout of each parameter's index says where each element of the file goes.
	let indices: Vec<u64> = (0..manifest.numel() as u64).collect();
	let layout = layout(spec, &Weights::new(manifest, &indices, u64::MAX)?)?;
	let mut flat: Vec<Option<f32>> = vec![None; indices.len()];
	for t in &layout.tensors {
		let (shape, values) =
			tensors.get(&t.name).ok_or_else(|| bad_import(format!("no tensor {}", t.name)))?;
		if *shape != t.shape {
			return Err(bad_import(format!(
				"{} has shape {shape:?}; the job's model needs {:?}",
				t.name, t.shape
			)));
		}
		for (&index, &value) in t.values.iter().zip(values) {
			if index == u64::MAX {
				if value != 0.0 {
					return Err(bad_import(format!(
						"{} is not zero, and the job's model has no such weights",
						t.name
					)));
				}
				continue;
			}
			let slot = &mut flat[index as usize];
			match *slot {
				Some(tied) if tied != value => {
					return Err(bad_import(format!(
						"{} differs from the weights the job's model ties it to",
						t.name
					)))
				}
				_ => *slot = Some(value),
			}
		}
	}
	if let Some(extra) = tensors.keys().find(|k| !layout.tensors.iter().any(|t| &t.name == *k)) {
		return Err(bad_import(format!("{extra} is no tensor of the job's model")));
	}
	// Every parameter appears in the layout, so none is left unset.
	flat.into_iter()
		.collect::<Option<Vec<f32>>>()
		.ok_or_else(|| bad_import("some parameters of the job's model have no tensor"))
}

impl HfModel {
	/// Writes `model.safetensors` and `config.json` into `dir` (created if missing), each
	/// atomically.
	pub fn write(&self, dir: &Path) -> Result<()> {
		std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
		let tensors =
			self.tensors.iter().map(|t| (t.name.clone(), t.shape.clone(), t.values.as_slice()));
		// `transformers` reads the framework from this metadata entry.
		let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
		let model =
			f32_safetensors(tensors, metadata).map_err(|e| refuse(format!("serializing: {e}")))?;
		write_atomic(&dir.join("model.safetensors"), &model)?;
		let config = serde_json::to_vec_pretty(&self.config)
			.map_err(|e| refuse(format!("writing config.json: {e}")))?;
		write_atomic(&dir.join("config.json"), &config)
	}
}
