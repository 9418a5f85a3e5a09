//! The trainer's part in the fraud path: it keeps what checks need (each round's base model
//! and the updates it aggregated, as sent, with their senders' committed start-state digests:
//! the last rounds in memory, every round of the challenge window in an
//! [`EvidenceArchive`]), screens every round's updates, replays suspects before accusing them,
//! and replays the contributions the chain asks it to judge as a committee member.
//!
//! A replay is exact: it needs the sender's private start state, which only the sender holds.
//! The desk asks for it ([`FraudDesk::state_requests`]; the daemon fetches it from the sender)
//! and checks what comes back against the commitment's digests. A sender that serves a state
//! other than the one it committed to, or none after [`MAX_STATE_TRIES`] asks, has broken its
//! commitment: its update is judged invalid. The replays themselves are in [`crate::verify`]
//! and run on their own thread; findings come back through [`FraudDesk::poll`], which the
//! round loop calls while it waits for the network.

use std::{
	collections::{HashMap, VecDeque},
	sync::Arc,
};

use grid_primitives::{job::RoundIndex, work::Verdict, Hash};
use libp2p::PeerId;

use super::{
	evidence::{EvidenceArchive, Kept, RoundEvidence},
	messages::{update_hash, Digest},
};
use crate::{
	compress::CompressedUpdate,
	verify::{copy_suspects, short_suspects, suspects, Claim, Replayer, VerifyWorker},
	work_state::{WorkDigests, WorkState},
};

/// What the fraud desk needs from the chain: peers' data seeds, and where its accusations
/// and votes go.
pub trait FraudPort: Send {
	/// The data seed `peer` was given for `round`, when known (a replay of its update
	/// draws its batches from it).
	fn peer_seed(&self, round: RoundIndex, peer: &PeerId) -> Option<Hash>;
	/// `peer`'s update for `round` failed its replay: challenge it.
	fn accuse(&self, round: RoundIndex, peer: PeerId);
	/// Challenges this trainer was newly drawn to judge, taken once.
	fn assigned_checks(&self) -> Vec<CheckRequest>;
	/// This trainer's verdict on a challenge.
	fn vote(&self, challenge: u64, verdict: Verdict);
}

/// A port shared with whoever started the trainer.
impl<P: FraudPort + Sync> FraudPort for Arc<P> {
	fn peer_seed(&self, round: RoundIndex, peer: &PeerId) -> Option<Hash> {
		P::peer_seed(self, round, peer)
	}
	fn accuse(&self, round: RoundIndex, peer: PeerId) {
		P::accuse(self, round, peer)
	}
	fn assigned_checks(&self) -> Vec<CheckRequest> {
		P::assigned_checks(self)
	}
	fn vote(&self, challenge: u64, verdict: Verdict) {
		P::vote(self, challenge, verdict)
	}
}

/// A challenge a trainer must judge: the update `accused` sent for `round`.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckRequest {
	/// The challenge's id on chain.
	pub challenge: u64,
	/// The round of the disputed update.
	pub round: RoundIndex,
	/// Who proved it.
	pub accused: PeerId,
	/// The content address of the update its proof on chain names (its own, or, for a
	/// copier's claim, the one it copied): the one replayed.
	pub update: Digest,
	/// The start state its proof on chain names (the chain's record of the paid
	/// contribution): a replay starts from it.
	pub start_state: Digest,
	/// The inner steps its proof on chain claims: a replay redoes them.
	pub steps: u32,
}

/// Rounds whose evidence is also held in memory (screens and suspects' replays come within
/// a round or two; older rounds come back from the archive).
pub const MEMORY_ROUNDS: usize = 4;

/// Rounds after its own that a round's contributions can still be challenged and voted on:
/// its challenge window and a challenge's voting period, in rounds, and the round itself.
/// Verifiers keep evidence, and senders serve their start states, this long.
pub fn challengeable_rounds(
	challenge_window: u32,
	voting_period: u32,
	round_blocks: u32,
) -> RoundIndex {
	challenge_window.saturating_add(voting_period).div_ceil(round_blocks.max(1)).saturating_add(1)
}
/// Peers' updates each trainer loss-screens per round ([`Replayer::loss_screen`]), chosen
/// anew every round with the trainer's secret: each update is screened by about as many
/// trainers, at two forward passes each for a first look, where screening all would cost a
/// trainer in proportion to the job's size. One screen each caught training on other data
/// within ten rounds in 97 of 100 attempts, two in 99 (`bench/redteam.sh` measures what
/// this catches and costs).
pub const GAUNTLET_PEERS: usize = 2;

