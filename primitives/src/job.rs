//! Training jobs and per-round contribution proofs, shared by `pallet-jobs`, `grid-trainer`,
//! the buyer CLI and the tests.
//!
//! Numbers that are fractional in training (learning rates, momentum, loss) travel as fixed
//! point integers: SCALE has no floats, and every node must decode the same value.

use alloc::vec::Vec;
use codec::{Decode, DecodeWithMemTracking, Encode, MaxEncodedLen};
use polkadot_sdk::{
	sp_core::{ConstU32, Get, H256},
	sp_runtime::{traits::UniqueSaturatedInto, BoundedVec},
};
use scale_info::TypeInfo;

use crate::{
	datasets::{DataKind, ImageShape},
	provider::BoundedBytes,
	resnet::ResNetConfig,
	time::MILLI_SECS_PER_BLOCK,
};

/// Identifies a job; assigned by the chain in creation order.
pub type JobId = u64;

/// Most jobs one answer of the jobs pallet's `jobs` view lists: a reader wanting them all reads
/// page after page (a first page alone once hid every job after an attacker's thousand cheap
/// ones from providers).
pub const MAX_JOBS_LISTED: u32 = 1_000;
/// Index of a round (one outer synchronization) within a job, from zero.
pub type RoundIndex = u32;
/// Longest dataset URI, in bytes.
pub type MaxUriLen = ConstU32<256>;
/// Most peers a contribution proof can list as received; also the most participants any job
/// can have, since every participant may receive every other's update.
pub type MaxProofPeers = ConstU32<64>;
/// Largest model a job may ask for, in parameters (10 billion).
pub const MAX_MODEL_PARAMS: u64 = 10_000_000_000;

/// A fraction or small real number in billionths: `Nanos(700_000_000)` is 0.7.
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	PartialOrd,
	Ord,
	Debug,
	Default,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub struct Nanos(pub u32);

impl Nanos {
	/// One whole unit.
	pub const ONE: Nanos = Nanos(1_000_000_000);

	/// The value as a float (for the trainer).
	pub fn to_f64(self) -> f64 {
		f64::from(self.0) / 1e9
	}

	/// The fixed point nearest `x`; `None` for what it cannot hold (negative, not finite, or
	/// above [`Nanos::MAX_F64`]). The one rule by which floats become fixed point: files are
	/// read with it and the web UI is tested against it.
	#[cfg(feature = "std")]
	pub fn from_f64(x: f64) -> Option<Nanos> {
		let n = (x * 1e9).round();
		(x.is_finite() && x >= 0.0 && n <= f64::from(u32::MAX)).then_some(Nanos(n as u32))
	}

	/// The largest value, as a float.
	pub const MAX_F64: f64 = u32::MAX as f64 / 1e9;
}

/// A byte-level GPT (nanoGPT-style): embeddings, `layers` blocks of causal self-attention and
/// MLP with layer norm, `width` split over `heads`.
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub struct GptConfig {
	/// Vocabulary size (256 for bytes; the default in files).
	#[cfg_attr(feature = "serde", serde(default = "crate::spec_file::byte_vocab"))]
	pub vocab: u32,
	/// Context length in tokens; one training sample is one context.
	pub context: u32,
	/// Transformer blocks.
	pub layers: u16,
	/// Attention heads; must divide `width`.
	pub heads: u16,
	/// Embedding width.
	pub width: u32,
}

/// A multi-layer perceptron over 28x28 MNIST images.
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub struct MlpConfig {
	/// Width of each hidden layer.
	pub hidden: u32,
	/// Number of hidden layers (at least one).
	pub layers: u16,
}

/// A small convolutional network over MNIST: two 3x3 conv layers then a dense layer.
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub struct CnnConfig {
	/// Channels of the first conv layer (the second has twice as many).
	pub channels: u16,
	/// Width of the dense layer.
	pub hidden: u32,
}

/// A decoder-only transformer's MLP activation.
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(rename_all = "lowercase"))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum Activation {
	/// GELU (tanh approximation) between an up and a down projection.
	Gelu,
	/// SwiGLU: `down(silu(gate(x)) ⊙ up(x))`, three projections.
	SwiGlu,
}

/// A decoder-only transformer's normalization.
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(rename_all = "lowercase"))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum Norm {
	/// Layer norm with a learned scale and shift.
	LayerNorm,
	/// RMS norm with a learned scale.
	RmsNorm,
}

/// How a decoder-only transformer knows positions.
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(rename_all = "lowercase"))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum Position {
	/// A learned embedding per position, added to the token's.
	Learned,
	/// Rotary embeddings (base 10,000) on queries and keys; no parameters.
	Rope,
}

/// A decoder-only transformer described by the knobs current models use (GPT-2 is
/// `gelu`/`layernorm`/`learned`; Llama is `swiglu`/`rmsnorm`/`rope` with `kv_heads` below
/// `heads`). Linear layers have no biases; pre-norm blocks; a final norm before the head.
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub struct TransformerConfig {
	/// Vocabulary size.
	pub vocab: u32,
	/// Context length in tokens; one training sample is one context.
	pub context: u32,
	/// Transformer blocks.
	pub layers: u16,
	/// Embedding width.
	pub width: u32,
	/// Query heads; must divide `width` (and leave an even head width with RoPE).
	pub heads: u16,
	/// Key/value heads (grouped-query attention); must divide `heads`.
	pub kv_heads: u16,
	/// The MLP's hidden width.
	pub mlp_width: u32,
	/// The MLP's activation.
	pub activation: Activation,
	/// The normalization.
	pub norm: Norm,
	/// The position encoding.
	pub position: Position,
	/// Whether the output head is the token embedding (transposed).
	pub tied_embeddings: bool,
}

impl TransformerConfig {
	/// Width of one head.
	pub fn head_width(&self) -> u32 {
		self.width / u32::from(self.heads.max(1))
	}

	/// Whether the shape is one the trainer builds (sizes aside): nothing zero, heads
	/// dividing the width, key/value heads dividing the heads, an even head width for RoPE.
	fn well_formed(&self) -> bool {
		let heads = u32::from(self.heads);
		self.vocab > 0
			&& self.context > 0
			&& self.layers > 0
			&& self.width > 0
			&& self.heads > 0
			&& self.kv_heads > 0
			&& self.mlp_width > 0
			&& self.width.is_multiple_of(heads)
			&& self.heads.is_multiple_of(self.kv_heads)
			&& (self.position != Position::Rope || self.head_width().is_multiple_of(2))
	}

	/// The exact parameter count (see [`ModelSpec::parameters_exact`] for why u128 is exact).
	fn parameters(&self) -> u128 {
		let (v, t, l, w) = (
			u128::from(self.vocab),
			u128::from(self.context),
			u128::from(self.layers),
			u128::from(self.width),
		);
		let kv = u128::from(self.kv_heads) * u128::from(self.head_width());
		let m = u128::from(self.mlp_width);
		let norm = match self.norm {
			Norm::LayerNorm => 2 * w,
			Norm::RmsNorm => w,
		};
		let mlp = match self.activation {
			Activation::Gelu => 2 * w * m,
			Activation::SwiGlu => 3 * w * m,
		};
		// Per block: q and o (w × w each), k and v (w × kv each), the MLP, two norms.
		let block = 2 * w * w + 2 * w * kv + mlp + 2 * norm;
		let positions = match self.position {
			Position::Learned => t * w,
			Position::Rope => 0,
		};
		let head = if self.tied_embeddings { 0 } else { w * v };
		v * w + positions + l * block + norm + head
	}
}

/// The model to train: the architecture (the variant) with its configuration. In files:
/// `{ kind = "mlp" | "cnn" | "gpt" | "transformer" | "resnet", <the configuration's fields> }`.
/// A new family is a trainer model plus a variant appended here (never reordered: the index
/// is in every job's bytes), with its counts and bounds (`docs/architecture.md`).
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(tag = "kind"))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum ModelSpec {
	/// Byte-level GPT on a text corpus.
	#[cfg_attr(feature = "serde", serde(rename = "gpt"))]
	Gpt(GptConfig),
	/// MLP on MNIST.
	#[cfg_attr(feature = "serde", serde(rename = "mlp"))]
	MnistMlp(MlpConfig),
	/// CNN on MNIST.
	#[cfg_attr(feature = "serde", serde(rename = "cnn"))]
	MnistCnn(CnnConfig),
	/// A decoder-only transformer on a token stream.
	#[cfg_attr(feature = "serde", serde(rename = "transformer"))]
	Transformer(TransformerConfig),
	/// A residual convolutional network on images (MNIST's, CIFAR-10's).
	#[cfg_attr(feature = "serde", serde(rename = "resnet"))]
	ResNet(ResNetConfig),
}

const MNIST_PIXELS: u128 = 28 * 28;
const MNIST_CLASSES: u128 = 10;

/// The largest value of each model dimension a job may ask for. Far above anything the
/// parameter limit lets through in practice; they bound what a spec can make anyone compute.
pub mod model_bounds {
	/// A GPT's vocabulary.
	pub const GPT_VOCAB: u32 = 1 << 20;
	/// A GPT's context, in tokens.
	pub const GPT_CONTEXT: u32 = 1 << 20;
	/// A GPT's embedding width.
	pub const GPT_WIDTH: u32 = 1 << 16;
	/// Layers (GPT blocks, MLP hidden layers).
	pub const LAYERS: u16 = 1 << 10;
	/// An MLP's or CNN's hidden width, and a transformer's MLP width.
	pub const HIDDEN: u32 = 1 << 20;
	/// A CNN's first convolution's channels.
	pub const CNN_CHANNELS: u16 = 1 << 12;
}

