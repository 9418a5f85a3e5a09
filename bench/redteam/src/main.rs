//! `grid-redteam`: runs the red-team suite and writes its report.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use grid_redteam::{suite, Attacker, Checks};

/// Runs every attacker `--attempts` times; writes `redteam.md` and `redteam.json` to `--out`.
#[derive(Parser)]
struct Args {
	/// Attempts per attacker.
	#[arg(long, default_value_t = 100)]
	attempts: u32,
	/// Inner steps per round (verification's fixed costs per round weigh less in longer
	/// rounds).
	#[arg(long, default_value_t = grid_redteam::STEPS)]
	steps: u32,
	/// Peers each honest provider loss-screens per round (the daemon's number unless given).
	#[arg(long, default_value_t = grid_trainer::round::fraud::GAUNTLET_PEERS)]
	screens: usize,
	/// Segment checks each honest provider runs per round, on average (the daemon's rate
	/// unless given).
	#[arg(long, default_value_t = grid_trainer::round::fraud::SEGMENT_RATE)]
	segments: f64,
	/// Committees replay every challenged and audited claim in full (as before they judged
	/// by trajectories): the baseline of what committees cost.
	#[arg(long)]
	committee_replays: bool,
	/// Where the report goes.
	#[arg(long, default_value = "bench/reports")]
	out: PathBuf,
	/// Only the attackers whose names contain one of these (comma-separated), for trying a
	/// screen's settings; the committed report has them all.
	#[arg(long, value_delimiter = ',')]
	only: Vec<String>,
}

fn main() -> Result<()> {
	let args = Args::parse();
	// The fraud desks' findings (what each screen flagged, each replay's cosine) with
	// `RUST_LOG=grid_trainer=info`.
	if std::env::var_os("RUST_LOG").is_some() {
		tracing_subscriber::fmt()
			.with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
			.with_writer(std::io::stderr)
			.init();
	}
	let started = std::time::Instant::now();
	let attackers: Vec<Attacker> = Attacker::ALL
		.into_iter()
		.filter(|a| args.only.is_empty() || args.only.iter().any(|o| a.name().contains(o.as_str())))
		.collect();
	let report = suite(
		&attackers,
		args.attempts,
		args.steps,
		Checks {
			screens: args.screens,
			segments: args.segments,
			committee_traces: !args.committee_replays,
		},
		|attacker, attempt, outcome| {
			eprintln!(
				"{attacker}: attempt {attempt}: caught in round {:?}, {} rounds, {} audits",
				outcome.caught_in_round, outcome.rounds, outcome.audits
			);
		},
	)?;
	let secs = started.elapsed().as_secs_f64();
	std::fs::create_dir_all(&args.out)?;
	let mut json = report.json();
	json["attempts_per_attacker"] = args.attempts.into();
	json["steps_per_round"] = args.steps.into();
	json["screens_per_desk"] = args.screens.into();
	json["segment_checks_per_desk"] = args.segments.into();
	json["committees_by_trajectory"] = (!args.committee_replays).into();
	json["wall_seconds"] = secs.into();
	let json_path = args.out.join("redteam.json");
	std::fs::write(&json_path, serde_json::to_string_pretty(&json)? + "\n")
		.with_context(|| format!("writing {}", json_path.display()))?;
	let md_path = args.out.join("redteam.md");
	let table = report.markdown();
	std::fs::write(&md_path, format!("{}\n", table))
		.with_context(|| format!("writing {}", md_path.display()))?;
	println!("{table}\n{:.0} s; wrote {} and {}", secs, md_path.display(), json_path.display());
	Ok(())
}