/// Trainers that replay a suspect which every trainer's screens flag (drawn per round and
/// suspect among the round's other senders): two, so that one drawn Sybil cannot shield a
/// cheat; the chain's audits check what both let pass.
pub const REPLAYERS: usize = 2;

/// Whether `me` is one of `suspect`'s [`REPLAYERS`] for `round`, among the round's senders
/// `order` (every trainer is when `me` is not among them).
fn designated(me: &PeerId, round: RoundIndex, order: &[PeerId], suspect: &PeerId) -> bool {
	if !order.contains(me) {
		return true;
	}
	let rank = |peer: &PeerId| {
		let key = [
			b"grid/replayer".to_vec(),
			round.to_le_bytes().to_vec(),
			suspect.to_bytes(),
			peer.to_bytes(),
		]
		.concat();
		sp_crypto_hashing::blake2_256(&key)
	};
	let mut judges: Vec<&PeerId> = order.iter().filter(|p| *p != suspect).collect();
	judges.sort_by_key(|p| rank(p));
	judges.iter().take(REPLAYERS).any(|p| *p == me)
}

/// Times a sender's start state is asked for before its update is judged invalid.
pub const MAX_STATE_TRIES: u32 = 3;

/// An update as it went into a round's aggregate.
#[derive(Clone)]
pub struct Received {
	/// Who sent it.
	pub peer: PeerId,
	/// Inner steps it claimed.
	pub steps: u32,
	/// Its committed start state's digests.
	pub start: WorkDigests,
	/// The update as sent.
	pub update: Arc<CompressedUpdate>,
}

/// What a check's finding is for.
#[derive(Default)]
struct Purpose {
	/// Accuse the peer if the update is invalid (this trainer found it suspect).
	accuse: bool,
	/// Challenges to vote on with the finding.
	challenges: Vec<u64>,
}

/// What a check replays: an update with the start state and steps its sender claimed for it.
#[derive(Clone)]
struct Target {
	/// Inner steps claimed.
	steps: u32,
	/// The claimed start state's content address.
	start: Digest,
	/// The update.
	update: Arc<CompressedUpdate>,
}

impl Target {
	/// What `kept`'s sender claimed.
	fn of(kept: &Kept) -> Self {
		Target { steps: kept.steps, start: kept.start.id(), update: kept.update.clone() }
	}
}

/// A check of one peer's update for one round.
enum CheckState {
	/// Waiting for the sender's start state (asked `tries` times).
	Fetching { purpose: Purpose, tries: u32, target: Target },
	/// Replaying.
	Replaying { purpose: Purpose },
	/// Decided (a later challenge of the same update gets the same vote).
	Done(Verdict),
}

/// The fraud checks of one trainer (its fraud desk).
pub struct FraudDesk {
	me: PeerId,
	worker: VerifyWorker<(RoundIndex, PeerId)>,
	/// The loss screen's evaluator (the replayer's job settings).
	screen: Replayer,
	/// Forward passes the loss screen has run (its cost, next to the replays').
	screen_passes: u64,
	/// This trainer's secret: it draws which peers it loss-screens each round, so that no
	/// sender can know in advance in which rounds nobody screens it.
	secret: [u8; 32],
	/// The last [`MEMORY_ROUNDS`] rounds' evidence.
	history: VecDeque<Arc<RoundEvidence>>,
	/// Every round's evidence for `keep_rounds` rounds.
	archive: Box<dyn EvidenceArchive>,
	keep_rounds: RoundIndex,
	states: HashMap<(RoundIndex, PeerId), CheckState>,
	/// Start states to fetch: (round, sender, state id).
	to_fetch: Vec<(RoundIndex, PeerId, Digest)>,
}

