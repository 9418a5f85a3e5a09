//! A job's blocking rounds computed in one process, as its trainers compute them when every
//! member's update is aggregated every round: the same initial model, data draws, inner
//! trainer, compressor (level 0 of the ladder, as a job without adaptive compression
//! sends), aggregation and outer step, built by the same functions the daemon's setup calls
//! ([`JobConfig::inner_trainer`], [`JobConfig::compressor`], [`JobConfig::outer`],
//! [`decide::step`]). It is what the daemon must compute to the bit: the network tests check
//! the daemon's model hash against it round by round, and `bench_net --only speed` runs it
//! beside the daemon and DDP, so a gap between the daemon's loss and DDP's is told apart
//! into what the network cost and what the algorithm and the seed did.

use std::sync::Arc;

use candle_core::Device;
use libp2p::PeerId;

use crate::{
	aggregate::Contribution,
	compress::{adaptive::AdaptiveCompressor, CompressedUpdate, Layout},
	daemon::config::JobConfig,
	data::{batch_indices, Dataset},
	diloco::train_round,
	error::{Error, Result},
	params::Manifest,
	round::{
		contribute::round_seed,
		decide,
		state::{GlobalState, OuterMove},
	},
	train::InnerTrainer,
};

/// One member: its identity (which seeds its data draws), inner trainer and compressor,
/// each carried from round to round as a trainer carries them.
struct Member {
	peer: PeerId,
	trainer: InnerTrainer,
	compressor: AdaptiveCompressor,
}

/// A job's members training it in one process, round by round.
pub struct Reference {
	job: JobConfig,
	dataset: Arc<Dataset>,
	device: Device,
	manifest: Manifest,
	/// In canonical (peer id) order: the order a round's set is aggregated in.
	members: Vec<Member>,
	state: GlobalState,
}

impl Reference {
	/// The job at round 0 with `members` (each a trainer's peer id) on `device`. Blocking
	/// rounds from the seeded initialisation only: a job that overlaps rounds or starts
	/// from given weights is refused.
	pub fn new(
		job: &JobConfig,
		dataset: Arc<Dataset>,
		members: &[PeerId],
		device: &Device,
	) -> Result<Self> {
		if job.training.overlap_steps > 0 || job.initial_weights.is_some() {
			return Err(Error::Config(
				"the in-process reference computes blocking rounds from the job's seeded \
				 initialisation: overlap_steps must be 0 and initial_weights unset"
					.into(),
			));
		}
		if members.is_empty() {
			return Err(Error::Config("the in-process reference needs a member".into()));
		}
		let mut peers = members.to_vec();
		peers.sort();
		peers.dedup();
		let trainers =
			peers.iter().map(|_| job.inner_trainer(device)).collect::<Result<Vec<_>>>()?;
		// Every member derives the same initial model: the first one's is the job's.
		let params = trainers[0].model().params();
		let manifest = params.manifest();
		let state = GlobalState::initial(&manifest, params.flatten()?, job.outer())?;
		let mut members = Vec::with_capacity(peers.len());
		for (peer, trainer) in peers.into_iter().zip(trainers) {
			let compressor = job.compressor(Layout::of(&manifest))?;
			members.push(Member { peer, trainer, compressor });
		}
		Ok(Reference {
			job: job.clone(),
			dataset,
			device: device.clone(),
			manifest,
			members,
			state,
		})
	}

	/// The state the next round trains from (after [`Reference::round`]s, the decided one).
	pub fn state(&self) -> &GlobalState {
		&self.state
	}

	/// Trains the open round: every member `steps` inner steps (at most the job's cap) on its
	/// own draw from the current state, then aggregates every update with the job's rule and
	/// takes the outer step. An update the rule's screening leaves out goes back into its
	/// sender's error feedback, as a trainer's does.
	pub fn round(&mut self, steps: u32) -> Result<&GlobalState> {
		let round = self.state.round;
		let steps = self.job.train_cap().map_or(steps, |cap| steps.min(cap));
		let (batch, population) =
			(u64::from(self.job.training.batch_size), self.dataset.train_len());
		let base = self.state.weights.clone();
		let mut sent = Vec::with_capacity(self.members.len());
		for m in &mut self.members {
			let seed = round_seed(None, self.job.id, round, &m.peer);
			let (dataset, device) = (&self.dataset, &self.device);
			let batches = (0..u64::from(steps))
				.map(|i| dataset.train_batch(&batch_indices(&seed, i, batch, population), device));
			let local = train_round(&mut m.trainer, &base, batches)?;
			let scheme = self.job.training.compression_in(round);
			let (update, bytes, _level) = m.compressor.compress_as(scheme, &local.delta, None)?;
			// What a peer aggregates is what it decoded from the wire.
			let received = CompressedUpdate::decode(&bytes)?;
			sent.push((
				update,
				Contribution { update: Arc::new(received), samples: local.samples },
			));
		}
		let peers: Vec<PeerId> = self.members.iter().map(|m| m.peer).collect();
		let contributions: Vec<Contribution> = sent.iter().map(|(_, c)| c.clone()).collect();
		let rule = self.job.aggregation;
		let state = GlobalState {
			weights: self.state.weights.clone(),
			outer: self.state.outer.clone(),
			..self.state
		};
		let decided = decide::step(
			state,
			&self.manifest,
			&contributions,
			&peers,
			rule,
			self.job.screen_ratio,
			OuterMove::in_round(&self.job.training, round, self.job.rounds),
		)?;
		for (m, (update, _)) in self.members.iter_mut().zip(&sent) {
			if !decided.accepted.contains(&m.peer) {
				m.compressor.give_back(update)?;
			}
		}
		self.state = decided.next;
		Ok(&self.state)
	}
}

