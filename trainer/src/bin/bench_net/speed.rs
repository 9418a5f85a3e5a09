//! The whole system's bar (issue 25): how fast N trainers on the WAN profile reach a held-out
//! loss, against DDP on the same compute with a free link.
//!
//! Grid: N `grid-trainer` processes run the configuration that met the bytes target in
//! `bench/algorithms.sh` (top-k 32 of 256 at 1 bit with error feedback decayed by 0.9, H
//! inner steps a round, outer lr 3 without momentum, a plain mean) under the WAN profile;
//! their wall time includes every exchange, evaluation and stall. DDP: the same model from
//! the same initialisation, every step one global batch of N × the job's batch (averaging N
//! workers' gradients: the Grid trainers' own batches of that step), in this process, evaluated on the same held-out samples every H
//! steps. Its time is charged as N workers each as fast as a Grid trainer of this run (the
//! trainers' own measured seconds per inner step) with an all-reduce that costs nothing, so
//! the hardware is the same on both sides and DDP's link is unconstrained. Beside both, the
//! job's rounds computed in this process ([`Reference`]): what the algorithm does on this
//! seed without the network, which the daemon must match to the bit.

use std::{fmt::Write as _, time::Duration};

use anyhow::{Context, Result};
use candle_core::Device;
use grid_primitives::Hash;
use grid_trainer::{
	daemon::{config::JobConfig, reference::Reference},
	data::{batch_indices, DataStore},
	model::Model,
	net::keypair_from_seed,
	plot::{line_plot, Axes, Series},
	round::contribute::round_seed,
	train::evaluate,
};
use libp2p::PeerId;
use serde_json::Value;

use super::{
	agreement, field, fixed, loss_curve,
	round_split::{split_table, RoundSplit, SPLIT_PARTS},
	run_all, unix_ms, utilization, Bench, WAN,
};

/// The plots' y axis.
const LOSS_AXIS: &str = "held-out loss (nats/token)";

/// Trainers in the job (as in `bench/algorithms.sh`'s 1,000x run).
const TRAINERS: usize = 4;

/// The run's length (inner steps per trainer and per round) and its job's id, which seeds
/// the initialisation and every data draw: another id is another seed.
struct Length {
	steps: u32,
	h: u32,
	id: u64,
}

impl Length {
	fn rounds(&self) -> u32 {
		self.steps / self.h
	}
}

/// Grid's learning rates: inner (AdamW's peak) and outer, with the outer step's Nesterov
/// momentum (`--lr`, `--outer-lr`, `--outer-momentum`; 0.005, 3 and 0 unless given: the
/// 1,000x configuration's outer lr without momentum, and the inner lr that made as much
/// progress per step as DDP over three seeds at 4,800 steps,
/// `bench/reports/algorithms_long_inner_lr.md`; 0.006, tuned at 1,200 steps, made less),
/// and the outer lr annealed to 1 over the last 16 rounds (`--outer-anneal 16:1`, or
/// `off`): more progress per step on each of the five seeds measured,
/// `bench/reports/speed_sweep/anneal16_job*`).
#[derive(Clone, Copy, Debug)]
pub struct Rates {
	pub lr: f64,
	pub outer_lr: f64,
	pub outer_momentum: f64,
	/// The outer lr's anneal over the job's last rounds (`--outer-anneal R:LR` or `off`).
	pub outer_anneal: Option<Anneal>,
}

impl Default for Rates {
	fn default() -> Self {
		Rates {
			lr: 0.005,
			outer_lr: 3.0,
			outer_momentum: 0.0,
			outer_anneal: Some(Anneal { rounds: 16, to_lr: 1.0 }),
		}
	}
}

/// The job's outer anneal (`TrainingParams::outer_anneal`): its last `rounds` rounds' outer
/// lr falling in a straight line to `to_lr`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anneal {
	pub rounds: u32,
	pub to_lr: f64,
}

impl std::str::FromStr for Anneal {
	type Err = anyhow::Error;

	/// `R:LR`: the last R rounds down to LR.
	fn from_str(s: &str) -> Result<Self> {
		let (rounds, to_lr) = s.split_once(':').context("not ROUNDS:LR")?;
		Ok(Anneal {
			rounds: rounds.parse().with_context(|| format!("{rounds:?} is not a round count"))?,
			to_lr: to_lr.parse().with_context(|| format!("{to_lr:?} is not a learning rate"))?,
		})
	}
}

