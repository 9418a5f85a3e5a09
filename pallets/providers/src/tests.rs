//! Unit tests: every call, every error, the traits other pallets use, and the invariants.

use crate::{
	mock::*,
	traits::{LockRefusal, ProviderHealth, ProviderRegistry, ProviderSlashing},
	Error, Event, HealthRecords, PeerOwners, Providers as ProvidersMap, SlashReason,
};
use grid_primitives::provider::{ed25519_peer_id, BoundedBytes, Multiaddrs};
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{
		frame_support::{assert_noop, assert_ok},
		sp_core::Pair,
	},
	prelude::*,
	traits::fungible::{Inspect, InspectHold},
};

fn held(who: AccountId) -> Balance {
	Balances::balance_on_hold(&crate::HoldReason::ProviderStake.into(), &who)
}

fn check_invariants() {
	Providers::do_try_state().expect("invariants hold");
}

#[test]
fn register_holds_stake_binds_peer_and_emits() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 500));
		let provider = ProvidersMap::<Test>::get(ALICE).unwrap();
		let peer_id = ed25519_peer_id(&peer_key(ALICE).public().0);
		assert_eq!(provider.stake, 500);
		assert_eq!(provider.peer_id, peer_id);
		assert_eq!(provider.capabilities, gpu());
		assert_eq!(PeerOwners::<Test>::get(peer_id), Some(ALICE));
		assert_eq!(held(ALICE), 500);
		assert_eq!(Balances::balance(&ALICE), ENDOWMENT - 500);
		assert_eq!(provider_events(), vec![Event::Registered { who: ALICE, peer_id, stake: 500 }]);
		check_invariants();
	});
}

#[test]
fn register_rejects_each_bad_input() {
	new_test_ext().execute_with(|| {
		let (public, signature) = peer_proof(&peer_key(ALICE), ALICE);
		let call = |who, stake, caps, public, signature, addrs: Multiaddrs, endpoint| {
			Providers::register(
				RuntimeOrigin::signed(who),
				stake,
				caps,
				public,
				signature,
				addrs,
				endpoint,
			)
		};
		assert_noop!(
			call(ALICE, MIN_STAKE - 1, gpu(), public, signature, addrs(1), endpoint()),
			Error::<Test>::StakeTooLow
		);
		let mut no_device = gpu();
		no_device.device_count = 0;
		assert_noop!(
			call(ALICE, 500, no_device, public, signature, addrs(1), endpoint()),
			Error::<Test>::InvalidCapabilities
		);
		let mut unnamed = gpu();
		unnamed.device_name = BoundedBytes::default();
		assert_noop!(
			call(ALICE, 500, unnamed, public, signature, addrs(1), endpoint()),
			Error::<Test>::InvalidCapabilities
		);
		assert_noop!(
			call(ALICE, 500, gpu(), public, signature, Multiaddrs::default(), endpoint()),
			Error::<Test>::BadMultiaddr
		);
		let not_an_addr =
			Multiaddrs::truncate_from(vec![BoundedBytes::truncate_from(b"127.0.0.1:1".to_vec())]);
		assert_noop!(
			call(ALICE, 500, gpu(), public, signature, not_an_addr, endpoint()),
			Error::<Test>::BadMultiaddr
		);
		let invalid_utf8 =
			Multiaddrs::truncate_from(vec![BoundedBytes::truncate_from(vec![b'/', 0xff])]);
		assert_noop!(
			call(ALICE, 500, gpu(), public, signature, invalid_utf8, endpoint()),
			Error::<Test>::BadMultiaddr
		);
		for bad in [&b"ftp://host"[..], b"http://", b"127.0.0.1:9000"] {
			assert_noop!(
				call(
					ALICE,
					500,
					gpu(),
					public,
					signature,
					addrs(1),
					BoundedBytes::truncate_from(bad.to_vec())
				),
				Error::<Test>::BadEndpoint
			);
		}
		// Signature by another key, over another account, or garbage.
		let (_, bob_sig) = peer_proof(&peer_key(BOB), ALICE);
		assert_noop!(
			call(ALICE, 500, gpu(), public, bob_sig, addrs(1), endpoint()),
			Error::<Test>::BadPeerSignature
		);
		let (_, sig_for_bob) = peer_proof(&peer_key(ALICE), BOB);
		assert_noop!(
			call(ALICE, 500, gpu(), public, sig_for_bob, addrs(1), endpoint()),
			Error::<Test>::BadPeerSignature
		);
		assert_noop!(
			call(ALICE, 500, gpu(), public, [0u8; 64], addrs(1), endpoint()),
			Error::<Test>::BadPeerSignature
		);
		// More than the account can put on hold.
		let (poor_pub, poor_sig) = peer_proof(&peer_key(POOR), POOR);
		assert_noop!(
			call(POOR, MIN_STAKE, gpu(), poor_pub, poor_sig, addrs(1), endpoint()),
			Error::<Test>::InsufficientBalance
		);
		assert_noop!(
			call(ALICE, ENDOWMENT, gpu(), public, signature, addrs(1), endpoint()),
			Error::<Test>::InsufficientBalance
		);
		check_invariants();
	});
}

