//! GPU providers end to end (issue 27): on a real `grid-node --dev`, provider daemons
//! (`grid-trainer provide`, each its own account and libp2p identity) train chain jobs on a GPU
//! they share, are paid, and agree on every round's model.
//!
//! - Job 0, the large one: a byte-level GPT (by default 28 layers of width 1,024, context 256:
//!   353M parameters) on the shipped Tiny Shakespeare, `--gpu-providers` members, all on the
//!   GPU (`--device`), its updates SparseLoCo's tiles (64 of 4,096).
//! - Job 1, the mixed one: a small GPT trained by `--mixed-gpu` GPU providers and
//!   `--mixed-cpu` CPU providers together (posted once job 0 has started, so that its
//!   providers join it and not job 0).
//!
//! Read back: from the chain, each round's opening, proofs, quorum, payments (who, how much)
//! and settlement; from each provider, its round records (model, steps, samples, compute and
//! exchange time, held-out loss) and the device its log says it trained on. The run passes when
//! every job completes, every round settles with a result, every member's record holds the same
//! model each round, and every member is paid every round; the report is written either way.
//!
//! `--device cpu` runs the same on a machine without a GPU (a rehearsal with small models).
//!
//! usage: gpu_job [--gpu-providers 2] [--large C,L,H,W] [--large-batch 8] [--mixed-gpu 1]
//!                [--mixed-cpu 1] [--small C,L,H,W] [--small-batch 16] [--device cuda]
//!                [--rounds 2] [--round-blocks 15] [--max-steps 40] [--grace-ms 3000]
//!                [--fetch-ms 20000] [--threads 4] [--eval-samples 200] [--budget-s S] [--out DIR] [--keep DIR]
//!                [--provider-line 'checks_beside_training = false'] (a line for every provider's file)
//! Writes DIR/gpu_e2e.md and DIR/gpu_e2e.json.

use std::{
	collections::BTreeMap,
	path::{Path, PathBuf},
	time::{Duration, Instant},
};

use anyhow::{bail, ensure, Context, Result};
use grid_e2e_tests::{
	network::{dev_account, dev_node, fund_providers, post_job, url, wait_status, STAKE},
	rounds::{read_job, JobEvents},
	trainers::{wait_finished, Provider, ProviderSpec},
	wait_for, Node,
};
use grid_primitives::{
	currency::UNIT,
	job::{ExchangeWindow, GptConfig, ModelSpec, MAX_MODEL_PARAMS},
};
use serde_json::{json, Value};

/// Seconds per block of the dev chain.
const BLOCK_SECS: u64 = grid_primitives::time::MILLI_SECS_PER_BLOCK / 1_000;

struct Args {
	gpu_providers: usize,
	large: GptConfig,
	large_batch: u32,
	mixed_gpu: usize,
	mixed_cpu: usize,
	small: GptConfig,
	small_batch: u32,
	device: String,
	rounds: u32,
	round_blocks: u32,
	max_steps: u32,
	exchange: ExchangeWindow,
	threads: usize,
	eval_samples: usize,
	/// Lines for every provider's file (top level).
	provider_lines: Vec<String>,
	/// The whole run's time limit, setup included.
	budget: Duration,
	out: PathBuf,
	keep: Option<PathBuf>,
}

/// A byte-level GPT from `context,layers,heads,width`.
fn gpt(text: &str) -> Result<GptConfig> {
	let parts: Vec<u32> = text
		.split(',')
		.map(|p| p.trim().parse().with_context(|| format!("{text:?}: {p:?} is not a number")))
		.collect::<Result<_>>()?;
	let [context, layers, heads, width] = parts[..] else {
		bail!("{text:?}: expected context,layers,heads,width")
	};
	let layers = u16::try_from(layers).context("layers")?;
	let heads = u16::try_from(heads).context("heads")?;
	Ok(GptConfig { vocab: 256, context, layers, heads, width })
}

