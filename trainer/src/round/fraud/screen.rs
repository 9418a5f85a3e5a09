//! Keeping each round's evidence and screening its updates: the cheap screens every trainer
//! runs alike (agreement, copies, short norms), of whose suspects only designated replayers
//! replay each, and the loss screens each trainer runs on peers its secret picks.

use std::sync::Arc;

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::{FraudDesk, FraudPort, Purpose, Received};
use crate::{
	compress::CompressedUpdate,
	round::evidence::{Kept, RoundEvidence},
	verify::{copy_suspects, short_suspects, suspects, Check, Gram, ScreenRequest},
};

/// Peers' updates each trainer loss-screens per round ([`crate::verify::Replayer::loss_screen`]),
/// chosen anew every round with the trainer's secret: none in the daemon since segment checks
/// ([`super::SEGMENT_RATE`]) tell training on other data apart outright for a fraction of the
/// cost. Two screens a trainer caught it within ten rounds in 99 of 100 attempts for 9.5% of
/// the steps trained (screens and the replays of honest updates they flagged), where segment
/// checks catch it for 1.7% (`bench/reports/redteam.md`); the red-team suite's `--screens`
/// still measures the loss screen.
pub const GAUNTLET_PEERS: usize = 0;

/// Trainers that replay a suspect which every trainer's screens flag (drawn per round and
/// suspect among the round's other senders): two, so that one drawn Sybil cannot shield a
/// cheat; the chain's audits check what both let pass.
pub const REPLAYERS: usize = 2;

/// Whether `me` replays `suspect`'s update of `round`: whether it is one of the suspect's
/// [`REPLAYERS`], drawn among the round's other aggregated senders `order`. A trainer not
/// among them (it sent nothing, or its update was left out) replays only where they are
/// too few to draw that many (a round of one or two senders): at 64 trainers on 2 cores,
/// every trainer that sent nothing replayed every suspect, up to 42 replays of one
/// update (`bench/reports/scale_lateness`), where two do the job.
pub(super) fn designated(
	me: &PeerId,
	round: RoundIndex,
	order: &[PeerId],
	suspect: &PeerId,
) -> bool {
	let mut judges: Vec<&PeerId> = order.iter().filter(|p| *p != suspect).collect();
	if !order.contains(me) {
		return judges.len() < REPLAYERS;
	}
	let rank = |peer: &PeerId| {
		let key = [
			b"grid/replayer".to_vec(),
			round.to_le_bytes().to_vec(),
			suspect.to_bytes(),
			peer.to_bytes(),
		]
		.concat();
		sp_crypto_hashing::blake2_256(&key)
	};
	judges.sort_by_key(|p| rank(p));
	judges.iter().take(REPLAYERS).any(|p| *p == me)
}

