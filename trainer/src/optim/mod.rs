//! The inner (local) optimizers, gradient clipping and the learning-rate schedule: candle-nn
//! has no AdamW with clipping, no momentum and no schedules, so they are written here.
//!
//! On the CPU, updates run on host `Vec<f32>`s in one pass per parameter (f32 master weights
//! and moments): one loop instead of a dozen tensor ops with their allocations. On a GPU
//! (`cuda` feature) the same arithmetic runs in one fused kernel per parameter on the device
//! (`cuda.rs`), since copying weights and gradients to the host each step would cost more than
//! the step.

pub mod adamw;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod schedule;

use candle_core::{backprop::GradStore, Tensor, Var};
use grid_primitives::job::InnerOptimizer;

use crate::{
	error::{Error, Result},
	work_state::Moments,
};
pub use adamw::AdamW;
pub use schedule::Schedule;

/// The gradients of `vars` (in order) copied to the host. A parameter without a gradient is
/// an error: it means the graph is cut somewhere, which must not pass silently.
pub fn host_grads(grads: &GradStore, vars: &[(String, Var)]) -> Result<Vec<Vec<f32>>> {
	grads_of(grads, vars)?.iter().map(to_host).collect()
}

/// [`host_grads`], each gradient taken out of `grads` and freed once copied: a step holds
/// one copy of the gradients at a time, not the store's and the host's side by side.
pub fn take_host_grads(grads: &mut GradStore, vars: &[(String, Var)]) -> Result<Vec<Vec<f32>>> {
	vars.iter()
		.map(|(name, var)| {
			let g = grads.remove(var.as_tensor()).ok_or_else(|| missing(name))?;
			to_host(&g)
		})
		.collect()
}

fn to_host(g: &Tensor) -> Result<Vec<f32>> {
	Ok(g.flatten_all()?.to_vec1::<f32>()?)
}

fn missing(name: &str) -> Error {
	Error::Config(format!("parameter {name} has no gradient"))
}

/// The gradients of `vars` (in order), where they are; an error for a parameter without one.
pub fn grads_of(grads: &GradStore, vars: &[(String, Var)]) -> Result<Vec<Tensor>> {
	vars.iter()
		.map(|(name, var)| grads.get(var.as_tensor()).cloned().ok_or_else(|| missing(name)))
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

/// A step count as the optimizers keep it.
fn step_count(steps: u64) -> Result<i32> {
	i32::try_from(steps)
		.map_err(|_| Error::Config(format!("{steps} inner steps is over the limit")))
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
	/// AdamW on the host.
	AdamW(AdamW),
	/// SGD on the host.
	Sgd(Sgd),
	/// Either, on a GPU.
	#[cfg(feature = "cuda")]
	Gpu(cuda::GpuOptimizer),
}

impl Optimizer {
	/// The optimizer of `spec` over `vars` (in canonical order), on the device they are on.
	pub fn new(spec: &InnerOptimizer, vars: Vec<(String, Var)>) -> Result<Self> {
		#[cfg(feature = "cuda")]
		if vars.first().is_some_and(|(_, v)| v.device().is_cuda()) {
			return Ok(Optimizer::Gpu(cuda::GpuOptimizer::new(spec, vars)?));
		}
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
			#[cfg(feature = "cuda")]
			Optimizer::Gpu(o) => o.vars(),
		}
	}

	/// The moments it keeps (flat, in [`Optimizer::vars`] order), copied to the host; `None`
	/// for SGD.
	pub fn moments(&self) -> Result<Option<Moments>> {
		Ok(match self {
			Optimizer::AdamW(o) => Some(o.moments()),
			Optimizer::Sgd(_) => None,
			#[cfg(feature = "cuda")]
			Optimizer::Gpu(o) => o.moments()?,
		})
	}

	/// The moments, as [`Optimizer::moments`] gives them, the optimizer consumed (host
	/// moments moved out, not copied).
	pub fn into_moments(self) -> Result<Option<Moments>> {
		Ok(match self {
			Optimizer::AdamW(o) => Some(o.into_moments()),
			Optimizer::Sgd(_) => None,
			#[cfg(feature = "cuda")]
			Optimizer::Gpu(o) => o.moments()?,
		})
	}

	/// Restores a step count and the moments saved by [`Optimizer::moments`]; the kind must
	/// match (moments for AdamW, none for SGD).
	pub fn restore(&mut self, steps: u64, moments: Option<&Moments>) -> Result<()> {
		let steps = step_count(steps)?;
		match (self, moments) {
			(Optimizer::AdamW(o), Some(moments)) => o.restore(steps, moments),
			(Optimizer::Sgd(_), None) => Ok(()),
			#[cfg(feature = "cuda")]
			(Optimizer::Gpu(o), moments) => o.restore(steps, moments),
			(_, Some(_)) => Err(Error::Config("SGD keeps no moments, but some were given".into())),
			(_, None) => Err(Error::Config("AdamW needs its moments, and none were given".into())),
		}
	}

	/// [`Optimizer::restore`], host moments moved in rather than copied (a GPU optimizer
	/// copies them to its device all the same).
	pub fn restore_owned(&mut self, steps: u64, moments: Option<Moments>) -> Result<()> {
		match (self, moments) {
			(Optimizer::AdamW(o), Some(moments)) => o.restore_owned(step_count(steps)?, moments),
			(other, moments) => other.restore(steps, moments.as_ref()),
		}
	}

	/// One update from a backward pass's gradients with learning rate `lr`, the gradients
	/// clipped to global norm `clip`. Returns the gradient norm before clipping. Takes the
	/// store: on the host each gradient is freed as it is copied out.
	pub fn step(&mut self, mut grads: GradStore, lr: f64, clip: Option<f64>) -> Result<f64> {
		#[cfg(feature = "cuda")]
		if let Optimizer::Gpu(o) = self {
			return o.step(&grads, lr, clip);
		}
		let grads = take_host_grads(&mut grads, self.vars())?;
		let norm = global_norm(&grads);
		self.host_step(&grads, lr, clip_factor(norm, clip))?;
		Ok(norm)
	}

	/// One update on the host with learning rate `lr`, gradients (in [`Optimizer::vars`]
	/// order) multiplied by `scale` (clipping).
	pub fn host_step(&mut self, grads: &[Vec<f32>], lr: f64, scale: f64) -> Result<()> {
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
			#[cfg(feature = "cuda")]
			Optimizer::Gpu(_) => Err(Error::Config("the GPU optimizer takes no host gradients".into())),
		}
	}
}

