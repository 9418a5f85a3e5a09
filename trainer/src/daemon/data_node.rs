//! The small libp2p node of the dataset protocol ([`crate::net::data`]): it serves a store's
//! datasets (what `grid-trainer data publish` runs) and fetches a dataset from every holder it
//! knows (what a provider runs before it joins a job), checking the manifest against the
//! reference and each chunk against the manifest as it arrives. A holder that serves a bad
//! manifest or chunk is not asked again; one that cannot be reached (not up yet, restarting)
//! rests a while and is asked again; a fetch resumes from the chunks already on disk.
//!
//! A fetching node serves the chunks it has already written, and asks for the missing ones in
//! an order of its own (seeded by its peer id), so fetchers started together hold different
//! chunks early and finish from each other when the first holder goes away. A node may cap
//! what it uploads ([`DataNode::limit_upload`]): a buyer on a home link keeps some of it. A
//! capped node answers the peers asking it in turn, not in the order their requests came, so
//! a second fetcher is not queued behind the first one's whole window.
//!
//! A serving node may also offer a plain bulk lane ([`DataNode::offer_bulk`], see
//! [`super::bulk`]): a fetcher asks each holder for a ticket, and asks the chunks of a holder
//! that gave one over the lane; any holder without a working lane is asked over the stream.

use std::{
	collections::{HashMap, HashSet, VecDeque},
	net::{IpAddr, SocketAddr},
	sync::Arc,
	time::{Duration, Instant},
};

use codec::Encode;
use futures::StreamExt;
use grid_primitives::manifest::DatasetManifest;
use libp2p::{
	identity::Keypair,
	multiaddr::Protocol,
	request_response::{self, OutboundRequestId, ResponseChannel},
	swarm::SwarmEvent,
	Multiaddr, PeerId, Swarm,
};
use polkadot_sdk::sp_core::H256;
use tokio::{sync::mpsc, task::JoinSet};

use super::bulk::{BulkAsk, BulkLane, BulkServer, LaneEvent};
use crate::{
	data::{
		source,
		store::{ChunkId, DataStore, Located},
		MinRate, Pace,
	},
	error::{Error, Result},
	net::{
		data::{
			data_behaviour, ip_of, peer_of, DataCodec, DataRequest, DataResponse, DatasetServer,
		},
		service::transport,
		Shaper,
	},
	rng::Rng,
};

/// Chunk requests a fetch keeps in flight (spread over the holders).
const IN_FLIGHT: usize = 8;
/// Failed requests in a row after which a holder rests before it is asked again.
const HOLDER_FAILURES: u32 = 3;
/// A holder's first rest; each further failure doubles it, up to [`MAX_REST`]. Fetchers of
/// one job start at about the same time and list each other: one whose node is not listening
/// yet refuses the first dials, and must not be given up on for the whole fetch (a fetch can
/// need it once the first holder goes away). One that never comes back costs a request per
/// rest, and the fetch ends [`STALL`] after its last progress.
const REST: Duration = Duration::from_secs(2);
const MAX_REST: Duration = Duration::from_secs(30);
/// How long a fetch waits without any progress before it gives up.
const STALL: Duration = Duration::from_secs(120);
/// How long a fetch waits for holders' tickets to their bulk lanes before it starts.
const TICKET_WAIT: Duration = Duration::from_secs(5);
/// How long a chunk that no holder had is put aside before they are asked again: holders
/// that are fetching the dataset themselves (a job's other participants) get it meanwhile.
const RETRY: Duration = Duration::from_secs(1);

impl DatasetServer for DataStore {
	fn answer(&self, request: &DataRequest) -> DataResponse {
		let found = match *request {
			DataRequest::Manifest { dataset } => {
				self.manifest(&dataset).map(|m| m.map(|m| DataResponse::Manifest(m.encode())))
			}
			DataRequest::Chunk { dataset, file, chunk } => self
				.read_chunk(&dataset, ChunkId { file, chunk })
				.map(|c| c.map(DataResponse::Chunk)),
			// Tickets are the data node's to give (a trainer's swarm has no lane).
			DataRequest::Bulk { .. } => Ok(None),
		};
		match found {
			Ok(Some(response)) => response,
			Ok(None) => DataResponse::Missing,
			Err(e) => {
				tracing::warn!("serving {request:?}: {e}");
				DataResponse::Missing
			}
		}
	}
}

