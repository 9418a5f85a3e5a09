use std::sync::Arc;

use candle_core::Device;
use grid_primitives::{
	job::{Compression, InnerOptimizer, MlpConfig, ModelSpec, Nanos},
	work::Verdict,
	Hash,
};

use super::*;
use crate::{
	compress::{
		adaptive::{compress_once, corrected, AdaptiveCompressor},
		CompressedUpdate, Layout,
	},
	compute_gate::{ComputeGate, Turn},
	data::{batch_indices, Dataset, MnistDataset},
	diloco::{train_round, OuterOptimizer},
	model::Model,
	rng::Rng,
	train::{InnerConfig, InnerTrainer},
	trajectory::{StepState, Trajectory},
	work_state::WorkState,
};

/// The Gram matrix of dense updates.
fn gram(updates: &[&[f32]]) -> Gram {
	let sent: Vec<CompressedUpdate> =
		updates.iter().map(|u| CompressedUpdate::None(u.to_vec())).collect();
	Gram::of(&sent.iter().collect::<Vec<_>>()).unwrap()
}

#[test]
fn cosines_and_suspects() {
	assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-12);
	assert!(cosine(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-12);
	assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
	let a = [1.0f32, 1.0, 0.0];
	let b = [1.0f32, 0.8, 0.1];
	let c = [0.9f32, 1.1, -0.1];
	let odd = [0.0f32, 0.0, 5.0];
	assert!(suspects(&gram(&[&a, &b])).is_empty(), "two updates cannot be told apart");
	assert!(suspects(&gram(&[&a, &b, &c])).is_empty());
	let found = suspects(&gram(&[&a, &odd, &b, &c]));
	assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), vec![1]);
}

fn replayer(data: &Arc<Dataset>, spec: ModelSpec, inner: InnerOptimizer) -> Replayer {
	Replayer {
		spec,
		layout: Layout::of_spec(spec).unwrap(),
		inner,
		config: InnerConfig { total_steps: 400, ..Default::default() },
		batch_size: 32,
		error_decay: 0.9,
		max_steps: Some(100),
		catch_up: None,
		dataset: data.clone(),
		device: Device::Cpu,
	}
}

/// One participant as the daemon runs it: a trainer whose optimizer state persists and
/// an adaptive compressor whose error feedback does.
struct Worker {
	trainer: InnerTrainer,
	compressor: AdaptiveCompressor,
}

impl Worker {
	fn start_state(&self) -> WorkState {
		self.trainer.snapshot(self.compressor.residual().to_vec()).unwrap()
	}

	/// Trains `steps` from `base` on `seed`'s batches; returns (raw Δ, sent update).
	fn round(&mut self, rep: &Replayer, base: &[f32], seed: Hash, steps: u32) -> Vec<f32> {
		let data = &rep.dataset;
		let batches = (0..u64::from(steps)).map(|i| {
			data.train_batch(&batch_indices(&seed, i, 32, data.train_len()), &Device::Cpu)
		});
		train_round(&mut self.trainer, base, batches).unwrap().delta
	}
}

fn worker(rep: &Replayer, compression: Compression) -> Worker {
	Worker {
		trainer: InnerTrainer::new(rep.spec, b"job", &Device::Cpu, &rep.inner, rep.config).unwrap(),
		compressor: AdaptiveCompressor::new(compression, rep.layout.clone(), rep.error_decay)
			.unwrap(),
	}
}

