//! Random audits: the chain itself disputes a random few of the contributions it paid, so a
//! lazy provider is checked even where no peer suspects it (colluding peers, a screen it
//! learned to pass, a round nobody challenged).
//!
//! `CommitteeDelay` blocks after a round of a job with a challenge window settles, its `Audit`
//! agenda item draws, with that block's randomness (unknown when the proofs were sent and the
//! round settled), which paid contributions are audited: each with probability `AuditRate`,
//! at most `MaxAuditsPerRound`. An audit is a challenge with no challenger ([`Accuser::Audit`]):
//! a committee of `AuditCommittee` holders of the update is drawn at once and votes as on any
//! challenge; proven fraud claws the reward back and slashes `FraudSlash` of the stake (the
//! challenger's share burned). No fee and no deposit: nobody accused anyone.
//!
//! Why it deters: cheating every round gains the reward R in each round not audited and loses
//! the slash S once caught, so it pays nothing in expectation when S >= R (1 - q) / q. A job
//! open to challenges must ask for at least that stake ([`Deterrence::stake_for`], checked by
//! `create_job`).
//!
//! [`Deterrence::stake_for`]: grid_primitives::job::Deterrence::stake_for

use alloc::vec::Vec;
use codec::Encode;
use grid_primitives::job::{JobId, RoundIndex};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{
		sp_core::H256,
		sp_runtime::traits::{BlakeTwo256, Hash},
	},
	prelude::*,
	traits::Randomness,
};

use crate::{
	agenda, challenges, Accuser, AgendaItem, Challenge, ChallengeId, Challenged, Config,
	Contributions, Event, JobOf, Jobs, NextChallengeId, Pallet, RoundMembers,
};

/// Domain separator of the randomness that picks audited contributions.
const AUDIT_DOMAIN: &[u8] = b"grid/audit/v1";

/// Puts the audit draw of `round` of `id`, settled now with paid contributions, on the agenda
/// `CommitteeDelay` blocks from now, when the job is open to challenges and audits are on.
/// When no block within reach has room the round goes unaudited (challenges still work).
pub(crate) fn schedule<T: Config>(id: JobId, job: &JobOf<T>, round: RoundIndex) {
	if T::AuditRate::get().is_zero() || job.spec.challenge_window.is_zero() {
		return;
	}
	let at = frame_system::Pallet::<T>::block_number().saturating_add(T::CommitteeDelay::get());
	let _ = agenda::schedule::<T>(AgendaItem::Audit(id, round), at, agenda::caller_reach::<T>());
}

/// Draws which paid contributions to `round` of `job` are audited and opens an audit of each.
/// Returns the audits opened.
pub(crate) fn run<T: Config>(job: JobId, round: RoundIndex) -> Vec<ChallengeId> {
	let Some(members) = RoundMembers::<T>::get(job, round) else { return Vec::new() };
	let (seed, _) = T::Randomness::random(&(AUDIT_DOMAIN, job, round).encode());
	let rate = T::AuditRate::get();
	let chosen: Vec<T::AccountId> = members
		.into_iter()
		.filter(|who| Contributions::<T>::contains_key((job, round), who))
		.filter(|who| drawn(&seed, who, rate))
		.take(T::MaxAuditsPerRound::get() as usize)
		.collect();
	chosen.into_iter().filter_map(|who| open::<T>(job, round, who)).collect()
}

/// Whether `who` is audited under `seed`: a uniform 32-bit number derived from both, below
/// `rate` of its range.
fn drawn<A: Encode>(seed: &H256, who: &A, rate: Perbill) -> bool {
	let hash = BlakeTwo256::hash_of(&(seed, who));
	let draw = u32::from_le_bytes([hash[0], hash[1], hash[2], hash[3]]);
	u64::from(draw) * 1_000_000_000 < u64::from(rate.deconstruct()) << 32
}

/// Opens an audit of `accused`'s contribution to `round` of `job`, its committee drawn now.
/// Nothing opens when the contribution is already disputed, fewer than `MinCommittee`
/// holders can judge it, or no block within reach has room for its decision.
pub(crate) fn open<T: Config>(
	job: JobId,
	round: RoundIndex,
	accused: T::AccountId,
) -> Option<ChallengeId> {
	if Challenged::<T>::contains_key((job, round), &accused) {
		return None;
	}
	let contribution = Contributions::<T>::get((job, round), &accused)?;
	let record = Jobs::<T>::get(job)?;
	let id = NextChallengeId::<T>::get();
	let holders = challenges::candidates::<T>(job, round, &record, &contribution, None, &accused);
	let committee = challenges::draw_committee::<T>(id, job, holders, T::AuditCommittee::get())?;
	let now = frame_system::Pallet::<T>::block_number();
	let deadline = now.saturating_add(T::VotingPeriod::get());
	let due = agenda::schedule::<T>(AgendaItem::Decide(id), deadline, agenda::caller_reach::<T>())
		.ok()?;
	let members = committee.iter().map(|(who, _)| who.clone()).collect();
	let reveal_from = deadline.saturating_sub(T::RevealPeriod::get());
	challenges::store_open::<T>(
		id,
		Challenge {
			job,
			round,
			accused: accused.clone(),
			accuser: Accuser::Audit,
			draw_at: now,
			committee,
			reveal_from,
			deadline,
			due,
		},
	);
	Pallet::<T>::deposit_event(Event::AuditOpened { id, job, round, accused, deadline });
	Pallet::<T>::deposit_event(Event::CommitteeDrawn { id, committee: members, reveal_from });
	Some(id)
}

#[cfg(test)]
mod tests {
	use super::drawn;
	use polkadot_sdk::polkadot_sdk_frame::{deps::sp_core::H256, prelude::Perbill};

	/// How many of 10,000 accounts `rate` draws under one seed.
	fn count(rate: Perbill) -> usize {
		let seed = H256::repeat_byte(7);
		(0u64..10_000).filter(|who| drawn(&seed, who, rate)).count()
	}

	#[test]
	fn the_draw_follows_the_rate() {
		assert_eq!(count(Perbill::zero()), 0);
		assert_eq!(count(Perbill::one()), 10_000);
		// Binomial(10,000, q): within five standard deviations.
		for (percent, expected, spread) in [(1u32, 100usize, 50usize), (10, 1_000, 150)] {
			let n = count(Perbill::from_percent(percent));
			assert!(n.abs_diff(expected) <= spread, "{percent}%: {n} drawn");
		}
	}

	#[test]
	fn another_seed_draws_other_accounts() {
		let rate = Perbill::from_percent(10);
		let under =
			|seed: H256| (0u64..1_000).filter(|w| drawn(&seed, w, rate)).collect::<Vec<_>>();
		assert_ne!(under(H256::repeat_byte(1)), under(H256::repeat_byte(2)));
	}
}
