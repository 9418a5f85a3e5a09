//! Fraud is proven and punished on a running `grid-node --dev`: four providers deliver a
//! round, one challenges another's contribution, the committee the chain draws a block later
//! commits to and reveals verdicts of invalid, and the cheater's reward is clawed back and its
//! stake slashed; a second challenge of the same contribution is refused.
//!
//! The chain audits a random 1% of paid contributions two blocks after their round settled
//! (audits take challenge ids too): the test waits for that draw and disputes a contribution
//! no audit took.

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
/// Enough for the job's deterrent stake (198 rounds' reward at the runtime's audit rate).
const STAKE: u128 = 10_000 * UNIT;

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
			spec: Box::new(mnist_job(REWARD, 4, 200)),
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

	// The audit draw comes two blocks after the settlement; the audits it opened (ids from
	// zero, consecutive) are open for an hour.
	let draw = settled.settled_at + grid_runtime::configs::JOB_COMMITTEE_DELAY;
	wait_for("the audit draw", INCLUSION_TIMEOUT, || {
		(node.best_number().ok()? > draw).then_some(())
	})?;
	let audited: Vec<_> = (0u64..)
		.map_while(|id| view(&node, OpenChallengeViewFunction::<Runtime>::new(id)).ok().flatten())
		.map(|audit| audit.accused)
		.collect();
	let id = audited.len() as u64;
	// Bob disputes the update of the first of Charlie, Dave and Eve that no audit took; a
	// block later the chain draws the other two to verify.
	let mut parties = vec![Charlie, Dave, Eve];
	let at = parties
		.iter()
		.position(|p| !audited.contains(&p.to_account_id()))
		.context("all three audited")?;
	let accused = parties.remove(at);
	let verifiers = parties;
	let reward =
		view(&node, ContributionViewFunction::<Runtime>::new(0, 0, accused.to_account_id()))?
			.context("the accused's contribution is kept")?
			.reward;
	let challenge =
		jobs(pallet_jobs::Call::challenge { job: 0, round: 0, provider: accused.to_account_id() });
	send(&node, &ctx, Bob, challenge.clone())?;
	let open = wait_for("the committee's draw", INCLUSION_TIMEOUT, || {
		view(&node, OpenChallengeViewFunction::<Runtime>::new(id))
			.ok()
			.flatten()
			.filter(|c| c.drawn())
	})?;
	let mut committee: Vec<_> = open.committee.iter().map(|(who, _)| who.clone()).collect();
	committee.sort();
	let mut expected: Vec<_> = verifiers.iter().map(|v| v.to_account_id()).collect();
	expected.sort();
	ensure!(committee == expected, "the committee is the two other participants");

	// The same contribution cannot be challenged twice: a verifier's attempt fails on chain.
	send(&node, &ctx, verifiers[1], challenge)?;
	ensure!(
		view(&node, OpenChallengeViewFunction::<Runtime>::new(id + 1))?.is_none(),
		"no second challenge"
	);

	// Each verifier commits to its hidden verdict; once both have, both reveal.
	let salt = |i: u8| [i; 32];
	for (i, verifier) in verifiers.iter().enumerate() {
		let commitment =
			vote_commitment(id, &verifier.to_account_id(), Verdict::Invalid, &salt(i as u8));
		send(
			&node,
			&ctx,
			*verifier,
			jobs(pallet_jobs::Call::commit_vote { challenge: id, commitment }),
		)?;
	}
	for (i, verifier) in verifiers.iter().enumerate() {
		let reveal = pallet_jobs::Call::reveal_vote {
			challenge: id,
			verdict: Verdict::Invalid,
			salt: salt(i as u8),
		};
		send(&node, &ctx, *verifier, jobs(reveal))?;
	}
	ensure!(
		view(&node, OpenChallengeViewFunction::<Runtime>::new(id))?.is_none(),
		"decided by majority"
	);

	let job = view(&node, JobViewFunction::<Runtime>::new(0))?.context("job 0")?;
	ensure!(job.job.clawed_back == reward, "the cheater's reward went back to the buyer");
	let participants = view(&node, ParticipantsViewFunction::<Runtime>::new(0))?;
	ensure!(
		participants.iter().all(|(who, _)| *who != accused.to_account_id()),
		"the cheater left the job"
	);
	let cheater = view(&node, ProviderViewFunction::<Runtime>::new(accused.to_account_id()))?
		.context("the cheater stays registered")?;
	let penalty = (STAKE - reward) / 2;
	ensure!(
		cheater.provider.stake == STAKE - reward - penalty,
		"stake {} after a clawback of {reward} and a 50% slash",
		cheater.provider.stake
	);
	ensure!(cheater.health.challenges_lost == 1);
	Ok(())
}
