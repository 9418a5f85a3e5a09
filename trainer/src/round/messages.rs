//! What trainers say to each other: signed update commitments (gossip) and the
//! request-response messages used to fetch updates and model state.
//!
//! Everything is SCALE-encoded. A commitment is signed by the trainer's libp2p key (ed25519)
//! over a domain-separated encoding, so two conflicting commitments for one round are
//! evidence of equivocation that anyone — including the chain, which binds the libp2p key to
//! the provider's account — can check.

use blake2::Digest as _;
use codec::{Decode, Encode};
use grid_primitives::{
	commitment::{commitment_payload, CommitmentHead, SignedCommitmentBytes},
	job::{JobId, RoundIndex},
};
use libp2p::{
	identity::{Keypair, PublicKey},
	PeerId,
};

use super::update_pieces;
pub use crate::params::Digest;
use crate::params::{hash_f32s, Blake2b256};
use crate::work_state::WorkDigests;

/// Domain of the state hash (model + outer optimizer state at a round).
const STATE_DOMAIN: &[u8] = b"grid/state/v1";

/// Why a message from a peer was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
	/// The bytes are not a valid SCALE encoding of the expected message.
	#[error("malformed message: {0}")]
	Malformed(String),
	/// The message is larger than the protocol allows.
	#[error("message of {size} bytes exceeds the limit of {limit}")]
	Oversized {
		/// Bytes received (or announced).
		size: u64,
		/// The limit.
		limit: u64,
	},
	/// The public key cannot be decoded or is not an ed25519 key.
	#[error("bad public key: {0}")]
	BadKey(String),
	/// The signature does not verify.
	#[error("signature does not verify for peer {0}")]
	BadSignature(PeerId),
	/// The commitment was signed for another chain.
	#[error("commitment signed for chain 0x{got}, this job runs on 0x{expected}")]
	WrongChain {
		/// Hex of the chain (genesis hash) in the commitment.
		got: String,
		/// Hex of this job's chain.
		expected: String,
	},
	/// The message belongs to another job.
	#[error("message for job {got}, this trainer runs job {expected}")]
	WrongJob {
		/// Job in the message.
		got: JobId,
		/// This trainer's job.
		expected: JobId,
	},
	/// A contribution proof whose sr25519 signature is not its provider's on this chain.
	#[error("proof signature does not verify for provider 0x{provider} (round {round})")]
	BadProofSignature {
		/// Hex of the provider account the proof names.
		provider: String,
		/// The round it claims.
		round: RoundIndex,
	},
	/// The parameter layout differs from this trainer's.
	#[error("parameter layout {got} differs from this job's {expected}")]
	WrongManifest {
		/// Hex of the manifest hash in the message.
		got: String,
		/// Hex of the job's manifest hash.
		expected: String,
	},
	/// The update sent with a commitment is not the one it commits to.
	#[error("the update sent with the commitment {0}")]
	BadInlineUpdate(String),
}

/// A trainer's promise about its update for one round: what it trained from, what it sends
/// and how much work is behind it.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub struct Commitment {
	/// The job.
	pub job: JobId,
	/// The round the update belongs to.
	pub round: RoundIndex,
	/// Genesis hash of the chain the job runs on (zero off chain). With `job` and `round`
	/// this is the [`CommitmentHead`] the chain reads from the front of the encoding.
	pub chain: Digest,
	/// Hash of the parameter layout (must equal the job's).
	pub manifest_hash: Digest,
	/// [`state_hash`] of the global state the update was computed from.
	pub base_state: Digest,
	/// Model hash of the global weights the update was computed from (the proof's base).
	pub base_model_hash: Digest,
	/// BLAKE2b-256 of the encoded compressed update.
	pub update_hash: Digest,
	/// Length of the encoded update in bytes.
	pub update_len: u64,
	/// Samples trained on (the update's weight).
	pub samples: u64,
	/// Inner steps run.
	pub steps: u32,
	/// Digests of the trainer's private state at the round's start (inner optimizer
	/// position and moments, error-feedback residual): with the base, its data seed and
	/// `steps` they fix the update, and the trainer serves the state under
	/// [`WorkDigests::id`] so a verifier can redo the round exactly.
	pub start: WorkDigests,
	/// Root of the states the trainer recorded through the round
	/// ([`crate::trajectory::Trajectory::root`]): it serves the trajectory under it and each
	/// state under its digest, so a verifier can redo a few of the round's steps instead of
	/// all of them ([`crate::verify::judge_segment`]).
	pub trajectory: Digest,
	/// Milliseconds spent computing.
	pub compute_millis: u32,
	/// Mean training loss, as f32 bits.
	pub train_loss_bits: u32,
}