fn args() -> Result<Args> {
	let mut a = Args {
		// Two: a provider's host holds about 30 copies of the model at its peak (about 40 GB
		// at 353M parameters, bench/README.md), and the GPU machines have 128 GiB.
		gpu_providers: 2,
		large: gpt("256,28,16,1024")?,
		large_batch: 8,
		mixed_gpu: 1,
		mixed_cpu: 1,
		small: gpt("64,2,4,64")?,
		small_batch: 16,
		device: "cuda".into(),
		// Two rounds of 15 blocks: a 353M provider needs about 34 s from joining to its first
		// exchange (10-block rounds left round 0 unpaid), and kept about 12.7 GB of
		// committed states a round (a third round of two providers filled an H200 machine's
		// 64 GiB disk; bench/README.md, "GPU providers end to end"); 7.1 GB since shared
		// moments are stored once, not yet tried with more rounds.
		rounds: 2,
		round_blocks: 15,
		max_steps: 40,
		exchange: ExchangeWindow { grace_ms: 3_000, fetch_ms: 20_000, fan_in: None },
		threads: 4,
		eval_samples: 200,
		provider_lines: Vec::new(),
		budget: Duration::ZERO,
		out: PathBuf::from("bench/reports"),
		keep: None,
	};
	let mut words = std::env::args().skip(1);
	while let Some(flag) = words.next() {
		let value = words.next().with_context(|| format!("{flag} needs a value"))?;
		match flag.as_str() {
			"--gpu-providers" => a.gpu_providers = value.parse()?,
			"--large" => a.large = gpt(&value)?,
			"--large-batch" => a.large_batch = value.parse()?,
			"--mixed-gpu" => a.mixed_gpu = value.parse()?,
			"--mixed-cpu" => a.mixed_cpu = value.parse()?,
			"--small" => a.small = gpt(&value)?,
			"--small-batch" => a.small_batch = value.parse()?,
			"--device" => a.device = value,
			"--rounds" => a.rounds = value.parse()?,
			"--round-blocks" => a.round_blocks = value.parse()?,
			"--max-steps" => a.max_steps = value.parse()?,
			"--grace-ms" => a.exchange.grace_ms = value.parse()?,
			"--fetch-ms" => a.exchange.fetch_ms = value.parse()?,
			"--threads" => a.threads = value.parse()?,
			"--eval-samples" => a.eval_samples = value.parse()?,
			"--provider-line" => a.provider_lines.push(value),
			"--budget-s" => a.budget = Duration::from_secs(value.parse()?),
			"--out" => a.out = value.into(),
			"--keep" => a.keep = Some(value.into()),
			other => bail!("unknown option {other} (see the usage in tests/src/bin/gpu_job.rs)"),
		}
	}
	ensure!(
		a.gpu_providers == 0 || a.gpu_providers >= 2,
		"--gpu-providers: 0 (no large job) or at least 2 (a job is verified by its members)"
	);
	ensure!(a.mixed_gpu + a.mixed_cpu != 1, "the mixed job needs 0 or at least 2 members");
	ensure!(a.gpu_providers + a.mixed_gpu + a.mixed_cpu > 0, "no provider to run");
	ensure!((1..=20).contains(&a.rounds), "--rounds must be 1..=20");
	if a.budget.is_zero() {
		// Setup, then each round's blocks three times over.
		a.budget = Duration::from_secs(240 + 3 * BLOCK_SECS * u64::from(a.round_blocks * a.rounds));
	}
	ensure!(
		a.exchange.fits(u64::from(a.round_blocks)),
		"the exchange's allowance ({} ms) may be at most half the round ({} blocks of 6 s)",
		a.exchange.allowance_ms(),
		a.round_blocks
	);
	Ok(a)
}

/// One job of the run: its spec and who trains it.
struct JobPlan {
	id: u64,
	label: &'static str,
	model: GptConfig,
	batch: u32,
	/// (name, device) of each member.
	members: Vec<(String, String)>,
	compression: &'static str,
}

impl JobPlan {
	fn spec(&self, a: &Args) -> String {
		let m = self.model;
		let n = self.members.len();
		format!(
			"dataset = \"shakespeare\"\n\
			 model = {{ kind = \"gpt\", context = {}, layers = {}, heads = {}, width = {} }}\n\
			 rounds = {}\nreward_per_round = 30\nmin_providers = {n}\nmax_providers = {n}\n\
			 min_provider_stake = 100\n\n[training]\nround_blocks = {}\nbatch_size = {}\n\
			 max_steps = {}\ninner = {{ optimizer = \"adamw\", lr = 0.0003, warmup_steps = 10 }}\n\
			 outer_lr = 0.7\nouter_momentum = 0.5\nexchange = {{ grace_ms = {}, fetch_ms = {} }}\n\
			 compression = {}\n",
			m.context,
			m.layers,
			m.heads,
			m.width,
			a.rounds,
			a.round_blocks,
			self.batch,
			a.max_steps,
			a.exchange.grace_ms,
			a.exchange.fetch_ms,
			self.compression,
		)
	}

