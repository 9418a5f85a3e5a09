//! The trainer daemon's round loop: train until the round's deadline, commit, collect the
//! round's commitments, fetch and verify the updates, aggregate the canonical set, apply the
//! outer step, checkpoint — and join, leave and re-sync as peers come and go.
//!
//! This is the I/O driver of the round protocol ([`crate::round`]): it reads the clock,
//! moves bytes between the protocol and the network task, writes checkpoints and reports.
//! The loop runs on its own thread (training is CPU-bound) and talks to the network task
//! through channels, so serving peers never waits for a training step.

use std::{
	collections::VecDeque,
	sync::Arc,
	time::{Duration, Instant},
};

use candle_core::Device;
use grid_primitives::job::RoundIndex;
use libp2p::{identity::Keypair, Multiaddr, PeerId};

use super::{
	reports::{self, push_history, unix_ms, DecisionMs, LossPoint, RoundRecord, Status, Totals},
	status_server::StatusSink,
};
use crate::{
	checkpoint::Checkpoint,
	compress::adaptive::AdaptiveCompressor,
	daemon::config::TrainerConfig,
	data::Dataset,
	error::Result,
	net::{
		keypair_from_seed, scenario::Scenario, Command, NetworkHandle, ProofLink, Shaper,
		StoredBytes,
	},
	params::Manifest,
	round::{
		book::Books,
		contribute::OwnUpdate,
		coordinator::{ClaimedWork, Clock, Coordinator, RoundReport},
		decide,
		fetch::Fetches,
		fraud::{FraudDesk, FraudPort, Received},
		messages::Digest,
		peers::HealthBook,
		state::{GlobalState, OuterMove, OuterSettings},
		state_transfer::ServedState,
		update_pieces::Patience,
		witness::{SignedAttestation, Witnesses},
	},
};

mod agreement;
mod attack;
mod compute;
mod evaluator;
mod exchange;
mod keeper;
mod saver;
mod setup;
pub use setup::Prepared;
mod step_time;
mod sync;
mod training;
mod worker;

use evaluator::{Evaluated, Evaluator};
use saver::{Published, Saver};

/// Longest checkpoint or update a peer may send (a 100M-parameter model's state fits).
const MAX_RESPONSE_BYTES: u64 = 1 << 30;
/// How long a single state request may take.
const STATE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a finished trainer waits for its last evaluations before writing their rounds
/// without them.
const LAST_EVAL_WAIT: Duration = Duration::from_secs(600);

/// The instant at Unix time `ms` (now, if it has passed).
fn instant_at(ms: u64) -> Instant {
	instant_of(ms).max(Instant::now())
}

/// The instant at Unix time `ms`, a past one too (as far back as the monotonic clock
/// reaches; now beyond that): what a deadline is judged against.
fn instant_of(ms: u64) -> Instant {
	let (now_ms, now) = (unix_ms(), Instant::now());
	match ms.checked_sub(now_ms) {
		Some(ahead) => now + Duration::from_millis(ahead),
		None => now.checked_sub(Duration::from_millis(now_ms - ms)).unwrap_or(now),
	}
}

/// The fraud desk and the chain it answers to.
struct Fraud {
	desk: FraudDesk,
	port: Box<dyn FraudPort>,
	/// The round just decided, kept and screened once its proof is out: the cheap screens
	/// (a Gram matrix of the round's updates, O(N² P)) and the evidence written to disk
	/// need nothing the proof does, and before the proof they held 64 trainers on 2 cores
	/// past their rounds' last block (`bench/scale.sh`).
	unkept: Option<Unkept>,
}

/// A decided round's evidence not yet handed to the fraud desk.
struct Unkept {
	round: RoundIndex,
	base: Arc<Vec<f32>>,
	received: Vec<Received>,
	copies: Vec<Received>,
}