impl Commitment {
	/// The mean training loss.
	pub fn train_loss(&self) -> f32 {
		f32::from_bits(self.train_loss_bits)
	}

	/// The slot and chain it is for: what the chain reads of it.
	pub fn head(&self) -> CommitmentHead {
		CommitmentHead { job: self.job, round: self.round, chain: self.chain }
	}

	fn signing_payload(&self) -> Vec<u8> {
		commitment_payload(&self.encode())
	}

	/// Signs the commitment with the trainer's libp2p key.
	pub fn sign(self, key: &Keypair) -> Result<SignedCommitment, MessageError> {
		let (public_key, signature) = sign_payload(key, &self.signing_payload())?;
		Ok(SignedCommitment { commitment: self, public_key, signature })
	}
}

/// A commitment with its signer's public key and signature.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub struct SignedCommitment {
	/// What is committed to.
	pub commitment: Commitment,
	/// The signer's libp2p public key (protobuf encoding; its `PeerId` is the signer).
	pub public_key: Vec<u8>,
	/// Signature over the domain-separated encoding of the commitment.
	pub signature: Vec<u8>,
}

/// Longest encoded commitment accepted on gossip.
pub const MAX_COMMITMENT_BYTES: usize = 1024;

impl SignedCommitment {
	/// The commitment's bytes, raw public key and signature, as the chain checks them.
	pub fn for_chain(&self) -> Result<SignedCommitmentBytes, MessageError> {
		let key = PublicKey::try_decode_protobuf(&self.public_key)
			.ok()
			.and_then(|key| key.try_into_ed25519().ok())
			.ok_or_else(|| MessageError::BadKey("not an ed25519 key".into()))?;
		let signature = <[u8; 64]>::try_from(self.signature.as_slice())
			.map_err(|_| MessageError::Malformed("signature is not 64 bytes".into()))?;
		let encoded = self.commitment.encode();
		let size = encoded.len() as u64;
		let commitment = encoded.try_into().map_err(|_| MessageError::Oversized {
			size,
			limit: u64::from(grid_primitives::commitment::MAX_COMMITMENT_BYTES),
		})?;
		Ok(SignedCommitmentBytes { commitment, public: key.to_bytes(), signature })
	}

	/// Checks the signature and returns the signer.
	pub fn verify(&self) -> Result<PeerId, MessageError> {
		signer_of(&self.public_key, &self.commitment.signing_payload(), &self.signature)
	}

	/// Decodes gossip bytes, verifies the signature and checks the job, chain and layout.
	pub fn decode_verified(
		bytes: &[u8],
		job: JobId,
		chain: &Digest,
		manifest_hash: &Digest,
	) -> Result<(Self, PeerId), MessageError> {
		let signed = decode_bounded::<SignedCommitment>(bytes, MAX_COMMITMENT_BYTES)?;
		let peer = signed.check(job, chain, manifest_hash)?;
		Ok((signed, peer))
	}

