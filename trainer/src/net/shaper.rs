//! An in-process link shaper: latency, jitter, bandwidth, loss, partitions and disconnects,
//! per peer and changeable while running. `tc netem` is not available on the machines we
//! test on, so the trainer shapes its own connections.
//!
//! Shaping is applied to what a trainer *receives* from each peer, after authentication (so
//! the peer is known): every chunk read from a connection is released to libp2p only at its
//! simulated arrival time. The arrival time of a chunk of `n` bytes is
//! `max(now, link free) + n·8/bandwidth + latency + jitter + loss penalty`, where the link's
//! "free" time is shared by all streams of the peer, so they share its bandwidth. Loss is
//! modelled the way TCP experiences it: each lost 1448-byte segment delays the chunk by one
//! round-trip (a fast retransmit), rather than by dropping bytes a reliable transport would
//! resend anyway. Because each side shapes its own ingress, a link is shaped in both
//! directions when both ends apply the same scenario (they do: every trainer reads the same
//! scenario file and applies the rules that involve it).
//!
//! A trainer's *uplink* is shaped where it sends: every byte it writes, to any peer, waits
//! for one shared wire of `uplink_mbit` (so a trainer that serves its update to 63 members
//! at once sends 63 copies through it, as a home or cloud uplink would make it).

use std::{
	collections::{HashMap, VecDeque},
	io,
	pin::Pin,
	sync::{Arc, Mutex},
	task::{Context, Poll},
	time::Duration,
};

use futures::{AsyncRead, AsyncWrite, Future};
use libp2p::{
	core::muxing::{StreamMuxer, StreamMuxerEvent},
	PeerId,
};
use serde::Deserialize;
use tokio::time::{Instant, Sleep};

use crate::rng::Rng;

/// Most bytes written through a shaped uplink at a time (its pacing step).
const UPLINK_CHUNK: usize = 16 << 10;
/// Bytes per simulated TCP segment (an Ethernet MTU minus headers).
const SEGMENT: usize = 1448;
/// Most bytes a shaped stream buffers ahead of delivery (the simulated bandwidth-delay
/// product); beyond it the real socket applies back-pressure.
const BUFFER_CAP: usize = 8 << 20;

/// The properties of one link, from this trainer's side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
	/// One-way latency in milliseconds (the round trip is twice this).
	#[serde(default)]
	pub latency_ms: f64,
	/// Extra uniform random delay per chunk, up to this many milliseconds.
	#[serde(default)]
	pub jitter_ms: f64,
	/// Bandwidth in Mbit/s (`None`: unlimited).
	#[serde(default)]
	pub bandwidth_mbit: Option<f64>,
	/// Probability that a segment is lost (and retransmitted a round-trip later).
	#[serde(default)]
	pub loss: f64,
	/// No traffic at all: connections are refused and existing ones fail.
	#[serde(default)]
	pub partitioned: bool,
}

impl LinkSpec {
	/// Errors unless every value is in range.
	pub fn validate(&self) -> Result<(), String> {
		let finite_nonneg = |x: f64| x.is_finite() && x >= 0.0;
		if !finite_nonneg(self.latency_ms) || !finite_nonneg(self.jitter_ms) {
			return Err("latency_ms and jitter_ms must be finite and >= 0".into());
		}
		if self.bandwidth_mbit.is_some_and(|b| !(b.is_finite() && b > 0.0)) {
			return Err("bandwidth_mbit must be > 0".into());
		}
		if !(0.0..1.0).contains(&self.loss) {
			return Err("loss must be in [0, 1)".into());
		}
		Ok(())
	}

	fn is_perfect(&self) -> bool {
		self.latency_ms == 0.0
			&& self.jitter_ms == 0.0
			&& self.bandwidth_mbit.is_none()
			&& self.loss == 0.0
			&& !self.partitioned
	}
}

#[derive(Debug)]
struct Link {
	spec: LinkSpec,
	/// When the simulated wire is free again (bandwidth is shared by all streams).
	free_at: Instant,
	/// Bumped by a disconnect: streams opened before fail.
	generation: u64,
}

impl Link {
	fn new(spec: LinkSpec) -> Self {
		Link { spec, free_at: Instant::now(), generation: 0 }
	}
}

