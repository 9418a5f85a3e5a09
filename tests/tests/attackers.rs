//! The red-team suite's end-to-end part: each attacker of `bench/redteam.sh` as a real
//! `grid-trainer provide` process (`[misbehave]` in its file) next to honest providers on a
//! dev node, run until the chain has caught it. Honest providers must be paid for every
//! round settled meanwhile and never slashed.
//!
//! These take minutes each, so all but the Sybil voter's and the quorum blockers' are ignored
//! by default (the lazy
//! and equivocating providers' tests, in `network_job.rs`, run in CI too): `bench/redteam.sh`
//! runs them all (`cargo test --release --workspace --test attackers -- --include-ignored`)
//! and, with `GRID_REDTEAM_E2E` naming a directory, each writes its
//! outcome there as JSON for the report.

use std::time::{Duration, Instant};

use anyhow::{anyhow, ensure, Result};
use grid_e2e_tests::{
	network::{bond_more, logs, post_job_as, CheatRun, Ledger, HONEST, MNIST_JOB},
	wait_for,
};
use pallet_jobs::ChallengeOutcome;
use pallet_providers::SlashReason;
use polkadot_sdk::sp_keyring::Sr25519Keyring::{self, Bob, Charlie, Eve, Ferdie};

/// Jobs here are open to challenges for 20 blocks after each round (the chain's audits and
/// the honest providers' loss screens run only on such jobs).
const WINDOW: &str = "challenge_window = 20\n";

/// What catching an attacker means on chain.
#[derive(Clone, Copy)]
enum Caught {
	/// Fraud proven against Eve's contribution (reward clawed back, stake slashed).
	Fraud,
	/// Eve slashed for revealing the verdict her committee's majority decided against.
	Outvoted,
	/// A challenge Eve opened rejected (her deposit went to the voters).
	Rejected,
}

impl Caught {
	fn holds(self, l: &Ledger) -> bool {
		let eve = Eve.to_account_id();
		match self {
			Caught::Fraud => l.proven.iter().any(|(who, _)| *who == eve),
			Caught::Outvoted => l.slash_reasons.contains(&(eve, SlashReason::Outvoted)),
			Caught::Rejected => l.challenge_outcomes.contains(&(eve, ChallengeOutcome::Rejected)),
		}
	}

	/// The report's words for it.
	fn means(self) -> &'static str {
		match self {
			Caught::Fraud => "fraud proven",
			Caught::Outvoted => "slashed as outvoted",
			Caught::Rejected => "its challenge rejected",
		}
	}
}

/// Runs Bob, Charlie and Dave honestly, Eve with `misbehave` and any `others` (dev accounts
/// with their `[misbehave]` lines) on a job of at most `rounds` rounds until Eve is
/// `caught`; checks the honest providers and records the outcome.
fn attack(
	attacker: &str,
	misbehave: &str,
	others: &[(Sr25519Keyring, &str)],
	rounds: u32,
	caught: Caught,
) -> Result<()> {
	let started = Instant::now();
	let mut cast: Vec<(Sr25519Keyring, &str)> = HONEST.iter().map(|k| (*k, "")).collect();
	cast.extend_from_slice(others);
	cast.push((Eve, misbehave));
	let mut run = CheatRun::start(&cast, rounds, WINDOW)?;
	// A round takes five 6 s blocks; a verdict about ten blocks after its round settled.
	let timeout = Duration::from_secs(120 + 45 * u64::from(rounds));
	run.wait_ledger(&format!("{attacker} to be caught"), timeout, |l| caught.holds(l))?;
	let l = &run.ledger;
	let settled = l.settled_with_result;
	let first = l.proven.iter().filter(|(who, _)| *who == Eve.to_account_id()).map(|(_, r)| *r);
	record(attacker, caught, caught.holds(l), first.min(), settled, started.elapsed());
	ensure!(
		caught.holds(l),
		"{attacker} not caught in {settled} rounds; challenges {:?}, outcomes {:?}\n{}",
		l.challenges,
		l.challenge_outcomes,
		logs(&run.providers)
	);
	// Nobody honest lost anything meanwhile, and every settled round paid them.
	run.check_honest(settled)?;
	let honest_convicted = l.proven.iter().filter(|(who, _)| run.is_honest(who)).count();
	ensure!(honest_convicted == 0, "an honest provider convicted: {:?}", l.proven);
	Ok(())
}

/// With `GRID_REDTEAM_E2E` set, writes the outcome to `<dir>/<attacker>.json`.
fn record(
	attacker: &str,
	how: Caught,
	held: bool,
	round: Option<u32>,
	settled: u32,
	took: Duration,
) {
	let Some(dir) = std::env::var_os("GRID_REDTEAM_E2E") else { return };
	let outcome = serde_json::json!({
		"attacker": attacker,
		"caught": held,
		"caught_means": how.means(),
		"offence_round": round,
		"rounds_settled": settled,
		"seconds": took.as_secs(),
	});
	let path = std::path::Path::new(&dir).join(format!("{}.json", attacker.replace(' ', "-")));
	if let Err(e) = std::fs::write(&path, outcome.to_string()) {
		eprintln!("writing {}: {e}", path.display());
	}
}

#[test]
#[ignore = "minutes: bench/redteam.sh runs it"]
fn an_exact_copier_is_caught() -> Result<()> {
	// Its re-compressed copy has the bytes, so the content hash, of the update it copied:
	// honest trainers leave it out and the chain pays it nothing, but keeps its claim, which
	// the holders of the original refute by replaying it from Eve's own state and data.
	attack("exact copy", "copy = { kind = \"exact\" }", &[], 4, Caught::Fraud)
}

