//! Drives a trainer's rounds from the chain and attests them there.
//!
//! A task follows the node (reconnecting when it drops): each new block refreshes the job's
//! open round — its index, its data seed, and when updates must be committed so the proofs
//! still make the round's deadline — which the trainer thread reads through
//! [`ChainCoordinator`]. Each round the trainer finishes becomes one signed
//! [`ContributionProof`], stored before it is first sent so a restarted trainer resends the
//! same proof instead of signing a second one (which would be equivocation), and resent until
//! the chain has it or its round has closed.
//!
//! Every proof is also announced to the job's other trainers (gossip). A trainer that hears
//! two different validly signed proofs of one provider for one round holds the evidence of
//! equivocation the chain punishes, and reports it.
//!
//! The fraud path's chain side is here too: a contribution the trainer's replay refuted is
//! challenged once the chain has paid it, and the challenges the chain draws this trainer to
//! judge are handed to the trainer, whose verdicts go back as committed, then revealed, votes
//! (each resent until the chain has it).

mod accounts;
mod fraud;
mod proofs;
mod quorum;

use std::{
	collections::{BTreeMap, BTreeSet, HashMap},
	path::PathBuf,
	sync::{Arc, Mutex},
	time::Duration,
};

use grid_primitives::{
	job::{JobId, RoundIndex},
	time::MILLI_SECS_PER_BLOCK,
	work::{data_seed, Verdict},
	Hash,
};
use libp2p::PeerId;
use subxt_signer::sr25519::Keypair;
use tokio::sync::mpsc;

use super::{
	client::{Block, Chain, JobStatus, RoundState},
	left_buyers::{LeftBuyers, LeftJob},
	AccountId, ChainError, Result, SignedProof,
};
use crate::round::{
	coordinator::{Clock, Coordinator, RoundReport},
	fraud::{CheckRequest, FraudPort},
	messages::Equivocation,
	roster::Roster,
};
use fraud::Accusation;

/// How often the node is polled for a new block.
const POLL: Duration = Duration::from_millis(500);
/// Longest a poll of the node may take before it is counted as unanswered.
const TICK_TIMEOUT: Duration = Duration::from_secs(10);
/// Unanswered polls in a row after which the connection is given up and made again. A node
/// that is only slow (many trainers asking at once, `bench/scale.sh`) is not helped by a new
/// connection, which costs it the runtime's metadata again; one that went away errors, and
/// that reconnects at once.
const TIMEOUTS_BEFORE_RECONNECT: u32 = 3;
/// A proof is sent this long before the slot of the last block that may include it.
const SUBMIT_MARGIN_MS: u64 = 1_000;
/// Blocks after which a challenge or a vote the chain does not show yet is sent again.
const RESEND_BLOCKS: u32 = 3;
/// Most times a challenge is sent.
const CHALLENGE_TRIES: u32 = 3;
/// Rounds whose data seeds are remembered (for replays of peers' updates).
const SEED_ROUNDS: u32 = 8;

/// The job's open round as the trainer sees it.
#[derive(Clone, Debug, PartialEq)]
struct OpenRound {
	index: RoundIndex,
	seed: Hash,
	/// The next round's seed, dealt a round ahead (for overlapped rounds).
	next_seed: Hash,
	/// Unix ms by which updates must be committed.
	commit_by: u64,
	members: Vec<AccountId>,
}

/// What a tick reads of the job: its status and its open round (two storage entries, no
/// runtime call).
struct JobNow {
	status: JobStatus,
	round: Option<RoundState>,
	buyer: AccountId,
}

impl JobNow {
	async fn read(block: &Block, job: JobId) -> Result<Self> {
		let record = block
			.job_record(job)
			.await?
			.ok_or_else(|| ChainError::Missing(format!("job {job} is not on chain")))?;
		Ok(JobNow { status: record.status, round: block.round(job).await?, buyer: record.buyer })
	}
}

