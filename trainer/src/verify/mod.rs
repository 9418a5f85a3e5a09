//! Fraud checks on peers' updates: redoing a contribution exactly from what its commitment
//! fixes (the round's base model, the sender's committed [`WorkState`] — inner optimizer
//! position and moments, error-feedback residual — its data seed and its step count) and
//! comparing the result with the update it sent.
//!
//! Because the replay starts from the sender's own state, it is the same computation: on
//! the same kind of device honest work replays bit for bit, and across devices (a GPU
//! contribution replayed on a CPU) only floating-point reassociation separates them, so the
//! threshold is high ([`VALID_COSINE`]). Anything that was not that computation lands far
//! below it: noise, another participant's update (scaled or noised or not), the previous
//! aggregate's direction, training on other data, or a claim of more steps than were run.
//! `verify`'s tests measure each of these; `bench/redteam.sh` measures them at scale.
//!
//! The same check serves the challenger and the committee. A trainer screens every round's
//! updates cheaply ([`suspects`]: agreement with the others' mean) and replays only the
//! suspects before putting a deposit on a challenge; committee members check the challenged
//! claim by its trajectory ([`Replayer::judge_trace`]), replay it in full where that does not
//! hold, and vote. A full replay of a claim whose trajectory root is known is held to the
//! trajectory's recorded end ([`Replayer::judge_recorded`]): the update sent says little of
//! the training behind it when its sender may state any error-feedback residual.
//!
//! - [`carry`]: what a round hands on to its sender's next (the rule a start state would be
//!   held to; not yet checked).
//! - [`gram`]: every pair of a round's updates' dot product, from the updates as sent.
//! - [`screens`]: the cheap screens of a round's updates (agreement, copies, short norms).
//! - [`loss_screen`]: the paired loss screen (does an update owe its gain to its own data).
//! - [`replay`]: the exact replay of a claim and its judgement.
//! - [`segment`]: redoing a few steps of a claim from a state recorded mid-round, and a
//!   committee's check of a claim by its trajectory.
//! - [`worker`]: replays and loss screens on their own thread.

mod carry;
mod gram;
mod loss_screen;
mod replay;
mod screens;
mod segment;
mod worker;

pub use carry::Carry;
pub use gram::Gram;
pub use loss_screen::{
	LossScreen, GAUNTLET_BATCHES, GAUNTLET_CLEAR_FACTOR, GAUNTLET_CONFIRM_BATCHES,
	GAUNTLET_EXTEND_BATCHES, OWN_DATA_SHARE, OWN_DATA_STEPS,
};
pub use replay::{Claim, Judgement, Replayer, Shift, NORM_TOLERANCE, VALID_COSINE};
pub use screens::{
	copy_suspects, short_suspects, suspects, COPY_COSINE, MAX_COPY_COSINE, SHORT_NORM,
	SUSPECT_COSINE,
};
pub use segment::{judge_segment, SegmentJudgement, TraceFinding, TraceRequest};
pub use worker::{
	CatchUpBases, Check, Finding, ScreenRequest, SegmentRequest, SegmentStart, StartParams,
	VerifyWorker,
};

/// Cosine similarity (0 when either side is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
	cosine_of(a.iter().zip(b).map(|(x, y)| (*x, *y)))
}

/// [`cosine`] of pairs computed as they come (two vectors derived from model-sized states
/// need not be materialized to be compared).
pub fn cosine_of(pairs: impl Iterator<Item = (f32, f32)>) -> f64 {
	let (mut dot, mut aa, mut bb) = (0f64, 0f64, 0f64);
	for (x, y) in pairs {
		let (x, y) = (f64::from(x), f64::from(y));
		dot += x * y;
		aa += x * x;
		bb += y * y;
	}
	if aa == 0.0 || bb == 0.0 {
		return 0.0;
	}
	dot / (aa.sqrt() * bb.sqrt())
}

#[cfg(test)]
mod tests;
