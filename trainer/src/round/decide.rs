//! Deciding a round: whether this trainer's base is the network's, which updates make the
//! canonical set, their aggregate and the outer step that gives the next round's state.

use std::sync::Arc;

use libp2p::PeerId;

use super::{
	book::RoundBook,
	fetch::Fetches,
	fraud::Received,
	messages::{Digest, SignedCommitment},
	state::{GlobalState, OuterMove},
};
use crate::{
	aggregate::{aggregate, norm, Contribution, Rule},
	error::Result,
	params::Manifest,
};

/// How chain jobs aggregate: every participant must use the same rule to reach the same
/// model hash, and the spec has no field for it yet, so it is fixed by the protocol: after
/// norm screening, each update clipped to the median norm, then a coordinate-wise trimmed
/// mean on each coordinate's support (one value off each end).
pub const CHAIN_AGGREGATION: Rule = Rule::ClippedTrimmedMean { trim: 1 };
/// Updates above this multiple of the median norm are screened out (chain jobs).
pub const CHAIN_SCREEN_RATIO: f64 = 4.0;

/// Why a trainer cannot decide the round from its state and must fetch the network's.
#[derive(Clone, Debug, PartialEq)]
pub enum Resync {
	/// It observed a round, heard nothing and could not confirm its unverified state.
	NothingHeard,
	/// Most committers trained from another base.
	OtherBase {
		/// The majority's base state.
		majority: Digest,
		/// How many trained from it.
		count: usize,
		/// This trainer's.
		own: Digest,
	},
}

impl std::fmt::Display for Resync {
	fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
		match self {
			Resync::NothingHeard => write!(f, "no commitments heard"),
			Resync::OtherBase { majority, count, own } => write!(
				f,
				"{count} peers trained from {}, not from this trainer's {}",
				hex::encode(majority),
				hex::encode(own)
			),
		}
	}
}

/// The base the round's set is taken from: this trainer's state, unless the round shows it
/// is not the network's.
pub fn check_base(
	book: &RoundBook,
	state: &GlobalState,
	contributed: bool,
) -> Result<Digest, Resync> {
	if !contributed && book.is_empty() && !state.verified {
		return Err(Resync::NothingHeard);
	}
	if let Some((majority, count)) = book.majority_base() {
		if majority != state.state_hash {
			return Err(Resync::OtherBase { majority, count, own: state.state_hash });
		}
	}
	Ok(state.state_hash)
}

/// The set's updates that arrived, in the set's (canonical) order.
#[derive(Default)]
pub struct Gathered {
	/// The updates with the samples they claim.
	pub contributions: Vec<Contribution>,
	/// Their senders, in the same order.
	pub members: Vec<PeerId>,
	/// Members whose update did not arrive.
	pub missing: Vec<PeerId>,
	/// The updates as evidence for fraud checks (when kept).
	pub evidence: Vec<Received>,
	/// Copies' claims as evidence (when kept): the copier's commitment with the update it
	/// named, which its original sender sent.
	pub copies: Vec<Received>,
}

/// Collects the arrived updates of `set`; `keep_evidence` also copies them, and the claims
/// of `copies` (copier, original's sender, the copy's commitment) on updates that arrived,
/// for the fraud desk.
pub fn gather(
	set: &[(PeerId, SignedCommitment)],
	copies: &[(PeerId, PeerId, SignedCommitment)],
	fetches: &Fetches,
	keep_evidence: bool,
) -> Gathered {
	let mut gathered = Gathered::default();
	for (peer, signed) in set {
		let Some(update) = fetches.update(&signed.commitment.update_hash) else {
			gathered.missing.push(*peer);
			continue;
		};
		let update = Arc::new(update.clone());
		if keep_evidence {
			let c = &signed.commitment;
			gathered.evidence.push(Received {
				peer: *peer,
				steps: c.steps,
				start: c.start,
				trajectory: c.trajectory,
				update: update.clone(),
			});
		}
		gathered.contributions.push(Contribution { update, samples: signed.commitment.samples });
		gathered.members.push(*peer);
	}
	if keep_evidence {
		for (copier, original, signed) in copies {
			let Some(sent) = gathered.evidence.iter().find(|r| r.peer == *original) else {
				continue;
			};
			let c = &signed.commitment;
			let update = sent.update.clone();
			gathered.copies.push(Received {
				peer: *copier,
				steps: c.steps,
				start: c.start,
				trajectory: c.trajectory,
				update,
			});
		}
	}
	gathered
}

/// A decided round.
pub struct Decided {
	/// The next round's state (verified: computed from a verified base).
	pub next: GlobalState,
	/// Members whose updates went into the aggregate.
	pub accepted: Vec<PeerId>,
	/// Members whose updates screening rejected.
	pub rejected: Vec<PeerId>,
	/// Norm of the aggregated update, when there was one.
	pub update_norm: Option<f64>,
}

