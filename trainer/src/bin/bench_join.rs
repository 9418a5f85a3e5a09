//! How a fetched state becomes one vector or one state on the round loop, each way against
//! what it replaced, side by side, for the step states of the GPTs `bench/memory.sh` runs
//! (12 bytes a parameter with AdamW's moments) cut into the state pieces that travel
//! (`STATE_PIECE_BYTES`), each way `--repeats` times, alternating:
//! - `--compare join` (`bench/join.sh`): joining the pieces
//!   (`round::update_pieces::join_pieces`, which the update downloads use once every piece
//!   is in) against collecting them byte by byte into a vector grown as it fills. Writes
//!   `DIR/join.md` and `DIR/join.json`.
//! - `--compare assemble` (`bench/join.sh` too): a step state put together from its pieces
//!   as they come (`state_assembly::Assembly`, which the work-state downloads use: each piece
//!   copied to its values, then freed) against every piece held until the last came, the
//!   pieces joined and the joined bytes decoded; each run on its own thread, the pieces made
//!   one at a time as they would arrive: the seconds spent on the pieces and the state (not
//!   on making them), and the thread's highest live memory in blocks of 1 MiB or more (the
//!   allocation ledger's, `alloc_ledger.rs`). Writes `DIR/assemble.md` and
//!   `DIR/assemble.json`.
//!
//! usage: bench_join --out DIR [--compare join|assemble] [--params 43.8,99.7] [--repeats 3]

use std::{collections::BTreeMap, fmt::Write as _, time::Instant};

use anyhow::{bail, Context, Result};
use grid_trainer::{
	alloc_ledger::{tag_thread, Counting, LEDGER},
	round::{state_transfer::STATE_PIECE_BYTES, update_pieces::join_pieces},
	state_assembly::Assembly,
	stats::mean_sd,
	trajectory::StepState,
	work_state::{parts_format, Moments},
};
use serde_json::{json, Value};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes a step state with AdamW's moments takes a parameter (parameters and two moments).
const STATE_BYTES_PER_PARAM: f64 = 12.0;

/// A state of `len` bytes in its pieces, as a download holds them once all are in.
fn pieces(len: usize) -> BTreeMap<u32, Vec<u8>> {
	let piece = STATE_PIECE_BYTES as usize;
	(0..len.div_ceil(piece))
		.map(|i| (i as u32, vec![(i % 251) as u8; piece.min(len - i * piece)]))
		.collect()
}

/// One way of joining: seconds taken and the capacity it left.
fn time(join: impl FnOnce(BTreeMap<u32, Vec<u8>>) -> Vec<u8>, len: usize) -> (f64, usize) {
	let held = pieces(len);
	let start = Instant::now();
	let whole = join(held);
	let secs = start.elapsed().as_secs_f64();
	assert_eq!(whole.len(), len);
	(secs, whole.capacity())
}

/// A step state of `len` parameters with moments, every value different and finite.
fn encoded_state(len: usize) -> Vec<u8> {
	let at = |i: usize, k: usize| ((i * 7 + k) % 1_000) as f32 * 1e-3;
	let moments = Moments {
		m: (0..len).map(|i| at(i, 1)).collect(),
		v: (0..len).map(|i| at(i, 2)).collect(),
	};
	StepState { params: (0..len).map(|i| at(i, 3)).collect(), step: 9, moments: Some(moments) }
		.encode()
}

/// The pieces of `bytes` in order, each a new vector as a response brings it.
fn arriving(bytes: &[u8]) -> impl Iterator<Item = (u32, u64, Vec<u8>)> + '_ {
	let piece = STATE_PIECE_BYTES as usize;
	bytes.chunks(piece).enumerate().map(move |(i, c)| (i as u32, (i * piece) as u64, c.to_vec()))
}

