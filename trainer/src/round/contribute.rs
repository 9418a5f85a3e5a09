//! A trainer's own contribution to a round: its data seed, how many bytes its update may
//! take, and the update compressed and sealed in a signed commitment. Training itself runs
//! in the engine ([`crate::diloco::train_round`]); its pacing against the round's deadline is
//! the daemon's.

use std::{
	sync::Arc,
	time::{Duration, Instant},
};

use grid_primitives::{
	job::{Compression, JobId, RoundIndex},
	work::data_seed,
	Hash,
};
use libp2p::{identity::Keypair, PeerId};

use super::{
	coordinator::offline_round_seed,
	messages::{Commitment, MessageError, SignedCommitment},
	state::GlobalState,
	update_pieces::{address, PieceHashes},
};
use crate::{
	compress::{adaptive::AdaptiveCompressor, CompressedUpdate},
	diloco::LocalRound,
	error::{Error, Result},
	params::{Digest, Manifest},
	work_state::WorkDigests,
};

/// This trainer's own update of a round.
pub struct OwnUpdate {
	/// Its signed commitment.
	pub signed: SignedCommitment,
	/// The update.
	pub update: CompressedUpdate,
	/// Its encoding (served to peers, and what the commitment hashes).
	pub bytes: Arc<Vec<u8>>,
	/// Its pieces' hashes (served with its pieces).
	pub hashes: PieceHashes,
	/// The compression level used.
	pub level: usize,
	/// Time spent training and compressing it.
	pub compute: Duration,
}

/// The seed of `me`'s batches in `round`: the coordinator's, or one derived from the job
/// and round when it deals none.
pub fn round_seed(dealt: Option<Hash>, job: JobId, round: RoundIndex, me: &PeerId) -> Hash {
	dealt.unwrap_or_else(|| data_seed(&offline_round_seed(job, round), job, round, &me.to_bytes()))
}

/// Bytes an update may take so peers download it within `budget_ms` at `mbit` Mbit/s.
pub fn transfer_budget(mbit: f64, budget_ms: u64) -> usize {
	(mbit * 1e6 / 8.0 * budget_ms as f64 / 1e3) as usize
}

/// What a commitment names besides the update: the job, round and layout it belongs to.
pub struct Context<'a> {
	/// The job.
	pub job: JobId,
	/// Genesis hash of the chain the job runs on (zero off chain).
	pub chain: Digest,
	/// The round.
	pub round: RoundIndex,
	/// The round's compression (`TrainingParams::compression_in`: the job's, or in one of
	/// its dense rounds the dense scheme).
	pub compression: Compression,
	/// The job's parameter layout.
	pub manifest: &'a Manifest,
	/// The state the update was trained from.
	pub base: &'a GlobalState,
	/// Digests of this trainer's private state at the round's start.
	pub start: WorkDigests,
	/// Root of the states it recorded through the round.
	pub trajectory: Digest,
}

/// Compresses a round's update (within `budget` bytes when given) and signs its
/// commitment with `key`; the compute time claimed is the `trained` time and the
/// compression's.
pub fn seal(
	local: LocalRound,
	context: Context<'_>,
	compressor: &mut AdaptiveCompressor,
	budget: Option<usize>,
	key: &Keypair,
	trained: Duration,
) -> Result<OwnUpdate> {
	let started = Instant::now();
	let (update, bytes, level) =
		compressor.compress_as(context.compression, &local.delta, budget)?;
	let compute = trained + started.elapsed();
	let (update_hash, hashes) = address(&bytes);
	let commitment = Commitment {
		job: context.job,
		round: context.round,
		chain: context.chain,
		manifest_hash: context.manifest.hash(),
		base_state: context.base.state_hash,
		base_model_hash: context.base.model_hash,
		update_hash,
		update_len: bytes.len() as u64,
		samples: local.samples,
		steps: local.steps,
		start: context.start,
		trajectory: context.trajectory,
		compute_millis: compute.as_millis().min(u128::from(u32::MAX)) as u32,
		train_loss_bits: local.mean_loss.to_bits(),
	};
	let signed = sign(commitment, key)?;
	Ok(OwnUpdate { signed, update, bytes: Arc::new(bytes), hashes, level, compute })
}

/// Signs a commitment with the trainer's libp2p key.
pub fn sign(commitment: Commitment, key: &Keypair) -> Result<SignedCommitment> {
	commitment.sign(key).map_err(|e: MessageError| Error::Network(e.to_string()))
}
