//! The exchange with peers: waiting for commitments, fetching updates (each as soon as its
//! commitment is taken, the rest of the set at the decision), and the network's events
//! while the loop waits.

use std::{
	sync::{mpsc::RecvTimeoutError, Arc},
	time::{Duration, Instant},
};

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::Trainer;
use crate::{
	daemon::reports,
	net::{Command, Event},
	round::{
		book::{Arrival, Offer},
		coordinator::Schedule,
		fetch::{Answer, Outgoing},
		messages::{Digest, Response, SignedCommitment},
		misbehave::corrupt,
		update_pieces::PieceHashes,
		witness::{Heard, SignedAttestation},
	},
};

/// How often the event loop looks for pieces whose keepers are slow.
const PIECE_CHECK: Duration = Duration::from_millis(250);

/// The most queued events the loop handles at once when it is past waiting.
const QUEUED_EVENTS: usize = 100_000;

impl Trainer {
	/// Waits for the round's commitments: deadline rounds until the deadline, then until
	/// every connected member of the round's roster committed or the grace after the
	/// deadline is out; fixed-step rounds until every peer expected committed (the last
	/// round's set, every connected member in round 0) or the whole wait is out.
	///
	/// Commitments are due by the deadline, so until then any member may still commit (a
	/// joiner not connected yet, a slower provider): a book closed earlier, once the members
	/// connected had committed (capped rounds commit long before it), left such a commitment
	/// late. The grace after it is for commitments on their way: once every connected member's
	/// is here, what can still come is a second one (an equivocation, still heard while the
	/// round is decided) or a disconnected member's, relayed, which the round's witnesses let
	/// in if its peers hold it. Waiting out the grace instead left every blocking round idle
	/// for it (400 ms of 6 s rounds in `bench/network.sh`, 1.5 s of a chain job's rounds by
	/// default) though the commitments had come within a round trip.
	pub(super) fn collect(&mut self, round: RoundIndex, end: Option<Instant>) {
		match self.config.schedule {
			Schedule::Deadline { grace_ms, .. } => {
				let end = end.unwrap_or_else(Instant::now);
				self.pump_until(end, |_| false);
				self.pump_until(end + Duration::from_millis(grace_ms), |s| {
					let book = s.books.current();
					s.connected_members().iter().all(|p| book.has(p))
				});
			}
			Schedule::FixedSteps { wait_ms, .. } => {
				let mut expected = self.last_set.clone();
				if expected.is_empty() || round == 0 {
					expected = self.connected_members();
				}
				expected.retain(|p| *p != self.me);
				let until = Instant::now() + Duration::from_millis(wait_ms);
				self.pump_until(until, |s| expected.iter().all(|p| s.books.current().has(p)));
			}
		}
	}

	/// When `round`'s collection ends, once the round has opened (a chain names no
	/// deadline before): a commitment heard from then on is late
	/// ([`crate::round::book`]), whenever this trainer closes the book. Fixed-step rounds
	/// have none (each waits for the last round's set).
	pub(super) fn collection_deadline(&self, round: RoundIndex) -> Option<Instant> {
		if !self.clock().has_opened(round) {
			return None;
		}
		match self.config.schedule {
			Schedule::Deadline { grace_ms, .. } => {
				let end = self.coordinator.deadline(round).map(super::instant_of)?;
				Some(end + Duration::from_millis(grace_ms))
			}
			Schedule::FixedSteps { .. } => None,
		}
	}

	/// Fetches every update of the set not yet here (in pieces from their keepers, or
	/// whole from its committer first and from other members when that fails), until the
	/// fetch deadline.
	pub(super) fn fetch_all(&mut self, set: &[(PeerId, SignedCommitment)]) {
		let members = self.members();
		let (requests, wanted) = self.fetches.want(set, self.me, &members);
		for request in requests {
			self.send_request(request);
		}
		if wanted.is_empty() {
			return;
		}
		let until = Instant::now() + self.config.schedule.fetch_wait();
		self.pump_until(until, |s| s.fetches.settled(&wanted));
	}

