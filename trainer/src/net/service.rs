//! The network service's typed side: its configuration, the commands the training loop
//! sends and the events it gets back, the proof link, the counters, and `start`, which
//! builds the transport and swarm and spawns the network task (`task.rs`).

use std::{
	collections::{BTreeMap, BTreeSet},
	sync::{mpsc, Arc, Mutex},
	time::{Duration, Instant},
};

use grid_primitives::job::{JobId, RoundIndex};
use libp2p::{
	core::{muxing::StreamMuxerBox, transport::Boxed, upgrade},
	gossipsub::IdentTopic,
	identity::Keypair,
	noise, tcp, yamux, Multiaddr, PeerId, Swarm, Transport,
};
use tokio::sync::mpsc as tokio_mpsc;

use crate::round::{
	announcement::Announcement,
	messages::{Digest, Request, Response, SignedCommitment},
	roster::Roster,
	state_transfer::ServedState,
	update_pieces::PieceHashes,
	witness::SignedAttestation,
};

use super::{
	behaviour::{Behaviour, BehaviourConfig},
	shaper::Shaper,
	task::Task,
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
	/// What this trainer serves of datasets to peers (none: nothing).
	pub datasets: Option<Arc<dyn super::data::DatasetServer>>,
	/// The genesis hash of the chain whose providers sign the job's contribution proofs: a
	/// gossiped proof whose signature does not verify is refused (not relayed, not passed
	/// on). None (a job off chain, where no proofs are gossiped): shape and job only.
	pub proof_genesis: Option<Digest>,
}

impl NetConfig {
	/// The chain commitments must name ([`crate::round::messages::Commitment::chain`]): the
	/// genesis hash, zero for a job off chain.
	pub fn chain(&self) -> Digest {
		self.proof_genesis.unwrap_or_default()
	}
}

/// What the network task is told to do.
#[derive(Debug)]
pub enum Command {
	/// Announce a signed commitment, with its update when small, on the job's topic
	/// (retried until a peer hears it).
	Publish(Box<Announcement>),
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
		/// Its pieces' hashes (computed where it was sealed or checked, not on the network
		/// task).
		hashes: PieceHashes,
	},
	/// Serve piece `index` of the update `hash` (fetched and checked; the update is not
	/// whole here yet), and answer the requests for it that wait.
	ServePiece {
		/// The update's content address.
		hash: Digest,
		/// Its round (for forgetting).
		round: RoundIndex,
		/// Which piece.
		index: u32,
		/// Every piece's hash (sent with the piece to a fetcher that asks for them).
		hashes: PieceHashes,
		/// The piece.
		piece: Vec<u8>,
	},
	/// This trainer will not get piece `index` of the update `hash` (its keeper and its
	/// committer failed it): the requests waiting here for it are refused, so their
	/// senders ask the committer at once.
	RefusePiece {
		/// The update's content address.
		hash: Digest,
		/// Which piece.
		index: u32,
	},
	/// Serve this global state to joiners (in pieces; the previous one stays served too,
	/// so a fetch that began before a round ended can finish).
	ServeState {
		/// Its header and pieces' hashes.
		state: Arc<ServedState>,
		/// Its checkpoint's bytes.
		bytes: super::StoredBytes,
	},
	/// Serve the state of `state_hash`, if it is still served, from `bytes` from now on
	/// (its checkpoint file, once written: the memory goes).
	StateStored {
		/// Which state.
		state_hash: Digest,
		/// The same bytes, elsewhere.
		bytes: super::StoredBytes,
	},
	/// Stop serving updates of rounds before this one.
	Forget(RoundIndex),
	/// Serve this trainer's committed work state of `round` under `id`, in pieces.
	ServeWorkState {
		/// Its [`crate::round::messages::Commitment::start`] id.
		id: Digest,
		/// The round it is the start state of.
		round: RoundIndex,
		/// Where the encoded state is.
		bytes: super::StoredBytes,
	},
	/// Stop serving work states of rounds before this one.
	ForgetWorkStates(RoundIndex),
	/// Close the connections to a peer.
	Disconnect(PeerId),
	/// Announce a signed contribution proof (SCALE bytes) on the job's proofs topic.
	PublishProof(Vec<u8>),
	/// Announce which of a round's updates this trainer holds, on the attestations topic.
	Attest(SignedAttestation),
	/// Take commitments, attestations and piece requests only from these signers (the open
	/// round's members and the round before's); what was remembered of others goes.
	Roster(Roster),
	/// Peers that are no strangers though in no roster: providers registered on chain
	/// ([`crate::round::coordinator::Coordinator::registered`]).
	Registered(BTreeSet<PeerId>),
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
		/// The commitment (boxed: the events stay small).
		signed: Box<SignedCommitment>,
		/// When the network task took it in: whether it came before the round's
		/// collection deadline is judged by this, not by when the round loop got to it.
		heard: Instant,
		/// The update, when it came with the commitment (checked against it).
		update: Option<Vec<u8>>,
	},
	/// A valid attestation, signed by `signer`, for this job.
	Attestation {
		/// Who signed it.
		signer: PeerId,
		/// The attestation.
		signed: SignedAttestation,
	},
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
	/// Bytes of this trainer's updates sent with their commitments, times the peers
	/// subscribed when each was published (gossip's forwards of other trainers' are not
	/// counted).
	pub inline_bytes_sent: u64,
	/// Bytes of other trainers' updates that came with their commitments (each once:
	/// duplicates gossip drops before they are checked are not counted).
	pub inline_bytes_heard: u64,
}

