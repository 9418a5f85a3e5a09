//! The chain side of the fraud path: challenges of contributions the trainer's replays
//! refuted (once the chain has paid them), the challenges this trainer is drawn to judge,
//! and its votes: a commitment to the verdict, then (once the chain takes reveals) the
//! verdict with its salt, each resent until the chain shows it.
//!
//! A vote's salt is derived from a secret kept in the job's directory (`vote-secret`) and the
//! challenge's id, so a trainer restarted between its commitment and its reveal can still
//! reveal: the verdict is whichever of the two opens its commitment.

use std::{collections::BTreeSet, io::Read, path::Path};

use grid_primitives::{
	job::RoundIndex,
	work::{vote_commitment, Verdict, VoteSalt},
};
use libp2p::PeerId;

use super::{Action, Follower, CHALLENGE_TRIES, RESEND_BLOCKS};
use crate::{
	chain::{
		api,
		client::{Ballot, Block, Challenge},
		AccountId, ChainError, Result,
	},
	round::fraud::CheckRequest,
};

/// The trainer's vote secret kept at `path`, made (from the OS's randomness) on first use.
pub(super) fn vote_secret(path: &Path) -> Result<[u8; 32]> {
	let missing = |e| ChainError::Missing(format!("vote secret {}: {e}", path.display()));
	if let Ok(bytes) = std::fs::read(path) {
		return bytes
			.try_into()
			.map_err(|b: Vec<u8>| missing(format!("{} bytes, not 32", b.len())));
	}
	let mut secret = [0u8; 32];
	std::fs::File::open("/dev/urandom")
		.and_then(|mut f| f.read_exact(&mut secret))
		.map_err(|e| missing(e.to_string()))?;
	std::fs::write(path, secret).map_err(|e| missing(e.to_string()))?;
	Ok(secret)
}

/// The salt of this trainer's vote on challenge `id`: secret until revealed, and the same
/// after a restart.
fn vote_salt(secret: &[u8; 32], id: u64) -> VoteSalt {
	sp_crypto_hashing::blake2_256(&[&secret[..], &id.to_le_bytes()].concat())
}

/// Whether `challenge` takes reveals at block `number`: from its reveal block, or once every
/// member committed (as the pallet decides).
fn revealing(challenge: &Challenge, number: u32) -> bool {
	let members = &challenge.committee.0;
	let all_committed =
		!members.is_empty() && members.iter().all(|(_, b)| !matches!(b, Ballot::Pending));
	all_committed || number >= challenge.reveal_from
}

/// A contribution to challenge once the chain has paid it.
pub(super) struct Accusation {
	round: RoundIndex,
	accused: AccountId,
	/// Block at which the challenge was last sent (0: never).
	sent_at: u32,
	tries: u32,
	/// The open challenge of it (this trainer's or another's), watched to its end.
	open: Option<u64>,
	/// Challenges of it seen opened: one that ends undecided is sent again, at most
	/// [`MOST_CHALLENGES`] in all.
	challenges: u32,
}

/// What the chain shows of an accused contribution at a block.
#[derive(Clone, Copy, Debug)]
enum Seen {
	/// Marked challenged by challenge `id`, still `open` or decided for good (a challenge
	/// that ends undecided unmarks it).
	Challenged { id: u64, open: bool },
	/// Kept and not (or no longer) under challenge.
	Kept,
	/// Not kept: not yet, or (its round `settled`) never, or pruned with its round.
	Missing { settled: bool },
}

/// What to do with an accusation after a look at the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
	/// Nothing left to do: judged, never kept, or given up.
	Drop,
	/// Keep watching.
	Wait,
	/// Send the challenge (again).
	Send,
}

impl Accusation {
	fn new(round: RoundIndex, accused: AccountId) -> Self {
		Accusation { round, accused, sent_at: 0, tries: 0, open: None, challenges: 0 }
	}

