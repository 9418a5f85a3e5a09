//! Segment checks: redoing a few inner steps of a contribution, from a state its sender
//! recorded mid-round, instead of the whole round.
//!
//! A full replay costs a verifier the contribution's every step, and the loss screen that
//! decides what to replay sees only about a step's worth of an update's own data in it
//! (`bench/reports/screen-power.md`), so finding training on other data costs verifiers
//! about a tenth of the training (`bench/reports/redteam.md`). A trainer that records its
//! whole inner state ([`StepState`]: parameters, step count, moments) after each step can
//! instead be checked on any `k` steps of its trajectory ([`crate::trajectory`]): from the state before
//! them, a verifier redoes those steps on the sender's own batches and compares the state
//! after them with the one recorded. Training on other data fails on any segment (its
//! gradients are other batches'), so checking one segment of one step costs `1 / H` of a
//! round of `H` steps. `bench/segment_power.sh` measures how far apart honest and other-data
//! segments land.
//!
//! Comparing parameters alone would be weak: AdamW's step is mostly the first moment the
//! segment started with, which an update trained on other data shares. So the check
//! compares what the steps added to the first moment, `m_end − β₁ᵏ m_start` (a decayed sum
//! of the segment's own gradients), and the parameters' change, each by cosine.
//!
//! Trainers record, commit to and serve their trajectories ([`crate::trajectory`]); the
//! fraud desk checks peers' with these functions (`round/fraud/segments.rs`), and committee
//! members judge a challenged claim by its trajectory ([`Replayer::judge_trace`]: that it
//! starts from the committed start state, that its end gives the update sent, and one drawn
//! segment) before, only if that fails, they replay it in full, held to the trajectory's
//! end ([`Replayer::judge_recorded`], `round/fraud/committee.rs`).

use std::{borrow::Cow, collections::HashMap};

use grid_primitives::{work::Verdict, Hash};

use super::{cosine_of, Claim, Judgement, Replayer, SegmentRequest, Shift, VALID_COSINE};
use crate::{
	data::batch_indices,
	diloco::pseudo_gradient,
	error::{Error, Result},
	optim::adamw::BETA1,
	params::Digest,
	train::InnerTrainer,
	trajectory::{Mark, StepState, StepView, Trajectory},
	work_state::Moments,
};

/// What the first moment gained over `start` in the steps to `end`, per parameter:
/// `m − β₁ᵏ m_start` (for SGD, which keeps no moments, the parameters' change, which is its
/// gradients). Computed as read: at a check's peak the verifier holds three whole states.
fn gradients<'a>(start: StepView<'a>, end: StepView<'a>) -> Box<dyn Iterator<Item = f32> + 'a> {
	match (end.moments, start.moments) {
		(Some(now), Some(then)) => {
			let steps = i32::try_from(end.step.saturating_sub(start.step)).unwrap_or(0);
			let decay = BETA1.powi(steps);
			Box::new(now.m.iter().zip(&then.m).map(move |(m, m0)| m - decay * m0))
		}
		_ => change(start, end),
	}
}

/// The parameters' change from `start` to `end`, per parameter.
fn change<'a>(start: StepView<'a>, end: StepView<'a>) -> Box<dyn Iterator<Item = f32> + 'a> {
	Box::new(end.params.iter().zip(start.params).map(|(p, p0)| p - p0))
}

/// A segment check's finding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentJudgement {
	/// The vote it supports.
	pub verdict: Verdict,
	/// Cosine between what the claimed and the replayed steps added to the first moment.
	pub gradient_cosine: f64,
	/// Cosine between the claimed and the replayed change of the parameters.
	pub param_cosine: f64,
}

