//! Compression that follows the link: a ladder of levels starting at the job's scheme, each
//! stronger than the last, with one error-feedback memory shared by all levels so switching
//! level loses nothing (what one round leaves out is sent later, whatever the level). The
//! memory decays by the job's `error_decay` each round, as `bench/algorithms.sh` measures.
//! A job's dense rounds (`TrainingParams::dense_rounds`) compress with another scheme's
//! ladder through the same memory.

use grid_primitives::job::{Compression, DENSE_ROUND_COMPRESSION};
use rayon::prelude::*;

use super::{compress_values, CompressedUpdate, Compressor, Feedback, Layout};
use crate::error::Result;

/// The job's scheme followed by stronger ones.
pub fn ladder(base: Compression) -> Vec<Compression> {
	let topk = |k| Compression::TopK { chunk: 64, k, value_bits: 4 };
	match base {
		Compression::None => vec![base, Compression::Int8 { chunk: 64 }, topk(8), topk(2)],
		Compression::Int8 { .. } => vec![base, topk(8), topk(4), topk(2)],
		Compression::TopK { chunk, k, value_bits } => halvings(k)
			.map(|k| Compression::TopK { chunk, k, value_bits: value_bits.min(4) })
			.collect(),
		Compression::Tiles { k } => halvings(k).map(|k| Compression::Tiles { k }).collect(),
	}
}

/// `k` and up to three halvings of it that keep at least one value.
fn halvings(k: u32) -> impl Iterator<Item = u32> {
	std::iter::successors(Some(k), |k| Some(k / 2)).take_while(|k| *k >= 1).take(4)
}

/// `corrected` (a Δ with the carried error added, laid out as `layout`) compressed with
/// `scheme` and no memory of its own: the error memory is the [`AdaptiveCompressor`]'s. A
/// replay compresses with this.
pub fn compress_once(
	scheme: &Compression,
	layout: &Layout,
	corrected: &[f32],
) -> Result<CompressedUpdate> {
	compress_values(scheme, layout, corrected)
}

/// `delta` plus `decay` × the carried `residual`: what a round compresses (the replay of a
/// contribution computes it the same way).
/// Element by element, on rayon's threads (the same values on any number).
pub fn corrected(delta: &[f32], residual: &[f32], decay: f32) -> Vec<f32> {
	delta.par_iter().zip(residual).map(|(d, e)| d + decay * e).collect()
}

/// A ladder of schemes with shared error feedback.
pub struct AdaptiveCompressor {
	base: Compression,
	levels: Vec<Compression>,
	layout: Layout,
	feedback: Feedback,
}

impl AdaptiveCompressor {
	/// For vectors laid out as `layout` (a model's parameters), starting from the job's
	/// scheme `base`, with the job's error-feedback `decay` (in 0..=1).
	pub fn new(base: Compression, layout: Layout, decay: f32) -> Result<Self> {
		let feedback = Feedback::new(layout.len()).with_decay(decay)?;
		Ok(AdaptiveCompressor { base, levels: ladder(base), layout, feedback })
	}

	/// The layout its vectors have.
	pub fn layout(&self) -> &Layout {
		&self.layout
	}

	/// The schemes, weakest first.
	pub fn levels(&self) -> &[Compression] {
		&self.levels
	}

	/// The carried error (what earlier updates left out).
	pub fn residual(&self) -> &[f32] {
		self.feedback.error()
	}

	/// Restores a carried error saved from [`AdaptiveCompressor::residual`].
	pub fn set_residual(&mut self, residual: Vec<f32>) -> Result<()> {
		self.feedback.restore(residual)
	}

	/// Takes back `sent`, an update this compressor produced that the round left out (its
	/// sender's own aggregate did not include it): its values go back into the carried
	/// error, so the next update sends them again instead of their being lost.
	pub fn give_back(&mut self, sent: &CompressedUpdate) -> Result<()> {
		self.feedback.take_back(&sent.decompress())
	}

	/// Compresses `delta` plus the decayed carried error at the weakest level whose encoding fits
	/// in `budget` bytes (the strongest level if none does). Returns the update, its
	/// encoding and the level used.
	pub fn compress(
		&mut self,
		delta: &[f32],
		budget: Option<usize>,
	) -> Result<(CompressedUpdate, Vec<u8>, usize)> {
		self.compress_as(self.base, delta, budget)
	}

