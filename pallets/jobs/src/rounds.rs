//! Rounds: opening, accepting proofs, settling (payouts, refunds, health, liveness), and the
//! end of a job.

use alloc::vec::Vec;
use codec::Encode;
use grid_primitives::job::{ContributionProof, JobId, RoundIndex};
use pallet_providers::traits::{ProviderHealth, ProviderRegistry};
use polkadot_sdk::polkadot_sdk_frame::{deps::sp_core::H256, prelude::*, traits::Randomness};

use crate::{
	agenda, audits, escrow, expiry, membership, payout, quorum_threshold, signature, slashing,
	AgendaItem, BalanceOf, Config, Contribution, Contributions, Error, Event, JobOf, JobStatus,
	Jobs, Pallet, Participants, Proofs, RoundMembers, RoundResults, RoundState, RoundStateOf,
	RoundSummary, Rounds, SignedProofOf, UnfilledAt, WeightInfo,
};

/// Domain separator of the randomness behind round seeds.
const ROUND_SEED_DOMAIN: &[u8] = b"grid/round-seed/v1";

/// The randomness behind round `index`'s data seed.
fn draw_seed<T: Config>(id: JobId, index: RoundIndex) -> H256 {
	T::Randomness::random(&(ROUND_SEED_DOMAIN, id, index).encode()).0
}

/// Opens round `index` of a running job with the participants admitted by then; its
/// settlement goes on the agenda at most `reach` blocks past its deadline. Its data seed is
/// `dealt` (drawn when the round before opened), or drawn now for a job's first round; the
/// next round's is drawn now, so that trainers of a job whose rounds overlap can train its
/// first steps while this round's updates are still being exchanged.
pub(crate) fn open<T: Config>(
	id: JobId,
	job: &JobOf<T>,
	index: RoundIndex,
	reach: u32,
	dealt: Option<H256>,
) -> DispatchResult {
	let now = frame_system::Pallet::<T>::block_number();
	let deadline = now.saturating_add(job.spec.training.round_blocks);
	// Established members first, then those admitted from this round (`RoundState::counted`).
	let (established, joiners): (Vec<_>, Vec<_>) = Participants::<T>::iter_prefix(id)
		.filter(|(_, p)| p.from_round <= index)
		.partition(|(_, p)| p.from_round < index);
	let established_count = established.len() as u32;
	let members: Vec<T::AccountId> =
		established.into_iter().chain(joiners).map(|(who, _)| who).collect();
	// At most `max_providers <= MaxParticipants` participants exist.
	let members = BoundedVec::truncate_from(members);
	let due = agenda::schedule::<T>(AgendaItem::Settle(id), deadline, reach)?;
	let count = members.len() as u32;
	let seed = dealt.unwrap_or_else(|| draw_seed::<T>(id, index));
	Rounds::<T>::insert(
		id,
		RoundState {
			index,
			opened_at: now,
			seed,
			next_seed: draw_seed::<T>(id, index.saturating_add(1)),
			deadline,
			due,
			members,
			established: established_count,
			joiners_in: 0,
			tally: BoundedVec::new(),
			quorum: None,
		},
	);
	Pallet::<T>::deposit_event(Event::RoundOpened {
		job: id,
		round: index,
		deadline,
		members: count,
	});
	Ok(())
}

/// Whether `signed` would be accepted now: a proof for the open round of a running job, by
/// one of its members, its first, validly signed. Returns the open round. Writes nothing (the
/// transaction pool runs it through `CheckProof`).
pub(crate) fn check<T: Config>(signed: &SignedProofOf<T>) -> Result<RoundStateOf<T>, Error<T>> {
	let id = signed.proof.job;
	let job = Jobs::<T>::get(id).ok_or(Error::<T>::UnknownJob)?;
	ensure!(job.status == JobStatus::Running, Error::<T>::NotRunning);
	let round = Rounds::<T>::get(id).ok_or(Error::<T>::NotRunning)?;
	let provider = &signed.proof.provider;
	let now = frame_system::Pallet::<T>::block_number();
	ensure!(signed.proof.round == round.index, Error::<T>::WrongRound);
	ensure!(now < round.deadline, Error::<T>::RoundClosed);
	ensure!(round.members.contains(provider), Error::<T>::NotRoundMember);
	ensure!(!Proofs::<T>::contains_key(id, provider), Error::<T>::DuplicateProof);
	ensure!(
		signed.proof.samples_fit_steps(job.spec.training.batch_size),
		Error::<T>::SamplesExceedSteps
	);
	ensure!(!signed.proof.claims_work_without_update(), Error::<T>::WorkWithoutUpdate);
	ensure!(
		job.spec.training.max_steps.is_none_or(|cap| signed.proof.inner_steps <= cap),
		Error::<T>::StepsOverCap
	);
	ensure!(signature::is_valid::<T>(signed), Error::<T>::BadSignature);
	Ok(round)
}

