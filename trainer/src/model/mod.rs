//! The models a job can ask for, selected by its [`ModelSpec`].

pub mod fused;
pub mod gpt;
pub mod hf;
pub mod layers;
pub mod mnist;
pub mod resnet;
pub mod transformer;
pub mod weights;

use candle_core::{DType, Device, Tensor};
use grid_primitives::job::ModelSpec;

use crate::{device::Precision, error::Result, params::Params};
use layers::Init;

/// Errors unless a sequence of `t` tokens fits a context of `context`.
fn check_context(t: usize, context: u32) -> Result<()> {
	if t > context as usize {
		return Err(crate::error::Error::Config(format!(
			"sequence of {t} tokens exceeds the context of {context}"
		)));
	}
	Ok(())
}

/// One training or evaluation batch.
#[derive(Clone, Debug)]
pub struct Batch {
	/// GPT: token ids `[batch, time]` (u32). MNIST: pixels `[batch, 784]` (f32, 0..1).
	pub inputs: Tensor,
	/// GPT: next-token ids `[batch, time]`. MNIST: labels `[batch]` (u32).
	pub targets: Tensor,
}

impl Batch {
	/// Number of samples (rows of `inputs`).
	pub fn samples(&self) -> Result<usize> {
		Ok(self.inputs.dim(0)?)
	}
}

enum Net {
	Gpt(gpt::Gpt),
	Mlp(mnist::Mlp),
	Cnn(mnist::Cnn),
	Transformer(transformer::Transformer),
	ResNet(resnet::ResNet),
}

/// A model built from a job's spec, with its parameters in canonical order.
pub struct Model {
	spec: ModelSpec,
	net: Net,
	params: Params,
	precision: Precision,
}

impl Model {
	/// Builds `spec` on `device` with initial weights drawn deterministically from `seed`
	/// (every participant of a job passes the same seed and gets the same θ₀).
	/// The precision is the device's default ([`Precision::for_device`]).
	pub fn new(spec: ModelSpec, seed: &[u8], device: &Device) -> Result<Self> {
		Self::with_precision(spec, seed, device, Precision::for_device(device))
	}

	/// [`Model::new`] for forward passes only (held-out evaluation, loss screens): the same
	/// losses, but a pass records no graph, so it holds about one layer's activations
	/// instead of all of them until its loss is read (a backward pass through it reaches no
	/// weight). Its [`Model::params`] load weights as any model's do.
	pub fn for_inference(spec: ModelSpec, seed: &[u8], device: &Device) -> Result<Self> {
		Self::build(spec, seed, device, Precision::for_device(device), true)
	}

	/// [`Model::new`] with the forward pass in `precision` (the weights are f32 either way).
	pub fn with_precision(
		spec: ModelSpec,
		seed: &[u8],
		device: &Device,
		precision: Precision,
	) -> Result<Self> {
		Self::build(spec, seed, device, precision, false)
	}

	/// The model, its layers reading constants when `frozen` ([`Init::frozen`]).
	fn build(
		spec: ModelSpec,
		seed: &[u8],
		device: &Device,
		precision: Precision,
		frozen: bool,
	) -> Result<Self> {
		let mut params = Params::new();
		let mut init = if frozen {
			Init::frozen(&mut params, seed, device)
		} else {
			Init::new(&mut params, seed, device)
		};
		let net = match spec {
			ModelSpec::Gpt(c) => Net::Gpt(gpt::Gpt::new(c, &mut init)?),
			ModelSpec::MnistMlp(c) => Net::Mlp(mnist::Mlp::new(c, &mut init)?),
			ModelSpec::MnistCnn(c) => Net::Cnn(mnist::Cnn::new(c, &mut init)?),
			ModelSpec::ResNet(c) => Net::ResNet(resnet::ResNet::new(c, &mut init)?),
			ModelSpec::Transformer(c) => {
				Net::Transformer(transformer::Transformer::new(c, &mut init, device)?)
			}
		};
		Ok(Model { spec, net, params, precision })
	}

	/// The spec it was built from.
	pub fn spec(&self) -> ModelSpec {
		self.spec
	}

	/// The trainable parameters.
	pub fn params(&self) -> &Params {
		&self.params
	}

	/// The arithmetic of the forward and backward passes.
	pub fn precision(&self) -> Precision {
		self.precision
	}

	/// Logits in f32, two-dimensional: `[rows, classes]` (rows are batch × time for the GPT).
	pub fn forward(&self, inputs: &Tensor) -> Result<Tensor> {
		Ok(self.logits(inputs)?.to_dtype(DType::F32)?)
	}

