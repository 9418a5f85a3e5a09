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

impl Trainer {
	/// The agreed set of `round` at `base`, after this trainer's fetches of `set` (the
	/// commitments it heard in time); with the job's `draw`, its first by place.
	pub(super) fn agree(
		&mut self,
		round: RoundIndex,
		base: &Digest,
		set: &[(PeerId, SignedCommitment)],
		draw: Option<Draw>,
	) -> Result<Agreed> {
		let candidates = self.books.current().candidates(base);
		// Once a round: a second, different attestation (after a re-sync) would make every
		// peer count this trainer's for nothing.
		let attested = self.witnesses.attested(&self.me);
		if !attested && candidates.iter().any(|(p, _)| *p == self.me) {
			self.attest(round, base, set)?;
		}
		let others: Vec<PeerId> =
			candidates.iter().map(|(p, _)| *p).filter(|p| *p != self.me).collect();
		let (gossip, fetch) =
			(self.config.schedule.gossip_wait(), self.config.schedule.fetch_wait());
		// With a draw, verdicts on its fetched updates only, every committer witnessing.
		let judged = match draw {
			Some(draw) => draw.fetched(candidates.clone()),
			None => candidates.clone(),
		};
		let heard_all = |s: &Self| others.iter().all(|p| s.witnesses.attested(p));
		let settled = |s: &Self| s.witnesses.settled(base, &candidates, &judged);
		let waited = Instant::now();
		self.pump_until(waited + gossip, heard_all);
		if !heard_all(self) && !settled(self) {
			// An attestation not heard yet could still move an update across the line, and
			// deciding without it gives another set than the peers that heard it (another
			// model, a re-sync and an unpaid round): one more wait, for it only.
			let unheard = others.iter().filter(|p| !self.witnesses.attested(p)).count();
			tracing::info!("round {round}: waiting on for {unheard} unheard attestations");
			self.pump_until(waited + 2 * gossip, |s| heard_all(s) || settled(s));
		}
		let attest_wait = waited.elapsed();
		let mut agreement = self.witnesses.agree_among(base, &candidates, &judged);
		let mut not_drawn = Vec::new();
		if let Some(draw) = draw {
			(agreement.set, not_drawn) = draw.drawn(agreement.set);
		}
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