	/// Handles the network events already queued, without waiting for more (at most
	/// [`QUEUED_EVENTS`], so that a flood cannot hold the loop).
	///
	/// A wait whose end has passed when it starts still takes these: a loop held past the
	/// collection deadline (sealing on a starved machine took 6 s) has the commitments the
	/// network heard in time still queued, and taken now they count as heard when they
	/// were. Returning at once closed the book without them, and that trainer aggregated
	/// nothing where its peers aggregated two updates; attestations and pieces queued past
	/// their waits are the same.
	fn handle_queued_events(&mut self) {
		for _ in 0..QUEUED_EVENTS {
			let Ok(event) = self.net.events.try_recv() else { return };
			self.on_event(event);
		}
	}

	/// Handles network events until `until` or until `done` holds, and once `until` has
	/// passed, those already queued ([`Trainer::handle_queued_events`]).
	pub(super) fn pump_until(&mut self, until: Instant, done: impl Fn(&Self) -> bool) {
		loop {
			self.release_reports();
			if let Some(fraud) = &mut self.fraud {
				fraud.desk.poll(fraud.port.as_ref());
				for (round, peer, id) in fraud.desk.state_requests() {
					let out = self.fetches.request_work_state(peer, round, id);
					self.net.send(Command::Fetch { id: out.id, peer, request: out.request });
				}
			}
			self.hear_late_attestations();
			if done(self) {
				return;
			}
			let now = Instant::now();
			for request in self.fetches.overdue_pieces(now) {
				self.send_request(request);
			}
			if now >= until {
				self.handle_queued_events();
				return;
			}
			// Woken at least this often to ask committers for pieces their keepers are slow on.
			let wait = (until - now).min(PIECE_CHECK);
			match self.net.events.recv_timeout(wait) {
				Ok(event) => self.on_event(event),
				Err(RecvTimeoutError::Timeout) if wait == until - now => return,
				Err(RecvTimeoutError::Timeout) => {}
				Err(RecvTimeoutError::Disconnected) => {
					std::thread::sleep(until - now);
					return;
				}
			}
		}
	}

	pub(super) fn on_event(&mut self, event: Event) {
		match event {
			Event::Listening(addr) => {
				tracing::info!("listening on {addr}/p2p/{}", self.me);
				self.listen.push(addr);
				let _ = self.write_status(false);
			}
			Event::Connected(peer) => self.health.peer(peer).connected = true,
			Event::Disconnected(peer) => self.health.peer(peer).connected = false,
			Event::Rtt { peer, rtt } => self.health.rtt(peer, rtt),
			Event::Commitment { signer, signed, heard, update } => {
				let round = signed.commitment.round;
				let lost = self
					.scenario
					.as_ref()
					.is_some_and(|s| s.loses_commitment(&self.me, &signer, round));
				if lost {
					tracing::info!("scenario: gossip lost {signer}'s commitment of round {round}");
					return;
				}
				self.on_commitment(signer, *signed, Arrival::Heard(heard), update);
			}
			Event::Attestation { signer, signed } => {
				let round = signed.attestation.round;
				let delay = self
					.scenario
					.as_ref()
					.and_then(|s| s.attestation_delay(&self.me, &signer, round));
				if let Some(delay) = delay {
					tracing::info!(
						"scenario: gossip brings {signer}'s attestation of round {round} {} ms late",
						delay.as_millis()
					);
					self.late_attestations.push((Instant::now() + delay, signer, signed));
					return;
				}
				self.on_attestation(signer, signed);
			}
			Event::Fetched { id, peer, result, elapsed } => {
				self.on_fetched(id, peer, result, elapsed)
			}
		}
	}

	/// Takes a verified attestation.
	fn on_attestation(&mut self, signer: PeerId, signed: SignedAttestation) {
		let (round, holds) = (signed.attestation.round, signed.attestation.holds.len());
		let heard = self.witnesses.heard(signer, signed);
		tracing::debug!("attestation of {signer} for round {round}, {holds} held: {heard:?}");
		if heard == Heard::Conflicting {
			tracing::warn!("{signer} attested two different things: neither counts");
		}
	}