/// Judges a claimed segment: the state `claimed` its sender recorded after the steps that
/// followed `start`, against the state `replayed` that redoing them gave. Valid when both
/// cosines reach [`VALID_COSINE`] and the step counts agree.
pub fn judge_segment(
	start: StepView<'_>,
	claimed: StepView<'_>,
	replayed: StepView<'_>,
) -> SegmentJudgement {
	let shapes_agree = claimed.params.len() == start.params.len()
		&& claimed.moments.map(|m| m.m.len()) == start.moments.map(|m| m.m.len())
		&& claimed.step == replayed.step;
	if !shapes_agree {
		return SegmentJudgement {
			verdict: Verdict::Invalid,
			gradient_cosine: 0.0,
			param_cosine: 0.0,
		};
	}
	let gradient_cosine = cosine_of(gradients(start, claimed).zip(gradients(start, replayed)));
	let param_cosine = cosine_of(change(start, claimed).zip(change(start, replayed)));
	let same = gradient_cosine >= VALID_COSINE && param_cosine >= VALID_COSINE;
	SegmentJudgement {
		verdict: if same { Verdict::Valid } else { Verdict::Invalid },
		gradient_cosine,
		param_cosine,
	}
}

impl Replayer {
	/// The state after redoing `steps` inner steps from `start`, the round's steps
	/// `first..first + steps` on data seed `seed`'s batches; an overlapped round's `shift`
	/// moves the weights before the step it happened at.
	pub fn replay_segment(
		&self,
		start: &StepState,
		seed: &Hash,
		first: u32,
		steps: u32,
		shift: Option<Shift>,
	) -> Result<StepState> {
		self.replay_moved(start.view(), start.moments.clone(), seed, first, steps, shift)
	}

	/// [`Replayer::replay_segment`] with the optimizer's `moments` given rather than
	/// copied from `start` (whose own are not read): a caller that owns a recorded state
	/// hands its second moments over instead of holding them twice.
	#[allow(clippy::too_many_arguments)]
	fn replay_moved(
		&self,
		start: StepView<'_>,
		moments: Option<Moments>,
		seed: &Hash,
		first: u32,
		steps: u32,
		shift: Option<Shift>,
	) -> Result<StepState> {
		if self.max_steps.is_some_and(|cap| first.saturating_add(steps) > cap) {
			return Err(Error::Config(format!(
				"steps {first}..{} are past the job's {:?} a round",
				first.saturating_add(steps),
				self.max_steps
			)));
		}
		let mut trainer =
			InnerTrainer::new(self.spec, b"grid/replay", &self.device, &self.inner, self.config)?;
		trainer.restore_owned_at(start.step, moments)?;
		trainer.model().params().load_flat(start.params)?;
		let population = self.dataset.train_len();
		for i in first..first + steps {
			if let Some(shift) = shift.filter(|s| s.at == i) {
				let mut weights = trainer.model().params().flatten()?;
				shift.apply(&mut weights)?;
				trainer.model().params().load_flat(&weights)?;
			}
			let indices = batch_indices(seed, u64::from(i), self.batch_size, population);
			trainer.step(&self.dataset.train_batch(&indices, &self.device)?)?;
		}
		trainer.into_state()
	}
}

impl Replayer {
	/// Redoes the steps `first..first + steps` from the recorded `start`, its optimizer
	/// restored to `moments` (moving the weights by `shift` where an overlapped round caught
	/// up), and judges them against the recorded `end` ([`judge_segment`], which reads the
	/// start's parameters and first moments only).
	#[allow(clippy::too_many_arguments)]
	fn redo_segment(
		&self,
		start: StepView<'_>,
		moments: Option<Moments>,
		end: &StepState,
		seed: &Hash,
		first: u32,
		steps: u32,
		shift: Option<Shift>,
	) -> Result<SegmentJudgement> {
		let mut replayed = self.replay_moved(start, moments, seed, first, steps, shift)?;
		// The judge reads no second moments: they go before the comparison.
		if let Some(moments) = &mut replayed.moments {
			moments.v = Vec::new();
		}
		// Judged on what the steps did: a catch-up inside the segment moved both states alike.
		// Only the recorded end's parameters are copied to undo it, not its moments.
		let crossed = shift.filter(|s| (first..first + steps).contains(&s.at));
		let mut end_params = Cow::Borrowed(&end.params[..]);
		if let Some(shift) = crossed {
			shift.undo(end_params.to_mut())?;
			shift.undo(&mut replayed.params)?;
		}
		let end = StepView { params: &end_params, ..end.view() };
		Ok(judge_segment(start, end, replayed.view()))
	}

