//! Chain load: how many signed contribution proofs the blocks of a real `grid-node --dev` hold,
//! and how soon a round is paid once its quorum is in (issue 26's chain load test).
//!
//! P provider accounts (`//load-0` …) are funded by Alice and register; Alice posts J jobs
//! of P members each (at most `MaxJobsPerProvider` = 16 jobs, since every member joins every
//! job); all join; then every member signs its proof of round 0 of every job (its `received`
//! list naming all P members, as an honest full-mesh member's would) and all P × J proofs are
//! sent to the node's pool at once, each by its own provider. The blocks that follow are read
//! back: proofs per block, the block's consumed weight per dispatch class against its limit,
//! its length, and per job the blocks from the proof that completed its quorum to its
//! settlement (the payments).
//!
//! usage: chain_load [--providers P] [--jobs J] [--out DIR]   (defaults 64, 16, bench/reports)
//! Writes DIR/chain_load.md and DIR/chain_load.json.

use std::{
	collections::BTreeMap,
	path::PathBuf,
	time::{Duration, Instant},
};

use anyhow::{bail, ensure, Context, Result};
use codec::Encode;
use grid_e2e_tests::{
	calls::{mnist_job, register_call_by, signed_proof_by},
	chain::{
		block_hash, events_at, next_nonce, sign, sign_by, storage_value, submit, transfer, view,
		wait_included, wait_pool_caught_up,
	},
	Node,
};
use grid_primitives::{currency::UNIT, job::MaxProofPeers};
use grid_runtime::{Runtime, RuntimeCall, RuntimeEvent};
use pallet_jobs::{JobStatus, JobViewFunction, RoundResultViewFunction, WeightInfo};
use polkadot_sdk::{
	frame_support::{
		dispatch::{DispatchClass, PerDispatchClass},
		traits::Get,
		weights::Weight,
	},
	sp_core::{crypto::AccountId32, ed25519, sr25519, Pair, H256},
	sp_keyring::Sr25519Keyring,
};
use serde_json::json;

const REWARD: u128 = UNIT;
/// How long each setup phase and the proofs' settlement may take.
const PHASE: Duration = Duration::from_secs(300);

struct Args {
	providers: usize,
	jobs: usize,
	out: PathBuf,
}

fn args() -> Result<Args> {
	let mut parsed = Args { providers: 64, jobs: 16, out: PathBuf::from("bench/reports") };
	let mut words = std::env::args().skip(1);
	while let Some(flag) = words.next() {
		let value = words.next().with_context(|| format!("{flag} needs a value"))?;
		match flag.as_str() {
			"--providers" => parsed.providers = value.parse()?,
			"--jobs" => parsed.jobs = value.parse()?,
			"--out" => parsed.out = value.into(),
			other => bail!("unknown option {other} (--providers, --jobs, --out)"),
		}
	}
	let most = <MaxProofPeers as Get<u32>>::get() as usize;
	ensure!((2..=most).contains(&parsed.providers), "--providers must be 2..={most}");
	ensure!((1..=16).contains(&parsed.jobs), "--jobs must be 1..=16 (jobs per provider)");
	Ok(parsed)
}

fn id(pair: &sr25519::Pair) -> AccountId32 {
	pair.public().into()
}

/// Waits until every account in `who` has sent `count` transactions (its on-chain nonce).
fn wait_nonces(node: &Node, who: &[AccountId32], count: u32, what: &str) -> Result<()> {
	let deadline = Instant::now() + PHASE;
	for account_id in who {
		let left = deadline.saturating_duration_since(Instant::now());
		wait_included(node, account_id, count - 1, left)
			.with_context(|| format!("{what}: not included within {PHASE:?}"))?;
	}
	Ok(())
}

/// What one block held.
#[derive(Default)]
struct BlockRead {
	number: u32,
	timestamp_ms: u64,
	extrinsics: usize,
	length: usize,
	proofs: usize,
	weight: Option<PerDispatchClass<Weight>>,
	quorums: Vec<u64>,
	settled: Vec<u64>,
	paid: usize,
}

fn read_block(node: &Node, number: u32) -> Result<BlockRead> {
	let hash = block_hash(node, number)?;
	let block = node.rpc("chain_getBlock", json!([hash]))?;
	let extrinsics = block["block"]["extrinsics"].as_array().context("a block's extrinsics")?;
	let length = extrinsics.iter().filter_map(|x| x.as_str()).map(|x| (x.len() - 2) / 2).sum();
	let mut read = BlockRead {
		number,
		timestamp_ms: storage_value::<u64>(node, b"Timestamp", b"Now", &hash)?.unwrap_or_default(),
		extrinsics: extrinsics.len(),
		length,
		weight: storage_value(node, b"System", b"BlockWeight", &hash)?,
		..Default::default()
	};
	for event in events_at(node, number)? {
		match event {
			RuntimeEvent::Jobs(pallet_jobs::Event::ProofAccepted { .. }) => read.proofs += 1,
			RuntimeEvent::Jobs(pallet_jobs::Event::QuorumReached { job, .. }) => {
				read.quorums.push(job)
			}
			RuntimeEvent::Jobs(pallet_jobs::Event::RoundSettled { job, .. }) => {
				read.settled.push(job)
			}
			RuntimeEvent::Jobs(pallet_jobs::Event::RewardPaid { .. }) => read.paid += 1,
			_ => {}
		}
	}
	Ok(read)
}