/// A running trainer.
pub struct Trainer {
	config: TrainerConfig,
	key: Keypair,
	me: PeerId,
	net: NetworkHandle,
	shaper: Shaper,
	scenario: Option<Scenario>,
	dataset: Arc<Dataset>,
	/// Held-out evaluation beside training (none when the job evaluates nothing).
	evaluator: Option<Evaluator>,
	/// Decided rounds whose records wait for their evaluation, oldest first.
	unrecorded: VecDeque<Unrecorded>,
	/// Writes checkpoints beside training.
	saver: Saver,
	device: Device,
	/// The inner trainer, idle or training a round on its thread.
	inner: training::Inner,
	manifest: Manifest,
	outer: OuterSettings,
	compressor: AdaptiveCompressor,
	state: Option<GlobalState>,
	health: HealthBook,
	books: Books,
	/// The round's availability attestations, which fix its agreed set.
	witnesses: Witnesses,
	/// Attestations a scenario holds back, with when each is heard.
	late_attestations: Vec<(Instant, PeerId, SignedAttestation)>,
	evidence_seen: usize,
	fetches: Fetches,
	/// Running estimate of an inner step's duration, carried from round to round.
	step_time: Option<step_time::StepTime>,
	/// Running estimate of the time from a round's last step to its sealed update (s).
	seal_secs: Option<f64>,
	listen: Vec<Multiaddr>,
	started: Instant,
	totals: Totals,
	last_set: Vec<PeerId>,
	coordinator: Box<dyn Coordinator>,
	/// Decided rounds' reports held until their states are on disk (`report_round`).
	reports: VecDeque<RoundReport>,
	fraud: Option<Fraud>,
	/// Writes what this trainer's commitments promise to show verifiers.
	keeper: keeper::Keeper,
	/// The rounds it signed a commitment for (one a round, even across a restart).
	signed_rounds: crate::daemon::signed_rounds::SignedRounds,
	linger: Duration,
	status_sink: Option<StatusSink>,
	/// Norm of the last aggregated update (what a lazy trainer's noise imitates).
	last_update_norm: Option<f64>,
	/// The last round's base, kept only by a trainer told to send stale updates.
	stale_base: Option<Arc<Vec<f32>>>,
	/// When the last round was decided here.
	last_decided: Option<Instant>,
	/// How long the last round's aggregation and outer step took.
	last_step: Duration,
	/// The last sealed round's start state and recorded states, served once it is out.
	unserved: Option<compute::Unserved>,
	/// The state the last round's majority trained from, when this trainer's was another:
	/// what its next sync fetches, and from whom.
	sync_hint: Option<sync::SyncHint>,
}

impl Trainer {
	/// Sets up a trainer whose rounds follow the configured schedule, with the libp2p key
	/// derived from the configured seed.
	pub fn new(config: TrainerConfig, runtime: &tokio::runtime::Handle) -> Result<Self> {
		let key = keypair_from_seed(&config.key_seed);
		let schedule = Box::new(config.local_schedule());
		Self::with_key(Prepared::new(&config)?, config, key, schedule, None, runtime)
	}

	/// How long the trainer keeps serving its final state after the last round (3 s unless
	/// set).
	pub fn set_linger(&mut self, linger: Duration) {
		self.linger = linger;
	}

	/// Where the status report also goes, after every round (the status server's).
	pub fn set_status_sink(&mut self, sink: StatusSink) {
		self.status_sink = Some(sink);
	}

	/// This trainer's peer id.
	pub fn peer_id(&self) -> PeerId {
		self.me
	}

	/// The job's proof gossip, for whoever relays proofs between the chain and the peers
	/// (taken once; proofs never pass through the round loop).
	pub fn take_proof_link(&mut self) -> Option<ProofLink> {
		self.net.take_proof_link()
	}

	/// Runs the job to its last round.
	pub fn run(mut self) -> Result<()> {
		crate::alloc_ledger::tag_thread("round loop");
		let start = instant_at(self.config.schedule.start_unix_ms());
		// Connect to peers before round 0.
		self.pump_until(start, |_| false);
		if !self.wait_open(0) {
			return self.finish();
		}
		if self.state.is_none() && self.clock().round() == 0 {
			let weights = self.inner.get()?.model().params().flatten()?;
			self.state = Some(GlobalState::initial(&self.manifest, weights, self.outer)?);
		}
		self.publish_state()?;
		tracing::info!("ready to train {:.1} s after set-up", self.started.elapsed().as_secs_f64());
		let mut round = self.state.as_ref().map_or_else(|| self.clock().round(), |s| s.round);
		while round < self.config.job.rounds {
			let clock_round = self.clock().round();
			let usable = self
				.state
				.as_ref()
				.is_some_and(|s| s.round == round && (s.verified || s.round >= clock_round));
			// Without a usable state, fetch one and observe the round it is the base of when
			// that round is under way (too late for its steps); contribute from the next. A
			// state adopted before its round opens (a trainer that re-synced after deciding
			// the round before) is trained like one decided here: observing it cost a CI
			// run's provider a round's pay (`tests/tests/own_images.rs`).
			let mut observe = false;
			if !usable {
				self.state = None;
				self.inner.abandon();
				match self.sync(Instant::now() + STATE_TIMEOUT) {
					Some(at) => {
						round = at;
						observe = self.clock().has_opened(round);
					}
					None => {
						round = round.max(self.clock().round());
						continue;
					}
				}
			}
			if round >= self.config.job.rounds || !self.wait_open(round) {
				break;
			}
			self.run_round(round, observe)?;
			round += 1;
		}
		self.finish()
	}

