//! Fused CPU kernels, each with its own backward, for the GPT's hottest element-wise ops:
//! tanh-GELU, layer normalisation, the scaled causal softmax of attention, and adding a bias
//! (or a scale and a bias) to every row, whose backward is a column sum that Candle computes
//! slowly with a strided reduction.
//!
//! Composed from primitive tensor ops these cost a dozen allocations and passes each (forward
//! and backward), which dominated the training step on the CPU. With the `cuda` feature GELU,
//! layer normalisation and the causal softmax also run fused on a GPU (`cuda/kernels.cu`);
//! elsewhere the composed, differentiable versions are used, so the fused kernels never change
//! what is computed, only how fast (tests compare both, values and gradients).

use std::mem::MaybeUninit;

use rayon::prelude::*;

#[cfg(feature = "cuda")]
use candle_core::CudaStorage;
use candle_core::{
	CpuStorage, CustomOp1, CustomOp2, CustomOp3, DType, Error as CError, Layout, Result as CResult,
	Shape, Tensor, D,
};

/// √(2/π), the tanh-GELU constant.
const GELU_K: f32 = 0.797_884_6;
/// The cubic coefficient of the tanh-GELU.
const GELU_C: f32 = 0.044_715;

/// Rows per parallel task: small tensors stay on one thread, where splitting costs more than
/// it saves. Every row is computed by the same sequential code whichever thread runs it, so
/// results do not depend on the thread count.
const MIN_ROWS: usize = 64;

/// A new vector of `len` values filled row by row (rows of `width` values) with
/// `f(row_index, row)`, in parallel ([`filled`]).
fn new_rows(len: usize, width: usize, f: impl Fn(usize, &mut [f32]) + Sync) -> Vec<f32> {
	filled(len, width, MIN_ROWS, f)
}

/// A new vector of `len` values filled by chunks of `chunk` values with `f(chunk_index,
/// chunk)`, in parallel (`min_chunks` or more a task). Each chunk starts zeroed, by the task
/// that fills it: zeroing the whole vector first on the calling thread (`vec![0.0; len]` on
/// reused heap memory is a `memset`) ran while the pool waited, a few percent of a two-thread
/// step with the matrix products' outputs (`bench/README.md`, trainer throughput).
fn filled(
	len: usize,
	chunk: usize,
	min_chunks: usize,
	f: impl Fn(usize, &mut [f32]) + Sync,
) -> Vec<f32> {
	let chunk = chunk.max(1);
	let mut out: Vec<f32> = Vec::with_capacity(len);
	let fill = |(i, values): (usize, &mut [MaybeUninit<f32>])| {
		values.fill(MaybeUninit::new(0.0));
		// SAFETY: every value of the chunk was initialized on the line above, and
		// `MaybeUninit<f32>` has `f32`'s layout.
		f(i, unsafe { &mut *(values as *mut [MaybeUninit<f32>] as *mut [f32]) });
	};
	let spare = &mut out.spare_capacity_mut()[..len];
	if parallel() {
		spare.par_chunks_mut(chunk).with_min_len(min_chunks).enumerate().for_each(fill);
	} else {
		spare.chunks_mut(chunk).enumerate().for_each(fill);
	}
	// SAFETY: the chunks cover the first `len` values, and each was initialized.
	unsafe { out.set_len(len) };
	out
}

/// Whether the fused ops handle `x`: f32 on the CPU; on a GPU (with the `cuda` feature) f32,
/// and bf16 too where `bf16` says so.
fn fused(x: &Tensor, bf16: bool) -> bool {
	if x.device().is_cpu() {
		x.dtype() == DType::F32
	} else {
		cfg!(feature = "cuda")
			&& x.device().is_cuda()
			&& (x.dtype() == DType::F32 || (bf16 && x.dtype() == DType::BF16))
			&& gpu_fused_enabled()
	}
}

/// `GRID_GPU_FUSED=0` runs the composed ops on a GPU instead of the fused kernels (the
/// baseline of `bench/gpu_step.sh`).
fn gpu_fused_enabled() -> bool {
	static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
	*ON.get_or_init(|| std::env::var("GRID_GPU_FUSED").map_or(true, |v| v != "0"))
}

/// Whether to split work across rayon's pool. With one thread, handing each op to the pool's
/// single worker only adds a round trip between threads, so run on the caller's thread.
pub fn parallel() -> bool {
	rayon::current_num_threads() > 1
}

/// Values per task of an element-wise map.
const MAP_BLOCK: usize = 4096;

/// Element-wise map of `x` into a new vector, in parallel over blocks.
fn map(x: &[f32], f: impl Fn(f32) -> f32 + Sync) -> Vec<f32> {
	filled(x.len(), MAP_BLOCK, 1, |i, o| {
		o.iter_mut().zip(&x[i * MAP_BLOCK..]).for_each(|(o, x)| *o = f(*x));
	})
}

/// Element-wise map of two equally long slices into a new vector, in parallel over blocks.
fn map2(x: &[f32], y: &[f32], f: impl Fn(f32, f32) -> f32 + Sync) -> Vec<f32> {
	filled(x.len(), MAP_BLOCK, 1, |i, o| {
		let (x, y) = (&x[i * MAP_BLOCK..], &y[i * MAP_BLOCK..]);
		o.iter_mut().zip(x.iter().zip(y)).for_each(|(o, (x, y))| *o = f(*x, *y));
	})
}