impl ModelSpec {
	/// What the model reads: the data it can train on.
	pub fn reads(&self) -> DataKind {
		match *self {
			ModelSpec::Gpt(c) => DataKind::Tokens { vocab: c.vocab },
			ModelSpec::Transformer(c) => DataKind::Tokens { vocab: c.vocab },
			ModelSpec::MnistMlp(_) | ModelSpec::MnistCnn(_) => DataKind::MNIST,
			ModelSpec::ResNet(c) => DataKind::Images(ImageShape {
				channels: c.channels,
				side: c.side,
				classes: c.classes,
			}),
		}
	}

	/// The context length of a model that reads token streams (a sample is one context).
	pub fn context(&self) -> Option<u32> {
		match *self {
			ModelSpec::Gpt(c) => Some(c.context),
			ModelSpec::Transformer(c) => Some(c.context),
			ModelSpec::MnistMlp(_) | ModelSpec::MnistCnn(_) | ModelSpec::ResNet(_) => None,
		}
	}

	/// Number of trainable parameters (weights and biases), as the trainer builds the model;
	/// `None` when it does not fit in a `u64`.
	pub fn parameters(&self) -> Option<u64> {
		u64::try_from(self.parameters_exact()).ok()
	}

	/// Floating point operations to train on one sample (forward and backward, the usual
	/// 6 × parameters × tokens estimate; a CNN's convolutions reuse weights per pixel);
	/// `None` when it does not fit in a `u64`.
	pub fn flops_per_sample(&self) -> Option<u64> {
		let per_sample = match *self {
			ModelSpec::Gpt(c) => 6 * self.parameters_exact() * u128::from(c.context),
			ModelSpec::Transformer(c) => 6 * self.parameters_exact() * u128::from(c.context),
			ModelSpec::MnistMlp(_) => 6 * self.parameters_exact(),
			ModelSpec::MnistCnn(c) => {
				let c1 = u128::from(c.channels);
				let convs = 28 * 28 * 9 * c1 + 14 * 14 * 9 * c1 * 2 * c1;
				6 * (self.parameters_exact() + convs)
			}
			ModelSpec::ResNet(c) => c.flops_per_sample()?,
		};
		u64::try_from(per_sample).ok()
	}

	/// The parameter count in `u128`, where it is exact for any dimensions: each term is a
	/// product of at most one 16-bit and two 32-bit values and a small constant (under 2^90),
	/// and the flop estimate multiplies that by at most 6 × 2^32 (under 2^125).
	fn parameters_exact(&self) -> u128 {
		match *self {
			ModelSpec::Gpt(c) => {
				let (v, t, l, w) = (
					u128::from(c.vocab),
					u128::from(c.context),
					u128::from(c.layers),
					u128::from(c.width),
				);
				// Per block: attention qkv + proj (4w² + 4w), MLP 4x (8w² + 5w), two layer norms
				// (4w). Plus token and position embeddings, final norm and the output head.
				let block = 12 * w * w + 13 * w;
				v * w + t * w + l * block + 2 * w + w * v
			}
			ModelSpec::Transformer(c) => c.parameters(),
			ModelSpec::MnistMlp(c) => {
				let (h, l) = (u128::from(c.hidden), u128::from(c.layers));
				(MNIST_PIXELS * h + h)
					+ l.saturating_sub(1) * (h * h + h)
					+ (h * MNIST_CLASSES + MNIST_CLASSES)
			}
			ModelSpec::MnistCnn(c) => {
				let (c1, h) = (u128::from(c.channels), u128::from(c.hidden));
				let c2 = 2 * c1;
				// conv1 1->c1, conv2 c1->c2 (3x3, with bias), 2x2 pooling twice leaves 7x7.
				let conv = (9 * c1 + c1) + (9 * c1 * c2 + c2);
				conv + (49 * c2 * h + h) + (h * MNIST_CLASSES + MNIST_CLASSES)
			}
			// Past its bounds a ResNet is not counted: as many as can be.
			ModelSpec::ResNet(c) => c.parameters().unwrap_or(u128::MAX),
		}
	}

	/// Checks the dimensions (none zero, none above [`model_bounds`], a GPT's heads dividing
	/// its width, a transformer's shape [`TransformerConfig::well_formed`]) and the size (at most [`MAX_MODEL_PARAMS`]).
	pub fn validate(&self) -> Result<(), SpecError> {
		use model_bounds::*;
		let (ok, within_bounds) = match *self {
			ModelSpec::Gpt(c) => (
				c.vocab > 0
					&& c.context > 0
					&& c.layers > 0 && c.heads > 0
					&& c.width > 0 && c.width % u32::from(c.heads) == 0,
				c.vocab <= GPT_VOCAB
					&& c.context <= GPT_CONTEXT
					&& c.layers <= LAYERS
					&& c.width <= GPT_WIDTH,
			),
			ModelSpec::MnistMlp(c) => {
				(c.hidden > 0 && c.layers > 0, c.hidden <= HIDDEN && c.layers <= LAYERS)
			}
			ModelSpec::MnistCnn(c) => {
				(c.channels > 0 && c.hidden > 0, c.channels <= CNN_CHANNELS && c.hidden <= HIDDEN)
			}
			ModelSpec::ResNet(c) => (
				c.channels > 0
					&& c.side > 0 && c.classes > 1
					&& c.width > 0 && c.stages > 0
					&& c.blocks > 0,
				c.well_formed(),
			),
			ModelSpec::Transformer(c) => (
				c.well_formed(),
				c.vocab <= GPT_VOCAB
					&& c.context <= GPT_CONTEXT
					&& c.layers <= LAYERS
					&& c.width <= GPT_WIDTH
					&& c.mlp_width <= HIDDEN,
			),
		};
		if !ok {
			return Err(SpecError::BadModel);
		}
		let small_enough = self.parameters().is_some_and(|p| p <= MAX_MODEL_PARAMS)
			&& self.flops_per_sample().is_some();
		if !within_bounds || !small_enough {
			return Err(SpecError::ModelTooLarge);
		}
		Ok(())
	}
}

/// Most samples a provider with `tflops_milli` thousandths of a TFLOP/s can train in
/// `millis` milliseconds on `model`: the cap on what it can be paid for in a round.
pub fn max_samples(model: &ModelSpec, tflops_milli: u32, millis: u64) -> u64 {
	// TFLOP/s × 1e12 × ms / 1e3 = tflops_milli × 1e6 × ms flops.
	let flops = u128::from(tflops_milli) * 1_000_000 * u128::from(millis);
	// A model too large to count is one nobody can train.
	let Some(per_sample) = model.flops_per_sample() else { return 0 };
	u64::try_from(flops / u128::from(per_sample.max(1))).unwrap_or(u64::MAX)
}

/// Most samples a provider can be paid for in one round: the whole batches of `batch_size`
/// that [`max_samples`] allows in the round's `millis`, with its hardware shared evenly among
/// the `jobs` it takes part in (one declared GPU does not train several jobs at full speed).
pub fn max_claim(
	model: &ModelSpec,
	batch_size: u32,
	tflops_milli: u32,
	millis: u64,
	jobs: u32,
) -> u64 {
	let batch = u64::from(batch_size.max(1));
	max_samples(model, tflops_milli, millis / u64::from(jobs.max(1))) / batch * batch
}

/// The training data: a file identified by its content hash and where to get it.
#[derive(
	Clone, PartialEq, Eq, Debug, Encode, Decode, DecodeWithMemTracking, MaxEncodedLen, TypeInfo,
)]
pub struct DatasetRef {
	/// BLAKE2b-256 of the file's bytes; trainers refuse data that does not match.
	pub content_hash: H256,
	/// Where to fetch it (`file://`, `http(s)://`, `ipfs://`, or a name of a shipped dataset
	/// such as `grid:shakespeare`).
	pub uri: BoundedBytes<MaxUriLen>,
}

impl DatasetRef {
	/// A URI that is non-empty text and a nonzero hash (what the chain can check).
	pub fn well_formed(&self) -> bool {
		let uri_ok = core::str::from_utf8(&self.uri).is_ok_and(|u| !u.trim().is_empty());
		uri_ok && !self.content_hash.is_zero()
	}
}

/// The optimizer each participant runs locally between synchronizations. In files:
/// `{ optimizer = "adamw" | "sgd", lr = 0.001, … }`.
#[cfg_attr(
	feature = "serde",
	derive(serde::Deserialize),
	serde(tag = "optimizer", rename_all = "lowercase", deny_unknown_fields)
)]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum InnerOptimizer {
	/// AdamW with warm-up and cosine decay.
	AdamW {
		/// Peak learning rate.
		lr: Nanos,
		/// Decoupled weight decay (none by default).
		#[cfg_attr(feature = "serde", serde(default))]
		weight_decay: Nanos,
		/// Linear warm-up steps (none by default).
		#[cfg_attr(feature = "serde", serde(default))]
		warmup_steps: u32,
	},
	/// Plain SGD.
	Sgd {
		/// Learning rate.
		lr: Nanos,
	},
}

impl InnerOptimizer {
	/// The (peak) learning rate.
	pub fn lr(&self) -> Nanos {
		match *self {
			InnerOptimizer::AdamW { lr, .. } | InnerOptimizer::Sgd { lr } => lr,
		}
	}
}

