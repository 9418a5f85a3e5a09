//! Networking between trainers, as transport only: the fetch protocol's codec, the composed
//! libp2p behaviour, the network task with its typed handle, and the in-process link shaper
//! with its scenario files. What the messages mean is the round protocol's
//! ([`crate::round::messages`]).

pub mod behaviour;
pub mod codec;
pub mod data;
mod pieces;
pub mod scenario;
pub mod service;
pub mod shaper;
pub mod stored;
mod strangers;
mod task;

pub use service::{Command, Commander, Event, NetConfig, NetStats, NetworkHandle, ProofLink};
pub use shaper::{LinkSpec, Shaper};
pub use stored::{Run, Spliced, StoredBytes};

use libp2p::identity::Keypair;
use sp_crypto_hashing::blake2_256;

/// The trainer's libp2p identity derived from a secret seed string (development and tests:
/// anyone who knows the seed has the key).
pub fn keypair_from_seed(seed: &str) -> Keypair {
	let mut secret = blake2_256(format!("grid/libp2p-key/{seed}").as_bytes());
	Keypair::ed25519_from_bytes(&mut secret).expect("32 bytes are a valid ed25519 secret")
}

/// A network service on loopback for job 1 that takes answers of at most
/// `max_response_bytes`, bootstrapping from `bootstrap`, checking gossiped proofs for the
/// chain of `proof_genesis` (tests of the network's parts).
#[cfg(test)]
pub(crate) fn test_service(
	runtime: &tokio::runtime::Runtime,
	bootstrap: Vec<libp2p::Multiaddr>,
	max_response_bytes: u64,
	proof_genesis: Option<crate::round::messages::Digest>,
) -> NetworkHandle {
	let config = NetConfig {
		listen: vec!["/ip4/127.0.0.1/tcp/0".parse().unwrap()],
		bootstrap,
		job: 1,
		manifest_hash: [0; 32],
		behaviour: behaviour::BehaviourConfig {
			agent: "grid-trainer/test".into(),
			max_response_bytes,
			request_timeout: std::time::Duration::from_secs(60),
			ping_interval: std::time::Duration::from_secs(5),
		},
		datasets: None,
		proof_genesis,
	};
	service::start(runtime.handle(), Keypair::generate_ed25519(), Shaper::default(), config)
		.unwrap()
}
