//! What a segment check tells ([`grid_trainer::verify::judge_segment`]): a verifier redoes
//! `k` inner steps of a round from the state its sender recorded before them, on the batches
//! the sender was given, and compares the state after them with the one recorded. For honest
//! work and for work trained on other data (the suite's hardest attacker to screen for:
//! `bench/reports/screen-power.md`), at every position of a round and for several `k`.
//!
//! The providers of [`crate::trio`] record every step's state; from the second round on each
//! segment of the checked provider (honest) and of the one that trained on other data than it
//! was given gives one finding of each kind.

use anyhow::Result;
use grid_trainer::verify::{judge_segment, Replayer, SegmentJudgement};

use crate::{
	trio::{train_jobs, WRONG},
	world::Setup,
};

/// Findings of segments of one length: `honest[t]` and `wrong[t]` hold one finding per
/// (job, round) on the segment starting after step `t`.
pub struct Findings {
	/// Steps per segment.
	pub steps: u32,
	/// Honest segments' findings.
	pub honest: Vec<Vec<SegmentJudgement>>,
	/// Findings on segments trained on other data.
	pub wrong: Vec<Vec<SegmentJudgement>>,
}

impl Findings {
	fn new(steps: u32, positions: usize) -> Self {
		Findings { steps, honest: vec![Vec::new(); positions], wrong: vec![Vec::new(); positions] }
	}

	/// Every finding of one kind, all positions together.
	pub fn all(by_position: &[Vec<SegmentJudgement>]) -> Vec<SegmentJudgement> {
		by_position.concat()
	}
}

/// Findings on segments of each of `lengths` steps, over `jobs` jobs of `rounds` rounds (the
/// first round of each not counted: fresh optimizer states), every segment start of a round.
pub fn findings(setup: &Setup, lengths: &[u32], jobs: u32, rounds: u32) -> Result<Vec<Findings>> {
	let replayer: Replayer = setup.replayer();
	let mut found: Vec<Findings> = lengths
		.iter()
		.map(|&k| Findings::new(k, setup.steps.saturating_sub(k) as usize + 1))
		.collect();
	train_jobs(setup, "segment-power", jobs, rounds, true, |r| {
		if r.round == 0 {
			return Ok(());
		}
		for f in &mut found {
			for first in 0..=setup.steps.saturating_sub(f.steps) {
				for (who, into) in [(0, &mut f.honest), (WRONG, &mut f.wrong)] {
					let states = &r.states[who];
					let (start, end) =
						(&states[first as usize], &states[(first + f.steps) as usize]);
					let replayed =
						replayer.replay_segment(start, &r.seeds[who], first, f.steps, None)?;
					into[first as usize].push(judge_segment(
						start.view(),
						end.view(),
						replayed.view(),
					));
				}
			}
		}
		Ok(())
	})?;
	Ok(found)
}
