//! Combining participants' pseudo-gradients, robustly.
//!
//! Every honest participant must compute the same aggregate from the same accepted updates,
//! so everything here is sequential in the given (canonical) order, accumulates in f64 and
//! breaks ties by position: no parallel reductions whose order could vary.

use crate::error::{Error, Result};

/// One participant's decompressed update and how many samples it trained on.
#[derive(Clone, Debug)]
pub struct Contribution {
	/// Δ = θ_global − θ_local.
	pub delta: Vec<f32>,
	/// Samples processed in the round (the weight of the update).
	pub samples: u64,
}

/// How accepted updates are combined (in a trainer's configuration:
/// `aggregation = { rule = "trimmed-mean", trim = 1 }`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Rule {
	/// Mean weighted by samples processed (not robust: any one update can move it anywhere).
	Mean,
	/// Per coordinate, over the updates that sent it (a nonzero value: sparse updates send
	/// a few coordinates each), drop the `trim` largest and `trim` smallest values (fewer
	/// where fewer were sent, so that one always stays) and average the rest, scaled by the
	/// share of updates that sent it: the plain mean's weight, so a coordinate one update
	/// sent counts as its 1/n, as its sender's error feedback assumes, instead of being
	/// trimmed to zero. Dense updates get the classic trimmed mean. Unweighted: weights would
	/// let a liar who claims many samples dominate; a value sent alone is bounded by the
	/// norm screen.
	TrimmedMean {
		/// Values dropped at each end.
		trim: usize,
	},
	/// The [`Rule::TrimmedMean`] after per-peer norm clipping: every update whose norm is
	/// above the median of the updates' norms is scaled down to it first, so no one peer moves
	/// the aggregate further than a typical one does, whatever it sends (a coordinate it alone
	/// sent counts as at most a median update's share). Chain jobs use it.
	ClippedTrimmedMean {
		/// Values dropped at each end.
		trim: usize,
	},
	/// Centered clipping (Karimireddy, He & Jaggi 2021): start at the coordinate-wise median
	/// and move towards each update by at most a radius, `iters` times. The radius is
	/// `radius_ratio` × the median distance of the updates from the start.
	CenteredClip {
		/// Clipping radius relative to the median distance from the start.
		radius_ratio: f64,
		/// Iterations.
		iters: u32,
	},
}

/// The result of an aggregation.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
	/// The combined Δ.
	pub delta: Vec<f32>,
	/// Positions of the updates that passed screening.
	pub accepted: Vec<usize>,
	/// Positions of the updates rejected by screening.
	pub rejected: Vec<usize>,
}

/// L2 norm in f64.
pub fn norm(v: &[f32]) -> f64 {
	v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt()
}

/// The lower median (deterministic for even counts).
fn median(mut xs: Vec<f64>) -> f64 {
	xs.sort_by(f64::total_cmp);
	xs[(xs.len() - 1) / 2]
}

/// Positions of updates that are finite and whose norm is at most `max_ratio` × the median
/// norm (`None`: only the finiteness check). Scaled-up updates fail; sign-flipped and random
/// ones of ordinary norm pass and are left to the robust rule.
pub fn screen(updates: &[Contribution], max_ratio: Option<f64>) -> Vec<usize> {
	let norms: Vec<f64> = updates.iter().map(|u| norm(&u.delta)).collect();
	let finite: Vec<usize> = (0..updates.len()).filter(|&i| norms[i].is_finite()).collect();
	let Some(ratio) = max_ratio else { return finite };
	if finite.is_empty() {
		return finite;
	}
	let limit = ratio * median(finite.iter().map(|&i| norms[i]).collect());
	finite.into_iter().filter(|&i| norms[i] <= limit).collect()
}

