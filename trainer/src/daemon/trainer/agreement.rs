//! The round's agreed set ([`crate::round::witness`]): attest what this trainer holds, wait
//! for the other committers' attestations, then fetch what the agreed set lacks from those
//! that hold it, and wait for it instead of aggregating without it.

use std::time::{Duration, Instant};

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::Trainer;
use crate::{
	error::{Error, Result},
	net::Command,
	round::{
		coordinator::offline_round_seed,
		fan_in::Draw,
		messages::{Digest, SignedCommitment},
		witness::Attestation,
	},
};

/// A round's agreed set, as this trainer could gather it.
pub(super) struct Agreed {
	/// The updates to aggregate, in canonical order.
	pub set: Vec<(PeerId, SignedCommitment)>,
	/// Committers whose updates too few witnesses held.
	pub left_out: Vec<PeerId>,
	/// Members of the agreed set whose updates did not come in time.
	pub lacking: Vec<PeerId>,
	/// Members of the agreed set past the job's fan-in, not drawn this round.
	pub not_drawn: Vec<PeerId>,
	/// The wait for the other candidates' attestations.
	pub attest_wait: Duration,
	/// The wait for the agreed updates fetched from their holders.
	pub fetch_wait: Duration,
}

/// Most witnesses asked for a round's commitments that gossip did not bring.
const MAX_ASKED: usize = 4;

/// The candidates whose updates the agreement judges: with a draw, its fetched ones only
/// (every committer still witnessing).
fn judged(
	draw: Option<Draw>,
	candidates: &[(PeerId, SignedCommitment)],
) -> Vec<(PeerId, SignedCommitment)> {
	match draw {
		Some(draw) => draw.fetched(candidates.to_vec()),
		None => candidates.to_vec(),
	}
}

impl Trainer {
	/// The agreed set of `round` at `base`, after this trainer's fetches of `set` (the
	/// commitments it heard in time), which began at `fetching`; with the job's `draw`, its
	/// first by place.
	pub(super) fn agree(
		&mut self,
		round: RoundIndex,
		base: &Digest,
		set: &[(PeerId, SignedCommitment)],
		draw: Option<Draw>,
		fetching: Instant,
	) -> Result<Agreed> {
		let candidates = self.books.current().candidates(base);
		// Once a round: a second, different attestation (after a re-sync) would make every
		// peer count this trainer's for nothing.
		let attested = self.witnesses.attested(&self.me);
		if !attested && candidates.iter().any(|(p, _)| *p == self.me) {
			self.attest(round, base, set)?;
		}
		let fetch = self.config.schedule.fetch_wait();
		// A peer attests once its own fetches end, which may take the whole fetch window
		// (they began about when this trainer's did): an attestation that could still change
		// the set is waited for until then.
		let fetches_end = fetching + fetch;
		let decide_by = self.decide_by(round);
		let waited = Instant::now();
		self.wait_attestations(round, base, draw, fetches_end, decide_by);
		if self.ask_for_unheard(round, base) {
			// The commitments learned bring their committers' attestations into the tally.
			self.wait_attestations(round, base, draw, fetches_end, decide_by);
		}
		let attest_wait = waited.elapsed();
		let candidates = self.books.current().candidates(base);
		let judged = judged(draw, &candidates);
		let late = self.books.current().late_signers();
		let mut agreement = self.witnesses.agree_among(base, &candidates, &judged, &late);
		let mut not_drawn = Vec::new();
		if let Some(draw) = draw {
			(agreement.set, not_drawn) = draw.drawn(agreement.set);
		}
		tracing::debug!(
			"round {round}: agreed {} of {} candidates ({} left out), after {:?}",
			agreement.set.len(),
			candidates.len(),
			agreement.left_out.len(),
			attest_wait
		);
		let (requests, wanted) = self.fetches.want_agreed(&agreement, self.me);
		for request in requests {
			self.send_request(request);
		}
		let waited = Instant::now();
		if !wanted.is_empty() {
			tracing::info!(
				"round {round}: fetching {} agreed updates from their holders",
				wanted.len()
			);
			self.pump_until(waited + fetch, |s| s.fetches.settled(&wanted));
		}
		let fetch_wait = waited.elapsed();
		let lacking = agreement
			.set
			.iter()
			.filter(|(_, s)| self.fetches.update(&s.commitment.update_hash).is_none())
			.map(|(p, _)| *p)
			.collect();
		Ok(Agreed {
			set: agreement.set,
			left_out: agreement.left_out,
			lacking,
			not_drawn,
			attest_wait,
			fetch_wait,
		})
	}

