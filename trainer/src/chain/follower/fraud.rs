//! The chain side of the fraud path: challenges of contributions the trainer's replays
//! refuted (once the chain has paid them), the challenges this trainer is drawn to judge,
//! and its votes, each resent until the chain shows it.

use std::collections::BTreeSet;

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;

use super::{Action, Follower, CHALLENGE_TRIES, RESEND_BLOCKS};
use crate::{
	chain::{api, client::JobView, AccountId, Result},
	round::fraud::CheckRequest,
};

/// A contribution to challenge once the chain has paid it.
pub(super) struct Accusation {
	round: RoundIndex,
	accused: AccountId,
	/// Block at which the challenge was last sent (0: never).
	sent_at: u32,
	tries: u32,
}

impl Follower {
	/// The trainer's accusations and verdicts.
	pub(super) async fn on_action(&mut self, action: Action) -> Result<()> {
		match action {
			Action::Accuse(round, peer) => {
				let Some(accused) = self.accounts_of(&[peer]).await?.pop() else {
					tracing::warn!("round {round}: {peer} is not a registered provider");
					return Ok(());
				};
				if !self.accusations.iter().any(|a| a.round == round && a.accused == accused) {
					tracing::info!("round {round}: will challenge the contribution of {accused}");
					self.accusations.push(Accusation { round, accused, sent_at: 0, tries: 0 });
				}
			}
			Action::Vote(challenge, verdict) => {
				self.votes.entry(challenge).or_insert((verdict, 0));
			}
		}
		Ok(())
	}

	/// Challenges accused contributions the chain has paid (a contribution is challengeable
	/// once its round settled); drops those challenged already, or never paid.
	pub(super) async fn pursue_accusations(&mut self, view: &JobView, number: u32) -> Result<()> {
		let job = self.config.job;
		let mut keep = Vec::new();
		for mut a in std::mem::take(&mut self.accusations) {
			if let Some(id) = self.chain.challenged(job, a.round, &a.accused).await? {
				tracing::info!("round {}: {} is under challenge {id}", a.round, a.accused);
				continue;
			}
			if self.chain.contribution(job, a.round, &a.accused).await?.is_none() {
				let settled = view.round.as_ref().is_none_or(|r| r.index > a.round);
				if settled {
					tracing::info!("round {}: {} was not paid; no challenge", a.round, a.accused);
				} else {
					keep.push(a);
				}
				continue;
			}
			if a.sent_at != 0 && number < a.sent_at + RESEND_BLOCKS {
				keep.push(a);
				continue;
			}
			if a.tries == CHALLENGE_TRIES {
				tracing::warn!("round {}: the challenge of {} was not taken", a.round, a.accused);
				continue;
			}
			let call = api::tx().jobs().challenge(job, a.round, a.accused);
			match self.chain.send("challenge", &call, &self.account).await {
				Ok(()) => tracing::info!("round {}: challenged {}", a.round, a.accused),
				Err(e) => {
					tracing::warn!("round {}: challenging {} failed: {e}", a.round, a.accused)
				}
			}
			a.sent_at = number;
			a.tries += 1;
			keep.push(a);
		}
		self.accusations = keep;
		Ok(())
	}

	/// Hands the challenges this trainer was drawn for to the trainer, and sends its votes
	/// until the chain shows them.
	pub(super) async fn follow_assignments(&mut self, number: u32) -> Result<()> {
		let assigned = self.chain.assigned_challenges(&self.me).await?;
		let mut open = BTreeSet::new();
		for (id, challenge) in assigned {
			if challenge.job != self.config.job {
				continue;
			}
			let voted = challenge.committee.0.iter().any(|(who, v)| *who == self.me && v.is_some());
			if voted {
				continue;
			}
			open.insert(id);
			if !self.requested.contains(&id) {
				self.request_check(id, challenge.round, challenge.accused).await?;
				self.requested.insert(id);
			}
			if let Some((verdict, sent_at)) = self.votes.get_mut(&id) {
				if *sent_at == 0 || number >= *sent_at + RESEND_BLOCKS {
					let call = api::tx().jobs().vote(id, subxt::utils::Static(*verdict));
					match self.chain.send("vote", &call, &self.account).await {
						Ok(()) => tracing::info!("challenge {id}: voted {verdict:?}"),
						Err(e) => tracing::warn!("challenge {id}: voting failed: {e}"),
					}
					*sent_at = number;
				}
			}
		}
		self.votes.retain(|id, _| open.contains(id));
		Ok(())
	}

	/// Asks the trainer to judge `accused`'s contribution to `round` for challenge `id`.
	pub(super) async fn request_check(
		&mut self,
		id: u64,
		round: RoundIndex,
		accused: AccountId,
	) -> Result<()> {
		let Some(view) = self.chain.provider(&accused).await? else {
			tracing::warn!("challenge {id}: {accused} is not registered; nothing to replay");
			return Ok(());
		};
		let Ok(peer) = PeerId::from_bytes(&view.provider.peer_id) else {
			tracing::warn!("challenge {id}: {accused} registered a bad peer id");
			return Ok(());
		};
		tracing::info!("challenge {id}: drawn to judge {accused}'s update for round {round}");
		let mut s = self.shared();
		s.accounts.insert(peer.to_bytes(), accused);
		s.checks.push(CheckRequest { challenge: id, round, accused: peer });
		Ok(())
	}
}
