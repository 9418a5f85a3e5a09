//! Resident memory of training on a large token dataset. `bench/datasets.sh` runs it on a
//! small and a several-GB file and reports both.
//!
//! `bench_data gen OUT MIB VOCAB`: writes MIB MiB of uniformly random little-endian `u16`
//! tokens below VOCAB to OUT (a seeded generator, faster than /dev/urandom and with tokens a
//! small model's vocabulary holds).
//!
//! `bench_data train DIR STORE [--steps 200 --batch 8 --context 128 --vocab 4096 --layers 2
//! --width 64 --heads 4 --mlp 256 --eval 64]`: publishes the `u16` token files in DIR into the
//! dataset store STORE (as `grid-trainer data publish --no-serve` does), opens the dataset as
//! the trainer daemon does (`data::load`: every chunk checked against the manifest, then the
//! files memory-mapped), trains a small decoder-only transformer for one round of `steps`
//! inner steps on batches drawn across the whole training region from a round seed (the
//! provider's `batch_indices`, through `diloco::train_round`), evaluates it on held-out
//! windows, and prints one JSON line: the process's memory after each phase and at its peak,
//! VmHWM and VmRSS/RssAnon/RssFile sampled every 10 ms from /proc/self/status. RssFile counts
//! the mapped dataset's pages while they are resident (clean page cache the kernel may take
//! back); RssAnon is the process's own heap and stacks. The dataset's mapped pages are also
//! counted from /proc/self/smaps after loading and at the end, with those the training and
//! evaluation touched (referenced bits cleared after loading: `/proc/self/clear_refs`).
//! Threads: set `RAYON_NUM_THREADS` (candle's CPU kernels use rayon's pool).

use std::{
	io::Write,
	path::Path,
	sync::{
		atomic::{AtomicBool, AtomicU64, Ordering},
		Arc,
	},
	time::{Duration, Instant},
};

use candle_core::Device;
use grid_primitives::{
	job::{
		Activation, DatasetRef, InnerOptimizer, ModelSpec, Nanos, Norm, Position, TransformerConfig,
	},
	manifest::DatasetFormat,
	provider::BoundedBytes,
	work::data_seed,
};
use grid_trainer::{
	data::{self, batch_indices, DataStore},
	diloco::train_round,
	rng::Rng,
	round::coordinator::offline_round_seed,
	train::{evaluate, InnerConfig, InnerTrainer},
};
use serde_json::{json, Value};

type Res<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The job, round and provider the batches are drawn for (any fixed values).
const JOB: u64 = 1;
const ROUND: u32 = 0;
const PROVIDER: [u8; 32] = [7; 32];

const USAGE: &str = "usage: bench_data gen OUT MIB VOCAB | bench_data train DIR STORE [--opt N]…";

fn main() -> Res<()> {
	let args: Vec<String> = std::env::args().skip(1).collect();
	match args.first().map(String::as_str) {
		Some("gen") if args.len() == 4 => {
			generate(Path::new(&args[1]), args[2].parse()?, args[3].parse()?)
		}
		Some("train") if args.len() >= 3 => {
			train(Path::new(&args[1]), Path::new(&args[2]), &args[3..])
		}
		_ => Err(USAGE.into()),
	}
}

/// Writes `mib` MiB of random `u16` tokens below `vocab` to `out`.
fn generate(out: &Path, mib: u64, vocab: u32) -> Res<()> {
	if !(1..=65_536).contains(&vocab) {
		return Err("VOCAB must be 1 to 65536 for u16 tokens".into());
	}
	let mut file = std::io::BufWriter::with_capacity(
		4 << 20,
		std::fs::File::create(out).map_err(|e| format!("creating {}: {e}", out.display()))?,
	);
	let mut rng = Rng::new(u64::from(vocab) ^ mib);
	let mut block = vec![0u8; 1 << 20];
	for _ in 0..mib {
		for word in block.chunks_exact_mut(8) {
			let x = rng.next_u64();
			for (k, token) in word.chunks_exact_mut(2).enumerate() {
				let t = ((x >> (16 * k)) & 0xffff) as u32 % vocab;
				token.copy_from_slice(&(t as u16).to_le_bytes());
			}
		}
		file.write_all(&block)?;
	}
	file.flush()?;
	Ok(())
}

/// The process's memory from /proc/self/status, in KiB.
#[derive(Clone, Copy, Default)]
struct Mem {
	rss: u64,
	anon: u64,
	file: u64,
	hwm: u64,
}

