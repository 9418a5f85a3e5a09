//! Whole networks for end-to-end tests: a dev node, provider daemons (`grid-trainer
//! provide`) and the buyer's CLI, all real processes on loopback, and a ledger of what the
//! chain's events say happened to everyone's money.

use std::{collections::HashMap, path::Path, time::Duration};

use anyhow::{anyhow, ensure, Result};
use grid_primitives::currency::UNIT;
use grid_runtime::RuntimeEvent;
use polkadot_sdk::{
	sp_core::{crypto::AccountId32, sr25519, Pair},
	sp_keyring::Sr25519Keyring,
};

use crate::{
	chain::{
		account, block_hash, events_at, next_nonce, sign, submit, transfer, wait_included,
		wait_pool_caught_up, ChainContext,
	},
	trainers::{job_cli, Provider, ProviderSpec},
	wait_for, Node,
};

/// The quick MNIST job (three rounds of five blocks, three to four providers).
pub const MNIST_JOB: &str = include_str!("../../examples/mnist-job.toml");

pub fn url(node: &Node) -> String {
	format!("ws://127.0.0.1:{}", node.ports.rpc)
}

/// A dev node that has finalized a block.
pub fn dev_node(dir: &Path) -> Result<Node> {
	let node = Node::start("dev", dir, &["--dev".into()])?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	Ok(node)
}

/// Each provider's stake, in GRID: enough for the MNIST job opened to challenges, where the
/// chain's audits ask for 198 rounds' reward (1,980 GRID).
pub const STAKE: u32 = 2_000;

/// Starts a provider for the dev account `account` (`//Bob`) with [`STAKE`].
pub fn provider(dir: &Path, url: &str, name: &str, account: &str) -> Result<Provider> {
	Provider::start(dir, url, &ProviderSpec::new(name, account, STAKE, ""))
}

/// Starts a provider for the dev account `key`, named after it, with [`STAKE`] and `extra`
/// top-level lines in its file.
pub fn keyed_provider(dir: &Path, url: &str, key: Sr25519Keyring, extra: &str) -> Result<Provider> {
	let (name, account) = (format!("{key:?}").to_lowercase(), format!("//{key:?}"));
	Provider::start(dir, url, &ProviderSpec::new(&name, &account, STAKE, extra))
}

/// The providers of the dev accounts `keys`, named after them.
pub fn providers(dir: &Path, url: &str, keys: &[Sr25519Keyring]) -> Result<Vec<Provider>> {
	keys.iter().map(|key| keyed_provider(dir, url, *key, "")).collect()
}

/// The account of the development key `//name`.
pub fn dev_account(name: &str) -> Result<AccountId32> {
	sr25519::Pair::from_string(&format!("//{name}"), None)
		.map(|pair| pair.public().into())
		.map_err(|e| anyhow!("deriving {name}'s key: {e:?}"))
}

/// Funds `accounts` from Alice with enough for [`STAKE`] and fees.
pub fn fund_providers(node: &Node, accounts: &[AccountId32]) -> Result<()> {
	let ctx = ChainContext::fetch(node)?;
	let alice = Sr25519Keyring::Alice;
	let mut nonce = next_nonce(node, &alice.to_account_id())?;
	for who in accounts {
		let amount = u128::from(STAKE) * UNIT + 100 * UNIT;
		submit(node, &sign(&ctx, alice, nonce, transfer(who.clone(), amount)))?;
		nonce += 1;
	}
	wait_for("the funding transfers", Duration::from_secs(120), || {
		let at = account(node, &alice.to_account_id(), None).ok()?;
		(at.nonce >= nonce).then_some(())
	})?;
	wait_pool_caught_up(node, Duration::from_secs(60))
}

/// The provider `who` bonds `grid` GRID more stake; waits until that is in a block.
pub fn bond_more(node: &Node, who: Sr25519Keyring, grid: u32) -> Result<()> {
	let ctx = ChainContext::fetch(node)?;
	let account = who.to_account_id();
	let nonce = next_nonce(node, &account)?;
	let amount = u128::from(grid) * UNIT;
	let call = grid_runtime::RuntimeCall::Providers(pallet_providers::Call::bond_more { amount });
	submit(node, &sign(&ctx, who, nonce, call))?;
	wait_included(node, &account, nonce, Duration::from_secs(60))
}

/// Total (free + held) balance of `who` at block `number`.
pub fn total(node: &Node, who: &AccountId32, number: u32) -> Result<u128> {
	let info = account(node, who, Some(&block_hash(node, number)?))?;
	Ok(info.data.free + info.data.reserved)
}

