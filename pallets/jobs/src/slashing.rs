//! Punishments with evidence: equivocation (two signed proofs, or two commitments signed by
//! the provider's libp2p key, for one slot) and liveness (missing rounds). The stake is taken
//! through `pallet-providers`.

use alloc::vec::Vec;
use grid_primitives::{
	commitment::SignedCommitmentBytes,
	job::{JobId, RoundIndex},
	provider::ed25519_peer_id,
};
use pallet_providers::{
	traits::{ProviderRegistry, ProviderSlashing},
	SlashReason,
};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{sp_core::ed25519, sp_io},
	prelude::*,
};

use crate::{
	challenges, membership, signature, BalanceOf, Config, Equivocations, Error, Event, JobOf, Jobs,
	Pallet, RemovalReason, RoundMembers, RoundResults, Rounds, SignedProofOf,
};

/// Checks the evidence, slashes the provider (shares to `reporter` and the buyer), removes it
/// from the job and records the offence so it is punished once.
pub(crate) fn equivocation<T: Config>(
	reporter: T::AccountId,
	first: SignedProofOf<T>,
	second: SignedProofOf<T>,
) -> DispatchResult {
	let (a, b) = (&first.proof, &second.proof);
	ensure!(
		a.job == b.job && a.round == b.round && a.provider == b.provider,
		Error::<T>::DifferentSlots
	);
	// sr25519 signatures are randomized: the same proof signed twice is not an offence.
	ensure!(a != b, Error::<T>::SameProof);
	ensure!(reportable::<T>(a.job, a.round), Error::<T>::NotReportable);
	let slot = (a.job, a.round);
	ensure!(!Equivocations::<T>::contains_key(slot, &a.provider), Error::<T>::AlreadyReported);
	ensure!(
		signature::is_valid::<T>(&first) && signature::is_valid::<T>(&second),
		Error::<T>::BadSignature
	);
	punish::<T>(reporter, slot, a.provider.clone())
}

/// Checks that `first` and `second` are two different commitments signed by `offender`'s
/// libp2p key (the one it bound at registration) for one round of one job on this chain,
/// then punishes it as for two proofs. Commitments name no account: the key does.
pub(crate) fn commitment_equivocation<T: Config>(
	reporter: T::AccountId,
	offender: T::AccountId,
	first: SignedCommitmentBytes,
	second: SignedCommitmentBytes,
) -> DispatchResult {
	let (Some(a), Some(b)) = (first.head(), second.head()) else {
		return Err(Error::<T>::MalformedCommitment.into());
	};
	ensure!(a.job == b.job && a.round == b.round, Error::<T>::DifferentSlots);
	let genesis = frame_system::Pallet::<T>::block_hash(BlockNumberFor::<T>::zero());
	let here = |chain: &[u8; 32]| genesis.as_ref() == &chain[..];
	ensure!(here(&a.chain) && here(&b.chain), Error::<T>::WrongChain);
	// ed25519 signatures are deterministic: only different bytes are two commitments.
	ensure!(first.commitment != second.commitment, Error::<T>::SameProof);
	ensure!(reportable::<T>(a.job, a.round), Error::<T>::NotReportable);
	let slot = (a.job, a.round);
	ensure!(!Equivocations::<T>::contains_key(slot, &offender), Error::<T>::AlreadyReported);
	let peer = T::Providers::peer_id(&offender).ok_or(Error::<T>::NotProvidersKey)?;
	let bound = |signed: &SignedCommitmentBytes| ed25519_peer_id(&signed.public) == peer;
	ensure!(bound(&first) && bound(&second), Error::<T>::NotProvidersKey);
	ensure!(signed_by_its_key(&first) && signed_by_its_key(&second), Error::<T>::BadSignature);
	punish::<T>(reporter, slot, offender)
}

/// Whether `signed`'s signature over its commitment verifies with the key it carries.
fn signed_by_its_key(signed: &SignedCommitmentBytes) -> bool {
	let signature = ed25519::Signature::from_raw(signed.signature);
	let public = ed25519::Public::from_raw(signed.public);
	sp_io::crypto::ed25519_verify(&signature, &signed.payload(), &public)
}

