//! A training job on a running `grid-node --dev`: Alice posts it with escrow, two registered
//! providers join, both rounds are attested with signed proofs (one submitted by a third
//! party, as a batcher would) and paid, and the job completes with the attested model hash.

use std::time::Duration;

use anyhow::{ensure, Result};
use grid_e2e_tests::{
	chain::{next_nonce, sign, submit, view, wait_included, ChainContext},
	wait_for, Node,
};
use grid_primitives::{
	currency::UNIT,
	job::{
		proof_payload, Compression, ContributionProof, DatasetRef, InnerOptimizer, JobSpec,
		MlpConfig, ModelSpec, Nanos, SignedProof, TrainingParams,
	},
	provider::{peer_binding_payload, BoundedBytes, Capabilities, DeviceKind, Multiaddrs},
};
use grid_runtime::{Runtime, RuntimeCall};
use pallet_jobs::{JobStatus, JobViewFunction, RoundResultViewFunction};
use polkadot_sdk::{
	sp_core::{ed25519, Pair, H256},
	sp_keyring::Sr25519Keyring,
	sp_runtime::BoundedVec,
};

const REWARD: u128 = 10 * UNIT;
const TIMEOUT: Duration = Duration::from_secs(90);

fn spec() -> JobSpec<u128, u32> {
	JobSpec {
		model: ModelSpec::MnistMlp(MlpConfig { hidden: 64, layers: 1 }),
		dataset: DatasetRef {
			content_hash: H256::repeat_byte(0x11),
			uri: BoundedBytes::truncate_from(b"grid:mnist-10k".to_vec()),
		},
		training: TrainingParams {
			round_blocks: 30,
			batch_size: 64,
			inner: InnerOptimizer::AdamW {
				lr: Nanos(1_000_000),
				weight_decay: Nanos(0),
				warmup_steps: 0,
			},
			outer_lr: Nanos(700_000_000),
			outer_momentum: Nanos(900_000_000),
			compression: Compression::Int8 { chunk: 256 },
		},
		rounds: 2,
		reward_per_round: REWARD,
		min_providers: 2,
		max_providers: 4,
		min_provider_stake: 100 * UNIT,
		challenge_window: 10,
	}
}

fn register_call(ctx: &ChainContext, who: Sr25519Keyring, seed: u8) -> RuntimeCall {
	let key = ed25519::Pair::from_seed(&[seed; 32]);
	let signature = key.sign(&peer_binding_payload(&ctx.genesis, &who.to_account_id()));
	let addr = format!("/ip4/127.0.0.1/tcp/{}", 40_000 + u16::from(seed));
	RuntimeCall::Providers(pallet_providers::Call::register {
		stake: 200 * UNIT,
		capabilities: Capabilities {
			device: DeviceKind::Cpu,
			device_name: BoundedBytes::truncate_from(b"x86_64 2-core".to_vec()),
			device_count: 1,
			memory_mib: 24_576,
			tflops_milli: 150,
			bandwidth_mbps: 1_000,
			region: BoundedBytes::truncate_from(b"local".to_vec()),
		},
		peer_public: key.public().0,
		peer_signature: signature.0,
		multiaddrs: Multiaddrs::truncate_from(vec![BoundedBytes::truncate_from(addr.into_bytes())]),
		endpoint: BoundedBytes::truncate_from(b"http://127.0.0.1:40999/health".to_vec()),
	})
}

/// `who`'s signed proof for `round` of job 0, using both providers' updates.
fn signed_proof(
	ctx: &ChainContext,
	who: Sr25519Keyring,
	round: u32,
	providers: &[Sr25519Keyring],
) -> Box<SignedProof<polkadot_sdk::sp_runtime::AccountId32>> {
	let proof = ContributionProof {
		job: 0,
		round,
		provider: who.to_account_id(),
		base_model_hash: H256::repeat_byte(round as u8),
		own_update_commitment: H256::from_slice(&who.public().0),
		result_model_hash: H256::repeat_byte(0x40 + round as u8),
		samples_processed: 640,
		train_loss_micros: 2_300_000 - round * 100_000,
		received: BoundedVec::truncate_from(providers.iter().map(|p| p.to_account_id()).collect()),
	};
	let signature = who.pair().sign(&proof_payload(&ctx.genesis, &proof)).0;
	Box::new(SignedProof { proof, signature })
}

/// Signs and submits `call` from `who` with its next nonce, and waits until it is included.
fn send(node: &Node, ctx: &ChainContext, who: Sr25519Keyring, call: RuntimeCall) -> Result<()> {
	let account = who.to_account_id();
	let nonce = next_nonce(node, &account)?;
	submit(node, &sign(ctx, who, nonce, call))?;
	wait_included(node, &account, nonce, TIMEOUT)
}

#[test]
fn a_job_runs_and_pays_on_a_dev_node() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let node = Node::start("dev-jobs", dir.path(), &["--dev".into()])?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	let ctx = ChainContext::fetch(&node)?;
	let (alice, charlie, dave, eve) =
		(Sr25519Keyring::Alice, Sr25519Keyring::Charlie, Sr25519Keyring::Dave, Sr25519Keyring::Eve);
	let providers = [charlie, dave];

	send(&node, &ctx, charlie, register_call(&ctx, charlie, 1))?;
	send(&node, &ctx, dave, register_call(&ctx, dave, 2))?;
	send(&node, &ctx, alice, RuntimeCall::Jobs(pallet_jobs::Call::create_job { spec: spec() }))?;
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
		let own = signed_proof(&ctx, charlie, round, &providers);
		send(
			&node,
			&ctx,
			charlie,
			RuntimeCall::Jobs(pallet_jobs::Call::submit_proof { proof: own }),
		)?;
		let relayed = signed_proof(&ctx, dave, round, &providers);
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