/// The anneal a run's job has: at most every round (a quick run has fewer rounds than the
/// default anneal spans).
fn anneal_in(rates: Rates, len: &Length) -> Option<Anneal> {
	rates.outer_anneal.map(|a| Anneal { rounds: a.rounds.min(len.rounds()), ..a })
}

/// The outer step of a run in words, for its report.
fn anneal_text(anneal: Option<Anneal>) -> String {
	match anneal {
		None => "no anneal".into(),
		Some(a) => format!("annealed to {} over the last {} rounds", a.to_lr, a.rounds),
	}
}

/// Grid's top-k codec: values kept of every 256, bits a value, the error feedback's decay a
/// round and the dense rounds at the start (`--k`, `--bits`, `--error-decay`,
/// `--dense-rounds`; 32, 1, 0.9 and 0 unless given: the 1,000x configuration's).
#[derive(Clone, Copy, Debug)]
pub struct Codec {
	pub k: u32,
	pub bits: u8,
	pub error_decay: f64,
	pub dense_rounds: u32,
}

impl Default for Codec {
	fn default() -> Self {
		Codec { k: 32, bits: 1, error_decay: 0.9, dense_rounds: 0 }
	}
}

/// What a speed run trains and which of its sides run (`--job-id`, `--lr`, `--outer-lr`,
/// `--outer-momentum`, `--outer-anneal`, `--k`, `--bits`, `--error-decay`, `--dense-rounds`, `--h`, `--reference`, `--daemon`, `--ddp`).
#[derive(Clone, Debug)]
pub struct Options {
	/// The job's id: it seeds the initialisation and every data draw.
	pub job_id: u64,
	pub rates: Rates,
	pub codec: Codec,
	/// Inner steps a round (100 unless given; 20 in a quick run).
	pub h: Option<u32>,
	/// The job's rounds computed in this process beside DDP.
	pub reference: bool,
	/// The Grid variants as real trainer processes (off: DDP and the reference only, the
	/// algorithm on this seed without the network, in a fraction of the time).
	pub daemon: bool,
	/// DDP's curve from an earlier speed report of the same job id, H and length instead of
	/// training DDP again (it depends on nothing else: in-process sweeps of Grid's settings).
	pub ddp_from: Option<std::path::PathBuf>,
}

/// The job both sides train: the 1,000x configuration's model and hyper-parameters, with
/// `rates` the learning rates (DDP's inner lr is tuned separately and its outer step unused)
/// and `overlap` the overlapped steps (0: blocking rounds, as benchmarked).
fn job(len: &Length, rates: Rates, codec: Codec, overlap: u32) -> String {
	format!(
		r#"
		[job]
		id = {id}
		rounds = {rounds}
		dataset = "shakespeare"
		model = {{ kind = "gpt", context = 64, layers = 2, heads = 4, width = 64 }}
		total_steps = {steps}
		adaptive_compression = false
		aggregation = {{ rule = "mean" }}
		eval_samples = 256

		[job.training]
		batch_size = 16
		overlap_steps = {overlap}
		inner = {{ optimizer = "adamw", lr = {lr}, weight_decay = 0.1, warmup_steps = {warmup} }}
		compression = {{ scheme = "topk", chunk = 256, k = {k}, value_bits = {bits} }}
		outer_lr = {outer_lr:?}
		outer_momentum = {outer_momentum:?}
		error_decay = {error_decay:?}
		dense_rounds = {dense_rounds}
		{anneal}
		"#,
		id = len.id,
		rounds = len.rounds(),
		steps = len.steps,
		warmup = len.steps / 20,
		lr = rates.lr,
		outer_lr = rates.outer_lr,
		outer_momentum = rates.outer_momentum,
		k = codec.k,
		bits = codec.bits,
		error_decay = codec.error_decay,
		dense_rounds = codec.dense_rounds,
		anneal = anneal_in(rates, len).map_or(String::new(), |a| format!(
			"outer_anneal = {{ rounds = {}, to_lr = {:?} }}",
			a.rounds, a.to_lr
		)),
	)
}

fn job_config(text: &str) -> Result<JobConfig> {
	#[derive(serde::Deserialize)]
	struct File {
		job: JobConfig,
	}
	Ok(toml::from_str::<File>(text).context("the speed job's TOML")?.job)
}

