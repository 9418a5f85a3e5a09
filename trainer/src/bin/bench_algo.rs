//! Algorithm benchmark: N simulated participants in one process train the byte-level GPT on
//! Shakespeare with DDP (gradients averaged every step) and with DiLoCo under each compression
//! scheme, on the same data and the same number of samples, over several seeds (each seed its
//! own initial model and data draw). Hyper-parameters are tuned on one held-out split and the
//! chosen variants reported on another: a method given in several variants
//! (`none@olr=0.7/mom=0.9,none@olr=1/mom=0.5`) is represented by the variant with the lowest
//! mean validation loss, and its test loss is what the report compares. Writes a markdown
//! report, a JSON file of the headline figures and a loss-versus-bytes SVG plot.
//!
//! `cargo run --release -p grid-trainer --bin bench_algo -- --out bench/reports [--key value]...`
//!
//! `--device cuda` trains on a GPU (bf16 matrix products, f32 master weights, as the daemon
//! trains there); the outer step, compression and aggregation stay f32 on the CPU as in the
//! daemon. `bench/algorithms.sh --gpu` sizes the model for it (`scripts/gpu.sh`).

use std::{
	fmt::Write as _,
	path::PathBuf,
	sync::{
		atomic::{AtomicUsize, Ordering},
		Mutex,
	},
	time::Instant,
};

use candle_core::Device;
use grid_primitives::{
	job::{Compression, GptConfig, InnerOptimizer, ModelSpec, Nanos, OuterAnneal},
	Hash,
};
use grid_trainer::{
	aggregate::{aggregate, Contribution, Rule},
	compress::{
		adaptive::DenseFirst, compressor, CompressedUpdate, Compressor, FeedbackCompressor, Layout,
	},
	data::{self, shard, TokenDataset},
	device::{self, DeviceChoice, Precision},
	diloco::{CatchUp, OuterOptimizer, Overlap, OverlapHistory, Participant},
	model::{Batch, Model},
	plot::{line_plot, Axes, Series},
	round::decide::CHAIN_AGGREGATION,
	stats::mean_sd,
	train::{evaluate, InnerConfig, InnerTrainer},
	Result,
};

const JOB: u64 = 1;

/// Command-line settings (`--name value`), with defaults sized for a 2-core CPU.
#[derive(Clone, Debug)]
struct Settings {
	participants: usize,
	steps: usize,
	inner: usize,
	batch: usize,
	layers: u16,
	heads: u16,
	width: u32,
	context: u32,
	/// Token vocabulary (128: Shakespeare's bytes are ASCII; a job file's GPT has 256).
	vocab: u32,
	lr: f64,
	outer_lr: f32,
	outer_momentum: f32,
	sparse_outer_lr: f32,
	sparse_outer_momentum: f32,
	error_decay: f32,
	eval_samples: usize,
	/// Where the participants and DDP train (`cpu` unless given).
	device: DeviceChoice,
	seeds: u64,
	jobs: usize,
	methods: String,
	out: PathBuf,
	/// The report's file stem (`algorithms`: algorithms.md, .json and .svg).
	report: String,
}

impl Default for Settings {
	fn default() -> Self {
		Settings {
			participants: 4,
			steps: 1200,
			inner: 50,
			batch: 16,
			layers: 2,
			heads: 4,
			width: 64,
			context: 64,
			vocab: 128,
			lr: 3e-3,
			outer_lr: 1.0,
			outer_momentum: 0.5,
			sparse_outer_lr: 2.0,
			sparse_outer_momentum: 0.0,
			error_decay: 0.9,
			eval_samples: 256,
			device: DeviceChoice::Cpu,
			seeds: 3,
			jobs: 2,
			methods: "ddp,none,int8,topk,topk16".into(),
			out: PathBuf::from("bench/reports"),
			report: "algorithms".into(),
		}
	}
}

impl Settings {
	fn parse() -> std::result::Result<Self, String> {
		let mut s = Settings::default();
		let args: Vec<String> = std::env::args().skip(1).collect();
		for pair in args.chunks(2) {
			let (key, value) = match pair {
				[k, v] => (k.trim_start_matches("--"), v.as_str()),
				_ => return Err(format!("{} needs a value", pair[0])),
			};
			let num = |v: &str| v.parse::<f64>().map_err(|e| format!("--{key} {v}: {e}"));
			match key {
				"participants" => s.participants = num(value)? as usize,
				"steps" => s.steps = num(value)? as usize,
				"inner" => s.inner = num(value)? as usize,
				"batch" => s.batch = num(value)? as usize,
				"layers" => s.layers = num(value)? as u16,
				"heads" => s.heads = num(value)? as u16,
				"width" => s.width = num(value)? as u32,
				"context" => s.context = num(value)? as u32,
				"vocab" => s.vocab = num(value)? as u32,
				"lr" => s.lr = num(value)?,
				"outer-lr" => s.outer_lr = num(value)? as f32,
				"outer-momentum" => s.outer_momentum = num(value)? as f32,
				"sparse-outer-lr" => s.sparse_outer_lr = num(value)? as f32,
				"sparse-outer-momentum" => s.sparse_outer_momentum = num(value)? as f32,
				"error-decay" => s.error_decay = num(value)? as f32,
				"eval-samples" => s.eval_samples = num(value)? as usize,
				"device" => s.device = value.parse().map_err(|e| format!("--device: {e}"))?,
				"seeds" => s.seeds = num(value)? as u64,
				"jobs" => s.jobs = num(value)? as usize,
				"methods" => s.methods = value.to_string(),
				"out" => s.out = PathBuf::from(value),
				"report" => s.report = value.to_string(),
				_ => return Err(format!("unknown option --{key}")),
			}
		}
		if s.participants == 0 || s.seeds == 0 || s.jobs == 0 {
			return Err("need participants, seeds and jobs above zero".into());
		}
		Ok(s)
	}

