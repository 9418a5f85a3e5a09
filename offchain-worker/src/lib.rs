//! The validators' off-chain worker: the work that must not sit on the block production path.
//!
//! Each block, on a validator holding a key of the current validator set, [`run`]:
//! 1. every probe interval, probes the endpoints of the providers the chain has heard from
//!    least recently (HTTP GET, 2xx within the timeout counts as up) and measures latency,
//!    giving the chain an independent, network-aware view of provider health;
//! 2. notices rounds and challenges whose deadline passed but that the on-chain hooks could
//!    not reach within their weight budget.
//!
//! It sends both in one validator-signed [`WorkerReport`], which the chain authorizes with
//! `#[pallet::authorize]` (no `ValidateUnsigned`) and dispatches. Every validator asks to
//! settle while work is overdue; the chain lets one report a block settle and refuses the
//! rest unless they carry probes, so free reports cannot take a block from users.
//!
//! The chain side (which providers, what is overdue, signing and submitting) is behind the
//! [`Chain`] trait, which `pallet-jobs` implements; this crate holds the orchestration and
//! the HTTP probing so they can be tested with the offchain test externalities.
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

pub mod probe;

use alloc::vec::Vec;
use grid_primitives::work::{MaxProbesPerReport, ProbeResult, WorkerReport};
use polkadot_sdk::{sp_core::Get, sp_runtime::BoundedVec};

/// How long a provider's endpoint has to answer a probe.
pub const PROBE_TIMEOUT_MS: u64 = 2_000;

/// What the worker needs from the chain.
pub trait Chain {
	/// Provider accounts.
	type AccountId: Clone;
	/// Block numbers.
	type BlockNumber: Copy;
	/// Validator authority keys.
	type Authority: Clone;

	/// A key of a current validator that this node's keystore holds, if any.
	fn local_validator() -> Option<Self::Authority>;
	/// Providers to probe at block `now`, with their endpoint URLs: none between probe
	/// intervals, otherwise the providers the chain's rotation names for this probe round
	/// (the only ones a report may name), at most `MaxProbesPerReport`, least recently
	/// probed first.
	fn probe_targets(now: Self::BlockNumber) -> Vec<(Self::AccountId, Vec<u8>)>;
	/// Whether some round or challenge is past its deadline at `now` and still unsettled.
	fn overdue(now: Self::BlockNumber) -> bool;
	/// Signs `report` with its validator key and submits it to the transaction pool.
	fn submit(
		report: WorkerReport<Self::AccountId, Self::BlockNumber, Self::Authority>,
	) -> Result<(), SubmitError>;
}

/// Why a report could not be sent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SubmitError {
	/// The keystore could not sign with the validator key.
	Signing,
	/// The transaction pool refused the report.
	Pool,
}

/// What one run of the worker did.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Outcome {
	/// This node is not a validator, or holds no key of the current validator set.
	NotValidator,
	/// Nothing to probe and nothing overdue.
	Idle,
	/// A report went to the pool.
	Submitted {
		/// Providers probed.
		probed: u32,
		/// Providers that answered.
		up: u32,
		/// Whether it asked the chain to settle overdue work.
		settle: bool,
	},
	/// A report was made but could not be sent.
	Failed(SubmitError),
}

/// One run of the worker at block `now`.
pub fn run<C: Chain>(now: C::BlockNumber) -> Outcome {
	if !polkadot_sdk::sp_io::offchain::is_validator() {
		return Outcome::NotValidator;
	}
	let Some(validator) = C::local_validator() else { return Outcome::NotValidator };
	let mut targets = C::probe_targets(now);
	targets.truncate(<MaxProbesPerReport as Get<u32>>::get() as usize);
	let probes = probe::probe_all(targets, PROBE_TIMEOUT_MS);
	let settle = C::overdue(now);
	if probes.is_empty() && !settle {
		return Outcome::Idle;
	}
	let probed = probes.len() as u32;
	let up = probes.iter().filter(|p| p.ok).count() as u32;
	let report = WorkerReport {
		validator,
		at: now,
		// At most `MaxProbesPerReport` targets were probed.
		probes: BoundedVec::<ProbeResult<C::AccountId>, MaxProbesPerReport>::truncate_from(probes),
		settle,
	};
	match C::submit(report) {
		Ok(()) => Outcome::Submitted { probed, up, settle },
		Err(error) => {
			log::warn!(target: "grid::worker", "worker report not sent: {error:?}");
			Outcome::Failed(error)
		}
	}
}

#[cfg(test)]
mod tests;
