//! Fraud challenges: a staked provider disputes a paid contribution, a committee drawn with
//! on-chain randomness re-executes it off chain and votes, and the majority decides who pays.
//! Every challenge costs the challenger `ChallengeFee` (to the fee collector, whatever the
//! outcome) besides the deposit it puts on hold.
//!
//! A challenge lives `VotingPeriod` blocks. `CommitteeDelay` blocks after it was opened the
//! agenda draws the committee, with the randomness of a block that did not exist when the
//! challenge was sent: the challenger cannot time its challenge to land on a committee of
//! its own accounts. Members then commit to a hidden verdict and reveal it in the last
//! `RevealPeriod` blocks (or as soon as every member committed), so no member can wait to
//! copy another's verdict instead of judging.
//!
//! A verdict needs a strict majority of the whole committee, not of the votes cast:
//!
//! - Fraud proven (a majority of the committee revealed `Invalid`): the accused's reward for
//!   the round is clawed back from its stake to the buyer, `FraudSlash` of its stake is taken
//!   (shares to the challenger, the buyer and the verifiers that voted `Invalid`, the rest
//!   burned), it loses a challenge on its health record and leaves the job; the challenger's
//!   deposit returns.
//! - Rejected (a majority revealed `Valid`): the challenger's deposit goes to the verifiers
//!   that voted `Valid`.
//! - Undecided (no majority by the deadline, or nobody left to draw): the deposit returns,
//!   nobody is punished for the update, and it may be challenged again within its window.
//!
//! A committee of four or more is drawn odd (four as three), so that its votes cannot tie.
//!
//! A challenge is decided as soon as a strict majority of the committee agrees and every
//! member that committed to a verdict has revealed it, or at its deadline. Members that never
//! revealed lose `AbsentVoterSlash` of their stake, and members that revealed the verdict the
//! majority decided against lose as much (`Outvoted`). Deciding before every committed
//! verdict is out let a member wrong by the majority reveal after the decision, when there
//! was nothing left to slash it in, or not at all, unpunished either way (the attackers'
//! Sybil voter did, once its honest co-members revealed first); a member that commits and
//! never reveals now holds the decision to the deadline, and pays `AbsentVoterSlash` there. The committee is drawn only from members that signed that they used the
//! disputed update, so nobody is slashed for not judging an update it never had.
//!
//! An audit (`audits.rs`) is a challenge with no challenger: no fee, no deposit, and on fraud
//! the challenger's share of the slash is burned.

use alloc::vec::Vec;
use codec::Encode;
use grid_primitives::{
	job::{JobId, RoundIndex},
	work::{vote_commitment, Verdict, VoteSalt},
};
use pallet_providers::{
	traits::{ProviderHealth, ProviderRegistry, ProviderSlashing},
	SlashReason,
};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{
		sp_core::H256,
		sp_runtime::traits::{BlakeTwo256, Hash},
	},
	prelude::*,
	traits::{
		fungible::{Mutate, MutateHold},
		tokens::{Precision, Preservation},
		Randomness,
	},
};

use crate::{
	agenda, escrow, membership, slashing, Accuser, AgendaItem, BalanceOf, Ballot, Challenge,
	ChallengeId, ChallengeOf, ChallengeOutcome, Challenged, Challenges, Config, Contribution,
	Contributions, Error, Event, HoldReason, JobOf, Jobs, NextChallengeId, OpenAuditsOn,
	OpenChallengesBy, OpenChallengesOn, Pallet, Participants, RemovalReason, RoundMembers,
	RoundResults,
};

/// Domain separator of the randomness that draws a committee.
const COMMITTEE_DOMAIN: &[u8] = b"grid/committee/v1";