/// The contiguous f32 values behind a storage and layout.
fn f32_slice<'a>(storage: &'a CpuStorage, layout: &Layout, op: &str) -> CResult<&'a [f32]> {
	let CpuStorage::F32(data) = storage else {
		return Err(CError::Msg(format!("{op}: only f32 is supported")));
	};
	let (start, end) = layout
		.contiguous_offsets()
		.ok_or_else(|| CError::Msg(format!("{op}: input must be contiguous")))?;
	Ok(&data[start..end])
}

/// tanh through one `exp` (cheaper than libm's `tanhf`); exact to f32 rounding for the
/// magnitudes that matter in GELU.
fn tanh(u: f32) -> f32 {
	1.0 - 2.0 / ((2.0 * u).exp() + 1.0)
}

struct Gelu;
struct GeluGrad;

impl CustomOp1 for Gelu {
	fn name(&self) -> &'static str {
		"fused-gelu-tanh"
	}

	fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> CResult<(CpuStorage, Shape)> {
		let x = f32_slice(s, l, self.name())?;
		let y = map(x, |x| 0.5 * x * (1.0 + tanh(GELU_K * (x + GELU_C * x * x * x))));
		Ok((CpuStorage::F32(y), l.shape().clone()))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::gelu(s, l)
	}

	fn bwd(&self, arg: &Tensor, _res: &Tensor, grad: &Tensor) -> CResult<Option<Tensor>> {
		Ok(Some(arg.contiguous()?.apply_op2_no_bwd(&grad.contiguous()?, &GeluGrad)?))
	}
}

impl CustomOp2 for GeluGrad {
	fn name(&self) -> &'static str {
		"fused-gelu-tanh-grad"
	}

	fn cpu_fwd(
		&self,
		s1: &CpuStorage,
		l1: &Layout,
		s2: &CpuStorage,
		l2: &Layout,
	) -> CResult<(CpuStorage, Shape)> {
		let (x, g) = (f32_slice(s1, l1, self.name())?, f32_slice(s2, l2, self.name())?);
		let dx = map2(x, g, |x, g| {
			let t = tanh(GELU_K * (x + GELU_C * x * x * x));
			let du = GELU_K * (1.0 + 3.0 * GELU_C * x * x);
			g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)
		});
		Ok((CpuStorage::F32(dx), l1.shape().clone()))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(
		&self,
		s1: &CudaStorage,
		l1: &Layout,
		s2: &CudaStorage,
		l2: &Layout,
	) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::gelu_grad((s1, l1), (s2, l2))
	}
}

/// Tanh-approximated GELU (as PyTorch's `gelu(approximate="tanh")`).
pub fn gelu(x: &Tensor) -> CResult<Tensor> {
	if fused(x, true) {
		x.contiguous()?.apply_op1(Gelu)
	} else {
		x.gelu()
	}
}

struct Normalize {
	eps: f32,
}
struct NormalizeGrad {
	eps: f32,
}

/// Mean and 1/σ of a row.
fn row_stats(row: &[f32], eps: f32) -> (f32, f32) {
	let n = row.len() as f32;
	let mean = row.iter().sum::<f32>() / n;
	let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n;
	(mean, 1.0 / (var + eps).sqrt())
}

impl CustomOp1 for Normalize {
	fn name(&self) -> &'static str {
		"fused-layer-normalize"
	}

	fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> CResult<(CpuStorage, Shape)> {
		let x = f32_slice(s, l, self.name())?;
		let width = l.dims().last().copied().unwrap_or(1).max(1);
		let y = new_rows(x.len(), width, |r, out| {
			let row = &x[r * width..(r + 1) * width];
			let (mean, rstd) = row_stats(row, self.eps);
			out.iter_mut().zip(row).for_each(|(o, v)| *o = (v - mean) * rstd);
		});
		Ok((CpuStorage::F32(y), l.shape().clone()))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::normalize(s, l, self.eps)
	}

	fn bwd(&self, arg: &Tensor, _res: &Tensor, grad: &Tensor) -> CResult<Option<Tensor>> {
		let op = NormalizeGrad { eps: self.eps };
		Ok(Some(arg.contiguous()?.apply_op2_no_bwd(&grad.contiguous()?, &op)?))
	}
}

