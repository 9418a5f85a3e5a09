//! One attempt: a job on the pallets' test runtime (`pallet_jobs::mock`: the real
//! `pallet-jobs` and `pallet-providers`, with audits at the runtime's 1%), four honest
//! providers and one attacker training MNIST with the real trainer library, each honest
//! provider screening every round with its own [`FraudDesk`] (the daemon's), challenging
//! what its replays refute and judging what the chain draws it to judge.
//!
//! Time is the chain's: every loop plays the open round (proofs submitted, so it settles at
//! once), then moves one block, then lets committee members judge and vote. Challenges and
//! audits thus run while later rounds train, as on a live chain.

use std::{
	collections::{HashMap, HashSet},
	sync::{Arc, Mutex},
	time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context, Result};
use candle_core::Device;
use grid_primitives::{
	job::{
		Compression, InnerOptimizer, JobId, MlpConfig, ModelSpec, Nanos, RoundIndex,
		DEFAULT_ERROR_DECAY,
	},
	work::{data_seed, Verdict},
	Hash,
};
use grid_trainer::{
	compress::{
		adaptive::{compress_once, AdaptiveCompressor},
		CompressedUpdate, Layout,
	},
	data::{batch_indices, Dataset},
	diloco::{train_round_observed, OuterOptimizer},
	model::Model,
	rng::Rng,
	round::{
		evidence::MemoryArchive,
		fetch::Fetched,
		fraud::{CheckRequest, FraudDesk, FraudPort, Received, GAUNTLET_PEERS, SEGMENT_RATE},
		messages::{update_hash, Digest},
		misbehave::{self, FORGED_NORM},
	},
	train::{InnerConfig, InnerTrainer},
	trajectory::{Recorder, StepState, Trajectory},
	verify::Replayer,
	work_state::WorkState,
};
use libp2p::{identity::Keypair, PeerId};
use pallet_jobs::{
	mock::{
		self, AccountId, AllPalletsWithSystem, Jobs, RuntimeEvent, RuntimeOrigin, System, Test,
	},
	ChallengeOutcome, Challenges, Event as JobsEvent, Rounds,
};
use polkadot_sdk::{
	frame_system::RunToBlockHooks, sp_core::H256, sp_io::hashing::blake2_256, sp_runtime::Perbill,
};

use crate::attack::Attacker;

/// The honest providers.
pub const HONEST: [AccountId; 4] = [11, 12, 13, 14];
/// The attacker.
pub const ATTACKER: AccountId = 15;
/// The lazy provider next to a Sybil voter (someone for the committees to judge).
pub const CHEATER: AccountId = 16;
/// Rounds an attempt lasts at most.
pub const ROUNDS: u32 = 10;
/// Inner steps per round, unless the suite is told otherwise.
pub const STEPS: u32 = 30;
/// Samples per inner step.
pub(crate) const BATCH: u64 = 32;
/// The job's outer learning rate and momentum.
pub(crate) const OUTER_LR: f32 = 0.7;
pub(crate) const OUTER_MOMENTUM: f32 = 0.5;
/// Each provider's stake: above the deterrent stake the audits ask of the job.
const STAKE: u128 = 300_000;
/// Blocks an attempt may run (rounds, then the last votes).
const MAX_BLOCKS: u64 = 120;

/// What one attempt found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
	/// The round (from 0) whose offence was first caught, if any.
	pub caught_in_round: Option<RoundIndex>,
	/// Rounds played.
	pub rounds: u32,
	/// Honest providers' paid contributions.
	pub honest_contributions: u32,
	/// Honest contributions challenged by honest providers (screen false positives).
	pub honest_challenged: u32,
	/// Honest providers slashed, for any reason.
	pub honest_slashed: u32,
	/// Honest contributions a griefer challenged, and of those convicted.
	pub griefed: u32,
	/// Audits the chain opened.
	pub audits: u32,
	/// Verdicts that went against the truth (an honest update convicted or a cheat cleared).
	pub wrong_verdicts: u32,
	/// Inner steps the job's contributions claimed (the training the chain paid for).
	pub training_steps: u64,
	/// Inner steps replayed by trainers whose screens flagged the update (before any
	/// challenge).
	pub replay_steps: u64,
	/// Inner steps committee members redid judging challenges and audits: the drawn
	/// segment of each claim's trajectory, and full replays of claims whose trajectories did
	/// not hold.
	pub committee_steps: u64,
	/// Batches the loss screens evaluated (a forward pass each: about a third of a step).
	pub screen_passes: u64,
	/// Inner steps the segment checks redid.
	pub segment_steps: u64,
	/// Whether the attacker attacked: a Sybil voter only does when drawn onto a committee.
	pub attacked: bool,
}

