//! The trainer's part in the fraud path: it keeps what the last rounds' checks need (each
//! round's base model and the updates it aggregated), screens every round's updates, replays
//! suspects before accusing them, and replays the contributions the chain asks it to judge
//! as a committee member. The replays themselves are in [`crate::verify`] and run on their
//! own thread; findings come back through [`FraudDesk::poll`], which the round loop calls while
//! it waits for the network.

use std::{
	collections::{HashMap, VecDeque},
	sync::Arc,
};

use grid_primitives::{job::RoundIndex, work::Verdict, Hash};
use libp2p::PeerId;

use crate::verify::{suspects, Claim, Replayer, VerifyWorker};

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
	/// Who sent it.
	pub accused: PeerId,
}

/// Rounds whose evidence is kept (a challenge comes within a few rounds of its round).
pub const EVIDENCE_ROUNDS: usize = 4;

/// An update as it went into a round's aggregate.
pub struct Received {
	/// Who sent it.
	pub peer: PeerId,
	/// Inner steps it claimed.
	pub steps: u32,
	/// The update, decompressed.
	pub delta: Vec<f32>,
}

/// What one round leaves for checks.
struct RoundEvidence {
	round: RoundIndex,
	base: Arc<Vec<f32>>,
	updates: HashMap<PeerId, (u32, Arc<Vec<f32>>)>,
}

/// A check of one peer's update for one round.
enum CheckState {
	/// Replaying; what to do with the finding.
	Running {
		/// Accuse the peer if the update is invalid (this trainer found it suspect).
		accuse: bool,
		/// Challenges to vote on with the finding.
		challenges: Vec<u64>,
	},
	/// Decided (a later challenge of the same update gets the same vote).
	Done(Verdict),
}

/// The fraud checks of one trainer (its fraud desk).
pub struct FraudDesk {
	me: PeerId,
	worker: VerifyWorker<(RoundIndex, PeerId)>,
	history: VecDeque<RoundEvidence>,
	states: HashMap<(RoundIndex, PeerId), CheckState>,
}

impl FraudDesk {
	/// The desk of the trainer `me`, replaying with `replayer`.
	pub fn new(me: PeerId, replayer: Replayer) -> Self {
		FraudDesk {
			me,
			worker: VerifyWorker::start(replayer),
			history: VecDeque::new(),
			states: HashMap::new(),
		}
	}

	/// Keeps `round`'s base model and updates, and screens the updates: a peer's update
	/// that disagrees with the others is replayed, and its sender accused if the replay
	/// refutes it.
	pub fn keep_round(
		&mut self,
		round: RoundIndex,
		base: &[f32],
		received: Vec<Received>,
		port: &dyn FraudPort,
	) {
		let order: Vec<PeerId> = received.iter().map(|r| r.peer).collect();
		let updates: HashMap<PeerId, (u32, Arc<Vec<f32>>)> =
			received.into_iter().map(|r| (r.peer, (r.steps, Arc::new(r.delta)))).collect();
		let deltas: Vec<&[f32]> = order.iter().map(|p| updates[p].1.as_slice()).collect();
		let flagged: Vec<(PeerId, f64)> =
			suspects(&deltas).into_iter().map(|(i, cosine)| (order[i], cosine)).collect();
		self.history.push_back(RoundEvidence { round, base: Arc::new(base.to_vec()), updates });
		while self.history.len() > EVIDENCE_ROUNDS {
			let old = self.history.pop_front().map_or(0, |e| e.round);
			self.states.retain(|(r, _), _| *r > old);
		}
		for (peer, agreement) in flagged {
			if peer == self.me {
				continue;
			}
			tracing::warn!(
				"round {round}: the update of {peer} disagrees with the others (cosine \
				 {agreement:.3}); replaying it"
			);
			let running = CheckState::Running { accuse: true, challenges: vec![] };
			self.start(port, round, peer, running);
		}
	}