/// Opens a challenge of `accused`'s contribution to `round` of `job` by `challenger` (a
/// registered provider or the job's buyer).
pub(crate) fn open<T: Config>(
	challenger: T::AccountId,
	job: JobId,
	round: RoundIndex,
	accused: T::AccountId,
) -> DispatchResult {
	ensure!(challenger != accused, Error::<T>::CannotChallengeSelf);
	let record = Jobs::<T>::get(job).ok_or(Error::<T>::UnknownJob)?;
	// A provider with stake, or the buyer: both pay the fee and risk the deposit, and the
	// buyer, who pays for the work, needs no stake to question it.
	ensure!(
		challenger == record.buyer || T::Providers::is_eligible(&challenger, Zero::zero()),
		Error::<T>::NotEligible
	);
	let summary = RoundResults::<T>::get(job, round).ok_or(Error::<T>::RoundNotSettled)?;
	let contribution =
		Contributions::<T>::get((job, round), &accused).ok_or(Error::<T>::NoSuchContribution)?;
	let now = frame_system::Pallet::<T>::block_number();
	// A job posted without a window has none, not one of the block its round settles in
	// (whose number is known in advance).
	ensure!(
		!record.spec.challenge_window.is_zero()
			&& now <= window_closes::<T>(&record, summary.settled_at),
		Error::<T>::ChallengeWindowClosed
	);
	ensure!(!Challenged::<T>::contains_key((job, round), &accused), Error::<T>::AlreadyChallenged);
	ensure!(
		OpenChallengesBy::<T>::get(&challenger) < T::MaxChallengesPerChallenger::get(),
		Error::<T>::TooManyChallengesByChallenger
	);
	ensure!(
		OpenChallengesOn::<T>::get(job) < T::MaxChallengesPerJob::get(),
		Error::<T>::TooManyChallengesOnJob
	);

	let id = NextChallengeId::<T>::get();
	// Drawn later, with randomness from after this block; checked now so that nobody pays for
	// a challenge nobody could judge.
	ensure!(
		candidates::<T>(job, round, &record, &contribution, Some(&challenger), &accused)
			.take(T::MinCommittee::get() as usize)
			.count() as u32
			>= T::MinCommittee::get(),
		Error::<T>::NoVerifiers
	);
	let deposit = T::ChallengeDeposit::get();
	T::Currency::hold(&HoldReason::ChallengeDeposit.into(), &challenger, deposit)
		.map_err(|_| Error::<T>::InsufficientBalance)?;
	// Non-refundable, and to the fee collector rather than the voters: a challenger whose own
	// accounts sit on the committee cannot recycle it.
	T::Currency::transfer(
		&challenger,
		&T::FeeCollector::get(),
		T::ChallengeFee::get(),
		Preservation::Preserve,
	)
	.map_err(|_| Error::<T>::InsufficientBalance)?;
	let deadline = now.saturating_add(T::VotingPeriod::get());
	let reveal_from = deadline.saturating_sub(T::RevealPeriod::get());
	let draw_due = now.saturating_add(T::CommitteeDelay::get());
	let draw_at =
		agenda::schedule::<T>(AgendaItem::Draw(id), draw_due, agenda::caller_reach::<T>())?;
	let due = agenda::schedule::<T>(AgendaItem::Decide(id), deadline, agenda::caller_reach::<T>())?;

	store_open::<T>(
		id,
		Challenge {
			job,
			round,
			accused: accused.clone(),
			accuser: Accuser::Challenger { who: challenger.clone(), deposit },
			draw_at,
			committee: BoundedVec::new(),
			reveal_from,
			deadline,
			due,
		},
	);
	Pallet::<T>::deposit_event(Event::ChallengeOpened {
		id,
		job,
		round,
		accused,
		challenger,
		draw_at,
		deadline,
	});
	Ok(())
}

/// Stores challenge `id` as open: counted on its job (and challenger), its contribution
/// marked challenged and the accused's stake kept for the dispute.
pub(crate) fn store_open<T: Config>(id: ChallengeId, challenge: ChallengeOf<T>) {
	NextChallengeId::<T>::put(id.saturating_add(1));
	Challenged::<T>::insert((challenge.job, challenge.round), &challenge.accused, id);
	T::Providers::dispute_opened(&challenge.accused, challenge.job);
	let increment = |n: &mut u32| *n = n.saturating_add(1);
	match challenge.accuser.challenger() {
		Some(challenger) => {
			OpenChallengesBy::<T>::mutate(challenger, increment);
			OpenChallengesOn::<T>::mutate(challenge.job, increment);
		}
		None => OpenAuditsOn::<T>::mutate(challenge.job, increment),
	}
	Challenges::<T>::insert(id, challenge);
}

