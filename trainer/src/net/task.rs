//! The network task: owns the libp2p swarm, serves updates and state to peers, verifies what
//! comes in, and talks to the (blocking) training loop through channels.
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
use grid_primitives::job::RoundIndex;
use libp2p::{
	gossipsub::{self, IdentTopic, MessageAcceptance},
	identify, kad, ping,
	request_response::{self, InboundRequestId, OutboundRequestId},
	swarm::{ListenError, SwarmEvent},
	Multiaddr, PeerId, Swarm,
};
use tokio::sync::mpsc as tokio_mpsc;

use super::{
	behaviour::{Behaviour, BehaviourEvent},
	pieces::ServedPieces,
	service::{Command, Event, NetConfig, NetStats},
	stored::StoredBytes,
	strangers::{StrangerAnswers, TooManyStrangers},
};
use crate::round::{
	announcement::Announcement,
	messages::{decode_proof, verify_proof, Digest, Request, Response, SignedCommitment},
	state_transfer::ServedState,
	update_pieces::names_piece,
	witness::SignedAttestation,
};

/// The first wait between Kademlia walks; it doubles after each walk up to `DISCOVER_LAST`.
const DISCOVER_FIRST: Duration = Duration::from_secs(10);
const DISCOVER_LAST: Duration = Duration::from_secs(300);

/// The network task's state.
pub(super) struct Task {
	swarm: Swarm<Behaviour>,
	topic: IdentTopic,
	proof_topic: IdentTopic,
	attestation_topic: IdentTopic,
	config: NetConfig,
	events: mpsc::Sender<Event>,
	proofs: mpsc::SyncSender<Vec<u8>>,
	stats: Arc<Mutex<NetStats>>,
	updates: HashMap<Digest, (RoundIndex, Arc<Vec<u8>>)>,
	/// Updates served in pieces, and the piece requests waiting here.
	pieces: ServedPieces<request_response::ResponseChannel<Response>>,
	/// This trainer's committed work states by id, with their round.
	work_states: HashMap<Digest, (RoundIndex, StoredBytes)>,
	/// The states served and where their bytes are, newest last (the newest and the one
	/// before).
	states: Vec<(Arc<ServedState>, StoredBytes)>,
	fetches: HashMap<OutboundRequestId, (u64, PeerId, Instant)>,
	/// Messages not yet heard by anyone (no peer subscribed yet): topic, bytes, deadline.
	unpublished: Vec<(IdentTopic, Vec<u8>, Instant)>,
	connected: HashSet<PeerId>,
	/// Commitments seen, by round (the served state's and the one before), handed to
	/// joiners with the state and to peers whose gossip lost one.
	recent: BTreeMap<RoundIndex, Vec<SignedCommitment>>,
	/// The answers in flight to peers the roster does not admit.
	stranger_answers: StrangerAnswers<InboundRequestId>,
}

/// What a stranger's connection refused past the bound is counted as (`net/strangers.rs`).
pub(super) const STRANGER_REFUSED: &str = "connection from outside the roster: too many strangers";
/// What a record put in this trainer's DHT is counted as: dropped (the DHT is for routing).
pub(super) const DHT_RECORD_DROPPED: &str = "dht record: not kept (the DHT finds peers only)";
/// Most commitments remembered per round (a bound on what a flood of valid signers costs).
const MAX_REMEMBERED: usize = 256;
/// How long an unheard commitment is retried.
const PUBLISH_RETRY: Duration = Duration::from_secs(30);

