//! A gate that lets one memory-heavy phase run at a time: a round's training, or a check
//! that redoes training steps (a segment check, a replay, a trajectory check).
//!
//! Why: a provider's memory peaks when a check runs beside the next round's training
//! (each holds its own model, optimizer moments, gradients and activations: at 99.7M
//! parameters about 3.2 and 3.6 GB of a 12 GB peak, `bench/README.md`, *Memory per
//! trainer*). A provider whose machine cannot hold both closes the gate
//! (`checks_beside_training = false`): they take turns, in the order they asked, so a
//! round waits for at most the check under way and a check for at most one round.
//! Open (the default), the gate never waits.

use std::{
	collections::VecDeque,
	sync::{Arc, Condvar, Mutex, MutexGuard},
	time::Duration,
};

/// How often a waiter that may give up asks whether it should.
const POLL: Duration = Duration::from_millis(50);

/// Open (every phase runs when it likes) or one phase at a time; clones share the turn.
#[derive(Clone, Default)]
pub struct ComputeGate(Option<Arc<Turns>>);

#[derive(Default)]
struct Turns {
	queue: Mutex<Queue>,
	changed: Condvar,
}

#[derive(Default)]
struct Queue {
	/// Whether a phase holds the gate.
	held: bool,
	/// Tickets of the phases waiting, first come first.
	waiting: VecDeque<u64>,
	next: u64,
}

/// A phase's turn; the gate passes to the next waiter when it is dropped.
#[must_use = "the turn ends when this is dropped"]
pub struct Turn(Option<Arc<Turns>>);

impl ComputeGate {
	/// A gate that never waits.
	pub fn open() -> Self {
		ComputeGate(None)
	}

	/// A gate that lets one phase through at a time.
	pub fn one_at_a_time() -> Self {
		ComputeGate(Some(Arc::default()))
	}

	/// Whether phases take turns.
	pub fn is_exclusive(&self) -> bool {
		self.0.is_some()
	}

	/// Waits for this phase's turn.
	pub fn enter(&self) -> Turn {
		self.enter_unless(|| false).expect("a waiter that never gives up gets its turn")
	}

	/// Waits for this phase's turn unless `give_up` says to stop waiting first (asked every
	/// 50 ms): `None`, and the phases behind it move up.
	pub fn enter_unless(&self, give_up: impl Fn() -> bool) -> Option<Turn> {
		let Some(turns) = &self.0 else { return Some(Turn(None)) };
		let mut queue = turns.lock();
		let ticket = queue.next;
		queue.next += 1;
		queue.waiting.push_back(ticket);
		loop {
			if !queue.held && queue.waiting.front() == Some(&ticket) {
				queue.waiting.pop_front();
				queue.held = true;
				return Some(Turn(Some(turns.clone())));
			}
			if give_up() {
				queue.waiting.retain(|t| *t != ticket);
				// The one behind it may be first now.
				turns.changed.notify_all();
				return None;
			}
			queue = turns.changed.wait_timeout(queue, POLL).unwrap_or_else(|e| e.into_inner()).0;
		}
	}
}

impl Turns {
	fn lock(&self) -> MutexGuard<'_, Queue> {
		// A phase that panicked left the queue consistent: every change is one statement.
		self.queue.lock().unwrap_or_else(|e| e.into_inner())
	}
}

impl Drop for Turn {
	fn drop(&mut self) {
		if let Some(turns) = self.0.take() {
			turns.lock().held = false;
			turns.changed.notify_all();
		}
	}
}

#[cfg(test)]
mod tests {
	use std::{
		sync::{
			atomic::{AtomicBool, AtomicUsize, Ordering},
			mpsc,
		},
		thread,
		time::Instant,
	};

	use super::*;

	const DEADLINE: Duration = Duration::from_secs(30);

	#[test]
	fn an_open_gate_lets_every_phase_through_at_once() {
		let gate = ComputeGate::open();
		let a = gate.enter();
		let b = gate.enter_unless(|| true);
		assert!(b.is_some(), "an open gate never waits, so it never gives up");
		drop((a, b));
	}

	#[test]
	fn phases_take_turns_in_the_order_they_asked() {
		let gate = ComputeGate::one_at_a_time();
		let first = gate.enter();
		let inside = Arc::new(AtomicUsize::new(0));
		let (order, done) = mpsc::channel();
		let mut threads = Vec::new();
		for who in 0..3 {
			let (mine, inside, order) = (gate.clone(), inside.clone(), order.clone());
			threads.push(thread::spawn(move || {
				let _turn = mine.enter();
				// Never two phases inside at once.
				assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
				order.send(who).unwrap();
				thread::sleep(Duration::from_millis(5));
				inside.fetch_sub(1, Ordering::SeqCst);
			}));
			// Each is queued before the next asks (its ticket is taken under the lock).
			wait_until(|| gate.0.as_ref().unwrap().lock().waiting.len() == who + 1);
		}
		assert!(done.try_recv().is_err(), "nobody passes while the first phase holds it");
		drop(first);
		let seen: Vec<usize> = (0..3).map(|_| done.recv_timeout(DEADLINE).unwrap()).collect();
		assert_eq!(seen, vec![0, 1, 2]);
		threads.into_iter().for_each(|t| t.join().unwrap());
	}

	#[test]
	fn a_waiter_that_gives_up_leaves_the_queue_and_the_next_moves_up() {
		let gate = ComputeGate::one_at_a_time();
		let holder = gate.enter();
		let stop = Arc::new(AtomicBool::new(false));
		let quitter = {
			let (gate, stop) = (gate.clone(), stop.clone());
			thread::spawn(move || gate.enter_unless(|| stop.load(Ordering::SeqCst)).is_none())
		};
		wait_until(|| gate.0.as_ref().unwrap().lock().waiting.len() == 1);
		let patient = {
			let gate = gate.clone();
			thread::spawn(move || drop(gate.enter()))
		};
		wait_until(|| gate.0.as_ref().unwrap().lock().waiting.len() == 2);
		stop.store(true, Ordering::SeqCst);
		assert!(quitter.join().unwrap(), "it gave up instead of waiting its turn");
		drop(holder);
		// The patient one gets the turn the quitter left, and lets it go.
		patient.join().unwrap();
		let queue = gate.0.as_ref().unwrap().lock();
		assert!(!queue.held && queue.waiting.is_empty());
	}

	fn wait_until(done: impl Fn() -> bool) {
		let began = Instant::now();
		while !done() {
			assert!(began.elapsed() < DEADLINE, "the state never came");
			thread::sleep(Duration::from_millis(1));
		}
	}
}