/// Rewards, fees and slashes per account, and the jobs' lifecycle events, over a range of
/// blocks.
#[derive(Default)]
pub struct Ledger {
	pub rewards: HashMap<AccountId32, u128>,
	pub rounds_paid: HashMap<AccountId32, Vec<u32>>,
	pub fees: HashMap<AccountId32, u128>,
	pub slashed: HashMap<AccountId32, u128>,
	pub joined_from: HashMap<AccountId32, u32>,
	/// (provider, reporter) of each punished equivocation.
	pub equivocations: Vec<(AccountId32, AccountId32)>,
	/// (accused, challenger) of each challenge opened.
	pub challenges: Vec<(AccountId32, AccountId32)>,
	/// (accused, reward clawed back) of each challenge that proved fraud.
	pub frauds: Vec<(AccountId32, u128)>,
	/// (accused, round) of each challenge or audit that proved fraud.
	pub proven: Vec<(AccountId32, u32)>,
	/// Challenges decided otherwise.
	pub other_outcomes: u32,
	/// (challenger, outcome) of each challenge (not audit) decided.
	pub challenge_outcomes: Vec<(AccountId32, pallet_jobs::ChallengeOutcome)>,
	/// Each slash's account and reason.
	pub slash_reasons: Vec<(AccountId32, pallet_providers::SlashReason)>,
	/// Ids of the random audits the chain opened (1% of paid contributions of a job with a
	/// challenge window), apart from the challenges.
	pub audits: Vec<u64>,
	/// (accused, outcome) of each audit decided.
	pub audit_outcomes: Vec<(AccountId32, pallet_jobs::ChallengeOutcome)>,
	pub settled_with_result: u32,
	/// Rounds settled without a quorum's result.
	pub settled_without_result: u32,
	/// (who, round open when it left) of each `leave_job`.
	pub left: Vec<(AccountId32, u32)>,
	pub completed: bool,
	/// The job ended early (`JobAbandoned`: understaffed, or no quorum, too long).
	pub abandoned: bool,
}

