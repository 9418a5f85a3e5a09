//! DiLoCo (Douillard et al. 2023): participants train locally from the global model, send the
//! pseudo-gradient Δ = θ_global − θ_local, and everyone applies the aggregated Δ with an outer
//! Nesterov step. The outer state lives in f32 on the CPU and is updated sequentially, so all
//! nodes that aggregate the same updates reach bit-identical weights.

use grid_primitives::job::{Nanos, TrainingParams};

use crate::{
	compress::{CompressedUpdate, Compressor},
	error::{Error, Result},
	model::Batch,
	train::InnerTrainer,
};

/// Δ = θ_global − θ_local.
pub fn pseudo_gradient(global: &[f32], local: &[f32]) -> Result<Vec<f32>> {
	if global.len() != local.len() {
		return Err(Error::Layout(format!(
			"global has {} values, local {}",
			global.len(),
			local.len()
		)));
	}
	Ok(global.iter().zip(local).map(|(g, l)| g - l).collect())
}

/// SGD with Nesterov momentum on the pseudo-gradient (the DiLoCo outer optimizer).
#[derive(Clone, Debug, PartialEq)]
pub struct OuterOptimizer {
	lr: f32,
	momentum: f32,
	velocity: Vec<f32>,
}

impl OuterOptimizer {
	/// An optimizer for `len` parameters with zero initial velocity.
	pub fn new(lr: f32, momentum: f32, len: usize) -> Self {
		OuterOptimizer { lr, momentum, velocity: vec![0.0; len] }
	}

	/// The job's outer learning rate and momentum.
	pub fn from_params<B>(params: &TrainingParams<B>, len: usize) -> Self {
		let f = |n: Nanos| n.to_f64() as f32;
		Self::new(f(params.outer_lr), f(params.outer_momentum), len)
	}

	/// The momentum buffer (saved in checkpoints).
	pub fn velocity(&self) -> &[f32] {
		&self.velocity
	}

	/// Restores a saved momentum buffer.
	pub fn set_velocity(&mut self, velocity: Vec<f32>) -> Result<()> {
		if velocity.len() != self.velocity.len() {
			return Err(Error::Layout(format!(
				"velocity has {} values, the model {}",
				velocity.len(),
				self.velocity.len()
			)));
		}
		self.velocity = velocity;
		Ok(())
	}

	/// `v ← μv + Δ; θ ← θ − lr·(Δ + μv)` (PyTorch's Nesterov SGD).
	pub fn step(&mut self, global: &mut [f32], delta: &[f32]) -> Result<()> {
		if global.len() != self.velocity.len() || delta.len() != self.velocity.len() {
			return Err(Error::Layout(format!(
				"outer step on {} weights with a Δ of {} for an optimizer of {}",
				global.len(),
				delta.len(),
				self.velocity.len()
			)));
		}
		let (lr, mu) = (self.lr, self.momentum);
		for ((theta, v), d) in global.iter_mut().zip(self.velocity.iter_mut()).zip(delta) {
			*v = mu * *v + d;
			*theta -= lr * (d + mu * *v);
		}
		Ok(())
	}
}

/// What local training in a round produced, before compression.
pub struct LocalRound {
	/// Δ = θ_global − θ_local.
	pub delta: Vec<f32>,
	/// Samples trained on.
	pub samples: u64,
	/// Inner steps run.
	pub steps: u32,
	/// Mean training loss over the round's steps.
	pub mean_loss: f32,
}

/// Loads `global` into the trainer's model, trains on `batches` (stopping whenever the
/// iterator ends: a deadline can end it early) and returns the pseudo-gradient.
pub fn train_round(
	trainer: &mut InnerTrainer,
	global: &[f32],
	batches: impl IntoIterator<Item = Result<Batch>>,
) -> Result<LocalRound> {
	train_round_observed(trainer, global, batches, |_, _| Ok(()))
}

/// [`train_round`], showing the trainer to `observe` before the first step and after each
/// (with the steps taken so far in the round): what a trajectory's snapshots are taken from
/// ([`crate::verify::StepState`]).
pub fn train_round_observed(
	trainer: &mut InnerTrainer,
	global: &[f32],
	batches: impl IntoIterator<Item = Result<Batch>>,
	mut observe: impl FnMut(u32, &InnerTrainer) -> Result<()>,
) -> Result<LocalRound> {
	let params = trainer.model().params().clone();
	params.load_flat(global)?;
	let (mut samples, mut loss_sum, mut steps) = (0u64, 0f64, 0u32);
	observe(0, trainer)?;
	for batch in batches {
		let batch = batch?;
		samples += batch.samples()? as u64;
		loss_sum += f64::from(trainer.step(&batch)?.loss);
		steps += 1;
		observe(steps, trainer)?;
	}
	let delta = pseudo_gradient(global, &params.flatten()?)?;
	Ok(LocalRound { delta, samples, steps, mean_loss: (loss_sum / f64::from(steps.max(1))) as f32 })
}

/// What a participant produces in a round.
pub struct RoundOutput {
	/// Its compressed Δ.
	pub update: CompressedUpdate,
	/// Samples trained on.
	pub samples: u64,
	/// Mean training loss over the round's steps.
	pub mean_loss: f32,
}

