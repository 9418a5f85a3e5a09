//! The network task: owns the libp2p swarm, serves updates and state to peers, verifies what
//! comes in, and talks to the (blocking) training loop through two channels.
//!
//! Nothing a peer sends can stop this task: malformed, oversized, unsigned or foreign
//! messages are rejected, logged and counted in [`NetStats`].

use std::{
	collections::{BTreeMap, HashMap, HashSet},
	sync::{mpsc, Arc, Mutex},
	time::{Duration, Instant},
};

use codec::Encode;
use futures::StreamExt;
use grid_primitives::job::{JobId, RoundIndex};
use libp2p::{
	core::{muxing::StreamMuxerBox, transport::Boxed, upgrade},
	gossipsub::{self, IdentTopic, MessageAcceptance},
	identify,
	identity::Keypair,
	kad, noise, ping,
	request_response::{self, OutboundRequestId},
	swarm::SwarmEvent,
	tcp, yamux, Multiaddr, PeerId, Swarm, Transport,
};
use tokio::sync::mpsc as tokio_mpsc;

use super::{
	behaviour::{Behaviour, BehaviourConfig, BehaviourEvent},
	messages::{Digest, Request, Response, SignedCommitment},
	shaper::Shaper,
};

/// Where and how a trainer joins the network.
#[derive(Clone, Debug)]
pub struct NetConfig {
	/// Addresses to listen on (`/ip4/127.0.0.1/tcp/0` picks a free port).
	pub listen: Vec<Multiaddr>,
	/// Peers to dial at start and whenever disconnected (`.../p2p/<peer id>`).
	pub bootstrap: Vec<Multiaddr>,
	/// The job (its gossip topic and what requests are answered for).
	pub job: JobId,
	/// The job's parameter layout hash.
	pub manifest_hash: Digest,
	/// Behaviour settings.
	pub behaviour: BehaviourConfig,
}

/// What the network task is told to do.
#[derive(Debug)]
pub enum Command {
	/// Announce a signed commitment on the job's topic (retried until a peer hears it).
	Publish(SignedCommitment),
	/// Send `request` to `peer`; the answer comes back as [`Event::Fetched`] with `id`.
	Fetch {
		/// Caller's tag.
		id: u64,
		/// Who to ask.
		peer: PeerId,
		/// What to ask.
		request: Request,
	},
	/// Serve an encoded update under its hash.
	ServeUpdate {
		/// BLAKE2b-256 of the bytes.
		hash: Digest,
		/// Round it belongs to (for forgetting).
		round: RoundIndex,
		/// The encoded update.
		bytes: Arc<Vec<u8>>,
	},
	/// Serve this global state to joiners.
	ServeState {
		/// Round it is the base of.
		round: RoundIndex,
		/// Its state hash.
		state_hash: Digest,
		/// Checkpoint bytes.
		checkpoint: Arc<Vec<u8>>,
	},
	/// Stop serving updates of rounds before this one.
	Forget(RoundIndex),
	/// Close the connections to a peer.
	Disconnect(PeerId),
	/// Announce a signed contribution proof (SCALE bytes) on the job's proofs topic.
	PublishProof(Vec<u8>),
}

/// What the network task reports.
#[derive(Debug)]
pub enum Event {
	/// Listening on an address.
	Listening(Multiaddr),
	/// A connection to a peer opened.
	Connected(PeerId),
	/// The last connection to a peer closed.
	Disconnected(PeerId),
	/// A valid commitment, signed by `signer`, for this job.
	Commitment {
		/// Who signed it.
		signer: PeerId,
		/// The commitment.
		signed: SignedCommitment,
	},
	/// A contribution proof for this job relayed on the proofs topic (shape and job
	/// checked; the signature is not).
	Proof(Vec<u8>),
	/// The answer to a [`Command::Fetch`].
	Fetched {
		/// The caller's tag.
		id: u64,
		/// Who answered (or failed to).
		peer: PeerId,
		/// The response, or why there is none.
		result: Result<Response, String>,
		/// Time from request to answer.
		elapsed: Duration,
	},
	/// A measured round-trip time.
	Rtt {
		/// To whom.
		peer: PeerId,
		/// How long.
		rtt: Duration,
	},
}

/// Counters of what the network task saw, shared with the status report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct NetStats {
	/// Rejected inbound messages by reason.
	pub rejected: BTreeMap<String, u64>,
	/// Requests served.
	pub served: u64,
	/// Bytes sent in responses.
	pub bytes_served: u64,
	/// Bytes received in responses.
	pub bytes_fetched: u64,
	/// Commitments published.
	pub published: u64,
}

/// The training loop's side of the network.
pub struct NetworkHandle {
	/// This trainer's peer id.
	pub local_peer_id: PeerId,
	commands: tokio_mpsc::UnboundedSender<Command>,
	/// Events from the network task.
	pub events: mpsc::Receiver<Event>,
	stats: Arc<Mutex<NetStats>>,
}

