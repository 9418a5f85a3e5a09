use std::{
	sync::Mutex,
	time::{Duration, Instant},
};

use candle_core::Device;
use grid_primitives::{
	job::{InnerOptimizer, MlpConfig, ModelSpec, Nanos},
	Hash,
};

use super::{screen::designated, *};
use crate::{
	compress::Layout,
	data::{Dataset, MnistDataset},
	model::Model,
	round::{evidence::MemoryArchive, fetch::Fetched, messages::update_hash},
	train::InnerConfig,
	work_state::WorkState,
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
	fn report_equivocation(&self, _: crate::round::messages::Equivocation) {}
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
		// Every member of a committee has the same randomness.
		let draw = Hash::repeat_byte(0xd7);
		let request = CheckRequest { challenge, round, accused, update, start_state, steps, draw };
		self.requests.lock().unwrap().push(request);
	}
}

/// The tests' replayer: a small MNIST MLP trained with AdamW, 16 samples a step.
fn test_replayer() -> Replayer {
	let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 8, layers: 1 });
	Replayer {
		spec,
		layout: Layout::of_spec(spec).unwrap(),
		inner: InnerOptimizer::AdamW {
			lr: Nanos(2_000_000),
			weight_decay: Nanos(0),
			warmup_steps: 0,
		},
		config: InnerConfig::default(),
		batch_size: 16,
		error_decay: 0.9,
		max_steps: None,
		catch_up: None,
		dataset: Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap())),
		device: Device::Cpu,
	}
}

/// How each peer answers requests for its start state (and its trajectory).
#[derive(Clone, Copy, PartialEq)]
enum Serves {
	/// What it committed to (what the test holds under the address asked for).
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
	objects: &HashMap<Digest, Vec<u8>>,
	n: usize,
	done: impl Fn(&Recorder) -> bool,
) {
	let start = Instant::now();
	while !done(chain) {
		assert!(start.elapsed() < Duration::from_secs(60), "no finding in time");
		desk.poll(chain);
		for (round, peer, id) in desk.state_requests() {
			let committed = || objects.get(&id).cloned().ok_or_else(|| "not kept".to_string());
			let answer = match serves[&peer] {
				Serves::Committed => committed(),
				Serves::Other => Ok(WorkState { step: 1, ..WorkState::fresh(n, true) }.encode()),
				Serves::Nothing => Err("no work state".to_string()),
			};
			let answer = answer.and_then(|bytes| Fetched::whole(bytes, n));
			desk.state_arrived(round, peer, id, answer, chain);
		}
		std::thread::sleep(Duration::from_millis(5));
	}
}

