//! Provider identity and capabilities, shared by `pallet-providers` and `grid-trainer`.

use alloc::vec::Vec;
use codec::{Decode, DecodeWithMemTracking, Encode, MaxEncodedLen};
use polkadot_sdk::{sp_core::ConstU32, sp_runtime::BoundedVec};
use scale_info::TypeInfo;

/// Longest device name (e.g. "NVIDIA H100 80GB HBM3").
pub type MaxDeviceNameLen = ConstU32<64>;
/// Longest region label (e.g. "eu-west").
pub type MaxRegionLen = ConstU32<32>;
/// Longest multiaddr or endpoint URL, in bytes.
pub type MaxAddressLen = ConstU32<128>;
/// Most listen multiaddrs a provider may declare.
pub type MaxMultiaddrs = ConstU32<8>;

/// A byte string of at most `N` bytes.
pub type BoundedBytes<N> = BoundedVec<u8, N>;
/// One libp2p multiaddr in its text form (`/ip4/1.2.3.4/tcp/30333`).
pub type Multiaddr = BoundedBytes<MaxAddressLen>;
/// The provider's listen addresses.
pub type Multiaddrs = BoundedVec<Multiaddr, MaxMultiaddrs>;
/// HTTP endpoint validators probe for liveness (`http://host:port/health`).
pub type Endpoint = BoundedBytes<MaxAddressLen>;

/// The accelerator a provider trains on.
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
pub enum DeviceKind {
	/// CPU only.
	Cpu,
	/// NVIDIA GPU (CUDA).
	Cuda,
	/// AMD GPU (ROCm).
	Rocm,
	/// Apple GPU (Metal).
	Metal,
}

/// What a provider declares about its hardware. Throughput is measured by the trainer, not
/// typed by hand, and caps the samples a provider can be paid for.
#[derive(
	Clone, PartialEq, Eq, Debug, Encode, Decode, DecodeWithMemTracking, MaxEncodedLen, TypeInfo,
)]
pub struct Capabilities {
	/// Accelerator family.
	pub device: DeviceKind,
	/// Model name as the driver reports it.
	pub device_name: BoundedBytes<MaxDeviceNameLen>,
	/// Number of devices of that kind (at least one).
	pub device_count: u8,
	/// Memory per device, MiB.
	pub memory_mib: u32,
	/// Measured dense throughput of all devices together, in thousandths of a TFLOP/s.
	pub tflops_milli: u32,
	/// Measured network bandwidth, Mbit/s.
	pub bandwidth_mbps: u32,
	/// Free-form region label used for latency-aware grouping.
	pub region: BoundedBytes<MaxRegionLen>,
}

/// Domain separator of the libp2p-key-over-account signature that binds a `PeerId` to an
/// account. Changing it invalidates every binding: bump the version instead.
pub const PEER_BINDING_DOMAIN: &[u8] = b"grid/peer-binding/v1";

/// The bytes a provider's libp2p ed25519 key signs to prove it belongs to `account` on the
/// chain with genesis `genesis` (so a binding cannot be replayed on another chain).
///
/// Generic over the hash and account types so mock runtimes (with `u64` accounts) sign the
/// same shape of payload as the real chain.
pub fn peer_binding_payload<H: Encode, A: Encode>(genesis: &H, account: &A) -> Vec<u8> {
	(PEER_BINDING_DOMAIN, genesis, account).encode()
}

/// Length of a libp2p `PeerId` derived from an ed25519 key.
pub const ED25519_PEER_ID_LEN: usize = 38;

/// A libp2p `PeerId` in its binary form.
pub type PeerIdBytes = [u8; ED25519_PEER_ID_LEN];

/// The libp2p `PeerId` of an ed25519 public key, as libp2p computes it: the identity
/// multihash (code 0x00, length 36) of the protobuf `PublicKey { Type: Ed25519 (1), Data }`.
pub fn ed25519_peer_id(public: &[u8; 32]) -> PeerIdBytes {
	let mut id = [0u8; ED25519_PEER_ID_LEN];
	id[..6].copy_from_slice(&[0x00, 0x24, 0x08, 0x01, 0x12, 0x20]);
	id[6..].copy_from_slice(public);
	id
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{AccountId, Hash};

	#[test]
	fn peer_id_of_a_known_key_matches_libp2p() {
		// libp2p encodes an ed25519 PeerId as `00 24 08 01 12 20 || key` (base58 "12D3KooW...").
		let id = ed25519_peer_id(&[7u8; 32]);
		assert_eq!(&id[..6], &[0x00, 0x24, 0x08, 0x01, 0x12, 0x20]);
		assert_eq!(&id[6..], &[7u8; 32]);
	}

	#[test]
	fn binding_payload_depends_on_chain_and_account() {
		let a = AccountId::new([1; 32]);
		let b = AccountId::new([2; 32]);
		let g1 = Hash::repeat_byte(1);
		let g2 = Hash::repeat_byte(2);
		assert_ne!(peer_binding_payload(&g1, &a), peer_binding_payload(&g2, &a));
		assert_ne!(peer_binding_payload(&g1, &a), peer_binding_payload(&g1, &b));
		assert!(
			peer_binding_payload(&g1, &a).starts_with(&[(PEER_BINDING_DOMAIN.len() as u8) << 2])
		);
	}
}