#[test]
fn signature_from_another_chain_is_rejected() {
	new_test_ext().execute_with(|| {
		let key = peer_key(ALICE);
		let other_genesis = polkadot_sdk::polkadot_sdk_frame::deps::sp_core::H256::repeat_byte(7);
		let payload = grid_primitives::provider::peer_binding_payload(&other_genesis, &ALICE);
		let signature = key.sign(&payload);
		assert_noop!(
			Providers::register(
				RuntimeOrigin::signed(ALICE),
				500,
				gpu(),
				key.public().0,
				signature.0,
				addrs(1),
				endpoint()
			),
			Error::<Test>::BadPeerSignature
		);
	});
}

#[test]
fn one_account_one_provider_one_peer_one_account() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 500));
		assert_noop!(register(ALICE, 500), Error::<Test>::AlreadyRegistered);
		// Bob proves Alice's libp2p key signed *for Bob*: the key is still Alice's peer.
		let (public, signature) = peer_proof(&peer_key(ALICE), BOB);
		assert_noop!(
			Providers::register(
				RuntimeOrigin::signed(BOB),
				500,
				gpu(),
				public,
				signature,
				addrs(2),
				endpoint()
			),
			Error::<Test>::PeerIdInUse
		);
	});
}

#[test]
fn registry_is_bounded() {
	new_test_ext().execute_with(|| {
		for who in 1..=MAX_PROVIDERS as AccountId {
			assert_ok!(register(who, 200));
		}
		assert_noop!(
			register(MAX_PROVIDERS as AccountId + 1, 200),
			Error::<Test>::TooManyProviders
		);
		check_invariants();
	});
}

#[test]
fn update_changes_fields_and_validates() {
	new_test_ext().execute_with(|| {
		assert_noop!(
			Providers::update(RuntimeOrigin::signed(ALICE), Some(gpu()), None, None),
			Error::<Test>::NotRegistered
		);
		assert_ok!(register(ALICE, 500));
		provider_events();
		assert_noop!(
			Providers::update(RuntimeOrigin::signed(ALICE), None, None, None),
			Error::<Test>::NothingToUpdate
		);
		let mut caps = gpu();
		caps.device_count = 8;
		assert_ok!(Providers::update(
			RuntimeOrigin::signed(ALICE),
			Some(caps.clone()),
			Some(addrs(9)),
			None
		));
		let provider = ProvidersMap::<Test>::get(ALICE).unwrap();
		assert_eq!(provider.capabilities, caps);
		assert_eq!(provider.multiaddrs, addrs(9));
		assert_eq!(provider.endpoint, endpoint());
		assert_eq!(provider_events(), vec![Event::Updated { who: ALICE }]);

		caps.device_count = 0;
		assert_noop!(
			Providers::update(RuntimeOrigin::signed(ALICE), Some(caps), None, None),
			Error::<Test>::InvalidCapabilities
		);
		assert_noop!(
			Providers::update(
				RuntimeOrigin::signed(ALICE),
				None,
				Some(Multiaddrs::default()),
				None
			),
			Error::<Test>::BadMultiaddr
		);
		assert_noop!(
			Providers::update(
				RuntimeOrigin::signed(ALICE),
				None,
				None,
				Some(BoundedBytes::truncate_from(b"nope".to_vec()))
			),
			Error::<Test>::BadEndpoint
		);
	});
}

#[test]
fn bond_more_adds_to_hold() {
	new_test_ext().execute_with(|| {
		assert_noop!(
			Providers::bond_more(RuntimeOrigin::signed(ALICE), 10),
			Error::<Test>::NotRegistered
		);
		assert_ok!(register(ALICE, 500));
		assert_noop!(
			Providers::bond_more(RuntimeOrigin::signed(ALICE), 0),
			Error::<Test>::ZeroAmount
		);
		assert_noop!(
			Providers::bond_more(RuntimeOrigin::signed(ALICE), ENDOWMENT),
			Error::<Test>::InsufficientBalance
		);
		provider_events();
		assert_ok!(Providers::bond_more(RuntimeOrigin::signed(ALICE), 250));
		assert_eq!(ProvidersMap::<Test>::get(ALICE).unwrap().stake, 750);
		assert_eq!(held(ALICE), 750);
		assert_eq!(provider_events(), vec![Event::Bonded { who: ALICE, amount: 250 }]);
		check_invariants();
	});
}