	/// Checks the signature, the job, the chain and the layout; returns the signer.
	pub fn check(
		&self,
		job: JobId,
		chain: &Digest,
		manifest_hash: &Digest,
	) -> Result<PeerId, MessageError> {
		let peer = self.verify()?;
		let c = &self.commitment;
		if c.job != job {
			return Err(MessageError::WrongJob { got: c.job, expected: job });
		}
		if &c.chain != chain {
			return Err(MessageError::WrongChain {
				got: hex::encode(c.chain),
				expected: hex::encode(chain),
			});
		}
		if &c.manifest_hash != manifest_hash {
			return Err(MessageError::WrongManifest {
				got: hex::encode(c.manifest_hash),
				expected: hex::encode(manifest_hash),
			});
		}
		Ok(peer)
	}
}

/// `key`'s public key (protobuf encoding) and its signature of `payload`.
pub fn sign_payload(key: &Keypair, payload: &[u8]) -> Result<(Vec<u8>, Vec<u8>), MessageError> {
	let signature = key.sign(payload).map_err(|e| MessageError::BadKey(e.to_string()))?;
	Ok((key.public().encode_protobuf(), signature))
}

/// The peer whose ed25519 key (`public_key`, protobuf encoding) signed `payload`.
pub fn signer_of(
	public_key: &[u8],
	payload: &[u8],
	signature: &[u8],
) -> Result<PeerId, MessageError> {
	let key = PublicKey::try_decode_protobuf(public_key)
		.map_err(|e| MessageError::BadKey(e.to_string()))?;
	if key.clone().try_into_ed25519().is_err() {
		return Err(MessageError::BadKey("not an ed25519 key".into()));
	}
	let peer = key.to_peer_id();
	if !key.verify(payload, signature) {
		return Err(MessageError::BadSignature(peer));
	}
	Ok(peer)
}

/// Two different commitments signed by one peer for the same job and round.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub struct Equivocation {
	/// The first commitment seen.
	pub first: SignedCommitment,
	/// The conflicting one.
	pub second: SignedCommitment,
}

impl Equivocation {
	/// Checks that this is real evidence: both signatures verify, by the same signer, for
	/// the same job and round, with different content. Returns the offender.
	pub fn verify(&self) -> Result<PeerId, MessageError> {
		let a = self.first.verify()?;
		let b = self.second.verify()?;
		let (x, y) = (&self.first.commitment, &self.second.commitment);
		if a != b || x.head() != y.head() || x == y {
			return Err(MessageError::Malformed("not conflicting commitments of one peer".into()));
		}
		Ok(a)
	}

	/// The evidence in the form the chain's `report_commitment_equivocation` takes.
	pub fn for_chain(&self) -> Result<[SignedCommitmentBytes; 2], MessageError> {
		Ok([self.first.for_chain()?, self.second.for_chain()?])
	}
}

/// Largest contribution proof relayed on the proofs topic (a proof naming the most peers a
/// proof may list is under 2.3 KiB).
pub const MAX_PROOF_BYTES: usize = 4096;

/// A contribution proof as gossiped between a job's trainers: the SCALE bytes of the
/// chain's `SignedProof` (accounts as 32 raw bytes). The network layer checks its shape and
/// job; its signature is checked against the chain by whoever uses it.
pub type GossipedProof = grid_primitives::job::SignedProof<[u8; 32]>;

/// Decodes a gossiped proof for `job`, rejecting oversized, malformed and foreign ones.
pub fn decode_proof(bytes: &[u8], job: JobId) -> Result<GossipedProof, MessageError> {
	let signed = decode_bounded::<GossipedProof>(bytes, MAX_PROOF_BYTES)?;
	if signed.proof.job != job {
		return Err(MessageError::WrongJob { got: signed.proof.job, expected: job });
	}
	Ok(signed)
}

