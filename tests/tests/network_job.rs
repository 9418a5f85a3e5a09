//! The whole network end to end: a dev chain, provider daemons (`grid-trainer provide`) and
//! the buyer's CLI (`grid-trainer job …`), all real processes on loopback.
//!
//! - A job runs to completion: providers register, join, train MNIST together (the loss
//!   falls), attest every round, and each provider's balance changes by exactly the rewards
//!   minus the fees in the chain's events; the buyer downloads the final model, checked
//!   against the chain's hash.
//! - A cancelled job gives the buyer its escrow back.

use std::{collections::HashMap, time::Duration};

use anyhow::{bail, ensure, Result};
use grid_e2e_tests::{
	chain::{account, block_hash, events_at},
	trainers::{job_cli, Provider, ProviderSpec},
	wait_for, Node,
};
use grid_runtime::RuntimeEvent;
use polkadot_sdk::{sp_core::crypto::AccountId32, sp_keyring::Sr25519Keyring};

const MNIST_JOB: &str = r#"
dataset = "mnist"
model = { kind = "mlp", hidden = 64, layers = 1 }
rounds = 3
round_blocks = 5
batch_size = 32
lr = 0.002
outer_momentum = 0.5
compression = { scheme = "int8", chunk = 256 }
reward_per_round = 10
min_providers = 3
max_providers = 4
min_provider_stake = 100
"#;

fn url(node: &Node) -> String {
	format!("ws://127.0.0.1:{}", node.ports.rpc)
}

/// Total (free + held) balance of `who` at block `number`.
fn total(node: &Node, who: &AccountId32, number: u32) -> Result<u128> {
	let info = account(node, who, Some(&block_hash(node, number)?))?;
	Ok(info.data.free + info.data.reserved)
}

/// Rewards and fees per account, and the jobs' lifecycle events, over blocks `from..=to`.
#[derive(Default)]
struct Ledger {
	rewards: HashMap<AccountId32, u128>,
	reward_events: HashMap<AccountId32, u32>,
	fees: HashMap<AccountId32, u128>,
	settled_with_result: u32,
	completed: bool,
}

fn ledger(node: &Node, from: u32, to: u32) -> Result<Ledger> {
	use polkadot_sdk::pallet_transaction_payment::Event as Fee;
	let mut l = Ledger::default();
	for n in from..=to {
		for event in events_at(node, n)? {
			match event {
				RuntimeEvent::Jobs(pallet_jobs::Event::RewardPaid { who, amount, .. }) => {
					*l.rewards.entry(who.clone()).or_default() += amount;
					*l.reward_events.entry(who).or_default() += 1;
				}
				RuntimeEvent::Jobs(pallet_jobs::Event::RoundSettled {
					result_model_hash: Some(_),
					..
				}) => l.settled_with_result += 1,
				RuntimeEvent::Jobs(pallet_jobs::Event::JobCompleted { .. }) => l.completed = true,
				RuntimeEvent::TransactionPayment(Fee::TransactionFeePaid {
					who,
					actual_fee,
					tip,
				}) => *l.fees.entry(who).or_default() += actual_fee + tip,
				_ => {}
			}
		}
	}
	Ok(l)
}