/// Slashes `offender` for equivocating in `slot` (shares to `reporter` and the buyer),
/// removes it from the job and records the offence so it is punished once.
fn punish<T: Config>(
	reporter: T::AccountId,
	slot: (JobId, RoundIndex),
	offender: T::AccountId,
) -> DispatchResult {
	let id = slot.0;
	let mut job = Jobs::<T>::get(id).ok_or(Error::<T>::UnknownJob)?;
	// Anyone can sign two proofs with a fresh key: only a member's are an offence (and only
	// they are worth a record).
	ensure!(member_of::<T>(slot, &offender), Error::<T>::NotParticipant);
	let amount = T::EquivocationSlash::get().mul_floor(slash_base::<T>(&job, &offender));
	let mut recipients: Vec<_> = buyer_share::<T>(&job, &offender).into_iter().collect();
	// A provider reporting itself gets no reporter's share.
	if reporter != offender {
		recipients.push((reporter.clone(), T::ReporterShare::get()));
	}
	let slashed = T::Providers::slash(&offender, amount, SlashReason::Equivocation, &recipients);
	membership::remove::<T>(id, &mut job, &offender, RemovalReason::Equivocation);
	Jobs::<T>::insert(id, job);
	Equivocations::<T>::insert(slot, &offender, ());
	Pallet::<T>::deposit_event(Event::EquivocationPunished {
		job: id,
		round: slot.1,
		provider: offender,
		reporter,
		slashed,
	});
	Ok(())
}

/// Whether `who` may have equivocated in `round` of `job`: a member of the open round, of a
/// settled round whose members are kept (one that paid someone), or of the job (a settled
/// round that paid nobody keeps no members; one who joined later signing proofs for a round
/// before it only punishes itself).
fn member_of<T: Config>((job, round): (JobId, RoundIndex), who: &T::AccountId) -> bool {
	let of_round = match Rounds::<T>::get(job).filter(|open| open.index == round) {
		Some(open) => open.members.contains(who),
		None => RoundMembers::<T>::get(job, round).is_some_and(|members| members.contains(who)),
	};
	of_round || membership::is_participant::<T>(job, who)
}

/// Whether an equivocation in `round` of `job` can still be punished: the round is open, or
/// settled and within its challenge window. Its record of punished offences is pruned after
/// that, so a later report could punish the same offence twice.
fn reportable<T: Config>(job: JobId, round: RoundIndex) -> bool {
	if Rounds::<T>::get(job).is_some_and(|open| open.index == round) {
		return true;
	}
	let (Some(summary), Some(record)) = (RoundResults::<T>::get(job, round), Jobs::<T>::get(job))
	else {
		return false;
	};
	let now = frame_system::Pallet::<T>::block_number();
	now <= challenges::window_closes::<T>(&record, summary.settled_at)
}

/// Removes `who` from `job` for missing rounds and takes a light slash, all burned: a buyer
/// paid from its own members' misses would gain from causing them (by stuffing blocks around
/// proof deadlines, say). The caller stores `job`.
pub(crate) fn liveness<T: Config>(id: JobId, job: &mut JobOf<T>, who: &T::AccountId) {
	let amount = T::LivenessSlash::get().mul_floor(slash_base::<T>(job, who));
	T::Providers::slash(who, amount, SlashReason::Liveness, &[]);
	membership::remove::<T>(id, job, who, RemovalReason::Liveness);
}

/// The buyer's share of a slash of `offender` in `job`: none when the buyer is the offender
/// (a buyer training its own job as a provider would get part of its own slash back).
pub(crate) fn buyer_share<T: Config>(
	job: &JobOf<T>,
	offender: &T::AccountId,
) -> Option<(T::AccountId, Perbill)> {
	(job.buyer != *offender).then(|| (job.buyer.clone(), T::BuyerShare::get()))
}

/// The stake a slash percentage applies to: the provider's active stake, or the job's minimum
/// if it has unbonded below that (the slash reaches unbonding funds too).
pub(crate) fn slash_base<T: Config>(job: &JobOf<T>, who: &T::AccountId) -> BalanceOf<T> {
	T::Providers::active_stake(who).max(job.spec.min_provider_stake)
}
