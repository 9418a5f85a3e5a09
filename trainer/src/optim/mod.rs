//! The inner (local) optimizers, gradient clipping and the learning-rate schedule: candle-nn
//! has no AdamW with clipping, no momentum and no schedules, so they are written here.

pub mod adamw;
pub mod schedule;

use candle_core::{backprop::GradStore, Var};
use grid_primitives::job::InnerOptimizer;

use crate::error::{Error, Result};
pub use adamw::AdamW;
pub use schedule::Schedule;

/// The gradient of `var`, or an error naming it (a parameter without a gradient means the
/// graph is cut somewhere, which must not pass silently).
pub fn grad_of<'a>(grads: &'a GradStore, var: &Var, name: &str) -> Result<&'a candle_core::Tensor> {
	grads
		.get(var.as_tensor())
		.ok_or_else(|| Error::Config(format!("parameter {name} has no gradient")))
}

/// The global L2 norm of the gradients of `vars` and the factor that scales it down to at most
/// `max_norm` (1 when it is already within, or when `max_norm` is `None`).
pub fn clip_factor(
	grads: &GradStore,
	vars: &[(String, Var)],
	max_norm: Option<f64>,
) -> Result<(f64, f64)> {
	let mut sum = 0f64;
	for (name, var) in vars {
		let g = grad_of(grads, var, name)?;
		sum += f64::from(g.sqr()?.sum_all()?.to_scalar::<f32>()?);
	}
	let norm = sum.sqrt();
	let factor = match max_norm {
		Some(max) if norm > max => max / (norm + 1e-6),
		_ => 1.0,
	};
	Ok((norm, factor))
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
	pub fn step(&mut self, grads: &GradStore, lr: f64, scale: f64) -> Result<()> {
		for (name, var) in &self.vars {
			let g = grad_of(grads, var, name)?;
			var.set(&(var.as_tensor() - (g * (lr * scale))?)?)?;
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

	/// One update with learning rate `lr`, gradients multiplied by `scale` (clipping).
	pub fn step(&mut self, grads: &GradStore, lr: f64, scale: f64) -> Result<()> {
		match self {
			Optimizer::AdamW(o) => o.step(grads, lr, scale),
			Optimizer::Sgd(o) => o.step(grads, lr, scale),
		}
	}
}