#[cfg(test)]
mod tests {
	use libp2p::identity::Keypair;

	use super::*;
	use crate::data::MnistDataset;

	fn job(extra: &str) -> JobConfig {
		#[derive(serde::Deserialize)]
		struct File {
			job: JobConfig,
		}
		let text = format!(
			r#"
			[job]
			id = 3
			rounds = 2
			dataset = "mnist"
			model = {{ kind = "mlp", hidden = 8, layers = 1 }}
			aggregation = {{ rule = "mean" }}
			[job.training]
			batch_size = 8
			inner = {{ optimizer = "adamw", lr = 0.003, warmup_steps = 1 }}
			compression = {{ scheme = "topk", chunk = 64, k = 8, value_bits = 1 }}
			{extra}
			"#
		);
		toml::from_str::<File>(&text).unwrap().job
	}

	fn peers(n: usize) -> Vec<PeerId> {
		(0..n).map(|_| Keypair::generate_ed25519().public().to_peer_id()).collect()
	}

	fn mnist() -> Arc<Dataset> {
		Arc::new(Dataset::Mnist(MnistDataset::shipped().unwrap()))
	}

	/// The outer anneal changes the rounds it spans and no other: the last of two rounds
	/// steps at outer lr 1 instead of the job's 3.
	#[test]
	fn an_outer_anneal_changes_only_its_rounds() {
		let members = peers(2);
		let mut plain = Reference::new(&job(""), mnist(), &members, &Device::Cpu).unwrap();
		let anneal = "outer_anneal = { rounds = 1, to_lr = 1.0 }";
		let mut annealed = Reference::new(&job(anneal), mnist(), &members, &Device::Cpu).unwrap();
		let first = plain.round(3).unwrap().model_hash;
		assert_eq!(annealed.round(3).unwrap().model_hash, first, "round 0 is not annealed");
		let base = plain.state().weights.clone();
		let (p, a) =
			(plain.round(3).unwrap().weights.to_vec(), annealed.round(3).unwrap().weights.to_vec());
		assert_ne!(a, p, "round 1 steps at lr 1");
		// The same aggregate (momentum 0): at a third of the rate the model moves a third as far.
		let moved = |w: &[f32]| -> f64 {
			w.iter().zip(base.iter()).map(|(x, b)| f64::from(x - b).powi(2)).sum::<f64>().sqrt()
		};
		let ratio = moved(&a) / moved(&p);
		assert!((ratio - 1.0 / 3.0).abs() < 1e-3, "{ratio}");
	}

	/// Members given in any order train the same rounds (the set is aggregated in peer-id
	/// order), and each round moves the model and advances the state's round.
	#[test]
	fn rounds_do_not_depend_on_the_members_order() {
		let members = peers(3);
		let reversed: Vec<PeerId> = members.iter().rev().copied().collect();
		let mut a = Reference::new(&job(""), mnist(), &members, &Device::Cpu).unwrap();
		let mut b = Reference::new(&job(""), mnist(), &reversed, &Device::Cpu).unwrap();
		let initial = a.state().model_hash;
		for round in 1..=2 {
			let hash = a.round(3).unwrap().model_hash;
			assert_eq!(hash, b.round(3).unwrap().model_hash);
			assert_eq!(a.state().round, round);
			assert_ne!(hash, initial);
		}
	}

	/// A job the reference cannot compute as its trainers do is refused, saying why.
	#[test]
	fn overlapped_jobs_and_no_members_are_refused() {
		let overlapped = job("overlap_steps = 2");
		let err = Reference::new(&overlapped, mnist(), &peers(2), &Device::Cpu).err().unwrap();
		assert!(err.to_string().contains("overlap_steps must be 0"), "{err}");
		let err = Reference::new(&job(""), mnist(), &[], &Device::Cpu).err().unwrap();
		assert!(err.to_string().contains("needs a member"), "{err}");
	}
}