fn main() -> Result<()> {
	let args = args()?;
	let (p, j) = (args.providers, args.jobs);
	let dir = tempfile::tempdir()?;
	let node = Node::start("chain-load", dir.path(), &["--dev".into()])?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	let ctx = grid_e2e_tests::chain::ChainContext::fetch(&node)?;
	let alice = Sr25519Keyring::Alice;
	let providers: Vec<sr25519::Pair> = (0..p)
		.map(|i| sr25519::Pair::from_string(&format!("//load-{i}"), None))
		.collect::<Result<_, _>>()
		.map_err(|e| anyhow::anyhow!("deriving a provider key: {e:?}"))?;
	let accounts: Vec<AccountId32> = providers.iter().map(id).collect();

	// Funds: every job locks the job's stake, and proofs cost no fee.
	let spec = |members: u32| {
		let mut spec = mnist_job(REWARD, members, 0);
		spec.max_providers = members;
		spec
	};
	let stake = spec(p as u32).min_provider_stake * j as u128 + 100 * UNIT;
	let mut nonce = next_nonce(&node, &alice.to_account_id())?;
	for who in &accounts {
		submit(&node, &sign(&ctx, alice, nonce, transfer(who.clone(), stake + 100 * UNIT)))?;
		nonce += 1;
	}
	wait_nonces(&node, &[alice.to_account_id()], nonce, "funding")?;
	wait_pool_caught_up(&node, PHASE)?;
	eprintln!("funded {p} providers");
	for (i, pair) in providers.iter().enumerate() {
		let key = ed25519::Pair::from_seed(&[i as u8 + 1; 32]);
		let call = register_call_by(&ctx, &id(pair), &key, stake, "http://127.0.0.1:9/health");
		submit(&node, &sign_by(&ctx, pair, 0, call))?;
	}
	wait_nonces(&node, &accounts, 1, "registering")?;
	eprintln!("registered {p} providers");
	let best = block_hash(&node, node.best_number()?)?;
	let first_job = storage_value::<u64>(&node, b"Jobs", b"NextJobId", &best)?.unwrap_or_default();
	for _ in 0..j {
		let call = RuntimeCall::Jobs(pallet_jobs::Call::create_job {
			spec: Box::new(spec(p as u32)),
			admission: Default::default(),
		});
		submit(&node, &sign(&ctx, alice, nonce, call))?;
		nonce += 1;
	}
	wait_nonces(&node, &[alice.to_account_id()], nonce, "posting the jobs")?;
	let jobs: Vec<u64> = (first_job..first_job + j as u64).collect();
	for (i, pair) in providers.iter().enumerate() {
		for (n, job) in jobs.iter().enumerate() {
			let call = RuntimeCall::Jobs(pallet_jobs::Call::join_job { job: *job });
			submit(&node, &sign_by(&ctx, pair, 1 + n as u32, call))
				.with_context(|| format!("provider {i} joining job {job}"))?;
		}
	}
	wait_nonces(&node, &accounts, 1 + j as u32, "joining")?;
	for job in &jobs {
		let status =
			view(&node, JobViewFunction::<Runtime>::new(*job))?.context("a job")?.job.status;
		ensure!(status == JobStatus::Running, "job {job} is {status:?}, not running");
	}
	eprintln!("{j} jobs of {p} members running");

	// Every proof signed first, then all sent at once, job by job.
	let result = H256::repeat_byte(0x42);
	let mut proofs = Vec::new();
	for (n, job) in jobs.iter().enumerate() {
		for pair in &providers {
			let proof = signed_proof_by(&ctx, *job, 0, pair, &accounts, result);
			let call = RuntimeCall::Jobs(pallet_jobs::Call::submit_proof { proof });
			proofs.push(sign_by(&ctx, pair, 1 + j as u32 + n as u32, call));
		}
	}
	let proof_bytes = proofs.iter().map(|x| x.encoded_size()).max().unwrap_or_default();
	let first_block = node.best_number()? + 1;
	let sending = Instant::now();
	for xt in &proofs {
		submit(&node, xt)?;
	}
	let sent_in = sending.elapsed();
	eprintln!("sent {} proofs in {:.1} s", proofs.len(), sent_in.as_secs_f64());
	let settled = Instant::now();
	for job in &jobs {
		loop {
			if view(&node, RoundResultViewFunction::<Runtime>::new(*job, 0))?.is_some() {
				break;
			}
			ensure!(settled.elapsed() < PHASE, "job {job}'s round 0 did not settle in {PHASE:?}");
			std::thread::sleep(Duration::from_millis(500));
		}
	}
	let last_block = node.best_number()?;
	let blocks: Vec<BlockRead> =
		(first_block..=last_block).map(|n| read_block(&node, n)).collect::<Result<_>>()?;
	let report = Report::new(p, j, proof_bytes, sent_in, blocks)?;
	std::fs::create_dir_all(&args.out)?;
	std::fs::write(
		args.out.join("chain_load.json"),
		serde_json::to_string_pretty(&report.json())?,
	)?;
	std::fs::write(args.out.join("chain_load.md"), report.markdown())?;
	eprintln!("wrote {}", args.out.join("chain_load.md").display());
	Ok(())
}