/// Three honest participants train three DiLoCo rounds on MNIST (optimizer state and
/// error feedback carried over, as in a job). In the last round every honest update is
/// judged from its sender's committed start state, and so is each attacker's, who
/// commits participant 0's true start state and seed but sends something else.
fn honest_and_attackers(compression: Compression) -> Vec<(&'static str, Judgement, Verdict)> {
	let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 64, layers: 1 });
	let inner =
		InnerOptimizer::AdamW { lr: Nanos(2_000_000), weight_decay: Nanos(0), warmup_steps: 5 };
	let data = Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()));
	let rep = replayer(&data, spec, inner);
	let model = Model::new(spec, b"job", &Device::Cpu).unwrap();
	let mut global = model.params().flatten().unwrap();
	let n = global.len();
	let mut people: Vec<Worker> = (0..3).map(|_| worker(&rep, compression)).collect();
	let mut outer = OuterOptimizer::new(0.7, 0.5, n);
	let steps = 40u32;
	let mut previous_mean = vec![0f32; n];
	let seed_of = |round: u8, p: usize| Hash::repeat_byte(16 * round + p as u8 + 1);
	let mut found = Vec::new();
	for round in 0..3u8 {
		let base = Arc::new(global.clone());
		let mut claims = Vec::new();
		let mut corrections = Vec::new();
		for (p, person) in people.iter_mut().enumerate() {
			let start = Arc::new(person.start_state());
			let seed = seed_of(round, p);
			let delta = person.round(&rep, &base, seed, steps);
			corrections.push(corrected(&delta, &start.residual, rep.error_decay));
			let (sent, _, _) = person.compressor.compress(&delta, None).unwrap();
			claims.push(Claim {
				base: base.clone(),
				start,
				sent: Arc::new(sent),
				seed,
				steps,
				from: None,
			});
		}
		let mean: Vec<f32> = (0..n)
			.map(|j| claims.iter().map(|c| c.sent.decompress()[j]).sum::<f32>() / 3.0)
			.collect();
		if round < 2 {
			outer.step(&mut global, &mean).unwrap();
			previous_mean = mean;
			continue;
		}
		for claim in &claims {
			let j = rep.judge(claim).unwrap();
			found.push(("honest", j, j.verdict));
		}
		let me = &claims[0];
		let scheme = me.sent.scheme();
		let send = |values: &[f32]| Arc::new(compress_once(&scheme, &rep.layout, values).unwrap());
		let scaled = |v: &[f32], k: f32| v.iter().map(|x| x * k).collect::<Vec<f32>>();
		let mut rng = Rng::new(7);
		let noise: Vec<f32> = (0..n).map(|_| rng.normal() as f32).collect();
		let norm = |v: &[f32]| crate::aggregate::norm(v) as f32;
		let noise = scaled(&noise, norm(&corrections[0]) / norm(&noise));
		let other = &corrections[1];
		let noised: Vec<f32> = other.iter().zip(&noise).map(|(o, z)| o + 0.3 * z).collect();
		// Trained from the committed state, but on other data or for fewer steps.
		let retrain = |seed: Hash, ran: u32| {
			let mut w = worker(&rep, compression);
			w.trainer.restore(me.start.as_ref()).unwrap();
			w.compressor.set_residual(me.start.residual.clone()).unwrap();
			let delta = w.round(&rep, &base, seed, ran);
			Arc::new(w.compressor.compress(&delta, None).unwrap().0)
		};
		let attacks = [
			("lazy: noise", send(&noise)),
			("exact copy", claims[1].sent.clone()),
			("scaled copy", send(&scaled(other, 1.5))),
			("noised copy", send(&noised)),
			("previous aggregate", send(&scaled(&previous_mean, 1.0))),
			("wrong data", retrain(Hash::repeat_byte(0xee), steps)),
			("inflated steps (ran 3/4)", retrain(me.seed, steps * 3 / 4)),
		];
		let honest: Vec<Vec<f32>> = claims.iter().map(|c| c.sent.decompress()).collect();
		for (name, sent) in attacks {
			let j = rep.judge(&Claim { sent: sent.clone(), ..me.clone() }).unwrap();
			found.push((name, j, j.verdict));
			// The copy screen: the attacker's update among the other two honest ones.
			let copy = sent.decompress();
			let round_updates = [copy.as_slice(), &honest[1], &honest[2]];
			let flagged: Vec<usize> =
				copy_suspects(&gram(&round_updates)).into_iter().map(|(i, _)| i).collect();
			let to_original = cosine(&copy, &honest[1]);
			eprintln!(
				"{compression:?}: {name}: cosine {to_original:.3} to participant 1's update, \
				 copy screen flags {flagged:?}"
			);
			let caught = name.contains("copy")
				&& !(name == "noised copy"
					&& matches!(compression, Compression::TopK { .. } | Compression::Tiles { .. }));
			if caught {
				assert_eq!(flagged, vec![0, 1], "{compression:?}: {name} and its original");
			}
		}
		let over = Claim { steps: 101, ..me.clone() };
		let j = rep.judge(&over).unwrap();
		found.push(("claims over the job's cap", j, j.verdict));
		let updates: Vec<&[f32]> = honest.iter().map(Vec::as_slice).collect();
		assert!(suspects(&gram(&updates)).is_empty(), "honest updates are not suspects");
		let closest = (0..3)
			.flat_map(|i| (i + 1..3).map(move |j| (i, j)))
			.map(|(i, j)| cosine(updates[i], updates[j]))
			.fold(f64::MIN, f64::max);
		eprintln!("{compression:?}: closest honest pair: cosine {closest:.3}");
		assert!(copy_suspects(&gram(&updates)).is_empty(), "honest updates are not copies");
	}
	found
}

#[test]
fn exact_replays_accept_honest_work_and_refuse_every_attacker() {
	for compression in [
		Compression::Int8 { chunk: 256 },
		Compression::TopK { chunk: 64, k: 8, value_bits: 2 },
		Compression::Tiles { k: 256 },
	] {
		let found = honest_and_attackers(compression);
		for (name, cosine, verdict) in &found {
			eprintln!("{compression:?}: {name}: {cosine:?} -> {verdict:?}");
		}
		for (name, cosine, verdict) in found {
			let expected = if name == "honest" { Verdict::Valid } else { Verdict::Invalid };
			assert_eq!(verdict, expected, "{compression:?}: {name} at {cosine:?}");
		}
	}
}

/// A replayer of a tiny MLP, and that model's initial parameters.
fn tiny() -> (Replayer, Arc<Vec<f32>>) {
	let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 8, layers: 1 });
	let inner =
		InnerOptimizer::AdamW { lr: Nanos(2_000_000), weight_decay: Nanos(0), warmup_steps: 0 };
	let data = Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()));
	let base = Model::new(spec, b"x", &Device::Cpu).unwrap().params().flatten().unwrap();
	(replayer(&data, spec, inner), Arc::new(base))
}

/// A claim of `steps` on the tiny model whose update is `values`.
fn tiny_claim(base: &Arc<Vec<f32>>, values: Vec<f32>, steps: u32) -> Claim {
	Claim {
		base: base.clone(),
		start: Arc::new(WorkState::fresh(base.len(), true)),
		sent: Arc::new(CompressedUpdate::None(values)),
		seed: Hash::zero(),
		steps,
		from: None,
	}
}

#[test]
fn an_update_shorter_than_its_peers_is_a_suspect() {
	let a = [1.0f32, 0.0, 0.0];
	let b = [0.0f32, 1.0, 0.0];
	let c = [0.0f32, 0.0, 1.0];
	let short = [0.0f32, 0.6, 0.6];
	let same = [10; 4];
	assert!(short_suspects(&gram(&[&a, &b]), &same[..2]).is_empty(), "two cannot be told apart");
	assert!(short_suspects(&gram(&[&a, &b, &c]), &same[..3]).is_empty());
	let found = short_suspects(&gram(&[&a, &b, &c, &short]), &same);
	assert_eq!(found.len(), 1);
	assert_eq!(found[0].0, 3);
	assert!((found[0].1 - 0.6 * 2f64.sqrt()).abs() < 1e-6);
}