impl NetworkHandle {
	/// Sends a command (ignored once the network task has stopped, which only happens when
	/// the runtime shuts down).
	pub fn send(&self, command: Command) {
		let _ = self.commands.send(command);
	}

	/// A copy of the counters.
	pub fn stats(&self) -> NetStats {
		self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone()
	}
}

/// TCP, noise and yamux, each connection shaped by `shaper` once its peer is known.
fn transport(key: &Keypair, shaper: Shaper) -> Result<Boxed<(PeerId, StreamMuxerBox)>, String> {
	let noise = noise::Config::new(key).map_err(|e| format!("noise: {e}"))?;
	Ok(tcp::tokio::Transport::new(tcp::Config::default().nodelay(true))
		.upgrade(upgrade::Version::V1)
		.authenticate(noise)
		.multiplex(yamux::Config::default())
		.timeout(Duration::from_secs(20))
		.and_then(move |(peer, muxer), _| {
			let admitted =
				shaper.admit(&peer).map(|()| (peer, StreamMuxerBox::new(shaper.wrap(peer, muxer))));
			futures::future::ready(admitted)
		})
		.boxed())
}

/// Starts the network task on `runtime`.
pub fn start(
	runtime: &tokio::runtime::Handle,
	key: Keypair,
	shaper: Shaper,
	config: NetConfig,
) -> Result<NetworkHandle, String> {
	// The TCP transport registers its sockets with the runtime's reactor.
	let _guard = runtime.enter();
	let local_peer_id = key.public().to_peer_id();
	let behaviour = Behaviour::new(&key, &config.behaviour)?;
	let transport = transport(&key, shaper)?;
	let mut swarm = Swarm::new(
		transport,
		behaviour,
		local_peer_id,
		libp2p::swarm::Config::with_tokio_executor()
			.with_idle_connection_timeout(Duration::from_secs(60)),
	);
	let topic = IdentTopic::new(format!("grid/job/{}/commitments", config.job));
	let proof_topic = IdentTopic::new(format!("grid/job/{}/proofs", config.job));
	for t in [&topic, &proof_topic] {
		swarm
			.behaviour_mut()
			.gossipsub
			.subscribe(t)
			.map_err(|e| format!("subscribing to {t}: {e}"))?;
	}
	for addr in &config.listen {
		swarm.listen_on(addr.clone()).map_err(|e| format!("listening on {addr}: {e}"))?;
	}
	let (commands, command_rx) = tokio_mpsc::unbounded_channel();
	let (event_tx, events) = mpsc::channel();
	let stats = Arc::new(Mutex::new(NetStats::default()));
	let task = Task {
		swarm,
		topic,
		proof_topic,
		config,
		events: event_tx,
		stats: stats.clone(),
		updates: HashMap::new(),
		state: None,
		fetches: HashMap::new(),
		unpublished: Vec::new(),
		connected: HashSet::new(),
		recent: BTreeMap::new(),
	};
	runtime.spawn(task.run(command_rx));
	Ok(NetworkHandle { local_peer_id, commands, events, stats })
}

struct Task {
	swarm: Swarm<Behaviour>,
	topic: IdentTopic,
	proof_topic: IdentTopic,
	config: NetConfig,
	events: mpsc::Sender<Event>,
	stats: Arc<Mutex<NetStats>>,
	updates: HashMap<Digest, (RoundIndex, Arc<Vec<u8>>)>,
	state: Option<(RoundIndex, Digest, Arc<Vec<u8>>)>,
	fetches: HashMap<OutboundRequestId, (u64, PeerId, Instant)>,
	/// Messages not yet heard by anyone (no peer subscribed yet): topic, bytes, deadline.
	unpublished: Vec<(IdentTopic, Vec<u8>, Instant)>,
	connected: HashSet<PeerId>,
	/// Commitments seen, by round, handed to joiners with the state.
	recent: BTreeMap<RoundIndex, Vec<SignedCommitment>>,
}

/// Most commitments remembered per round (a bound on what a flood of valid signers costs).
const MAX_REMEMBERED: usize = 256;
/// How long an unheard commitment is retried.
const PUBLISH_RETRY: Duration = Duration::from_secs(30);

impl Task {
	async fn run(mut self, mut commands: tokio_mpsc::UnboundedReceiver<Command>) {
		for addr in self.config.bootstrap.clone() {
			self.add_bootstrap(addr);
		}
		let mut tick = tokio::time::interval(Duration::from_millis(250));
		let mut redial = tokio::time::interval(Duration::from_secs(2));
		let mut discover = tokio::time::interval(Duration::from_secs(10));
		loop {
			tokio::select! {
				command = commands.recv() => match command {
					Some(c) => self.command(c),
					None => return,
				},
				event = self.swarm.select_next_some() => self.swarm_event(event),
				_ = tick.tick() => self.retry_publish(),
				_ = redial.tick() => self.redial(),
				_ = discover.tick() => {
					let _ = self.swarm.behaviour_mut().kad.bootstrap();
				},
			}
		}
	}

