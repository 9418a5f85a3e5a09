//! Codec and aggregation speed: how long a trainer takes to compress (error feedback
//! included), encode, decode and decompress one update of a large model, per scheme, on one
//! thread; and to aggregate a round of N such updates with the chain's rule, block by block
//! from the compressed updates on every core, against the way it was done before (every update
//! decompressed to a dense vector, then combined on one thread), run side by side; and to
//! run the fraud desk's cheap screens on the same round (their Gram matrix) from the
//! compressed updates on every core, against decompressing every update first on one thread,
//! and with sparse pairs taken over their shared coordinates against every coordinate.
//! Writes `codec.md` and `codec.json`.
//!
//! `bench_codec --out bench/reports [--values 100000000] [--repeats 3] [--schemes none,int8,...]
//! [--round-values 4194304] [--peers 4,16,64] [--round-schemes int8:256,topk:256:32:1]`
//! (schemes: `none`, `int8:CHUNK`, `topk:CHUNK:K:BITS`, `tiles:K`).

use std::{fmt::Write as _, path::PathBuf, sync::Arc, time::Instant};

use grid_primitives::job::Compression;
use grid_trainer::{
	aggregate::{aggregate, aggregate_by_columns, Contribution},
	compress::{
		adaptive::AdaptiveCompressor,
		layout::{Layout, Matrix},
		CompressedUpdate,
	},
	rng::Rng,
	round::decide::{CHAIN_AGGREGATION, CHAIN_SCREEN_RATIO},
	stats::mean_sd,
	verify::Gram,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Settings {
	values: usize,
	repeats: usize,
	schemes: Vec<Compression>,
	round_values: usize,
	peers: Vec<usize>,
	round_schemes: Vec<Compression>,
	out: PathBuf,
}

fn scheme(name: &str) -> Option<Compression> {
	let mut parts = name.split(':');
	let kind = parts.next()?;
	let mut num = || parts.next()?.parse::<u32>().ok();
	Some(match kind {
		"none" => Compression::None,
		"int8" => Compression::Int8 { chunk: num()? },
		"topk" => {
			let (chunk, k, bits) = (num()?, num()?, num()?);
			Compression::TopK { chunk, k, value_bits: u8::try_from(bits).ok()? }
		}
		"tiles" => Compression::Tiles { k: num()? },
		_ => return None,
	})
}

/// The layout the updates are given: 1,024 × 1,024 matrices (a width-1,024 model's
/// projections), then whole rows of 1,024 and a vector of the rest, so the tiled codec cuts
/// tiles, and spreads tensors over threads, as it would a model's.
fn layout(values: usize) -> Layout {
	const SIDE: usize = 1_024;
	let square = Matrix { rows: SIDE, cols: SIDE };
	let squares = values / (SIDE * SIDE);
	let rest = values % (SIDE * SIDE);
	let mut tensors = vec![square; squares];
	tensors.extend(Layout::rows(rest, SIDE).tensors());
	Layout::new(tensors)
}

fn parse() -> Result<Settings, String> {
	let mut s = Settings {
		values: 100_000_000,
		repeats: 3,
		schemes: Vec::new(),
		round_values: 1 << 22,
		peers: vec![4, 16, 64],
		round_schemes: Vec::new(),
		out: PathBuf::from("bench/reports"),
	};
	let mut names =
		"none,int8:256,topk:256:32:1,topk:4096:64:2,topk:4096:16:1,tiles:64".to_string();
	let mut round_names = "int8:256,topk:256:32:1,tiles:64".to_string();
	let args: Vec<String> = std::env::args().skip(1).collect();
	for pair in args.chunks(2) {
		let [key, value] = pair else { return Err(format!("{} needs a value", pair[0])) };
		let num = || value.parse::<usize>().map_err(|e| format!("{key} {value}: {e}"));
		match key.trim_start_matches("--") {
			"values" => s.values = num()?,
			"repeats" => s.repeats = num()?.max(1),
			"schemes" => names = value.clone(),
			"round-values" => s.round_values = num()?,
			"peers" => {
				s.peers = value
					.split(',')
					.map(|p| p.parse::<usize>().map_err(|e| format!("--peers {p}: {e}")))
					.collect::<Result<_, _>>()?
			}
			"round-schemes" => round_names = value.clone(),
			"out" => s.out = PathBuf::from(value),
			other => return Err(format!("unknown option --{other}")),
		}
	}
	let schemes = |names: &str| {
		names
			.split(',')
			.map(|n| scheme(n).ok_or_else(|| format!("unknown scheme {n}")))
			.collect::<Result<Vec<_>, _>>()
	};
	s.schemes = schemes(&names)?;
	s.round_schemes = schemes(&round_names)?;
	if s.peers.contains(&0) {
		return Err("--peers needs at least one update per round".into());
	}
	Ok(s)
}

/// Seconds of one compression, encoding, decoding and decompression of `delta` (after one
/// round's residual is in place, as in a trainer's second round), and the encoded size.
struct Timing {
	compress: f64,
	encode: f64,
	decode: f64,
	bytes: usize,
}

fn time_once(spec: Compression, delta: &[f32]) -> Result<Timing, Error> {
	let mut c = AdaptiveCompressor::new(spec, layout(delta.len()), 0.9)?;
	c.compress(delta, None)?;
	let start = Instant::now();
	let (update, _, _) = c.compress(delta, None)?;
	let compress = start.elapsed().as_secs_f64();
	let start = Instant::now();
	let bytes = update.encode();
	let encode = start.elapsed().as_secs_f64();
	let start = Instant::now();
	let back = CompressedUpdate::decode(&bytes)?.decompress();
	let decode = start.elapsed().as_secs_f64();
	assert_eq!(back.len(), delta.len());
	Ok(Timing { compress, encode, decode, bytes: bytes.len() })
}

fn label(spec: &Compression) -> String {
	match spec {
		Compression::None => "f32".into(),
		Compression::Int8 { chunk } => format!("int8, chunk {chunk}"),
		Compression::TopK { chunk, k, value_bits } => {
			format!("top-k {k}/{chunk}, {value_bits}-bit")
		}
		Compression::Tiles { k } => format!("tiles, {k}/4096, 2-bit"),
	}
}

/// The codec section: one update per scheme, on one thread.
fn codec_section(s: &Settings, md: &mut String) -> Result<Vec<serde_json::Value>, Error> {
	let mut rng = Rng::new(1);
	let delta: Vec<f32> = (0..s.values).map(|_| (rng.normal() * 1e-3) as f32).collect();
	let _ = writeln!(md, "## One update\n");
	let _ = writeln!(md, "One update of **{} values** (Gaussian, laid out as 1,024 × 1,024 matrices, a second round's: the first round's residual in place, error decay 0.9), one thread (the tiled codec also on every core, as a trainer runs it), {} repeats: mean ± sample sd. *Compress* is the trainer's whole step (residual added, top-k selected per chunk, quantized, residual updated); *decode* includes decompressing to a dense vector (a replay or a fraud check does; aggregation no longer does, below).\n", s.values, s.repeats);
	let _ = writeln!(
		md,
		"| scheme | encoded size | compress (s) | encode (s) | decode + decompress (s) |"
	);
	let _ = writeln!(md, "|---|---|---|---|---|");
	let mut rows = Vec::new();
	// One thread, so schemes compare as they are (the tiled codec cuts tensors on every core
	// in a trainer: its row at the end is that).
	let one = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
	let every = rayon::ThreadPoolBuilder::new().build()?;
	let tiles = s.schemes.iter().filter(|c| matches!(c, Compression::Tiles { .. }));
	let runs_of = s.schemes.iter().map(|c| (c, &one)).chain(tiles.map(|c| (c, &every)));
	for (spec, pool) in runs_of {
		let mut runs = Vec::new();
		for _ in 0..s.repeats {
			runs.push(pool.install(|| time_once(*spec, &delta))?);
		}
		let threads = if pool.current_num_threads() > 1 {
			format!(", {} threads", pool.current_num_threads())
		} else {
			String::new()
		};
		let stat = |f: fn(&Timing) -> f64| mean_sd(&runs.iter().map(f).collect::<Vec<_>>());
		let (c, e, d) = (stat(|t| t.compress), stat(|t| t.encode), stat(|t| t.decode));
		let bytes = runs[0].bytes;
		eprintln!(
			"{}: {bytes} bytes, compress {:.2} s, encode {:.2} s, decode {:.2} s",
			label(spec),
			c.0,
			e.0,
			d.0
		);
		let _ = writeln!(
			md,
			"| {}{threads} | {:.2} MB | {:.3} ± {:.3} | {:.3} ± {:.3} | {:.3} ± {:.3} |",
			label(spec),
			bytes as f64 / 1e6,
			c.0,
			c.1,
			e.0,
			e.1,
			d.0,
			d.1
		);
		rows.push(serde_json::json!({
			"scheme": label(spec),
			"threads": pool.current_num_threads(),
			"bytes": bytes,
			"compress_s": { "mean": c.0, "sd": c.1 },
			"encode_s": { "mean": e.0, "sd": e.1 },
			"decode_s": { "mean": d.0, "sd": d.1 },
		}));
	}
	Ok(rows)
}

/// A round of `peers` different updates of `values` values, each compressed with `spec`.
fn round_updates(
	spec: Compression,
	peers: usize,
	values: usize,
) -> Result<Vec<Contribution>, Error> {
	(0..peers)
		.map(|p| {
			let mut rng = Rng::new(100 + p as u64);
			let delta: Vec<f32> = (0..values).map(|_| (rng.normal() * 1e-3) as f32).collect();
			let (update, _, _) =
				AdaptiveCompressor::new(spec, layout(values), 0.9)?.compress(&delta, None)?;
			Ok(Contribution { update: Arc::new(update), samples: 1_000 + p as u64 })
		})
		.collect()
}

/// Seconds to aggregate `updates` with the chain's rule and screen, the way it was done
/// before (every update decompressed to a dense vector, then combined on the one thread of
/// `one`) and block by block from the compressed updates on every core, in that order or
/// (`flip`) the other; the results must be the same bit for bit.
fn time_round(
	updates: &[Contribution],
	one: &rayon::ThreadPool,
	flip: bool,
) -> Result<(f64, f64), Error> {
	let rule = CHAIN_AGGREGATION;
	let dense = || {
		let start = Instant::now();
		let agg = one.install(|| {
			let dense: Vec<Contribution> = updates
				.iter()
				.map(|u| Contribution::dense(u.update.decompress(), u.samples))
				.collect();
			aggregate(&dense, rule, Some(CHAIN_SCREEN_RATIO))
		});
		agg.map(|a| (start.elapsed().as_secs_f64(), a))
	};
	let blocks = || {
		let start = Instant::now();
		let agg = aggregate(updates, rule, Some(CHAIN_SCREEN_RATIO));
		agg.map(|a| (start.elapsed().as_secs_f64(), a))
	};
	let ((baseline, before), (block_wise, now)) = if flip {
		let now = blocks()?;
		(dense()?, now)
	} else {
		let before = dense()?;
		(before, blocks()?)
	};
	let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
	if bits(&before.delta) != bits(&now.delta) || before.accepted != now.accepted {
		return Err("the block-wise aggregate differs from the dense one".into());
	}
	Ok((baseline, block_wise))
}

/// Seconds to aggregate `updates` block-wise with the chain's rule one coordinate's column
/// at a time (the way until the chain's trim ran row by row) and as trainers do now, in
/// that order or (`flip`) the other. Both results must be the same bit for bit.
fn time_rows(updates: &[Contribution], flip: bool) -> Result<(f64, f64), Error> {
	let rule = CHAIN_AGGREGATION;
	let timed = |way: &dyn Fn() -> grid_trainer::error::Result<_>| {
		let start = Instant::now();
		way().map(|agg: grid_trainer::aggregate::Aggregate| (start.elapsed().as_secs_f64(), agg))
	};
	let columns = || aggregate_by_columns(updates, rule, Some(CHAIN_SCREEN_RATIO));
	let rows = || aggregate(updates, rule, Some(CHAIN_SCREEN_RATIO));
	let ((old, was), (new, now)) = if flip {
		let now = timed(&rows)?;
		(timed(&columns)?, now)
	} else {
		let was = timed(&columns)?;
		(was, timed(&rows)?)
	};
	let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
	if bits(&was.delta) != bits(&now.delta) || was.accepted != now.accepted {
		return Err("the row-wise aggregate differs from the column-wise one".into());
	}
	Ok((old, new))
}

/// Seconds to take the Gram matrix of `updates` (what the fraud desk's cheap screens read)
/// the way the desk did first (every update decompressed to a dense vector, every pair
/// over every coordinate, here on the one thread of `one`) and as it does now, from the
/// compressed updates on every core, each pair the cheapest way; in that order or (`flip`)
/// the other. Both must agree ([`agree`]).
fn time_screens(
	updates: &[Contribution],
	one: &rayon::ThreadPool,
	flip: bool,
) -> Result<(f64, f64), Error> {
	let dense = || {
		one.install(|| {
			let dense: Vec<CompressedUpdate> =
				updates.iter().map(|u| CompressedUpdate::None(u.update.decompress())).collect();
			Gram::of_every_coordinate(&dense.iter().collect::<Vec<_>>())
		})
	};
	let sent: Vec<&CompressedUpdate> = updates.iter().map(|u| u.update.as_ref()).collect();
	time_both(flip, int8_pairs(updates), dense, || Gram::of(&sent))
}

/// Seconds to take the Gram matrix of `updates` from the compressed updates on every core,
/// every pair over every coordinate of the decoded values (before sparse pairs took only
/// their shared coordinates and int8 pairs their codes) and as the desk does now, in that
/// order or (`flip`) the other; both must agree ([`agree`]).
fn time_cheapest(updates: &[Contribution], flip: bool) -> Result<(f64, f64), Error> {
	let sent: Vec<&CompressedUpdate> = updates.iter().map(|u| u.update.as_ref()).collect();
	let int8 = int8_pairs(updates);
	time_both(flip, int8, || Gram::of_every_coordinate(&sent), || Gram::of(&sent))
}

/// Whether a round has a pair of int8 updates (which the desk takes from their codes).
fn int8_pairs(updates: &[Contribution]) -> bool {
	let int8 = |u: &&Contribution| matches!(u.update.as_ref(), CompressedUpdate::Int8(_));
	updates.iter().filter(int8).count() >= 2
}

/// Whether two ways' Gram matrices agree: bit for bit, or with `int8_pairs` (taken from
/// their codes one way, from their decoded values, rounded to f32, the other) every dot
/// product within 1e-8 of its two norms' product.
fn agree(was: &Gram, now: &Gram, int8_pairs: bool) -> bool {
	if !int8_pairs {
		return was.bits() == now.bits();
	}
	let n = was.len();
	now.len() == n
		&& (0..n).all(|i| {
			(0..n)
				.all(|j| (was.dot(i, j) - now.dot(i, j)).abs() <= 1e-8 * was.norm(i) * was.norm(j))
		})
}

/// Seconds `before` and `after` take, run in that order or (`flip`) the other; their
/// matrices must agree ([`agree`]).
fn time_both(
	flip: bool,
	int8_pairs: bool,
	before: impl Fn() -> grid_trainer::error::Result<Gram>,
	after: impl Fn() -> grid_trainer::error::Result<Gram>,
) -> Result<(f64, f64), Error> {
	let timed = |way: &dyn Fn() -> grid_trainer::error::Result<Gram>| {
		let start = Instant::now();
		way().map(|gram| (start.elapsed().as_secs_f64(), gram))
	};
	let ((old, was), (new, now)) = if flip {
		let now = timed(&after)?;
		(timed(&before)?, now)
	} else {
		let was = timed(&before)?;
		(was, timed(&after)?)
	};
	if !agree(&was, &now, int8_pairs) {
		return Err("the two ways' Gram matrices differ".into());
	}
	Ok((old, new))
}

/// One row of a side-by-side table: a round of `peers` updates compressed with `spec`,
/// `dense` bytes as dense vectors, `encoded` bytes as sent.
struct Row<'a> {
	spec: &'a Compression,
	peers: usize,
	dense: usize,
	encoded: usize,
}

