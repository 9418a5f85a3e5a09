//! The whole network end to end: a dev chain, provider daemons (`grid-trainer provide`) and
//! the buyer's CLI (`grid-trainer job …`), all real processes on loopback.
//!
//! - A job runs to completion: providers register, join, train MNIST together (the loss
//!   falls), attest every round, and each provider's balance changes by exactly the rewards
//!   minus the fees in the chain's events; the buyer downloads the final model, checked
//!   against the chain's hash.
//! - Churn: a provider killed mid-job is paid for exactly the rounds it delivered (and
//!   slashed for missing the rest), a provider that joins the running job is paid from its
//!   first delivered round, and the job completes.
//! - A provider that signs two different proofs for a round is reported by the others with
//!   both proofs and slashed by the chain, and the job completes without it.
//! - A lazy provider (it sends noise and claims the work) is found out by the others' replays
//!   of its update, challenged, voted invalid by the committee the chain draws, and slashed
//!   with its reward clawed back; the job completes without it.
//! - A cancelled job gives the buyer its escrow back.

use std::{collections::HashMap, path::Path, time::Duration};

use anyhow::{anyhow, ensure, Result};
use grid_e2e_tests::{
	chain::{account, block_hash, events_at},
	trainers::{job_cli, Provider, ProviderSpec},
	wait_for, Node,
};
use grid_runtime::RuntimeEvent;
use polkadot_sdk::{sp_core::crypto::AccountId32, sp_keyring::Sr25519Keyring};

/// The quick MNIST job (three rounds of five blocks, three to four providers).
const MNIST_JOB: &str = include_str!("../../examples/mnist-job.toml");

fn url(node: &Node) -> String {
	format!("ws://127.0.0.1:{}", node.ports.rpc)
}

/// A dev node that has finalized a block.
fn dev_node(dir: &Path) -> Result<Node> {
	let node = Node::start("dev", dir, &["--dev".into()])?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	Ok(node)
}

/// Each provider's stake, in GRID: enough for the MNIST job opened to challenges, where the
/// chain's audits ask for 198 rounds' reward (1,980 GRID).
const STAKE: u32 = 2_000;

/// Starts a provider for the dev account `account` (`//Bob`) with [`STAKE`].
fn provider(dir: &Path, url: &str, name: &str, account: &str) -> Result<Provider> {
	Provider::start(dir, url, &ProviderSpec { name, account, stake: STAKE, extra: "" })
}

/// The providers of the dev accounts `keys`, named after them.
fn providers(dir: &Path, url: &str, keys: &[Sr25519Keyring]) -> Result<Vec<Provider>> {
	keys.iter()
		.map(|key| {
			let name = format!("{key:?}").to_lowercase();
			provider(dir, url, &name, &format!("//{key:?}"))
		})
		.collect()
}

/// Total (free + held) balance of `who` at block `number`.
fn total(node: &Node, who: &AccountId32, number: u32) -> Result<u128> {
	let info = account(node, who, Some(&block_hash(node, number)?))?;
	Ok(info.data.free + info.data.reserved)
}

/// Rewards, fees and slashes per account, and the jobs' lifecycle events, over a range of
/// blocks.
#[derive(Default)]
struct Ledger {
	rewards: HashMap<AccountId32, u128>,
	rounds_paid: HashMap<AccountId32, Vec<u32>>,
	fees: HashMap<AccountId32, u128>,
	slashed: HashMap<AccountId32, u128>,
	joined_from: HashMap<AccountId32, u32>,
	/// (provider, reporter) of each punished equivocation.
	equivocations: Vec<(AccountId32, AccountId32)>,
	/// (accused, challenger) of each challenge opened.
	challenges: Vec<(AccountId32, AccountId32)>,
	/// (accused, reward clawed back) of each challenge that proved fraud.
	frauds: Vec<(AccountId32, u128)>,
	/// Challenges decided otherwise.
	other_outcomes: u32,
	/// Ids of the random audits the chain opened (1% of paid contributions of a job with a
	/// challenge window), apart from the challenges.
	audits: Vec<u64>,
	/// (accused, outcome) of each audit decided.
	audit_outcomes: Vec<(AccountId32, pallet_jobs::ChallengeOutcome)>,
	settled_with_result: u32,
	completed: bool,
}