/// The Grid run's trainers (`LocalNet` names their keys `bench-0`, `bench-1`, …).
fn members() -> Vec<PeerId> {
	(0..TRAINERS).map(|i| keypair_from_seed(&format!("bench-{i}")).public().to_peer_id()).collect()
}

/// DDP's held-out loss every `len.h` steps: (steps, loss), from step 0.
fn ddp_curve(job: &JobConfig, len: &Length, data_dir: &std::path::Path) -> Result<Vec<(u32, f64)>> {
	let dev = Device::Cpu;
	let data = job.dataset(&DataStore::new(data_dir))?;
	let held_out = data.eval_batches(job.eval_samples, 32, &dev)?;
	let mut t = job.inner_trainer(&dev)?;
	let (batch, population) = (u64::from(job.training.batch_size), data.train_len());
	let mut curve = vec![(0, evaluate(t.model(), &held_out)?)];
	for round in 0..len.rounds() {
		// The Grid trainers' own draws: step j's global batch is their j-th batches together.
		let seeds: Vec<Hash> =
			members().iter().map(|m| round_seed(None, job.id, round, m)).collect();
		for j in 0..u64::from(len.h) {
			let idx: Vec<u64> =
				seeds.iter().flat_map(|s| batch_indices(s, j, batch, population)).collect();
			t.step(&data.train_batch(&idx, &dev)?)?;
		}
		curve.push(((round + 1) * len.h, evaluate(t.model(), &held_out)?));
	}
	Ok(curve)
}

/// DDP's curve from an earlier speed report (`network_speed.json`), which must be of the same
/// job id, H and length.
fn earlier_ddp(path: &std::path::Path, len: &Length) -> Result<Vec<(u32, f64)>> {
	let text = std::fs::read_to_string(path).with_context(|| format!("--ddp: reading {path:?}"))?;
	let report: Value =
		serde_json::from_str(&text).with_context(|| format!("--ddp: {path:?} is not JSON"))?;
	let same = |key: &str, want: u64| report[key].as_u64() == Some(want);
	anyhow::ensure!(
		same("job_id", len.id) && same("h", len.h.into()) && same("steps", len.steps.into()),
		"--ddp: {path:?} is not a report of job {} with H {} and {} steps",
		len.id,
		len.h,
		len.steps
	);
	serde_json::from_value(report["ddp_curve"].clone())
		.with_context(|| format!("--ddp: {path:?} has no DDP curve"))
}

/// The job's rounds computed in this process by [`Reference`] with the Grid run's members:
/// per round, the inner steps so far,
/// the held-out loss (evaluated as DDP's is) and the model hash the daemon must reach.
fn reference_curve(
	job: &JobConfig,
	len: &Length,
	data_dir: &std::path::Path,
) -> Result<Vec<(u32, f64, String)>> {
	let dev = Device::Cpu;
	let data = std::sync::Arc::new(job.dataset(&DataStore::new(data_dir))?);
	let held_out = data.eval_batches(job.eval_samples, 32, &dev)?;
	let mut reference = Reference::new(job, data, &members(), &dev)?;
	let model = Model::new(job.model, b"reference", &dev)?;
	let mut curve = Vec::new();
	for round in 0..len.rounds() {
		let state = reference.round(len.h)?;
		model.params().load_flat(&state.weights)?;
		let loss = evaluate(&model, &held_out)?;
		curve.push(((round + 1) * len.h, loss, hex::encode(state.model_hash)));
	}
	Ok(curve)
}

/// DDP's steps to `loss` over a run's steps to it: its progress per step against DDP's.
fn per_step_speed(ddp: &[(u32, f64)], run: &[(u32, f64)], loss: f64) -> Option<f64> {
	let at = |curve: &[(u32, f64)]| curve.iter().find(|p| p.1 <= loss).map(|p| f64::from(p.0));
	Some(at(ddp)? / at(run)?.max(1.0))
}

/// The first time (x) a curve is at or below `loss`.
fn first_at(curve: &[(f64, f64)], loss: f64) -> Option<f64> {
	curve.iter().find(|p| p.1 <= loss).map(|p| p.0)
}

/// One Grid configuration: inner steps overlapped with the round before's exchange (0:
/// blocking rounds) and whether small updates go with their commitments (the daemon's
/// default) or are fetched after them (`inline_updates = false`, the baseline).
#[derive(Clone, Copy, Debug)]
pub struct Variant {
	pub overlap: u32,
	pub inline: bool,
}