/// What a proof's submission did (its weight differs by far).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Submitted {
	/// Recorded it.
	Recorded,
	/// Recorded it, completing the quorum: the settlement was brought forward (a search of
	/// the agenda).
	Quorum,
	/// Recorded it as the round's last and settled the round.
	Settled,
}

/// Records a signed proof for the open round; settles the round when every member is in.
pub(crate) fn submit<T: Config>(signed: SignedProofOf<T>) -> Result<Submitted, DispatchError> {
	let mut round = check::<T>(&signed)?;
	let id = signed.proof.job;
	let provider = signed.proof.provider.clone();
	let now = frame_system::Pallet::<T>::block_number();

	let hash = signed.proof.result_model_hash;
	let votes = tally::<T>(&mut round, hash);
	if round.is_joiner(&provider) {
		round.joiners_in += 1;
	}
	Proofs::<T>::insert(id, &provider, signed);
	Pallet::<T>::deposit_event(Event::ProofAccepted {
		job: id,
		round: round.index,
		provider,
		result_model_hash: hash,
	});
	// Settled early only on two thirds of all members: later proofs of joiners could still
	// raise the members counted (`RoundState::counted`), and a quorum once reached stands.
	// Two thirds of those counted is decided when the round settles (`settled_quorum`).
	let reached = round.quorum.is_none() && votes >= quorum_threshold(round.members.len() as u32);
	if reached {
		round.quorum = Some(hash);
		Pallet::<T>::deposit_event(Event::QuorumReached {
			job: id,
			round: round.index,
			result_model_hash: hash,
		});
		let due = round.deadline.min(now.saturating_add(T::QuorumGrace::get()));
		if due < round.due {
			round.due = agenda::reschedule::<T>(AgendaItem::Settle(id), round.due, due);
		}
	}
	let all_in = round.tally.iter().map(|(_, n)| n).sum::<u32>() as usize == round.members.len();
	let due = round.due;
	Rounds::<T>::insert(id, round);
	if !all_in {
		return Ok(if reached { Submitted::Quorum } else { Submitted::Recorded });
	}
	agenda::unschedule::<T>(AgendaItem::Settle(id), due);
	settle::<T>(id);
	Ok(Submitted::Settled)
}

/// Keeps what `who` was paid `reward` for in `round`, so it can be challenged, with the
/// members that attested the quorum result and used its update (the holders). Returns
/// `who`'s position among the round's members and what was kept.
fn keep_evidence<T: Config>(
	id: JobId,
	round: &RoundStateOf<T>,
	who: &T::AccountId,
	reward: BalanceOf<T>,
	proofs: &[SignedProofOf<T>],
) -> Option<(usize, Contribution<BalanceOf<T>>)> {
	// Only members with a proof attesting the quorum result are paid.
	let attesters: Vec<_> = proofs
		.iter()
		.map(|s| &s.proof)
		.filter(|p| Some(p.result_model_hash) == round.quorum)
		.collect();
	let proof = attesters.iter().find(|p| &p.provider == who)?;
	let holders = holders(proof, &attesters)
		.filter_map(|h| round.members.iter().position(|m| m == &h.provider))
		.filter(|index| *index < 64)
		.fold(0u64, |set, index| set | (1 << index));
	let contribution = Contribution {
		base_model_hash: proof.base_model_hash,
		update_commitment: proof.own_update_commitment,
		start_state: proof.start_state,
		inner_steps: proof.inner_steps,
		samples_processed: proof.samples_processed,
		reward,
		holders,
	};
	Contributions::<T>::insert((id, round.index), who, &contribution);
	Some((round.members.iter().position(|m| m == who)?, contribution))
}