/// A holder of the dataset being fetched, and how it has done.
struct Holder {
	peer: PeerId,
	/// Where it listens (ending in `/p2p/<peer>`).
	address: Multiaddr,
	/// Requests to it that failed in a row.
	failures: u32,
	/// False once it served something bad: not asked again in this fetch.
	usable: bool,
	/// Not asked before then, after failing [`HOLDER_FAILURES`] requests in a row.
	resting_until: Option<Instant>,
	/// Its bulk lane, while it gave a ticket and the lane works.
	lane: Option<BulkLane>,
}

impl Holder {
	fn new(peer: PeerId, address: Multiaddr) -> Self {
		Holder { peer, address, failures: 0, usable: true, resting_until: None, lane: None }
	}

	/// Whether it may be asked at `now`: it has served nothing bad and is not resting.
	fn askable(&self, now: Instant) -> bool {
		self.usable && self.resting_until.is_none_or(|until| until <= now)
	}

	/// Counts a failed request; from the [`HOLDER_FAILURES`]th in a row on, the holder rests
	/// (from `now`): the rest, if it does.
	fn failed(&mut self, now: Instant) -> Option<Duration> {
		self.failures += 1;
		let beyond = self.failures.checked_sub(HOLDER_FAILURES)?;
		let rest = REST.saturating_mul(1 << beyond.min(8)).min(MAX_REST);
		self.resting_until = Some(now + rest);
		Some(rest)
	}

	/// Counts a request it answered (failures in a row start again from zero).
	fn answered(&mut self) {
		self.failures = 0;
		self.resting_until = None;
	}
}

/// Where an answer to an inbound request goes.
enum Reply {
	Stream(ResponseChannel<DataResponse>),
	/// A bulk lane's ask for this chunk.
	Lane(ChunkId, mpsc::UnboundedSender<(ChunkId, Option<Vec<u8>>)>),
}

/// An answer to an inbound request, ready to send.
type Answer = (Reply, DataResponse);

/// One of this node's own chunk requests in flight: on the stream, or on a holder's lane.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Asked {
	Stream(OutboundRequestId),
	Lane(usize, ChunkId),
}

/// Items waiting their turn, taken one from each key in turn (round robin over the keys that
/// have some): a paced node sends answers to the peers asking it in turn, so one fetcher's
/// burst of requests does not hold the link while the others wait behind it.
struct Turns<K, V> {
	queues: VecDeque<(K, VecDeque<V>)>,
}

impl<K: PartialEq, V> Turns<K, V> {
	fn new() -> Self {
		Turns { queues: VecDeque::new() }
	}

	/// Queues `item` behind `key`'s earlier ones.
	fn push(&mut self, key: K, item: V) {
		match self.queues.iter_mut().find(|(k, _)| *k == key) {
			Some((_, queue)) => queue.push_back(item),
			None => self.queues.push_back((key, VecDeque::from([item]))),
		}
	}

	/// The next key's first item; that key then goes to the back of the turn.
	fn pop(&mut self) -> Option<V> {
		let (key, mut queue) = self.queues.pop_front()?;
		let item = queue.pop_front();
		if !queue.is_empty() {
			self.queues.push_back((key, queue));
		}
		item
	}

	fn is_empty(&self) -> bool {
		self.queues.is_empty()
	}
}

/// A small libp2p node that serves its store's datasets and fetches others'.
pub struct DataNode {
	swarm: Swarm<request_response::Behaviour<DataCodec>>,
	store: DataStore,
	/// Answers being read (and checked) on blocking threads, several at once, so the swarm
	/// goes on sending the ones that are ready.
	answers: JoinSet<(PeerId, Answer)>,
	/// Answers read and waiting for the link, per asking peer.
	ready: Turns<PeerId, Answer>,
	/// The most bytes a dataset it fetches may have (by its manifest, before any chunk).
	max_fetch_bytes: u64,
	/// The slowest a fetch may go.
	min_fetch_rate: Option<MinRate>,
	/// The upload cap in bytes per second, if any, and when the link is free again.
	upload: Option<f64>,
	link_free: tokio::time::Instant,
	/// The bulk lane this node offers, if any, and the asks that arrive on it.
	bulk: Option<(BulkServer, mpsc::Receiver<BulkAsk>)>,
	/// The address each connected peer has on this node's connection to it: where its lane
	/// is dialled.
	remote_ips: HashMap<PeerId, IpAddr>,
}