#[test]
fn unbond_then_withdraw_after_the_period() {
	new_test_ext().execute_with(|| {
		assert_noop!(
			Providers::unbond(RuntimeOrigin::signed(ALICE), 10),
			Error::<Test>::NotRegistered
		);
		assert_ok!(register(ALICE, 500));
		assert_noop!(Providers::unbond(RuntimeOrigin::signed(ALICE), 0), Error::<Test>::ZeroAmount);
		assert_noop!(
			Providers::unbond(RuntimeOrigin::signed(ALICE), 501),
			Error::<Test>::InsufficientBond
		);
		// 450 would leave 50: above zero but under the minimum.
		assert_noop!(
			Providers::unbond(RuntimeOrigin::signed(ALICE), 450),
			Error::<Test>::StakeTooLow
		);
		provider_events();

		assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 200));
		assert_eq!(
			provider_events(),
			vec![Event::Unbonding { who: ALICE, amount: 200, unlock_at: 1 + UNBONDING }]
		);
		let provider = ProvidersMap::<Test>::get(ALICE).unwrap();
		assert_eq!((provider.stake, provider.total_held()), (300, 500));
		// Still held (slashable) while unbonding.
		assert_eq!(held(ALICE), 500);
		assert_noop!(
			Providers::withdraw_unbonded(RuntimeOrigin::signed(ALICE)),
			Error::<Test>::NothingToWithdraw
		);

		run_to_block(UNBONDING);
		assert_noop!(
			Providers::withdraw_unbonded(RuntimeOrigin::signed(ALICE)),
			Error::<Test>::NothingToWithdraw
		);
		run_to_block(1 + UNBONDING);
		provider_events();
		assert_ok!(Providers::withdraw_unbonded(RuntimeOrigin::signed(ALICE)));
		assert_eq!(provider_events(), vec![Event::Withdrawn { who: ALICE, amount: 200 }]);
		assert_eq!(held(ALICE), 300);
		assert_eq!(Balances::balance(&ALICE), ENDOWMENT - 300);
		check_invariants();
	});
}

#[test]
fn unbonding_chunks_merge_per_block_and_are_bounded() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 1_000));
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 10));
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 10));
		assert_eq!(ProvidersMap::<Test>::get(ALICE).unwrap().unbonding.len(), 1);
		for block in 2..=MAX_CHUNKS as u64 {
			run_to_block(block);
			assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 10));
		}
		run_to_block(MAX_CHUNKS as u64 + 1);
		assert_noop!(
			Providers::unbond(RuntimeOrigin::signed(ALICE), 10),
			Error::<Test>::TooManyUnbondingChunks
		);
		// Withdrawing only releases the chunks that unlocked.
		run_to_block(2 + UNBONDING);
		assert_ok!(Providers::withdraw_unbonded(RuntimeOrigin::signed(ALICE)));
		let provider = ProvidersMap::<Test>::get(ALICE).unwrap();
		assert_eq!(provider.unbonding.len(), MAX_CHUNKS as usize - 2);
		check_invariants();
	});
}

#[test]
fn deregister_only_when_out_of_jobs_and_fully_unbonded() {
	new_test_ext().execute_with(|| {
		assert_noop!(
			Providers::deregister(RuntimeOrigin::signed(ALICE)),
			Error::<Test>::NotRegistered
		);
		assert_ok!(register(ALICE, 500));
		assert_eq!(<Providers as ProviderRegistry<_, _, _>>::lock_for_job(&ALICE, 7, 0), Ok(()));
		assert_noop!(Providers::deregister(RuntimeOrigin::signed(ALICE)), Error::<Test>::InJob);
		// In a job a provider cannot drop under the minimum.
		assert_noop!(Providers::unbond(RuntimeOrigin::signed(ALICE), 500), Error::<Test>::InJob);
		<Providers as ProviderRegistry<_, _, _>>::release_job(&ALICE, 7, 0);

		assert_noop!(
			Providers::deregister(RuntimeOrigin::signed(ALICE)),
			Error::<Test>::StillBonded
		);
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 500));
		assert_noop!(
			Providers::deregister(RuntimeOrigin::signed(ALICE)),
			Error::<Test>::StillUnbonding
		);
		run_to_block(1 + UNBONDING);
		assert_ok!(Providers::withdraw_unbonded(RuntimeOrigin::signed(ALICE)));
		provider_events();
		assert_ok!(Providers::deregister(RuntimeOrigin::signed(ALICE)));
		assert_eq!(provider_events(), vec![Event::Deregistered { who: ALICE }]);
		assert!(ProvidersMap::<Test>::get(ALICE).is_none());
		assert!(PeerOwners::<Test>::iter().next().is_none());
		assert!(!HealthRecords::<Test>::contains_key(ALICE));
		assert_eq!(Balances::balance(&ALICE), ENDOWMENT);
		check_invariants();
		// The freed PeerId can be registered again.
		assert_ok!(register(ALICE, 500));
	});
}