/// Keeps, unpaid, the claims of members whose proofs name an update another member was paid
/// for in `round`: a copy (honest trainers refuse it, so nobody used it). Its signer still
/// says it computed that update from its own start state on its own data, which a replay
/// refutes, so the claim can be challenged and audited like a paid contribution and costs the
/// copier its stake. Judged by those who hold the update: the paid author and its holders.
/// A proof naming no update (a zero commitment) never matches: paid work always names one
/// (`check` refuses `WorkWithoutUpdate`), or every member that sat the round out would be
/// kept as a copy of it. `paid` holds each paid member's position among the round's members
/// and its record.
fn keep_copies<T: Config>(
	id: JobId,
	round: &RoundStateOf<T>,
	proofs: &[SignedProofOf<T>],
	paid: &[(usize, Contribution<BalanceOf<T>>)],
) {
	for proof in proofs.iter().map(|s| &s.proof) {
		let is_paid = |(index, _): &(usize, _)| round.members.get(*index) == Some(&proof.provider);
		// A member that left is not paid for the round, and its claim is not kept either: its
		// stake lock may have lapsed as it left (none of its rounds had settled), so nothing
		// would back a verdict on it.
		if paid.iter().any(is_paid) || !membership::is_participant::<T>(id, &proof.provider) {
			continue;
		}
		let original =
			paid.iter().find(|(_, c)| c.update_commitment == proof.own_update_commitment);
		let Some((author, original)) = original else { continue };
		let author_bit = if *author < 64 { 1u64 << author } else { 0 };
		let claim = Contribution {
			base_model_hash: proof.base_model_hash,
			update_commitment: proof.own_update_commitment,
			start_state: proof.start_state,
			inner_steps: proof.inner_steps,
			samples_processed: proof.samples_processed,
			reward: Zero::zero(),
			holders: original.holders | author_bit,
		};
		Contributions::<T>::insert((id, round.index), &proof.provider, claim);
	}
}

/// Decides the quorum of a round that is settling without one reached early: a result at
/// least two thirds of the members counted attest (joiners count once they deliver, and every
/// proof that will come is in).
fn settled_quorum<T: Config>(id: JobId, round: &mut RoundStateOf<T>) {
	if round.quorum.is_some() {
		return;
	}
	let needed = quorum_threshold(round.counted());
	let Some((hash, _)) = round.tally.iter().find(|(_, votes)| *votes >= needed.max(1)) else {
		return;
	};
	round.quorum = Some(*hash);
	Pallet::<T>::deposit_event(Event::QuorumReached {
		job: id,
		round: round.index,
		result_model_hash: *hash,
	});
}

/// Counts a vote for `hash`; returns its votes so far.
fn tally<T: Config>(round: &mut RoundStateOf<T>, hash: H256) -> u32 {
	if let Some((_, votes)) = round.tally.iter_mut().find(|(h, _)| *h == hash) {
		*votes += 1;
		return *votes;
	}
	// One entry per distinct hash among at most `members` proofs: there is room.
	let _ = round.tally.try_push((hash, 1));
	1
}

