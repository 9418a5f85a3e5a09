//! Tallies of the attempts and the report they make (markdown and JSON).

use std::fmt::Write;

use crate::{
	attack::Attacker,
	world::{Outcome, ROUNDS},
};

/// One attacker's attempts, summed.
#[derive(Clone, Debug)]
pub struct Tally {
	/// The attacker.
	pub attacker: Attacker,
	/// Attempts run.
	pub attempts: u32,
	/// Attempts in which it did not attack (a Sybil voter never drawn): not counted above.
	pub idle: u32,
	/// Attempts in which it was caught (within the attempt's rounds).
	pub caught: u32,
	/// For each caught attempt, rounds until caught (1: in the round of its first offence).
	pub rounds_to_catch: Vec<u32>,
	/// Everything else, summed over the attempts.
	pub sum: Outcome,
}

impl Tally {
	/// An empty tally of `attacker`.
	pub fn new(attacker: Attacker) -> Self {
		Tally {
			attacker,
			attempts: 0,
			idle: 0,
			caught: 0,
			rounds_to_catch: Vec::new(),
			sum: Outcome::default(),
		}
	}

	/// Adds one attempt.
	pub fn add(&mut self, o: &Outcome) {
		if o.attacked {
			self.attempts += 1;
		} else {
			self.idle += 1;
		}
		if let Some(round) = o.caught_in_round {
			self.caught += 1;
			self.rounds_to_catch.push(round + 1);
		}
		let s = &mut self.sum;
		s.rounds += o.rounds;
		s.honest_contributions += o.honest_contributions;
		s.honest_challenged += o.honest_challenged;
		s.honest_slashed += o.honest_slashed;
		s.griefed += o.griefed;
		s.audits += o.audits;
		s.wrong_verdicts += o.wrong_verdicts;
		s.training_steps += o.training_steps;
		s.replay_steps += o.replay_steps;
		s.committee_steps += o.committee_steps;
		s.screen_passes += o.screen_passes;
		s.segment_steps += o.segment_steps;
	}

	/// Caught / attempts.
	pub fn detection(&self) -> f64 {
		f64::from(self.caught) / f64::from(self.attempts.max(1))
	}

	/// Mean and largest rounds until caught.
	pub fn rounds(&self) -> (f64, u32) {
		let n = self.rounds_to_catch.len().max(1) as f64;
		let mean = self.rounds_to_catch.iter().map(|r| f64::from(*r)).sum::<f64>() / n;
		(mean, self.rounds_to_catch.iter().copied().max().unwrap_or(0))
	}
}

/// Verification cost by where it goes, each over inner steps trained.
#[derive(Clone, Copy, Debug)]
pub struct Costs {
	/// The loss screens' forward passes (a third of a step each).
	pub screens: f64,
	/// The steps segment checks redid.
	pub segments: f64,
	/// Replays of updates a trainer's screens flagged.
	pub replays: f64,
	/// Committee members' checks of challenged and audited updates (trajectory segments,
	/// full replays where those fail).
	pub committees: f64,
}

impl Costs {
	fn json(&self) -> serde_json::Value {
		serde_json::json!({
			"screens": self.screens,
			"segments": self.segments,
			"replays": self.replays,
			"committees": self.committees,
		})
	}
}

/// Every attacker's tally.
#[derive(Clone, Debug, Default)]
pub struct Report {
	/// In run order.
	pub tallies: Vec<Tally>,
}

impl Report {
	/// Totals over every attacker's attempts.
	pub fn total(&self) -> Outcome {
		let mut all = Tally::new(Attacker::Lazy);
		for t in &self.tallies {
			all.add(&Outcome { caught_in_round: None, attacked: true, ..t.sum.clone() });
		}
		all.sum
	}

	/// Verification cost: inner steps replayed, and the loss screens' forward passes (a
	/// third of a step each), over inner steps trained.
	pub fn overhead(o: &Outcome) -> f64 {
		let c = Report::costs(o);
		c.screens + c.segments + c.replays + c.committees
	}