#[test]
fn an_honest_update_of_fewer_steps_is_not_taken_for_a_short_one() {
	let a = [1.0f32, 0.0, 0.0];
	let b = [0.0f32, 1.0, 0.0];
	let c = [0.0f32, 0.0, 1.0];
	// A norm of about 0.85 of its peers': 6 steps claimed of their 10 (a slower machine) is
	// honest (more than the 0.6 a linear growth gives).
	let slow = [0.0f32, 0.6, 0.6];
	let updates = gram(&[&a, &b, &c, &slow]);
	assert!(short_suspects(&updates, &[10, 10, 10, 6]).is_empty());
	// The same update claiming 10 steps: shorter than 0.85 of its peers'.
	assert_eq!(short_suspects(&updates, &[10, 10, 10, 10])[0].0, 3);
	// Claiming more steps than the others is held to their whole norm, not scaled up.
	assert_eq!(short_suspects(&updates, &[10, 10, 10, 40])[0].0, 3);
	// Half of what 3 steps of 10 give by a linear growth: lazy even for its few steps.
	let lazy = [0.0f32, 0.1, 0.1];
	let found = short_suspects(&gram(&[&a, &b, &c, &lazy]), &[10, 10, 10, 3]);
	assert_eq!(found.len(), 1);
	assert!((found[0].1 - 0.1 * 2f64.sqrt() / 0.3).abs() < 1e-6);
}

#[test]
fn the_copy_screen_finds_a_copy_among_updates_that_are_all_close() {
	// Honest updates of a first round all from one fresh state: a shared direction and
	// their own parts, pairwise at about 0.91.
	let n = 4000;
	let mut rng = Rng::new(3);
	let mut draw =
		|scale: f64| -> Vec<f32> { (0..n).map(|_| (rng.normal() * scale) as f32).collect() };
	let shared = draw(1.0);
	let honest: Vec<Vec<f32>> =
		(0..4).map(|_| shared.iter().zip(draw(0.31)).map(|(s, e)| s + e).collect()).collect();
	let refs: Vec<&[f32]> = honest.iter().map(Vec::as_slice).collect();
	assert!(cosine(refs[0], refs[1]) > COPY_COSINE, "as close as copies used to be");
	assert!(copy_suspects(&gram(&refs)).is_empty(), "honest updates close to each other");
	// A copy of participant 1's update with noise of 0.3 times its norm stands out.
	let norm = crate::aggregate::norm(&honest[1]);
	let noise = draw(0.3 * norm / (n as f64).sqrt());
	let copy: Vec<f32> = honest[1].iter().zip(&noise).map(|(u, z)| u + z).collect();
	let mut with_copy = refs.clone();
	with_copy.push(&copy);
	let flagged: Vec<usize> =
		copy_suspects(&gram(&with_copy)).into_iter().map(|(i, _)| i).collect();
	assert_eq!(flagged, vec![1, 4], "the copy and its original");
}

#[test]
fn the_loss_screen_tells_training_on_its_own_data_from_training_on_other_data() {
	let (rep, base) = tiny();
	let train = |seed: Hash| {
		let mut w = worker(&rep, Compression::None);
		w.round(&rep, &base, seed, 30)
	};
	let mine = Hash::repeat_byte(3);
	let (other, elsewhere) = (train(Hash::repeat_byte(5)), train(Hash::repeat_byte(9)));
	// A few noisy batches decide a single screen (honest work is flagged now and then:
	// `bench/redteam.sh` measures how often); what holds every time is the order.
	let honest = rep.loss_screen(&base, &train(mine), &other, &mine, 30).unwrap();
	let wrong = rep.loss_screen(&base, &elsewhere, &other, &mine, 30).unwrap();
	assert!(wrong.margin < honest.margin, "{wrong:?} against {honest:?}");
	let nothing = rep.loss_screen(&base, &vec![0.0; base.len()], &other, &mine, 30).unwrap();
	assert!(nothing.suspect(), "no training: {nothing:?}");
	// A suspect of the first look is looked at again, on more batches.
	assert_eq!(nothing.batches, GAUNTLET_CONFIRM_BATCHES);
	assert_eq!(nothing.passes, 3 * GAUNTLET_CONFIRM_BATCHES, "the base too, on each batch");
	let short = rep.loss_screen(&base, &vec![0.0; base.len()], &other, &mine, 3).unwrap();
	assert_eq!(short.batches, 3, "no more batches than the steps it claimed");
	// In a long round a suspect is looked at on a quarter of its batches before anyone
	// replays all its steps.
	let long = rep.loss_screen(&base, &vec![0.0; base.len()], &other, &mine, 120).unwrap();
	assert!(long.suspect(), "no training: {long:?}");
	assert_eq!((long.batches, long.passes), (30, 90));
}

#[test]
fn claims_that_do_not_fit_the_model_or_claim_no_work_are_refused() {
	let (rep, base) = tiny();
	let n = base.len();
	let err = rep.judge(&tiny_claim(&base, vec![0.0; 3], 1)).unwrap_err().to_string();
	assert!(err.contains("an update of 3 values"), "{err}");
	let short_state =
		Claim { start: Arc::new(WorkState::fresh(2, true)), ..tiny_claim(&base, vec![0.1; n], 1) };
	let err = rep.judge(&short_state).unwrap_err().to_string();
	assert!(err.contains("a work state of 2"), "{err}");
	// A state of the wrong kind (SGD's, for an AdamW job) cannot be replayed.
	let sgd_state =
		Claim { start: Arc::new(WorkState::fresh(n, false)), ..tiny_claim(&base, vec![0.1; n], 1) };
	let err = rep.judge(&sgd_state).unwrap_err().to_string();
	assert!(err.contains("AdamW needs its moments"), "{err}");
	assert_eq!(rep.judge(&tiny_claim(&base, vec![0.1; n], 0)).unwrap().verdict, Verdict::Invalid);
}