	fn spec(&self) -> ModelSpec {
		ModelSpec::Gpt(GptConfig {
			vocab: self.vocab,
			context: self.context,
			layers: self.layers,
			heads: self.heads,
			width: self.width,
		})
	}

	fn inner_optimizer(&self, lr: f64) -> InnerOptimizer {
		InnerOptimizer::AdamW {
			lr: Nanos((lr * 1e9) as u32),
			weight_decay: Nanos(100_000_000),
			warmup_steps: (self.steps / 20) as u32,
		}
	}

	fn inner_config(&self) -> InnerConfig {
		InnerConfig { total_steps: self.steps as u64, clip: Some(1.0), min_lr_ratio: 0.1 }
	}
}

/// How a method trains.
#[derive(Clone, Copy, Debug)]
enum Kind {
	Ddp,
	DiLoCo { compression: Compression, rule: Rule },
}

/// One variant of a method: its hyper-parameters fixed.
#[derive(Clone, Debug)]
struct Method {
	/// As given on the command line (`family@overrides`).
	key: String,
	/// The method without overrides (but with its H when not the default's): variants of
	/// one family compete on validation loss.
	family: String,
	label: String,
	kind: Kind,
	lr: f64,
	inner: usize,
	outer_lr: f32,
	outer_momentum: f32,
	error_decay: f32,
	/// Rounds at the start sent dense, the model moved to the mean (`TrainingParams::dense_rounds`).
	dense_rounds: u32,
	/// The outer lr's fall over the last rounds (`TrainingParams::outer_anneal`).
	anneal: Option<OuterAnneal>,
	overlap: Overlap,
	catch_up: Option<CatchUp>,
}

impl Method {
	/// A method by name (see [`family`]) with `@key=value/...` overrides: `lr` (inner peak
	/// learning rate), `h` (inner steps per round), `olr`/`mom` (outer learning rate and
	/// momentum), `decay` (top-k error-feedback decay), `overlap` (`delayed`, `stale`, `own`,
	/// `eager`, `local` or `share`: each round trains while the last is exchanged, see [`Overlap`]), `catchup`
	/// (steps after which an overlapped round moves to the state it is applied to, see
	/// [`CatchUp`]), `dense` (the first rounds dense, see `TrainingParams::dense_rounds`),
	/// `anneal` and `annealto` (the outer lr falling to `annealto` over the last `anneal`
	/// rounds, see `TrainingParams::outer_anneal`).
	fn parse(key: &str, s: &Settings) -> std::result::Result<Method, String> {
		let (family_name, overrides) = key.split_once('@').unwrap_or((key, ""));
		let (label, kind) =
			family(family_name).ok_or_else(|| format!("unknown method {family_name}"))?;
		let sparse = matches!(
			kind,
			Kind::DiLoCo { compression: Compression::TopK { .. } | Compression::Tiles { .. }, .. }
		);
		let (outer_lr, outer_momentum) = if sparse {
			// Top-k with error feedback: the residual memory already acts as momentum
			// (SparseLoCo), and each round delivers only part of Δ.
			(s.sparse_outer_lr, s.sparse_outer_momentum)
		} else {
			(s.outer_lr, s.outer_momentum)
		};
		let mut m = Method {
			key: key.to_string(),
			family: family_name.to_string(),
			label,
			kind,
			lr: s.lr,
			inner: s.inner,
			outer_lr,
			outer_momentum,
			error_decay: s.error_decay,
			dense_rounds: 0,
			anneal: None,
			overlap: Overlap::Blocking,
			catch_up: None,
		};
		let (mut anneal_rounds, mut anneal_to) = (None, None);
		for pair in overrides.split('/').filter(|p| !p.is_empty()) {
			let (name, value) =
				pair.split_once('=').ok_or_else(|| format!("{key}: {pair} is not name=value"))?;
			if name == "overlap" {
				m.overlap = match value {
					"delayed" => Overlap::Delayed,
					"stale" => Overlap::Stale,
					"own" => Overlap::Own,
					"eager" => Overlap::Eager,
					"local" => Overlap::Local,
					"share" => Overlap::Share,
					_ => {
						return Err(format!(
							"{key}: overlap is delayed, stale, own, eager, local or share, not \
							 {value}"
						))
					}
				};
				continue;
			}
			let v: f64 = value.parse().map_err(|e| format!("{key}: {pair}: {e}"))?;
			match name {
				"lr" => m.lr = v,
				"h" => m.inner = v as usize,
				"olr" => m.outer_lr = v as f32,
				"mom" => m.outer_momentum = v as f32,
				"decay" => m.error_decay = v as f32,
				"dense" => m.dense_rounds = v as u32,
				"anneal" => anneal_rounds = Some(v as u32),
				"annealto" => anneal_to = Some(v),
				"catchup" => {
					m.catch_up = Some(CatchUp::new(v as u32).map_err(|e| format!("{key}: {e}"))?)
				}
				_ => return Err(format!("{key}: unknown override {name}")),
			}
		}
		if m.inner == 0 || !s.steps.is_multiple_of(m.inner) {
			return Err(format!("{key}: steps {} are not a multiple of H {}", s.steps, m.inner));
		}
		m.anneal = Method::anneal(key, &m, s, anneal_rounds, anneal_to)?;
		// Another H is another method, not a tuning of this one: it changes the bytes. So is
		// another overlap: it changes the wall time.
		if m.inner != s.inner && !m.is_ddp() {
			m.family = format!("{}@h={}", m.family, m.inner);
			m.label = format!("{}, H = {}", m.label, m.inner);
		}
		// Dense rounds change the bytes too.
		if m.dense_rounds > 0 {
			if m.is_ddp() {
				return Err(format!("{key}: DDP has no rounds to send dense"));
			}
			if m.overlap != Overlap::Blocking {
				// The overlap's stand-ins step as the job's outer step does.
				return Err(format!("{key}: dense rounds are measured with blocking rounds"));
			}
			if m.dense_rounds as usize > s.steps / m.inner {
				return Err(format!(
					"{key}: {} dense rounds of {}",
					m.dense_rounds,
					s.steps / m.inner
				));
			}
			m.family = format!("{}@dense={}", m.family, m.dense_rounds);
			m.label = format!("{}, first {} rounds dense", m.label, m.dense_rounds);
		}
		if m.overlap != Overlap::Blocking {
			if m.is_ddp() {
				return Err(format!("{key}: DDP has no rounds to overlap"));
			}
			let mode = format!("{:?}", m.overlap).to_lowercase();
			m.family = format!("{}@overlap={mode}", m.family);
			m.label = format!("{}, overlapped ({mode} start)", m.label);
		}
		if let Some(c) = m.catch_up {
			if m.overlap == Overlap::Blocking {
				return Err(format!("{key}: a catch-up needs an overlapped start (overlap=...)"));
			}
			if c.after() as usize >= m.inner {
				return Err(format!("{key}: catch-up after {} of H {} steps", c.after(), m.inner));
			}
			m.family = format!("{}/catchup={}", m.family, c.after());
			m.label = format!("{}, catching up after {} steps", m.label, c.after());
		}
		Ok(m)
	}