	/// A peer's segment check: the steps redone as its round may have run. In a job whose
	/// rounds overlap, a segment across the catch-up step is redone with the catch-up and,
	/// if that does not hold, without (a round trained after a restart, a re-sync or a join
	/// does not overlap); both are honest computations, so either passing is a pass.
	///
	/// The request is consumed: its start's second moments, which only the replay's
	/// optimizer reads, move into the last redo instead of being copied (one model's size
	/// less at the check's peak).
	pub fn check_segment(&self, request: SegmentRequest) -> Result<SegmentJudgement> {
		let SegmentRequest { mut start, end, seed, first, steps, bases } = request;
		let second = start.moments.as_mut().map(|m| std::mem::take(&mut m.v));
		let start = start.view();
		let moments = |second: Option<Vec<f32>>| {
			start.moments.map(|m| Moments { m: m.m.clone(), v: second.unwrap_or_default() })
		};
		let shift = bases.as_ref().zip(self.catch_up).map(|(bases, catch_up)| Shift {
			at: catch_up.after(),
			from: &bases.from,
			to: &bases.to,
		});
		let redo = |second, shift| {
			self.redo_segment(start, moments(second), &end, &seed, first, steps, shift)
		};
		let crossed = shift.filter(|s| (first..first + steps).contains(&s.at));
		let Some(shift) = crossed else { return redo(second, None) };
		let shifted = redo(second.clone(), Some(shift))?;
		if shifted.verdict == Verdict::Valid {
			return Ok(shifted);
		}
		let plain = redo(second, None)?;
		Ok(if plain.verdict == Verdict::Valid { plain } else { shifted })
	}
}

/// `claim` as its trajectory's first state (`first`, a digest) says it ran: overlapped from
/// `claim.from`, or blocking from its base (an overlapping job's round trained after a
/// restart, a re-sync or a join); `None` when it starts from neither. That first state is
/// the claim's start weights with its start state's step and moments
/// ([`StepView::at_start`]), read in place, never copied.
fn as_recorded(claim: &Claim, first: &Digest) -> Option<Claim> {
	let blocking = Claim { from: None, ..claim.clone() };
	[claim.clone(), blocking]
		.into_iter()
		.find(|claim| StepView::at_start(claim.start_weights(), &claim.start).digest() == *first)
}

/// A check of a claim by the trajectory its sender committed to ([`Replayer::judge_trace`]):
/// a committee member's (one drawn gap first), or a full replay held to the trajectory's
/// recorded end (a desk's suspect, or a claim whose gap did not settle it).
pub struct TraceRequest {
	/// The claim: the round's base, the sender's committed start state (checked against its
	/// digests), the update it sent, its data seed and the steps it claimed.
	pub claim: Claim,
	/// The trajectory it committed to (checked against its root).
	pub trajectory: Trajectory,
	/// The gap drawn from the challenge's randomness: the steps between marks `gap` and
	/// `gap + 1` are redone first (`None`: straight to the full replay).
	pub gap: Option<usize>,
	/// The states fetched, by digest (each checked against it): the trajectory's end and
	/// the drawn gap's ends, but for the first mark, which the verifier rebuilds from the
	/// base and the start state.
	pub states: HashMap<Digest, StepState>,
}