impl Variant {
	fn name(&self) -> String {
		let rounds = match self.overlap {
			0 => "blocking".to_string(),
			t => format!("overlapped (τ = {t})"),
		};
		match self.inline {
			true => rounds,
			false => format!("{rounds}, updates fetched"),
		}
	}
}

/// One Grid run's outcome.
struct GridRun {
	variant: Variant,
	curve: Vec<(f64, f64)>,
	step_secs: f64,
	utilization: f64,
	update_bytes: f64,
	agreed_rounds: usize,
	split: RoundSplit,
	/// Trainer 0's held-out loss against the inner steps each trainer had taken.
	steps_curve: Vec<(u32, f64)>,
	/// Trainer 0's model hash per round.
	hashes: Vec<(u64, String)>,
}

fn grid_run(b: &mut Bench, len: &Length, options: &Options, variant: Variant) -> Result<GridRun> {
	let wan = b.scenario("speed_wan.toml", WAN)?;
	let start = unix_ms() + 5000;
	let text = job(len, options.rates, options.codec, variant.overlap);
	let mut net = b.net(TRAINERS, text, fixed(start, len.h))?;
	for node in &mut net.nodes {
		node.extra = format!("{wan}inline_updates = {}\n", variant.inline);
	}
	run_all(&mut net, Duration::from_secs(u64::from(len.steps) + 900))?;
	let everyone: Vec<usize> = (0..TRAINERS).collect();
	let agreed_rounds = agreement(&net, &everyone)?;
	let all: Vec<Vec<Value>> = (0..TRAINERS).map(|i| net.nodes[i].rounds()).collect();
	let (compute, steps) = all
		.iter()
		.flatten()
		.fold((0.0, 0.0), |(c, s), r| (c + field(r, "compute_ms") / 1e3, s + field(r, "steps")));
	let utilization = all.iter().map(|rounds| utilization(rounds).0).sum::<f64>() / TRAINERS as f64;
	let sent: Vec<f64> = all[0].iter().map(|r| field(r, "update_bytes")).collect();
	let split = RoundSplit::of(&all.iter().flatten().collect::<Vec<_>>());
	Ok(GridRun {
		variant,
		curve: loss_curve(&all[0], start),
		steps_curve: all[0]
			.iter()
			.filter_map(|r| {
				let round = u32::try_from(r["round"].as_u64()?).ok()?;
				Some(((round + 1) * len.h, r["eval_loss"].as_f64()?))
			})
			.collect(),
		step_secs: compute / steps.max(1.0),
		utilization,
		update_bytes: sent.iter().sum::<f64>() / sent.len().max(1) as f64,
		agreed_rounds,
		split,
		hashes: net
			.hashes()
			.into_iter()
			.filter_map(|(r, h)| Some((r, h.get(&0)?.clone())))
			.collect(),
	})
}

/// DDP's time to `loss` (its steps × a Grid trainer's seconds per step) over Grid's.
fn speed_at(ddp: &[(u32, f64)], grid: &GridRun, loss: f64) -> Option<(f64, f64)> {
	let ddp: Vec<(f64, f64)> =
		ddp.iter().map(|&(s, l)| (f64::from(s) * grid.step_secs, l)).collect();
	Some((first_at(&ddp, loss)?, first_at(&grid.curve, loss)?))
}