#[test]
fn a_provider_that_unbonded_everything_is_not_eligible_until_it_bonds_the_minimum() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 500));
		assert!(<Providers as ProviderRegistry<_, _, _>>::is_eligible(&ALICE, 0));
		assert!(<Providers as ProviderRegistry<_, _, _>>::is_eligible(&ALICE, 500));
		assert!(!<Providers as ProviderRegistry<_, _, _>>::is_eligible(&ALICE, 501));
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 500));
		assert!(!<Providers as ProviderRegistry<_, _, _>>::is_eligible(&ALICE, 0));
		assert_noop!(
			Providers::bond_more(RuntimeOrigin::signed(ALICE), 50),
			Error::<Test>::StakeTooLow
		);
		assert_ok!(Providers::bond_more(RuntimeOrigin::signed(ALICE), MIN_STAKE));
		assert!(<Providers as ProviderRegistry<_, _, _>>::is_eligible(&ALICE, 0));
		assert!(!<Providers as ProviderRegistry<_, _, _>>::is_eligible(&BOB, 0));
	});
}

#[test]
fn slash_takes_active_then_unbonding_pays_recipients_and_burns_the_rest() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 500));
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 200));
		let issuance = Balances::total_issuance();
		provider_events();

		let recipients = [(BOB, Perbill::from_percent(50)), (CHARLIE, Perbill::from_percent(20))];
		let taken = Providers::slash(&ALICE, 400, SlashReason::Fraud, &recipients);
		assert_eq!(taken, 400);
		assert_eq!(Balances::balance(&BOB), ENDOWMENT + 200);
		assert_eq!(Balances::balance(&CHARLIE), ENDOWMENT + 80);
		assert_eq!(Balances::total_issuance(), issuance - 120, "30% burned");
		let provider = ProvidersMap::<Test>::get(ALICE).unwrap();
		// 300 active taken first, then 100 of the 200 unbonding.
		assert_eq!((provider.stake, provider.total_held()), (0, 100));
		assert_eq!(held(ALICE), 100);
		assert_eq!(
			provider_events(),
			vec![Event::Slashed {
				who: ALICE,
				reason: SlashReason::Fraud,
				amount: 400,
				to_recipients: 280
			}]
		);
		check_invariants();

		// Slashing more than is held takes what there is; unknown accounts lose nothing.
		assert_eq!(Providers::slash(&ALICE, 1_000, SlashReason::Equivocation, &[]), 100);
		assert_eq!(held(ALICE), 0);
		assert_eq!(Providers::slash(&BOB, 1_000, SlashReason::Liveness, &[]), 0);
		check_invariants();
	});
}

#[test]
fn slash_below_the_minimum_moves_the_rest_to_unbonding() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 150));
		Providers::slash(&ALICE, 100, SlashReason::Liveness, &[]);
		let provider = ProvidersMap::<Test>::get(ALICE).unwrap();
		assert_eq!(provider.stake, 0);
		assert_eq!(provider.total_held(), 50);
		assert!(!<Providers as ProviderRegistry<_, _, _>>::is_eligible(&ALICE, 0));
		check_invariants();
	});
}

#[test]
fn a_slash_below_the_minimum_with_every_chunk_taken_still_unbonds_the_rest() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 1_000));
		for block in 1..=u64::from(MAX_CHUNKS) {
			run_to_block(block);
			assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 100));
		}
		// 700 active, 3 chunks: a slash leaves 50 active, which joins the last chunk.
		Providers::slash(&ALICE, 650, SlashReason::Fraud, &[]);
		let provider = ProvidersMap::<Test>::get(ALICE).unwrap();
		assert_eq!(provider.stake, 0);
		assert_eq!(provider.unbonding.len(), MAX_CHUNKS as usize);
		let last = provider.unbonding.last().unwrap();
		assert_eq!((last.amount, last.unlock_at), (150, u64::from(MAX_CHUNKS) + UNBONDING));
		check_invariants();
	});
}