	/// The verification cost's parts, each over inner steps trained.
	pub fn costs(o: &Outcome) -> Costs {
		let trained = (o.training_steps as f64).max(1.0);
		Costs {
			screens: o.screen_passes as f64 / 3.0 / trained,
			segments: o.segment_steps as f64 / trained,
			replays: o.replay_steps as f64 / trained,
			committees: o.committee_steps as f64 / trained,
		}
	}

	/// The headline figures.
	pub fn json(&self) -> serde_json::Value {
		let attackers: Vec<serde_json::Value> = self
			.tallies
			.iter()
			.map(|t| {
				let (mean, max) = t.rounds();
				serde_json::json!({
					"attacker": t.attacker.name(),
					"caught_means": t.attacker.caught_means(),
					"attempts": t.attempts,
					"idle_attempts": t.idle,
					"caught": t.caught,
					"detection_rate": t.detection(),
					"rounds_to_catch_mean": mean,
					"rounds_to_catch_max": max,
					"rounds_to_catch": t.rounds_to_catch,
					"wrong_verdicts": t.sum.wrong_verdicts,
					"audits": t.sum.audits,
					"verification_overhead": Report::overhead(&t.sum),
					"verification_cost_parts": Report::costs(&t.sum).json(),
				})
			})
			.collect();
		let total = self.total();
		serde_json::json!({
			"rounds_per_attempt_max": ROUNDS,
			"attackers": attackers,
			"honest": {
				"contributions": total.honest_contributions,
				"wrongly_challenged_by_honest_screens": total.honest_challenged,
				"challenged_by_griefers": total.griefed,
				"slashed": total.honest_slashed,
				"false_positive_rate": f64::from(total.honest_challenged + total.honest_slashed)
					/ f64::from(total.honest_contributions.max(1)),
			},
			"wrong_verdicts": total.wrong_verdicts,
			"audits": total.audits,
			"verification_overhead": Report::overhead(&total),
			"verification_cost_parts": Report::costs(&total).json(),
		})
	}

	/// "total% (screens + segments + replays + committees)", in percent of steps trained.
	fn cost_cell(o: &Outcome) -> String {
		let c = Report::costs(o);
		format!(
			"{:.1}% ({:.1} + {:.1} + {:.1} + {:.1})",
			100.0 * Report::overhead(o),
			100.0 * c.screens,
			100.0 * c.segments,
			100.0 * c.replays,
			100.0 * c.committees
		)
	}

	/// The report's table and totals, in markdown.
	pub fn markdown(&self) -> String {
		let mut out = String::new();
		out.push_str(
			"| attacker | attempts | caught | detection | rounds to catch (mean / max) | wrong verdicts | audits | verification cost: loss screens + segment checks + replays + committees |\n|---|---|---|---|---|---|---|---|\n",
		);
		for t in &self.tallies {
			let (mean, max) = t.rounds();
			let rounds = match t.caught {
				0 => "—".to_string(),
				_ => format!("{mean:.2} / {max}"),
			};
			let _ = writeln!(
				out,
				"| {} | {} | {} | {:.1}% | {} | {} | {} | {} |",
				t.attacker.name(),
				t.attempts,
				t.caught,
				100.0 * t.detection(),
				rounds,
				t.sum.wrong_verdicts,
				t.sum.audits,
				Report::cost_cell(&t.sum),
			);
		}
		let total = self.total();
		let _ = writeln!(
			out,
			"\nHonest contributions: {} paid; wrongly challenged by honest screens: {}; challenged by griefers: {}; honest providers slashed: {}; verdicts against the truth: {}; audits: {}; verification cost over steps trained: {}.",
			total.honest_contributions,
			total.honest_challenged,
			total.griefed,
			total.honest_slashed,
			total.wrong_verdicts,
			total.audits,
			Report::cost_cell(&total),
		);
		out
	}
}