/// What a trajectory check found.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceFinding {
	/// The trajectory starts where the claim did, its end gives the update sent, and its
	/// drawn segment redoes: valid for a gap's steps.
	Holds,
	/// The drawn gap did not settle the claim (`why`, or no gap was drawn), and a full
	/// replay held to the trajectory's end decided ([`Replayer::judge_recorded`]).
	Replayed {
		/// What did not hold.
		why: String,
		/// The full replay's judgement.
		judgement: Judgement,
		/// Inner steps it redid (none for a claim refused on its face: a trajectory short
		/// of it, or from another start).
		steps: u32,
	},
}

impl Replayer {
	/// Checks `request`'s claim by its trajectory and, where its drawn gap does not settle
	/// it (or none was drawn), by a full replay held to the trajectory's end
	/// ([`Replayer::judge_recorded`]). The gap's check costs the gap's steps and one
	/// compression instead of the round's every step: the first state is the round's base
	/// with the committed start state's position and moments; every state used counts the
	/// steps of its place; the last state's parameters, as a pseudo-gradient with the
	/// start state's residual, compress to the update sent (as a replay's would,
	/// [`Judgement`]); and the drawn segment's steps redo ([`judge_segment`]).
	///
	/// The request is consumed: the gap's states go before the full replay, which reads only
	/// the trajectory's end (two states fewer at the replay's peak).
	pub fn judge_trace(&self, mut request: TraceRequest) -> Result<TraceFinding> {
		let why = match request.gap {
			Some(gap) => match self.gap_fails(&request, gap)? {
				None => return Ok(TraceFinding::Holds),
				Some(why) => why,
			},
			None => "no gap was drawn".to_string(),
		};
		if let Some(&(_, end)) = request.trajectory.marks().last() {
			request.states.retain(|digest, _| *digest == end);
		}
		let (judgement, steps) = self.replay_recorded(&request)?;
		Ok(TraceFinding::Replayed { why, judgement, steps })
	}