/// What opening a challenge searches of the agenda beyond its benchmark: blocks for its draw
/// and its decision, each within a caller's reach.
pub(crate) fn open_search_weight<T: Config>() -> Weight {
	agenda::search_weight::<T>(agenda::caller_reach::<T>()).saturating_mul(2)
}

/// Draws challenge `id`'s committee (its agenda entry came due). Fewer than `MinCommittee`
/// left to draw (the holders left the job or lost their stake since) decides it at once,
/// undecided, with nobody on the committee (so nobody slashed for not voting).
pub(crate) fn draw<T: Config>(id: ChallengeId) {
	let Some(mut challenge) = Challenges::<T>::get(id) else { return };
	if challenge.drawn() {
		return;
	}
	let Some(contribution) =
		Contributions::<T>::get((challenge.job, challenge.round), &challenge.accused)
	else {
		return;
	};
	let Some(record) = Jobs::<T>::get(challenge.job) else { return };
	let holders = candidates::<T>(
		challenge.job,
		challenge.round,
		&record,
		&contribution,
		challenge.accuser.challenger(),
		&challenge.accused,
	);
	let Some(committee) = draw_committee::<T>(id, challenge.job, holders, T::MaxCommittee::get())
	else {
		// Still undrawn: nobody on the committee, nobody slashed for not voting.
		agenda::unschedule::<T>(AgendaItem::Decide(id), challenge.due);
		Challenges::<T>::insert(id, challenge);
		resolve::<T>(id);
		return;
	};
	challenge.committee = committee;
	let committee = challenge.committee.iter().map(|(who, _)| who.clone()).collect();
	let reveal_from = challenge.reveal_from;
	Challenges::<T>::insert(id, challenge);
	Pallet::<T>::deposit_event(Event::CommitteeDrawn { id, committee, reveal_from });
}

/// The last block at which what `job` settled at `settled_at` may be challenged.
pub(crate) fn window_closes<T: Config>(
	job: &JobOf<T>,
	settled_at: BlockNumberFor<T>,
) -> BlockNumberFor<T> {
	settled_at.saturating_add(job.spec.challenge_window)
}

/// The last block at which a challenge of what `job` settled at `settled_at` may still be
/// voted on: its window, then a whole voting period.
pub(crate) fn last_vote<T: Config>(
	job: &JobOf<T>,
	settled_at: BlockNumberFor<T>,
) -> BlockNumberFor<T> {
	window_closes::<T>(job, settled_at).saturating_add(T::VotingPeriod::get())
}

/// The members of `round` of `job` (`record`) that may judge `contribution`: those whose
/// signed proofs say they used its update, other than the two parties (an audit has one),
/// still in the job, able to re-execute the round, and registered. A holder signed that it
/// used the update, and as a participant it has the job's base model and dataset: it can
/// re-execute the update, so its absence is its own fault (members that never had the update
/// are never drawn, so never slashed for not voting). In a job whose rounds overlap, a round's
/// first steps trained from the round before's base, which a member that joined at this round
/// never held: it cannot judge the round, and is not drawn (it had been, and was slashed for
/// the vote it could not cast).
pub(crate) fn candidates<'a, T: Config>(
	job: JobId,
	round: RoundIndex,
	record: &JobOf<T>,
	contribution: &'a Contribution<BalanceOf<T>>,
	challenger: Option<&'a T::AccountId>,
	accused: &'a T::AccountId,
) -> impl Iterator<Item = T::AccountId> + 'a {
	let members = RoundMembers::<T>::get(job, round).unwrap_or_default();
	let overlapping = record.spec.training.overlap_steps > 0 && round > 0;
	members
		.into_iter()
		.enumerate()
		.filter(|(index, _)| contribution.held_by(*index))
		.map(|(_, who)| who)
		.filter(move |who| Some(who) != challenger && who != accused)
		.filter(move |who| {
			Participants::<T>::get(job, who)
				.is_some_and(|member| !(overlapping && member.from_round >= round))
		})
		.filter(|who| T::Providers::is_eligible(who, Zero::zero()))
		// Slashed since below what its jobs lock: it leaves them as they settle, and judges
		// nothing meanwhile.
		.filter(T::Providers::covers_jobs)
}

