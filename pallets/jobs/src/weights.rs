//! Weights of the jobs pallet's calls and hooks.
//!
//! Derived, not yet machine-measured (as in `pallet-providers`): storage accesses are counted
//! from the code (listed per function) and charged at the runtime's `DbWeight`; compute is a
//! conservative estimate (sr25519 verification ~80 µs, a balance transfer on hold ~40 µs,
//! SCALE coding of a job or round record ~15 µs). `p` is the number of participants, which
//! bounds every loop. The proof-size part is the `MaxEncodedLen` of the records touched.
#![allow(unused_parens, unused_imports)]

use core::marker::PhantomData;
use polkadot_sdk::polkadot_sdk_frame::{
	deps::frame_support::weights::RuntimeDbWeight, prelude::*, weights_prelude::*,
};

/// Weight functions of `pallet-jobs`.
pub trait WeightInfo {
	fn create_job() -> Weight;
	fn cancel_job(p: u32) -> Weight;
	fn join_job(p: u32) -> Weight;
	fn leave_job() -> Weight;
	fn submit_proof(p: u32) -> Weight;
	fn report_equivocation() -> Weight;
	fn settle_round(p: u32) -> Weight;
	fn settle_round_slashing(p: u32) -> Weight;
	fn force_cancel_job(p: u32) -> Weight;
	fn challenge(p: u32) -> Weight;
	fn vote() -> Weight;
	fn resolve_challenge(k: u32) -> Weight;
	fn authorize_worker_report() -> Weight;
	fn apply_worker_report(n: u32) -> Weight;
}

/// Proof size of a job record (bytes, rounded up).
const JOB_PROOF: u64 = 700;
/// Proof size of an open round with 64 members (bytes, rounded up).
const ROUND_PROOF: u64 = 4_500;
/// Proof size of one stored signed proof (64 peers listed, bytes, rounded up).
const PROOF_PROOF: u64 = 2_400;
/// Proof size of an account's balance and holds (bytes, rounded up).
const BALANCE_PROOF: u64 = 400;
/// Proof size of a provider's registry and health records (bytes, rounded up).
const PROVIDER_PROOF: u64 = 2_300;
/// Proof size of the settlement queue at its bound (bytes, rounded up).
const QUEUE_PROOF: u64 = 3_200;
/// Proof size of an open challenge with its committee (bytes, rounded up).
const CHALLENGE_PROOF: u64 = 900;
/// Proof size of a contribution record (bytes, rounded up).
const CONTRIBUTION_PROOF: u64 = 200;

/// The derived weights at database costs `db`.
struct Derived(RuntimeDbWeight);

