//! Storage invariants, checked by the `try_state` hook and after every step of the tests.
//!
//! Always compiled (not only with `try-runtime`) because the tests call them.

use alloc::collections::btree_map::BTreeMap;
use pallet_providers::traits::ProviderRegistry;
use polkadot_sdk::polkadot_sdk_frame::{
	deps::sp_runtime::TryRuntimeError, prelude::*, traits::fungible::InspectHold,
};

use crate::{
	BalanceOf, ChallengeQueue, Challenges, Config, HoldReason, JobStatus, Jobs, OpenChallengesBy,
	OpenChallengesOn, Pallet, Participants, Rounds, SettlementQueue,
};

impl<T: Config> Pallet<T> {
	/// Invariants: every job's escrow adds up and matches its buyer's hold; running jobs
	/// (and only they) have an open round and one queue entry; participant counts match, and
	/// every participant's stake is locked for the job and covers its locks.
	pub fn do_try_state() -> Result<(), TryRuntimeError> {
		let mut held_by_buyer: BTreeMap<T::AccountId, BalanceOf<T>> = BTreeMap::new();
		let queue = SettlementQueue::<T>::get();
		for (id, job) in Jobs::<T>::iter() {
			let accounted = job
				.paid
				.saturating_add(job.fees)
				.saturating_add(job.refunded)
				.saturating_add(job.held());
			ensure!(accounted == job.funded, "paid + fees + refunded + held != funded");
			ensure!(job.status.is_live() || job.held().is_zero(), "ended job still holds escrow");
			let entry = held_by_buyer.entry(job.buyer.clone()).or_default();
			*entry = entry.saturating_add(job.held());
			let running = job.status == JobStatus::Running;
			ensure!(Rounds::<T>::contains_key(id) == running, "open round without running job");
			let queued = queue.iter().filter(|(_, j)| *j == id).count();
			ensure!(queued == usize::from(running), "running job not queued exactly once");
			ensure!(
				!running || job.understaffed_rounds < T::MaxUnderstaffedRounds::get(),
				"job runs understaffed past the limit"
			);
			if job.status.is_live() {
				let mut count = 0u32;
				for who in Participants::<T>::iter_key_prefix(id) {
					count += 1;
					ensure!(
						T::Providers::jobs_of(&who).contains(&id),
						"participant without a stake lock for its job"
					);
					ensure!(T::Providers::covers_jobs(&who), "participant's stake below its locks");
				}
				ensure!(count == job.participants, "participant count is wrong");
			}
		}
		for (buyer, held) in held_by_buyer {
			let reason = HoldReason::JobEscrow.into();
			ensure!(
				T::Currency::balance_on_hold(&reason, &buyer) == held,
				"buyer's hold differs from its jobs' escrow"
			);
		}
		ensure!(queue.windows(2).all(|w| w[0] <= w[1]), "settlement queue out of order");
		Self::try_state_challenges()
	}

	/// Challenges: each open one is queued once, and challengers' holds equal their open
	/// challenges' deposits.
	fn try_state_challenges() -> Result<(), TryRuntimeError> {
		let queue = ChallengeQueue::<T>::get();
		ensure!(queue.windows(2).all(|w| w[0] <= w[1]), "challenge queue out of order");
		ensure!(
			queue.len() == Challenges::<T>::iter_keys().count(),
			"challenge queue and open challenges differ"
		);
		for (_, id) in queue.iter() {
			ensure!(Challenges::<T>::contains_key(id), "queued challenge is not open");
		}
		let (mut by, mut on) = (BTreeMap::new(), BTreeMap::new());
		for (_, challenge) in Challenges::<T>::iter() {
			*by.entry(challenge.challenger).or_insert(0u32) += 1;
			*on.entry(challenge.job).or_insert(0u32) += 1;
		}
		ensure!(
			OpenChallengesBy::<T>::iter().collect::<BTreeMap<_, _>>() == by,
			"open challenges per challenger miscounted"
		);
		ensure!(
			OpenChallengesOn::<T>::iter().collect::<BTreeMap<_, _>>() == on,
			"open challenges per job miscounted"
		);
		ensure!(
			by.values().all(|n| *n <= T::MaxChallengesPerChallenger::get())
				&& on.values().all(|n| *n <= T::MaxChallengesPerJob::get()),
			"more challenges open than a challenger or job may have"
		);
		let reason = HoldReason::ChallengeDeposit.into();
		for (challenger, held) in held_deposits::<T>() {
			ensure!(
				T::Currency::balance_on_hold(&reason, &challenger) == held,
				"challenger's hold differs from its open deposits"
			);
		}
		Ok(())
	}
}

/// Deposits held by open challenges, per challenger.
fn held_deposits<T: Config>() -> BTreeMap<T::AccountId, BalanceOf<T>> {
	let mut held = BTreeMap::new();
	for (_, challenge) in Challenges::<T>::iter() {
		let entry: &mut BalanceOf<T> = held.entry(challenge.challenger).or_default();
		*entry = entry.saturating_add(challenge.deposit);
	}
	held
}