#[test]
fn a_recipient_that_cannot_receive_leaves_its_share_burned() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 500));
		let issuance = Balances::total_issuance();
		// Account 77 does not exist and 0 is below the existential deposit (1 in the mock):
		// a zero share is skipped; the unpaid rest is burned.
		let taken = Providers::slash(&ALICE, 100, SlashReason::Fraud, &[(77, Perbill::zero())]);
		assert_eq!(taken, 100);
		assert_eq!(Balances::total_issuance(), issuance - 100);
		check_invariants();
	});
}

#[test]
fn health_records_rounds_challenges_probes_and_scores() {
	new_test_ext().execute_with(|| {
		// Unknown providers are ignored.
		Providers::round_delivered(&ALICE);
		Providers::probed(&ALICE, true, 5);
		assert!(!HealthRecords::<Test>::contains_key(ALICE));

		assert_ok!(register(ALICE, 500));
		assert_eq!(Providers::health_score(&ALICE), Perbill::one());
		provider_events();
		for _ in 0..3 {
			Providers::round_delivered(&ALICE);
		}
		Providers::round_missed(&ALICE);
		let health = HealthRecords::<Test>::get(ALICE);
		assert_eq!((health.rounds_delivered, health.rounds_missed), (3, 1));
		assert_eq!(Providers::health_score(&ALICE), Perbill::from_percent(80));

		run_to_block(4);
		provider_events();
		Providers::probed(&ALICE, false, 0);
		Providers::probed(&ALICE, true, 42);
		let health = HealthRecords::<Test>::get(ALICE);
		assert_eq!((health.probes_ok, health.probes_failed), (1, 1));
		assert_eq!(health.last_probe, Some(crate::Probe { at: 4, ok: true, latency_ms: 42 }));
		assert_eq!(
			provider_events(),
			vec![
				Event::Probed { who: ALICE, ok: false, latency_ms: 0 },
				Event::Probed { who: ALICE, ok: true, latency_ms: 42 }
			]
		);
		let before = Providers::health_score(&ALICE);
		Providers::challenge_lost(&ALICE);
		let after = Providers::health_score(&ALICE);
		assert_eq!(after, before * Perbill::from_percent(50));
		assert_eq!(provider_events(), vec![Event::HealthChanged { who: ALICE, score: after }]);
	});
}

#[test]
fn view_functions_return_providers_with_health() {
	new_test_ext().execute_with(|| {
		assert!(Providers::provider(ALICE).is_none());
		assert_ok!(register(ALICE, 500));
		assert_ok!(register(BOB, 300));
		Providers::round_missed(&BOB);
		let bob = Providers::provider(BOB).unwrap();
		assert_eq!(bob.provider.stake, 300);
		assert_eq!(bob.health.rounds_missed, 1);
		assert_eq!(bob.score, Perbill::from_percent(50));
		let mut all: Vec<_> =
			Providers::providers().into_iter().map(|(who, v)| (who, v.provider.stake)).collect();
		all.sort();
		assert_eq!(all, vec![(ALICE, 500), (BOB, 300)]);
	});
}

#[test]
fn try_state_detects_a_hold_that_differs_from_the_record() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 500));
		ProvidersMap::<Test>::mutate(ALICE, |p| p.as_mut().unwrap().stake = 400);
		assert!(Providers::do_try_state().is_err());
	});
}

#[test]
fn unsigned_origin_is_rejected() {
	new_test_ext().execute_with(|| {
		assert_noop!(Providers::bond_more(RuntimeOrigin::none(), 10), DispatchError::BadOrigin);
		assert_noop!(Providers::deregister(RuntimeOrigin::root()), DispatchError::BadOrigin);
	});
}

#[test]
fn probe_targets_put_the_never_and_least_recently_probed_first() {
	new_test_ext().execute_with(|| {
		assert!(<Providers as ProviderHealth<_>>::probe_targets(7, 10).is_empty());
		for who in [ALICE, BOB, CHARLIE] {
			assert_ok!(register(who, 500));
		}
		run_to_block(3);
		Providers::probed(&ALICE, true, 1);
		run_to_block(5);
		Providers::probed(&BOB, true, 1);
		let order: Vec<AccountId> = <Providers as ProviderHealth<_>>::probe_targets(7, 10)
			.into_iter()
			.map(|(w, _)| w)
			.collect();
		assert_eq!(order, vec![CHARLIE, ALICE, BOB]);
		let first = <Providers as ProviderHealth<_>>::probe_targets(7, 2);
		assert_eq!(first, vec![(CHARLIE, endpoint()), (ALICE, endpoint())]);
		// A registry this small is covered by every probe round; nobody else is a target.
		for round in 0..3 {
			for who in [ALICE, BOB, CHARLIE] {
				assert!(<Providers as ProviderHealth<_>>::is_probe_target(&who, round));
			}
			assert!(!<Providers as ProviderHealth<_>>::is_probe_target(&POOR, round));
		}
	});
}