/// The training loop's side of the network.
pub struct NetworkHandle {
	/// This trainer's peer id.
	pub local_peer_id: PeerId,
	commands: tokio_mpsc::UnboundedSender<Command>,
	/// Events from the network task.
	pub events: mpsc::Receiver<Event>,
	stats: Arc<Mutex<NetStats>>,
	proof_link: Option<ProofLink>,
}

/// Proofs heard on this job's proofs topic waiting to be taken; beyond this, new ones are
/// dropped (nobody relays them, or the relay fell behind).
const HEARD_PROOFS: usize = 1024;

/// The job's proof gossip, apart from the training exchange: whoever relays proofs between
/// the chain and the peers holds it.
pub struct ProofLink {
	commands: tokio_mpsc::UnboundedSender<Command>,
	/// Contribution proofs peers relayed for this job (shape and job checked; the
	/// signature is not).
	pub heard: mpsc::Receiver<Vec<u8>>,
}

impl ProofLink {
	/// Announces a signed contribution proof (SCALE bytes) on the job's proofs topic.
	pub fn publish(&self, proof: Vec<u8>) {
		let _ = self.commands.send(Command::PublishProof(proof));
	}
}

/// A sender of commands to the network task, for a thread beside the round loop.
#[derive(Clone)]
pub struct Commander(tokio_mpsc::UnboundedSender<Command>);

impl Commander {
	/// Sends a command (ignored once the network task has stopped).
	pub fn send(&self, command: Command) {
		let _ = self.0.send(command);
	}

	/// A commander whose commands land in the returned receiver (tests of its users).
	#[cfg(test)]
	pub(crate) fn channel() -> (Self, tokio_mpsc::UnboundedReceiver<Command>) {
		let (sender, receiver) = tokio_mpsc::unbounded_channel();
		(Commander(sender), receiver)
	}
}

impl NetworkHandle {
	/// A sender of commands for another thread.
	pub fn commander(&self) -> Commander {
		Commander(self.commands.clone())
	}

	/// Sends a command (ignored once the network task has stopped, which only happens when
	/// the runtime shuts down).
	pub fn send(&self, command: Command) {
		let _ = self.commands.send(command);
	}

	/// The job's proof gossip (taken once).
	pub fn take_proof_link(&mut self) -> Option<ProofLink> {
		self.proof_link.take()
	}

	/// A copy of the counters.
	pub fn stats(&self) -> NetStats {
		self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone()
	}
}

