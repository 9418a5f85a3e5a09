//! Cheap screens of a round's updates, run every round before anything is replayed: an
//! update that disagrees with the others, is this close to another, or is shorter than its
//! peers is a suspect worth replaying. Each reads only the round's [`Gram`] matrix.

use super::Gram;

/// An update whose cosine with the mean of the round's other updates is below this is a
/// suspect worth replaying (honest updates of a round share the data's gradient direction).
pub const SUSPECT_COSINE: f64 = 0.05;

/// Positions of the updates that disagree with the rest of the round (cosine with the sum of
/// the others below [`SUSPECT_COSINE`]), with that cosine. Needs three updates: with two,
/// neither can be told from the other.
pub fn suspects(gram: &Gram) -> Vec<(usize, f64)> {
	if gram.len() < 3 {
		return Vec::new();
	}
	(0..gram.len())
		.map(|i| (i, gram.cosine_with_others(i)))
		.filter(|(_, agreement)| *agreement < SUSPECT_COSINE)
		.collect()
}

/// Two updates of a round at least this close (cosine) are likely one update copied
/// (scaled, noised or re-quantized): both are replayed, and the replay tells the original
/// from the copy. Honest updates of a round are further apart (each is trained on other data
/// from its own state), but how far depends on the round: measured in this module's test
/// (MNIST MLP, third round, warm states) the closest honest pair is at 0.546 (int8), while
/// in the first round, all from the same fresh state, honest updates can be closer (the
/// fraud desk's test). So the screen stays high: a scaled copy is at 1.000, a copy with
/// noise of 0.3 times its norm at 0.962 (int8, caught) but 0.699 (top-k, missed). A copy
/// drowned in enough noise passes this screen (and, while it agrees with the round,
/// [`suspects`] too); only a replay of it would catch it.
pub const COPY_COSINE: f64 = 0.9;

/// The copy screen's highest threshold. Where a round's honest updates are all close (the
/// first round of long rounds, all trained from one fresh state: pairs at 0.90 to 0.92 in
/// rounds of 120 steps, `bench/redteam.sh`), a pair is a copy only if it is closer than the
/// round's other pairs by half their distance, and never needs to be closer than this: a
/// copy with noise of 0.3 times its norm is at 0.96.
pub const MAX_COPY_COSINE: f64 = 0.95;

/// Positions of the updates that some other update of the round is close enough to to be a
/// copy, with the closest cosine: at least [`COPY_COSINE`], and, with other pairs to compare
/// with, at least the median of their cosines moved halfway to 1 (at most
/// [`MAX_COPY_COSINE`]). Pairwise: the Gram matrix's O(n²) dot products.
pub fn copy_suspects(gram: &Gram) -> Vec<(usize, f64)> {
	let n = gram.len();
	let mut pairs = Vec::new();
	for i in 0..n {
		for j in i + 1..n {
			pairs.push((i, j, gram.cosine(i, j)));
		}
	}
	let mut closest = vec![f64::MIN; n];
	for (k, &(i, j, c)) in pairs.iter().enumerate() {
		let mut others: Vec<f64> =
			pairs.iter().enumerate().filter(|(m, _)| *m != k).map(|(_, p)| p.2).collect();
		others.sort_by(f64::total_cmp);
		let threshold = match others.get(others.len() / 2) {
			Some(median) if others.len() >= 2 => {
				(1.0 - (1.0 - median) / 2.0).clamp(COPY_COSINE, MAX_COPY_COSINE)
			}
			_ => COPY_COSINE,
		};
		if c >= threshold {
			closest[i] = closest[i].max(c);
			closest[j] = closest[j].max(c);
		}
	}
	closest.into_iter().enumerate().filter(|(_, c)| *c > f64::MIN).collect()
}

/// An update whose norm is below this share of the median of what the round's other updates
/// say its claimed steps should give is a suspect: with AdamW every inner step moves the
/// weights by about the learning rate, so an update of fewer steps than claimed is shorter
/// than its peers' (three quarters of the steps: about three quarters of the norm).
pub const SHORT_NORM: f64 = 0.85;

/// Positions of the updates shorter than [`SHORT_NORM`] of the median of the others' norms,
/// with that ratio; `steps` are the inner steps each claimed. Another update of more steps
/// counts at its norm scaled down to this one's steps: a norm grows at most about linearly
/// with the steps (it moves on from where the last step left it; the optimizer's moments
/// are carried from round to round), so an honest update of fewer steps (a slower
/// machine, on a deadline) is not taken for a lazy one: 32 to 64 CPU-starved trainers made
/// every replay of the fraud desks one of an honest slow update (`bench/scale.sh`). One of
/// as many steps or more than another is held to that other's whole norm, as before. What
/// it gives up: an update that claims fewer steps than its peers is held to less (a norm
/// that grows slower than linearly lets it skip a few of its claimed steps unflagged);
/// the fraud desk's segment checks (`SEGMENT_RATE`) still replay a drawn part
/// of every sender's steps, and the chain's audits whole updates. Needs three updates.
pub fn short_suspects(gram: &Gram, steps: &[u32]) -> Vec<(usize, f64)> {
	if gram.len() < 3 || steps.len() != gram.len() {
		return Vec::new();
	}
	let norms: Vec<f64> = (0..gram.len()).map(|i| gram.norm(i)).collect();
	let steps: Vec<f64> = steps.iter().map(|s| f64::from((*s).max(1))).collect();
	let mut out = Vec::new();
	for (i, own) in norms.iter().enumerate() {
		let mut others: Vec<f64> = norms
			.iter()
			.zip(&steps)
			.enumerate()
			.filter(|(j, _)| *j != i)
			.map(|(_, (norm, their))| norm * (steps[i] / their).min(1.0))
			.collect();
		others.sort_by(f64::total_cmp);
		let median = others[others.len() / 2];
		let ratio = own / median.max(f64::MIN_POSITIVE);
		if ratio < SHORT_NORM {
			out.push((i, ratio));
		}
	}
	out
}