impl Mem {
	fn now() -> Mem {
		let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
		let field = |name: &str| {
			status
				.lines()
				.find_map(|l| l.strip_prefix(name))
				.and_then(|rest| rest.split_whitespace().next())
				.and_then(|kib| kib.parse().ok())
				.unwrap_or(0)
		};
		Mem {
			rss: field("VmRSS:"),
			anon: field("RssAnon:"),
			file: field("RssFile:"),
			hwm: field("VmHWM:"),
		}
	}

	fn json(self) -> Value {
		json!({"rss_kib": self.rss, "anon_kib": self.anon, "file_kib": self.file, "hwm_kib": self.hwm})
	}
}

/// The resident, the recently referenced (touched since [`clear_referenced`]) and the
/// PMD-mapped (2 MiB pages: referenced is counted per 2 MiB there) KiB of this process's
/// mappings of files under `dir`, from /proc/self/smaps.
fn mapped_under(dir: &Path) -> [u64; 3] {
	let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
	let dir = dir.to_string_lossy();
	let (mut inside, mut sums) = (false, [0u64; 3]);
	for line in smaps.lines() {
		let words: Vec<&str> = line.split_whitespace().collect();
		let first = words.first().copied().unwrap_or_default();
		if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
			inside = words.get(5).is_some_and(|p| p.starts_with(&*dir));
			continue;
		}
		let slot = ["Rss:", "Referenced:", "FilePmdMapped:"].iter().position(|k| *k == first);
		if let (true, Some(slot)) = (inside, slot) {
			sums[slot] += words.get(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
		}
	}
	sums
}

/// Clears the referenced bits of this process's pages (what [`mapped_under`] reports as
/// referenced is then what was touched since).
fn clear_referenced() -> std::io::Result<()> {
	std::fs::write("/proc/self/clear_refs", "1")
}

/// The largest VmRSS, RssAnon and RssFile seen by a thread polling every 10 ms.
struct Sampler {
	peaks: Arc<[AtomicU64; 3]>,
	stop: Arc<AtomicBool>,
	thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
	fn start() -> Sampler {
		let peaks = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
		let stop = Arc::new(AtomicBool::new(false));
		let (p, s) = (peaks.clone(), stop.clone());
		let thread = std::thread::spawn(move || {
			while !s.load(Ordering::Relaxed) {
				let m = Mem::now();
				for (peak, v) in p.iter().zip([m.rss, m.anon, m.file]) {
					peak.fetch_max(v, Ordering::Relaxed);
				}
				std::thread::sleep(Duration::from_millis(10));
			}
		});
		Sampler { peaks, stop, thread: Some(thread) }
	}

	/// Stops sampling; the peaks of VmRSS, RssAnon and RssFile in KiB.
	fn finish(mut self) -> [u64; 3] {
		self.stop.store(true, Ordering::Relaxed);
		if let Some(thread) = self.thread.take() {
			let _ = thread.join();
		}
		let last = Mem::now();
		let peak = |i: usize, v: u64| self.peaks[i].load(Ordering::Relaxed).max(v);
		[peak(0, last.rss), peak(1, last.anon), peak(2, last.file)]
	}
}