#[test]
#[ignore = "minutes: bench/redteam.sh runs it"]
fn a_scaled_copier_is_caught() -> Result<()> {
	attack("scaled copy", "copy = { kind = \"scaled\", factor = 1.5 }", &[], 4, Caught::Fraud)
}

#[test]
#[ignore = "minutes: bench/redteam.sh runs it"]
fn a_noised_copier_is_caught() -> Result<()> {
	attack("noised copy", "copy = { kind = \"noised\", factor = 0.3 }", &[], 4, Caught::Fraud)
}

#[test]
#[ignore = "minutes: bench/redteam.sh runs it"]
fn a_stale_provider_is_caught() -> Result<()> {
	attack("previous aggregate", "stale = true", &[], 4, Caught::Fraud)
}

#[test]
#[ignore = "minutes: bench/redteam.sh runs it"]
fn a_provider_training_on_the_wrong_data_is_caught() -> Result<()> {
	attack("wrong data", "wrong_data = true", &[], 10, Caught::Fraud)
}

#[test]
#[ignore = "minutes: bench/redteam.sh runs it"]
fn an_inflated_claim_is_caught() -> Result<()> {
	attack("inflated claim", "inflate = 0.75", &[], 4, Caught::Fraud)
}

#[test]
#[ignore = "minutes: bench/redteam.sh runs it"]
fn a_provider_forging_its_residual_is_caught() -> Result<()> {
	attack("forged residual", "forge_residual = true", &[], 4, Caught::Fraud)
}

/// In CI too: it covers a committee's vote against the truth and a lazy provider's
/// conviction by a committee of real daemons (about a minute and a half).
#[test]
fn a_sybil_voter_is_outvoted_and_slashed() -> Result<()> {
	// Ferdie is lazy, so that there is fraud to judge; with Eve, the challenger's committee
	// is the other two honest holders and Eve.
	attack(
		"Sybil voter",
		"vote_against_truth = true",
		&[(Ferdie, "lazy = true")],
		4,
		Caught::Outvoted,
	)
}

#[test]
#[ignore = "minutes: bench/redteam.sh runs it"]
fn a_griefing_challenger_loses_its_deposit() -> Result<()> {
	attack("griefing challenger", "grief = true", &[], 4, Caught::Rejected)
}

/// In CI too: a buyer's own accounts (Eve and Ferdie, two of four seats) attest other
/// results, so no round reaches a quorum: nobody is paid, the rounds' rewards go back to the
/// buyer, and its accounts still receive the honest members' updates. The honest daemons
/// leave after two such rounds (before the chain's own limit of three in a row ends the
/// job), are slashed for nothing, and the job ends with its escrow refunded. Started again,
/// they pass over that buyer's next job and take another buyer's.
#[test]
fn honest_providers_leave_a_job_whose_quorum_a_buyers_accounts_block() -> Result<()> {
	let sybil = "attest_other = true";
	let cast = [(Bob, ""), (Charlie, ""), (Eve, sybil), (Ferdie, sybil)];
	let mut run = CheatRun::start(&cast, 6, "")?;
	let honest = [Bob.to_account_id(), Charlie.to_account_id()];
	let all_left = |l: &Ledger| honest.iter().all(|h| l.left.iter().any(|(who, _)| who == h));
	run.wait_ledger("the honest to leave and the job to end", Duration::from_secs(300), |l| {
		l.abandoned && all_left(l)
	})?;
	let l = &run.ledger;
	ensure!(
		l.settled_with_result == 0 && l.abandoned && !l.completed,
		"no round with a quorum and the job abandoned: {} with, {} without, abandoned {}\n{}",
		l.settled_with_result,
		l.settled_without_result,
		l.abandoned,
		logs(&run.providers)
	);
	for who in &honest {
		let after = l.left.iter().find(|(w, _)| w == who).map(|(_, settled)| *settled);
		ensure!(
			after == Some(2),
			"{who} left after {after:?} settled rounds, not 2\n{}",
			logs(&run.providers)
		);
		ensure!(!l.slashed.contains_key(who), "honest {who} slashed");
	}
	let sybils = [Eve.to_account_id(), Ferdie.to_account_id()];
	ensure!(!l.left.iter().any(|(who, _)| sybils.contains(who)), "a Sybil left: {:?}", l.left);
	for p in &run.providers[..2] {
		ensure!(p.log().contains("reached no quorum"), "{} logged no reason\n{}", p.name, p.log());
	}
	// The daemon ends with its job. Started again, the honest providers pass over the same
	// buyer's next job and take another buyer's. (Job 0 locks their whole stake for its
	// voting period: they bond a little more for the next job, as an operator would.)
	for p in &mut run.providers[..2] {
		p.kill();
	}
	for key in [Bob, Charlie] {
		bond_more(&run.node, key, 200)?;
	}
	let url = run.url();
	let root = run.providers[0].dir.parent().expect("a provider's directory is in the run's");
	post_job_as(&url, root, MNIST_JOB, 1, "//Alice", &[])?;
	post_job_as(&url, root, MNIST_JOB, 2, "//Dave", &[])?;
	for p in &mut run.providers[..2] {
		p.restart()?;
	}
	for p in &run.providers[..2] {
		let joined = || p.log().contains("joined job 2").then_some(());
		wait_for(&format!("{} to join job 2", p.name), Duration::from_secs(120), joined)
			.map_err(|e| anyhow!("{e}\n{}", p.log_tail()))?;
		ensure!(
			p.log().contains("job 1 skipped: its buyer") && !p.log().contains("joined job 1"),
			"{} did not pass over the blocking buyer's next job\n{}",
			p.name,
			p.log()
		);
	}
	Ok(())
}