fn lock(who: AccountId, job: u64, amount: Balance) -> Result<(), LockRefusal> {
	<Providers as ProviderRegistry<_, _, _>>::lock_for_job(&who, job, amount)
}

fn release(who: AccountId, job: u64, until: u64) {
	<Providers as ProviderRegistry<_, _, _>>::release_job(&who, job, until)
}

fn covers(who: AccountId) -> bool {
	<Providers as ProviderRegistry<_, _, _>>::covers_jobs(&who)
}

#[test]
fn a_provider_cannot_unbond_the_stake_its_job_requires() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 1_000));
		assert_eq!(lock(ALICE, 1, 800), Ok(()));
		// The attack: join a job that requires 800, then unbond down to the minimum.
		assert_noop!(
			Providers::unbond(RuntimeOrigin::signed(ALICE), 900),
			Error::<Test>::StakeLocked
		);
		assert_noop!(
			Providers::unbond(RuntimeOrigin::signed(ALICE), 201),
			Error::<Test>::StakeLocked
		);
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 200));
		assert_eq!(ProvidersMap::<Test>::get(ALICE).unwrap().locked(1), 800);
		check_invariants();
	});
}

#[test]
fn one_stake_cannot_back_more_jobs_than_it_covers() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 1_000));
		assert_eq!(lock(ALICE, 1, 600), Ok(()));
		assert_eq!(lock(ALICE, 2, 600), Err(LockRefusal::NotEligible), "1,200 > 1,000");
		assert_eq!(lock(ALICE, 2, 400), Ok(()));
		assert_eq!(lock(ALICE, 3, 1), Err(LockRefusal::NotEligible));
		assert_eq!(lock(ALICE, 3, 0), Ok(()));
		// Jobs without a stake requirement are capped by count.
		assert_eq!(lock(ALICE, 4, 0), Err(LockRefusal::TooManyJobs));
		assert_eq!(lock(BOB, 1, 0), Err(LockRefusal::NotEligible), "not registered");
		assert_eq!(<Providers as ProviderRegistry<_, _, _>>::jobs_of(&ALICE), vec![1, 2, 3]);
		let member_lock = <Providers as ProviderRegistry<_, _, _>>::member_lock;
		assert_eq!(member_lock(&ALICE, 2), Some(400));
		assert_eq!(member_lock(&ALICE, 4), None, "refused");
		release(ALICE, 2, 20);
		assert_eq!(member_lock(&ALICE, 2), None, "left: the lock lasts, the membership not");
		check_invariants();
	});
}

#[test]
fn a_lock_outlives_the_membership_until_its_challenge_window_closes() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 1_000));
		assert_eq!(lock(ALICE, 1, 800), Ok(()));
		// Leaving right after being paid does not free the stake before it can be challenged.
		release(ALICE, 1, 20);
		assert!(!ProvidersMap::<Test>::get(ALICE).unwrap().in_jobs());
		assert_noop!(
			Providers::unbond(RuntimeOrigin::signed(ALICE), 1_000),
			Error::<Test>::StakeLocked
		);
		// Joining again takes the lingering lock back rather than counting it twice.
		assert_eq!(lock(ALICE, 1, 800), Ok(()));
		assert_eq!(ProvidersMap::<Test>::get(ALICE).unwrap().locked(1), 800);
		release(ALICE, 1, 20);
		run_to_block(20);
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 1_000));
		assert!(ProvidersMap::<Test>::get(ALICE).unwrap().jobs.is_empty(), "lapsed locks pruned");
		// A lock released with nothing to challenge ends at once.
		assert_ok!(register(BOB, 500));
		assert_eq!(lock(BOB, 1, 500), Ok(()));
		release(BOB, 1, 20);
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(BOB), 500));
		check_invariants();
	});
}