/// How participants compress pseudo-gradients before exchanging them. In files:
/// `{ scheme = "none" | "int8" | "topk", … }`.
#[cfg_attr(
	feature = "serde",
	derive(serde::Deserialize),
	serde(tag = "scheme", rename_all = "lowercase", deny_unknown_fields)
)]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum Compression {
	/// f32 values, no compression (the baseline).
	None,
	/// 8-bit quantization with one scale per `chunk` values.
	Int8 {
		/// Values per chunk.
		chunk: u32,
	},
	/// Keep the `k` largest of every `chunk` values, quantized to `value_bits` bits, with
	/// error feedback.
	TopK {
		/// Values per chunk.
		chunk: u32,
		/// Values kept per chunk.
		k: u32,
		/// Bits per kept value (1 to 8).
		value_bits: u8,
	},
	/// SparseLoCo's codec: every matrix cut into [`TILE`] × [`TILE`] tiles, each keeping its
	/// `k` largest values (k of 4,096), sent as entropy-coded positions and 2-bit codes
	/// against four centroids per tensor, with error feedback; vectors and tensors smaller
	/// than one tile are sent densely at 8 bits.
	Tiles {
		/// Values kept per full tile (1 to [`TILE`]²).
		k: u32,
	},
}

/// Side of the square tiles [`Compression::Tiles`] cuts matrices into (SparseLoCo's 64).
pub const TILE: u32 = 64;

/// The outer step a job gets when its file names none: `(lr, momentum)`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OuterStep {
	/// Outer learning rate.
	pub lr: Nanos,
	/// Outer (Nesterov) momentum.
	pub momentum: Nanos,
}

impl Compression {
	/// The outer step `bench/algorithms.sh` measured best with this compression, which a job
	/// file that names none gets: a sparse code (top-k, tiles) sends a few large values a
	/// round with error feedback, and took outer lr 3 without momentum to come within 1% of
	/// DDP at 1,310x fewer bytes (`bench/reports/algorithms_long_outer.md`); dense updates
	/// keep DiLoCo's 0.7 with momentum 0.9.
	pub fn default_outer_step(&self) -> OuterStep {
		match self {
			Compression::TopK { .. } | Compression::Tiles { .. } => {
				OuterStep { lr: Nanos(3_000_000_000), momentum: Nanos(0) }
			}
			Compression::None | Compression::Int8 { .. } => {
				OuterStep { lr: Nanos(700_000_000), momentum: Nanos(900_000_000) }
			}
		}
	}

	fn validate(&self) -> Result<(), SpecError> {
		let ok = match *self {
			Compression::None => true,
			Compression::Int8 { chunk } => chunk > 0,
			Compression::TopK { chunk, k, value_bits } => {
				k > 0 && k <= chunk && (1..=8).contains(&value_bits)
			}
			Compression::Tiles { k } => k > 0 && k <= TILE * TILE,
		};
		ok.then_some(()).ok_or(SpecError::BadCompression)
	}
}

/// What every trainer sends in a job's dense rounds ([`TrainingParams::dense_rounds`]): int8
/// in chunks of 64, about 3.8x smaller than f32 and close to it in what it delivers.
pub const DENSE_ROUND_COMPRESSION: Compression = Compression::Int8 { chunk: 64 };

impl<BlockNumber> TrainingParams<BlockNumber> {
	/// Whether `round` is one of the job's dense rounds.
	pub fn is_dense_round(&self, round: RoundIndex) -> bool {
		round < self.dense_rounds
	}

	/// Whether the dense rounds fit a job of `job_rounds` rounds (the spec's
	/// [`SpecError::DenseRoundsOverRounds`]; the daemon's config check asks the same).
	pub fn dense_rounds_fit(&self, job_rounds: RoundIndex) -> bool {
		self.dense_rounds <= job_rounds
	}

	/// Whether the outer anneal, if any, fits a job of `job_rounds` rounds: it spans 1 to
	/// `job_rounds` rounds and ends above 0, at most `outer_lr` (the spec's
	/// [`SpecError::BadOuterAnneal`]; the daemon's config check asks the same).
	pub fn outer_anneal_fits(&self, job_rounds: RoundIndex) -> bool {
		self.outer_anneal.is_none_or(|a| a.fits(self.outer_lr, job_rounds))
	}

	/// The outer learning rate of `round` in a job of `job_rounds` rounds: `outer_lr`, or in
	/// the anneal's rounds ([`TrainingParams::outer_anneal`]) a straight line from it down
	/// to `to_lr` at the job's last round (the anneal's first round one step below
	/// `outer_lr`). Whole billionths, so every trainer computes the same rate.
	pub fn outer_lr_in(&self, round: RoundIndex, job_rounds: RoundIndex) -> Nanos {
		match self.outer_anneal {
			Some(anneal) => anneal.lr_in(self.outer_lr, round, job_rounds),
			None => self.outer_lr,
		}
	}

	/// The compression trainers use in `round`: the job's, or in a dense round
	/// [`DENSE_ROUND_COMPRESSION`].
	pub fn compression_in(&self, round: RoundIndex) -> Compression {
		if self.is_dense_round(round) {
			DENSE_ROUND_COMPRESSION
		} else {
			self.compression
		}
	}
}

/// Error feedback's decay when a job file names none: top-k's best in `bench/algorithms.sh`
/// (with the outer step the sparse methods use there).
pub const DEFAULT_ERROR_DECAY: Nanos = Nanos(900_000_000);

/// Hyper-parameters of the DiLoCo-style training. Read from files through
/// `spec_file::TrainingFile`, whose outer step defaults by the compression.
#[cfg_attr(
	feature = "serde",
	derive(serde::Deserialize),
	serde(
		from = "crate::spec_file::TrainingFile<BlockNumber>",
		bound(deserialize = "BlockNumber: serde::Deserialize<'de> + Default")
	)
)]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub struct TrainingParams<BlockNumber> {
	/// Length of a round in blocks: the deadline for its proofs. A trainer running off chain
	/// times rounds by its own schedule and leaves it out (zero).
	pub round_blocks: BlockNumber,
	/// Samples per inner step.
	pub batch_size: u32,
	/// The local optimizer.
	pub inner: InnerOptimizer,
	/// Outer (Nesterov) learning rate applied to the averaged pseudo-gradient (by default
	/// the compression's [`Compression::default_outer_step`]: 0.7, DiLoCo's, for dense
	/// updates; 3 for sparse ones).
	pub outer_lr: Nanos,
	/// Outer momentum, below one (by default the compression's: 0.9 dense, 0 sparse).
	pub outer_momentum: Nanos,
	/// Error feedback's decay, at most one (0.9 by default): each round a trainer adds this
	/// share of what its earlier updates left out to its new Δ before compressing (1: plain
	/// error feedback; below 1 the backlog fades instead of arriving many rounds late, as in
	/// SparseLoCo). Replays apply it too, so it is the job's, not each trainer's.
	pub error_decay: Nanos,
	/// Rounds at the job's start that exchange dense updates (0, the default: none): in
	/// rounds below this, every trainer sends [`DENSE_ROUND_COMPRESSION`] whatever the job's
	/// compression, and the outer step moves the model to the mean of the trainers' models
	/// (learning rate 1, momentum left alone). Early pseudo-gradients are large and point
	/// the same way; a sparse code delivers a small share of them, so without dense rounds
	/// the model lags its trainers' own models for many rounds (`bench/README.md`, *The
	/// whole system against DDP*). Part of the job because replays and the outer step
	/// follow it.
	pub dense_rounds: u32,
	/// The outer learning rate's anneal at the job's end (none by default): over its last
	/// rounds the outer step's rate falls linearly from `outer_lr` to a lower one, as the
	/// inner rate's cosine decay does within rounds. A sparse code's outer rate of 3 keeps
	/// amplifying the compression's noise after the inner rate has decayed; annealing it
	/// lowered the speed job's final loss on every seed measured (`bench/README.md`, *The
	/// whole system against DDP*). Part of the job because every trainer's outer step
	/// follows it.
	pub outer_anneal: Option<OuterAnneal>,
	/// Overlapped rounds (0, the default: none): each round's first `overlap_steps` inner
	/// steps train from the round before's base while that round's updates are exchanged,
	/// then catch up with the round's own base and go on from there. The chain deals each
	/// round's data seed a round ahead for it (`RoundState::next_seed` in `pallet-jobs`);
	/// verifiers replay a round either way. Part of the job because replays redo it.
	pub overlap_steps: u32,
	/// Most inner steps a round may claim (none by default: as many as fit the round). One
	/// bound for everyone in the job: trainers refuse a commitment that claims more, and
	/// verifiers judge such a claim invalid without redoing any of it, so a liar cannot buy
	/// unbounded replay time; the chain pays at most this many batches a round. A provider
	/// may train fewer (its own `max_steps`), never judge others by that. It also sets the
	/// inner learning rate's cosine decay: over `rounds × max_steps` steps, the whole job (over
	/// 10,000 steps without it, a round's steps being unknown in advance).
	pub max_steps: Option<u32>,
	/// How long each round's exchange takes (commitments taken for 1.5 s past the commit
	/// deadline, updates waited for at most 4 s, unless given).
	pub exchange: ExchangeWindow,
	/// Pseudo-gradient compression.
	pub compression: Compression,
}

/// How a job's outer learning rate falls over its last rounds
/// ([`TrainingParams::outer_anneal`]).
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub struct OuterAnneal {
	/// The job's last rounds it spans (at least one, at most the job's rounds).
	pub rounds: u32,
	/// The outer learning rate of the job's last round (above zero, at most `outer_lr`).
	pub to_lr: Nanos,
}