	/// The anneal `anneal=R/annealto=LR` asks for, held to the job spec's rule.
	fn anneal(
		key: &str,
		m: &Method,
		s: &Settings,
		rounds: Option<u32>,
		to: Option<f64>,
	) -> std::result::Result<Option<OuterAnneal>, String> {
		let (rounds, to) = match (rounds, to) {
			(None, None) => return Ok(None),
			(Some(rounds), Some(to)) => (rounds, to),
			_ => return Err(format!("{key}: anneal and annealto go together")),
		};
		if m.is_ddp() || m.overlap != Overlap::Blocking {
			// The overlap's stand-ins step at the optimizer's own rate.
			return Err(format!("{key}: an anneal needs blocking DiLoCo rounds"));
		}
		let nanos = |x: f64| Nanos::from_f64(x).ok_or(format!("{key}: lr {x} out of range"));
		let anneal = OuterAnneal { rounds, to_lr: nanos(to)? };
		let job_rounds = (s.steps / m.inner) as u32;
		if !anneal.fits(nanos(f64::from(m.outer_lr))?, job_rounds) {
			return Err(format!(
				"{key}: an anneal spans 1 to {job_rounds} rounds and ends above 0, at most outer \
				 lr {}",
				m.outer_lr
			));
		}
		Ok(Some(anneal))
	}

	/// The outer lr of `round` (of `rounds`): the anneal's where it has one, as the daemon's
	/// `OuterMove::in_round` computes it.
	fn outer_lr_in(&self, round: usize, rounds: usize) -> Result<f32> {
		let Some(anneal) = self.anneal else { return Ok(self.outer_lr) };
		let from = Nanos::from_f64(f64::from(self.outer_lr))
			.ok_or_else(|| grid_trainer::Error::Config(format!("outer lr {}", self.outer_lr)))?;
		Ok(anneal.lr_in(from, round as u32, rounds as u32).to_f64() as f32)
	}

	fn is_ddp(&self) -> bool {
		matches!(self.kind, Kind::Ddp)
	}

	/// The hyper-parameters this variant trains with, for the report.
	fn settings(&self) -> String {
		match self.kind {
			Kind::Ddp => format!("lr {}", self.lr),
			Kind::DiLoCo { compression, .. } => {
				let decay = match compression {
					Compression::TopK { .. } | Compression::Tiles { .. } => {
						format!(", error decay {}", self.error_decay)
					}
					_ => String::new(),
				};
				let anneal = match self.anneal {
					Some(a) => format!(
						" falling to {} over the last {} rounds",
						a.to_lr.to_f64(),
						a.rounds
					),
					None => String::new(),
				};
				format!(
					"lr {}, H {}, outer lr {}{anneal}, momentum {}{decay}",
					self.lr, self.inner, self.outer_lr, self.outer_momentum
				)
			}
		}
	}
}

/// A method family by name: its label and how it trains. DiLoCo families use the mean,
/// unless named `-trimmed` (chain jobs' rule: norms clipped to the median, then the trimmed
/// mean on each coordinate's support, one value off each end);
/// `topk:CHUNK:K:BITS` names any top-k setting, `tiles:K` any tiled one, `int8:CHUNK` int8
/// with another chunk (the adaptive ladder's, 64).
fn family(name: &str) -> Option<(String, Kind)> {
	if name == "ddp" {
		return Some(("DDP (f32 all-reduce every step)".into(), Kind::Ddp));
	}
	if let Some(base) = name.strip_suffix("-trimmed") {
		let (label, Kind::DiLoCo { compression, .. }) = family(base)? else { return None };
		let rule = CHAIN_AGGREGATION;
		return Some((
			format!("{label}, norms clipped to the median, trimmed mean (trim 1)"),
			Kind::DiLoCo { compression, rule },
		));
	}
	let topk = |chunk, k, value_bits| Compression::TopK { chunk, k, value_bits };
	let compression = match name {
		"none" => Compression::None,
		"int8" => Compression::Int8 { chunk: 256 },
		"topk" => topk(256, 8, 2),
		"topk4" => topk(256, 4, 2),
		"topk1" => topk(256, 1, 1),
		"topk16" => topk(1024, 16, 2),
		_ if name.starts_with("tiles:") => Compression::Tiles { k: name[6..].parse().ok()? },
		_ if name.starts_with("int8:") => Compression::Int8 { chunk: name[5..].parse().ok()? },
		_ => {
			let mut parts = name.strip_prefix("topk:")?.split(':').map(str::parse::<u32>);
			let (chunk, k, bits) = (parts.next()?.ok()?, parts.next()?.ok()?, parts.next()?.ok()?);
			topk(chunk, k, u8::try_from(bits).ok()?)
		}
	};
	let label = match compression {
		Compression::None => "DiLoCo, f32".into(),
		Compression::Int8 { chunk } => format!("DiLoCo, int8 (chunk {chunk})"),
		Compression::TopK { chunk, k, value_bits } => {
			format!("DiLoCo, top-k {k}/{chunk}, {value_bits}-bit, error feedback")
		}
		Compression::Tiles { k } => {
			format!("DiLoCo, tiles {k}/4096, 2-bit, small tensors 8-bit, error feedback")
		}
	};
	Some((label, Kind::DiLoCo { compression, rule: Rule::Mean }))
}

