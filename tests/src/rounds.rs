//! One job's rounds as the chain's events tell them: the benchmarks' (`scale`, `gpu_job`)
//! account of a run, read block by block from a real node.

use std::collections::BTreeMap;

use anyhow::Result;
use grid_primitives::job::JobId;
use grid_runtime::RuntimeEvent;
use pallet_jobs::Event as Jobs;
use polkadot_sdk::sp_core::crypto::AccountId32;

use crate::{chain::events_at, Node};

/// One round.
#[derive(Default, Debug)]
pub struct ChainRound {
	/// Block it opened in.
	pub opened: Option<u32>,
	pub members: u32,
	pub proofs: u32,
	/// Proofs that attested the model the quorum reached.
	pub attested: u32,
	/// Block and model of its quorum.
	pub quorum: Option<(u32, [u8; 32])>,
	/// Block of its first payment.
	pub paid: Option<u32>,
	/// Who was paid for it, and how much (plancks).
	pub paid_to: Vec<(AccountId32, u128)>,
	pub settled: Option<u32>,
	/// Whether it settled with a result (a quorum).
	pub result: bool,
	/// Per proof, its result model.
	pub results: Vec<[u8; 32]>,
}

/// A job's events from some block to the best one.
#[derive(Default, Debug)]
pub struct JobEvents {
	pub rounds: BTreeMap<u32, ChainRound>,
	/// The most of the job's proofs accepted in one block.
	pub max_proofs_per_block: u32,
	pub started: Option<u32>,
	pub completed: Option<u32>,
}

/// Reads job `job`'s events from block `from` to the best block.
pub fn read_job(node: &Node, job: JobId, from: u32) -> Result<JobEvents> {
	let mut out = JobEvents::default();
	for number in from..=node.best_number()? {
		let mut proofs = 0;
		for event in events_at(node, number)? {
			let RuntimeEvent::Jobs(event) = event else { continue };
			record(&mut out, job, number, event, &mut proofs);
		}
		out.max_proofs_per_block = out.max_proofs_per_block.max(proofs);
	}
	for r in out.rounds.values_mut() {
		let quorum = r.quorum.map(|(_, hash)| hash);
		r.attested = r.results.iter().filter(|h| Some(**h) == quorum).count() as u32;
	}
	Ok(out)
}

/// Adds one event of block `number` to `out` when it is job `job`'s.
fn record(
	out: &mut JobEvents,
	job: JobId,
	number: u32,
	event: Jobs<grid_runtime::Runtime>,
	proofs: &mut u32,
) {
	match event {
		Jobs::JobStarted { job: j } if j == job => out.started = Some(number),
		Jobs::JobCompleted { job: j, .. } if j == job => out.completed = Some(number),
		Jobs::RoundOpened { job: j, round, members, .. } if j == job => {
			let r = out.rounds.entry(round).or_default();
			(r.opened, r.members) = (Some(number), members);
		}
		Jobs::ProofAccepted { job: j, round, result_model_hash, .. } if j == job => {
			*proofs += 1;
			let r = out.rounds.entry(round).or_default();
			r.proofs += 1;
			r.results.push(result_model_hash.0);
		}
		Jobs::QuorumReached { job: j, round, result_model_hash } if j == job => {
			out.rounds.entry(round).or_default().quorum = Some((number, result_model_hash.0));
		}
		Jobs::RewardPaid { job: j, round, who, amount } if j == job => {
			let r = out.rounds.entry(round).or_default();
			r.paid.get_or_insert(number);
			r.paid_to.push((who, amount));
		}
		Jobs::RoundSettled { job: j, round, result_model_hash, .. } if j == job => {
			let r = out.rounds.entry(round).or_default();
			(r.settled, r.result) = (Some(number), result_model_hash.is_some());
		}
		_ => {}
	}
}