impl OuterAnneal {
	/// Whether it fits a job of `job_rounds` rounds whose outer rate is `from`: it spans 1
	/// to `job_rounds` rounds and ends above 0, at most `from`.
	pub fn fits(&self, from: Nanos, job_rounds: RoundIndex) -> bool {
		(1..=job_rounds).contains(&self.rounds) && self.to_lr.0 > 0 && self.to_lr <= from
	}

	/// The outer learning rate of `round` in a job of `job_rounds` rounds whose rate is
	/// `from` ([`TrainingParams::outer_lr_in`]; `bench_algo` steps by it too): `from` before
	/// the anneal's rounds, then a straight line down to `to_lr` at the job's last round.
	pub fn lr_in(&self, from: Nanos, round: RoundIndex, job_rounds: RoundIndex) -> Nanos {
		let first = job_rounds.saturating_sub(self.rounds);
		if self.rounds == 0 || round < first {
			return from;
		}
		let done = u64::from((round - first + 1).min(self.rounds));
		let (from, to) = (u64::from(from.0), u64::from(self.to_lr.0));
		let fall = from.saturating_sub(to) * done / u64::from(self.rounds);
		Nanos((from - fall) as u32)
	}
}

/// The exchange at the end of each round, one for the whole job: every trainer commits at
/// the same time before the proof deadline and collects for as long, so a trainer that
/// committed later than the others' collection (it would be left out of their set) cannot
/// come from a provider's own setting. A job of many members on slow links gives its
/// exchange more time; that time comes out of the round's training.
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub struct ExchangeWindow {
	/// Commitments are taken this long past the commit deadline (ms).
	pub grace_ms: u32,
	/// The longest wait for the set's updates after that (ms).
	pub fetch_ms: u32,
	/// At most this many members' updates are aggregated (and paid) a round (bounded
	/// fan-in), drawn afresh each round from the round's seed, so each trainer fetches about
	/// that many updates instead of every member's; none: every member's. At least
	/// [`MIN_FAN_IN`], the fewest a trimmed mean can drop an outlier from.
	#[cfg_attr(feature = "serde", serde(default))]
	pub fan_in: Option<u16>,
}

/// The smallest bounded fan-in a job may ask for ([`ExchangeWindow::fan_in`]).
pub const MIN_FAN_IN: u16 = 3;

impl ExchangeWindow {
	/// Time kept free between a round's commit deadline and its proof deadline (ms): the
	/// commitments' grace, one more for the availability attestations (the agreed set), and
	/// half the fetch wait. Without the attestations' share, 32 providers on one 2-core
	/// machine decided each round about 3 s past the commit deadline and every proof missed
	/// its round's last block (`bench/scale.sh`).
	pub fn allowance_ms(&self) -> u64 {
		2 * u64::from(self.grace_ms) + u64::from(self.fetch_ms) / 2
	}

	/// Whether the allowance leaves at least half of a round of `round_blocks` blocks to
	/// training (the chain refuses a job otherwise: `SpecError::ExchangeOverHalfTheRound`).
	pub fn fits(&self, round_blocks: u64) -> bool {
		2 * self.allowance_ms() <= round_blocks.saturating_mul(MILLI_SECS_PER_BLOCK)
	}
}

impl Default for ExchangeWindow {
	fn default() -> Self {
		ExchangeWindow { grace_ms: 1_500, fetch_ms: 4_000, fan_in: None }
	}
}

/// Everything a buyer specifies when posting a job. In a job file (TOML) amounts are in GRID
/// and the dataset is a shipped one's name or `{ uri, content_hash }`.
#[cfg_attr(
	feature = "serde",
	derive(serde::Deserialize),
	serde(
		deny_unknown_fields,
		bound(
			deserialize = "Balance: TryFrom<u128>, BlockNumber: serde::Deserialize<'de> + Default"
		)
	)
)]
#[derive(
	Clone, PartialEq, Eq, Debug, Encode, Decode, DecodeWithMemTracking, MaxEncodedLen, TypeInfo,
)]
pub struct JobSpec<Balance, BlockNumber> {
	/// Architecture and its configuration.
	pub model: ModelSpec,
	/// Training data.
	pub dataset: DatasetRef,
	/// Hyper-parameters.
	pub training: TrainingParams<BlockNumber>,
	/// Rounds to train for.
	pub rounds: RoundIndex,
	/// Paid out per round to the participants that delivered it.
	#[cfg_attr(feature = "serde", serde(deserialize_with = "crate::spec_file::grid"))]
	pub reward_per_round: Balance,
	/// Participants needed before the job starts.
	pub min_providers: u32,
	/// Most participants at once.
	pub max_providers: u32,
	/// Active stake a provider needs to join (the registry's minimum applies too).
	#[cfg_attr(feature = "serde", serde(deserialize_with = "crate::spec_file::grid"))]
	pub min_provider_stake: Balance,
	/// Blocks after a round during which its contributions may be challenged (none by
	/// default).
	#[cfg_attr(feature = "serde", serde(default))]
	pub challenge_window: BlockNumber,
	/// Weights every participant starts from instead of the seeded initialisation
	/// (fine-tuning): a `weights` dataset, one `safetensors` file the buyer publishes like
	/// data, fetched and checked against its hash by every participant. In files:
	/// `initial_weights = { uri = "…", content_hash = "0x…" }`.
	#[cfg_attr(feature = "serde", serde(default))]
	pub initial_weights: Option<DatasetRef>,
}

/// Most accounts a job's allowlist names (as many as a job can have participants).
pub type MaxAllowlist = MaxProofPeers;

/// Who may join a job, besides holding its `min_provider_stake`: the buyer's admission rules.
/// The default admits every eligible provider.
#[derive(
	Clone, PartialEq, Eq, Debug, Encode, Decode, DecodeWithMemTracking, MaxEncodedLen, TypeInfo,
)]
pub struct Admission<AccountId, BlockNumber> {
	/// Lowest health score (delivered rounds, probes, challenges lost) a joiner may have.
	pub min_health: polkadot_sdk::sp_runtime::Perbill,
	/// Blocks a joiner must have been registered: fresh Sybil accounts wait this long.
	pub min_age: BlockNumber,
	/// Only these accounts may join; empty: any.
	pub allowlist: BoundedVec<AccountId, MaxAllowlist>,
}

// By hand: a derive would ask accounts to have a default too.
impl<AccountId, BlockNumber: Default> Default for Admission<AccountId, BlockNumber> {
	fn default() -> Self {
		Admission {
			min_health: Default::default(),
			min_age: Default::default(),
			allowlist: Default::default(),
		}
	}
}

/// Why [`Admission::admits`] turns a provider away.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Refusal {
	/// Not on the allowlist.
	NotListed,
	/// Health score below the minimum.
	Unhealthy,
	/// Registered too recently.
	TooNew,
}

impl<
		AccountId: PartialEq,
		BlockNumber: PartialOrd + Copy + polkadot_sdk::sp_runtime::Saturating,
	> Admission<AccountId, BlockNumber>
{
	/// Whether `who`, with health `health`, registered at `registered_at`, may join at `now`.
	pub fn admits(
		&self,
		who: &AccountId,
		health: polkadot_sdk::sp_runtime::Perbill,
		registered_at: BlockNumber,
		now: BlockNumber,
	) -> Result<(), Refusal> {
		if !self.allowlist.is_empty() && !self.allowlist.contains(who) {
			return Err(Refusal::NotListed);
		}
		if health < self.min_health {
			return Err(Refusal::Unhealthy);
		}
		if registered_at.saturating_add(self.min_age) > now {
			return Err(Refusal::TooNew);
		}
		Ok(())
	}
}

/// The chain's limits a job spec is checked against.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SpecLimits<BlockNumber> {
	/// Most rounds per job.
	pub max_rounds: RoundIndex,
	/// Most participants per job (at most [`MaxProofPeers`]).
	pub max_participants: u32,
	/// Shortest round, in blocks.
	pub min_round_blocks: BlockNumber,
	/// Longest round, in blocks.
	pub max_round_blocks: BlockNumber,
	/// Longest challenge window, in blocks.
	pub max_challenge_window: BlockNumber,
	/// Longest job (rounds × round blocks), in blocks.
	pub max_job_blocks: BlockNumber,
	/// Fewest `min_providers` of a job with a challenge window: enough that a challenged
	/// update leaves a committee besides its sender and its challenger.
	pub min_verifiable_providers: u32,
	/// The random audits a job with a challenge window is subject to: its stake must make
	/// cheating a losing bet ([`Deterrence::stake_for`]).
	pub deterrence: Deterrence,
}

/// The chain's random audits and what proven fraud costs: a paid contribution is audited with
/// probability `audit_rate`, and fraud proven loses `fraud_slash` of the provider's stake
/// (besides the reward, clawed back).
///
/// A provider that cheats every round gains its reward R in each round not audited and loses
/// the slash S once caught: cheating pays nothing in expectation when S >= R (1 - q) / q
/// (an expected (1 - q) / q rounds go by unaudited before the first audit). The job's
/// `min_provider_stake` is what the slash applies to at least, so a job open to challenges
/// must ask for `stake_for(reward_per_round)` or more; the whole round's reward bounds what
/// one member can be paid in it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Deterrence {
	/// Probability that a paid contribution is audited (zero: no audits, no stake rule).
	pub audit_rate: polkadot_sdk::sp_runtime::Perbill,
	/// Share of the stake proven fraud loses.
	pub fraud_slash: polkadot_sdk::sp_runtime::Perbill,
}