impl Row<'_> {
	/// Times both ways `repeats` times with `time(flip)` (the baseline's seconds, then the new
	/// way's), the order flipped every repeat; writes the row to `md` and returns its JSON, the
	/// new way's seconds under `key`.
	fn side_by_side(
		&self,
		repeats: usize,
		time: impl Fn(bool) -> Result<(f64, f64), Error>,
		key: &str,
		md: &mut String,
	) -> Result<serde_json::Value, Error> {
		let (mut base, mut new, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
		for r in 0..repeats {
			let (b, k) = time(r % 2 == 1)?;
			base.push(b);
			new.push(k);
			ratio.push(b / k);
		}
		let (b, k, x) = (mean_sd(&base), mean_sd(&new), mean_sd(&ratio));
		let (name, peers) = (label(self.spec), self.peers);
		eprintln!("{name} N={peers}: dense {:.3} s, {key} {:.3} s, {:.2}x", b.0, k.0, x.0);
		let _ = writeln!(
			md,
			"| {name} | {peers} | {:.0} MB | {:.1} MB | {:.3} ± {:.3} | {:.3} ± {:.3} | {:.2}x ± {:.2} |",
			self.dense as f64 / 1e6,
			self.encoded as f64 / 1e6,
			b.0,
			b.1,
			k.0,
			k.1,
			x.0,
			x.1
		);
		let mut json = serde_json::json!({
			"scheme": name,
			"updates": peers,
			"held_dense_bytes": self.dense,
			"held_compressed_bytes": self.encoded,
			"dense_one_thread_s": { "mean": b.0, "sd": b.1 },
			"speedup": { "mean": x.0, "sd": x.1 },
		});
		json[key] = serde_json::json!({ "mean": k.0, "sd": k.1 });
		Ok(json)
	}
}