/// Before: every piece held until the last, joined, then the joined bytes decoded.
fn joined_then_decoded(bytes: &[u8], len: usize) -> (f64, StepState) {
	let (mut secs, mut held) = (0.0, BTreeMap::new());
	for (index, _, piece) in arriving(bytes) {
		let start = Instant::now();
		held.insert(index, piece);
		secs += start.elapsed().as_secs_f64();
	}
	let start = Instant::now();
	let whole = join_pieces(held);
	let state = StepState::decode(&whole, len).expect("a valid state");
	drop(whole);
	(secs + start.elapsed().as_secs_f64(), state)
}

/// Now: each piece copied to its values as it comes and freed, then the values checked.
fn assembled(bytes: &[u8], len: usize) -> (f64, StepState) {
	let (mut secs, mut assembly) = (0.0, None);
	for (_, offset, piece) in arriving(bytes) {
		let start = Instant::now();
		let assembly = assembly.get_or_insert_with(|| {
			let format = parts_format(&piece).expect("a step state");
			Assembly::start(format, &piece, bytes.len() as u64, len).expect("a valid header")
		});
		assembly.put(offset, &piece).expect("a piece of the state");
		drop(piece);
		secs += start.elapsed().as_secs_f64();
	}
	let start = Instant::now();
	let parts = assembly.expect("pieces came").finish().expect("a valid state");
	let (step, moments, params) = (parts.step, parts.moments, parts.values);
	(secs + start.elapsed().as_secs_f64(), StepState { params, step, moments })
}

/// Runs `way` on a thread charged to `role`: its seconds and the state it made.
fn run(
	role: String,
	bytes: &[u8],
	len: usize,
	way: fn(&[u8], usize) -> (f64, StepState),
) -> (f64, StepState) {
	std::thread::scope(|s| {
		s.spawn(move || {
			tag_thread(&role);
			way(bytes, len)
		})
		.join()
		.expect("the run finished")
	})
}

/// A role's own highest live bytes so far.
fn high(role: &str) -> u64 {
	LEDGER.highs().roles.iter().find(|(r, _)| r == role).map_or(0, |(_, b)| *b)
}

/// `--compare join`: the report's markdown and its rows.
fn compare_join(params: &[f64], repeats: usize) -> (String, Vec<Value>) {
	let mut md = String::from(
		"# Joining a fetched state from its pieces\n\nGenerated by `bench/join.sh`; do not edit \
		 by hand. A step state with AdamW's moments (12 bytes a parameter) in pieces of \
		 4 MiB, joined once every piece is in, on one thread. **Before**: the pieces \
		 collected byte by byte into a vector grown as it fills. **Now**: \
		 `update_pieces::join_pieces`, each piece copied whole into a vector of the state's \
		 length and freed. The two alternate, each run on its own pieces.\n\n| GPT \
		 parameters (M) | state MB | before: s (mean ± sd) | now: s | now / before | before: \
		 room left (MB) | now: room left |\n|---:|---:|---:|---:|---:|---:|---:|\n",
	);
	let mut rows = Vec::new();
	for &p in params {
		let len = (p * 1e6 * STATE_BYTES_PER_PARAM) as usize;
		let (mut before, mut now) = (Vec::new(), Vec::new());
		let (mut room_before, mut room_now) = (0, 0);
		for _ in 0..repeats {
			let (secs, cap) = time(|p| p.into_values().flatten().collect(), len);
			before.push(secs);
			room_before = cap - len;
			let (secs, cap) = time(join_pieces, len);
			now.push(secs);
			room_now = cap - len;
		}
		let ((b, b_sd), (n, n_sd)) = (mean_sd(&before), mean_sd(&now));
		let mb = |bytes: usize| bytes as f64 / 1e6;
		let _ = writeln!(
			md,
			"| {p} | {:.0} | {b:.2} ± {b_sd:.2} | {n:.2} ± {n_sd:.2} | {:.3} | {:.0} | {:.0} |",
			mb(len),
			n / b,
			mb(room_before),
			mb(room_now)
		);
		eprintln!("{p}M: before {before:?}, now {now:?}");
		rows.push(json!({
			"parameters_m": p, "state_bytes": len, "repeats": repeats,
			"before_s": before, "now_s": now, "before_mean_s": b, "now_mean_s": n,
			"now_over_before": n / b, "before_room_bytes": room_before, "now_room_bytes": room_now,
		}));
	}
	(md, rows)
}

