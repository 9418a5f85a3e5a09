//! AdamW (Loshchilov & Hutter) with decoupled weight decay on f32 weights and moments.

use candle_core::{backprop::GradStore, DType, Tensor, Var};

use super::grad_of;
use crate::error::{Error, Result};

/// AdamW over a fixed list of variables. Weight decay applies to matrices and embeddings
/// (rank ≥ 2) only, not to biases and norm scales, as in nanoGPT.
pub struct AdamW {
	vars: Vec<(String, Var)>,
	m: Vec<Tensor>,
	v: Vec<Tensor>,
	steps: i32,
	beta1: f64,
	beta2: f64,
	eps: f64,
	weight_decay: f64,
}

impl AdamW {
	/// AdamW with β = (0.9, 0.95) (nanoGPT's choice for transformers), ε = 1e-8.
	pub fn new(vars: Vec<(String, Var)>, weight_decay: f64) -> Result<Self> {
		let mut m = Vec::with_capacity(vars.len());
		for (name, var) in &vars {
			if var.dtype() != DType::F32 {
				return Err(Error::Config(format!(
					"AdamW keeps f32 weights; {name} is {:?}",
					var.dtype()
				)));
			}
			m.push(var.zeros_like()?);
		}
		let v = m.clone();
		Ok(AdamW { vars, m, v, steps: 0, beta1: 0.9, beta2: 0.95, eps: 1e-8, weight_decay })
	}

	/// The variables it updates.
	pub fn vars(&self) -> &[(String, Var)] {
		&self.vars
	}

	/// Steps taken.
	pub fn steps(&self) -> i32 {
		self.steps
	}

	/// One AdamW update with learning rate `lr`, gradients multiplied by `scale`.
	pub fn step(&mut self, grads: &GradStore, lr: f64, scale: f64) -> Result<()> {
		self.steps += 1;
		let (b1, b2) = (self.beta1, self.beta2);
		let bias1 = 1.0 - b1.powi(self.steps);
		let bias2 = 1.0 - b2.powi(self.steps);
		for (i, (name, var)) in self.vars.iter().enumerate() {
			let g = grad_of(grads, var, name)?;
			let g = if scale == 1.0 { g.clone() } else { (g * scale)? };
			let m = ((&self.m[i] * b1)? + (&g * (1.0 - b1))?)?;
			let v = ((&self.v[i] * b2)? + (g.sqr()? * (1.0 - b2))?)?;
			let denom = ((&v * (1.0 / bias2))?.sqrt()? + self.eps)?;
			let update = ((&m * (1.0 / bias1))? / denom)?;
			let decay = if var.rank() >= 2 { self.weight_decay } else { 0.0 };
			let theta = ((var.as_tensor() * (1.0 - lr * decay))? - (update * lr)?)?;
			var.set(&theta)?;
			self.m[i] = m;
			self.v[i] = v;
		}
		Ok(())
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use candle_core::Device;

	/// Reference AdamW on plain floats.
	fn reference(x0: f64, grads: &[f64], lr: f64, wd: f64) -> f64 {
		let (mut x, mut m, mut v) = (x0, 0.0, 0.0);
		for (t, g) in grads.iter().enumerate() {
			m = 0.9 * m + 0.1 * g;
			v = 0.95 * v + 0.05 * g * g;
			let mh = m / (1.0 - 0.9f64.powi(t as i32 + 1));
			let vh = v / (1.0 - 0.95f64.powi(t as i32 + 1));
			x = x * (1.0 - lr * wd) - lr * mh / (vh.sqrt() + 1e-8);
		}
		x
	}

	#[test]
	fn matches_the_reference_update_and_decays_only_matrices() {
		let dev = Device::Cpu;
		let w = Var::from_tensor(&Tensor::new(&[[1f32, -2.0]], &dev).unwrap()).unwrap();
		let b = Var::from_tensor(&Tensor::new(&[0.5f32], &dev).unwrap()).unwrap();
		let mut opt =
			AdamW::new(vec![("b".into(), b.clone()), ("w".into(), w.clone())], 0.1).unwrap();
		let mut seen = Vec::new();
		for _ in 0..5 {
			// loss = sum(w²) + 3·b, so dL/dw = 2w and dL/db = 3.
			let loss = (w.as_tensor().sqr().unwrap().sum_all().unwrap()
				+ (b.as_tensor() * 3.0).unwrap().sum_all().unwrap())
			.unwrap();
			seen.push(w.as_tensor().to_vec2::<f32>().unwrap()[0][0] as f64);
			let grads = loss.backward().unwrap();
			opt.step(&grads, 0.01, 1.0).unwrap();
		}
		let b_ref = reference(0.5, &[3.0; 5], 0.01, 0.0);
		let b_now = b.as_tensor().to_vec1::<f32>().unwrap()[0] as f64;
		assert!((b_now - b_ref).abs() < 1e-6, "{b_now} vs {b_ref}");
		let grads_w: Vec<f64> = seen.iter().map(|x| 2.0 * x).collect();
		let w_ref = reference(1.0, &grads_w, 0.01, 0.1);
		let w_now = w.as_tensor().to_vec2::<f32>().unwrap()[0][0] as f64;
		assert!((w_now - w_ref).abs() < 1e-6, "{w_now} vs {w_ref}");
		assert_eq!(opt.steps(), 5);
	}
}
