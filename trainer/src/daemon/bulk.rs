//! The plain bulk lane of the dataset protocol: chunk bytes over a bare TCP connection that a
//! holder's [`Ticket`] (asked for on the encrypted libp2p stream) opens.
//!
//! Why a lane without encryption: every chunk is checked against the manifest, whose hash is
//! the job's reference, whatever carried it, so the channel adds no integrity; and a dataset
//! goes to every provider who asks, so encryption hides it only from observers on the path.
//! Noise's ChaCha20-Poly1305 and the stream's copies were most of both ends' CPU in
//! `bench/datasets.sh` (the encrypted fetch ran at 0.48x curl on loopback). A publisher that
//! wants its data encrypted in transit serves with `--encrypted-only` and hands out no
//! tickets; a fetcher falls back to the libp2p stream whenever a lane is refused, cannot
//! connect or breaks.
//!
//! Wire format. The fetcher connects to the IP address of its libp2p connection to the holder
//! (never one the holder names, so a holder cannot aim fetchers at a third host) at the port
//! of the ticket's answer, and sends the 32 ticket bytes. Then it asks for chunks, 8 bytes
//! each (file, chunk: u32 little-endian). The holder answers every ask, in any order, with a
//! 13-byte header (kind: 0 chunk, 1 missing; file, chunk, length: u32 little-endian) and, for
//! a chunk, its bytes.
//!
//! The holder serves a ticket once, for one dataset, within [`TICKET_TTL`]; asks beyond
//! [`CONNECTION_ASKS`] unanswered wait; a connection is closed after [`IDLE`] without an ask
//! or with an answer it does not take. So at most [`MAX_CONNECTIONS`] x [`CONNECTION_ASKS`]
//! chunks (256 MiB) are read for lanes at once, however many peers ask. What the lane asks
//! for is read and sent by the data node in the asking peer's turn, under its upload cap,
//! exactly like the stream's answers.

use std::{
	collections::{HashMap, HashSet},
	net::{IpAddr, SocketAddr},
	sync::{Arc, Mutex},
	time::{Duration, Instant},
};

use grid_primitives::manifest::CHUNK_BYTES;
use libp2p::PeerId;
use polkadot_sdk::sp_core::H256;
use tokio::{
	io::{AsyncReadExt, AsyncWriteExt},
	net::{
		tcp::{OwnedReadHalf, OwnedWriteHalf},
		TcpListener, TcpStream,
	},
	sync::{mpsc, Semaphore},
};

use crate::{
	data::store::ChunkId,
	error::{Error, Result},
	net::data::Ticket,
};

/// How long a ticket waits for its connection.
pub const TICKET_TTL: Duration = Duration::from_secs(30);
/// Tickets a holder keeps outstanding at most; beyond, it answers `Missing` (the asker then
/// fetches over the stream).
const MAX_TICKETS: usize = 256;
/// Lane connections a holder serves at once; more are closed at once (their fetchers ask
/// over the stream).
const MAX_CONNECTIONS: usize = 32;
/// Asks a connection may have unanswered (a fetcher keeps 8 in flight over all holders); its
/// reader waits beyond.
pub const CONNECTION_ASKS: usize = 8;
/// How long a connection has to send its ticket, and a fetcher to connect.
const HELLO: Duration = Duration::from_secs(10);
/// How long a holder keeps a lane open without an ask, or waits for an answer to be taken.
pub const IDLE: Duration = Duration::from_secs(120);
/// What a holder's lane allows: connections at once, and how long one may idle.
#[derive(Clone, Copy)]
struct Limits {
	connections: usize,
	idle: Duration,
}

const LIMITS: Limits = Limits { connections: MAX_CONNECTIONS, idle: IDLE };

/// How long a fetcher waits for the next answer (as long as a stream request may take), so
/// a holder that stops answering loses its lane before the fetch would give up.
pub const ANSWER_WAIT: Duration = Duration::from_secs(60);