fn logs(providers: &[Provider]) -> String {
	providers.iter().map(Provider::log_tail).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_job_runs_to_completion_and_every_provider_is_paid_what_the_events_say() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let node = Node::start("dev", dir.path(), &["--dev".into()])?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	let url = url(&node);
	let start = node.best_number()?;
	let keys = [Sr25519Keyring::Bob, Sr25519Keyring::Charlie, Sr25519Keyring::Dave];
	let names = ["bob", "charlie", "dave"];
	let mut providers = Vec::new();
	for (name, key) in names.iter().zip(keys) {
		let account = format!("//{key:?}");
		let spec = ProviderSpec { name, account: &account, stake: 200, extra: "" };
		providers.push(Provider::start(dir.path(), &url, &spec)?);
	}
	let spec = dir.path().join("job.toml");
	std::fs::write(&spec, MNIST_JOB)?;
	let created =
		job_cli(&url, &["create", "--account", "//Alice", "--spec", spec.to_str().unwrap()])?;
	let stdout = String::from_utf8_lossy(&created.stdout);
	ensure!(
		created.status.success() && stdout.contains("job 0 created"),
		"job create failed: {stdout}\n{}",
		String::from_utf8_lossy(&created.stderr)
	);

	let done = wait_for("job 0 to complete", Duration::from_secs(300), || {
		let out = job_cli(&url, &["status", "--job", "0"]).ok()?;
		let text = String::from_utf8_lossy(&out.stdout).into_owned();
		text.contains("completed").then_some(text)
	});
	let status = match done {
		Ok(status) => status,
		Err(e) => bail!("{e}\n{}", logs(&providers)),
	};
	ensure!(status.contains("round 3/3") && status.contains("final model 0x"), "{status}");

	// The buyer downloads the model, verified against the chain's hash.
	let model = dir.path().join("model.safetensors");
	let fetched = job_cli(&url, &["fetch", "--job", "0", "--out", model.to_str().unwrap()])?;
	ensure!(
		fetched.status.success() && model.is_file(),
		"fetch failed: {}\n{}",
		String::from_utf8_lossy(&fetched.stdout),
		String::from_utf8_lossy(&fetched.stderr)
	);

	let end = node.best_number()?;
	let l = ledger(&node, start + 1, end)?;
	ensure!(l.completed && l.settled_with_result == 3, "3 rounds settled with a result");
	for (name, key) in names.iter().zip(keys) {
		let who = key.to_account_id();
		let reward = l.rewards.get(&who).copied().unwrap_or(0);
		let fees = l.fees.get(&who).copied().unwrap_or(0);
		ensure!(l.reward_events.get(&who) == Some(&3), "{name} paid for every round");
		let change = total(&node, &who, end)? as i128 - total(&node, &who, start)? as i128;
		ensure!(
			change == reward as i128 - fees as i128,
			"{name}: balance changed by {change}, events say {reward} rewards - {fees} fees"
		);
	}
	// Everyone trained the same model, and it learned.
	let rounds: Vec<_> = providers.iter().map(|p| p.rounds(0)).collect();
	for r in 0..3 {
		let hashes: Vec<_> =
			rounds.iter().map(|rs| rs.get(r).map(|x| x["model_hash"].clone())).collect();
		ensure!(hashes.windows(2).all(|w| w[0] == w[1]), "round {r} hashes differ: {hashes:?}");
	}
	let losses: Vec<f64> = rounds[0].iter().filter_map(|r| r["eval_loss"].as_f64()).collect();
	ensure!(losses.len() == 3 && losses[2] < losses[0], "held-out loss did not fall: {losses:?}");
	Ok(())
}

#[test]
fn a_cancelled_job_refunds_the_buyer() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let node = Node::start("dev", dir.path(), &["--dev".into()])?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	let url = url(&node);
	let alice = Sr25519Keyring::Alice.to_account_id();
	let start = node.best_number()?;
	let spec = dir.path().join("job.toml");
	std::fs::write(&spec, MNIST_JOB)?;
	let created =
		job_cli(&url, &["create", "--account", "//Alice", "--spec", spec.to_str().unwrap()])?;
	ensure!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
	// Only the buyer may cancel.
	let stranger = job_cli(&url, &["cancel", "--account", "//Bob", "--job", "0"])?;
	let err = String::from_utf8_lossy(&stranger.stderr);
	ensure!(!stranger.status.success() && err.contains("NotBuyer"), "{err}");
	let cancelled = job_cli(&url, &["cancel", "--account", "//Alice", "--job", "0"])?;
	let out = String::from_utf8_lossy(&cancelled.stdout);
	ensure!(cancelled.status.success() && out.contains("refunded"), "{out}");
	let end = node.best_number()?;
	let l = ledger(&node, start + 1, end)?;
	let fees = l.fees.get(&alice).copied().unwrap_or(0);
	let change = total(&node, &alice, end)? as i128 - total(&node, &alice, start)? as i128;
	ensure!(change == -(fees as i128), "Alice lost {change} beyond her {fees} fees");
	let status = job_cli(&url, &["status", "--job", "0"])?;
	ensure!(String::from_utf8_lossy(&status.stdout).contains("cancelled"));
	Ok(())
}
