//! A training job on a running `grid-node --dev`: Alice posts it with escrow, two registered
//! providers join, both rounds are attested with signed proofs (one submitted by a third
//! party, as a batcher would) and paid, and the job completes with the attested model hash.

use std::time::Duration;

use anyhow::{ensure, Result};
use grid_e2e_tests::{
	calls::{mnist_job, register_call, send, signed_proof, INCLUSION_TIMEOUT as TIMEOUT},
	chain::{view, ChainContext},
	wait_for, Node,
};
use grid_primitives::currency::UNIT;
use grid_runtime::{Runtime, RuntimeCall};
use pallet_jobs::{JobStatus, JobViewFunction, RoundResultViewFunction};
use polkadot_sdk::{
	sp_core::{ed25519, Pair, H256},
	sp_keyring::Sr25519Keyring,
};

const REWARD: u128 = 10 * UNIT;

#[test]
fn a_job_runs_and_pays_on_a_dev_node() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let node = Node::start("dev-jobs", dir.path(), &["--dev".into()])?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	let ctx = ChainContext::fetch(&node)?;
	let (alice, charlie, dave, eve) =
		(Sr25519Keyring::Alice, Sr25519Keyring::Charlie, Sr25519Keyring::Dave, Sr25519Keyring::Eve);
	let providers = [charlie, dave];

	for (who, seed) in [(charlie, 1u8), (dave, 2)] {
		let key = ed25519::Pair::from_seed(&[seed; 32]);
		let register = register_call(&ctx, who, &key, 200 * UNIT, "http://127.0.0.1:9/health");
		send(&node, &ctx, who, register)?;
	}
	send(
		&node,
		&ctx,
		alice,
		RuntimeCall::Jobs(pallet_jobs::Call::create_job {
			// Two members cannot judge each other: the job is posted without a window.
			spec: Box::new(mnist_job(REWARD, 2, 0)),
			admission: Default::default(),
		}),
	)?;
	let job = view(&node, JobViewFunction::<Runtime>::new(0))?.expect("job 0 exists");
	ensure!(job.job.status == JobStatus::Open, "a new job is open");
	ensure!(job.held == 2 * (REWARD + REWARD / 100), "budget plus 1% fee is held");

	for who in providers {
		send(&node, &ctx, who, RuntimeCall::Jobs(pallet_jobs::Call::join_job { job: 0 }))?;
	}
	let job = view(&node, JobViewFunction::<Runtime>::new(0))?.expect("job 0 exists");
	ensure!(job.job.status == JobStatus::Running, "two providers start it");

	for round in 0..2 {
		// Charlie submits its own proof; Eve submits Dave's, as a batcher would.
		let result = H256::repeat_byte(0x40 + round as u8);
		let own = signed_proof(&ctx, 0, round, charlie, &providers, result);
		send(
			&node,
			&ctx,
			charlie,
			RuntimeCall::Jobs(pallet_jobs::Call::submit_proof { proof: own }),
		)?;
		let relayed = signed_proof(&ctx, 0, round, dave, &providers, result);
		send(
			&node,
			&ctx,
			eve,
			RuntimeCall::Jobs(pallet_jobs::Call::submit_proof { proof: relayed }),
		)?;
		let result = wait_for("the round to settle", TIMEOUT, || {
			view(&node, RoundResultViewFunction::<Runtime>::new(0, round)).ok().flatten()
		})?;
		ensure!(result.paid == REWARD, "round {round} paid {} instead of the reward", result.paid);
		ensure!(result.paid_participants == 2, "both providers are paid");
		ensure!(result.result_model_hash == Some(H256::repeat_byte(0x40 + round as u8)));
		let evidence = view(
			&node,
			pallet_jobs::ContributionViewFunction::<Runtime>::new(
				0,
				round,
				charlie.to_account_id(),
			),
		)?;
		ensure!(
			evidence.is_some_and(|c| c.reward == REWARD / 2 && c.samples_processed == 640),
			"the paid contribution is kept as evidence"
		);
	}

	let job = view(&node, JobViewFunction::<Runtime>::new(0))?.expect("job 0 exists");
	ensure!(
		job.job.status == JobStatus::Completed { final_model_hash: Some(H256::repeat_byte(0x41)) },
		"the job completes with the last attested hash, not {:?}",
		job.job.status
	);
	ensure!(job.held == 0, "no escrow is left");
	ensure!(job.job.paid == 2 * REWARD && job.job.fees == 2 * REWARD / 100);
	let participants = view(&node, pallet_jobs::ParticipantsViewFunction::<Runtime>::new(0))?;
	ensure!(participants.len() == 2);
	ensure!(participants.iter().all(|(_, p)| p.earned == REWARD && p.rounds_paid == 2));
	Ok(())
}