impl DataNode {
	/// A node with `key` serving `store`, listening on `listen` (call inside a Tokio runtime).
	pub fn new(key: Keypair, store: DataStore, listen: &[Multiaddr]) -> Result<Self> {
		let net = |e: String| Error::Network(e);
		let peer = key.public().to_peer_id();
		let transport = transport(&key, Shaper::default()).map_err(net)?;
		let mut swarm = Swarm::new(
			transport,
			data_behaviour(Duration::from_secs(60)),
			peer,
			libp2p::swarm::Config::with_tokio_executor()
				.with_idle_connection_timeout(Duration::from_secs(60)),
		);
		for address in listen {
			swarm
				.listen_on(address.clone())
				.map_err(|e| net(format!("listening on {address}: {e}")))?;
		}
		Ok(DataNode {
			swarm,
			store,
			answers: JoinSet::new(),
			ready: Turns::new(),
			max_fetch_bytes: u64::MAX,
			min_fetch_rate: None,
			upload: None,
			link_free: tokio::time::Instant::now(),
			bulk: None,
			remote_ips: HashMap::new(),
		})
	}

	/// Offers a plain bulk lane (see [`super::bulk`]) on the IP address of `listen` (a port
	/// the system picks, returned): peers that ask get tickets to it.
	pub fn offer_bulk(&mut self, listen: &Multiaddr) -> Result<u16> {
		let ip = ip_of(listen).ok_or_else(|| {
			Error::Network(format!("bulk lane: {listen} names no IP address to listen on"))
		})?;
		let (asks, arrived) = mpsc::channel(super::bulk::CONNECTION_ASKS * 4);
		let server = BulkServer::start(ip, asks)?;
		let port = server.port();
		self.bulk = Some((server, arrived));
		Ok(port)
	}

	/// Sends chunks at no more than `mbit` Mbit/s in all (from now on).
	pub fn limit_upload(&mut self, mbit: UploadLimit) {
		self.upload = Some(mbit.0 * 1e6 / 8.0);
	}

	/// Refuses to fetch a dataset whose manifest lists more than `max` bytes.
	pub fn limit_size(&mut self, max: u64) {
		self.max_fetch_bytes = max;
	}

	/// Gives up on a fetch that brings in checked chunks slower than `floor` (holders that
	/// each answer just before their request times out would hold it for ever).
	pub fn require_rate(&mut self, floor: Option<MinRate>) {
		self.min_fetch_rate = floor;
	}

	/// This node's peer id.
	pub fn peer_id(&self) -> PeerId {
		*self.swarm.local_peer_id()
	}

	/// Waits for the first address the node listens on, with its peer id appended.
	pub async fn listening(&mut self) -> Result<Multiaddr> {
		loop {
			match self.swarm.next().await {
				Some(SwarmEvent::NewListenAddr { address, .. }) => {
					return Ok(address.with(Protocol::P2p(self.peer_id())))
				}
				Some(SwarmEvent::ListenerError { error, .. }) => {
					return Err(Error::Network(format!("listening: {error}")))
				}
				Some(event) => self.other(event),
				None => return Err(Error::Network("the swarm ended".into())),
			}
		}
	}

	/// Serves the store until the process is stopped.
	pub async fn serve(mut self) {
		while let Some(event) = self.next_event().await {
			self.other(event);
		}
	}

	/// The swarm's next event, sending the answers that are ready meanwhile.
	async fn next_event(
		&mut self,
	) -> Option<SwarmEvent<request_response::Event<DataRequest, DataResponse>>> {
		loop {
			let link_free = self.link_free;
			tokio::select! {
				event = self.swarm.next() => return event,
				Some(ask) = next_bulk_ask(&mut self.bulk) => {
					let BulkAsk { peer, dataset, id, reply } = ask;
					let request = DataRequest::Chunk { dataset, file: id.file, chunk: id.chunk };
					self.answer(peer, request, Reply::Lane(id, reply));
				}
				Some(done) = self.answers.join_next(), if !self.answers.is_empty() => {
					if let Ok((peer, answer)) = done {
						self.ready.push(peer, answer);
						self.send_ready();
					}
				}
				_ = tokio::time::sleep_until(link_free), if !self.ready.is_empty() => {
					self.send_ready();
				}
			}
		}
	}

	/// Sends ready answers, the asking peers in turn, as far as the upload cap allows now: a
	/// chunk books the link for its size at the cap.
	fn send_ready(&mut self) {
		while self.upload.is_none() || self.link_free <= tokio::time::Instant::now() {
			let Some((reply, response)) = self.ready.pop() else { return };
			if let (Some(rate), DataResponse::Chunk(bytes)) = (self.upload, &response) {
				let start = self.link_free.max(tokio::time::Instant::now());
				self.link_free = start + Duration::from_secs_f64(bytes.len() as f64 / rate);
			}
			match (reply, response) {
				(Reply::Stream(channel), response) => {
					let _ = self.swarm.behaviour_mut().send_response(channel, response);
				}
				(Reply::Lane(id, lane), DataResponse::Chunk(bytes)) => {
					let _ = lane.send((id, Some(bytes)));
				}
				(Reply::Lane(id, lane), _) => {
					let _ = lane.send((id, None));
				}
			}
		}
	}