#[cfg(test)]
mod tests {
	use candle_core::{DType, Device, Tensor, Var};

	/// A loss in which `x` reaches the output along many paths (fan-in), through rules that
	/// add, subtract and negate, views (transpose, narrow, broadcast) and a concatenation.
	fn loss(x: &Tensor) -> Tensor {
		let w = |n: f64| (x.ones_like().unwrap() * n).unwrap();
		let gram = x.t().unwrap().matmul(x).unwrap().tanh().unwrap();
		let column_sums = x.sum_keepdim(0).unwrap().broadcast_as(x.shape()).unwrap();
		let difference = (w(0.3) - &column_sums).unwrap();
		let halves = [x.narrow(1, 2, 2).unwrap(), x.narrow(1, 0, 2).unwrap()];
		let swapped = Tensor::cat(&halves, 1).unwrap().exp().unwrap();
		let reciprocal = (x.sqr().unwrap() + 1.0).unwrap().recip().unwrap();
		let terms = [
			gram.sum_all().unwrap(),
			(difference * x).unwrap().sum_all().unwrap(),
			(swapped * 0.1).unwrap().sum_all().unwrap(),
			reciprocal.sum_all().unwrap(),
			x.cos().unwrap().neg().unwrap().sum_all().unwrap(),
		];
		terms.iter().skip(1).fold(terms[0].clone(), |sum, t| (sum + t).unwrap())
	}

	/// The backward pass (candle-core with Grid's patch, `vendor/README.md`: the first gradient
	/// reaching a tensor is stored, not added to zeros) sums every path: its gradient matches
	/// central finite differences of the loss.
	#[test]
	fn backward_gradients_match_finite_differences_through_every_kind_of_rule() {
		let dev = Device::Cpu;
		let start: Vec<f64> = (0..12).map(|i| ((i * 7 % 12) as f64 - 5.5) / 6.0).collect();
		let x = Var::from_vec(start.clone(), (3, 4), &dev).unwrap();
		let grads = loss(x.as_tensor()).backward().unwrap();
		let analytic = grads.get(x.as_tensor()).unwrap().flatten_all().unwrap();
		let analytic = analytic.to_vec1::<f64>().unwrap();
		let at = |values: Vec<f64>| {
			let t = Tensor::from_vec(values, (3, 4), &dev).unwrap();
			loss(&t).to_dtype(DType::F64).unwrap().to_scalar::<f64>().unwrap()
		};
		let h = 1e-6;
		for i in 0..start.len() {
			let shifted = |d: f64| {
				let mut v = start.clone();
				v[i] += d;
				at(v)
			};
			let numeric = (shifted(h) - shifted(-h)) / (2.0 * h);
			let tolerance = 1e-6 * numeric.abs().max(1.0);
			assert!(
				(analytic[i] - numeric).abs() < tolerance,
				"element {i}: backward {} against finite differences {numeric}",
				analytic[i]
			);
		}
	}
}
