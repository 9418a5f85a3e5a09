//! The canonical state every participant holds at the start of a round (weights, outer
//! momentum and their hashes), and the checks that make a restored or fetched checkpoint
//! this job's state.

use std::{path::PathBuf, sync::Arc};

use grid_primitives::job::{RoundIndex, TrainingParams};
use libp2p::PeerId;

use super::{
	checkpoint_view::CheckpointView,
	messages::{state_hash, Digest},
};
use crate::{
	checkpoint::Checkpoint,
	diloco::OuterOptimizer,
	error::{Error, Result},
	params::Manifest,
};

/// The job's outer optimizer settings (every participant uses the same).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OuterSettings {
	/// Outer learning rate.
	pub lr: f32,
	/// Outer Nesterov momentum.
	pub momentum: f32,
}

impl OuterSettings {
	/// A fresh outer optimizer for `len` parameters.
	pub fn optimizer(self, len: usize) -> OuterOptimizer {
		OuterOptimizer::new(self.lr, self.momentum, len)
	}
}

/// How a round's aggregate moves the model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OuterMove {
	/// The job's outer step (its momentum) at the round's learning rate: the job's, or
	/// lower in its anneal (`TrainingParams::outer_lr_in`).
	Step {
		/// The outer learning rate.
		lr: f32,
	},
	/// To the mean of the trainers' models, the momentum left alone: a job's dense rounds
	/// (`TrainingParams::dense_rounds`).
	Average,
}

impl OuterMove {
	/// The move of `round` in a job of `job_rounds` rounds.
	pub fn in_round<B>(
		training: &TrainingParams<B>,
		round: RoundIndex,
		job_rounds: RoundIndex,
	) -> Self {
		if training.is_dense_round(round) {
			OuterMove::Average
		} else {
			// As `OuterOptimizer::from_params` converts the job's rate, so a job without an
			// anneal steps exactly as before it existed.
			OuterMove::Step { lr: training.outer_lr_in(round, job_rounds).to_f64() as f32 }
		}
	}
}

/// The global state at the start of a round.
pub struct GlobalState {
	/// The round it is the base of.
	pub round: RoundIndex,
	/// The model's parameters, flat; shared, never changed in place, by whoever needs this
	/// round's base (the training thread, the evaluator, the fraud desk's evidence), so
	/// they hold one copy of it, not one each.
	pub weights: Arc<Vec<f32>>,
	/// The outer optimizer (its momentum is part of the state).
	pub outer: OuterOptimizer,
	/// Hash of the weights under the job's manifest.
	pub model_hash: Digest,
	/// Hash of round, model and momentum: what commitments name as their base.
	pub state_hash: Digest,
	/// Known to be the network's: computed here from a verified base, or the initial
	/// model. A restored or fetched state is not, until a round's commitments confirm it.
	pub verified: bool,
}

impl GlobalState {
	/// The state at `round` (not yet verified).
	pub fn new(
		round: RoundIndex,
		manifest: &Manifest,
		weights: Vec<f32>,
		outer: OuterOptimizer,
	) -> Result<Self> {
		Self::shared(round, manifest, Arc::new(weights), outer)
	}

	/// [`GlobalState::new`] over weights that others may hold too.
	pub fn shared(
		round: RoundIndex,
		manifest: &Manifest,
		weights: Arc<Vec<f32>>,
		outer: OuterOptimizer,
	) -> Result<Self> {
		let model_hash = manifest.model_hash(&weights)?;
		let state_hash = state_hash(round, &model_hash, outer.velocity());
		Ok(GlobalState { round, weights, outer, model_hash, state_hash, verified: false })
	}

	/// The job's initial state: everyone derives the same model from the job's seed.
	pub fn initial(manifest: &Manifest, weights: Vec<f32>, outer: OuterSettings) -> Result<Self> {
		let optimizer = outer.optimizer(weights.len());
		let mut state = GlobalState::new(0, manifest, weights, optimizer)?;
		state.verified = true;
		Ok(state)
	}

	/// The state a checkpoint holds, if it has this job's layout (not yet verified).
	pub fn restore(ck: Checkpoint, manifest: &Manifest, outer: OuterSettings) -> Result<Self> {
		ck.check_manifest(manifest)?;
		let mut optimizer = outer.optimizer(ck.weights.len());
		optimizer.set_velocity(ck.velocity)?;
		GlobalState::new(ck.round, manifest, ck.weights, optimizer)
	}

	/// A peer's checkpoint (`bytes`), answered as the base of round `at` with state hash
	/// `claimed`: the state, if it is what the peer says it is.
	pub fn adopt(
		peer: PeerId,
		at: RoundIndex,
		claimed: Digest,
		bytes: &[u8],
		manifest: &Manifest,
		outer: OuterSettings,
	) -> Result<Self> {
		let origin = PathBuf::from(format!("state from {peer}"));
		let ck = Checkpoint::from_bytes(bytes, &origin)?;
		ck.check_manifest(manifest)?;
		if ck.round != at {
			return Err(Error::Checkpoint {
				path: origin,
				reason: "round differs from the answer's".into(),
			});
		}
		let state = GlobalState::restore(ck, manifest, outer)?;
		if state.state_hash != claimed {
			return Err(Error::Checkpoint {
				path: origin,
				reason: "state hash does not match".into(),
			});
		}
		Ok(state)
	}

	/// The state's checkpoint, read from the state's own weights and momentum, which it
	/// shares (what a trainer serves joiners and writes to disk).
	pub fn checkpoint_view(&self, manifest: &Manifest) -> Result<CheckpointView> {
		let velocity = self.outer.shared_velocity();
		CheckpointView::new(self.round, manifest, self.weights.clone(), velocity)
	}
}
