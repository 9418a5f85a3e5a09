//! Benchmarks of every call and of a round's settlement, in their worst cases, with `p`
//! participants. `cargo test --features runtime-benchmarks` runs them against the mock runtime.

use super::*;
use alloc::{boxed::Box, vec::Vec};
use grid_primitives::{
	commitment::{commitment_payload, CommitmentHead, SignedCommitmentBytes},
	job::{
		proof_payload, Admission, Compression, ContributionProof, DatasetRef, GptConfig,
		InnerOptimizer, JobId, JobSpec, MaxAllowlist, MaxUriLen, ModelSpec, Nanos, ProofSignature,
		RoundIndex, SignedProof, TrainingParams,
	},
	provider::BoundedBytes,
	work::{
		vote_commitment, worker_report_payload, MaxProbesPerReport, ProbeResult, Verdict,
		WorkerReport,
	},
};
use pallet_providers::traits::ProviderHealth;
use polkadot_sdk::polkadot_sdk_frame::{
	benchmarking::prelude::*,
	deps::{sp_core::H256, sp_io::hashing::blake2_256, sp_runtime::RuntimeAppPublic},
	prelude::TransactionSource,
	traits::fungible::Mutate,
};

/// What the benchmarks need from the runtime: providers that can join jobs, their proof
/// signatures, and a validator (the runtime's accounts and keys are opaque to the pallet).
pub trait BenchmarkHelper<AccountId, AuthorityId> {
	/// Provider number `index`: registered with enough stake and fast hardware, with a key
	/// [`BenchmarkHelper::sign`] can sign with.
	fn provider(index: u32) -> AccountId;
	/// `who`'s signature over `payload`, accepted by the runtime's `ProofVerifier`.
	fn sign(who: &AccountId, payload: &[u8]) -> ProofSignature;
	/// A current validator (in `Config::Validators`) whose key can sign.
	fn validator() -> AuthorityId;
	/// A provider's signature with the libp2p key it registered: the public key and the
	/// signature over `payload`.
	fn sign_as_peer(who: &AccountId, payload: &[u8]) -> ([u8; 32], [u8; 64]);
}

fn max_spec<T: Config>(p: u32) -> JobSpecOf<T> {
	let mut uri = b"https://".to_vec();
	uri.resize(<MaxUriLen as Get<u32>>::get() as usize, b'u');
	JobSpec {
		model: ModelSpec::Gpt(GptConfig {
			vocab: 256,
			context: 256,
			layers: 6,
			heads: 6,
			width: 384,
		}),
		dataset: DatasetRef {
			content_hash: H256::repeat_byte(1),
			uri: BoundedBytes::truncate_from(uri.clone()),
		},
		training: TrainingParams {
			round_blocks: T::MinRoundBlocks::get().max(10u32.into()).min(T::MaxRoundBlocks::get()),
			batch_size: 64,
			inner: InnerOptimizer::AdamW {
				lr: Nanos(600_000),
				weight_decay: Nanos(100_000_000),
				warmup_steps: 100,
			},
			outer_lr: Nanos(700_000_000),
			outer_momentum: Nanos(900_000_000),
			error_decay: Nanos(900_000_000),
			dense_rounds: 0,
			outer_anneal: None,
			overlap_steps: 0,
			max_steps: None,
			exchange: Default::default(),
			compression: Compression::TopK { chunk: 256, k: 8, value_bits: 2 },
		},
		rounds: T::MaxRounds::get().min(1_000),
		reward_per_round: 1_000_000u32.into(),
		min_providers: p.max(1),
		max_providers: T::MaxParticipants::get(),
		// What the chain's audits ask of a job open to challenges.
		min_provider_stake: Pallet::<T>::spec_limits()
			.deterrence
			.stake_for(1_000_000)
			.unwrap_or_default()
			.saturated_into(),
		// The longest window where the chain lets `p` members verify each other.
		challenge_window: match p >= T::MinVerifiableProviders::get() {
			true => T::MaxChallengeWindow::get(),
			false => Zero::zero(),
		},
		// The longest spec: weights named by the longest URI.
		initial_weights: Some(DatasetRef {
			content_hash: H256::repeat_byte(2),
			uri: BoundedBytes::truncate_from(uri),
		}),
	}
}