impl CustomOp2 for NormalizeGrad {
	fn name(&self) -> &'static str {
		"fused-layer-normalize-grad"
	}

	/// dx = (dy − mean(dy) − x̂·mean(dy·x̂)) / σ, row by row.
	fn cpu_fwd(
		&self,
		s1: &CpuStorage,
		l1: &Layout,
		s2: &CpuStorage,
		l2: &Layout,
	) -> CResult<(CpuStorage, Shape)> {
		let (x, g) = (f32_slice(s1, l1, self.name())?, f32_slice(s2, l2, self.name())?);
		let width = l1.dims().last().copied().unwrap_or(1).max(1);
		let n = width as f32;
		let dx = new_rows(x.len(), width, |r, out| {
			let (row, grow) = (&x[r * width..(r + 1) * width], &g[r * width..(r + 1) * width]);
			let (mean, rstd) = row_stats(row, self.eps);
			let (mut g_mean, mut gx_mean) = (0f32, 0f32);
			for (v, gv) in row.iter().zip(grow) {
				g_mean += gv;
				gx_mean += gv * (v - mean) * rstd;
			}
			g_mean /= n;
			gx_mean /= n;
			for ((o, v), gv) in out.iter_mut().zip(row).zip(grow) {
				*o = rstd * (gv - g_mean - (v - mean) * rstd * gx_mean);
			}
		});
		Ok((CpuStorage::F32(dx), l1.shape().clone()))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(
		&self,
		s1: &CudaStorage,
		l1: &Layout,
		s2: &CudaStorage,
		l2: &Layout,
	) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::normalize_grad((s1, l1), (s2, l2), self.eps)
	}
}

/// `(x − mean) / √(var + eps)` over the last dimension.
pub fn normalize(x: &Tensor, eps: f64) -> CResult<Tensor> {
	if fused(x, false) {
		x.contiguous()?.apply_op1(Normalize { eps: eps as f32 })
	} else {
		let mean = x.mean_keepdim(D::Minus1)?;
		let centered = x.broadcast_sub(&mean)?;
		let var = centered.sqr()?.mean_keepdim(D::Minus1)?;
		centered.broadcast_div(&(var + eps)?.sqrt()?)
	}
}

struct CausalSoftmax {
	scale: f32,
}
struct CausalSoftmaxGrad {
	scale: f32,
}

impl CustomOp1 for CausalSoftmax {
	fn name(&self) -> &'static str {
		"fused-causal-softmax"
	}

	fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> CResult<(CpuStorage, Shape)> {
		let x = f32_slice(s, l, self.name())?;
		let t = l.dims().last().copied().unwrap_or(1).max(1);
		let y = new_rows(x.len(), t, |r, out| {
			let row = &x[r * t..(r + 1) * t];
			// Row i of each [t, t] matrix attends to positions 0..=i.
			let visible = r % t + 1;
			let max = row[..visible].iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v)) * self.scale;
			let mut sum = 0f32;
			for (o, v) in out[..visible].iter_mut().zip(row) {
				*o = (v * self.scale - max).exp();
				sum += *o;
			}
			let inv = 1.0 / sum;
			out[..visible].iter_mut().for_each(|o| *o *= inv);
		});
		Ok((CpuStorage::F32(y), l.shape().clone()))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::causal_softmax(s, l, self.scale)
	}

	fn bwd(&self, _arg: &Tensor, res: &Tensor, grad: &Tensor) -> CResult<Option<Tensor>> {
		let op = CausalSoftmaxGrad { scale: self.scale };
		Ok(Some(res.contiguous()?.apply_op2_no_bwd(&grad.contiguous()?, &op)?))
	}
}

impl CustomOp2 for CausalSoftmaxGrad {
	fn name(&self) -> &'static str {
		"fused-causal-softmax-grad"
	}

	/// dx = scale · y ⊙ (dy − Σ dy·y); masked positions have y = 0 and get no gradient.
	fn cpu_fwd(
		&self,
		s1: &CpuStorage,
		l1: &Layout,
		s2: &CpuStorage,
		l2: &Layout,
	) -> CResult<(CpuStorage, Shape)> {
		let (y, g) = (f32_slice(s1, l1, self.name())?, f32_slice(s2, l2, self.name())?);
		let t = l1.dims().last().copied().unwrap_or(1).max(1);
		let dx = new_rows(y.len(), t, |r, out| {
			let (yr, gr) = (&y[r * t..(r + 1) * t], &g[r * t..(r + 1) * t]);
			let dot: f32 = yr.iter().zip(gr).map(|(a, b)| a * b).sum();
			for ((o, a), b) in out.iter_mut().zip(yr).zip(gr) {
				*o = self.scale * a * (b - dot);
			}
		});
		Ok((CpuStorage::F32(dx), l1.shape().clone()))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(
		&self,
		s1: &CudaStorage,
		l1: &Layout,
		s2: &CudaStorage,
		l2: &Layout,
	) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::causal_softmax_grad((s1, l1), (s2, l2), self.scale)
	}
}

/// Softmax over the last dimension of `x · scale` with a causal mask: for square `[.., t, t]`
/// attention scores, row i keeps columns 0..=i and the rest get probability zero. The result
/// has `x`'s dtype; the arithmetic is f32.
pub fn causal_softmax(x: &Tensor, scale: f64) -> CResult<Tensor> {
	let t = x.dim(D::Minus1)?;
	if x.dim(D::Minus2)? != t {
		return Err(CError::Msg(format!("causal softmax needs square scores, got {:?}", x.dims())));
	}
	if fused(x, true) {
		// On a GPU bf16 scores go in and out as they are (the kernel computes in f32).
		x.contiguous()?.apply_op1(CausalSoftmax { scale: scale as f32 })
	} else {
		// Composed, in f32: bf16 has too few bits for the -1e9 mask and the row sums.
		let values: Vec<f32> =
			(0..t).flat_map(|i| (0..t).map(move |j| if j <= i { 0.0 } else { -1e9 })).collect();
		let mask = Tensor::from_vec(values, (t, t), x.device())?;
		let scores = x.to_dtype(DType::F32)?;
		softmax_last_dim(&(scores * scale)?.broadcast_add(&mask)?)?.to_dtype(x.dtype())
	}
}