#[test]
fn the_worker_reports_each_check_with_its_tag() {
	let (rep, base) = tiny();
	let n = base.len();
	let worker = VerifyWorker::start(rep);
	worker.submit(1u32, Check::Replay(tiny_claim(&base, vec![0.0; 2], 3)));
	worker.submit(2u32, Check::Replay(tiny_claim(&base, vec![0.5; n], 0)));
	worker.submit(3u32, Check::Screen(still_screen(&base)));
	let got = findings(&worker, 3);
	assert_eq!(got.len(), 3);
	let tags: Vec<u32> = got.iter().map(|(tag, _)| *tag).collect();
	assert_eq!(tags, [1, 2, 3]);
	assert!(matches!(&got[0].1, Finding::Replay(Err(_))));
	assert!(
		matches!(&got[1].1, Finding::Replay(Ok(j)) if j.verdict == Verdict::Invalid),
		"a zero start state does not replay to 0.5 everywhere"
	);
	match &got[2].1 {
		Finding::Screen(Ok(s)) => assert!(s.suspect() && s.passes >= 2, "{s:?}"),
		_ => panic!("the screen's finding is a screen's"),
	}
}

/// A loss screen of an update that changes nothing (which owes nothing to its sender's
/// data) against another such.
fn still_screen(base: &Arc<Vec<f32>>) -> ScreenRequest {
	let still = || Arc::new(CompressedUpdate::None(vec![0.0; base.len()]));
	ScreenRequest {
		base: base.clone(),
		update: still(),
		other: still(),
		seed: Hash::repeat_byte(7),
		steps: 3,
	}
}

/// The worker's findings once it has `want` of them, or all it has after a minute.
fn findings<T: Send + 'static>(worker: &VerifyWorker<T>, want: usize) -> Vec<(T, Finding)> {
	let (mut got, start) = (Vec::new(), std::time::Instant::now());
	while got.len() < want && start.elapsed() < std::time::Duration::from_secs(60) {
		got.extend(worker.finished());
		std::thread::sleep(std::time::Duration::from_millis(10));
	}
	got
}

/// A round's training holding the turn at a closed gate, and a worker behind the gate with
/// a replay queued (of a claim whose update its start cannot reach: invalid).
fn replay_behind_training() -> (Arc<Vec<f32>>, ComputeGate, Turn, VerifyWorker<u32>) {
	let (rep, base) = tiny();
	let n = base.len();
	let gate = ComputeGate::one_at_a_time();
	let training = gate.enter();
	let worker = VerifyWorker::gated(rep, gate.clone());
	worker.submit(1u32, Check::Replay(tiny_claim(&base, vec![0.5; n], 1)));
	(base, gate, training, worker)
}

#[test]
fn behind_a_closed_gate_a_replay_waits_for_the_training_turn_and_a_screen_does_not() {
	let (base, gate, training, worker) = replay_behind_training();
	// The worker is stuck at the gate with the replay, so a screen queued behind it waits
	// too; a screen on a worker of its own is not held by the gate at all.
	let other = VerifyWorker::gated(tiny().0, gate.clone());
	other.submit(2u32, Check::Screen(still_screen(&base)));
	let screened = findings(&other, 1);
	assert!(matches!(&screened[..], [(2, Finding::Screen(Ok(_)))]), "the screen ran");
	assert!(worker.finished().is_empty(), "the replay ran while training held the turn");
	drop(training);
	let got = findings(&worker, 1);
	assert!(
		matches!(&got[..], [(1, Finding::Replay(Ok(j)))] if j.verdict == Verdict::Invalid),
		"the replay ran once the round let the turn go"
	);
	// And the turn came back: the next round's training gets it.
	drop(gate.enter());
}

#[test]
fn a_worker_waiting_at_the_gate_is_dropped_without_waiting_for_the_turn() {
	let (_, _gate, training, worker) = replay_behind_training();
	let (dropped, done) = std::sync::mpsc::channel();
	std::thread::spawn(move || {
		drop(worker);
		dropped.send(()).unwrap();
	});
	// The turn's holder may be a round waiting for a base the dropping loop would give.
	done.recv_timeout(std::time::Duration::from_secs(60))
		.expect("dropping the worker waited for the training turn");
	drop(training);
}

/// A trainer's states after every step of its third round (two rounds first, so its moments
/// carry history as in a job), trained on `seed`'s batches; the round's base and the
/// replayer.
fn recorded_round(seed: Hash, steps: u32) -> (Replayer, Vec<StepState>) {
	let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 64, layers: 1 });
	let inner =
		InnerOptimizer::AdamW { lr: Nanos(2_000_000), weight_decay: Nanos(0), warmup_steps: 5 };
	let data = Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()));
	let rep = replayer(&data, spec, inner);
	let global = Model::new(spec, b"job", &Device::Cpu).unwrap().params().flatten().unwrap();
	let mut me = worker(&rep, Compression::Int8 { chunk: 256 });
	for round in 0..2u8 {
		me.round(&rep, &global, Hash::repeat_byte(0x40 + round), steps);
	}
	let batches = (0..u64::from(steps))
		.map(|i| data.train_batch(&batch_indices(&seed, i, 32, data.train_len()), &Device::Cpu));
	let mut states = Vec::new();
	crate::diloco::train_round_observed(&mut me.trainer, &global, batches, |_, t| {
		states.push(t.state()?);
		Ok(())
	})
	.unwrap();
	(rep, states)
}

#[test]
fn a_segment_start_shares_the_base_only_when_equal_to_the_bit() {
	let base = Arc::new(vec![1.0, 0.0, -2.5]);
	let state = |params: Vec<f32>| StepState { params, step: 3, moments: None };
	let shared = SegmentStart::sharing(state(vec![1.0, 0.0, -2.5]), &base);
	assert!(matches!(&shared.params, StartParams::Base(b) if Arc::ptr_eq(b, &base)));
	assert_eq!((shared.view().step, shared.view().params), (3, &base[..]));
	// Equal as numbers, not as bits: the start's own -0.0 is kept, not the base's 0.0.
	for other in [vec![1.0, -0.0, -2.5], vec![1.0, 0.0], vec![1.0, 0.0, -2.5, 4.0]] {
		let kept = SegmentStart::sharing(state(other.clone()), &base);
		assert!(matches!(&kept.params, StartParams::Fetched(p) if p.len() == other.len()));
		let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
		assert_eq!(bits(&kept.params), bits(&other));
	}
}