/// Screens `updates` (given in canonical order, all the same length) and combines the
/// accepted ones with `rule`.
pub fn aggregate(
	updates: &[Contribution],
	rule: Rule,
	screen_ratio: Option<f64>,
) -> Result<Aggregate> {
	let len = updates
		.first()
		.map(|u| u.delta.len())
		.ok_or_else(|| Error::Aggregate("no updates".into()))?;
	if let Some(i) = updates.iter().position(|u| u.delta.len() != len) {
		return Err(Error::Layout(format!(
			"update {i} has {} values, update 0 has {len}",
			updates[i].delta.len()
		)));
	}
	let accepted = screen(updates, screen_ratio);
	let rejected = (0..updates.len()).filter(|i| !accepted.contains(i)).collect();
	let chosen: Vec<&Contribution> = accepted.iter().map(|&i| &updates[i]).collect();
	if chosen.is_empty() {
		return Err(Error::Aggregate("every update was rejected".into()));
	}
	let delta = match rule {
		Rule::Mean => weighted_mean(&chosen)?,
		Rule::TrimmedMean { trim } => trimmed_mean(&chosen, trim)?,
		Rule::ClippedTrimmedMean { trim } => {
			let clipped = clip_to_median(&chosen);
			trimmed_mean(&clipped.iter().collect::<Vec<_>>(), trim)?
		}
		Rule::CenteredClip { radius_ratio, iters } => centered_clip(&chosen, radius_ratio, iters)?,
	};
	Ok(Aggregate { delta, accepted, rejected })
}

/// The updates with every norm above the (lower) median norm scaled down to it.
fn clip_to_median(updates: &[&Contribution]) -> Vec<Contribution> {
	let norms: Vec<f64> = updates.iter().map(|u| norm(&u.delta)).collect();
	let limit = median(norms.clone());
	updates
		.iter()
		.zip(norms)
		.map(|(u, n)| {
			let delta = if n > limit {
				let scale = limit / n;
				u.delta.iter().map(|x| (f64::from(*x) * scale) as f32).collect()
			} else {
				u.delta.clone()
			};
			Contribution { delta, samples: u.samples }
		})
		.collect()
}

fn weighted_mean(updates: &[&Contribution]) -> Result<Vec<f32>> {
	let total: f64 = updates.iter().map(|u| u.samples as f64).sum();
	if total <= 0.0 {
		return Err(Error::Aggregate("accepted updates processed zero samples".into()));
	}
	let mut acc = vec![0f64; updates[0].delta.len()];
	for u in updates {
		let w = u.samples as f64 / total;
		for (a, x) in acc.iter_mut().zip(&u.delta) {
			*a += w * f64::from(*x);
		}
	}
	Ok(acc.into_iter().map(|a| a as f32).collect())
}

fn trimmed_mean(updates: &[&Contribution], trim: usize) -> Result<Vec<f32>> {
	let n = updates.len();
	if 2 * trim >= n {
		return Err(Error::Aggregate(format!("cannot trim {trim} from each end of {n} updates")));
	}
	let mut column = Vec::with_capacity(n);
	let mut out = Vec::with_capacity(updates[0].delta.len());
	for j in 0..updates[0].delta.len() {
		column.clear();
		column.extend(updates.iter().map(|u| u.delta[j]).filter(|x| *x != 0.0));
		out.push(trimmed_support_mean(&mut column, trim, n));
	}
	Ok(out)
}

/// The trimmed mean of the values `sent` of a coordinate (its nonzero values, in any order)
/// by `n` updates, on its support: up to `trim` dropped at each end (fewer when fewer were
/// sent), the rest averaged and weighted by the share of updates that sent it.
fn trimmed_support_mean(sent: &mut [f32], trim: usize, n: usize) -> f32 {
	let m = sent.len();
	if m == 0 {
		return 0.0;
	}
	sent.sort_by(f32::total_cmp);
	let trim = trim.min((m - 1) / 2);
	let kept = &sent[trim..m - trim];
	let mean = kept.iter().map(|x| f64::from(*x)).sum::<f64>() / kept.len() as f64;
	(mean * m as f64 / n as f64) as f32
}

fn coordinate_median(updates: &[&Contribution]) -> Vec<f32> {
	let n = updates.len();
	let mut column = vec![0f32; n];
	(0..updates[0].delta.len())
		.map(|j| {
			for (c, u) in column.iter_mut().zip(updates) {
				*c = u.delta[j];
			}
			column.sort_by(f32::total_cmp);
			column[(n - 1) / 2]
		})
		.collect()
}

