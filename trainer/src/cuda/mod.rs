//! grid-trainer's own CUDA kernels (`kernels.cu`): compiled once per process with NVRTC, so
//! the build needs no nvcc step of its own, and loaded per device through Candle's module
//! cache. This module launches the fused model ops (the GPU halves of `model/fused.rs`); the
//! optimizers' launches are in `optim/cuda.rs`.
//!
//! Every op takes contiguous inputs and returns a new buffer; the CPU twins compute the same
//! functions (tests compare them on a GPU: `trainer/tests/gpu.rs`).

use std::sync::{Arc, OnceLock};

use candle_core::{
	backend::BackendStorage, cuda::CudaDType, CudaDevice, CudaStorage, DType, Error as CError,
	Layout, Result as CResult, Shape,
};
use cudarc::driver::{
	CudaFunction, CudaStream, CudaView, DeviceRepr, LaunchArgs, LaunchConfig, PushKernelArg,
};
use half::bf16;

/// Name of the kernels' module in Candle's per-device cache.
const MODULE: &str = "grid_trainer";
/// Threads per block (a multiple of the 32-thread warp, as the reductions need).
const THREADS: u32 = 256;
/// Most blocks of an element-wise launch; the kernels stride over larger tensors.
const MAX_BLOCKS: u32 = 4096;

/// A kernel of `kernels.cu` on one device's stream.
pub(crate) struct Kernel {
	func: CudaFunction,
	stream: Arc<CudaStream>,
}

impl Kernel {
	/// Kernel `name` on `device` (the source is compiled on first use in the process).
	pub(crate) fn new(device: &CudaDevice, name: &str) -> CResult<Self> {
		static PTX: OnceLock<Result<String, String>> = OnceLock::new();
		let ptx = PTX
			.get_or_init(|| {
				cudarc::nvrtc::compile_ptx(include_str!("kernels.cu"))
					.map(|p| p.to_src())
					.map_err(|e| e.to_string())
			})
			.as_deref()
			.map_err(|e| CError::Msg(format!("compiling grid-trainer's CUDA kernels: {e}")))?;
		let func = device.get_or_load_custom_func(name, MODULE, ptx)?.into_cuda_function();
		Ok(Kernel { func, stream: device.cuda_stream() })
	}

	/// An argument list to fill and launch.
	pub(crate) fn builder(&self) -> LaunchArgs<'_> {
		self.stream.launch_builder(&self.func)
	}
}