/// A drawn committee: each member with its ballot.
pub(crate) type Committee<T> =
	BoundedVec<(<T as frame_system::Config>::AccountId, Ballot), <T as Config>::MaxCommittee>;

/// Up to `size` (at most `MaxCommittee`) of `candidates`, in an order drawn from on-chain
/// randomness; `None` when fewer than `MinCommittee` are left to draw (nobody may decide).
pub(crate) fn draw_committee<T: Config>(
	id: ChallengeId,
	job: JobId,
	candidates: impl Iterator<Item = T::AccountId>,
	size: u32,
) -> Option<Committee<T>> {
	let (seed, _) = T::Randomness::random(&(COMMITTEE_DOMAIN, job, id).encode());
	let mut ranked: Vec<(H256, T::AccountId)> =
		candidates.map(|who| (BlakeTwo256::hash_of(&(seed, &who)), who)).collect();
	let ranked_len = ranked.len() as u32;
	ranked.sort_by_key(|candidate| candidate.0);
	let chosen = ranked.into_iter().map(|(_, who)| (who, Ballot::Pending));
	let committee =
		BoundedVec::truncate_from(chosen.take(odd(size, ranked_len) as usize).collect());
	(committee.len() as u32 >= T::MinCommittee::get()).then_some(committee)
}

/// How many of `available` candidates a committee of at most `size` takes: an even number of
/// four or more is drawn one smaller, so that its votes cannot tie (a tie decides nothing,
/// and one Sybil beside one honest member would leave a fraud undecided). Two stay two: one
/// member alone would decide.
pub(crate) fn odd(size: u32, available: u32) -> u32 {
	match size.min(available) {
		n if n >= 4 && n % 2 == 0 => n - 1,
		n => n,
	}
}

/// Records `who`'s commitment to a hidden verdict.
pub(crate) fn commit_vote<T: Config>(
	who: T::AccountId,
	id: ChallengeId,
	commitment: H256,
) -> DispatchResult {
	let mut challenge = Challenges::<T>::get(id).ok_or(Error::<T>::UnknownChallenge)?;
	let now = frame_system::Pallet::<T>::block_number();
	ensure!(challenge.drawn(), Error::<T>::CommitteeNotDrawn);
	ensure!(now < challenge.reveal_from, Error::<T>::CommitPhaseOver);
	let slot = ballot_of::<T>(&mut challenge, &who)?;
	ensure!(*slot == Ballot::Pending, Error::<T>::AlreadyVoted);
	*slot = Ballot::Committed(commitment);
	Challenges::<T>::insert(id, challenge);
	Pallet::<T>::deposit_event(Event::VoteCommitted { id, who });
	Ok(())
}

/// Reveals `who`'s committed verdict; decides the challenge once a strict majority agrees
/// and no committed verdict is still hidden.
pub(crate) fn reveal_vote<T: Config>(
	who: T::AccountId,
	id: ChallengeId,
	verdict: Verdict,
	salt: VoteSalt,
) -> DispatchResult {
	let mut challenge = Challenges::<T>::get(id).ok_or(Error::<T>::UnknownChallenge)?;
	let now = frame_system::Pallet::<T>::block_number();
	ensure!(now < challenge.deadline, Error::<T>::VotingClosed);
	ensure!(challenge.drawn(), Error::<T>::CommitteeNotDrawn);
	ensure!(challenge.revealing(now), Error::<T>::RevealTooEarly);
	let slot = ballot_of::<T>(&mut challenge, &who)?;
	let committed = match *slot {
		Ballot::Pending => return Err(Error::<T>::NotCommitted.into()),
		Ballot::Revealed(_) => return Err(Error::<T>::AlreadyVoted.into()),
		Ballot::Committed(hash) => hash,
	};
	ensure!(committed == vote_commitment(id, &who, verdict, &salt), Error::<T>::RevealMismatch);
	*slot = Ballot::Revealed(verdict);
	let decided = challenge.settled_verdict().is_some() && !challenge.hides_verdicts();
	let due = challenge.due;
	Challenges::<T>::insert(id, challenge);
	Pallet::<T>::deposit_event(Event::Voted { id, who, verdict });
	if decided {
		agenda::unschedule::<T>(AgendaItem::Decide(id), due);
		resolve::<T>(id);
	}
	Ok(())
}

