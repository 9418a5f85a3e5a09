//! The trainer's libp2p behaviour, composed of small standard ones: identify (addresses and
//! protocol version), ping (liveness and round-trip time), Kademlia (finding the job's
//! peers), gossipsub (update commitments, availability attestations, proofs) and
//! request-response (fetching updates and state; serving datasets); and bounds on each
//! peer's connections, on handshakes under way and on strangers' connections.

use std::time::Duration;

use libp2p::{
	connection_limits, gossipsub, identify,
	identity::Keypair,
	kad::{self, store::MemoryStore},
	ping, request_response,
	swarm::NetworkBehaviour,
	StreamProtocol,
};

use super::codec::{FetchCodec, PROTOCOL};
use super::data::{data_behaviour, DataCodec, DATA_STREAMS};
use super::strangers::StrangerGate;
use crate::round::{announcement::MAX_ANNOUNCEMENT_BYTES, update_pieces::MAX_UPDATE_PIECES};

/// Protocol version announced by identify (2: gossip without gossipsub's own signatures;
/// 3: commitments gossiped as announcements, small updates with them).
pub const IDENTIFY_PROTOCOL: &str = "/grid/trainer/3";
/// The Kademlia protocol of the trainers' DHT (separate from any other network's).
pub const KAD_PROTOCOL: StreamProtocol = StreamProtocol::new("/grid/kad/1");
/// Largest gossip frame: an announcement (a commitment of under a kilobyte with an update
/// of at most 32 KiB, `round/announcement.rs`) and the frame's own fields.
const MAX_GOSSIP_FRAME: usize = MAX_ANNOUNCEMENT_BYTES + 1024;

/// A gossip message's id: the BLAKE3 hash of its topic and bytes, so the same message
/// relayed by many peers is one message, and a message published again while peers still
/// remember it is not sent twice.
fn content_id(message: &gossipsub::Message) -> gossipsub::MessageId {
	let mut hasher = blake3::Hasher::new();
	hasher.update(message.topic.as_str().as_bytes());
	hasher.update(&[0]);
	hasher.update(&message.data);
	gossipsub::MessageId::from(hasher.finalize().as_bytes().to_vec())
}

/// Connections one peer may hold with this trainer at once: two, so that peers dialing each
/// other at the same moment keep both. Unbounded, one peer could open connections without
/// end, each with its own streams ([`FETCH_STREAMS`], [`DATA_STREAMS`]) and buffers, and
/// hold more of this trainer's held piece requests than one connection carries.
pub const MAX_CONNECTIONS_PER_PEER: u32 = 2;

/// Inbound connections in their handshake at once, from anyone (the peer is not known before
/// it ends): room for a job's largest roster (64 members, `MaxProofPeers`) dialing at once,
/// twice. Unbounded, anyone could open TCP connections without end and never finish them,
/// each holding a socket and a handshake's buffers until its 20 s upgrade timeout.
pub const MAX_PENDING_INCOMING: u32 = 128;

/// Every sub-behaviour of a trainer.
#[derive(NetworkBehaviour)]
pub struct Behaviour {
	/// Refuses a peer's connections past [`MAX_CONNECTIONS_PER_PEER`], and handshakes past
	/// [`MAX_PENDING_INCOMING`].
	pub limits: connection_limits::Behaviour,
	/// Holds the roster, and refuses strangers' connections past a bound
	/// ([`super::strangers`]).
	pub gate: StrangerGate,
	/// Exchanges listen addresses and agent names.
	pub identify: identify::Behaviour,
	/// Measures round-trip times and detects dead connections.
	pub ping: ping::Behaviour,
	/// Peer discovery.
	pub kad: kad::Behaviour<MemoryStore>,
	/// Commitments, availability attestations and proofs.
	pub gossipsub: gossipsub::Behaviour,
	/// Bulk transfers: updates and checkpoints.
	pub fetch: request_response::Behaviour<FetchCodec>,
	/// Datasets this trainer holds, served to whoever asks ([`super::data`]).
	pub data: request_response::Behaviour<DataCodec>,
}