/// Who a provider is.
#[derive(Clone, Copy, PartialEq)]
enum Role {
	Honest,
	Attacker(Attacker),
	/// The lazy provider of the Sybil voter's job.
	Cheater,
}

impl Role {
	/// Whether it screens, challenges and votes (cheaters never vote).
	fn judges(self) -> bool {
		match self {
			Role::Honest => true,
			Role::Attacker(a) => a.trains_honestly(),
			Role::Cheater => false,
		}
	}
}

/// The chain as one provider's fraud desk sees it.
struct Port {
	seeds: Arc<Mutex<HashMap<(RoundIndex, PeerId), Hash>>>,
	accused: Mutex<Vec<(RoundIndex, PeerId)>>,
	assigned: Mutex<Vec<CheckRequest>>,
	votes: Mutex<Vec<(u64, Verdict)>>,
}

impl FraudPort for Port {
	fn peer_seed(&self, round: RoundIndex, peer: &PeerId) -> Option<Hash> {
		self.seeds.lock().unwrap().get(&(round, *peer)).copied()
	}
	fn accuse(&self, round: RoundIndex, peer: PeerId) {
		self.accused.lock().unwrap().push((round, peer));
	}
	fn assigned_checks(&self) -> Vec<CheckRequest> {
		std::mem::take(&mut self.assigned.lock().unwrap())
	}
	fn vote(&self, challenge: u64, verdict: Verdict) {
		self.votes.lock().unwrap().push((challenge, verdict));
	}
	/// Never called: the harness hands updates to the desks without commitment gossip, so
	/// no book hears two commitments (equivocation is `tests/tests/network_job.rs`'s).
	fn report_equivocation(&self, _: grid_trainer::round::messages::Equivocation) {}
}

/// One provider: its trainer, compressor and (if it judges) fraud desk.
struct Member {
	who: AccountId,
	peer: PeerId,
	role: Role,
	trainer: InnerTrainer,
	compressor: AdaptiveCompressor,
	desk: Option<(FraudDesk, Arc<Port>)>,
}

/// What one member sent for a round.
struct Sent {
	start: WorkState,
	update: Arc<CompressedUpdate>,
	claimed_steps: u32,
	/// The root of the trajectory it committed to.
	trajectory: Digest,
	/// What it serves for segment checks: its trajectory and states, by content address.
	recorded: Vec<(Digest, Vec<u8>)>,
}

/// The trajectory of `kept` states: its root, and it and the states by content address.
fn recorded(kept: &[(u32, StepState)]) -> (Digest, Vec<(Digest, Vec<u8>)>) {
	let (trajectory, objects) = Trajectory::served(kept);
	(trajectory.root(), objects)
}

impl Sent {
	/// The content address of the update (what its commitment and proof name).
	fn hash(&self) -> H256 {
		H256(update_hash(&self.update.encode()))
	}
}

/// Positions in `sent` whose update an earlier sender sent too: copies, which honest books
/// leave out of the round (they keep the first commitment of an update they hear).
fn copies(sent: &[Sent]) -> Vec<usize> {
	(0..sent.len()).filter(|k| (0..*k).any(|j| sent[j].hash() == sent[*k].hash())).collect()
}

/// The job's training setup (the same for every attempt).
pub struct Setup {
	/// Inner steps per round.
	pub(crate) steps: u32,
	/// Peers each honest desk loss-screens per round.
	screens: usize,
	/// Segment checks each honest desk runs per round, on average.
	segments: f64,
	/// Whether committees judge by trajectories before any full replay.
	committee_traces: bool,
	pub(crate) spec: ModelSpec,
	pub(crate) inner: InnerOptimizer,
	pub(crate) config: InnerConfig,
	pub(crate) compression: Compression,
	/// The job's error-feedback decay.
	pub(crate) error_decay: f32,
	pub(crate) data: Arc<Dataset>,
}

impl Setup {
	/// An MNIST MLP trained with AdamW for `steps` inner steps a round, updates sent as
	/// int8, on the shipped MNIST subset.
	pub fn mnist(data: Arc<Dataset>, steps: u32) -> Self {
		Setup {
			steps,
			screens: GAUNTLET_PEERS,
			segments: SEGMENT_RATE,
			committee_traces: true,
			spec: ModelSpec::MnistMlp(MlpConfig { hidden: 32, layers: 1 }),
			inner: InnerOptimizer::AdamW {
				lr: Nanos(2_000_000),
				weight_decay: Nanos(0),
				warmup_steps: 0,
			},
			config: InnerConfig { total_steps: u64::from(ROUNDS * steps), ..Default::default() },
			compression: Compression::Int8 { chunk: 256 },
			error_decay: DEFAULT_ERROR_DECAY.to_f64() as f32,
			data,
		}
	}