	/// Serves others until `at` (nothing of this node's own is in flight meanwhile).
	async fn serve_until(&mut self, at: Instant) -> Result<()> {
		let wake = tokio::time::sleep_until(at.into());
		tokio::pin!(wake);
		loop {
			tokio::select! {
				_ = &mut wake => return Ok(()),
				event = self.next_event() => match event {
					Some(event) => self.other(event),
					None => return Err(Error::Network("the swarm ended".into())),
				},
			}
		}
	}

	/// Starts answering `peer`'s `request` (read on a blocking thread, then sent in its turn).
	fn answer(&mut self, peer: PeerId, request: DataRequest, reply: Reply) {
		let store = self.store.clone();
		self.answers.spawn(async move {
			let response = tokio::task::spawn_blocking(move || store.answer(&request))
				.await
				.unwrap_or(DataResponse::Missing);
			(peer, (reply, response))
		});
	}

	/// A ticket to this node's lane for `peer`, or `Missing` when it offers none (or has
	/// handed out too many).
	fn ticket(&self, peer: PeerId, dataset: H256) -> DataResponse {
		let Some((server, _)) = &self.bulk else { return DataResponse::Missing };
		match server.ticket(peer, dataset) {
			Some(ticket) => DataResponse::Bulk { port: server.port(), ticket },
			None => DataResponse::Missing,
		}
	}

	/// Answers inbound requests; everything else is only logged.
	fn other(&mut self, event: SwarmEvent<request_response::Event<DataRequest, DataResponse>>) {
		match event {
			SwarmEvent::Behaviour(request_response::Event::Message {
				peer,
				message: request_response::Message::Request { request, channel, .. },
			}) => {
				tracing::debug!("{peer} asks for {request:?}");
				if let DataRequest::Bulk { dataset } = request {
					let response = self.ticket(peer, dataset);
					let _ = self.swarm.behaviour_mut().send_response(channel, response);
				} else {
					self.answer(peer, request, Reply::Stream(channel));
				}
			}
			SwarmEvent::ConnectionEstablished { peer_id, endpoint, .. } => {
				if let Some(ip) = ip_of(endpoint.get_remote_address()) {
					self.remote_ips.insert(peer_id, ip);
				}
			}
			SwarmEvent::Behaviour(request_response::Event::InboundFailure {
				peer, error, ..
			}) => {
				tracing::debug!("serving {peer}: {error}");
			}
			SwarmEvent::OutgoingConnectionError { peer_id, error, .. } => {
				tracing::debug!("dialling {peer_id:?}: {error}");
			}
			_ => {}
		}
	}

	/// The dataset `hash` names: from the store if it holds it whole, otherwise fetched from
	/// `holders` (addresses ending in `/p2p/<id>`) and checked. `progress` draws a bar on a
	/// terminal.
	pub async fn fetch(
		&mut self,
		hash: H256,
		holders: &[Multiaddr],
		progress: bool,
	) -> Result<Located> {
		if let Some(located) = self.store.locate(&hash)? {
			return Ok(located);
		}
		let mut peers = self.holders(hash, holders)?;
		let manifest = self.fetch_manifest(hash, &mut peers).await?;
		source::check_size(&hash, manifest.size(), self.max_fetch_bytes)?;
		let (lane_events, mut lanes) = mpsc::unbounded_channel();
		self.open_lanes(hash, &mut peers, lane_events).await?;
		let pace = Pace::start(self.min_fetch_rate);
		let mut missing = self.store.begin_fetch(&manifest)?;
		shuffle(&mut missing, &mut Rng::from_bytes(&self.peer_id().to_bytes()));
		tracing::info!(
			"fetching dataset {hash:?}: {} files, {} bytes, {} of {} chunks to fetch",
			manifest.files.len(),
			manifest.size(),
			missing.len(),
			manifest.files.iter().map(|f| f.chunks.len()).sum::<usize>()
		);
		self.fetch_chunks(&manifest, missing, &mut peers, &mut lanes, pace, progress).await?;
		let located = self.store.finish_fetch(&manifest)?;
		tracing::info!("dataset {hash:?} fetched and checked");
		Ok(located)
	}