	/// What of `request`'s trajectory does not hold with `gap` drawn (`None`: it all holds).
	fn gap_fails(&self, request: &TraceRequest, gap: usize) -> Result<Option<String>> {
		let TraceRequest { claim, trajectory, states, .. } = request;
		let fails = |why: String| Ok(Some(why));
		let marks = trajectory.marks();
		if self.refuses(claim) {
			return fails(format!(
				"a claim of {} steps{}",
				claim.steps,
				if claim.from.is_some() { ", overlapped" } else { "" }
			));
		}
		if marks.len() < 2 || trajectory.steps() != claim.steps || gap + 1 >= marks.len() {
			return fails(format!(
				"a trajectory of {} states to step {} for a claim of {} steps",
				marks.len(),
				trajectory.steps(),
				claim.steps
			));
		}
		let claim = match as_recorded(claim, &marks[0].1) {
			Some(found) => found,
			None => {
				return fails("its trajectory does not start from its committed start state".into())
			}
		};
		let claim = &claim;
		let shift = self.shift(claim);
		let first = StepView::at_start(claim.start_weights(), &claim.start);
		let stored = |(at, digest): Mark| {
			states
				.get(&digest)
				.ok_or_else(|| Error::Config(format!("no state at step {at} to check")))
		};
		let state = |mark: Mark| -> Result<StepView<'_>> {
			if mark.0 == 0 {
				Ok(first)
			} else {
				stored(mark).map(StepState::view)
			}
		};
		let (before, after, last) = (marks[gap], marks[gap + 1], marks[marks.len() - 1]);
		for mark in [before, after, last] {
			let counted = state(mark)?.step;
			if counted != claim.start.step + u64::from(mark.0) {
				return fails(format!(
					"its state {} steps into the round counts {counted} steps (it started at {})",
					mark.0, claim.start.step
				));
			}
		}
		let link = self.end_gives_sent(claim, state(last)?.params)?;
		if link.verdict == Verdict::Invalid {
			return fails(format!(
				"its trajectory's end does not give the update it sent (cosine {:.3}, norm \
				 ratio {:.3})",
				link.cosine, link.norm_ratio
			));
		}
		let from = state(before)?;
		let to = stored(after)?;
		let steps = after.0 - before.0;
		let segment = self.redo_segment(
			from,
			from.moments.cloned(),
			to,
			&claim.seed,
			before.0,
			steps,
			shift,
		)?;
		if segment.verdict == Verdict::Invalid {
			return fails(format!(
				"its steps {}..{} do not redo (gradient cosine {:.3}, parameters {:.3})",
				before.0, after.0, segment.gradient_cosine, segment.param_cosine
			));
		}
		Ok(None)
	}

	/// Whether the end `params` of `claim`'s round, as a pseudo-gradient with its start
	/// state's residual, compress to the update it sent (a round no longer than its
	/// catch-up step caught up after its last state).
	fn end_gives_sent(&self, claim: &Claim, params: &[f32]) -> Result<Judgement> {
		let again = self.sent_from(claim, &self.end_delta(claim, params)?)?;
		Ok(Judgement::of(&claim.sent.decompress(), &again.decompress()))
	}

	/// The pseudo-gradient of `claim`'s round whose last parameters are `params` (a round no
	/// longer than its catch-up step caught up after its last state).
	pub(super) fn end_delta(&self, claim: &Claim, params: &[f32]) -> Result<Vec<f32>> {
		let mut end = Cow::Borrowed(params);
		if let Some(shift) = self.shift(claim).filter(|s| claim.steps <= s.at) {
			shift.apply(end.to_mut())?;
		}
		pseudo_gradient(&claim.base, &end)
	}

	/// A full replay of `request`'s claim held to the trajectory its sender committed to:
	/// every step redone from the committed start must reach the trajectory's recorded end
	/// ([`judge_segment`] over the whole round: the gradients it added to the first moment
	/// and the parameters' change), and that end, as a pseudo-gradient with the start
	/// state's residual, must compress to the update sent. Valid only when both hold.
	///
	/// A replay that only compared its own compressed result with the update sent let the
	/// residual decide: the residual is the sender's to state (nothing before the round
	/// fixes it), and one a few times an update's size outweighs the round's training in the
	/// compression, so an update of noise with a residual forged to give it replayed as
	/// valid without a step trained (`verify/tests.rs`, `a_forged_residual_does_not_pass_for_training`).
	/// The recorded end is fixed by the commitment's trajectory root, and the round's
	/// training is compared with it directly, where no residual enters.
	pub fn judge_recorded(&self, request: &TraceRequest) -> Result<Judgement> {
		Ok(self.replay_recorded(request)?.0)
	}

	/// [`Replayer::judge_recorded`], and the inner steps it redid.
	fn replay_recorded(&self, request: &TraceRequest) -> Result<(Judgement, u32)> {
		let refused = Ok((Judgement::refused(), 0));
		let TraceRequest { claim, trajectory, states, .. } = request;
		let marks = trajectory.marks();
		if self.refuses(claim) || marks.len() < 2 || trajectory.steps() != claim.steps {
			return refused;
		}
		let Some(claim) = as_recorded(claim, &marks[0].1) else { return refused };
		let (at, digest) = marks[marks.len() - 1];
		let end = states
			.get(&digest)
			.ok_or_else(|| Error::Config(format!("no state at step {at} to check")))?;
		if end.step != claim.start.step + u64::from(claim.steps) {
			return refused;
		}
		let link = self.end_gives_sent(&claim, &end.params)?;
		let first = StepView::at_start(claim.start_weights(), &claim.start);
		let shift = self.shift(&claim);
		let moments = first.moments.cloned();
		let whole = self.redo_segment(first, moments, end, &claim.seed, 0, claim.steps, shift)?;
		let valid = link.verdict == Verdict::Valid && whole.verdict == Verdict::Valid;
		let judgement = Judgement {
			verdict: if valid { Verdict::Valid } else { Verdict::Invalid },
			cosine: link.cosine.min(whole.gradient_cosine).min(whole.param_cosine),
			norm_ratio: link.norm_ratio,
		};
		Ok((judgement, claim.steps))
	}
}