/// `who`'s ballot on `challenge`.
fn ballot_of<'a, T: Config>(
	challenge: &'a mut ChallengeOf<T>,
	who: &T::AccountId,
) -> Result<&'a mut Ballot, Error<T>> {
	challenge
		.committee
		.iter_mut()
		.find(|(member, _)| member == who)
		.map(|(_, ballot)| ballot)
		.ok_or(Error::<T>::NotOnCommittee)
}

/// Decides challenge `id` (already off the agenda): by the committee's majority, or
/// undecided without one.
pub(crate) fn resolve<T: Config>(id: ChallengeId) {
	let Some(challenge) = Challenges::<T>::take(id) else { return };
	close_count::<T>(&challenge);
	// Only a strict majority of the whole committee decides: votes cast are not enough, or a
	// single drawn Sybil whose honest co-members could not vote in time would convict.
	let outcome = match challenge.settled_verdict() {
		Some(Verdict::Invalid) => ChallengeOutcome::FraudProven,
		Some(Verdict::Valid) => ChallengeOutcome::Rejected,
		None => ChallengeOutcome::Undecided,
	};
	let (mut slashed, mut clawed_back) = (Zero::zero(), Zero::zero());
	match outcome {
		ChallengeOutcome::FraudProven => (slashed, clawed_back) = punish_fraud::<T>(&challenge),
		// Judged neither way: the contribution may be challenged again within its window.
		// Marked for good, a tie (one Sybil holder against one honest one) or a committee
		// whose holders left before the draw had cleared a fraud as surely as a verdict.
		ChallengeOutcome::Undecided => {
			Challenged::<T>::remove((challenge.job, challenge.round), &challenge.accused)
		}
		ChallengeOutcome::Rejected => {}
	}
	if let Accuser::Challenger { who, deposit } = &challenge.accuser {
		match outcome {
			ChallengeOutcome::Rejected => reward_verifiers::<T>(&challenge, who, *deposit),
			_ => release_deposit::<T>(who, *deposit),
		}
	}
	T::Providers::dispute_closed(&challenge.accused, challenge.job);
	// Whoever has not revealed by now never will: at the deadline, and before it only members
	// that let the commit phase pass (every committed member has revealed).
	let absent = slash_absent::<T>(&challenge);
	let outvoted = match challenge.settled_verdict() {
		Some(Verdict::Invalid) => slash_outvoted::<T>(&challenge, Verdict::Valid),
		Some(Verdict::Valid) => slash_outvoted::<T>(&challenge, Verdict::Invalid),
		None => 0,
	};
	Pallet::<T>::deposit_event(Event::ChallengeResolved {
		id,
		job: challenge.job,
		round: challenge.round,
		accused: challenge.accused,
		outcome,
		slashed,
		clawed_back,
		absent,
		outvoted,
	});
}

/// Claws the round's reward back from the accused's stake to the buyer, slashes it, marks the
/// lost challenge and removes it from the job. Returns (penalty slashed, reward clawed back).
fn punish_fraud<T: Config>(challenge: &ChallengeOf<T>) -> (BalanceOf<T>, BalanceOf<T>) {
	let Some(mut job) = Jobs::<T>::get(challenge.job) else { return Default::default() };
	let accused = &challenge.accused;
	let reward = Contributions::<T>::get((challenge.job, challenge.round), accused)
		.map(|c| c.reward)
		.unwrap_or_default();
	let to_buyer = [(job.buyer.clone(), Perbill::one())];
	let clawed_back = T::Providers::slash(accused, reward, SlashReason::Fraud, &to_buyer);
	job.clawed_back = job.clawed_back.saturating_add(clawed_back);

	let penalty = T::FraudSlash::get().mul_floor(slashing::slash_base::<T>(&job, accused));
	// An audit's reporter share is burned: the chain reported it.
	let mut recipients: Vec<_> = slashing::buyer_share::<T>(&job, accused).into_iter().collect();
	if let Some(challenger) = challenge.accuser.challenger() {
		recipients.push((challenger.clone(), T::ReporterShare::get()));
	}
	recipients.extend(verifier_shares::<T>(challenge, Verdict::Invalid));
	let slashed = T::Providers::slash(accused, penalty, SlashReason::Fraud, &recipients);
	T::Providers::challenge_lost(accused);
	membership::remove::<T>(challenge.job, &mut job, accused, RemovalReason::Fraud);
	Jobs::<T>::insert(challenge.job, job);
	(slashed, clawed_back)
}

