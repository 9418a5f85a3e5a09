//! Storage, event and view types of the jobs pallet.

use codec::{Decode, DecodeWithMemTracking, Encode, MaxEncodedLen};
use grid_primitives::{
	job::{Admission, JobId, JobSpec, RoundIndex, SignedProof},
	work::Verdict,
};
use polkadot_sdk::polkadot_sdk_frame::{deps::sp_core::H256, prelude::*};
use scale_info::TypeInfo;

/// What per-block work must do at a block of the agenda.
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	PartialOrd,
	Ord,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum AgendaItem {
	/// Settle the open round of this job.
	Settle(JobId),
	/// Draw this challenge's committee (with randomness from after the challenge was sent).
	Draw(ChallengeId),
	/// Decide this challenge at its deadline (undecided without a committee majority).
	Decide(ChallengeId),
	/// Prune what a settled round left for challenges (its window and votes are over); with
	/// the index of the job's first unsettled round once the job ended, prune the job itself
	/// and return its storage deposit.
	Expire(JobId, RoundIndex),
	/// End this job if it is still waiting for `min_providers` (`MaxOpenBlocks` after it
	/// was created): its escrow returns and its members' stake is free.
	Unfilled(JobId),
	/// Draw which paid contributions to this settled round are audited, and their
	/// committees, with randomness from after the round settled.
	Audit(JobId, RoundIndex),
}

/// Where a job is in its life.
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum JobStatus {
	/// Recruiting: waiting for `min_providers` participants.
	Open,
	/// Training; one round at a time is open for proofs.
	Running,
	/// Every round was settled. `final_model_hash` is the last round result a quorum attested
	/// (none if no round ever reached a quorum).
	Completed { final_model_hash: Option<H256> },
	/// The buyer cancelled; the unspent escrow went back.
	Cancelled,
}

impl JobStatus {
	/// Open or running: the job still holds escrow and accepts members.
	pub fn is_live(&self) -> bool {
		matches!(self, JobStatus::Open | JobStatus::Running)
	}
}

/// A job and its escrow account.
///
/// Escrow: `funded` was put on hold from `buyer` at creation; `paid` went to participants,
/// `fees` to the fee collector, `refunded` back to the buyer; the rest is still on hold.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
pub struct Job<AccountId, Balance, BlockNumber> {
	/// Who posted and pays for it.
	pub buyer: AccountId,
	/// What to train and how.
	pub spec: JobSpec<Balance, BlockNumber>,
	/// Lifecycle state.
	pub status: JobStatus,
	/// Block of creation.
	pub created_at: BlockNumber,
	/// Active participants.
	pub participants: u32,
	/// Rounds settled so far (paid or refunded); the open round has this index.
	pub rounds_settled: RoundIndex,
	/// Settlements in a row after which fewer than `min_providers` took part, or of rounds
	/// without a quorum: the job ends after `MaxUnderstaffedRounds` of them.
	pub understaffed_rounds: u32,
	/// The buyer cancelled while a round was open: the job ends when that round settles
	/// (paying its members as usual), so a cancel cannot take a round's work unpaid.
	pub cancel_requested: bool,
	/// Latest round result a quorum attested.
	pub last_result: Option<H256>,
	/// Put on hold at creation: `rounds × round_escrow`.
	pub funded: Balance,
	/// Rewards paid to participants.
	pub paid: Balance,
	/// Protocol fees paid.
	pub fees: Balance,
	/// Returned to the buyer.
	pub refunded: Balance,
	/// Rewards taken back from the stake of participants proven to have cheated and given to
	/// the buyer (outside the escrow: they come from stake).
	pub clawed_back: Balance,
	/// The buyer's storage deposit, on hold until the job's records are pruned.
	pub deposit: Balance,
}

impl<AccountId, Balance: AtLeast32BitUnsigned + Copy, BlockNumber>
	Job<AccountId, Balance, BlockNumber>
{
	/// Escrow still on hold for this job.
	pub fn held(&self) -> Balance {
		self.funded
			.saturating_sub(self.paid)
			.saturating_sub(self.fees)
			.saturating_sub(self.refunded)
	}
}

/// A provider's membership of a job.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
pub struct Participant<Balance> {
	/// First round it takes part in (a running job admits joiners from the next round).
	pub from_round: RoundIndex,
	/// Consecutive rounds it was in without submitting a proof.
	pub missed_in_row: u32,
	/// Rounds it was paid for.
	pub rounds_paid: u32,
	/// Rewards it received from this job.
	pub earned: Balance,
}