impl Ledger {
	/// The events of blocks `from..=to`.
	fn read(node: &Node, from: u32, to: u32) -> Result<Self> {
		use pallet_jobs::Event as Jobs;
		use pallet_providers::Event as Providers;
		use polkadot_sdk::pallet_transaction_payment::Event as Fee;
		let mut l = Ledger::default();
		for n in from..=to {
			for event in events_at(node, n)? {
				match event {
					RuntimeEvent::Jobs(Jobs::RewardPaid { who, amount, round, .. }) => {
						*l.rewards.entry(who.clone()).or_default() += amount;
						l.rounds_paid.entry(who).or_default().push(round);
					}
					RuntimeEvent::Jobs(Jobs::Joined { who, from_round, .. }) => {
						l.joined_from.insert(who, from_round);
					}
					RuntimeEvent::Jobs(Jobs::RoundSettled {
						result_model_hash: Some(_), ..
					}) => l.settled_with_result += 1,
					RuntimeEvent::Jobs(Jobs::JobCompleted { .. }) => l.completed = true,
					RuntimeEvent::Jobs(Jobs::EquivocationPunished {
						provider, reporter, ..
					}) => l.equivocations.push((provider, reporter)),
					RuntimeEvent::Jobs(Jobs::ChallengeOpened { accused, challenger, .. }) => {
						l.challenges.push((accused, challenger))
					}
					RuntimeEvent::Jobs(Jobs::AuditOpened { id, .. }) => l.audits.push(id),
					RuntimeEvent::Jobs(Jobs::ChallengeResolved {
						id, accused, outcome, ..
					}) if l.audits.contains(&id) => l.audit_outcomes.push((accused, outcome)),
					RuntimeEvent::Jobs(Jobs::ChallengeResolved {
						accused,
						outcome,
						clawed_back,
						..
					}) => match outcome {
						pallet_jobs::ChallengeOutcome::FraudProven => {
							l.frauds.push((accused, clawed_back))
						}
						_ => l.other_outcomes += 1,
					},
					RuntimeEvent::Providers(Providers::Slashed { who, amount, .. }) => {
						*l.slashed.entry(who).or_default() += amount
					}
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

	/// Rounds `who` was paid for, in order.
	fn paid(&self, who: &AccountId32) -> Vec<u32> {
		self.rounds_paid.get(who).cloned().unwrap_or_default()
	}

	/// Checks that `who`'s total balance moved by exactly its rewards, less its fees and
	/// slashes, between blocks `start` and `end`.
	fn check_balance(&self, node: &Node, who: Sr25519Keyring, start: u32, end: u32) -> Result<()> {
		let account = who.to_account_id();
		let get = |m: &HashMap<AccountId32, u128>| m.get(&account).copied().unwrap_or(0) as i128;
		let (reward, fees, slashed) = (get(&self.rewards), get(&self.fees), get(&self.slashed));
		let change = total(node, &account, end)? as i128 - total(node, &account, start)? as i128;
		ensure!(
			change == reward - fees - slashed,
			"{who:?}: balance changed by {change}; events: {reward} rewards, {fees} fees, \
			 {slashed} slashed"
		);
		Ok(())
	}
}

fn logs(providers: &[Provider]) -> String {
	providers.iter().map(Provider::log_tail).collect::<Vec<_>>().join("\n")
}

/// Posts `spec` as Alice; fails unless it becomes job `id`.
fn post_job(url: &str, dir: &Path, spec: &str, id: u64) -> Result<()> {
	let path = dir.join(format!("job-{id}.toml"));
	std::fs::write(&path, spec)?;
	let path = path.to_str().ok_or_else(|| anyhow!("non-UTF-8 path"))?;
	let created = job_cli(url, &["create", "--account", "//Alice", "--spec", path])?;
	let stdout = String::from_utf8_lossy(&created.stdout);
	ensure!(
		created.status.success() && stdout.contains(&format!("job {id} created")),
		"job create failed: {stdout}\n{}",
		String::from_utf8_lossy(&created.stderr)
	);
	Ok(())
}

/// The buyer CLI's status line of job `id`, once `done` holds for it.
fn wait_status(
	url: &str,
	id: u64,
	timeout: Duration,
	providers: &[Provider],
	done: impl Fn(&str) -> bool,
) -> Result<String> {
	let id_text = id.to_string();
	wait_for(&format!("job {id}"), timeout, || {
		let out = job_cli(url, &["status", "--job", &id_text]).ok()?;
		let text = String::from_utf8_lossy(&out.stdout).into_owned();
		done(&text).then_some(text)
	})
	.map_err(|e| anyhow!("{e}\n{}", logs(providers)))
}

#[test]
fn a_job_runs_to_completion_and_every_provider_is_paid_what_the_events_say() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let node = dev_node(dir.path())?;
	let url = url(&node);
	let start = node.best_number()?;
	let keys = [Sr25519Keyring::Bob, Sr25519Keyring::Charlie, Sr25519Keyring::Dave];
	let providers = providers(dir.path(), &url, &keys)?;
	post_job(&url, dir.path(), MNIST_JOB, 0)?;
	let status =
		wait_status(&url, 0, Duration::from_secs(300), &providers, |s| s.contains("completed"))?;
	ensure!(status.contains("round 3/3") && status.contains("final model 0x"), "{status}");

	// The buyer downloads the model, verified against the chain's hash.
	let model = dir.path().join("model.safetensors");
	let out = model.to_str().ok_or_else(|| anyhow!("non-UTF-8 path"))?;
	let fetched = job_cli(&url, &["fetch", "--job", "0", "--out", out])?;
	ensure!(
		fetched.status.success() && model.is_file(),
		"fetch failed: {}\n{}",
		String::from_utf8_lossy(&fetched.stdout),
		String::from_utf8_lossy(&fetched.stderr)
	);

	let end = node.best_number()?;
	let l = Ledger::read(&node, start + 1, end)?;
	ensure!(l.completed && l.settled_with_result == 3, "3 rounds settled with a result");
	for key in keys {
		ensure!(l.paid(&key.to_account_id()) == [0, 1, 2], "{key:?} paid for every round");
		l.check_balance(&node, key, start, end)?;
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
fn a_killed_provider_is_paid_for_what_it_delivered_and_a_joiner_from_its_first_round() -> Result<()>
{
	let dir = tempfile::tempdir()?;
	let node = dev_node(dir.path())?;
	let url = url(&node);
	let start = node.best_number()?;
	let mut providers = vec![
		provider(dir.path(), &url, "bob", "//Bob")?,
		provider(dir.path(), &url, "charlie", "//Charlie")?,
		provider(dir.path(), &url, "dave", "//Dave")?,
	];
	post_job(&url, dir.path(), &MNIST_JOB.replace("rounds = 3", "rounds = 6"), 0)?;

	// Eve joins the running job once round 0 is settled.
	wait_status(&url, 0, Duration::from_secs(180), &providers, |s| s.contains("round 1/6"))?;
	providers.push(provider(dir.path(), &url, "eve", "//Eve")?);
	// Dave crashes just after round 1 settled, while it trains round 2.
	wait_status(&url, 0, Duration::from_secs(180), &providers, |s| s.contains("round 2/6"))?;
	providers[2].kill();
	let status =
		wait_status(&url, 0, Duration::from_secs(400), &providers, |s| s.contains("completed"))?;
	ensure!(status.contains("round 6/6"), "{status}");

	let end = node.best_number()?;
	let l = Ledger::read(&node, start + 1, end)?;
	ensure!(l.completed, "the job completed");
	let [bob, dave, eve] =
		[Sr25519Keyring::Bob, Sr25519Keyring::Dave, Sr25519Keyring::Eve].map(|k| k.to_account_id());
	// The providers' logs say why a round went unpaid (a late proof, an update not fetched).
	ensure!(
		l.paid(&bob) == [0, 1, 2, 3, 4, 5],
		"bob paid for {:?}\n{}",
		l.paid(&bob),
		logs(&providers)
	);
	ensure!(l.paid(&dave) == [0, 1], "dave paid for {:?}, not rounds 0 and 1", l.paid(&dave));
	ensure!(l.slashed.get(&dave).is_some_and(|s| *s > 0), "dave slashed for missing rounds");
	// Eve: admitted from some round, paid from its first delivered round to the end, and for
	// exactly the rounds it contributed to.
	let from = *l.joined_from.get(&eve).ok_or_else(|| anyhow!("eve never joined"))?;
	let eve_paid = l.paid(&eve);
	let first = *eve_paid.first().ok_or_else(|| anyhow!("eve unpaid\n{}", logs(&providers)))?;
	ensure!((from..=from + 1).contains(&first), "eve (from round {from}) first paid for {first}");
	ensure!(eve_paid == (first..6).collect::<Vec<_>>(), "eve paid for {eve_paid:?}");
	let contributed: Vec<u32> = providers[3]
		.rounds(0)
		.iter()
		.filter(|r| r["contributed"].as_bool() == Some(true))
		.filter_map(|r| r["round"].as_u64().map(|x| x as u32))
		.collect();
	ensure!(contributed == eve_paid, "eve contributed to {contributed:?}, paid for {eve_paid:?}");
	for key in
		[Sr25519Keyring::Bob, Sr25519Keyring::Charlie, Sr25519Keyring::Dave, Sr25519Keyring::Eve]
	{
		l.check_balance(&node, key, start, end)?;
	}
	Ok(())
}

#[test]
fn providers_ride_out_a_node_restart_without_signing_twice() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let mut node = dev_node(dir.path())?;
	let url = url(&node);
	let start = node.best_number()?;
	let keys = [Sr25519Keyring::Bob, Sr25519Keyring::Charlie, Sr25519Keyring::Dave];
	let providers = providers(dir.path(), &url, &keys)?;
	post_job(&url, dir.path(), &MNIST_JOB.replace("rounds = 3", "rounds = 4"), 0)?;
	wait_status(&url, 0, Duration::from_secs(180), &providers, |s| s.contains("round 1/4"))?;
	// The node goes down in the middle of round 1 and comes back on the same address.
	std::thread::sleep(Duration::from_secs(8));
	node.kill();
	std::thread::sleep(Duration::from_secs(15));
	node.restart_in_place()?;
	let status =
		wait_status(&url, 0, Duration::from_secs(300), &providers, |s| s.contains("completed"))?;
	ensure!(status.contains("round 4/4"), "{status}");

	let end = node.best_number()?;
	let l = Ledger::read(&node, start + 1, end)?;
	for (key, p) in keys.iter().zip(&providers) {
		ensure!(l.paid(&key.to_account_id()) == [0, 1, 2, 3], "{key:?} paid for every round");
		// One signed proof per round, kept on disk, whatever had to be resent.
		let proofs = std::fs::read_dir(p.dir.join("job-0/proofs"))?.count();
		ensure!(proofs == 4, "{key:?} signed {proofs} proofs for 4 rounds");
		l.check_balance(&node, *key, start, end)?;
	}
	ensure!(
		providers.iter().any(|p| p.log().contains("reconnected")),
		"no provider reconnected:\n{}",
		logs(&providers)
	);
	Ok(())
}

const HONEST: [Sr25519Keyring; 3] =
	[Sr25519Keyring::Bob, Sr25519Keyring::Charlie, Sr25519Keyring::Dave];

/// A job run by three honest providers and Eve, who misbehaves.
struct CheatRun {
	node: Node,
	providers: Vec<Provider>,
	ledger: Ledger,
	start: u32,
	end: u32,
	_dir: tempfile::TempDir,
}

impl CheatRun {
	/// Bob, Charlie and Dave as honest providers and Eve with `misbehave` (lines of her
	/// `[misbehave]` table) on a dev node; the MNIST job, needing all four, with `spec_extra`
	/// lines, posted and run to completion.
	fn run(misbehave: &str, spec_extra: &str) -> Result<Self> {
		let dir = tempfile::tempdir()?;
		let node = dev_node(dir.path())?;
		let url = url(&node);
		let start = node.best_number()?;
		let mut providers = providers(dir.path(), &url, &HONEST)?;
		let extra = format!("[misbehave]\n{misbehave}");
		let cheat = ProviderSpec { name: "eve", account: "//Eve", stake: STAKE, extra: &extra };
		providers.push(Provider::start(dir.path(), &url, &cheat)?);
		// Top-level keys go before the file's `[training]` table.
		let spec = MNIST_JOB
			.replace("min_providers = 3\n", &format!("min_providers = 4\n{spec_extra}"))
			.replace("min_provider_stake = 100", &format!("min_provider_stake = {STAKE}"));
		post_job(&url, dir.path(), &spec, 0)?;
		let status = wait_status(&url, 0, Duration::from_secs(300), &providers, |s| {
			s.contains("completed")
		})?;
		ensure!(status.contains("round 3/3"), "{status}");
		let end = node.best_number()?;
		let ledger = Ledger::read(&node, start + 1, end)?;
		Ok(CheatRun { node, providers, ledger, start, end, _dir: dir })
	}

	/// Eve was slashed (her balance moved by exactly her events) and every honest provider
	/// was paid for every round.
	fn check_punished(&self) -> Result<()> {
		let eve = Sr25519Keyring::Eve.to_account_id();
		ensure!(self.ledger.slashed.get(&eve).is_some_and(|s| *s > 0), "eve slashed");
		self.ledger.check_balance(&self.node, Sr25519Keyring::Eve, self.start, self.end)?;
		for key in HONEST {
			let paid = self.ledger.paid(&key.to_account_id());
			ensure!(paid == [0, 1, 2], "{key:?} paid for rounds {paid:?}, not every round");
		}
		Ok(())
	}

	fn is_honest(who: &AccountId32) -> bool {
		HONEST.iter().any(|k| k.to_account_id() == *who)
	}

	/// Reads the ledger again, up to the best block, until `done` holds for it (`what`), and
	/// keeps that read; after `timeout` it keeps the last read for the checks to judge. What
	/// the honest providers do about Eve (their reports, challenges and the committee's votes)
	/// lands on chain on its own schedule, which may be after the job completed.
	fn wait_ledger(
		&mut self,
		what: &str,
		timeout: Duration,
		done: impl Fn(&Ledger) -> bool,
	) -> Result<()> {
		let (node, start) = (&self.node, self.start);
		let read = || -> Result<(u32, Ledger)> {
			let end = node.best_number()?;
			Ok((end, Ledger::read(node, start + 1, end)?))
		};
		let (end, ledger) = match wait_for(what, timeout, || read().ok().filter(|(_, l)| done(l))) {
			Ok(found) => found,
			Err(_) => read()?,
		};
		self.end = end;
		self.ledger = ledger;
		Ok(())
	}
}

#[test]
fn an_equivocating_provider_is_reported_and_slashed() -> Result<()> {
	let mut run = CheatRun::run("equivocate = true", "")?;
	// An honest provider reports the equivocation once it has heard both proofs; the report
	// (and Eve's slash with it) may land after the job completed.
	let eve = Sr25519Keyring::Eve.to_account_id();
	run.wait_ledger("the report of eve's equivocation", Duration::from_secs(120), |l| {
		!l.equivocations.is_empty() && l.slashed.contains_key(&eve)
	})?;
	let l = &run.ledger;
	ensure!(
		l.equivocations.len() == 1
			&& l.equivocations[0].0 == eve
			&& CheatRun::is_honest(&l.equivocations[0].1),
		"one report of eve by an honest provider: {:?}\n{}",
		l.equivocations,
		logs(&run.providers)
	);
	run.check_punished()
}

#[test]
fn a_lazy_provider_is_challenged_voted_invalid_and_slashed() -> Result<()> {
	let mut run = CheatRun::run("lazy = true", "challenge_window = 20\n")?;
	// Challenges open after the round they dispute settled and are decided by the committee's
	// votes some blocks later: the last ones may be opened or decided after the job completed.
	run.wait_ledger("every challenge of eve to be decided", Duration::from_secs(120), |l| {
		!l.challenges.is_empty() && l.frauds.len() + l.other_outcomes as usize >= l.challenges.len()
	})?;
	let (l, eve) = (&run.ledger, Sr25519Keyring::Eve.to_account_id());
	ensure!(
		!l.challenges.is_empty()
			&& l.challenges.iter().all(|(accused, by)| *accused == eve && CheatRun::is_honest(by)),
		"only eve challenged, by honest providers: {:?}\n{}",
		l.challenges,
		logs(&run.providers)
	);
	ensure!(
		l.frauds.len() == l.challenges.len() && l.other_outcomes == 0,
		"every challenge proved fraud: {:?}, {} otherwise\n{}",
		l.frauds,
		l.other_outcomes,
		logs(&run.providers)
	);
	ensure!(
		l.frauds.iter().all(|(_, back)| *back > 0),
		"eve's rewards clawed back: {:?}",
		l.frauds
	);
	// A random audit may have drawn anyone's update: none convicts an honest provider.
	ensure!(
		l.audit_outcomes.iter().all(|(accused, outcome)| *accused == eve
			|| *outcome != pallet_jobs::ChallengeOutcome::FraudProven),
		"an audit convicted an honest provider: {:?}",
		l.audit_outcomes
	);
	// Eve's daemon followed its own slashes: it logs one when it next reads the chain, a
	// moment after the block that has it.
	let eve_log = wait_for("eve's daemon to log its slash", Duration::from_secs(60), || {
		let log = run.providers[3].log();
		(log.contains("slashed") && log.contains("Fraud")).then_some(log)
	})
	.unwrap_or_else(|_| run.providers[3].log());
	ensure!(eve_log.contains("slashed") && eve_log.contains("Fraud"), "eve saw no slash");
	// The committee judged by replaying exactly from eve's committed start state: its members
	// logged the cosine of the replay.
	ensure!(
		run.providers.iter().any(|p| p.log().contains("is Invalid (cosine with its exact replay")),
		"no replay logged\n{}",
		logs(&run.providers)
	);
	run.check_punished()
}

#[test]
fn a_cancelled_job_refunds_the_buyer() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let node = dev_node(dir.path())?;
	let url = url(&node);
	let start = node.best_number()?;
	post_job(&url, dir.path(), MNIST_JOB, 0)?;
	// Only the buyer may cancel.
	let stranger = job_cli(&url, &["cancel", "--account", "//Bob", "--job", "0"])?;
	let err = String::from_utf8_lossy(&stranger.stderr);
	ensure!(!stranger.status.success() && err.contains("NotBuyer"), "{err}");
	let cancelled = job_cli(&url, &["cancel", "--account", "//Alice", "--job", "0"])?;
	let out = String::from_utf8_lossy(&cancelled.stdout);
	ensure!(cancelled.status.success() && out.contains("refunded"), "{out}");
	let end = node.best_number()?;
	// Alice paid only her transaction fees: the escrow came back whole.
	Ledger::read(&node, start + 1, end)?.check_balance(&node, Sr25519Keyring::Alice, start, end)?;
	let status = job_cli(&url, &["status", "--job", "0"])?;
	let status = String::from_utf8_lossy(&status.stdout);
	ensure!(status.contains("cancelled"), "{status}");
	Ok(())
}
