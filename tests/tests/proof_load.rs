//! The chain load benchmark's binary (`bench/chain_load.sh`) on a small load: every member's
//! proof of every job lands on a dev node, and each round is paid in the block of the proof
//! that completed its quorum (issue 26: payments within two blocks of it). The full load
//! (1,024 proofs) is the benchmark's; how many proofs a block's weight admits is
//! `grid-runtime`'s `a_block_holds_over_a_thousand_proofs_that_settle_nothing`.

use std::process::Command;

use anyhow::{ensure, Context, Result};
use grid_e2e_tests::node_binary;

#[test]
fn every_proof_lands_and_each_round_is_paid_within_two_blocks_of_its_quorum() -> Result<()> {
	let out = tempfile::tempdir()?;
	let run = Command::new(env!("CARGO_BIN_EXE_chain_load"))
		.args(["--providers", "8", "--jobs", "3", "--out"])
		.arg(out.path())
		.env("GRID_NODE_BIN", node_binary())
		.output()?;
	ensure!(run.status.success(), "chain_load failed:\n{}", String::from_utf8_lossy(&run.stderr));
	let report: serde_json::Value =
		serde_json::from_str(&std::fs::read_to_string(out.path().join("chain_load.json"))?)?;
	let blocks = report["blocks"].as_array().context("blocks")?;
	let landed: u64 = blocks.iter().filter_map(|b| b["proofs"].as_u64()).sum();
	ensure!(landed == 24, "{landed} of 24 proofs landed");
	let latency = report["quorum_to_settlement_blocks"].as_array().context("latencies")?;
	ensure!(latency.len() == 3, "{} of 3 rounds settled", latency.len());
	ensure!(
		latency.iter().all(|blocks| blocks.as_u64().is_some_and(|b| b <= 2)),
		"a round paid more than two blocks after its quorum: {latency:?}"
	);
	let paid: u64 = blocks.iter().filter_map(|b| b["rewards_paid"].as_u64()).sum();
	ensure!(paid == 24, "{paid} of 24 members paid");
	Ok(())
}