/// What the chain task shares with the trainer thread.
#[derive(Debug, Default)]
struct Shared {
	open: Option<OpenRound>,
	ended: bool,
	/// Proofs not yet seen on chain.
	unsent: usize,
	earned: u128,
	rounds_paid: u32,
	/// Stake slashed while following the chain (`Slashed` events of this account).
	slashed: u128,
	/// Proofs to announce to peers.
	outbox: Vec<Vec<u8>>,
	/// Seeds of the recent rounds.
	seeds: BTreeMap<RoundIndex, Hash>,
	/// Seeds of older rounds with a challenge this trainer judges (read from the chain).
	check_seeds: BTreeMap<RoundIndex, Hash>,
	/// libp2p peer ids (bytes) of registered providers → their accounts.
	accounts: HashMap<Vec<u8>, AccountId>,
	/// The recent rounds' members' peer ids, each round's taken when it opened.
	rosters: BTreeMap<RoundIndex, BTreeSet<PeerId>>,
	/// Challenges this trainer was drawn to judge, not yet taken by the trainer.
	checks: Vec<CheckRequest>,
}

/// What the trainer asks of the chain about fraud.
enum Action {
	/// Challenge the peer's contribution to the round.
	Accuse(RoundIndex, PeerId),
	/// Vote on a challenge.
	Vote(u64, Verdict),
	/// Report a peer's two commitments for one round.
	ReportCommitments(Box<Equivocation>),
}

/// The trainer's side: reads what the chain task last saw, hands finished rounds over.
pub struct ChainCoordinator {
	job: JobId,
	me: AccountId,
	shared: Arc<Mutex<Shared>>,
	reports: mpsc::UnboundedSender<RoundReport>,
	heard: mpsc::UnboundedSender<Vec<u8>>,
	actions: mpsc::UnboundedSender<Action>,
}

impl ChainCoordinator {
	fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
		self.shared.lock().unwrap_or_else(|e| e.into_inner())
	}

	/// Rewards this trainer earned from the job so far, the rounds they paid for, and the
	/// stake slashed since it started following the chain.
	pub fn earnings(&self) -> (u128, u32, u128) {
		let s = self.shared();
		(s.earned, s.rounds_paid, s.slashed)
	}

	/// Waits up to `patience` until every proof handed over is on chain (or dropped because
	/// its round closed); false if some are still outstanding.
	pub fn flush(&self, patience: Duration) -> bool {
		let start = std::time::Instant::now();
		loop {
			// Counted when handed over, so reports still in the channel count too.
			if self.shared().unsent == 0 {
				return true;
			}
			if start.elapsed() > patience {
				return false;
			}
			std::thread::sleep(Duration::from_millis(200));
		}
	}
}

impl ChainCoordinator {
	/// Proofs to announce to the job's peers (SCALE bytes), taken once.
	pub fn outgoing_proofs(&self) -> Vec<Vec<u8>> {
		std::mem::take(&mut self.shared().outbox)
	}

	/// A proof a peer announced (shape and job checked, signature not).
	pub fn heard_proof(&self, bytes: Vec<u8>) {
		let _ = self.heard.send(bytes);
	}
}

impl Coordinator for ChainCoordinator {
	fn clock(&self, _now_ms: u64) -> Clock {
		self.shared().open.as_ref().map_or(Clock::NotStarted, |r| Clock::Open(r.index))
	}

	fn ended(&self) -> bool {
		self.shared().ended
	}

	fn deadline(&self, round: RoundIndex) -> Option<u64> {
		// Only the open round has a deadline to meet; any other is treated as past.
		let s = self.shared();
		Some(s.open.as_ref().filter(|open| open.index == round).map_or(0, |open| open.commit_by))
	}

	fn data_seed(&self, round: RoundIndex) -> Option<Hash> {
		let s = self.shared();
		let open = s.open.as_ref()?;
		// The next round's is dealt a round ahead: an overlapped round starts before it opens.
		let seed = match round.checked_sub(open.index)? {
			0 => open.seed,
			1 => open.next_seed,
			_ => return None,
		};
		Some(data_seed(&seed, self.job, round, &self.me))
	}

