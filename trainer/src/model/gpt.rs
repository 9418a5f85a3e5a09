//! A byte/char-level GPT in the nanoGPT mould: token and position embeddings, pre-norm blocks
//! of causal self-attention and a 4x GELU MLP, a final layer norm and an untied output head.
//! The parameter count is exactly `ModelSpec::Gpt(..).parameters()`.

use candle_core::{DType, Module, Tensor};
use grid_primitives::job::GptConfig;

use super::{
	fused::{causal_attention, embedding, gelu},
	layers::{Init, LayerNorm, Linear},
};
use crate::error::{Error, Result};

/// nanoGPT's initial standard deviation for weights and embeddings.
const INIT_STD: f64 = 0.02;

struct Attention {
	qkv: Linear,
	proj: Linear,
	heads: usize,
}

struct Block {
	ln1: LayerNorm,
	attn: Attention,
	ln2: LayerNorm,
	fc: Linear,
	mlp_proj: Linear,
}

/// The GPT; see the module docs.
pub struct Gpt {
	config: GptConfig,
	tok_emb: Tensor,
	pos_emb: Tensor,
	blocks: Vec<Block>,
	ln_f: LayerNorm,
	head: Linear,
}

impl Gpt {
	/// Builds the model with deterministic initial weights.
	pub fn new(config: GptConfig, init: &mut Init) -> Result<Self> {
		let (v, t, w) = (config.vocab as usize, config.context as usize, config.width as usize);
		let (layers, heads) = (usize::from(config.layers), usize::from(config.heads));
		if v == 0 || t == 0 || w == 0 || layers == 0 || heads == 0 || w % heads != 0 {
			return Err(Error::Config(format!("bad GPT config {config:?}")));
		}
		// GPT-2 scales the residual projections so the residual stream's variance does not grow
		// with depth.
		let proj_std = INIT_STD / (2.0 * layers as f64).sqrt();
		let mut blocks = Vec::with_capacity(layers);
		for i in 0..layers {
			let p = format!("blocks.{i}");
			blocks.push(Block {
				ln1: LayerNorm::new(init, &format!("{p}.ln1"), w)?,
				attn: Attention {
					qkv: Linear::new(init, &format!("{p}.attn.qkv"), w, 3 * w, INIT_STD, true)?,
					proj: Linear::new(init, &format!("{p}.attn.proj"), w, w, proj_std, true)?,
					heads,
				},
				ln2: LayerNorm::new(init, &format!("{p}.ln2"), w)?,
				fc: Linear::new(init, &format!("{p}.mlp.fc"), w, 4 * w, INIT_STD, true)?,
				mlp_proj: Linear::new(init, &format!("{p}.mlp.proj"), 4 * w, w, proj_std, true)?,
			});
		}
		Ok(Gpt {
			config,
			tok_emb: init.normal("tok_emb.weight", &[v, w], INIT_STD)?,
			pos_emb: init.normal("pos_emb.weight", &[t, w], INIT_STD)?,
			blocks,
			ln_f: LayerNorm::new(init, "ln_f", w)?,
			head: Linear::new(init, "head", w, v, INIT_STD, false)?,
		})
	}

	/// The configuration.
	pub fn config(&self) -> GptConfig {
		self.config
	}

	/// Logits `[batch × time, vocab]` in `dtype` for token ids `[batch, time]` (u32),
	/// time ≤ context. Activations and matrix products are in `dtype`; layer norms and the
	/// attention softmax compute in f32.
	pub fn forward(&self, ids: &Tensor, dtype: DType) -> Result<Tensor> {
		let (b, t) = ids.dims2()?;
		super::check_context(t, self.config.context)?;
		let tok = embedding(&self.tok_emb, &ids.flatten_all()?)?; // [b*t, w]
		let pos = self.pos_emb.narrow(0, 0, t)?.repeat((b, 1))?; // [b*t, w]
		let residual = residual_dtype(dtype);
		let mut x = (tok + pos)?.to_dtype(residual)?;
		for block in &self.blocks {
			let a = block.attn.forward(&block.ln1.forward_as(&x, dtype)?, b, t)?;
			x = (x + a.to_dtype(residual)?)?;
			let h = gelu(&block.fc.forward(&block.ln2.forward_as(&x, dtype)?)?)?;
			x = (x + block.mlp_proj.forward(&h)?.to_dtype(residual)?)?;
		}
		Ok(self.head.forward(&self.ln_f.forward_as(&x, dtype)?)?)
	}
}

/// The dtype of the residual stream when activations are in `dtype`: f32, as under PyTorch's
/// autocast (each block's bf16 output is added to an f32 stream), unless
/// `GRID_GPU_RESIDUAL=bf16` keeps it in `dtype` (the old behaviour, for comparison).
fn residual_dtype(dtype: DType) -> DType {
	static BF16: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
	if *BF16.get_or_init(|| std::env::var("GRID_GPU_RESIDUAL").is_ok_and(|v| v == "bf16")) {
		dtype
	} else {
		DType::F32
	}
}

impl Attention {
	/// Causal multi-head self-attention on `[b*t, w]` activations.
	fn forward(&self, x: &Tensor, b: usize, t: usize) -> Result<Tensor> {
		let w = x.dim(1)?;
		let (h, d) = (self.heads, w / self.heads);
		// One copy lays q, k and v out as [3, b, h, t, d].
		let qkv = self.qkv.forward(x)?.reshape((b, t, 3, h, d))?.permute((2, 0, 3, 1, 4))?;
		let qkv = qkv.contiguous()?;
		let (q, k, v) = (qkv.get(0)?, qkv.get(1)?, qkv.get(2)?);
		let scale = 1.0 / (d as f64).sqrt();
		let y = causal_attention(&q, &k, &v, scale)?; // [b, h, t, d]
		let y = y.transpose(1, 2)?.reshape((b * t, w))?;
		Ok(self.proj.forward(&y)?)
	}
}