/// Table lookup whose backward is a scatter-add (parallel on a GPU, where Candle's CUDA
/// `index_add` walks all ids sequentially per column: milliseconds for a batch of tokens).
struct Embedding;
/// The table gradient of [`Embedding`] for a table of `vocab` rows.
struct EmbeddingGrad {
	vocab: usize,
}

impl CustomOp2 for Embedding {
	fn name(&self) -> &'static str {
		"fused-embedding"
	}

	fn cpu_fwd(
		&self,
		s1: &CpuStorage,
		l1: &Layout,
		s2: &CpuStorage,
		l2: &Layout,
	) -> CResult<(CpuStorage, Shape)> {
		let (table, ids) = (f32_slice(s1, l1, self.name())?, u32_slice(s2, l2, self.name())?);
		let (vocab, width) = l1.shape().dims2()?;
		let mut out = Vec::with_capacity(ids.len() * width);
		for &id in ids {
			let row = checked_row(id, vocab)?;
			out.extend_from_slice(&table[row * width..(row + 1) * width]);
		}
		Ok((CpuStorage::F32(out), Shape::from((ids.len(), width))))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(
		&self,
		s1: &CudaStorage,
		l1: &Layout,
		s2: &CudaStorage,
		l2: &Layout,
	) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::embedding((s1, l1), (s2, l2))
	}

	fn bwd(
		&self,
		table: &Tensor,
		ids: &Tensor,
		_res: &Tensor,
		grad: &Tensor,
	) -> CResult<(Option<Tensor>, Option<Tensor>)> {
		let op = EmbeddingGrad { vocab: table.dim(0)? };
		Ok((Some(ids.contiguous()?.apply_op2_no_bwd(&grad.contiguous()?, &op)?), None))
	}
}

impl CustomOp2 for EmbeddingGrad {
	fn name(&self) -> &'static str {
		"fused-embedding-grad"
	}

	fn cpu_fwd(
		&self,
		s1: &CpuStorage,
		l1: &Layout,
		s2: &CpuStorage,
		l2: &Layout,
	) -> CResult<(CpuStorage, Shape)> {
		let (ids, g) = (u32_slice(s1, l1, self.name())?, f32_slice(s2, l2, self.name())?);
		let width = width(l2);
		let mut out = vec![0f32; self.vocab * width];
		for (&id, grow) in ids.iter().zip(g.chunks(width)) {
			let row = checked_row(id, self.vocab)?;
			out[row * width..(row + 1) * width].iter_mut().zip(grow).for_each(|(o, v)| *o += v);
		}
		Ok((CpuStorage::F32(out), Shape::from((self.vocab, width))))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(
		&self,
		s1: &CudaStorage,
		l1: &Layout,
		s2: &CudaStorage,
		l2: &Layout,
	) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::embedding_grad((s1, l1), (s2, l2), self.vocab)
	}
}

/// The contiguous u32 values behind a storage and layout.
fn u32_slice<'a>(storage: &'a CpuStorage, layout: &Layout, op: &str) -> CResult<&'a [u32]> {
	let CpuStorage::U32(data) = storage else {
		return Err(CError::Msg(format!("{op}: ids must be u32")));
	};
	let (start, end) = layout
		.contiguous_offsets()
		.ok_or_else(|| CError::Msg(format!("{op}: input must be contiguous")))?;
	Ok(&data[start..end])
}

/// `id` as a row index of a table of `vocab` rows.
fn checked_row(id: u32, vocab: usize) -> CResult<usize> {
	let row = id as usize;
	if row >= vocab {
		return Err(CError::Msg(format!("token id {id} is outside the vocabulary of {vocab}")));
	}
	Ok(row)
}

/// Rows `ids` (u32, one dimension) of `table` (`[vocab, width]`). The fused op (its backward a
/// parallel scatter-add) is used on GPUs; it also runs on the CPU, where Candle's own lookup
/// is as fast.
pub fn embedding(table: &Tensor, ids: &Tensor) -> CResult<Tensor> {
	if table.device().is_cuda() && fused(table, false) && ids.dtype() == DType::U32 {
		table.contiguous()?.apply_op2(&ids.contiguous()?, Embedding)
	} else {
		table.embedding(ids)
	}
}

/// Per-row cross-entropy of `[rows, classes]` logits (f32 or bf16) against u32 targets,
/// in one pass forward and one backward (GPU only).
struct CrossEntropy;
struct CrossEntropyGrad;

