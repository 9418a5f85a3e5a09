//! Leaving a job whose rounds reach no quorum.
//!
//! A round without a quorum (fewer than two thirds of its members attesting one result) pays
//! nobody and refunds its reward to the buyer, while every member still trained it and its
//! update went to the others. A buyer whose own accounts hold a third of a job's seats can
//! make that happen at will; the chain ends a job after `MaxUnderstaffedRounds` such rounds
//! in a row, but one round let through in between keeps it going. So a trainer keeps its
//! own count: when some of the last [`WINDOW`] rounds it worked had no quorum (two by
//! default, the provider's `leave_without_quorum`), it leaves the job (honest trouble that
//! bad, a partition or an overloaded machine, pays nothing either).

use std::collections::VecDeque;

/// Rounds (the last this trainer worked and sent a proof for) the count looks at.
pub(super) const WINDOW: usize = 4;

/// The quorum outcomes of the rounds this trainer worked, most recent last.
#[derive(Debug)]
pub(super) struct QuorumWatch {
	/// `true`: that round settled without a quorum.
	recent: VecDeque<bool>,
	/// Rounds without a quorum among the recent ones that make it leave (0: never).
	leave_at: usize,
}

impl QuorumWatch {
	/// A watch that says leave at `leave_at` rounds without a quorum of the last [`WINDOW`]
	/// (0: never).
	pub(super) fn new(leave_at: usize) -> Self {
		QuorumWatch { recent: VecDeque::with_capacity(WINDOW + 1), leave_at }
	}

	/// Records a settled round this trainer worked; whether the job is now one to leave.
	pub(super) fn settled(&mut self, quorum: bool) -> bool {
		self.recent.push_back(!quorum);
		if self.recent.len() > WINDOW {
			self.recent.pop_front();
		}
		self.leave_at > 0 && self.without_quorum() >= self.leave_at
	}

	/// Rounds without a quorum among the recent ones.
	pub(super) fn without_quorum(&self) -> usize {
		self.recent.iter().filter(|none| **none).count()
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_trainer_leaves_after_two_quorumless_rounds_of_its_last_four() {
		// Two in a row.
		let mut w = QuorumWatch::new(2);
		assert!(!w.settled(false));
		assert!(w.settled(false));
		// One in three let through (the chain's rule, in a row, would never end the job).
		let mut w = QuorumWatch::new(2);
		assert!(!w.settled(true));
		assert!(!w.settled(false));
		assert!(!w.settled(true));
		assert!(w.settled(false));
		// Honest trouble now and then: one of four is not enough, and it ages out.
		let mut w = QuorumWatch::new(2);
		for quorum in [false, true, true, true, true, false, true, true] {
			assert!(!w.settled(quorum), "{:?}", w.recent);
		}
		assert_eq!(w.without_quorum(), 1);
		assert!(!w.settled(true) && !w.settled(true));
		assert_eq!(w.without_quorum(), 0, "aged out");
		// Off: never.
		let mut w = QuorumWatch::new(0);
		assert!((0..8).all(|_| !w.settled(false)));
	}
}