impl Derived {
	/// Reads: NextJobId, Account, Holds. Writes: NextJobId, Jobs, Account, Holds.
	fn create_job(&self) -> Weight {
		Weight::from_parts(40_000_000, JOB_PROOF + BALANCE_PROOF)
			.saturating_add(self.0.reads_writes(3, 4))
	}
	/// Settles a round with a quorum first (see `settle_round`), then: reads Jobs, Rounds,
	/// SettlementQueue, Account, Holds, and each participant's registry record; writes Jobs,
	/// Rounds, SettlementQueue, Proofs (p), Account, Holds, registry records (p).
	fn cancel_job(&self, p: u32) -> Weight {
		self.settle_round(p)
			.saturating_add(Weight::from_parts(40_000_000, JOB_PROOF + ROUND_PROOF + QUEUE_PROOF))
			.saturating_add(Weight::from_parts(5_000_000, PROVIDER_PROOF).saturating_mul(p.into()))
			.saturating_add(self.0.reads_writes(5, 5))
			.saturating_add(self.0.reads_writes(p.into(), (2 * p).into()))
	}
	/// Reads: Jobs, Participants, the provider's registry record. Writes: Participants, Jobs,
	/// the registry record. When the join starts the job: reads the p participants, writes
	/// Rounds and SettlementQueue.
	fn join_job(&self, p: u32) -> Weight {
		Weight::from_parts(35_000_000, JOB_PROOF + PROVIDER_PROOF + ROUND_PROOF + QUEUE_PROOF)
			.saturating_add(Weight::from_parts(2_000_000, 100).saturating_mul(p.into()))
			.saturating_add(self.0.reads_writes(4, 5))
			.saturating_add(self.0.reads(p.into()))
	}
	/// Reads: Jobs, Participants, the registry record. Writes: the same.
	fn leave_job(&self) -> Weight {
		Weight::from_parts(30_000_000, JOB_PROOF + PROVIDER_PROOF)
			.saturating_add(self.0.reads_writes(3, 3))
	}
	/// Reads: Jobs, Rounds, Proofs, BlockHash(0). Writes: Proofs, Rounds, SettlementQueue.
	/// When the proof completes the round it is settled at once (see `settle_round`).
	fn submit_proof(&self, p: u32) -> Weight {
		Weight::from_parts(110_000_000, JOB_PROOF + ROUND_PROOF + PROOF_PROOF + QUEUE_PROOF)
			.saturating_add(self.0.reads_writes(5, 3))
			.saturating_add(self.settle_round(p))
	}
	/// Two signature checks; reads: Equivocations, BlockHash(0), Jobs, the offender's registry
	/// record, Participants, the recipients' accounts. Writes: the registry record,
	/// Participants, Jobs, Equivocations, two recipients' accounts, total issuance.
	fn report_equivocation(&self) -> Weight {
		Weight::from_parts(260_000_000, JOB_PROOF + PROVIDER_PROOF + 3 * BALANCE_PROOF)
			.saturating_add(self.0.reads_writes(8, 8))
	}
	/// Reads: Jobs, Rounds, the p stored proofs, each member's Participants and registry
	/// records, the buyer's and each payee's accounts. Writes: Proofs (p), Participants (p),
	/// health records (p), payee accounts (p), the buyer's holds, RoundResults, Jobs, Rounds,
	/// SettlementQueue. A liveness slash of a member costs a transfer more.
	fn settle_round(&self, p: u32) -> Weight {
		let per_member =
			Weight::from_parts(90_000_000, PROOF_PROOF + PROVIDER_PROOF + BALANCE_PROOF + 200)
				.saturating_add(self.0.reads_writes(5, 5));
		Weight::from_parts(60_000_000, JOB_PROOF + ROUND_PROOF + QUEUE_PROOF + BALANCE_PROOF)
			.saturating_add(self.0.reads_writes(4, 6))
			.saturating_add(per_member.saturating_mul(p.into()))
	}
	/// Reads: the challenger's registry record, Jobs, RoundResults, Contributions, Challenged,
	/// NextChallengeId, the randomness, the challenger's account and holds, ChallengeQueue,
	/// and for each of the p participants its Participants key and registry record (the
	/// committee draw hashes each). Writes: holds, account, ChallengeQueue, NextChallengeId,
	/// Challenged, Challenges.
	fn challenge(&self, p: u32) -> Weight {
		let per_candidate =
			Weight::from_parts(4_000_000, PROVIDER_PROOF + 100).saturating_add(self.0.reads(2));
		Weight::from_parts(
			60_000_000,
			PROVIDER_PROOF + JOB_PROOF + CONTRIBUTION_PROOF + CHALLENGE_PROOF + BALANCE_PROOF,
		)
		.saturating_add(self.0.reads_writes(10, 6))
		.saturating_add(per_candidate.saturating_mul(p.into()))
	}
	/// Reads and writes Challenges. Deciding the challenge early is charged separately.
	fn vote(&self) -> Weight {
		Weight::from_parts(25_000_000, CHALLENGE_PROOF).saturating_add(self.0.reads_writes(1, 1))
	}
	/// Reads: Challenges, Jobs, Contributions, ChallengeQueue, the accused's registry and
	/// health records, the challenger's, buyer's and voters' accounts. Writes: the same
	/// records, Participants, total issuance. Each of the k members may be paid a deposit
	/// share or slashed for absence (a registry record and an account each).
	fn resolve_challenge(&self, k: u32) -> Weight {
		let per_member = Weight::from_parts(45_000_000, PROVIDER_PROOF + BALANCE_PROOF)
			.saturating_add(self.0.reads_writes(2, 2));
		Weight::from_parts(
			200_000_000,
			CHALLENGE_PROOF + JOB_PROOF + CONTRIBUTION_PROOF + PROVIDER_PROOF + 3 * BALANCE_PROOF,
		)
		.saturating_add(self.0.reads_writes(10, 10))
		.saturating_add(per_member.saturating_mul(k.into()))
	}
	/// Reads: the validator set, LastWorkerReport, the queue heads, BlockHash(0); one
	/// signature check.
	fn authorize_worker_report(&self) -> Weight {
		Weight::from_parts(90_000_000, 2 * QUEUE_PROOF + 200).saturating_add(self.0.reads(5))
	}
	/// Writes LastWorkerReport; for each of the n probes reads and writes the provider's
	/// registry and health records. Settling overdue items is charged per item on top.
	fn apply_worker_report(&self, n: u32) -> Weight {
		let per_probe = Weight::from_parts(15_000_000, PROVIDER_PROOF)
			.saturating_add(self.0.reads_writes(2, 1));
		Weight::from_parts(20_000_000, 200)
			.saturating_add(self.0.writes(1))
			.saturating_add(per_probe.saturating_mul(n.into()))
	}
}

macro_rules! delegate {
	($db:expr) => {
		fn create_job() -> Weight {
			Derived($db).create_job()
		}
		fn cancel_job(p: u32) -> Weight {
			Derived($db).cancel_job(p)
		}
		fn join_job(p: u32) -> Weight {
			Derived($db).join_job(p)
		}
		fn leave_job() -> Weight {
			Derived($db).leave_job()
		}
		fn submit_proof(p: u32) -> Weight {
			Derived($db).submit_proof(p)
		}
		fn report_equivocation() -> Weight {
			Derived($db).report_equivocation()
		}
		fn settle_round(p: u32) -> Weight {
			Derived($db).settle_round(p)
		}
		fn settle_round_slashing(p: u32) -> Weight {
			Derived($db).settle_round(p).saturating_mul(2)
		}
		fn force_cancel_job(p: u32) -> Weight {
			Derived($db).cancel_job(p)
		}
		fn challenge(p: u32) -> Weight {
			Derived($db).challenge(p)
		}
		fn vote() -> Weight {
			Derived($db).vote()
		}
		fn resolve_challenge(k: u32) -> Weight {
			Derived($db).resolve_challenge(k)
		}
		fn authorize_worker_report() -> Weight {
			Derived($db).authorize_worker_report()
		}
		fn apply_worker_report(n: u32) -> Weight {
			Derived($db).apply_worker_report(n)
		}
	};
}

/// Weights for a runtime using `T::DbWeight`.
pub struct SubstrateWeight<T>(PhantomData<T>);

impl<T: frame_system::Config> WeightInfo for SubstrateWeight<T> {
	delegate!(T::DbWeight::get());
}

/// Test weights: the same shape with a zero database cost.
impl WeightInfo for () {
	delegate!(RuntimeDbWeight { read: 0, write: 0 });
}