/// Gives the link to a peer when nothing was set for it explicitly (a scenario).
pub type Policy = Box<dyn Fn(&PeerId) -> LinkSpec + Send>;

struct State {
	policy: Policy,
	overrides: HashMap<PeerId, LinkSpec>,
	links: HashMap<PeerId, Link>,
	rng: Rng,
	/// This trainer's uplink in Mbit/s (`None`: unlimited) and when its wire is free.
	uplink: Option<(f64, Instant)>,
}

impl State {
	fn resolve(&self, peer: &PeerId) -> LinkSpec {
		self.overrides.get(peer).copied().unwrap_or_else(|| (self.policy)(peer))
	}

	fn link(&mut self, peer: PeerId) -> &mut Link {
		let spec = self.resolve(&peer);
		self.links.entry(peer).or_insert_with(|| Link::new(spec))
	}
}

/// The shaper shared by the transport (which wraps connections) and whoever changes the
/// link properties (the scenario, tests).
#[derive(Clone)]
pub struct Shaper {
	state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Shaper {
	fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
		f.debug_struct("Shaper").field("links", &self.lock().links.len()).finish()
	}
}

impl Default for Shaper {
	fn default() -> Self {
		Self::new(LinkSpec::default())
	}
}

impl Shaper {
	/// A shaper applying `default` to every peer without a specific setting.
	pub fn new(default: LinkSpec) -> Self {
		Shaper {
			state: Arc::new(Mutex::new(State {
				policy: Box::new(move |_| default),
				overrides: HashMap::new(),
				links: HashMap::new(),
				rng: Rng::new(0x5eed),
				uplink: None,
			})),
		}
	}

	fn lock(&self) -> std::sync::MutexGuard<'_, State> {
		// A panic while holding the lock cannot leave the plain data inconsistent.
		self.state.lock().unwrap_or_else(|p| p.into_inner())
	}

	/// Limits what this trainer sends, to all peers together, to `mbit` (`None`: no limit).
	pub fn set_uplink(&self, mbit: Option<f64>) {
		let mut state = self.lock();
		let free_at = state.uplink.map_or_else(Instant::now, |(_, at)| at);
		state.uplink = mbit.map(|m| (m, free_at));
	}

	/// Sets the link to `peer` (overriding the policy).
	pub fn set(&self, peer: PeerId, spec: LinkSpec) {
		let mut state = self.lock();
		state.overrides.insert(peer, spec);
		state.link(peer).spec = spec;
	}

	/// Replaces the policy for peers without an explicit setting and applies it to current
	/// links at once.
	pub fn set_policy(&self, policy: Policy) {
		let mut state = self.lock();
		state.policy = policy;
		let peers: Vec<PeerId> = state.links.keys().copied().collect();
		for peer in peers {
			let spec = state.resolve(&peer);
			state.link(peer).spec = spec;
		}
	}

	/// The current link to `peer`.
	pub fn spec(&self, peer: &PeerId) -> LinkSpec {
		let state = self.lock();
		state.links.get(peer).map(|l| l.spec).unwrap_or_else(|| state.resolve(peer))
	}

	/// Breaks every current connection to `peer` (new ones may be made).
	pub fn disconnect(&self, peer: PeerId) {
		self.lock().link(peer).generation += 1;
	}

	/// Errors if connections to `peer` are not allowed now.
	pub fn admit(&self, peer: &PeerId) -> io::Result<()> {
		if self.spec(peer).partitioned {
			return Err(io::Error::new(
				io::ErrorKind::ConnectionRefused,
				format!("link to {peer} is partitioned"),
			));
		}
		Ok(())
	}

	fn handle(&self, peer: PeerId) -> LinkHandle {
		let generation = self.lock().link(peer).generation;
		LinkHandle { shaper: self.clone(), peer, generation }
	}

	/// Wraps a multiplexed connection to `peer`.
	pub fn wrap<M>(&self, peer: PeerId, muxer: M) -> ShapedMuxer<M> {
		ShapedMuxer { inner: muxer, link: self.handle(peer) }
	}
}

#[derive(Clone, Debug)]
struct LinkHandle {
	shaper: Shaper,
	peer: PeerId,
	generation: u64,
}