	/// The accusation's next step at block `number`, given what the chain shows. A
	/// challenge decided (fraud proven or rejected) judged the contribution for good; one
	/// that ended undecided is sent again, so a committee that could not reach a majority
	/// (its members absent, or a Sybil among too few honest holders) does not clear a fraud.
	fn next(&mut self, seen: Seen, number: u32) -> Next {
		let (round, accused) = (self.round, &self.accused);
		match seen {
			Seen::Challenged { id, open: false } => {
				tracing::info!("round {round}: challenge {id} of {accused} decided");
				return Next::Drop;
			}
			Seen::Challenged { id, open: true } => {
				if self.open != Some(id) {
					tracing::info!("round {round}: {accused} is under challenge {id}");
					self.open = Some(id);
					self.challenges += 1;
				}
				return Next::Wait;
			}
			Seen::Missing { settled: true } => {
				tracing::info!("round {round}: nothing of {accused} kept; no challenge");
				return Next::Drop;
			}
			Seen::Missing { settled: false } => return Next::Wait,
			Seen::Kept => {}
		}
		if let Some(id) = self.open.take() {
			if self.challenges >= MOST_CHALLENGES {
				tracing::warn!(
					"round {round}: challenge {id} of {accused} ended undecided, {} in all; \
					 giving up",
					self.challenges
				);
				return Next::Drop;
			}
			tracing::info!("round {round}: challenge {id} of {accused} ended undecided; again");
			(self.sent_at, self.tries) = (0, 0);
		}
		if self.sent_at != 0 && number < self.sent_at + RESEND_BLOCKS {
			return Next::Wait;
		}
		if self.tries == CHALLENGE_TRIES {
			tracing::warn!("round {round}: the challenge of {accused} was not taken");
			return Next::Drop;
		}
		(self.sent_at, self.tries) = (number, self.tries + 1);
		Next::Send
	}
}

/// Challenges of one contribution a trainer sees through: each costs its challenger a fee, and
/// one ends undecided only when its committee could not (or would not) reach a majority, so a
/// fresh draw is worth a few tries, not an unbounded number.
const MOST_CHALLENGES: u32 = 3;

impl Follower {
	/// The trainer's accusations, verdicts and reports of equivocation.
	pub(super) async fn on_action(&mut self, action: Action) -> Result<()> {
		match action {
			Action::Accuse(round, peer) => {
				let Some(accused) = self.accounts_of(&[peer]).await?.pop() else {
					tracing::warn!("round {round}: {peer} is not a registered provider");
					return Ok(());
				};
				if !self.accusations.iter().any(|a| a.round == round && a.accused == accused) {
					tracing::info!("round {round}: will challenge the contribution of {accused}");
					self.accusations.push(Accusation::new(round, accused));
				}
			}
			Action::Vote(challenge, verdict) => {
				self.votes.entry(challenge).or_insert((verdict, 0));
			}
			Action::ReportCommitments(evidence) => self.report_commitments(*evidence).await?,
		}
		Ok(())
	}

	/// Challenges accused contributions the chain has kept, paid or (a copy's claim) not (a
	/// contribution is challengeable once its round settled), and watches each challenge to
	/// its end ([`Accusation::next`]).
	pub(super) async fn pursue_accusations(
		&mut self,
		block: &Block,
		view: &super::JobNow,
	) -> Result<()> {
		let job = self.config.job;
		let number = block.number();
		let mut keep = Vec::new();
		for mut a in std::mem::take(&mut self.accusations) {
			let seen = match block.challenged(job, a.round, &a.accused).await? {
				Some(id) => Seen::Challenged { id, open: block.challenge_open(id).await? },
				None if block.contribution(job, a.round, &a.accused).await?.is_some() => Seen::Kept,
				None => {
					Seen::Missing { settled: view.round.as_ref().is_none_or(|r| r.index > a.round) }
				}
			};
			match a.next(seen, number) {
				Next::Drop => continue,
				Next::Wait => {}
				Next::Send => {
					let call = api::tx().jobs().challenge(job, a.round, a.accused);
					match self.chain.send("challenge", &call, &self.account).await {
						Ok(()) => tracing::info!("round {}: challenged {}", a.round, a.accused),
						Err(e) => tracing::warn!(
							"round {}: challenging {} failed: {e}",
							a.round,
							a.accused
						),
					}
				}
			}
			keep.push(a);
		}
		self.accusations = keep;
		Ok(())
	}