/// Settles the open round of `id` (already off the agenda): removes members slashed below
/// their locks, pays, refunds, records health and liveness, then opens the next round or
/// completes the job.
pub(crate) fn settle<T: Config>(id: JobId) {
	let (Some(mut job), Some(mut round)) = (Jobs::<T>::get(id), Rounds::<T>::take(id)) else {
		return;
	};
	settled_quorum::<T>(id, &mut round);
	let proofs: Vec<_> = Proofs::<T>::drain_prefix(id).map(|(_, proof)| proof).collect();
	membership::drop_uncovered::<T>(id, &mut job);
	let payouts = payouts::<T>(id, &job, &round, &proofs);

	let mut paid = BalanceOf::<T>::zero();
	let mut paid_to = Vec::new();
	let mut kept = Vec::new();
	for (who, amount) in payouts {
		let moved = escrow::pay::<T>(&mut job, &who, amount);
		if !moved.is_zero() {
			paid = paid.saturating_add(moved);
			kept.extend(keep_evidence::<T>(id, &round, &who, moved, &proofs));
			Pallet::<T>::deposit_event(Event::RewardPaid {
				job: id,
				round: round.index,
				who: who.clone(),
				amount: moved,
			});
			paid_to.push((who, moved));
		}
	}
	// At most one write per member, paid or copy, as when every member is paid.
	keep_copies::<T>(id, &round, &proofs, &kept);
	let fee = escrow::take_fee::<T>(&mut job, T::ProtocolFee::get().mul_floor(paid));
	let rest = escrow::round_escrow::<T>(&job.spec).saturating_sub(paid).saturating_sub(fee);
	let refunded = escrow::refund::<T>(&mut job, rest);

	record_members::<T>(id, &mut job, &round, &proofs, &paid_to);
	if !paid_to.is_empty() {
		RoundMembers::<T>::insert(id, round.index, &round.members);
		audits::schedule::<T>(id, &job, round.index);
	}
	let now = frame_system::Pallet::<T>::block_number();
	RoundResults::<T>::insert(
		id,
		round.index,
		RoundSummary {
			result_model_hash: round.quorum,
			members: round.members.len() as u32,
			proofs: proofs.len() as u32,
			paid_participants: paid_to.len() as u32,
			paid,
			fee,
			refunded,
			settled_at: now,
			seed: round.seed,
		},
	);
	expiry::schedule_round::<T>(id, &job, round.index);
	Pallet::<T>::deposit_event(Event::RoundSettled {
		job: id,
		round: round.index,
		result_model_hash: round.quorum,
		paid,
		fee,
		refunded,
	});
	if round.quorum.is_some() {
		job.last_result = round.quorum;
	}
	job.rounds_settled = round.index.saturating_add(1);
	if job.rounds_settled >= job.spec.rounds {
		complete::<T>(id, &mut job);
	} else if job.cancel_requested {
		let refunded = end_unfinished::<T>(id, &mut job);
		Pallet::<T>::deposit_event(Event::JobCancelled { job: id, refunded });
	} else if understaffed_too_long::<T>(&mut job, round.quorum.is_some()) {
		let refunded = end_unfinished::<T>(id, &mut job);
		Pallet::<T>::deposit_event(Event::JobAbandoned { job: id, refunded });
	} else if open::<T>(
		id,
		&job,
		job.rounds_settled,
		agenda::next_round_reach::<T>(),
		Some(round.next_seed),
	)
	.is_err()
	{
		// Every block within reach of the next deadline is booked: the job cannot go on.
		let refunded = end_unfinished::<T>(id, &mut job);
		Pallet::<T>::deposit_event(Event::JobCancelled { job: id, refunded });
	}
	Jobs::<T>::insert(id, job);
}

/// Who is paid how much for a round: the members (still participating) that attested the
/// quorum result and whose update at least two thirds of the other attesters used. The round's
/// reward is split into one slot per member; qualified members share their slots in
/// proportion to samples processed, each capped by `membership::claim_cap` (whole batches its
/// declared hardware could do in its share of the round), see `payout::split`.
///
/// Two proofs carrying the same update commitment are one update claimed twice: only the one
/// strictly more attesters used can be paid (honest trainers keep the first commitment of an
/// update they hear and refuse copies), neither on a tie. The chain does not refuse the
/// second proof when it arrives: a copier that sees an honest commitment on gossip could
/// otherwise land its proof first and lock the author out.
fn payouts<T: Config>(
	id: JobId,
	job: &JobOf<T>,
	round: &RoundStateOf<T>,
	proofs: &[SignedProofOf<T>],
) -> Vec<(T::AccountId, BalanceOf<T>)> {
	let Some(hash) = round.quorum else { return Vec::new() };
	let attesters: Vec<_> = proofs
		.iter()
		.map(|signed| &signed.proof)
		.filter(|p| p.result_model_hash == hash && membership::is_participant::<T>(id, &p.provider))
		.collect();
	let needed = quorum_threshold(attesters.len().saturating_sub(1) as u32) as usize;
	let used: Vec<(&ContributionProof<T::AccountId>, usize)> =
		attesters.iter().map(|p| (*p, holders(p, &attesters).count())).collect();
	let qualified: Vec<(T::AccountId, u64)> = used
		.iter()
		.filter(|(p, used_by)| {
			let copied_as_much = used.iter().any(|(q, other)| {
				q.provider != p.provider
					&& q.own_update_commitment == p.own_update_commitment
					&& other >= used_by
			});
			*used_by >= needed && !copied_as_much
		})
		.map(|(p, _)| {
			let jobs = T::Providers::jobs_of(&p.provider).len() as u32;
			let cap = membership::claim_cap::<T>(job, &p.provider, jobs);
			(p.provider.clone(), p.samples_processed.min(cap))
		})
		.collect();
	let weights: Vec<u64> = qualified.iter().map(|(_, weight)| *weight).collect();
	let amounts = payout::split(job.spec.reward_per_round, reward_slots::<T>(job, round), &weights);
	qualified
		.into_iter()
		.zip(amounts)
		.map(|((who, _), amount)| (who, amount))
		.filter(|(_, amount)| !amount.is_zero())
		.collect()
}