impl CustomOp2 for CrossEntropy {
	fn name(&self) -> &'static str {
		"fused-cross-entropy"
	}

	fn cpu_fwd(
		&self,
		_: &CpuStorage,
		_: &Layout,
		_: &CpuStorage,
		_: &Layout,
	) -> CResult<(CpuStorage, Shape)> {
		Err(CError::Msg("the fused cross-entropy runs on GPUs only".into()))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(
		&self,
		s1: &CudaStorage,
		l1: &Layout,
		s2: &CudaStorage,
		l2: &Layout,
	) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::cross_entropy((s1, l1), (s2, l2))
	}

	fn bwd(
		&self,
		logits: &Tensor,
		targets: &Tensor,
		_res: &Tensor,
		grad: &Tensor,
	) -> CResult<(Option<Tensor>, Option<Tensor>)> {
		let dlogits = logits.contiguous()?.apply_op3_no_bwd(
			&targets.contiguous()?,
			&grad.contiguous()?,
			&CrossEntropyGrad,
		)?;
		Ok((Some(dlogits), None))
	}
}

impl candle_core::CustomOp3 for CrossEntropyGrad {
	fn name(&self) -> &'static str {
		"fused-cross-entropy-grad"
	}

	fn cpu_fwd(
		&self,
		_: &CpuStorage,
		_: &Layout,
		_: &CpuStorage,
		_: &Layout,
		_: &CpuStorage,
		_: &Layout,
	) -> CResult<(CpuStorage, Shape)> {
		Err(CError::Msg("the fused cross-entropy runs on GPUs only".into()))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(
		&self,
		s1: &CudaStorage,
		l1: &Layout,
		s2: &CudaStorage,
		l2: &Layout,
		s3: &CudaStorage,
		l3: &Layout,
	) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::cross_entropy_grad((s1, l1), (s2, l2), (s3, l3))
	}
}

/// Mean cross-entropy of `[rows, classes]` logits against u32 class ids `[rows]`, computed in
/// f32 whatever the logits' dtype.
pub fn cross_entropy(logits: &Tensor, targets: &Tensor) -> CResult<Tensor> {
	if logits.device().is_cuda() && fused(logits, true) && targets.dtype() == DType::U32 {
		logits.contiguous()?.apply_op2(&targets.contiguous()?, CrossEntropy)?.mean_all()
	} else {
		candle_nn::loss::cross_entropy(&logits.to_dtype(DType::F32)?, targets)
	}
}

/// Causal self-attention `softmax(q·kᵀ·scale, causal) · v` on `[batch, heads, time, dim]`.
/// On a GPU the forward runs without recording its intermediates and one op carries a
/// hand-written backward: Candle's autograd would otherwise zero-fill and add a gradient
/// buffer for each `[batch, heads, time, time]` intermediate (passes over the largest tensors
/// of the step).
pub fn causal_attention(q: &Tensor, k: &Tensor, v: &Tensor, scale: f64) -> CResult<Tensor> {
	if !(q.device().is_cuda() && fused(q, true)) {
		return causal_softmax(&q.matmul(&k.t()?)?, scale)?.matmul(v);
	}
	let (qd, kd, vd) = (q.detach(), k.detach(), v.detach());
	let p = causal_softmax(&qd.matmul(&kd.t()?)?, scale)?;
	let y = p.matmul(&vd)?;
	q.apply_op3(k, v, CausalAttention { y, p, scale: scale as f32 })
}

/// The attention's result `y` and probabilities `p`, computed on detached inputs; as an op it
/// returns `y` and gives q, k and v their gradients.
struct CausalAttention {
	y: Tensor,
	p: Tensor,
	scale: f32,
}

impl candle_core::CustomOp3 for CausalAttention {
	fn name(&self) -> &'static str {
		"causal-attention"
	}

	fn cpu_fwd(
		&self,
		_: &CpuStorage,
		_: &Layout,
		_: &CpuStorage,
		_: &Layout,
		_: &CpuStorage,
		_: &Layout,
	) -> CResult<(CpuStorage, Shape)> {
		use candle_core::backend::BackendStorage;
		let y = self.y.contiguous()?;
		let (storage, layout) = y.storage_and_layout();
		match &*storage {
			candle_core::Storage::Cpu(s) => Ok((s.try_clone(layout)?, y.shape().clone())),
			_ => Err(CError::Msg("attention result is not on the CPU".into())),
		}
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(
		&self,
		_: &CudaStorage,
		_: &Layout,
		_: &CudaStorage,
		_: &Layout,
		_: &CudaStorage,
		_: &Layout,
	) -> CResult<(CudaStorage, Shape)> {
		use candle_core::backend::BackendStorage;
		let y = self.y.contiguous()?;
		let (storage, layout) = y.storage_and_layout();
		match &*storage {
			candle_core::Storage::Cuda(s) => Ok((s.try_clone(layout)?, y.shape().clone())),
			_ => Err(CError::Msg("attention result is not on the GPU".into())),
		}
	}

	/// dv = pᵀ·dy; dp = dy·vᵀ; ds = softmax backward of dp; dq = ds·k; dk = dsᵀ·q.
	fn bwd(
		&self,
		q: &Tensor,
		k: &Tensor,
		v: &Tensor,
		_res: &Tensor,
		grad: &Tensor,
	) -> CResult<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
		let (q, k, v, grad) = (q.detach(), k.detach(), v.detach(), grad.contiguous()?);
		let dv = self.p.t()?.matmul(&grad)?;
		let dp = grad.matmul(&v.t()?)?;
		let ds =
			self.p.contiguous()?.apply_op2_no_bwd(&dp, &CausalSoftmaxGrad { scale: self.scale })?;
		let dq = ds.matmul(&k)?;
		let dk = ds.t()?.matmul(&q)?;
		Ok((Some(dq), Some(dk), Some(dv)))
	}
}

