//! Native tests of the runtime: every genesis preset builds a valid genesis state.

use polkadot_sdk::{
	frame_support::traits::fungible::Inspect, pallet_sudo, sp_genesis_builder::PresetId,
	sp_io::TestExternalities, sp_keyring::Sr25519Keyring, sp_runtime::BuildStorage,
};

use crate::{
	genesis_config_presets::{get_preset, preset_names, DEV_ENDOWMENT},
	Aura, Balances, Grandpa, Runtime, RuntimeGenesisConfig,
};

/// Parses a preset strictly (unknown fields are an error) and builds its storage.
fn build_preset(id: &PresetId) -> TestExternalities {
	let json = get_preset(id).unwrap_or_else(|| panic!("preset {id:?} is listed but missing"));
	let config: RuntimeGenesisConfig = serde_json::from_slice(&json)
		.unwrap_or_else(|e| panic!("preset {id:?} does not parse as the genesis config: {e}"));
	let storage = config
		.build_storage()
		.unwrap_or_else(|e| panic!("preset {id:?} does not build a genesis state: {e}"));
	TestExternalities::new(storage)
}

#[test]
fn every_preset_builds_a_valid_genesis() {
	let names = preset_names();
	assert_eq!(names.len(), 2, "development and local_testnet");
	for id in names {
		build_preset(&id).execute_with(|| {
			let aura = pallet_aura_authorities();
			assert!(!aura.is_empty(), "{id:?}: no Aura authorities");
			assert_eq!(
				aura.len(),
				Grandpa::grandpa_authorities().len(),
				"{id:?}: every validator has both keys"
			);
			let alice = Sr25519Keyring::Alice.to_account_id();
			assert_eq!(Balances::balance(&alice), DEV_ENDOWMENT, "{id:?}: Alice is funded");
			assert_eq!(pallet_sudo::Key::<Runtime>::get(), Some(alice), "{id:?}: Alice is sudo");
		});
	}
}

#[test]
fn local_testnet_has_four_validators_and_development_one() {
	let count =
		|name: &str| build_preset(&name.into()).execute_with(|| pallet_aura_authorities().len());
	assert_eq!(count("development"), 1);
	assert_eq!(count("local_testnet"), 4);
}

#[test]
fn unknown_preset_is_none() {
	assert!(get_preset(&"mainnet".into()).is_none());
}

fn pallet_aura_authorities() -> Vec<polkadot_sdk::sp_consensus_aura::sr25519::AuthorityId> {
	polkadot_sdk::pallet_aura::Authorities::<Runtime>::get().into_inner()
}

// Keep the pallet handle in use so a rename of `Aura` in the runtime breaks this test too.
#[test]
fn aura_slot_duration_is_the_block_time() {
	build_preset(&"development".into()).execute_with(|| {
		assert_eq!(Aura::slot_duration(), crate::SLOT_DURATION);
	});
}

#[test]
fn an_accused_provider_cannot_unbond_before_its_verdict() {
	use polkadot_sdk::frame_support::traits::Get;
	type Jobs = <crate::Runtime as pallet_jobs::Config>::MaxRoundBlocks;
	type Window = <crate::Runtime as pallet_jobs::Config>::MaxChallengeWindow;
	type Voting = <crate::Runtime as pallet_jobs::Config>::VotingPeriod;
	type Reach = <crate::Runtime as pallet_jobs::Config>::MaxAgendaReach;
	type Unbonding = <crate::Runtime as pallet_providers::Config>::UnbondingPeriod;
	// Stake unbonded as a round opens must stay slashable through that round, its challenge
	// window and the voting of a challenge opened at the window's end, however late the
	// agenda works the round's settlement (a running job's rounds reach four times as far as
	// a caller's entries) and the challenge's decision (a caller's reach).
	let reach = <Reach as Get<u32>>::get();
	let latest_settlement = <Jobs as Get<u32>>::get() + 4 * reach;
	let latest_verdict =
		latest_settlement + <Window as Get<u32>>::get() + <Voting as Get<u32>>::get() + reach;
	let unbonding = <Unbonding as Get<u32>>::get();
	assert!(
		latest_verdict <= unbonding,
		"a challenge can still be decided {latest_verdict} blocks after a round opens, but \
		 stake unbonded then leaves after {unbonding}"
	);
}

