//! A small seeded PRNG (SplitMix64 seeding xoshiro256**) and a normal sampler.
//!
//! Written here rather than taken from `rand` so the stream is fixed by this file alone: every
//! participant must draw the same initial weights and the same data shard from the same seed,
//! whatever crate versions it was built with.

use sp_crypto_hashing::blake2_256;

/// xoshiro256** seeded through SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng {
	state: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
	*x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
	let mut z = *x;
	z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
	z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
	z ^ (z >> 31)
}

impl Rng {
	/// A generator seeded from a 64-bit seed.
	pub fn new(seed: u64) -> Self {
		let mut x = seed;
		let state =
			[splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x)];
		Rng { state }
	}

	/// A generator seeded from arbitrary bytes (hashed first, so any length works).
	pub fn from_bytes(seed: &[u8]) -> Self {
		let h = blake2_256(seed);
		let mut first = [0u8; 8];
		first.copy_from_slice(&h[..8]);
		let mut rng = Rng::new(u64::from_le_bytes(first));
		// Fold in the rest of the hash so all 256 bits matter.
		for (i, word) in h.chunks_exact(8).enumerate() {
			let mut w = [0u8; 8];
			w.copy_from_slice(word);
			rng.state[i] ^= u64::from_le_bytes(w);
		}
		if rng.state == [0; 4] {
			rng.state[0] = 1;
		}
		rng
	}

	/// The next 64 random bits.
	pub fn next_u64(&mut self) -> u64 {
		let s = &mut self.state;
		let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
		let t = s[1] << 17;
		s[2] ^= s[0];
		s[3] ^= s[1];
		s[1] ^= s[2];
		s[0] ^= s[3];
		s[2] ^= t;
		s[3] = s[3].rotate_left(45);
		result
	}

	/// Uniform in `[0, 1)` with 53 bits of precision.
	pub fn next_f64(&mut self) -> f64 {
		(self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
	}

	/// Uniform in `0..n` (`n > 0`), without modulo bias (Lemire's method with rejection).
	pub fn below(&mut self, n: u64) -> u64 {
		assert!(n > 0, "Rng::below needs a non-empty range");
		loop {
			let m = u128::from(self.next_u64()) * u128::from(n);
			let low = m as u64;
			if low >= n.wrapping_neg() % n {
				return (m >> 64) as u64;
			}
		}
	}

	/// A standard normal sample (Box-Muller; computed in f64 so the result is exact enough to
	/// be reproducible across platforms with IEEE `ln`, `cos`).
	pub fn normal(&mut self) -> f64 {
		let u1 = 1.0 - self.next_f64(); // in (0, 1], so ln is finite
		let u2 = self.next_f64();
		(-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn same_seed_same_stream_different_seed_different_stream() {
		let a: Vec<u64> = (0..8).scan(Rng::new(7), |r, _| Some(r.next_u64())).collect();
		let b: Vec<u64> = (0..8).scan(Rng::new(7), |r, _| Some(r.next_u64())).collect();
		let c: Vec<u64> = (0..8).scan(Rng::new(8), |r, _| Some(r.next_u64())).collect();
		assert_eq!(a, b);
		assert_ne!(a, c);
		let d = Rng::from_bytes(b"job-1").next_u64();
		assert_ne!(d, Rng::from_bytes(b"job-2").next_u64());
	}

	#[test]
	fn normal_has_zero_mean_unit_variance() {
		let mut rng = Rng::new(1);
		let n = 200_000;
		let xs: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
		let mean = xs.iter().sum::<f64>() / n as f64;
		let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
		assert!(mean.abs() < 0.01, "mean {mean}");
		assert!((var - 1.0).abs() < 0.01, "variance {var}");
	}

	#[test]
	fn below_stays_in_range_and_covers_it() {
		let mut rng = Rng::new(3);
		let mut seen = [0u32; 10];
		for _ in 0..10_000 {
			let x = rng.below(10);
			seen[x as usize] += 1;
		}
		assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
	}
}