	fn round_seed(&self, round: RoundIndex) -> Option<Hash> {
		let s = self.shared();
		let open = s.open.as_ref();
		s.seeds
			.get(&round)
			.copied()
			.or_else(|| open.filter(|o| o.index + 1 == round).map(|o| o.next_seed))
	}

	fn round_done(&self, report: RoundReport) {
		self.shared().unsent += 1;
		if self.reports.send(report).is_err() {
			tracing::warn!("the chain task has stopped: a round's proof will not be sent");
		}
	}

	fn roster(&self, round: RoundIndex) -> Roster {
		let s = self.shared();
		// Before any round opened here the trainer's book is open to all; the round's book
		// is narrowed to its members once it opens (`Books::admit_only`).
		let known = s.rosters.get(&round).or_else(|| s.rosters.values().next_back());
		known.map_or(Roster::Open, |members| Roster::Members(members.clone()))
	}

	fn registered(&self) -> BTreeSet<PeerId> {
		self.shared().accounts.keys().filter_map(|peer| PeerId::from_bytes(peer).ok()).collect()
	}
}

/// The peer ids of a round's `members`, from the provider registry's `accounts` (peer id
/// bytes → account): every member registered its libp2p key, bound to its account.
fn round_roster(members: &[AccountId], accounts: &HashMap<Vec<u8>, AccountId>) -> BTreeSet<PeerId> {
	accounts
		.iter()
		.filter(|(_, who)| members.contains(who))
		.filter_map(|(peer, _)| PeerId::from_bytes(peer).ok())
		.collect()
}

impl FraudPort for ChainCoordinator {
	fn peer_seed(&self, round: RoundIndex, peer: &PeerId) -> Option<Hash> {
		let s = self.shared();
		let seed = s.seeds.get(&round).or_else(|| s.check_seeds.get(&round))?;
		let account = s.accounts.get(&peer.to_bytes())?;
		Some(data_seed(seed, self.job, round, account))
	}

	fn accuse(&self, round: RoundIndex, peer: PeerId) {
		let _ = self.actions.send(Action::Accuse(round, peer));
	}

	fn assigned_checks(&self) -> Vec<CheckRequest> {
		std::mem::take(&mut self.shared().checks)
	}

	fn vote(&self, challenge: u64, verdict: Verdict) {
		let _ = self.actions.send(Action::Vote(challenge, verdict));
	}

	fn report_equivocation(&self, evidence: Equivocation) {
		let _ = self.actions.send(Action::ReportCommitments(Box::new(evidence)));
	}
}

/// Settings of the chain task.
pub struct FollowConfig {
	/// The job.
	pub job: JobId,
	/// Where signed proofs are kept (`<dir>/round-<r>.scale`).
	pub proof_dir: PathBuf,
	/// The file holding the secret this trainer's vote salts derive from (made on first
	/// use).
	pub vote_secret: PathBuf,
	/// Time the trainer needs between committing its update and having the round's result
	/// (collecting commitments, fetching updates, aggregating), ms.
	pub exchange_ms: u64,
	/// Sign a second, different proof each round and announce both (tests of the
	/// equivocation path only).
	pub equivocate: bool,
	/// Attest another result than the round's (tests of a buyer's accounts blocking the
	/// quorum only).
	pub attest_other: bool,
	/// Rounds without a quorum among the last [`quorum::WINDOW`] it worked that make it
	/// leave the job (0: never).
	pub leave_without_quorum: usize,
	/// The provider's file of buyers whose jobs it left ([`LeftBuyers`]), where leaving this
	/// one is recorded.
	pub left_buyers: PathBuf,
}