#[test]
fn a_verifiable_job_leaves_a_committee_no_single_sybil_decides() {
	use polkadot_sdk::frame_support::traits::Get;
	type Min = <crate::Runtime as pallet_jobs::Config>::MinVerifiableProviders;
	// The accused and the challenger are never on the committee; with a strict majority of
	// the whole committee needed, a committee of one would let one drawn Sybil decide.
	let committee = <Min as Get<u32>>::get() - 2;
	assert!(committee >= 2, "a verifiable job's smallest committee is {committee}");
}

#[test]
fn fees_rise_while_blocks_are_full_and_never_fall_below_the_base() {
	use crate::configs::FeeMultiplierUpdate;
	use polkadot_sdk::{
		frame_support::{dispatch::DispatchClass, weights::Weight},
		frame_system,
		pallet_transaction_payment::Multiplier,
		sp_runtime::{
			traits::{Convert, One},
			FixedPointNumber,
		},
	};
	build_preset(&PresetId::from(polkadot_sdk::sp_genesis_builder::DEV_RUNTIME_PRESET))
		.execute_with(|| {
			let limits = <crate::Runtime as frame_system::Config>::BlockWeights::get();
			let full = limits.get(DispatchClass::Normal).max_total.expect("normal has a limit");
			// A block stuffer keeps blocks full: every block costs the next more.
			frame_system::Pallet::<crate::Runtime>::set_block_consumed_resources(full, 0);
			let mut multiplier = Multiplier::one();
			for _ in 0..100 {
				let next = FeeMultiplierUpdate::convert(multiplier);
				assert!(next > multiplier, "a full block raises fees");
				multiplier = next;
			}
			assert!(
				multiplier > Multiplier::saturating_from_integer(2),
				"fees doubled in 100 blocks"
			);
			// Quiet blocks bring fees back down, to the base and no lower.
			frame_system::Pallet::<crate::Runtime>::set_block_consumed_resources(Weight::zero(), 0);
			for _ in 0..10_000 {
				multiplier = FeeMultiplierUpdate::convert(multiplier);
			}
			assert_eq!(multiplier, Multiplier::one());
		});
}

#[test]
fn genesis_records_the_pallets_storage_versions() {
	use polkadot_sdk::frame_support::traits::{GetStorageVersion, StorageVersion};
	build_preset(&PresetId::from(polkadot_sdk::sp_genesis_builder::DEV_RUNTIME_PRESET))
		.execute_with(|| {
			// Migrations key off these: a pallet whose layout changes bumps its version.
			assert_eq!(crate::Jobs::on_chain_storage_version(), StorageVersion::new(1));
			assert_eq!(crate::Providers::on_chain_storage_version(), StorageVersion::new(1));
			assert_eq!(
				crate::Jobs::on_chain_storage_version(),
				crate::Jobs::in_code_storage_version()
			);
		});
}

#[test]
fn a_block_stuffed_with_normal_transactions_still_takes_proofs() {
	use polkadot_sdk::{
		frame_support::dispatch::GetDispatchInfo,
		frame_system::{self, CheckWeight},
		sp_runtime::transaction_validity::InvalidTransaction,
	};
	build_preset(&PresetId::from(polkadot_sdk::sp_genesis_builder::DEV_RUNTIME_PRESET))
		.execute_with(|| {
			let limits = <Runtime as frame_system::Config>::BlockWeights::get();
			let full = limits
				.get(polkadot_sdk::frame_support::dispatch::DispatchClass::Normal)
				.max_total
				.expect("normal has a limit");
			// A buyer stuffs the block with normal transactions so its job's members miss
			// their round.
			frame_system::Pallet::<Runtime>::set_block_consumed_resources(full, 0);
			let member = Sr25519Keyring::Bob.to_account_id();
			let transfer = crate::RuntimeCall::Balances(
				polkadot_sdk::pallet_balances::Call::transfer_allow_death {
					dest: member.clone().into(),
					value: 1,
				},
			);
			let submit = submit_proof_call(member, Vec::new());
			assert_eq!(
				CheckWeight::<Runtime>::do_prepare(&transfer.get_dispatch_info(), 200, 200),
				Err(InvalidTransaction::ExhaustsResources.into()),
				"the stuffing works on normal transactions"
			);
			assert!(
				CheckWeight::<Runtime>::do_prepare(&submit.get_dispatch_info(), 400, 400).is_ok(),
				"proofs have their own room"
			);
		});
}