/// Held-out loss at one synchronization point.
#[derive(Clone, Copy, Debug)]
struct Point {
	/// Inner steps per participant so far.
	steps: usize,
	/// Bytes per participant so far.
	bytes: f64,
	/// On the tuning split.
	validation: f64,
	/// On the reported split.
	test: f64,
}

/// One variant's run on one seed.
struct Run {
	curve: Vec<Point>,
	seconds: f64,
}

impl Run {
	fn last(&self) -> Point {
		self.curve.last().copied().unwrap_or(Point {
			steps: 0,
			bytes: 0.0,
			validation: 0.0,
			test: 0.0,
		})
	}
}

struct Bench {
	s: Settings,
	data: TokenDataset,
	/// The first half of the held-out region (hyper-parameters are chosen on it).
	validation: Vec<Batch>,
	/// The second half (the report's losses).
	test: Vec<Batch>,
	dev: Device,
	params: usize,
}

/// The initial model's seed for benchmark seed `seed`.
fn model_seed(seed: u64) -> Vec<u8> {
	format!("grid/bench/algorithms/{seed}").into_bytes()
}

impl Bench {
	/// Participant `p`'s sample indices for `round` of seed `seed` (`inner` × batch of them).
	fn shard(&self, seed: u64, inner: usize, round: usize, p: usize) -> Vec<u64> {
		let count = inner * self.s.batch;
		shard(
			&Hash::from_low_u64_be(seed),
			JOB,
			round as u32,
			&(p as u32).to_le_bytes(),
			self.data.train_len(),
			count,
		)
	}

	fn point(&self, model: &Model, steps: usize, bytes: f64) -> Result<Point> {
		Ok(Point {
			steps,
			bytes,
			validation: evaluate(model, &self.validation)?,
			test: evaluate(model, &self.test)?,
		})
	}

	fn run(&self, m: &Method, seed: u64) -> Result<Run> {
		let start = Instant::now();
		let curve = match m.kind {
			Kind::Ddp => self.ddp(m, seed)?,
			Kind::DiLoCo { compression, rule } => self.diloco(m, seed, compression, rule)?,
		};
		eprintln!(
			"{} seed {seed}: final test loss {:.4}",
			m.key,
			curve.last().map_or(0.0, |p| p.test)
		);
		Ok(Run { curve, seconds: start.elapsed().as_secs_f64() })
	}

	/// DDP: every step, all participants' batches form one global batch (averaging the
	/// participants' mean gradients is the gradient of the concatenated batch). Bytes: each
	/// participant sends its f32 gradient and receives the average, 2 × 4P bytes per step.
	/// Evaluated every `inner` steps of the default H.
	fn ddp(&self, m: &Method, seed: u64) -> Result<Vec<Point>> {
		let s = &self.s;
		let mut t = InnerTrainer::new(
			s.spec(),
			&model_seed(seed),
			&self.dev,
			&s.inner_optimizer(m.lr),
			s.inner_config(),
		)?;
		let per_step = 2.0 * 4.0 * self.params as f64;
		let mut curve = vec![self.point(t.model(), 0, 0.0)?];
		let mut bytes = 0.0;
		let inner = s.inner.min(s.steps).max(1);
		for round in 0..s.steps / inner {
			let shards: Vec<Vec<u64>> =
				(0..s.participants).map(|p| self.shard(seed, inner, round, p)).collect();
			for j in 0..inner {
				let idx: Vec<u64> = shards
					.iter()
					.flat_map(|sh| sh[j * s.batch..(j + 1) * s.batch].iter().copied())
					.collect();
				t.step(&self.data.train_batch(&idx, &self.dev)?)?;
				bytes += per_step;
			}
			curve.push(self.point(t.model(), (round + 1) * inner, bytes)?);
		}
		Ok(curve)
	}