/// Request streams a connection's fetch handler runs at once, its own requests and its
/// peer's together: one more is dropped unanswered (libp2p's request-response handler), and
/// its asker waits out its patience before asking elsewhere. Pieces need many: a member asks
/// a keeper at once for the keeper's share of every update of the round, about
/// `MAX_UPDATE_PIECES × N / (N − 1)` requests (96 at three members, 128 at two, where every
/// piece comes from its committer), and the keeper asks as many of it. With 64 (libp2p's
/// default, and Grid's until 2026-12-02), slow pieces under the WAN profile kept streams
/// open past it: requests were dropped, keepers failed to get pieces, and a round of
/// `bench/network.sh --only bandwidth` waited 10 s on held requests. Below yamux's 512
/// streams a connection, past which the whole connection is reset.
const FETCH_STREAMS: usize = 4 * MAX_UPDATE_PIECES as usize;
/// Streams a yamux connection takes (yamux 0.13's default, which `service::transport`
/// keeps): the fetch handler's, the data handler's and a few others' must stay below.
const YAMUX_STREAMS: usize = 512;
const _: () = assert!(
	FETCH_STREAMS >= 3 * MAX_UPDATE_PIECES as usize
		&& FETCH_STREAMS + DATA_STREAMS + 16 <= YAMUX_STREAMS,
	"a connection's fetch streams: both members' requests at three members, under yamux's"
);

/// Settings of the behaviour.
#[derive(Clone, Debug)]
pub struct BehaviourConfig {
	/// Agent name announced by identify.
	pub agent: String,
	/// Longest response accepted (bytes).
	pub max_response_bytes: u64,
	/// How long a fetch may take before it fails.
	pub request_timeout: Duration,
	/// Interval between pings.
	pub ping_interval: Duration,
}

impl Behaviour {
	/// Builds the behaviour for `key`.
	pub fn new(key: &Keypair, config: &BehaviourConfig) -> Result<Self, String> {
		let peer = key.public().to_peer_id();
		let identify = identify::Behaviour::new(
			identify::Config::new(IDENTIFY_PROTOCOL.into(), key.public())
				.with_agent_version(config.agent.clone()),
		);
		let ping = ping::Behaviour::new(ping::Config::new().with_interval(config.ping_interval));
		let mut kad_config = kad::Config::new(KAD_PROTOCOL);
		// The DHT is for finding peers only: records and provider records anyone puts are
		// handed over as events (and dropped by the network task), not stored. Unfiltered,
		// any key could have each trainer keep 1,024 records of up to 16 KiB (kad's largest
		// message) and provider records for 1,024 keys, each for a day and more.
		kad_config.set_record_filtering(kad::StoreInserts::FilterBoth);
		let mut kad = kad::Behaviour::with_config(peer, MemoryStore::new(peer), kad_config);
		// Trainers on private or loopback addresses never get confirmed external addresses,
		// so serve the DHT regardless.
		kad.set_mode(Some(kad::Mode::Server));
		let gossip_config = gossipsub::ConfigBuilder::default()
			// gossipsub's default heartbeat (mesh upkeep and lazy gossip): messages go to
			// every subscribed peer when published (flood publishing), so a faster heartbeat
			// only cost each trainer CPU per peer.
			.heartbeat_interval(Duration::from_secs(1))
			// Every message is signed inside (a commitment or an attestation by its trainer's
			// key, checked once it is new; a proof by its provider's account, checked by the
			// chain), so gossipsub's own envelope signature, naming the publisher, added
			// nothing but a check of every copy: a message arrives from about as many peers as
			// a mesh holds, and those checks were about 7% of one trainer's CPU samples at 32
			// trainers (`bench/scale.sh` under perf). Without author and sequence number, a
			// message is known by its content.
			.validation_mode(gossipsub::ValidationMode::Anonymous)
			.message_id_fn(content_id)
			.validate_messages()
			.max_transmit_size(MAX_GOSSIP_FRAME)
			.build()
			.map_err(|e| format!("gossipsub config: {e}"))?;
		let gossipsub =
			gossipsub::Behaviour::new(gossipsub::MessageAuthenticity::Anonymous, gossip_config)
				.map_err(|e| format!("gossipsub: {e}"))?;
		let fetch = request_response::Behaviour::with_codec(
			FetchCodec::fetch(config.max_response_bytes),
			[(PROTOCOL, request_response::ProtocolSupport::Full)],
			request_response::Config::default()
				.with_request_timeout(config.request_timeout)
				.with_max_concurrent_streams(FETCH_STREAMS),
		);
		let data = data_behaviour(config.request_timeout);
		let limits = connection_limits::Behaviour::new(
			connection_limits::ConnectionLimits::default()
				.with_max_established_per_peer(Some(MAX_CONNECTIONS_PER_PEER))
				.with_max_pending_incoming(Some(MAX_PENDING_INCOMING)),
		);
		let gate = StrangerGate::default();
		Ok(Behaviour { limits, gate, identify, ping, kad, gossipsub, fetch, data })
	}
}
