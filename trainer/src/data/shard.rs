//! Which samples a participant trains on: a pure function of (job, round, provider), so the
//! data behind any contribution can be re-derived by a challenger.

use grid_primitives::job::{JobId, RoundIndex};

use crate::rng::Rng;

/// Domain separator of shard seeds.
const SHARD_DOMAIN: &[u8] = b"grid/shard/v1";

/// The seed of the shard of `provider` (its account bytes) in `round` of `job`.
pub fn shard_seed(job: JobId, round: RoundIndex, provider: &[u8]) -> Vec<u8> {
	let mut seed = SHARD_DOMAIN.to_vec();
	seed.extend_from_slice(&job.to_le_bytes());
	seed.extend_from_slice(&round.to_le_bytes());
	seed.extend_from_slice(&(provider.len() as u32).to_le_bytes());
	seed.extend_from_slice(provider);
	seed
}

/// `count` sample indices in `0..population` for `provider` in `round` of `job`, drawn
/// uniformly with replacement from a PRNG seeded by [`shard_seed`]. Participants are not
/// coordinated (any subset may take part in a round), so independent draws rather than a
/// partition; with a large population, overlaps between participants are rare. The sequence
/// is a prefix-stable stream: asking for more samples extends, never reshuffles, the shard,
/// so a node that ran more inner steps trained on a superset of a slower node's data.
pub fn shard(
	job: JobId,
	round: RoundIndex,
	provider: &[u8],
	population: u64,
	count: usize,
) -> Vec<u64> {
	if population == 0 {
		return Vec::new();
	}
	let mut rng = Rng::from_bytes(&shard_seed(job, round, provider));
	(0..count).map(|_| rng.below(population)).collect()
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn shards_are_deterministic_and_differ_by_job_round_and_provider() {
		let a = shard(1, 2, b"alice", 1_000_000, 64);
		assert_eq!(a, shard(1, 2, b"alice", 1_000_000, 64));
		assert!(a.iter().all(|&i| i < 1_000_000));
		assert_ne!(a, shard(1, 2, b"bob", 1_000_000, 64));
		assert_ne!(a, shard(1, 3, b"alice", 1_000_000, 64));
		assert_ne!(a, shard(2, 2, b"alice", 1_000_000, 64));
		// Prefix-stable: more samples extend the same shard.
		assert_eq!(&shard(1, 2, b"alice", 1_000_000, 128)[..64], &a[..]);
		assert!(shard(1, 2, b"alice", 0, 5).is_empty());
	}

	#[test]
	fn shards_cover_the_population_evenly() {
		let mut counts = [0u32; 16];
		for i in shard(9, 0, b"p", 16, 16_000) {
			counts[i as usize] += 1;
		}
		assert!(counts.iter().all(|&c| (850..1150).contains(&c)), "{counts:?}");
	}
}