	/// [`AdaptiveCompressor::compress`] on `scheme`'s ladder instead of the job's (a dense
	/// round's, `TrainingParams::compression_in`), with the same carried error.
	pub fn compress_as(
		&mut self,
		scheme: Compression,
		delta: &[f32],
		budget: Option<usize>,
	) -> Result<(CompressedUpdate, Vec<u8>, usize)> {
		let other;
		let levels: &[Compression] = if scheme == self.base {
			&self.levels
		} else {
			other = ladder(scheme);
			&other
		};
		let corrected = self.feedback.correct(delta, "adaptive")?;
		let mut chosen = None;
		for (level, scheme) in levels.iter().enumerate() {
			let update = compress_once(scheme, &self.layout, &corrected)?;
			let bytes = update.encode();
			let last = level + 1 == levels.len();
			if budget.is_none_or(|b| bytes.len() <= b) || last {
				chosen = Some((update, bytes, level));
				break;
			}
		}
		let (update, bytes, level) = chosen.expect("the ladder is never empty");
		self.feedback.keep_update(corrected, &update);
		Ok((update, bytes, level))
	}
}

/// A job's compression round by round as a plain [`Compressor`] (one call a round): the
/// first `dense_rounds` at [`DENSE_ROUND_COMPRESSION`], then the job's scheme, through one
/// [`AdaptiveCompressor`]'s error feedback and no budget. What `bench_algo` runs for a job
/// with dense rounds, as the daemon's rounds compress.
pub struct DenseFirst {
	/// The job's scheme's compressor (its base is the scheme after the dense rounds).
	compressor: AdaptiveCompressor,
	dense_rounds: u32,
	round: u32,
}

impl DenseFirst {
	/// `scheme` after `dense_rounds` dense ones, for vectors laid out as `layout`, its error
	/// feedback decayed by `decay`.
	pub fn new(scheme: Compression, layout: Layout, decay: f32, dense_rounds: u32) -> Result<Self> {
		let compressor = AdaptiveCompressor::new(scheme, layout, decay)?;
		Ok(DenseFirst { compressor, dense_rounds, round: 0 })
	}
}

