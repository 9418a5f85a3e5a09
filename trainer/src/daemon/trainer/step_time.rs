//! How long the next inner step may take, for pacing a round against its deadline: a
//! running mean of the steps timed so far and their running mean deviation, as TCP bounds a
//! round trip (RFC 6298), and a step starts only while the mean plus four deviations fit
//! before the stop; a round's first step only while the mean does (`training::allowed`:
//! the estimate learns only from steps taken, so a bound that never fits would stop a slow
//! provider training for good), and a round the estimate kept from training halves it
//! ([`StepTime::relaxed`]), or a mean that never fits would.
//!
//! The mean alone let the last step overrun whenever steps varied: compute runs at the
//! lowest priority (`crate::priority`), so on a shared machine a step takes as long as other
//! work leaves it. With three CPU providers beside other normal-priority processes, steps
//! averaging 9.6 s ran to 15 s and the updates were committed 5.4 and 6.4 s after the
//! commit deadline, left out of the round and unpaid (`tests/tests/own_images.rs` with a
//! CPU hog). Steady steps have a small deviation, so a quiet machine loses a fraction of a
//! step per round to the bound.

use std::time::Duration;

/// Weight of a new step in the mean (what the pacing used before the deviation).
const MEAN_GAIN: f64 = 0.2;
/// Weight of a new step's distance from the mean in the deviation (RFC 6298's beta).
const DEVIATION_GAIN: f64 = 0.25;
/// Deviations a step may run over the mean (RFC 6298's K).
const DEVIATIONS: f64 = 4.0;

/// The step-duration estimate, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct StepTime {
	mean: f64,
	deviation: f64,
}

impl StepTime {
	/// The estimate after one step of `secs`: its deviation half of it (RFC 6298), as
	/// nothing says yet how steps vary.
	pub fn first(secs: f64) -> Self {
		StepTime { mean: secs, deviation: secs / 2.0 }
	}

	/// `estimate` with a step of `secs` taken into account (the first when there is none).
	pub fn observe(estimate: Option<Self>, secs: f64) -> Self {
		let Some(StepTime { mean, deviation }) = estimate else { return Self::first(secs) };
		StepTime {
			deviation: (1.0 - DEVIATION_GAIN) * deviation + DEVIATION_GAIN * (mean - secs).abs(),
			mean: (1.0 - MEAN_GAIN) * mean + MEAN_GAIN * secs,
		}
	}

	/// The estimate after a round it kept from training (no step fit before the stop, or
	/// the round was judged out of reach): half of it. It learns only from steps taken, so
	/// one stalled step (a machine busy elsewhere for a while) that took longer than a
	/// round leaves would otherwise keep its provider out of every later round (one way to
	/// the CI run, its logs lost, in which two of three trainers contributed to none of four
	/// 12 s rounds). A provider whose steps really
	/// are that slow tries one step every few rounds, left out of its round as it was.
	pub fn relaxed(self) -> Self {
		StepTime { mean: self.mean / 2.0, deviation: self.deviation / 2.0 }
	}

	/// The mean step, in seconds.
	pub fn mean(&self) -> f64 {
		self.mean
	}

	/// How long the next step is allowed for: the mean plus four deviations.
	pub fn bound(&self) -> Duration {
		Duration::from_secs_f64((self.mean + DEVIATIONS * self.deviation).max(0.0))
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn after(steps: &[f64]) -> StepTime {
		steps.iter().fold(None, |e, &s| Some(StepTime::observe(e, s))).unwrap()
	}

	#[test]
	fn steady_steps_are_allowed_little_more_than_their_mean() {
		let steady = after(&[0.4; 30]);
		assert!((steady.mean() - 0.4).abs() < 1e-9);
		// The first step's deviation decays: after 30 equal steps it is gone.
		assert!(steady.bound() < Duration::from_millis(401), "{:?}", steady.bound());
	}

	#[test]
	fn varying_steps_are_allowed_their_spread() {
		// Steps of 5 and 15 s in turn, as on a machine whose other work comes and goes:
		// the mean alone (about 10 s) let a 15 s step start 10 s before the stop.
		let varying = after(&[5.0, 15.0].repeat(15));
		assert!((8.0..12.0).contains(&varying.mean()), "{}", varying.mean());
		assert!(varying.bound() > Duration::from_secs(15), "{:?}", varying.bound());
		// And once the machine is quiet again, the bound comes back down.
		let quiet = [5.0, 15.0].repeat(15).into_iter().chain([0.4; 40]);
		let calmed = quiet.fold(None, |e, s| Some(StepTime::observe(e, s))).unwrap();
		assert!(calmed.bound() < Duration::from_millis(500), "{:?}", calmed.bound());
	}

	#[test]
	fn a_stalled_step_does_not_keep_its_provider_out_for_good() {
		// One 30 s step (a stall), then rounds that leave 2 s to train: the round's first
		// step may start only while the mean fits.
		let mut estimate = StepTime::first(30.0);
		let mut skipped = 0;
		while estimate.mean() > 2.0 {
			estimate = estimate.relaxed();
			skipped += 1;
		}
		assert_eq!(skipped, 4, "rounds sat out after the stall");
		// The steps taken then teach the estimate what steps take now (50 ms).
		let taught = (0..40).fold(estimate, |e, _| StepTime::observe(Some(e), 0.05));
		assert!(taught.bound() < Duration::from_millis(60), "{:?}", taught.bound());
	}

	#[test]
	fn a_single_step_is_allowed_three_times_its_time() {
		assert_eq!(StepTime::first(2.0).bound(), Duration::from_secs(6));
	}
}