	/// DiLoCo: each round every participant runs H steps from the global model and
	/// publishes its compressed Δ; everyone fetches the others' updates, averages them and
	/// applies the outer Nesterov step. Bytes: each participant uploads its update to N−1
	/// peers and downloads theirs, 2(N−1) × encoded size per round (a full mesh, no relay).
	fn diloco(
		&self,
		m: &Method,
		seed: u64,
		compression: Compression,
		rule: Rule,
	) -> Result<Vec<Point>> {
		let s = &self.s;
		let init = model_seed(seed);
		let global_model = Model::new(s.spec(), &init, &self.dev)?;
		let mut global = global_model.params().flatten()?;
		let mut people = Vec::new();
		for _ in 0..s.participants {
			let t = InnerTrainer::new(
				s.spec(),
				&init,
				&self.dev,
				&s.inner_optimizer(m.lr),
				s.inner_config(),
			)?;
			let layout = Layout::of(&global_model.params().manifest());
			let c: Box<dyn Compressor> = match compression {
				_ if m.dense_rounds > 0 => {
					Box::new(DenseFirst::new(compression, layout, m.error_decay, m.dense_rounds)?)
				}
				Compression::TopK { .. } | Compression::Tiles { .. } => Box::new(
					FeedbackCompressor::new(compression, &layout)?
						.with_error_decay(m.error_decay)?,
				),
				_ => compressor(&compression, &layout)?,
			};
			people.push(Participant::new(t, c));
		}
		let mut outer = OuterOptimizer::new(m.outer_lr, m.outer_momentum, global.len());
		let mut curve = vec![self.point(&global_model, 0, 0.0)?];
		let mut bytes = 0.0;
		let peers = (s.participants - 1) as f64;
		// Overlapped rounds start from what is known while the last round is exchanged: the
		// state before its aggregate, the aggregate before that (newest first here) and each
		// participant's own last two updates as sent.
		let mut history = OverlapHistory::new(people.len());
		let rounds = s.steps / m.inner;
		for round in 0..rounds {
			let mut updates = Vec::new();
			for (p, person) in people.iter_mut().enumerate() {
				let idx = self.shard(seed, m.inner, round, p);
				let batches: Vec<Result<Batch>> =
					idx.chunks(s.batch).map(|c| self.data.train_batch(c, &self.dev)).collect();
				// Only the local start reads the participant's own weights (a model's copy).
				let local = match m.overlap {
					Overlap::Local if round > 0 => {
						Some(person.trainer().model().params().flatten()?)
					}
					_ => None,
				};
				let mut known = history.known(p, s.participants);
				known.local = local.as_deref();
				let start = m.overlap.start(&global, &known)?;
				let out = match m.catch_up {
					Some(c) => {
						person.run_round_catching_up(&start, c, || Ok(global.clone()), batches)?
					}
					None => person.run_round(&start, batches)?,
				};
				let wire = out.update.encode();
				bytes += 2.0 * peers * wire.len() as f64 / s.participants as f64;
				let decoded = CompressedUpdate::decode(&wire)?;
				if matches!(m.overlap, Overlap::Own | Overlap::Eager | Overlap::Share) {
					history.sent(p, decoded.decompress());
				}
				updates.push(Contribution { update: decoded.into(), samples: out.samples });
			}
			let agg = aggregate(&updates, rule, None)?;
			if m.overlap != Overlap::Blocking {
				history.stepping(&global, &outer, &agg.delta);
			}
			if round < m.dense_rounds as usize {
				outer.average(&mut global, &agg.delta)?;
			} else {
				outer.step_at(m.outer_lr_in(round, rounds)?, &mut global, &agg.delta)?;
			}
			global_model.params().load_flat(&global)?;
			curve.push(self.point(&global_model, (round + 1) * m.inner, bytes)?);
		}
		Ok(curve)
	}
}

/// A ratio as "17x", or with one decimal below 10 ("0.5x": bf16 DDP against f32 DDP).
fn times(x: f64) -> String {
	if x < 10.0 {
		format!("{x:.1}x")
	} else {
		format!("{x:.0}x")
	}
}

/// A variant's runs over every seed.
struct Variant {
	method: Method,
	runs: Vec<Run>,
}

impl Variant {
	fn validation(&self) -> (f64, f64) {
		mean_sd(&self.runs.iter().map(|r| r.last().validation).collect::<Vec<_>>())
	}
	fn test(&self) -> Vec<f64> {
		self.runs.iter().map(|r| r.last().test).collect()
	}
	fn bytes(&self) -> f64 {
		self.runs[0].last().bytes
	}
	fn seconds(&self) -> f64 {
		mean_sd(&self.runs.iter().map(|r| r.seconds).collect::<Vec<_>>()).0
	}
	/// Per seed, the test loss relative to `ddp`'s on the same seed.
	fn vs(&self, ddp: &Variant) -> Vec<f64> {
		self.test().iter().zip(ddp.test()).map(|(l, d)| l / d - 1.0).collect()
	}
	/// Per seed, DDP's inner steps to a test loss over this variant's (both at their first
	/// evaluation at or below it), the loss being the higher of DDP's final and this
	/// variant's best: the per-step part of `bench/network.sh --only speed`'s speed, which
	/// multiplies it by the daemon's utilization.
	fn speed(&self, ddp: &Variant) -> Vec<f64> {
		self.runs
			.iter()
			.zip(&ddp.runs)
			.map(|(run, d)| {
				let best = run.curve.iter().map(|p| p.test).fold(f64::INFINITY, f64::min);
				let loss = best.max(d.last().test);
				let at = |c: &[Point]| c.iter().find(|p| p.test <= loss).map_or(0, |p| p.steps);
				at(&d.curve) as f64 / at(&run.curve).max(1) as f64
			})
			.collect()
	}
	/// The mean test-loss curve over the seeds (every seed syncs at the same bytes).
	fn mean_curve(&self) -> Vec<(f64, f64)> {
		let n = self.runs.len() as f64;
		(0..self.runs[0].curve.len())
			.map(|i| {
				let test = self.runs.iter().map(|r| r.curve[i].test).sum::<f64>() / n;
				(self.runs[0].curve[i].bytes, test)
			})
			.collect()
	}
}

/// Per family (in order of first appearance), the variant with the lowest mean validation
/// loss.
fn chosen(variants: &[Variant]) -> Vec<&Variant> {
	let mut out: Vec<&Variant> = Vec::new();
	for v in variants {
		match out.iter_mut().find(|c| c.method.family == v.method.family) {
			Some(c) if v.validation().0 < c.validation().0 => *c = v,
			Some(_) => {}
			None => out.push(v),
		}
	}
	out
}

fn human_bytes(b: f64) -> String {
	let units = ["B", "KB", "MB", "GB", "TB"];
	let mut v = b;
	let mut u = 0;
	while v >= 1000.0 && u + 1 < units.len() {
		v /= 1000.0;
		u += 1;
	}
	format!("{v:.2} {}", units[u])
}

/// A log-x line plot of mean test loss against bytes per participant.
fn svg(chosen: &[&Variant]) -> String {
	let series: Vec<Series> = chosen
		.iter()
		.map(|v| Series {
			name: v.method.label.clone(),
			points: v.mean_curve().into_iter().skip(1).collect(),
		})
		.collect();
	line_plot(
		&series,
		&Axes {
			x_label: "bytes sent + received per participant (log scale)",
			y_label: "held-out test loss, mean over seeds (nats/token)",
			log_x: true,
		},
	)
}

/// The headline figures of one chosen variant against DDP.
struct Headline {
	vs_ddp: (f64, f64),
	ratio_f32: f64,
	/// `Variant::speed`'s mean and sd.
	speed: (f64, f64),
}