	/// Hands the challenges this trainer was drawn for to the trainer, and sends its votes
	/// (commitment, then reveal) until the chain shows them.
	pub(super) async fn follow_assignments(&mut self, block: &Block) -> Result<()> {
		let number = block.number();
		// The view function scans every challenge: asked only when the job has one open.
		let assigned = match block.challenges_open_on(self.config.job).await? {
			0 => Vec::new(),
			_ => block.assigned_challenges(&self.me).await?,
		};
		let mut open = BTreeSet::new();
		let mut rounds = Vec::new();
		for (id, challenge) in assigned {
			if challenge.job != self.config.job {
				continue;
			}
			let mine = challenge.committee.0.iter().find(|(who, _)| *who == self.me);
			let Some((_, ballot)) = mine else { continue };
			if matches!(ballot, Ballot::Revealed(_)) {
				continue;
			}
			open.insert(id);
			rounds.push(challenge.round);
			if !self.requested.contains(&id) {
				self.request_check(block, id, &challenge).await?;
				self.requested.insert(id);
			}
			match ballot {
				Ballot::Pending => self.commit(id, number).await,
				Ballot::Committed(hash) if revealing(&challenge, number) => {
					self.reveal(id, hash.0, number).await
				}
				_ => {}
			}
		}
		self.votes.retain(|id, _| open.contains(id));
		self.reveals.retain(|id, _| open.contains(id));
		let judged: BTreeSet<RoundIndex> = rounds.into_iter().collect();
		self.shared().check_seeds.retain(|round, _| judged.contains(round));
		Ok(())
	}

	/// Sends the commitment to this trainer's verdict on challenge `id`, once it has one.
	async fn commit(&mut self, id: u64, number: u32) {
		let salt = vote_salt(&self.vote_secret, id);
		let Some((verdict, sent_at)) = self.votes.get_mut(&id) else { return };
		if *sent_at != 0 && number < *sent_at + RESEND_BLOCKS {
			return;
		}
		*sent_at = number;
		let commitment = vote_commitment(id, &self.me, *verdict, &salt);
		let call = api::tx().jobs().commit_vote(id, commitment);
		match self.chain.send("commit a vote", &call, &self.account).await {
			Ok(()) => tracing::info!("challenge {id}: committed to a verdict"),
			Err(e) => tracing::warn!("challenge {id}: committing a vote failed: {e}"),
		}
	}

	/// Reveals the verdict this trainer committed to on challenge `id` (`committed`, as the
	/// chain shows it: the verdict is whichever opens it with this trainer's salt).
	async fn reveal(&mut self, id: u64, committed: [u8; 32], number: u32) {
		let salt = vote_salt(&self.vote_secret, id);
		let opens = |v: &Verdict| vote_commitment(id, &self.me, *v, &salt).0 == committed;
		let Some(verdict) = [Verdict::Valid, Verdict::Invalid].into_iter().find(opens) else {
			tracing::warn!("challenge {id}: the chain holds a commitment this trainer cannot open");
			return;
		};
		let sent_at = self.reveals.entry(id).or_insert(0);
		if *sent_at != 0 && number < *sent_at + RESEND_BLOCKS {
			return;
		}
		*sent_at = number;
		let call = api::tx().jobs().reveal_vote(id, subxt::utils::Static(verdict), salt);
		match self.chain.send("reveal a vote", &call, &self.account).await {
			Ok(()) => tracing::info!("challenge {id}: voted {verdict:?}"),
			Err(e) => tracing::warn!("challenge {id}: revealing a vote failed: {e}"),
		}
	}