	/// The same with each honest desk loss-screening `screens` peers per round (the
	/// daemon's is [`GAUNTLET_PEERS`]).
	pub fn with_screens(mut self, screens: usize) -> Self {
		self.screens = screens;
		self
	}

	/// The same with each honest desk running `rate` segment checks per round on average
	/// (the daemon's is [`SEGMENT_RATE`]).
	pub fn with_segments(mut self, rate: f64) -> Self {
		self.segments = rate;
		self
	}

	/// The same with committees judging by trajectories first (`true`, the daemon's) or
	/// replaying every claim in full.
	pub fn with_committee_traces(mut self, traces: bool) -> Self {
		self.committee_traces = traces;
		self
	}

	/// The job's model.
	pub fn spec(&self) -> ModelSpec {
		self.spec
	}

	/// The replayer every honest desk of this job checks with.
	pub fn replayer(&self) -> Replayer {
		Replayer {
			spec: self.spec,
			layout: Layout::of_spec(self.spec).expect("the job's model builds"),
			inner: self.inner,
			config: self.config,
			batch_size: BATCH,
			error_decay: self.error_decay,
			max_steps: Some(self.steps),
			catch_up: None,
			dataset: self.data.clone(),
			device: Device::Cpu,
		}
	}
}

/// Runs attempt `attempt` of `attacker` on a fresh test chain.
pub fn run_attempt(setup: &Setup, attacker: Attacker, attempt: u32) -> Result<Outcome> {
	mock::new_test_ext().execute_with(|| World::new(setup, attacker, attempt)?.run())
}

/// An attempt in progress.
struct World<'a> {
	setup: &'a Setup,
	attacker: Attacker,
	attempt: u32,
	job: JobId,
	members: Vec<Member>,
	seeds: Arc<Mutex<HashMap<(RoundIndex, PeerId), Hash>>>,
	/// Each contribution's committed start state, encoded.
	states: HashMap<(RoundIndex, PeerId), Vec<u8>>,
	/// What the members serve for segment and committee checks, by content address: every
	/// round's, as long as the attempt lasts (its rounds can be challenged and audited
	/// until it ends).
	recorded: HashMap<Digest, Vec<u8>>,
	base: Vec<f32>,
	outer: OuterOptimizer,
	previous_mean: Vec<f32>,
	rng: Rng,
	/// Committee seats already handed to a desk.
	seated: HashSet<(u64, AccountId)>,
	/// Committed votes not yet revealed: (challenge, voter, verdict).
	to_reveal: Vec<(u64, AccountId, Verdict)>,
	/// The round and accused of each challenge or audit opened.
	disputes: HashMap<u64, (RoundIndex, AccountId)>,
	/// Challenges the griefer opened.
	griefs: HashSet<u64>,
	/// Challenges the Sybil voted on.
	sybil_votes: HashSet<u64>,
	outcome: Outcome,
}

impl<'a> World<'a> {
	fn new(setup: &'a Setup, attacker: Attacker, attempt: u32) -> Result<Self> {
		// The runtime's audit rate, and its fewest verifiers to a verdict.
		mock::AuditRate::set(Perbill::from_percent(1));
		mock::MinCommittee::set(2);
		let mut roles: Vec<(AccountId, Role)> = HONEST.iter().map(|w| (*w, Role::Honest)).collect();
		roles.push((ATTACKER, Role::Attacker(attacker)));
		if attacker == Attacker::SybilVoter {
			roles.push((CHEATER, Role::Cheater));
		}
		// Every attempt is its own job: its first round's seed (the parent hash when the job
		// starts) and its initial model are drawn per attempt, so no two attempts replay the
		// same first round.
		let salt = (attempt, attacker as u32);
		System::set_parent_hash(blake2_256(&(salt, 0u64).encode_pair()).into());
		let job = create_job(roles.len() as u32)?;
		let seeds = Arc::new(Mutex::new(HashMap::new()));
		let model = Model::new(setup.spec, &(salt, u64::MAX).encode_pair(), &Device::Cpu)?;
		let base = model.params().flatten()?;
		let members = roles
			.into_iter()
			.map(|(who, role)| member(setup, who, role, base.len(), &seeds, salt))
			.collect::<Result<Vec<_>>>()?;
		for m in &members {
			mock::register_with(m.who, STAKE, 400_000);
			mock::join(job, m.who).map_err(|e| anyhow!("{} cannot join: {e:?}", m.who))?;
		}
		let len = base.len();
		Ok(World {
			setup,
			attacker,
			attempt,
			job,
			members,
			seeds,
			states: HashMap::new(),
			recorded: HashMap::new(),
			base,
			outer: OuterOptimizer::new(OUTER_LR, OUTER_MOMENTUM, len),
			previous_mean: vec![0.0; len],
			rng: Rng::new(0x5eed ^ u64::from(attempt) << 8 ^ attacker as u64),
			seated: HashSet::new(),
			to_reveal: Vec::new(),
			disputes: HashMap::new(),
			griefs: HashSet::new(),
			sybil_votes: HashSet::new(),
			outcome: Outcome { attacked: attacker != Attacker::SybilVoter, ..Outcome::default() },
		})
	}

