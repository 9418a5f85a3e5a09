//! The chain side of the validators' off-chain worker (`grid-offchain-worker`): what it probes,
//! what is overdue, signing and submitting its reports, authorizing them, and applying them.

use alloc::vec::Vec;
use codec::Encode;
use grid_offchain_worker::{Chain, SubmitError};
use grid_primitives::work::{worker_report_payload, MaxProbesPerReport};
use pallet_providers::traits::ProviderHealth;
use polkadot_sdk::polkadot_sdk_frame::{
	deps::sp_runtime::{traits::Zero, RuntimeAppPublic},
	prelude::*,
};

use crate::{
	tick, AuthoritySignatureOf, Call, Config, Event, LastWorkerReport, Pallet, ReportSettledIn,
	WeightInfo, WorkerReportOf,
};

/// `InvalidTransaction::Custom` code: a report with no probes and nothing overdue.
pub const NOTHING_TO_REPORT: u8 = 1;
/// `InvalidTransaction::Custom` code: probes in a report made at a block that is not a probe
/// block (a multiple of `ProbeInterval`).
pub const NOT_A_PROBE_BLOCK: u8 = 2;
/// `InvalidTransaction::Custom` code: a provider probed twice in one report.
pub const PROBED_TWICE: u8 = 3;
/// `InvalidTransaction::Custom` code: a probe of a provider that the report's probe round
/// does not cover (validators probe the providers the chain's rotation names, not their
/// own choice: see `pallet_providers`' health module).
pub const NOT_A_PROBE_TARGET: u8 = 4;

/// [`Chain`] for the worker, backed by this pallet's storage and the node's keystore.
pub struct Host<T>(core::marker::PhantomData<T>);

impl<T: Config> Chain for Host<T> {
	type AccountId = T::AccountId;
	type BlockNumber = BlockNumberFor<T>;
	type Authority = T::AuthorityId;

	fn local_validator() -> Option<T::AuthorityId> {
		let validators = T::Validators::get();
		T::AuthorityId::all().into_iter().find(|key| validators.contains(key))
	}

	fn probe_targets(now: BlockNumberFor<T>) -> Vec<(T::AccountId, Vec<u8>)> {
		let Some(round) = probe_round::<T>(now) else { return Vec::new() };
		T::Providers::probe_targets(round, <MaxProbesPerReport as Get<u32>>::get())
			.into_iter()
			.map(|(who, endpoint)| (who, endpoint.into_inner()))
			.collect()
	}

	fn overdue(now: BlockNumberFor<T>) -> bool {
		overdue::<T>(now)
	}

	fn submit(report: WorkerReportOf<T>) -> Result<(), SubmitError> {
		let payload = worker_report_payload(&genesis::<T>(), &report);
		let signature = report.validator.sign(&payload).ok_or(SubmitError::Signing)?;
		let call = Call::<T>::submit_worker_report { report, signature };
		let xt = T::create_authorized_transaction(call.into());
		SubmitTransaction::<T, Call<T>>::submit_transaction(xt).map_err(|()| SubmitError::Pool)
	}
}

/// The `offchain_worker` hook: one run of the shared worker against this chain.
pub(crate) fn offchain_worker<T: Config>(now: BlockNumberFor<T>) {
	let outcome = grid_offchain_worker::run::<Host<T>>(now);
	log::debug!(target: "grid::worker", "block {now:?}: {outcome:?}");
}

pub(crate) use tick::overdue;

/// The probe round block `at` starts: `at / ProbeInterval` where `at` is a multiple of it;
/// `None` between probe blocks (or where probing is off).
pub(crate) fn probe_round<T: Config>(at: BlockNumberFor<T>) -> Option<u64> {
	let interval = T::ProbeInterval::get();
	if interval.is_zero() || !(at % interval).is_zero() {
		return None;
	}
	Some((at / interval).saturated_into::<u64>())
}

/// Why `report`'s probes cannot count, if they cannot: made between probe blocks, a provider
/// twice, or a provider its round does not cover. So each validator speaks for a provider at
/// most once a round, in the rounds every validator does.
fn probes_refused<T: Config>(report: &WorkerReportOf<T>) -> Option<u8> {
	if report.probes.is_empty() {
		return None;
	}
	let Some(round) = probe_round::<T>(report.at) else { return Some(NOT_A_PROBE_BLOCK) };
	for (i, probe) in report.probes.iter().enumerate() {
		if report.probes[..i].iter().any(|earlier| earlier.provider == probe.provider) {
			return Some(PROBED_TWICE);
		}
		if !T::Providers::is_probe_target(&probe.provider, round) {
			return Some(NOT_A_PROBE_TARGET);
		}
	}
	None
}

fn genesis<T: Config>() -> T::Hash {
	frame_system::Pallet::<T>::block_hash(BlockNumberFor::<T>::zero())
}