	/// The manifest of dataset `hash` from the first of `holders` that serves one that hashes
	/// to it (nothing else is fetched).
	pub async fn manifest(&mut self, hash: H256, holders: &[Multiaddr]) -> Result<DatasetManifest> {
		let mut peers = self.holders(hash, holders)?;
		self.fetch_manifest(hash, &mut peers).await
	}

	/// `holders` as peers to ask (this node left out), their addresses known to the swarm.
	fn holders(&mut self, hash: H256, holders: &[Multiaddr]) -> Result<Vec<Holder>> {
		let refuse = |reason: String| Error::dataset(&hash, reason);
		let mut peers = Vec::new();
		for address in holders {
			let Some(peer) = peer_of(address) else {
				return Err(refuse(format!(
					"holder address {address} does not end in /p2p/<peer id>"
				)));
			};
			if peer != self.peer_id() {
				self.swarm.add_peer_address(peer, address.clone());
				peers.push(Holder::new(peer, address.clone()));
			}
		}
		if peers.is_empty() {
			return Err(refuse("no holder to fetch it from".into()));
		}
		Ok(peers)
	}

	/// Gives the swarm `holder`'s address again after a failed request: a failed dial
	/// drops the addresses it tried from the swarm's book, and without one the holder
	/// could never be dialled again once it comes up.
	fn redial(&mut self, holder: &Holder) {
		if !self.swarm.is_connected(&holder.peer) {
			self.swarm.add_peer_address(holder.peer, holder.address.clone());
		}
	}

	/// Asks each holder in turn for the manifest until one serves bytes that hash to `hash`.
	async fn fetch_manifest(
		&mut self,
		hash: H256,
		holders: &mut [Holder],
	) -> Result<DatasetManifest> {
		let mut why = Vec::new();
		for holder in holders.iter_mut() {
			let request = DataRequest::Manifest { dataset: hash };
			let id = self.swarm.behaviour_mut().send_request(&holder.peer, request);
			// A holder that lies is not asked again; one that lacks the dataset or cannot be
			// reached now may still serve chunks later (a fellow fetcher starting up).
			let (outcome, lied) = match self.response(id).await? {
				Ok(DataResponse::Manifest(bytes)) => (
					DatasetManifest::decode_checked(&bytes, &hash).map_err(|e| e.to_string()),
					true,
				),
				Ok(DataResponse::Missing) => (Err("does not have it".into()), false),
				Ok(DataResponse::Chunk(_) | DataResponse::Bulk { .. }) => {
					(Err("answered with something else".into()), true)
				}
				Err(e) => {
					holder.failed(Instant::now());
					self.redial(holder);
					(Err(e), false)
				}
			};
			match outcome {
				Ok(manifest) => return Ok(manifest),
				Err(e) => {
					tracing::warn!("holder {}: manifest of {hash:?}: {e}", holder.peer);
					holder.usable &= !lied;
					why.push(format!("{}: {e}", holder.peer));
				}
			}
		}
		Err(Error::dataset(&hash, format!("no holder served its manifest ({})", why.join("; "))))
	}

	/// Asks every usable holder for a ticket to its bulk lane (for up to [`TICKET_WAIT`]) and
	/// opens the lanes given, at each holder's address on this node's connection to it.
	async fn open_lanes(
		&mut self,
		hash: H256,
		holders: &mut [Holder],
		events: mpsc::UnboundedSender<LaneEvent>,
	) -> Result<()> {
		let mut asked = HashMap::new();
		for (h, holder) in holders.iter().enumerate().filter(|(_, holder)| holder.usable) {
			let request = DataRequest::Bulk { dataset: hash };
			asked.insert(self.swarm.behaviour_mut().send_request(&holder.peer, request), h);
		}
		let mut tickets = Vec::new();
		let deadline = tokio::time::Instant::now() + TICKET_WAIT;
		while !asked.is_empty() {
			// Holders that have not answered by then are asked over the stream (their late
			// answers are dropped as unknown requests).
			let Ok(answer) = tokio::time::timeout_at(deadline, self.next_answer()).await else {
				break;
			};
			let (request, outcome) = answer?;
			let Some(h) = asked.remove(&request) else { continue };
			let Ok(DataResponse::Bulk { port, ticket }) = outcome else { continue };
			match self.remote_ips.get(&holders[h].peer) {
				Some(ip) => tickets.push((h, SocketAddr::new(*ip, port), ticket)),
				None => {
					tracing::debug!("holder {}: gave a ticket, address unknown", holders[h].peer)
				}
			}
		}
		let opening = tickets.into_iter().map(|(h, at, ticket)| {
			let events = events.clone();
			async move { (h, at, BulkLane::open(h, at, ticket, events).await) }
		});
		for (h, at, lane) in futures::future::join_all(opening).await {
			match lane {
				Ok(lane) => holders[h].lane = Some(lane),
				Err(e) => tracing::info!(
					"holder {}: no bulk lane at {at} ({e}); asking over the stream",
					holders[h].peer
				),
			}
		}
		Ok(())
	}