/// The open round of a running job.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
#[scale_info(skip_type_params(MaxMembers))]
pub struct RoundState<AccountId, BlockNumber, MaxMembers: Get<u32>> {
	/// Which round.
	pub index: RoundIndex,
	/// Block it opened in.
	pub opened_at: BlockNumber,
	/// Randomness drawn when the round before opened (or, for a job's first round, when it
	/// opened): each member's training data is derived from it
	/// ([`grid_primitives::work::data_seed`]).
	pub seed: H256,
	/// The next round's seed, drawn when this one opened: trainers of a job whose rounds
	/// overlap (`TrainingParams::overlap_steps`) start the next round's first steps before
	/// the chain opens it.
	pub next_seed: H256,
	/// First block at which it no longer accepts proofs and is settled.
	pub deadline: BlockNumber,
	/// Block at which it will be settled: the deadline, or earlier once a quorum is reached.
	pub due: BlockNumber,
	/// Participants expected to contribute (a snapshot taken when it opened): first those
	/// that were members of the round before, then those admitted from this one.
	pub members: BoundedVec<AccountId, MaxMembers>,
	/// How many of `members`, from the front, were members before this round.
	pub established: u32,
	/// Proofs received from members admitted from this round (behind `established`).
	pub joiners_in: u32,
	/// Attestations per result hash.
	pub tally: BoundedVec<(H256, u32), MaxMembers>,
	/// The result hash that reached a quorum, if any.
	pub quorum: Option<H256>,
}

impl<AccountId: PartialEq, BlockNumber, MaxMembers: Get<u32>>
	RoundState<AccountId, BlockNumber, MaxMembers>
{
	/// Whether `who` was admitted from this round (a joiner of a running job).
	pub fn is_joiner(&self, who: &AccountId) -> bool {
		self.members.iter().position(|m| m == who).is_some_and(|i| i >= self.established as usize)
	}

	/// The members a settling round's quorum is two thirds of: the established ones and the
	/// joiners that delivered (one reached earlier is two thirds of all members). A joiner may
	/// still be fetching the model in its first round, so one that has not delivered does
	/// not count: otherwise every admission raised the bar the others
	/// must clear, and joiners that never deliver (Sybils that join, sit the round out and
	/// leave, at no cost) could deny the established members their quorum, and their pay,
	/// round after round. Counted so, a round needs what it would have needed without its
	/// absent joiners. A round of joiners only (a job's first, or one whose members all left)
	/// counts all of them.
	pub fn counted(&self) -> u32 {
		match self.established {
			0 => self.members.len() as u32,
			established => established.saturating_add(self.joiners_in),
		}
	}
}

/// Smallest number of attestations that is at least two thirds of `members`.
pub fn quorum_threshold(members: u32) -> u32 {
	(2 * members).div_ceil(3)
}

/// What a settled round came to.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
pub struct RoundSummary<Balance, BlockNumber> {
	/// The result a quorum attested; none when the round failed.
	pub result_model_hash: Option<H256>,
	/// Members of the round.
	pub members: u32,
	/// Proofs received.
	pub proofs: u32,
	/// Participants paid.
	pub paid_participants: u32,
	/// Rewards paid.
	pub paid: Balance,
	/// Fee taken.
	pub fee: Balance,
	/// Returned to the buyer.
	pub refunded: Balance,
	/// Block it was settled in.
	pub settled_at: BlockNumber,
	/// The round's data seed (see [`RoundState::seed`]), so verifiers can recompute it.
	pub seed: H256,
}

/// Why a participant was removed from a job by the chain.
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum RemovalReason {
	/// It signed two different proofs for one round.
	Equivocation,
	/// It missed too many rounds in a row.
	Liveness,
	/// A verifier committee found one of its updates invalid.
	Fraud,
	/// A slash left its active stake below what its jobs lock (or the registry minimum).
	StakeShortfall,
}

/// A paid contribution, kept as evidence so it can be challenged during the job's challenge
/// window.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
pub struct Contribution<Balance> {
	/// Model the round started from.
	pub base_model_hash: H256,
	/// Content address of the participant's update.
	pub update_commitment: H256,
	/// Content address of its private state at the round's start (what a replay starts from).
	pub start_state: H256,
	/// Inner steps it claimed (what a replay redoes).
	pub inner_steps: u32,
	/// Samples it claimed to process.
	pub samples_processed: u64,
	/// What it was paid for the round: zero for a claim of an update another member was
	/// paid for (a copy, kept so that the claim can be disputed).
	pub reward: Balance,
	/// The round's members (bit `i` is `RoundMembers[i]`) whose attesting proofs say they
	/// used this update: they hold it, so a committee is drawn from them.
	pub holders: u64,
}

impl<Balance> Contribution<Balance> {
	/// Whether the member at `index` of the round holds the update.
	pub fn held_by(&self, index: usize) -> bool {
		index < 64 && self.holders & (1 << index) != 0
	}
}

/// Identifies a fraud challenge; assigned in creation order.
pub type ChallengeId = u64;

/// A committee member's ballot: hidden while members commit, so that no member can follow
/// another's verdict instead of judging, then revealed.
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum Ballot {
	/// Nothing sent yet.
	Pending,
	/// A commitment ([`grid_primitives::work::vote_commitment`]) to a verdict not yet shown.
	Committed(H256),
	/// The verdict, revealed and matching the commitment.
	Revealed(Verdict),
}

