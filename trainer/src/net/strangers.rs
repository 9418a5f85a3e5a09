//! What a trainer answers peers outside the round's roster ([`crate::round::roster`]): a
//! joiner syncing a state or a verifier fetching evidence may not be among the round's
//! members yet, so they are answered, but a key costs nothing, and many keys asking for
//! updates and states at once would take the uplink that the members' exchange needs.
//! All strangers together have at most [`MAX_STRANGER_ANSWERS`] answers in flight; past
//! that one is told the trainer is busy (members are never limited).

use std::{collections::HashSet, hash::Hash};

/// Most answers in flight to strangers, all together: twice the pieces a joiner fetches
/// from one peer at once (eight), so one joiner is not slowed when nobody floods.
pub(super) const MAX_STRANGER_ANSWERS: usize = 16;

/// The answers in flight to strangers, by request id.
pub(super) struct StrangerAnswers<I> {
	in_flight: HashSet<I>,
}

impl<I: Hash + Eq> StrangerAnswers<I> {
	pub(super) fn new() -> Self {
		StrangerAnswers { in_flight: HashSet::new() }
	}

	/// Whether a stranger's request `id` may be answered now (then it counts until
	/// [`StrangerAnswers::done`]).
	pub(super) fn admit(&mut self, id: I) -> bool {
		self.in_flight.len() < MAX_STRANGER_ANSWERS && self.in_flight.insert(id)
	}

	/// The answer to request `id` was sent, or failed.
	pub(super) fn done(&mut self, id: &I) {
		self.in_flight.remove(id);
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn strangers_share_a_bounded_number_of_answers_and_get_more_as_they_finish() {
		let mut answers = StrangerAnswers::new();
		// A flood from many keys: the first ones are answered, the rest told to wait.
		let admitted: Vec<u32> = (0..100).filter(|&id| answers.admit(id)).collect();
		assert_eq!(admitted, (0..MAX_STRANGER_ANSWERS as u32).collect::<Vec<_>>());
		assert!(!answers.admit(500));
		// As answers go out, room for others (a joiner asking again gets through).
		answers.done(&3);
		answers.done(&999); // never admitted: nothing changes
		assert!(answers.admit(500));
		assert!(!answers.admit(501));
		// The same id twice does not take two places.
		answers.done(&500);
		assert!(!answers.admit(7), "7 is in flight already");
		assert!(answers.admit(600));
	}
}