	/// Waits for the answer to request `id`, serving others meanwhile.
	async fn response(&mut self, id: OutboundRequestId) -> Result<Result<DataResponse, String>> {
		loop {
			let (request, outcome) = self.next_answer().await?;
			if request == id {
				return Ok(outcome);
			}
		}
	}

	/// The next answer (or failure) to one of this node's requests, serving others meanwhile;
	/// an error after [`STALL`] without one.
	async fn next_answer(&mut self) -> Result<(OutboundRequestId, Result<DataResponse, String>)> {
		loop {
			let event = tokio::time::timeout(STALL, self.next_event())
				.await
				.map_err(|_| {
					Error::Network(format!("no holder answered for {}s", STALL.as_secs()))
				})?
				.ok_or_else(|| Error::Network("the swarm ended".into()))?;
			match event {
				SwarmEvent::Behaviour(request_response::Event::Message {
					message: request_response::Message::Response { request_id, response },
					..
				}) => return Ok((request_id, Ok(response))),
				SwarmEvent::Behaviour(request_response::Event::OutboundFailure {
					request_id,
					error,
					..
				}) => return Ok((request_id, Err(error.to_string()))),
				event => self.other(event),
			}
		}
	}

	/// Fetches `missing` chunks of `manifest`, spread over the usable holders (over their
	/// lanes where they have one, whose answers arrive on `lanes`), checking and writing each
	/// as it arrives.
	async fn fetch_chunks(
		&mut self,
		manifest: &DatasetManifest,
		missing: Vec<ChunkId>,
		holders: &mut [Holder],
		lanes: &mut mpsc::UnboundedReceiver<LaneEvent>,
		pace: Pace,
		progress: bool,
	) -> Result<()> {
		let hash = manifest.hash();
		let refuse = |reason: String| Error::dataset(&hash, reason);
		let total = missing.len() as u64;
		let bar = progress_bar(progress, total);
		let mut queue: VecDeque<ChunkId> = missing.into();
		let mut in_flight: HashMap<Asked, (ChunkId, usize)> = HashMap::new();
		// Holders that said they lack a chunk, per chunk: not asked for it again until every
		// usable holder has said so; then the chunk waits `RETRY` and all are asked again.
		let mut lacking: HashMap<ChunkId, HashSet<usize>> = HashMap::new();
		let mut parked: VecDeque<(Instant, ChunkId)> = VecDeque::new();
		let mut last_progress = Instant::now();
		// Bytes of the chunks checked and written so far, held to `pace`.
		let mut fetched = 0u64;
		let mut next = 0usize;
		// Chunks are checked and written on blocking threads, so hashing one overlaps
		// receiving (and decrypting) the next instead of stalling the swarm.
		let shared = Arc::new(manifest.clone());
		let mut writes: JoinSet<(ChunkId, usize, u64, Result<()>)> = JoinSet::new();
		let write_done = |done: std::result::Result<_, tokio::task::JoinError>| {
			done.map_err(|e| Error::Network(format!("writing a chunk: {e}")))
		};
		while !queue.is_empty() || !in_flight.is_empty() || !writes.is_empty() || !parked.is_empty()
		{
			pace.check(&hash, fetched)?;
			while parked.front().is_some_and(|(at, _)| *at <= Instant::now()) {
				queue.extend(parked.pop_front().map(|(_, id)| id));
			}
			while in_flight.len() + writes.len() < IN_FLIGHT {
				let Some(id) = queue.pop_front() else { break };
				let skip = lacking.get(&id).cloned().unwrap_or_default();
				let now = Instant::now();
				let candidates: Vec<usize> = (0..holders.len())
					.filter(|h| holders[*h].askable(now) && !skip.contains(h))
					.collect();
				// A holder not connected yet gets one request (which dials it) and no more
				// until it is connected: request-response 0.27 fails every request pending
				// on a peer when a second dial to it is refused for the first still going
				// (rust-libp2p#5996), which would give up on a good holder at once.
				let ready: Vec<usize> = candidates
					.iter()
					.copied()
					.filter(|h| {
						self.swarm.is_connected(&holders[*h].peer)
							|| !in_flight.values().any(|(_, on)| on == h)
					})
					.collect();
				if !candidates.is_empty() && ready.is_empty() {
					queue.push_front(id);
					break;
				}
				if candidates.is_empty() {
					let what = format!("chunk {} of file {}", id.chunk, id.file);
					if !holders.iter().any(|h| h.usable) {
						return Err(refuse(format!(
							"{what}: every holder failed or served bad data"
						)));
					}
					if last_progress.elapsed() > STALL {
						return Err(refuse(format!(
							"{what}: no holder has had it for {}s{}",
							STALL.as_secs(),
							unreachable(holders, now)
						)));
					}
					lacking.remove(&id);
					parked.push_back((Instant::now() + RETRY, id));
					continue;
				}
				let h = ready[next % ready.len()];
				next += 1;
				let asked = match &holders[h].lane {
					Some(lane) if lane.ask(id) => Asked::Lane(h, id),
					_ => {
						let request =
							DataRequest::Chunk { dataset: hash, file: id.file, chunk: id.chunk };
						Asked::Stream(
							self.swarm.behaviour_mut().send_request(&holders[h].peer, request),
						)
					}
				};
				in_flight.insert(asked, (id, h));
			}
			if in_flight.is_empty() {
				// Only writes are pending, or they fill the window: wait for one; with none,
				// only chunks put aside are left: wait for the first to be due.
				let Some(done) = writes.join_next().await else {
					if let Some((at, _)) = parked.front() {
						self.serve_until(*at).await?;
					}
					continue;
				};
				let (id, h, len, written) = write_done(done)?;
				if written_or_refused(&mut holders[h], id, written, &mut queue, &bar) {
					last_progress = Instant::now();
					fetched += len;
				}
				continue;
			}
			let (asked, outcome) = tokio::select! {
				answer = self.next_answer() => {
					let (rid, outcome) = answer?;
					(Asked::Stream(rid), outcome)
				}
				Some(event) = lanes.recv() => match event {
					LaneEvent::Answer { holder, id, bytes } => {
						(Asked::Lane(holder, id), Ok(bytes.map_or(DataResponse::Missing, DataResponse::Chunk)))
					}
					LaneEvent::Down { holder, why } => {
						lane_down(&mut holders[holder], holder, &why, &mut in_flight, &mut queue);
						continue;
					}
				},
				Some(done) = writes.join_next(), if !writes.is_empty() => {
					let (id, h, len, written) = write_done(done)?;
					if written_or_refused(&mut holders[h], id, written, &mut queue, &bar) {
						last_progress = Instant::now();
						fetched += len;
					}
					continue;
				}
			};
			let Some((id, h)) = in_flight.remove(&asked) else { continue };
			let holder = &mut holders[h];
			match outcome {
				Ok(DataResponse::Chunk(bytes)) => {
					let (store, manifest) = (self.store.clone(), shared.clone());
					let len = bytes.len() as u64;
					writes.spawn_blocking(move || {
						(id, h, len, store.write_chunk(&manifest, id, &bytes))
					});
				}
				Ok(DataResponse::Missing) => {
					holder.answered();
					lacking.entry(id).or_default().insert(h);
					queue.push_back(id);
				}
				Ok(DataResponse::Manifest(_) | DataResponse::Bulk { .. }) => {
					tracing::warn!(
						"holder {} answered a chunk request with something else",
						holder.peer
					);
					holder.usable = false;
					queue.push_back(id);
				}
				Err(e) => {
					tracing::debug!("holder {}: chunk request failed: {e}", holder.peer);
					self.redial(holder);
					if let Some(rest) = holder.failed(Instant::now()) {
						tracing::warn!(
							"holder {} failed {} times in a row ({e}): asking it again in {}s",
							holder.peer,
							holder.failures,
							rest.as_secs()
						);
					}
					queue.push_back(id);
				}
			}
		}
		bar.finish_and_clear();
		Ok(())
	}
}