#[test]
fn a_slash_below_the_minimum_in_a_job_does_not_free_the_rest() {
	new_test_ext().execute_with(|| {
		// The attack: sit at the minimum, provoke a small slash, and walk away with the rest
		// while staying in the job.
		assert_ok!(register(ALICE, 150));
		assert_eq!(lock(ALICE, 1, 100), Ok(()));
		Providers::slash(&ALICE, 60, SlashReason::CommitteeAbsence, &[]);
		let provider = ProvidersMap::<Test>::get(ALICE).unwrap();
		assert_eq!((provider.stake, provider.total_held()), (90, 90), "still active");
		assert!(!covers(ALICE), "the jobs pallet must remove it from its jobs");
		assert_noop!(Providers::unbond(RuntimeOrigin::signed(ALICE), 90), Error::<Test>::InJob);
		// Removed from the job, it is out of admission: the rest unbonds, and stays held until
		// the job's challenge window has closed (past the unbonding period here).
		release(ALICE, 1, 30);
		let provider = ProvidersMap::<Test>::get(ALICE).unwrap();
		assert_eq!(provider.stake, 0);
		assert_eq!(provider.unbonding.last().map(|c| (c.amount, c.unlock_at)), Some((90, 30)));
		check_invariants();
		run_to_block(29);
		assert_noop!(
			Providers::withdraw_unbonded(RuntimeOrigin::signed(ALICE)),
			Error::<Test>::NothingToWithdraw
		);
		run_to_block(30);
		assert_ok!(Providers::withdraw_unbonded(RuntimeOrigin::signed(ALICE)));
		check_invariants();
	});
}

#[test]
fn capabilities_are_frozen_while_in_a_job() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 500));
		assert_eq!(lock(ALICE, 1, 0), Ok(()));
		let mut faster = gpu();
		faster.tflops_milli *= 10;
		// The attack: declare more throughput after joining, to raise the cap on paid claims.
		assert_noop!(
			Providers::update(RuntimeOrigin::signed(ALICE), Some(faster.clone()), None, None),
			Error::<Test>::InJob
		);
		// Addresses may still move.
		assert_ok!(Providers::update(RuntimeOrigin::signed(ALICE), None, Some(addrs(1)), None));
		release(ALICE, 1, 0);
		assert_ok!(Providers::update(RuntimeOrigin::signed(ALICE), Some(faster), None, None));
	});
}

fn register_at(who: AccountId, url: &str) -> DispatchResult {
	let (public, signature) = peer_proof(&peer_key(who), who);
	Providers::register(
		RuntimeOrigin::signed(who),
		500,
		gpu(),
		public,
		signature,
		addrs(30_000 + who as u16),
		BoundedBytes::truncate_from(url.as_bytes().to_vec()),
	)
}

#[test]
fn endpoints_inside_a_validators_network_are_refused() {
	new_test_ext().execute_with(|| {
		// The attack: make every validator's off-chain worker GET its own metadata service,
		// private network or RPC, and publish whether it answered.
		crate::LoopbackEndpoints::<Test>::put(false);
		for url in [
			"http://169.254.169.254/latest/meta-data/",
			"http://10.0.0.1:9944/",
			"http://192.168.0.1/",
			"http://[fd00::1]/",
			"http://127.0.0.1:9944/",
			"http://localhost:9944/",
			"http://internal.example/",
		] {
			assert_noop!(register_at(ALICE, url), Error::<Test>::EndpointNotPublic);
		}
		assert_noop!(register_at(ALICE, "ftp://8.8.8.8/"), Error::<Test>::BadEndpoint);
		assert_ok!(register_at(ALICE, "http://8.8.8.8:9000/health"));
		// Updating to an internal address is refused the same way.
		let internal = BoundedBytes::truncate_from(b"http://10.1.1.1/".to_vec());
		assert_noop!(
			Providers::update(RuntimeOrigin::signed(ALICE), None, None, Some(internal)),
			Error::<Test>::EndpointNotPublic
		);
		// A development chain allows loopback, and nothing else internal.
		crate::LoopbackEndpoints::<Test>::put(true);
		assert_ok!(register_at(BOB, "http://127.0.0.1:9001/health"));
		assert_noop!(register_at(CHARLIE, "http://10.0.0.1/"), Error::<Test>::EndpointNotPublic);
		check_invariants();
	});
}

#[test]
fn probes_skip_endpoints_the_rule_no_longer_allows() {
	new_test_ext().execute_with(|| {
		assert_ok!(register_at(ALICE, "http://127.0.0.1:9000/health"));
		assert_ok!(register_at(BOB, "http://8.8.8.8/health"));
		let targets = || -> Vec<AccountId> {
			<Providers as ProviderHealth<_>>::probe_targets(7, 10)
				.into_iter()
				.map(|(w, _)| w)
				.collect()
		};
		assert_eq!(targets().len(), 2);
		// The chain stops allowing loopback: validators stop probing it.
		crate::LoopbackEndpoints::<Test>::put(false);
		assert_eq!(targets(), vec![BOB]);
	});
}

