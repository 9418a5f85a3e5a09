//! State sync benchmark: how long a joiner takes to fetch a served global state of P
//! parameters (model and outer momentum, 8P bytes) over libp2p on loopback, piece by piece,
//! each piece hash-checked and the checkpoint verified at the end (the code `job fetch` runs,
//! `daemon::state_fetch`), against reading the same bytes from a plain TCP socket on
//! loopback, side by side; and the fetching process's peak resident memory.
//!
//! Each side is its own process, so each peak memory is one side's:
//! - `bench_sync serve P` builds a checkpoint of P parameters, serves it on libp2p and on a
//!   plain TCP port, prints `LIBP2P <addr>` and `TCP <port>`, and serves until killed;
//! - `bench_sync fetch ADDR` / `bench_sync tcp PORT` fetch once and print one JSON line;
//! - `bench_sync run --out DIR [--params 1,16,64,160] [--repeats 3]` runs the rest and writes
//!   `DIR/state_sync.md` and `DIR/state_sync.json`.

use std::{
	fmt::Write as _,
	io::{BufRead, BufReader, Read, Write},
	path::{Path, PathBuf},
	process::{Child, Command, Stdio},
	sync::Arc,
	time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use grid_trainer::{
	checkpoint::Checkpoint,
	daemon::state_fetch::fetch_state,
	net::{
		behaviour::BehaviourConfig, service, Command as NetCommand, Event, NetConfig, Shaper,
		StoredBytes,
	},
	params::{Manifest, ParamInfo},
	round::state_transfer::{ServedState, PIECES_IN_FLIGHT, STATE_PIECE_BYTES},
};
use libp2p::{identity::Keypair, Multiaddr, PeerId};
use serde_json::{json, Value};

const JOB: u64 = 1;

fn behaviour() -> BehaviourConfig {
	BehaviourConfig {
		agent: "grid-trainer/bench-sync".into(),
		max_response_bytes: 1 << 30,
		request_timeout: Duration::from_secs(120),
		ping_interval: Duration::from_secs(5),
	}
}

fn runtime() -> Result<tokio::runtime::Runtime> {
	Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

/// A checkpoint of `params` parameters (one tensor per 1M, so the layout looks like a model's).
fn checkpoint(params: usize) -> Result<Checkpoint> {
	let per = 1 << 20;
	let entries = (0..params.div_ceil(per))
		.map(|i| ParamInfo {
			name: format!("layer{i:04}.weight"),
			shape: vec![per.min(params - i * per)],
		})
		.collect();
	let manifest = Manifest::new(entries)?;
	let weights: Vec<f32> = (0..params).map(|i| ((i * 2654435761) % 1000) as f32 * 1e-3).collect();
	let velocity: Vec<f32> = weights.iter().map(|w| w * 0.5).collect();
	Ok(Checkpoint { round: 1, manifest, weights, velocity })
}

fn serve(params: usize) -> Result<()> {
	let ck = checkpoint(params)?;
	let bytes = Arc::new(ck.encode()?);
	let model_hash = ck.model_hash()?;
	drop(ck);
	let tcp = std::net::TcpListener::bind("127.0.0.1:0")?;
	let tcp_port = tcp.local_addr()?.port();
	let plain = bytes.clone();
	std::thread::spawn(move || {
		for mut stream in tcp.incoming().flatten() {
			let _ = stream.write_all(&plain);
		}
	});
	let runtime = runtime()?;
	let key = Keypair::generate_ed25519();
	let me = key.public().to_peer_id();
	let config = NetConfig {
		listen: vec!["/ip4/127.0.0.1/tcp/0".parse()?],
		bootstrap: Vec::new(),
		job: JOB,
		manifest_hash: [0; 32],
		behaviour: behaviour(),
		datasets: None,
		proof_genesis: None,
	};
	let net = service::start(runtime.handle(), key, Shaper::default(), config)
		.map_err(|e| anyhow::anyhow!("starting the network: {e}"))?;
	// Served from its file, as a daemon serves its written checkpoint.
	let dir = tempfile::tempdir()?;
	let path = dir.path().join("checkpoint.safetensors");
	std::fs::write(&path, &*bytes)?;
	let state = Arc::new(ServedState::new(1, model_hash, &bytes, STATE_PIECE_BYTES));
	let file = StoredBytes::Open(Arc::new(std::fs::File::open(&path)?));
	net.send(NetCommand::ServeState { state, bytes: file });
	loop {
		if let Ok(Event::Listening(addr)) = net.events.recv() {
			println!("LIBP2P {addr}/p2p/{me}");
			println!("TCP {tcp_port}");
			std::io::stdout().flush()?;
			break;
		}
	}
	// Serve until killed; the events must still be drained.
	while net.events.recv().is_ok() {}
	Ok(())
}

/// Peak resident memory of this process so far, KiB.
fn peak_rss_kib() -> u64 {
	let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
	status
		.lines()
		.find_map(|l| l.strip_prefix("VmHWM:"))
		.and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
		.unwrap_or(0)
}

fn fetch(addr: &str) -> Result<()> {
	let addr: Multiaddr = addr.parse()?;
	let Some(libp2p::multiaddr::Protocol::P2p(server)) = addr.iter().last() else {
		bail!("{addr} names no peer");
	};
	let runtime = runtime()?;
	let started = Instant::now();
	let config = NetConfig {
		listen: Vec::new(),
		bootstrap: vec![addr],
		job: JOB,
		manifest_hash: [0; 32],
		behaviour: behaviour(),
		datasets: None,
		proof_genesis: None,
	};
	let net =
		service::start(runtime.handle(), Keypair::generate_ed25519(), Shaper::default(), config)
			.map_err(|e| anyhow::anyhow!("starting the network: {e}"))?;
	let origin = PathBuf::from("bench");
	// Its own server's state, of whatever size the run asked for: no bound.
	let limits = (Duration::from_secs(600), u64::MAX);
	let (len, params) = fetch_state(&net, JOB, &[server], limits, |_: PeerId, bytes| {
		let ck = Checkpoint::from_bytes(&bytes, &origin)?;
		ck.model_hash()?;
		Ok((bytes.len(), ck.weights.len()))
	})?;
	let seconds = started.elapsed().as_secs_f64();
	println!(
		"{}",
		json!({ "bytes": len, "params": params, "seconds": seconds, "peak_rss_kib": peak_rss_kib() })
	);
	Ok(())
}

fn tcp(port: u16) -> Result<()> {
	let started = Instant::now();
	let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
	let mut bytes = Vec::new();
	stream.read_to_end(&mut bytes)?;
	let seconds = started.elapsed().as_secs_f64();
	println!(
		"{}",
		json!({ "bytes": bytes.len(), "seconds": seconds, "peak_rss_kib": peak_rss_kib() })
	);
	Ok(())
}

/// A running `serve` process and its addresses.
struct Server {
	child: Child,
	libp2p: String,
	tcp: String,
}

impl Server {
	fn start(exe: &Path, params: usize) -> Result<Self> {
		let mut child = Command::new(exe)
			.args(["serve", &params.to_string()])
			.stdout(Stdio::piped())
			.spawn()?;
		let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
		let mut next = |prefix: &str| -> Result<String> {
			let line = lines.next().context("the server ended")??;
			line.strip_prefix(prefix)
				.map(str::to_string)
				.with_context(|| format!("server said {line}"))
		};
		let libp2p = next("LIBP2P ")?;
		let tcp = next("TCP ")?;
		Ok(Server { child, libp2p, tcp })
	}
}

impl Drop for Server {
	fn drop(&mut self) {
		let _ = self.child.kill();
		let _ = self.child.wait();
	}
}

fn once(exe: &Path, mode: &str, target: &str) -> Result<Value> {
	let out = Command::new(exe).args([mode, target]).stderr(Stdio::inherit()).output()?;
	if !out.status.success() {
		bail!("bench_sync {mode} failed");
	}
	let text = String::from_utf8(out.stdout)?;
	Ok(serde_json::from_str(text.lines().last().context("no output")?)?)
}

fn mean_sd(values: &[f64]) -> (f64, f64) {
	let n = values.len().max(1) as f64;
	let mean = values.iter().sum::<f64>() / n;
	let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
	(mean, var.sqrt())
}

fn run(out: &Path, sizes: &[usize], repeats: usize) -> Result<()> {
	let exe = std::env::current_exe()?;
	let mut rows = Vec::new();
	for &millions in sizes {
		let params = millions * 1_000_000;
		let server = Server::start(&exe, params)?;
		let (mut p2p, mut plain, mut rss, mut bytes) = (Vec::new(), Vec::new(), Vec::new(), 0);
		for r in 0..repeats {
			// Alternate which goes first.
			let order = if r % 2 == 0 { ["fetch", "tcp"] } else { ["tcp", "fetch"] };
			for mode in order {
				let target = if mode == "fetch" { &server.libp2p } else { &server.tcp };
				let v = once(&exe, mode, target)?;
				let secs = v["seconds"].as_f64().context("seconds")?;
				bytes = v["bytes"].as_u64().context("bytes")?;
				if mode == "fetch" {
					p2p.push(secs);
					rss.push(v["peak_rss_kib"].as_f64().unwrap_or(0.0));
				} else {
					plain.push(secs);
				}
			}
		}
		let mbps = |s: &[f64]| s.iter().map(|s| bytes as f64 / s / 1e6).collect::<Vec<_>>();
		let (p2p_mbps, tcp_mbps) = (mean_sd(&mbps(&p2p)), mean_sd(&mbps(&plain)));
		let row = json!({
			"params": params,
			"bytes": bytes,
			"pieces": bytes.div_ceil(u64::from(STATE_PIECE_BYTES)),
			"sync_seconds": mean_sd(&p2p).0,
			"sync_seconds_sd": mean_sd(&p2p).1,
			"sync_mb_per_s": p2p_mbps.0,
			"sync_mb_per_s_sd": p2p_mbps.1,
			"tcp_mb_per_s": tcp_mbps.0,
			"tcp_mb_per_s_sd": tcp_mbps.1,
			"ratio_to_tcp": p2p_mbps.0 / tcp_mbps.0,
			"fetcher_peak_rss_mib": mean_sd(&rss).0 / 1024.0,
			"over_old_limit": bytes > 1 << 30,
		});
		eprintln!("{row}");
		rows.push(row);
	}
	write_report(out, &rows, repeats)
}

fn write_report(out: &Path, rows: &[Value], repeats: usize) -> Result<()> {
	std::fs::create_dir_all(out)?;
	let commit = Command::new("git")
		.args(["rev-parse", "--short", "HEAD"])
		.output()
		.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
		.unwrap_or_default();
	let mut md = String::new();
	writeln!(md, "# State sync: a joiner fetching the global state\n")?;
	writeln!(
		md,
		"`bench/state_sync.sh` at `{commit}`, {repeats} repetitions per size, alternating. A state \
		 of P parameters is the checkpoint a trainer serves (model and outer momentum, f32: 8P \
		 bytes and a header), served by `bench_sync serve` (a libp2p node and a plain TCP port, \
		 its own process) and fetched by a fresh process each time: over libp2p (TCP, noise, \
		 yamux) the way `job fetch` and joiners do, a header then {} MiB pieces {} at a time, \
		 each BLAKE3-checked, then the checkpoint parsed and hashed; against reading the same \
		 bytes from the plain TCP socket. MB/s is 10^6 bytes per second from process start to \
		 the verified state. Before pieces, one response carried the whole state and was capped \
		 at 1 GiB (about 134M parameters).\n",
		STATE_PIECE_BYTES >> 20,
		PIECES_IN_FLIGHT
	)?;
	writeln!(md, "| parameters | state bytes | pieces | sync s | libp2p MB/s | plain TCP MB/s | libp2p / TCP | fetcher peak RSS MiB | over the old 1 GiB cap |")?;
	writeln!(md, "|---:|---:|---:|---:|---:|---:|---:|---:|---|")?;
	for r in rows {
		writeln!(
			md,
			"| {}M | {} | {} | {:.2} ± {:.2} | {:.0} ± {:.0} | {:.0} ± {:.0} | {:.2} | {:.0} | {} |",
			r["params"].as_u64().unwrap_or(0) / 1_000_000,
			r["bytes"],
			r["pieces"],
			r["sync_seconds"].as_f64().unwrap_or(0.0),
			r["sync_seconds_sd"].as_f64().unwrap_or(0.0),
			r["sync_mb_per_s"].as_f64().unwrap_or(0.0),
			r["sync_mb_per_s_sd"].as_f64().unwrap_or(0.0),
			r["tcp_mb_per_s"].as_f64().unwrap_or(0.0),
			r["tcp_mb_per_s_sd"].as_f64().unwrap_or(0.0),
			r["ratio_to_tcp"].as_f64().unwrap_or(0.0),
			r["fetcher_peak_rss_mib"].as_f64().unwrap_or(0.0),
			if r["over_old_limit"].as_bool() == Some(true) { "yes" } else { "no" },
		)?;
	}
	writeln!(
		md,
		"\nThe fetcher holds the pieces and then the assembled state (about twice the state's \
		 bytes at its peak), and the parsed checkpoint as it verifies it.\n"
	)?;
	std::fs::write(out.join("state_sync.md"), md)?;
	let json = json!({ "commit": commit, "repeats": repeats, "sizes": rows });
	std::fs::write(out.join("state_sync.json"), serde_json::to_string_pretty(&json)?)?;
	println!("wrote {}", out.join("state_sync.md").display());
	Ok(())
}

fn main() -> Result<()> {
	let args: Vec<String> = std::env::args().skip(1).collect();
	let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
	match args.first().map(String::as_str) {
		Some("serve") if args.len() == 2 => serve(args[1].parse()?),
		Some("fetch") if args.len() == 2 => fetch(&args[1]),
		Some("tcp") if args.len() == 2 => tcp(args[1].parse()?),
		Some("run") => {
			let out = PathBuf::from(arg("--out").context("run needs --out DIR")?);
			let sizes = arg("--params")
				.map_or("1,16,64,160", String::as_str)
				.split(',')
				.map(str::parse)
				.collect::<Result<Vec<usize>, _>>()?;
			let repeats = arg("--repeats").map_or(Ok(3), |r| r.parse())?;
			run(&out, &sizes, repeats)
		}
		_ => bail!("usage: bench_sync run --out DIR [--params 1,16,64,160] [--repeats 3] | serve P | fetch ADDR | tcp PORT"),
	}
}
