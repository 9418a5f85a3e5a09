//! Health bookkeeping: rounds, challenges and probes feed the record the score derives from.
//!
//! Which providers validators probe is the chain's choice, not theirs: every provider has a
//! slot (a hash of its account) in a rotation of probe rounds, and a probe round covers the
//! providers of its slot. A validator may report a provider only in the provider's round and
//! once in it, so every validator probes every provider at the same rate, and one validator
//! that lies (or floods reports with failures) is at most its share of the validators' say
//! in a provider's uptime, not all of it.

use alloc::vec::Vec;
use codec::Encode;
use grid_primitives::{provider::Endpoint, work::MaxProbesPerReport};
use polkadot_sdk::polkadot_sdk_frame::{deps::sp_io::hashing::blake2_256, prelude::*};

use crate::{identity, Config, Event, Health, HealthRecords, Pallet, Probe, ProviderOf, Providers};

/// Domain separator of a provider's probe slot.
const PROBE_SLOT_DOMAIN: &[u8] = b"grid/probe-slot/v1";

/// Providers a probe round covers on average: half a report's room, so that a round whose
/// slot drew more than its share (slots are hashes, not counted out) still fits one report
/// (at 1,024 providers a round holds 16 on average, and more than 32 about once in 9,000
/// rounds: the worker probes the 32 least recently probed, the rest wait a rotation).
fn per_round() -> u64 {
	u64::from(<MaxProbesPerReport as Get<u32>>::get() / 2).max(1)
}

/// How many probe rounds it takes to cover every provider once: one per [`per_round`]
/// providers registered now (at least one).
fn rotation<T: Config>() -> u64 {
	u64::from(Providers::<T>::count()).div_ceil(per_round()).max(1)
}

/// Whether probe round `round` covers `who`: its slot, taken around the rotation.
fn covers<T: Config>(who: &T::AccountId, round: u64, rotation: u64) -> bool {
	let hash = blake2_256(&(PROBE_SLOT_DOMAIN, who).encode());
	let slot = u64::from_le_bytes([
		hash[0], hash[1], hash[2], hash[3], hash[4], hash[5], hash[6], hash[7],
	]);
	slot % rotation == round % rotation
}

/// Whether probe round `round` (of a rotation of `rotation`) names `who`, registered as
/// `provider`: its endpoint is one validators may probe, and the round covers its slot.
fn names<T: Config>(
	who: &T::AccountId,
	provider: &ProviderOf<T>,
	round: u64,
	rotation: u64,
) -> bool {
	identity::probe_allowed::<T>(&provider.endpoint) && covers::<T>(who, round, rotation)
}

/// Whether validators may report `who` in probe round `round`: registered, and named by the
/// round.
pub(crate) fn is_probe_target<T: Config>(who: &T::AccountId, round: u64) -> bool {
	Providers::<T>::get(who)
		.is_some_and(|provider| names::<T>(who, &provider, round, rotation::<T>()))
}

/// Probe round `round`'s providers with their endpoints, never probed first, then least
/// recently probed, at most `max`. Reads every provider: for off-chain workers.
pub(crate) fn probe_targets<T: Config>(round: u64, max: u32) -> Vec<(T::AccountId, Endpoint)> {
	let rotation = rotation::<T>();
	let mut due: Vec<_> = Providers::<T>::iter()
		.filter(|(who, provider)| names::<T>(who, provider, round, rotation))
		.map(|(who, provider)| {
			let last = HealthRecords::<T>::get(&who).last_probe.map(|probe| probe.at);
			(last, who, provider.endpoint)
		})
		.collect();
	// `None` (never probed) sorts before any block.
	due.sort_by_key(|entry| entry.0);
	due.into_iter().take(max as usize).map(|(_, who, endpoint)| (who, endpoint)).collect()
}

/// Applies `change` to a registered provider's health record and reports the new score.
/// Does nothing for an unknown account (a provider may deregister between a round and its
/// settlement).
pub(crate) fn update<T: Config>(
	who: &T::AccountId,
	change: impl FnOnce(&mut Health<BlockNumberFor<T>>),
) {
	if !Providers::<T>::contains_key(who) {
		return;
	}
	let score = HealthRecords::<T>::mutate(who, |health| {
		change(health);
		health.score()
	});
	Pallet::<T>::deposit_event(Event::HealthChanged { who: who.clone(), score });
}

/// Records a validator's probe result.
pub(crate) fn record_probe<T: Config>(who: &T::AccountId, ok: bool, latency_ms: u32) {
	if !Providers::<T>::contains_key(who) {
		return;
	}
	let at = frame_system::Pallet::<T>::block_number();
	HealthRecords::<T>::mutate(who, |health| {
		if ok {
			health.probes_ok = health.probes_ok.saturating_add(1);
		} else {
			health.probes_failed = health.probes_failed.saturating_add(1);
		}
		health.last_probe = Some(Probe { at, ok, latency_ms });
	});
	Pallet::<T>::deposit_event(Event::Probed { who: who.clone(), ok, latency_ms });
}