fn train(dir: &Path, store: &Path, opts: &[String]) -> Res<()> {
	grid_trainer::malloc::retain_freed_memory();
	let mut values = [
		("steps", 200u64),
		("batch", 8),
		("context", 128),
		("vocab", 4096),
		("layers", 2),
		("width", 64),
		("heads", 4),
		("mlp", 256),
		("eval", 64),
	];
	for pair in opts.chunks(2) {
		let [k, v] = pair else { return Err(format!("{} needs a value", pair[0]).into()) };
		let slot = values
			.iter_mut()
			.find(|(name, _)| *name == k.trim_start_matches("--"))
			.ok_or_else(|| format!("unknown option {k}"))?;
		slot.1 = v.parse()?;
	}
	let get = |name: &str| values.iter().find(|(n, _)| *n == name).map(|o| o.1).unwrap_or(0);
	let sampler = Sampler::start();
	let started = Instant::now();
	let mut phases = serde_json::Map::new();
	let mut phase = |name: &str, since: &mut Instant| {
		let mut entry = Mem::now().json();
		entry["seconds"] = json!(since.elapsed().as_secs_f64());
		phases.insert(name.to_owned(), entry);
		*since = Instant::now();
	};
	let mut since = Instant::now();
	phase("start", &mut since);

	// What `grid-trainer data publish --no-serve` records, then what the daemon's trainer
	// loads (`TrainerConfig::dataset`).
	let store = DataStore::new(store);
	let manifest = store.publish(dir, DatasetFormat::TokensU16)?;
	let uri = format!("file://{}", dir.canonicalize()?.display());
	let reference = DatasetRef {
		content_hash: manifest.hash(),
		uri: BoundedBytes::try_from(uri.into_bytes()).map_err(|_| "the URI is over 256 bytes")?,
	};
	phase("publish", &mut since);
	let spec = ModelSpec::Transformer(TransformerConfig {
		vocab: get("vocab") as u32,
		context: get("context") as u32,
		layers: get("layers") as u16,
		width: get("width") as u32,
		heads: get("heads") as u16,
		kv_heads: get("heads") as u16,
		mlp_width: get("mlp") as u32,
		activation: Activation::Gelu,
		norm: Norm::LayerNorm,
		position: Position::Learned,
		tied_embeddings: true,
	});
	let dataset = data::load(&store, &reference, &spec)?;
	let files = store.locate(&reference.content_hash)?.ok_or("just published")?.dir;
	let [mapped_after_load, _, pmd_after_load] = mapped_under(&files);
	phase("load", &mut since);

	let dev = Device::Cpu;
	let (steps, batch) = (get("steps"), get("batch"));
	let inner = InnerOptimizer::AdamW {
		lr: Nanos(3_000_000),
		weight_decay: Nanos(100_000_000),
		warmup_steps: 0,
	};
	let config = InnerConfig { total_steps: steps, ..InnerConfig::default() };
	let mut trainer = InnerTrainer::new(spec, b"bench-data", &dev, &inner, config)?;
	let global = trainer.model().params().flatten()?;
	phase("model", &mut since);
	// From here on, what the training loop reads of the mapped files is marked referenced.
	clear_referenced()?;

	// The provider's draw: its data seed for the round, then `batch` indices per step,
	// uniform over every training window of the file.
	let seed = data_seed(&offline_round_seed(JOB, ROUND), JOB, ROUND, &PROVIDER);
	let population = dataset.train_len();
	let (mut lowest, mut highest) = (u64::MAX, 0u64);
	let mut i = 0u64;
	let batches = std::iter::from_fn(|| {
		if i == steps {
			return None;
		}
		let indices = batch_indices(&seed, i, batch, population);
		i += 1;
		for &k in &indices {
			(lowest, highest) = (lowest.min(k), highest.max(k));
		}
		Some(dataset.train_batch(&indices, &dev))
	});
	let round = train_round(&mut trainer, &global, batches)?;
	phase("train", &mut since);
	let held_out = dataset.eval_batches(get("eval") as usize, batch as usize, &dev)?;
	let eval_loss = evaluate(trainer.model(), &held_out)?;
	phase("eval", &mut since);
	let [mapped_end, touched, _] = mapped_under(&files);
	let [peak_rss, peak_anon, peak_file] = sampler.finish();
	let end = Mem::now();

	let file_bytes = manifest.size();
	let train_s = phases["train"]["seconds"].as_f64().unwrap_or(0.0);
	let options: serde_json::Map<String, Value> =
		values.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect();
	let report = json!({
		"dir": dir.display().to_string(),
		"file_bytes": file_bytes,
		"files": manifest.files.len(),
		"tokens": file_bytes / 2,
		"train_windows": population,
		"parameters": spec.parameters(),
		"options": options,
		"steps": round.steps,
		"samples": round.samples,
		"lowest_window": lowest,
		"highest_window": highest,
		"ms_per_step": train_s * 1e3 / f64::from(round.steps.max(1)),
		"mean_train_loss": round.mean_loss,
		"eval_loss": eval_loss,
		"phases": phases,
		"peak_rss_kib": peak_rss,
		"peak_anon_kib": peak_anon,
		"peak_file_kib": peak_file,
		"vm_hwm_kib": end.hwm,
		"dataset_mapped_after_load_kib": mapped_after_load,
		"dataset_mapped_end_kib": mapped_end,
		"dataset_touched_in_training_kib": touched,
		"dataset_pmd_mapped_after_load_kib": pmd_after_load,
		"seconds": started.elapsed().as_secs_f64(),
	});
	println!("{report}");
	Ok(())
}