impl Task {
	/// A task on `swarm`, gossiping on `[commitments, proofs, attestations]` topics.
	pub(super) fn new(
		swarm: Swarm<Behaviour>,
		[topic, proof_topic, attestation_topic]: [IdentTopic; 3],
		config: NetConfig,
		events: mpsc::Sender<Event>,
		proofs: mpsc::SyncSender<Vec<u8>>,
		stats: Arc<Mutex<NetStats>>,
	) -> Self {
		Task {
			swarm,
			topic,
			proof_topic,
			attestation_topic,
			config,
			events,
			proofs,
			stats,
			updates: HashMap::new(),
			pieces: ServedPieces::new(),
			work_states: HashMap::new(),
			states: Vec::new(),
			fetches: HashMap::new(),
			unpublished: Vec::new(),
			connected: HashSet::new(),
			recent: BTreeMap::new(),
			stranger_answers: StrangerAnswers::new(),
		}
	}

	pub(super) async fn run(mut self, mut commands: tokio_mpsc::UnboundedReceiver<Command>) {
		for addr in self.config.bootstrap.clone() {
			self.add_bootstrap(addr);
		}
		let mut tick = tokio::time::interval(Duration::from_millis(250));
		let mut redial = tokio::time::interval(Duration::from_secs(2));
		// Kademlia walks are for finding peers; once a trainer knows the job's, they cost every
		// peer CPU for nothing (about 1 ms a second a peer went to connection upkeep at 32
		// trainers, `bench/scale.sh`), so they back off from every 10 s to every 5 min.
		let mut discover_every = DISCOVER_FIRST;
		let discover = tokio::time::sleep(Duration::ZERO);
		tokio::pin!(discover);
		loop {
			tokio::select! {
				command = commands.recv() => match command {
					Some(c) => self.command(c),
					None => return,
				},
				event = self.swarm.select_next_some() => self.swarm_event(event),
				_ = tick.tick() => {
					self.retry_publish();
					let expired = self.pieces.expire(Instant::now());
					self.reply(expired);
				}
				_ = redial.tick() => self.redial(),
				_ = &mut discover => {
					let _ = self.swarm.behaviour_mut().kad.bootstrap();
					discover.as_mut().reset(tokio::time::Instant::now() + discover_every);
					discover_every = (discover_every * 2).min(DISCOVER_LAST);
				},
			}
			// A swarm with many busy peers is always ready, so this loop would never give
			// the runtime's one thread back: the chain follower beside it then went unpolled
			// for 10 s and more (64 trainers, `bench/scale.sh`). This yields once the task's
			// share of the runtime is used up.
			tokio::task::consume_budget().await;
		}
	}

	fn emit(&self, event: Event) {
		let _ = self.events.send(event);
	}

	fn count(&self, reason: &str) {
		let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
		*stats.rejected.entry(reason.to_string()).or_default() += 1;
	}

	/// Whether the roster takes `peer`'s gossip and piece requests ([`crate::round::roster`]):
	/// strangers' commitments would take the bounded places of members' (remembered ones,
	/// held piece requests) for free.
	fn admits(&self, peer: &PeerId) -> bool {
		self.swarm.behaviour().gate.roster().admits(peer)
	}