impl Compressor for DenseFirst {
	fn compress(&mut self, delta: &[f32]) -> Result<CompressedUpdate> {
		let dense = self.round < self.dense_rounds;
		self.round += 1;
		let (update, _, _) = if dense {
			self.compressor.compress_as(DENSE_ROUND_COMPRESSION, delta, None)?
		} else {
			self.compressor.compress(delta, None)?
		};
		Ok(update)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_tighter_budget_picks_a_stronger_level_and_error_is_carried() {
		let len = 4096;
		let delta: Vec<f32> = (0..len).map(|i| ((i * 37 % 101) as f32 - 50.0) * 1e-3).collect();
		let mut c =
			AdaptiveCompressor::new(Compression::Int8 { chunk: 64 }, Layout::flat(len), 1.0)
				.unwrap();
		let (_, roomy, level) = c.compress(&delta, None).unwrap();
		assert_eq!(level, 0);
		let (_, tight, level) = c.compress(&delta, Some(roomy.len() / 4)).unwrap();
		assert!(level > 0 && tight.len() <= roomy.len() / 4, "{level} {}", tight.len());
		// What the strong level left out is remembered: sending zeros next round at the
		// weakest level transmits (most of) it.
		let (update, _, _) = c.compress(&vec![0.0; len], None).unwrap();
		let carried: f32 = update.decompress().iter().map(|x| x.abs()).sum();
		assert!(carried > 0.1, "{carried}");
		assert_eq!(ladder(Compression::TopK { chunk: 64, k: 8, value_bits: 2 }).len(), 4);
		let tiles = |k| Compression::Tiles { k };
		assert_eq!(ladder(tiles(64)), [tiles(64), tiles(32), tiles(16), tiles(8)]);
		assert_eq!(ladder(tiles(2)), [tiles(2), tiles(1)]);
	}

	#[test]
	fn an_update_the_round_left_out_is_sent_again() {
		let len = 256;
		let delta: Vec<f32> = (0..len).map(|i| ((i * 13 % 29) as f32 - 14.0) * 1e-2).collect();
		let topk = Compression::TopK { chunk: 64, k: 8, value_bits: 4 };
		let (mut kept, mut lost) = (
			AdaptiveCompressor::new(topk, Layout::flat(len), 1.0).unwrap(),
			AdaptiveCompressor::new(topk, Layout::flat(len), 1.0).unwrap(),
		);
		let (first, _, _) = kept.compress(&delta, None).unwrap();
		lost.compress(&delta, None).unwrap();
		kept.give_back(&first).unwrap();
		// The whole Δ is carried again (what was sent, and what top-k left out); without
		// giving it back, only what top-k left out is.
		for (e, d) in kept.residual().iter().zip(&delta) {
			assert!((e - d).abs() < 1e-6, "{e} against {d}");
		}
		let carried = |c: &AdaptiveCompressor| c.residual().iter().map(|x| x.abs()).sum::<f32>();
		assert!(carried(&kept) > carried(&lost));
		let err = kept.give_back(&CompressedUpdate::None(vec![0.0; 3])).unwrap_err();
		assert!(err.to_string().contains("an update of 3 values"), "{err}");
	}

	/// A dense round of a top-k job sends what top-k carried so far, nearly all of it, and
	/// the job's next round goes on with what is left.
	#[test]
	fn a_dense_round_sends_the_carried_error() {
		let len = 512;
		let delta: Vec<f32> = (0..len).map(|i| ((i * 11 % 37) as f32 - 18.0) * 1e-2).collect();
		let topk = Compression::TopK { chunk: 64, k: 4, value_bits: 4 };
		let mut c = AdaptiveCompressor::new(topk, Layout::flat(len), 1.0).unwrap();
		c.compress(&delta, None).unwrap();
		let carried: Vec<f32> = c.residual().to_vec();
		let int8 = Compression::Int8 { chunk: 64 };
		let (dense, bytes, level) = c.compress_as(int8, &vec![0.0; len], None).unwrap();
		assert_eq!((level, dense.scheme()), (0, int8));
		assert_eq!(CompressedUpdate::decode(&bytes).unwrap().decompress(), dense.decompress());
		let sent = dense.decompress();
		let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
		let miss: Vec<f32> = sent.iter().zip(&carried).map(|(s, e)| s - e).collect();
		assert!(norm(&miss) < 0.01 * norm(&carried), "{} of {}", norm(&miss), norm(&carried));
		assert!(norm(c.residual()) < 0.01 * norm(&carried));
		// The job's own scheme again on the next round.
		let (next, _, _) = c.compress(&delta, None).unwrap();
		assert_eq!(next.scheme(), topk);
	}

	#[test]
	fn dense_first_sends_its_dense_rounds_then_the_jobs_scheme() {
		let len = 256;
		let delta: Vec<f32> = (0..len).map(|i| ((i * 5 % 23) as f32 - 11.0) * 1e-2).collect();
		let topk = Compression::TopK { chunk: 64, k: 4, value_bits: 1 };
		let mut c = DenseFirst::new(topk, Layout::flat(len), 0.9, 2).unwrap();
		let schemes: Vec<Compression> =
			(0..4).map(|_| Compressor::compress(&mut c, &delta).unwrap().scheme()).collect();
		assert_eq!(schemes, [DENSE_ROUND_COMPRESSION, DENSE_ROUND_COMPRESSION, topk, topk]);
	}

	#[test]
	fn the_carried_error_decays_by_the_jobs_factor() {
		let len = 128;
		let delta: Vec<f32> = (0..len).map(|i| ((i * 7 % 31) as f32 - 15.0) * 1e-2).collect();
		let topk = Compression::TopK { chunk: 64, k: 4, value_bits: 8 };
		let (mut half, mut plain) = (
			AdaptiveCompressor::new(topk, Layout::flat(len), 0.5).unwrap(),
			AdaptiveCompressor::new(topk, Layout::flat(len), 1.0).unwrap(),
		);
		half.compress(&delta, None).unwrap();
		plain.compress(&delta, None).unwrap();
		assert_eq!(half.residual(), plain.residual(), "nothing carried yet to decay");
		// A round of zeros: the update is what the carried error becomes, half of it with
		// a decay of one half.
		let (from_half, _, _) = half.compress(&vec![0.0; len], None).unwrap();
		let (from_plain, _, _) = plain.compress(&vec![0.0; len], None).unwrap();
		let sum = |u: &CompressedUpdate| u.decompress().iter().map(|x| x.abs()).sum::<f32>();
		assert!((sum(&from_half) - 0.5 * sum(&from_plain)).abs() < 1e-3 * sum(&from_plain));
		for bad in [-0.1, 1.01, f32::NAN] {
			assert!(AdaptiveCompressor::new(topk, Layout::flat(len), bad).is_err(), "{bad}");
		}
	}
}
