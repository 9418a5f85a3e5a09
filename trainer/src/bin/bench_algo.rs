//! Algorithm benchmark: N simulated participants in one process train the byte-level GPT on
//! Shakespeare with DDP (gradients averaged every step) and with DiLoCo under each compression
//! scheme, on the same data and the same number of samples. Writes a markdown report and a
//! loss-versus-bytes SVG plot.
//!
//! `cargo run --release -p grid-trainer --bin bench_algo -- --out bench/reports [--key value]...`

use std::{collections::BTreeMap, fmt::Write as _, path::PathBuf, time::Instant};

use candle_core::Device;
use grid_primitives::{
	job::{Compression, GptConfig, InnerOptimizer, ModelSpec, Nanos},
	Hash,
};
use grid_trainer::{
	aggregate::{aggregate, Contribution, Rule},
	compress::{compressor, topk::TopKCompressor, CompressedUpdate, Compressor},
	data::{self, shard, TokenDataset},
	diloco::{OuterOptimizer, Participant},
	model::{Batch, Model},
	plot::{line_plot, Axes, Series},
	train::{evaluate, InnerConfig, InnerTrainer},
	Result,
};

const JOB: u64 = 1;
const SEED: &[u8] = b"grid/bench/algorithms";

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
	lr: f64,
	outer_lr: f32,
	outer_momentum: f32,
	sparse_outer_lr: f32,
	sparse_outer_momentum: f32,
	error_decay: f32,
	eval_samples: usize,
	methods: String,
	out: PathBuf,
}

impl Settings {
	fn parse() -> std::result::Result<Self, String> {
		let mut s = Settings {
			participants: 4,
			steps: 1200,
			inner: 50,
			batch: 16,
			layers: 2,
			heads: 4,
			width: 64,
			context: 64,
			lr: 3e-3,
			outer_lr: 1.0,
			outer_momentum: 0.5,
			sparse_outer_lr: 2.0,
			sparse_outer_momentum: 0.0,
			error_decay: 0.9,
			eval_samples: 256,
			methods: "ddp,none,int8,topk,topk16".into(),
			out: PathBuf::from("bench/reports"),
		};
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
				"lr" => s.lr = num(value)?,
				"outer-lr" => s.outer_lr = num(value)? as f32,
				"outer-momentum" => s.outer_momentum = num(value)? as f32,
				"sparse-outer-lr" => s.sparse_outer_lr = num(value)? as f32,
				"sparse-outer-momentum" => s.sparse_outer_momentum = num(value)? as f32,
				"error-decay" => s.error_decay = num(value)? as f32,
				"eval-samples" => s.eval_samples = num(value)? as usize,
				"methods" => s.methods = value.to_string(),
				"out" => s.out = PathBuf::from(value),
				_ => return Err(format!("unknown option --{key}")),
			}
		}
		if s.participants == 0 || s.inner == 0 || !s.steps.is_multiple_of(s.inner) {
			return Err("need participants > 0 and steps a multiple of inner".into());
		}
		Ok(s)
	}

	fn spec(&self) -> ModelSpec {
		ModelSpec::Gpt(GptConfig {
			vocab: 128,
			context: self.context,
			layers: self.layers,
			heads: self.heads,
			width: self.width,
		})
	}

	fn inner_optimizer(&self) -> InnerOptimizer {
		InnerOptimizer::AdamW {
			lr: Nanos((self.lr * 1e9) as u32),
			weight_decay: Nanos(100_000_000),
			warmup_steps: (self.steps / 20) as u32,
		}
	}

	fn inner_config(&self) -> InnerConfig {
		InnerConfig { total_steps: self.steps as u64, clip: Some(1.0), min_lr_ratio: 0.1 }
	}

	fn rounds(&self) -> usize {
		self.steps / self.inner
	}
}

/// One method's result.
struct Run {
	name: String,
	/// (bytes per participant so far, held-out loss) after each synchronization point.
	curve: Vec<(f64, f64)>,
	seconds: f64,
}

impl Run {
	fn final_loss(&self) -> f64 {
		self.curve.last().map(|p| p.1).unwrap_or(f64::NAN)
	}
	fn bytes(&self) -> f64 {
		self.curve.last().map(|p| p.0).unwrap_or(0.0)
	}
}

struct Bench {
	s: Settings,
	data: TokenDataset,
	eval: Vec<Batch>,
	dev: Device,
	params: usize,
}