	fn run(mut self) -> Result<Outcome> {
		for _ in 0..MAX_BLOCKS {
			let open = Rounds::<Test>::get(self.job);
			let done = self.outcome.caught_in_round.is_some() || open.is_none();
			if done && Challenges::<Test>::iter().next().is_none() {
				break;
			}
			if let Some(round) = open.filter(|_| self.outcome.caught_in_round.is_none()) {
				if round.index < ROUNDS {
					self.play_round(round.index, round.seed, &round.members)?;
				}
			}
			self.next_block();
			self.judge()?;
		}
		Ok(self.outcome)
	}

	/// Trains, sends and proves round `index`; the chain settles it at once; then screens.
	fn play_round(&mut self, index: RoundIndex, seed: Hash, members: &[AccountId]) -> Result<()> {
		let steps = self.setup.steps;
		let base = Arc::new(self.base.clone());
		let playing: Vec<usize> =
			(0..self.members.len()).filter(|i| members.contains(&self.members[*i].who)).collect();
		let seeds: Vec<Hash> = playing
			.iter()
			.map(|i| data_seed(&seed, self.job, index, &self.members[*i].who))
			.collect();
		for (i, s) in playing.iter().zip(&seeds) {
			self.seeds.lock().unwrap().insert((index, self.members[*i].peer), *s);
		}
		// Honest training first: copiers copy what honest providers sent.
		let mut sent: Vec<Option<Sent>> = (0..playing.len()).map(|_| None).collect();
		let mut victim: Option<(Vec<f32>, Arc<CompressedUpdate>)> = None;
		for (k, i) in playing.iter().enumerate() {
			let role = self.members[*i].role;
			if matches!(role, Role::Honest)
				|| matches!(role, Role::Attacker(a) if a.trains_honestly())
			{
				let (s, corrected) = self.train(*i, &base, seeds[k], steps, steps)?;
				victim.get_or_insert((corrected, s.update.clone()));
				sent[k] = Some(s);
			}
		}
		let victim = victim.context("no honest provider left")?;
		for (k, i) in playing.iter().enumerate() {
			if sent[k].is_none() {
				sent[k] = Some(self.cheat(*i, &base, seeds[k], &victim.0, &victim.1)?);
			}
		}
		let sent: Vec<Sent> = sent.into_iter().map(|s| s.expect("every member sent")).collect();
		self.prove(index, &playing, &sent)?;
		self.screen(index, &base, &playing, &sent)?;
		self.step_base(&sent)?;
		if self.attacker == Attacker::GriefingChallenger {
			self.grief(index)?;
		}
		self.outcome.rounds += 1;
		Ok(())
	}

	/// Member `i` trains `ran` steps from its own state (claiming `claimed`) on `seed`'s
	/// batches; what it sends, and its error-corrected update.
	fn train(
		&mut self,
		i: usize,
		base: &[f32],
		seed: Hash,
		ran: u32,
		claimed: u32,
	) -> Result<(Sent, Vec<f32>)> {
		let data = self.setup.data.clone();
		let m = &mut self.members[i];
		let start = m.trainer.snapshot(m.compressor.residual().to_vec())?;
		let batches = (0..u64::from(ran)).map(|step| {
			data.train_batch(&batch_indices(&seed, step, BATCH, data.train_len()), &Device::Cpu)
		});
		let mut recorder = Recorder::new(base.len());
		let delta =
			train_round_observed(&mut m.trainer, base, batches, |at, t| recorder.observe(at, t))?
				.delta;
		let kept: Vec<(u32, StepState)> = recorder
			.finish(ran, &m.trainer)?
			.into_iter()
			.map(|(at, state)| (at, state.into_state(base, &start)))
			.collect();
		let (trajectory, recorded) = recorded(&kept);
		let corrected: Vec<f32> = delta.iter().zip(&start.residual).map(|(d, e)| d + e).collect();
		let (update, _, _) = m.compressor.compress(&delta, None)?;
		let update = Arc::new(update);
		Ok((Sent { start, update, claimed_steps: claimed, trajectory, recorded }, corrected))
	}

