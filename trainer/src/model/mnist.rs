//! Small MNIST classifiers: an MLP and a two-conv CNN, on `[batch, 784]` images scaled to 0..1.
//! Parameter counts are exactly `ModelSpec::{MnistMlp, MnistCnn}(..).parameters()`.

use candle_core::{DType, Module, Tensor};
use grid_primitives::job::{CnnConfig, MlpConfig};

use super::layers::{Init, Linear};
use crate::error::{Error, Result};

/// Pixels per image.
pub const PIXELS: usize = 28 * 28;
/// Digit classes.
pub const CLASSES: usize = 10;

/// He initialisation for layers followed by a ReLU.
fn he_std(fan_in: usize) -> f64 {
	(2.0 / fan_in as f64).sqrt()
}

/// `layers` hidden ReLU layers of width `hidden`, then a linear classifier.
pub struct Mlp {
	hidden: Vec<Linear>,
	out: Linear,
}

impl Mlp {
	/// Builds the MLP with deterministic initial weights.
	pub fn new(config: MlpConfig, init: &mut Init) -> Result<Self> {
		let (h, layers) = (config.hidden as usize, usize::from(config.layers));
		if h == 0 || layers == 0 {
			return Err(Error::Config(format!("bad MLP config {config:?}")));
		}
		let mut hidden = Vec::with_capacity(layers);
		for i in 0..layers {
			let inp = if i == 0 { PIXELS } else { h };
			hidden.push(Linear::new(init, &format!("hidden.{i}"), inp, h, he_std(inp), true)?);
		}
		let out = Linear::new(init, "out", h, CLASSES, he_std(h) / 2.0, true)?;
		Ok(Mlp { hidden, out })
	}

	/// Logits `[batch, 10]`.
	pub fn forward(&self, images: &Tensor) -> Result<Tensor> {
		let mut x = images.clone();
		for layer in &self.hidden {
			x = layer.forward(&x)?.relu()?;
		}
		Ok(self.out.forward(&x)?)
	}
}

/// conv3x3(1→c) · ReLU · maxpool2 · conv3x3(c→2c) · ReLU · maxpool2 · dense(hidden) · ReLU ·
/// dense(10). Convolutions are padded so the two poolings leave 7x7 maps.
pub struct Cnn {
	conv1: (Tensor, Tensor),
	conv2: (Tensor, Tensor),
	dense: Linear,
	out: Linear,
}

impl Cnn {
	/// Builds the CNN with deterministic initial weights.
	pub fn new(config: CnnConfig, init: &mut Init) -> Result<Self> {
		let (c1, h) = (usize::from(config.channels), config.hidden as usize);
		if c1 == 0 || h == 0 {
			return Err(Error::Config(format!("bad CNN config {config:?}")));
		}
		let c2 = 2 * c1;
		let conv1 = (
			init.normal("conv1.weight", &[c1, 1, 3, 3], he_std(9))?,
			init.constant("conv1.bias", &[c1], 0.0)?,
		);
		let conv2 = (
			init.normal("conv2.weight", &[c2, c1, 3, 3], he_std(9 * c1))?,
			init.constant("conv2.bias", &[c2], 0.0)?,
		);
		let dense = Linear::new(init, "dense", 49 * c2, h, he_std(49 * c2), true)?;
		let out = Linear::new(init, "out", h, CLASSES, he_std(h) / 2.0, true)?;
		Ok(Cnn { conv1, conv2, dense, out })
	}

	/// Logits `[batch, 10]`.
	pub fn forward(&self, images: &Tensor) -> Result<Tensor> {
		let b = images.dim(0)?;
		let x = images.reshape((b, 1, 28, 28))?;
		let x = conv_relu_pool(&x, &self.conv1)?;
		let x = conv_relu_pool(&x, &self.conv2)?;
		let x = x.flatten_from(1)?;
		let x = self.dense.forward(&x)?.relu()?;
		Ok(self.out.forward(&x)?)
	}
}

/// In f32 whatever `x`'s dtype, returned in `x`'s dtype: max-pooling's gradient goes to every
/// input equal to the maximum, and bf16's ties would duplicate it (these layers are small).
fn conv_relu_pool(x: &Tensor, (weight, bias): &(Tensor, Tensor)) -> Result<Tensor> {
	let c = bias.dim(0)?;
	let y = x
		.to_dtype(DType::F32)?
		.conv2d(weight, 1, 1, 1, 1)?
		.broadcast_add(&bias.reshape((1, c, 1, 1))?)?;
	Ok(y.relu()?.max_pool2d(2)?.to_dtype(x.dtype())?)
}
