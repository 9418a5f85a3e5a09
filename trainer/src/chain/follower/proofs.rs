//! The proofs of this trainer's rounds: signed once and stored before they are first sent
//! (a restarted trainer resends the same proof rather than equivocating), resent until the
//! chain has them; peers' gossiped proofs, checked for equivocation; and peers' equivocating
//! commitments the trainer heard, reported once.

use std::path::Path;

use codec::{Decode, Encode};
use grid_primitives::{
	job::{proof_payload, ContributionProof, JobId, RoundIndex},
	Hash,
};
use polkadot_sdk::sp_runtime::BoundedVec;

use super::{Follower, Pending};
use crate::{
	chain::{api, client::Block, AccountId, ChainError, Result, SignedProof},
	round::{coordinator::RoundReport, messages::Equivocation, misbehave},
};

impl Follower {
	/// Turns a finished round into a signed proof (or the one already signed for it).
	pub(super) async fn on_report(&mut self, report: RoundReport) -> Result<()> {
		let path = self.config.proof_dir.join(format!("round-{}.scale", report.round));
		let signed = match load_proof(&path)? {
			Some(signed) => signed,
			None => {
				let received = self.accounts_of(&report.received).await?;
				let signed = self.sign(&report, received);
				store_proof(&path, &signed)?;
				signed
			}
		};
		self.shared().outbox.push(signed.encode());
		if self.config.equivocate {
			let mut other = signed.proof.clone();
			other.samples_processed += 1;
			let second = self.sign_proof(other);
			tracing::warn!(
				"round {}: announcing a second, different proof (equivocating)",
				report.round
			);
			self.shared().outbox.push(second.encode());
		}
		self.pending.push(Pending { signed, sent_at: 0, seen: false });
		Ok(())
	}

	/// A peer's proof: kept if validly signed; a second, different one of the same provider
	/// for the same round is reported to the chain with the first.
	pub(super) async fn on_heard(&mut self, bytes: &[u8]) -> Result<()> {
		let bad = |why: String| ChainError::Missing(format!("ignored a gossiped proof: {why}"));
		let signed = SignedProof::decode(&mut &bytes[..]).map_err(|e| bad(e.to_string()))?;
		let proof = &signed.proof;
		if proof.job != self.config.job || proof.provider == self.me {
			return Ok(());
		}
		let payload = proof_payload(&self.chain.genesis(), proof);
		let valid = subxt_signer::sr25519::verify(
			&subxt_signer::sr25519::Signature(signed.signature),
			payload,
			&subxt_signer::sr25519::PublicKey(proof.provider.0),
		);
		if !valid {
			return Err(bad(format!("bad signature for {}", proof.provider)));
		}
		let key = (proof.round, proof.provider);
		let first = match self.heard_proofs.get(&key) {
			None => {
				// Keep a bounded window: proofs of the last few rounds.
				let floor = proof.round.saturating_sub(4);
				self.heard_proofs.retain(|(r, _), _| *r >= floor);
				self.heard_proofs.insert(key, signed);
				return Ok(());
			}
			Some(first) if *first == signed => return Ok(()),
			Some(first) => first.clone(),
		};
		if !self.reported.insert(key) {
			return Ok(());
		}
		tracing::warn!("{} signed two proofs for round {}: reporting", key.1, key.0);
		let call = api::tx()
			.jobs()
			.report_equivocation(subxt::utils::Static(first), subxt::utils::Static(signed));
		// Handed to the pool without waiting for a block: this round's own proof is due too.
		// Another trainer may report it first; the chain then refuses this report.
		match self.chain.send("report_equivocation", &call, &self.account).await {
			Ok(()) => tracing::info!("reported {} for equivocating in round {}", key.1, key.0),
			Err(e) => tracing::info!("equivocation report not taken: {e}"),
		}
		Ok(())
	}

	/// Reports a peer that signed two commitments for one round (evidence the trainer heard
	/// and checked), once a round and provider whichever the evidence: the chain punishes
	/// a slot once.
	pub(super) async fn report_commitments(&mut self, evidence: Equivocation) -> Result<()> {
		let bad = |why: String| ChainError::Missing(format!("equivocation evidence: {why}"));
		let peer = evidence.verify().map_err(|e| bad(e.to_string()))?;
		let round = evidence.first.commitment.round;
		let Some(offender) = self.accounts_of(&[peer]).await?.pop() else {
			tracing::warn!("round {round}: {peer} equivocated but is not a registered provider");
			return Ok(());
		};
		if !self.reported.insert((round, offender)) {
			return Ok(());
		}
		let [first, second] = evidence.for_chain().map_err(|e| bad(e.to_string()))?;
		tracing::warn!("{offender} signed two commitments for round {round}: reporting");
		let call = api::tx().jobs().report_commitment_equivocation(
			offender,
			subxt::utils::Static(first),
			subxt::utils::Static(second),
		);
		match self.chain.send("report_commitment_equivocation", &call, &self.account).await {
			Ok(()) => tracing::info!("reported {offender} for equivocating in round {round}"),
			Err(e) => tracing::info!("equivocation report not taken: {e}"),
		}
		Ok(())
	}