/// A segment check of a round that does not overlap, as the fraud desk submits it.
fn segment_request(
	start: &StepState,
	end: &StepState,
	seed: Hash,
	first: u32,
	steps: u32,
) -> SegmentRequest {
	let start = start.clone().into();
	SegmentRequest { start, end: end.clone(), seed, first, steps, bases: None }
}

#[test]
fn segment_checks_pass_honest_steps_and_refuse_other_data_and_made_up_states() {
	let seed = Hash::repeat_byte(0x51);
	let (rep, honest) = recorded_round(seed, 12);
	assert_eq!(honest.len(), 13, "the start and every step's state");
	// As a verifier would get them: the trajectory checked against its root, each state
	// against its digest in it.
	let kept: Vec<(u32, StepState)> =
		honest.iter().cloned().enumerate().map(|(t, s)| (t as u32, s)).collect();
	let root = Trajectory::of(&kept).root();
	let trajectory =
		Trajectory::decode_committed(&Trajectory::of(&kept).encode(), 100, &root).unwrap();
	let n = honest[0].params.len();
	for ((at, digest), state) in trajectory.marks().iter().zip(&honest) {
		let bytes = state.encode();
		assert_eq!(&StepState::decode_committed(&bytes, n, digest).unwrap(), state, "{at}");
	}
	let base = Arc::new(honest[0].params.clone());
	// Honest: any segment redone from its recorded start lands on its recorded end, bit
	// for bit on the same kind of device.
	for (first, k) in [(0u32, 1u32), (5, 1), (3, 4), (8, 4)] {
		let (start, end) = (&honest[first as usize], &honest[(first + k) as usize]);
		let replayed = rep.replay_segment(start, &seed, first, k, None).unwrap();
		assert_eq!(&replayed, end, "steps {first}..{}", first + k);
		let j = judge_segment(start.view(), end.view(), replayed.view());
		assert_eq!(j.verdict, Verdict::Valid, "{j:?}");
		// The worker's check, which moves the start's second moments into its replay,
		// finds exactly the same.
		assert_eq!(rep.check_segment(segment_request(start, end, seed, first, k)).unwrap(), j);
		// So does one whose start shares the round's base, as the desk's does for the
		// first state (the base itself, bit for bit); later states keep their own.
		let shared = SegmentStart::sharing(start.clone(), &base);
		assert_eq!(matches!(shared.params, StartParams::Base(_)), first == 0, "at {first}");
		let request =
			SegmentRequest { start: shared, ..segment_request(start, end, seed, first, k) };
		assert_eq!(rep.check_segment(request).unwrap(), j);
	}
	// Trained on other data (another seed's batches) but claimed as `seed`'s: every
	// segment's gradients are other batches'.
	let (_, wrong) = recorded_round(Hash::repeat_byte(0xee), 12);
	for (first, k) in [(0u32, 1u32), (5, 1), (3, 4), (8, 4)] {
		let (start, end) = (&wrong[first as usize], &wrong[(first + k) as usize]);
		let replayed = rep.replay_segment(start, &seed, first, k, None).unwrap();
		let j = judge_segment(start.view(), end.view(), replayed.view());
		eprintln!("other data, steps {first}..{}: {j:?}", first + k);
		assert_eq!(j.verdict, Verdict::Invalid, "steps {first}..{}: {j:?}", first + k);
		assert!(j.gradient_cosine < 0.9, "{j:?}");
		assert_eq!(rep.check_segment(segment_request(start, end, seed, first, k)).unwrap(), j);
	}
	// Lazy: an end state made up from the start (a small step along noise, moments kept).
	let start = &honest[4];
	let mut rng = Rng::new(3);
	let mut made_up = start.clone();
	made_up.step += 1;
	for p in &mut made_up.params {
		*p += 1e-3 * rng.normal() as f32;
	}
	let replayed = rep.replay_segment(start, &seed, 4, 1, None).unwrap();
	assert_eq!(
		judge_segment(start.view(), made_up.view(), replayed.view()).verdict,
		Verdict::Invalid
	);
	// The honest end state claimed for more steps than it ran.
	let replayed = rep.replay_segment(start, &seed, 4, 2, None).unwrap();
	let j = judge_segment(start.view(), honest[5].view(), replayed.view());
	assert_eq!((j.verdict, j.gradient_cosine), (Verdict::Invalid, 0.0));
	// A segment past the job's cap on steps is not replayed at all.
	let err = rep.replay_segment(start, &seed, 99, 2, None).unwrap_err();
	assert!(err.to_string().contains("past the job's"), "{err}");
}