/// One participant: a local trainer (whose optimizer state persists across rounds, as in
/// DiLoCo) and its compressor (whose error feedback does too).
pub struct Participant {
	trainer: InnerTrainer,
	compressor: Box<dyn Compressor>,
}

impl Participant {
	/// A participant from its trainer and compressor.
	pub fn new(trainer: InnerTrainer, compressor: Box<dyn Compressor>) -> Self {
		Participant { trainer, compressor }
	}

	/// The local trainer.
	pub fn trainer(&self) -> &InnerTrainer {
		&self.trainer
	}

	/// Starts from `global`, trains on `batches`, and returns the compressed Δ.
	pub fn run_round(
		&mut self,
		global: &[f32],
		batches: impl IntoIterator<Item = Result<Batch>>,
	) -> Result<RoundOutput> {
		let local = train_round(&mut self.trainer, global, batches)?;
		let update = self.compressor.compress(&local.delta)?;
		Ok(RoundOutput { update, samples: local.samples, mean_loss: local.mean_loss })
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		aggregate::{aggregate, Contribution, Rule},
		compress::{compressor, Layout},
		data::{shard, MnistDataset},
		model::Model,
		train::{evaluate, InnerConfig},
	};
	use candle_core::Device;
	use grid_primitives::{
		job::{Compression, InnerOptimizer, MlpConfig, ModelSpec},
		Hash,
	};

	#[test]
	fn nesterov_matches_the_reference() {
		let mut opt = OuterOptimizer::new(0.7, 0.9, 1);
		let mut theta = [1.0f32];
		opt.step(&mut theta, &[0.1]).unwrap(); // v = 0.1, θ = 1 − 0.7·(0.1 + 0.09)
		assert!((theta[0] - (1.0 - 0.7 * 0.19)).abs() < 1e-7);
		opt.step(&mut theta, &[0.1]).unwrap(); // v = 0.19, θ −= 0.7·(0.1 + 0.171)
		assert!((theta[0] - (1.0 - 0.7 * 0.19 - 0.7 * 0.271)).abs() < 1e-6);
		assert!(opt.step(&mut theta, &[0.1, 0.2]).is_err());
		// With lr 1 and no momentum the outer step returns exactly the averaged local model.
		let mut plain = OuterOptimizer::new(1.0, 0.0, 2);
		let global = [1.0f32, 2.0];
		let local = [0.5f32, 2.5];
		let mut theta = global;
		plain.step(&mut theta, &pseudo_gradient(&global, &local).unwrap()).unwrap();
		assert_eq!(theta, local);
	}

	/// Three participants, two rounds of DiLoCo on MNIST, repeated: the model hash must be
	/// identical between the two runs and the held-out loss must fall.
	fn simulate(compression: Compression) -> ([u8; 32], f64, f64) {
		let dev = Device::Cpu;
		let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 32, layers: 1 });
		let data = MnistDataset::shipped().unwrap();
		let inner =
			InnerOptimizer::AdamW { lr: Nanos(2_000_000), weight_decay: Nanos(0), warmup_steps: 2 };
		let config = InnerConfig { total_steps: 40, ..Default::default() };
		let model = Model::new(spec, b"job", &dev).unwrap();
		let mut global = model.params().flatten().unwrap();
		let eval = data.eval_batches(500, 250, &dev).unwrap();
		let before = evaluate(&model, &eval).unwrap();
		let mut people: Vec<Participant> = (0..3)
			.map(|_| {
				let t = InnerTrainer::new(spec, b"job", &dev, &inner, config).unwrap();
				let layout = Layout::of(&model.params().manifest());
				Participant::new(t, compressor(&compression, &layout).unwrap())
			})
			.collect();
		let mut outer = OuterOptimizer::new(0.7, 0.9, global.len());
		for round in 0..2 {
			let mut updates = Vec::new();
			for (p, person) in people.iter_mut().enumerate() {
				let idx = shard(&Hash::zero(), 7, round, &[p as u8], data.train_len(), 20 * 32);
				let batches = idx.chunks(32).map(|c| data.train_batch(c, &dev)).collect::<Vec<_>>();
				let out = person.run_round(&global, batches).unwrap();
				// Through the wire format, as peers would see it.
				let wire = CompressedUpdate::decode(&out.update.encode()).unwrap();
				updates.push(Contribution { update: wire.into(), samples: out.samples });
			}
			let agg = aggregate(&updates, Rule::TrimmedMean { trim: 0 }, Some(3.0)).unwrap();
			outer.step(&mut global, &agg.delta).unwrap();
		}
		model.params().load_flat(&global).unwrap();
		let after = evaluate(&model, &eval).unwrap();
		(model.params().manifest().model_hash(&global).unwrap(), before, after)
	}

	#[test]
	fn diloco_rounds_are_reproducible_and_learn() {
		// Top-k sends an eighth of the values per round, so two rounds get less far.
		let cases = [
			(Compression::None, 0.5),
			(Compression::TopK { chunk: 64, k: 8, value_bits: 2 }, 0.7),
			(Compression::Tiles { k: 256 }, 0.7),
		];
		for (compression, factor) in cases {
			let (hash, before, after) = simulate(compression);
			let (again, _, _) = simulate(compression);
			assert_eq!(hash, again, "{compression:?}");
			assert!(after < factor * before, "{compression:?}: held-out loss {before} -> {after}");
		}
	}
}