/// Checks that `signed` is signed by the provider it names for the chain of genesis hash
/// `genesis` (what the chain checks too): a forged proof is not relayed, so a peer cannot
/// have the job's trainers carry well-formed forgeries to each other and to the chain.
pub fn verify_proof(signed: &GossipedProof, genesis: &Digest) -> Result<(), MessageError> {
	use subxt_signer::sr25519::{verify, PublicKey, Signature};
	let proof = &signed.proof;
	let payload = grid_primitives::job::proof_payload(genesis, proof);
	if verify(&Signature(signed.signature), payload, &PublicKey(proof.provider)) {
		Ok(())
	} else {
		Err(MessageError::BadProofSignature {
			provider: hex::encode(proof.provider),
			round: proof.round,
		})
	}
}

/// Decodes a whole SCALE value of at most `limit` bytes (a gossiped message).
pub fn decode_bounded<T: Decode>(bytes: &[u8], limit: usize) -> Result<T, MessageError> {
	if bytes.len() > limit {
		return Err(MessageError::Oversized { size: bytes.len() as u64, limit: limit as u64 });
	}
	decode_exact(bytes)
}

/// Decodes a whole SCALE value, rejecting trailing bytes.
pub fn decode_exact<T: Decode>(bytes: &[u8]) -> Result<T, MessageError> {
	let mut input = bytes;
	let value = T::decode(&mut input).map_err(|e| MessageError::Malformed(e.to_string()))?;
	if !input.is_empty() {
		return Err(MessageError::Malformed(format!("{} trailing bytes", input.len())));
	}
	Ok(value)
}

/// A request to a peer.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub enum Request {
	/// The encoded compressed update with this hash (any peer holding it may answer).
	Update {
		/// The job.
		job: JobId,
		/// The round.
		round: RoundIndex,
		/// The update's content address ([`update_hash`]).
		hash: Digest,
	},
	/// Piece `index` of an update ([`super::update_pieces`]). A peer that keeps the piece
	/// but does not hold it yet answers once it does (or says it cannot after a while).
	UpdatePiece {
		/// The job.
		job: JobId,
		/// The round.
		round: RoundIndex,
		/// The update's content address.
		hash: Digest,
		/// Which piece.
		index: u32,
		/// Whether the answer should carry every piece's hash (the fetcher's first).
		with_hashes: bool,
	},
	/// The header of the peer's latest global state (a checkpoint: model and outer
	/// momentum), whose pieces are then asked for with [`Request::StatePiece`].
	State {
		/// The job.
		job: JobId,
	},
	/// A piece of a state the peer serves (see [`crate::round::state_transfer`]).
	StatePiece {
		/// The job.
		job: JobId,
		/// The state's hash, as its header gave it.
		state_hash: Digest,
		/// Which piece.
		index: u32,
	},
	/// A piece of the private work state a peer committed to at a round's start (see
	/// [`Commitment::start`]); only its owner holds it. A state is sent in pieces of
	/// [`super::state_transfer::STATE_PIECE_BYTES`] (the last may be shorter), so no answer
	/// holds a large model's optimizer moments and residual (3 values per parameter).
	WorkState {
		/// The job.
		job: JobId,
		/// [`WorkDigests::id`] of the state.
		id: Digest,
		/// Which piece.
		index: u32,
	},
	/// The signed commitments of `round` the peer has seen (at most
	/// [`super::book::MAX_SIGNERS`]): asked of a witness whose attestation names an update
	/// this trainer heard no commitment for, which gossip lost on the way here.
	Commitments {
		/// The job.
		job: JobId,
		/// The round.
		round: RoundIndex,
	},
}