impl FraudDesk {
	/// The desk of the trainer `me` (whose loss screens pick peers with `secret`), replaying
	/// with `replayer`, keeping each round's evidence in `archive` for `keep_rounds` rounds
	/// (see [`challengeable_rounds`]).
	pub fn new(
		me: PeerId,
		secret: [u8; 32],
		replayer: Replayer,
		archive: Box<dyn EvidenceArchive>,
		keep_rounds: RoundIndex,
	) -> Self {
		FraudDesk {
			me,
			screen: replayer.clone(),
			screen_passes: 0,
			secret,
			worker: VerifyWorker::start(replayer),
			history: VecDeque::new(),
			archive,
			keep_rounds: keep_rounds.max(MEMORY_ROUNDS as RoundIndex),
			states: HashMap::new(),
			to_fetch: Vec::new(),
		}
	}

	/// Keeps `round`'s base model and updates, and screens the updates: a peer's update
	/// that disagrees with the others, is this close to another, is shorter than its peers
	/// or fails the loss screen is replayed, and its sender accused if the replay refutes it.
	/// `copies` are claims of others' updates of the round (left out of its aggregate): kept
	/// too, and replayed from their claimants' start states as suspects.
	pub fn keep_round(
		&mut self,
		round: RoundIndex,
		base: &[f32],
		received: Vec<Received>,
		copies: Vec<Received>,
		port: &dyn FraudPort,
	) {
		let order: Vec<PeerId> = received.iter().map(|r| r.peer).collect();
		let dense: Vec<Vec<f32>> = received.iter().map(|r| r.update.decompress()).collect();
		let deltas: Vec<&[f32]> = dense.iter().map(Vec::as_slice).collect();
		let mut flagged: Vec<(PeerId, &str, f64)> = suspects(&deltas)
			.into_iter()
			.map(|(i, cosine)| (order[i], "disagrees with the others", cosine))
			.collect();
		let flag = |flagged: &mut Vec<(PeerId, &str, f64)>, i: usize, why, value| {
			if !flagged.iter().any(|(p, _, _)| *p == order[i]) {
				flagged.push((order[i], why, value));
			}
		};
		for (i, closest) in copy_suspects(&deltas) {
			flag(&mut flagged, i, "is this close to another (cosine)", closest);
		}
		for (i, ratio) in short_suspects(&deltas) {
			flag(&mut flagged, i, "is this short next to its peers' (norm ratio)", ratio);
		}
		// Every trainer's screens above flag alike: only a suspect's designated replayers
		// replay it (a suspect replayed by every trainer costs the round as many replays).
		flagged.retain(|(peer, _, _)| designated(&self.me, round, &order, peer));
		for i in self.gauntlet_picks(round, &order, &flagged) {
			let Some(seed) = port.peer_seed(round, &order[i]) else { continue };
			// The contrast: the next sender's update (itself screened by others); a lone
			// sender has none.
			if order.len() < 2 {
				continue;
			}
			let j = (i + 1) % order.len();
			match self.screen.loss_screen(base, &dense[i], &dense[j], &seed, received[i].steps) {
				Ok(screen) => {
					self.screen_passes += u64::from(screen.passes);
					tracing::debug!(
						"round {round}: loss screen of {}: margin {:.5} (suspect at or below {:.5}) over {} batches",
						order[i],
						screen.margin,
						screen.threshold,
						screen.batches
					);
					if screen.suspect() {
						let why = "lowers the loss on its own data no more than another's \
						           update does (the other's loss minus its own)";
						flag(&mut flagged, i, why, screen.margin);
					}
				}
				Err(e) => tracing::warn!("round {round}: loss screen of {}: {e}", order[i]),
			}
		}
		for copy in &copies {
			if designated(&self.me, round, &order, &copy.peer) {
				flagged.push((copy.peer, "claims another's update as its own (its steps)", 0.0));
			}
		}
		let updates = received
			.into_iter()
			.chain(copies)
			.map(|r| (r.peer, Kept { steps: r.steps, start: r.start, update: r.update }))
			.collect();
		let evidence = RoundEvidence { round, base: Arc::new(base.to_vec()), updates };
		self.archive.put(round, evidence.encode());
		self.history.push_back(Arc::new(evidence));
		while self.history.len() > MEMORY_ROUNDS {
			self.history.pop_front();
		}
		// Older rounds can no longer be challenged: their evidence and findings go.
		let keep_from = (round + 1).saturating_sub(self.keep_rounds);
		self.archive.forget_before(keep_from);
		self.states.retain(|(r, _), _| *r >= keep_from);
		self.to_fetch.retain(|(r, _, _)| *r >= keep_from);
		for (peer, why, value) in flagged {
			if peer == self.me {
				continue;
			}
			tracing::warn!("round {round}: the update of {peer} {why} ({value:.3}); replaying it");
			let Some(target) = self.own_target(round, &peer) else { continue };
			self.start(round, peer, target, Purpose { accuse: true, challenges: vec![] });
		}
	}