const ASK_BYTES: usize = 8;
const HEADER_BYTES: usize = 13;
const KIND_CHUNK: u8 = 0;
const KIND_MISSING: u8 = 1;

/// A chunk a lane asked for, handed to the data node to read and send in its turn.
pub struct BulkAsk {
	/// Who holds the ticket (the libp2p peer that asked for it).
	pub peer: PeerId,
	pub dataset: H256,
	pub id: ChunkId,
	/// Where the answer goes: the chunk's bytes, or none when the node does not have it.
	pub reply: mpsc::UnboundedSender<(ChunkId, Option<Vec<u8>>)>,
}

/// Who may use a ticket, for what, until when.
struct Pass {
	peer: PeerId,
	dataset: H256,
	until: Instant,
}

/// A holder's lane: its listener (served on its own task) and the tickets it has handed out.
pub struct BulkServer {
	port: u16,
	tickets: Arc<Mutex<HashMap<Ticket, Pass>>>,
}

impl BulkServer {
	/// Listens on `ip` (a port the system picks) and hands the chunks asked over it to `asks`
	/// (call inside a Tokio runtime).
	pub fn start(ip: IpAddr, asks: mpsc::Sender<BulkAsk>) -> Result<Self> {
		Self::start_with(ip, asks, LIMITS)
	}

	fn start_with(ip: IpAddr, asks: mpsc::Sender<BulkAsk>, limits: Limits) -> Result<Self> {
		let at = SocketAddr::new(ip, 0);
		let listener = std::net::TcpListener::bind(at)
			.and_then(|l| l.set_nonblocking(true).map(|()| l))
			.and_then(TcpListener::from_std)
			.map_err(|e| Error::Network(format!("bulk lane: listening on {at}: {e}")))?;
		let port = listener
			.local_addr()
			.map_err(|e| Error::Network(format!("bulk lane: its address: {e}")))?
			.port();
		let tickets = Arc::new(Mutex::new(HashMap::new()));
		tokio::spawn(accept(listener, tickets.clone(), asks, limits));
		Ok(BulkServer { port, tickets })
	}

	/// The port the lane listens on.
	pub fn port(&self) -> u16 {
		self.port
	}

	/// A new ticket for `peer` to fetch chunks of `dataset`; none while [`MAX_TICKETS`] are
	/// outstanding (or the system gives no randomness).
	pub fn ticket(&self, peer: PeerId, dataset: H256) -> Option<Ticket> {
		let mut bytes = [0u8; 32];
		getrandom::getrandom(&mut bytes).ok()?;
		let ticket = Ticket(bytes);
		let mut tickets = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
		let now = Instant::now();
		tickets.retain(|_, pass| pass.until > now);
		if tickets.len() >= MAX_TICKETS {
			return None;
		}
		tickets.insert(ticket, Pass { peer, dataset, until: now + TICKET_TTL });
		Some(ticket)
	}
}

/// Accepts lane connections while the process lives, `limits.connections` at once.
async fn accept(
	listener: TcpListener,
	tickets: Arc<Mutex<HashMap<Ticket, Pass>>>,
	asks: mpsc::Sender<BulkAsk>,
	limits: Limits,
) {
	let open = Arc::new(Semaphore::new(limits.connections));
	loop {
		let (stream, from) = match listener.accept().await {
			Ok(accepted) => accepted,
			Err(e) => {
				tracing::debug!("bulk lane: accepting: {e}");
				tokio::time::sleep(Duration::from_millis(100)).await;
				continue;
			}
		};
		let Ok(permit) = open.clone().try_acquire_owned() else {
			tracing::debug!("bulk lane: {from} refused, {} connections open", limits.connections);
			continue;
		};
		let (tickets, asks) = (tickets.clone(), asks.clone());
		tokio::spawn(async move {
			if let Err(e) = serve(stream, &tickets, asks, limits.idle).await {
				tracing::debug!("bulk lane from {from}: {e}");
			}
			drop(permit);
		});
	}
}

