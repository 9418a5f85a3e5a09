//! Checking that a contribution proof was signed by its provider's sr25519 account key.

use grid_primitives::job::{proof_payload, ProofSignature, SignedProof};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{sp_core::sr25519, sp_io},
	prelude::*,
};

/// Verifies a signature over `payload` by the key behind `who`.
pub trait ProofVerifier<AccountId> {
	/// Whether `signature` is `who`'s signature over `payload`.
	fn verify(who: &AccountId, payload: &[u8], signature: &ProofSignature) -> bool;
}

/// For runtimes whose accounts are 32-byte public keys (`AccountId32`): the account's bytes
/// are read as an sr25519 public key. Proofs signed with any other scheme are rejected.
pub struct Sr25519Verifier;

impl<AccountId: AsRef<[u8; 32]>> ProofVerifier<AccountId> for Sr25519Verifier {
	fn verify(who: &AccountId, payload: &[u8], signature: &ProofSignature) -> bool {
		let public = sr25519::Public::from_raw(*who.as_ref());
		let signature = sr25519::Signature::from_raw(*signature);
		sp_io::crypto::sr25519_verify(&signature, payload, &public)
	}
}

/// Whether `signed` carries a valid signature by its provider for this chain.
pub(crate) fn is_valid<T: crate::Config>(signed: &SignedProof<T::AccountId>) -> bool {
	let genesis = frame_system::Pallet::<T>::block_hash(BlockNumberFor::<T>::zero());
	let payload = proof_payload(&genesis, &signed.proof);
	T::ProofVerifier::verify(&signed.proof.provider, &payload, &signed.signature)
}