	/// Up to [`GAUNTLET_PEERS`] positions in `order` to loss-screen this round: other peers
	/// not flagged already, in an order drawn from this trainer's secret and the round.
	fn gauntlet_picks(
		&self,
		round: RoundIndex,
		order: &[PeerId],
		flagged: &[(PeerId, &str, f64)],
	) -> Vec<usize> {
		let rank = |peer: &PeerId| {
			let key = [&self.secret[..], &round.to_le_bytes(), &peer.to_bytes()].concat();
			sp_crypto_hashing::blake2_256(&key)
		};
		let mut picks: Vec<usize> = (0..order.len())
			.filter(|i| order[*i] != self.me && !flagged.iter().any(|(p, _, _)| *p == order[*i]))
			.collect();
		picks.sort_by_key(|i| rank(&order[*i]));
		picks.truncate(GAUNTLET_PEERS);
		picks
	}

	/// Forward passes the loss screen ran so far (each about a third of an inner step's
	/// work).
	pub fn screen_passes(&self) -> u64 {
		self.screen_passes
	}

	/// Whether a check is still under way (waiting for a start state or replaying).
	pub fn busy(&self) -> bool {
		self.states.values().any(|s| !matches!(s, CheckState::Done(_)))
	}

	/// Start states to fetch, each from its owner: (round, owner, state id). Taken once;
	/// every answer goes to [`FraudDesk::state_arrived`].
	pub fn state_requests(&mut self) -> Vec<(RoundIndex, PeerId, Digest)> {
		std::mem::take(&mut self.to_fetch)
	}

	/// `peer`'s answer to the request for its start state of `round`: the encoded state, or
	/// why there is none.
	pub fn state_arrived(
		&mut self,
		round: RoundIndex,
		peer: PeerId,
		answer: std::result::Result<Vec<u8>, String>,
		port: &dyn FraudPort,
	) {
		let key = (round, peer);
		let Some(evidence) = self.evidence(round) else { return };
		let Some(CheckState::Fetching { tries, target, .. }) = self.states.get_mut(&key) else {
			return;
		};
		let target = target.clone();
		let bytes = match answer {
			Ok(bytes) => bytes,
			Err(why) if *tries < MAX_STATE_TRIES => {
				*tries += 1;
				tracing::info!(
					"round {round}: no start state from {peer} yet ({why}); asking again"
				);
				self.to_fetch.push((round, peer, target.start));
				return;
			}
			Err(why) => {
				tracing::warn!(
					"round {round}: {peer} did not serve the start state it committed to \
					 ({why}): its update is invalid"
				);
				return self.conclude(key, Verdict::Invalid, port);
			}
		};
		match WorkState::decode_committed(&bytes, evidence.base.len(), &target.start) {
			Ok(state) => {
				let Some(seed) = port.peer_seed(round, &peer) else {
					tracing::warn!("round {round}: no data seed known for {peer}; cannot replay");
					self.states.remove(&key);
					return;
				};
				let claim = Claim {
					base: evidence.base.clone(),
					start: Arc::new(state),
					sent: target.update,
					seed,
					steps: target.steps,
				};
				self.worker.submit(key, claim);
				if let Some(CheckState::Fetching { purpose, .. }) = self.states.remove(&key) {
					self.states.insert(key, CheckState::Replaying { purpose });
				}
			}
			Err(e) => {
				tracing::warn!(
					"round {round}: {peer} served a start state it did not commit to: {e}"
				);
				self.conclude(key, Verdict::Invalid, port);
			}
		}
	}