/// A commitment of the longest length the chain takes, starting with `head` and filled with
/// `fill`, signed by `who`'s libp2p key.
fn signed_commitment<T: Config>(
	who: &T::AccountId,
	head: CommitmentHead,
	fill: u8,
) -> SignedCommitmentBytes {
	let mut bytes = codec::Encode::encode(&head);
	bytes.resize(grid_primitives::commitment::MAX_COMMITMENT_BYTES as usize, fill);
	let (public, signature) = T::BenchmarkHelper::sign_as_peer(who, &commitment_payload(&bytes));
	SignedCommitmentBytes { commitment: BoundedVec::truncate_from(bytes), public, signature }
}

fn buyer<T: Config>() -> T::AccountId {
	let who: T::AccountId = account("buyer", 0, 0);
	T::Currency::set_balance(&who, BalanceOf::<T>::max_value() / 4u32.into());
	who
}

fn create<T: Config>(p: u32) -> (T::AccountId, JobId) {
	create_spec::<T>(max_spec::<T>(p))
}

fn create_spec<T: Config>(spec: JobSpecOf<T>) -> (T::AccountId, JobId) {
	create_admitting::<T>(spec, Default::default())
}

fn create_admitting<T: Config>(
	spec: JobSpecOf<T>,
	admission: AdmissionOf<T>,
) -> (T::AccountId, JobId) {
	let who = buyer::<T>();
	let id = NextJobId::<T>::get();
	Pallet::<T>::create_job(RawOrigin::Signed(who.clone()).into(), Box::new(spec), admission)
		.expect("creates");
	(who, id)
}

/// A running job with `p` participants (its `min_providers`).
fn running<T: Config>(p: u32) -> (T::AccountId, JobId, Vec<T::AccountId>) {
	running_spec::<T>(max_spec::<T>(p))
}

/// A running job of `spec` with its `min_providers` participants.
fn running_spec<T: Config>(spec: JobSpecOf<T>) -> (T::AccountId, JobId, Vec<T::AccountId>) {
	let p = spec.min_providers;
	let (buyer, id) = create_spec::<T>(spec);
	let providers: Vec<_> = (0..p).map(T::BenchmarkHelper::provider).collect();
	for who in &providers {
		Pallet::<T>::join_job(RawOrigin::Signed(who.clone()).into(), id).expect("joins");
	}
	(buyer, id, providers)
}

/// `who`'s proof for `round` listing every provider as received (the largest proof).
fn signed<T: Config>(
	id: JobId,
	round: RoundIndex,
	who: &T::AccountId,
	all: &[T::AccountId],
	result: u8,
) -> Box<SignedProofOf<T>> {
	let proof = ContributionProof {
		job: id,
		round,
		provider: who.clone(),
		base_model_hash: H256::repeat_byte(2),
		// Each its own update: proofs sharing a commitment would not be paid.
		own_update_commitment: H256(blake2_256(&codec::Encode::encode(who))),
		start_state: H256::repeat_byte(3),
		inner_steps: 1_000,
		result_model_hash: H256::repeat_byte(result),
		samples_processed: 1_000,
		train_loss_micros: 2_000_000,
		received: BoundedVec::truncate_from(all.to_vec()),
	};
	let genesis = frame_system::Pallet::<T>::block_hash(BlockNumberFor::<T>::zero());
	let signature = T::BenchmarkHelper::sign(who, &proof_payload(&genesis, &proof));
	Box::new(SignedProof { proof, signature })
}

fn submit_all<T: Config>(id: JobId, providers: &[T::AccountId], count: usize) {
	for who in providers.iter().take(count) {
		let proof = signed::<T>(id, 0, who, providers, 42);
		Pallet::<T>::submit_proof(RawOrigin::Signed(who.clone()).into(), proof).expect("accepted");
	}
}

/// Challenge 0: of the second of `p` providers' round-0 update, by the first (every
/// member delivered and holds every update).
fn challenged<T: Config>(p: u32) -> ChallengeOf<T> {
	let (_, id, providers) = running::<T>(p);
	submit_all::<T>(id, &providers, p as usize);
	Pallet::<T>::challenge(
		RawOrigin::Signed(providers[0].clone()).into(),
		id,
		0,
		providers[1].clone(),
	)
	.expect("opens");
	Challenges::<T>::get(0).expect("open")
}

