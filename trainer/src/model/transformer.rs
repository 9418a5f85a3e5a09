//! A decoder-only transformer built from the knobs of [`TransformerConfig`]: token embedding
//! (plus a learned position embedding, or rotary embeddings on queries and keys), pre-norm
//! blocks of causal grouped-query attention and a GELU or SwiGLU MLP, a final norm, and a head
//! that is its own matrix or the token embedding transposed. Linear layers have no biases.
//! The parameter count is exactly `ModelSpec::Transformer(..).parameters()`.

use candle_core::{DType, Device, Module, Result as CResult, Tensor, D};
use grid_primitives::job::{Activation, Norm, Position, TransformerConfig};

use super::{
	fused::{causal_attention, embedding, gelu},
	layers::{Init, LayerNorm, Linear},
};
use crate::error::{Error, Result};

/// Initial standard deviation of weights and embeddings (GPT-2's and Llama's).
const INIT_STD: f64 = 0.02;
/// RMS norm's epsilon (Llama's).
const RMS_EPS: f64 = 1e-5;
/// RoPE's base frequency.
const ROPE_BASE: f64 = 10_000.0;

/// RMS norm over the last dimension with a learned scale, computed in f32.
struct RmsNorm {
	weight: Tensor,
}

impl Module for RmsNorm {
	fn forward(&self, x: &Tensor) -> CResult<Tensor> {
		let x32 = x.to_dtype(DType::F32)?;
		let rms = (x32.sqr()?.mean_keepdim(D::Minus1)? + RMS_EPS)?.sqrt()?;
		x32.broadcast_div(&rms)?.broadcast_mul(&self.weight)?.to_dtype(x.dtype())
	}
}

/// Either normalization.
enum Normalize {
	Layer(LayerNorm),
	Rms(RmsNorm),
}

impl Normalize {
	fn new(init: &mut Init, name: &str, kind: Norm, width: usize) -> Result<Self> {
		Ok(match kind {
			Norm::LayerNorm => Normalize::Layer(LayerNorm::new(init, name, width)?),
			Norm::RmsNorm => Normalize::Rms(RmsNorm {
				weight: init.constant(&format!("{name}.weight"), &[width], 1.0)?,
			}),
		})
	}

	fn forward(&self, x: &Tensor) -> CResult<Tensor> {
		match self {
			Normalize::Layer(n) => n.forward(x),
			Normalize::Rms(n) => n.forward(x),
		}
	}
}

/// The MLP: up and down, with a gate for SwiGLU.
struct Mlp {
	up: Linear,
	gate: Option<Linear>,
	down: Linear,
}

impl Mlp {
	fn forward(&self, x: &Tensor) -> CResult<Tensor> {
		let up = self.up.forward(x)?;
		let hidden = match &self.gate {
			Some(gate) => (gate.forward(x)?.silu()? * up)?,
			None => gelu(&up)?,
		};
		self.down.forward(&hidden)
	}
}

struct Attention {
	q: Linear,
	k: Linear,
	v: Linear,
	o: Linear,
	heads: usize,
	kv_heads: usize,
}

struct Block {
	norm1: Normalize,
	attn: Attention,
	norm2: Normalize,
	mlp: Mlp,
}

/// Rotary embedding tables: cos and sin `[context, head width]` (each frequency twice, in the
/// rotate-half layout Llama uses).
struct Rope {
	cos: Tensor,
	sin: Tensor,
}

impl Rope {
	fn new(context: usize, head: usize, device: &Device) -> Result<Self> {
		let half = head / 2;
		let mut cos = Vec::with_capacity(context * head);
		let mut sin = Vec::with_capacity(context * head);
		for t in 0..context {
			let angles: Vec<f64> = (0..half)
				.map(|i| t as f64 / ROPE_BASE.powf(2.0 * i as f64 / head as f64))
				.collect();
			for _ in 0..2 {
				cos.extend(angles.iter().map(|a| a.cos() as f32));
				sin.extend(angles.iter().map(|a| a.sin() as f32));
			}
		}
		Ok(Rope {
			cos: Tensor::from_vec(cos, (context, head), device)?,
			sin: Tensor::from_vec(sin, (context, head), device)?,
		})
	}

	/// Rotates `x` `[b, h, t, d]`: `x cos + rotate_half(x) sin`.
	fn apply(&self, x: &Tensor) -> CResult<Tensor> {
		let (_, _, t, d) = x.dims4()?;
		let half = d / 2;
		let cos = self.cos.narrow(0, 0, t)?.to_dtype(x.dtype())?;
		let sin = self.sin.narrow(0, 0, t)?.to_dtype(x.dtype())?;
		let rotated = Tensor::cat(&[&x.narrow(3, half, half)?.neg()?, &x.narrow(3, 0, half)?], 3)?;
		x.broadcast_mul(&cos)? + rotated.broadcast_mul(&sin)?
	}
}

/// The transformer; see the module docs.
pub struct Transformer {
	config: TransformerConfig,
	tok_emb: Tensor,
	pos_emb: Option<Tensor>,
	rope: Option<Rope>,
	blocks: Vec<Block>,
	norm_f: Normalize,
	/// `None`: the token embedding, transposed.
	head: Option<Linear>,
}