	/// Takes the challenges assigned by the chain and the finished replays; votes and
	/// accuses through `port`.
	pub fn poll(&mut self, port: &dyn FraudPort) {
		for request in port.assigned_checks() {
			if let Some(why) = self.proven_differs(&request) {
				tracing::warn!(
					"challenge {}: {} proved on chain {why} than it sent for round {}: invalid",
					request.challenge,
					request.accused,
					request.round
				);
				port.vote(request.challenge, Verdict::Invalid);
				continue;
			}
			let key = (request.round, request.accused);
			match self.states.get_mut(&key) {
				Some(CheckState::Done(verdict)) => port.vote(request.challenge, *verdict),
				Some(CheckState::Fetching { purpose, .. } | CheckState::Replaying { purpose }) => {
					purpose.challenges.push(request.challenge)
				}
				None => {
					let purpose = Purpose { accuse: false, challenges: vec![request.challenge] };
					if let Some(target) = self.proven_target(&request) {
						self.start(request.round, request.accused, target, purpose);
					} else {
						tracing::warn!(
							"challenge {}: this trainer does not hold the update of {} for \
							 round {}; it cannot vote",
							request.challenge,
							request.accused,
							request.round
						);
					}
				}
			}
		}
		for ((round, peer), finding) in self.worker.finished() {
			match finding {
				Ok(judgement) => {
					tracing::info!(
						"round {round}: the update of {peer} is {:?} (cosine with its exact \
						 replay {:.4})",
						judgement.verdict,
						judgement.cosine
					);
					self.conclude((round, peer), judgement.verdict, port);
				}
				Err(e) => {
					tracing::warn!("round {round}: replaying the update of {peer} failed: {e}");
					self.states.remove(&(round, peer));
				}
			}
		}
	}

	/// Records the verdict on `key`'s update: votes on its challenges, accuses its sender
	/// if this trainer suspected it and it is invalid.
	fn conclude(&mut self, key: (RoundIndex, PeerId), verdict: Verdict, port: &dyn FraudPort) {
		let purpose = match self.states.remove(&key) {
			Some(CheckState::Fetching { purpose, .. } | CheckState::Replaying { purpose }) => {
				purpose
			}
			_ => Purpose::default(),
		};
		for challenge in purpose.challenges {
			port.vote(challenge, verdict);
		}
		if purpose.accuse && verdict == Verdict::Invalid {
			port.accuse(key.0, key.1);
		}
		self.states.insert(key, CheckState::Done(verdict));
	}

	/// `round`'s evidence: from memory, or else from the archive (a round that does not
	/// decode is as good as missing, and said so).
	fn evidence(&self, round: RoundIndex) -> Option<Arc<RoundEvidence>> {
		if let Some(e) = self.history.iter().find(|e| e.round == round) {
			return Some(e.clone());
		}
		let bytes = self.archive.get(round)?;
		match RoundEvidence::decode(&bytes) {
			Ok(e) if e.round == round => Some(Arc::new(e)),
			Ok(e) => {
				tracing::warn!("the archive's evidence for round {round} is round {}", e.round);
				None
			}
			Err(e) => {
				tracing::warn!("the archive's evidence for round {round}: {e}");
				None
			}
		}
	}

	/// How what the accused proved on chain differs from what its signed commitment to this
	/// trainer said, if this trainer heard one: another update, start state or step count
	/// than it told its peers makes the replay say nothing about what they aggregated.
	fn proven_differs(&self, request: &CheckRequest) -> Option<&'static str> {
		let evidence = self.evidence(request.round)?;
		let kept = evidence.updates.get(&request.accused)?;
		if request.start_state != kept.start.id() {
			Some("another start state")
		} else if request.steps != kept.steps {
			Some("other inner steps")
		} else if request.update != update_hash(&kept.update.encode()) {
			Some("another update")
		} else {
			None
		}
	}

	/// What the accused's claim as `round`'s sender, heard by this trainer, replays.
	fn own_target(&self, round: RoundIndex, peer: &PeerId) -> Option<Target> {
		Some(Target::of(self.evidence(round)?.updates.get(peer)?))
	}

	/// What a challenge replays: the claim the accused proved on chain, with the update it
	/// names, which this trainer holds when any sender of the round sent it (its own, or
	/// for a copy, the original's). `None` when it holds no such update.
	fn proven_target(&self, request: &CheckRequest) -> Option<Target> {
		let evidence = self.evidence(request.round)?;
		let own = evidence.updates.get(&request.accused).into_iter();
		let update = own
			.chain(evidence.updates.values())
			.map(|kept| &kept.update)
			.find(|update| update_hash(&update.encode()) == request.update)?;
		Some(Target { steps: request.steps, start: request.start_state, update: update.clone() })
	}

	/// Asks for `peer`'s start state of `round` to replay `target`.
	fn start(&mut self, round: RoundIndex, peer: PeerId, target: Target, purpose: Purpose) {
		self.to_fetch.push((round, peer, target.start));
		self.states.insert((round, peer), CheckState::Fetching { purpose, tries: 1, target });
	}
}