	fn clock(&self) -> Clock {
		self.coordinator.clock(unix_ms())
	}

	/// Waits (serving peers) until the coordinator has opened `round`; false when the job
	/// ended first.
	fn wait_open(&mut self, round: RoundIndex) -> bool {
		loop {
			if self.coordinator.ended() {
				return false;
			}
			if self.clock().has_opened(round) {
				return true;
			}
			self.pump_until(Instant::now() + Duration::from_millis(200), |_| false);
		}
	}

	fn finish(mut self) -> Result<()> {
		self.write_records(Instant::now() + LAST_EVAL_WAIT)?;
		self.saver.flush();
		self.keeper.flush();
		self.release_reports();
		self.write_status(true)?;
		// Stay a while so peers can fetch the last update and state (and buyers the model).
		let linger = Instant::now() + self.linger;
		self.pump_until(linger, |_| false);
		Ok(())
	}

	fn apply_scenario(&mut self, round: RoundIndex) {
		let Some(scenario) = self.scenario.clone() else { return };
		let me = self.me;
		self.shaper.set_uplink(scenario.uplink_mbit);
		let policy = scenario.clone();
		self.shaper.set_policy(Box::new(move |peer| policy.link(&me, peer, round)));
		for d in scenario.disconnects_at(&me, round) {
			self.shaper.disconnect(d.peer);
			self.net.send(Command::Disconnect(d.peer));
		}
		if scenario.disconnects_self(&me, round) {
			for peer in self.health.connected() {
				self.shaper.disconnect(peer);
				self.net.send(Command::Disconnect(peer));
			}
		}
	}

	fn run_round(&mut self, round: RoundIndex, observe: bool) -> Result<()> {
		// A round's wall time runs from the decision of the round before (an overlapped
		// round trained since that round's deadline), so compute / wall is utilization.
		let round_start = self.last_decided.take().unwrap_or_else(Instant::now);
		self.apply_scenario(round);
		self.start_book(round);
		let end = self.coordinator.deadline(round).map(instant_at);
		// A trainer late for a round (its previous exchange overran) observes it too.
		let step = Duration::from_secs_f64(self.step_time.map_or(0.0, |t| t.mean()));
		// An overlapped round already training started at the last deadline.
		let ahead = self.inner.running() == Some(round);
		let in_time =
			ahead || end.is_none_or(|e| Instant::now() + step + Duration::from_millis(100) < e);
		let contribute = !observe && in_time;
		let computed = if contribute { self.compute(round, end)? } else { None };
		if !contribute {
			self.inner.abandon();
		}
		let overlap_wait = computed.as_ref().and_then(|c| c.overlap_wait);
		let own = computed.map(|c| c.own);
		// A round meant to be trained that took no step taught the estimate nothing.
		if !observe && own.is_none() {
			self.step_time = self.step_time.map(step_time::StepTime::relaxed);
		}
		let compute = own.as_ref().map_or(Duration::ZERO, |o| o.compute);
		let exchange_start = Instant::now();
		if let Some(own) = &own {
			self.hold_commitment(round, end);
			self.publish(own)?;
			self.stall_loop(round, end);
			self.train_ahead(round)?;
			self.serve_unserved();
		}
		self.collect(round, end);
		let collected_unix_ms = unix_ms();
		self.books.close();
		let decided = self.finish_round(round, own.as_ref())?;
		// The round training ahead catches up with the state just decided, or ends.
		match &self.state {
			Some(next) if next.round == round + 1 => {
				self.inner.send_current(round + 1, &next.weights)
			}
			_ => self.inner.no_current(),
		}
		let exchange = exchange_start.elapsed();
		self.totals.compute += compute;
		if own.is_some() {
			self.totals.contributed += 1;
		}
		if let Some(own) = &own {
			self.totals.last_train = Some(own.signed.commitment.train_loss());
		}
		if let Some(round_end) = decided {
			self.last_decided = Some(Instant::now());
			self.grief(round, &round_end.accepted);
			let c = own.as_ref().map(|o| &o.signed.commitment);
			let record = RoundRecord {
				contributed: own.is_some(),
				train_loss: c.map(|c| c.train_loss()),
				steps: c.map_or(0, |c| c.steps),
				samples: c.map_or(0, |c| c.samples),
				compression_level: own.as_ref().map(|o| o.level),
				update_bytes: c.map(|c| c.update_len),
				overlap_wait_ms: overlap_wait.map(|w| w.as_millis() as u64),
				compute_ms: compute.as_millis() as u64,
				exchange_ms: exchange.as_millis() as u64,
				collected_unix_ms,
				wall_ms: round_start.elapsed().as_millis() as u64,
				..round_end.record
			};
			self.report_round(RoundReport {
				round,
				base_model_hash: round_end.base_model_hash,
				result_model_hash: round_end.result_model_hash,
				own_update: c.map(|c| ClaimedWork {
					update: c.update_hash,
					start_state: c.start.id(),
					steps: c.steps,
					samples: c.samples,
				}),
				train_loss: record.train_loss,
				received: round_end.accepted.into_iter().filter(|p| *p != self.me).collect(),
			});
			self.keep_evidence();
			tracing::info!(
				"round {round}: {} aggregated, model {}",
				record.aggregated.len(),
				&record.model_hash[..16]
			);
			let awaits_eval = self.evaluate(round);
			self.unrecorded.push_back(Unrecorded { record, awaits_eval });
		}
		self.write_records(Instant::now())?;
		self.write_status(false)
	}