	/// Logits in the precision's dtype.
	fn logits(&self, inputs: &Tensor) -> Result<Tensor> {
		let dtype = self.precision.dtype();
		match &self.net {
			Net::Gpt(m) => m.forward(inputs, dtype),
			Net::Transformer(m) => m.forward(inputs, dtype),
			Net::Mlp(m) => m.forward(&inputs.to_dtype(dtype)?),
			Net::Cnn(m) => m.forward(&inputs.to_dtype(dtype)?),
			Net::ResNet(m) => m.forward(&inputs.to_dtype(dtype)?),
		}
	}

	/// Mean cross-entropy of the batch (a scalar tensor), computed in f32 as PyTorch's
	/// autocast does.
	pub fn loss(&self, batch: &Batch) -> Result<Tensor> {
		let logits = self.logits(&batch.inputs)?;
		Ok(fused::cross_entropy(&logits, &batch.targets.flatten_all()?)?)
	}

	/// Classification accuracy of the batch in 0..1 (the fraction of rows whose arg-max logit
	/// is the target).
	pub fn accuracy(&self, batch: &Batch) -> Result<f64> {
		let logits = self.forward(&batch.inputs)?;
		let predicted = logits.argmax(1)?.to_vec1::<u32>()?;
		let targets = batch.targets.flatten_all()?.to_vec1::<u32>()?;
		let right = predicted.iter().zip(&targets).filter(|(p, t)| p == t).count();
		Ok(right as f64 / targets.len().max(1) as f64)
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use candle_core::DType;
	use grid_primitives::{
		datasets::{DataKind, ImageShape},
		job::{Activation, CnnConfig, GptConfig, MlpConfig, Norm, Position, TransformerConfig},
		resnet::ResNetConfig,
	};

	/// A Llama-style transformer (grouped-query attention, RoPE, RMS norm, SwiGLU, untied) or a
	/// GPT-2-style one (layer norm, learned positions, GELU, tied embeddings).
	fn transformer(llama: bool) -> ModelSpec {
		ModelSpec::Transformer(TransformerConfig {
			vocab: 40,
			context: 8,
			layers: 2,
			width: 16,
			heads: 4,
			kv_heads: if llama { 2 } else { 4 },
			mlp_width: 24,
			activation: if llama { Activation::SwiGlu } else { Activation::Gelu },
			norm: if llama { Norm::RmsNorm } else { Norm::LayerNorm },
			position: if llama { Position::Rope } else { Position::Learned },
			tied_embeddings: !llama,
		})
	}

	fn specs() -> Vec<ModelSpec> {
		vec![
			ModelSpec::Gpt(GptConfig { vocab: 40, context: 8, layers: 2, heads: 2, width: 16 }),
			ModelSpec::MnistMlp(MlpConfig { hidden: 12, layers: 2 }),
			ModelSpec::MnistCnn(CnnConfig { channels: 2, hidden: 8 }),
			transformer(true),
			transformer(false),
			ModelSpec::ResNet(ResNetConfig {
				channels: 1,
				side: 28,
				classes: 10,
				width: 2,
				stages: 2,
				blocks: 1,
			}),
		]
	}

	fn batch(spec: ModelSpec, dev: &Device) -> Batch {
		match spec.reads() {
			DataKind::Tokens { vocab } => {
				let ids: Vec<u32> = (0..3 * 8).map(|i| (i * 7 + 3) % vocab).collect();
				let next: Vec<u32> = (0..3 * 8).map(|i| (i * 5 + 1) % vocab).collect();
				Batch {
					inputs: Tensor::from_vec(ids, (3, 8), dev).unwrap(),
					targets: Tensor::from_vec(next, (3, 8), dev).unwrap(),
				}
			}
			DataKind::Images(ImageShape { channels, side, classes }) => {
				let n = usize::from(channels) * usize::from(side).pow(2);
				let px: Vec<f32> = (0..4 * n).map(|i| ((i * 37) % 256) as f32 / 255.0).collect();
				let targets: Vec<u32> =
					[1u32, 7, 3, 9].iter().map(|t| t % u32::from(classes)).collect();
				Batch {
					inputs: Tensor::from_vec(px, (4, n), dev).unwrap(),
					targets: Tensor::from_vec(targets, 4, dev).unwrap(),
				}
			}
		}
	}

	#[test]
	fn parameter_counts_match_the_job_spec() {
		let mut all = specs();
		all.push(ModelSpec::Gpt(GptConfig {
			vocab: 256,
			context: 64,
			layers: 4,
			heads: 4,
			width: 128,
		}));
		all.push(ModelSpec::MnistMlp(MlpConfig { hidden: 100, layers: 1 }));
		all.push(ModelSpec::MnistCnn(CnnConfig { channels: 8, hidden: 64 }));
		all.push(ModelSpec::ResNet(ResNetConfig {
			channels: 3,
			side: 9,
			classes: 7,
			width: 4,
			stages: 3,
			blocks: 2,
		}));
		all.push(ModelSpec::Transformer(TransformerConfig {
			vocab: 300,
			context: 32,
			layers: 3,
			width: 48,
			heads: 6,
			kv_heads: 3,
			mlp_width: 100,
			activation: Activation::SwiGlu,
			norm: Norm::LayerNorm,
			position: Position::Rope,
			tied_embeddings: true,
		}));
		for spec in all {
			let model = Model::new(spec, b"seed", &Device::Cpu).unwrap();
			assert_eq!(Some(model.params().numel() as u64), spec.parameters(), "{spec:?}");
		}
	}

	#[test]
	fn every_parameter_gets_a_nonzero_gradient() {
		let dev = Device::Cpu;
		for spec in specs() {
			let model = Model::new(spec, b"grad", &dev).unwrap();
			let loss = model.loss(&batch(spec, &dev)).unwrap();
			let grads = loss.backward().unwrap();
			for (name, var) in model.params().iter() {
				let g = grads
					.get(var.as_tensor())
					.unwrap_or_else(|| panic!("{spec:?}: {name} has no gradient"));
				let norm = g.sqr().unwrap().sum_all().unwrap().to_scalar::<f32>().unwrap();
				assert!(norm > 0.0 && norm.is_finite(), "{spec:?}: {name} gradient norm² {norm}");
			}
		}
	}

	#[test]
	fn an_inference_model_gives_the_same_loss_and_records_no_graph() {
		let dev = Device::Cpu;
		for spec in specs() {
			let trained = Model::new(spec, b"trained", &dev).unwrap();
			let inference = Model::for_inference(spec, b"other", &dev).unwrap();
			let batch = batch(spec, &dev);
			let loss = |m: &Model| m.loss(&batch).unwrap().to_scalar::<f32>().unwrap();
			assert_ne!(loss(&inference), loss(&trained), "{spec:?}: different seeds first");
			// Loading weights into its variables changes what its layers read.
			inference.params().load_flat(&trained.params().flatten().unwrap()).unwrap();
			assert_eq!(
				loss(&inference),
				loss(&trained),
				"{spec:?}: the same weights, the same loss"
			);
			let grads = inference.loss(&batch).unwrap().backward().unwrap();
			for (name, var) in inference.params().iter() {
				assert!(grads.get(var.as_tensor()).is_none(), "{spec:?}: {name} is in a graph");
			}
		}
	}

	#[test]
	fn transformers_are_causal_and_rope_makes_them_see_order() {
		let dev = Device::Cpu;
		for spec in [transformer(true), transformer(false)] {
			let model = Model::new(spec, b"causal", &dev).unwrap();
			let logits = |ids: &[u32]| -> Vec<Vec<f32>> {
				let ids = Tensor::from_vec(ids.to_vec(), (1, ids.len()), &dev).unwrap();
				model.forward(&ids).unwrap().to_vec2().unwrap()
			};
			let a = logits(&[1, 2, 3, 4, 5, 6]);
			let b = logits(&[1, 2, 3, 9, 9, 9]);
			// Changing later tokens leaves earlier positions' logits alone.
			for i in 0..3 {
				assert_eq!(a[i], b[i], "{spec:?}: position {i}");
			}
			assert_ne!(a[3], b[3], "{spec:?}");
			// The same token after different prefixes gets different logits: positions and
			// context matter.
			let c = logits(&[7, 7, 7]);
			assert_ne!(c[1], c[2], "{spec:?}");
		}
	}

	#[test]
	fn initial_weights_depend_only_on_the_seed() {
		let spec = specs()[0];
		let a = Model::new(spec, b"job-1", &Device::Cpu).unwrap();
		let b = Model::new(spec, b"job-1", &Device::Cpu).unwrap();
		let c = Model::new(spec, b"job-2", &Device::Cpu).unwrap();
		let h = a.params().model_hash().unwrap();
		assert_eq!(h, b.params().model_hash().unwrap());
		assert_ne!(h, c.params().model_hash().unwrap());
	}

	#[test]
	fn initial_loss_is_near_uniform_and_logits_have_the_right_shape() {
		let dev = Device::Cpu;
		for spec in specs() {
			let model = Model::new(spec, b"shape", &dev).unwrap();
			let b = batch(spec, &dev);
			let logits = model.forward(&b.inputs).unwrap();
			let (rows, classes) = logits.dims2().unwrap();
			assert_eq!(rows, b.targets.elem_count());
			let loss = model.loss(&b).unwrap().to_dtype(DType::F64).unwrap();
			let loss = loss.to_scalar::<f64>().unwrap();
			let uniform = (classes as f64).ln();
			// Small initial weights give near-uniform predictions (He-initialised ReLU nets
			// deviate more).
			assert!((loss - uniform).abs() < 0.35 * uniform, "{spec:?}: loss {loss} vs {uniform}");
		}
	}
}