	/// Counts whether `round`, which this trainer worked and sent a proof for, reached a
	/// quorum (a paid round did); decides to leave the job when too many did not.
	async fn note_quorum(&mut self, block: &Block, round: RoundIndex, paid: bool) -> Result<()> {
		let quorum = match paid {
			true => Some(true),
			false => block.round_reached_quorum(self.config.job, round).await?,
		};
		let Some(quorum) = quorum else { return Ok(()) };
		if !quorum {
			tracing::warn!("round {round}: settled without a quorum");
		}
		// A trainer attesting other results on purpose (a buyer's account) stays.
		if self.quorums.settled(quorum) && self.leaving.is_none() && !self.config.attest_other {
			self.leaving = Some(0);
		}
		Ok(())
	}

	pub(super) fn sign(&self, report: &RoundReport, received: Vec<AccountId>) -> SignedProof {
		let mut proof = proof_of(self.config.job, self.me, report, received);
		if self.config.attest_other {
			proof.result_model_hash = misbehave::other_result(proof.result_model_hash);
		}
		self.sign_proof(proof)
	}

	pub(super) fn sign_proof(&self, proof: ContributionProof<AccountId>) -> SignedProof {
		let signature = self.account.sign(&proof_payload(&self.chain.genesis(), &proof)).0;
		SignedProof { proof, signature }
	}

	/// Sends the proofs the chain does not have yet for its open round; drops those whose
	/// round has closed.
	pub(super) async fn send_pending(&mut self, block: &Block, view: &super::JobNow) -> Result<()> {
		if self.pending.is_empty() {
			return Ok(());
		}
		let number = block.number();
		let open = view.round.as_ref().map(|r| (r.index, r.members.0.contains(&self.me)));
		// Only this trainer's own entry: the whole round's proofs are up to 64 of them, each
		// with its `received` list, read by every trainer every block.
		let on_chain = match open {
			Some(_) => block.proof_of(self.config.job, &self.me).await?,
			None => None,
		};
		let mut keep = Vec::new();
		for mut p in std::mem::take(&mut self.pending) {
			let round = p.signed.proof.round;
			p.seen |= on_chain.as_ref().is_some_and(|s| s.proof == p.signed.proof);
			let openable = open.is_some_and(|(index, member)| index == round && member);
			if !openable {
				// The round settled (or this trainer is not in it). A proof that completed
				// the round settled it in its own block, so it may never have been seen
				// among the open round's proofs: what was paid tells (a proof on chain is
				// not yet a payment, and a copy's claim is kept at zero).
				let contribution = block.contribution(self.config.job, round, &self.me).await?;
				let paid = contribution.is_some_and(|c| c.reward > 0);
				// A round it worked and sent a proof for (a proof that completed the round
				// settled it in its own block, unseen among the open round's).
				if p.seen || p.sent_at != 0 {
					self.note_quorum(block, round, paid).await?;
				}
				if !paid {
					let why = if p.seen {
						"too few of the others used this trainer's update, or it attested \
						 another model than the quorum's"
					} else {
						"the proof came too late, the round had no quorum, or too few of the \
						 others used this trainer's update"
					};
					tracing::warn!("round {round}: not paid: {why}");
				}
				self.shared().unsent -= 1;
				continue;
			}
			if p.seen {
				keep.push(p);
				continue;
			}
			// Resend when not included two blocks after sending (the node may have
			// restarted and lost its pool).
			if p.sent_at == 0 || number >= p.sent_at + 2 {
				let call = api::tx().jobs().submit_proof(subxt::utils::Static(p.signed.clone()));
				match self.chain.send("submit_proof", &call, &self.account).await {
					Ok(()) => tracing::info!("round {round}: proof sent"),
					Err(e) => tracing::warn!("round {round}: sending the proof failed: {e}"),
				}
				p.sent_at = number;
			}
			keep.push(p);
		}
		self.pending = keep;
		Ok(())
	}
}