	/// Takes the attestations a scenario held back whose time has come.
	fn hear_late_attestations(&mut self) {
		if self.late_attestations.is_empty() {
			return;
		}
		let now = Instant::now();
		let (due, later) = std::mem::take(&mut self.late_attestations)
			.into_iter()
			.partition(|(at, ..)| *at <= now);
		self.late_attestations = later;
		for (_, signer, signed) in due {
			self.on_attestation(signer, signed);
		}
	}

	/// Takes a verified commitment, gossiped (with its update when that came along) or
	/// relayed.
	pub(super) fn on_commitment(
		&mut self,
		signer: PeerId,
		signed: SignedCommitment,
		arrival: Arrival,
		update: Option<Vec<u8>>,
	) {
		let c = &signed.commitment;
		tracing::debug!(
			"commitment of {signer} for round {} (book {})",
			c.round,
			self.books.current().round()
		);
		self.health.committed(signer, c.round, c.samples, c.compute_millis);
		if let Some(offer) = self.books.heard(signer, signed, arrival) {
			self.on_offer(signer, offer, update);
		}
	}

	/// What the book made of `signer`'s commitment (`update`: its update, when it came with
	/// the commitment).
	pub(super) fn on_offer(&mut self, signer: PeerId, offer: Offer, update: Option<Vec<u8>>) {
		let round = self.books.current().round();
		match offer {
			Offer::Equivocation(evidence) => {
				tracing::warn!("{signer} equivocated in round {round}");
				self.health.peer(signer).equivocations += 1;
				if let Err(e) = reports::save_evidence(&self.config.data_dir, &evidence) {
					tracing::error!("saving equivocation evidence: {e}");
				}
				self.evidence_seen += 1;
				if let Some(fraud) = &self.fraud {
					fraud.port.report_equivocation(*evidence);
				}
			}
			Offer::Late if signer == self.me => tracing::warn!(
				"round {round}: own commitment made after the collection deadline: in the set \
				 only if a peer heard it in time"
			),
			Offer::Late => tracing::info!(
				"late commitment from {signer}: in the set only if most witnesses hold its update"
			),
			Offer::BadClaim { samples, steps, update_len } => tracing::warn!(
				"{signer} claims {samples} samples in {steps} steps and an update of \
				 {update_len} bytes in round {round}, which the job does not allow: left out"
			),
			Offer::Full => tracing::warn!("round full: commitment from {signer} left out"),
			Offer::Copied(original) => {
				tracing::warn!("{signer} committed {original}'s update in round {round}: left out")
			}
			Offer::Accepted => self.fetch_early(signer, update),
			// The network task refuses strangers' gossip: these came relayed, or before it
			// knew the round's members.
			Offer::Stranger => {
				tracing::debug!("round {round}: {signer} is not a member; its commitment ignored")
			}
			Offer::Duplicate | Offer::OtherRound => {}
		}
	}

	/// Asks for `committer`'s update as soon as its commitment is taken, when it trained
	/// from this trainer's base (what the round's set is taken from): updates then download
	/// while the round's other commitments come, not all at the decision (64 trainers,
	/// `bench/scale.sh`: decisions came 10 s after the commit deadline, most of it fetching).
	/// An update that came with its commitment (`inline`) is kept and served instead.
	fn fetch_early(&mut self, committer: PeerId, inline: Option<Vec<u8>>) {
		let Some(state) = self.state.as_ref().filter(|_| committer != self.me) else { return };
		let Some(signed) = self.books.current().in_set(&committer, &state.state_hash) else {
			return;
		};
		let signed = signed.clone();
		if let Some(bytes) = inline {
			match self.fetches.deliver(&signed, bytes) {
				Ok((bytes, hashes)) => {
					let (hash, round) = (signed.commitment.update_hash, signed.commitment.round);
					self.serve_update(hash, round, bytes, hashes);
					return;
				}
				// Its bytes matched the commitment (the network task checked); an update
				// that does not fit the model is refused as a fetched one is, and asked for.
				Err(why) => tracing::warn!("update sent with {committer}'s commitment: {why}"),
			}
		}
		// A bounded fan-in: only what the draw likely aggregates (the rest at the decision).
		if let Some(draw) = self.draw(signed.commitment.round) {
			let members = self.connected_members().len() + 1;
			if !draw.likely_fetched(&committer, members) {
				return;
			}
		}
		let members = self.members();
		for request in
			self.fetches.want_pieces(committer, &signed, &members, self.me, Instant::now())
		{
			self.send_request(request);
		}
	}