#[cfg(test)]
mod tests {
	use std::{
		sync::Mutex,
		time::{Duration, Instant},
	};

	use candle_core::Device;
	use grid_primitives::job::{InnerOptimizer, MlpConfig, ModelSpec, Nanos};

	use super::*;
	use crate::{
		data::{Dataset, MnistDataset},
		model::Model,
		round::evidence::MemoryArchive,
		train::InnerConfig,
	};

	/// Rounds the tests' desks keep evidence for.
	const KEEP_ROUNDS: RoundIndex = MEMORY_ROUNDS as RoundIndex + 3;

	/// The chain as the checks see it: seeds by peer, and what they accuse and vote.
	#[derive(Default)]
	struct Recorder {
		seeds: HashMap<PeerId, Hash>,
		/// The start state every peer committed to (and proved on chain).
		committed: Digest,
		/// The update each peer proved on chain.
		proved: HashMap<PeerId, Digest>,
		requests: Mutex<Vec<CheckRequest>>,
		accused: Mutex<Vec<(RoundIndex, PeerId)>>,
		votes: Mutex<Vec<(u64, Verdict)>>,
	}

	impl FraudPort for Recorder {
		fn peer_seed(&self, _: RoundIndex, peer: &PeerId) -> Option<Hash> {
			self.seeds.get(peer).copied()
		}
		fn accuse(&self, round: RoundIndex, peer: PeerId) {
			self.accused.lock().unwrap().push((round, peer));
		}
		fn assigned_checks(&self) -> Vec<CheckRequest> {
			std::mem::take(&mut self.requests.lock().unwrap())
		}
		fn vote(&self, challenge: u64, verdict: Verdict) {
			self.votes.lock().unwrap().push((challenge, verdict));
		}
	}

	impl Recorder {
		/// A challenge of `accused`'s update whose proof on chain names what every peer of
		/// the test committed to (`committed`, 20 steps) and the update it proved.
		fn request(&self, challenge: u64, round: RoundIndex, accused: PeerId) {
			self.request_proving(challenge, round, accused, self.committed, 20);
		}

		fn request_proving(
			&self,
			challenge: u64,
			round: RoundIndex,
			accused: PeerId,
			start_state: Digest,
			steps: u32,
		) {
			let update = self.proved[&accused];
			let request = CheckRequest { challenge, round, accused, update, start_state, steps };
			self.requests.lock().unwrap().push(request);
		}
	}

	/// How each peer answers requests for its start state.
	#[derive(Clone, Copy, PartialEq)]
	enum Serves {
		/// The state it committed to.
		Committed,
		/// Another state.
		Other,
		/// Nothing.
		Nothing,
	}

	/// The peer id of the ed25519 key with secret `[byte; 32]`.
	fn peer_id(byte: u8) -> PeerId {
		libp2p::identity::Keypair::ed25519_from_bytes([byte; 32]).unwrap().public().to_peer_id()
	}

	/// Answers the desk's state requests the way each peer does, and polls, until `done`
	/// holds (replays run on their own thread).
	fn poll_until(
		desk: &mut FraudDesk,
		chain: &Recorder,
		serves: &HashMap<PeerId, Serves>,
		n: usize,
		done: impl Fn(&Recorder) -> bool,
	) {
		let start = Instant::now();
		while !done(chain) {
			assert!(start.elapsed() < Duration::from_secs(60), "no finding in time");
			desk.poll(chain);
			for (round, peer, _) in desk.state_requests() {
				let answer = match serves[&peer] {
					Serves::Committed => Ok(WorkState::fresh(n, true).encode()),
					Serves::Other => {
						Ok(WorkState { step: 1, ..WorkState::fresh(n, true) }.encode())
					}
					Serves::Nothing => Err("no work state".to_string()),
				};
				desk.state_arrived(round, peer, answer, chain);
			}
			std::thread::sleep(Duration::from_millis(5));
		}
	}

