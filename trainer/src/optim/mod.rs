//! The inner (local) optimizers, gradient clipping and the learning-rate schedule: candle-nn
//! has no AdamW with clipping, no momentum and no schedules, so they are written here.
//!
//! Updates run on host `Vec<f32>`s in one pass per parameter (f32 master weights and moments):
//! the same arithmetic on every device, and on the CPU one loop instead of a dozen tensor ops
//! with their allocations. On a GPU this costs a copy of weights and gradients per step, which
//! is small next to the forward and backward passes of the models here.

pub mod adamw;
pub mod schedule;

use candle_core::{backprop::GradStore, Tensor, Var};
use grid_primitives::job::InnerOptimizer;

use crate::error::{Error, Result};
pub use adamw::AdamW;
pub use schedule::Schedule;

/// The gradients of `vars` (in order) copied to the host. A parameter without a gradient is
/// an error: it means the graph is cut somewhere, which must not pass silently.
pub fn host_grads(grads: &GradStore, vars: &[(String, Var)]) -> Result<Vec<Vec<f32>>> {
	vars.iter()
		.map(|(name, var)| {
			let g = grads
				.get(var.as_tensor())
				.ok_or_else(|| Error::Config(format!("parameter {name} has no gradient")))?;
			Ok(g.flatten_all()?.to_vec1::<f32>()?)
		})
		.collect()
}

/// The global L2 norm of `grads`, summed sequentially in f64.
pub fn global_norm(grads: &[Vec<f32>]) -> f64 {
	grads.iter().flatten().map(|g| f64::from(*g) * f64::from(*g)).sum::<f64>().sqrt()
}

/// The factor that scales a gradient of norm `norm` down to at most `max_norm` (1 when it is
/// already within, or when there is no limit).
pub fn clip_factor(norm: f64, max_norm: Option<f64>) -> f64 {
	match max_norm {
		Some(max) if norm > max => max / (norm + 1e-6),
		_ => 1.0,
	}
}

/// Writes host values back into a variable.
fn store(var: &Var, values: Vec<f32>) -> Result<()> {
	var.set(&Tensor::from_vec(values, var.shape(), var.device())?)?;
	Ok(())
}

/// Plain SGD.
pub struct Sgd {
	vars: Vec<(String, Var)>,
}

impl Sgd {
	/// SGD over `vars`.
	pub fn new(vars: Vec<(String, Var)>) -> Self {
		Sgd { vars }
	}

	/// `θ ← θ − lr · scale · g`.
	pub fn step(&mut self, grads: &[Vec<f32>], lr: f64, scale: f64) -> Result<()> {
		let k = (lr * scale) as f32;
		for ((_, var), g) in self.vars.iter().zip(grads) {
			let mut theta = var.as_tensor().flatten_all()?.to_vec1::<f32>()?;
			theta.iter_mut().zip(g).for_each(|(t, g)| *t -= k * g);
			store(var, theta)?;
		}
		Ok(())
	}
}

/// The optimizer a job asked for.
pub enum Optimizer {
	/// AdamW.
	AdamW(AdamW),
	/// SGD.
	Sgd(Sgd),
}

impl Optimizer {
	/// The optimizer of `spec` over `vars` (in canonical order).
	pub fn new(spec: &InnerOptimizer, vars: Vec<(String, Var)>) -> Result<Self> {
		Ok(match *spec {
			InnerOptimizer::AdamW { weight_decay, .. } => {
				Optimizer::AdamW(AdamW::new(vars, weight_decay.to_f64())?)
			}
			InnerOptimizer::Sgd { .. } => Optimizer::Sgd(Sgd::new(vars)),
		})
	}

	/// The variables it updates.
	pub fn vars(&self) -> &[(String, Var)] {
		match self {
			Optimizer::AdamW(o) => o.vars(),
			Optimizer::Sgd(o) => &o.vars,
		}
	}

	/// One update with learning rate `lr`, gradients (in [`Optimizer::vars`] order)
	/// multiplied by `scale` (clipping).
	pub fn step(&mut self, grads: &[Vec<f32>], lr: f64, scale: f64) -> Result<()> {
		if grads.len() != self.vars().len() {
			return Err(Error::Layout(format!(
				"{} gradients for {} parameters",
				grads.len(),
				self.vars().len()
			)));
		}
		match self {
			Optimizer::AdamW(o) => o.step(grads, lr, scale),
			Optimizer::Sgd(o) => o.step(grads, lr, scale),
		}
	}
}