/// Starts following the chain for `config.job` as `account`; the returned coordinator is
/// for the trainer.
pub fn start(
	runtime: &tokio::runtime::Handle,
	chain: Chain,
	account: Keypair,
	config: FollowConfig,
) -> Result<ChainCoordinator> {
	std::fs::create_dir_all(&config.proof_dir).map_err(|e| {
		ChainError::Missing(format!("creating {}: {e}", config.proof_dir.display()))
	})?;
	let me = account.public_key().to_account_id();
	let job = config.job;
	let vote_secret = fraud::vote_secret(&config.vote_secret)?;
	let shared = Arc::new(Mutex::new(Shared::default()));
	let (reports, inbox) = mpsc::unbounded_channel();
	let (heard, heard_inbox) = mpsc::unbounded_channel();
	let (actions, actions_inbox) = mpsc::unbounded_channel();
	let quorums = quorum::QuorumWatch::new(config.leave_without_quorum);
	let follower = Follower {
		chain,
		account,
		me,
		config,
		shared: shared.clone(),
		pending: Vec::new(),
		last_block: 0,
		last_hash: None,
		heard_proofs: BTreeMap::new(),
		reported: BTreeSet::new(),
		accusations: Vec::new(),
		votes: BTreeMap::new(),
		reveals: BTreeMap::new(),
		vote_secret,
		requested: BTreeSet::new(),
		unanswered: 0,
		quorums,
		leaving: None,
	};
	runtime.spawn(follower.run(inbox, heard_inbox, actions_inbox));
	Ok(ChainCoordinator { job, me, shared, reports, heard, actions })
}

/// A proof waiting to be seen on chain.
struct Pending {
	signed: SignedProof,
	/// Block at which it was last sent (0: never).
	sent_at: u32,
	/// Seen among the open round's proofs.
	seen: bool,
}

struct Follower {
	chain: Chain,
	account: Keypair,
	me: AccountId,
	config: FollowConfig,
	shared: Arc<Mutex<Shared>>,
	pending: Vec<Pending>,
	last_block: u32,
	/// Hash of the block the last tick read (a poll that sees it again does nothing).
	last_hash: Option<Hash>,
	/// Peers' proofs heard, by round and provider (the first of each; account ids are
	/// ordered but not hashable).
	heard_proofs: BTreeMap<(RoundIndex, AccountId), SignedProof>,
	/// Equivocations already reported.
	reported: BTreeSet<(RoundIndex, AccountId)>,
	/// Contributions to challenge.
	accusations: Vec<Accusation>,
	/// Verdicts to vote, by challenge, with the block their commitment was last sent at (0:
	/// never).
	votes: BTreeMap<u64, (Verdict, u32)>,
	/// Block at which each challenge's reveal was last sent.
	reveals: BTreeMap<u64, u32>,
	/// What this trainer's vote salts are derived from.
	vote_secret: [u8; 32],
	/// Challenges already handed to the trainer.
	requested: BTreeSet<u64>,
	/// Polls in a row the node left unanswered.
	unanswered: u32,
	/// Whether the rounds this trainer delivered reached a quorum.
	quorums: quorum::QuorumWatch,
	/// Block at which `leave_job` was last sent (0: never): set once the job is one to leave.
	leaving: Option<u32>,
}