/// Who disputes a contribution.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
pub enum Accuser<AccountId, Balance> {
	/// A staked provider, with `deposit` on hold (it goes to the verifiers if the committee
	/// finds the update valid).
	Challenger {
		/// The challenger.
		who: AccountId,
		/// Its deposit.
		deposit: Balance,
	},
	/// The chain's random audit: nobody suspected the contribution, nobody puts a deposit
	/// at stake, and nobody but the verifiers and the buyer shares a slash.
	Audit,
}

impl<AccountId, Balance> Accuser<AccountId, Balance> {
	/// The challenger, unless this is an audit.
	pub fn challenger(&self) -> Option<&AccountId> {
		match self {
			Accuser::Challenger { who, .. } => Some(who),
			Accuser::Audit => None,
		}
	}
}

/// An open fraud challenge (or audit) against one contribution.
///
/// Its life, in blocks from when it was opened: the committee is drawn at `draw_at` (with
/// randomness nobody knew when the challenge was sent), members commit until `reveal_from`
/// (or until every member has), reveal until `deadline`, and it is decided at once when a
/// strict majority of the committee has revealed the same verdict, else at the deadline.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, MaxEncodedLen, TypeInfo)]
#[scale_info(skip_type_params(MaxCommittee))]
pub struct Challenge<AccountId, Balance, BlockNumber, MaxCommittee: Get<u32>> {
	/// The job.
	pub job: JobId,
	/// The round of the challenged contribution.
	pub round: RoundIndex,
	/// Whose contribution is challenged.
	pub accused: AccountId,
	/// A provider that challenged it, or the chain's random audit.
	pub accuser: Accuser<AccountId, Balance>,
	/// The block whose agenda draws the committee: later than the challenge's own block, so
	/// the challenger could not know the randomness when it sent the challenge (an audit's
	/// is drawn in the block that opens it, itself drawn after the round settled).
	pub draw_at: BlockNumber,
	/// The verifiers drawn, each with its ballot; empty until drawn.
	pub committee: BoundedVec<(AccountId, Ballot), MaxCommittee>,
	/// First block at which verdicts may be revealed (earlier once every member committed).
	pub reveal_from: BlockNumber,
	/// First block at which votes are no longer accepted.
	pub deadline: BlockNumber,
	/// The block whose agenda decides it: the deadline, or a little later when that block's
	/// agenda was full.
	pub due: BlockNumber,
}

impl<AccountId, Balance, BlockNumber: PartialOrd, MaxCommittee: Get<u32>>
	Challenge<AccountId, Balance, BlockNumber, MaxCommittee>
{
	/// Revealed votes for `verdict`.
	pub fn votes(&self, verdict: Verdict) -> u32 {
		self.committee.iter().filter(|(_, b)| *b == Ballot::Revealed(verdict)).count() as u32
	}

	/// The verdict a strict majority of the whole committee has revealed, if any: nothing the
	/// remaining members vote can change it.
	pub fn settled_verdict(&self) -> Option<Verdict> {
		let size = self.committee.len() as u32;
		[Verdict::Invalid, Verdict::Valid].into_iter().find(|v| 2 * self.votes(*v) > size)
	}

	/// Whether a member committed to a verdict it has not revealed yet.
	pub fn hides_verdicts(&self) -> bool {
		self.committee.iter().any(|(_, b)| matches!(b, Ballot::Committed(_)))
	}

	/// Whether the committee has been drawn (an empty draw ends the challenge at once).
	pub fn drawn(&self) -> bool {
		!self.committee.is_empty()
	}

	/// Whether verdicts may be revealed at `now`: from `reveal_from` on, or once every member
	/// has committed (nobody is left to be swayed by what is revealed).
	pub fn revealing(&self, now: BlockNumber) -> bool {
		let all_committed =
			self.drawn() && self.committee.iter().all(|(_, b)| *b != Ballot::Pending);
		all_committed || now >= self.reveal_from
	}
}

/// How a challenge ended.
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub enum ChallengeOutcome {
	/// A strict majority of the committee revealed `Invalid`: the accused was slashed, its
	/// reward clawed back, and the challenger got its deposit back with a share of the slash.
	FraudProven,
	/// A strict majority of the committee revealed `Valid`: the challenger's deposit went to
	/// the verifiers that said so.
	Rejected,
	/// No strict majority by the deadline, or no committee left to draw: nobody is punished
	/// for the contribution and the deposit returns.
	Undecided,
}

/// A job as returned by the view functions.
#[derive(Clone, PartialEq, Eq, Debug, Encode, Decode, TypeInfo)]
#[scale_info(skip_type_params(MaxMembers))]
pub struct JobView<AccountId, Balance, BlockNumber, MaxMembers: Get<u32>> {
	/// The record.
	pub job: Job<AccountId, Balance, BlockNumber>,
	/// Escrow still on hold.
	pub held: Balance,
	/// The open round, when running.
	pub round: Option<RoundState<AccountId, BlockNumber, MaxMembers>>,
	/// Who may join besides holding the stake.
	pub admission: Admission<AccountId, BlockNumber>,
}

/// A proof as stored for the open round.
pub type StoredProof<AccountId> = SignedProof<AccountId>;
