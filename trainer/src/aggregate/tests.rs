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
		.map(|_| {
			let delta = truth.iter().map(|t| t + rng.normal() as f32 * 0.003).collect();
			Contribution::dense(delta, 100 + rng.below(50))
		})
		.collect();
	for _ in 0..attackers {
		updates.push(Contribution::dense(poison(&truth, &mut rng), 150));
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
	let mut broken = updates[0].update.decompress();
	broken[3] = f32::NAN;
	updates[0] = Contribution::dense(broken, 1);
	let agg = aggregate(&updates, Rule::Mean, Some(3.0)).unwrap();
	assert_eq!(agg.rejected, vec![0, 7, 8]);
	assert_eq!(agg.accepted, (1..7).collect::<Vec<_>>());
	// Without a norm limit only the NaN goes.
	assert_eq!(screen(&updates, None), (1..9).collect::<Vec<_>>());
}

#[test]
fn mean_is_weighted_by_samples_and_aggregation_is_deterministic() {
	let a = Contribution::dense(vec![1.0, 0.0], 3);
	let b = Contribution::dense(vec![0.0, 4.0], 1);
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
		values.iter().map(|v| Contribution::dense(vec![*v, 1.0], 10)).collect()
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
	let update = |delta: Vec<f32>| Contribution::dense(delta, 10);
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
	let a = Contribution::dense(vec![1.0], 1);
	let b = Contribution::dense(vec![1.0, 2.0], 1);
	assert!(matches!(aggregate(&[a, b], Rule::Mean, None), Err(Error::Layout(_))));
}

#[test]
fn an_update_screened_out_does_not_leave_too_few_to_trim() {
	// Three updates, trim 1: the screen drops the scaled-up one, and the two left are
	// averaged (trimming 1 from each end of 2 would leave nothing). A trainer that chose
	// the trim from the updates it received crashed on this round (CI of 2026-12-02).
	let round = [
		Contribution::dense(vec![1.0, 0.0], 1),
		Contribution::dense(vec![0.0, 1.0], 1),
		Contribution::dense(vec![100.0, 100.0], 1),
	];
	for rule in [Rule::TrimmedMean { trim: 1 }, Rule::ClippedTrimmedMean { trim: 1 }] {
		let agg = aggregate(&round, rule, Some(3.0)).unwrap();
		assert_eq!(agg.accepted, vec![0, 1], "{rule:?}");
		assert_eq!(agg.rejected, vec![2], "{rule:?}");
		assert_eq!(agg.delta, vec![0.5, 0.5], "{rule:?}");
	}
}

/// The rules as plainly written on dense vectors, one coordinate after another: what the
/// block-wise aggregation must reproduce bit for bit.
fn reference(updates: &[Contribution], rule: Rule) -> Vec<f32> {
	let mut dense: Vec<Vec<f32>> = updates.iter().map(|u| u.update.decompress()).collect();
	let n = dense.len();
	if let Rule::ClippedTrimmedMean { .. } = rule {
		let norms: Vec<f64> = dense.iter().map(|d| norm(d)).collect();
		let limit = median(norms.clone());
		for (d, n) in dense.iter_mut().zip(norms) {
			if n > limit {
				d.iter_mut().for_each(|x| *x = (f64::from(*x) * (limit / n)) as f32);
			}
		}
	}
	let total: f64 = updates.iter().map(|u| u.samples as f64).sum();
	(0..dense[0].len())
		.map(|j| match rule {
			Rule::Mean => updates
				.iter()
				.zip(&dense)
				.fold(0f64, |acc, (u, d)| acc + u.samples as f64 / total * f64::from(d[j]))
				as f32,
			Rule::TrimmedMean { trim } | Rule::ClippedTrimmedMean { trim } => {
				let sent: Vec<f32> = dense.iter().map(|d| d[j]).filter(|x| *x != 0.0).collect();
				if sent.is_empty() {
					return 0.0;
				}
				// Ranked by value then position; the middle ones summed in the updates' order.
				let mut ranked: Vec<usize> = (0..sent.len()).collect();
				ranked.sort_by(|a, b| sent[*a].total_cmp(&sent[*b]).then(a.cmp(b)));
				let t = trim.min((sent.len() - 1) / 2);
				let mut kept = ranked[t..sent.len() - t].to_vec();
				kept.sort();
				let sum: f64 = kept.iter().map(|&i| f64::from(sent[i])).sum();
				(sum / kept.len() as f64 * sent.len() as f64 / n as f64) as f32
			}
			Rule::CenteredClip { .. } => unreachable!("not block-wise"),
		})
		.collect()
}

