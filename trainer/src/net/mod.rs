//! Networking between trainers: messages, the fetch protocol's codec, the composed libp2p
//! behaviour, the network task and the in-process link shaper with its scenario files.

pub mod behaviour;
pub mod codec;
pub mod messages;
pub mod scenario;
pub mod service;
pub mod shaper;

pub use messages::{Commitment, Digest, Equivocation, Request, Response, SignedCommitment};
pub use service::{Command, Event, NetConfig, NetStats, NetworkHandle};
pub use shaper::{LinkSpec, Shaper};

use libp2p::identity::Keypair;

/// The trainer's libp2p identity derived from a secret seed string (development and tests:
/// anyone who knows the seed has the key).
pub fn keypair_from_seed(seed: &str) -> Keypair {
	let mut secret = crate::rng::blake2_256(format!("grid/libp2p-key/{seed}").as_bytes());
	Keypair::ed25519_from_bytes(&mut secret).expect("32 bytes are a valid ed25519 secret")
}