	/// What a cheating member `i` sends instead of its work; `victim` is an honest
	/// provider's error-corrected update of the round, `victim_sent` what it sent.
	fn cheat(
		&mut self,
		i: usize,
		base: &[f32],
		seed: Hash,
		victim: &[f32],
		victim_sent: &Arc<CompressedUpdate>,
	) -> Result<Sent> {
		let steps = self.setup.steps;
		let kind = match self.members[i].role {
			Role::Attacker(a) => a,
			_ => Attacker::Lazy,
		};
		let scheme = self.setup.compression;
		let noise = self.noise(victim);
		let values: Vec<f32> = match kind {
			Attacker::WrongData => {
				let other = Hash::from(blake2_256(seed.as_bytes()));
				return Ok(self.train(i, base, other, steps, steps)?.0);
			}
			Attacker::InflatedClaim => {
				return Ok(self.train(i, base, seed, steps * 3 / 4, steps)?.0);
			}
			Attacker::ExactCopy => {
				// The very bytes: the same content address as the original's.
				let m = &self.members[i];
				let start = m.trainer.snapshot(m.compressor.residual().to_vec())?;
				let (trajectory, recorded) = recorded(&[(0, m.trainer.state()?)]);
				let update = victim_sent.clone();
				return Ok(Sent { start, update, claimed_steps: steps, trajectory, recorded });
			}
			Attacker::ForgedResidual => {
				// Its update is the noise; its stated residual, the noise over the decay, which
				// is all a replay from its start state would send were no step trained.
				let values: Vec<f32> = noise.iter().map(|z| z * FORGED_NORM as f32).collect();
				let decay = self.setup.error_decay;
				let m = &self.members[i];
				let start = m.trainer.snapshot(values.iter().map(|v| v / decay).collect())?;
				let update = Arc::new(compress_once(&scheme, m.compressor.layout(), &values)?);
				// Its trajectory: from its start to the same weights `steps` steps on, whose
				// end (the base) gives the update sent with that residual.
				let end = misbehave::idle_end(base, &start, steps);
				let at_start = StepState::at_start(base, &start);
				let (trajectory, recorded) = recorded(&[(0, at_start), (steps, end)]);
				return Ok(Sent { start, update, claimed_steps: steps, trajectory, recorded });
			}
			Attacker::ScaledCopy => victim.iter().map(|x| x * 1.5).collect(),
			Attacker::NoisedCopy => victim.iter().zip(&noise).map(|(v, z)| v + 0.3 * z).collect(),
			Attacker::PreviousAggregate => self.previous_mean.clone(),
			_ => noise,
		};
		let m = &self.members[i];
		// It commits its true start state: its update is what fails to replay from it.
		let start = m.trainer.snapshot(m.compressor.residual().to_vec())?;
		let update = Arc::new(compress_once(&scheme, m.compressor.layout(), &values)?);
		// Nothing trained, nothing recorded: a trajectory of its start alone.
		let (trajectory, recorded) = recorded(&[(0, m.trainer.state()?)]);
		Ok(Sent { start, update, claimed_steps: steps, trajectory, recorded })
	}

	/// Gaussian noise with `like`'s norm.
	fn noise(&mut self, like: &[f32]) -> Vec<f32> {
		let z: Vec<f32> = like.iter().map(|_| self.rng.normal() as f32).collect();
		let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
		let scale = (norm(like) / norm(&z).max(f64::MIN_POSITIVE)) as f32;
		z.into_iter().map(|x| x * scale).collect()
	}

	/// Signs and submits every member's proof; the last settles the round.
	fn prove(&mut self, index: RoundIndex, playing: &[usize], sent: &[Sent]) -> Result<()> {
		// Every member used every update but the copies (honest books leave them out).
		let copies = copies(sent);
		let used: Vec<AccountId> = playing
			.iter()
			.enumerate()
			.filter(|(k, _)| !copies.contains(k))
			.map(|(_, i)| self.members[*i].who)
			.collect();
		for (i, s) in playing.iter().zip(sent) {
			let m = &self.members[*i];
			self.states.insert((index, m.peer), s.start.encode());
			self.recorded.extend(s.recorded.iter().cloned());
			self.outcome.training_steps += u64::from(s.claimed_steps);
			let samples = u64::from(s.claimed_steps) * BATCH;
			// What its commitment said: its update, the start state a replay starts from
			// and its steps.
			let mut proof = mock::proof(self.job, index, m.who, 42, samples, &used).proof;
			proof.own_update_commitment = s.hash();
			proof.start_state = H256(s.start.digests().id());
			proof.inner_steps = s.claimed_steps;
			Jobs::submit_proof(RuntimeOrigin::signed(m.who), mock::sign(proof))
				.map_err(|e| anyhow!("round {index}: {}'s proof refused: {e:?}", m.who))?;
		}
		Ok(())
	}