impl Transformer {
	/// Builds the model with deterministic initial weights.
	pub fn new(config: TransformerConfig, init: &mut Init, device: &Device) -> Result<Self> {
		let spec = grid_primitives::job::ModelSpec::Transformer(config);
		spec.validate().map_err(|e| Error::Config(format!("transformer {config:?}: {e:?}")))?;
		let (v, t, w) = (config.vocab as usize, config.context as usize, config.width as usize);
		let (layers, heads) = (usize::from(config.layers), usize::from(config.heads));
		let kv_heads = usize::from(config.kv_heads);
		let (d, m) = (w / heads, config.mlp_width as usize);
		// Residual projections scaled so the residual stream's variance does not grow with
		// depth (GPT-2).
		let proj_std = INIT_STD / (2.0 * layers as f64).sqrt();
		let mut blocks = Vec::with_capacity(layers);
		for i in 0..layers {
			let p = format!("blocks.{i}");
			let linear = |init: &mut Init, name: &str, inp, out, std| {
				Linear::new(init, &format!("{p}.{name}"), inp, out, std, false)
			};
			blocks.push(Block {
				norm1: Normalize::new(init, &format!("{p}.norm1"), config.norm, w)?,
				attn: Attention {
					q: linear(init, "attn.q", w, w, INIT_STD)?,
					k: linear(init, "attn.k", w, kv_heads * d, INIT_STD)?,
					v: linear(init, "attn.v", w, kv_heads * d, INIT_STD)?,
					o: linear(init, "attn.o", w, w, proj_std)?,
					heads,
					kv_heads,
				},
				norm2: Normalize::new(init, &format!("{p}.norm2"), config.norm, w)?,
				mlp: Mlp {
					up: linear(init, "mlp.up", w, m, INIT_STD)?,
					gate: match config.activation {
						Activation::SwiGlu => Some(linear(init, "mlp.gate", w, m, INIT_STD)?),
						Activation::Gelu => None,
					},
					down: linear(init, "mlp.down", m, w, proj_std)?,
				},
			});
		}
		let (pos_emb, rope) = match config.position {
			Position::Learned => (Some(init.normal("pos_emb.weight", &[t, w], INIT_STD)?), None),
			Position::Rope => (None, Some(Rope::new(t, d, device)?)),
		};
		Ok(Transformer {
			config,
			tok_emb: init.normal("tok_emb.weight", &[v, w], INIT_STD)?,
			pos_emb,
			rope,
			blocks,
			norm_f: Normalize::new(init, "norm_f", config.norm, w)?,
			head: match config.tied_embeddings {
				true => None,
				false => Some(Linear::new(init, "head", w, v, INIT_STD, false)?),
			},
		})
	}

	/// The configuration.
	pub fn config(&self) -> TransformerConfig {
		self.config
	}

	/// Logits `[batch × time, vocab]` in `dtype` for token ids `[batch, time]` (u32),
	/// time ≤ context. Norms and the attention softmax compute in f32.
	pub fn forward(&self, ids: &Tensor, dtype: DType) -> Result<Tensor> {
		let (b, t) = ids.dims2()?;
		super::check_context(t, self.config.context)?;
		let mut x = embedding(&self.tok_emb, &ids.flatten_all()?)?; // [b*t, w]
		if let Some(pos) = &self.pos_emb {
			x = (x + pos.narrow(0, 0, t)?.repeat((b, 1))?)?;
		}
		let mut x = x.to_dtype(dtype)?;
		for block in &self.blocks {
			let a = block.attn.forward(&block.norm1.forward(&x)?, b, t, self.rope.as_ref())?;
			x = (x + a)?;
			x = (&x + block.mlp.forward(&block.norm2.forward(&x)?)?)?;
		}
		let x = self.norm_f.forward(&x)?;
		Ok(match &self.head {
			Some(head) => head.forward(&x)?,
			None => x.matmul(&self.tok_emb.to_dtype(dtype)?.t()?)?,
		})
	}
}

impl Attention {
	/// Causal grouped-query self-attention on `[b*t, w]` activations: each group of
	/// `heads / kv_heads` query heads shares one key/value head.
	fn forward(&self, x: &Tensor, b: usize, t: usize, rope: Option<&Rope>) -> Result<Tensor> {
		let w = x.dim(1)?;
		let (h, kv, d) = (self.heads, self.kv_heads, w / self.heads);
		let split = |y: Tensor, n: usize| -> CResult<Tensor> {
			y.reshape((b, t, n, d))?.transpose(1, 2)?.contiguous() // [b, n, t, d]
		};
		let mut q = split(self.q.forward(x)?, h)?;
		let mut k = split(self.k.forward(x)?, kv)?;
		let v = split(self.v.forward(x)?, kv)?;
		if let Some(rope) = rope {
			q = rope.apply(&q)?;
			k = rope.apply(&k)?;
		}
		// Each key/value head serves `h / kv` consecutive query heads.
		let repeat = |y: Tensor| -> CResult<Tensor> {
			if kv == h {
				return Ok(y);
			}
			y.unsqueeze(2)?.broadcast_as((b, kv, h / kv, t, d))?.reshape((b, h, t, d))
		};
		let (k, v) = (repeat(k)?.contiguous()?, repeat(v)?.contiguous()?);
		let scale = 1.0 / (d as f64).sqrt();
		let y = causal_attention(&q, &k, &v, scale)?; // [b, h, t, d]
		let y = y.transpose(1, 2)?.reshape((b * t, w))?;
		Ok(self.o.forward(&y)?)
	}
}