impl Deterrence {
	/// The least stake whose `fraud_slash` is at least `reward × (1 - q) / q`, rounded up;
	/// `None` when there are no audits. Saturates (a reward so large no stake deters it asks
	/// for `u128::MAX`).
	pub fn stake_for(&self, reward: u128) -> Option<u128> {
		const BILLION: u128 = 1_000_000_000;
		let q = u128::from(self.audit_rate.deconstruct());
		if q == 0 {
			return None;
		}
		let slash = u128::from(self.fraud_slash.deconstruct());
		if slash == 0 {
			return Some(u128::MAX);
		}
		// stake × slash / 1e9 >= reward × (1e9 - q) / q, so
		// stake >= reward × (1e9 - q) × 1e9 / (q × slash).
		let numerator = reward.saturating_mul(BILLION - q).saturating_mul(BILLION);
		if numerator == u128::MAX {
			return Some(u128::MAX);
		}
		Some(numerator.div_ceil(q * slash))
	}
}

/// What is wrong with a job spec; one variant per field or rule.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SpecError {
	/// A model dimension is zero, or the GPT's heads do not divide its width.
	BadModel,
	/// A model dimension is above its [`model_bounds`], or the model has more than
	/// [`MAX_MODEL_PARAMS`] parameters.
	ModelTooLarge,
	/// The dataset's URI is empty or not text, or its content hash is zero.
	BadDataset,
	/// The batch size is zero.
	BadBatchSize,
	/// The inner learning rate is zero or above one.
	BadInnerLearningRate,
	/// The outer learning rate is zero or above four.
	BadOuterLearningRate,
	/// The outer momentum is one or more.
	BadOuterMomentum,
	/// A compression parameter is out of range.
	BadCompression,
	/// The error-feedback decay is above one.
	BadErrorDecay,
	/// Zero rounds.
	ZeroRounds,
	/// More rounds than the chain allows.
	TooManyRounds,
	/// The reward per round is zero.
	ZeroReward,
	/// `min_providers` is zero or above `max_providers`.
	BadProviderRange,
	/// `max_providers` is above the chain's limit.
	TooManyProviders,
	/// The round is shorter than the chain allows.
	RoundTooShort,
	/// The round is longer than the chain allows.
	RoundTooLong,
	/// The challenge window is longer than the chain allows.
	ChallengeWindowTooLong,
	/// Rounds × round blocks is longer than the chain allows a job to run.
	JobTooLong,
	/// The job has a challenge window but too few `min_providers` to field a committee.
	TooFewToVerify,
	/// The job has a challenge window but its `min_provider_stake` is below what makes
	/// cheating a losing bet against the chain's audits ([`Deterrence::stake_for`]).
	StakeTooLowToDeter,
	/// The initial weights' URI is empty or not text, or their content hash is zero.
	BadInitialWeights,
	/// The cap on inner steps per round is zero.
	ZeroStepCap,
	/// The overlapped steps are not below the cap on inner steps per round (a round would
	/// never train from its own base).
	OverlapOverStepCap,
	/// More dense rounds than the job has rounds.
	DenseRoundsOverRounds,
	/// The outer learning rate's anneal spans no round or more than the job has, or ends
	/// at zero or above the job's outer learning rate.
	BadOuterAnneal,
	/// The exchange's grace or fetch wait is zero, or its fan-in is under [`MIN_FAN_IN`].
	BadExchange,
	/// The exchange's allowance ([`ExchangeWindow::allowance_ms`]) is more than half the
	/// round: most of the round would go to waiting, not training.
	ExchangeOverHalfTheRound,
}

impl<
		Balance: Default + PartialEq + Copy + UniqueSaturatedInto<u128>,
		BlockNumber: PartialOrd + Copy + UniqueSaturatedInto<u64>,
	> JobSpec<Balance, BlockNumber>
{
	/// Checks every field; the first problem found is returned.
	pub fn validate(&self, limits: &SpecLimits<BlockNumber>) -> Result<(), SpecError> {
		self.model.validate()?;
		if !self.dataset.well_formed() {
			return Err(SpecError::BadDataset);
		}
		if self.initial_weights.as_ref().is_some_and(|w| !w.well_formed()) {
			return Err(SpecError::BadInitialWeights);
		}
		let t = &self.training;
		let checks = [
			(t.batch_size == 0, SpecError::BadBatchSize),
			(t.inner.lr().0 == 0 || t.inner.lr() > Nanos::ONE, SpecError::BadInnerLearningRate),
			(t.outer_lr.0 == 0 || t.outer_lr.0 > 4 * Nanos::ONE.0, SpecError::BadOuterLearningRate),
			(t.outer_momentum >= Nanos::ONE, SpecError::BadOuterMomentum),
			(t.error_decay > Nanos::ONE, SpecError::BadErrorDecay),
			(t.max_steps == Some(0), SpecError::ZeroStepCap),
			(
				t.overlap_steps > 0 && t.max_steps.is_some_and(|cap| t.overlap_steps >= cap),
				SpecError::OverlapOverStepCap,
			),
			(
				t.exchange.grace_ms == 0
					|| t.exchange.fetch_ms == 0
					|| t.exchange.fan_in.is_some_and(|g| g < MIN_FAN_IN),
				SpecError::BadExchange,
			),
		];
		if let Some((_, error)) = checks.into_iter().find(|(bad, _)| *bad) {
			return Err(error);
		}
		t.compression.validate()?;
		let verifiable = self.challenge_window.unique_saturated_into() > 0u64;
		let checks = [
			(self.rounds == 0, SpecError::ZeroRounds),
			(self.rounds > limits.max_rounds, SpecError::TooManyRounds),
			(!t.dense_rounds_fit(self.rounds), SpecError::DenseRoundsOverRounds),
			(!t.outer_anneal_fits(self.rounds), SpecError::BadOuterAnneal),
			(self.reward_per_round == Balance::default(), SpecError::ZeroReward),
			(
				self.min_providers == 0 || self.min_providers > self.max_providers,
				SpecError::BadProviderRange,
			),
			(
				self.max_providers
					> limits.max_participants.min(<MaxProofPeers as Get<u32>>::get()),
				SpecError::TooManyProviders,
			),
			(t.round_blocks < limits.min_round_blocks, SpecError::RoundTooShort),
			(t.round_blocks > limits.max_round_blocks, SpecError::RoundTooLong),
			(
				!t.exchange.fits(t.round_blocks.unique_saturated_into()),
				SpecError::ExchangeOverHalfTheRound,
			),
			(
				self.challenge_window > limits.max_challenge_window,
				SpecError::ChallengeWindowTooLong,
			),
			(
				u64::from(self.rounds).saturating_mul(t.round_blocks.unique_saturated_into())
					> limits.max_job_blocks.unique_saturated_into(),
				SpecError::JobTooLong,
			),
			(
				verifiable && self.min_providers < limits.min_verifiable_providers,
				SpecError::TooFewToVerify,
			),
			(verifiable && !self.deters(&limits.deterrence), SpecError::StakeTooLowToDeter),
		];
		match checks.into_iter().find(|(bad, _)| *bad) {
			Some((_, error)) => Err(error),
			None => Ok(()),
		}
	}

	/// Whether `min_provider_stake` makes cheating a losing bet under `deterrence`.
	pub fn deters(&self, deterrence: &Deterrence) -> bool {
		let reward = self.reward_per_round.unique_saturated_into();
		deterrence
			.stake_for(reward)
			.is_none_or(|needed| self.min_provider_stake.unique_saturated_into() >= needed)
	}
}

/// What a participant attests about its part of one round. Signed with the provider's sr25519
/// account key over [`proof_payload`].
#[derive(
	Clone, PartialEq, Eq, Debug, Encode, Decode, DecodeWithMemTracking, MaxEncodedLen, TypeInfo,
)]
pub struct ContributionProof<AccountId> {
	/// The job.
	pub job: JobId,
	/// The round.
	pub round: RoundIndex,
	/// The participant making the claim (the signer).
	pub provider: AccountId,
	/// Hash of the model the round started from.
	pub base_model_hash: H256,
	/// Content address of the participant's compressed update (what peers fetched); zero
	/// when it sent none, and then it claims no steps, samples or start state.
	pub own_update_commitment: H256,
	/// Content address of the participant's private state at the round's start (inner step
	/// counter and learning-rate position, optimizer moments, error-feedback residual), which
	/// a replay of its update starts from; zero when it sent no update.
	pub start_state: H256,
	/// Inner steps the update claims (each of the job's `batch_size` samples).
	pub inner_steps: u32,
	/// Hash of the model after the round's outer step.
	pub result_model_hash: H256,
	/// Training samples the participant processed in the round.
	pub samples_processed: u64,
	/// Mean training loss over the round, in millionths.
	pub train_loss_micros: u32,
	/// Participants whose updates went into the aggregate.
	pub received: BoundedVec<AccountId, MaxProofPeers>,
}

/// Domain separator of contribution proof signatures. Bump the version to change the format.
pub const PROOF_DOMAIN: &[u8] = b"grid/contribution-proof/v2";

impl<AccountId> ContributionProof<AccountId> {
	/// Whether the samples claimed fit in the inner steps claimed at `batch_size` samples a
	/// step (a replay redoes exactly `inner_steps` steps, so more samples than that were
	/// never trained).
	pub fn samples_fit_steps(&self, batch_size: u32) -> bool {
		self.samples_processed <= u64::from(self.inner_steps) * u64::from(batch_size)
	}