	#[test]
	fn noise_is_accused_and_voted_invalid_honest_work_voted_valid() {
		let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 8, layers: 1 });
		let inner =
			InnerOptimizer::AdamW { lr: Nanos(2_000_000), weight_decay: Nanos(0), warmup_steps: 0 };
		let replayer = || Replayer {
			spec,
			inner,
			config: InnerConfig::default(),
			batch_size: 16,
			max_steps: None,
			dataset: Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap())),
			device: Device::Cpu,
		};
		let base =
			Arc::new(Model::new(spec, b"t", &Device::Cpu).unwrap().params().flatten().unwrap());
		let n = base.len();
		let fresh = Arc::new(WorkState::fresh(n, true));
		// Fixed identities: which peer the loss screen picks follows from them, so the test
		// is the same every run.
		let peers: Vec<PeerId> = (1..=6).map(peer_id).collect();
		// This desk sent nothing this round, so it replays whatever it flags (which of the
		// senders replay a suspect is `designated`'s test).
		let me = peer_id(9);
		let (lazy, liar, mute) = (peers[3], peers[4], peers[5]);
		// Two copiers of honest updates: one this desk heard commit, one it did not.
		let (copier, unheard_copier) = (peer_id(7), peer_id(8));
		let serves: HashMap<PeerId, Serves> = peers
			.iter()
			.chain([&copier, &unheard_copier])
			.map(|p| {
				let how = match *p {
					p if p == liar => Serves::Other,
					p if p == mute => Serves::Nothing,
					_ => Serves::Committed,
				};
				(*p, how)
			})
			.collect();
		let mut chain = Recorder { committed: fresh.digests().id(), ..Recorder::default() };
		let mut received = Vec::new();
		for (i, peer) in peers.iter().enumerate() {
			let seed = Hash::repeat_byte(i as u8 + 1);
			chain.seeds.insert(*peer, seed);
			// Honest updates are what an exact replay from the committed (fresh) state gives;
			// the lazy one is noise. The liar and the mute send honest-looking work but will
			// not show the state behind it.
			let claim = Claim {
				base: base.clone(),
				start: fresh.clone(),
				sent: Arc::new(CompressedUpdate::None(vec![0.0; n])),
				seed,
				steps: 20,
			};
			let update = if *peer == lazy {
				CompressedUpdate::None(
					(0..n).map(|j| if j % 2 == 0 { 0.01 } else { -0.01 }).collect(),
				)
			} else {
				replayer().replay(&claim).unwrap()
			};
			let start = fresh.digests();
			received.push(Received { peer: *peer, steps: 20, start, update: Arc::new(update) });
		}
		chain.seeds.insert(copier, Hash::repeat_byte(0x70));
		chain.seeds.insert(unheard_copier, Hash::repeat_byte(0x80));
		// The copiers claim (from their own committed states) what peers 1 and 2 sent.
		let copy_of = |r: &Received, peer| Received { peer, ..r.clone() };
		let copies = vec![copy_of(&received[1], copier)];
		for (peer, r) in [(copier, &received[1]), (unheard_copier, &received[2])]
			.into_iter()
			.chain(received.iter().map(|r| (r.peer, r)))
		{
			chain.proved.insert(peer, update_hash(&r.update.encode()));
		}
		let archive = MemoryArchive::default();
		let mut desk =
			FraudDesk::new(me, [7; 32], replayer(), Box::new(archive.clone()), KEEP_ROUNDS);
		desk.keep_round(0, &base, received, copies, &chain);
		poll_until(&mut desk, &chain, &serves, n, |c| c.accused.lock().unwrap().len() >= 2);
		let mut accused = chain.accused.lock().unwrap().clone();
		accused.sort();
		let mut expected = vec![(0, lazy), (0, copier)];
		expected.sort();
		assert_eq!(accused, expected, "only the noise and the copy are accused");
		// A challenge of a copy this desk never heard of: it holds the update the chain names
		// (the original's), and the copier's own state and data do not give it.
		chain.request(30, 0, unheard_copier);
		poll_until(&mut desk, &chain, &serves, n, |c| !c.votes.lock().unwrap().is_empty());
		assert_eq!(chain.votes.lock().unwrap().pop(), Some((30, Verdict::Invalid)));

		// Drawn for a challenge of the update it already judged: the vote is immediate.
		chain.request(7, 0, lazy);
		desk.poll(&chain);
		assert_eq!(*chain.votes.lock().unwrap(), vec![(7, Verdict::Invalid)]);
		// A challenge of honest work is replayed and voted valid.
		chain.request(8, 0, peers[1]);
		poll_until(&mut desk, &chain, &serves, n, |c| c.votes.lock().unwrap().len() == 2);
		assert_eq!(chain.votes.lock().unwrap()[1], (8, Verdict::Valid));
		// The same honest work is invalid where its proof on chain names another start state
		// or other steps than its commitment did: what was paid is not what replays.
		chain.request_proving(15, 0, peers[1], [0xAB; 32], 20);
		chain.request_proving(16, 0, peers[1], chain.committed, 21);
		desk.poll(&chain);
		assert_eq!(
			chain.votes.lock().unwrap()[2..],
			[(15, Verdict::Invalid), (16, Verdict::Invalid)]
		);
		// Work whose committed start state is not shown, or is not the one committed, is
		// invalid whatever it looks like.
		chain.request(11, 0, liar);
		chain.request(12, 0, mute);
		poll_until(&mut desk, &chain, &serves, n, |c| c.votes.lock().unwrap().len() == 6);
		let votes = chain.votes.lock().unwrap().clone();
		assert!(votes.contains(&(11, Verdict::Invalid)) && votes.contains(&(12, Verdict::Invalid)));
		// Without the round's evidence there is no vote.
		chain.request(9, 5, peers[1]);
		desk.poll(&chain);
		assert!(desk.state_requests().is_empty(), "round 5 was never kept");
		// Out of memory, round 0 is still in the archive: a challenge of it is judged.
		for round in 1..=MEMORY_ROUNDS as RoundIndex {
			desk.keep_round(round, &base, Vec::new(), Vec::new(), &chain);
		}
		chain.request(10, 0, peers[2]);
		poll_until(&mut desk, &chain, &serves, n, |c| c.votes.lock().unwrap().len() == 7);
		assert_eq!(chain.votes.lock().unwrap()[6], (10, Verdict::Valid));
		// A restarted trainer (nothing in memory, the same archive) judges it too.
		let mut restarted =
			FraudDesk::new(me, [7; 32], replayer(), Box::new(archive.clone()), KEEP_ROUNDS);
		chain.request(14, 0, lazy);
		poll_until(&mut restarted, &chain, &serves, n, |c| c.votes.lock().unwrap().len() == 8);
		assert_eq!(chain.votes.lock().unwrap()[7], (14, Verdict::Invalid));
		// Once round 0 can no longer be challenged, its evidence is gone.
		for round in MEMORY_ROUNDS as RoundIndex + 1..=KEEP_ROUNDS {
			desk.keep_round(round, &base, Vec::new(), Vec::new(), &chain);
		}
		chain.request(13, 0, peers[1]);
		desk.poll(&chain);
		assert!(desk.state_requests().is_empty(), "nothing to fetch for a forgotten round");
		std::thread::sleep(Duration::from_millis(200));
		desk.poll(&chain);
		assert_eq!(chain.votes.lock().unwrap().len(), 8, "rounds 5 and (forgotten) 0 are not held");
	}

	#[test]
	fn a_suspect_every_trainer_flags_is_replayed_by_two_of_the_others() {
		let peers: Vec<PeerId> = (1..=6).map(peer_id).collect();
		let mut drawn: std::collections::HashSet<&PeerId> = std::collections::HashSet::new();
		for suspect in &peers {
			for round in 0..20 {
				let replayers: Vec<&PeerId> =
					peers.iter().filter(|me| designated(me, round, &peers, suspect)).collect();
				assert_eq!(replayers.len(), REPLAYERS);
				assert!(!replayers.contains(&suspect), "nobody replays its own update");
				drawn.extend(replayers);
			}
		}
		assert_eq!(drawn.len(), peers.len(), "the duty rotates over everyone");
		// A trainer that sent nothing this round replays whatever it flags.
		let outsider = peer_id(9);
		assert!(designated(&outsider, 0, &peers, &peers[0]));
	}

	#[test]
	fn challengeable_rounds_cover_the_window_and_the_vote() {
		// A 20-block window and a 600-block vote at 10 blocks a round: the round itself and
		// 62 after it.
		assert_eq!(challengeable_rounds(20, 600, 10), 63);
		assert_eq!(challengeable_rounds(0, 600, 7), 87);
		assert_eq!(challengeable_rounds(u32::MAX, 600, 0), u32::MAX);
	}
}
