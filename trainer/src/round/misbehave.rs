//! The attacker behaviours a trainer can be told to show, for tests and benchmarks of the
//! defences: poisoned updates, equivocation and lazy (untrained) work. All of them live
//! here so the honest path never branches on them except through this module.

use grid_primitives::job::RoundIndex;
use serde::Deserialize;
use sp_crypto_hashing::blake2_256;

use super::messages::Commitment;
use crate::{diloco::LocalRound, rng::Rng};

/// Ways a Byzantine trainer can misbehave.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Misbehaviour {
	/// Send a poisoned update.
	pub poison: Option<Poison>,
	/// Sign two different commitments each round.
	#[serde(default)]
	pub equivocate: bool,
	/// Skip training: send noise and claim the work (a lazy trainer).
	#[serde(default)]
	pub lazy: bool,
}

/// How an update is poisoned.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Poison {
	/// Δ × factor.
	Scale {
		/// Multiplier.
		factor: f32,
	},
	/// Δ × −factor.
	Flip {
		/// Multiplier.
		factor: f32,
	},
	/// Gaussian noise of the honest update's norm × factor.
	Random {
		/// Multiplier.
		factor: f32,
	},
}

/// Corrupts an update the way a Byzantine trainer would.
pub fn poison_update(delta: &mut [f32], poison: Poison, round: RoundIndex) {
	match poison {
		Poison::Scale { factor } => delta.iter_mut().for_each(|d| *d *= factor),
		Poison::Flip { factor } => delta.iter_mut().for_each(|d| *d *= -factor),
		Poison::Random { factor } => {
			let norm = factor as f64 * crate::aggregate::norm(delta);
			let noise = noise(delta.len(), norm, u64::from(round) ^ 0xbad);
			delta.copy_from_slice(&noise);
		}
	}
}

/// Gaussian noise of length `len` and L2 norm `norm`.
pub fn noise(len: usize, norm: f64, seed: u64) -> Vec<f32> {
	let mut rng = Rng::new(seed);
	let raw: Vec<f64> = (0..len).map(|_| rng.normal()).collect();
	let scale = norm / raw.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
	raw.into_iter().map(|x| (x * scale) as f32).collect()
}

/// Inner steps a lazy trainer claims when nothing caps a round.
pub const LAZY_STEPS: u32 = 100;
/// Norm of a lazy trainer's noise before it has seen an aggregate.
pub const LAZY_FIRST_NORM: f64 = 0.1;

/// A lazy trainer's round: no training. Called once an honest trainer would be done, it
/// claims `steps` full batches for Gaussian noise the size of the last aggregated update
/// (small enough to pass norm screening, so only a replay can tell).
pub fn lazy_round(len: usize, norm: f64, round: RoundIndex, steps: u32, batch: u64) -> LocalRound {
	tracing::warn!("round {round}: sending noise instead of training (lazy)");
	LocalRound {
		delta: noise(len, norm, u64::from(round) ^ 0x1a2e),
		samples: u64::from(steps) * batch,
		steps,
		mean_loss: 1.0,
	}
}

/// The second, different commitment an equivocating trainer signs for the same round.
pub fn equivocation_twin(commitment: &Commitment) -> Commitment {
	let mut other = commitment.clone();
	other.update_hash = blake2_256(&other.update_hash);
	other.samples += 1;
	other
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn poisons_change_updates_as_described() {
		let honest = vec![0.5f32, -1.0, 2.0];
		let mut d = honest.clone();
		poison_update(&mut d, Poison::Scale { factor: 10.0 }, 0);
		assert_eq!(d, vec![5.0, -10.0, 20.0]);
		let mut d = honest.clone();
		poison_update(&mut d, Poison::Flip { factor: 1.0 }, 0);
		assert_eq!(d, vec![-0.5, 1.0, -2.0]);
		let mut d = honest.clone();
		poison_update(&mut d, Poison::Random { factor: 2.0 }, 0);
		let ratio = crate::aggregate::norm(&d) / crate::aggregate::norm(&honest);
		assert!((ratio - 2.0).abs() < 1e-4, "{ratio}");
	}
}