fn centered_clip(updates: &[&Contribution], radius_ratio: f64, iters: u32) -> Result<Vec<f32>> {
	let total: f64 = updates.iter().map(|u| u.samples as f64).sum();
	if total <= 0.0 {
		return Err(Error::Aggregate("accepted updates processed zero samples".into()));
	}
	let mut center: Vec<f64> = coordinate_median(updates).into_iter().map(f64::from).collect();
	let distance = |u: &Contribution, c: &[f64]| {
		u.delta.iter().zip(c).map(|(x, c)| (f64::from(*x) - c).powi(2)).sum::<f64>().sqrt()
	};
	let radius = radius_ratio * median(updates.iter().map(|u| distance(u, &center)).collect());
	for _ in 0..iters {
		let mut step = vec![0f64; center.len()];
		for u in updates {
			let d = distance(u, &center);
			let clip = if d > radius { radius / d } else { 1.0 };
			let w = u.samples as f64 / total * clip;
			for ((s, x), c) in step.iter_mut().zip(&u.delta).zip(&center) {
				*s += w * (f64::from(*x) - c);
			}
		}
		for (c, s) in center.iter_mut().zip(&step) {
			*c += s;
		}
	}
	Ok(center.into_iter().map(|c| c as f32).collect())
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::rng::Rng;

	const DIM: usize = 500;

	/// Seven honest updates (a shared direction plus noise) followed by `attackers` poisoned
	/// ones made by `poison` from the true direction.
	fn round(
		attackers: usize,
		poison: impl Fn(&[f32], &mut Rng) -> Vec<f32>,
	) -> (Vec<f32>, Vec<Contribution>) {
		let mut rng = Rng::new(11);
		let truth: Vec<f32> = (0..DIM).map(|_| rng.normal() as f32 * 0.01).collect();
		let mut updates: Vec<Contribution> = (0..7)
			.map(|_| Contribution {
				delta: truth.iter().map(|t| t + rng.normal() as f32 * 0.003).collect(),
				samples: 100 + rng.below(50),
			})
			.collect();
		for _ in 0..attackers {
			updates.push(Contribution { delta: poison(&truth, &mut rng), samples: 150 });
		}
		(truth, updates)
	}

	fn relative_error(truth: &[f32], got: &[f32]) -> f64 {
		let diff: Vec<f32> = truth.iter().zip(got).map(|(a, b)| a - b).collect();
		norm(&diff) / norm(truth)
	}

	type Poison = fn(&[f32], &mut Rng) -> Vec<f32>;

	fn attacks() -> Vec<(&'static str, Poison)> {
		vec![
			("scaled", |t, _| t.iter().map(|x| x * -100.0).collect()),
			("sign-flipped", |t, _| t.iter().map(|x| -x).collect()),
			("random", |t, rng| {
				let scale = norm(t) / (t.len() as f64).sqrt();
				t.iter().map(|_| (rng.normal() * scale * 3.0) as f32).collect()
			}),
		]
	}

	#[test]
	fn robust_rules_resist_a_poisoned_minority() {
		let robust = [
			Rule::TrimmedMean { trim: 2 },
			Rule::ClippedTrimmedMean { trim: 2 },
			Rule::CenteredClip { radius_ratio: 1.0, iters: 3 },
		];
		for (name, poison) in attacks() {
			let (truth, updates) = round(2, poison);
			let plain = aggregate(&updates, Rule::Mean, None).unwrap();
			let plain_error = relative_error(&truth, &plain.delta);
			assert!(plain_error > 0.3, "{name}: the plain mean should be hurt ({plain_error})");
			for rule in robust {
				for screen_ratio in [None, Some(3.0)] {
					let agg = aggregate(&updates, rule, screen_ratio).unwrap();
					let e = relative_error(&truth, &agg.delta);
					assert!(e < 0.2, "{name}, {rule:?}, screen {screen_ratio:?}: error {e}");
				}
			}
		}
	}

	#[test]
	fn screening_rejects_scaled_and_non_finite_updates() {
		let (_, mut updates) = round(2, |t, _| t.iter().map(|x| x * 100.0).collect());
		updates[0].delta[3] = f32::NAN;
		let agg = aggregate(&updates, Rule::Mean, Some(3.0)).unwrap();
		assert_eq!(agg.rejected, vec![0, 7, 8]);
		assert_eq!(agg.accepted, (1..7).collect::<Vec<_>>());
		// Without a norm limit only the NaN goes.
		assert_eq!(screen(&updates, None), (1..9).collect::<Vec<_>>());
	}

	#[test]
	fn mean_is_weighted_by_samples_and_aggregation_is_deterministic() {
		let a = Contribution { delta: vec![1.0, 0.0], samples: 3 };
		let b = Contribution { delta: vec![0.0, 4.0], samples: 1 };
		let agg = aggregate(&[a, b], Rule::Mean, None).unwrap();
		assert_eq!(agg.delta, vec![0.75, 1.0]);
		let (_, updates) = round(2, |t, _| t.iter().map(|x| -x).collect());
		for rule in [
			Rule::Mean,
			Rule::TrimmedMean { trim: 1 },
			Rule::CenteredClip { radius_ratio: 1.0, iters: 2 },
		] {
			let first = aggregate(&updates, rule, Some(3.0)).unwrap();
			let again = aggregate(&updates, rule, Some(3.0)).unwrap();
			let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
			assert_eq!(bits(&first.delta), bits(&again.delta));
		}
	}

	#[test]
	fn the_trimmed_mean_keeps_sparse_coordinates_on_their_support() {
		let rule = Rule::TrimmedMean { trim: 1 };
		let sparse = |values: [f32; 4]| -> Vec<Contribution> {
			values.iter().map(|v| Contribution { delta: vec![*v, 1.0], samples: 10 }).collect()
		};
		let agg = |updates: &[Contribution]| aggregate(updates, rule, None).unwrap().delta;
		// A coordinate one of four sent counts as its quarter (the trimmed mean of all four
		// values would drop it as an extreme and return zero); one nobody sent stays zero.
		assert_eq!(agg(&sparse([0.0, 0.8, 0.0, 0.0])), vec![0.2, 1.0]);
		assert_eq!(agg(&sparse([0.0; 4])), vec![0.0, 1.0]);
		// Two senders: nothing can be trimmed from two and leave one, so their mean, at half.
		assert_eq!(agg(&sparse([0.4, 0.0, 0.8, 0.0])), vec![0.3, 1.0]);
		// Three senders: the extremes go, the middle one counts for three quarters.
		assert_eq!(agg(&sparse([0.4, 0.0, 100.0, 0.8])), vec![0.6, 1.0]);
		// Dense updates: the classic trimmed mean.
		assert_eq!(agg(&sparse([0.4, -50.0, 100.0, 0.8])), vec![0.6, 1.0]);
	}

	#[test]
	fn norm_clipping_bounds_what_one_peer_moves() {
		let update = |delta: Vec<f32>| Contribution { delta, samples: 10 };
		// Three honest updates of norm 1 and one of norm 3 (under a 4x norm screen) that
		// alone sends the second coordinate: unclipped it counts as its quarter, 0.75; clipped
		// to the median norm, as a typical update's quarter, 0.25.
		let round = [
			update(vec![1.0, 0.0]),
			update(vec![1.0, 0.0]),
			update(vec![1.0, 0.0]),
			update(vec![0.0, 3.0]),
		];
		let with = |rule| aggregate(&round, rule, Some(4.0)).unwrap().delta;
		assert_eq!(with(Rule::TrimmedMean { trim: 1 }), vec![0.75, 0.75]);
		assert_eq!(with(Rule::ClippedTrimmedMean { trim: 1 }), vec![0.75, 0.25]);
		// Updates of equal norm are not touched: the rules agree bit for bit.
		let honest = [update(vec![0.6, 0.8]), update(vec![0.8, 0.6]), update(vec![1.0, 0.0])];
		let clipped = aggregate(&honest, Rule::ClippedTrimmedMean { trim: 1 }, None).unwrap();
		let plain = aggregate(&honest, Rule::TrimmedMean { trim: 1 }, None).unwrap();
		assert_eq!(clipped.delta, plain.delta);
	}

	#[test]
	fn bad_inputs_are_errors() {
		assert!(aggregate(&[], Rule::Mean, None).is_err());
		let a = Contribution { delta: vec![1.0], samples: 1 };
		let b = Contribution { delta: vec![1.0, 2.0], samples: 1 };
		assert!(matches!(aggregate(&[a.clone(), b], Rule::Mean, None), Err(Error::Layout(_))));
		assert!(aggregate(&[a.clone(), a], Rule::TrimmedMean { trim: 1 }, None).is_err());
	}
}