	/// Waits for the attestations of the round's other candidates at `base`: a gossip
	/// wait, then, while one not heard yet could still change the agreed set, until peers'
	/// fetches must have ended (`fetches_end`) and their attestations come (a gossip wait
	/// more), or a second gossip wait if that is later; never past `decide_by`, when the
	/// round must be decided for its proof to be in time.
	///
	/// An attestation that has not come by then is not waited for: its signer may have
	/// crashed once its update was out, or withhold it so that every other proof of the
	/// round is late. Waiting to the fetch window's end plus a grace took longer than the
	/// job's exchange allowance: in a CI run of `tests/tests/network_job.rs` Dave was killed
	/// between committing round 2 and attesting it, and every proof of the round missed it.
	/// Every honest trainer stops at about the same instant (the chain's deadline), with the
	/// attestations gossip brought by then.
	fn wait_attestations(
		&mut self,
		round: RoundIndex,
		base: &Digest,
		draw: Option<Draw>,
		fetches_end: Instant,
		decide_by: Option<Instant>,
	) {
		let candidates = self.books.current().candidates(base);
		let judged = judged(draw, &candidates);
		let late = self.books.current().late_signers();
		let others: Vec<PeerId> =
			candidates.iter().map(|(p, _)| *p).filter(|p| *p != self.me).collect();
		let gossip = self.config.schedule.gossip_wait();
		let heard_all = |s: &Self| others.iter().all(|p| s.witnesses.attested(p));
		let settled = |s: &Self| s.witnesses.settled(base, &candidates, &judged, &late);
		let unheard = |s: &Self| others.iter().filter(|p| !s.witnesses.attested(p)).count();
		let capped = |until: Instant| decide_by.map_or(until, |by| until.min(by));
		let waited = Instant::now();
		self.pump_until(capped(waited + gossip), heard_all);
		if heard_all(self) || settled(self) {
			return;
		}
		// An attestation not heard yet could still move an update across the line, and
		// deciding without it gives another set than the peers that heard it (another model,
		// a re-sync and an unpaid round): waited for, as long as its signer may still be
		// fetching. A node that stopped at one more gossip wait here left its own update out
		// on one witness's word while two peers, still fetching over a slow link, attested it
		// 2.5 s later (a 2-2 split, `bench/network.sh`).
		tracing::info!("round {round}: waiting for {} unheard attestations", unheard(self));
		let until = (waited + 2 * gossip).max(fetches_end + gossip);
		self.pump_until(capped(until), |s| heard_all(s) || settled(s));
		if capped(until) < until && !heard_all(self) && !settled(self) {
			tracing::warn!(
				"round {round}: {} attestations not heard by the proof's deadline; deciding \
				 without them",
				unheard(self)
			);
		}
	}

	/// Asks the witnesses of updates whose commitments this trainer never heard (gossip
	/// lost them; without them it would aggregate another set than its peers, then re-sync
	/// and go unpaid) for the round's commitments, and waits for them a gossip wait at
	/// most. True when a commitment came that is a candidate now.
	fn ask_for_unheard(&mut self, round: RoundIndex, base: &Digest) -> bool {
		let book = self.books.current();
		let unheard = self.witnesses.unheard_held(base, |h| book.heard_update(h));
		if unheard.is_empty() {
			return false;
		}
		let mut asked: Vec<PeerId> = Vec::new();
		for holders in unheard.values() {
			if holders.iter().any(|p| asked.contains(p)) {
				continue;
			}
			if let Some(peer) = holders.iter().find(|p| **p != self.me) {
				asked.push(*peer);
			}
		}
		asked.truncate(MAX_ASKED);
		tracing::info!(
			"round {round}: {} updates attested that this trainer heard no commitment for; \
			 asking {} witnesses for the round's commitments",
			unheard.len(),
			asked.len()
		);
		for peer in asked {
			let request = self.fetches.request_commitments(peer, round);
			self.send_request(request);
		}
		let before = self.books.current().candidates(base).len();
		let all_heard = |s: &Self| unheard.keys().all(|h| s.books.current().heard_update(h));
		let until = Instant::now() + self.config.schedule.gossip_wait();
		self.pump_until(until, |s| all_heard(s) || !s.fetches.asking_commitments());
		self.books.current().candidates(base).len() > before
	}

	/// The draw of `round`'s aggregated updates when the job bounds its fan-in.
	pub(super) fn draw(&self, round: RoundIndex) -> Option<Draw> {
		let fan_in = usize::from(self.config.job.training.exchange.fan_in?);
		let seed = self.coordinator.round_seed(round).unwrap_or_else(|| {
			// Drawing from another seed than the others gives another set, another model
			// and a re-sync; the chain task should always know the open round's.
			tracing::warn!("round {round}: its seed is unknown here; drawing from the job's");
			offline_round_seed(self.config.job.id, round)
		});
		Some(Draw { seed: seed.0, fan_in })
	}

	/// Signs and gossips which updates of `set` this trainer holds (its own among them).
	fn attest(
		&mut self,
		round: RoundIndex,
		base: &Digest,
		set: &[(PeerId, SignedCommitment)],
	) -> Result<()> {
		let holds = set
			.iter()
			.map(|(_, s)| s.commitment.update_hash)
			.filter(|h| self.fetches.update(h).is_some())
			.collect();
		let attestation = Attestation { job: self.config.job.id, round, base_state: *base, holds };
		let signed = attestation.sign(&self.key).map_err(|e| Error::Network(e.to_string()))?;
		self.witnesses.heard(self.me, signed.clone());
		self.net.send(Command::Attest(signed));
		Ok(())
	}
}