/// How many members a round's reward is split for: one slot a member, or, when the job
/// bounds its fan-in, one for each update aggregated (the others are not drawn that round and
/// not paid for it, so a member's expected pay is the same either way).
fn reward_slots<T: Config>(job: &JobOf<T>, round: &RoundStateOf<T>) -> u32 {
	let members = round.members.len() as u32;
	job.spec.training.exchange.fan_in.map_or(members, |g| members.min(u32::from(g)))
}

/// The other attesters whose proofs say they used `proof`'s update: they hold it.
fn holders<'a, A: PartialEq>(
	proof: &'a ContributionProof<A>,
	attesters: &'a [&'a ContributionProof<A>],
) -> impl Iterator<Item = &'a ContributionProof<A>> + 'a {
	attesters
		.iter()
		.copied()
		.filter(move |q| q.provider != proof.provider && q.received.contains(&proof.provider))
}

/// Updates each still-participating member's record and health after a round; removes those
/// that missed `MaxMissedRounds` rounds in a row.
fn record_members<T: Config>(
	id: JobId,
	job: &mut JobOf<T>,
	round: &RoundStateOf<T>,
	proofs: &[SignedProofOf<T>],
	paid_to: &[(T::AccountId, BalanceOf<T>)],
) {
	for who in &round.members {
		let Some(mut participant) = Participants::<T>::get(id, who) else { continue };
		let submitted = proofs.iter().any(|p| &p.proof.provider == who);
		participant.missed_in_row =
			if submitted { 0 } else { participant.missed_in_row.saturating_add(1) };
		match paid_to.iter().find(|(p, _)| p == who) {
			Some((_, amount)) => {
				participant.rounds_paid = participant.rounds_paid.saturating_add(1);
				participant.earned = participant.earned.saturating_add(*amount);
				T::Providers::round_delivered(who);
			}
			None => T::Providers::round_missed(who),
		}
		let idle_too_long = participant.missed_in_row >= T::MaxMissedRounds::get();
		Participants::<T>::insert(id, who, participant);
		if idle_too_long {
			slashing::liveness::<T>(id, job, who);
		}
	}
}

/// Counts a settlement after which fewer than `min_providers` take part, or of a round
/// without a quorum (fewer than two thirds of its members worked together); whether that has
/// now lasted `MaxUnderstaffedRounds` settlements in a row. A job nobody works on must not
/// hold agenda slots (and the buyer's escrow) for the rest of its rounds; and a round without
/// a quorum pays nobody and refunds its reward, so a buyer whose own accounts hold a third of
/// a job's seats, withholding or splitting their attestations, would otherwise have honest
/// members train for it unpaid round after round (its accounts receive their updates).
fn understaffed_too_long<T: Config>(job: &mut JobOf<T>, quorum: bool) -> bool {
	job.understaffed_rounds = if job.participants < job.spec.min_providers || !quorum {
		job.understaffed_rounds.saturating_add(1)
	} else {
		0
	};
	job.understaffed_rounds >= T::MaxUnderstaffedRounds::get()
}

/// Marks a job completed with its last attested result; any escrow dust goes back.
fn complete<T: Config>(id: JobId, job: &mut JobOf<T>) {
	let dust = job.held();
	escrow::refund::<T>(job, dust);
	job.status = JobStatus::Completed { final_model_hash: job.last_result };
	membership::release_all::<T>(id, job);
	expiry::schedule_job::<T>(id, job);
	Pallet::<T>::deposit_event(Event::JobCompleted { job: id, final_model_hash: job.last_result });
}

/// The buyer's cancel: an open job ends now; a running one when its open round settles.
pub(crate) fn cancel_after_round<T: Config>(id: JobId, mut job: JobOf<T>) {
	let Some(round) = Rounds::<T>::get(id) else { return cancel_now::<T>(id) };
	job.cancel_requested = true;
	Jobs::<T>::insert(id, job);
	Pallet::<T>::deposit_event(Event::CancelScheduled { job: id, round: round.index });
}

