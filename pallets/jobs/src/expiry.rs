//! Pruning what jobs leave behind once no challenge can need it: a settled round's evidence
//! (`RoundResults`, `Contributions`, `Challenged`, `Equivocations`) after its challenge window
//! and a full vote, and an ended job's record and participants, which returns the buyer's
//! storage deposit. Both are `Expire` items of the agenda.

use grid_primitives::job::{JobId, RoundIndex};
use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{
	agenda, escrow, AgendaItem, Challenged, Config, Contributions, Equivocations, Event, JobOf,
	Jobs, OpenChallengesOn, Pallet, Participants, RoundResults,
};

/// The first block at which what `job` settled at `from` can no longer be challenged or
/// voted on.
fn expires_at<T: Config>(job: &JobOf<T>, from: BlockNumberFor<T>) -> BlockNumberFor<T> {
	from.saturating_add(job.spec.challenge_window)
		.saturating_add(T::VotingPeriod::get())
		.saturating_add(One::one())
}

/// Schedules the evidence of `round`, settled now, to be pruned. When no block within reach
/// has room it stays: storage the job's deposit keeps paying for, nothing else is lost.
pub(crate) fn schedule_round<T: Config>(id: JobId, job: &JobOf<T>, round: RoundIndex) {
	let now = frame_system::Pallet::<T>::block_number();
	let item = AgendaItem::Expire(id, round);
	let _ = agenda::schedule::<T>(item, expires_at::<T>(job, now), agenda::next_round_reach::<T>());
}

/// Schedules a job that just ended to be pruned. When no block within reach has room, its
/// deposit returns at once (the buyer must not pay for the agenda being full) and the record
/// stays.
pub(crate) fn schedule_job<T: Config>(id: JobId, job: &mut JobOf<T>) {
	let now = frame_system::Pallet::<T>::block_number();
	let item = AgendaItem::Expire(id, job.rounds_settled);
	let at = expires_at::<T>(job, now);
	if agenda::schedule::<T>(item, at, agenda::next_round_reach::<T>()).is_err() {
		escrow::release_deposit::<T>(job);
		job.deposit = Zero::zero();
	}
}

/// Prunes round `round` of `id`; when `round` is the ended job's first unsettled round, the
/// job too. Waits a vote longer while a challenge on the job is open (it may need any round).
pub(crate) fn expire<T: Config>(id: JobId, round: RoundIndex) {
	if OpenChallengesOn::<T>::get(id) > 0 {
		let later =
			frame_system::Pallet::<T>::block_number().saturating_add(T::VotingPeriod::get());
		let item = AgendaItem::Expire(id, round);
		let _ = agenda::schedule::<T>(item, later, agenda::next_round_reach::<T>());
		return;
	}
	// Each of these holds at most one entry per member of the round.
	let members = T::MaxParticipants::get();
	RoundResults::<T>::remove(id, round);
	let _ = Contributions::<T>::clear_prefix((id, round), members, None);
	let _ = Challenged::<T>::clear_prefix((id, round), members, None);
	let _ = Equivocations::<T>::clear_prefix((id, round), members, None);
	let Some(job) = Jobs::<T>::get(id) else { return };
	if job.status.is_live() || round < job.rounds_settled {
		return;
	}
	let _ = Participants::<T>::clear_prefix(id, members, None);
	Jobs::<T>::remove(id);
	escrow::release_deposit::<T>(&job);
	Pallet::<T>::deposit_event(Event::JobPruned { job: id, deposit: job.deposit });
}
