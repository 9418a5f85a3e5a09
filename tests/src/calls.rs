//! Building, signing and sending the Grid calls the end-to-end tests make.

use std::time::Duration;

use anyhow::Result;
use grid_primitives::{
	currency::UNIT,
	job::{
		proof_payload, Compression, ContributionProof, DatasetRef, InnerOptimizer, JobSpec,
		MlpConfig, ModelSpec, Nanos, SignedProof, TrainingParams,
	},
	provider::{peer_binding_payload, BoundedBytes, Capabilities, DeviceKind, Multiaddrs},
};
use grid_runtime::RuntimeCall;
use polkadot_sdk::{
	sp_core::{crypto::AccountId32, ed25519, sr25519, Pair, H256},
	sp_keyring::Sr25519Keyring,
	sp_runtime::BoundedVec,
};

use crate::{
	chain::{next_nonce, sign, submit, wait_included, ChainContext},
	Node,
};

/// How long a sent call may take to be included.
pub const INCLUSION_TIMEOUT: Duration = Duration::from_secs(90);

/// What the test providers declare: this machine's CPU.
pub fn capabilities() -> Capabilities {
	Capabilities {
		device: DeviceKind::Cpu,
		device_name: BoundedBytes::truncate_from(b"x86_64 2-core".to_vec()),
		device_count: 1,
		memory_mib: 24_576,
		tflops_milli: 150,
		bandwidth_mbps: 1_000,
		region: BoundedBytes::truncate_from(b"local".to_vec()),
	}
}

/// `who` registers with `stake`, binding the libp2p key `key`, probed at `endpoint`.
pub fn register_call(
	ctx: &ChainContext,
	who: Sr25519Keyring,
	key: &ed25519::Pair,
	stake: u128,
	endpoint: &str,
) -> RuntimeCall {
	register_call_by(ctx, &who.to_account_id(), key, stake, endpoint)
}

/// [`register_call`] for any account.
pub fn register_call_by(
	ctx: &ChainContext,
	who: &AccountId32,
	key: &ed25519::Pair,
	stake: u128,
	endpoint: &str,
) -> RuntimeCall {
	let signature = key.sign(&peer_binding_payload(&ctx.genesis, who));
	RuntimeCall::Providers(pallet_providers::Call::register {
		stake,
		capabilities: capabilities(),
		peer_public: key.public().0,
		peer_signature: signature.0,
		multiaddrs: Multiaddrs::truncate_from(vec![BoundedBytes::truncate_from(
			b"/ip4/127.0.0.1/tcp/40333".to_vec(),
		)]),
		endpoint: BoundedBytes::truncate_from(endpoint.as_bytes().to_vec()),
	})
}

/// Signs and submits `call` from `who` with its next nonce, and waits until it is included
/// (which says nothing of whether it succeeded).
pub fn send(node: &Node, ctx: &ChainContext, who: Sr25519Keyring, call: RuntimeCall) -> Result<()> {
	let account = who.to_account_id();
	let nonce = next_nonce(node, &account)?;
	submit(node, &sign(ctx, who, nonce, call))?;
	wait_included(node, &account, nonce, INCLUSION_TIMEOUT)
}

/// `who`'s signed proof for `round` of `job` attesting `result`, having used the updates of
/// `received`. Its update commitment is derived from its key.
pub fn signed_proof(
	ctx: &ChainContext,
	job: u64,
	round: u32,
	who: Sr25519Keyring,
	received: &[Sr25519Keyring],
	result: H256,
) -> Box<SignedProof<AccountId32>> {
	let received: Vec<AccountId32> = received.iter().map(|p| p.to_account_id()).collect();
	signed_proof_by(ctx, job, round, &who.pair(), &received, result)
}

/// [`signed_proof`] by any sr25519 key pair.
pub fn signed_proof_by(
	ctx: &ChainContext,
	job: u64,
	round: u32,
	who: &sr25519::Pair,
	received: &[AccountId32],
	result: H256,
) -> Box<SignedProof<AccountId32>> {
	let proof = ContributionProof {
		job,
		round,
		provider: who.public().into(),
		base_model_hash: H256::repeat_byte(round as u8),
		own_update_commitment: H256::from_slice(&who.public().0),
		start_state: H256::repeat_byte(round as u8 ^ 0x55),
		inner_steps: 640,
		result_model_hash: result,
		samples_processed: 640,
		train_loss_micros: 2_300_000 - round * 100_000,
		received: BoundedVec::truncate_from(received.to_vec()),
	};
	let signature = who.sign(&proof_payload(&ctx.genesis, &proof)).0;
	Box::new(SignedProof { proof, signature })
}

/// The least stake the runtime's audits ask of a job paying `reward` a round with a
/// `challenge_window` (none without one).
pub fn deterrent_stake(reward: u128, challenge_window: u32) -> u128 {
	let limits = pallet_jobs::Pallet::<grid_runtime::Runtime>::spec_limits();
	match challenge_window {
		0 => 0,
		_ => limits.deterrence.stake_for(reward).unwrap_or_default(),
	}
}

/// A small MNIST job of two 30-block rounds paying `reward` each, needing `min_providers`
/// (at most four), 100 GRID of stake (more when the chain's audits ask for it), and open to
/// challenges for `challenge_window` blocks.
pub fn mnist_job(reward: u128, min_providers: u32, challenge_window: u32) -> JobSpec<u128, u32> {
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
			error_decay: Nanos(900_000_000),
			dense_rounds: 0,
			outer_anneal: None,
			overlap_steps: 0,
			max_steps: None,
			exchange: Default::default(),
			compression: Compression::Int8 { chunk: 256 },
		},
		rounds: 2,
		reward_per_round: reward,
		min_providers,
		max_providers: 4,
		min_provider_stake: deterrent_stake(reward, challenge_window).max(100 * UNIT),
		challenge_window,
		initial_weights: None,
	}
}