impl LinkHandle {
	/// The link's spec, or an error if the stream must fail (partition or disconnect).
	fn check(&self) -> io::Result<LinkSpec> {
		let mut state = self.shaper.lock();
		let link = state.link(self.peer);
		if link.generation != self.generation {
			return Err(io::Error::new(io::ErrorKind::ConnectionReset, "disconnected by shaper"));
		}
		if link.spec.partitioned {
			return Err(io::Error::new(io::ErrorKind::ConnectionReset, "link partitioned"));
		}
		Ok(link.spec)
	}

	/// When the uplink's wire is free (`None`: no uplink limit).
	fn uplink_free_at(&self) -> Option<Instant> {
		self.shaper.lock().uplink.map(|(_, at)| at)
	}

	/// Takes `n` bytes written now onto the uplink's wire.
	fn sent(&self, n: usize) {
		let mut state = self.shaper.lock();
		if let Some((mbit, at)) = &mut state.uplink {
			let wire = Duration::from_secs_f64(n as f64 * 8.0 / (*mbit * 1e6));
			*at = (*at).max(Instant::now()) + wire;
		}
	}

	/// The simulated arrival time of `n` bytes read now.
	fn arrival(&self, n: usize) -> Instant {
		let now = Instant::now();
		let mut state = self.shaper.lock();
		let (jitter_draw, lost) = {
			let spec = state.link(self.peer).spec;
			let rng = &mut state.rng;
			let jitter = rng.next_f64() * spec.jitter_ms;
			let segments = n.div_ceil(SEGMENT);
			let lost = if spec.loss > 0.0 {
				(0..segments).filter(|_| rng.next_f64() < spec.loss).count()
			} else {
				0
			};
			(jitter, lost)
		};
		let link = state.link(self.peer);
		let spec = link.spec;
		let transmit = spec
			.bandwidth_mbit
			.map(|mbit| Duration::from_secs_f64(n as f64 * 8.0 / (mbit * 1e6)))
			.unwrap_or_default();
		let start = link.free_at.max(now);
		link.free_at = start + transmit;
		let rtt_ms = (2.0 * spec.latency_ms).max(1.0);
		let delay_ms = spec.latency_ms + jitter_draw + lost as f64 * rtt_ms;
		link.free_at + Duration::from_secs_f64(delay_ms / 1e3)
	}
}

/// A connection whose substreams are shaped.
pub struct ShapedMuxer<M> {
	inner: M,
	link: LinkHandle,
}

impl<M> StreamMuxer for ShapedMuxer<M>
where
	M: StreamMuxer + Unpin,
	M::Substream: Unpin,
	M::Error: Send + Sync + 'static,
{
	type Substream = Shaped<M::Substream>;
	type Error = io::Error;

	fn poll_inbound(
		mut self: Pin<&mut Self>,
		cx: &mut Context<'_>,
	) -> Poll<Result<Self::Substream, Self::Error>> {
		let link = self.link.clone();
		Pin::new(&mut self.inner)
			.poll_inbound(cx)
			.map(|r| r.map(|s| Shaped::new(s, link)).map_err(io::Error::other))
	}

	fn poll_outbound(
		mut self: Pin<&mut Self>,
		cx: &mut Context<'_>,
	) -> Poll<Result<Self::Substream, Self::Error>> {
		let link = self.link.clone();
		Pin::new(&mut self.inner)
			.poll_outbound(cx)
			.map(|r| r.map(|s| Shaped::new(s, link)).map_err(io::Error::other))
	}

	fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
		Pin::new(&mut self.inner).poll_close(cx).map_err(io::Error::other)
	}

	fn poll(
		mut self: Pin<&mut Self>,
		cx: &mut Context<'_>,
	) -> Poll<Result<StreamMuxerEvent, io::Error>> {
		self.link.check()?;
		Pin::new(&mut self.inner).poll(cx).map_err(io::Error::other)
	}
}

/// A substream whose received bytes are released at their simulated arrival times.
pub struct Shaped<S> {
	inner: S,
	link: LinkHandle,
	queue: VecDeque<(Instant, Vec<u8>)>,
	/// Bytes of the queue's front chunk already delivered.
	delivered: usize,
	queued: usize,
	last_arrival: Instant,
	timer: Option<Pin<Box<Sleep>>>,
	/// Waits for the uplink's wire before a write.
	write_timer: Option<Pin<Box<Sleep>>>,
	eof: bool,
}

