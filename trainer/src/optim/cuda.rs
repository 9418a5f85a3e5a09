//! The inner optimizers on a CUDA GPU. Weights, gradients and AdamW moments stay on the
//! device (copying a 100M-parameter model's weights and gradients to the host every step would
//! cost more than the step), and each parameter is updated by one fused kernel doing the host
//! AdamW's arithmetic in f32 ([`Hyper::coefficients`] gives both the same constants). The
//! global gradient norm for clipping is a sum of squares per parameter into one f64 on the
//! device, read back once per step.
//!
//! The kernels are in `cuda/kernels.cu`.

use std::cell::RefCell;

use candle_core::{
	backprop::GradStore, CpuStorage, CudaDevice, CudaStorage, Error as CError, InplaceOp2, Layout,
	Result as CResult, Storage, Tensor, Var,
};
use cudarc::driver::{CudaSlice, PushKernelArg};
use grid_primitives::job::InnerOptimizer;

use super::{
	adamw::{Coefficients, Hyper},
	clip_factor,
};
use crate::{
	cuda::{driver_error, elementwise, range, Kernel},
	error::{Error, Result},
	work_state::Moments,
};

/// Adds the sum of squares of `x` (f32, on the GPU) to `acc`.
fn add_sum_squares(x: &Tensor, acc: &mut CudaSlice<f64>) -> CResult<()> {
	let x = x.contiguous()?;
	let (storage, layout) = x.storage_and_layout();
	let Storage::Cuda(cuda) = &*storage else {
		return Err(CError::Msg("gradient is not on the GPU".into()));
	};
	let (start, end) = range(layout, "gradient")?;
	let values = cuda.as_cuda_slice::<f32>()?.slice(start..end);
	let n = (end - start) as u64;
	let kernel = Kernel::new(&cuda.device, "sum_squares_f32")?;
	let mut b = kernel.builder();
	b.arg(&values).arg(&n).arg(acc);
	// SAFETY: the argument list matches `sum_squares_f32`; `values` has `n` elements.
	unsafe { b.launch(elementwise(end - start)) }.map(|_| ()).map_err(driver_error)
}

/// The update of one parameter, applied in place to its weights by Candle (which holds the
/// weights' write lock meanwhile).
enum Update<'a> {
	AdamW {
		m: RefCell<&'a mut CudaSlice<f32>>,
		v: RefCell<&'a mut CudaSlice<f32>>,
		c: Coefficients,
	},
	Sgd {
		k: f32,
	},
}

impl InplaceOp2 for Update<'_> {
	fn name(&self) -> &'static str {
		"grid-gpu-optimizer"
	}

	fn cpu_fwd(&self, _: &mut CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout) -> CResult<()> {
		Err(CError::Msg("the GPU optimizer was given CPU tensors".into()))
	}

	fn cuda_fwd(
		&self,
		theta: &mut CudaStorage,
		theta_layout: &Layout,
		grad: &CudaStorage,
		grad_layout: &Layout,
	) -> CResult<()> {
		let (t0, t1) = range(theta_layout, "weight")?;
		let (g0, g1) = range(grad_layout, "gradient")?;
		if t1 - t0 != g1 - g0 {
			return Err(CError::Msg(format!("{} weights, {} gradients", t1 - t0, g1 - g0)));
		}
		let device: CudaDevice = theta.device.clone();
		let g = grad.as_cuda_slice::<f32>()?.slice(g0..g1);
		let mut w = theta.as_cuda_slice_mut::<f32>()?.slice_mut(t0..t1);
		let n = (t1 - t0) as u64;
		match self {
			Update::AdamW { m, v, c } => {
				let (mut m, mut v) = (m.borrow_mut(), v.borrow_mut());
				if m.len() != t1 - t0 {
					return Err(CError::Msg(format!("{} moments for {n} weights", m.len())));
				}
				let kernel = Kernel::new(&device, "adamw_f32")?;
				let mut b = kernel.builder();
				b.arg(&mut w).arg(&g).arg(&mut **m).arg(&mut **v).arg(&n);
				b.arg(&c.b1).arg(&c.b2).arg(&c.eps).arg(&c.scale).arg(&c.decay);
				b.arg(&c.step_size).arg(&c.inv_sqrt_bias2);
				// SAFETY: the argument list matches `adamw_f32`; all buffers hold `n` values.
				unsafe { b.launch(elementwise(t1 - t0)) }.map_err(driver_error)?;
			}
			Update::Sgd { k } => {
				let kernel = Kernel::new(&device, "sgd_f32")?;
				let mut b = kernel.builder();
				b.arg(&mut w).arg(&g).arg(&n).arg(k);
				// SAFETY: the argument list matches `sgd_f32`; both buffers hold `n` values.
				unsafe { b.launch(elementwise(t1 - t0)) }.map_err(driver_error)?;
			}
		}
		Ok(())
	}
}