	/// Hands `report` to the coordinator (on chain, the follower that signs and sends the
	/// round's proof) once the states its commitment promises are on disk
	/// ([`keeper::Keeper::kept`]) or its proof is due; reports go in round order.
	fn report_round(&mut self, report: RoundReport) {
		self.reports.push_back(report);
		self.release_reports();
	}

	/// Hands over the held reports whose rounds' states are kept, or whose proofs would be
	/// late if they waited longer ([`keeper::report_now`]).
	pub(super) fn release_reports(&mut self) {
		while let Some(report) = self.reports.front() {
			let round = report.round;
			// A round it sent nothing in has nothing to keep.
			let kept = report.own_update.is_none() || self.keeper.kept(round);
			if !keeper::report_now(kept, unix_ms(), self.proof_due(round)) {
				return;
			}
			if !kept {
				tracing::warn!(
					"round {round}: its proof goes out before its states are on disk (the \
					 writer is behind): a crash before they are would leave them unshowable"
				);
			}
			let report = self.reports.pop_front().expect("just seen");
			self.coordinator.round_done(report);
		}
	}

	/// Unix ms by which `round`'s proof must go out to reach the round: its commit deadline
	/// plus the exchange the deadline leaves room for (0: no deadline, or past).
	fn proof_due(&self, round: RoundIndex) -> u64 {
		match self.coordinator.deadline(round) {
			Some(commit_by) if commit_by > 0 => commit_by + self.config.schedule.allowance_ms(),
			_ => 0,
		}
	}

	/// When `round` must be decided for its proof to go out by its deadline: that deadline
	/// less what the last round's outer step took. None without a deadline.
	pub(super) fn decide_by(&self, round: RoundIndex) -> Option<Instant> {
		let due = self.proof_due(round);
		let step = u64::try_from(self.last_step.as_millis()).unwrap_or(u64::MAX);
		(due > 0).then(|| instant_of(due.saturating_sub(step)))
	}

	/// Hands the round just decided to the fraud desk (its evidence kept, its updates
	/// screened), once its report is made (the proof it becomes may still wait for the
	/// round's states: `report_round`).
	fn keep_evidence(&mut self) {
		let Some(fraud) = &mut self.fraud else { return };
		if let Some(Unkept { round, base, received, copies }) = fraud.unkept.take() {
			fraud.desk.keep_round(round, base, received, copies, fraud.port.as_ref());
		}
	}