/// The aggregation section: a round of each size per scheme, both ways side by side, the
/// order flipped every repeat.
fn round_section(s: &Settings, md: &mut String) -> Result<Rounds, Error> {
	let one = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
	let threads = rayon::current_num_threads();
	let _ = writeln!(md, "## Aggregating a round\n");
	let _ = writeln!(md, "A round of N different updates of **{} values** each (Gaussian, compressed as a trainer sends them), aggregated with the chain's rule (`{:?}`, capped to N, after the 4x norm screen) {} times per row, the order of the two ways flipped every repeat: *dense, one thread* is how a trainer aggregated until now (every update decompressed to a dense vector, then combined; with today's combining code, so the ratio is what the blocks and threads bring); *block-wise* decodes {} coordinates of every update at a time straight from the compressed updates and spreads the blocks over rayon's {} threads. Both results are checked to be the same bit for bit. *Held* is what the updates occupy while aggregating: N dense vectors against the compressed updates (plus one block per thread).\n", s.round_values, CHAIN_AGGREGATION, s.repeats, grid_trainer::aggregate::BLOCK, threads);
	let _ = writeln!(md, "| scheme | N | held: dense | held: compressed | dense, one thread (s) | block-wise (s) | speedup |");
	let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
	let mut rows = Vec::new();
	let mut screens = String::new();
	let _ = writeln!(screens, "\n## Screening a round\n");
	let _ = writeln!(screens, "The same rounds through the fraud desk's cheap screens (agreement with the others, copies, short norms), which read only the round's Gram matrix (every pair's dot product, in f64), {} times per row, the order flipped every repeat: *dense, one thread* decompresses every update first, as the desk did until now (then the same Gram matrix, on one thread); *streamed* decodes {} coordinates of every update at a time from the compressed updates on rayon's {} threads. Both matrices are checked to be the same bit for bit, save where int8 updates pair (the desk takes those from their codes, next table): there each dot product within 1e-8 of its two norms' product. *Held*: N dense vectors against the compressed updates.\n", s.repeats, grid_trainer::aggregate::BLOCK, threads);
	let _ = writeln!(screens, "| scheme | N | held: dense | held: compressed | dense, one thread (s) | streamed (s) | speedup |");
	let _ = writeln!(screens, "|---|---:|---:|---:|---:|---:|---:|");
	let mut shared = String::new();
	let _ = writeln!(shared, "\n## Screening a round: each pair the cheapest way\n");
	let _ = writeln!(shared, "The same Gram matrices from the compressed updates on rayon's {threads} threads, {} times per row, the order flipped every repeat: *every coordinate* takes every pair's dot product over every coordinate of a block's decoded values, as the desk did until now; *cheapest* takes a pair of int8 updates from their codes (per chunk, the codes' integer dot product times the two scales: exact, rounded once), marks the nonzero values of a block whose values are mostly zero (sampled) in bit masks, and takes a pair that shares few coordinates over only those (the desk's way now: `verify/gram.rs`). Both matrices are checked to be the same bit for bit, save for int8 pairs: there each dot product within 1e-8 of its two norms' product. The table's *dense, one thread* column is *every coordinate*, on one thread, from decompressed updates.\n", s.repeats);
	let _ = writeln!(shared, "| scheme | N | held: dense | held: compressed | every coordinate (s) | cheapest (s) | speedup |");
	let _ = writeln!(shared, "|---|---:|---:|---:|---:|---:|---:|");
	let mut by_rows = String::new();
	let _ = writeln!(by_rows, "\n## Aggregating a round: row by row\n");
	let _ = writeln!(by_rows, "The same rounds aggregated block-wise with the chain's rule on rayon's {threads} threads, {} times per row, the order flipped every repeat: *columns* combines each coordinate's column of values in turn (find its lowest and highest, add the rest), as trainers did until now; *rows* makes two passes over the block's rows for every coordinate at once (the lowest and highest of each, then the kept values added in the updates' order: the same comparisons and additions per coordinate, in loops the compiler keeps in vector registers; `aggregate/blocks.rs`). Both results are checked to be the same bit for bit.\n", s.repeats);
	let _ = writeln!(
		by_rows,
		"| scheme | N | held: dense | held: compressed | columns (s) | rows (s) | speedup |"
	);
	let _ = writeln!(by_rows, "|---|---:|---:|---:|---:|---:|---:|");
	let mut screen_rows = Vec::new();
	let mut shared_rows = Vec::new();
	let mut row_rows = Vec::new();
	for spec in &s.round_schemes {
		for &peers in &s.peers {
			let updates = round_updates(*spec, peers, s.round_values)?;
			let encoded: usize = updates.iter().map(|u| u.update.encode().len()).sum();
			let dense = peers * s.round_values * 4;
			let row = Row { spec, peers, dense, encoded };
			let timed = |flip| time_round(&updates, &one, flip);
			rows.push(row.side_by_side(s.repeats, timed, "block_wise_s", md)?);
			let timed = |flip| time_rows(&updates, flip);
			row_rows.push(row.side_by_side(s.repeats, timed, "rows_s", &mut by_rows)?);
			let timed = |flip| time_screens(&updates, &one, flip);
			screen_rows.push(row.side_by_side(s.repeats, timed, "streamed_s", &mut screens)?);
			let timed = |flip| time_cheapest(&updates, flip);
			shared_rows.push(row.side_by_side(s.repeats, timed, "cheapest_s", &mut shared)?);
		}
	}
	md.push_str(&by_rows);
	md.push_str(&screens);
	md.push_str(&shared);
	Ok(Rounds { rows, row_rows, screen_rows, shared_rows })
}

