//! The attacker behaviours a trainer can be told to show, for tests and benchmarks of the
//! defences: poisoned updates, equivocation, lazy (untrained) work, copies of another
//! participant's update, the previous round's direction sent again, training on the wrong
//! data, claims of more steps than were run, committee votes against the truth,
//! challenges of honest work and attestations of another result (a buyer's accounts
//! blocking the quorum). All of them live here so the honest path never branches on
//! them except through this module. `bench/redteam.sh` runs each of them in real trainer
//! processes next to honest ones (`tests/tests/attackers.rs`).

use grid_primitives::{job::RoundIndex, work::Verdict, Hash};
use libp2p::PeerId;
use serde::Deserialize;
use sp_crypto_hashing::blake2_256;

use super::{
	fraud::{CheckRequest, FraudPort},
	messages::{Commitment, Equivocation},
};
use crate::{diloco::LocalRound, rng::Rng, trajectory::StepState, work_state::WorkState};

/// Ways a Byzantine trainer can misbehave.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Misbehaviour {
	/// Send a poisoned update.
	pub poison: Option<Poison>,
	/// Sign two different commitments each round (to the job's peers; the chain slashes it
	/// once a peer reports both).
	#[serde(default)]
	pub equivocate: bool,
	/// Sign two different proofs each round and announce both (a chain job).
	#[serde(default)]
	pub equivocate_proofs: bool,
	/// Skip training: send noise and claim the work (a lazy trainer).
	#[serde(default)]
	pub lazy: bool,
	/// Skip training: send noise at [`FORGED_NORM`] times an honest update's norm, committing
	/// a start state whose error-feedback residual is that noise over the job's decay (a
	/// replay from it compresses any round's training to about the noise) and a trajectory
	/// from its start to the same weights the claimed steps on (whose end, with that
	/// residual, gives the noise sent).
	#[serde(default)]
	pub forge_residual: bool,
	/// Skip training: send another participant's update of the round as its own.
	pub copy: Option<CopyKind>,
	/// Skip training: send the direction the previous round's aggregate moved the model,
	/// at the norm of an honest update.
	#[serde(default)]
	pub stale: bool,
	/// Train from the committed state, but on batches of a seed other than the assigned one.
	#[serde(default)]
	pub wrong_data: bool,
	/// Run only this share of the steps (in (0, 1)) and claim them all.
	pub inflate: Option<f32>,
	/// Vote against the truth on every committee it is drawn onto, and never accuse anyone
	/// (a Sybil shielding cheats).
	#[serde(default)]
	pub vote_against_truth: bool,
	/// Challenge an honest participant's contribution every round (a griefer).
	#[serde(default)]
	pub grief: bool,
	/// Serve the pieces it keeps and the other members' updates it fetched with a byte
	/// flipped (a hostile keeper and holder; its own update it serves intact).
	#[serde(default)]
	pub corrupt_serving: bool,
	/// Never serve the pieces it keeps before it holds their whole update (a keeper that
	/// stalls the members who ask it).
	#[serde(default)]
	pub withhold_pieces: bool,
	/// Attest another result than the model it computed, every round (one of a buyer's own
	/// accounts in its job: with a third of the seats they keep any round from a quorum, so
	/// nobody is paid, while they receive the honest members' updates).
	#[serde(default)]
	pub attest_other: bool,
}

/// How a copier changes the update it copies.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum CopyKind {
	/// Unchanged.
	Exact,
	/// Times `factor`.
	Scaled {
		/// Multiplier.
		factor: f32,
	},
	/// Plus Gaussian noise of the copied update's norm × `factor`.
	Noised {
		/// Share of the copied update's norm.
		factor: f32,
	},
}

impl Misbehaviour {
	/// Refuses settings that contradict each other or make no sense.
	pub fn check(&self) -> Result<(), String> {
		let replacing = [
			self.lazy,
			self.forge_residual,
			self.copy.is_some(),
			self.stale,
			self.wrong_data,
			self.inflate.is_some(),
			self.poison.is_some(),
		];
		if replacing.iter().filter(|on| **on).count() > 1 {
			return Err("misbehave: choose one of lazy, forge_residual, copy, stale, wrong_data, \
			            inflate and poison"
				.into());
		}
		if let Some(share) = self.inflate {
			if !(share > 0.0 && share < 1.0) {
				return Err(format!("misbehave.inflate must be in (0, 1), not {share}"));
			}
		}
		let factor = match self.copy {
			Some(CopyKind::Scaled { factor } | CopyKind::Noised { factor }) => factor,
			_ => 1.0,
		};
		if !factor.is_finite() {
			return Err(format!("misbehave.copy.factor must be finite, not {factor}"));
		}
		Ok(())
	}