	/// Every judging member screens the round's updates; what its replays refute, it
	/// challenges.
	fn screen(
		&mut self,
		index: RoundIndex,
		base: &[f32],
		playing: &[usize],
		sent: &[Sent],
	) -> Result<()> {
		let copies = copies(sent);
		let (mut received, mut copied) = (Vec::new(), Vec::new());
		for (k, (i, s)) in playing.iter().zip(sent).enumerate() {
			let r = Received {
				peer: self.members[*i].peer,
				steps: s.claimed_steps,
				start: s.start.digests(),
				trajectory: s.trajectory,
				update: s.update.clone(),
			};
			if copies.contains(&k) {
				copied.push(r);
			} else {
				received.push(r);
			}
		}
		let base = std::sync::Arc::new(base.to_vec());
		for m in &mut self.members {
			let Some((desk, port)) = m.desk.as_mut() else { continue };
			let (received, copied) = (received.clone(), copied.clone());
			desk.keep_round(index, base.clone(), received, copied, port.as_ref());
		}
		self.drive_desks()?;
		self.accuse()
	}

	/// Answers the desks' start-state requests and polls them until no check is under way.
	fn drive_desks(&mut self) -> Result<()> {
		let deadline = Instant::now() + Duration::from_secs(300);
		loop {
			let mut busy = false;
			for m in &mut self.members {
				let Some((desk, port)) = m.desk.as_mut() else { continue };
				// The desk counts each check's steps when it submits it.
				let before = desk.costs();
				for (round, peer, id) in desk.state_requests() {
					let answer = match self.recorded.get(&id) {
						Some(bytes) => Ok(bytes.clone()),
						None => self
							.states
							.get(&(round, peer))
							.cloned()
							.ok_or_else(|| "no such state".to_string()),
					};
					// What a download of the served bytes in pieces would make of them.
					let answer = answer.and_then(|bytes| Fetched::whole(bytes, self.base.len()));
					desk.state_arrived(round, peer, id, answer, port.as_ref());
				}
				desk.poll(port.as_ref());
				let after = desk.costs();
				self.outcome.screen_passes += after.screen_passes - before.screen_passes;
				self.outcome.segment_steps += after.segment_steps - before.segment_steps;
				self.outcome.replay_steps += after.replay_steps - before.replay_steps;
				self.outcome.committee_steps += after.committee_steps - before.committee_steps;
				busy |= desk.busy();
			}
			if !busy {
				return Ok(());
			}
			if Instant::now() > deadline {
				bail!("the fraud desks did not finish their checks in 300 s");
			}
			std::thread::sleep(Duration::from_millis(2));
		}
	}

	/// Sends the desks' accusations to the chain (the first of each stands).
	fn accuse(&mut self) -> Result<()> {
		let mut accusations = Vec::new();
		for m in &self.members {
			if let Some((_, port)) = &m.desk {
				for (round, peer) in port.accused.lock().unwrap().drain(..) {
					accusations.push((m.who, round, peer));
				}
			}
		}
		for (challenger, round, peer) in accusations {
			let accused = self.account_of(&peer)?;
			let id = pallet_jobs::NextChallengeId::<Test>::get();
			if Jobs::challenge(RuntimeOrigin::signed(challenger), self.job, round, accused).is_ok()
			{
				if HONEST.contains(&accused) && HONEST.contains(&challenger) {
					self.outcome.honest_challenged += 1;
				}
				self.disputes.insert(id, (round, accused));
			}
		}
		Ok(())
	}

	/// The griefer challenges an honest provider's contribution of `round`.
	fn grief(&mut self, round: RoundIndex) -> Result<()> {
		let victim = HONEST[round as usize % HONEST.len()];
		let id = pallet_jobs::NextChallengeId::<Test>::get();
		if Jobs::challenge(RuntimeOrigin::signed(ATTACKER), self.job, round, victim).is_ok() {
			self.griefs.insert(id);
			self.disputes.insert(id, (round, victim));
			self.outcome.griefed += 1;
		}
		Ok(())
	}