impl<T: Config> Pallet<T> {
	/// Accepts a worker report only from a current validator, signed by its key, recent (at
	/// most `ReportLongevity` blocks old, not from the future), newer than that validator's
	/// last report, with something in it, and probes only of its probe round's providers,
	/// each once. Cheap checks first, the signature last.
	pub(crate) fn authorize_worker_report(
		_source: TransactionSource,
		report: &WorkerReportOf<T>,
		signature: &AuthoritySignatureOf<T>,
	) -> TransactionValidityWithRefund {
		if !T::Validators::get().contains(&report.validator) {
			return Err(InvalidTransaction::BadSigner.into());
		}
		let now = frame_system::Pallet::<T>::block_number();
		if report.at > now {
			return Err(InvalidTransaction::Future.into());
		}
		let age = now - report.at;
		let newer =
			LastWorkerReport::<T>::get(&report.validator).is_none_or(|last| report.at > last);
		if age > T::ReportLongevity::get() || !newer {
			return Err(InvalidTransaction::Stale.into());
		}
		if report.probes.is_empty() && !(report.settle && may_settle::<T>(now)) {
			return Err(InvalidTransaction::Custom(NOTHING_TO_REPORT).into());
		}
		if let Some(code) = probes_refused::<T>(report) {
			return Err(InvalidTransaction::Custom(code).into());
		}
		let payload = worker_report_payload(&genesis::<T>(), report);
		if !report.validator.verify(&payload, signature) {
			return Err(InvalidTransaction::BadProof.into());
		}
		let longevity = (T::ReportLongevity::get() - age).saturated_into::<u64>().max(1);
		ValidTransaction::with_tag_prefix("GridWorkerReport")
			.priority(T::ReportPriority::get())
			.and_provides((report.validator.encode(), report.at))
			.longevity(longevity)
			.propagate(true)
			.build()
			.map(|valid| (valid, Weight::zero()))
	}

	/// The most a report can cost: its probes, and settling a block's worth of overdue items
	/// (with the read and write of [`ReportSettledIn`]).
	pub(crate) fn worker_report_weight(report: &WorkerReportOf<T>) -> Weight {
		let probes = T::WeightInfo::apply_worker_report(report.probes.len() as u32);
		if !report.settle {
			return probes;
		}
		probes.saturating_add(settle_weight::<T>(tick::worst_case::<T>(
			T::MaxSettlementsPerBlock::get(),
		)))
	}
}

/// What authorizing a report may cost: the measured authorization (whose report probes
/// about half of `MaxProbesPerReport`, a probe round's share of them) and the target checks'
/// reads for a full report (two each: the provider and the registry's count).
pub(crate) fn authorize_weight<T: Config>() -> Weight {
	let probes = u64::from(<MaxProbesPerReport as Get<u32>>::get());
	T::WeightInfo::authorize_worker_report().saturating_add(T::DbWeight::get().reads(2 * probes))
}

/// Whether a report may still settle at `now`: work is overdue and no report settled in this
/// block yet.
fn may_settle<T: Config>(now: BlockNumberFor<T>) -> bool {
	!report_settled_in::<T>(now) && overdue::<T>(now)
}

/// Whether a report settled agenda work in block `now` already (one a block may).
fn report_settled_in<T: Config>(now: BlockNumberFor<T>) -> bool {
	ReportSettledIn::<T>::get() == Some(now)
}

/// A settling report's share of the weight: its pass and the [`ReportSettledIn`] flag.
fn settle_weight<T: Config>(pass: Weight) -> Weight {
	pass.saturating_add(T::DbWeight::get().reads_writes(1, 1))
}

/// Records the probes in the providers' health and, if the report asks and no report settled
/// in this block yet, settles overdue work. Returns the weight it used: the call charged the
/// worst case up front and is refunded the rest.
pub(crate) fn apply<T: Config>(report: WorkerReportOf<T>) -> Weight {
	LastWorkerReport::<T>::insert(&report.validator, report.at);
	for probe in &report.probes {
		T::Providers::probed(&probe.provider, probe.ok, probe.latency_ms);
	}
	let mut used = T::WeightInfo::apply_worker_report(report.probes.len() as u32);
	let now = frame_system::Pallet::<T>::block_number();
	let settled = if report.settle && !report_settled_in::<T>(now) {
		ReportSettledIn::<T>::put(now);
		let worked = tick::on_worker_report::<T>(now);
		used = used.saturating_add(settle_weight::<T>(worked.weight));
		worked.items
	} else {
		if report.settle {
			used = used.saturating_add(T::DbWeight::get().reads(1));
		}
		0
	};
	Pallet::<T>::deposit_event(Event::WorkerReported {
		validator: report.validator,
		at: report.at,
		probes: report.probes.len() as u32,
		settled,
	});
	used
}