/// `VerifierShare` of a fraud slash split evenly among the members that voted `verdict`
/// (those who voted with the outcome).
fn verifier_shares<T: Config>(
	challenge: &ChallengeOf<T>,
	verdict: Verdict,
) -> Vec<(T::AccountId, Perbill)> {
	let voters = challenge.committee.iter().filter(|(_, b)| *b == Ballot::Revealed(verdict));
	let count = voters.clone().count() as u32;
	let each = Perbill::from_parts(T::VerifierShare::get().deconstruct() / count.max(1));
	voters.map(|(who, _)| (who.clone(), each)).collect()
}

/// Counts a challenge (or audit) as no longer open for its challenger and job.
fn close_count<T: Config>(challenge: &ChallengeOf<T>) {
	// One less; the entry goes at zero, so the maps hold only what is open.
	let decrement = |n: &mut Option<u32>| *n = n.map(|n| n.saturating_sub(1)).filter(|n| *n > 0);
	match challenge.accuser.challenger() {
		Some(challenger) => {
			OpenChallengesBy::<T>::mutate_exists(challenger, decrement);
			OpenChallengesOn::<T>::mutate_exists(challenge.job, decrement);
		}
		None => OpenAuditsOn::<T>::mutate_exists(challenge.job, decrement),
	}
}

/// Returns `amount` of `challenger`'s deposit to it.
fn release_deposit<T: Config>(challenger: &T::AccountId, amount: BalanceOf<T>) {
	let _ = T::Currency::release(
		&HoldReason::ChallengeDeposit.into(),
		challenger,
		amount,
		Precision::BestEffort,
	);
}

/// Splits `challenger`'s `deposit` among the verifiers that voted `Valid` (the last one gets
/// the rounding remainder); what cannot be moved returns to the challenger.
fn reward_verifiers<T: Config>(
	challenge: &ChallengeOf<T>,
	challenger: &T::AccountId,
	deposit: BalanceOf<T>,
) {
	let voters: Vec<&T::AccountId> = challenge
		.committee
		.iter()
		.filter(|(_, b)| *b == Ballot::Revealed(Verdict::Valid))
		.map(|(who, _)| who)
		.collect();
	let count: BalanceOf<T> = (voters.len() as u32).into();
	let share = deposit / count.max(One::one());
	let mut left = deposit;
	for (i, voter) in voters.iter().enumerate() {
		let amount = if i + 1 == voters.len() { left } else { share };
		let moved = escrow::move_held::<T>(HoldReason::ChallengeDeposit, challenger, voter, amount);
		left = left.saturating_sub(moved);
	}
	release_deposit::<T>(challenger, left);
}

/// Lightly slashes committee members that revealed `wrong`, the verdict the committee's
/// strict majority decided against (burned): under an honest majority that is a vote against
/// the truth, a Sybil's or a verifier's that voted without re-executing. Returns how many.
fn slash_outvoted<T: Config>(challenge: &ChallengeOf<T>, wrong: Verdict) -> u32 {
	let mut outvoted = 0;
	for (who, ballot) in &challenge.committee {
		if *ballot == Ballot::Revealed(wrong) {
			let amount = T::AbsentVoterSlash::get().mul_floor(T::Providers::active_stake(who));
			T::Providers::slash(who, amount, SlashReason::Outvoted, &[]);
			outvoted += 1;
		}
	}
	outvoted
}

/// Lightly slashes committee members that never revealed a verdict (burned). Returns how
/// many.
fn slash_absent<T: Config>(challenge: &ChallengeOf<T>) -> u32 {
	let mut absent = 0;
	for (who, ballot) in &challenge.committee {
		if !matches!(ballot, Ballot::Revealed(_)) {
			let amount = T::AbsentVoterSlash::get().mul_floor(T::Providers::active_stake(who));
			T::Providers::slash(who, amount, SlashReason::CommitteeAbsence, &[]);
			absent += 1;
		}
	}
	absent
}