/// Cancels a live job now: a round that already has a quorum is settled (and paid) first;
/// then the open round is dropped and the rest of the escrow returns to the buyer.
pub(crate) fn cancel_now<T: Config>(id: JobId) {
	if let Some(round) = Rounds::<T>::get(id).filter(|round| round.quorum.is_some()) {
		agenda::unschedule::<T>(AgendaItem::Settle(id), round.due);
		settle::<T>(id);
	}
	// Settling the last round completes the job: nothing is left to cancel.
	let Some(mut job) = Jobs::<T>::get(id).filter(|j| j.status.is_live()) else { return };
	if let Some(round) = Rounds::<T>::take(id) {
		agenda::unschedule::<T>(AgendaItem::Settle(id), round.due);
		let _ = Proofs::<T>::clear_prefix(id, u32::MAX, None);
	}
	let refunded = end_unfinished::<T>(id, &mut job);
	Jobs::<T>::insert(id, job);
	Pallet::<T>::deposit_event(Event::JobCancelled { job: id, refunded });
}

/// Ends `id` if it is still open (it never reached `min_providers`): the escrow returns and
/// its members' locks are released. A job that started meanwhile is left alone.
pub(crate) fn end_if_unfilled<T: Config>(id: JobId) {
	let Some(mut job) = Jobs::<T>::get(id).filter(|j| j.status == JobStatus::Open) else {
		return;
	};
	let refunded = end_unfinished::<T>(id, &mut job);
	Jobs::<T>::insert(id, job);
	Pallet::<T>::deposit_event(Event::JobUnfilled { job: id, refunded });
}

/// Takes an open job's `Unfilled` entry off the agenda (it started or ended): a job posted
/// and cancelled holds no slot a day ahead (see `agenda`'s docs).
pub(crate) fn drop_unfilled<T: Config>(id: JobId) {
	if let Some(at) = UnfilledAt::<T>::take(id) {
		agenda::unschedule::<T>(AgendaItem::Unfilled(id), at);
	}
}

/// What [`drop_unfilled`] costs (the calls that make it were benchmarked before it): its
/// entry's read and removal, and the block's agenda read and rewritten.
pub(crate) fn unfilled_weight<T: Config>() -> Weight {
	T::DbWeight::get().reads_writes(2, 2)
}

/// What a buyer's cancel does beyond its benchmark (which predates both): an open job's
/// `Unfilled` entry taken off the agenda, and the search for its `Expire`'s block.
pub(crate) fn cancel_extra_weight<T: Config>() -> Weight {
	unfilled_weight::<T>()
		.saturating_add(agenda::search_weight::<T>(agenda::next_round_reach::<T>()))
}

/// What root's cancel does beyond its benchmark: a buyer's cancel's, after a settlement's
/// searches (a round with a quorum is settled first).
pub(crate) fn force_cancel_extra_weight<T: Config>() -> Weight {
	cancel_extra_weight::<T>().saturating_add(agenda::settle_search_weight::<T>())
}

/// What a proof of a round of `members` members costs as it turned out: recording it, and
/// bringing its settlement forward when it completed the quorum, or settling the round when
/// it was the last (which may also have completed the quorum).
pub(crate) fn proof_weight<T: Config>(members: u32, submitted: Submitted) -> Weight {
	let reschedule = agenda::search_weight::<T>(agenda::caller_reach::<T>());
	match submitted {
		Submitted::Recorded => T::WeightInfo::record_proof(members),
		Submitted::Quorum => T::WeightInfo::record_proof(members).saturating_add(reschedule),
		Submitted::Settled => T::WeightInfo::submit_proof(members)
			.saturating_add(reschedule)
			.saturating_add(agenda::settle_search_weight::<T>()),
	}
}

/// Ends a live job before its last round (its open round, if any, is already dropped): the
/// rest of the escrow goes back and the providers are released. Returns the refund.
fn end_unfinished<T: Config>(id: JobId, job: &mut JobOf<T>) -> BalanceOf<T> {
	drop_unfilled::<T>(id);
	let held = job.held();
	let refunded = escrow::refund::<T>(job, held);
	job.status = JobStatus::Cancelled;
	membership::release_all::<T>(id, job);
	expiry::schedule_job::<T>(id, job);
	refunded
}