	/// Opens the round's book unless it is open already (a sync opened it with the round's
	/// commitments).
	fn start_book(&mut self, round: RoundIndex) {
		let book = self.books.current();
		if book.round() != round || book.is_closed() {
			self.open_book(round);
			return;
		}
		// A book opened before the round did (at setup, or by a sync) knew neither its
		// members nor its deadline yet.
		let roster = self.roster(round);
		self.books.admit_only(roster);
		if let Some(at) = self.collection_deadline(round) {
			self.books.close_at(at);
		}
	}

	/// A fresh book for `round`, with the commitments already received for it.
	fn open_book(&mut self, round: RoundIndex) {
		self.fetches.new_round();
		self.fetches.set_patience(self.keeper_patience());
		self.witnesses.open(round);
		let roster = self.roster(round);
		for (peer, offer) in self.books.open(round, roster, self.collection_deadline(round)) {
			self.on_offer(peer, offer, None);
		}
	}

	/// Who may contribute to `round`, as the coordinator says; the network task is told to
	/// take gossip and piece requests only from them and the round before's members (whose
	/// late messages still count), and whom else not to count as a stranger (registered
	/// providers, read again as each round opens).
	fn roster(&mut self, round: RoundIndex) -> crate::round::roster::Roster {
		let roster = self.coordinator.roster(round);
		let before = round.checked_sub(1).map(|r| self.coordinator.roster(r));
		let network = before.map_or(roster.clone(), |b| b.union(&roster));
		self.net.send(Command::Roster(network));
		self.net.send(Command::Registered(self.coordinator.registered()));
		roster
	}

	/// How long this round's keepers are waited on: from the links measured so far, at
	/// most half the fetch window.
	fn keeper_patience(&self) -> Patience {
		Patience::new(self.health.link_rates(), self.config.schedule.fetch_wait() / 2)
	}