fn headline(v: &Variant, ddp: &Variant) -> Headline {
	Headline {
		vs_ddp: mean_sd(&v.vs(ddp)),
		ratio_f32: ddp.bytes() / v.bytes().max(1.0),
		speed: mean_sd(&v.speed(ddp)),
	}
}

fn setup(md: &mut String, s: &Settings, params: usize, hardware: &str) {
	let _ = writeln!(md, "## Setup\n");
	let _ = writeln!(md, "- Hardware: {hardware}.");
	let _ = writeln!(md, "- Model: byte-level GPT, {} layers, {} heads, width {}, context {}, vocabulary {}: **{params} parameters**.", s.layers, s.heads, s.width, s.context, s.vocab);
	let _ = writeln!(md, "- Data: `data/shakespeare.txt` (hash-checked); training windows drawn by `data::shard(seed, job, round, participant)`. Held-out: {} windows spread evenly over the last 10% of the file, split in two: the first half (**validation**) chooses each method's hyper-parameters, the second (**test**) is what the tables report.", 2 * s.eval_samples);
	let _ = writeln!(md, "- **{} seeds** (0..{}): each seed its own initial model and its own data draw, the same for every method; figures are the mean ± sample standard deviation over the seeds.", s.seeds, s.seeds);
	let _ = writeln!(md, "- {} simulated participants, {} inner steps each of batch {} × {} tokens ({} samples per participant, {} in total, the same for every method).", s.participants, s.steps, s.batch, s.context, s.steps * s.batch, s.steps * s.batch * s.participants);
	let _ = writeln!(md, "- Inner optimizer: AdamW (β 0.9/0.95, weight decay 0.1), {} warm-up steps, cosine to 10% of the peak learning rate, gradient clip 1.0.", s.steps / 20);
	let _ = writeln!(md, "- DDP: one global batch of {} × {} per step ({} steps), i.e. the participants' gradients averaged every step.", s.participants, s.batch, s.steps);
	let _ = writeln!(md, "- DiLoCo: rounds of H inner steps; Δ averaged (the mean; \"trimmed mean\": the chain jobs' rule, norms clipped to the median, then per coordinate over the updates that sent it, one value off each end, weighted by their share), then the outer Nesterov step. Top-k and tiles keep an error-feedback memory that decays by a factor each round (`with_error_decay`); as in SparseLoCo it acts as the outer momentum.");
	let _ = writeln!(md, "- Overlapped DiLoCo (`overlap=...`): round r trains while round r − 1's updates are exchanged, so it starts from S(r−1), the state r − 1's aggregate is applied to, not from S(r); its own update is still applied to S(r) (a one-round-delayed outer step). `delayed` trains from S(r−1) itself; the other modes start from S(r−1) advanced by the outer step with a stand-in for round r − 1's aggregate, not yet known: `stale`, round r − 2's aggregate (one start for everyone); `own`, the participant's own round r − 1 update as sent; `eager` (Kale et al. 2025), round r − 2's aggregate with the participant's share replaced by its round r − 1 update, A(r−2) + (own(r−1) − own(r−2)) / N (`diloco::Overlap::start`); `share`, the participant's own share of the aggregate, own(r−1) / N, the part of it it knows (the eager mixture without the stale part); `local` goes on from the participant's own weights at the end of round r − 1. With `catchup=τ` (`diloco::CatchUp`) the overlap lasts τ inner steps only: then the weights move by S(r) − start, keeping what those steps learnt, and Δ is measured from S(r), so the outer step is not delayed. Same samples and bytes as blocking rounds; what it buys is wall time (the exchange hides behind training), which this simulation does not charge.\n");
	let _ = writeln!(md, "- An outer anneal (`anneal=R/annealto=LR`, the job option `outer_anneal`): over the last R rounds the outer lr falls in a straight line to LR at the last round, in whole billionths as the daemon computes it (`OuterAnneal::lr_in`); the momentum is the method's.");
	let _ = writeln!(md, "- **DDP's steps to its loss**: per seed, the inner steps DDP took to reach a test loss over the steps the method took to reach it, each at its first evaluation at or below the loss (DDP is evaluated every {} steps, a method at each synchronization), the loss being the higher of DDP's final one and the method's best: the per-step half of the whole system's speed against DDP (`bench/network.sh --only speed` multiplies it by the daemon's utilization; 100% = as much progress per inner step as DDP).\n", s.inner);
	let _ = writeln!(md, "## Byte accounting\n");
	let _ = writeln!(
		md,
		"Bytes are counted per participant, sent plus received, over the whole run.\n"
	);
	let _ = writeln!(md, "- DDP: each participant sends its gradient and receives the averaged one, 2 × 4P bytes per step in f32 (P parameters), half that in bf16. This is the least any DDP worker moves; a ring all-reduce moves 4(N−1)/N × 4P (1.5x more at N = 4), so the ratios below are conservative.");
	let _ = writeln!(md, "- DiLoCo is charged for the simple full-mesh exchange of the recommended design (each participant publishes its compressed Δ, every other participant fetches it): per round, (N−1) uploads and (N−1) downloads of the exact encoded size (`CompressedUpdate::encode().len()`, header included).");
	let _ = writeln!(
		md,
		"- Commitments, signatures and transport framing are not counted for either.\n"
	);
}

