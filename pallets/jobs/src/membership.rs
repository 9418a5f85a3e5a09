//! Joining and leaving jobs.

use grid_primitives::job::{max_claim, JobId, Refusal};
use pallet_providers::traits::{LockRefusal, ProviderRegistry};
use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{
	agenda, challenges, rounds, Admissions, BalanceOf, Config, Convicted, Error, Event, JobOf,
	JobStatus, Jobs, Pallet, Participant, Participants, RemovalReason,
};

/// Adds `who` to `job`; starts the job when it reaches `min_providers`.
pub(crate) fn join<T: Config>(id: JobId, who: T::AccountId) -> DispatchResult {
	let mut job = Jobs::<T>::get(id).ok_or(Error::<T>::UnknownJob)?;
	ensure!(job.status.is_live(), Error::<T>::JobEnded);
	ensure!(!job.cancel_requested, Error::<T>::CancelPending);
	ensure!(!Participants::<T>::contains_key(id, &who), Error::<T>::AlreadyJoined);
	ensure!(!Convicted::<T>::contains_key(id, &who), Error::<T>::ConvictedInJob);
	ensure!(job.participants < job.spec.max_providers, Error::<T>::JobFull);
	ensure!(T::Providers::is_eligible(&who, job.spec.min_provider_stake), Error::<T>::NotEligible);
	admit::<T>(id, &who)?;
	let jobs = T::Providers::jobs_of(&who).len() as u32;
	ensure!(claim_cap::<T>(&job, &who, jobs.saturating_add(1)) > 0, Error::<T>::Underpowered);

	// A running job admits joiners from the round after the open one.
	let from_round = match job.status {
		JobStatus::Running => job.rounds_settled.saturating_add(1),
		_ => 0,
	};
	T::Providers::lock_for_job(&who, id, job.spec.min_provider_stake).map_err(|refusal| {
		match refusal {
			LockRefusal::NotEligible => Error::<T>::NotEligible,
			LockRefusal::TooManyJobs => Error::<T>::TooManyJobs,
		}
	})?;
	let participant =
		Participant { from_round, missed_in_row: 0, rounds_paid: 0, earned: Zero::zero() };
	Participants::<T>::insert(id, &who, participant);
	job.participants += 1;
	Pallet::<T>::deposit_event(Event::Joined { job: id, who, from_round });

	if job.status == JobStatus::Open && job.participants >= job.spec.min_providers {
		job.status = JobStatus::Running;
		rounds::drop_unfilled::<T>(id);
		rounds::open::<T>(id, &job, 0, agenda::caller_reach::<T>(), None)?;
		Pallet::<T>::deposit_event(Event::JobStarted { job: id });
	}
	Jobs::<T>::insert(id, job);
	Ok(())
}

/// Checks `who` against the job's admission rules, if its buyer set any.
fn admit<T: Config>(id: JobId, who: &T::AccountId) -> DispatchResult {
	let Some(rules) = Admissions::<T>::get(id) else { return Ok(()) };
	let registered_at = T::Providers::registered_at(who).ok_or(Error::<T>::NotEligible)?;
	let now = frame_system::Pallet::<T>::block_number();
	rules.admits(who, T::Providers::health_score(who), registered_at, now).map_err(|refusal| {
		match refusal {
			Refusal::NotListed => Error::<T>::NotOnAllowlist,
			Refusal::Unhealthy => Error::<T>::HealthTooLow,
			Refusal::TooNew => Error::<T>::RegisteredTooRecently,
		}
	})?;
	Ok(())
}

/// `who` leaves `job` of its own accord.
pub(crate) fn leave<T: Config>(id: JobId, who: T::AccountId) -> DispatchResult {
	let mut job = Jobs::<T>::get(id).ok_or(Error::<T>::UnknownJob)?;
	ensure!(job.status.is_live(), Error::<T>::JobEnded);
	ensure!(Participants::<T>::contains_key(id, &who), Error::<T>::NotParticipant);
	drop_participant::<T>(id, &mut job, &who);
	Jobs::<T>::insert(id, job);
	Pallet::<T>::deposit_event(Event::Left { job: id, who });
	Ok(())
}

/// The chain removes `who` from a job (fraud, equivocation, liveness, stake shortfall). No-op
/// when it is not a member, but for a conviction, which is recorded either way. The caller
/// stores `job`.
///
/// In an ended job the record goes too, though its stake lock was released as the job ended:
/// committees for the job's other rounds are drawn from its members, and a provider convicted
/// there must not judge its fellow members' work. For the same reason a convicted provider
/// may not join the job again, even one that left it before its conviction.
pub(crate) fn remove<T: Config>(
	id: JobId,
	job: &mut JobOf<T>,
	who: &T::AccountId,
	reason: RemovalReason,
) {
	if matches!(reason, RemovalReason::Fraud | RemovalReason::Equivocation) {
		Convicted::<T>::insert(id, who, ());
	}
	if drop_participant::<T>(id, job, who) {
		Pallet::<T>::deposit_event(Event::Removed { job: id, who: who.clone(), reason });
	}
}