	fn emit(&self, event: Event) {
		let _ = self.events.send(event);
	}

	fn count(&self, reason: &str) {
		let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
		*stats.rejected.entry(reason.to_string()).or_default() += 1;
	}

	fn stats(&self) -> std::sync::MutexGuard<'_, NetStats> {
		self.stats.lock().unwrap_or_else(|p| p.into_inner())
	}

	fn add_bootstrap(&mut self, addr: Multiaddr) {
		if let Some(libp2p::multiaddr::Protocol::P2p(peer)) = addr.iter().last() {
			self.swarm.behaviour_mut().kad.add_address(&peer, addr.clone());
		}
		let _ = self.swarm.dial(addr);
	}

	fn redial(&mut self) {
		for addr in self.config.bootstrap.clone() {
			let known = match addr.iter().last() {
				Some(libp2p::multiaddr::Protocol::P2p(peer)) => self.connected.contains(&peer),
				_ => false,
			};
			if !known {
				let _ = self.swarm.dial(addr);
			}
		}
	}

	fn command(&mut self, command: Command) {
		match command {
			Command::Publish(signed) => {
				self.stats().published += 1;
				self.remember(signed.clone());
				let topic = self.topic.clone();
				self.unpublished.push((topic, signed.encode(), Instant::now() + PUBLISH_RETRY));
				self.retry_publish();
			}
			Command::PublishProof(bytes) => {
				let topic = self.proof_topic.clone();
				self.unpublished.push((topic, bytes, Instant::now() + PUBLISH_RETRY));
				self.retry_publish();
			}
			Command::Fetch { id, peer, request } => {
				let rid = self.swarm.behaviour_mut().fetch.send_request(&peer, request);
				self.fetches.insert(rid, (id, peer, Instant::now()));
			}
			Command::ServeUpdate { hash, round, bytes } => {
				self.updates.insert(hash, (round, bytes));
			}
			Command::ServeState { round, state_hash, checkpoint } => {
				self.recent.retain(|r, _| *r >= round);
				self.state = Some((round, state_hash, checkpoint));
			}
			Command::Forget(before) => self.updates.retain(|_, (r, _)| *r >= before),
			Command::Disconnect(peer) => {
				let _ = self.swarm.disconnect_peer_id(peer);
			}
		}
	}

	/// Keeps a valid commitment for joiners (only for rounds from the served state on, and
	/// a bounded number per round).
	fn remember(&mut self, signed: SignedCommitment) {
		let round = signed.commitment.round;
		if self.state.as_ref().is_some_and(|(r, _, _)| round < *r) {
			return;
		}
		let list = self.recent.entry(round).or_default();
		if list.len() < MAX_REMEMBERED && !list.contains(&signed) {
			list.push(signed);
		}
	}

	fn retry_publish(&mut self) {
		let now = Instant::now();
		let pending = std::mem::take(&mut self.unpublished);
		for (topic, bytes, deadline) in pending {
			match self.swarm.behaviour_mut().gossipsub.publish(topic.clone(), bytes.clone()) {
				Ok(_) => {}
				Err(gossipsub::PublishError::InsufficientPeers) if now < deadline => {
					self.unpublished.push((topic, bytes, deadline));
				}
				Err(e) => tracing::warn!("{topic} message not published: {e}"),
			}
		}
	}

	fn swarm_event(&mut self, event: SwarmEvent<BehaviourEvent>) {
		match event {
			SwarmEvent::NewListenAddr { address, .. } => self.emit(Event::Listening(address)),
			SwarmEvent::ConnectionEstablished { peer_id, num_established, .. }
				if num_established.get() == 1 =>
			{
				self.connected.insert(peer_id);
				self.emit(Event::Connected(peer_id));
			}
			SwarmEvent::ConnectionClosed { peer_id, num_established: 0, .. } => {
				self.connected.remove(&peer_id);
				self.emit(Event::Disconnected(peer_id));
			}
			SwarmEvent::IncomingConnectionError { error, .. } => {
				tracing::debug!("incoming connection failed: {error}");
			}
			SwarmEvent::Behaviour(event) => self.behaviour_event(event),
			_ => {}
		}
	}

	fn behaviour_event(&mut self, event: BehaviourEvent) {
		match event {
			BehaviourEvent::Gossipsub(gossipsub::Event::Message {
				propagation_source,
				message_id,
				message,
			}) => self.gossip(propagation_source, message_id, message),
			BehaviourEvent::Fetch(event) => self.fetch_event(event),
			BehaviourEvent::Ping(ping::Event { peer, result: Ok(rtt), .. }) => {
				self.emit(Event::Rtt { peer, rtt });
			}
			BehaviourEvent::Identify(identify::Event::Received { peer_id, info, .. }) => {
				if info.protocol_version != super::behaviour::IDENTIFY_PROTOCOL {
					self.count("foreign identify protocol");
					return;
				}
				for addr in info.listen_addrs {
					self.swarm.behaviour_mut().kad.add_address(&peer_id, addr);
				}
			}
			BehaviourEvent::Kad(kad::Event::RoutingUpdated { peer, .. })
				if !self.connected.contains(&peer) && peer != *self.swarm.local_peer_id() =>
			{
				let _ = self.swarm.dial(peer);
			}
			_ => {}
		}
	}

	fn gossip(&mut self, source: PeerId, id: gossipsub::MessageId, message: gossipsub::Message) {
		let acceptance = if message.topic == self.proof_topic.hash() {
			self.check_proof(&source, message.data)
		} else {
			self.check_commitment(&source, &message.data)
		};
		let _ = self
			.swarm
			.behaviour_mut()
			.gossipsub
			.report_message_validation_result(&id, &source, acceptance);
	}

	fn check_commitment(&mut self, source: &PeerId, data: &[u8]) -> MessageAcceptance {
		match SignedCommitment::decode_verified(data, self.config.job, &self.config.manifest_hash) {
			Ok((signed, signer)) => {
				self.remember(signed.clone());
				self.emit(Event::Commitment { signer, signed });
				MessageAcceptance::Accept
			}
			Err(e) => {
				tracing::warn!("rejected commitment relayed by {source}: {e}");
				self.count(&reason_key(&e.to_string()));
				MessageAcceptance::Reject
			}
		}
	}

	fn check_proof(&mut self, source: &PeerId, data: Vec<u8>) -> MessageAcceptance {
		match super::messages::decode_proof(&data, self.config.job) {
			Ok(_) => {
				self.emit(Event::Proof(data));
				MessageAcceptance::Accept
			}
			Err(e) => {
				tracing::warn!("rejected proof relayed by {source}: {e}");
				self.count(&format!("proof: {}", reason_key(&e.to_string())));
				MessageAcceptance::Reject
			}
		}
	}

	fn fetch_event(&mut self, event: request_response::Event<Request, Response>) {
		match event {
			request_response::Event::Message { peer, message } => match message {
				request_response::Message::Request { request, channel, .. } => {
					let response = self.answer(&peer, request);
					let size = response.encoded_size() as u64;
					{
						let mut stats = self.stats();
						stats.served += 1;
						stats.bytes_served += size;
					}
					let _ = self.swarm.behaviour_mut().fetch.send_response(channel, response);
				}
				request_response::Message::Response { request_id, response } => {
					if let Some((id, peer, at)) = self.fetches.remove(&request_id) {
						self.stats().bytes_fetched += response.encoded_size() as u64;
						self.emit(Event::Fetched {
							id,
							peer,
							result: Ok(response),
							elapsed: at.elapsed(),
						});
					}
				}
			},
			request_response::Event::OutboundFailure { request_id, error, peer } => {
				if let Some((id, _, at)) = self.fetches.remove(&request_id) {
					self.emit(Event::Fetched {
						id,
						peer,
						result: Err(error.to_string()),
						elapsed: at.elapsed(),
					});
				}
			}
			request_response::Event::InboundFailure { peer, error, .. } => {
				tracing::debug!("request from {peer} failed: {error}");
				self.count(&reason_key(&error.to_string()));
			}
			request_response::Event::ResponseSent { .. } => {}
		}
	}

	fn answer(&self, peer: &PeerId, request: Request) -> Response {
		let job = self.config.job;
		match request {
			Request::Update { job: j, .. } | Request::State { job: j } if j != job => {
				self.count("request for another job");
				tracing::warn!("{peer} asked for job {j}; this trainer runs job {job}");
				Response::Unavailable(format!("this trainer runs job {job}, not {j}"))
			}
			Request::Update { hash, .. } => match self.updates.get(&hash) {
				Some((_, bytes)) => Response::Update(bytes.to_vec()),
				None => Response::Unavailable(format!("no update {}", crate::params::hex(&hash))),
			},
			Request::State { .. } => match &self.state {
				Some((round, state_hash, bytes)) => Response::State {
					round: *round,
					state_hash: *state_hash,
					checkpoint: bytes.to_vec(),
					commitments: self.recent.get(round).cloned().unwrap_or_default(),
				},
				None => Response::Unavailable("no state yet".into()),
			},
		}
	}
}

/// A short counter key from an error message (its text up to the first colon).
fn reason_key(message: &str) -> String {
	message.split(':').next().unwrap_or(message).trim().to_string()
}