impl Ledger {
	/// The events of blocks `from..=to`.
	pub fn read(node: &Node, from: u32, to: u32) -> Result<Self> {
		use pallet_jobs::Event as Jobs;
		use pallet_providers::Event as Providers;
		use polkadot_sdk::pallet_transaction_payment::Event as Fee;
		let mut l = Ledger::default();
		let mut challengers = HashMap::new();
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
					RuntimeEvent::Jobs(Jobs::RoundSettled { result_model_hash: None, .. }) => {
						l.settled_without_result += 1
					}
					RuntimeEvent::Jobs(Jobs::Left { who, .. }) => {
						let rounds = l.settled_with_result + l.settled_without_result;
						l.left.push((who, rounds))
					}
					RuntimeEvent::Jobs(Jobs::JobCompleted { .. }) => l.completed = true,
					RuntimeEvent::Jobs(Jobs::JobAbandoned { .. }) => l.abandoned = true,
					RuntimeEvent::Jobs(Jobs::EquivocationPunished {
						provider, reporter, ..
					}) => l.equivocations.push((provider, reporter)),
					RuntimeEvent::Jobs(Jobs::ChallengeOpened {
						id, accused, challenger, ..
					}) => {
						challengers.insert(id, challenger.clone());
						l.challenges.push((accused, challenger))
					}
					RuntimeEvent::Jobs(Jobs::AuditOpened { id, .. }) => l.audits.push(id),
					RuntimeEvent::Jobs(Jobs::ChallengeResolved {
						id,
						accused,
						round,
						outcome,
						..
					}) if l.audits.contains(&id) => {
						if outcome == pallet_jobs::ChallengeOutcome::FraudProven {
							l.proven.push((accused.clone(), round));
						}
						l.audit_outcomes.push((accused, outcome))
					}
					RuntimeEvent::Jobs(Jobs::ChallengeResolved {
						id,
						accused,
						round,
						outcome,
						clawed_back,
						..
					}) => {
						if outcome == pallet_jobs::ChallengeOutcome::FraudProven {
							l.proven.push((accused.clone(), round));
						}
						if let Some(by) = challengers.get(&id) {
							l.challenge_outcomes.push((by.clone(), outcome));
						}
						match outcome {
							pallet_jobs::ChallengeOutcome::FraudProven => {
								l.frauds.push((accused, clawed_back))
							}
							_ => l.other_outcomes += 1,
						}
					}
					RuntimeEvent::Providers(Providers::Slashed { who, amount, reason, .. }) => {
						l.slash_reasons.push((who.clone(), reason));
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
	pub fn paid(&self, who: &AccountId32) -> Vec<u32> {
		self.rounds_paid.get(who).cloned().unwrap_or_default()
	}

	/// Checks that `who`'s total balance moved by exactly its rewards, less its fees and
	/// slashes, between blocks `start` and `end`.
	pub fn check_balance(
		&self,
		node: &Node,
		who: Sr25519Keyring,
		start: u32,
		end: u32,
	) -> Result<()> {
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

/// Checks that `providers` agreed on job `job`'s model in each of its `rounds` rounds and that
/// its held-out loss fell. A provider writes a round's record only once that round's
/// evaluation is in, which can be after the chain says the job completed: so it first
/// waits (two minutes at most) for every provider's records.
pub fn agreed_and_learned(providers: &[Provider], job: u64, rounds: usize) -> Result<()> {
	let all_in = || providers.iter().all(|p| p.rounds(job).len() >= rounds).then_some(());
	if let Err(e) = wait_for("every provider's round records", Duration::from_secs(120), all_in) {
		eprintln!("job {job}: {e:#}\n{}", logs(providers));
	}
	let records: Vec<_> = providers.iter().map(|p| p.rounds(job)).collect();
	for r in 0..rounds {
		let hashes: Vec<_> =
			records.iter().map(|rs| rs.get(r).map(|x| x["model_hash"].clone())).collect();
		ensure!(hashes.windows(2).all(|w| w[0] == w[1]), "round {r} hashes differ: {hashes:?}");
	}
	let losses: Vec<f64> = records[0].iter().filter_map(|r| r["eval_loss"].as_f64()).collect();
	ensure!(
		losses.len() == rounds && losses[rounds - 1] < losses[0],
		"held-out loss did not fall: {losses:?}"
	);
	Ok(())
}

pub fn logs(providers: &[Provider]) -> String {
	providers.iter().map(Provider::log_tail).collect::<Vec<_>>().join("\n")
}

/// Posts `spec` as Alice; fails unless it becomes job `id`.
pub fn post_job(url: &str, dir: &Path, spec: &str, id: u64) -> Result<()> {
	post_job_with(url, dir, spec, id, &[])
}

/// [`post_job`] with more arguments to `grid-trainer job create`.
pub fn post_job_with(url: &str, dir: &Path, spec: &str, id: u64, args: &[&str]) -> Result<()> {
	post_job_as(url, dir, spec, id, "//Alice", args)
}

/// [`post_job_with`] as the buyer `account` (a dev account's secret URI, `//Dave`).
pub fn post_job_as(
	url: &str,
	dir: &Path,
	spec: &str,
	id: u64,
	account: &str,
	args: &[&str],
) -> Result<()> {
	let path = dir.join(format!("job-{id}.toml"));
	std::fs::write(&path, spec)?;
	let path = path.to_str().ok_or_else(|| anyhow!("non-UTF-8 path"))?;
	let mut all = vec!["create", "--account", account, "--spec", path];
	all.extend_from_slice(args);
	let created = job_cli(url, &all)?;
	let stdout = String::from_utf8_lossy(&created.stdout);
	ensure!(
		created.status.success() && stdout.contains(&format!("job {id} created")),
		"job create failed: {stdout}\n{}",
		String::from_utf8_lossy(&created.stderr)
	);
	Ok(())
}

/// The buyer CLI's status line of job `id`, once `done` holds for it.
pub fn wait_status(
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

/// The honest providers of [`CheatRun::run`].
pub const HONEST: [Sr25519Keyring; 3] =
	[Sr25519Keyring::Bob, Sr25519Keyring::Charlie, Sr25519Keyring::Dave];

/// A job run by honest providers and misbehaving ones.
pub struct CheatRun {
	/// The dev node.
	pub node: Node,
	/// The providers, in the cast's order.
	pub providers: Vec<Provider>,
	/// The chain's events since the run started (see [`CheatRun::wait_ledger`]).
	pub ledger: Ledger,
	/// The honest providers.
	pub honest: Vec<Sr25519Keyring>,
	/// The block before the run.
	pub start: u32,
	/// The last block the ledger read.
	pub end: u32,
	_dir: tempfile::TempDir,
}

impl CheatRun {
	/// Bob, Charlie and Dave as honest providers and Eve with `misbehave` (lines of her
	/// `[misbehave]` table) on a dev node; the MNIST job, needing all four, with `spec_extra`
	/// lines (top-level keys, then optionally `[training]` and keys of that table), posted
	/// and run to completion.
	pub fn run(misbehave: &str, spec_extra: &str) -> Result<Self> {
		let mut cast: Vec<(Sr25519Keyring, &str)> = HONEST.iter().map(|k| (*k, "")).collect();
		cast.push((Sr25519Keyring::Eve, misbehave));
		let run = Self::start(&cast, 3, spec_extra)?;
		let status = wait_status(&run.url(), 0, Duration::from_secs(300), &run.providers, |s| {
			s.contains("completed")
		})?;
		ensure!(status.contains("round 3/3"), "{status}");
		let mut run = run;
		(run.end, run.ledger) = run.read_ledger()?;
		Ok(run)
	}

	/// `cast` (each a dev account and the lines of its `[misbehave]` table, empty for an
	/// honest provider) on a dev node, and the MNIST job of `rounds` rounds needing them all,
	/// with `spec_extra` lines, posted as job 0.
	pub fn start(cast: &[(Sr25519Keyring, &str)], rounds: u32, spec_extra: &str) -> Result<Self> {
		let mut dir = tempfile::tempdir()?;
		// GRID_KEEP_TEST_DIRS=1 keeps the node's and providers' logs for inspection.
		dir.disable_cleanup(std::env::var_os("GRID_KEEP_TEST_DIRS").is_some());
		let node = dev_node(dir.path())?;
		let url = url(&node);
		let start = node.best_number()?;
		let mut providers = Vec::new();
		for (key, misbehave) in cast {
			let extra = if misbehave.is_empty() {
				String::new()
			} else {
				format!("[misbehave]\n{misbehave}")
			};
			providers.push(keyed_provider(dir.path(), &url, *key, &extra)?);
		}
		let n = cast.len();
		// Top-level keys go before the file's `[training]` table, keys after a `[training]`
		// line of `spec_extra` into it.
		let (top, training) = spec_extra.split_once("[training]\n").unwrap_or((spec_extra, ""));
		let spec = MNIST_JOB
			.replace("rounds = 3\n", &format!("rounds = {rounds}\n"))
			.replace("min_providers = 3\n", &format!("min_providers = {n}\n{top}"))
			.replace("[training]\n", &format!("[training]\n{training}"))
			.replace("max_providers = 4\n", &format!("max_providers = {}\n", n.max(4)))
			.replace("min_provider_stake = 100", &format!("min_provider_stake = {STAKE}"));
		post_job(&url, dir.path(), &spec, 0)?;
		let honest = cast.iter().filter(|(_, m)| m.is_empty()).map(|(k, _)| *k).collect();
		Ok(CheatRun {
			node,
			providers,
			ledger: Ledger::default(),
			honest,
			start,
			end: start,
			_dir: dir,
		})
	}

	/// The node's WebSocket address.
	pub fn url(&self) -> String {
		url(&self.node)
	}

	/// Eve was slashed (her balance moved by exactly her events) and every honest provider
	/// was paid for every round of the three.
	pub fn check_punished(&self) -> Result<()> {
		let eve = Sr25519Keyring::Eve.to_account_id();
		ensure!(self.ledger.slashed.get(&eve).is_some_and(|s| *s > 0), "eve slashed");
		self.ledger.check_balance(&self.node, Sr25519Keyring::Eve, self.start, self.end)?;
		self.check_honest(3)
	}

	/// Every honest provider was paid for each of the first `rounds` rounds and never slashed.
	pub fn check_honest(&self, rounds: u32) -> Result<()> {
		for key in &self.honest {
			let who = key.to_account_id();
			let paid = self.ledger.paid(&who);
			ensure!(
				paid == (0..rounds).collect::<Vec<_>>(),
				"{key:?} paid for rounds {paid:?}, not every round of {rounds}\n{}",
				logs(&self.providers)
			);
			ensure!(!self.ledger.slashed.contains_key(&who), "honest {key:?} slashed");
		}
		Ok(())
	}

	/// Whether `who` is one of the run's honest providers.
	pub fn is_honest(&self, who: &AccountId32) -> bool {
		self.honest.iter().any(|k| k.to_account_id() == *who)
	}

	/// Reads the ledger again, up to the best block, until `done` holds for it (`what`), and
	/// keeps that read; after `timeout` it keeps the last read for the checks to judge. What
	/// the honest providers do about Eve (their reports, challenges and the committee's votes)
	/// lands on chain on its own schedule, which may be after the job completed.
	pub fn wait_ledger(
		&mut self,
		what: &str,
		timeout: Duration,
		done: impl Fn(&Ledger) -> bool,
	) -> Result<()> {
		let read = || self.read_ledger();
		(self.end, self.ledger) =
			match wait_for(what, timeout, || read().ok().filter(|(_, l)| done(l))) {
				Ok(found) => found,
				Err(_) => read()?,
			};
		Ok(())
	}

	/// The best block and the events since the run started, up to it.
	fn read_ledger(&self) -> Result<(u32, Ledger)> {
		let end = self.node.best_number()?;
		Ok((end, Ledger::read(&self.node, self.start + 1, end)?))
	}
}