/// What a join does beyond its benchmark (which predates all three): reading the job's
/// convictions, and, for a join that starts the job, taking its `Unfilled` entry off the
/// agenda and searching for its first round's settlement block.
pub(crate) fn join_extra_weight<T: Config>() -> Weight {
	T::DbWeight::get()
		.reads(1)
		.saturating_add(rounds::unfilled_weight::<T>())
		.saturating_add(agenda::search_weight::<T>(agenda::caller_reach::<T>()))
}

/// What recording a conviction costs beyond the benchmarked calls and agenda work that may
/// make one (their benchmarks predate it): one write.
pub(crate) fn conviction_weight<T: Config>() -> Weight {
	T::DbWeight::get().writes(1)
}

/// Ends every membership of a job that completed or was cancelled; the records stay as the
/// job's final participants (less any convicted later, [`remove`]).
pub(crate) fn release_all<T: Config>(id: JobId, job: &JobOf<T>) {
	for (who, participant) in Participants::<T>::iter_prefix(id) {
		T::Providers::release_job(&who, id, lock_until::<T>(job, &participant));
	}
}

/// Removes the participants of `job` whose active stake no longer covers what their jobs
/// lock (and the registry minimum): they were slashed, in this job or another, since they
/// joined. Called as its round settles, before anyone is paid: such a member is not paid for
/// the round and leaves. One job at a time: removing a slashed provider from all of its jobs
/// at once made one settlement that liveness-slashed many members remove each from up to
/// `MaxJobsPerProvider` others, work no benchmark bounds; here each job does its own, within
/// its settlement's weight (whose worst case removes every member).
pub(crate) fn drop_uncovered<T: Config>(id: JobId, job: &mut JobOf<T>) {
	let uncovered: alloc::vec::Vec<T::AccountId> = Participants::<T>::iter_key_prefix(id)
		.filter(|who| !T::Providers::covers_jobs(who))
		.collect();
	for who in uncovered {
		remove::<T>(id, job, &who, RemovalReason::StakeShortfall);
	}
}

/// Until when a member's stake stays locked after it leaves `job`: through the challenge
/// window of its last settled round and the voting that may follow (a leaver is not paid for
/// the open round, so its last round with anything kept settled before now). A member none of
/// whose rounds settled has nothing kept to challenge: the lock ends now. (One that was never
/// paid may still have a copy's claim kept from a settled round, so pay alone cannot tell.)
fn lock_until<T: Config>(
	job: &JobOf<T>,
	participant: &Participant<BalanceOf<T>>,
) -> BlockNumberFor<T> {
	let now = frame_system::Pallet::<T>::block_number();
	if participant.rounds_paid == 0 && participant.from_round >= job.rounds_settled {
		return now;
	}
	challenges::last_vote::<T>(job, now)
}

/// Whether `who` is still a participant (and so may be paid).
pub(crate) fn is_participant<T: Config>(id: JobId, who: &T::AccountId) -> bool {
	Participants::<T>::contains_key(id, who)
}

/// Most samples `who` can be paid for in a round of `job` while it takes part in `jobs` jobs:
/// whole batches of what its declared hardware (frozen while it is in a job) computes in its
/// share of the round's time ([`max_claim`]).
pub(crate) fn claim_cap<T: Config>(job: &JobOf<T>, who: &T::AccountId, jobs: u32) -> u64 {
	let tflops = T::Providers::capabilities(who).map(|c| c.tflops_milli).unwrap_or_default();
	let batch = job.spec.training.batch_size;
	max_claim(&job.spec.model, batch, tflops, round_millis::<T>(job), jobs)
}

/// Milliseconds a round of `job` lasts at the target block time.
pub(crate) fn round_millis<T: Config>(job: &JobOf<T>) -> u64 {
	let blocks: u64 = job.spec.training.round_blocks.saturated_into();
	blocks.saturating_mul(T::MillisPerBlock::get())
}

/// Takes `who`'s record out of `job`; whether it was a member. A live job's membership
/// releases its stake lock here; an ended job's were all released as it ended.
fn drop_participant<T: Config>(id: JobId, job: &mut JobOf<T>, who: &T::AccountId) -> bool {
	let Some(participant) = Participants::<T>::take(id, who) else { return false };
	job.participants = job.participants.saturating_sub(1);
	// A leaver stays a member of the open round (its slot is refunded as it is not paid), so
	// the quorum threshold of a round never moves after it opened.
	if job.status.is_live() {
		T::Providers::release_job(who, id, lock_until::<T>(job, &participant));
	}
	true
}