fn report(
	s: &Settings,
	params: usize,
	hardware: &str,
	variants: &[Variant],
	command: &str,
	commit: &str,
) -> String {
	let mut md = String::new();
	let _ = writeln!(md, "# Algorithm benchmark: DDP vs DiLoCo with compression\n");
	let _ = writeln!(md, "Generated by `{}` (the `bench_algo` binary of `grid-trainer`) at `{commit}`; do not edit by hand. Headline figures in `{}.json`.\n", command.split_whitespace().next().unwrap_or("bench/algorithms.sh"), s.report);
	setup(&mut md, s, params, hardware);
	let chosen = chosen(variants);
	let ddp = chosen.iter().find(|v| v.method.is_ddp()).copied();
	let _ = writeln!(md, "## Results (test split, chosen variants)\n");
	let _ = writeln!(md, "| method | settings (chosen on validation) | test loss | vs DDP (per seed, mean ± sd) | DDP's steps to its loss (mean ± sd) | bytes per participant | fewer bytes than f32 DDP | than bf16 DDP | wall time per seed |");
	let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
	for v in &chosen {
		let (test, sd) = mean_sd(&v.test());
		let (vs, speed, ratio, bf16) = match ddp {
			Some(d) => {
				let h = headline(v, d);
				(
					format!("{:+.2}% ± {:.2}", 100.0 * h.vs_ddp.0, 100.0 * h.vs_ddp.1),
					format!("{:.1}% ± {:.1}", 100.0 * h.speed.0, 100.0 * h.speed.1),
					times(h.ratio_f32),
					times(h.ratio_f32 / 2.0),
				)
			}
			None => ("-".into(), "-".into(), "-".into(), "-".into()),
		};
		let _ = writeln!(
			md,
			"| {} | {} | {test:.4} ± {sd:.4} | {vs} | {speed} | {} | {ratio} | {bf16} | {:.0} s |",
			v.method.label,
			v.method.settings(),
			human_bytes(v.bytes()),
			v.seconds()
		);
	}
	let initial = mean_sd(&variants[0].runs.iter().map(|r| r.curve[0].test).collect::<Vec<_>>());
	let _ = writeln!(md, "\nInitial test loss: {:.4} ± {:.4}.\n", initial.0, initial.1);
	if let Some(d) = ddp {
		targets(&mut md, &chosen, d);
	}
	let _ = writeln!(md, "![mean test loss against bytes]({}.svg)\n", s.report);
	let _ = writeln!(md, "## Every variant (validation split)\n");
	let _ = writeln!(md, "Chosen on validation; the test split's figures beside it, so that variants of one method can be compared on what the results report.\n");
	let _ = writeln!(md, "| variant | settings | validation loss | test loss | DDP's steps to its loss (test) | chosen |");
	let _ = writeln!(md, "|---|---|---|---|---|---|");
	for v in variants {
		let (val, vsd) = v.validation();
		let (test, tsd) = mean_sd(&v.test());
		let speed = ddp.map_or("-".into(), |d| {
			let (m, sd) = mean_sd(&v.speed(d));
			format!("{:.1}% ± {:.1}", 100.0 * m, 100.0 * sd)
		});
		let picked = chosen.iter().any(|c| std::ptr::eq(*c, v));
		let _ = writeln!(
			md,
			"| `{}` | {} | {val:.4} ± {vsd:.4} | {test:.4} ± {tsd:.4} | {speed} | {} |",
			v.method.key,
			v.method.settings(),
			if picked { "yes" } else { "" }
		);
	}
	let _ = writeln!(
		md,
		"\n## Mean test-loss curves (bytes per participant, loss) at each synchronization\n"
	);
	for v in &chosen {
		let pts: Vec<String> =
			v.mean_curve().iter().map(|(b, l)| format!("({}, {l:.3})", human_bytes(*b))).collect();
		let _ = writeln!(md, "- {}: {}", v.method.label, pts.join(", "));
	}
	let _ = writeln!(md, "\n## Reproduce\n\n```sh\n{command}\n```");
	md
}

/// The issue's targets, judged on the means over seeds.
fn targets(md: &mut String, chosen: &[&Variant], ddp: &Variant) {
	let _ = writeln!(md, "## Targets (mean over seeds, against f32 DDP)\n");
	for v in chosen.iter().filter(|v| !v.method.is_ddp()) {
		let h = headline(v, ddp);
		let met = h.ratio_f32 >= 1000.0 && h.vs_ddp.0 <= 0.02;
		let _ = writeln!(
			md,
			"- ≥ 1,000x fewer bytes at ≤ 2% higher loss — {}: {:.0}x, {:+.2}% → **{}**",
			v.method.label,
			h.ratio_f32,
			100.0 * h.vs_ddp.0,
			if met { "met" } else { "missed" }
		);
	}
	if let Some(plain) = chosen.iter().find(|v| v.method.family == "none") {
		let h = headline(plain, ddp);
		let _ = writeln!(
			md,
			"- Plain DiLoCo (f32) within ~1.5% of DDP, so the run is long enough to compare: {:+.2}% → **{}**",
			100.0 * h.vs_ddp.0,
			if h.vs_ddp.0 <= 0.015 { "yes" } else { "no" }
		);
	}
	let _ = writeln!(md);
}

fn json(
	s: &Settings,
	params: usize,
	hardware: &str,
	variants: &[Variant],
	commit: &str,
) -> serde_json::Value {
	let chosen = chosen(variants);
	let ddp = chosen.iter().find(|v| v.method.is_ddp()).copied();
	let methods: Vec<serde_json::Value> = chosen
		.iter()
		.map(|v| {
			let test = mean_sd(&v.test());
			let mut m = serde_json::json!({
				"method": v.method.label,
				"key": v.method.key,
				"settings": v.method.settings(),
				"test_loss": { "mean": test.0, "sd": test.1, "per_seed": v.test() },
				"validation_loss_mean": v.validation().0,
				"bytes_per_participant": v.bytes(),
			});
			if let Some(d) = ddp {
				let h = headline(v, d);
				m["vs_ddp"] = serde_json::json!({ "mean": h.vs_ddp.0, "sd": h.vs_ddp.1, "per_seed": v.vs(d) });
				m["ddp_steps_to_its_loss"] = serde_json::json!({ "mean": h.speed.0, "sd": h.speed.1, "per_seed": v.speed(d) });
				m["fewer_bytes_than_f32_ddp"] = h.ratio_f32.into();
				m["fewer_bytes_than_bf16_ddp"] = (h.ratio_f32 / 2.0).into();
			}
			m
		})
		.collect();
	// Every variant, chosen or not, with its per-step speed: what a sweep is read from.
	let every: Vec<serde_json::Value> = variants
		.iter()
		.map(|v| {
			let mut e = serde_json::json!({
				"key": v.method.key,
				"validation_loss_mean": v.validation().0,
				"test_loss_per_seed": v.test(),
			});
			if let Some(d) = ddp {
				e["ddp_steps_to_its_loss_per_seed"] = v.speed(d).into();
			}
			e
		})
		.collect();
	serde_json::json!({
		"commit": commit,
		"model_parameters": params,
		"hardware": hardware,
		"participants": s.participants,
		"steps": s.steps,
		"seeds": s.seeds,
		"methods": methods,
		"variants": every,
	})
}

