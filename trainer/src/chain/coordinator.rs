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
//! judge are handed to the trainer, whose verdicts go back as votes (each resent until the
//! chain has it).

use std::{
	collections::{BTreeMap, BTreeSet, HashMap},
	path::{Path, PathBuf},
	sync::{Arc, Mutex},
	time::Duration,
};

use codec::{Decode, Encode};
use grid_primitives::{
	job::{proof_payload, ContributionProof, JobId, RoundIndex},
	time::MILLI_SECS_PER_BLOCK,
	work::{data_seed, Verdict},
	Hash,
};
use libp2p::PeerId;
use polkadot_sdk::sp_runtime::BoundedVec;
use subxt_signer::sr25519::Keypair;
use tokio::sync::mpsc;

use super::{
	api,
	client::{Chain, JobStatus, JobView},
	AccountId, ChainError, Result, SignedProof,
};
use crate::node::{CheckRequest, Coordinator, RoundReport};

/// How often the node is polled for a new block.
const POLL: Duration = Duration::from_millis(500);
/// Longest a poll of the node may take before the connection is given up.
const TICK_TIMEOUT: Duration = Duration::from_secs(10);
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
	/// Unix ms by which updates must be committed.
	commit_by: u64,
	members: Vec<AccountId>,
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
	/// libp2p peer ids (bytes) of registered providers → their accounts.
	accounts: HashMap<Vec<u8>, AccountId>,
	/// Challenges this trainer was drawn to judge, not yet taken by the trainer.
	checks: Vec<CheckRequest>,
}

/// What the trainer asks of the chain about fraud.
enum Action {
	/// Challenge the peer's contribution to the round.
	Accuse(RoundIndex, PeerId),
	/// Vote on a challenge.
	Vote(u64, Verdict),
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

impl Coordinator for ChainCoordinator {
	fn open_round(&self) -> Option<RoundIndex> {
		self.shared().open.as_ref().map(|r| r.index)
	}

	fn ended(&self) -> bool {
		self.shared().ended
	}

	fn commit_by(&self, round: RoundIndex) -> Option<u64> {
		let s = self.shared();
		let open = s.open.as_ref()?;
		match round.cmp(&open.index) {
			std::cmp::Ordering::Less => Some(0),
			std::cmp::Ordering::Equal => Some(open.commit_by),
			std::cmp::Ordering::Greater => None,
		}
	}

	fn data_seed(&self, round: RoundIndex) -> Option<Hash> {
		let s = self.shared();
		let open = s.open.as_ref().filter(|r| r.index == round)?;
		Some(data_seed(&open.seed, self.job, round, &self.me))
	}

	fn round_done(&self, report: RoundReport) {
		self.shared().unsent += 1;
		if self.reports.send(report).is_err() {
			tracing::warn!("the chain task has stopped: a round's proof will not be sent");
		}
	}

	fn outgoing_proofs(&self) -> Vec<Vec<u8>> {
		std::mem::take(&mut self.shared().outbox)
	}

	fn heard_proof(&self, bytes: Vec<u8>) {
		let _ = self.heard.send(bytes);
	}

	fn peer_seed(&self, round: RoundIndex, peer: &PeerId) -> Option<Hash> {
		let s = self.shared();
		let seed = s.seeds.get(&round)?;
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
}

/// Settings of the chain task.
pub struct FollowConfig {
	/// The job.
	pub job: JobId,
	/// Where signed proofs are kept (`<dir>/round-<r>.scale`).
	pub proof_dir: PathBuf,
	/// Time the trainer needs between committing its update and having the round's result
	/// (collecting commitments, fetching updates, aggregating), ms.
	pub exchange_ms: u64,
	/// Sign a second, different proof each round and announce both (tests of the
	/// equivocation path only).
	pub equivocate: bool,
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
	let shared = Arc::new(Mutex::new(Shared::default()));
	let (reports, inbox) = mpsc::unbounded_channel();
	let (heard, heard_inbox) = mpsc::unbounded_channel();
	let (actions, actions_inbox) = mpsc::unbounded_channel();
	let follower = Follower {
		chain,
		account,
		me,
		config,
		shared: shared.clone(),
		pending: Vec::new(),
		last_block: 0,
		heard_proofs: BTreeMap::new(),
		reported: BTreeSet::new(),
		accusations: Vec::new(),
		votes: BTreeMap::new(),
		requested: BTreeSet::new(),
	};
	runtime.spawn(follower.run(inbox, heard_inbox, actions_inbox));
	Ok(ChainCoordinator { job, me, shared, reports, heard, actions })
}

/// A contribution to challenge once the chain has paid it.
struct Accusation {
	round: RoundIndex,
	accused: AccountId,
	/// Block at which the challenge was last sent (0: never).
	sent_at: u32,
	tries: u32,
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
	/// Peers' proofs heard, by round and provider (the first of each; account ids are
	/// ordered but not hashable).
	heard_proofs: BTreeMap<(RoundIndex, AccountId), SignedProof>,
	/// Equivocations already reported.
	reported: BTreeSet<(RoundIndex, AccountId)>,
	/// Contributions to challenge.
	accusations: Vec<Accusation>,
	/// Verdicts to vote, by challenge, with the block they were last sent at (0: never).
	votes: BTreeMap<u64, (Verdict, u32)>,
	/// Challenges already handed to the trainer.
	requested: BTreeSet<u64>,
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