	fn parameters(&self) -> u64 {
		ModelSpec::Gpt(self.model).parameters().unwrap_or(0)
	}
}

/// The jobs `a` asks for, job ids in posting order.
fn plans(a: &Args) -> Vec<JobPlan> {
	let named = |prefix: &str, count: usize, device: &str| {
		(0..count).map(|i| (format!("{prefix}-{i}"), device.to_owned())).collect::<Vec<_>>()
	};
	let mut plans = Vec::new();
	if a.gpu_providers > 0 {
		plans.push(JobPlan {
			id: 0,
			label: "large",
			model: a.large,
			batch: a.large_batch,
			members: named("gpu", a.gpu_providers, &a.device),
			compression: "{ scheme = \"tiles\", k = 64 }",
		});
	}
	if a.mixed_gpu + a.mixed_cpu > 0 {
		let mut members = named("mixed-gpu", a.mixed_gpu, &a.device);
		members.extend(named("mixed-cpu", a.mixed_cpu, "cpu"));
		plans.push(JobPlan {
			id: plans.len() as u64,
			label: "mixed",
			model: a.small,
			batch: a.small_batch,
			members,
			compression: "{ scheme = \"int8\", chunk = 256 }",
		});
	}
	plans
}

/// Starts a job's providers, posts it and waits for it to start (every member joined).
fn launch(
	node: &Node,
	root: &Path,
	a: &Args,
	plan: &JobPlan,
	deadline: Instant,
) -> Result<(Vec<Provider>, f64)> {
	let url = url(node);
	let from = node.best_number()?;
	let providers: Vec<Provider> = plan
		.members
		.iter()
		.map(|(name, device)| {
			let account = format!("//{name}");
			let extra = std::iter::once(format!("device = \"{device}\""))
				.chain(a.provider_lines.iter().cloned())
				.collect::<Vec<_>>()
				.join("\n");
			let spec = ProviderSpec {
				threads: a.threads,
				eval_samples: a.eval_samples,
				max_parameters: Some(MAX_MODEL_PARAMS),
				..ProviderSpec::new(name, &account, STAKE, &extra)
			};
			Provider::start(root, &url, &spec)
		})
		.collect::<Result<_>>()?;
	let posted = Instant::now();
	post_job(&url, root, &plan.spec(a), plan.id)?;
	// Each member builds the model and measures its device before it registers and joins.
	let left = deadline.saturating_duration_since(Instant::now());
	let started = wait_for(&format!("job {} to start", plan.id), left, || {
		read_job(node, plan.id, from).ok()?.started
	});
	if let Err(e) = started {
		bail!("{e}\n{}", grid_e2e_tests::network::logs(&providers));
	}
	let setup_s = posted.elapsed().as_secs_f64();
	eprintln!("job {} ({}) started after {setup_s:.0} s", plan.id, plan.label);
	Ok((providers, setup_s))
}

/// What one job's run left behind.
struct Outcome<'a> {
	plan: &'a JobPlan,
	setup_s: f64,
	completed: bool,
	events: JobEvents,
	/// Per member: its round records and the device its log names.
	records: Vec<Vec<Value>>,
	devices: Vec<String>,
	/// Per member, its peak resident memory (MiB, `VmHWM`), read before it stops.
	peak_rss_mib: Vec<Option<u64>>,
	accounts: Vec<polkadot_sdk::sp_core::crypto::AccountId32>,
}