/// Challenge 0 of [`challenged`], with its committee drawn.
fn drawn<T: Config>(p: u32) -> ChallengeOf<T> {
	let open = challenged::<T>(p);
	frame_system::Pallet::<T>::set_block_number(open.draw_at);
	agenda::unschedule::<T>(AgendaItem::Draw(0), open.draw_at);
	challenges::draw::<T>(0);
	Challenges::<T>::get(0).expect("drawn")
}

/// A signed worker report of `n` probes of registered providers, not asking to settle.
fn worker_report<T: Config>(n: u32) -> (WorkerReportOf<T>, AuthoritySignatureOf<T>) {
	let probes = (0..n)
		.map(|i| ProbeResult {
			provider: T::BenchmarkHelper::provider(i),
			ok: true,
			latency_ms: 80,
		})
		.collect::<Vec<_>>();
	let now = frame_system::Pallet::<T>::block_number().max(One::one());
	frame_system::Pallet::<T>::set_block_number(now);
	sign_report::<T>(WorkerReport {
		validator: T::BenchmarkHelper::validator(),
		at: now,
		probes: BoundedVec::truncate_from(probes),
		settle: false,
	})
}

/// `report` with its validator's signature.
fn sign_report<T: Config>(
	report: WorkerReportOf<T>,
) -> (WorkerReportOf<T>, AuthoritySignatureOf<T>) {
	let genesis = frame_system::Pallet::<T>::block_hash(BlockNumberFor::<T>::zero());
	let signature =
		report.validator.sign(&worker_report_payload(&genesis, &report)).expect("can sign");
	(report, signature)
}

/// A signed worker report made at the first probe block, of those of `n` registered
/// providers that its probe round covers (as a validator's worker would report them).
fn probe_round_report<T: Config>(n: u32) -> (WorkerReportOf<T>, AuthoritySignatureOf<T>) {
	let providers: Vec<T::AccountId> = (0..n).map(T::BenchmarkHelper::provider).collect();
	let at = T::ProbeInterval::get().max(One::one());
	frame_system::Pallet::<T>::set_block_number(at);
	let round = crate::worker::probe_round::<T>(at).expect("a runtime that probes");
	let probes = providers
		.into_iter()
		.filter(|who| T::Providers::is_probe_target(who, round))
		.map(|provider| ProbeResult { provider, ok: true, latency_ms: 80 })
		.collect::<Vec<_>>();
	assert!(!probes.is_empty(), "the round covers some of the providers");
	sign_report::<T>(WorkerReport {
		validator: T::BenchmarkHelper::validator(),
		at,
		probes: BoundedVec::truncate_from(probes),
		settle: false,
	})
}

#[benchmarks]
mod benchmarks {
	use super::*;

	#[benchmark]
	fn create_job() {
		let who = buyer::<T>();
		let listed = <MaxAllowlist as Get<u32>>::get();
		let admission = Admission {
			min_health: Perbill::from_percent(50),
			min_age: One::one(),
			allowlist: BoundedVec::truncate_from(
				(0..listed).map(|i| account("listed", i, 0)).collect(),
			),
		};
		#[extrinsic_call]
		_(RawOrigin::Signed(who), Box::new(max_spec::<T>(2)), admission);
		assert!(Jobs::<T>::contains_key(0) && Admissions::<T>::contains_key(0));
	}

	/// Cancelling an open job `p - 1` providers joined: the refund, and every lock released.
	/// (A running job's cancel only marks it; its open round's settlement ends it.)
	#[benchmark]
	fn cancel_job(p: Linear<3, { T::MaxParticipants::get() }>) {
		let (buyer, id) = create::<T>(p);
		for who in (0..p - 1).map(T::BenchmarkHelper::provider) {
			Pallet::<T>::join_job(RawOrigin::Signed(who).into(), id).expect("joins");
		}
		#[extrinsic_call]
		_(RawOrigin::Signed(buyer), id);
		assert_eq!(Jobs::<T>::get(id).expect("exists").status, JobStatus::Cancelled);
	}

	/// Root cancelling a running job whose open round has a quorum: that round settles first.
	#[benchmark]
	fn force_cancel_job(p: Linear<3, { T::MaxParticipants::get() }>) {
		let (_, id, providers) = running::<T>(p);
		submit_all::<T>(id, &providers, quorum_threshold(p) as usize);
		#[extrinsic_call]
		_(RawOrigin::Root, id);
		assert_eq!(Jobs::<T>::get(id).expect("exists").status, JobStatus::Cancelled);
	}

