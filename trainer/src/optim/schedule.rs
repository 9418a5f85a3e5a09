//! Learning-rate schedule: linear warm-up, then cosine decay to a floor.

/// Warm-up over `warmup` steps to `peak`, cosine decay to `peak × min_ratio` at `total`
/// steps, constant after.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
	/// Peak learning rate.
	pub peak: f64,
	/// Linear warm-up steps.
	pub warmup: u64,
	/// Step at which the decay ends.
	pub total: u64,
	/// Final rate as a fraction of the peak.
	pub min_ratio: f64,
}

impl Schedule {
	/// The rate for (zero-based) `step`.
	pub fn lr(&self, step: u64) -> f64 {
		if step < self.warmup {
			return self.peak * (step + 1) as f64 / self.warmup as f64;
		}
		let floor = self.peak * self.min_ratio;
		let span = self.total.saturating_sub(self.warmup).max(1);
		let progress = ((step - self.warmup) as f64 / span as f64).min(1.0);
		floor + 0.5 * (self.peak - floor) * (1.0 + (std::f64::consts::PI * progress).cos())
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn warms_up_peaks_and_decays_to_the_floor() {
		let s = Schedule { peak: 1.0, warmup: 10, total: 110, min_ratio: 0.1 };
		assert!((s.lr(0) - 0.1).abs() < 1e-12);
		assert!((s.lr(9) - 1.0).abs() < 1e-12);
		assert!((s.lr(10) - 1.0).abs() < 1e-12);
		assert!((s.lr(60) - 0.55).abs() < 1e-12);
		assert!((s.lr(110) - 0.1).abs() < 1e-12);
		assert!((s.lr(1_000) - 0.1).abs() < 1e-12);
		let lrs: Vec<f64> = (10..110).map(|i| s.lr(i)).collect();
		assert!(lrs.windows(2).all(|w| w[1] <= w[0]));
		let no_warmup = Schedule { peak: 2.0, warmup: 0, total: 0, min_ratio: 0.0 };
		assert!(no_warmup.lr(0).is_finite());
	}
}
