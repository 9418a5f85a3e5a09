//! Test runtime: System, Balances and the provider registry, with `u64` accounts.

use crate as pallet_providers;
use grid_primitives::provider::{
	peer_binding_payload, BoundedBytes, Capabilities, DeviceKind, Endpoint, Multiaddrs,
};
use polkadot_sdk::{
	pallet_balances,
	polkadot_sdk_frame::{
		deps::{
			frame_support::{self, derive_impl, parameter_types, traits::VariantCountOf},
			sp_core::{ed25519, Pair},
			sp_io,
			sp_runtime::BuildStorage,
		},
		prelude::*,
	},
	sp_keystore::{testing::MemoryKeystore, KeystoreExt},
};

pub type AccountId = u64;
pub type Balance = u128;
type Block = frame_system::mocking::MockBlock<Test>;

pub const ALICE: AccountId = 1;
pub const BOB: AccountId = 2;
pub const CHARLIE: AccountId = 3;
/// An account with exactly the minimum stake, which it cannot hold and still exist.
pub const POOR: AccountId = 9;
pub const ENDOWMENT: Balance = 10_000;
pub const MIN_STAKE: Balance = 100;
pub const UNBONDING: u64 = 10;
pub const MAX_CHUNKS: u32 = 3;
pub const MAX_PROVIDERS: u32 = 4;
pub const MAX_JOBS: u32 = 3;
pub const ENDPOINT_COOLDOWN: u64 = 5;

frame_support::construct_runtime!(
	pub enum Test {
		System: frame_system,
		Balances: pallet_balances,
		Providers: pallet_providers,
	}
);

#[derive_impl(frame_system::config_preludes::TestDefaultConfig)]
impl frame_system::Config for Test {
	type Block = Block;
	type AccountData = pallet_balances::AccountData<Balance>;
}

#[derive_impl(pallet_balances::config_preludes::TestDefaultConfig)]
impl pallet_balances::Config for Test {
	type Balance = Balance;
	type AccountStore = System;
	type RuntimeHoldReason = RuntimeHoldReason;
	type MaxFreezes = VariantCountOf<RuntimeFreezeReason>;
}

parameter_types! {
	pub const MinStake: Balance = MIN_STAKE;
	pub const UnbondingPeriod: u64 = UNBONDING;
}

impl pallet_providers::Config for Test {
	type RuntimeEvent = RuntimeEvent;
	type Currency = Balances;
	type RuntimeHoldReason = RuntimeHoldReason;
	type MinStake = MinStake;
	type UnbondingPeriod = UnbondingPeriod;
	type MaxUnbondingChunks = ConstU32<MAX_CHUNKS>;
	type MaxProviders = ConstU32<MAX_PROVIDERS>;
	type MaxJobsPerProvider = ConstU32<MAX_JOBS>;
	type EndpointCooldown = polkadot_sdk::polkadot_sdk_frame::traits::ConstU64<ENDPOINT_COOLDOWN>;
	type WeightInfo = ();
}

/// Alice, Bob, Charlie and accounts 4..=8 funded; `POOR` has only `MIN_STAKE`.
pub fn new_test_ext() -> sp_io::TestExternalities {
	let mut storage = frame_system::GenesisConfig::<Test>::default().build_storage().unwrap();
	let mut balances: Vec<_> = (1..=8).map(|who| (who, ENDOWMENT)).collect();
	balances.push((POOR, MIN_STAKE));
	pallet_balances::GenesisConfig::<Test> { balances, ..Default::default() }
		.assimilate_storage(&mut storage)
		.unwrap();
	// The tests' providers run on this machine, like on a development chain.
	pallet_providers::GenesisConfig::<Test> { loopback_endpoints: true, ..Default::default() }
		.assimilate_storage(&mut storage)
		.unwrap();
	let mut ext = sp_io::TestExternalities::new(storage);
	// The benchmarks generate and sign with libp2p-style ed25519 keys through the keystore.
	ext.register_extension(KeystoreExt::new(MemoryKeystore::new()));
	ext.execute_with(|| System::set_block_number(1));
	ext
}

/// The libp2p key of test account `who` (deterministic).
pub fn peer_key(who: AccountId) -> ed25519::Pair {
	ed25519::Pair::from_seed(&[who as u8; 32])
}

/// `(public, signature)` binding `key` to `who` on the test chain.
pub fn peer_proof(key: &ed25519::Pair, who: AccountId) -> ([u8; 32], [u8; 64]) {
	let genesis = System::block_hash(0);
	let signature = key.sign(&peer_binding_payload(&genesis, &who));
	(key.public().0, signature.0)
}

pub fn gpu() -> Capabilities {
	Capabilities {
		device: DeviceKind::Cuda,
		device_name: BoundedBytes::truncate_from(b"NVIDIA H100".to_vec()),
		device_count: 1,
		memory_mib: 81_559,
		tflops_milli: 400_000,
		bandwidth_mbps: 1_000,
		region: BoundedBytes::truncate_from(b"eu-west".to_vec()),
	}
}

pub fn addrs(port: u16) -> Multiaddrs {
	let addr = format!("/ip4/127.0.0.1/tcp/{port}").into_bytes();
	Multiaddrs::truncate_from(vec![BoundedBytes::truncate_from(addr)])
}

pub fn endpoint() -> Endpoint {
	BoundedBytes::truncate_from(b"http://127.0.0.1:9000/health".to_vec())
}

/// Registers `who` with its own peer key and `stake`.
pub fn register(who: AccountId, stake: Balance) -> DispatchResult {
	let (public, signature) = peer_proof(&peer_key(who), who);
	Providers::register(
		RuntimeOrigin::signed(who),
		stake,
		gpu(),
		public,
		signature,
		addrs(30_000 + who as u16),
		endpoint(),
	)
}

pub fn run_to_block(n: u64) {
	System::run_to_block::<AllPalletsWithSystem>(n);
}

/// Events of this pallet since the last call, oldest first.
pub fn provider_events() -> Vec<pallet_providers::Event<Test>> {
	let events = System::events()
		.into_iter()
		.filter_map(|record| match record.event {
			RuntimeEvent::Providers(event) => Some(event),
			_ => None,
		})
		.collect();
	System::reset_events();
	events
}