/// Width (last dimension) of a layout.
fn width(l: &Layout) -> usize {
	l.dims().last().copied().unwrap_or(1).max(1)
}

struct ColumnSum;

impl CustomOp1 for ColumnSum {
	fn name(&self) -> &'static str {
		"fused-column-sum"
	}

	fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> CResult<(CpuStorage, Shape)> {
		let x = f32_slice(s, l, self.name())?;
		let w = width(l);
		let mut acc = vec![0f32; w];
		for row in x.chunks(w) {
			acc.iter_mut().zip(row).for_each(|(a, v)| *a += v);
		}
		Ok((CpuStorage::F32(acc), Shape::from(w)))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::column_sum(s, l)
	}
}

/// Sum over every dimension but the last: `[.., c]` → `[c]` (f32 on a GPU whatever `x`'s
/// dtype: the sums feed f32 master biases).
pub fn column_sum(x: &Tensor) -> CResult<Tensor> {
	if fused(x, true) {
		x.contiguous()?.apply_op1_no_bwd(&ColumnSum)
	} else {
		let c = x.dim(D::Minus1)?;
		x.reshape(((), c))?.sum(0)
	}
}

struct AddBias;

impl CustomOp2 for AddBias {
	fn name(&self) -> &'static str {
		"fused-add-bias"
	}

	fn cpu_fwd(
		&self,
		s1: &CpuStorage,
		l1: &Layout,
		s2: &CpuStorage,
		l2: &Layout,
	) -> CResult<(CpuStorage, Shape)> {
		let (x, b) = (f32_slice(s1, l1, self.name())?, f32_slice(s2, l2, self.name())?);
		let w = b.len().max(1);
		let y = new_rows(x.len(), w, |r, out| {
			let row = &x[r * w..(r + 1) * w];
			out.iter_mut().zip(row.iter().zip(b)).for_each(|(o, (v, b))| *o = v + b);
		});
		Ok((CpuStorage::F32(y), l1.shape().clone()))
	}

	#[cfg(feature = "cuda")]
	fn cuda_fwd(
		&self,
		s1: &CudaStorage,
		l1: &Layout,
		s2: &CudaStorage,
		l2: &Layout,
	) -> CResult<(CudaStorage, Shape)> {
		crate::cuda::add_bias((s1, l1), (s2, l2))
	}

	fn bwd(
		&self,
		_x: &Tensor,
		_b: &Tensor,
		_res: &Tensor,
		grad: &Tensor,
	) -> CResult<(Option<Tensor>, Option<Tensor>)> {
		Ok((Some(grad.clone()), Some(column_sum(grad)?)))
	}
}

/// `x + b` with `b` (shape `[c]`) added to every row of `x` (`[.., c]`), in `x`'s dtype. On a
/// GPU an f32 `b` is added as it is (no cast of the bias, and its gradient comes back f32).
pub fn add_bias(x: &Tensor, b: &Tensor) -> CResult<Tensor> {
	let fits = x.dim(D::Minus1)? == b.elem_count() && b.dtype() == DType::F32;
	if fits && fused(x, x.device().is_cuda()) {
		x.contiguous()?.apply_op2(&b.contiguous()?, AddBias)
	} else {
		x.broadcast_add(&b.to_dtype(x.dtype())?)
	}
}

struct ScaleShift;

impl CustomOp3 for ScaleShift {
	fn name(&self) -> &'static str {
		"fused-scale-shift"
	}

	fn cpu_fwd(
		&self,
		s1: &CpuStorage,
		l1: &Layout,
		s2: &CpuStorage,
		l2: &Layout,
		s3: &CpuStorage,
		l3: &Layout,
	) -> CResult<(CpuStorage, Shape)> {
		let x = f32_slice(s1, l1, self.name())?;
		let (w, b) = (f32_slice(s2, l2, self.name())?, f32_slice(s3, l3, self.name())?);
		let c = w.len().max(1);
		let y = new_rows(x.len(), c, |r, out| {
			let row = &x[r * c..(r + 1) * c];
			for (((o, v), w), b) in out.iter_mut().zip(row).zip(w).zip(b) {
				*o = v * w + b;
			}
		});
		Ok((CpuStorage::F32(y), l1.shape().clone()))
	}

	fn bwd(
		&self,
		x: &Tensor,
		w: &Tensor,
		_b: &Tensor,
		_res: &Tensor,
		grad: &Tensor,
	) -> CResult<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
		let dx = grad.broadcast_mul(w)?;
		let dw = column_sum(&(grad * x)?)?;
		Ok((Some(dx), Some(dw), Some(column_sum(grad)?)))
	}
}