impl<S> Shaped<S> {
	fn new(inner: S, link: LinkHandle) -> Self {
		Shaped {
			inner,
			link,
			queue: VecDeque::new(),
			delivered: 0,
			queued: 0,
			last_arrival: Instant::now(),
			timer: None,
			write_timer: None,
			eof: false,
		}
	}

	/// Copies due bytes into `buf`; `None` if nothing is due.
	fn deliver(&mut self, buf: &mut [u8]) -> Option<usize> {
		let (due, chunk) = self.queue.front()?;
		if *due > Instant::now() {
			return None;
		}
		let n = buf.len().min(chunk.len() - self.delivered);
		buf[..n].copy_from_slice(&chunk[self.delivered..self.delivered + n]);
		self.delivered += n;
		if self.delivered == chunk.len() {
			self.queued -= chunk.len();
			self.queue.pop_front();
			self.delivered = 0;
		}
		Some(n)
	}

	/// Waits for the front chunk's arrival time. `Ready` when it has passed.
	fn poll_timer(&mut self, cx: &mut Context<'_>) -> Poll<()> {
		let Some(&(due, _)) = self.queue.front() else { return Poll::Pending };
		let timer = self.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
		if timer.deadline() != due {
			timer.as_mut().reset(due);
		}
		let ready = timer.as_mut().poll(cx);
		if ready.is_ready() {
			self.timer = None;
		}
		ready
	}
}