/// `--compare assemble`: the report's markdown and its rows.
fn compare_assemble(params: &[f64], repeats: usize) -> (String, Vec<Value>) {
	let mut md = String::from(
		"# A fetched state put together from its pieces\n\nGenerated by `bench/join.sh`; \
		 do not edit by hand. A step state with AdamW's moments (12 bytes a parameter) \
		 arriving in pieces of 4 MiB, on one thread. **Before**: every piece held until the \
		 last came, the pieces joined (`update_pieces::join_pieces`), the joined bytes \
		 decoded. **Now**: `state_assembly::Assembly`, each piece copied to its values as it \
		 comes and freed, the values checked at the end. Seconds spent on the pieces and the \
		 state (making the pieces not counted); memory is the thread's highest live bytes in \
		 blocks of 1 MiB or more. The two alternate.\n\n| GPT parameters (M) | state MB | \
		 before: s (mean ± sd) | now: s | now / before | before: highest MiB | now: highest \
		 MiB | now / before |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	);
	let mut rows = Vec::new();
	for &p in params {
		let len = (p * 1e6) as usize;
		let bytes = encoded_state(len);
		let (before_role, now_role) = (format!("before {p}M"), format!("now {p}M"));
		let (mut before, mut now) = (Vec::new(), Vec::new());
		for _ in 0..repeats {
			let (secs, old) = run(before_role.clone(), &bytes, len, joined_then_decoded);
			before.push(secs);
			let (secs, new) = run(now_role.clone(), &bytes, len, assembled);
			now.push(secs);
			assert!(old == new, "both ways give the same state");
		}
		let (high_before, high_now) = (high(&before_role), high(&now_role));
		let ((b, b_sd), (n, n_sd)) = (mean_sd(&before), mean_sd(&now));
		let mib = |bytes: u64| bytes as f64 / f64::from(1u32 << 20);
		let _ = writeln!(
			md,
			"| {p} | {:.0} | {b:.2} ± {b_sd:.2} | {n:.2} ± {n_sd:.2} | {:.3} | {:.0} | {:.0} | \
		 {:.3} |",
			bytes.len() as f64 / 1e6,
			n / b,
			mib(high_before),
			mib(high_now),
			high_now as f64 / high_before as f64,
		);
		eprintln!("{p}M: before {before:?} ({high_before} B), now {now:?} ({high_now} B)");
		rows.push(json!({
			"parameters_m": p, "state_bytes": bytes.len(), "repeats": repeats,
			"before_s": before, "now_s": now, "before_mean_s": b, "now_mean_s": n,
			"now_over_before": n / b, "before_high_bytes": high_before,
			"now_high_bytes": high_now, "high_now_over_before": high_now as f64 / high_before as f64,
		}));
	}
	(md, rows)
}

fn main() -> Result<()> {
	let mut args = std::env::args().skip(1);
	let (mut out, mut compare, mut params, mut repeats) =
		(None, "join".to_string(), vec![43.8, 99.7], 3usize);
	while let Some(arg) = args.next() {
		let value = args.next().with_context(|| format!("{arg} needs a value"))?;
		match arg.as_str() {
			"--out" => out = Some(value),
			"--compare" => compare = value,
			"--params" => {
				params = value.split(',').map(str::parse).collect::<Result<_, _>>()?;
			}
			"--repeats" => repeats = value.parse()?,
			other => bail!("unknown argument {other}"),
		}
	}
	let out = out.context("--out DIR is required")?;
	let (md, rows) = match compare.as_str() {
		"join" => compare_join(&params, repeats),
		"assemble" => compare_assemble(&params, repeats),
		other => bail!("--compare takes join or assemble, not {other}"),
	};
	std::fs::create_dir_all(&out)?;
	std::fs::write(format!("{out}/{compare}.md"), md)?;
	std::fs::write(format!("{out}/{compare}.json"), serde_json::to_string_pretty(&json!(rows))?)?;
	println!("wrote {out}/{compare}.md");
	Ok(())
}