/// A peer's answer.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub enum Response {
	/// The encoded update asked for.
	Update(Vec<u8>),
	/// The header of a checkpoint of the global state at the start of `round`; its bytes
	/// come in pieces ([`Request::StatePiece`]).
	State {
		/// The round the state is the base of.
		round: RoundIndex,
		/// [`state_hash`] of the state.
		state_hash: Digest,
		/// Bytes of the checkpoint (safetensors).
		len: u64,
		/// Bytes per piece (the last may be shorter).
		piece_bytes: u32,
		/// Each piece's BLAKE3 hash, in order.
		pieces: Vec<Digest>,
		/// The signed commitments of that round the peer has seen so far, so a joiner
		/// learns of those announced before it connected.
		commitments: Vec<SignedCommitment>,
	},
	/// A piece of an encoded [`crate::work_state::WorkState`] asked for.
	WorkState {
		/// Bytes of the whole encoded state.
		total: u64,
		/// The piece.
		piece: Vec<u8>,
	},
	/// A piece of a state asked for.
	StatePiece(Vec<u8>),
	/// A piece of an update asked for.
	UpdatePiece {
		/// Every piece's hash, in order, where they were asked for (else empty).
		hashes: Vec<Digest>,
		/// The piece.
		piece: Vec<u8>,
	},
	/// The peer cannot answer (unknown hash, other job, no state yet).
	Unavailable(String),
	/// The commitments of the round asked for, as the peer heard them.
	Commitments(Vec<SignedCommitment>),
}

/// Longest request accepted.
pub const MAX_REQUEST_BYTES: u64 = 1024;

/// The hash that identifies a global state: the round it is the base of, the model hash
/// and the outer momentum. Peers compare it to know they train from the same state.
/// BLAKE2b-256 of the domain, the round, the model hash and the momentum's little-endian
/// values, fed to the hash in place (not joined first: that was a model-sized copy while
/// the round loop held the global state).
pub fn state_hash(round: RoundIndex, model_hash: &Digest, velocity: &[f32]) -> Digest {
	let mut h = Blake2b256::new();
	h.update(STATE_DOMAIN);
	h.update(round.to_le_bytes());
	h.update(model_hash);
	hash_f32s(&mut h, velocity);
	h.finalize().into()
}

/// The content address of an encoded update: the hash of its length and its pieces'
/// hashes ([`super::update_pieces`]), so a piece fetched on its own is checked on arrival.
pub fn update_hash(bytes: &[u8]) -> Digest {
	update_pieces::address(bytes).0
}

#[cfg(test)]
pub(crate) mod tests {
	use super::*;
	use sp_crypto_hashing::blake2_256;

	/// The chain the tests' commitments are signed for.
	pub(crate) const CHAIN: Digest = [8; 32];

	/// A commitment of job 7 to update `[update; 32]` in `round`, for tests.
	pub(crate) fn commitment(round: RoundIndex, update: u8) -> Commitment {
		Commitment {
			job: 7,
			round,
			chain: CHAIN,
			manifest_hash: [1; 32],
			base_state: [2; 32],
			base_model_hash: [3; 32],
			update_hash: [update; 32],
			update_len: 100,
			samples: 64,
			steps: 2,
			start: WorkDigests { step: 40, optimizer: [4; 32], residual: [5; 32] },
			trajectory: [6; 32],
			compute_millis: 10,
			train_loss_bits: 1.5f32.to_bits(),
		}
	}

	#[test]
	fn commitments_round_trip_and_verify() {
		let key = Keypair::generate_ed25519();
		let signed = commitment(3, 9).sign(&key).unwrap();
		let bytes = signed.encode();
		let (back, peer) = SignedCommitment::decode_verified(&bytes, 7, &CHAIN, &[1; 32]).unwrap();
		assert_eq!(back, signed);
		assert_eq!(peer, key.public().to_peer_id());
		assert_eq!(back.commitment.train_loss(), 1.5);
	}