/// Runs DDP and each Grid variant, and returns the report's markdown and JSON.
pub fn bench_speed(
	b: &mut Bench,
	quick: bool,
	variants: &[Variant],
	options: &Options,
) -> Result<(String, Value)> {
	let Options { job_id: id, rates, codec, .. } = *options;
	let (steps, h) = if quick { (240, 20) } else { (4800, 100) };
	let h = options.h.unwrap_or(h);
	anyhow::ensure!(
		h > 0 && steps % h == 0,
		"--h: {h} does not divide the run's {steps} inner steps"
	);
	let len = Length { steps, h, id };
	let variants = if options.daemon { variants } else { &[] };
	let data_dir = b.dir.path().join("speed-datasets");
	let ddp = match &options.ddp_from {
		Some(path) => earlier_ddp(path, &len)?,
		None => ddp_curve(
			&job_config(&job(&len, Rates { lr: 0.01, ..rates }, codec, 0))?,
			&len,
			&data_dir,
		)?,
	};
	let ddp_final = ddp.last().map_or(f64::NAN, |p| p.1);
	eprintln!("speed: DDP done, final held-out loss {ddp_final:.4}");
	let reference = match options.reference {
		true => Some(reference_curve(&job_config(&job(&len, rates, codec, 0))?, &len, &data_dir)?),
		false => None,
	};
	eprintln!("speed: in-process reference done, {:?}", reference.as_ref().map(|r| r.last()));
	let mut runs = Vec::new();
	for &variant in variants {
		let run = grid_run(b, &len, options, variant)?;
		eprintln!("speed: Grid ({}) done, {:?}", variant.name(), run.curve.last());
		runs.push(run);
	}

	let mut md = String::new();
	let _ = writeln!(md, "# The whole system against DDP: time to a held-out loss\n");
	let _ = writeln!(
		md,
		"Generated by `{}`; do not edit by hand.\n",
		std::env::var("BENCH_COMMAND").unwrap_or_else(|_| "bench_net --only speed".into())
	);
	let _ = writeln!(md, "**Grid**: {TRAINERS} `grid-trainer` processes (one compute thread each, on this machine's {} CPU threads) on loopback, every link shaped to 50 Mbit/s, 100 ms RTT, 1% loss; the byte-level GPT (width 64, 2 layers, context 64) on Shakespeare, batch 16, AdamW lr {} with {} warm-up steps and a cosine decay over {} steps, {} rounds of {} inner steps (fixed-step rounds, each waiting for every update), top-k {} of 256 at {} bit{} with error feedback decayed by {} a round, plain mean, outer lr {} {} ({}), {}: the configuration that met the bytes target in `bench/algorithms.sh` (lr 0.005, H 100, k 32 at 1 bit, decay 0.9, outer lr 3 without momentum, no dense rounds; the outer lr annealed to 1 over the last 16 rounds since it measured better on the speed job's seeds) unless `--lr`, `--h`, `--k`, `--bits`, `--error-decay`, `--outer-lr`, `--outer-momentum`, `--outer-anneal`, `--dense-rounds` say otherwise. Each update (about 14 KB) goes with its commitment (`inline_updates`, the default) unless the run says its updates were fetched after their commitments. Its wall time counts from the job's start to the decision of the first round whose held-out loss (256 samples, evaluated by trainer 0) is at or below the target, and includes every exchange, evaluation and wait.\n", std::thread::available_parallelism().map_or(0, |n| n.get()), rates.lr, len.steps / 20, len.steps, len.rounds(), len.h, codec.k, codec.bits, if codec.bits == 1 { "" } else { "s" }, codec.error_decay, rates.outer_lr, momentum_text(rates.outer_momentum), anneal_text(anneal_in(rates, &len)), dense_rounds_text(codec.dense_rounds));
	let _ = writeln!(md, "Job id {id} (it seeds the initialisation and every data draw; `--job-id` for another seed).\n");
	let _ = writeln!(md, "**DDP**: the same model from the same initialisation, one global batch of {TRAINERS} × 16 a step (the average of {TRAINERS} workers' gradients: each step the Grid trainers' batches of that step together, so both sides see the same samples), AdamW lr 0.01 (DDP's tuned lr in `bench/algorithms.sh`), {} steps, evaluated on the same held-out samples every {} steps. Its time is its steps × a Grid trainer's measured seconds per inner step in that run: {TRAINERS} workers as fast as Grid's, with an all-reduce that costs nothing (an unconstrained link). Every DDP figure is therefore a bound DDP cannot beat on this hardware.\n", len.steps, len.h);
	if let Some(path) = &options.ddp_from {
		let _ = writeln!(md, "DDP's curve is an earlier report's (`--ddp {}`), of the same job id, H and length: DDP depends on nothing this run changed.\n", path.display());
	}
	let _ = writeln!(md, "Target (issue 25, the seeds' bar): Grid at >= 80% of DDP's speed (aim >= 90%), speed = DDP's time to a loss / Grid's time to it. The loss is DDP's final one ({ddp_final:.4}) when Grid reaches it; otherwise Grid's best, which DDP reaches earlier in its run (a cosine schedule ending later than that point, which if anything flatters Grid).\n");
	let _ = writeln!(md, "| Grid run | s per inner step | utilization | update bytes | rounds agreed | final loss | target loss | DDP time | Grid time | progress per step vs DDP | speed vs DDP |");
	let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
	let mut json_runs = Vec::new();
	let mut series = Vec::new();
	for run in &runs {
		let grid_best = run.curve.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
		let reached = grid_best <= ddp_final;
		let target = if reached { ddp_final } else { grid_best };
		let at = speed_at(&ddp, run, target);
		let speed = at.map(|(d, g)| d / g.max(1e-9));
		let per_step = per_step_speed(&ddp, &run.steps_curve, target);
		let name = run.variant.name();
		let (d, g) = at.map_or(("–".into(), "–".into()), |(d, g)| {
			(format!("{d:.1} s"), format!("{g:.1} s"))
		});
		let _ = writeln!(
			md,
			"| {name} | {:.4} | {:.1}% | {:.0} | {} of {} | {:.4} | {target:.4} ({}) | {d} | {g} | {} | **{}** |",
			run.step_secs,
			100.0 * run.utilization,
			run.update_bytes,
			run.agreed_rounds,
			len.rounds(),
			run.curve.last().map_or(f64::NAN, |p| p.1),
			if reached { "DDP's final" } else { "Grid's best" },
			per_step.map_or("–".into(), |s| format!("{:.1}%", 100.0 * s)),
			speed.map_or("–".into(), |s| format!("{:.1}%", 100.0 * s)),
		);
		// The same ratio at the losses DDP had a quarter, half and three quarters of the way.
		let marks: Vec<Value> = [(1, 4), (1, 2), (3, 4)]
			.into_iter()
			.filter_map(|(k, q)| {
				let i = (ddp.len() - 1) * k / q;
				let loss = ddp.get(i)?.1;
				let (d, g) = speed_at(&ddp, run, loss)?;
				Some(serde_json::json!({ "loss": loss, "ddp_s": d, "grid_s": g, "speed": d / g }))
			})
			.collect();
		json_runs.push(serde_json::json!({
			"overlap_steps": run.variant.overlap,
			"inline_updates": run.variant.inline,
			"step_secs": run.step_secs,
			"utilization": run.utilization,
			"update_bytes": run.update_bytes,
			"rounds_agreed": run.agreed_rounds,
			"final_loss": run.curve.last().map(|p| p.1),
			"target_loss": target,
			"target_is_ddp_final": reached,
			"ddp_s": at.map(|p| p.0),
			"grid_s": at.map(|p| p.1),
			"speed_vs_ddp": speed,
			"per_step_vs_ddp": per_step,
			"met_80": speed.is_some_and(|s| s >= 0.8),
			"met_90": speed.is_some_and(|s| s >= 0.9),
			"at_earlier_losses": marks,
			"round_ms": run.split.json(),
		}));
		series.push(Series { name: format!("Grid, {name}, WAN"), points: run.curve.clone() });
	}
	let _ = writeln!(md, "\nThe same ratio at the losses DDP had a quarter, half and three quarters of its way (per run, in the JSON's `at_earlier_losses`) shows whether the gap grows or shrinks as training goes on.\n");
	let _ = writeln!(md, "Progress per step: DDP's inner steps to the target loss over Grid's (each trainer's), the statistical half of the speed; utilization, about the other half, is what the network and the round's waits leave of the compute.\n");
	let reference_json = match &reference {
		Some(reference) => reference_section(&mut md, &ddp, reference, &runs),
		None => {
			let _ = writeln!(md, "The in-process reference did not run (`--reference off`).\n");
			Value::Null
		}
	};
	let _ = writeln!(md, "Where a round's time went (ms, mean over every trainer's rounds; JSON `round_ms`): {SPLIT_PARTS}\n");
	split_table(&mut md, "Grid run", runs.iter().map(|r| (r.variant.name(), &r.split)));
	if !options.daemon {
		let _ = writeln!(md, "The daemon did not run (`--daemon off`): DDP and the in-process reference only, the algorithm on this seed without the network, plotted against inner steps.\n");
	}
	let _ = writeln!(md, "![held-out loss](network_speed.svg)\n");
	let svg = match runs.first() {
		Some(run) => {
			let points = ddp.iter().map(|&(s, l)| (f64::from(s) * run.step_secs, l)).collect();
			series.push(Series { name: "DDP, free all-reduce".into(), points });
			let x_label = "seconds since the job started";
			line_plot(&series, &Axes { x_label, y_label: LOSS_AXIS, log_x: false })
		}
		None => steps_plot(&ddp, reference.as_deref().unwrap_or_default()),
	};
	std::fs::write(b.dir.path().join("network_speed.svg"), svg)?;
	let json = serde_json::json!({
		"quick": quick,
		"job_id": id,
		"lr": rates.lr,
		"outer_lr": rates.outer_lr,
		"outer_momentum": rates.outer_momentum,
		"outer_anneal": anneal_in(rates, &len).map(|a| serde_json::json!({ "rounds": a.rounds, "to_lr": a.to_lr })),
		"k": codec.k,
		"bits": codec.bits,
		"error_decay": codec.error_decay,
		"dense_rounds": codec.dense_rounds,
		"daemon": options.daemon,
		"ddp_from": options.ddp_from.as_ref().map(|p| p.display().to_string()),
		"trainers": TRAINERS,
		"steps": len.steps,
		"h": len.h,
		"ddp_final_loss": ddp_final,
		"ddp_curve": ddp,
		"reference": reference_json,
		"runs": json_runs,
	});
	Ok((md, json))
}