	/// The next base model: the outer step on the mean of what was sent (copies left out).
	fn step_base(&mut self, sent: &[Sent]) -> Result<()> {
		let copies = copies(sent);
		let kept: Vec<&Sent> =
			sent.iter().enumerate().filter(|(k, _)| !copies.contains(k)).map(|(_, s)| s).collect();
		let n = kept.len() as f32;
		let mut mean = vec![0f32; self.base.len()];
		for s in kept {
			for (m, x) in mean.iter_mut().zip(s.update.decompress()) {
				*m += x / n;
			}
		}
		self.outer.step(&mut self.base, &mean)?;
		self.previous_mean = mean;
		Ok(())
	}

	/// Moves the chain one block (its parent hash drawn per attempt, so that committees
	/// and audits differ between attempts) and reads what happened in it.
	fn next_block(&mut self) {
		let salt = (self.attempt, self.attacker as u32);
		let hooks = RunToBlockHooks::default().before_initialize(move |n: u64| {
			System::set_parent_hash(blake2_256(&(salt, n).encode_pair()).into())
		});
		System::run_to_block_with::<AllPalletsWithSystem>(System::block_number() + 1, hooks);
		self.read_events();
	}

	/// Committee members judge the disputes they were drawn onto, commit, and reveal when
	/// the chain lets them (the Sybil first: it wants its vote to count).
	fn judge(&mut self) -> Result<()> {
		let open: Vec<(u64, RoundIndex, AccountId, u64, Vec<AccountId>)> =
			Challenges::<Test>::iter()
				.filter(|(_, c)| c.drawn())
				.map(|(id, c)| {
					let committee = c.committee.iter().map(|(w, _)| *w).collect();
					(id, c.round, c.accused, c.draw_at, committee)
				})
				.collect();
		let salt = (self.attempt, self.attacker as u32);
		for (id, round, account, draw_at, committee) in &open {
			// The randomness the committee was drawn with: the parent hash of its draw's
			// block (set per block by `next_block`).
			let draw = Hash::from(blake2_256(&(salt, *draw_at).encode_pair()));
			let accused = self.peer_of(*account)?;
			// What the accused proved on chain (a challenge disputes a kept contribution:
			// paid, or a copy's claim).
			let paid = pallet_jobs::Contributions::<Test>::get((self.job, *round), account)
				.context("a challenge of a contribution the chain did not keep")?;
			for who in committee {
				if !self.seated.insert((*id, *who)) {
					continue;
				}
				if let Some((_, port)) =
					self.members.iter().find(|m| m.who == *who).and_then(|m| m.desk.as_ref())
				{
					port.assigned.lock().unwrap().push(CheckRequest {
						challenge: *id,
						round: *round,
						accused,
						update: paid.update_commitment.0,
						start_state: paid.start_state.0,
						steps: paid.inner_steps,
						draw,
					});
				}
			}
		}
		self.drive_desks()?;
		self.vote()?;
		self.read_events();
		Ok(())
	}

	/// Commits the desks' verdicts (the Sybil's turned around), then reveals what may be.
	fn vote(&mut self) -> Result<()> {
		for m in &self.members {
			let Some((_, port)) = &m.desk else { continue };
			for (id, verdict) in port.votes.lock().unwrap().drain(..) {
				let verdict = match m.role {
					Role::Attacker(Attacker::SybilVoter) => {
						self.sybil_votes.insert(id);
						self.outcome.attacked = true;
						flip(verdict)
					}
					_ => verdict,
				};
				if mock::commit(m.who, id, verdict).is_ok() {
					self.to_reveal.push((id, m.who, verdict));
				}
			}
		}
		self.to_reveal.sort_by_key(|(_, who, _)| *who != ATTACKER);
		let now = System::block_number();
		let mut left = Vec::new();
		for (id, who, verdict) in std::mem::take(&mut self.to_reveal) {
			match Challenges::<Test>::get(id) {
				Some(c) if c.revealing(now) => {
					let _ = mock::reveal(who, id, verdict);
				}
				Some(_) => left.push((id, who, verdict)),
				None => {}
			}
		}
		self.to_reveal = left;
		Ok(())
	}

	/// Tallies this block's events.
	fn read_events(&mut self) {
		for record in System::events() {
			match record.event {
				RuntimeEvent::Jobs(JobsEvent::AuditOpened { id, round, accused, .. }) => {
					self.outcome.audits += 1;
					self.disputes.insert(id, (round, accused));
				}
				RuntimeEvent::Jobs(JobsEvent::RewardPaid { who, .. }) if HONEST.contains(&who) => {
					self.outcome.honest_contributions += 1;
				}
				RuntimeEvent::Jobs(JobsEvent::ChallengeResolved {
					id,
					accused,
					outcome,
					outvoted,
					..
				}) => self.resolved(id, accused, outcome, outvoted),
				RuntimeEvent::Providers(pallet_providers::Event::Slashed { who, .. })
					if HONEST.contains(&who) =>
				{
					self.outcome.honest_slashed += 1;
				}
				_ => {}
			}
		}
		System::reset_events();
	}

