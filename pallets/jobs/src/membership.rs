//! Joining and leaving jobs.

use grid_primitives::job::{max_samples, JobId};
use pallet_providers::traits::ProviderRegistry;
use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{
	rounds, Config, Error, Event, JobOf, JobStatus, Jobs, Pallet, Participant, Participants,
	RemovalReason,
};

/// Adds `who` to `job`; starts the job when it reaches `min_providers`.
pub(crate) fn join<T: Config>(id: JobId, who: T::AccountId) -> DispatchResult {
	let mut job = Jobs::<T>::get(id).ok_or(Error::<T>::UnknownJob)?;
	ensure!(job.status.is_live(), Error::<T>::JobEnded);
	ensure!(!Participants::<T>::contains_key(id, &who), Error::<T>::AlreadyJoined);
	ensure!(job.participants < job.spec.max_providers, Error::<T>::JobFull);
	ensure!(T::Providers::is_eligible(&who, job.spec.min_provider_stake), Error::<T>::NotEligible);
	let tflops = T::Providers::capabilities(&who).map(|c| c.tflops_milli).unwrap_or_default();
	ensure!(
		max_samples(&job.spec.model, tflops, round_millis::<T>(&job)) > 0,
		Error::<T>::Underpowered
	);

	// A running job admits joiners from the round after the open one.
	let from_round = match job.status {
		JobStatus::Running => job.rounds_settled.saturating_add(1),
		_ => 0,
	};
	T::Providers::note_joined_job(&who)?;
	let participant =
		Participant { from_round, missed_in_row: 0, rounds_paid: 0, earned: Zero::zero() };
	Participants::<T>::insert(id, &who, participant);
	job.participants += 1;
	Pallet::<T>::deposit_event(Event::Joined { job: id, who, from_round });

	if job.status == JobStatus::Open && job.participants >= job.spec.min_providers {
		job.status = JobStatus::Running;
		rounds::open::<T>(id, &job, 0)?;
		Pallet::<T>::deposit_event(Event::JobStarted { job: id });
	}
	Jobs::<T>::insert(id, job);
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

/// The chain removes `who` from a live job (equivocation, liveness). No-op otherwise.
/// The caller stores `job`.
pub(crate) fn remove<T: Config>(
	id: JobId,
	job: &mut JobOf<T>,
	who: &T::AccountId,
	reason: RemovalReason,
) {
	if job.status.is_live() && Participants::<T>::contains_key(id, who) {
		drop_participant::<T>(id, job, who);
		Pallet::<T>::deposit_event(Event::Removed { job: id, who: who.clone(), reason });
	}
}

/// Ends every membership of a job that completed or was cancelled; the records stay as the
/// job's final participants.
pub(crate) fn release_all<T: Config>(id: JobId) {
	for who in Participants::<T>::iter_key_prefix(id) {
		T::Providers::note_left_job(&who);
	}
}

/// Whether `who` is still a participant (and so may be paid).
pub(crate) fn is_participant<T: Config>(id: JobId, who: &T::AccountId) -> bool {
	Participants::<T>::contains_key(id, who)
}

/// Milliseconds a round of `job` lasts at the target block time.
pub(crate) fn round_millis<T: Config>(job: &JobOf<T>) -> u64 {
	let blocks: u64 = job.spec.training.round_blocks.saturated_into();
	blocks.saturating_mul(T::MillisPerBlock::get())
}

fn drop_participant<T: Config>(id: JobId, job: &mut JobOf<T>, who: &T::AccountId) {
	Participants::<T>::remove(id, who);
	job.participants = job.participants.saturating_sub(1);
	// A leaver stays a member of the open round (its slot is refunded as it is not paid), so
	// the quorum threshold of a round never moves after it opened.
	T::Providers::note_left_job(who);
}