	/// Decides the round: check the base, fetch the set's updates, aggregate, step, save.
	/// `None` when the trainer must re-sync instead.
	fn finish_round(
		&mut self,
		round: RoundIndex,
		own: Option<&OwnUpdate>,
	) -> Result<Option<RoundEnd>> {
		let Some(state) = &self.state else { return Ok(None) };
		let base = match decide::check_base(self.books.current(), state, own.is_some()) {
			Ok(base) => base,
			Err(why) => {
				// E.g. an observer that heard nothing cannot tell whether its state is the
				// network's.
				tracing::warn!("round {round}: {why}; re-syncing");
				if let decide::Resync::OtherBase { majority, .. } = why {
					let holders = self.books.current().committers_from(&majority);
					self.sync_hint = Some(sync::SyncHint { round, state_hash: majority, holders });
				}
				self.state = None;
				return Ok(None);
			}
		};
		let set = self.books.current().set(&base);
		let copies = self.books.current().copies(&base);
		self.keep_stale_base();
		if let Some(own) = own {
			let hash = own.signed.commitment.update_hash;
			self.fetches.keep_own(hash, own.bytes.clone(), own.update.clone());
		}
		let fetching = Instant::now();
		// Once a decision: the seed's lookup (and its warning when unknown) is not repeated.
		let draw = self.draw(round);
		match draw {
			Some(draw) => self.fetch_all(&draw.fetched(set.clone())),
			None => self.fetch_all(&set),
		}
		let fetch = fetching.elapsed();
		let agreement = self.agree(round, &base, &set, draw, fetching)?;
		if !agreement.lacking.is_empty() {
			// Aggregating without them would give another model than the network's.
			let lacking: Vec<String> = agreement.lacking.iter().map(|p| p.to_string()).collect();
			tracing::warn!(
				"round {round}: the agreed updates of {} did not come; re-syncing",
				lacking.join(", ")
			);
			self.state = None;
			return Ok(None);
		}
		let set = agreement.set;
		let gathered = decide::gather(&set, &copies, &self.fetches, self.fraud.is_some());
		let state = self.state.take().expect("checked above");
		let own_in_set = set.iter().any(|(p, _)| *p == self.me);
		if let Some(fraud) = &mut self.fraud {
			let base = state.weights.clone();
			let (received, copies) = (gathered.evidence, gathered.copies);
			fraud.unkept = Some(Unkept { round, base, received, copies });
		}
		let base_model_hash = state.model_hash;
		let stepping = Instant::now();
		let job = &self.config.job;
		let rule = job.aggregation;
		let decided = decide::step(
			state,
			&self.manifest,
			&gathered.contributions,
			&gathered.members,
			rule,
			job.screen_ratio,
			OuterMove::in_round(&job.training, round, job.rounds),
		)?;
		let step = stepping.elapsed();
		self.last_step = step;
		let drawn_out = draw.is_some() && !own_in_set;
		if drawn_out && own.is_some() {
			// Not drawn: dropped, not carried. Carried, it would come back the next round at
			// about twice a round's norm, and every drawn peer with a normal update would
			// look short next to it (the fraud desk's norm screen replayed 252 honest
			// updates in 4 rounds of 32 trainers, `bench/scale.sh --fan-in 16`).
			tracing::info!("round {round}: own update not drawn; dropped");
		} else if let Some(own) = own.filter(|_| !decided.accepted.contains(&self.me)) {
			// Left out of its own aggregate (screened out, or not in the round's set): what
			// it sent goes back into the error feedback and is sent again, not lost.
			self.compressor.give_back(&own.update)?;
			tracing::info!("round {round}: own update left out; its values carry to the next");
		}
		for peer in &decided.accepted {
			self.health.peer(*peer).accepted += 1;
		}
		for peer in &decided.rejected {
			self.health.peer(*peer).rejected += 1;
		}
		if decided.update_norm.is_some() {
			self.last_update_norm = decided.update_norm;
		}
		self.last_set = gathered.members;
		self.state = Some(decided.next);
		self.publish_state()?;
		self.net.send(Command::Forget(round));
		let state = self.state.as_ref().expect("just set");
		let names = |peers: &[PeerId]| peers.iter().map(|p| p.to_string()).collect();
		let record = RoundRecord {
			round,
			unix_ms: unix_ms(),
			contributed: false,
			committed: self.books.current().len(),
			aggregated: names(&decided.accepted),
			screened_out: names(&decided.rejected),
			missing: names(&gathered.missing),
			left_out: names(&agreement.left_out),
			not_drawn: names(&agreement.not_drawn),
			model_hash: hex::encode(state.model_hash),
			state_hash: hex::encode(state.state_hash),
			train_loss: None,
			eval_loss: None,
			steps: 0,
			samples: 0,
			compression_level: None,
			update_bytes: None,
			overlap_wait_ms: None,
			compute_ms: 0,
			exchange_ms: 0,
			collected_unix_ms: 0,
			decision_ms: DecisionMs {
				fetch: fetch.as_millis() as u64,
				attest: agreement.attest_wait.as_millis() as u64,
				agreed_fetch: agreement.fetch_wait.as_millis() as u64,
				step: step.as_millis() as u64,
			},
			pieces: self.fetches.piece_counts(),
			slowest_fetch_ms: self.fetches.slowest_fetch().map(|d| d.as_millis() as u64),
			eval_ms: 0,
			wall_ms: 0,
		};
		Ok(Some(RoundEnd {
			record,
			base_model_hash,
			result_model_hash: state.model_hash,
			accepted: decided.accepted,
		}))
	}

	/// Queues the state the outer step of `round` gave for evaluation; false when nothing is
	/// evaluated (the job has no held-out data, or there is no such state).
	fn evaluate(&mut self, round: RoundIndex) -> bool {
		let (Some(evaluator), Some(state)) = (&mut self.evaluator, &self.state) else {
			return false;
		};
		if state.round != round + 1 {
			return false;
		}
		evaluator.submit(round, state.weights.clone());
		true
	}

	/// Takes the evaluations finished by `until` (waiting for them until then) and writes
	/// the records of every round, oldest first, that no longer waits for one.
	fn write_records(&mut self, until: Instant) -> Result<()> {
		while let Some(done) = self.evaluator.as_mut().and_then(|e| e.next(until)) {
			self.evaluated(done);
		}
		let waiting = self.evaluator.as_ref().is_some_and(Evaluator::is_busy);
		while let Some(next) = self.unrecorded.front() {
			if next.awaits_eval && waiting {
				break;
			}
			let record = self.unrecorded.pop_front().expect("just seen").record;
			reports::append_record(&self.config.data_dir, &record)?;
			let peak = crate::alloc_ledger::LEDGER.peak();
			if peak.total > 0 {
				tracing::info!("round {}: live memory at its peak so far: {peak}", record.round);
				let highs = crate::alloc_ledger::LEDGER.highs().roles_mib();
				tracing::info!("round {}: each role's own highest so far: {highs}", record.round);
			}
			push_history(
				&mut self.totals.history,
				LossPoint {
					round: record.round,
					unix_ms: record.unix_ms,
					train_loss: record.train_loss,
					eval_loss: record.eval_loss,
				},
			);
		}
		Ok(())
	}

