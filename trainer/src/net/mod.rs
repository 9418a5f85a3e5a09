//! Networking between trainers, as transport only: the fetch protocol's codec, the composed
//! libp2p behaviour, the network task with its typed handle, and the in-process link shaper
//! with its scenario files. What the messages mean is the round protocol's
//! ([`crate::round::messages`]).

pub mod behaviour;
pub mod codec;
pub mod data;
pub mod scenario;
pub mod service;
pub mod shaper;
mod task;
pub mod work_states;

pub use service::{Command, Commander, Event, NetConfig, NetStats, NetworkHandle, ProofLink};
pub use shaper::{LinkSpec, Shaper};
pub use work_states::WorkStateBytes;

use libp2p::identity::Keypair;
use sp_crypto_hashing::blake2_256;

/// The trainer's libp2p identity derived from a secret seed string (development and tests:
/// anyone who knows the seed has the key).
pub fn keypair_from_seed(seed: &str) -> Keypair {
	let mut secret = blake2_256(format!("grid/libp2p-key/{seed}").as_bytes());
	Keypair::ed25519_from_bytes(&mut secret).expect("32 bytes are a valid ed25519 secret")
}
