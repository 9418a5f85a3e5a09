//! A trainer's signed commitment to its update for one round, as far as the chain reads it.
//!
//! Trainers sign commitments with their libp2p ed25519 key (the key the chain binds to the
//! provider's account at registration) over [`COMMITMENT_DOMAIN`] followed by the
//! commitment's SCALE bytes. The trainer's `Commitment` has many fields; the chain reads only
//! its head ([`CommitmentHead`]: job, round and chain, the first fields of every commitment),
//! enough to tell that two commitments signed by one key are for one slot. Two different
//! ones are equivocation, which the chain punishes as it does two proofs.

use alloc::vec::Vec;
use codec::{Decode, DecodeWithMemTracking, Encode, MaxEncodedLen};
use polkadot_sdk::{sp_core::ConstU32, sp_runtime::BoundedVec};
use scale_info::TypeInfo;

use crate::job::{JobId, RoundIndex};

/// Domain separation for commitment signatures (v3: the head names the chain).
pub const COMMITMENT_DOMAIN: &[u8] = b"grid/commitment/v3";

/// Longest encoded commitment the chain takes as evidence (one is about 350 bytes).
pub const MAX_COMMITMENT_BYTES: u32 = 1024;

/// The first fields of every commitment: the slot it is for and the chain it was signed on
/// (the genesis hash; zero off chain), so a commitment signed on one network is no evidence
/// on another that shares the job and round numbers.
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
pub struct CommitmentHead {
	/// The job.
	pub job: JobId,
	/// The round the update belongs to.
	pub round: RoundIndex,
	/// Genesis hash of the chain the job runs on.
	pub chain: [u8; 32],
}

/// The bytes a trainer's key signs for a commitment whose SCALE encoding is `encoded`.
pub fn commitment_payload(encoded: &[u8]) -> Vec<u8> {
	[COMMITMENT_DOMAIN, encoded].concat()
}

/// A signed commitment in the form the chain checks: the commitment's SCALE bytes, the raw
/// ed25519 public key that signed them and the signature over [`commitment_payload`].
#[derive(
	Clone, PartialEq, Eq, Debug, Encode, Decode, DecodeWithMemTracking, MaxEncodedLen, TypeInfo,
)]
pub struct SignedCommitmentBytes {
	/// The commitment, SCALE-encoded; it starts with a [`CommitmentHead`].
	pub commitment: BoundedVec<u8, ConstU32<MAX_COMMITMENT_BYTES>>,
	/// The signer's ed25519 public key.
	pub public: [u8; 32],
	/// Its signature over [`commitment_payload`] of `commitment`.
	pub signature: [u8; 64],
}

impl SignedCommitmentBytes {
	/// The commitment's head, or `None` when its bytes do not start with one.
	pub fn head(&self) -> Option<CommitmentHead> {
		CommitmentHead::decode(&mut &self.commitment[..]).ok()
	}

	/// The bytes the signature is over.
	pub fn payload(&self) -> Vec<u8> {
		commitment_payload(&self.commitment)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_head_is_read_from_the_front_of_a_longer_commitment() {
		let head = CommitmentHead { job: 7, round: 3, chain: [9; 32] };
		let mut bytes = head.encode();
		bytes.extend_from_slice(&[1, 2, 3, 4]);
		let signed = SignedCommitmentBytes {
			commitment: BoundedVec::truncate_from(bytes),
			public: [0; 32],
			signature: [0; 64],
		};
		assert_eq!(signed.head(), Some(head));
		assert!(signed.payload().starts_with(COMMITMENT_DOMAIN));
		let short = SignedCommitmentBytes {
			commitment: BoundedVec::truncate_from(alloc::vec![1, 2, 3]),
			..signed
		};
		assert_eq!(short.head(), None);
	}
}