impl Outcome<'_> {
	/// Rounds (in order) with the share of members whose record holds the most common model.
	fn agreement(&self) -> BTreeMap<u64, f64> {
		let mut by_round: BTreeMap<u64, Vec<String>> = BTreeMap::new();
		for records in &self.records {
			for r in records {
				let (Some(round), Some(hash)) = (r["round"].as_u64(), r["model_hash"].as_str())
				else {
					continue;
				};
				by_round.entry(round).or_default().push(hash.to_owned());
			}
		}
		let members = self.records.len().max(1) as f64;
		by_round
			.into_iter()
			.map(|(round, hashes)| {
				let most = hashes
					.iter()
					.map(|h| hashes.iter().filter(|x| *x == h).count())
					.max()
					.unwrap_or(0);
				(round, most as f64 / members)
			})
			.collect()
	}

	/// Per member, the rounds it was paid for and the total (GRID).
	fn payments(&self) -> Vec<(usize, f64)> {
		self.accounts
			.iter()
			.map(|who| {
				let paid: Vec<u128> = self
					.events
					.rounds
					.values()
					.filter_map(|r| r.paid_to.iter().find(|(w, _)| w == who).map(|(_, a)| *a))
					.collect();
				(paid.len(), paid.iter().sum::<u128>() as f64 / UNIT as f64)
			})
			.collect()
	}

	/// Per member: tokens trained per second of its compute, over every round it recorded.
	fn tokens_per_s(&self) -> Vec<Option<f64>> {
		let context = f64::from(self.plan.model.context);
		self.records
			.iter()
			.map(|records| {
				let samples: f64 = records.iter().filter_map(|r| r["samples"].as_f64()).sum();
				let ms: f64 = records.iter().filter_map(|r| r["compute_ms"].as_f64()).sum();
				(ms > 0.0).then(|| samples * context / (ms / 1e3))
			})
			.collect()
	}

	/// Why the run does not pass, if it does not.
	fn failures(&self, rounds: u32) -> Vec<String> {
		let mut why = Vec::new();
		if !self.completed {
			why.push("did not complete in time".to_owned());
		}
		let with_result = self.events.rounds.values().filter(|r| r.result).count();
		if with_result < rounds as usize {
			why.push(format!("{with_result} of {rounds} rounds settled with a result"));
		}
		let agreement = self.agreement();
		if agreement.len() < rounds as usize || agreement.values().any(|s| *s < 1.0) {
			why.push(format!("members' models differ or are missing: {agreement:?}"));
		}
		for (i, (paid, _)) in self.payments().iter().enumerate() {
			if *paid < rounds as usize {
				why.push(format!("{} paid for {paid} of {rounds} rounds", self.plan.members[i].0));
			}
		}
		for (i, device) in self.devices.iter().enumerate() {
			let asked = &self.plan.members[i].1;
			let on_gpu = device.starts_with("Cuda");
			if (asked == "cpu") == on_gpu {
				why.push(format!(
					"{} asked for {asked} but trained on {device}",
					self.plan.members[i].0
				));
			}
		}
		why
	}

	fn headline(&self, rounds: u32) -> Value {
		let payments = self.payments();
		let tokens = self.tokens_per_s();
		let members: Vec<Value> = self
			.plan
			.members
			.iter()
			.enumerate()
			.map(|(i, (name, _))| {
				let records = &self.records[i];
				let mean = |field: &str| {
					let xs: Vec<f64> = records.iter().filter_map(|r| r[field].as_f64()).collect();
					(!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
				};
				json!({
					"name": name,
					"device": self.devices[i],
					"peak_rss_mib": self.peak_rss_mib[i],
					"rounds_recorded": records.len(),
					"rounds_paid": payments[i].0,
					"paid_grid": payments[i].1,
					"tokens_per_s": tokens[i],
					"steps_mean": mean("steps"),
					"compute_ms_mean": mean("compute_ms"),
					"exchange_ms_mean": mean("exchange_ms"),
					"update_bytes_mean": mean("update_bytes"),
					"eval_loss": records.iter().map(|r| r["eval_loss"].clone()).collect::<Vec<_>>(),
				})
			})
			.collect();
		json!({
			"job": self.plan.id,
			"label": self.plan.label,
			"model": { "kind": "gpt", "context": self.plan.model.context, "layers": self.plan.model.layers,
				"heads": self.plan.model.heads, "width": self.plan.model.width },
			"parameters": self.plan.parameters(),
			"batch": self.plan.batch,
			"setup_s": self.setup_s,
			"completed": self.completed,
			"rounds_with_result": self.events.rounds.values().filter(|r| r.result).count(),
			"agreement": self.agreement().values().copied().collect::<Vec<_>>(),
			"members": members,
			"failures": self.failures(rounds),
		})
	}
}