	fn stats(&self) -> std::sync::MutexGuard<'_, NetStats> {
		self.stats.lock().unwrap_or_else(|p| p.into_inner())
	}

	/// Peers subscribed to the commitments topic: a published message goes to each (flood
	/// publishing).
	fn subscribed_peers(&self) -> usize {
		let topic = self.topic.hash();
		let gossipsub = &self.swarm.behaviour().gossipsub;
		gossipsub.all_peers().filter(|(_, topics)| topics.contains(&&topic)).count()
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
			Command::Publish(announcement) => {
				let inline = announcement.update.as_ref().map_or(0, Vec::len) as u64;
				let peers = self.subscribed_peers() as u64;
				{
					let mut stats = self.stats();
					stats.published += 1;
					stats.inline_bytes_sent += inline * peers;
				}
				self.remember(announcement.signed.clone());
				self.publish(self.topic.clone(), announcement.encode());
			}
			Command::PublishProof(bytes) => self.publish(self.proof_topic.clone(), bytes),
			Command::Attest(signed) => {
				self.publish(self.attestation_topic.clone(), signed.encode())
			}
			Command::Fetch { id, peer, request } => {
				let rid = self.swarm.behaviour_mut().fetch.send_request(&peer, request);
				self.fetches.insert(rid, (id, peer, Instant::now()));
			}
			Command::ServeUpdate { hash, round, bytes, hashes } => {
				let replies = self.pieces.whole(hash, round, &bytes, hashes);
				self.updates.insert(hash, (round, bytes));
				self.reply(replies);
			}
			Command::RefusePiece { hash, index } => {
				let refused = self.pieces.refuse(hash, index);
				self.reply(refused);
			}
			Command::ServePiece { hash, round, index, hashes, piece } => {
				let replies = self.pieces.piece(hash, round, index, hashes, piece);
				self.reply(replies);
			}
			Command::ServeState { state, bytes } => {
				// The round before stays: a peer still deciding it may ask for its
				// commitments after this trainer decided.
				self.recent.retain(|r, _| r.saturating_add(1) >= state.round);
				self.states.push((state, bytes));
				let stale = self.states.len().saturating_sub(2);
				self.states.drain(..stale);
			}
			Command::StateStored { state_hash, bytes } => {
				// Only a state still served moves; one already replaced stays gone.
				if let Some((_, served)) =
					self.states.iter_mut().find(|(s, _)| s.state_hash == state_hash)
				{
					*served = bytes;
				}
			}
			Command::Forget(before) => {
				self.updates.retain(|_, (r, _)| *r >= before);
				let refused = self.pieces.forget(before);
				self.reply(refused);
			}
			Command::ServeWorkState { id, round, bytes } => {
				self.work_states.insert(id, (round, bytes));
			}
			Command::ForgetWorkStates(before) => self.work_states.retain(|_, (r, _)| *r >= before),
			Command::Roster(roster) => {
				for list in self.recent.values_mut() {
					list.retain(|signed| signed.verify().is_ok_and(|p| roster.admits(&p)));
				}
				self.swarm.behaviour_mut().gate.set_roster(roster);
			}
			Command::Registered(peers) => self.swarm.behaviour_mut().gate.set_registered(peers),
			Command::Disconnect(peer) => {
				let _ = self.swarm.disconnect_peer_id(peer);
			}
		}
	}

	/// Keeps a valid commitment for joiners and peers that missed it (only for rounds from
	/// the one before the served state's on, and a bounded number per round).
	fn remember(&mut self, signed: SignedCommitment) {
		let round = signed.commitment.round;
		if self.states.last().is_some_and(|(s, _)| round.saturating_add(1) < s.round) {
			return;
		}
		let list = self.recent.entry(round).or_default();
		if list.len() < MAX_REMEMBERED && !list.contains(&signed) {
			list.push(signed);
		}
	}

	/// Publishes `bytes` on `topic`, retried for [`PUBLISH_RETRY`] while no peer hears it.
	fn publish(&mut self, topic: IdentTopic, bytes: Vec<u8>) {
		self.unpublished.push((topic, bytes, Instant::now() + PUBLISH_RETRY));
		self.retry_publish();
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
				if matches!(&error, ListenError::Denied { cause }
					if cause.downcast_ref::<TooManyStrangers>().is_some())
				{
					self.count(STRANGER_REFUSED);
				}
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
			BehaviourEvent::Data(request_response::Event::Message {
				message: request_response::Message::Request { request, channel, .. },
				..
			}) => {
				let response = match &self.config.datasets {
					Some(server) => server.answer(&request),
					None => super::data::DataResponse::Missing,
				};
				let _ = self.swarm.behaviour_mut().data.send_response(channel, response);
			}
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
			BehaviourEvent::Kad(kad::Event::InboundRequest {
				request:
					kad::InboundRequest::PutRecord { record: Some(_), .. }
					| kad::InboundRequest::AddProvider { record: Some(_) },
			}) => self.count(DHT_RECORD_DROPPED),
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
		} else if message.topic == self.attestation_topic.hash() {
			self.check_attestation(&source, &message.data)
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
		let (job, chain) = (self.config.job, self.config.chain());
		match Announcement::decode_verified(data, job, &chain, &self.config.manifest_hash) {
			Ok((_, signer)) if !self.admits(&signer) => self.stranger(source, &signer),
			Ok((Announcement { signed, update }, signer)) => {
				self.remember(signed.clone());
				let inline = update.as_ref().map_or(0, Vec::len) as u64;
				self.stats().inline_bytes_heard += inline;
				let (signed, heard) = (Box::new(signed), Instant::now());
				self.emit(Event::Commitment { signer, signed, heard, update });
				MessageAcceptance::Accept
			}
			Err(e) => {
				tracing::warn!("rejected commitment relayed by {source}: {e}");
				self.count(&reason_key(&e.to_string()));
				MessageAcceptance::Reject
			}
		}
	}

	fn check_attestation(&mut self, source: &PeerId, data: &[u8]) -> MessageAcceptance {
		match SignedAttestation::decode_verified(data, self.config.job) {
			Ok((_, signer)) if !self.admits(&signer) => self.stranger(source, &signer),
			Ok((signed, signer)) => {
				self.emit(Event::Attestation { signer, signed });
				MessageAcceptance::Accept
			}
			Err(e) => {
				tracing::warn!("rejected attestation relayed by {source}: {e}");
				self.count(&format!("attestation: {}", reason_key(&e.to_string())));
				MessageAcceptance::Reject
			}
		}
	}

	/// A message signed by a peer the roster does not admit: neither taken nor passed on
	/// (ignored, not rejected: a member's message relayed before this task learned its round's
	/// roster must not cost the relayer its gossip score).
	fn stranger(&mut self, source: &PeerId, signer: &PeerId) -> MessageAcceptance {
		tracing::debug!("gossip signed by {signer}, not a member, relayed by {source}: ignored");
		self.count("signer is not a member");
		MessageAcceptance::Ignore
	}

	fn check_proof(&mut self, source: &PeerId, data: Vec<u8>) -> MessageAcceptance {
		let genesis = self.config.proof_genesis;
		let checked = decode_proof(&data, self.config.job).and_then(|signed| match &genesis {
			Some(genesis) => verify_proof(&signed, genesis),
			None => Ok(()),
		});
		match checked {
			Ok(()) => {
				let _ = self.proofs.try_send(data);
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
				request_response::Message::Request { request, channel, request_id } => {
					let stranger = self.swarm.behaviour().gate.is_stranger(&peer);
					if stranger && !self.stranger_answers.admit(request_id) {
						self.count("request from outside the roster: busy");
						let busy = "busy: too many requests from peers outside the round's members";
						self.respond(channel, Response::Unavailable(busy.into()));
						return;
					}
					let channel = match self.hold_piece(peer, &request, channel) {
						Ok(()) => return,
						Err(channel) => channel,
					};
					let response = self.answer(&peer, request);
					self.respond(channel, response);
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
			request_response::Event::InboundFailure { peer, error, request_id, .. } => {
				self.stranger_answers.done(&request_id);
				tracing::debug!("request from {peer} failed: {error}");
				self.count(&reason_key(&error.to_string()));
			}
			request_response::Event::ResponseSent { request_id, .. } => {
				self.stranger_answers.done(&request_id)
			}
		}
	}

	/// Sends an answer and counts it.
	fn respond(
		&mut self,
		channel: request_response::ResponseChannel<Response>,
		response: Response,
	) {
		let size = response.encoded_size() as u64;
		{
			let mut stats = self.stats();
			stats.served += 1;
			stats.bytes_served += size;
		}
		let _ = self.swarm.behaviour_mut().fetch.send_response(channel, response);
	}

	fn reply(&mut self, replies: Vec<(request_response::ResponseChannel<Response>, Response)>) {
		replies.into_iter().for_each(|(channel, response)| self.respond(channel, response));
	}

	/// Holds a request for a piece of an update this job's round committed to that is not
	/// here yet (this trainer is likely its keeper and fetching it); else gives the
	/// channel back to be answered now.
	fn hold_piece(
		&mut self,
		peer: PeerId,
		request: &Request,
		channel: request_response::ResponseChannel<Response>,
	) -> Result<(), request_response::ResponseChannel<Response>> {
		let Request::UpdatePiece { job, round, hash, index, with_hashes } = *request else {
			return Err(channel);
		};
		let whole = self.updates.get(&hash).map(|(_, b)| b.as_slice());
		// A piece of an update the round committed to, within its pieces: requests for
		// others would take hold slots from honest fetchers for nothing.
		let committed = self
			.recent
			.get(&round)
			.is_some_and(|list| list.iter().any(|c| names_piece(&c.commitment, &hash, index)));
		if job != self.config.job
			|| !self.admits(&peer)
			|| !committed
			|| whole.is_some()
			|| self.pieces.keeps(&hash, index)
		{
			return Err(channel);
		}
		self.pieces.hold(peer, (hash, index, round, with_hashes), channel, Instant::now())
	}

	fn answer(&self, peer: &PeerId, request: Request) -> Response {
		let job = self.config.job;
		match request {
			Request::Update { job: j, .. }
			| Request::UpdatePiece { job: j, .. }
			| Request::State { job: j }
			| Request::StatePiece { job: j, .. }
			| Request::WorkState { job: j, .. }
			| Request::Commitments { job: j, .. }
				if j != job =>
			{
				self.count("request for another job");
				tracing::warn!("{peer} asked for job {j}; this trainer runs job {job}");
				Response::Unavailable(format!("this trainer runs job {job}, not {j}"))
			}
			Request::Update { hash, .. } => match self.updates.get(&hash) {
				Some((_, bytes)) => Response::Update(bytes.to_vec()),
				None => Response::Unavailable(format!("no update {}", hex::encode(hash))),
			},
			Request::UpdatePiece { hash, index, with_hashes, .. } => {
				let whole = self.updates.get(&hash).map(|(_, b)| b.as_slice());
				self.pieces.answer(&hash, index, with_hashes, whole).unwrap_or_else(|| {
					Response::Unavailable(format!(
						"no piece {index} of update {}",
						hex::encode(hash)
					))
				})
			}
			Request::State { .. } => match self.states.last() {
				Some((state, _)) => {
					state.header(self.recent.get(&state.round).cloned().unwrap_or_default())
				}
				None => Response::Unavailable("no state yet".into()),
			},
			Request::StatePiece { state_hash, index, .. } => {
				match self.states.iter().find(|(s, _)| s.state_hash == state_hash) {
					Some((state, bytes)) => match state.piece(index) {
						Some(range) => match bytes.range(state.size(), range) {
							Ok(piece) => Response::StatePiece(piece),
							Err(why) => {
								tracing::warn!("serving a piece of the state: {why}");
								Response::Unavailable(why)
							}
						},
						None => Response::Unavailable(format!("no piece {index} of that state")),
					},
					None => Response::Unavailable(format!(
						"state {} is no longer served",
						hex::encode(state_hash)
					)),
				}
			}
			Request::WorkState { id, index, .. } => match self.work_states.get(&id) {
				// A piece of at most a few MiB, read from the page cache or the disk in the
				// loop: no answer waits on a whole state.
				Some((_, bytes)) => match bytes.piece(index) {
					Ok((total, piece)) => Response::WorkState { total, piece },
					Err(why) => Response::Unavailable(why),
				},
				None => Response::Unavailable(format!("no work state {}", hex::encode(id))),
			},
			Request::Commitments { round, .. } => {
				Response::Commitments(self.recent.get(&round).cloned().unwrap_or_default())
			}
		}
	}
}

/// A short counter key from an error message (its text up to the first colon).
fn reason_key(message: &str) -> String {
	message.split(':').next().unwrap_or(message).trim().to_string()
}