/// The round section's JSON rows: aggregation, aggregation row by row, screens, and screens
/// each pair the cheapest way.
struct Rounds {
	rows: Vec<serde_json::Value>,
	row_rows: Vec<serde_json::Value>,
	screen_rows: Vec<serde_json::Value>,
	shared_rows: Vec<serde_json::Value>,
}

fn main() -> Result<(), Error> {
	grid_trainer::malloc::retain_freed_memory();
	let s = parse()?;
	let mut md = String::new();
	let _ = writeln!(md, "# Codec and aggregation speed\n");
	let _ = writeln!(
		md,
		"Generated by `bench/codec.sh` (`bench_codec`) on {} cores; do not edit by hand.\n",
		std::thread::available_parallelism().map_or(1, |n| n.get())
	);
	let one = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
	let codec = one.install(|| codec_section(&s, &mut md))?;
	let rounds = round_section(&s, &mut md)?;
	let json = serde_json::json!({
		"values": s.values,
		"repeats": s.repeats,
		"schemes": codec,
		"round_values": s.round_values,
		"rounds": rounds.rows,
		"rounds_by_rows": rounds.row_rows,
		"screens": rounds.screen_rows,
		"screens_cheapest": rounds.shared_rows,
	});
	std::fs::create_dir_all(&s.out)?;
	std::fs::write(s.out.join("codec.md"), md)?;
	std::fs::write(s.out.join("codec.json"), serde_json::to_string_pretty(&json)? + "\n")?;
	Ok(())
}
