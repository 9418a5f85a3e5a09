//! Validation of what a provider declares: its libp2p identity, hardware and addresses.

use grid_primitives::{
	endpoint::{check_endpoint, EndpointError},
	provider::{
		ed25519_peer_id, peer_binding_payload, Capabilities, Endpoint, Multiaddrs, PeerIdBytes,
	},
};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{sp_core::ed25519, sp_io},
	prelude::*,
};

use crate::{Config, EndpointChangedAt, Error, LoopbackEndpoints};

/// What a provider declares when it registers: the arguments of `register` besides stake.
pub(crate) struct Declared {
	pub capabilities: Capabilities,
	/// The libp2p ed25519 public key.
	pub peer_public: [u8; 32],
	/// Its signature over the binding payload.
	pub peer_signature: [u8; 64],
	pub multiaddrs: Multiaddrs,
	pub endpoint: Endpoint,
}

/// Checks that the libp2p key `public` signed the binding payload for `who` on this chain, and
/// returns the `PeerId` it proves.
pub(crate) fn verify_peer_binding<T: Config>(
	who: &T::AccountId,
	public: &[u8; 32],
	signature: &[u8; 64],
) -> Result<PeerIdBytes, Error<T>> {
	let genesis = frame_system::Pallet::<T>::block_hash(BlockNumberFor::<T>::zero());
	let payload = peer_binding_payload(&genesis, who);
	let public = ed25519::Public::from_raw(*public);
	let signature = ed25519::Signature::from_raw(*signature);
	if sp_io::crypto::ed25519_verify(&signature, &payload, &public) {
		Ok(ed25519_peer_id(&public.0))
	} else {
		Err(Error::<T>::BadPeerSignature)
	}
}

/// At least one device, with a name.
pub(crate) fn validate_capabilities<T: Config>(
	capabilities: &Capabilities,
) -> Result<(), Error<T>> {
	if capabilities.device_count == 0 || capabilities.device_name.is_empty() {
		return Err(Error::<T>::InvalidCapabilities);
	}
	Ok(())
}

/// At least one multiaddr, each UTF-8 text starting with `/`; an `http(s)://` endpoint whose
/// host validators may probe (a public IP address; loopback on development chains).
///
/// Full multiaddr parsing stays off chain (the trainer dials them and a bad one only hurts
/// the provider); the chain rejects what is clearly not an address.
pub(crate) fn validate_addresses<T: Config>(
	multiaddrs: &Multiaddrs,
	endpoint: &Endpoint,
) -> Result<(), Error<T>> {
	let is_multiaddr = |bytes: &[u8]| {
		core::str::from_utf8(bytes).is_ok_and(|text| text.len() > 1 && text.starts_with('/'))
	};
	if multiaddrs.is_empty() || !multiaddrs.iter().all(|m| is_multiaddr(m)) {
		return Err(Error::<T>::BadMultiaddr);
	}
	probe_rule::<T>(endpoint).map_err(|e| match e {
		EndpointError::NotHttpUrl => Error::<T>::BadEndpoint,
		EndpointError::NotPublic => Error::<T>::EndpointNotPublic,
	})
}

/// Whether validators may probe `endpoint` now (the rule may have changed since it was
/// registered).
pub(crate) fn probe_allowed<T: Config>(endpoint: &Endpoint) -> bool {
	probe_rule::<T>(endpoint).is_ok()
}

/// This chain's rule for probe endpoints: a public IP host, loopback where genesis allows it.
fn probe_rule<T: Config>(endpoint: &Endpoint) -> Result<(), EndpointError> {
	check_endpoint(endpoint, LoopbackEndpoints::<T>::get())
}

/// Records that `who` changes its endpoint now, unless it did within `EndpointCooldown`.
pub(crate) fn note_endpoint_change<T: Config>(who: &T::AccountId) -> Result<(), Error<T>> {
	let now = frame_system::Pallet::<T>::block_number();
	if let Some(at) = EndpointChangedAt::<T>::get(who) {
		ensure!(
			now >= at.saturating_add(T::EndpointCooldown::get()),
			Error::<T>::EndpointChangedRecently
		);
	}
	EndpointChangedAt::<T>::insert(who, now);
	Ok(())
}