/// Updates of `len` values compressed with `spec`, one of them three times as long.
fn compressed(spec: &grid_primitives::job::Compression, len: usize) -> Vec<Contribution> {
	let mut rng = Rng::new(5);
	(0..6)
		.map(|i| {
			let size = if i == 2 { 0.03 } else { 0.01 };
			let delta: Vec<f32> = (0..len).map(|_| (rng.normal() * size) as f32).collect();
			let layout = crate::compress::Layout::rows(len, 100);
			let mut c = crate::compress::compressor(spec, &layout).unwrap();
			Contribution { update: Arc::new(c.compress(&delta).unwrap()), samples: 90 + i }
		})
		.collect()
}

#[test]
fn block_wise_aggregation_is_the_plain_rules_bit_for_bit_on_any_thread_count() {
	use grid_primitives::job::Compression;
	// Two whole blocks and a part: chunks straddle the blocks' edges.
	let len = 2 * blocks::BLOCK + 777;
	let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
	for spec in [
		Compression::None,
		Compression::Int8 { chunk: 1000 },
		Compression::TopK { chunk: 256, k: 32, value_bits: 1 },
		Compression::TopK { chunk: 100, k: 7, value_bits: 3 },
		Compression::Tiles { k: 64 },
	] {
		let updates = compressed(&spec, len);
		for rule in [
			Rule::Mean,
			Rule::TrimmedMean { trim: 1 },
			Rule::TrimmedMean { trim: 2 },
			Rule::ClippedTrimmedMean { trim: 1 },
			Rule::ClippedTrimmedMean { trim: 2 },
		] {
			let want = bits(&reference(&updates, rule));
			for threads in [1, 3] {
				let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
				// Row by row (the mean and trims of one) and column by column alike.
				for way in [aggregate, aggregate_by_columns] {
					let got = pool.install(|| way(&updates, rule, None).unwrap());
					assert_eq!(got.accepted, (0..6).collect::<Vec<_>>());
					assert!(bits(&got.delta) == want, "{spec:?} {rule:?} on {threads} threads");
				}
			}
		}
	}
}

#[test]
fn a_trimmed_mean_is_capped_to_the_updates_there_are() {
	let rule = Rule::ClippedTrimmedMean { trim: 3 };
	assert_eq!(rule.for_updates(2), Rule::ClippedTrimmedMean { trim: 0 });
	assert_eq!(rule.for_updates(5), Rule::ClippedTrimmedMean { trim: 2 });
	assert_eq!(rule.for_updates(9), rule);
	assert_eq!(Rule::TrimmedMean { trim: 1 }.for_updates(0), Rule::TrimmedMean { trim: 0 });
	assert_eq!(Rule::Mean.for_updates(1), Rule::Mean);
	// Two updates are averaged, not refused, whatever the job's trim (`aggregate` caps it;
	// clipped first: the longer one to the shorter's norm).
	let two = [Contribution::dense(vec![1.0], 1), Contribution::dense(vec![3.0], 1)];
	let with = |rule: Rule| aggregate(&two, rule, None).unwrap().delta;
	assert_eq!(with(Rule::TrimmedMean { trim: 3 }), vec![2.0]);
	assert_eq!(with(rule), vec![1.0]);
}

#[test]
fn equal_values_are_trimmed_in_a_fixed_order() {
	// Every trim, on columns full of ties (1-bit top-k values of equal scales tie often):
	// the rule's values are the reference's, which ranks ties by position.
	// Negative zeros are not sent, as zeros are not; a column of one, two and three sent.
	let values = [0.5, -0.25, 0.5, 0.5, -0.25, 0.125, 0.5];
	let updates: Vec<Contribution> = values
		.iter()
		.enumerate()
		.map(|(i, v)| {
			let odd = if i % 2 == 0 { 0.0 } else { 0.5 };
			let few = [1.5, -0.0, -1.5, 0.0, 2.0, 0.0, 0.0][i];
			Contribution::dense(vec![*v, 0.5, -*v, odd, few, if i < 2 { 1.0 } else { -0.0 }], 1)
		})
		.collect();
	let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
	for trim in 0..=3 {
		let rule = Rule::TrimmedMean { trim };
		let want = bits(&reference(&updates, rule));
		for way in [aggregate, aggregate_by_columns] {
			assert_eq!(bits(&way(&updates, rule, None).unwrap().delta), want, "trim {trim}");
		}
	}
}