/// A running provider's peak resident memory (MiB), from `/proc`.
fn peak_rss_mib(provider: &Provider) -> Option<u64> {
	let status = std::fs::read_to_string(format!("/proc/{}/status", provider.pid()?)).ok()?;
	let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
	let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
	Some(kib / 1024)
}

/// The device a provider's log says it trained on (`training on Cuda(..)`).
fn device_of(provider: &Provider) -> String {
	provider
		.log()
		.lines()
		.find_map(|l| l.split_once("training on ").map(|(_, d)| d.trim().to_owned()))
		.unwrap_or_else(|| "unknown".into())
}

fn markdown(outcomes: &[Outcome], a: &Args) -> String {
	let mut md = format!(
		"# GPU providers end to end: chain jobs trained on a shared GPU\n\n\
		 Generated by `bench/gpu_e2e.sh` (`tests/src/bin/gpu_job.rs`, through `scripts/gpu.sh \
		 run`); do not edit by hand. Headline figures in `gpu_e2e.json`; GPU use sampled by \
		 `nvidia-smi` in `gpu_e2e_smi.csv`, the run's log in `gpu_e2e.log`.\n\n\
		 One `grid-node --dev` (6 s blocks); every provider a `grid-trainer provide` process \
		 with its own account ({STAKE} GRID staked) and libp2p identity on loopback, {} \
		 compute threads each; the GPU providers share the one GPU. Jobs on the shipped Tiny \
		 Shakespeare (byte-level GPT), {} rounds of {} blocks, at most {} inner steps a round \
		 (AdamW, lr 3e-4), the job's exchange {} ms of grace and {} ms of fetch wait.\n\n\
		 | job | model | parameters | batch × context | members | setup (s) | completed | rounds with a result | members agreeing (worst round) | verdict |\n\
		 |---|---|---:|---|---|---:|---|---:|---:|---|\n",
		a.threads,
		a.rounds,
		a.round_blocks,
		a.max_steps,
		a.exchange.grace_ms,
		a.exchange.fetch_ms,
	);
	for o in outcomes {
		let m = o.plan.model;
		let failures = o.failures(a.rounds);
		md += &format!(
			"| {} ({}) | GPT {} layers × {} wide, {} heads | {:.1}M | {} × {} | {} | {:.0} | {} | {}/{} | {:.0}% | {} |\n",
			o.plan.id,
			o.plan.label,
			m.layers,
			m.width,
			m.heads,
			o.plan.parameters() as f64 / 1e6,
			o.plan.batch,
			m.context,
			o.devices.join(", "),
			o.setup_s,
			if o.completed { "yes" } else { "no" },
			o.events.rounds.values().filter(|r| r.result).count(),
			a.rounds,
			100.0 * o.agreement().values().copied().reduce(f64::min).unwrap_or(0.0),
			if failures.is_empty() { "passed".into() } else { failures.join("; ") },
		);
	}
	md += "\n## Providers\n\n| job | provider | device | rounds recorded | rounds paid | paid (GRID) | inner steps per round | compute per round (ms) | tokens/s | exchange and wait (ms) | update (KB) | peak host memory (MiB) | held-out loss per round |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
	for o in outcomes {
		for m in o.headline(a.rounds)["members"].as_array().into_iter().flatten() {
			let num =
				|k: &str, d: usize| m[k].as_f64().map_or("n/a".into(), |x| format!("{x:.d$}"));
			let losses: Vec<String> = m["eval_loss"]
				.as_array()
				.into_iter()
				.flatten()
				.map(|l| l.as_f64().map_or("-".into(), |x| format!("{x:.3}")))
				.collect();
			md += &format!(
				"| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
				o.plan.id,
				m["name"].as_str().unwrap_or_default(),
				m["device"].as_str().unwrap_or_default(),
				m["rounds_recorded"],
				m["rounds_paid"],
				num("paid_grid", 1),
				num("steps_mean", 0),
				num("compute_ms_mean", 0),
				num("tokens_per_s", 0),
				num("exchange_ms_mean", 0),
				m["update_bytes_mean"].as_f64().map_or("n/a".into(), |b| format!("{:.0}", b / 1e3)),
				num("peak_rss_mib", 0),
				losses.join(", "),
			);
		}
	}
	md += "\n## Round timeline (blocks of 6 s)\n\n| job | round | opened | members | proofs | attesting the quorum | quorum | paid | settled | paid to |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
	for o in outcomes {
		for (index, r) in &o.events.rounds {
			let block = |b: Option<u32>| b.map_or("-".into(), |b| b.to_string());
			md += &format!(
				"| {} | {index} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
				o.plan.id,
				block(r.opened),
				r.members,
				r.proofs,
				r.attested,
				block(r.quorum.map(|(b, _)| b)),
				block(r.paid),
				block(r.settled),
				r.paid_to.len(),
			);
		}
	}
	md += "\n*Tokens/s*: a provider's samples × context over its compute time (the inner steps, \
	       its share of the GPU while the others train too), over every round it recorded. \
	       *Exchange and wait*: from the end of a round's compute to its aggregated model. \
	       *Members agreeing*: the share of members whose round record holds the round's most \
	       common model.\n";
	md
}