	/// A tick; reconnects when it fails, or when the node leaves it unanswered (a node that
	/// went away may never answer).
	async fn tick_or_reconnect(&mut self, force: bool) {
		match tokio::time::timeout(TICK_TIMEOUT, self.on_tick(force)).await {
			Ok(Ok(())) => return,
			Ok(Err(e)) => tracing::warn!("chain: {e}; reconnecting"),
			Err(_) => tracing::warn!("chain: no answer in {TICK_TIMEOUT:?}; reconnecting"),
		}
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
	async fn on_tick(&mut self, force: bool) -> Result<()> {
		let (number, now_ms) = self.chain.head().await?;
		if number == self.last_block && !force {
			return Ok(());
		}
		// New blocks since the last tick (only the head on the first).
		let first_new = if self.last_block == 0 { number } else { self.last_block + 1 };
		for block in first_new..=number {
			self.note_slashes(block).await?;
		}
		self.last_block = number;
		let view = self.chain.job(self.config.job).await?.ok_or_else(|| {
			ChainError::Missing(format!("job {} is not on chain", self.config.job))
		})?;
		let me_in = self.refresh_membership().await?;
		if self.refresh_round(&view, number, now_ms, me_in) {
			self.refresh_peers().await?;
		}
		self.send_pending(&view, number).await?;
		self.pursue_accusations(&view, number).await?;
		self.follow_assignments(number).await
	}

	/// Logs and counts the slashes of this account in block `number`.
	async fn note_slashes(&mut self, number: u32) -> Result<()> {
		for (amount, reason) in self.chain.slashes_in(number, &self.me).await? {
			tracing::warn!("slashed {amount} units of stake at block {number}: {reason}");
			self.shared().slashed += amount;
		}
		Ok(())
	}

	/// Whether this account is still a participant, and what it earned.
	async fn refresh_membership(&mut self) -> Result<bool> {
		let participants = self.chain.participants(self.config.job).await?;
		let mine = participants.into_iter().find(|(who, _)| *who == self.me);
		let mut s = self.shared();
		if let Some((_, p)) = &mine {
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

	/// Refreshes the open round; true when a new round opened.
	fn refresh_round(&mut self, view: &JobView, number: u32, now_ms: u64, me_in: bool) -> bool {
		let live = matches!(view.job.status, JobStatus::Open | JobStatus::Running);
		let open = view.round.as_ref().map(|r| OpenRound {
			index: r.index,
			seed: Hash::from(r.seed.0),
			commit_by: commit_deadline(r.deadline, number, now_ms, self.config.exchange_ms),
			members: r.members.0.clone(),
		});
		let mut s = self.shared();
		let mut opened = false;
		if s.open.as_ref().map(|r| r.index) != open.as_ref().map(|r| r.index) {
			if let Some(r) = &open {
				tracing::info!("job {}: round {} open", self.config.job, r.index);
				s.seeds.insert(r.index, r.seed);
				s.seeds.retain(|round, _| round + SEED_ROUNDS > r.index);
				opened = true;
			}
		}
		// A removed participant, or a job that ended, stops the trainer.
		let ended = !live || (!me_in && matches!(view.job.status, JobStatus::Running));
		if ended && !s.ended {
			tracing::info!(
				"job {} is over for this trainer: {:?}",
				self.config.job,
				view.job.status
			);
		}
		s.ended = ended;
		if open.is_some() || !live {
			s.open = open;
		}
		opened
	}

	/// Turns a finished round into a signed proof (or the one already signed for it).
	async fn on_report(&mut self, report: RoundReport) -> Result<()> {
		let path = self.config.proof_dir.join(format!("round-{}.scale", report.round));
		let signed = match load_proof(&path)? {
			Some(signed) => signed,
			None => {
				let received = self.accounts_of(&report.received).await?;
				let signed = self.sign(&report, received);
				store_proof(&path, &signed)?;
				signed
			}
		};
		self.shared().outbox.push(signed.encode());
		if self.config.equivocate {
			let mut other = signed.proof.clone();
			other.samples_processed += 1;
			let second = self.sign_proof(other);
			tracing::warn!(
				"round {}: announcing a second, different proof (equivocating)",
				report.round
			);
			self.shared().outbox.push(second.encode());
		}
		self.pending.push(Pending { signed, sent_at: 0, seen: false });
		Ok(())
	}

	/// A peer's proof: kept if validly signed; a second, different one of the same provider
	/// for the same round is reported to the chain with the first.
	async fn on_heard(&mut self, bytes: &[u8]) -> Result<()> {
		let bad = |why: String| ChainError::Missing(format!("ignored a gossiped proof: {why}"));
		let signed = SignedProof::decode(&mut &bytes[..]).map_err(|e| bad(e.to_string()))?;
		let proof = &signed.proof;
		if proof.job != self.config.job || proof.provider == self.me {
			return Ok(());
		}
		let payload = proof_payload(&self.chain.genesis(), proof);
		let valid = subxt_signer::sr25519::verify(
			&subxt_signer::sr25519::Signature(signed.signature),
			payload,
			&subxt_signer::sr25519::PublicKey(proof.provider.0),
		);
		if !valid {
			return Err(bad(format!("bad signature for {}", proof.provider)));
		}
		let key = (proof.round, proof.provider);
		let first = match self.heard_proofs.get(&key) {
			None => {
				// Keep a bounded window: proofs of the last few rounds.
				let floor = proof.round.saturating_sub(4);
				self.heard_proofs.retain(|(r, _), _| *r >= floor);
				self.heard_proofs.insert(key, signed);
				return Ok(());
			}
			Some(first) if *first == signed => return Ok(()),
			Some(first) => first.clone(),
		};
		if !self.reported.insert(key) {
			return Ok(());
		}
		tracing::warn!("{} signed two proofs for round {}: reporting", key.1, key.0);
		let call = api::tx()
			.jobs()
			.report_equivocation(subxt::utils::Static(first), subxt::utils::Static(signed));
		// Handed to the pool without waiting for a block: this round's own proof is due too.
		// Another trainer may report it first; the chain then refuses this report.
		match self.chain.send("report_equivocation", &call, &self.account).await {
			Ok(()) => tracing::info!("reported {} for equivocating in round {}", key.1, key.0),
			Err(e) => tracing::info!("equivocation report not taken: {e}"),
		}
		Ok(())
	}

	fn sign(&self, report: &RoundReport, received: Vec<AccountId>) -> SignedProof {
		let (own, samples) =
			report.own_update.map_or((Hash::zero(), 0), |(h, n)| (Hash::from(h), n));
		let loss = report.train_loss.filter(|l| l.is_finite() && *l >= 0.0).unwrap_or(0.0);
		let proof = ContributionProof {
			job: self.config.job,
			round: report.round,
			provider: self.me,
			base_model_hash: Hash::from(report.base_model_hash),
			own_update_commitment: own,
			result_model_hash: Hash::from(report.result_model_hash),
			samples_processed: samples,
			train_loss_micros: (f64::from(loss) * 1e6).min(f64::from(u32::MAX)) as u32,
			received: BoundedVec::truncate_from(received),
		};
		self.sign_proof(proof)
	}

	fn sign_proof(&self, proof: ContributionProof<AccountId>) -> SignedProof {
		let signature = self.account.sign(&proof_payload(&self.chain.genesis(), &proof)).0;
		SignedProof { proof, signature }
	}

	/// Accounts of the given peers, from the provider registry (unregistered peers are left
	/// out: the chain only knows accounts).
	async fn accounts_of(&mut self, peers: &[PeerId]) -> Result<Vec<AccountId>> {
		let known = |s: &Shared| peers.iter().all(|p| s.accounts.contains_key(&p.to_bytes()));
		if !known(&self.shared()) {
			self.refresh_peers().await?;
		}
		let mut accounts: Vec<AccountId> = {
			let s = self.shared();
			peers.iter().filter_map(|p| s.accounts.get(&p.to_bytes()).cloned()).collect()
		};
		accounts.sort();
		accounts.dedup();
		Ok(accounts)
	}

	/// Reads the provider registry's peer ids (shared with the trainer for replays).
	async fn refresh_peers(&mut self) -> Result<()> {
		let accounts = self
			.chain
			.providers()
			.await?
			.into_iter()
			.map(|(who, view)| (view.provider.peer_id.to_vec(), who))
			.collect();
		self.shared().accounts = accounts;
		Ok(())
	}

	/// The trainer's accusations and verdicts.
	async fn on_action(&mut self, action: Action) -> Result<()> {
		match action {
			Action::Accuse(round, peer) => {
				let Some(accused) = self.accounts_of(&[peer]).await?.pop() else {
					tracing::warn!("round {round}: {peer} is not a registered provider");
					return Ok(());
				};
				if !self.accusations.iter().any(|a| a.round == round && a.accused == accused) {
					tracing::info!("round {round}: will challenge the contribution of {accused}");
					self.accusations.push(Accusation { round, accused, sent_at: 0, tries: 0 });
				}
			}
			Action::Vote(challenge, verdict) => {
				self.votes.entry(challenge).or_insert((verdict, 0));
			}
		}
		Ok(())
	}

	/// Challenges accused contributions the chain has paid (a contribution is challengeable
	/// once its round settled); drops those challenged already, or never paid.
	async fn pursue_accusations(&mut self, view: &JobView, number: u32) -> Result<()> {
		let job = self.config.job;
		let mut keep = Vec::new();
		for mut a in std::mem::take(&mut self.accusations) {
			if let Some(id) = self.chain.challenged(job, a.round, &a.accused).await? {
				tracing::info!("round {}: {} is under challenge {id}", a.round, a.accused);
				continue;
			}
			if self.chain.contribution(job, a.round, &a.accused).await?.is_none() {
				let settled = view.round.as_ref().is_none_or(|r| r.index > a.round);
				if settled {
					tracing::info!("round {}: {} was not paid; no challenge", a.round, a.accused);
				} else {
					keep.push(a);
				}
				continue;
			}
			if a.sent_at != 0 && number < a.sent_at + RESEND_BLOCKS {
				keep.push(a);
				continue;
			}
			if a.tries == CHALLENGE_TRIES {
				tracing::warn!("round {}: the challenge of {} was not taken", a.round, a.accused);
				continue;
			}
			let call = api::tx().jobs().challenge(job, a.round, a.accused);
			match self.chain.send("challenge", &call, &self.account).await {
				Ok(()) => tracing::info!("round {}: challenged {}", a.round, a.accused),
				Err(e) => {
					tracing::warn!("round {}: challenging {} failed: {e}", a.round, a.accused)
				}
			}
			a.sent_at = number;
			a.tries += 1;
			keep.push(a);
		}
		self.accusations = keep;
		Ok(())
	}

	/// Hands the challenges this trainer was drawn for to the trainer, and sends its votes
	/// until the chain shows them.
	async fn follow_assignments(&mut self, number: u32) -> Result<()> {
		let assigned = self.chain.assigned_challenges(&self.me).await?;
		let mut open = BTreeSet::new();
		for (id, challenge) in assigned {
			if challenge.job != self.config.job {
				continue;
			}
			let voted = challenge.committee.0.iter().any(|(who, v)| *who == self.me && v.is_some());
			if voted {
				continue;
			}
			open.insert(id);
			if !self.requested.contains(&id) {
				self.request_check(id, challenge.round, challenge.accused).await?;
				self.requested.insert(id);
			}
			if let Some((verdict, sent_at)) = self.votes.get_mut(&id) {
				if *sent_at == 0 || number >= *sent_at + RESEND_BLOCKS {
					let call = api::tx().jobs().vote(id, subxt::utils::Static(*verdict));
					match self.chain.send("vote", &call, &self.account).await {
						Ok(()) => tracing::info!("challenge {id}: voted {verdict:?}"),
						Err(e) => tracing::warn!("challenge {id}: voting failed: {e}"),
					}
					*sent_at = number;
				}
			}
		}
		self.votes.retain(|id, _| open.contains(id));
		Ok(())
	}

	/// Asks the trainer to judge `accused`'s contribution to `round` for challenge `id`.
	async fn request_check(
		&mut self,
		id: u64,
		round: RoundIndex,
		accused: AccountId,
	) -> Result<()> {
		let Some(view) = self.chain.provider(&accused).await? else {
			tracing::warn!("challenge {id}: {accused} is not registered; nothing to replay");
			return Ok(());
		};
		let Ok(peer) = PeerId::from_bytes(&view.provider.peer_id) else {
			tracing::warn!("challenge {id}: {accused} registered a bad peer id");
			return Ok(());
		};
		tracing::info!("challenge {id}: drawn to judge {accused}'s update for round {round}");
		let mut s = self.shared();
		s.accounts.insert(peer.to_bytes(), accused);
		s.checks.push(CheckRequest { challenge: id, round, accused: peer });
		Ok(())
	}

	/// Sends the proofs the chain does not have yet for its open round; drops those whose
	/// round has closed.
	async fn send_pending(&mut self, view: &JobView, number: u32) -> Result<()> {
		if self.pending.is_empty() {
			return Ok(());
		}
		let open = view.round.as_ref().map(|r| (r.index, r.members.0.contains(&self.me)));
		let on_chain = match open {
			Some(_) => self.chain.round_proofs(self.config.job).await?,
			None => Vec::new(),
		};
		let mut keep = Vec::new();
		for mut p in std::mem::take(&mut self.pending) {
			let round = p.signed.proof.round;
			p.seen |= on_chain.iter().any(|s| s.proof == p.signed.proof);
			let openable = open.is_some_and(|(index, member)| index == round && member);
			if !openable {
				// The round settled (or this trainer is not in it). A proof that completed
				// the round settled it in its own block, so it may never have been seen
				// among the open round's proofs: what was paid tells.
				let paid = p.seen
					|| self.chain.contribution(self.config.job, round, &self.me).await?.is_some();
				if !paid {
					tracing::warn!(
						"round {round}: not paid (the proof was late, or the round had no quorum)"
					);
				}
				self.shared().unsent -= 1;
				continue;
			}
			if p.seen {
				keep.push(p);
				continue;
			}
			// Resend when not included two blocks after sending (the node may have
			// restarted and lost its pool).
			if p.sent_at == 0 || number >= p.sent_at + 2 {
				let call = api::tx().jobs().submit_proof(subxt::utils::Static(p.signed.clone()));
				match self.chain.send("submit_proof", &call, &self.account).await {
					Ok(()) => tracing::info!("round {round}: proof sent"),
					Err(e) => tracing::warn!("round {round}: sending the proof failed: {e}"),
				}
				p.sent_at = number;
			}
			keep.push(p);
		}
		self.pending = keep;
		Ok(())
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

fn load_proof(path: &Path) -> Result<Option<SignedProof>> {
	if !path.exists() {
		return Ok(None);
	}
	let bytes = std::fs::read(path)
		.map_err(|e| ChainError::Missing(format!("reading {}: {e}", path.display())))?;
	SignedProof::decode(&mut &bytes[..])
		.map(Some)
		.map_err(|e| ChainError::Missing(format!("{} is not a signed proof: {e}", path.display())))
}

/// Writes a proof atomically (a crash leaves the old file or the new one, never half).
fn store_proof(path: &Path, signed: &SignedProof) -> Result<()> {
	let tmp = path.with_extension("tmp");
	std::fs::write(&tmp, signed.encode())
		.and_then(|_| std::fs::rename(&tmp, path))
		.map_err(|e| ChainError::Missing(format!("writing {}: {e}", path.display())))
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

	#[test]
	fn stored_proofs_come_back_identical_and_corrupt_ones_are_refused() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("round-3.scale");
		assert!(load_proof(&path).unwrap().is_none());
		let account = subxt_signer::sr25519::dev::bob();
		let proof = ContributionProof {
			job: 1,
			round: 3,
			provider: account.public_key().to_account_id(),
			base_model_hash: Hash::repeat_byte(1),
			own_update_commitment: Hash::repeat_byte(2),
			result_model_hash: Hash::repeat_byte(3),
			samples_processed: 640,
			train_loss_micros: 2_000_000,
			received: BoundedVec::truncate_from(vec![]),
		};
		let signed = SignedProof { signature: account.sign(&proof.encode()).0, proof };
		store_proof(&path, &signed).unwrap();
		assert_eq!(load_proof(&path).unwrap(), Some(signed));
		std::fs::write(&path, b"junk").unwrap();
		let err = load_proof(&path).unwrap_err().to_string();
		assert!(err.contains("round-3.scale") && err.contains("not a signed proof"), "{err}");
	}
}