	/// Asks the trainer to judge the contribution `challenge` (number `id`) disputes.
	pub(super) async fn request_check(
		&mut self,
		block: &Block,
		id: u64,
		challenge: &Challenge,
	) -> Result<()> {
		let (round, accused) = (challenge.round, challenge.accused);
		let Some(view) = block.provider(&accused).await? else {
			tracing::warn!("challenge {id}: {accused} is not registered; nothing to replay");
			return Ok(());
		};
		let Ok(peer) = PeerId::from_bytes(&view.provider.peer_id) else {
			tracing::warn!("challenge {id}: {accused} registered a bad peer id");
			return Ok(());
		};
		// Paid, or a claim of another's update kept unpaid (a copy): either is judged.
		let Some(paid) = block.contribution(self.config.job, round, &accused).await? else {
			tracing::warn!("challenge {id}: no contribution of {accused} in round {round} kept");
			return Ok(());
		};
		tracing::info!("challenge {id}: drawn to judge {accused}'s update for round {round}");
		// The round may be older than the seeds kept while following the chain.
		let seed = block.round_seed(self.config.job, round).await?;
		// The randomness the committee was drawn with: the hash of the block before the
		// draw's, which the accused could not know when it committed.
		let draw = self.chain.block_hash(challenge.draw_at.saturating_sub(1)).await?;
		let mut s = self.shared();
		if let Some(seed) = seed {
			s.check_seeds.insert(round, seed);
		}
		s.accounts.insert(peer.to_bytes(), accused);
		s.checks.push(CheckRequest {
			challenge: id,
			round,
			accused: peer,
			update: paid.update_commitment.0,
			start_state: paid.start_state.0,
			steps: paid.inner_steps,
			draw,
		});
		Ok(())
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn accusation() -> Accusation {
		Accusation::new(3, AccountId::from([7; 32]))
	}

	/// Feeds `steps` (block, what the chain shows) and returns the accusation's answers.
	fn run(a: &mut Accusation, steps: &[(u32, Seen)]) -> Vec<Next> {
		steps.iter().map(|&(number, seen)| a.next(seen, number)).collect()
	}

	#[test]
	fn a_challenge_that_ends_undecided_is_sent_again_and_a_decided_one_never() {
		let mut a = accusation();
		let open = |id| Seen::Challenged { id, open: true };
		let steps = [
			(9, Seen::Missing { settled: false }), // the round not settled yet
			(10, Seen::Kept),                      // paid: challenge it
			(11, Seen::Kept),                      // not in a block yet: wait
			(12, open(1)),
			(20, open(1)),
			(30, Seen::Kept), // unmarked: it ended undecided
			(31, open(2)),
			(40, Seen::Challenged { id: 2, open: false }), // decided for good
		];
		use Next::*;
		assert_eq!(run(&mut a, &steps), [Wait, Send, Wait, Wait, Wait, Send, Wait, Drop]);
	}

	#[test]
	fn a_fraud_no_committee_decides_is_given_up_after_a_few_challenges() {
		let mut a = accusation();
		for id in 1..=MOST_CHALLENGES {
			let number = 10 * id;
			assert_eq!(a.next(Seen::Kept, number), Next::Send, "challenge {id}");
			assert_eq!(
				a.next(Seen::Challenged { id: id.into(), open: true }, number + 1),
				Next::Wait
			);
		}
		assert_eq!(a.next(Seen::Kept, 100), Next::Drop, "every challenge ended undecided");
	}

	#[test]
	fn another_trainers_challenge_is_watched_not_duplicated_and_a_pruned_round_ends_it() {
		// Another trainer's challenge is open when this one first looks: nothing is sent.
		let mut a = accusation();
		let open = Seen::Challenged { id: 5, open: true };
		assert_eq!(run(&mut a, &[(10, open), (11, open)]), [Next::Wait, Next::Wait]);
		// It ended undecided and the round was pruned at once: nothing left to challenge.
		assert_eq!(a.next(Seen::Missing { settled: true }, 12), Next::Drop);
	}

	#[test]
	fn a_challenge_the_chain_does_not_take_is_resent_a_few_times() {
		let mut a = accusation();
		let answers: Vec<Next> = (10..=20).map(|n| a.next(Seen::Kept, n)).collect();
		let sends: Vec<u32> =
			(10..=20).zip(&answers).filter(|(_, n)| **n == Next::Send).map(|(b, _)| b).collect();
		assert_eq!(sends.len() as u32, CHALLENGE_TRIES);
		assert!(sends.windows(2).all(|w| w[1] - w[0] >= RESEND_BLOCKS), "{sends:?}");
		assert_eq!(answers.last(), Some(&Next::Drop));
	}
}