	/// Records how dispute `id` ended.
	fn resolved(&mut self, id: u64, accused: AccountId, outcome: ChallengeOutcome, outvoted: u32) {
		let round = self.disputes.get(&id).map(|(r, _)| *r).unwrap_or_default();
		let cheat = accused == ATTACKER && !self.attacker.trains_honestly() || accused == CHEATER;
		let wrong = match outcome {
			ChallengeOutcome::FraudProven => !cheat,
			ChallengeOutcome::Rejected => cheat,
			ChallengeOutcome::Undecided => false,
		};
		self.outcome.wrong_verdicts += u32::from(wrong);
		let caught = match self.attacker {
			Attacker::GriefingChallenger => {
				self.griefs.contains(&id) && outcome == ChallengeOutcome::Rejected
			}
			Attacker::SybilVoter => self.sybil_votes.contains(&id) && outvoted > 0,
			_ => accused == ATTACKER && outcome == ChallengeOutcome::FraudProven,
		};
		if caught {
			let first = self.outcome.caught_in_round.map_or(round, |r| r.min(round));
			self.outcome.caught_in_round = Some(first);
		}
	}

	fn account_of(&self, peer: &PeerId) -> Result<AccountId> {
		self.members.iter().find(|m| m.peer == *peer).map(|m| m.who).context("unknown peer")
	}

	fn peer_of(&self, who: AccountId) -> Result<PeerId> {
		self.members.iter().find(|m| m.who == who).map(|m| m.peer).context("unknown account")
	}
}

/// The other verdict.
fn flip(verdict: Verdict) -> Verdict {
	match verdict {
		Verdict::Valid => Verdict::Invalid,
		Verdict::Invalid => Verdict::Valid,
	}
}

/// A pair's bytes for hashing.
trait EncodePair {
	fn encode_pair(&self) -> Vec<u8>;
}

impl EncodePair for ((u32, u32), u64) {
	fn encode_pair(&self) -> Vec<u8> {
		let ((a, b), n) = *self;
		[a.to_le_bytes().as_slice(), &b.to_le_bytes(), &n.to_le_bytes()].concat()
	}
}

/// Posts the job: `members` providers needed and allowed, every round's contributions open
/// to challenges and audits, the stake the audits ask for.
fn create_job(members: u32) -> Result<JobId> {
	let mut spec = mock::spec();
	(spec.rounds, spec.min_providers, spec.max_providers) = (ROUNDS, members, members);
	let limits = pallet_jobs::Pallet::<Test>::spec_limits();
	spec.min_provider_stake =
		limits.deterrence.stake_for(spec.reward_per_round).context("audits are on")?;
	let id = pallet_jobs::NextJobId::<Test>::get();
	Jobs::create_job(RuntimeOrigin::signed(mock::BUYER), Box::new(spec), Default::default())
		.map_err(|e| anyhow!("the job is refused: {e:?}"))?;
	Ok(id)
}

/// Provider `who` with a fresh trainer; a fraud desk if it judges (in the attempt `salt`).
fn member(
	setup: &Setup,
	who: AccountId,
	role: Role,
	len: usize,
	seeds: &Arc<Mutex<HashMap<(RoundIndex, PeerId), Hash>>>,
	salt: (u32, u32),
) -> Result<Member> {
	let key = Keypair::ed25519_from_bytes([who as u8; 32]).context("a key")?;
	let peer = key.public().to_peer_id();
	let trainer = InnerTrainer::new(setup.spec, b"job", &Device::Cpu, &setup.inner, setup.config)?;
	let desk = role.judges().then(|| {
		let port = Arc::new(Port {
			seeds: seeds.clone(),
			accused: Mutex::default(),
			assigned: Mutex::default(),
			votes: Mutex::default(),
		});
		let archive = Box::new(MemoryArchive::default());
		// Its private draw of whom to loss-screen: its own in every attempt.
		let secret = blake2_256(&(salt, who).encode_pair());
		let desk = FraudDesk::new(peer, secret, setup.replayer(), archive, ROUNDS + 2)
			.with_gauntlet_peers(setup.screens)
			.with_segment_rate(setup.segments);
		let desk = if setup.committee_traces { desk } else { desk.with_full_committee_replays() };
		(desk, port)
	});
	let layout = Layout::of(&trainer.model().params().manifest());
	debug_assert_eq!(layout.len(), len);
	let compressor = AdaptiveCompressor::new(setup.compression, layout, setup.error_decay)?;
	Ok(Member { who, peer, role, trainer, compressor, desk })
}