impl FraudDesk {
	/// Keeps `round`'s base model and updates, and screens the updates: a peer's update
	/// that disagrees with the others, is this close to another, is shorter than its peers
	/// or fails the loss screen (which runs on the worker thread, found by
	/// [`FraudDesk::poll`]) is replayed, and its sender accused if the replay refutes it.
	/// `copies` are claims of others' updates of the round (left out of its aggregate): kept
	/// too, and replayed from their claimants' start states as suspects. Of the suspects,
	/// this trainer replays those it is drawn for ([`designated`]).
	pub fn keep_round(
		&mut self,
		round: RoundIndex,
		base: Arc<Vec<f32>>,
		received: Vec<Received>,
		copies: Vec<Received>,
		port: &dyn FraudPort,
	) {
		let order: Vec<PeerId> = received.iter().map(|r| r.peer).collect();
		// Straight from the updates as sent: a round's updates are never all dense at once.
		let sent: Vec<&CompressedUpdate> = received.iter().map(|r| r.update.as_ref()).collect();
		let gram = Gram::of(&sent).unwrap_or_else(|e| {
			// The round loop accepts only updates of the model's length, so this is a bug;
			// the round's evidence is still kept and challenges still judged.
			tracing::error!("round {round}: no cheap screens: {e}");
			Gram::default()
		});
		let mut flagged: Vec<(PeerId, &str, f64)> = suspects(&gram)
			.into_iter()
			.map(|(i, cosine)| (order[i], "disagrees with the others", cosine))
			.collect();
		let flag = |flagged: &mut Vec<(PeerId, &str, f64)>, i: usize, why, value| {
			if !flagged.iter().any(|(p, _, _)| *p == order[i]) {
				flagged.push((order[i], why, value));
			}
		};
		for (i, closest) in copy_suspects(&gram) {
			flag(&mut flagged, i, "is this close to another (cosine)", closest);
		}
		let steps: Vec<u32> = received.iter().map(|r| r.steps).collect();
		for (i, ratio) in short_suspects(&gram, &steps) {
			flag(&mut flagged, i, "is this short next to its peers' (norm ratio)", ratio);
		}
		// Every trainer's screens above flag alike: only a suspect's designated replayers
		// replay it (a suspect replayed by every trainer costs the round as many replays).
		let me = self.me;
		let replays = |peer: &PeerId| designated(&me, round, &order, peer);
		flagged.retain(|(peer, _, _)| replays(peer));
		for i in self.gauntlet_picks(round, &order, &flagged) {
			let Some(seed) = port.peer_seed(round, &order[i]) else { continue };
			// The contrast: another sender's update (itself screened by others); a lone
			// sender has none.
			let Some(j) = self.contrast(round, &order, i) else { continue };
			let request = ScreenRequest {
				base: base.clone(),
				update: received[i].update.clone(),
				other: received[j].update.clone(),
				seed,
				steps: received[i].steps,
			};
			// On the worker thread: a large model's screen takes seconds on a CPU, and the
			// round's aggregate and proof do not wait for it (`FraudDesk::screened` has its
			// finding).
			self.screening.insert((round, order[i]));
			self.worker.submit((round, order[i]), Check::Screen(request));
		}
		self.retry_unserved(round);
		for i in self.segment_picks(round, &order, &flagged) {
			self.begin_segment(round, &received[i]);
		}
		for copy in &copies {
			if replays(&copy.peer) {
				flagged.push((copy.peer, "claims another's update as its own (its steps)", 0.0));
			}
		}
		let updates = received
			.into_iter()
			.chain(copies)
			.map(|r| {
				let kept = Kept {
					steps: r.steps,
					start: r.start,
					trajectory: Some(r.trajectory),
					update: r.update,
				};
				(r.peer, kept)
			})
			.collect();
		let evidence = RoundEvidence { round, base, updates };
		let (archived, base_digest) = evidence.encode();
		self.archive.put(round, archived, &base_digest);
		self.history.push_back(Arc::new(evidence));
		self.latest = Some(round);
		// Older rounds can no longer be challenged: their evidence and findings go.
		let keep_from = (round + 1).saturating_sub(self.keep_rounds);
		self.archive.forget_before(keep_from);
		self.states.retain(|(r, _), _| *r >= keep_from);
		self.segments.retain(|(r, _), _| *r >= keep_from);
		self.to_fetch.retain(|(r, _, _)| *r >= keep_from);
		for (peer, why, value) in flagged {
			if peer == self.me {
				continue;
			}
			tracing::warn!("round {round}: the update of {peer} {why} ({value:.3}); replaying it");
			let Some(target) = self.own_target(round, &peer) else { continue };
			self.start(round, peer, target, Purpose { accuse: true, challenges: vec![] });
		}
		self.release_evidence();
	}

	/// The position in `order` of the update that `order[i]`'s loss screen compares with
	/// this round: this trainer's own (honest, trained on other data, and not one a sender
	/// can steer its screen towards by its place in the round), or where it sent none,
	/// another sender's drawn with its secret. The next sender's, used before, let a sender
	/// place itself after a weak update; `bench/redteam.sh` measures what each catches.
	fn contrast(&self, round: RoundIndex, order: &[PeerId], i: usize) -> Option<usize> {
		if let Some(mine) = order.iter().position(|p| *p == self.me).filter(|j| *j != i) {
			return Some(mine);
		}
		(0..order.len())
			.filter(|j| *j != i)
			.min_by_key(|j| self.secret_rank(b"contrast", round, &order[*j]))
	}

	/// Up to the desk's number ([`GAUNTLET_PEERS`] in the daemon) of positions in `order` to
	/// loss-screen this round: other peers not flagged already, in an order drawn from this
	/// trainer's secret and the round.
	fn gauntlet_picks(
		&self,
		round: RoundIndex,
		order: &[PeerId],
		flagged: &[(PeerId, &str, f64)],
	) -> Vec<usize> {
		let mut picks: Vec<usize> = (0..order.len())
			.filter(|i| order[*i] != self.me && !flagged.iter().any(|(p, _, _)| *p == order[*i]))
			.collect();
		picks.sort_by_key(|i| self.secret_rank(b"", round, &order[*i]));
		picks.truncate(self.gauntlet_peers);
		picks
	}

	/// `peer`'s place in a draw that only this trainer can make: the hash of its secret, the
	/// draw's `tag`, the round and the peer.
	pub(super) fn secret_rank(&self, tag: &[u8], round: RoundIndex, peer: &PeerId) -> [u8; 32] {
		let key = [&self.secret[..], tag, &round.to_le_bytes(), &peer.to_bytes()].concat();
		sp_crypto_hashing::blake2_256(&key)
	}
}
