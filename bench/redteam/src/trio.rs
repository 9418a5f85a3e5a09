//! Three providers training the suite's job ([`Setup`]) from one model, round after round,
//! for the measurements of what a check tells ([`crate::power`], [`crate::segments`]):
//! provider 0 is the one checked, provider 1's update is the contrast a loss screen compares
//! with, provider 2 trains on other data than the seed it was given. Updates are sent as the
//! daemon sends them (int8 with error feedback) and averaged by a DiLoCo outer step.

use anyhow::Result;
use candle_core::Device;
use grid_primitives::Hash;
use grid_trainer::{
	compress::{adaptive::AdaptiveCompressor, Layout},
	data::batch_indices,
	diloco::{train_round_observed, OuterOptimizer},
	model::Model,
	train::InnerTrainer,
	trajectory::StepState,
};
use polkadot_sdk::sp_io::hashing::blake2_256;

use crate::world::{Setup, BATCH, OUTER_LR, OUTER_MOMENTUM};

/// The provider that trains on other data than its seed's.
pub const WRONG: usize = 2;

/// What distinguishes the seed [`WRONG`] was given from the one it trained on.
const ASSIGNED_TO_WRONG: u8 = 0xfe;

/// One round of one job, as the three providers trained it.
pub struct RoundRecord {
	/// The job's number.
	pub job: u32,
	/// The round's number in the job.
	pub round: u32,
	/// The round's base model.
	pub base: Vec<f32>,
	/// Each provider's update as sent, decompressed.
	pub sent: Vec<Vec<f32>>,
	/// Each provider's assigned data seed for the round (all trained on their own but [`WRONG`]).
	pub seeds: Vec<Hash>,
	/// Each provider's state before its first step and after each (when recorded).
	pub states: Vec<Vec<StepState>>,
}

/// One provider: its trainer (optimizer state kept) and compressor (residual kept).
struct Member {
	trainer: InnerTrainer,
	compressor: AdaptiveCompressor,
}

/// Runs `jobs` jobs of `rounds` rounds each (models drawn under `tag`), giving each round to
/// `each` once all three trained it; with `record`, every step's state too.
pub fn train_jobs(
	setup: &Setup,
	tag: &str,
	jobs: u32,
	rounds: u32,
	record: bool,
	mut each: impl FnMut(RoundRecord) -> Result<()>,
) -> Result<()> {
	for job in 0..jobs {
		let init = Model::new(setup.spec, format!("{tag}/{job}").as_bytes(), &Device::Cpu)?;
		let mut global = init.params().flatten()?;
		let len = global.len();
		let mut members = (0..3)
			.map(|_| {
				Ok(Member {
					trainer: InnerTrainer::new(
						setup.spec,
						b"job",
						&Device::Cpu,
						&setup.inner,
						setup.config,
					)?,
					compressor: AdaptiveCompressor::new(
						setup.compression,
						Layout::of(&init.params().manifest()),
						setup.error_decay,
					)?,
				})
			})
			.collect::<Result<Vec<_>>>()?;
		let mut outer = OuterOptimizer::new(OUTER_LR, OUTER_MOMENTUM, len);
		for round in 0..rounds {
			let seed = |member: u8| {
				let key = [tag.as_bytes(), &job.to_le_bytes(), &round.to_le_bytes()];
				let mut bytes = blake2_256(&key.concat());
				bytes[0] ^= member;
				Hash::from(bytes)
			};
			let base = global.clone();
			let (mut sent, mut states) = (Vec::new(), Vec::new());
			for (i, m) in members.iter_mut().enumerate() {
				let batches = (0..u64::from(setup.steps)).map(|step| {
					let indices =
						batch_indices(&seed(i as u8), step, BATCH, setup.data.train_len());
					setup.data.train_batch(&indices, &Device::Cpu)
				});
				let mut trajectory = Vec::new();
				let delta = train_round_observed(&mut m.trainer, &base, batches, |_, t| {
					if record {
						trajectory.push(t.state()?);
					}
					Ok(())
				})?
				.delta;
				sent.push(m.compressor.compress(&delta, None)?.0.decompress());
				states.push(trajectory);
			}
			let mean: Vec<f32> =
				(0..len).map(|j| sent.iter().map(|s| s[j]).sum::<f32>() / 3.0).collect();
			outer.step(&mut global, &mean)?;
			// The provider on other data was given batches it did not train on.
			let seeds = (0..3)
				.map(|i| if i == WRONG as u8 { seed(ASSIGNED_TO_WRONG) } else { seed(i) })
				.collect();
			each(RoundRecord { job, round, base, sent, seeds, states })?;
		}
	}
	Ok(())
}