/// `x ⊙ w + b` with `w` and `b` (shape `[c]`) applied to every row of `x` (`[.., c]`).
pub fn scale_shift(x: &Tensor, w: &Tensor, b: &Tensor) -> CResult<Tensor> {
	let c = x.dim(D::Minus1)?;
	if x.device().is_cpu() && x.dtype() == DType::F32 && w.elem_count() == c && b.elem_count() == c
	{
		x.contiguous()?.apply_op3(&w.contiguous()?, &b.contiguous()?, ScaleShift)
	} else {
		x.broadcast_mul(w)?.broadcast_add(b)
	}
}

/// Softmax over the last dimension, differentiable. The row maximum is subtracted first for
/// stability; it is detached because softmax does not depend on it.
pub fn softmax_last_dim(x: &Tensor) -> CResult<Tensor> {
	let max = x.max_keepdim(D::Minus1)?.detach();
	let e = x.broadcast_sub(&max)?.exp()?;
	let sum = e.sum_keepdim(D::Minus1)?;
	e.broadcast_div(&sum)
}

#[cfg(test)]
mod tests {
	use super::*;
	use candle_core::{Device, Var};

	/// Values and gradients (of a weighted sum, so every output matters) of `fused` and
	/// `reference` at the same input agree.
	fn check(
		shape: &[usize],
		fused: impl Fn(&Tensor) -> Tensor,
		reference: impl Fn(&Tensor) -> Tensor,
	) {
		let dev = Device::Cpu;
		let n: usize = shape.iter().product();
		let mut rng = crate::rng::Rng::new(3);
		let values: Vec<f32> = (0..n).map(|_| rng.normal() as f32 * 2.0).collect();
		let x = Var::from_tensor(&Tensor::from_vec(values, shape, &dev).unwrap()).unwrap();
		let run = |f: &dyn Fn(&Tensor) -> Tensor| {
			let y = f(x.as_tensor());
			// The same weights for both runs, shaped like the output.
			let mut rng = crate::rng::Rng::new(4);
			let weights: Vec<f32> = (0..y.elem_count()).map(|_| rng.normal() as f32).collect();
			let w = Tensor::from_vec(weights, y.shape(), &dev).unwrap();
			let grads = (&y * &w).unwrap().sum_all().unwrap().backward().unwrap();
			let g =
				grads.get(x.as_tensor()).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
			(y.flatten_all().unwrap().to_vec1::<f32>().unwrap(), g)
		};
		let (y1, g1) = run(&fused);
		let (y2, g2) = run(&reference);
		let max_diff =
			|a: &[f32], b: &[f32]| a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0f32, f32::max);
		assert!(max_diff(&y1, &y2) < 1e-5, "values differ by {}", max_diff(&y1, &y2));
		assert!(max_diff(&g1, &g2) < 1e-4, "gradients differ by {}", max_diff(&g1, &g2));
	}

	#[test]
	fn fused_bias_and_scale_shift_match_broadcasts() {
		let dev = Device::Cpu;
		let b = Var::from_tensor(&Tensor::new(&[0.5f32, -1.0, 2.0], &dev).unwrap()).unwrap();
		let w = Var::from_tensor(&Tensor::new(&[1.5f32, 0.25, -3.0], &dev).unwrap()).unwrap();
		let grads_of = |fused: bool| {
			check(
				&[4, 3],
				|x| {
					if fused {
						add_bias(x, b.as_tensor()).unwrap()
					} else {
						x.broadcast_add(b.as_tensor()).unwrap()
					}
				},
				|x| x.broadcast_add(b.as_tensor()).unwrap(),
			);
			let x = Tensor::new(&[[1f32, 2.0, 3.0], [4.0, 5.0, 6.0]], &dev).unwrap();
			let y = if fused {
				scale_shift(&x, w.as_tensor(), b.as_tensor()).unwrap()
			} else {
				x.broadcast_mul(w.as_tensor()).unwrap().broadcast_add(b.as_tensor()).unwrap()
			};
			let loss = (y.sqr().unwrap()).sum_all().unwrap();
			let g = loss.backward().unwrap();
			let v = |t: &Tensor| g.get(t).unwrap().to_vec1::<f32>().unwrap();
			(y.to_vec2::<f32>().unwrap(), v(w.as_tensor()), v(b.as_tensor()))
		};
		assert_eq!(grads_of(true), grads_of(false));
		check(
			&[3, 3],
			|x| scale_shift(x, w.as_tensor(), b.as_tensor()).unwrap(),
			|x| x.broadcast_mul(w.as_tensor()).unwrap().broadcast_add(b.as_tensor()).unwrap(),
		);
	}

	#[test]
	fn fused_gelu_matches_candle() {
		check(&[7, 33], |x| gelu(x).unwrap(), |x| x.gelu().unwrap());
	}

	#[test]
	fn fused_normalize_matches_the_composed_ops() {
		check(
			&[5, 24],
			|x| normalize(x, 1e-5).unwrap(),
			|x| {
				let mean = x.mean_keepdim(D::Minus1).unwrap();
				let c = x.broadcast_sub(&mean).unwrap();
				let var = c.sqr().unwrap().mean_keepdim(D::Minus1).unwrap();
				c.broadcast_div(&(var + 1e-5).unwrap().sqrt().unwrap()).unwrap()
			},
		);
	}

	#[test]
	fn fused_causal_softmax_matches_masked_softmax() {
		check(
			&[2, 3, 6, 6],
			|x| causal_softmax(x, 0.5).unwrap(),
			|x| {
				let t = 6;
				let m: Vec<f32> = (0..t)
					.flat_map(|i| (0..t).map(move |j| if j <= i { 0.0 } else { -1e9 }))
					.collect();
				let mask = Tensor::from_vec(m, (t, t), x.device()).unwrap();
				softmax_last_dim(&(x * 0.5).unwrap().broadcast_add(&mask).unwrap()).unwrap()
			},
		);
	}

	#[test]
	fn the_fused_embedding_matches_candles_lookup_and_refuses_bad_ids() {
		let dev = Device::Cpu;
		let ids = Tensor::new(&[2u32, 0, 2, 1], &dev).unwrap();
		// The gradient of a weighted sum of the looked-up rows: row 2 is counted twice.
		check(&[3, 4], |t| t.apply_op2(&ids, Embedding).unwrap(), |t| t.embedding(&ids).unwrap());
		let table = Tensor::zeros((3, 4), DType::F32, &dev).unwrap();
		let bad = Tensor::new(&[1u32, 3], &dev).unwrap();
		let err = table.apply_op2(&bad, Embedding).unwrap_err().to_string();
		assert!(err.contains("token id 3 is outside the vocabulary of 3"), "{err}");
	}

	/// A batch of small products (the attention's per-head ones, which Grid's candle-core patch
	/// runs one per thread, `vendor/README.md`) equals each product computed alone as a batch
	/// of one (the loop that runs them in turn), bit for bit, whatever the pool's size, and a
	/// plain f64 sum within rounding. (On a machine of one core candle runs every batch in
	/// turn, and the check still holds.)
	#[test]
	fn batched_small_products_match_each_product_alone_on_any_pool() {
		let dev = Device::Cpu;
		let (b, m, k, n) = (9, 5, 7, 6);
		let mut rng = crate::rng::Rng::new(11);
		let mut random =
			|len: usize| -> Vec<f32> { (0..len).map(|_| rng.normal() as f32).collect() };
		let lhs = Tensor::from_vec(random(b * m * k), (b, m, k), &dev).unwrap();
		// Stored [b, n, k] and transposed, as keys are in q·kᵀ: a strided right-hand side.
		let rhs = Tensor::from_vec(random(b * n * k), (b, n, k), &dev).unwrap().t().unwrap();
		let on_pool = |threads: usize| {
			let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
			pool.install(|| lhs.matmul(&rhs).unwrap().to_vec3::<f32>().unwrap())
		};
		let batched = on_pool(1);
		assert_eq!(batched, on_pool(3), "the pool's size changed the products");
		let (l, r) = (lhs.to_vec3::<f32>().unwrap(), rhs.to_vec3::<f32>().unwrap());
		for (i, product) in batched.iter().enumerate() {
			// A batch of one takes the loop that runs one product after another.
			let one = |t: &Tensor| t.narrow(0, i, 1).unwrap();
			let alone = one(&lhs).matmul(&one(&rhs)).unwrap().get(0).unwrap();
			assert_eq!(product, &alone.to_vec2::<f32>().unwrap(), "product {i} differs alone");
			for (row, col) in (0..m).flat_map(|row| (0..n).map(move |col| (row, col))) {
				let exact: f64 =
					(0..k).map(|j| f64::from(l[i][row][j]) * f64::from(r[i][j][col])).sum();
				let got = f64::from(product[row][col]);
				assert!((got - exact).abs() < 1e-5, "product {i} [{row}, {col}]: {got} vs {exact}");
			}
		}
	}

	#[test]
	fn the_attention_backward_matches_autograd() {
		// [batch 2, heads 2, time 5, dim 3], q, k and v slices of one input.
		let scale = 0.4;
		let split = |t: &Tensor| {
			let t = t.reshape((3, 2, 2, 5, 3)).unwrap();
			(t.get(0).unwrap(), t.get(1).unwrap(), t.get(2).unwrap())
		};
		let fused = |t: &Tensor| {
			let (q, k, v) = split(t);
			let (qd, kd, vd) = (q.detach(), k.detach(), v.detach());
			let p = causal_softmax(&qd.matmul(&kd.t().unwrap()).unwrap(), scale).unwrap();
			let y = p.matmul(&vd).unwrap();
			q.apply_op3(&k, &v, CausalAttention { y, p, scale: scale as f32 }).unwrap()
		};
		let reference = |t: &Tensor| {
			let (q, k, v) = split(t);
			let s = (q.matmul(&k.t().unwrap()).unwrap() * scale).unwrap();
			let mask: Vec<f32> =
				(0..5).flat_map(|i| (0..5).map(move |j| if j <= i { 0.0 } else { -1e9 })).collect();
			let mask = Tensor::from_vec(mask, (5, 5), t.device()).unwrap();
			softmax_last_dim(&s.broadcast_add(&mask).unwrap()).unwrap().matmul(&v).unwrap()
		};
		check(&[3 * 2 * 2 * 5 * 3], fused, reference);
	}
}
