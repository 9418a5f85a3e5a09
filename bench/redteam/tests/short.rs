//! The red-team suite's short form, run in CI: a few attempts of every attacker, each
//! caught within the rounds of its attempt, no honest provider slashed, no verdict against
//! the truth.

use grid_redteam::{suite, Attacker, Checks};

#[test]
fn every_attacker_is_caught_and_no_honest_provider_is_slashed() {
	let report = suite(
		&Attacker::ALL,
		2,
		grid_redteam::STEPS,
		// Twice the daemon's segment checks: at its rate a sender on other data goes
		// unchecked for ten rounds once in two hundred attempts, which the full suite
		// measures; here every attempt must end caught.
		Checks { segments: 2.0 * grid_trainer::round::fraud::SEGMENT_RATE, ..Checks::default() },
		|attacker, attempt, outcome| {
			eprintln!("{attacker}: attempt {attempt}: {outcome:?}");
		},
	)
	.expect("the suite runs");
	eprintln!("{}", report.markdown());
	for tally in &report.tallies {
		let expected = if tally.attacker == Attacker::Nobody { 0 } else { tally.attempts };
		assert_eq!(tally.caught, expected, "{}: {tally:?}", tally.attacker);
		assert_eq!(tally.sum.wrong_verdicts, 0, "{}: a verdict against the truth", tally.attacker);
	}
	let total = report.total();
	assert_eq!(total.honest_slashed, 0, "an honest provider was slashed");
	assert!(total.honest_contributions > 0);
}