	/// The members among whom an update's pieces are kept: the connected peers and this
	/// trainer, sorted (every member with the same view draws the same keepers).
	pub(super) fn members(&self) -> Vec<PeerId> {
		let mut members = self.connected_members();
		members.push(self.me);
		members.sort();
		members
	}

	/// The connected peers the open round's roster admits (strangers are never waited
	/// for, drawn as keepers or asked for a state).
	pub(super) fn connected_members(&self) -> Vec<PeerId> {
		self.books.current().roster().filter(self.health.connected())
	}

	pub(super) fn on_fetched(
		&mut self,
		id: u64,
		peer: PeerId,
		result: std::result::Result<Response, String>,
		elapsed: Duration,
	) {
		let round = self.books.current().round();
		match self.fetches.on_answer(id, peer, result, round) {
			Answer::Unasked | Answer::State => {}
			Answer::WorkStatePieces(requests) => {
				requests.into_iter().for_each(|r| self.send_request(r))
			}
			Answer::WorkState { round, peer, id, result } => {
				if let Some(fraud) = &mut self.fraud {
					fraud.desk.state_arrived(round, peer, id, result, fraud.port.as_ref());
				}
			}
			Answer::Update { hash, bytes, hashes, link_bytes } => {
				if link_bytes.is_some() {
					self.health.fetched(peer, link_bytes, elapsed);
				}
				self.serve_update(hash, round, bytes, hashes);
			}
			// A keeper's answer waits for its own fetch: only a committer's measures the link.
			Answer::Piece { hash, round, index, piece, hashes, link_bytes } => {
				if link_bytes.is_some() {
					self.health.fetched(peer, link_bytes, elapsed);
				}
				let misbehave = self.config.misbehave;
				if !misbehave.withhold_pieces {
					let piece = if misbehave.corrupt_serving { corrupt(piece) } else { piece };
					self.net.send(Command::ServePiece { hash, round, index, hashes, piece });
				}
			}
			Answer::PieceFailed { hash, index, why, retry, given_up } => {
				if given_up {
					self.net.send(Command::RefusePiece { hash, index });
				}
				let hash = &hex::encode(hash)[..12];
				tracing::info!("piece {index} of update {hash} from {peer}: {why}");
				if let Some(retry) = retry {
					self.send_request(retry);
				}
			}
			Answer::Commitments { round: asked, result } => match result {
				// Checked and offered one by one, as gossiped ones are.
				Ok(commitments) if asked == round => self.learn(peer, commitments),
				Ok(_) => {}
				Err(why) => tracing::info!("commitments of round {asked} from {peer}: {why}"),
			},
			Answer::Failed { hash, why, retry } => {
				tracing::info!("update {} from {peer}: {why}", &hex::encode(hash)[..12]);
				self.health.fetched(peer, None, elapsed);
				if let Some(retry) = retry {
					self.send_request(retry);
				}
			}
		}
	}

	/// Serves on another member's update this trainer now holds (a hostile holder corrupts
	/// it).
	fn serve_update(
		&self,
		hash: Digest,
		round: RoundIndex,
		bytes: Arc<Vec<u8>>,
		hashes: PieceHashes,
	) {
		let bytes = match self.config.misbehave.corrupt_serving {
			true => Arc::new(corrupt(bytes.to_vec())),
			false => bytes,
		};
		self.net.send(Command::ServeUpdate { hash, round, bytes, hashes });
	}

	pub(super) fn send_request(&self, out: Outgoing) {
		self.net.send(Command::Fetch { id: out.id, peer: out.peer, request: out.request });
	}
}