/// Aggregates the gathered updates with `rule` (after screening at `screen_ratio`) and
/// moves `state` by the aggregate as `outer` says.
pub fn step(
	mut state: GlobalState,
	manifest: &Manifest,
	contributions: &[Contribution],
	members: &[PeerId],
	rule: Rule,
	screen_ratio: Option<f64>,
	outer: OuterMove,
) -> Result<Decided> {
	let (mut accepted, mut rejected, mut update_norm) = (Vec::new(), Vec::new(), None);
	if !contributions.is_empty() {
		let agg = aggregate(contributions, rule, screen_ratio)?;
		let stays_finite = match outer {
			OuterMove::Step { lr } => {
				state.outer.step_at_stays_finite(lr, &state.weights, &agg.delta)?
			}
			OuterMove::Average => state.outer.average_stays_finite(&state.weights, &agg.delta)?,
		};
		if stays_finite {
			accepted = agg.accepted.iter().map(|&i| members[i]).collect();
			rejected = agg.rejected.iter().map(|&i| members[i]).collect();
			update_norm = Some(norm(&agg.delta));
			// A copy only while another holder still reads this round's base.
			let weights: &mut Vec<f32> = Arc::make_mut(&mut state.weights);
			match outer {
				OuterMove::Step { lr } => state.outer.step_at(lr, weights, &agg.delta)?,
				OuterMove::Average => state.outer.average(weights, &agg.delta)?,
			}
		} else {
			// Every node sees the same and leaves the model where it is, every update out
			// (their senders' values go back into their error feedback), rather than go on
			// from infinities: training from them failed, and ended every trainer's job.
			rejected = members.to_vec();
		}
	}
	let mut next = GlobalState::shared(state.round + 1, manifest, state.weights, state.outer)?;
	next.verified = true;
	Ok(Decided { next, accepted, rejected, update_norm })
}

#[cfg(test)]
mod tests {
	use candle_core::Device;
	use grid_primitives::job::{MlpConfig, ModelSpec};
	use libp2p::identity::Keypair;

	use super::*;
	use crate::{
		model::Model,
		round::{
			messages::{tests::commitment, Commitment},
			state::OuterSettings,
		},
	};

	const OUTER: OuterSettings = OuterSettings { lr: 0.7, momentum: 0.9 };

	/// The job's own outer step ([`OUTER`]'s rate).
	const JOB_STEP: OuterMove = OuterMove::Step { lr: OUTER.lr };