/// Runs every (variant, seed) pair on `jobs` threads; results in input order.
fn run_all(bench: &Bench, methods: &[Method]) -> Result<Vec<Variant>> {
	let seeds = bench.s.seeds;
	let tasks: Vec<(usize, u64)> =
		(0..methods.len()).flat_map(|m| (0..seeds).map(move |seed| (m, seed))).collect();
	let results: Mutex<Vec<Option<Result<Run>>>> =
		Mutex::new((0..tasks.len()).map(|_| None).collect());
	let next = AtomicUsize::new(0);
	std::thread::scope(|scope| {
		for _ in 0..bench.s.jobs.min(tasks.len()) {
			scope.spawn(|| loop {
				let i = next.fetch_add(1, Ordering::Relaxed);
				let Some(&(m, seed)) = tasks.get(i) else { break };
				let run = bench.run(&methods[m], seed);
				results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(run);
			});
		}
	});
	let mut runs = results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter();
	methods
		.iter()
		.map(|m| {
			let runs = (0..seeds)
				.map(|_| runs.next().flatten().expect("every task ran"))
				.collect::<Result<Vec<_>>>()?;
			Ok(Variant { method: m.clone(), runs })
		})
		.collect()
}

/// What the participants train on, for the report: the GPU's name or the CPU's architecture,
/// and the arithmetic of the forward and backward passes.
fn hardware(dev: &Device) -> String {
	let arithmetic = match Precision::for_device(dev) {
		Precision::F32 => "f32",
		Precision::Bf16 => {
			"bf16 matrix products and activations, f32 master weights and AdamW state"
		}
	};
	match device::gpu_info(dev) {
		Some(gpu) => format!("{} ({} MiB), {arithmetic}", gpu.name, gpu.memory_mib),
		None => format!("CPU ({}), {arithmetic}", std::env::consts::ARCH),
	}
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
	grid_trainer::malloc::retain_freed_memory();
	let s = Settings::parse()?;
	let dev = device::select(s.device)?;
	let hardware = hardware(&dev);
	eprintln!("training on {hardware}");
	let data = data::shakespeare(s.context as usize)?;
	data.check_vocab(s.vocab)?;
	let mut validation = data.eval_batches(2 * s.eval_samples, 64, &dev)?;
	let test = validation.split_off(validation.len() / 2);
	let params = s.spec().parameters().ok_or("the model is too large to count")? as usize;
	let mut methods: Vec<Method> = Vec::new();
	for key in s.methods.split(',') {
		if !methods.iter().any(|m| m.key == key) {
			methods.push(Method::parse(key, &s)?);
		}
	}
	let bench = Bench { s: s.clone(), data, validation, test, dev, params };
	let variants = run_all(&bench, &methods)?;
	std::fs::create_dir_all(&s.out)?;
	let command = std::env::var("BENCH_COMMAND").unwrap_or_else(|_| "bench/algorithms.sh".into());
	// The code measured (`bench/algorithms.sh` sets it: the commit, `+dirty` with changes).
	let commit = std::env::var("BENCH_COMMIT").unwrap_or_else(|_| "an unrecorded commit".into());
	let file = |ext: &str| s.out.join(format!("{}.{ext}", s.report));
	std::fs::write(file("md"), report(&s, params, &hardware, &variants, &command, &commit))?;
	std::fs::write(
		file("json"),
		serde_json::to_string_pretty(&json(&s, params, &hardware, &variants, &commit))? + "\n",
	)?;
	std::fs::write(file("svg"), svg(&chosen(&variants)))?;
	for v in chosen(&variants) {
		eprintln!(
			"{}: test loss {:.4} ({}), {} per participant",
			v.method.key,
			mean_sd(&v.test()).0,
			v.method.settings(),
			human_bytes(v.bytes())
		);
	}
	Ok(())
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn an_anneal_steps_as_the_job_would_and_bad_ones_say_why() {
		// 1,200 steps of H 50: 24 rounds; top-k's outer lr 2.
		let s = Settings::default();
		let m = Method::parse("topk@anneal=4/annealto=1", &s).unwrap();
		let lrs: Vec<f32> = (0..24).map(|r| m.outer_lr_in(r, 24).unwrap()).collect();
		assert_eq!(lrs[..20], [2.0; 20]);
		assert_eq!(lrs[20..], [1.75, 1.5, 1.25, 1.0]);
		assert!(m.settings().contains("outer lr 2 falling to 1 over the last 4 rounds"));
		let plain = Method::parse("topk", &s).unwrap();
		assert_eq!(plain.outer_lr_in(23, 24).unwrap(), 2.0);
		for (key, why) in [
			("topk@anneal=4", "go together"),
			("topk@annealto=1", "go together"),
			("topk@anneal=25/annealto=1", "1 to 24 rounds"),
			("topk@anneal=0/annealto=1", "1 to 24 rounds"),
			("topk@anneal=4/annealto=3", "at most outer lr 2"),
			("topk@anneal=4/annealto=0", "ends above 0"),
			("ddp@anneal=4/annealto=1", "blocking DiLoCo"),
			("topk@anneal=4/annealto=1/overlap=local", "blocking DiLoCo"),
		] {
			let err = Method::parse(key, &s).err().unwrap_or_else(|| panic!("{key} parsed"));
			assert!(err.contains(why), "{key}: {err}");
		}
	}
}