	/// Whether the proof claims work (inner steps, samples or a start state to replay from)
	/// but names no update of its provider's (a zero commitment, what a member that trained
	/// nothing or sat the round out signs). Nobody can fetch or replay such work, and a paid
	/// claim with a zero commitment would stand as the original of every member that sat the
	/// round out: their zero commitments would read as copies of it, kept and challengeable,
	/// and a claim of no steps is refused by any replay.
	pub fn claims_work_without_update(&self) -> bool {
		self.own_update_commitment.is_zero()
			&& (self.inner_steps > 0 || self.samples_processed > 0 || !self.start_state.is_zero())
	}
}

/// The bytes a provider signs for `proof` on the chain with genesis `genesis`: the domain, the
/// genesis hash and the proof, SCALE-encoded. The proof carries job, round and provider, so a
/// signature is valid for exactly one (chain, job, round, provider).
pub fn proof_payload<H: Encode, A: Encode>(genesis: &H, proof: &ContributionProof<A>) -> Vec<u8> {
	(PROOF_DOMAIN, genesis, proof).encode()
}

/// An sr25519 signature, as raw bytes.
pub type ProofSignature = [u8; 64];

/// A proof with its signature: what goes on chain and into equivocation reports.
#[derive(
	Clone, PartialEq, Eq, Debug, Encode, Decode, DecodeWithMemTracking, MaxEncodedLen, TypeInfo,
)]
pub struct SignedProof<AccountId> {
	/// The claim.
	pub proof: ContributionProof<AccountId>,
	/// The provider's sr25519 signature over [`proof_payload`].
	pub signature: ProofSignature,
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::AccountId;

	pub(crate) fn spec() -> JobSpec<u128, u32> {
		JobSpec {
			model: ModelSpec::Gpt(GptConfig {
				vocab: 256,
				context: 64,
				layers: 4,
				heads: 4,
				width: 128,
			}),
			dataset: DatasetRef {
				content_hash: H256::repeat_byte(7),
				uri: BoundedBytes::truncate_from(b"grid:shakespeare".to_vec()),
			},
			training: TrainingParams {
				round_blocks: 10,
				batch_size: 12,
				inner: InnerOptimizer::AdamW {
					lr: Nanos(600_000),
					weight_decay: Nanos(100_000_000),
					warmup_steps: 10,
				},
				outer_lr: Nanos(700_000_000),
				outer_momentum: Nanos(900_000_000),
				error_decay: Nanos(900_000_000),
				dense_rounds: 0,
				outer_anneal: None,
				overlap_steps: 0,
				max_steps: None,
				exchange: Default::default(),
				compression: Compression::TopK { chunk: 64, k: 4, value_bits: 2 },
			},
			rounds: 5,
			reward_per_round: 1_000,
			min_providers: 2,
			max_providers: 8,
			min_provider_stake: 18_000,
			challenge_window: 20,
			initial_weights: None,
		}
	}

	fn limits() -> SpecLimits<u32> {
		SpecLimits {
			max_rounds: 100,
			max_participants: 16,
			min_round_blocks: 2,
			max_round_blocks: 1_000,
			max_challenge_window: 100,
			max_job_blocks: 50_000,
			min_verifiable_providers: 2,
			// 10% audits, half the stake slashed: a stake of 18 rounds' reward.
			deterrence: Deterrence {
				audit_rate: polkadot_sdk::sp_runtime::Perbill::from_percent(10),
				fraud_slash: polkadot_sdk::sp_runtime::Perbill::from_percent(50),
			},
		}
	}

	#[test]
	fn admission_turns_away_each_kind_of_joiner_it_names() {
		use polkadot_sdk::sp_runtime::Perbill;
		let open = Admission::<u64, u32>::default();
		assert_eq!(open.admits(&7, Perbill::zero(), 100, 100), Ok(()), "the default admits all");
		let rules = Admission {
			min_health: Perbill::from_percent(80),
			min_age: 50,
			allowlist: BoundedVec::truncate_from(vec![1, 2]),
		};
		let healthy = Perbill::from_percent(90);
		assert_eq!(rules.admits(&1, healthy, 10, 60), Ok(()));
		assert_eq!(rules.admits(&3, healthy, 10, 60), Err(Refusal::NotListed));
		assert_eq!(rules.admits(&2, Perbill::from_percent(79), 10, 60), Err(Refusal::Unhealthy));
		assert_eq!(rules.admits(&2, healthy, 11, 60), Err(Refusal::TooNew));
	}

	#[test]
	fn the_deterrent_stake_makes_cheating_a_losing_bet() {
		use polkadot_sdk::sp_runtime::Perbill;
		let rule = |q, slash| Deterrence {
			audit_rate: Perbill::from_percent(q),
			fraud_slash: Perbill::from_percent(slash),
		};
		// q = 1%, half the stake: S >= 99 R, so the stake is 198 R.
		assert_eq!(rule(1, 50).stake_for(30), Some(5_940));
		assert_eq!(rule(10, 50).stake_for(1_000), Some(18_000));
		assert_eq!(rule(50, 100).stake_for(7), Some(7));
		// Rounded up: a third of a plank more is a plank more.
		assert_eq!(rule(3, 100).stake_for(1), Some(33));
		assert_eq!(rule(0, 50).stake_for(30), None, "no audits, no rule");
		assert_eq!(rule(1, 0).stake_for(30), Some(u128::MAX), "nothing slashed deters nothing");
		assert_eq!(rule(1, 50).stake_for(u128::MAX / 2), Some(u128::MAX));
		// At that stake the expected gain of cheating every round is not positive:
		// (1 - q) R - q × slash × stake <= 0.
		for (q, slash, reward) in [(1u32, 50u32, 30u128), (7, 33, 1_234_567), (60, 10, 9)] {
			let stake = rule(q, slash).stake_for(reward).unwrap();
			let gain = i128::from(100 - q) * reward as i128 * 100;
			let loss = i128::from(q) * i128::from(slash) * stake as i128;
			assert!(gain <= loss, "q {q}% slash {slash}% reward {reward}: {gain} > {loss}");
		}
		let mut unverified = spec();
		(unverified.challenge_window, unverified.min_provider_stake) = (0, 0);
		assert_eq!(unverified.validate(&limits()), Ok(()), "no window, no audits to deter");
	}

	#[test]
	fn a_good_spec_validates() {
		assert_eq!(spec().validate(&limits()), Ok(()));
		let mut longest = spec();
		(longest.rounds, longest.training.round_blocks) = (50, 1_000);
		assert_eq!(longest.validate(&limits()), Ok(()), "exactly the longest job is allowed");
	}

	#[test]
	fn an_exchange_may_take_half_the_round_and_no_more() {
		// Rounds of 2 blocks (12 s): an allowance of 2 × 2 s + 4 s / 2 = 6 s is half.
		let mut s = spec();
		s.training.round_blocks = 2;
		s.training.exchange = ExchangeWindow { grace_ms: 2_000, fetch_ms: 4_000, fan_in: None };
		assert_eq!(s.training.exchange.allowance_ms(), 6_000);
		assert_eq!(s.validate(&limits()), Ok(()));
		s.training.exchange.fetch_ms += 2;
		assert_eq!(s.validate(&limits()), Err(SpecError::ExchangeOverHalfTheRound));
		assert_eq!(ExchangeWindow::default().allowance_ms(), 5_000, "the providers' old default");
	}