/// Serves one connection: its ticket first, then its asks until it closes or goes idle.
async fn serve(
	stream: TcpStream,
	tickets: &Mutex<HashMap<Ticket, Pass>>,
	asks: mpsc::Sender<BulkAsk>,
	idle: Duration,
) -> std::result::Result<(), String> {
	let _ = stream.set_nodelay(true);
	let (mut read, write) = stream.into_split();
	let mut bytes = [0u8; 32];
	tokio::time::timeout(HELLO, read.read_exact(&mut bytes))
		.await
		.map_err(|_| format!("no ticket within {}s", HELLO.as_secs()))?
		.map_err(|e| format!("reading the ticket: {e}"))?;
	let pass = {
		let mut tickets = tickets.lock().unwrap_or_else(|e| e.into_inner());
		tickets.remove(&Ticket(bytes))
	};
	let pass = match pass {
		Some(pass) if pass.until > Instant::now() => pass,
		_ => return Err("an unknown, used or expired ticket".into()),
	};
	let (reply, replies) = mpsc::unbounded_channel();
	let room = Arc::new(Semaphore::new(CONNECTION_ASKS));
	let answering = tokio::spawn(answer(write, replies, room.clone(), idle));
	let reading = read_asks(read, &pass, reply, asks, &room, idle).await;
	// The answers already asked for are still sent (the reply channel closes after them).
	let answered = answering.await.map_err(|e| format!("answering: {e}"))?;
	reading.and(answered)
}

/// Reads asks and hands them to the node, while fewer than [`CONNECTION_ASKS`] wait.
async fn read_asks(
	mut read: OwnedReadHalf,
	pass: &Pass,
	reply: mpsc::UnboundedSender<(ChunkId, Option<Vec<u8>>)>,
	asks: mpsc::Sender<BulkAsk>,
	room: &Semaphore,
	idle: Duration,
) -> std::result::Result<(), String> {
	loop {
		room.acquire().await.map_err(|_| "its answers stopped".to_string())?.forget();
		let mut ask = [0u8; ASK_BYTES];
		match tokio::time::timeout(idle, read.read_exact(&mut ask)).await {
			Err(_) => return Err(format!("no ask for {}s", idle.as_secs())),
			Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
			Ok(Err(e)) => return Err(format!("reading an ask: {e}")),
			Ok(Ok(_)) => {}
		}
		let id = ChunkId { file: u32_at(&ask, 0), chunk: u32_at(&ask, 4) };
		let ask = BulkAsk { peer: pass.peer, dataset: pass.dataset, id, reply: reply.clone() };
		asks.send(ask).await.map_err(|_| "the data node stopped".to_string())?;
	}
}

/// Writes the node's answers as they come, making room for one more ask after each. When it
/// ends (a fetcher that takes no answer for `idle` included), the reader's room closes, so
/// the connection ends.
async fn answer(
	mut write: OwnedWriteHalf,
	mut replies: mpsc::UnboundedReceiver<(ChunkId, Option<Vec<u8>>)>,
	room: Arc<Semaphore>,
	idle: Duration,
) -> std::result::Result<(), String> {
	let written = async {
		while let Some((id, bytes)) = replies.recv().await {
			let (kind, body) = match &bytes {
				Some(bytes) => (KIND_CHUNK, bytes.as_slice()),
				None => (KIND_MISSING, &[][..]),
			};
			let header = header(kind, id, body.len() as u32);
			match tokio::time::timeout(idle, write_frame(&mut write, &header, body)).await {
				Ok(Ok(())) => room.add_permits(1),
				Ok(Err(e)) => return Err(format!("sending {id:?}: {e}")),
				Err(_) => return Err(format!("{id:?} not taken in {}s", idle.as_secs())),
			}
		}
		Ok(())
	}
	.await;
	room.close();
	written
}

