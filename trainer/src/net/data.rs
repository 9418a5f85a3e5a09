//! The dataset protocol (`/grid/data/2`), as transport only: a holder answers requests for a
//! dataset's manifest and chunks through a [`DatasetServer`] (the daemon's store); trainers
//! answer on their own swarm, and the daemon's `DataNode` serves and fetches with the same
//! messages. A `DataNode` may also hand out [`Ticket`]s for its plain bulk lane
//! (`daemon::bulk`), where chunks travel without the stream's encryption. What is checked
//! against what is the fetcher's business (`daemon::data_node`).

use std::time::Duration;

use codec::{Decode, Encode};
use grid_primitives::manifest::MAX_MANIFEST_BYTES;
use libp2p::{
	multiaddr::Protocol,
	request_response::{self, ProtocolSupport},
	Multiaddr, PeerId, StreamProtocol,
};
use polkadot_sdk::sp_core::H256;

use super::codec::ScaleCodec;

/// The protocol's name (versioned: a change of messages is a new protocol).
pub const DATA_PROTOCOL: StreamProtocol = StreamProtocol::new("/grid/data/2");

/// A request for part of a dataset.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub enum DataRequest {
	/// The manifest whose hash is `dataset`.
	Manifest {
		/// The dataset's reference.
		dataset: H256,
	},
	/// One chunk.
	Chunk {
		/// The dataset's reference.
		dataset: H256,
		/// Index of the file in the manifest.
		file: u32,
		/// Index of the chunk in the file.
		chunk: u32,
	},
	/// A ticket for the holder's plain bulk lane, to fetch chunks of `dataset` over it.
	Bulk {
		/// The dataset's reference.
		dataset: H256,
	},
}

/// The answer to a [`DataRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub enum DataResponse {
	/// The manifest's bytes.
	Manifest(Vec<u8>),
	/// The chunk's bytes.
	Chunk(Vec<u8>),
	/// A one-use ticket for the bulk lane listening on `port` at the asker's connection's
	/// address.
	Bulk {
		/// The lane's TCP port.
		port: u16,
		/// What the asker sends first on it.
		ticket: Ticket,
	},
	/// This holder does not have it (yet).
	Missing,
}

/// A one-use pass to a holder's bulk lane: 32 random bytes (a secret, so never printed).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Encode, Decode)]
pub struct Ticket(pub [u8; 32]);

impl std::fmt::Debug for Ticket {
	fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
		f.write_str("Ticket(…)")
	}
}

/// The protocol's codec: small requests; responses up to a manifest's limit (a chunk is
/// smaller).
pub type DataCodec = ScaleCodec<DataRequest, DataResponse>;

/// The codec with the protocol's limits.
pub fn data_codec() -> DataCodec {
	ScaleCodec::new(128, MAX_MANIFEST_BYTES as u64 + 64)
}

/// Request streams a connection's data handler runs at once (datasets come in a few lanes).
pub(super) const DATA_STREAMS: usize = 64;

/// The request-response behaviour of the protocol.
pub fn data_behaviour(timeout: Duration) -> request_response::Behaviour<DataCodec> {
	request_response::Behaviour::with_codec(
		data_codec(),
		[(DATA_PROTOCOL, ProtocolSupport::Full)],
		request_response::Config::default()
			.with_request_timeout(timeout)
			.with_max_concurrent_streams(DATA_STREAMS),
	)
}

/// What a holder answers from: the datasets it has.
pub trait DatasetServer: Send + Sync + std::fmt::Debug {
	/// The answer to `request` ([`DataResponse::Missing`] for what it does not have).
	fn answer(&self, request: &DataRequest) -> DataResponse;
}

/// The IP address in an address (`/ip4/…` or `/ip6/…`), if it has one.
pub fn ip_of(address: &Multiaddr) -> Option<std::net::IpAddr> {
	address.iter().find_map(|p| match p {
		Protocol::Ip4(ip) => Some(ip.into()),
		Protocol::Ip6(ip) => Some(ip.into()),
		_ => None,
	})
}

/// The peer id an address ends in (`…/p2p/<id>`).
pub fn peer_of(address: &Multiaddr) -> Option<PeerId> {
	address.iter().find_map(|p| match p {
		Protocol::P2p(peer) => Some(peer),
		_ => None,
	})
}