#[test]
fn a_claim_holds_by_its_trajectory_only_from_its_start_to_the_update_it_sent() {
	let seed = Hash::repeat_byte(0x52);
	let (rep, _) = tiny();
	let global = Model::new(rep.spec, b"job", &Device::Cpu).unwrap().params().flatten().unwrap();
	let mut me = worker(&rep, Compression::Int8 { chunk: 256 });
	// Two rounds first, so the start state has moments, a step count and a residual.
	for round in 0..2u8 {
		let delta = me.round(&rep, &global, Hash::repeat_byte(0x60 + round), 6);
		me.compressor.compress(&delta, None).unwrap();
	}
	let start = me.start_state();
	let data = rep.dataset.clone();
	let batches = (0..12u64)
		.map(|i| data.train_batch(&batch_indices(&seed, i, 32, data.train_len()), &Device::Cpu));
	let mut kept = Vec::new();
	let delta = crate::diloco::train_round_observed(&mut me.trainer, &global, batches, |at, t| {
		kept.push((at, t.state()?));
		Ok(())
	})
	.unwrap()
	.delta;
	let (sent, _, _) = me.compressor.compress(&delta, None).unwrap();
	let trajectory = Trajectory::of(&kept);
	let claim = Claim {
		base: Arc::new(global),
		start: Arc::new(start),
		sent: Arc::new(sent),
		seed,
		steps: 12,
		from: None,
	};
	let states: std::collections::HashMap<_, _> =
		kept.iter().skip(1).map(|(_, s)| (s.digest(), s.clone())).collect();
	let check = |claim: &Claim, trajectory: &Trajectory, gap: usize| {
		let request = TraceRequest {
			claim: claim.clone(),
			trajectory: trajectory.clone(),
			gap: Some(gap),
			states: states.clone(),
		};
		rep.judge_trace(request).unwrap()
	};
	// What did not hold, and what the full replay held to the trajectory's end then found.
	let fails_with = |finding: TraceFinding, words: &str, verdict: Verdict| match finding {
		TraceFinding::Replayed { why, judgement, .. } => {
			assert!(why.contains(words), "{why}");
			assert_eq!(judgement.verdict, verdict, "{words}: {judgement:?}");
		}
		TraceFinding::Holds => panic!("held; expected: {words}"),
	};
	// Honest: whichever gap is drawn, its start, its end and the gap hold.
	for gap in [0, 5, 11] {
		assert_eq!(check(&claim, &trajectory, gap), TraceFinding::Holds, "gap {gap}");
	}
	// The same trajectory for a claim from another start state: not where it starts.
	let moved = WorkState { step: claim.start.step + 1, ..(*claim.start).clone() };
	let other_start = Claim { start: Arc::new(moved), ..claim.clone() };
	fails_with(check(&other_start, &trajectory, 3), "does not start from", Verdict::Invalid);
	// Honest steps, but another update sent (its trajectory's end does not give it).
	let noise: Vec<f32> = delta.iter().enumerate().map(|(i, d)| d * (i % 3) as f32).collect();
	let scheme = Compression::Int8 { chunk: 256 };
	let other_sent = Claim {
		sent: Arc::new(compress_once(&scheme, &rep.layout, &noise).unwrap()),
		..claim.clone()
	};
	fails_with(check(&other_sent, &trajectory, 3), "does not give the update", Verdict::Invalid);
	// More steps claimed than recorded, or past the job's cap.
	let more = Claim { steps: 13, ..claim.clone() };
	fails_with(check(&more, &trajectory, 3), "for a claim of 13", Verdict::Invalid);
	let over = Claim { steps: 101, ..claim.clone() };
	fails_with(check(&over, &trajectory, 3), "a claim of 101", Verdict::Invalid);
	// A state counting other steps than its place (its digest is the trajectory's, so it
	// was committed to as it is).
	let mut shifted = kept.clone();
	shifted[12].1.step += 1;
	let shifted_states = shifted.iter().skip(1).map(|(_, s)| (s.digest(), s.clone())).collect();
	let request = TraceRequest {
		claim: claim.clone(),
		trajectory: Trajectory::of(&shifted),
		gap: Some(2),
		states: shifted_states,
	};
	fails_with(rep.judge_trace(request).unwrap(), "counts", Verdict::Invalid);
}

/// The tiny model's replayer in a job whose rounds catch up after 4 steps, and a base for
/// the round before (the initial model).
fn overlapping() -> (Replayer, crate::diloco::CatchUp, Vec<f32>) {
	let (rep, _) = tiny();
	let catch_up = crate::diloco::CatchUp::new(4).unwrap();
	let rep = Replayer { catch_up: Some(catch_up), ..rep };
	let previous = Model::new(rep.spec, b"job", &Device::Cpu).unwrap().params().flatten().unwrap();
	(rep, catch_up, previous)
}

/// `weights` moved by `scale` times a fixed pattern (an outer step's size at 0.02).
fn moved(weights: &[f32], scale: f32) -> Vec<f32> {
	weights.iter().enumerate().map(|(i, x)| x + scale * ((i % 5) as f32 - 2.0)).collect()
}

/// A round of 12 steps on `seed`'s batches whose first steps trained from `from` and then
/// caught up with `base` (blocking from `base` without `from`): its sender's start state, the
/// update it sent and every state it recorded.
fn round_from(
	rep: &Replayer,
	seed: Hash,
	base: &[f32],
	from: Option<&[f32]>,
	catch_up: crate::diloco::CatchUp,
) -> (WorkState, CompressedUpdate, Vec<(u32, StepState)>) {
	use crate::diloco::{train_from, RoundStart};
	let mut me = worker(rep, Compression::Int8 { chunk: 256 });
	let start = me.start_state();
	let data = rep.dataset.clone();
	let batches = (0..12u64)
		.map(|i| data.train_batch(&batch_indices(&seed, i, 32, data.train_len()), &Device::Cpu));
	let current = base.to_vec();
	let round_start = match from {
		None => RoundStart::Base(base),
		Some(from) => {
			RoundStart::CatchingUp { from, catch_up, current: Box::new(move || Ok(current)) }
		}
	};
	let mut kept = Vec::new();
	let delta = train_from(&mut me.trainer, round_start, batches, |at, t| {
		kept.push((at, t.state()?));
		Ok(())
	})
	.unwrap()
	.delta;
	let (sent, _, _) = me.compressor.compress(&delta, None).unwrap();
	(start, sent, kept)
}