	/// Puts an evaluation into its round's record.
	fn evaluated(&mut self, done: Evaluated) {
		let round = done.round;
		let loss = match done.loss {
			Ok(loss) => Some(loss),
			Err(e) => {
				tracing::error!("round {round}: evaluating: {e}");
				None
			}
		};
		self.totals.eval += done.took;
		if loss.is_some() {
			self.totals.last_eval = loss;
		}
		tracing::info!("round {round}: eval loss {loss:?}");
		if let Some(u) = self.unrecorded.iter_mut().find(|u| u.record.round == round) {
			u.record.eval_loss = loss;
			u.record.eval_ms = done.took.as_millis() as u64;
			u.awaits_eval = false;
		}
	}

	/// Saves the state as the checkpoint (on the writer's thread) and serves it to joiners,
	/// both read from the state's own weights and momentum until the file is written.
	fn publish_state(&mut self) -> Result<()> {
		let Some(state) = &self.state else { return Ok(()) };
		let view = Arc::new(state.checkpoint_view(&self.manifest)?);
		let piece_bytes = self.config.state_piece_bytes;
		let served = ServedState::of_view(state.round, state.state_hash, &view, piece_bytes)?;
		let bytes = StoredBytes::Checkpoint(view.clone());
		self.net.send(Command::ServeState { state: Arc::new(served), bytes });
		self.saver.save(Published { state_hash: state.state_hash, view });
		Ok(())
	}

	fn write_status(&self, finished: bool) -> Result<()> {
		let round = self.state.as_ref().map(|s| s.round);
		let wall = self.started.elapsed();
		let status = Status {
			name: &self.config.name,
			peer_id: self.me.to_string(),
			listen: self.listen.iter().map(|a| format!("{a}/p2p/{}", self.me)).collect(),
			job: self.config.job.id,
			round,
			synced: self.state.is_some(),
			model_hash: self.state.as_ref().map(|s| hex::encode(s.model_hash)),
			last_eval_loss: self.totals.last_eval,
			last_train_loss: self.totals.last_train,
			rounds_contributed: self.totals.contributed,
			compute_ms: self.totals.compute.as_millis() as u64,
			wall_ms: wall.as_millis() as u64,
			eval_ms: self.totals.eval.as_millis() as u64,
			utilization: self.totals.utilization(wall),
			median_rtt_ms: self.health.median_rtt_ms(),
			median_throughput_mbit: self.health.median_throughput_mbit(),
			equivocations_seen: self.evidence_seen,
			peers: self.health.report(round.unwrap_or(0)),
			network: self.net.stats(),
			history: &self.totals.history,
			finished,
		};
		if let Some(sink) = &self.status_sink {
			if let Ok(value) = serde_json::to_value(&status) {
				*sink.lock().unwrap_or_else(|e| e.into_inner()) = value;
			}
		}
		reports::write_status(&self.config.data_dir, &status)
	}
}

/// A decided round's record, not yet written.
struct Unrecorded {
	record: RoundRecord,
	/// Its evaluation is still running.
	awaits_eval: bool,
}

/// What a decided round leaves for its record and its report.
struct RoundEnd {
	record: RoundRecord,
	base_model_hash: Digest,
	result_model_hash: Digest,
	accepted: Vec<PeerId>,
}

/// The checkpoint in `dir`, if there is one; a fresh model at round 0 otherwise is
/// decided later (only a trainer present from the start may use it).
fn restore(
	dir: &std::path::Path,
	manifest: &Manifest,
	outer: OuterSettings,
) -> Result<Option<GlobalState>> {
	let path = dir.join("checkpoint.safetensors");
	if !path.exists() {
		return Ok(None);
	}
	let ck = Checkpoint::load(&path)?;
	let round = ck.round;
	let state = GlobalState::restore(ck, manifest, outer)?;
	tracing::info!("resuming from {} at round {round}", path.display());
	Ok(Some(state))
}
