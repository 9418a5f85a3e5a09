// grid-trainer's own CUDA kernels, compiled at run time with NVRTC (trainer/src/cuda/mod.rs):
// the fused element-wise and row-wise ops of the GPT (their CPU twins are in
// trainer/src/model/fused.rs) and the fused inner optimizers. No headers: bf16 is handled as
// its 16 bits (an f32's high half), converted with round-to-nearest-even.

typedef unsigned short bf16;
typedef unsigned long long u64;

#define NEG_INF __int_as_float(0xff800000u)

__device__ __forceinline__ float load(const float* p, u64 i) { return p[i]; }
__device__ __forceinline__ float load(const bf16* p, u64 i) {
	return __uint_as_float(((unsigned int)p[i]) << 16);
}
__device__ __forceinline__ void store(float* p, u64 i, float v) { p[i] = v; }
__device__ __forceinline__ void store(bf16* p, u64 i, float v) {
	unsigned int u = __float_as_uint(v);
	if ((u & 0x7fffffffu) > 0x7f800000u) {
		p[i] = 0x7fc0;  // NaN stays NaN
		return;
	}
	p[i] = (bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#define GRID_STRIDE(i, n) \
	for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < (n); i += (u64)blockDim.x * gridDim.x)

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
__device__ float block_sum(float v) {
	__shared__ float partial[32];
	for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	__syncthreads();  // partial may still be read by a previous call
	if (lane == 0) partial[warp] = v;
	__syncthreads();
	v = lane < (int)(blockDim.x / 32) ? partial[lane] : 0.0f;
	for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ float block_max(float v) {
	__shared__ float partial[32];
	for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	__syncthreads();
	if (lane == 0) partial[warp] = v;
	__syncthreads();
	v = lane < (int)(blockDim.x / 32) ? partial[lane] : NEG_INF;
	for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

// ---- tanh-GELU (PyTorch's gelu(approximate="tanh")) ----

#define GELU_K 0.7978845608f
#define GELU_C 0.044715f

template <typename T>
__device__ void gelu(const T* x, T* y, u64 n) {
	GRID_STRIDE(i, n) {
		float v = load(x, i);
		store(y, i, 0.5f * v * (1.0f + tanhf(GELU_K * (v + GELU_C * v * v * v))));
	}
}

template <typename T>
__device__ void gelu_grad(const T* x, const T* g, T* dx, u64 n) {
	GRID_STRIDE(i, n) {
		float v = load(x, i);
		float t = tanhf(GELU_K * (v + GELU_C * v * v * v));
		float du = GELU_K * (1.0f + 3.0f * GELU_C * v * v);
		store(dx, i, load(g, i) * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du));
	}
}

extern "C" __global__ void gelu_f32(const float* x, float* y, u64 n) { gelu(x, y, n); }
extern "C" __global__ void gelu_bf16(const bf16* x, bf16* y, u64 n) { gelu(x, y, n); }
extern "C" __global__ void gelu_grad_f32(const float* x, const float* g, float* dx, u64 n) {
	gelu_grad(x, g, dx, n);
}
extern "C" __global__ void gelu_grad_bf16(const bf16* x, const bf16* g, bf16* dx, u64 n) {
	gelu_grad(x, g, dx, n);
}

// ---- Row-wise ops: one block per row of `width` f32 values ----

// (x − mean) / √(var + eps) per row.
extern "C" __global__ void normalize_f32(const float* x, float* y, unsigned int width, float eps) {
	const float* row = x + (u64)blockIdx.x * width;
	float* out = y + (u64)blockIdx.x * width;
	float s = 0.0f;
	for (unsigned int j = threadIdx.x; j < width; j += blockDim.x) s += row[j];
	float mean = block_sum(s) / width;
	float q = 0.0f;
	for (unsigned int j = threadIdx.x; j < width; j += blockDim.x) {
		float d = row[j] - mean;
		q += d * d;
	}
	float rstd = rsqrtf(block_sum(q) / width + eps);
	for (unsigned int j = threadIdx.x; j < width; j += blockDim.x) out[j] = (row[j] - mean) * rstd;
}

// dx = (dy − mean(dy) − x̂·mean(dy·x̂)) / σ per row.
extern "C" __global__ void normalize_grad_f32(const float* x, const float* g, float* dx,
		unsigned int width, float eps) {
	u64 base = (u64)blockIdx.x * width;
	float s = 0.0f;
	for (unsigned int j = threadIdx.x; j < width; j += blockDim.x) s += x[base + j];
	float mean = block_sum(s) / width;
	float q = 0.0f;
	for (unsigned int j = threadIdx.x; j < width; j += blockDim.x) {
		float d = x[base + j] - mean;
		q += d * d;
	}
	float rstd = rsqrtf(block_sum(q) / width + eps);
	float gs = 0.0f, gx = 0.0f;
	for (unsigned int j = threadIdx.x; j < width; j += blockDim.x) {
		float gv = g[base + j];
		gs += gv;
		gx += gv * (x[base + j] - mean) * rstd;
	}
	float g_mean = block_sum(gs) / width;
	float gx_mean = block_sum(gx) / width;
	for (unsigned int j = threadIdx.x; j < width; j += blockDim.x) {
		float xhat = (x[base + j] - mean) * rstd;
		dx[base + j] = rstd * (g[base + j] - g_mean - xhat * gx_mean);
	}
}

// Softmax of x·scale over each row of square [t, t] score matrices, row i keeping columns
// 0..=i (the others get 0). Arithmetic in f32 whatever T.
template <typename T>
__device__ void causal_softmax(const T* x, T* y, unsigned int t, float scale) {
	u64 base = (u64)blockIdx.x * t;
	unsigned int visible = blockIdx.x % t + 1;
	float m = NEG_INF;
	for (unsigned int j = threadIdx.x; j < visible; j += blockDim.x) m = fmaxf(m, load(x, base + j));
	m = block_max(m) * scale;
	float s = 0.0f;
	for (unsigned int j = threadIdx.x; j < visible; j += blockDim.x) s += __expf(load(x, base + j) * scale - m);
	float inv = 1.0f / block_sum(s);
	for (unsigned int j = threadIdx.x; j < t; j += blockDim.x)
		store(y, base + j, j < visible ? __expf(load(x, base + j) * scale - m) * inv : 0.0f);
}

// dx = scale · y ⊙ (dy − Σ dy·y) per row.
template <typename T>
__device__ void causal_softmax_grad(const T* y, const T* g, T* dx, unsigned int t, float scale) {
	u64 base = (u64)blockIdx.x * t;
	float d = 0.0f;
	for (unsigned int j = threadIdx.x; j < t; j += blockDim.x) d += load(y, base + j) * load(g, base + j);
	float dot = block_sum(d);
	for (unsigned int j = threadIdx.x; j < t; j += blockDim.x)
		store(dx, base + j, scale * load(y, base + j) * (load(g, base + j) - dot));
}

extern "C" __global__ void causal_softmax_f32(const float* x, float* y, unsigned int t, float scale) {
	causal_softmax(x, y, t, scale);
}
extern "C" __global__ void causal_softmax_bf16(const bf16* x, bf16* y, unsigned int t, float scale) {
	causal_softmax(x, y, t, scale);
}
extern "C" __global__ void causal_softmax_grad_f32(const float* y, const float* g, float* dx,
		unsigned int t, float scale) {
	causal_softmax_grad(y, g, dx, t, scale);
}
extern "C" __global__ void causal_softmax_grad_bf16(const bf16* y, const bf16* g, bf16* dx,
		unsigned int t, float scale) {
	causal_softmax_grad(y, g, dx, t, scale);
}

// ---- Bias: added to every row, and its gradient, the column sum ----

template <typename T>
__device__ void add_bias(const T* x, const float* b, T* y, u64 n, unsigned int cols) {
	GRID_STRIDE(i, n) { store(y, i, load(x, i) + b[i % cols]); }
}
extern "C" __global__ void add_bias_f32(const float* x, const float* b, float* y, u64 n, unsigned int c) {
	add_bias(x, b, y, n, c);
}
extern "C" __global__ void add_bias_bf16(const bf16* x, const float* b, bf16* y, u64 n, unsigned int c) {
	add_bias(x, b, y, n, c);
}

// out[c] += Σ rows x[r, c] (out zeroed first). Blocks of 32 columns × 8 row lanes, each block
// covering COLUMN_SUM_ROWS rows: reads are coalesced along a row, and enough blocks run.
#define COLUMN_SUM_ROWS 256
template <typename T>
__device__ void column_sum(const T* x, float* out, u64 rows, unsigned int cols) {
	__shared__ float part[8][32];
	unsigned int col = blockIdx.x * 32 + threadIdx.x % 32, lane = threadIdx.x / 32;
	u64 r0 = (u64)blockIdx.y * COLUMN_SUM_ROWS;
	u64 r1 = r0 + COLUMN_SUM_ROWS < rows ? r0 + COLUMN_SUM_ROWS : rows;
	float acc = 0.0f;
	if (col < cols)
		for (u64 r = r0 + lane; r < r1; r += 8) acc += load(x, r * cols + col);
	part[lane][threadIdx.x % 32] = acc;
	__syncthreads();
	if (lane == 0 && col < cols) {
		float s = 0.0f;
		for (int l = 0; l < 8; ++l) s += part[l][threadIdx.x];
		atomicAdd(&out[col], s);
	}
}
extern "C" __global__ void column_sum_f32(const float* x, float* out, u64 rows, unsigned int c) {
	column_sum(x, out, rows, c);
}
extern "C" __global__ void column_sum_bf16(const bf16* x, float* out, u64 rows, unsigned int c) {
	column_sum(x, out, rows, c);
}

// ---- Cross-entropy of rows of logits against u32 targets (f32 arithmetic) ----

template <typename T>
__device__ float row_logsumexp(const T* row, unsigned int width) {
	float m = NEG_INF;
	for (unsigned int j = threadIdx.x; j < width; j += blockDim.x) m = fmaxf(m, load(row, j));
	m = block_max(m);
	float s = 0.0f;
	for (unsigned int j = threadIdx.x; j < width; j += blockDim.x) s += __expf(load(row, j) - m);
	return m + __logf(block_sum(s));
}

// loss[r] = logsumexp(row r) − row r[target r]; one block per row.
template <typename T>
__device__ void cross_entropy(const T* logits, const unsigned int* targets, float* loss, unsigned int width) {
	const T* row = logits + (u64)blockIdx.x * width;
	float lse = row_logsumexp(row, width);
	if (threadIdx.x == 0) loss[blockIdx.x] = lse - load(row, targets[blockIdx.x]);
}

// dlogits[r] = (softmax(row r) − onehot(target r)) · g[r].
template <typename T>
__device__ void cross_entropy_grad(const T* logits, const unsigned int* targets, const float* g, T* dx,
		unsigned int width) {
	u64 base = (u64)blockIdx.x * width;
	float lse = row_logsumexp(logits + base, width);
	float gr = g[blockIdx.x];
	unsigned int target = targets[blockIdx.x];
	for (unsigned int j = threadIdx.x; j < width; j += blockDim.x) {
		float p = __expf(load(logits, base + j) - lse);
		store(dx, base + j, (p - (j == target ? 1.0f : 0.0f)) * gr);
	}
}

extern "C" __global__ void cross_entropy_f32(const float* x, const unsigned int* t, float* loss, unsigned int w) {
	cross_entropy(x, t, loss, w);
}
extern "C" __global__ void cross_entropy_bf16(const bf16* x, const unsigned int* t, float* loss, unsigned int w) {
	cross_entropy(x, t, loss, w);
}
extern "C" __global__ void cross_entropy_grad_f32(const float* x, const unsigned int* t, const float* g,
		float* dx, unsigned int w) {
	cross_entropy_grad(x, t, g, dx, w);
}
extern "C" __global__ void cross_entropy_grad_bf16(const bf16* x, const unsigned int* t, const float* g,
		bf16* dx, unsigned int w) {
	cross_entropy_grad(x, t, g, dx, w);
}

// ---- Embedding lookup: rows of an f32 [vocab, width] table ----

extern "C" __global__ void embedding_f32(const float* table, const unsigned int* ids, float* out,
		u64 n, unsigned int width) {
	GRID_STRIDE(i, n) { out[i] = table[(u64)ids[i / width] * width + i % width]; }
}

// Adds each gradient row to its id's row of `dtable` (zeroed first). Atomic: ids repeat.
extern "C" __global__ void embedding_grad_f32(const unsigned int* ids, const float* g, float* dtable,
		u64 n, unsigned int width) {
	GRID_STRIDE(i, n) { atomicAdd(&dtable[(u64)ids[i / width] * width + i % width], g[i]); }
}

// ---- Inner optimizers (trainer/src/optim/cuda.rs) ----

extern "C" __global__ void adamw_f32(float* theta, const float* g, float* m, float* v, u64 n,
		float b1, float b2, float eps, float scale, float decay, float step_size,
		float inv_sqrt_bias2) {
	GRID_STRIDE(i, n) {
		float gj = g[i] * scale;
		float mj = b1 * m[i] + (1.0f - b1) * gj;
		float vj = b2 * v[i] + (1.0f - b2) * gj * gj;
		m[i] = mj;
		v[i] = vj;
		theta[i] = theta[i] * decay - step_size * mj / (sqrtf(vj) * inv_sqrt_bias2 + eps);
	}
}

extern "C" __global__ void sgd_f32(float* theta, const float* g, u64 n, float k) {
	GRID_STRIDE(i, n) { theta[i] -= k * g[i]; }
}

// Adds Σ x² (in f64) to *out.
extern "C" __global__ void sum_squares_f32(const float* x, u64 n, double* out) {
	__shared__ double partial[32];
	double acc = 0.0;
	GRID_STRIDE(i, n) {
		double xi = x[i];
		acc += xi * xi;
	}
	for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	if (lane == 0) partial[warp] = acc;
	__syncthreads();
	if (warp == 0) {
		acc = lane < (int)(blockDim.x / 32) ? partial[lane] : 0.0;
		for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
		if (lane == 0) atomicAdd(out, acc);
	}
}