/// An overlapped round (its first 4 steps from the previous base, then caught up to S_r)
/// replays, in full and by its trajectory, only as what it was; a sender that moved onto
/// S_r without the steps around it, or a job that does not overlap, is refused.
#[test]
fn an_overlapped_claim_holds_only_as_the_round_it_was() {
	let seed = Hash::repeat_byte(0x53);
	let (rep, catch_up, previous) = overlapping();
	// S_r: the previous base moved by something the size of an outer step.
	let base = moved(&previous, 0.02);
	let (start, sent, kept) = round_from(&rep, seed, &base, Some(&previous), catch_up);
	let claim = Claim {
		base: Arc::new(base),
		start: Arc::new(start),
		sent: Arc::new(sent),
		seed,
		steps: 12,
		from: Some(Arc::new(previous)),
	};
	let check = |claim: &Claim, kept: &[(u32, StepState)], gap: usize| {
		let states = kept.iter().skip(1).map(|(_, s)| (s.digest(), s.clone())).collect();
		let request = TraceRequest {
			claim: claim.clone(),
			trajectory: Trajectory::of(kept),
			gap: Some(gap),
			states,
		};
		rep.judge_trace(request).unwrap()
	};
	// What did not hold, and what the full replay held to the trajectory's end then found.
	let fails_with = |finding: TraceFinding, words: &str, verdict: Verdict| match finding {
		TraceFinding::Replayed { why, judgement, .. } => {
			assert!(why.contains(words), "{why}");
			assert_eq!(judgement.verdict, verdict, "{words}: {judgement:?}");
		}
		TraceFinding::Holds => panic!("held; expected: {words}"),
	};
	// Honest: the full replay, and every gap (before, across and after the catch-up).
	let j = rep.judge(&claim).unwrap();
	assert_eq!(j.verdict, Verdict::Valid, "{j:?}");
	for gap in [0, 3, 4, 11] {
		assert_eq!(check(&claim, &kept, gap), TraceFinding::Holds, "gap {gap}");
	}
	// Claimed as a blocking round from S_r, its trajectory does not start there. (A full
	// replay from S_r comes out close: the same work but for four steps' gradients taken
	// at the previous base, so mislabelling the round buys nothing.)
	let blocking = Claim { from: None, ..claim.clone() };
	fails_with(check(&blocking, &kept, 5), "does not start from", Verdict::Invalid);
	// Moved onto S_r at the catch-up but skipped the step after it: that gap does not redo.
	let mut skipped = kept.clone();
	let mut moved = skipped[4].1.clone();
	rep.shift(&claim).unwrap().apply(&mut moved.params).unwrap();
	moved.step += 1;
	skipped[5].1 = moved;
	// Its end is the honest one, so the full replay held to it clears the update sent.
	fails_with(check(&claim, &skipped, 4), "do not redo", Verdict::Valid);
	// A job whose rounds do not overlap refuses an overlapped claim without replaying it.
	let plain = Replayer { catch_up: None, ..rep.clone() };
	let j = plain.judge(&claim).unwrap();
	assert_eq!((j.verdict, j.cosine), (Verdict::Invalid, 0.0));
	fails_with(
		plain
			.judge_trace(TraceRequest {
				claim: claim.clone(),
				trajectory: Trajectory::of(&kept),
				gap: Some(0),
				states: Default::default(),
			})
			.unwrap(),
		"overlapped",
		Verdict::Invalid,
	);
}

/// In a job whose rounds overlap, the fraud desk assumes a round ran overlapped from the
/// round before's base: a round its sender trained blocking instead (after a restart, a
/// re-sync or a join) still passes every check it runs (full replay, trajectory, a segment
/// across the catch-up), as does an overlapped one, while a round that trained its first
/// steps from any other start (an attacker carrying a vector of its choice into its update)
/// fails them all.
#[test]
fn an_overlapping_jobs_round_passes_as_it_ran_and_from_no_other_start() {
	let seed = Hash::repeat_byte(0x54);
	let (rep, catch_up, previous) = overlapping();
	let previous = Arc::new(previous);
	// S_r: the previous base moved by something the size of an outer step.
	let base = Arc::new(moved(&previous, 0.02));
	// A round whose first steps trained from `from` (`None`: blocking from S_r), claimed as
	// the desk builds claims (overlapped from the previous base), and its recorded states.
	let run = |from: Option<Vec<f32>>| {
		let (start, sent, kept) = round_from(&rep, seed, &base, from.as_deref(), catch_up);
		let claim = Claim {
			base: base.clone(),
			start: Arc::new(start),
			sent: Arc::new(sent),
			seed,
			steps: 12,
			from: Some(previous.clone()),
		};
		(claim, kept)
	};
	let bases = CatchUpBases { from: previous.clone(), to: base.clone() };
	let cases = [
		("overlapped from the round before's base", Some(previous.to_vec()), Verdict::Valid),
		("blocking", None, Verdict::Valid),
		("overlapped from a start of its own", Some(moved(&previous, 0.5)), Verdict::Invalid),
	];
	for (name, from, expected) in cases {
		let (claim, kept) = run(from);
		let replay = rep.judge_overlapping(&claim).unwrap();
		assert_eq!(replay.verdict, expected, "{name}: full replay {replay:?}");
		// Gap 4 is the step after the catch-up, which moved the weights before it.
		let states = kept.iter().skip(1).map(|(_, s)| (s.digest(), s.clone())).collect();
		let request =
			TraceRequest { claim, trajectory: Trajectory::of(&kept), gap: Some(4), states };
		let recorded = rep.judge_recorded(&request).unwrap();
		assert_eq!(recorded.verdict, expected, "{name}: held to its end {recorded:?}");
		let trace = rep.judge_trace(request).unwrap();
		assert_eq!(trace == TraceFinding::Holds, expected == Verdict::Valid, "{name}: {trace:?}");
		let segment = SegmentRequest {
			start: kept[4].1.clone().into(),
			end: kept[5].1.clone(),
			seed,
			first: 4,
			steps: 1,
			bases: Some(bases.clone()),
		};
		let segment = rep.check_segment(segment).unwrap();
		assert_eq!(segment.verdict, expected, "{name}: segment {segment:?}");
	}
}