/// A `submit_proof` call by `provider` listing `received` (its signature is not checked here).
fn submit_proof_call(
	provider: polkadot_sdk::sp_runtime::AccountId32,
	received: Vec<polkadot_sdk::sp_runtime::AccountId32>,
) -> crate::RuntimeCall {
	use grid_primitives::job::{ContributionProof, SignedProof};
	use polkadot_sdk::{frame_support::BoundedVec, sp_core::H256};
	let proof = ContributionProof {
		job: 0,
		round: 0,
		provider,
		base_model_hash: H256::zero(),
		own_update_commitment: H256::zero(),
		start_state: H256::zero(),
		inner_steps: 1,
		result_model_hash: H256::zero(),
		samples_processed: 1,
		train_loss_micros: 0,
		received: BoundedVec::truncate_from(received),
	};
	let signed = Box::new(SignedProof { proof, signature: [0; 64] });
	crate::RuntimeCall::Jobs(pallet_jobs::Call::submit_proof { proof: signed })
}

/// How many `submit_proof` extrinsics of the largest kind (64 peers listed as received) the
/// block builder's weight and length checks (`CheckWeight`) admit into one block, each a
/// signed extrinsic with the runtime's extensions (whose weight counts too), charged up front
/// for the worst case and then `actual` for the call (none: no refund).
fn proofs_in_a_block(actual: Option<polkadot_sdk::frame_support::weights::Weight>) -> u32 {
	use codec::Encode;
	use grid_primitives::job::MaxProofPeers;
	use polkadot_sdk::{
		frame_support::{
			dispatch::{GetDispatchInfo, Pays, PostDispatchInfo},
			traits::Get,
		},
		frame_system::{offchain::CreateAuthorizedTransaction, CheckWeight},
	};
	let peers = (0..<MaxProofPeers as Get<u32>>::get())
		.map(|i| polkadot_sdk::sp_runtime::AccountId32::new([i as u8; 32]))
		.collect::<Vec<_>>();
	let bob = Sr25519Keyring::Bob;
	let call = submit_proof_call(bob.to_account_id(), peers);
	let extension =
		<Runtime as CreateAuthorizedTransaction<crate::RuntimeCall>>::create_extension();
	let xt = crate::UncheckedExtrinsic::new_signed(
		call,
		crate::Address::Id(bob.to_account_id()),
		crate::Signature::Sr25519(bob.sign(b"any: only the size counts")),
		extension,
	);
	let info = xt.get_dispatch_info();
	let len = xt.encoded_size();
	// The executive adds the extensions' weight to the call's actual weight.
	let post = PostDispatchInfo {
		actual_weight: actual.map(|call| call.saturating_add(info.extension_weight)),
		pays_fee: Pays::No,
	};
	// An empty block.
	polkadot_sdk::frame_system::BlockWeight::<Runtime>::kill();
	polkadot_sdk::frame_system::BlockSize::<Runtime>::kill();
	let mut admitted = 0;
	while admitted < 100_000 {
		let Ok((_, next_len)) = CheckWeight::<Runtime>::do_validate(&info, len) else { break };
		if CheckWeight::<Runtime>::do_prepare(&info, len, next_len).is_err() {
			break;
		}
		crate::System::reclaim_weight(&info, &post).expect("reclaims");
		// Ends the extrinsic as the executive does (the next one's refund is its own).
		crate::System::note_applied_extrinsic(&Ok(post), info);
		admitted += 1;
	}
	admitted
}

#[test]
fn a_block_holds_over_a_thousand_proofs_that_settle_nothing() {
	use pallet_jobs::weights::WeightInfo;
	build_preset(&PresetId::from(polkadot_sdk::sp_genesis_builder::DEV_RUNTIME_PRESET))
		.execute_with(|| {
			let recorded = <Runtime as pallet_jobs::Config>::WeightInfo::record_proof(64);
			let refunded = proofs_in_a_block(Some(recorded));
			let charged_in_full = proofs_in_a_block(None);
			println!("proofs per block: {refunded} (charged in full: {charged_in_full})");
			assert!(refunded >= 1_000, "{refunded} proofs in a block");
			assert!(charged_in_full < refunded);
		});
}
