//! Pruning what jobs leave behind once no challenge can need it: a settled round's evidence
//! (`RoundResults`, `Contributions`, `Challenged`, `Equivocations`) after its challenge window
//! and a full vote, and an ended job's record, participants and admission rules, which returns the buyer's
//! storage deposit. Both are `Expire` items of the agenda.

use grid_primitives::job::{JobId, RoundIndex};
use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{
	agenda, challenges, escrow, Admissions, AgendaItem, Challenged, Config, Contributions,
	Convicted, Equivocations, Error, Event, JobOf, Jobs, OpenAuditsOn, OpenChallengesOn, Pallet,
	Participants, RoundMembers, RoundResults,
};

/// Puts `Expire(id, round)` on the agenda at `at` or as soon after as there is room.
fn schedule<T: Config>(
	id: JobId,
	round: RoundIndex,
	at: BlockNumberFor<T>,
) -> Result<BlockNumberFor<T>, Error<T>> {
	agenda::schedule::<T>(AgendaItem::Expire(id, round), at, agenda::next_round_reach::<T>())
}

/// The first block after the last vote a challenge of what `job` settles now could get.
fn after_last_vote<T: Config>(job: &JobOf<T>) -> BlockNumberFor<T> {
	let now = frame_system::Pallet::<T>::block_number();
	challenges::last_vote::<T>(job, now).saturating_add(One::one())
}

/// Schedules the evidence of `round`, settled now, to be pruned. When no block within reach
/// has room it stays: storage the job's deposit keeps paying for, nothing else is lost.
pub(crate) fn schedule_round<T: Config>(id: JobId, job: &JobOf<T>, round: RoundIndex) {
	let _ = schedule::<T>(id, round, after_last_vote::<T>(job));
}

/// Schedules a job that just ended to be pruned. When no block within reach has room, its
/// deposit returns at once (the buyer must not pay for the agenda being full) and the record
/// stays.
pub(crate) fn schedule_job<T: Config>(id: JobId, job: &mut JobOf<T>) {
	if schedule::<T>(id, job.rounds_settled, after_last_vote::<T>(job)).is_err() {
		escrow::release_deposit::<T>(job);
		job.deposit = Zero::zero();
	}
}

/// Prunes round `round` of `id`; when `round` is the ended job's first unsettled round, the
/// job too. Waits a vote longer while a challenge or audit on the job is open (it may need
/// any round).
pub(crate) fn expire<T: Config>(id: JobId, round: RoundIndex) {
	if OpenChallengesOn::<T>::get(id) > 0 || OpenAuditsOn::<T>::get(id) > 0 {
		let later =
			frame_system::Pallet::<T>::block_number().saturating_add(T::VotingPeriod::get());
		let _ = schedule::<T>(id, round, later);
		return;
	}
	// Each of these holds at most one entry per member of the round.
	let members = T::MaxParticipants::get();
	RoundResults::<T>::remove(id, round);
	let _ = Contributions::<T>::clear_prefix((id, round), members, None);
	RoundMembers::<T>::remove(id, round);
	let _ = Challenged::<T>::clear_prefix((id, round), members, None);
	let _ = Equivocations::<T>::clear_prefix((id, round), members, None);
	let Some(job) = Jobs::<T>::get(id) else { return };
	if job.status.is_live() || round < job.rounds_settled {
		return;
	}
	let _ = Participants::<T>::clear_prefix(id, members, None);
	// Each conviction cost its provider a slash; a job with more than a round's worth keeps
	// the rest, paid for by those slashes.
	let _ = Convicted::<T>::clear_prefix(id, members, None);
	Jobs::<T>::remove(id);
	Admissions::<T>::remove(id);
	escrow::release_deposit::<T>(&job);
	Pallet::<T>::deposit_event(Event::JobPruned { job: id, deposit: job.deposit });
}