/// A lazy sender forges its residual: it trains nothing and sends noise, stating as its
/// start state's residual that noise (over the decay), a few times an honest update's size,
/// so that the compression of any round's training with it gives back about the noise. A
/// replay that only compares its compressed result with the update sent is fooled (the
/// residual outweighs the round's training); held to the trajectory the sender committed
/// to, the same replay refuses it: an end that gives the update sent without training (the
/// base) is not where the steps lead, and the end they lead to is known only by training
/// them, which is what the sender is paid for. Honest work passes both.
#[test]
fn a_forged_residual_does_not_pass_for_training() {
	let seed = Hash::repeat_byte(0x55);
	let (rep, _) = tiny();
	let base =
		Arc::new(Model::new(rep.spec, b"job", &Device::Cpu).unwrap().params().flatten().unwrap());
	let n = base.len();
	let scheme = Compression::Int8 { chunk: 256 };
	let (start, sent, kept) =
		round_from(&rep, seed, &base, None, crate::diloco::CatchUp::new(4).unwrap());
	let honest = Claim {
		base: base.clone(),
		start: Arc::new(start.clone()),
		sent: Arc::new(sent.clone()),
		seed,
		steps: 12,
		from: None,
	};
	let states = |kept: &[(u32, StepState)]| -> std::collections::HashMap<_, _> {
		kept.iter().skip(1).map(|(_, s)| (s.digest(), s.clone())).collect()
	};
	let recorded = |claim: &Claim, kept: &[(u32, StepState)]| {
		let request = TraceRequest {
			claim: claim.clone(),
			trajectory: Trajectory::of(kept),
			gap: None,
			states: states(kept),
		};
		rep.judge_recorded(&request).unwrap()
	};
	assert_eq!(rep.judge(&honest).unwrap().verdict, Verdict::Valid);
	assert_eq!(recorded(&honest, &kept).verdict, Verdict::Valid);
	// The forger's residual: noise ten times the honest update's norm, over the decay.
	let honest_norm = crate::aggregate::norm(&sent.decompress()) as f32;
	let mut rng = Rng::new(11);
	let noise: Vec<f32> = (0..n).map(|_| rng.normal() as f32).collect();
	let scale = 10.0 * honest_norm / crate::aggregate::norm(&noise) as f32 / rep.error_decay;
	let residual: Vec<f32> = noise.iter().map(|z| z * scale).collect();
	let forged_sent =
		compress_once(&scheme, &rep.layout, &corrected(&vec![0.0; n], &residual, rep.error_decay))
			.unwrap();
	let forged = Claim {
		start: Arc::new(WorkState { residual, ..start.clone() }),
		sent: Arc::new(forged_sent),
		..honest.clone()
	};
	let fooled = rep.judge(&forged).unwrap();
	assert_eq!(
		fooled.verdict,
		Verdict::Valid,
		"the forgery is strong enough to matter: {fooled:?}"
	);
	// Its trajectory never leaves the base (the step counts go on): the end gives the
	// noise sent, but twelve steps from the base do not end at the base.
	let idle_states: Vec<(u32, StepState)> = (0..=12u32)
		.map(|at| {
			let state = StepState::at_start(&base, &start);
			(at, StepState { step: start.step + u64::from(at), ..state })
		})
		.collect();
	let j = recorded(&forged, &idle_states);
	assert_eq!(j.verdict, Verdict::Invalid, "an idle trajectory: {j:?}");
	// By its trajectory, a committee member replays it in full and refuses it.
	let request = TraceRequest {
		claim: forged.clone(),
		trajectory: Trajectory::of(&idle_states),
		gap: Some(5),
		states: states(&idle_states),
	};
	match rep.judge_trace(request).unwrap() {
		TraceFinding::Replayed { judgement, .. } => {
			assert_eq!(judgement.verdict, Verdict::Invalid, "{judgement:?}")
		}
		TraceFinding::Holds => panic!("a forged residual held"),
	}
}

/// Three rounds as the daemon runs them, the second's update left out of its aggregate and
/// given back: each round starts from exactly what the round before handed on, computed from
/// its committed start, its trajectory's end and the update sent ([`Replayer::carry`]). A
/// start with its residual or moments touched, its step moved, or a fresh one does not go on
/// from it.
#[test]
fn each_round_starts_from_what_the_round_before_handed_on() {
	let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 32, layers: 1 });
	let inner =
		InnerOptimizer::AdamW { lr: Nanos(2_000_000), weight_decay: Nanos(0), warmup_steps: 5 };
	let data = Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()));
	let rep = replayer(&data, spec, inner);
	let mut global = Model::new(spec, b"job", &Device::Cpu).unwrap().params().flatten().unwrap();
	let mut w = worker(&rep, Compression::TopK { chunk: 64, k: 8, value_bits: 2 });
	let mut outer = OuterOptimizer::new(0.7, 0.0, global.len());
	let mut handed_on: Option<Carry> = None;
	for round in 0..3u8 {
		let start = Arc::new(w.start_state());
		if let Some(carry) = handed_on {
			assert!(carry.continued_by(&start.digests()), "round {round}");
		}
		let base = Arc::new(global.clone());
		let seed = Hash::repeat_byte(round + 1);
		let delta = w.round(&rep, &base, seed, 20);
		let end = w.trainer.state().unwrap();
		let (sent, _, _) = w.compressor.compress(&delta, None).unwrap();
		if round == 1 {
			w.compressor.give_back(&sent).unwrap();
		} else {
			outer.step(&mut global, &sent.decompress()).unwrap();
		}
		let claim = Claim { base, start, sent: Arc::new(sent), seed, steps: 20, from: None };
		handed_on = Some(rep.carry(&claim, &end).unwrap());
	}
	let carry = handed_on.unwrap();
	let next = w.start_state();
	assert!(carry.continued_by(&next.digests()));
	let mut residual = next.clone();
	residual.residual[3] += 1e-3;
	let mut moments = next.clone();
	moments.moments.as_mut().unwrap().m[3] *= 2.0;
	let moved = WorkState { step: next.step + 1, ..next.clone() };
	let fresh = WorkState::fresh(next.len(), true);
	for (what, forged) in
		[("residual", residual), ("moments", moments), ("step", moved), ("fresh", fresh)]
	{
		assert!(!carry.continued_by(&forged.digests()), "a start with another {what} went on");
	}
}