	#[test]
	fn bad_commitments_are_rejected_with_the_reason() {
		let key = Keypair::generate_ed25519();
		let signed = commitment(3, 9).sign(&key).unwrap();
		let mut tampered = signed.clone();
		tampered.commitment.samples = 1_000_000;
		assert!(matches!(
			SignedCommitment::decode_verified(&tampered.encode(), 7, &CHAIN, &[1; 32]),
			Err(MessageError::BadSignature(_))
		));
		assert!(matches!(
			SignedCommitment::decode_verified(&signed.encode(), 8, &CHAIN, &[1; 32]),
			Err(MessageError::WrongJob { got: 7, expected: 8 })
		));
		assert!(matches!(
			SignedCommitment::decode_verified(&signed.encode(), 7, &CHAIN, &[9; 32]),
			Err(MessageError::WrongManifest { .. })
		));
		assert!(matches!(
			SignedCommitment::decode_verified(&signed.encode(), 7, &[0; 32], &[1; 32]),
			Err(MessageError::WrongChain { .. })
		));
		let bytes = signed.encode();
		assert!(matches!(
			SignedCommitment::decode_verified(&bytes[..bytes.len() - 3], 7, &CHAIN, &[1; 32]),
			Err(MessageError::Malformed(_))
		));
		let mut long = bytes.clone();
		long.push(0);
		assert!(matches!(
			SignedCommitment::decode_verified(&long, 7, &CHAIN, &[1; 32]),
			Err(MessageError::Malformed(_))
		));
		assert!(matches!(
			SignedCommitment::decode_verified(&[0u8; 5000], 7, &CHAIN, &[1; 32]),
			Err(MessageError::Oversized { size: 5000, .. })
		));
		let mut other_key = signed.clone();
		other_key.public_key = vec![1, 2, 3];
		assert!(matches!(other_key.verify(), Err(MessageError::BadKey(_))));
	}

	#[test]
	fn equivocation_evidence_checks_out() {
		let key = Keypair::generate_ed25519();
		let first = commitment(3, 9).sign(&key).unwrap();
		let second = commitment(3, 10).sign(&key).unwrap();
		let evidence = Equivocation { first: first.clone(), second };
		assert_eq!(evidence.verify().unwrap(), key.public().to_peer_id());
		// The same commitment twice, or two rounds, or two signers are not evidence.
		assert!(Equivocation { first: first.clone(), second: first.clone() }.verify().is_err());
		let later = commitment(4, 10).sign(&key).unwrap();
		assert!(Equivocation { first: first.clone(), second: later }.verify().is_err());
		let other = commitment(3, 10).sign(&Keypair::generate_ed25519()).unwrap();
		assert!(Equivocation { first: first.clone(), second: other }.verify().is_err());
		// One commitment for the slot on each of two chains is not equivocation.
		let elsewhere = Commitment { chain: [0; 32], ..commitment(3, 10) }.sign(&key).unwrap();
		assert!(Equivocation { first, second: elsewhere }.verify().is_err());
	}

	/// The chain reads the head from the front of the bytes signed, and checks the signature
	/// over them with the raw key: what `for_chain` gives is what it verifies.
	#[test]
	fn the_chain_form_carries_what_was_signed() {
		use libp2p::identity::ed25519;
		let key = ed25519::Keypair::generate();
		let signed = commitment(3, 9).sign(&Keypair::from(key.clone())).unwrap();
		let chain_form = signed.for_chain().unwrap();
		assert_eq!(chain_form.head(), Some(signed.commitment.head()));
		assert_eq!(chain_form.public, key.public().to_bytes());
		assert!(key.public().verify(&chain_form.payload(), &chain_form.signature));
		assert_eq!(
			grid_primitives::provider::ed25519_peer_id(&chain_form.public).to_vec(),
			signed.verify().unwrap().to_bytes()
		);
	}

	/// The hash fed in place is the one of the bytes joined: peers of either agree.
	#[test]
	fn state_hash_is_blake2_256_of_the_joined_bytes() {
		let velocity: Vec<f32> = (0..1000).map(|i| i as f32 * 0.25 - 7.0).collect();
		let mut bytes = STATE_DOMAIN.to_vec();
		bytes.extend_from_slice(&9u32.to_le_bytes());
		bytes.extend_from_slice(&[4; 32]);
		bytes.extend(velocity.iter().flat_map(|v| v.to_le_bytes()));
		assert_eq!(state_hash(9, &[4; 32], &velocity), blake2_256(&bytes));
	}