struct Report {
	providers: usize,
	jobs: usize,
	proof_bytes: usize,
	sent_in: Duration,
	blocks: Vec<BlockRead>,
	/// Per job: (block of its quorum, block of its settlement).
	latency: BTreeMap<u64, (u32, u32)>,
	max_weight: PerDispatchClass<Weight>,
	max_length: u32,
	record_proof: Weight,
	settling_proof: Weight,
	/// What every proof is charged before it runs: a settlement of the largest round.
	precharge: Weight,
}

impl Report {
	fn new(
		providers: usize,
		jobs: usize,
		proof_bytes: usize,
		sent_in: Duration,
		blocks: Vec<BlockRead>,
	) -> Result<Self> {
		let mut quorum = BTreeMap::new();
		let mut latency = BTreeMap::new();
		for block in &blocks {
			for job in &block.quorums {
				quorum.entry(*job).or_insert(block.number);
			}
			for job in &block.settled {
				let at = *quorum.get(job).context("a round settled before its quorum")?;
				latency.insert(*job, (at, block.number));
			}
		}
		let proofs: usize = blocks.iter().map(|b| b.proofs).sum();
		ensure!(proofs == providers * jobs, "{proofs} proofs accepted of {}", providers * jobs);
		ensure!(latency.len() == jobs, "{} of {jobs} rounds settled", latency.len());
		let weights = <Runtime as polkadot_sdk::frame_system::Config>::BlockWeights::get();
		let lengths = <Runtime as polkadot_sdk::frame_system::Config>::BlockLength::get();
		let class_max = |class| weights.get(class).max_total.unwrap_or(weights.max_block);
		let mut max_weight = PerDispatchClass::<Weight>::default();
		for class in DispatchClass::all() {
			*max_weight.get_mut(*class) = class_max(*class);
		}
		let members = providers as u32;
		type Weights = <Runtime as pallet_jobs::Config>::WeightInfo;
		Ok(Report {
			providers,
			jobs,
			proof_bytes,
			sent_in,
			blocks,
			latency,
			max_weight,
			max_length: *lengths.max.get(DispatchClass::Operational),
			record_proof: Weights::record_proof(members),
			settling_proof: Weights::submit_proof(members),
			precharge: Weights::submit_proof(
				<Runtime as pallet_jobs::Config>::MaxParticipants::get(),
			),
		})
	}

	fn used(&self, block: &BlockRead, class: DispatchClass) -> Option<f64> {
		let used = block.weight.as_ref()?.get(class).ref_time() as f64;
		Some(used / self.max_weight.get(class).ref_time() as f64)
	}

	fn max_proofs(&self) -> usize {
		self.blocks.iter().map(|b| b.proofs).max().unwrap_or_default()
	}

	/// The fullest block and the operational weight it used per proof (its extrinsic's base
	/// weight, extensions and call, settlements included), in picoseconds.
	fn per_proof(&self) -> Option<(&BlockRead, u64)> {
		let fullest = self.blocks.iter().max_by_key(|b| b.proofs)?;
		let used = fullest.weight.as_ref()?.get(DispatchClass::Operational).ref_time();
		Some((fullest, used / fullest.proofs.max(1) as u64))
	}

	/// Proofs a block could hold by its operational weight, at the fullest block's weight per
	/// proof and with room left for one more pre-charged proof, and by length.
	fn ceilings(&self) -> (u64, u64) {
		let max = self.max_weight.get(DispatchClass::Operational).ref_time();
		let by_weight =
			self.per_proof().map_or(0, |(_, each)| (max - self.precharge.ref_time()) / each.max(1));
		(by_weight, self.max_length as u64 / self.proof_bytes as u64)
	}