/// What `me` attests of `report`, a round of `job` in which it used the updates of
/// `received`. A round it sent nothing in claims nothing: a zero update, start state, steps
/// and samples, which the chain takes (`ContributionProof::claims_work_without_update`).
fn proof_of(
	job: JobId,
	me: AccountId,
	report: &RoundReport,
	received: Vec<AccountId>,
) -> ContributionProof<AccountId> {
	let own = report.own_update.unwrap_or_default();
	let loss = report.train_loss.filter(|l| l.is_finite() && *l >= 0.0).unwrap_or(0.0);
	ContributionProof {
		job,
		round: report.round,
		provider: me,
		base_model_hash: Hash::from(report.base_model_hash),
		own_update_commitment: Hash::from(own.update),
		start_state: Hash::from(own.start_state),
		inner_steps: own.steps,
		result_model_hash: Hash::from(report.result_model_hash),
		samples_processed: own.samples,
		train_loss_micros: (f64::from(loss) * 1e6).min(f64::from(u32::MAX)) as u32,
		received: BoundedVec::truncate_from(received),
	}
}

fn load_proof(path: &Path) -> Result<Option<SignedProof>> {
	if !path.exists() {
		return Ok(None);
	}
	let bytes = std::fs::read(path)
		.map_err(|e| ChainError::Missing(format!("reading {}: {e}", path.display())))?;
	SignedProof::decode(&mut &bytes[..])
		.map(Some)
		.map_err(|e| ChainError::Missing(format!("{} is not a signed proof: {e}", path.display())))
}

/// Writes a proof atomically (a crash leaves the old file or the new one, never half).
fn store_proof(path: &Path, signed: &SignedProof) -> Result<()> {
	let tmp = path.with_extension("tmp");
	std::fs::write(&tmp, signed.encode())
		.and_then(|_| std::fs::rename(&tmp, path))
		.map_err(|e| ChainError::Missing(format!("writing {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	pub(super) fn stored_proofs_come_back_identical_and_corrupt_ones_are_refused() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("round-3.scale");
		assert!(load_proof(&path).unwrap().is_none());
		let account = subxt_signer::sr25519::dev::bob();
		let proof = ContributionProof {
			job: 1,
			round: 3,
			provider: account.public_key().to_account_id(),
			base_model_hash: Hash::repeat_byte(1),
			own_update_commitment: Hash::repeat_byte(2),
			start_state: Hash::repeat_byte(4),
			inner_steps: 20,
			result_model_hash: Hash::repeat_byte(3),
			samples_processed: 640,
			train_loss_micros: 2_000_000,
			received: BoundedVec::truncate_from(vec![]),
		};
		let signed = SignedProof { signature: account.sign(&proof.encode()).0, proof };
		store_proof(&path, &signed).unwrap();
		assert_eq!(load_proof(&path).unwrap(), Some(signed));
		std::fs::write(&path, b"junk").unwrap();
		let err = load_proof(&path).unwrap_err().to_string();
		assert!(err.contains("round-3.scale") && err.contains("not a signed proof"), "{err}");
	}

	#[test]
	fn a_round_sent_nothing_in_is_proved_as_no_work_and_a_contributed_one_as_committed() {
		use crate::round::coordinator::ClaimedWork;
		let me = subxt_signer::sr25519::dev::bob().public_key().to_account_id();
		let mut report = RoundReport {
			round: 4,
			base_model_hash: [1; 32],
			result_model_hash: [3; 32],
			own_update: None,
			train_loss: None,
			received: Vec::new(),
		};
		// Sat out (restarted inside a round it had committed to, or trained no step): the
		// chain refuses work claimed under a zero update, so none may be.
		let nothing = proof_of(7, me, &report, Vec::new());
		assert!(nothing.own_update_commitment.is_zero() && !nothing.claims_work_without_update());
		assert_eq!((nothing.inner_steps, nothing.samples_processed), (0, 0));
		let work = ClaimedWork { update: [2; 32], start_state: [4; 32], steps: 20, samples: 640 };
		(report.own_update, report.train_loss) = (Some(work), Some(f32::NAN));
		let claimed = proof_of(7, me, &report, Vec::new());
		assert!(!claimed.claims_work_without_update());
		assert_eq!(claimed.own_update_commitment, Hash::repeat_byte(2));
		assert_eq!(claimed.start_state, Hash::repeat_byte(4));
		assert_eq!((claimed.inner_steps, claimed.samples_processed), (20, 640));
		assert_eq!(claimed.train_loss_micros, 0, "a loss that is no number is not stated");
	}
}