/// Launch shape of an element-wise kernel over `n` values.
pub(crate) fn elementwise(n: usize) -> LaunchConfig {
	let blocks = (n as u64).div_ceil(u64::from(THREADS)).clamp(1, u64::from(MAX_BLOCKS)) as u32;
	LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// Launch shape of a row kernel: one block per row.
fn per_row(rows: usize) -> CResult<LaunchConfig> {
	let rows = u32::try_from(rows).map_err(|_| CError::Msg(format!("{rows} rows")))?;
	Ok(LaunchConfig {
		grid_dim: (rows.max(1), 1, 1),
		block_dim: (THREADS, 1, 1),
		shared_mem_bytes: 0,
	})
}

/// A driver error as Candle's.
pub(crate) fn driver_error(e: cudarc::driver::DriverError) -> CError {
	CError::Cuda(Box::new(e))
}

/// The element range of a contiguous layout.
pub(crate) fn range(layout: &Layout, what: &str) -> CResult<(usize, usize)> {
	layout
		.contiguous_offsets()
		.ok_or_else(|| CError::Msg(format!("{what}: input must be contiguous")))
}

/// The contiguous `T` values of each input, all `n` long.
fn views<'a, T: CudaDType>(
	name: &str,
	inputs: &[(&'a CudaStorage, &Layout)],
	n: usize,
) -> CResult<Vec<CudaView<'a, T>>> {
	inputs
		.iter()
		.map(|(s, l)| {
			let (a, b) = range(l, name)?;
			if b - a != n {
				return Err(CError::Msg(format!("{name}: inputs of {} and {n} values", b - a)));
			}
			Ok(s.as_cuda_slice::<T>()?.slice(a..b))
		})
		.collect()
}

/// Runs element-wise kernel `name` over `inputs` (equal shapes, dtype `T`) into a new buffer.
fn map<T: CudaDType + DeviceRepr>(
	name: &str,
	inputs: &[(&CudaStorage, &Layout)],
) -> CResult<(CudaStorage, Shape)> {
	let (first, layout) = inputs[0];
	let device = first.device.clone();
	let n = layout.shape().elem_count();
	let views = views::<T>(name, inputs, n)?;
	// SAFETY: the kernel writes all `n` values.
	let mut out = unsafe { device.alloc::<T>(n)? };
	let count = n as u64;
	let kernel = Kernel::new(&device, name)?;
	let mut b = kernel.builder();
	for view in &views {
		b.arg(view);
	}
	b.arg(&mut out).arg(&count);
	// SAFETY: `name` takes its inputs, the output and the count, all buffers `n` long.
	unsafe { b.launch(elementwise(n)) }.map_err(driver_error)?;
	Ok((T::wrap_cuda_slice(out, device), layout.shape().clone()))
}

/// Runs element-wise kernel `name_f32` or `name_bf16` by the inputs' dtype.
fn map_float(name: &str, inputs: &[(&CudaStorage, &Layout)]) -> CResult<(CudaStorage, Shape)> {
	match inputs[0].0.dtype() {
		DType::F32 => map::<f32>(&format!("{name}_f32"), inputs),
		DType::BF16 => map::<bf16>(&format!("{name}_bf16"), inputs),
		d => Err(CError::Msg(format!("{name}: no kernel for {d:?}"))),
	}
}

/// Tanh-GELU.
pub(crate) fn gelu(x: &CudaStorage, l: &Layout) -> CResult<(CudaStorage, Shape)> {
	map_float("gelu", &[(x, l)])
}

/// Gradient of tanh-GELU at `x` given the output's gradient `g`.
pub(crate) fn gelu_grad(
	x: (&CudaStorage, &Layout),
	g: (&CudaStorage, &Layout),
) -> CResult<(CudaStorage, Shape)> {
	map_float("gelu_grad", &[x, g])
}

/// Runs row kernel `name` (rows of the last dimension's width, dtype `T`) over `inputs`,
/// passing `width` and `param` after the output.
fn rows<T: CudaDType + DeviceRepr>(
	name: &str,
	inputs: &[(&CudaStorage, &Layout)],
	param: f32,
) -> CResult<(CudaStorage, Shape)> {
	let (first, layout) = inputs[0];
	let width = layout.dims().last().copied().unwrap_or(1).max(1);
	let n = layout.shape().elem_count();
	let device = first.device.clone();
	let views = views::<T>(name, inputs, n)?;
	// SAFETY: the kernel writes every value of every row.
	let mut out = unsafe { device.alloc::<T>(n)? };
	let width_arg =
		u32::try_from(width).map_err(|_| CError::Msg(format!("{name}: width {width}")))?;
	let kernel = Kernel::new(&device, name)?;
	let mut b = kernel.builder();
	for view in &views {
		b.arg(view);
	}
	b.arg(&mut out).arg(&width_arg).arg(&param);
	// SAFETY: `name` takes its inputs, the output, the width and one f32, rows of `width`.
	unsafe { b.launch(per_row(n / width)?) }.map_err(driver_error)?;
	Ok((T::wrap_cuda_slice(out, device), layout.shape().clone()))
}

/// `(x − mean) / √(var + eps)` over the last dimension (f32).
pub(crate) fn normalize(x: &CudaStorage, l: &Layout, eps: f32) -> CResult<(CudaStorage, Shape)> {
	rows::<f32>("normalize_f32", &[(x, l)], eps)
}

/// Gradient of [`normalize`] at `x` given the output's gradient `g`.
pub(crate) fn normalize_grad(
	x: (&CudaStorage, &Layout),
	g: (&CudaStorage, &Layout),
	eps: f32,
) -> CResult<(CudaStorage, Shape)> {
	rows::<f32>("normalize_grad_f32", &[x, g], eps)
}

/// Row kernel `name_f32` or `name_bf16` by the inputs' dtype.
fn rows_float(
	name: &str,
	inputs: &[(&CudaStorage, &Layout)],
	param: f32,
) -> CResult<(CudaStorage, Shape)> {
	match inputs[0].0.dtype() {
		DType::F32 => rows::<f32>(&format!("{name}_f32"), inputs, param),
		DType::BF16 => rows::<bf16>(&format!("{name}_bf16"), inputs, param),
		d => Err(CError::Msg(format!("{name}: no kernel for {d:?}"))),
	}
}

/// Causal softmax of `x · scale` over square score matrices (f32 or bf16; f32 arithmetic).
pub(crate) fn causal_softmax(
	x: &CudaStorage,
	l: &Layout,
	scale: f32,
) -> CResult<(CudaStorage, Shape)> {
	rows_float("causal_softmax", &[(x, l)], scale)
}

/// Gradient of [`causal_softmax`] from its output `y` and the output's gradient `g`.
pub(crate) fn causal_softmax_grad(
	y: (&CudaStorage, &Layout),
	g: (&CudaStorage, &Layout),
	scale: f32,
) -> CResult<(CudaStorage, Shape)> {
	rows_float("causal_softmax_grad", &[y, g], scale)
}

/// Rows `ids` (u32) of the f32 `[vocab, width]` table.
pub(crate) fn embedding(
	table: (&CudaStorage, &Layout),
	ids: (&CudaStorage, &Layout),
) -> CResult<(CudaStorage, Shape)> {
	let (vocab, width) = table.1.shape().dims2()?;
	let rows = ids.1.shape().elem_count();
	let (t0, t1) = range(table.1, "embedding table")?;
	let (i0, i1) = range(ids.1, "embedding ids")?;
	let device = table.0.device.clone();
	let table_view = table.0.as_cuda_slice::<f32>()?.slice(t0..t1);
	let ids_view = ids.0.as_cuda_slice::<u32>()?.slice(i0..i1);
	check_below(&device, &ids_view, vocab, |id| {
		format!("token id {id} is outside the vocabulary of {vocab}")
	})?;
	let n = rows * width;
	// SAFETY: the kernel writes all `n` values.
	let mut out = unsafe { device.alloc::<f32>(n)? };
	let (count, width_arg) = (n as u64, width as u32);
	let kernel = Kernel::new(&device, "embedding_f32")?;
	let mut b = kernel.builder();
	b.arg(&table_view).arg(&ids_view).arg(&mut out).arg(&count).arg(&width_arg);
	// SAFETY: matches `embedding_f32`; every id was checked to be below `vocab`.
	unsafe { b.launch(elementwise(n)) }.map_err(driver_error)?;
	Ok((f32::wrap_cuda_slice(out, device), Shape::from((rows, width))))
}

/// The gradient of [`embedding`] with respect to the table: `g`'s rows summed into the rows
/// of a zero `[vocab, width]` table at `ids`.
pub(crate) fn embedding_grad(
	ids: (&CudaStorage, &Layout),
	g: (&CudaStorage, &Layout),
	vocab: usize,
) -> CResult<(CudaStorage, Shape)> {
	let (rows, width) = g.1.shape().dims2()?;
	let (i0, i1) = range(ids.1, "embedding ids")?;
	let (g0, g1) = range(g.1, "embedding gradient")?;
	if i1 - i0 != rows {
		return Err(CError::Msg(format!("{} ids for {rows} gradient rows", i1 - i0)));
	}
	let device = ids.0.device.clone();
	let ids_view = ids.0.as_cuda_slice::<u32>()?.slice(i0..i1);
	let g_view = g.0.as_cuda_slice::<f32>()?.slice(g0..g1);
	let mut out = device.alloc_zeros::<f32>(vocab * width)?;
	let (n, width_arg) = (rows * width, width as u32);
	let count = n as u64;
	let kernel = Kernel::new(&device, "embedding_grad_f32")?;
	let mut b = kernel.builder();
	b.arg(&ids_view).arg(&g_view).arg(&mut out).arg(&count).arg(&width_arg);
	// SAFETY: matches `embedding_grad_f32`; the ids were checked in the forward pass.
	unsafe { b.launch(elementwise(n)) }.map_err(driver_error)?;
	Ok((f32::wrap_cuda_slice(out, device), Shape::from((vocab, width))))
}

/// Refuses indices (token ids, targets) at or above `bound`, with `refusal`'s message: the
/// kernels index with them, and would read and write out of bounds. Their backward passes
/// take the indices their forward pass checked.
fn check_below(
	device: &CudaDevice,
	indices: &CudaView<'_, u32>,
	bound: usize,
	refusal: impl Fn(u32) -> String,
) -> CResult<()> {
	match device.clone_dtoh(indices)?.into_iter().find(|&i| i as usize >= bound) {
		Some(i) => Err(CError::Msg(refusal(i))),
		None => Ok(()),
	}
}

/// The f32 or bf16 logits and the u32 targets of a cross-entropy.
struct CrossEntropyArgs<'a> {
	logits: (&'a CudaStorage, usize, usize),
	targets: CudaView<'a, u32>,
	rows: usize,
	width: usize,
}

impl<'a> CrossEntropyArgs<'a> {
	fn new(
		logits: (&'a CudaStorage, &Layout),
		targets: (&'a CudaStorage, &Layout),
	) -> CResult<Self> {
		let (rows, width) = logits.1.shape().dims2()?;
		let (l0, l1) = range(logits.1, "logits")?;
		let (t0, t1) = range(targets.1, "targets")?;
		if t1 - t0 != rows {
			return Err(CError::Msg(format!("{} targets for {rows} rows of logits", t1 - t0)));
		}
		let targets = targets.0.as_cuda_slice::<u32>()?.slice(t0..t1);
		Ok(CrossEntropyArgs { logits: (logits.0, l0, l1), targets, rows, width })
	}

	fn kernel_name(&self, name: &str) -> CResult<String> {
		match self.logits.0.dtype() {
			DType::F32 => Ok(format!("{name}_f32")),
			DType::BF16 => Ok(format!("{name}_bf16")),
			d => Err(CError::Msg(format!("{name}: no kernel for {d:?}"))),
		}
	}
}

/// Per-row cross-entropy (f32 `[rows]`) of `[rows, classes]` logits against u32 targets.
pub(crate) fn cross_entropy(
	logits: (&CudaStorage, &Layout),
	targets: (&CudaStorage, &Layout),
) -> CResult<(CudaStorage, Shape)> {
	let args = CrossEntropyArgs::new(logits, targets)?;
	let width = args.width;
	check_below(&args.logits.0.device, &args.targets, width, |t| {
		format!("target {t} is outside the {width} classes")
	})?;
	let (s, l0, l1) = args.logits;
	match s.dtype() {
		DType::BF16 => ce_fwd::<bf16>(&args, s.as_cuda_slice::<bf16>()?.slice(l0..l1)),
		_ => ce_fwd::<f32>(&args, s.as_cuda_slice::<f32>()?.slice(l0..l1)),
	}
}

fn ce_fwd<T: CudaDType + DeviceRepr>(
	args: &CrossEntropyArgs,
	logits: CudaView<'_, T>,
) -> CResult<(CudaStorage, Shape)> {
	let device = args.logits.0.device.clone();
	let width = args.width as u32;
	// SAFETY: one value per row, all written.
	let mut loss = unsafe { device.alloc::<f32>(args.rows)? };
	let kernel = Kernel::new(&device, &args.kernel_name("cross_entropy")?)?;
	let mut b = kernel.builder();
	b.arg(&logits).arg(&args.targets).arg(&mut loss).arg(&width);
	// SAFETY: matches `cross_entropy_*`; targets were checked to be below the width.
	unsafe { b.launch(per_row(args.rows)?) }.map_err(driver_error)?;
	Ok((f32::wrap_cuda_slice(loss, device), Shape::from(args.rows)))
}

/// Gradient of [`cross_entropy`] with respect to the logits, given each row's loss gradient
/// `g` (f32 `[rows]`), in the logits' dtype.
pub(crate) fn cross_entropy_grad(
	logits: (&CudaStorage, &Layout),
	targets: (&CudaStorage, &Layout),
	g: (&CudaStorage, &Layout),
) -> CResult<(CudaStorage, Shape)> {
	let args = CrossEntropyArgs::new(logits, targets)?;
	let (g0, g1) = range(g.1, "loss gradient")?;
	if g1 - g0 != args.rows {
		return Err(CError::Msg(format!("{} loss gradients for {} rows", g1 - g0, args.rows)));
	}
	let g = g.0.as_cuda_slice::<f32>()?.slice(g0..g1);
	let (s, l0, l1) = args.logits;
	match s.dtype() {
		DType::BF16 => ce_grad::<bf16>(&args, s.as_cuda_slice::<bf16>()?.slice(l0..l1), &g),
		_ => ce_grad::<f32>(&args, s.as_cuda_slice::<f32>()?.slice(l0..l1), &g),
	}
}

fn ce_grad<T: CudaDType + DeviceRepr>(
	args: &CrossEntropyArgs,
	logits: CudaView<'_, T>,
	g: &CudaView<'_, f32>,
) -> CResult<(CudaStorage, Shape)> {
	let device = args.logits.0.device.clone();
	let n = args.rows * args.width;
	// SAFETY: the kernel writes every value of every row.
	let mut dx = unsafe { device.alloc::<T>(n)? };
	let width = args.width as u32;
	let kernel = Kernel::new(&device, &args.kernel_name("cross_entropy_grad")?)?;
	let mut b = kernel.builder();
	b.arg(&logits).arg(&args.targets).arg(g).arg(&mut dx).arg(&width);
	// SAFETY: matches `cross_entropy_grad_*`; the forward pass checked the targets.
	unsafe { b.launch(per_row(args.rows)?) }.map_err(driver_error)?;
	Ok((T::wrap_cuda_slice(dx, device), Shape::from((args.rows, args.width))))
}

/// `x + b` for every row of `x` (f32 or bf16 `[.., c]`), `b` an f32 `[c]`; `x`'s dtype.
pub(crate) fn add_bias(
	x: (&CudaStorage, &Layout),
	b: (&CudaStorage, &Layout),
) -> CResult<(CudaStorage, Shape)> {
	match x.0.dtype() {
		DType::F32 => add_bias_typed::<f32>(x, b, "add_bias_f32"),
		DType::BF16 => add_bias_typed::<bf16>(x, b, "add_bias_bf16"),
		d => Err(CError::Msg(format!("add_bias: no kernel for {d:?}"))),
	}
}

fn add_bias_typed<T: CudaDType + DeviceRepr>(
	x: (&CudaStorage, &Layout),
	b: (&CudaStorage, &Layout),
	name: &str,
) -> CResult<(CudaStorage, Shape)> {
	let cols = x.1.dims().last().copied().unwrap_or(1).max(1);
	let (x0, x1) = range(x.1, "add_bias input")?;
	let (b0, b1) = range(b.1, "bias")?;
	if b1 - b0 != cols {
		return Err(CError::Msg(format!("a bias of {} for rows of {cols}", b1 - b0)));
	}
	let device = x.0.device.clone();
	let xs = x.0.as_cuda_slice::<T>()?.slice(x0..x1);
	let bs = b.0.as_cuda_slice::<f32>()?.slice(b0..b1);
	let n = x1 - x0;
	// SAFETY: the kernel writes all `n` values.
	let mut out = unsafe { device.alloc::<T>(n)? };
	let (count, cols_arg) = (n as u64, cols as u32);
	let kernel = Kernel::new(&device, name)?;
	let mut builder = kernel.builder();
	builder.arg(&xs).arg(&bs).arg(&mut out).arg(&count).arg(&cols_arg);
	// SAFETY: matches `add_bias_*`; `x` has `n` values, the bias `cols`.
	unsafe { builder.launch(elementwise(n)) }.map_err(driver_error)?;
	Ok((T::wrap_cuda_slice(out, device), x.1.shape().clone()))
}

/// Sum over every dimension but the last of f32 or bf16 `[.., c]`, as f32 `[c]`.
pub(crate) fn column_sum(x: &CudaStorage, l: &Layout) -> CResult<(CudaStorage, Shape)> {
	match x.dtype() {
		DType::F32 => column_sum_typed::<f32>(x, l, "column_sum_f32"),
		DType::BF16 => column_sum_typed::<bf16>(x, l, "column_sum_bf16"),
		d => Err(CError::Msg(format!("column_sum: no kernel for {d:?}"))),
	}
}

fn column_sum_typed<T: CudaDType + DeviceRepr>(
	x: &CudaStorage,
	l: &Layout,
	name: &str,
) -> CResult<(CudaStorage, Shape)> {
	let cols = l.dims().last().copied().unwrap_or(1).max(1);
	let (x0, x1) = range(l, "column_sum input")?;
	let rows = (x1 - x0) / cols;
	let device = x.device.clone();
	let xs = x.as_cuda_slice::<T>()?.slice(x0..x1);
	let mut out = device.alloc_zeros::<f32>(cols)?;
	let (rows_arg, cols_arg) = (rows as u64, cols as u32);
	let grid = (cols.div_ceil(32) as u32, rows.div_ceil(256).max(1) as u32, 1);
	let config = LaunchConfig { grid_dim: grid, block_dim: (256, 1, 1), shared_mem_bytes: 0 };
	let kernel = Kernel::new(&device, name)?;
	let mut builder = kernel.builder();
	builder.arg(&xs).arg(&mut out).arg(&rows_arg).arg(&cols_arg);
	// SAFETY: matches `column_sum_*`: 32 columns × 256 rows a block, bounds checked inside.
	unsafe { builder.launch(config) }.map_err(driver_error)?;
	Ok((f32::wrap_cuda_slice(out, device), Shape::from(cols)))
}
