//! Recomputable work: which data a participant trains on in a round, and how verifiers judge
//! a contribution.
//!
//! The chain draws a random seed when it opens a round. A participant's training data for
//! that round is a pure function of (round seed, job, round, provider), so a verifier can
//! recompute exactly the samples the participant had to use; the base model is named by hash
//! in the proof and the update by its content address. `grid-trainer` samples its shard with
//! [`sample_index`], and fraud committees use the same function to re-execute.

use alloc::vec::Vec;
use codec::{Decode, DecodeWithMemTracking, Encode, MaxEncodedLen};
use polkadot_sdk::{
	sp_core::{ConstU32, H256},
	sp_runtime::{
		traits::{BlakeTwo256, Hash},
		BoundedVec,
	},
};
use scale_info::TypeInfo;

use crate::job::{JobId, RoundIndex};

/// Domain separator of data seeds. Bump the version to change how shards are drawn.
pub const DATA_SEED_DOMAIN: &[u8] = b"grid/data-seed/v1";

/// The seed of `provider`'s data in `round` of `job`, given the round's on-chain seed.
pub fn data_seed<A: Encode>(
	round_seed: &H256,
	job: JobId,
	round: RoundIndex,
	provider: &A,
) -> H256 {
	BlakeTwo256::hash_of(&(DATA_SEED_DOMAIN, round_seed, job, round, provider))
}

/// The `i`-th sample (with replacement) of a shard drawn with `seed` from a dataset of
/// `len` samples, or `None` for an empty dataset. Stateless, so a verifier can recompute
/// any step's batch without replaying the ones before it.
pub fn sample_index(seed: &H256, i: u64, len: u64) -> Option<u64> {
	if len == 0 {
		return None;
	}
	let digest = BlakeTwo256::hash_of(&(seed, i));
	let mut wide = [0u8; 16];
	wide.copy_from_slice(&digest.as_bytes()[..16]);
	// 128 random bits reduced mod len: the bias is below 2^-64 for any u64 length.
	Some((u128::from_le_bytes(wide) % u128::from(len)) as u64)
}

/// A verifier's judgement of a challenged contribution after re-executing it.
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum Verdict {
	/// The update matches a re-execution within tolerance.
	Valid,
	/// The update does not match what the data and base model give.
	Invalid,
}

/// Domain separator of committee vote commitments.
pub const VOTE_DOMAIN: &[u8] = b"grid/vote/v1";

/// Random bytes that hide a committed verdict until it is revealed.
pub type VoteSalt = [u8; 32];

/// What a committee member commits to before revealing `verdict` on challenge `challenge`.
/// The voter is part of it, so nobody can reveal another member's verdict as its own, and
/// the salt keeps a two-valued verdict from being guessed from the commitment.
pub fn vote_commitment<A: Encode>(
	challenge: u64,
	voter: &A,
	verdict: Verdict,
	salt: &VoteSalt,
) -> H256 {
	BlakeTwo256::hash_of(&(VOTE_DOMAIN, challenge, voter, verdict, salt))
}

/// Most provider probes one worker report carries.
pub type MaxProbesPerReport = ConstU32<32>;

/// One probe of a provider's HTTP endpoint by a validator's off-chain worker.
#[derive(
	Clone, PartialEq, Eq, Debug, Encode, Decode, DecodeWithMemTracking, MaxEncodedLen, TypeInfo,
)]
pub struct ProbeResult<AccountId> {
	/// The provider probed.
	pub provider: AccountId,
	/// Whether its endpoint answered with a 2xx status in time.
	pub ok: bool,
	/// Round-trip time in milliseconds (the timeout when it did not answer).
	pub latency_ms: u32,
}

/// What a validator's off-chain worker reports: probe results and whether the chain has
/// overdue rounds or challenges its hooks could not reach, which the report's dispatch then
/// settles. Signed by the validator's authority key over [`worker_report_payload`].
#[derive(
	Clone, PartialEq, Eq, Debug, Encode, Decode, DecodeWithMemTracking, MaxEncodedLen, TypeInfo,
)]
pub struct WorkerReport<AccountId, BlockNumber, Authority> {
	/// The reporting validator's authority key (the signer).
	pub validator: Authority,
	/// The block the worker ran at; reports are accepted once per validator and block, and
	/// only while recent.
	pub at: BlockNumber,
	/// Probe results.
	pub probes: BoundedVec<ProbeResult<AccountId>, MaxProbesPerReport>,
	/// Settle overdue rounds and challenges.
	pub settle: bool,
}

/// Domain separator of worker report signatures. Bump the version to change the format.
pub const WORKER_REPORT_DOMAIN: &[u8] = b"grid/worker-report/v1";

/// The bytes a validator signs for `report` on the chain with genesis `genesis`. The domain
/// keeps them apart from anything else the key signs (block seals sign a bare 32-byte hash).
pub fn worker_report_payload<H: Encode, A: Encode, B: Encode, V: Encode>(
	genesis: &H,
	report: &WorkerReport<A, B, V>,
) -> Vec<u8> {
	(WORKER_REPORT_DOMAIN, genesis, report).encode()
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::AccountId;

	#[test]
	fn a_vote_commitment_binds_challenge_voter_verdict_and_salt() {
		let (a, b) = (AccountId::new([1; 32]), AccountId::new([2; 32]));
		let base = vote_commitment(7, &a, Verdict::Valid, &[3; 32]);
		assert_eq!(base, vote_commitment(7, &a, Verdict::Valid, &[3; 32]));
		assert_ne!(base, vote_commitment(8, &a, Verdict::Valid, &[3; 32]));
		assert_ne!(base, vote_commitment(7, &b, Verdict::Valid, &[3; 32]));
		assert_ne!(base, vote_commitment(7, &a, Verdict::Invalid, &[3; 32]));
		assert_ne!(base, vote_commitment(7, &a, Verdict::Valid, &[4; 32]));
	}

	#[test]
	fn data_seed_differs_per_provider_round_and_job() {
		let seed = H256::repeat_byte(1);
		let (a, b) = (AccountId::new([1; 32]), AccountId::new([2; 32]));
		let base = data_seed(&seed, 1, 2, &a);
		assert_eq!(base, data_seed(&seed, 1, 2, &a));
		assert_ne!(base, data_seed(&seed, 1, 2, &b));
		assert_ne!(base, data_seed(&seed, 1, 3, &a));
		assert_ne!(base, data_seed(&seed, 2, 2, &a));
		assert_ne!(base, data_seed(&H256::repeat_byte(2), 1, 2, &a));
	}

	#[test]
	fn sample_indices_are_in_range_deterministic_and_spread() {
		let seed = H256::repeat_byte(3);
		assert_eq!(sample_index(&seed, 0, 0), None);
		let draws: Vec<u64> =
			(0..1_000).map(|i| sample_index(&seed, i, 10).expect("non-empty")).collect();
		assert!(draws.iter().all(|&x| x < 10));
		assert_eq!(draws[17], sample_index(&seed, 17, 10).expect("non-empty"));
		for value in 0..10 {
			let hits = draws.iter().filter(|&&x| x == value).count();
			assert!((50..=150).contains(&hits), "value {value} drawn {hits} times of 1000");
		}
	}
}