/// The next chunk asked for on this node's lane, if it offers one (never, otherwise).
async fn next_bulk_ask(
	bulk: &mut Option<(BulkServer, mpsc::Receiver<BulkAsk>)>,
) -> Option<BulkAsk> {
	match bulk {
		Some((_, asks)) => asks.recv().await,
		None => std::future::pending().await,
	}
}

/// Forgets holder `h`'s broken lane and puts back the chunks asked on it: they go over the
/// stream from now on.
fn lane_down(
	holder: &mut Holder,
	h: usize,
	why: &str,
	in_flight: &mut HashMap<Asked, (ChunkId, usize)>,
	queue: &mut VecDeque<ChunkId>,
) {
	tracing::info!("holder {}: bulk lane closed ({why}); asking over the stream", holder.peer);
	holder.lane = None;
	in_flight.retain(|asked, (id, _)| match asked {
		Asked::Lane(on, _) if *on == h => {
			queue.push_back(*id);
			false
		}
		_ => true,
	});
}

/// The holders resting at `now` (unreachable lately), as the end of an error message.
fn unreachable(holders: &[Holder], now: Instant) -> String {
	let resting: Vec<String> = holders
		.iter()
		.filter(|h| h.usable && !h.askable(now))
		.map(|h| h.peer.to_string())
		.collect();
	match resting.is_empty() {
		true => String::new(),
		false => format!(" (unreachable lately: {})", resting.join(", ")),
	}
}