fn main() -> Result<()> {
	let a = args()?;
	let deadline = Instant::now() + a.budget;
	let temporary = tempfile::tempdir()?;
	let root = a.keep.clone().unwrap_or_else(|| temporary.path().to_owned());
	std::fs::create_dir_all(&root)?;
	let plans = plans(&a);
	let node = dev_node(&root)?;
	let from = node.best_number()?;
	let names: Vec<&String> = plans.iter().flat_map(|p| p.members.iter().map(|(n, _)| n)).collect();
	let accounts = names.iter().map(|n| dev_account(n)).collect::<Result<Vec<_>>>()?;
	fund_providers(&node, &accounts)?;
	let mut launched = Vec::new();
	for plan in &plans {
		launched.push(launch(&node, &root, &a, plan, deadline)?);
	}
	let url = url(&node);
	let done: Vec<bool> = plans
		.iter()
		.zip(&launched)
		.map(|(plan, (providers, _))| {
			let left = deadline.saturating_duration_since(Instant::now());
			let done = wait_status(&url, plan.id, left, providers, |s| s.contains("completed"));
			if let Err(e) = &done {
				eprintln!("job {}: {e:#}", plan.id);
			}
			done.is_ok()
		})
		.collect();
	for ((plan, (providers, _)), completed) in plans.iter().zip(&launched).zip(&done) {
		if *completed {
			wait_finished(providers, plan.id);
		}
	}
	let mut outcomes = Vec::new();
	for ((plan, (providers, setup_s)), completed) in plans.iter().zip(&launched).zip(done) {
		let accounts =
			plan.members.iter().map(|(name, _)| dev_account(name)).collect::<Result<Vec<_>>>()?;
		outcomes.push(Outcome {
			plan,
			setup_s: *setup_s,
			completed,
			events: read_job(&node, plan.id, from)?,
			records: providers.iter().map(|p| p.rounds(plan.id)).collect(),
			devices: providers.iter().map(device_of).collect(),
			peak_rss_mib: providers.iter().map(peak_rss_mib).collect(),
			accounts,
		});
	}
	std::fs::create_dir_all(&a.out)?;
	std::fs::write(a.out.join("gpu_e2e.md"), markdown(&outcomes, &a))?;
	let json = json!({
		"device": a.device,
		"rounds": a.rounds,
		"round_blocks": a.round_blocks,
		"max_steps": a.max_steps,
		"exchange": { "grace_ms": a.exchange.grace_ms, "fetch_ms": a.exchange.fetch_ms },
		"jobs": outcomes.iter().map(|o| o.headline(a.rounds)).collect::<Vec<_>>(),
	});
	std::fs::write(a.out.join("gpu_e2e.json"), serde_json::to_string_pretty(&json)? + "\n")?;
	eprintln!("wrote {}", a.out.join("gpu_e2e.md").display());
	let failures: Vec<String> = outcomes
		.iter()
		.flat_map(|o| {
			o.failures(a.rounds).into_iter().map(move |f| format!("job {}: {f}", o.plan.id))
		})
		.collect();
	ensure!(failures.is_empty(), "the run did not pass:\n{}", failures.join("\n"));
	eprintln!("passed: every job completed, agreed and paid every member every round");
	Ok(())
}