impl Bench {
	/// Participant `p`'s sample indices for `round` (inner × batch of them).
	fn shard(&self, round: usize, p: usize) -> Vec<u64> {
		let count = self.s.inner * self.s.batch;
		shard(
			&Hash::zero(),
			JOB,
			round as u32,
			&(p as u32).to_le_bytes(),
			self.data.train_len(),
			count,
		)
	}

	/// DDP: every step, all participants' batches form one global batch (averaging the
	/// participants' mean gradients is the gradient of the concatenated batch). Bytes: each
	/// participant sends its f32 gradient and receives the average, 2 × 4P bytes per step.
	fn ddp(&self) -> Result<Run> {
		let start = Instant::now();
		let s = &self.s;
		let mut t =
			InnerTrainer::new(s.spec(), SEED, &self.dev, &s.inner_optimizer(), s.inner_config())?;
		let per_step = 2.0 * 4.0 * self.params as f64;
		let mut curve = vec![(0.0, evaluate(t.model(), &self.eval)?)];
		let mut bytes = 0.0;
		for round in 0..s.rounds() {
			let shards: Vec<Vec<u64>> = (0..s.participants).map(|p| self.shard(round, p)).collect();
			for j in 0..s.inner {
				let idx: Vec<u64> = shards
					.iter()
					.flat_map(|sh| sh[j * s.batch..(j + 1) * s.batch].iter().copied())
					.collect();
				t.step(&self.data.train_batch(&idx, &self.dev)?)?;
				bytes += per_step;
			}
			curve.push((bytes, evaluate(t.model(), &self.eval)?));
			eprintln!("ddp round {round}: loss {:.4}", curve.last().map(|c| c.1).unwrap_or(0.0));
		}
		Ok(Run {
			name: "DDP (f32 all-reduce every step)".into(),
			curve,
			seconds: start.elapsed().as_secs_f64(),
		})
	}

	/// DiLoCo: each round every participant runs `inner` steps from the global model and
	/// publishes its compressed Δ; everyone fetches the others' updates, averages them and
	/// applies the outer Nesterov step. Bytes: each participant uploads its update to N−1
	/// peers and downloads theirs, 2(N−1) × encoded size per round (a full mesh, no relay).
	fn diloco(&self, name: &str, compression: Compression, rule: Rule) -> Result<Run> {
		// Top-k with error feedback: the residual memory already acts as momentum (SparseLoCo),
		// and each round delivers only part of Δ, so sparse runs get their own outer settings.
		let (outer_lr, outer_momentum) = match compression {
			Compression::TopK { .. } => (self.s.sparse_outer_lr, self.s.sparse_outer_momentum),
			_ => (self.s.outer_lr, self.s.outer_momentum),
		};
		let start = Instant::now();
		let s = &self.s;
		let global_model = Model::new(s.spec(), SEED, &self.dev)?;
		let mut global = global_model.params().flatten()?;
		let mut people = Vec::new();
		for _ in 0..s.participants {
			let t = InnerTrainer::new(
				s.spec(),
				SEED,
				&self.dev,
				&s.inner_optimizer(),
				s.inner_config(),
			)?;
			let c: Box<dyn Compressor> = match compression {
				Compression::TopK { chunk, k, value_bits } => Box::new(
					TopKCompressor::new(chunk, k, value_bits, global.len())?
						.with_error_decay(s.error_decay)?,
				),
				_ => compressor(&compression, global.len())?,
			};
			people.push(Participant::new(t, c));
		}
		let mut outer = OuterOptimizer::new(outer_lr, outer_momentum, global.len());
		let mut curve = vec![(0.0, evaluate(&global_model, &self.eval)?)];
		let mut bytes = 0.0;
		let peers = (s.participants - 1) as f64;
		for round in 0..s.rounds() {
			let mut updates = Vec::new();
			for (p, person) in people.iter_mut().enumerate() {
				let idx = self.shard(round, p);
				let batches: Vec<Result<Batch>> =
					idx.chunks(s.batch).map(|c| self.data.train_batch(c, &self.dev)).collect();
				let out = person.run_round(&global, batches)?;
				let wire = out.update.encode();
				bytes += 2.0 * peers * wire.len() as f64 / s.participants as f64;
				let decoded = CompressedUpdate::decode(&wire)?;
				updates.push(Contribution { delta: decoded.decompress(), samples: out.samples });
			}
			let agg = aggregate(&updates, rule, None)?;
			outer.step(&mut global, &agg.delta)?;
			global_model.params().load_flat(&global)?;
			curve.push((bytes, evaluate(&global_model, &self.eval)?));
			eprintln!("{name} round {round}: loss {:.4}", curve.last().map(|c| c.1).unwrap_or(0.0));
		}
		Ok(Run { name: name.into(), curve, seconds: start.elapsed().as_secs_f64() })
	}
}