impl Follower {
	fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
		self.shared.lock().unwrap_or_else(|e| e.into_inner())
	}

	async fn run(
		mut self,
		mut inbox: mpsc::UnboundedReceiver<RoundReport>,
		mut heard: mpsc::UnboundedReceiver<Vec<u8>>,
		mut actions: mpsc::UnboundedReceiver<Action>,
	) {
		let mut poll = tokio::time::interval(POLL);
		loop {
			tokio::select! {
				Some(action) = actions.recv() => {
					if let Err(e) = self.on_action(action).await {
						tracing::warn!("{e}");
					}
					self.tick_or_reconnect(true).await;
				}
				Some(bytes) = heard.recv() => {
					if let Err(e) = self.on_heard(&bytes).await {
						tracing::warn!("{e}");
					}
				}
				report = inbox.recv() => match report {
					Some(report) => {
						if let Err(e) = self.on_report(report).await {
							tracing::warn!("could not prepare a proof: {e}");
							self.shared().unsent -= 1;
						}
						// Send it now rather than at the next block: it must make the round.
						self.tick_or_reconnect(true).await;
					}
					None => return,
				},
				_ = poll.tick() => self.tick_or_reconnect(false).await,
			}
		}
	}

	/// A tick; reconnects when it fails, or when the node left [`TIMEOUTS_BEFORE_RECONNECT`]
	/// in a row unanswered (a node that went away may never answer).
	async fn tick_or_reconnect(&mut self, force: bool) {
		match tokio::time::timeout(TICK_TIMEOUT, self.on_tick(force)).await {
			Ok(Ok(())) => {
				self.unanswered = 0;
				return;
			}
			Ok(Err(e)) => tracing::warn!("chain: {e}; reconnecting"),
			Err(_) => {
				self.unanswered += 1;
				if self.unanswered < TIMEOUTS_BEFORE_RECONNECT {
					tracing::warn!("chain: no answer in {TICK_TIMEOUT:?}; asking again");
					return;
				}
				tracing::warn!(
					"chain: no answer in {TICK_TIMEOUT:?}, {} times in a row; reconnecting",
					self.unanswered
				);
			}
		}
		self.unanswered = 0;
		self.reconnect().await;
	}

	async fn reconnect(&mut self) {
		match Chain::connect(self.chain.url(), Duration::from_secs(2)).await {
			Ok(chain) => {
				tracing::info!("reconnected to {}", chain.url());
				self.chain = chain;
			}
			Err(e) => tracing::debug!("{e}"),
		}
	}

	/// A new block (or `force`): refresh the open round, follow payouts, (re)send proofs.
	///
	/// The poll is one plain read (the best block's hash); the block is opened only when it
	/// changed, and every read of the tick is made there (see [`Block`]).
	async fn on_tick(&mut self, force: bool) -> Result<()> {
		let best = self.chain.best_hash().await?;
		if self.last_hash == Some(best) && !force {
			return Ok(());
		}
		let block = self.chain.best().await?;
		let number = block.number();
		let now_ms = block.timestamp().await?;
		if block.runtime_upgraded(self.chain.spec_version()).await? {
			return Err(ChainError::rpc("following the chain", "the runtime was upgraded"));
		}
		let view = JobNow::read(&block, self.config.job).await?;
		// Proofs first: they must make their round's deadline, and on a slow node the tick
		// may run out before its end (the rest is done again at the next tick).
		self.send_pending(&block, &view).await?;
		// New blocks since the last tick (only the head on the first).
		let first_new = if self.last_block == 0 { number } else { self.last_block + 1 };
		for at in first_new..=number {
			let slashes = if at == number {
				block.slashes_of(&self.me).await?
			} else {
				self.chain.block(at).await?.slashes_of(&self.me).await?
			};
			self.note_slashes(at, slashes);
			// Each block's slashes counted once, however far a tick that runs out got.
			self.last_block = at;
		}
		self.last_hash = Some(best);
		let me_in = self.refresh_membership(&block).await?;
		if me_in && matches!(view.status, JobStatus::Running) {
			self.leave_if_unpaid(number, &view.buyer).await;
		}
		// A round opening: the registry first, so its members' peer ids are known when the
		// trainer sees it open (its book takes commitments from them only).
		let open_index = self.shared().open.as_ref().map(|r| r.index);
		if view.round.as_ref().is_some_and(|r| Some(r.index) != open_index) {
			self.refresh_peers(&block).await?;
		}
		self.refresh_round(&view, number, now_ms, me_in);
		self.pursue_accusations(&block, &view).await?;
		self.follow_assignments(&block).await
	}

	/// Sends `leave_job` (again every [`RESEND_BLOCKS`] until the chain has removed this
	/// trainer, which then ends it) once its rounds keep reaching no quorum
	/// ([`quorum::QuorumWatch`]); the first time, records the job's buyer in the provider's
	/// [`LeftBuyers`], so that its next start avoids the buyer's jobs.
	async fn leave_if_unpaid(&mut self, number: u32, buyer: &AccountId) {
		let Some(sent) = self.leaving else { return };
		if sent != 0 && number < sent + RESEND_BLOCKS {
			return;
		}
		let job = self.config.job;
		if sent == 0 {
			let left = LeftJob { buyer: *buyer, job, block: number };
			let path = &self.config.left_buyers;
			if let Err(e) = LeftBuyers::load(path).and_then(|mut all| all.record(left)) {
				tracing::warn!("job {job}: not remembering its buyer {buyer}: {e}");
			}
		}
		tracing::warn!(
			"job {job}: {} of the last {} rounds this trainer delivered reached no quorum \
			 (nobody was paid for them; a third of the members may be attesting other results): \
			 leaving the job",
			self.quorums.without_quorum(),
			quorum::WINDOW
		);
		let call = super::api::tx().jobs().leave_job(job);
		if let Err(e) = self.chain.send("leave_job", &call, &self.account).await {
			tracing::warn!("job {job}: leaving failed: {e}");
		}
		self.leaving = Some(number);
	}

	/// Logs and counts the slashes of this account in block `number`.
	fn note_slashes(&mut self, number: u32, slashes: Vec<(u128, String)>) {
		for (amount, reason) in slashes {
			tracing::warn!("slashed {amount} units of stake at block {number}: {reason}");
			self.shared().slashed += amount;
		}
	}

	/// Whether this account is still a participant, and what it earned.
	async fn refresh_membership(&mut self, block: &Block) -> Result<bool> {
		let mine = block.participant(self.config.job, &self.me).await?;
		let mut s = self.shared();
		if let Some(p) = &mine {
			if p.earned > s.earned {
				tracing::info!(
					"paid {} units for job {} ({} rounds so far)",
					p.earned - s.earned,
					self.config.job,
					p.rounds_paid
				);
			}
			s.earned = p.earned;
			s.rounds_paid = p.rounds_paid;
		}
		Ok(mine.is_some())
	}

	/// Refreshes the open round (with its members' peer ids when it is new).
	fn refresh_round(&mut self, view: &JobNow, number: u32, now_ms: u64, me_in: bool) {
		let live = matches!(view.status, JobStatus::Open | JobStatus::Running);
		let open = view.round.as_ref().map(|r| OpenRound {
			index: r.index,
			seed: Hash::from(r.seed.0),
			next_seed: Hash::from(r.next_seed.0),
			commit_by: commit_deadline(r.deadline, number, now_ms, self.config.exchange_ms),
			members: r.members.0.clone(),
		});
		let mut s = self.shared();
		if s.open.as_ref().map(|r| r.index) != open.as_ref().map(|r| r.index) {
			if let Some(r) = &open {
				tracing::info!("job {}: round {} open", self.config.job, r.index);
				s.seeds.insert(r.index, r.seed);
				s.seeds.retain(|round, _| round + SEED_ROUNDS > r.index);
				let roster = round_roster(&r.members, &s.accounts);
				if roster.len() < r.members.len() {
					tracing::warn!(
						"round {}: {} of {} members have no registered peer id",
						r.index,
						r.members.len() - roster.len(),
						r.members.len()
					);
				}
				s.rosters.insert(r.index, roster);
				s.rosters.retain(|round, _| round + SEED_ROUNDS > r.index);
			}
		}
		// A removed participant, or a job that ended, stops the trainer.
		let ended = !live || (!me_in && matches!(view.status, JobStatus::Running));
		if ended && !s.ended {
			tracing::info!("job {} is over for this trainer: {:?}", self.config.job, view.status);
		}
		s.ended = ended;
		if open.is_some() || !live {
			s.open = open;
		}
	}
}