/// TCP, noise and yamux, each connection shaped by `shaper` once its peer is known.
pub(crate) fn transport(
	key: &Keypair,
	shaper: Shaper,
) -> Result<Boxed<(PeerId, StreamMuxerBox)>, String> {
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
	let attestation_topic = IdentTopic::new(format!("grid/job/{}/attestations", config.job));
	for t in [&topic, &proof_topic, &attestation_topic] {
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
	let (proofs, heard) = mpsc::sync_channel(HEARD_PROOFS);
	let stats = Arc::new(Mutex::new(NetStats::default()));
	let topics = [topic, proof_topic, attestation_topic];
	let task = Task::new(swarm, topics, config, event_tx, proofs, stats.clone());
	runtime.spawn(task.run(command_rx));
	let proof_link = Some(ProofLink { commands: commands.clone(), heard });
	Ok(NetworkHandle { local_peer_id, commands, events, stats, proof_link })
}

#[cfg(test)]
mod tests {
	use std::time::{Duration, Instant};

	use codec::{Decode, Encode};
	use futures::StreamExt;
	use grid_primitives::job::{proof_payload, SignedProof};
	use subxt_signer::sr25519::{dev, Keypair};

	use super::*;
	use crate::net::{
		behaviour::MAX_CONNECTIONS_PER_PEER, strangers::MAX_STRANGER_CONNECTIONS, test_service,
	};

	const GENESIS: Digest = [6; 32];

	/// A proof of round `round` of job 1 naming `provider`, signed by `signer`.
	fn proof(round: RoundIndex, provider: &Keypair, signer: &Keypair) -> Vec<u8> {
		let mut signed = crate::round::messages::proof_tests::proof(1);
		signed.proof.round = round;
		signed.proof.provider = provider.public_key().0;
		signed.signature = signer.sign(&proof_payload(&GENESIS, &signed.proof)).0;
		signed.encode()
	}

	#[test]
	fn a_forged_proof_is_refused_and_not_passed_on_while_a_signed_one_is() {
		let deadline = Instant::now() + Duration::from_secs(90);
		let left = || deadline.saturating_duration_since(Instant::now());
		let (runtime, mut forger, addr) = listening_trainer(deadline);
		let address = addr.with(libp2p::multiaddr::Protocol::P2p(forger.local_peer_id));
		let mut honest = test_service(&runtime, vec![address], 1 << 20, Some(GENESIS));
		let forger_link = forger.take_proof_link().unwrap();
		let heard = honest.take_proof_link().unwrap().heard;
		// Eve's proof claiming Bob's round, then one Bob signed (relayed by the same peer).
		forger_link.publish(proof(7, &dev::bob(), &dev::eve()));
		forger_link.publish(proof(8, &dev::bob(), &dev::bob()));
		let first = heard.recv_timeout(left()).expect("the signed proof is passed on");
		let signed = SignedProof::<[u8; 32]>::decode(&mut &first[..]).unwrap();
		assert_eq!(signed.proof.round, 8, "only the signed proof is passed on");
		let why = format!(
			"proof: proof signature does not verify for provider 0x{}",
			hex::encode(dev::bob().public_key().0)
		);
		// The two may arrive in either order: wait for the forgery's refusal.
		while !honest.stats().rejected.keys().any(|k| k.starts_with(&why)) {
			assert!(!left().is_zero(), "the forged proof was never refused");
			std::thread::sleep(Duration::from_millis(50));
		}
		assert!(heard.try_recv().is_err(), "nothing else was heard");
	}

	/// A swarm of `key` with `behaviour` that keeps whatever connections it gets (a
	/// stranger's, or a member's without the trainer's protocols).
	fn swarm_of<B: libp2p::swarm::NetworkBehaviour>(
		key: &libp2p::identity::Keypair,
		behaviour: B,
	) -> Swarm<B> {
		let transport = transport(key, Shaper::default()).unwrap();
		let config = libp2p::swarm::Config::with_tokio_executor()
			.with_idle_connection_timeout(Duration::from_secs(300));
		Swarm::new(transport, behaviour, key.public().to_peer_id(), config)
	}

	fn bare_swarm(key: &libp2p::identity::Keypair) -> Swarm<libp2p::swarm::dummy::Behaviour> {
		swarm_of(key, libp2p::swarm::dummy::Behaviour)
	}

	/// A runtime and a trainer on it, with the address it listens on.
	fn listening_trainer(deadline: Instant) -> (tokio::runtime::Runtime, NetworkHandle, Multiaddr) {
		let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
		let trainer = test_service(&runtime, Vec::new(), 1 << 20, None);
		loop {
			let left = deadline.saturating_duration_since(Instant::now());
			if let Ok(Event::Listening(addr)) = trainer.events.recv_timeout(left) {
				return (runtime, trainer, addr);
			}
			assert!(Instant::now() < deadline, "the trainer never listened");
		}
	}

	/// A stranger dials a trainer four times at once, keeping every connection it gets: it
	/// keeps two, and the trainer refuses the rest (one peer opening connections without end
	/// took streams and buffers with each).
	#[test]
	fn a_peer_keeps_at_most_two_connections_with_a_trainer() {
		use libp2p::swarm::{
			dial_opts::{DialOpts, PeerCondition},
			SwarmEvent,
		};
		let deadline = Instant::now() + Duration::from_secs(90);
		let left = || deadline.saturating_duration_since(Instant::now());
		let (runtime, trainer, addr) = listening_trainer(deadline);
		let target = trainer.local_peer_id;
		let key = libp2p::identity::Keypair::generate_ed25519();
		let (resolved, open) = runtime.block_on(async move {
			let mut stranger = bare_swarm(&key);
			for _ in 0..4 {
				let dial = DialOpts::peer_id(target)
					.addresses(vec![addr.clone()])
					.condition(PeerCondition::Always)
					.build();
				stranger.dial(dial).unwrap();
			}
			// Each dial ends established or refused; a connection the trainer refused after
			// the handshake closes.
			let (mut resolved, mut open) = (0, 0i32);
			while !(resolved == 4 && open == MAX_CONNECTIONS_PER_PEER as i32) {
				let next = tokio::time::timeout(left(), stranger.select_next_some()).await;
				match next {
					Err(_) => break,
					Ok(SwarmEvent::ConnectionEstablished { .. }) => {
						(resolved, open) = (resolved + 1, open + 1)
					}
					Ok(SwarmEvent::OutgoingConnectionError { .. }) => resolved += 1,
					Ok(SwarmEvent::ConnectionClosed { .. }) => open -= 1,
					Ok(_) => {}
				}
			}
			(resolved, open)
		});
		assert_eq!((resolved, open), (4, MAX_CONNECTIONS_PER_PEER as i32));
	}

	/// Keys are free: many of them connect to a trainer whose round has a roster. Strangers
	/// hold at most [`MAX_STRANGER_CONNECTIONS`] connections with it, the rest are refused
	/// after their handshake (and counted), and a member still gets in, and so does a
	/// registered provider outside the roster (a joiner).
	#[test]
	fn many_keys_hold_a_bounded_number_of_connections_and_a_member_still_gets_in() {
		use std::collections::HashSet;

		let deadline = Instant::now() + Duration::from_secs(90);
		let left = || deadline.saturating_duration_since(Instant::now());
		let (runtime, trainer, addr) = listening_trainer(deadline);
		let address = addr.with(libp2p::multiaddr::Protocol::P2p(trainer.local_peer_id));
		let member_key = libp2p::identity::Keypair::generate_ed25519();
		let member = member_key.public().to_peer_id();
		trainer.send(Command::Roster(Roster::Members([member].into())));
		// Each key dials once and keeps what it gets for the rest of the test.
		let hold = |key: libp2p::identity::Keypair| {
			let address = address.clone();
			runtime.spawn(async move {
				let mut swarm = bare_swarm(&key);
				swarm.dial(address).unwrap();
				loop {
					swarm.select_next_some().await;
				}
			})
		};
		let extra = 3;
		let strangers = MAX_STRANGER_CONNECTIONS + extra;
		let _held: Vec<_> =
			(0..strangers).map(|_| hold(libp2p::identity::Keypair::generate_ed25519())).collect();
		let refused = || {
			let key = crate::net::task::STRANGER_REFUSED;
			trainer.stats().rejected.get(key).copied().unwrap_or(0) as usize
		};
		let (mut live, mut most) = (HashSet::new(), 0);
		while !(live.len() == MAX_STRANGER_CONNECTIONS && refused() == extra) {
			assert!(!left().is_zero(), "{} strangers held, {} refused", live.len(), refused());
			match trainer.events.recv_timeout(Duration::from_millis(100)) {
				Ok(Event::Connected(peer)) => {
					live.insert(peer);
				}
				Ok(Event::Disconnected(peer)) => {
					live.remove(&peer);
				}
				_ => {}
			}
			most = most.max(live.len());
		}
		assert_eq!(most, MAX_STRANGER_CONNECTIONS, "strangers never held more");
		let joiner_key = libp2p::identity::Keypair::generate_ed25519();
		let joiner = joiner_key.public().to_peer_id();
		trainer.send(Command::Registered([joiner].into()));
		let _member = hold(member_key);
		let _joiner = hold(joiner_key);
		let mut welcome = HashSet::new();
		while welcome.len() < 2 {
			assert!(!left().is_zero(), "only {welcome:?} got in of the member and the joiner");
			if let Ok(Event::Connected(peer)) = trainer.events.recv_timeout(left()) {
				welcome.insert(peer);
			}
		}
		assert_eq!(welcome, [member, joiner].into(), "only they got in");
		assert_eq!(refused(), extra, "neither was refused");
	}

	/// Grid's DHT finds peers only: a record a stranger puts on a trainer is dropped (and
	/// counted), not kept, so free keys cannot fill a trainer's memory with records (before,
	/// up to 1,024 of up to 16 KiB each were stored as they came).
	#[test]
	fn a_record_a_stranger_puts_in_the_dht_is_not_kept() {
		use libp2p::{
			kad::{self, store::MemoryStore},
			swarm::SwarmEvent,
		};

		use crate::net::{behaviour::KAD_PROTOCOL, task::DHT_RECORD_DROPPED};
		let deadline = Instant::now() + Duration::from_secs(90);
		let left = || deadline.saturating_duration_since(Instant::now());
		let (runtime, trainer, addr) = listening_trainer(deadline);
		let target = trainer.local_peer_id;
		let key = libp2p::identity::Keypair::generate_ed25519();
		let found = runtime.block_on(async move {
			let peer = key.public().to_peer_id();
			let config = kad::Config::new(KAD_PROTOCOL);
			let mut kad = kad::Behaviour::with_config(peer, MemoryStore::new(peer), config);
			kad.set_mode(Some(kad::Mode::Server));
			kad.add_address(&target, addr);
			let mut stranger = swarm_of(&key, kad);
			let name = kad::RecordKey::new(&"junk");
			// Under kad's largest message (16 KiB): a larger one never leaves the stranger.
			let record = kad::Record::new(name.clone(), vec![7; 8_000]);
			stranger.behaviour_mut().put_record_to(
				record,
				std::iter::once(target),
				kad::Quorum::One,
			);
			// Once the put ends (the trainer answers it as the protocol asks), ask for it back.
			let mut found = false;
			loop {
				let next = tokio::time::timeout(left(), stranger.select_next_some()).await;
				let SwarmEvent::Behaviour(kad::Event::OutboundQueryProgressed {
					result, step, ..
				}) = next.expect("the stranger's DHT queries end")
				else {
					continue;
				};
				match result {
					kad::QueryResult::PutRecord(put) => {
						put.expect("the trainer answers a put as kad asks (and keeps nothing)");
						stranger.behaviour_mut().get_record(name.clone());
					}
					kad::QueryResult::GetRecord(got) => {
						found |= matches!(got, Ok(kad::GetRecordOk::FoundRecord(_)));
						if step.last {
							return found;
						}
					}
					_ => {}
				}
			}
		});
		assert!(!found, "the trainer gave the stranger's record back");
		let dropped = trainer.stats().rejected.get(DHT_RECORD_DROPPED).copied();
		assert_eq!(dropped, Some(1), "the put was counted once");
	}
}
