//! Genesis presets: `development` (one validator) and `local_testnet` (four validators).
//!
//! Four validators in `local_testnet` so GRANDPA (which needs more than 2/3 of the voters)
//! keeps finalizing with any one of them down.

use alloc::{vec, vec::Vec};
use polkadot_sdk::{
	pallet_grandpa::AuthorityId as GrandpaId,
	sp_consensus_aura::sr25519::AuthorityId as AuraId,
	sp_genesis_builder::{self, PresetId},
	sp_keyring::{Ed25519Keyring, Sr25519Keyring},
};
use serde_json::Value;

use crate::{
	configs::JobFeeCollector, AccountId, Balance, BalancesConfig, RuntimeGenesisConfig, SudoConfig,
	EXISTENTIAL_DEPOSIT,
};

/// What each dev account starts with: plenty for staking and job escrow in tests.
pub const DEV_ENDOWMENT: Balance = 1u128 << 60;

/// One validator's session keys in genesis.
struct Validator {
	aura: AuraId,
	grandpa: GrandpaId,
}

impl Validator {
	/// The well-known dev validator keys derived from `//Name` (sr25519 for Aura, ed25519 for
	/// GRANDPA), matching what `grid-node key insert --suri //Name` puts in a keystore.
	fn dev(sr: Sr25519Keyring, ed: Ed25519Keyring) -> Self {
		Self { aura: sr.public().into(), grandpa: ed.public().into() }
	}
}

fn genesis(validators: Vec<Validator>, endowed: Vec<AccountId>, root: AccountId) -> Value {
	let config = RuntimeGenesisConfig {
		balances: BalancesConfig {
			balances: endowed
				.into_iter()
				.map(|account| (account, DEV_ENDOWMENT))
				// The fee collector exists from genesis so any fee can be paid to it.
				.chain([(JobFeeCollector::get(), EXISTENTIAL_DEPOSIT)])
				.collect(),
			..Default::default()
		},
		aura: polkadot_sdk::pallet_aura::GenesisConfig {
			authorities: validators.iter().map(|v| v.aura.clone()).collect(),
		},
		grandpa: polkadot_sdk::pallet_grandpa::GenesisConfig {
			authorities: validators.iter().map(|v| (v.grandpa.clone(), 1)).collect(),
			..Default::default()
		},
		sudo: SudoConfig { key: Some(root) },
		// Both presets run every provider and validator on one machine: their probe endpoints
		// are loopback addresses, which a public chain's genesis must not allow.
		providers: pallet_providers::GenesisConfig {
			loopback_endpoints: true,
			..Default::default()
		},
		..Default::default()
	};
	serde_json::to_value(config).expect("a genesis config always serializes to JSON")
}

fn dev_accounts() -> Vec<AccountId> {
	Sr25519Keyring::well_known().map(|k| k.to_account_id()).collect()
}

/// One validator (Alice); every dev account funded; Alice is sudo.
pub fn development_config_genesis() -> Value {
	genesis(
		vec![Validator::dev(Sr25519Keyring::Alice, Ed25519Keyring::Alice)],
		dev_accounts(),
		Sr25519Keyring::Alice.to_account_id(),
	)
}

/// Four validators (Alice, Bob, Charlie, Dave); every dev account funded; Alice is sudo.
pub fn local_testnet_genesis() -> Value {
	genesis(
		vec![
			Validator::dev(Sr25519Keyring::Alice, Ed25519Keyring::Alice),
			Validator::dev(Sr25519Keyring::Bob, Ed25519Keyring::Bob),
			Validator::dev(Sr25519Keyring::Charlie, Ed25519Keyring::Charlie),
			Validator::dev(Sr25519Keyring::Dave, Ed25519Keyring::Dave),
		],
		dev_accounts(),
		Sr25519Keyring::Alice.to_account_id(),
	)
}

/// The JSON of the preset named `id`, or `None` for an unknown name.
pub fn get_preset(id: &PresetId) -> Option<Vec<u8>> {
	let patch = match id.as_ref() {
		sp_genesis_builder::DEV_RUNTIME_PRESET => development_config_genesis(),
		sp_genesis_builder::LOCAL_TESTNET_RUNTIME_PRESET => local_testnet_genesis(),
		_ => return None,
	};
	Some(
		serde_json::to_string(&patch)
			.expect("a JSON value always serializes to a string")
			.into_bytes(),
	)
}

/// Every preset this runtime offers.
pub fn preset_names() -> Vec<PresetId> {
	vec![
		PresetId::from(sp_genesis_builder::DEV_RUNTIME_PRESET),
		PresetId::from(sp_genesis_builder::LOCAL_TESTNET_RUNTIME_PRESET),
	]
}