	/// The join that brings a job to `p = min_providers` participants and starts it, past
	/// admission rules with a full allowlist that names the joiners last.
	#[benchmark]
	fn join_job(p: Linear<1, { T::MaxParticipants::get() }>) {
		let providers: Vec<_> = (0..p).map(T::BenchmarkHelper::provider).collect();
		let listed = <MaxAllowlist as Get<u32>>::get().saturating_sub(p);
		let mut allowlist: Vec<_> = (0..listed).map(|i| account("listed", i, 0)).collect();
		allowlist.extend(providers.iter().cloned());
		let admission = Admission {
			min_health: Perbill::zero(),
			min_age: Zero::zero(),
			allowlist: BoundedVec::truncate_from(allowlist),
		};
		let (_, id) = create_admitting::<T>(max_spec::<T>(p), admission);
		for who in &providers[..providers.len() - 1] {
			Pallet::<T>::join_job(RawOrigin::Signed(who.clone()).into(), id).expect("joins");
		}
		let last = providers[providers.len() - 1].clone();
		#[extrinsic_call]
		_(RawOrigin::Signed(last), id);
		assert_eq!(Jobs::<T>::get(id).expect("exists").status, JobStatus::Running);
	}

	#[benchmark]
	fn leave_job() {
		let (_, id, providers) = running::<T>(2);
		#[extrinsic_call]
		_(RawOrigin::Signed(providers[0].clone()), id);
		assert!(!Participants::<T>::contains_key(id, &providers[0]));
	}

	/// The last member's proof: the round settles in the same call and pays everyone.
	#[benchmark]
	fn submit_proof(p: Linear<1, { T::MaxParticipants::get() }>) {
		let (_, id, providers) = running::<T>(p);
		submit_all::<T>(id, &providers, p as usize - 1);
		let last = providers[p as usize - 1].clone();
		let proof = signed::<T>(id, 0, &last, &providers, 42);
		#[extrinsic_call]
		_(RawOrigin::Signed(last), proof);
		assert!(RoundResults::<T>::contains_key(id, 0));
	}

	/// A proof that is not the last: the one that completes the quorum (it reschedules the
	/// settlement), of `p` members.
	#[benchmark]
	fn record_proof(p: Linear<3, { T::MaxParticipants::get() }>) {
		let (_, id, providers) = running::<T>(p);
		let before = quorum_threshold(p) as usize - 1;
		submit_all::<T>(id, &providers, before);
		let who = providers[before].clone();
		let proof = signed::<T>(id, 0, &who, &providers, 42);
		#[extrinsic_call]
		submit_proof(RawOrigin::Signed(who.clone()), proof);
		assert!(Proofs::<T>::contains_key(id, &who));
		assert!(Rounds::<T>::get(id).is_some_and(|round| round.quorum.is_some()));
		assert!(!RoundResults::<T>::contains_key(id, 0));
	}

	#[benchmark]
	fn report_equivocation() {
		let (_, id, providers) = running::<T>(2);
		let first = signed::<T>(id, 0, &providers[0], &providers, 42);
		let second = signed::<T>(id, 0, &providers[0], &providers, 43);
		let reporter: T::AccountId = account("reporter", 0, 0);
		#[extrinsic_call]
		_(RawOrigin::Signed(reporter), first, second);
		assert!(Equivocations::<T>::contains_key((id, 0), &providers[0]));
	}

	#[benchmark]
	fn report_commitment_equivocation() {
		let (_, id, providers) = running::<T>(2);
		let genesis = frame_system::Pallet::<T>::block_hash(BlockNumberFor::<T>::zero());
		let mut chain = [0u8; 32];
		chain.copy_from_slice(genesis.as_ref());
		let first =
			signed_commitment::<T>(&providers[0], CommitmentHead { job: id, round: 0, chain }, 1);
		let second =
			signed_commitment::<T>(&providers[0], CommitmentHead { job: id, round: 0, chain }, 2);
		let reporter: T::AccountId = account("reporter", 0, 0);
		#[extrinsic_call]
		_(RawOrigin::Signed(reporter), providers[0].clone(), Box::new(first), Box::new(second));
		assert!(Equivocations::<T>::contains_key((id, 0), &providers[0]));
	}