	fn initial() -> (Manifest, GlobalState) {
		let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 4, layers: 1 });
		let model = Model::new(spec, b"decide", &Device::Cpu).unwrap();
		let manifest = model.params().manifest();
		let weights = model.params().flatten().unwrap();
		let state = GlobalState::initial(&manifest, weights, OUTER).unwrap();
		(manifest, state)
	}

	/// A commitment by a fresh key to an update trained from `base`.
	fn commit(base: Digest, update: u8) -> (PeerId, SignedCommitment) {
		let key = Keypair::generate_ed25519();
		let commitment = Commitment { base_state: base, ..commitment(0, update) };
		(key.public().to_peer_id(), commitment.sign(&key).unwrap())
	}

	#[test]
	fn the_base_is_checked_against_what_the_round_heard() {
		let (_, mut state) = initial();
		let mut book = RoundBook::new(7, 0, crate::round::book::tests::RULE);
		assert_eq!(check_base(&book, &state, false), Ok(state.state_hash));
		state.verified = false;
		assert_eq!(check_base(&book, &state, false), Err(Resync::NothingHeard));
		assert_eq!(check_base(&book, &state, true), Ok(state.state_hash), "its own work counts");
		// Two peers trained from another base, one from ours: the majority wins.
		for (i, base) in [[9; 32], [9; 32], state.state_hash].into_iter().enumerate() {
			let (peer, signed) = commit(base, i as u8);
			book.offer(peer, signed);
		}
		let resync = check_base(&book, &state, true).unwrap_err();
		assert_eq!(
			resync,
			Resync::OtherBase { majority: [9; 32], count: 2, own: state.state_hash }
		);
		assert!(resync.to_string().contains("2 peers trained from 0909"), "{resync}");
	}

	#[test]
	fn a_round_without_updates_keeps_the_weights_and_moves_on() {
		let (manifest, state) = initial();
		let (weights, hash) = (state.weights.clone(), state.model_hash);
		let decided = step(state, &manifest, &[], &[], Rule::Mean, None, JOB_STEP).unwrap();
		assert_eq!(decided.next.round, 1);
		assert!(decided.next.verified);
		assert_eq!(decided.next.weights, weights);
		assert_eq!(decided.next.model_hash, hash);
		assert!(decided.accepted.is_empty() && decided.update_norm.is_none());
	}

	/// Two peers send huge finite values to a job that aggregates by an unscreened mean: the
	/// outer step would overflow f32, so the round leaves the model and momentum as they were
	/// and every update out (training from infinities ended every trainer's job).
	#[test]
	fn a_round_whose_aggregate_would_overflow_the_model_leaves_it_as_it_was() {
		let peers: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
		let (manifest, state) = initial();
		let (weights, hash) = (state.weights.clone(), state.model_hash);
		let n = weights.len();
		let contributions = vec![
			Contribution::dense(vec![0.01; n], 10),
			Contribution::dense(vec![f32::MAX; n], 1_000),
			Contribution::dense(vec![f32::MAX; n], 1_000),
		];
		let mean = Rule::Mean;
		let decided = step(state, &manifest, &contributions, &peers, mean, None, JOB_STEP).unwrap();
		assert_eq!(decided.next.round, 1);
		assert_eq!(decided.next.weights, weights);
		assert_eq!(decided.next.model_hash, hash);
		assert!(decided.next.outer.velocity().iter().all(|v| *v == 0.0));
		assert!(decided.accepted.is_empty() && decided.update_norm.is_none());
		assert_eq!(decided.rejected, peers);
		// Ordinary updates still move it.
		let (manifest, state) = initial();
		let ordinary = vec![Contribution::dense(vec![0.01; n], 10)];
		let decided = step(state, &manifest, &ordinary, &peers[..1], mean, None, JOB_STEP).unwrap();
		assert_ne!(decided.next.weights, weights);
		assert_eq!(decided.accepted, peers[..1]);
	}

	/// A dense round moves the model to the trainers' mean and leaves the momentum alone;
	/// the job's outer step (lr 0.7, momentum 0.9 here) moves it elsewhere.
	#[test]
	fn a_dense_round_averages_and_the_others_step() {
		let peers: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
		let deltas = [0.03f32, 0.01, 0.02];
		let run = |outer: OuterMove| {
			let (manifest, state) = initial();
			let before = state.weights.clone();
			let contributions: Vec<Contribution> =
				deltas.iter().map(|&d| Contribution::dense(vec![d; before.len()], 10)).collect();
			let decided =
				step(state, &manifest, &contributions, &peers, Rule::Mean, None, outer).unwrap();
			(before, decided.next)
		};
		let (before, averaged) = run(OuterMove::Average);
		for (a, b) in averaged.weights.iter().zip(before.iter()) {
			assert!((b - a - 0.02).abs() < 1e-6, "{b} - {a}");
		}
		assert!(averaged.outer.velocity().iter().all(|v| *v == 0.0), "momentum untouched");
		let (_, stepped) = run(JOB_STEP);
		assert_ne!(stepped.model_hash, averaged.model_hash);
		assert_ne!(stepped.state_hash, averaged.state_hash);
	}

	/// A round in the job's outer anneal steps at its own rate: half the job's rate moves the
	/// model half as far (the first step's momentum is Δ itself), the momentum alike.
	#[test]
	fn an_annealed_round_steps_at_its_own_rate() {
		let peers: Vec<PeerId> = (0..2).map(|_| PeerId::random()).collect();
		let run = |outer: OuterMove| {
			let (manifest, state) = initial();
			let before = state.weights.clone();
			let n = before.len();
			let contributions = vec![
				Contribution::dense(vec![0.01; n], 10),
				Contribution::dense(vec![0.03; n], 10),
			];
			let decided =
				step(state, &manifest, &contributions, &peers, Rule::Mean, None, outer).unwrap();
			let moved: Vec<f32> =
				before.iter().zip(decided.next.weights.iter()).map(|(b, a)| b - a).collect();
			(moved, decided.next)
		};
		let (full, job) = run(JOB_STEP);
		let (half, annealed) = run(OuterMove::Step { lr: OUTER.lr / 2.0 });
		for (f, h) in full.iter().zip(&half) {
			// 0.7 × 0.02 × (1 + 0.9) at the job's rate.
			assert!((f - 0.0266).abs() < 1e-6 && (f - 2.0 * h).abs() < 1e-6, "{f} {h}");
		}
		assert_eq!(job.outer.velocity(), annealed.outer.velocity(), "momentum is Δ either way");
		assert_ne!(job.model_hash, annealed.model_hash);
	}

	#[test]
	fn screened_updates_are_left_out_and_the_rest_step_the_model() {
		let (manifest, state) = initial();
		let n = state.weights.len();
		let peers: Vec<PeerId> = (0..4).map(|_| PeerId::random()).collect();
		let mut contributions: Vec<Contribution> =
			(0..3).map(|_| Contribution::dense(vec![0.01; n], 10)).collect();
		contributions.push(Contribution::dense(vec![100.0; n], 10));
		let before = state.weights.clone();
		let decided =
			step(state, &manifest, &contributions, &peers, Rule::Mean, Some(3.0), JOB_STEP)
				.unwrap();
		assert_eq!(decided.accepted, peers[..3].to_vec());
		assert_eq!(decided.rejected, vec![peers[3]]);
		assert!(
			decided.next.weights.iter().zip(before.iter()).all(|(a, b)| a < b),
			"Δ is subtracted"
		);
		let norm = decided.update_norm.unwrap();
		assert!((norm - 0.01 * (n as f64).sqrt()).abs() < 1e-4, "{norm}");
	}
}