	#[test]
	fn every_bad_field_has_its_error() {
		type Mutation = fn(&mut JobSpec<u128, u32>);
		let cases: Vec<(Mutation, SpecError)> = vec![
			(
				|s| {
					s.model = ModelSpec::Gpt(GptConfig {
						vocab: 256,
						context: 64,
						layers: 4,
						heads: 3,
						width: 128,
					})
				},
				SpecError::BadModel,
			),
			(
				|s| s.model = ModelSpec::MnistMlp(MlpConfig { hidden: 0, layers: 1 }),
				SpecError::BadModel,
			),
			(
				|s| s.model = ModelSpec::MnistCnn(CnnConfig { channels: 0, hidden: 1 }),
				SpecError::BadModel,
			),
			(
				|s| {
					s.model = ModelSpec::Gpt(GptConfig {
						vocab: 256,
						context: 64,
						layers: 100,
						heads: 4,
						width: 4096,
					})
				},
				SpecError::ModelTooLarge,
			),
			(|s| s.dataset.uri = BoundedBytes::default(), SpecError::BadDataset),
			(
				|s| s.dataset.uri = BoundedBytes::truncate_from(vec![0xff, 0xfe]),
				SpecError::BadDataset,
			),
			(|s| s.dataset.content_hash = H256::zero(), SpecError::BadDataset),
			(
				|s| {
					s.initial_weights =
						Some(DatasetRef { content_hash: H256::zero(), ..s.dataset.clone() })
				},
				SpecError::BadInitialWeights,
			),
			(
				|s| {
					s.initial_weights =
						Some(DatasetRef { uri: BoundedBytes::default(), ..s.dataset.clone() })
				},
				SpecError::BadInitialWeights,
			),
			(|s| s.training.batch_size = 0, SpecError::BadBatchSize),
			(
				|s| s.training.inner = InnerOptimizer::Sgd { lr: Nanos(0) },
				SpecError::BadInnerLearningRate,
			),
			(
				|s| s.training.inner = InnerOptimizer::Sgd { lr: Nanos(1_500_000_000) },
				SpecError::BadInnerLearningRate,
			),
			(|s| s.training.outer_lr = Nanos(0), SpecError::BadOuterLearningRate),
			(|s| s.training.outer_momentum = Nanos::ONE, SpecError::BadOuterMomentum),
			(|s| s.training.error_decay = Nanos(1_000_000_001), SpecError::BadErrorDecay),
			(|s| s.training.max_steps = Some(0), SpecError::ZeroStepCap),
			(|s| s.training.dense_rounds = s.rounds + 1, SpecError::DenseRoundsOverRounds),
			(
				|s| s.training.outer_anneal = Some(OuterAnneal { rounds: 0, to_lr: Nanos::ONE }),
				SpecError::BadOuterAnneal,
			),
			(
				|s| {
					s.training.outer_anneal =
						Some(OuterAnneal { rounds: s.rounds + 1, to_lr: Nanos(1) })
				},
				SpecError::BadOuterAnneal,
			),
			(
				|s| s.training.outer_anneal = Some(OuterAnneal { rounds: 1, to_lr: Nanos(0) }),
				SpecError::BadOuterAnneal,
			),
			(
				|s| {
					s.training.outer_anneal =
						Some(OuterAnneal { rounds: 1, to_lr: Nanos(s.training.outer_lr.0 + 1) })
				},
				SpecError::BadOuterAnneal,
			),
			(
				|s| {
					s.training.max_steps = Some(5);
					s.training.overlap_steps = 5;
				},
				SpecError::OverlapOverStepCap,
			),
			(|s| s.training.exchange.grace_ms = 0, SpecError::BadExchange),
			(|s| s.training.exchange.fetch_ms = 0, SpecError::BadExchange),
			(|s| s.training.exchange.fan_in = Some(MIN_FAN_IN - 1), SpecError::BadExchange),
			(
				|s| {
					s.training.exchange =
						ExchangeWindow { grace_ms: u32::MAX, fetch_ms: u32::MAX, fan_in: None }
				},
				SpecError::ExchangeOverHalfTheRound,
			),
			(
				|s| s.training.compression = Compression::Int8 { chunk: 0 },
				SpecError::BadCompression,
			),
			(
				|s| s.training.compression = Compression::TopK { chunk: 4, k: 5, value_bits: 2 },
				SpecError::BadCompression,
			),
			(
				|s| s.training.compression = Compression::TopK { chunk: 4, k: 1, value_bits: 9 },
				SpecError::BadCompression,
			),
			(|s| s.training.compression = Compression::Tiles { k: 0 }, SpecError::BadCompression),
			(
				|s| s.training.compression = Compression::Tiles { k: TILE * TILE + 1 },
				SpecError::BadCompression,
			),
			(|s| s.rounds = 0, SpecError::ZeroRounds),
			(|s| s.rounds = 101, SpecError::TooManyRounds),
			(|s| s.reward_per_round = 0, SpecError::ZeroReward),
			(|s| s.min_providers = 0, SpecError::BadProviderRange),
			(|s| s.min_providers = 9, SpecError::BadProviderRange),
			(
				|s| {
					s.max_providers = 17;
				},
				SpecError::TooManyProviders,
			),
			(|s| s.training.round_blocks = 1, SpecError::RoundTooShort),
			(|s| s.training.round_blocks = 1_001, SpecError::RoundTooLong),
			(|s| s.challenge_window = 101, SpecError::ChallengeWindowTooLong),
			(|s| s.min_providers = 1, SpecError::TooFewToVerify),
			(|s| s.min_provider_stake = 17_999, SpecError::StakeTooLowToDeter),
			(|s| s.reward_per_round = 1_001, SpecError::StakeTooLowToDeter),
			(
				|s| {
					s.rounds = 51;
					s.training.round_blocks = 1_000;
				},
				SpecError::JobTooLong,
			),
		];
		for (i, (mutate, error)) in cases.into_iter().enumerate() {
			let mut s = spec();
			mutate(&mut s);
			assert_eq!(s.validate(&limits()), Err(error), "case {i}");
		}
	}

	#[test]
	fn gpt_parameter_count_matches_the_nanogpt_formula() {
		// nanoGPT "baby" config without weight tying: 4 layers, width 128, vocab 256, ctx 64.
		let model = spec().model;
		let w = 128u64;
		let expected = 256 * w + 64 * w + 4 * (12 * w * w + 13 * w) + 2 * w + w * 256;
		assert_eq!(model.parameters(), Some(expected));
		assert_eq!(model.flops_per_sample(), Some(6 * expected * 64));
	}

	fn transformer(
		activation: Activation,
		norm: Norm,
		position: Position,
		tied: bool,
	) -> TransformerConfig {
		TransformerConfig {
			vocab: 1000,
			context: 64,
			layers: 3,
			width: 96,
			heads: 6,
			kv_heads: 2,
			mlp_width: 256,
			activation,
			norm,
			position,
			tied_embeddings: tied,
		}
	}

	#[test]
	fn transformer_parameter_counts_follow_each_knob() {
		// Llama-style: RMS norm, SwiGLU, RoPE, grouped-query attention (2 of 6 heads' k/v).
		let llama = transformer(Activation::SwiGlu, Norm::RmsNorm, Position::Rope, false);
		let (v, t, w, kv, m) = (1000u64, 64u64, 96u64, 32u64, 256u64);
		let block = 2 * w * w + 2 * w * kv + 3 * w * m + 2 * w;
		let expected = v * w + 3 * block + w + w * v;
		let model = ModelSpec::Transformer(llama);
		assert_eq!(model.parameters(), Some(expected));
		assert_eq!(model.flops_per_sample(), Some(6 * expected * t));
		assert_eq!(model.validate(), Ok(()));
		assert_eq!(model.reads(), DataKind::Tokens { vocab: 1000 });
		// GPT-2-style with tied embeddings: learned positions, layer norms, a GELU MLP.
		let gpt2 = transformer(Activation::Gelu, Norm::LayerNorm, Position::Learned, true);
		let block = 2 * w * w + 2 * w * kv + 2 * w * m + 4 * w;
		assert_eq!(
			ModelSpec::Transformer(gpt2).parameters(),
			Some(v * w + t * w + 3 * block + 2 * w)
		);
	}

	#[test]
	fn malformed_transformers_are_refused() {
		let good = transformer(Activation::SwiGlu, Norm::RmsNorm, Position::Rope, false);
		let cases: [fn(&mut TransformerConfig); 7] = [
			|c| c.kv_heads = 4, // does not divide 6 heads
			|c| c.kv_heads = 0,
			|c| c.heads = 5, // does not divide the width 96
			|c| c.mlp_width = 0,
			|c| c.width = 90, // 6 heads of 15: odd, no RoPE
			|c| c.vocab = 0,
			|c| c.layers = 0,
		];
		for (i, mutate) in cases.into_iter().enumerate() {
			let mut c = good;
			mutate(&mut c);
			assert_eq!(ModelSpec::Transformer(c).validate(), Err(SpecError::BadModel), "case {i}");
		}
		// Odd head widths are fine with learned positions.
		let mut learned = good;
		learned.width = 90;
		learned.position = Position::Learned;
		assert_eq!(ModelSpec::Transformer(learned).validate(), Ok(()));
		let mut wide = good;
		wide.mlp_width = model_bounds::HIDDEN + 1;
		assert_eq!(ModelSpec::Transformer(wide).validate(), Err(SpecError::ModelTooLarge));
		// The largest of every dimension at once counts exactly and is refused as too large.
		let mut huge = good;
		(huge.vocab, huge.context, huge.width, huge.mlp_width) =
			(u32::MAX, u32::MAX, u32::MAX, u32::MAX);
		(huge.layers, huge.heads, huge.kv_heads) = (u16::MAX, 1, 1);
		huge.position = Position::Learned;
		assert!(ModelSpec::Transformer(huge).parameters().is_none_or(|p| p > MAX_MODEL_PARAMS));
		assert_eq!(ModelSpec::Transformer(huge).validate(), Err(SpecError::ModelTooLarge));
	}

	#[test]
	fn a_model_whose_size_wraps_a_u64_is_refused_not_counted_small() {
		// The attack: 5 h² + … is 2^64 + 21,247,839, which wrapped to a 21M-parameter model
		// that auto-joining trainers could not build.
		let wrapping = ModelSpec::MnistMlp(MlpConfig { hidden: 1_920_767_687, layers: 6 });
		assert_eq!(wrapping.parameters(), None);
		assert_eq!(wrapping.flops_per_sample(), None);
		assert_eq!(max_samples(&wrapping, u32::MAX, u64::MAX), 0);
		let mut s = spec();
		s.model = wrapping;
		assert_eq!(s.validate(&limits()), Err(SpecError::ModelTooLarge));
		// The review's GPT: about 10^19 parameters that wrapped to 7,433,378.
		let wide = GptConfig { vocab: 256, context: 1, layers: 38, heads: 1, width: 3_931_055_010 };
		s.model = ModelSpec::Gpt(wide);
		assert!(s.model.parameters().is_none_or(|p| p > MAX_MODEL_PARAMS));
		assert_eq!(s.validate(&limits()), Err(SpecError::ModelTooLarge));
	}