	/// Settling a round of `p` members where all but one delivered (a quorum for p >= 3) and
	/// are paid, then opening the next round.
	#[benchmark]
	fn settle_round(p: Linear<3, { T::MaxParticipants::get() }>) {
		let (_, id, providers) = running::<T>(p);
		submit_all::<T>(id, &providers, p as usize - 1);
		let due = Rounds::<T>::get(id).expect("open").due;
		#[block]
		{
			agenda::take_first::<T>(due);
			rounds::settle::<T>(id);
		}
		assert!(RoundResults::<T>::contains_key(id, 0));
		assert!(Rounds::<T>::get(id).is_some_and(|round| round.index == 1));
	}

	/// Settling a job's last round in which none of its `p` members delivered, each at its
	/// last allowed miss: every member is liveness-slashed and removed, then the job
	/// completes and releases them.
	#[benchmark]
	fn settle_round_slashing(p: Linear<3, { T::MaxParticipants::get() }>) {
		let mut spec = max_spec::<T>(p);
		spec.rounds = 1;
		let (_, id, providers) = running_spec::<T>(spec);
		let missed = T::MaxMissedRounds::get().saturating_sub(1);
		for who in &providers {
			Participants::<T>::mutate(id, who, |p| {
				if let Some(p) = p {
					p.missed_in_row = missed;
				}
			});
		}
		let due = Rounds::<T>::get(id).expect("open").due;
		#[block]
		{
			agenda::take_first::<T>(due);
			rounds::settle::<T>(id);
		}
		assert!(matches!(Jobs::<T>::get(id).map(|j| j.status), Some(JobStatus::Completed { .. })));
		assert_eq!(Participants::<T>::iter_prefix(id).count(), 0);
	}

	/// A challenge in a job of `p` participants: every one is a committee candidate. (From
	/// four: a smaller job has no challenge window on the runtime.)
	#[benchmark]
	fn challenge(p: Linear<4, { T::MaxParticipants::get() }>) {
		let (_, id, providers) = running::<T>(p);
		submit_all::<T>(id, &providers, p as usize);
		#[extrinsic_call]
		_(RawOrigin::Signed(providers[0].clone()), id, 0, providers[1].clone());
		assert!(Challenges::<T>::contains_key(0));
	}

	/// Drawing the committee of a challenge in a job of `p` participants: every one but the
	/// two parties is a candidate.
	#[benchmark]
	fn draw_committee(p: Linear<4, { T::MaxParticipants::get() }>) {
		let open = challenged::<T>(p);
		frame_system::Pallet::<T>::set_block_number(open.draw_at);
		#[block]
		{
			agenda::unschedule::<T>(AgendaItem::Draw(0), open.draw_at);
			challenges::draw::<T>(0);
		}
		assert!(Challenges::<T>::get(0).is_some_and(|c| c.drawn()));
	}

	/// A committed verdict.
	#[benchmark]
	fn commit_vote() {
		let open = drawn::<T>(4);
		let voter = open.committee[0].0.clone();
		let commitment = vote_commitment(0, &voter, Verdict::Valid, &[7; 32]);
		#[extrinsic_call]
		_(RawOrigin::Signed(voter), 0, commitment);
		assert!(Challenges::<T>::get(0)
			.is_some_and(|c| c.committee[0].1 == Ballot::Committed(commitment)));
	}

	/// A revealed verdict that does not decide the challenge yet (the deciding one adds
	/// `resolve_challenge`).
	#[benchmark]
	fn reveal_vote() {
		let open = drawn::<T>(4);
		let voter = open.committee[0].0.clone();
		let commitment = vote_commitment(0, &voter, Verdict::Valid, &[7; 32]);
		Pallet::<T>::commit_vote(RawOrigin::Signed(voter.clone()).into(), 0, commitment)
			.expect("committed");
		frame_system::Pallet::<T>::set_block_number(open.reveal_from);
		#[extrinsic_call]
		_(RawOrigin::Signed(voter), 0, Verdict::Valid, [7; 32]);
		assert!(Challenges::<T>::get(0).is_some_and(|c| c.votes(Verdict::Valid) == 1));
	}