#[test]
fn noise_is_accused_and_voted_invalid_honest_work_voted_valid() {
	let replayer = test_replayer;
	let spec = replayer().spec;
	let base = Arc::new(Model::new(spec, b"t", &Device::Cpu).unwrap().params().flatten().unwrap());
	let n = base.len();
	let fresh = Arc::new(WorkState::fresh(n, true));
	// Fixed identities: which peer the loss screen picks follows from them, so the test
	// is the same every run.
	let peers: Vec<PeerId> = (1..=6).map(peer_id).collect();
	let (lazy, liar, mute) = (peers[3], peers[4], peers[5]);
	// Two copiers of honest updates: one this desk heard commit, one it did not.
	let (copier, unheard_copier) = (peer_id(7), peer_id(8));
	// This desk is one of the senders, drawn to replay the lazy one and the copier (which
	// of the senders replay a suspect is `designated`'s test).
	let me = judge_among(&peers, 0, &[lazy, copier]);
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
	// What honest senders serve by content address: the start state and their recorded
	// trajectories (the lazy one recorded none).
	let mut objects: HashMap<Digest, Vec<u8>> = HashMap::new();
	objects.insert(fresh.digests().id(), fresh.encode());
	for (i, peer) in peers.iter().enumerate() {
		let seed = Hash::repeat_byte(i as u8 + 1);
		chain.seeds.insert(*peer, seed);
		// Honest updates are what training from the committed (fresh) state gives; the lazy
		// one is noise. The liar and the mute send honest work but will not show the state
		// behind it.
		let (update, root) = if *peer == lazy {
			let noise = (0..n).map(|j| if j % 2 == 0 { 0.01 } else { -0.01 }).collect();
			(CompressedUpdate::None(noise), [0; 32])
		} else {
			let (kept, delta) = train_recorded(&replayer(), &base, &fresh, &seed, 20);
			let (trajectory, served) = crate::trajectory::Trajectory::served(&kept);
			objects.extend(served);
			(CompressedUpdate::None(delta), trajectory.root())
		};
		let start = fresh.digests();
		let update = Arc::new(update);
		received.push(Received { peer: *peer, steps: 20, start, trajectory: root, update });
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
	// No segment checks here: `segment_checks`' test.
	let mut desk = FraudDesk::new(me, [7; 32], replayer(), Box::new(archive.clone()), KEEP_ROUNDS)
		.with_segment_rate(0.0);
	desk.keep_round(0, base.clone(), received, copies, &chain);
	poll_until(&mut desk, &chain, &serves, &objects, n, |c| c.accused.lock().unwrap().len() >= 2);
	let mut accused = chain.accused.lock().unwrap().clone();
	accused.sort();
	let mut expected = vec![(0, lazy), (0, copier)];
	expected.sort();
	assert_eq!(accused, expected, "only the noise and the copy are accused");
	// A challenge of a copy this desk never heard of: it holds the update the chain names
	// (the original's), and the copier's own state and data do not give it.
	chain.request(30, 0, unheard_copier);
	poll_until(&mut desk, &chain, &serves, &objects, n, |c| !c.votes.lock().unwrap().is_empty());
	assert_eq!(chain.votes.lock().unwrap().pop(), Some((30, Verdict::Invalid)));

	// Drawn for a challenge of the update it already judged: the vote is immediate.
	chain.request(7, 0, lazy);
	desk.poll(&chain);
	assert_eq!(*chain.votes.lock().unwrap(), vec![(7, Verdict::Invalid)]);
	// A challenge of honest work is replayed and voted valid.
	chain.request(8, 0, peers[1]);
	poll_until(&mut desk, &chain, &serves, &objects, n, |c| c.votes.lock().unwrap().len() == 2);
	assert_eq!(chain.votes.lock().unwrap()[1], (8, Verdict::Valid));
	// The same honest work is invalid where its proof on chain names another start state
	// or other steps than its commitment did: what was paid is not what replays.
	chain.request_proving(15, 0, peers[1], [0xAB; 32], 20);
	chain.request_proving(16, 0, peers[1], chain.committed, 21);
	desk.poll(&chain);
	assert_eq!(chain.votes.lock().unwrap()[2..], [(15, Verdict::Invalid), (16, Verdict::Invalid)]);
	// Work whose committed start state is not shown, or is not the one committed, is
	// invalid whatever it looks like.
	chain.request(11, 0, liar);
	chain.request(12, 0, mute);
	poll_until(&mut desk, &chain, &serves, &objects, n, |c| c.votes.lock().unwrap().len() == 6);
	let votes = chain.votes.lock().unwrap().clone();
	assert!(votes.contains(&(11, Verdict::Invalid)) && votes.contains(&(12, Verdict::Invalid)));
	// Without the round's evidence there is no vote.
	chain.request(9, 5, peers[1]);
	desk.poll(&chain);
	assert!(desk.state_requests().is_empty(), "round 5 was never kept");
	// Out of memory, round 0 is still in the archive: a challenge of it is judged.
	for round in 1..=MEMORY_ROUNDS as RoundIndex {
		desk.keep_round(round, base.clone(), Vec::new(), Vec::new(), &chain);
	}
	chain.request(10, 0, peers[2]);
	poll_until(&mut desk, &chain, &serves, &objects, n, |c| c.votes.lock().unwrap().len() == 7);
	assert_eq!(chain.votes.lock().unwrap()[6], (10, Verdict::Valid));
	// A restarted trainer (nothing in memory, the same archive) judges it too.
	let mut restarted =
		FraudDesk::new(me, [7; 32], replayer(), Box::new(archive.clone()), KEEP_ROUNDS)
			.with_segment_rate(0.0);
	chain.request(14, 0, lazy);
	poll_until(&mut restarted, &chain, &serves, &objects, n, |c| {
		c.votes.lock().unwrap().len() == 8
	});
	assert_eq!(chain.votes.lock().unwrap()[7], (14, Verdict::Invalid));
	// Once round 0 can no longer be challenged, its evidence is gone.
	for round in MEMORY_ROUNDS as RoundIndex + 1..=KEEP_ROUNDS {
		desk.keep_round(round, base.clone(), Vec::new(), Vec::new(), &chain);
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
	// A trainer that sent nothing this round leaves a suspect to the senders drawn, unless
	// the round has too few other senders to draw two.
	let outsider = peer_id(9);
	assert!(peers.iter().all(|suspect| !designated(&outsider, 0, &peers, suspect)));
	assert!(designated(&outsider, 0, &peers[..2], &peers[0]), "one other sender");
	assert!(designated(&outsider, 0, &peers[..1], &peers[0]), "a lone sender");
	assert!(!designated(&outsider, 0, &peers[..3], &peers[0]), "two others suffice");
}

#[test]
fn of_a_suspect_every_trainer_flags_only_the_senders_drawn_replay_it() {
	// Four updates of a round, one short next to the others (a suspect every desk flags).
	let n = 8;
	let unit = |k: usize| (0..n).map(|j| if j == k { 1.0 } else { 0.0 }).collect::<Vec<f32>>();
	let mut updates = vec![unit(0), unit(1), unit(2)];
	updates.push(unit(3).iter().map(|v| v * 0.5).collect());
	let peers: Vec<PeerId> = (1..=4).map(peer_id).collect();
	let received: Vec<Received> = peers
		.iter()
		.zip(updates)
		.map(|(peer, update)| Received {
			peer: *peer,
			steps: 10,
			start: WorkState::fresh(n, true).digests(),
			trajectory: [0; 32],
			update: Arc::new(CompressedUpdate::None(update)),
		})
		.collect();
	let suspect = (0, peers[3]);
	let chain = Recorder::default();
	let base = Arc::new(vec![0.0; n]);
	let replays = |me: PeerId| {
		let mut desk = FraudDesk::new(
			me,
			[7; 32],
			test_replayer(),
			Box::new(MemoryArchive::default()),
			KEEP_ROUNDS,
		)
		.with_gauntlet_peers(0)
		.with_segment_rate(0.0);
		desk.keep_round(0, base.clone(), received.clone(), Vec::new(), &chain);
		desk.states.contains_key(&suspect)
	};
	let replayers: Vec<&PeerId> = peers.iter().filter(|me| replays(**me)).collect();
	assert_eq!(replayers.len(), REPLAYERS, "{replayers:?}");
	assert!(replayers.iter().all(|me| designated(me, 0, &peers, &peers[3])));
	// Not among the aggregated senders (it sent nothing, or was left out): three others
	// can be drawn from, so it leaves the suspect to them.
	assert!(!replays(peer_id(9)), "an outsider replays nothing the senders can");
}

#[test]
fn challengeable_rounds_cover_the_window_and_the_vote() {
	// A 20-block window and a 600-block vote at 10 blocks a round: the round itself and
	// 62 after it.
	assert_eq!(challengeable_rounds(20, 600, 10), 63);
	assert_eq!(challengeable_rounds(0, 600, 7), 87);
	assert_eq!(challengeable_rounds(u32::MAX, 600, 0), u32::MAX);
}

/// What a peer trained in a test round: its recorded states and its pseudo-gradient.
fn train_recorded(
	replayer: &Replayer,
	base: &[f32],
	start: &WorkState,
	seed: &Hash,
	steps: u32,
) -> (Vec<(u32, crate::trajectory::StepState)>, Vec<f32>) {
	train_recorded_from(replayer, base, None, start, seed, steps)
}

/// [`train_recorded`] for a round whose first steps trained from `from` and then caught up
/// with `base` at the replayer's catch-up step (blocking from `base` without `from`).
fn train_recorded_from(
	replayer: &Replayer,
	base: &[f32],
	from: Option<&[f32]>,
	start: &WorkState,
	seed: &Hash,
	steps: u32,
) -> (Vec<(u32, crate::trajectory::StepState)>, Vec<f32>) {
	use crate::{
		data::batch_indices,
		diloco::{train_from, RoundStart},
		train::InnerTrainer,
		trajectory::Recorder as Trajectories,
	};
	let (spec, inner, data) = (replayer.spec, replayer.inner, replayer.dataset.clone());
	let mut trainer =
		InnerTrainer::new(spec, b"x", &Device::Cpu, &inner, InnerConfig::default()).unwrap();
	trainer.restore(start).unwrap();
	let batches = (0..u64::from(steps))
		.map(|t| data.train_batch(&batch_indices(seed, t, 16, data.train_len()), &Device::Cpu));
	let round_start = match (from, replayer.catch_up) {
		(Some(from), Some(catch_up)) => {
			let current = base.to_vec();
			RoundStart::CatchingUp { from, catch_up, current: Box::new(move || Ok(current)) }
		}
		_ => RoundStart::Base(base),
	};
	// The weights its first step trained from: the recorder keeps that start uncopied.
	let first = match &round_start {
		RoundStart::CatchingUp { from, .. } => *from,
		RoundStart::Base(base) => *base,
	};
	let mut recorder = Trajectories::new(base.len());
	let local =
		train_from(&mut trainer, round_start, batches, |at, t| recorder.observe(at, t)).unwrap();
	let recorded = recorder.finish(steps, &trainer).unwrap();
	let kept = recorded.into_iter().map(|(at, r)| (at, r.into_state(first, start))).collect();
	(kept, local.delta)
}

/// A desk's key that is no designated replayer of any of `peers` in `round` (it sends
/// too), so its own screens leave whatever they flag to the committee.
fn bystander(peers: &[PeerId], round: RoundIndex) -> PeerId {
	(10..=255u8)
		.map(peer_id)
		.find(|me| {
			let order: Vec<PeerId> = peers.iter().copied().chain([*me]).collect();
			peers.iter().all(|p| !designated(me, round, &order, p))
		})
		.expect("some key replays none of them")
}

/// A sender among `peers` drawn to replay every one of `suspects` in `round`: a desk whose
/// screens' flags it replays itself.
fn judge_among(peers: &[PeerId], round: RoundIndex, suspects: &[PeerId]) -> PeerId {
	*peers
		.iter()
		.find(|me| suspects.iter().all(|s| designated(me, round, peers, s)))
		.expect("a sender drawn for all of them")
}

/// Answers the desk's requests from `objects` (what peers serve, by content address) and
/// polls until no check is under way.
fn serve_until_idle(
	desk: &mut FraudDesk,
	chain: &Recorder,
	objects: &HashMap<Digest, Vec<u8>>,
	len: usize,
) {
	let start = Instant::now();
	while desk.busy() || start.elapsed() < Duration::from_millis(50) {
		assert!(start.elapsed() < Duration::from_secs(60), "no finding in time");
		desk.poll(chain);
		for (round, peer, id) in desk.state_requests() {
			let answer = objects.get(&id).cloned().ok_or_else(|| "not served".to_string());
			let answer = answer.and_then(|bytes| Fetched::whole(bytes, len));
			desk.state_arrived(round, peer, id, answer, chain);
		}
		std::thread::sleep(Duration::from_millis(5));
	}
}

#[test]
fn segment_checks_clear_honest_rounds_and_accuse_training_on_other_data() {
	use crate::trajectory::Trajectory;
	let replayer = test_replayer();
	let base = Model::new(replayer.spec, b"t", &Device::Cpu).unwrap().params().flatten().unwrap();
	let n = base.len();
	let fresh = WorkState::fresh(n, true);
	let steps = 12u32;
	let peers: Vec<PeerId> = (1..=5).map(peer_id).collect();
	// Peer 1 trains on other data than it was given; peer 3 trains honestly but serves no
	// trajectory; the rest are honest.
	let (other_data, unrecorded) = (peers[1], peers[3]);
	let mut chain = Recorder { committed: fresh.digests().id(), ..Recorder::default() };
	let mut objects: HashMap<Digest, Vec<u8>> = HashMap::new();
	objects.insert(fresh.digests().id(), fresh.encode());
	let mut received = Vec::new();
	for (i, peer) in peers.iter().enumerate() {
		let seed = Hash::repeat_byte(0x30 + i as u8);
		chain.seeds.insert(*peer, seed);
		let trained_on = if *peer == other_data { Hash::repeat_byte(0xee) } else { seed };
		let (kept, delta) = train_recorded(&replayer, &base, &fresh, &trained_on, steps);
		let (trajectory, served) = Trajectory::served(&kept);
		if *peer != unrecorded {
			objects.extend(served);
		}
		let update = Arc::new(CompressedUpdate::None(delta));
		received.push(Received {
			peer: *peer,
			steps,
			start: fresh.digests(),
			trajectory: trajectory.root(),
			update,
		});
	}
	// A desk that sent nothing this round and segment-checks every peer, with no loss
	// screens: what it finds is the segment checks' (and the full replays they call for).
	let me = peer_id(9);
	let mut desk =
		FraudDesk::new(me, [7; 32], replayer, Box::new(MemoryArchive::default()), KEEP_ROUNDS)
			.with_gauntlet_peers(0)
			.with_segment_rate(peers.len() as f64);
	desk.keep_round(0, Arc::new(base.clone()), received, Vec::new(), &chain);
	serve_until_idle(&mut desk, &chain, &objects, n);
	assert_eq!(*chain.accused.lock().unwrap(), vec![(0, other_data)], "only other data");
	// Every recorded peer had one gap (of one step: twelve steps keep every state) redone.
	assert_eq!(desk.costs().segment_steps, 4);
	// The peer that served no trajectory is not replayed yet (a crashed trainer serves again
	// once restarted): it is asked again next round.
	let unserved = |desk: &FraudDesk| {
		matches!(desk.segments.get(&(0, unrecorded)), Some(SegmentCheck::Unserved { .. }))
	};
	assert!(unserved(&desk) && !desk.states.contains_key(&(0, unrecorded)));
	// Still nothing a round later; once it served nothing for the patience's rounds its
	// update is replayed in full, held to the end its trajectory root names, which it does
	// not show: without it the update sent says nothing of its training (a forged residual
	// replays as valid), so the update is invalid and accused.
	for round in 1..=SEGMENT_PATIENCE {
		assert!(unserved(&desk), "round {round}");
		desk.keep_round(round, Arc::new(base.clone()), Vec::new(), Vec::new(), &chain);
		serve_until_idle(&mut desk, &chain, &objects, n);
	}
	let replayed = desk.states.get(&(0, unrecorded));
	assert!(matches!(replayed, Some(CheckState::Done(Verdict::Invalid))), "{unrecorded}");
	assert_eq!(*chain.accused.lock().unwrap(), vec![(0, other_data), (0, unrecorded)]);
	assert_eq!(desk.costs().replay_steps, 12, "other data's, replayed before it was accused");
}

#[test]
fn committees_clear_honest_claims_by_a_segment_and_replay_the_rest_in_full() {
	use crate::trajectory::{StepState, Trajectory};
	let replayer = test_replayer();
	let base = Model::new(replayer.spec, b"t", &Device::Cpu).unwrap().params().flatten().unwrap();
	let n = base.len();
	let fresh = WorkState::fresh(n, true);
	let steps = 12u32;
	let peers: Vec<PeerId> = (1..=4).map(peer_id).collect();
	// Honest; honest steps recorded but another update sent (trained on other data);
	// noise sent with a forged trajectory from the committed start to an end that gives
	// exactly that noise; honest but serving no trajectory.
	let (honest, swapped, forged, unrecorded) = (peers[0], peers[1], peers[2], peers[3]);
	// The desk is one of the round's senders but no designated replayer of the others, so
	// whatever its screens flag it leaves to the committee.
	let me = bystander(&peers, 0);
	let mut chain = Recorder { committed: fresh.digests().id(), ..Recorder::default() };
	let mut objects: HashMap<Digest, Vec<u8>> = HashMap::new();
	objects.insert(fresh.digests().id(), fresh.encode());
	let mut received = Vec::new();
	for (i, peer) in peers.iter().chain([&me]).enumerate() {
		let seed = Hash::repeat_byte(0x40 + i as u8);
		chain.seeds.insert(*peer, seed);
		let (mut kept, mut delta) = train_recorded(&replayer, &base, &fresh, &seed, steps);
		if *peer == swapped {
			delta = train_recorded(&replayer, &base, &fresh, &Hash::repeat_byte(0xee), steps).1;
		}
		if *peer == forged {
			let noise: Vec<f32> = (0..n).map(|j| 1e-3 * ((j * 7919 % 13) as f32 - 6.0)).collect();
			kept = (0..=steps)
				.map(|at| {
					let share = at as f32 / steps as f32;
					let params = base.iter().zip(&noise).map(|(b, z)| b - share * z).collect();
					let state = StepState::at_start(&base, &fresh);
					(at, StepState { params, step: fresh.step + u64::from(at), ..state })
				})
				.collect();
			delta = noise;
		}
		let (trajectory, served) = Trajectory::served(&kept);
		if *peer != unrecorded {
			objects.extend(served);
		}
		let update = Arc::new(CompressedUpdate::None(delta));
		chain.proved.insert(*peer, update_hash(&update.encode()));
		let (start, root) = (fresh.digests(), trajectory.root());
		received.push(Received { peer: *peer, steps, start, trajectory: root, update });
	}
	let mut desk =
		FraudDesk::new(me, [7; 32], replayer, Box::new(MemoryArchive::default()), KEEP_ROUNDS)
			.with_gauntlet_peers(0)
			.with_segment_rate(0.0);
	desk.keep_round(0, Arc::new(base.clone()), received, Vec::new(), &chain);
	serve_until_idle(&mut desk, &chain, &objects, n);
	assert!(chain.accused.lock().unwrap().is_empty(), "its own screens replayed none");
	// Each challenge alone: its verdict, and the steps the committee member redid.
	let mut judge = |challenge: u64, accused: PeerId| {
		let before = desk.costs().committee_steps;
		chain.request_proving(challenge, 0, accused, chain.committed, steps);
		serve_until_idle(&mut desk, &chain, &objects, n);
		let vote = chain.votes.lock().unwrap().pop().expect("a vote");
		assert_eq!(vote.0, challenge);
		(vote.1, desk.costs().committee_steps - before)
	};
	// Honest work is cleared by one step redone (and its two ends checked), not twelve.
	assert_eq!(judge(1, honest), (Verdict::Valid, 1));
	// An end that does not give the update sent, and steps that do not redo, each send the
	// claim to a full replay, which refutes it.
	assert_eq!(judge(2, swapped), (Verdict::Invalid, 1 + 12));
	assert_eq!(judge(3, forged), (Verdict::Invalid, 1 + 12));
	// A sender serving no trajectory cannot show the end a full replay is held to: invalid,
	// with no step redone.
	assert_eq!(judge(4, unrecorded), (Verdict::Invalid, 0));
	assert_eq!(desk.costs().replay_steps, 0, "the member's own replays are counted apart");
}

/// In a job whose rounds overlap, a committee member judges a challenged round as its
/// sender may have run it: overlapped from the round before's base, or blocking (after a
/// restart or a join); a round whose first steps started anywhere else (an attacker's own
/// start, which carries a vector of its choice into its update) is refuted. A member
/// without the round before's evidence (it joined since) cannot tell and does not vote.
#[test]
fn committees_of_an_overlapping_job_judge_a_round_as_it_ran() {
	use crate::{diloco::CatchUp, trajectory::Trajectory};
	let replayer = Replayer { catch_up: Some(CatchUp::new(4).unwrap()), ..test_replayer() };
	let previous =
		Model::new(replayer.spec, b"t", &Device::Cpu).unwrap().params().flatten().unwrap();
	let moved = |scale: f32| -> Vec<f32> {
		previous.iter().enumerate().map(|(i, x)| x + scale * ((i % 5) as f32 - 2.0)).collect()
	};
	let (base, own_start) = (moved(0.02), moved(0.5));
	let n = base.len();
	let fresh = WorkState::fresh(n, true);
	let steps = 12u32;
	let peers: Vec<PeerId> = (1..=3).map(peer_id).collect();
	let starts = [Some(&previous[..]), None, Some(&own_start[..])];
	let me = bystander(&peers, 1);
	let mut chain = Recorder { committed: fresh.digests().id(), ..Recorder::default() };
	let mut objects: HashMap<Digest, Vec<u8>> = HashMap::new();
	objects.insert(fresh.digests().id(), fresh.encode());
	let mut received = Vec::new();
	for (i, (peer, from)) in peers.iter().zip(starts).enumerate() {
		let seed = Hash::repeat_byte(0x60 + i as u8);
		chain.seeds.insert(*peer, seed);
		let (kept, delta) = train_recorded_from(&replayer, &base, from, &fresh, &seed, steps);
		let (trajectory, served) = Trajectory::served(&kept);
		objects.extend(served);
		let update = Arc::new(CompressedUpdate::None(delta));
		chain.proved.insert(*peer, update_hash(&update.encode()));
		let (start, root) = (fresh.digests(), trajectory.root());
		received.push(Received { peer: *peer, steps, start, trajectory: root, update });
	}
	let desk = |rounds: &[RoundIndex]| {
		let archive = Box::new(MemoryArchive::default());
		let mut desk = FraudDesk::new(me, [7; 32], replayer.clone(), archive, KEEP_ROUNDS)
			.with_gauntlet_peers(0)
			.with_segment_rate(0.0);
		for round in rounds {
			let (base, received) = match round {
				0 => (&previous, Vec::new()),
				_ => (&base, received.clone()),
			};
			desk.keep_round(*round, Arc::new(base.clone()), received, Vec::new(), &chain);
		}
		desk
	};
	let judge = |desk: &mut FraudDesk, challenge: u64, accused: PeerId| {
		chain.request_proving(challenge, 1, accused, chain.committed, steps);
		serve_until_idle(desk, &chain, &objects, base.len());
		chain.votes.lock().unwrap().pop()
	};
	let mut member = desk(&[0, 1]);
	let expected = [Verdict::Valid, Verdict::Valid, Verdict::Invalid];
	for (i, (peer, verdict)) in peers.iter().zip(expected).enumerate() {
		let challenge = i as u64 + 1;
		assert_eq!(judge(&mut member, challenge, *peer), Some((challenge, verdict)), "peer {i}");
	}
	let mut joiner = desk(&[1]);
	assert_eq!(judge(&mut joiner, 9, peers[0]), None, "a member that joined at round 1");
	assert!(chain.accused.lock().unwrap().is_empty(), "challenges are voted, not accused");
}

#[test]
fn memory_holds_the_rounds_checks_under_way_read_and_overlapped_rounds_the_last_two() {
	let replayer = test_replayer();
	let base = Model::new(replayer.spec, b"t", &Device::Cpu).unwrap().params().flatten().unwrap();
	let (base, n) = (Arc::new(base.clone()), base.len());
	let fresh = WorkState::fresh(n, true);
	let mut chain = Recorder { committed: fresh.digests().id(), ..Recorder::default() };
	let sender = peer_id(1);
	let update = Arc::new(CompressedUpdate::None(vec![0.0; n]));
	chain.proved.insert(sender, update_hash(&update.encode()));
	let received = vec![Received {
		peer: sender,
		steps: 4,
		start: fresh.digests(),
		trajectory: [1; 32],
		update,
	}];
	// Round 0's sender is segment-checked, and does not answer yet: the check stays under
	// way while four more rounds are kept.
	let mut desk = FraudDesk::new(
		peer_id(9),
		[7; 32],
		replayer,
		Box::new(MemoryArchive::default()),
		10, // rounds of evidence kept: round 0 stays challengeable throughout
	)
	.with_gauntlet_peers(0)
	.with_segment_rate(1.0);
	desk.keep_round(0, base.clone(), received, Vec::new(), &chain);
	let asked = desk.state_requests();
	assert_eq!(asked, vec![(0, sender, [1; 32])], "its trajectory is asked for");
	desk.segment_rate = 0.0;
	for round in 1..=4 {
		desk.keep_round(round, base.clone(), Vec::new(), Vec::new(), &chain);
	}
	// Where rounds block, only a round a check reads stays in memory: the latest round's
	// base is the archive's (and, in the daemon, the global state's) already.
	assert_eq!(desk.rounds_held(), vec![0], "the round being checked");
	// A sender that serves nothing is asked again each round (up to `SEGMENT_PATIENCE`):
	// the check is still under way, and its round stays.
	for _ in 0..MAX_STATE_TRIES {
		desk.state_arrived(0, sender, [1; 32], Err("gone".to_string()), &chain);
	}
	desk.state_requests();
	desk.keep_round(5, base.clone(), Vec::new(), Vec::new(), &chain);
	assert_eq!(
		desk.state_requests(),
		vec![(0, sender, [1; 32])],
		"unserved since round 4, the latest kept though not held: asked again at round 5"
	);
	assert_eq!(desk.rounds_held(), vec![0]);
	// Once no check reads it (here the check is dropped; how checks end is the tests
	// above), round 0 goes from memory at the next round, and stays in the archive.
	desk.segments.clear();
	desk.keep_round(6, base.clone(), Vec::new(), Vec::new(), &chain);
	assert!(desk.rounds_held().is_empty(), "{:?}", desk.rounds_held());
	assert_eq!(desk.evidence(0).map(|e| e.round), Some(0), "from the archive");
	// A challenge of round 0 brings it back for its check, which reads it several times;
	// once decided, it goes again.
	chain.request_proving(1, 0, sender, chain.committed, 4);
	desk.poll(&chain);
	assert_eq!(desk.rounds_held(), vec![0]);
	desk.state_arrived(0, sender, fresh.digests().id(), Err("gone".to_string()), &chain);
	desk.state_arrived(0, sender, fresh.digests().id(), Err("gone".to_string()), &chain);
	desk.state_arrived(0, sender, fresh.digests().id(), Err("gone".to_string()), &chain);
	assert_eq!(chain.votes.lock().unwrap().pop(), Some((1, Verdict::Invalid)), "nothing shown");
	desk.keep_round(7, base.clone(), Vec::new(), Vec::new(), &chain);
	assert!(desk.rounds_held().is_empty(), "{:?}", desk.rounds_held());

	// Where rounds overlap, a round's first steps trained from the round before's base:
	// both stay.
	let overlapping =
		Replayer { catch_up: Some(crate::diloco::CatchUp::new(4).unwrap()), ..test_replayer() };
	let archive = Box::new(MemoryArchive::default());
	let mut desk = FraudDesk::new(peer_id(9), [7; 32], overlapping, archive, 10)
		.with_gauntlet_peers(0)
		.with_segment_rate(0.0);
	for round in 0..4 {
		desk.keep_round(round, base.clone(), Vec::new(), Vec::new(), &chain);
	}
	assert_eq!(desk.rounds_held(), vec![2, 3]);
}
