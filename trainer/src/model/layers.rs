//! Building blocks shared by the models, written with differentiable tensor ops only.
//!
//! candle-nn's fused `layer_norm`, `softmax_last_dim` and the `LayerNorm` module's fast path
//! have no backward pass (everything before them silently gets no gradient), so layer norm and
//! softmax are composed here from primitive ops that do.

use candle_core::{DType, Device, Module, Result as CResult, Tensor, Var};

use crate::{error::Result, params::Params, rng::Rng};

/// Creates a model's variables with deterministic initial values: each parameter's values come
/// from a PRNG seeded by the job's seed and the parameter's name, so every participant starts
/// from the same weights regardless of construction order.
pub struct Init<'a> {
	params: &'a mut Params,
	seed: &'a [u8],
	device: &'a Device,
	/// Whether the layers get the weights as constants ([`Init::frozen`]).
	frozen: bool,
}

impl<'a> Init<'a> {
	/// An initializer adding variables to `params`.
	pub fn new(params: &'a mut Params, seed: &'a [u8], device: &'a Device) -> Self {
		Init { params, seed, device, frozen: false }
	}

	/// [`Init::new`] for a model that only runs forward passes: `params` still holds the
	/// variables (loading weights into them changes what the layers read: they share
	/// storage), but the layers read constants, so a forward pass records no graph and each
	/// activation is freed once the next op has read it.
	pub fn frozen(params: &'a mut Params, seed: &'a [u8], device: &'a Device) -> Self {
		Init { params, seed, device, frozen: true }
	}

	fn add(&mut self, name: &str, shape: &[usize], values: Vec<f32>) -> Result<Tensor> {
		let t = Tensor::from_vec(values, shape, self.device)?;
		let var = Var::from_tensor(&t)?;
		let tensor = if self.frozen { var.as_tensor().detach() } else { var.as_tensor().clone() };
		self.params.insert(name, var)?;
		Ok(tensor)
	}

	/// Normal(0, std²) values.
	pub fn normal(&mut self, name: &str, shape: &[usize], std: f64) -> Result<Tensor> {
		let mut seed = self.seed.to_vec();
		seed.extend_from_slice(b"/init/");
		seed.extend_from_slice(name.as_bytes());
		let mut rng = Rng::from_bytes(&seed);
		let n: usize = shape.iter().product();
		let values = (0..n).map(|_| (rng.normal() * std) as f32).collect();
		self.add(name, shape, values)
	}

	/// A constant.
	pub fn constant(&mut self, name: &str, shape: &[usize], value: f32) -> Result<Tensor> {
		let n: usize = shape.iter().product();
		self.add(name, shape, vec![value; n])
	}
}

/// `y = x W + b` on `[rows, in]` inputs. The weight is stored `[in, out]` (PyTorch stores the
/// transpose): multiplying by a transposed view would make the backward pass accumulate a
/// transposed, strided gradient, which Candle adds element by element.
#[derive(Clone, Debug)]
pub struct Linear {
	weight: Tensor,
	bias: Option<Tensor>,
}

impl Linear {
	/// A layer named `name` (`name.weight`, `name.bias`) with normal(0, std²) weights and
	/// zero bias.
	pub fn new(
		init: &mut Init,
		name: &str,
		inp: usize,
		out: usize,
		std: f64,
		bias: bool,
	) -> Result<Self> {
		let weight = init.normal(&format!("{name}.weight"), &[inp, out], std)?;
		let bias =
			if bias { Some(init.constant(&format!("{name}.bias"), &[out], 0.0)?) } else { None };
		Ok(Linear { weight, bias })
	}
}

impl Module for Linear {
	/// Computes in `x`'s dtype: with bf16 activations the f32 master weights are cast for the
	/// product (their gradients come back as f32 through the cast).
	fn forward(&self, x: &Tensor) -> CResult<Tensor> {
		let y = x.matmul(&self.weight.to_dtype(x.dtype())?)?;
		match &self.bias {
			Some(b) => super::fused::add_bias(&y, b),
			None => Ok(y),
		}
	}
}

/// Layer norm over the last dimension with a learned scale and shift.
#[derive(Clone, Debug)]
pub struct LayerNorm {
	weight: Tensor,
	bias: Tensor,
	eps: f64,
}

impl LayerNorm {
	/// A layer norm over `width` features, scale one and shift zero.
	pub fn new(init: &mut Init, name: &str, width: usize) -> Result<Self> {
		let weight = init.constant(&format!("{name}.weight"), &[width], 1.0)?;
		let bias = init.constant(&format!("{name}.bias"), &[width], 0.0)?;
		Ok(LayerNorm { weight, bias, eps: 1e-5 })
	}
}

impl LayerNorm {
	/// Normalises in f32 whatever `x`'s dtype (bf16 variance loses too much), and returns
	/// `dtype`.
	pub fn forward_as(&self, x: &Tensor, dtype: DType) -> CResult<Tensor> {
		let normed = super::fused::normalize(&x.to_dtype(DType::F32)?, self.eps)?;
		super::fused::scale_shift(&normed, &self.weight, &self.bias)?.to_dtype(dtype)
	}
}

impl Module for LayerNorm {
	/// [`LayerNorm::forward_as`] `x`'s dtype.
	fn forward(&self, x: &Tensor) -> CResult<Tensor> {
		self.forward_as(x, x.dtype())
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn layer_norm_and_softmax_match_candle_fused_ops() {
		let dev = Device::Cpu;
		let mut params = Params::new();
		let mut init = Init::new(&mut params, b"t", &dev);
		let x = init.normal("x", &[3, 8], 1.0).unwrap();
		let ln = LayerNorm::new(&mut init, "ln", 8).unwrap();
		let ours = ln.forward(&x).unwrap();
		let w = Tensor::ones(8, candle_core::DType::F32, &dev).unwrap();
		let b = Tensor::zeros(8, candle_core::DType::F32, &dev).unwrap();
		let fused = candle_nn::ops::layer_norm(&x, &w, &b, 1e-5).unwrap();
		let diff = (ours - fused).unwrap().abs().unwrap().max_all().unwrap();
		assert!(diff.to_scalar::<f32>().unwrap() < 1e-4);
		let ours = super::super::fused::softmax_last_dim(&x).unwrap();
		let fused = candle_nn::ops::softmax_last_dim(&x).unwrap();
		let diff = (ours - fused).unwrap().abs().unwrap().max_all().unwrap();
		assert!(diff.to_scalar::<f32>().unwrap() < 1e-6);
	}
}