	fn markdown(&self) -> String {
		let (by_weight, by_length) = self.ceilings();
		let total = self.providers * self.jobs;
		let mut md = format!(
			"# Chain load: proofs per block on a dev node\n\n\
			 Generated by `bench/chain_load.sh` (`tests/src/bin/chain_load.rs`); do not edit by \
			 hand. Headline figures in `chain_load.json`.\n\n\
			 A `grid-node --dev` (6 s blocks). {p} provider accounts register and each joins \
			 {j} jobs of {p} members; then all {total} proofs of round 0 (each signed by its \
			 member, `received` naming all {p} members: {bytes} bytes per extrinsic) go to the \
			 pool at once, each sent by its own provider ({sent:.1} s to send them all over \
			 RPC). Each row is a block from the first after the sending began to the one \
			 where the last round settled.\n\n\
			 | block | proofs | extrinsics | operational weight used | normal weight used | \
			 length | quorums reached | rounds settled | rewards paid |\n\
			 |---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
			p = self.providers,
			j = self.jobs,
			bytes = self.proof_bytes,
			sent = self.sent_in.as_secs_f64(),
		);
		let share = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{:.1}%", 100.0 * x));
		for b in &self.blocks {
			md += &format!(
				"| {} | {} | {} | {} | {} | {} KB | {} | {} | {} |\n",
				b.number,
				b.proofs,
				b.extrinsics,
				share(self.used(b, DispatchClass::Operational)),
				share(self.used(b, DispatchClass::Normal)),
				b.length / 1000,
				b.quorums.len(),
				b.settled.len(),
				b.paid,
			);
		}
		let worst = self.latency.values().map(|(q, s)| s - q).max().unwrap_or_default();
		let target = if self.max_proofs() >= 1000 { "met" } else { "not met" };
		md += &format!(
			"\n**Most proofs in one block: {most}** (target ≥ 1,000: {target}). \
			 Quorum to payment: at most {worst} block(s) ({secs} s at 6 s blocks; target ≤ \
			 12 s) over {jobs} rounds.\n\n\
			 What bounds a block: the operational class may use {maxw:.3} s of weight and \
			 {maxl} bytes. A proof is charged up front for the worst case, a settlement of a \
			 round of the most members ({pre:.2} ms), then what it did: its recording \
			 ({record:.3} ms), or the settlement of its {p}-member round ({settle:.2} ms) for \
			 the one that completes it; on top come its extensions (`CheckProof` verifies \
			 the signature in the pool: a one-member recording) and the extrinsic's base \
			 weight. The fullest block used {each:.2} ms per proof, settlements included \
			 ({settled} rounds in it), so a block holds about {by_weight} proofs by weight \
			 at that mix and {by_length} by length at {bytes} bytes each.\n",
			most = self.max_proofs(),
			secs = worst * 6,
			jobs = self.jobs,
			maxw = self.max_weight.get(DispatchClass::Operational).ref_time() as f64 / 1e12,
			maxl = self.max_length,
			p = self.providers,
			settle = self.settling_proof.ref_time() as f64 / 1e9,
			pre = self.precharge.ref_time() as f64 / 1e9,
			each = self.per_proof().map_or(f64::NAN, |(_, each)| each as f64 / 1e9),
			settled = self.per_proof().map_or(0, |(b, _)| b.settled.len()),
			record = self.record_proof.ref_time() as f64 / 1e9,
			bytes = self.proof_bytes,
		);
		md
	}

	fn json(&self) -> serde_json::Value {
		let (by_weight, by_length) = self.ceilings();
		json!({
			"providers": self.providers,
			"jobs": self.jobs,
			"proofs": self.providers * self.jobs,
			"proof_extrinsic_bytes": self.proof_bytes,
			"send_seconds": self.sent_in.as_secs_f64(),
			"most_proofs_in_a_block": self.max_proofs(),
			"target_proofs_in_a_block": 1000,
			"quorum_to_settlement_blocks": self.latency.values().map(|(q, s)| s - q).collect::<Vec<_>>(),
			"ceiling_by_weight": by_weight,
			"fullest_block_ref_time_per_proof": self.per_proof().map(|(_, each)| each),
			"ceiling_by_length": by_length,
			"record_proof_ref_time": self.record_proof.ref_time(),
			"settling_proof_ref_time": self.settling_proof.ref_time(),
			"precharged_ref_time": self.precharge.ref_time(),
			"blocks": self.blocks.iter().map(|b| json!({
				"number": b.number,
				"timestamp_ms": b.timestamp_ms,
				"proofs": b.proofs,
				"extrinsics": b.extrinsics,
				"length": b.length,
				"operational_weight_used": self.used(b, DispatchClass::Operational),
				"normal_weight_used": self.used(b, DispatchClass::Normal),
				"quorums": b.quorums,
				"settled": b.settled,
				"rewards_paid": b.paid,
			})).collect::<Vec<_>>(),
		})
	}
}
