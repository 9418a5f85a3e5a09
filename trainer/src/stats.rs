//! Summaries the benchmarks report.

/// Mean and sample standard deviation (0 for a single value; NaN mean for none).
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
	let n = xs.len() as f64;
	let mean = xs.iter().sum::<f64>() / n;
	if xs.len() < 2 {
		return (mean, 0.0);
	}
	let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
	(mean, var.sqrt())
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn mean_and_sample_spread() {
		assert_eq!(mean_sd(&[2.0]), (2.0, 0.0));
		let (mean, sd) = mean_sd(&[1.0, 2.0, 3.0, 4.0]);
		assert_eq!(mean, 2.5);
		assert!((sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
		assert!(mean_sd(&[]).0.is_nan());
	}
}