/// The moments of AdamW on the device, one pair of buffers per parameter.
struct DeviceMoments {
	m: Vec<CudaSlice<f32>>,
	v: Vec<CudaSlice<f32>>,
	hyper: Hyper,
	steps: i32,
}

/// AdamW or SGD over variables on one GPU.
pub struct GpuOptimizer {
	vars: Vec<(String, Var)>,
	device: CudaDevice,
	moments: Option<DeviceMoments>,
}

impl GpuOptimizer {
	/// The optimizer of `spec` over `vars`, which must be f32 on the same GPU.
	pub fn new(spec: &InnerOptimizer, vars: Vec<(String, Var)>) -> Result<Self> {
		let (_, first) = vars.first().ok_or_else(|| Error::Config("no parameters".into()))?;
		let device = first.device().as_cuda_device()?.clone();
		for (name, var) in &vars {
			if var.dtype() != candle_core::DType::F32 || !var.device().same_device(first.device()) {
				return Err(Error::Config(format!(
					"the GPU optimizer keeps f32 weights on one GPU; {name} is {:?} on {:?}",
					var.dtype(),
					var.device().location()
				)));
			}
		}
		let moments = match *spec {
			InnerOptimizer::AdamW { weight_decay, .. } => {
				let zeros = || -> Result<Vec<CudaSlice<f32>>> {
					vars.iter()
						.map(|(_, var)| Ok(device.alloc_zeros::<f32>(var.elem_count())?))
						.collect()
				};
				Some(DeviceMoments {
					m: zeros()?,
					v: zeros()?,
					hyper: Hyper::new(weight_decay.to_f64()),
					steps: 0,
				})
			}
			InnerOptimizer::Sgd { .. } => None,
		};
		Ok(GpuOptimizer { vars, device, moments })
	}

	/// The variables it updates.
	pub fn vars(&self) -> &[(String, Var)] {
		&self.vars
	}

	/// The moments (flat, in variable order), copied to the host; `None` for SGD.
	pub fn moments(&self) -> Result<Option<Moments>> {
		let Some(moments) = &self.moments else { return Ok(None) };
		let host = |slices: &[CudaSlice<f32>]| -> Result<Vec<f32>> {
			let mut out = Vec::new();
			for slice in slices {
				out.extend(self.device.clone_dtoh(slice)?);
			}
			Ok(out)
		};
		Ok(Some(Moments { m: host(&moments.m)?, v: host(&moments.v)? }))
	}

	/// Restores a step count and moments saved by [`GpuOptimizer::moments`].
	pub fn restore(&mut self, steps: i32, saved: Option<&Moments>) -> Result<()> {
		let (moments, saved) = match (&mut self.moments, saved) {
			(Some(moments), Some(saved)) => (moments, saved),
			(None, None) => return Ok(()),
			(None, Some(_)) => {
				return Err(Error::Config("SGD keeps no moments, but some were given".into()))
			}
			(Some(_), None) => {
				return Err(Error::Config("AdamW needs its moments, and none were given".into()))
			}
		};
		let len: usize = moments.m.iter().map(|s| s.len()).sum();
		saved.check_len(len)?;
		let mut offset = 0;
		for (m, v) in moments.m.iter_mut().zip(&mut moments.v) {
			let n = m.len();
			self.device.memcpy_htod(&saved.m[offset..offset + n], m)?;
			self.device.memcpy_htod(&saved.v[offset..offset + n], v)?;
			offset += n;
		}
		moments.steps = steps;
		Ok(())
	}

	/// One update from a backward pass's gradients, clipped to global norm `clip`, with
	/// learning rate `lr`. Returns the gradient norm before clipping.
	pub fn step(&mut self, grads: &GradStore, lr: f64, clip: Option<f64>) -> Result<f64> {
		let grads = super::grads_of(grads, &self.vars)?;
		let mut acc = self.device.alloc_zeros::<f64>(1)?;
		for g in &grads {
			add_sum_squares(g, &mut acc)?;
		}
		let norm = self.device.clone_dtoh(&acc)?[0].sqrt();
		let scale = clip_factor(norm, clip);
		match &mut self.moments {
			Some(moments) => {
				moments.steps += 1;
				let each =
					self.vars.iter().zip(&grads).zip(moments.m.iter_mut().zip(&mut moments.v));
				for (((_, var), g), (m, v)) in each {
					let c = moments.hyper.coefficients(moments.steps, lr, scale, var.rank());
					let update = Update::AdamW { m: RefCell::new(m), v: RefCell::new(v), c };
					var.inplace_op2(&g.contiguous()?, &update)?;
				}
			}
			None => {
				let update = Update::Sgd { k: (lr * scale) as f32 };
				for ((_, var), g) in self.vars.iter().zip(&grads) {
					var.inplace_op2(&g.contiguous()?, &update)?;
				}
			}
		}
		Ok(norm)
	}
}