	/// Takes the challenges assigned by the chain and the finished replays; votes and
	/// accuses through `port`.
	pub fn poll(&mut self, port: &dyn FraudPort) {
		for request in port.assigned_checks() {
			let key = (request.round, request.accused);
			match self.states.get_mut(&key) {
				Some(CheckState::Done(verdict)) => port.vote(request.challenge, *verdict),
				Some(CheckState::Running { challenges, .. }) => challenges.push(request.challenge),
				None => {
					let running =
						CheckState::Running { accuse: false, challenges: vec![request.challenge] };
					if !self.start(port, request.round, request.accused, running) {
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
			let Some(CheckState::Running { accuse, challenges }) =
				self.states.remove(&(round, peer))
			else {
				continue;
			};
			let judgement = match finding {
				Ok(judgement) => judgement,
				Err(e) => {
					tracing::warn!("round {round}: replaying the update of {peer} failed: {e}");
					continue;
				}
			};
			tracing::info!(
				"round {round}: the update of {peer} is {:?} (cosine with its replay {:.3})",
				judgement.verdict,
				judgement.cosine
			);
			for challenge in challenges {
				port.vote(challenge, judgement.verdict);
			}
			if accuse && judgement.verdict == Verdict::Invalid {
				port.accuse(round, peer);
			}
			self.states.insert((round, peer), CheckState::Done(judgement.verdict));
		}
	}

	/// Queues the replay of `peer`'s update for `round`; false when this trainer lacks the
	/// evidence (the round, the update or the peer's data seed).
	fn start(
		&mut self,
		port: &dyn FraudPort,
		round: RoundIndex,
		peer: PeerId,
		state: CheckState,
	) -> bool {
		let Some(evidence) = self.history.iter().find(|e| e.round == round) else { return false };
		let Some((steps, delta)) = evidence.updates.get(&peer) else { return false };
		let Some(seed) = port.peer_seed(round, &peer) else { return false };
		let claim =
			Claim { base: evidence.base.clone(), delta: delta.clone(), seed, steps: *steps };
		self.worker.submit((round, peer), claim);
		self.states.insert((round, peer), state);
		true
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
		train::InnerConfig,
	};

	/// The chain as the checks see it: seeds by peer, and what they accuse and vote.
	#[derive(Default)]
	struct Recorder {
		seeds: HashMap<PeerId, Hash>,
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
		fn request(&self, challenge: u64, round: RoundIndex, accused: PeerId) {
			self.requests.lock().unwrap().push(CheckRequest { challenge, round, accused });
		}
	}

	/// Polls until `done` holds (replays run on their own thread).
	fn poll_until(checks: &mut FraudDesk, chain: &Recorder, done: impl Fn(&Recorder) -> bool) {
		let start = Instant::now();
		while !done(chain) {
			assert!(start.elapsed() < Duration::from_secs(60), "no finding in time");
			checks.poll(chain);
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
			dataset: Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap())),
			device: Device::Cpu,
		};
		let base =
			Arc::new(Model::new(spec, b"t", &Device::Cpu).unwrap().params().flatten().unwrap());
		let peers: Vec<PeerId> = (0..4).map(|_| PeerId::random()).collect();
		let (me, lazy) = (peers[0], peers[3]);
		let mut chain = Recorder::default();
		let mut received = Vec::new();
		for (i, peer) in peers.iter().enumerate() {
			let seed = Hash::repeat_byte(i as u8 + 1);
			chain.seeds.insert(*peer, seed);
			// Honest updates are what the replay itself gives; the lazy one is noise.
			let claim = Claim { base: base.clone(), delta: base.clone(), seed, steps: 20 };
			let delta = if *peer == lazy {
				(0..base.len()).map(|j| if j % 2 == 0 { 0.01 } else { -0.01 }).collect()
			} else {
				replayer().replay(&claim).unwrap()
			};
			received.push(Received { peer: *peer, steps: 20, delta });
		}
		let mut checks = FraudDesk::new(me, replayer());
		checks.keep_round(0, &base, received, &chain);
		poll_until(&mut checks, &chain, |c| !c.accused.lock().unwrap().is_empty());
		assert_eq!(*chain.accused.lock().unwrap(), vec![(0, lazy)], "only the noise is accused");

		// Drawn for a challenge of the update it already judged: the vote is immediate.
		chain.request(7, 0, lazy);
		checks.poll(&chain);
		assert_eq!(*chain.votes.lock().unwrap(), vec![(7, Verdict::Invalid)]);
		// A challenge of honest work is replayed and voted valid.
		chain.request(8, 0, peers[1]);
		poll_until(&mut checks, &chain, |c| c.votes.lock().unwrap().len() == 2);
		assert_eq!(chain.votes.lock().unwrap()[1], (8, Verdict::Valid));
		// Without the round's evidence there is no vote.
		chain.request(9, 5, peers[1]);
		checks.poll(&chain);
		for round in 1..=EVIDENCE_ROUNDS as RoundIndex {
			checks.keep_round(round, &base, Vec::new(), &chain);
		}
		chain.request(10, 0, peers[2]);
		checks.poll(&chain);
		std::thread::sleep(Duration::from_millis(200));
		checks.poll(&chain);
		assert_eq!(chain.votes.lock().unwrap().len(), 2, "rounds 5 and (evicted) 0 are not held");
	}
}