	/// Whether it sends something other than its own training (so it need not train).
	pub fn skips_training(&self) -> bool {
		self.lazy || self.forge_residual || self.copy.is_some() || self.stale
	}
}

/// The result an `attest_other` trainer attests instead of `computed`: a hash of it, so it
/// matches nobody's.
pub fn other_result(computed: Hash) -> Hash {
	Hash::from(blake2_256(computed.as_bytes()))
}

/// Bytes as a hostile keeper serves them: one flipped (caught by the piece's hash).
pub fn corrupt(mut bytes: Vec<u8>) -> Vec<u8> {
	if let Some(b) = bytes.first_mut() {
		*b ^= 0x5a;
	}
	bytes
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

/// How many times an honest update's norm a trainer forging its residual sends: below the
/// chain jobs' norm screen (4 times the median, `CHAIN_SCREEN_RATIO`), and enough that the
/// forged residual outweighs a round's training in an int8 replay that compared only
/// compressed updates (cosine 0.96 in `bench/redteam`'s job).
pub const FORGED_NORM: f64 = 3.5;

/// The round a trainer that did not train claims: `delta` (noise, a copy or a stale
/// direction) for `steps` full batches of `batch`.
pub fn untrained_round(delta: Vec<f32>, steps: u32, batch: u64) -> LocalRound {
	LocalRound { delta, samples: u64::from(steps) * batch, steps, mean_loss: 1.0 }
}

/// The end a residual forger's trajectory states `steps` steps after its `start`: the
/// round's `base` unchanged, with the start's moments (with the forged residual, that end
/// gives the update sent).
pub fn idle_end(base: &[f32], start: &WorkState, steps: u32) -> StepState {
	StepState { step: start.step + u64::from(steps), ..StepState::at_start(base, start) }
}

/// What a copier sends for `victim`, another participant's (decompressed) update.
pub fn copy_update(victim: &[f32], copy: CopyKind, round: RoundIndex) -> Vec<f32> {
	match copy {
		CopyKind::Exact => victim.to_vec(),
		CopyKind::Scaled { factor } => victim.iter().map(|v| v * factor).collect(),
		CopyKind::Noised { factor } => {
			let norm = f64::from(factor) * crate::aggregate::norm(victim);
			let noise = noise(victim.len(), norm, u64::from(round) ^ 0xc0b1);
			victim.iter().zip(noise).map(|(v, z)| v + z).collect()
		}
	}
}

/// What a stale trainer sends: the direction from `base` back to `previous` (the move the
/// last outer step made, which followed the previous aggregate) at `norm`.
pub fn stale_update(previous: &[f32], base: &[f32], norm: f64) -> Vec<f32> {
	let direction: Vec<f32> = previous.iter().zip(base).map(|(p, b)| p - b).collect();
	let scale = norm / crate::aggregate::norm(&direction).max(1e-12);
	direction.into_iter().map(|d| (f64::from(d) * scale) as f32).collect()
}

/// The data seed a trainer on the wrong data draws its batches from instead of `seed`.
pub fn wrong_seed(seed: &Hash) -> Hash {
	Hash::from(blake2_256(&[b"grid/wrong-data".as_slice(), seed.as_bytes()].concat()))
}

/// Steps an inflating trainer runs of the `steps` it will claim.
pub fn inflated_run(steps: u32, share: f32) -> u32 {
	((f64::from(steps) * f64::from(share)).ceil() as u32).clamp(1, steps.max(1))
}

/// What an inflating trainer that ran `ran` steps of a share `share` claims, within `cap`.
pub fn inflated_claim(ran: u32, share: f32, cap: Option<u32>) -> u32 {
	let claim = (f64::from(ran) / f64::from(share)).round() as u32;
	cap.map_or(claim, |cap| claim.min(cap)).max(ran)
}

/// A fraud port that votes against every verdict its desk reached and accuses nobody: a
/// Sybil on committees, shielding cheats.
pub struct AgainstTruth<P>(pub P);

impl<P: FraudPort> FraudPort for AgainstTruth<P> {
	fn peer_seed(&self, round: RoundIndex, peer: &PeerId) -> Option<Hash> {
		self.0.peer_seed(round, peer)
	}
	fn accuse(&self, round: RoundIndex, peer: PeerId) {
		tracing::warn!("round {round}: not accusing {peer} (voting against the truth)");
	}
	fn assigned_checks(&self) -> Vec<CheckRequest> {
		self.0.assigned_checks()
	}
	fn vote(&self, challenge: u64, verdict: Verdict) {
		let lie = match verdict {
			Verdict::Valid => Verdict::Invalid,
			Verdict::Invalid => Verdict::Valid,
		};
		tracing::warn!("challenge {challenge}: voting {lie:?} where the replay says {verdict:?}");
		self.0.vote(challenge, lie)
	}
	fn report_equivocation(&self, evidence: Equivocation) {
		let round = evidence.first.commitment.round;
		tracing::warn!("round {round}: not reporting an equivocation (voting against the truth)");
	}
}

/// The participant of `accepted` (its round's aggregated senders, in canonical order) a
/// griefer challenges in `round`: another one each round, never itself.
pub fn grief_target(me: &PeerId, accepted: &[PeerId], round: RoundIndex) -> Option<PeerId> {
	let others: Vec<PeerId> = accepted.iter().filter(|p| *p != me).copied().collect();
	(!others.is_empty()).then(|| others[round as usize % others.len()])
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

	#[test]
	fn copies_stale_updates_and_inflated_claims_are_what_they_say() {
		let victim = vec![0.5f32, -1.0, 2.0];
		assert_eq!(copy_update(&victim, CopyKind::Exact, 3), victim);
		assert_eq!(copy_update(&victim, CopyKind::Scaled { factor: 2.0 }, 3), vec![1.0, -2.0, 4.0]);
		let noised = copy_update(&victim, CopyKind::Noised { factor: 0.3 }, 3);
		let added: Vec<f32> = noised.iter().zip(&victim).map(|(n, v)| n - v).collect();
		let share = crate::aggregate::norm(&added) / crate::aggregate::norm(&victim);
		assert!((share - 0.3).abs() < 1e-4, "{share}");

		let stale = stale_update(&[1.0, 1.0], &[0.0, 1.0], 5.0);
		assert_eq!(stale, vec![5.0, 0.0]);

		assert_ne!(wrong_seed(&Hash::zero()), Hash::zero());
		assert_eq!(inflated_run(100, 0.75), 75);
		assert_eq!(inflated_claim(75, 0.75, Some(100)), 100);
		assert_eq!(inflated_claim(75, 0.75, Some(90)), 90);
		assert_eq!(inflated_claim(30, 0.75, None), 40);
	}

	#[test]
	fn contradictory_or_senseless_settings_are_refused() {
		let both = Misbehaviour { lazy: true, stale: true, ..Default::default() };
		assert!(both.check().unwrap_err().contains("choose one"));
		let forging = Misbehaviour { forge_residual: true, ..Default::default() };
		assert!(forging.check().is_ok() && forging.skips_training());
		let twice = Misbehaviour { forge_residual: true, wrong_data: true, ..Default::default() };
		assert!(twice.check().unwrap_err().contains("forge_residual"));
		let none = Misbehaviour { inflate: Some(1.0), ..Default::default() };
		assert!(none.check().unwrap_err().contains("(0, 1)"));
		let nan = Misbehaviour {
			copy: Some(CopyKind::Scaled { factor: f32::NAN }),
			..Default::default()
		};
		assert!(nan.check().unwrap_err().contains("finite"));
		let fine = Misbehaviour { inflate: Some(0.75), grief: true, ..Default::default() };
		assert_eq!(fine.check(), Ok(()));
	}

	#[test]
	fn a_sybil_port_lies_in_votes_and_never_accuses_or_reports() {
		use std::sync::Mutex;
		#[derive(Default)]
		struct Seen(Mutex<(Vec<Verdict>, usize)>);
		impl FraudPort for Seen {
			fn peer_seed(&self, _: RoundIndex, _: &PeerId) -> Option<Hash> {
				None
			}
			fn accuse(&self, _: RoundIndex, _: PeerId) {
				self.0.lock().unwrap().1 += 1;
			}
			fn assigned_checks(&self) -> Vec<CheckRequest> {
				Vec::new()
			}
			fn vote(&self, _: u64, verdict: Verdict) {
				self.0.lock().unwrap().0.push(verdict);
			}
			fn report_equivocation(&self, _: Equivocation) {
				self.0.lock().unwrap().1 += 1;
			}
		}
		let port = AgainstTruth(Seen::default());
		port.vote(0, Verdict::Invalid);
		port.vote(1, Verdict::Valid);
		port.accuse(0, PeerId::random());
		let key = libp2p::identity::Keypair::generate_ed25519();
		let signed = |u| crate::round::messages::tests::commitment(3, u).sign(&key).unwrap();
		port.report_equivocation(Equivocation { first: signed(1), second: signed(2) });
		let seen = port.0 .0.lock().unwrap();
		assert_eq!(seen.0, vec![Verdict::Valid, Verdict::Invalid]);
		assert_eq!(seen.1, 0);
	}

	#[test]
	fn a_griefer_targets_another_participant_each_round() {
		let peers: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
		let me = peers[1];
		let targets: Vec<_> = (0..4).map(|r| grief_target(&me, &peers, r).unwrap()).collect();
		assert!(targets.iter().all(|t| *t != me));
		assert_ne!(targets[0], targets[1]);
		assert_eq!(grief_target(&me, &[me], 0), None);
	}
}
