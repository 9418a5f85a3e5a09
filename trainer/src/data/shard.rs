//! Which samples a participant trains on: a pure function of the round's on-chain seed and
//! (job, round, provider), so the data behind any contribution can be re-derived by a
//! challenger. The derivation itself lives in `grid_primitives::work`, shared with the
//! chain and the verifiers.

use codec::Encode;
use grid_primitives::{
	job::{JobId, RoundIndex},
	work::{data_seed, sample_index},
	Hash,
};

/// `count` sample indices in `0..population` for `provider` (its account, SCALE-encoded as
/// the chain encodes it) in `round` of `job`, whose on-chain seed is `round_seed`: drawn
/// uniformly with replacement by [`sample_index`] from [`data_seed`]. Participants are not
/// coordinated (any subset may take part in a round), so independent draws rather than a
/// partition; with a large population, overlaps between participants are rare. Each index
/// depends only on its position, so asking for more samples extends, never reshuffles, the
/// shard: a node that ran more inner steps trained on a superset of a slower node's data.
pub fn shard<A: Encode>(
	round_seed: &Hash,
	job: JobId,
	round: RoundIndex,
	provider: &A,
	population: u64,
	count: usize,
) -> Vec<u64> {
	let seed = data_seed(round_seed, job, round, provider);
	(0..count as u64).filter_map(|i| sample_index(&seed, i, population)).collect()
}

/// The sample indices of inner step `step` (batches of `batch`) for a participant whose data
/// seed is `seed`: the trainer draws its batches this way, and a verifier replaying its
/// contribution draws the same ones.
pub fn batch_indices(seed: &Hash, step: u64, batch: u64, population: u64) -> Vec<u64> {
	(step * batch..(step + 1) * batch).filter_map(|k| sample_index(seed, k, population)).collect()
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn shards_are_deterministic_and_differ_by_job_round_and_provider() {
		let seed = Hash::repeat_byte(1);
		let a = shard(&seed, 1, 2, b"alice", 1_000_000, 64);
		assert_eq!(a, shard(&seed, 1, 2, b"alice", 1_000_000, 64));
		assert!(a.iter().all(|&i| i < 1_000_000));
		assert_ne!(a, shard(&seed, 1, 2, b"bob", 1_000_000, 64));
		assert_ne!(a, shard(&seed, 1, 3, b"alice", 1_000_000, 64));
		assert_ne!(a, shard(&seed, 2, 2, b"alice", 1_000_000, 64));
		assert_ne!(a, shard(&Hash::repeat_byte(2), 1, 2, b"alice", 1_000_000, 64));
		// Prefix-stable: more samples extend the same shard.
		assert_eq!(&shard(&seed, 1, 2, b"alice", 1_000_000, 128)[..64], &a[..]);
		assert!(shard(&seed, 1, 2, b"alice", 0, 5).is_empty());
	}

	#[test]
	fn shards_cover_the_population_evenly() {
		let mut counts = [0u32; 16];
		for i in shard(&Hash::zero(), 9, 0, b"p", 16, 16_000) {
			counts[i as usize] += 1;
		}
		assert!(counts.iter().all(|&c| (850..1150).contains(&c)), "{counts:?}");
	}
}