/// A DiLoCo method by name: its label, compression and aggregation (the mean, unless named
/// `-trimmed`: the trimmed mean chain jobs use, one value off each end).
fn method(name: &str) -> Option<(String, Compression, Rule)> {
	if let Some(base) = name.strip_suffix("-trimmed") {
		let (label, compression, _) = method(base)?;
		let rule = Rule::TrimmedMean { trim: 1 };
		return Some((format!("{label}, trimmed mean (trim 1)"), compression, rule));
	}
	let (label, compression) = match name {
		"none" => ("DiLoCo, f32".into(), Compression::None),
		"int8" => ("DiLoCo, int8 (chunk 256)".into(), Compression::Int8 { chunk: 256 }),
		"topk" => (
			"DiLoCo, top-k 8/256, 2-bit, error feedback".into(),
			Compression::TopK { chunk: 256, k: 8, value_bits: 2 },
		),
		"topk4" => (
			"DiLoCo, top-k 4/256, 2-bit, error feedback".into(),
			Compression::TopK { chunk: 256, k: 4, value_bits: 2 },
		),
		"topk1" => (
			"DiLoCo, top-k 1/256, 1-bit, error feedback".into(),
			Compression::TopK { chunk: 256, k: 1, value_bits: 1 },
		),
		"topk16" => (
			"DiLoCo, top-k 16/1024, 2-bit, error feedback".into(),
			Compression::TopK { chunk: 1024, k: 16, value_bits: 2 },
		),
		_ => return None,
	};
	Some((label, compression, Rule::Mean))
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

/// A log-x line plot of held-out loss against bytes per participant.
fn svg(runs: &[Run]) -> String {
	let series: Vec<Series> = runs
		.iter()
		.map(|r| Series { name: r.name.clone(), points: r.curve.iter().skip(1).copied().collect() })
		.collect();
	line_plot(
		&series,
		&Axes {
			x_label: "bytes sent + received per participant (log scale)",
			y_label: "held-out loss (nats/token)",
			log_x: true,
		},
	)
}

fn report(s: &Settings, params: usize, runs: &[Run], command: &str) -> String {
	let mut md = String::new();
	let ddp = runs.iter().find(|r| r.name.starts_with("DDP"));
	let _ = writeln!(md, "# Algorithm benchmark: DDP vs DiLoCo with compression\n");
	let _ = writeln!(md, "Generated by `bench/algorithms.sh` (the `bench_algo` binary of `grid-trainer`); do not edit by hand.\n");
	let _ = writeln!(md, "## Setup\n");
	let _ = writeln!(md, "- Model: byte-level GPT, {} layers, {} heads, width {}, context {}, vocabulary 128: **{params} parameters**.", s.layers, s.heads, s.width, s.context);
	let _ = writeln!(md, "- Data: `data/shakespeare.txt` (hash-checked); training windows drawn by `data::shard(seed 0, job, round, participant)`, held-out loss on {} fixed windows of the last 10% of the file.", s.eval_samples);
	let _ = writeln!(md, "- {} simulated participants, {} inner steps each of batch {} × {} tokens ({} samples per participant, {} in total, the same for every method).", s.participants, s.steps, s.batch, s.context, s.steps * s.batch, s.steps * s.batch * s.participants);
	let _ = writeln!(md, "- Inner optimizer: AdamW (β 0.9/0.95, weight decay 0.1), peak lr {}, {} warm-up steps, cosine to 10%, gradient clip 1.0.", s.lr, s.steps / 20);
	let _ = writeln!(md, "- DDP: one global batch of {} × {} per step ({} steps), i.e. the participants' gradients averaged every step.", s.participants, s.batch, s.steps);
	let _ = writeln!(md, "- DiLoCo: {} rounds of H = {} inner steps; Δ averaged with weights = samples (methods marked \"trimmed mean\": the chain jobs' rule instead, per coordinate over the updates that sent it, one value off each end, weighted by their share). Outer Nesterov step: lr {}, momentum {} for f32 and int8; lr {}, momentum {} for top-k, whose error feedback already accumulates like momentum (as in SparseLoCo) and whose rounds deliver only part of Δ. Top-k error memory decays by {} per round (`TopKCompressor::with_error_decay`).\n", s.rounds(), s.inner, s.outer_lr, s.outer_momentum, s.sparse_outer_lr, s.sparse_outer_momentum, s.error_decay);
	let _ = writeln!(md, "## Byte accounting\n");
	let _ = writeln!(
		md,
		"Bytes are counted per participant, sent plus received, over the whole run.\n"
	);
	let _ = writeln!(md, "- DDP: each participant sends its f32 gradient and receives the averaged one, 2 × 4P bytes per step (P parameters). This is the least any DDP worker moves; a ring all-reduce moves 4(N−1)/N × 4P (1.5x more at N = 4), so the ratios below are conservative.");
	let _ = writeln!(md, "- DiLoCo is charged for the simple full-mesh exchange of the recommended design (each participant publishes its compressed Δ, every other participant fetches it): per round, (N−1) uploads and (N−1) downloads of the exact encoded size (`CompressedUpdate::encode().len()`, header included).");
	let _ = writeln!(
		md,
		"- Commitments, signatures and transport framing are not counted for either.\n"
	);
	let _ = writeln!(md, "## Results\n");
	let _ = writeln!(md, "| method | final held-out loss | vs DDP loss | bytes per participant | fewer bytes than DDP | wall time |");
	let _ = writeln!(md, "|---|---|---|---|---|---|");
	for r in runs {
		let (dl, ratio) = match ddp {
			Some(d) => (
				format!("{:+.2}%", 100.0 * (r.final_loss() / d.final_loss() - 1.0)),
				format!("{:.0}x", d.bytes() / r.bytes()),
			),
			None => ("-".into(), "-".into()),
		};
		let _ = writeln!(
			md,
			"| {} | {:.4} | {dl} | {} ({:.0}) | {ratio} | {:.0} s |",
			r.name,
			r.final_loss(),
			human_bytes(r.bytes()),
			r.bytes(),
			r.seconds
		);
	}
	let _ = writeln!(
		md,
		"\nInitial held-out loss: {:.4}.\n",
		runs.first().map(|r| r.curve[0].1).unwrap_or(f64::NAN)
	);
	if let Some(d) = ddp {
		let _ =
			writeln!(md, "## Target: ≥ 1,000x fewer bytes than DDP at ≤ 2% higher final loss\n");
		for r in runs.iter().filter(|r| !r.name.starts_with("DDP")) {
			let ratio = d.bytes() / r.bytes();
			let dl = r.final_loss() / d.final_loss() - 1.0;
			let met = ratio >= 1000.0 && dl <= 0.02;
			let _ = writeln!(
				md,
				"- {}: {:.0}x fewer bytes, loss {:+.2}% → **{}**",
				r.name,
				ratio,
				100.0 * dl,
				if met { "met" } else { "missed" }
			);
		}
		let _ = writeln!(md);
	}
	let _ = writeln!(md, "![held-out loss against bytes](algorithms.svg)\n");
	let _ = writeln!(
		md,
		"## Loss curves (bytes per participant, held-out loss) at each synchronization\n"
	);
	for r in runs {
		let pts: Vec<String> =
			r.curve.iter().map(|(b, l)| format!("({}, {l:.3})", human_bytes(*b))).collect();
		let _ = writeln!(md, "- {}: {}", r.name, pts.join(", "));
	}
	let _ = writeln!(md, "\n## Reproduce\n\n```sh\n{command}\n```");
	md
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
	grid_trainer::malloc::retain_freed_memory();
	let s = Settings::parse()?;
	let dev = Device::Cpu;
	let data = data::shakespeare(s.context as usize)?;
	data.check_vocab(128)?;
	let eval = data.eval_batches(s.eval_samples, 64, &dev)?;
	let params = s.spec().parameters().ok_or("the model is too large to count")? as usize;
	let bench = Bench { s: s.clone(), data, eval, dev, params };
	let mut runs = Vec::new();
	let mut seen = BTreeMap::new();
	for name in s.methods.split(',') {
		if seen.insert(name.to_string(), ()).is_some() {
			continue;
		}
		let run = if name == "ddp" {
			bench.ddp()?
		} else {
			let (label, compression, rule) =
				method(name).ok_or_else(|| format!("unknown method {name}"))?;
			bench.diloco(&label, compression, rule)?
		};
		eprintln!(
			"{}: final loss {:.4}, {} per participant, {:.0} s",
			run.name,
			run.final_loss(),
			human_bytes(run.bytes()),
			run.seconds
		);
		runs.push(run);
	}
	std::fs::create_dir_all(&s.out)?;
	let command = std::env::var("BENCH_COMMAND").unwrap_or_else(|_| "bench/algorithms.sh".into());
	std::fs::write(s.out.join("algorithms.md"), report(&s, params, &runs, &command))?;
	std::fs::write(s.out.join("algorithms.svg"), svg(&runs))?;
	Ok(())
}