#[test]
fn endpoint_changes_are_rate_limited() {
	new_test_ext().execute_with(|| {
		assert_ok!(register(ALICE, 500));
		let url =
			|n: u8| Some(BoundedBytes::truncate_from(format!("http://8.8.8.{n}/").into_bytes()));
		let update = |n| Providers::update(RuntimeOrigin::signed(ALICE), None, None, url(n));
		// The attack: walk validators' probes over many addresses, one update per block.
		assert_ok!(update(1));
		run_to_block(2);
		assert_noop!(update(2), Error::<Test>::EndpointChangedRecently);
		// The same endpoint again is no change; other fields may change any time.
		assert_ok!(update(1));
		assert_ok!(Providers::update(RuntimeOrigin::signed(ALICE), None, Some(addrs(7)), None));
		run_to_block(1 + ENDPOINT_COOLDOWN);
		assert_ok!(update(2));
		check_invariants();
		// Deregistering forgets the change.
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(ALICE), 500));
		run_to_block(2 + ENDPOINT_COOLDOWN + UNBONDING);
		assert_ok!(Providers::withdraw_unbonded(RuntimeOrigin::signed(ALICE)));
		assert_ok!(Providers::deregister(RuntimeOrigin::signed(ALICE)));
		assert!(!crate::EndpointChangedAt::<Test>::contains_key(ALICE));
		check_invariants();
	});
}

/// `who` takes `seat` in the full registry with `stake`.
fn take_seat(who: AccountId, seat: AccountId, stake: Balance) -> DispatchResult {
	let (public, signature) = peer_proof(&peer_key(who), who);
	Providers::register_in_place_of(
		RuntimeOrigin::signed(who),
		seat,
		stake,
		gpu(),
		public,
		signature,
		addrs(30_000 + who as u16),
		endpoint(),
	)
}

/// The attack: fill every seat of the registry with the least stake, idle.
fn fill_registry_with_squatters() {
	for who in 1..=MAX_PROVIDERS as AccountId {
		assert_ok!(register(who, MIN_STAKE));
	}
	assert_noop!(register(6, 5 * MIN_STAKE), Error::<Test>::TooManyProviders);
}

#[test]
fn a_registry_filled_with_idle_capital_gives_seats_to_whoever_stakes_more() {
	new_test_ext().execute_with(|| {
		fill_registry_with_squatters();
		let squatter_balance = Balances::balance(&ALICE);
		assert_ok!(take_seat(6, ALICE, MIN_STAKE + 1));
		assert!(ProvidersMap::<Test>::contains_key(6));
		assert!(!ProvidersMap::<Test>::contains_key(ALICE));
		// The evicted squatter loses nothing but the seat.
		assert_eq!(held(ALICE), 0);
		assert_eq!(Balances::balance(&ALICE), squatter_balance + MIN_STAKE);
		assert!(!HealthRecords::<Test>::contains_key(ALICE));
		assert!(PeerOwners::<Test>::get(ed25519_peer_id(&peer_key(ALICE).public().0)).is_none());
		assert!(provider_events().contains(&Event::Evicted { who: ALICE, by: 6 }));
		check_invariants();
	});
}

#[test]
fn a_seat_is_taken_only_from_an_idle_provider_that_holds_less() {
	new_test_ext().execute_with(|| {
		assert_noop!(take_seat(6, ALICE, 5 * MIN_STAKE), Error::<Test>::RegistryNotFull);
		fill_registry_with_squatters();
		// Equal stake does not outbid; unbonding stake counts as held.
		assert_noop!(take_seat(6, ALICE, MIN_STAKE), Error::<Test>::StakeBelowSeat);
		assert_ok!(Providers::bond_more(RuntimeOrigin::signed(BOB), 100));
		assert_ok!(Providers::unbond(RuntimeOrigin::signed(BOB), 100));
		assert_noop!(take_seat(6, BOB, 2 * MIN_STAKE), Error::<Test>::StakeBelowSeat);
		// A provider in a job, or whose stake is still locked after leaving one, keeps its seat.
		assert_ok!(lock(CHARLIE, 7, 0));
		assert_noop!(take_seat(6, CHARLIE, 5 * MIN_STAKE), Error::<Test>::SeatInUse);
		release(CHARLIE, 7, 20);
		assert_noop!(take_seat(6, CHARLIE, 5 * MIN_STAKE), Error::<Test>::SeatInUse);
		run_to_block(20);
		assert_ok!(take_seat(6, CHARLIE, 5 * MIN_STAKE));
		// Not a seat: an unregistered account; and nobody registers twice.
		assert_noop!(take_seat(7, 8, 5 * MIN_STAKE), Error::<Test>::NotRegistered);
		assert_noop!(take_seat(6, ALICE, 5 * MIN_STAKE), Error::<Test>::AlreadyRegistered);
		check_invariants();
	});
}