/// Puts `items` in a random order (Fisher-Yates).
fn shuffle<T>(items: &mut [T], rng: &mut Rng) {
	for i in (1..items.len()).rev() {
		items.swap(i, rng.below(i as u64 + 1) as usize);
	}
}

/// A cap on what a node uploads, in Mbit/s: finite and above zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UploadLimit(f64);

impl std::str::FromStr for UploadLimit {
	type Err = String;

	fn from_str(text: &str) -> std::result::Result<Self, String> {
		match text.parse::<f64>() {
			Ok(mbit) if mbit.is_finite() && mbit > 0.0 => Ok(UploadLimit(mbit)),
			_ => Err(format!("{text:?} is not a rate in Mbit/s above zero")),
		}
	}
}

/// Counts a chunk written (true), or gives up on the holder that served it bad and asks
/// again (false).
fn written_or_refused(
	holder: &mut Holder,
	id: ChunkId,
	written: Result<()>,
	queue: &mut VecDeque<ChunkId>,
	bar: &indicatif::ProgressBar,
) -> bool {
	match written {
		Ok(()) => {
			holder.answered();
			bar.inc(1);
			true
		}
		Err(e) => {
			tracing::warn!("holder {} served a bad chunk, not asking it again: {e}", holder.peer);
			holder.usable = false;
			queue.push_back(id);
			false
		}
	}
}

/// A progress bar over `chunks` on stderr, or a hidden one.
fn progress_bar(show: bool, chunks: u64) -> indicatif::ProgressBar {
	if !show {
		return indicatif::ProgressBar::hidden();
	}
	let bar = indicatif::ProgressBar::new(chunks);
	if let Ok(style) =
		indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} chunks of 1 MiB  {eta}")
	{
		bar.set_style(style);
	}
	bar
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn turns_take_one_item_from_each_key_in_turn() {
		let mut turns = Turns::new();
		// The first peer's whole window arrives before the others ask.
		for chunk in 0..4 {
			turns.push("a", ("a", chunk));
		}
		turns.push("b", ("b", 0));
		turns.push("c", ("c", 0));
		turns.push("b", ("b", 1));
		let mut order = Vec::new();
		while let Some(item) = turns.pop() {
			order.push(item);
			if order.len() == 3 {
				// A key that comes back after its queue ran dry joins the end of the turn.
				turns.push("c", ("c", 1));
			}
		}
		assert_eq!(
			order,
			[("a", 0), ("b", 0), ("c", 0), ("a", 1), ("b", 1), ("c", 1), ("a", 2), ("a", 3)]
		);
		assert!(turns.is_empty());
	}

	#[test]
	fn an_unreachable_holder_rests_longer_each_time_and_comes_back_after_an_answer() {
		let now = Instant::now();
		let peer = PeerId::random();
		let mut holder =
			Holder::new(peer, format!("/ip4/127.0.0.1/tcp/1/p2p/{peer}").parse().unwrap());
		// The first failures in a row only count.
		for _ in 1..HOLDER_FAILURES {
			assert_eq!(holder.failed(now), None);
			assert!(holder.askable(now));
		}
		// Then it rests, twice as long after each further failure, never over the cap.
		let rests: Vec<Duration> = (0..6).map(|_| holder.failed(now).unwrap()).collect();
		let secs: Vec<u64> = rests.iter().map(Duration::as_secs).collect();
		assert_eq!(secs, [2, 4, 8, 16, 30, 30]);
		assert!(!holder.askable(now + Duration::from_secs(29)));
		assert!(holder.askable(now + MAX_REST));
		// An answer ends the rest and the count; a holder that served bad data stays out.
		holder.answered();
		assert!(holder.askable(now));
		assert_eq!(holder.failed(now), None);
		holder.usable = false;
		assert!(!holder.askable(now + MAX_REST));
	}
}
