//! Fraud is proven and punished on a running `grid-node --dev`: four providers deliver a
//! round, one challenges another's contribution, the committee the chain draws a block later
//! commits to and reveals verdicts of invalid, and the cheater's reward is clawed back and its stake slashed; a second challenge
//! of the same contribution is refused.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use grid_e2e_tests::{
	calls::{mnist_job, register_call, send, signed_proof, INCLUSION_TIMEOUT},
	chain::{view, ChainContext},
	wait_for, Node,
};
use grid_primitives::{
	currency::UNIT,
	work::{vote_commitment, Verdict},
};
use grid_runtime::{Runtime, RuntimeCall};
use pallet_jobs::{
	ContributionViewFunction, JobViewFunction, OpenChallengeViewFunction, ParticipantsViewFunction,
	RoundResultViewFunction,
};
use pallet_providers::ProviderViewFunction;
use polkadot_sdk::{
	sp_core::{ed25519, Pair, H256},
	sp_keyring::Sr25519Keyring,
};

const REWARD: u128 = 40 * UNIT;
const STAKE: u128 = 500 * UNIT;

fn jobs(call: pallet_jobs::Call<Runtime>) -> RuntimeCall {
	RuntimeCall::Jobs(call)
}

#[test]
fn a_committee_proves_fraud_on_a_dev_node() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let node = Node::start("dev-fraud", dir.path(), &["--dev".into()])?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	let ctx = ChainContext::fetch(&node)?;
	use Sr25519Keyring::{Alice, Bob, Charlie, Dave, Eve};
	let providers = [Bob, Charlie, Dave, Eve];

	for (i, who) in providers.into_iter().enumerate() {
		let key = ed25519::Pair::from_seed(&[i as u8 + 1; 32]);
		send(&node, &ctx, who, register_call(&ctx, who, &key, STAKE, "http://127.0.0.1:9/health"))?;
	}
	send(
		&node,
		&ctx,
		Alice,
		jobs(pallet_jobs::Call::create_job {
			spec: mnist_job(REWARD, 4, 200),
			admission: Default::default(),
		}),
	)?;
	for who in providers {
		send(&node, &ctx, who, jobs(pallet_jobs::Call::join_job { job: 0 }))?;
	}
	let result = H256::repeat_byte(0x42);
	for who in providers {
		let proof = signed_proof(&ctx, 0, 0, who, &providers, result);
		send(&node, &ctx, who, jobs(pallet_jobs::Call::submit_proof { proof }))?;
	}
	let settled = wait_for("round 0 to settle", INCLUSION_TIMEOUT, || {
		view(&node, RoundResultViewFunction::<Runtime>::new(0, 0)).ok().flatten()
	})?;
	ensure!(settled.paid == REWARD, "all four were paid");
	let reward =
		view(&node, ContributionViewFunction::<Runtime>::new(0, 0, Charlie.to_account_id()))?
			.context("Charlie's contribution is kept")?
			.reward;

	// Bob disputes Charlie's update; a block later the chain draws Dave and Eve to verify.
	let challenge =
		jobs(pallet_jobs::Call::challenge { job: 0, round: 0, provider: Charlie.to_account_id() });
	send(&node, &ctx, Bob, challenge.clone())?;
	let open = wait_for("the committee's draw", INCLUSION_TIMEOUT, || {
		view(&node, OpenChallengeViewFunction::<Runtime>::new(0))
			.ok()
			.flatten()
			.filter(|c| c.drawn())
	})?;
	let mut committee: Vec<_> = open.committee.iter().map(|(who, _)| who.clone()).collect();
	committee.sort();
	let mut expected = vec![Dave.to_account_id(), Eve.to_account_id()];
	expected.sort();
	ensure!(committee == expected, "the committee is the two other participants");

	// The same contribution cannot be challenged twice: Eve's attempt fails on chain.
	send(&node, &ctx, Eve, challenge)?;
	ensure!(
		view(&node, OpenChallengeViewFunction::<Runtime>::new(1))?.is_none(),
		"no second challenge"
	);

	// Each verifier commits to its hidden verdict; once both have, both reveal.
	let salt = |i: u8| [i; 32];
	for (i, verifier) in [Dave, Eve].into_iter().enumerate() {
		let commitment =
			vote_commitment(0, &verifier.to_account_id(), Verdict::Invalid, &salt(i as u8));
		send(
			&node,
			&ctx,
			verifier,
			jobs(pallet_jobs::Call::commit_vote { challenge: 0, commitment }),
		)?;
	}
	for (i, verifier) in [Dave, Eve].into_iter().enumerate() {
		let reveal = pallet_jobs::Call::reveal_vote {
			challenge: 0,
			verdict: Verdict::Invalid,
			salt: salt(i as u8),
		};
		send(&node, &ctx, verifier, jobs(reveal))?;
	}
	ensure!(
		view(&node, OpenChallengeViewFunction::<Runtime>::new(0))?.is_none(),
		"decided by majority"
	);

	let job = view(&node, JobViewFunction::<Runtime>::new(0))?.context("job 0")?;
	ensure!(job.job.clawed_back == reward, "Charlie's reward went back to the buyer");
	let participants = view(&node, ParticipantsViewFunction::<Runtime>::new(0))?;
	ensure!(
		participants.iter().all(|(who, _)| *who != Charlie.to_account_id()),
		"the cheater left the job"
	);
	let charlie = view(&node, ProviderViewFunction::<Runtime>::new(Charlie.to_account_id()))?
		.context("Charlie stays registered")?;
	let penalty = (STAKE - reward) / 2;
	ensure!(
		charlie.provider.stake == STAKE - reward - penalty,
		"stake {} after a clawback of {reward} and a 50% slash",
		charlie.provider.stake
	);
	ensure!(charlie.health.challenges_lost == 1);
	Ok(())
}