	#[test]
	fn state_hash_depends_on_round_model_and_momentum() {
		let h = state_hash(1, &[1; 32], &[0.5, 1.0]);
		assert_ne!(h, state_hash(2, &[1; 32], &[0.5, 1.0]));
		assert_ne!(h, state_hash(1, &[2; 32], &[0.5, 1.0]));
		assert_ne!(h, state_hash(1, &[1; 32], &[0.5, 1.5]));
	}
}

#[cfg(test)]
pub(crate) mod proof_tests {
	use super::*;
	use grid_primitives::job::ContributionProof;
	use polkadot_sdk::{sp_core::H256, sp_runtime::BoundedVec};

	/// A well-formed proof for `job` naming 64 receivers, with a placeholder signature.
	pub(crate) fn proof(job: JobId) -> GossipedProof {
		GossipedProof {
			proof: ContributionProof {
				job,
				round: 2,
				provider: [7; 32],
				base_model_hash: H256::repeat_byte(1),
				own_update_commitment: H256::repeat_byte(2),
				start_state: H256::repeat_byte(4),
				inner_steps: 2,
				result_model_hash: H256::repeat_byte(3),
				samples_processed: 64,
				train_loss_micros: 1,
				received: BoundedVec::truncate_from(vec![[8; 32]; 64]),
			},
			signature: [9; 64],
		}
	}

	#[test]
	fn gossiped_proofs_are_checked_for_shape_size_and_job() {
		let bytes = proof(5).encode();
		assert!(bytes.len() < MAX_PROOF_BYTES, "the largest proof fits: {}", bytes.len());
		assert_eq!(decode_proof(&bytes, 5).unwrap(), proof(5));
		assert!(matches!(decode_proof(&bytes, 6), Err(MessageError::WrongJob { got: 5, .. })));
		let mut trailing = bytes.clone();
		trailing.push(0);
		assert!(decode_proof(&trailing, 5).unwrap_err().to_string().contains("trailing"));
		assert!(decode_proof(&bytes[..40], 5).is_err());
		let huge = vec![0u8; MAX_PROOF_BYTES + 1];
		assert!(matches!(decode_proof(&huge, 5), Err(MessageError::Oversized { .. })));
	}

	/// `proof(job)` signed by `key` for the chain of `genesis`.
	fn signed(job: JobId, key: &subxt_signer::sr25519::Keypair, genesis: &Digest) -> GossipedProof {
		let mut signed = proof(job);
		signed.proof.provider = key.public_key().0;
		signed.signature = key.sign(&grid_primitives::job::proof_payload(genesis, &signed.proof)).0;
		signed
	}

	#[test]
	fn only_a_proof_its_provider_signed_for_this_chain_verifies() {
		use subxt_signer::sr25519::dev;
		let genesis = [3; 32];
		let honest = signed(5, &dev::bob(), &genesis);
		verify_proof(&honest, &genesis).unwrap();
		// Signed by another account than the one it names (a forger claiming Bob's round).
		let mut forged = signed(5, &dev::eve(), &genesis);
		forged.proof.provider = dev::bob().public_key().0;
		let err = verify_proof(&forged, &genesis).unwrap_err();
		assert!(matches!(err, MessageError::BadProofSignature { round: 2, .. }), "{err}");
		assert!(err.to_string().contains(&hex::encode(dev::bob().public_key().0)), "{err}");
		// Bob's, with its claim changed after signing.
		let mut inflated = honest.clone();
		inflated.proof.samples_processed += 1;
		assert!(verify_proof(&inflated, &genesis).is_err());
		// Bob's, for another chain.
		assert!(verify_proof(&signed(5, &dev::bob(), &[4; 32]), &genesis).is_err());
		// The unsigned placeholder.
		assert!(verify_proof(&proof(5), &genesis).is_err());
	}
}