/// Writes `header` then `body` with vectored writes: one segment for a small answer, and no
/// copy of the body to join them.
async fn write_frame(
	write: &mut OwnedWriteHalf,
	header: &[u8],
	body: &[u8],
) -> std::io::Result<()> {
	let mut sent = 0;
	while sent < header.len() + body.len() {
		let n = match header.get(sent..).filter(|rest| !rest.is_empty()) {
			Some(rest) => {
				let parts = [std::io::IoSlice::new(rest), std::io::IoSlice::new(body)];
				write.write_vectored(&parts).await?
			}
			None => write.write(&body[sent - header.len()..]).await?,
		};
		if n == 0 {
			return Err(std::io::ErrorKind::WriteZero.into());
		}
		sent += n;
	}
	Ok(())
}

fn header(kind: u8, id: ChunkId, len: u32) -> [u8; HEADER_BYTES] {
	let mut header = [0u8; HEADER_BYTES];
	header[0] = kind;
	header[1..5].copy_from_slice(&id.file.to_le_bytes());
	header[5..9].copy_from_slice(&id.chunk.to_le_bytes());
	header[9..13].copy_from_slice(&len.to_le_bytes());
	header
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
	u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

/// What a fetcher's lane reports to its fetch.
#[derive(Debug)]
pub enum LaneEvent {
	/// The answer to an ask: the chunk's bytes (not checked yet), or none when the holder
	/// lacks it.
	Answer { holder: usize, id: ChunkId, bytes: Option<Vec<u8>> },
	/// The lane broke or the holder broke its rules; its unanswered asks are lost.
	Down { holder: usize, why: String },
}

/// The fetching side of a lane to one holder: asks go out on it, answers come back on the
/// fetch's channel, tagged with the holder's index.
pub struct BulkLane {
	asks: mpsc::UnboundedSender<ChunkId>,
}

impl BulkLane {
	/// Connects to the lane at `at` with `ticket`; the lane then runs on its own task until
	/// it is dropped or breaks.
	pub async fn open(
		holder: usize,
		at: SocketAddr,
		ticket: Ticket,
		events: mpsc::UnboundedSender<LaneEvent>,
	) -> std::result::Result<Self, String> {
		let mut stream = tokio::time::timeout(HELLO, TcpStream::connect(at))
			.await
			.map_err(|_| format!("connecting to {at}: no answer within {}s", HELLO.as_secs()))?
			.map_err(|e| format!("connecting to {at}: {e}"))?;
		let _ = stream.set_nodelay(true);
		stream.write_all(&ticket.0).await.map_err(|e| format!("sending the ticket: {e}"))?;
		let (asks, queued) = mpsc::unbounded_channel();
		tokio::spawn(async move {
			if let Err(why) = run_lane(stream, queued, holder, &events).await {
				let _ = events.send(LaneEvent::Down { holder, why });
			}
		});
		Ok(BulkLane { asks })
	}

	/// Asks for chunk `id`; false when the lane is gone (ask over the stream instead).
	pub fn ask(&self, id: ChunkId) -> bool {
		self.asks.send(id).is_ok()
	}
}

/// Sends the queued asks and reads the answers until the fetch drops the lane (Ok) or the
/// lane breaks (the reason).
async fn run_lane(
	stream: TcpStream,
	mut queued: mpsc::UnboundedReceiver<ChunkId>,
	holder: usize,
	events: &mpsc::UnboundedSender<LaneEvent>,
) -> std::result::Result<(), String> {
	let (mut read, mut write) = stream.into_split();
	let asked = Mutex::new(HashSet::new());
	let sending = async {
		while let Some(id) = queued.recv().await {
			asked.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
			let mut ask = [0u8; ASK_BYTES];
			ask[..4].copy_from_slice(&id.file.to_le_bytes());
			ask[4..].copy_from_slice(&id.chunk.to_le_bytes());
			write.write_all(&ask).await.map_err(|e| format!("asking for {id:?}: {e}"))?;
		}
		Ok::<(), String>(())
	};
	let receiving = async {
		loop {
			let (id, bytes) = read_answer(&mut read).await?;
			let was_asked = asked.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
			if !was_asked {
				return Err(format!("answered {id:?}, which was not asked for"));
			}
			let _ = events.send(LaneEvent::Answer { holder, id, bytes });
		}
	};
	tokio::select! {
		sent = sending => sent,
		received = receiving => received,
	}
}

/// One answer from the holder, its length bounded by the chunk size.
async fn read_answer(
	read: &mut OwnedReadHalf,
) -> std::result::Result<(ChunkId, Option<Vec<u8>>), String> {
	let mut header = [0u8; HEADER_BYTES];
	match tokio::time::timeout(ANSWER_WAIT, read.read_exact(&mut header)).await {
		Err(_) => return Err(format!("no answer for {}s", ANSWER_WAIT.as_secs())),
		Ok(Err(e)) => return Err(format!("reading an answer: {e}")),
		Ok(Ok(_)) => {}
	}
	let id = ChunkId { file: u32_at(&header, 1), chunk: u32_at(&header, 5) };
	let len = u32_at(&header, 9) as u64;
	match header[0] {
		KIND_MISSING if len == 0 => return Ok((id, None)),
		KIND_MISSING => return Err(format!("a missing {id:?} with {len} bytes")),
		KIND_CHUNK if len > CHUNK_BYTES => {
			return Err(format!("{id:?} of {len} bytes, over the chunk size {CHUNK_BYTES}"))
		}
		KIND_CHUNK => {}
		kind => return Err(format!("an answer of unknown kind {kind}")),
	}
	// Read into reserved room rather than a zeroed buffer: zeroing was a visible share of a
	// fetcher's CPU.
	let mut bytes = Vec::with_capacity(len as usize);
	let got = tokio::time::timeout(ANSWER_WAIT, (&mut *read).take(len).read_to_end(&mut bytes))
		.await
		.map_err(|_| format!("{id:?}: no bytes for {}s", ANSWER_WAIT.as_secs()))?
		.map_err(|e| format!("reading {id:?}: {e}"))?;
	if got as u64 != len {
		return Err(format!("{id:?}: the lane closed after {got} of {len} bytes"));
	}
	Ok((id, Some(bytes)))
}

#[cfg(test)]
mod tests {
	use std::net::Ipv4Addr;

	use tokio::io::AsyncWriteExt;

	use super::*;

	const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

	fn dataset(byte: u8) -> H256 {
		H256::repeat_byte(byte)
	}

	/// A lane server whose node answers every ask with the chunk's ids as bytes, reporting
	/// each ask it sees.
	fn node_answering() -> (BulkServer, mpsc::UnboundedReceiver<(PeerId, H256, ChunkId)>) {
		let (asks, mut arrived) = mpsc::channel::<BulkAsk>(64);
		let (seen, asked) = mpsc::unbounded_channel();
		tokio::spawn(async move {
			while let Some(ask) = arrived.recv().await {
				let _ = seen.send((ask.peer, ask.dataset, ask.id));
				let bytes = [ask.id.file.to_le_bytes(), ask.id.chunk.to_le_bytes()].concat();
				let _ = ask.reply.send((ask.id, (ask.id.chunk != 99).then_some(bytes)));
			}
		});
		(BulkServer::start(LOOPBACK, asks).unwrap(), asked)
	}

	fn at(server: &BulkServer) -> SocketAddr {
		SocketAddr::new(LOOPBACK, server.port())
	}

	async fn next(events: &mut mpsc::UnboundedReceiver<LaneEvent>) -> LaneEvent {
		tokio::time::timeout(Duration::from_secs(30), events.recv())
			.await
			.expect("a lane event within 30 s")
			.expect("the lane's events")
	}

	#[tokio::test]
	async fn a_ticket_opens_one_lane_for_its_holder_and_dataset() {
		let (server, mut asked) = node_answering();
		let peer = PeerId::random();
		let ticket = server.ticket(peer, dataset(1)).unwrap();
		let (events, mut answers) = mpsc::unbounded_channel();
		let lane = BulkLane::open(3, at(&server), ticket, events.clone()).await.unwrap();
		assert!(
			lane.ask(ChunkId { file: 2, chunk: 5 }) && lane.ask(ChunkId { file: 0, chunk: 99 })
		);
		for _ in 0..2 {
			match next(&mut answers).await {
				LaneEvent::Answer { holder: 3, id: ChunkId { file: 2, chunk: 5 }, bytes } => {
					assert_eq!(bytes.unwrap(), [2, 0, 0, 0, 5, 0, 0, 0]);
				}
				LaneEvent::Answer { holder: 3, id: ChunkId { file: 0, chunk: 99 }, bytes } => {
					assert_eq!(bytes, None, "a chunk the node lacks is answered missing");
				}
				other => panic!("unexpected {other:?}"),
			}
		}
		// The node saw the ticket's holder and dataset, whatever the lane's peer is.
		assert_eq!(asked.recv().await.unwrap(), (peer, dataset(1), ChunkId { file: 2, chunk: 5 }));

		// The same ticket again: refused before any ask reaches the node.
		let (events2, mut answers2) = mpsc::unbounded_channel();
		let again = BulkLane::open(4, at(&server), ticket, events2).await.unwrap();
		again.ask(ChunkId { file: 0, chunk: 1 });
		match next(&mut answers2).await {
			LaneEvent::Down { holder: 4, .. } => {}
			other => panic!("a used ticket was served: {other:?}"),
		}
		drop(lane);
		asked.recv().await.unwrap();
		assert!(asked.try_recv().is_err(), "no ask on a used ticket reached the node");
	}

	#[tokio::test]
	async fn guessed_and_expired_tickets_are_refused() {
		let (server, mut asked) = node_answering();
		let (events, mut answers) = mpsc::unbounded_channel();
		let guessed =
			BulkLane::open(0, at(&server), Ticket([7; 32]), events.clone()).await.unwrap();
		guessed.ask(ChunkId { file: 0, chunk: 0 });
		assert!(matches!(next(&mut answers).await, LaneEvent::Down { holder: 0, .. }));

		let ticket = server.ticket(PeerId::random(), dataset(2)).unwrap();
		server.tickets.lock().unwrap().get_mut(&ticket).unwrap().until = Instant::now();
		let late = BulkLane::open(1, at(&server), ticket, events).await.unwrap();
		late.ask(ChunkId { file: 0, chunk: 0 });
		assert!(matches!(next(&mut answers).await, LaneEvent::Down { holder: 1, .. }));
		assert!(asked.try_recv().is_err(), "no ask reached the node");
	}

	#[tokio::test]
	async fn tickets_are_bounded() {
		let (server, _asked) = node_answering();
		for _ in 0..MAX_TICKETS {
			assert!(server.ticket(PeerId::random(), dataset(3)).is_some());
		}
		assert!(server.ticket(PeerId::random(), dataset(3)).is_none(), "one too many");
	}

	#[tokio::test]
	async fn a_fetcher_that_takes_no_answers_loses_its_connection() {
		// A holder with room for one lane connection, answering every ask with a whole chunk.
		let (asks, mut arrived) = mpsc::channel::<BulkAsk>(64);
		tokio::spawn(async move {
			while let Some(ask) = arrived.recv().await {
				let _ = ask.reply.send((ask.id, Some(vec![1; CHUNK_BYTES as usize])));
			}
		});
		let limits = Limits { connections: 1, idle: Duration::from_secs(1) };
		let server = BulkServer::start_with(LOOPBACK, asks, limits).unwrap();
		// The hostile fetcher keeps asking and never reads: the holder's writes stall once
		// the socket buffers are full.
		let ticket = server.ticket(PeerId::random(), dataset(4)).unwrap();
		let mut hostile = TcpStream::connect(at(&server)).await.unwrap();
		hostile.write_all(&ticket.0).await.unwrap();
		let holding = tokio::spawn(async move {
			for chunk in 0..100_000u32 {
				let ask = [0u32.to_le_bytes(), chunk.to_le_bytes()].concat();
				if hostile.write_all(&ask).await.is_err() {
					break;
				}
			}
			// Held open (unread) until the test ends.
			tokio::time::sleep(Duration::from_secs(600)).await;
			drop(hostile);
		});
		// An honest lane gets the only connection once the holder has given up on the
		// hostile one (it would wait forever if a stalled answer held the connection).
		let deadline = Instant::now() + Duration::from_secs(120);
		loop {
			assert!(Instant::now() < deadline, "the hostile connection was never closed");
			let ticket = server.ticket(PeerId::random(), dataset(4)).unwrap();
			let (events, mut answers) = mpsc::unbounded_channel();
			let lane = BulkLane::open(7, at(&server), ticket, events).await.unwrap();
			lane.ask(ChunkId { file: 0, chunk: 1 });
			match next(&mut answers).await {
				LaneEvent::Answer { bytes: Some(bytes), .. } => {
					assert_eq!(bytes.len(), CHUNK_BYTES as usize);
					break;
				}
				_ => tokio::time::sleep(Duration::from_millis(200)).await,
			}
		}
		holding.abort();
	}

	/// A holder's lane that reads the ticket and the first ask, then answers with `answer`
	/// (bytes put on the wire as they are) and closes the lane, or with `then_close` false,
	/// keeps it open so that only what was sent may end it.
	async fn lying_lane(answer: Vec<u8>, then_close: bool) -> SocketAddr {
		let listener = TcpListener::bind((LOOPBACK, 0)).await.unwrap();
		let at = listener.local_addr().unwrap();
		tokio::spawn(async move {
			let (mut stream, _) = listener.accept().await.unwrap();
			let mut hello = [0u8; 32 + ASK_BYTES];
			stream.read_exact(&mut hello).await.unwrap();
			stream.write_all(&answer).await.unwrap();
			if !then_close {
				tokio::time::sleep(Duration::from_secs(60)).await;
			}
		});
		at
	}

	#[tokio::test]
	async fn a_holder_breaking_the_lane_rules_closes_its_lane() {
		let asked = ChunkId { file: 1, chunk: 2 };
		let over = (CHUNK_BYTES + 1) as u32;
		let truncated = [header(KIND_CHUNK, asked, 100).to_vec(), vec![0; 10]].concat();
		let cases = [
			(
				"an answer to what was not asked",
				header(KIND_CHUNK, ChunkId { file: 1, chunk: 3 }, 0).to_vec(),
				"not asked",
			),
			(
				"a chunk over the chunk size",
				header(KIND_CHUNK, asked, over).to_vec(),
				"over the chunk size",
			),
			("an unknown kind", header(7, asked, 0).to_vec(), "unknown kind"),
			("a missing chunk with bytes", header(KIND_MISSING, asked, 4).to_vec(), "missing"),
			("a chunk cut short by closing the lane", truncated, "10 of 100"),
		];
		for (what, answer, says) in cases {
			let then_close = says == "10 of 100";
			let (events, mut answers) = mpsc::unbounded_channel();
			let at = lying_lane(answer, then_close).await;
			let lane = BulkLane::open(5, at, Ticket([1; 32]), events).await.unwrap();
			lane.ask(asked);
			match next(&mut answers).await {
				LaneEvent::Down { holder: 5, why } => assert!(why.contains(says), "{what}: {why}"),
				other => panic!("{what} was taken: {other:?}"),
			}
		}
	}
}
