//! Health bookkeeping: rounds, challenges and probes feed the record the score derives from.

use polkadot_sdk::polkadot_sdk_frame::prelude::*;

use crate::{Config, Event, Health, HealthRecords, Pallet, Probe, Providers};

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