/// DDP's and the reference's held-out loss against inner steps (a run without the daemon).
fn steps_plot(ddp: &[(u32, f64)], reference: &[(u32, f64, String)]) -> String {
	let ddp = ddp.iter().map(|&(s, l)| (f64::from(s), l)).collect();
	let grid = reference.iter().map(|p| (f64::from(p.0), p.1)).collect();
	let series = [
		Series { name: "DDP".into(), points: ddp },
		Series { name: "Grid in process".into(), points: grid },
	];
	let x_label = "inner steps per trainer";
	line_plot(&series, &Axes { x_label, y_label: LOSS_AXIS, log_x: false })
}

/// The in-process reference beside DDP (the algorithm and the seed without the network), and
/// whether each blocking Grid run computed its model to the bit, round by round.
fn reference_section(
	md: &mut String,
	ddp: &[(u32, f64)],
	reference: &[(u32, f64, String)],
	runs: &[GridRun],
) -> Value {
	let curve: Vec<(u32, f64)> = reference.iter().map(|p| (p.0, p.1)).collect();
	let ddp_final = ddp.last().map_or(f64::NAN, |p| p.1);
	let best = curve.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
	let final_loss = curve.last().map_or(f64::NAN, |p| p.1);
	let per_step = per_step_speed(ddp, &curve, best.max(ddp_final));
	let _ = writeln!(md, "**In process** (`daemon::reference`: the same job's rounds computed in one process with the Grid run's members, data draws, compressor, aggregation and outer step, every update in every round, no network): final loss {final_loss:.4} ({:+.2}% against DDP's {ddp_final:.4}), {} of DDP's progress per step (DDP's inner steps to the higher of its final loss and the reference's best, over the reference's). This is the network-free figure `bench/algorithms.sh` measures, on this run's seed.\n", 100.0 * (final_loss / ddp_final - 1.0), per_step.map_or("–".into(), |s| format!("{:.1}%", 100.0 * s)));
	let mut matched = Vec::new();
	for run in runs.iter().filter(|r| r.variant.overlap == 0) {
		let same = run
			.hashes
			.iter()
			.filter(|(r, h)| reference.get(*r as usize).is_some_and(|p| &p.2 == h))
			.count();
		let _ = writeln!(
			md,
			"- {}: trainer 0's model is the reference's to the bit in {same} of {} rounds.",
			run.variant.name(),
			reference.len()
		);
		matched.push(serde_json::json!({ "run": run.variant.name(), "rounds_matching": same, "rounds": reference.len() }));
	}
	let _ = writeln!(md);
	serde_json::json!({
		"final_loss": final_loss,
		"vs_ddp": final_loss / ddp_final - 1.0,
		"per_step_speed": per_step,
		"curve": curve,
		"daemon_matches": matched,
	})
}

/// The dense rounds of a run in words, for its report.
fn momentum_text(momentum: f64) -> String {
	if momentum == 0.0 {
		"without momentum".into()
	} else {
		format!("with Nesterov momentum {momentum}")
	}
}

fn dense_rounds_text(n: u32) -> String {
	match n {
		0 => "no dense rounds".into(),
		n => format!(
			"the first {n} round(s) dense (int8 in chunks of 64, the model moved to the trainers' mean: `dense_rounds = {n}`)"
		),
	}
}