impl<S: AsyncRead + Unpin> AsyncRead for Shaped<S> {
	fn poll_read(
		mut self: Pin<&mut Self>,
		cx: &mut Context<'_>,
		buf: &mut [u8],
	) -> Poll<io::Result<usize>> {
		let this = &mut *self;
		loop {
			let spec = this.link.check()?;
			if spec.is_perfect() && this.queue.is_empty() {
				return Pin::new(&mut this.inner).poll_read(cx, buf);
			}
			if let Some(n) = this.deliver(buf) {
				return Poll::Ready(Ok(n));
			}
			if !this.eof && this.queued < BUFFER_CAP {
				let mut chunk = vec![0u8; 64 * 1024];
				match Pin::new(&mut this.inner).poll_read(cx, &mut chunk) {
					Poll::Ready(Ok(0)) => {
						this.eof = true;
						continue;
					}
					Poll::Ready(Ok(n)) => {
						chunk.truncate(n);
						let due = this.link.arrival(n).max(this.last_arrival);
						this.last_arrival = due;
						this.queued += n;
						this.queue.push_back((due, chunk));
						continue;
					}
					Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
					Poll::Pending => {}
				}
			}
			if this.queue.is_empty() {
				return if this.eof { Poll::Ready(Ok(0)) } else { Poll::Pending };
			}
			match this.poll_timer(cx) {
				Poll::Ready(()) => continue,
				Poll::Pending => return Poll::Pending,
			}
		}
	}
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Shaped<S> {
	fn poll_write(
		mut self: Pin<&mut Self>,
		cx: &mut Context<'_>,
		buf: &[u8],
	) -> Poll<io::Result<usize>> {
		let this = &mut *self;
		this.link.check()?;
		let Some(free_at) = this.link.uplink_free_at() else {
			return Pin::new(&mut this.inner).poll_write(cx, buf);
		};
		if free_at > Instant::now() {
			let timer =
				this.write_timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(free_at)));
			if timer.deadline() != free_at {
				timer.as_mut().reset(free_at);
			}
			if timer.as_mut().poll(cx).is_pending() {
				return Poll::Pending;
			}
			this.write_timer = None;
		}
		let n = buf.len().min(UPLINK_CHUNK);
		let written = Pin::new(&mut this.inner).poll_write(cx, &buf[..n]);
		if let Poll::Ready(Ok(n)) = written {
			this.link.sent(n);
		}
		written
	}

	fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
		Pin::new(&mut self.inner).poll_flush(cx)
	}

	fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
		Pin::new(&mut self.inner).poll_close(cx)
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use futures::{io::Cursor, AsyncReadExt, AsyncWriteExt};

	/// Reads `total` bytes through a link and returns how long it took.
	async fn transfer(spec: LinkSpec, total: usize) -> Duration {
		let shaper = Shaper::default();
		let p = PeerId::random();
		shaper.set(p, spec);
		let data = vec![7u8; total];
		let mut shaped = Shaped::new(Cursor::new(data.clone()), shaper.handle(p));
		let start = Instant::now();
		let mut got = Vec::new();
		shaped.read_to_end(&mut got).await.unwrap();
		assert_eq!(got, data);
		start.elapsed()
	}

	#[tokio::test]
	async fn latency_bandwidth_and_loss_delay_delivery() {
		// A perfect link delays nothing (checked on the simulated arrival time, not on the
		// wall clock, which a loaded machine stretches).
		let shaper = Shaper::default();
		let perfect = shaper.handle(PeerId::random());
		assert!(perfect.arrival(100_000) <= Instant::now());
		// Its bytes come through whole (`transfer` checks them).
		transfer(LinkSpec::default(), 100_000).await;
		let slow = LinkSpec { latency_ms: 50.0, ..Default::default() };
		let t = transfer(slow, 1_000).await;
		assert!(t >= Duration::from_millis(49), "{t:?}");
		// 1 MB at 80 Mbit/s is 100 ms on the wire.
		let narrow = LinkSpec { bandwidth_mbit: Some(80.0), ..Default::default() };
		let t = transfer(narrow, 1_000_000).await;
		assert!(t >= Duration::from_millis(95), "{t:?}");
		// With 5% loss on 1000 segments, several 40 ms round trips are added.
		let lossy = LinkSpec { latency_ms: 20.0, loss: 0.05, ..Default::default() };
		let t = transfer(lossy, 1000 * SEGMENT).await;
		assert!(t >= Duration::from_millis(100), "{t:?}");
	}

	#[tokio::test]
	async fn an_uplink_is_shared_by_everything_a_trainer_sends() {
		let shaper = Shaper::default();
		shaper.set_uplink(Some(80.0));
		let send = |peer: PeerId| {
			let mut shaped = Shaped::new(Cursor::new(Vec::new()), shaper.handle(peer));
			async move {
				shaped.write_all(&vec![1u8; 500_000]).await.unwrap();
				shaped.inner.into_inner().len()
			}
		};
		let start = Instant::now();
		let (a, b) = futures::join!(send(PeerId::random()), send(PeerId::random()));
		assert_eq!((a, b), (500_000, 500_000));
		// 1 MB at 80 Mbit/s is 100 ms, whichever streams send it.
		let t = start.elapsed();
		assert!(t >= Duration::from_millis(95), "{t:?}");
		// Unlimited again: no wire to wait for (a check of the state, not of the clock).
		shaper.set_uplink(None);
		assert_eq!(shaper.handle(PeerId::random()).uplink_free_at(), None);
		assert_eq!(send(PeerId::random()).await, 500_000);
	}

	#[tokio::test]
	async fn partitions_and_disconnects_fail_streams() {
		let shaper = Shaper::default();
		let p = PeerId::random();
		let mut shaped = Shaped::new(Cursor::new(b"hi".to_vec()), shaper.handle(p));
		let mut buf = [0u8; 2];
		shaped.read_exact(&mut buf).await.unwrap();
		shaper.disconnect(p);
		let err = shaped.read(&mut buf).await.unwrap_err();
		assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
		// A stream opened after the disconnect works; a partition refuses and fails it.
		let mut fresh = Shaped::new(Cursor::new(Vec::new()), shaper.handle(p));
		assert!(shaper.admit(&p).is_ok());
		fresh.write_all(b"x").await.unwrap();
		shaper.set(p, LinkSpec { partitioned: true, ..Default::default() });
		assert!(shaper.admit(&p).is_err());
		assert!(fresh.write(b"x").await.is_err());
		assert!(LinkSpec { loss: 1.0, ..Default::default() }.validate().is_err());
		assert!(LinkSpec { bandwidth_mbit: Some(0.0), ..Default::default() }.validate().is_err());
	}
}