	/// Deciding a challenge with a committee of `k` at its deadline: fraud proven by a
	/// majority, every other member slashed for not voting (the most transfers and slashes;
	/// the ballots are written directly, since a majority revealed through `reveal_vote`
	/// decides at once).
	#[benchmark]
	fn resolve_challenge(k: Linear<{ T::MinCommittee::get() }, { T::MaxCommittee::get() }>) {
		let open = drawn::<T>(k + 2);
		assert_eq!(open.committee.len() as u32, k);
		Challenges::<T>::mutate(0, |c| {
			let c = c.as_mut().expect("open");
			let majority = c.committee.len() / 2 + 1;
			c.committee
				.iter_mut()
				.take(majority)
				.for_each(|m| m.1 = Ballot::Revealed(Verdict::Invalid));
		});
		frame_system::Pallet::<T>::set_block_number(open.deadline);
		#[block]
		{
			agenda::take_first::<T>(open.due);
			challenges::resolve::<T>(0);
		}
		assert!(!Challenges::<T>::contains_key(0));
	}

	/// Drawing which of a round's `p` paid contributions are audited (at the chain's rate:
	/// what the draw opens is measured too, `open_audit` bounds each it may open).
	#[benchmark]
	fn audit_round(p: Linear<4, { T::MaxParticipants::get() }>) {
		let (_, id, providers) = running::<T>(p);
		submit_all::<T>(id, &providers, p as usize);
		assert!(RoundMembers::<T>::contains_key(id, 0), "round 0 settled with pay");
		#[block]
		{
			audits::run::<T>(id, 0);
		}
	}

	/// Opening one audit of a round of `p` paid members: its committee drawn among the other
	/// `p - 1`, who all hold the update.
	#[benchmark]
	fn open_audit(p: Linear<4, { T::MaxParticipants::get() }>) {
		let (_, id, providers) = running::<T>(p);
		submit_all::<T>(id, &providers, p as usize);
		let accused = providers[1].clone();
		let opened;
		#[block]
		{
			opened = audits::open::<T>(id, 0, accused);
		}
		assert!(opened.is_some_and(|audit| Challenges::<T>::get(audit).is_some_and(|c| c.drawn())));
	}

	/// Pruning an ended job of `p` participants together with a round of `p` contributions,
	/// each challenged and punished for equivocation (more than any one `Expire` item does:
	/// a round's and a job's pruning are separate items).
	#[benchmark]
	fn expire(p: Linear<3, { T::MaxParticipants::get() }>) {
		let mut spec = max_spec::<T>(p);
		spec.rounds = 1;
		let (_, id, providers) = running_spec::<T>(spec);
		submit_all::<T>(id, &providers, p as usize);
		let job = Jobs::<T>::get(id).expect("stored");
		assert!(!job.status.is_live(), "its one round settled and completed it");
		let last = job.rounds_settled;
		for who in &providers {
			let evidence = Contributions::<T>::get((id, 0), who).expect("paid");
			Contributions::<T>::insert((id, last), who, evidence);
			Challenged::<T>::insert((id, last), who, 0);
			Equivocations::<T>::insert((id, last), who, ());
		}
		let members = RoundMembers::<T>::get(id, 0).expect("a paid round keeps its members");
		RoundMembers::<T>::insert(id, last, members);
		#[block]
		{
			expiry::expire::<T>(id, last);
		}
		assert!(!Jobs::<T>::contains_key(id));
		assert_eq!(Contributions::<T>::iter_prefix((id, last)).count(), 0);
		assert!(!RoundMembers::<T>::contains_key(id, last));
	}

	/// Authorizing a worker report of a probe round: the validator check, each probe's
	/// target check (of the round's share of `MaxProbesPerReport` registered providers; the
	/// call adds the reads of a full report's checks), the signature.
	#[benchmark]
	fn authorize_worker_report() {
		let (report, signature) = probe_round_report::<T>(<MaxProbesPerReport as Get<u32>>::get());
		#[block]
		{
			Pallet::<T>::authorize_worker_report(TransactionSource::External, &report, &signature)
				.expect("authorized");
		}
	}

	/// Applying a worker report with `n` probes of registered providers (settling is
	/// charged separately, per item).
	#[benchmark]
	fn apply_worker_report(n: Linear<1, { <MaxProbesPerReport as Get<u32>>::get() }>) {
		let (report, _) = worker_report::<T>(n);
		let validator = report.validator.clone();
		#[block]
		{
			worker::apply::<T>(report);
		}
		assert!(LastWorkerReport::<T>::contains_key(&validator));
	}

	impl_benchmark_test_suite!(Pallet, crate::mock::new_test_ext(), crate::mock::Test);
}