	#[test]
	fn a_resnet_is_checked_like_the_other_families() {
		use crate::resnet::{bounds, ResNetConfig};
		let cifar =
			ResNetConfig { channels: 3, side: 32, classes: 10, width: 16, stages: 3, blocks: 3 };
		let model = ModelSpec::ResNet(cifar);
		assert_eq!(model.validate(), Ok(()));
		assert_eq!(model.parameters(), cifar.parameters().map(|p| p as u64));
		assert_eq!(model.flops_per_sample(), cifar.flops_per_sample().map(|f| f as u64));
		assert_eq!(model.reads(), DataKind::CIFAR10);
		assert_eq!(model.context(), None);
		for zero in [
			ResNetConfig { channels: 0, ..cifar },
			ResNetConfig { classes: 1, ..cifar },
			ResNetConfig { blocks: 0, ..cifar },
		] {
			assert_eq!(ModelSpec::ResNet(zero).validate(), Err(SpecError::BadModel), "{zero:?}");
		}
		for over in [
			ResNetConfig { stages: bounds::STAGES + 1, ..cifar },
			ResNetConfig { side: bounds::SIDE + 1, ..cifar },
			ResNetConfig { width: bounds::WIDTH + 1, ..cifar },
		] {
			let model = ModelSpec::ResNet(over);
			assert!(model.parameters().is_none(), "{over:?}");
			assert_eq!(model.validate(), Err(SpecError::ModelTooLarge), "{over:?}");
		}
		// Within every bound, but far more parameters than a job may train.
		let huge = ResNetConfig {
			width: bounds::WIDTH,
			stages: bounds::STAGES,
			blocks: bounds::BLOCKS,
			..cifar
		};
		assert!(huge.parameters().unwrap() > u128::from(MAX_MODEL_PARAMS));
		assert_eq!(ModelSpec::ResNet(huge).validate(), Err(SpecError::ModelTooLarge));
	}

	#[test]
	fn every_dimension_has_a_bound() {
		use model_bounds::*;
		let gpt = |vocab, context, layers, width| {
			ModelSpec::Gpt(GptConfig { vocab, context, layers, heads: 1, width })
		};
		// Small models (few parameters) refused for one dimension each.
		let over = [
			gpt(GPT_VOCAB + 1, 8, 1, 8),
			gpt(256, GPT_CONTEXT + 1, 1, 8),
			gpt(256, 8, LAYERS + 1, 8),
			ModelSpec::MnistMlp(MlpConfig { hidden: 1, layers: LAYERS + 1 }),
			ModelSpec::MnistCnn(CnnConfig { channels: CNN_CHANNELS + 1, hidden: 1 }),
		];
		for model in over {
			assert!(model.parameters().unwrap() < MAX_MODEL_PARAMS, "{model:?}");
			assert_eq!(model.validate(), Err(SpecError::ModelTooLarge), "{model:?}");
		}
		for model in [
			gpt(GPT_VOCAB, 8, 1, 8),
			gpt(256, GPT_CONTEXT, 1, 8),
			ModelSpec::MnistMlp(MlpConfig { hidden: 1, layers: LAYERS }),
			ModelSpec::MnistCnn(CnnConfig { channels: CNN_CHANNELS, hidden: 1 }),
		] {
			assert_eq!(model.validate(), Ok(()), "{model:?}");
		}
		let wide = gpt(256, 8, 1, GPT_WIDTH + 1);
		assert_eq!(wide.validate(), Err(SpecError::ModelTooLarge));
		let wide = ModelSpec::MnistMlp(MlpConfig { hidden: HIDDEN + 1, layers: 1 });
		assert_eq!(wide.validate(), Err(SpecError::ModelTooLarge));
	}

	#[test]
	fn sizes_are_exact_or_none_at_every_extreme() {
		// The chain's crates build with overflow checks: an overflow here panics the test.
		let u32s = [0, 1, 2, 255, 256, 65_535, 65_536, 1 << 20, u32::MAX - 1, u32::MAX];
		let u16s = [0, 1, 2, 1_024, 1_025, 4_096, u16::MAX];
		let mut models = Vec::new();
		for &a in &u32s {
			for &b in &u16s {
				models.push(ModelSpec::MnistMlp(MlpConfig { hidden: a, layers: b }));
				models.push(ModelSpec::MnistCnn(CnnConfig { channels: b, hidden: a }));
				for &c in &u32s {
					models.push(ModelSpec::Gpt(GptConfig {
						vocab: a,
						context: c,
						layers: b,
						heads: 1,
						width: c,
					}));
				}
			}
		}
		for model in models {
			let accepted = model.validate().is_ok();
			let params = model.parameters();
			if accepted {
				assert!(params.is_some_and(|p| p <= MAX_MODEL_PARAMS), "{model:?}");
				assert!(model.flops_per_sample().is_some(), "{model:?}");
			}
			if let (Some(p), ModelSpec::MnistMlp(c)) = (params, model) {
				let (h, l) = (u128::from(c.hidden), u128::from(c.layers.max(1)));
				assert_eq!(u128::from(p), 785 * h + (l - 1) * (h * h + h) + 10 * h + 10);
			}
		}
	}

	#[test]
	fn hardware_cap_scales_with_throughput_and_time() {
		let model = ModelSpec::MnistMlp(MlpConfig { hidden: 100, layers: 1 });
		let one = max_samples(&model, 1_000, 1_000);
		assert_eq!(one, 1_000_000_000_000 / model.flops_per_sample().unwrap());
		assert_eq!(max_samples(&model, 2_000, 1_000), 2 * one);
		assert_eq!(max_samples(&model, 0, 1_000), 0);
	}

	#[test]
	fn a_claim_counts_whole_batches_of_a_shared_gpu() {
		let model = ModelSpec::MnistMlp(MlpConfig { hidden: 100, layers: 1 });
		let alone = max_samples(&model, 1_000, 1_000);
		let claim = max_claim(&model, 32, 1_000, 1_000, 1);
		assert_eq!(claim, alone / 32 * 32);
		assert_eq!(claim % 32, 0);
		// Three concurrent jobs share the GPU's round time.
		assert_eq!(
			max_claim(&model, 32, 1_000, 1_000, 3),
			max_samples(&model, 1_000, 333) / 32 * 32
		);
		// Zero jobs counts as one; a batch larger than the hardware allows pays nothing.
		assert_eq!(max_claim(&model, 32, 1_000, 1_000, 0), claim);
		assert_eq!(max_claim(&model, u32::MAX, 1_000, 1_000, 1), 0);
	}

	/// A proof of 128 samples in 4 inner steps.
	fn sample_proof() -> ContributionProof<AccountId> {
		ContributionProof {
			job: 1,
			round: 2,
			provider: AccountId::new([1; 32]),
			base_model_hash: H256::repeat_byte(1),
			own_update_commitment: H256::repeat_byte(2),
			start_state: H256::repeat_byte(4),
			inner_steps: 4,
			result_model_hash: H256::repeat_byte(3),
			samples_processed: 128,
			train_loss_micros: 2_500_000,
			received: BoundedVec::truncate_from(vec![AccountId::new([2; 32])]),
		}
	}

	#[test]
	fn proof_payload_binds_chain_and_round() {
		let proof = sample_proof();
		let genesis = H256::repeat_byte(9);
		let payload = proof_payload(&genesis, &proof);
		assert_ne!(payload, proof_payload(&H256::repeat_byte(8), &proof));
		let mut next = proof.clone();
		next.round = 3;
		assert_ne!(payload, proof_payload(&genesis, &next));
		let mut other_start = proof.clone();
		other_start.start_state = H256::repeat_byte(5);
		assert_ne!(payload, proof_payload(&genesis, &other_start), "the start state is signed");
		assert_eq!(ContributionProof::<AccountId>::decode(&mut &proof.encode()[..]), Ok(proof));
	}

	#[test]
	fn claimed_samples_must_fit_the_claimed_steps() {
		let mut proof = sample_proof();
		assert!(proof.samples_fit_steps(32));
		assert!(!proof.samples_fit_steps(31), "four steps of 31 are 124 samples");
		proof.inner_steps = u32::MAX;
		proof.samples_processed = u64::MAX;
		assert!(!proof.samples_fit_steps(u32::MAX), "no overflow lets a claim through");
		proof.samples_processed = 0;
		assert!(proof.samples_fit_steps(0));
	}

	#[test]
	fn a_proof_without_an_update_claims_no_work() {
		let mut proof = sample_proof();
		assert!(!proof.claims_work_without_update(), "an update, its steps and its start");
		proof.own_update_commitment = H256::zero();
		assert!(proof.claims_work_without_update());
		let mut nothing = ContributionProof { inner_steps: 0, samples_processed: 0, ..proof };
		nothing.start_state = H256::zero();
		assert!(!nothing.claims_work_without_update(), "what a member that sat out signs");
		for claim in [
			ContributionProof { inner_steps: 1, ..nothing.clone() },
			ContributionProof { samples_processed: 1, ..nothing.clone() },
			ContributionProof { start_state: H256::repeat_byte(1), ..nothing.clone() },
		] {
			assert!(claim.claims_work_without_update(), "{claim:?}");
		}
	}

	#[test]
	fn the_outer_anneal_falls_in_a_straight_line_to_the_last_round() {
		let mut t = spec().training;
		t.outer_lr = Nanos(3 * Nanos::ONE.0);
		let rates =
			|t: &TrainingParams<u32>| (0..10).map(|r| t.outer_lr_in(r, 10).0).collect::<Vec<_>>();
		assert!(rates(&t).iter().all(|&lr| lr == t.outer_lr.0), "no anneal: the job's rate");
		t.outer_anneal = Some(OuterAnneal { rounds: 4, to_lr: Nanos::ONE });
		let b = 1_000_000_000;
		assert_eq!(
			rates(&t),
			[3 * b, 3 * b, 3 * b, 3 * b, 3 * b, 3 * b, 2_500_000_000, 2 * b, 1_500_000_000, b]
		);
		// Past the job's rounds (a trainer never asks) the rate stays at its end.
		assert_eq!(t.outer_lr_in(12, 10), Nanos::ONE);
		// An anneal over every round starts one step down from the first round.
		t.outer_anneal = Some(OuterAnneal { rounds: 10, to_lr: Nanos(1_000_000_000) });
		assert_eq!(t.outer_lr_in(0, 10), Nanos(2_800_000_000));
	}
}