/// Unix ms by which a round closing at block `deadline` needs updates committed, seen at
/// block `number` stamped `now_ms`: proofs must be in a block before `deadline`, the last of
/// which is authored in the slot of block `deadline - 1`; a proof goes out a margin before
/// that slot, and the exchange needs `exchange_ms` before the proof.
fn commit_deadline(deadline: u32, number: u32, now_ms: u64, exchange_ms: u64) -> u64 {
	let last_slot = u64::from(deadline.saturating_sub(1).saturating_sub(number));
	(now_ms + last_slot * MILLI_SECS_PER_BLOCK)
		.saturating_sub(SUBMIT_MARGIN_MS)
		.saturating_sub(exchange_ms)
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn commit_deadlines_leave_room_for_the_exchange_and_inclusion() {
		// Round opened at block 10 (stamped t), deadline 15: the last including block is 14,
		// authored at t + 4 blocks.
		let t = 1_000_000;
		assert_eq!(commit_deadline(15, 10, t, 3_000), t + 4 * 6_000 - 1_000 - 3_000);
		// Seen a block later, the same instant.
		assert_eq!(commit_deadline(15, 11, t + 6_000, 3_000), t + 4 * 6_000 - 4_000);
		// Past the last slot: already due.
		assert!(commit_deadline(15, 15, t, 0) < t);
	}

	/// The fan-in's draw reads a round's seed as the chain dealt it, for the open round, the
	/// next (dealt a round ahead) and recent past ones (a late decision), and none else: a
	/// trainer must not draw from a seed the others do not have.
	#[test]
	fn round_seeds_are_the_chains_for_the_rounds_it_dealt() {
		let (reports, _) = mpsc::unbounded_channel();
		let (heard, _) = mpsc::unbounded_channel();
		let (actions, _) = mpsc::unbounded_channel();
		let mut shared = Shared::default();
		let seed = |b: u8| Hash::from([b; 32]);
		shared.open = Some(OpenRound {
			index: 5,
			seed: seed(5),
			next_seed: seed(6),
			commit_by: 0,
			members: vec![],
		});
		shared.seeds.insert(4, seed(4));
		shared.seeds.insert(5, seed(5));
		let coordinator = ChainCoordinator {
			job: 1,
			me: AccountId::from([1; 32]),
			shared: Arc::new(Mutex::new(shared)),
			reports,
			heard,
			actions,
		};
		assert_eq!(coordinator.round_seed(5), Some(seed(5)), "the open round's");
		assert_eq!(coordinator.round_seed(6), Some(seed(6)), "the next, dealt ahead");
		assert_eq!(coordinator.round_seed(4), Some(seed(4)), "a recent one");
		assert_eq!(coordinator.round_seed(3), None);
		assert_eq!(coordinator.round_seed(7), None);
		// Not the data seed: that one is this member's own.
		assert_ne!(coordinator.data_seed(5), Some(seed(5)));
	}

	/// A round's roster is its members' registered peer ids: a registered provider that is
	/// not a member, or a key nobody registered, is a stranger to it.
	#[test]
	fn a_rounds_roster_is_its_members_registered_keys() {
		let (a, b, outsider) =
			(AccountId::from([1; 32]), AccountId::from([2; 32]), AccountId::from([3; 32]));
		let peers: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
		let accounts: HashMap<Vec<u8>, AccountId> =
			peers.iter().map(|p| p.to_bytes()).zip([a, b, outsider]).collect();
		let roster = round_roster(&[a, b], &accounts);
		assert_eq!(roster, [peers[0], peers[1]].into());

		let (reports, _) = mpsc::unbounded_channel();
		let (heard, _) = mpsc::unbounded_channel();
		let (actions, _) = mpsc::unbounded_channel();
		let mut shared = Shared::default();
		shared.rosters.insert(4, [peers[0]].into());
		shared.rosters.insert(5, roster.clone());
		let coordinator = ChainCoordinator {
			job: 1,
			me: a,
			shared: Arc::new(Mutex::new(shared)),
			reports,
			heard,
			actions,
		};
		assert_eq!(coordinator.roster(4), Roster::Members([peers[0]].into()));
		assert_eq!(coordinator.roster(5), Roster::Members(roster.clone()));
		// Every registered provider is no stranger to the network, member or not.
		coordinator.shared().accounts = accounts;
		assert_eq!(coordinator.registered(), peers.iter().copied().collect());
		assert_eq!(coordinator.roster(6), Roster::Members(roster), "not known yet: the latest");
		assert!(
			!coordinator.roster(5).admits(&peers[2])
				&& !coordinator.roster(5).admits(&PeerId::random())
		);
	}
}
