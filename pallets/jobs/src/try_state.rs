//! Storage invariants, checked by the `try_state` hook and after every step of the tests.
//!
//! Always compiled (not only with `try-runtime`) because the tests call them.

use alloc::{
	collections::{btree_map::BTreeMap, btree_set::BTreeSet},
	vec::Vec,
};
use pallet_providers::traits::ProviderRegistry;
use polkadot_sdk::polkadot_sdk_frame::{
	deps::sp_runtime::TryRuntimeError, prelude::*, traits::fungible::InspectHold,
};

use crate::{
	agenda, Accuser, Admissions, Agenda, AgendaCursor, AgendaItem, BalanceOf, Challenges, Config,
	Contributions, HoldReason, JobStatus, Jobs, OpenAuditsOn, OpenChallengesBy, OpenChallengesOn,
	Pallet, Participants, Proofs, RoundMembers, Rounds, UnfilledAt,
};

/// Each agenda entry with its block.
type Scheduled<T> = BTreeMap<AgendaItem, BlockNumberFor<T>>;

impl<T: Config> Pallet<T> {
	/// Invariants: every job's escrow adds up and matches its buyer's hold; running jobs
	/// (and only they) have an open round and one agenda entry; participant counts match, and
	/// every participant's stake is locked for the job (a slash may leave it below its locks
	/// until the job's round settles and removes it).
	pub fn do_try_state() -> Result<(), TryRuntimeError> {
		let mut held_by_buyer: BTreeMap<T::AccountId, BalanceOf<T>> = BTreeMap::new();
		let mut deposits: BTreeMap<T::AccountId, BalanceOf<T>> = BTreeMap::new();
		let scheduled = Self::try_state_agenda()?;
		ensure!(
			Admissions::<T>::iter_keys().all(Jobs::<T>::contains_key),
			"admission rules of a pruned job"
		);
		let mut running_jobs = 0usize;
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
			let entry = deposits.entry(job.buyer.clone()).or_default();
			*entry = entry.saturating_add(job.deposit);
			let running = job.status == JobStatus::Running;
			let round = Rounds::<T>::get(id);
			ensure!(round.is_some() == running, "open round without running job");
			if let Some(round) = round {
				running_jobs += 1;
				ensure!(
					scheduled.get(&AgendaItem::Settle(id)) == Some(&round.due),
					"running job's round is not on the agenda at its due block"
				);
			}
			ensure!(
				!running || job.understaffed_rounds < T::MaxUnderstaffedRounds::get(),
				"job runs understaffed past the limit"
			);
			// An open job's `Unfilled` entry is where it says; only open jobs keep one.
			let unfilled = UnfilledAt::<T>::get(id);
			ensure!(unfilled.is_some() == (job.status == JobStatus::Open), "stray Unfilled slot");
			if let Some(at) = unfilled {
				ensure!(
					scheduled.get(&AgendaItem::Unfilled(id)) == Some(&at),
					"open job's Unfilled entry is not where its slot says"
				);
			}
			if job.status.is_live() {
				let mut count = 0u32;
				for who in Participants::<T>::iter_key_prefix(id) {
					count += 1;
					ensure!(
						T::Providers::member_lock(&who, id) == Some(job.spec.min_provider_stake),
						"participant's stake lock for its job is missing or not the job's minimum"
					);
					// Its stake may have fallen below its locks since (a slash here or in
					// another job): it leaves as the job's round settles
					// (`membership::drop_uncovered`).
				}
				ensure!(count == job.participants, "participant count is wrong");
				ensure!(
					job.participants <= job.spec.max_providers,
					"more participants than the job's max_providers"
				);
			}
		}
		holds_match::<T>(
			HoldReason::JobEscrow,
			held_by_buyer,
			"buyer's hold differs from its jobs' escrow",
		)?;
		holds_match::<T>(
			HoldReason::JobDeposit,
			deposits,
			"buyer's deposit hold differs from its unpruned jobs' deposits",
		)?;
		let settles = scheduled.keys().filter(|i| matches!(i, AgendaItem::Settle(_))).count();
		ensure!(settles == running_jobs, "agenda settles a job that is not running");
		ensure!(
			UnfilledAt::<T>::iter_keys().all(Jobs::<T>::contains_key),
			"Unfilled slot of a pruned job"
		);
		for items in Agenda::<T>::iter_values() {
			let n = items.iter().filter(|i| agenda::is_housekeeping(i)).count();
			ensure!(
				n <= agenda::housekeeping_room::<T>(),
				"housekeeping takes more than half a block's agenda"
			);
		}
		Self::try_state_proofs()?;
		Self::try_state_contributions()?;
		Self::try_state_challenges(&scheduled)
	}

	/// Proofs are kept only for a running job's open round, each its member's own for that
	/// round, and the round's tally counts each once.
	fn try_state_proofs() -> Result<(), TryRuntimeError> {
		let mut counted: BTreeMap<grid_primitives::job::JobId, u32> = BTreeMap::new();
		let mut joined: BTreeMap<grid_primitives::job::JobId, u32> = BTreeMap::new();
		for (id, who, signed) in Proofs::<T>::iter() {
			let round = Rounds::<T>::get(id).ok_or("proof kept for a job with no open round")?;
			let proof = &signed.proof;
			ensure!(
				proof.job == id && proof.provider == who && proof.round == round.index,
				"proof kept under another job, provider or round than it names"
			);
			ensure!(round.members.contains(&who), "proof kept from a non-member of the round");
			ensure!(
				round.tally.iter().any(|(hash, _)| *hash == proof.result_model_hash),
				"proof's result missing from its round's tally"
			);
			*counted.entry(id).or_default() += 1;
			*joined.entry(id).or_default() += u32::from(round.is_joiner(&who));
		}
		for (id, round) in Rounds::<T>::iter() {
			let tallied = round.tally.iter().map(|(_, n)| *n).sum::<u32>();
			let kept = counted.get(&id).copied().unwrap_or_default();
			ensure!(tallied == kept, "round's tally differs from its kept proofs");
			ensure!(
				round.established as usize <= round.members.len(),
				"round counts more established members than it has"
			);
			let joiners = joined.get(&id).copied().unwrap_or_default();
			ensure!(round.joiners_in == joiners, "round's joiners' proofs differ from those kept");
		}
		Ok(())
	}

	/// The agenda: no empty lists stored, nothing behind the cursor, each item once.
	fn try_state_agenda() -> Result<Scheduled<T>, TryRuntimeError> {
		let cursor = AgendaCursor::<T>::get();
		let mut scheduled = Scheduled::<T>::new();
		for (block, items) in Agenda::<T>::iter() {
			ensure!(!items.is_empty(), "empty agenda stored");
			ensure!(block >= cursor, "agenda entry behind the cursor");
			for item in items {
				ensure!(scheduled.insert(item, block).is_none(), "item on the agenda twice");
			}
		}
		Ok(scheduled)
	}

	/// Kept contributions: their round's members are kept (the index space of `holders`),
	/// no update commitment was paid twice in one round, and an unpaid claim (a copy) names
	/// an update that was paid.
	fn try_state_contributions() -> Result<(), TryRuntimeError> {
		let (mut paid, mut copies) = (BTreeSet::new(), Vec::new());
		for ((job, round), _, contribution) in Contributions::<T>::iter() {
			ensure!(RoundMembers::<T>::contains_key(job, round), "paid round without its members");
			let key = (job, round, contribution.update_commitment);
			if contribution.reward.is_zero() {
				copies.push(key);
				continue;
			}
			ensure!(paid.insert(key), "one update commitment paid twice in a round");
		}
		ensure!(copies.iter().all(|c| paid.contains(c)), "an unpaid claim of an update not paid");
		Ok(())
	}

	/// Challenges: each open one is on the agenda at its due block (and, until drawn, at its
	/// draw block), its committee holds the update, the accused's stake lock for the job
	/// counts it, the counts per challenger and per job are right, and challengers' holds
	/// equal their open challenges' deposits.
	fn try_state_challenges(scheduled: &Scheduled<T>) -> Result<(), TryRuntimeError> {
		let (mut by, mut on, mut held) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
		let mut audits = BTreeMap::new();
		let mut disputes = BTreeMap::new();
		let mut open = 0usize;
		for (id, challenge) in Challenges::<T>::iter() {
			open += 1;
			ensure!(
				scheduled.get(&AgendaItem::Decide(id)) == Some(&challenge.due),
				"open challenge is not on the agenda at its due block"
			);
			ensure!(
				challenge.drawn()
					|| scheduled.get(&AgendaItem::Draw(id)) == Some(&challenge.draw_at),
				"undrawn challenge is not on the agenda at its draw block"
			);
			ensure!(
				challenge.draw_at <= challenge.reveal_from
					&& challenge.reveal_from <= challenge.deadline,
				"challenge phases out of order"
			);
			let contribution =
				Contributions::<T>::get((challenge.job, challenge.round), &challenge.accused)
					.ok_or("challenged contribution missing")?;
			let members = RoundMembers::<T>::get(challenge.job, challenge.round)
				.ok_or("challenged round without its members")?;
			let holds = |who: &T::AccountId| {
				members.iter().position(|m| m == who).is_some_and(|i| contribution.held_by(i))
			};
			ensure!(
				challenge.committee.iter().all(|(who, _)| holds(who)),
				"committee member that never held the update"
			);
			*disputes.entry((challenge.accused.clone(), challenge.job)).or_insert(0u32) += 1;
			match challenge.accuser {
				Accuser::Challenger { who, deposit } => {
					*by.entry(who.clone()).or_insert(0u32) += 1;
					*on.entry(challenge.job).or_insert(0u32) += 1;
					let entry: &mut BalanceOf<T> = held.entry(who).or_default();
					*entry = entry.saturating_add(deposit);
				}
				Accuser::Audit => *audits.entry(challenge.job).or_insert(0u32) += 1,
			}
		}
		for ((accused, job), open) in disputes {
			ensure!(
				T::Providers::open_disputes(&accused, job) == open,
				"accused's stake lock does not count its open challenges"
			);
		}
		let decides = scheduled.keys().filter(|i| matches!(i, AgendaItem::Decide(_))).count();
		ensure!(decides == open, "agenda decides a challenge that is not open");
		let draws = scheduled.keys().filter_map(|i| match i {
			AgendaItem::Draw(id) => Some(*id),
			_ => None,
		});
		for id in draws {
			ensure!(
				Challenges::<T>::get(id).is_some_and(|c| !c.drawn()),
				"agenda draws a committee already drawn, or for no open challenge"
			);
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
			OpenAuditsOn::<T>::iter().collect::<BTreeMap<_, _>>() == audits,
			"open audits per job miscounted"
		);
		ensure!(
			by.values().all(|n| *n <= T::MaxChallengesPerChallenger::get())
				&& on.values().all(|n| *n <= T::MaxChallengesPerJob::get()),
			"more challenges open than a challenger or job may have"
		);
		holds_match::<T>(
			HoldReason::ChallengeDeposit,
			held,
			"challenger's hold differs from its open deposits",
		)
	}
}

/// Each account's hold for `reason` equals what the pallet's records say it should be.
fn holds_match<T: Config>(
	reason: HoldReason,
	expected: BTreeMap<T::AccountId, BalanceOf<T>>,
	error: &'static str,
) -> Result<(), TryRuntimeError> {
	let reason = reason.into();
	for (who, amount) in expected {
		ensure!(T::Currency::balance_on_hold(&reason, &who) == amount, error);
	}
	Ok(())
}
