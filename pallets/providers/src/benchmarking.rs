//! Benchmarks of every call in its worst case. `cargo test --features runtime-benchmarks`
//! runs them against the mock runtime.

use super::*;
use alloc::vec;
use grid_primitives::provider::{
	peer_binding_payload, BoundedBytes, Capabilities, DeviceKind, Endpoint, MaxAddressLen,
	MaxDeviceNameLen, MaxMultiaddrs, MaxRegionLen, Multiaddrs,
};
use polkadot_sdk::polkadot_sdk_frame::{
	benchmarking::prelude::*,
	deps::{
		sp_core::{crypto::KeyTypeId, ed25519},
		sp_io,
	},
	traits::fungible::Mutate,
};

const KEY_TYPE: KeyTypeId = KeyTypeId(*b"p2p_");

fn full_bytes<N: Get<u32>>(fill: u8) -> BoundedBytes<N> {
	BoundedBytes::truncate_from(vec![fill; N::get() as usize])
}

/// The largest capabilities record.
fn capabilities() -> Capabilities {
	Capabilities {
		device: DeviceKind::Cuda,
		device_name: full_bytes::<MaxDeviceNameLen>(b'G'),
		device_count: 8,
		memory_mib: 81_920,
		tflops_milli: 8_000_000,
		bandwidth_mbps: 100_000,
		region: full_bytes::<MaxRegionLen>(b'r'),
	}
}

/// The most multiaddrs, each as long as allowed.
fn multiaddrs() -> Multiaddrs {
	let mut addr = vec![b'1'; <MaxAddressLen as Get<u32>>::get() as usize];
	addr[0] = b'/';
	Multiaddrs::truncate_from(vec![
		BoundedBytes::truncate_from(addr);
		<MaxMultiaddrs as Get<u32>>::get() as usize
	])
}

fn endpoint() -> Endpoint {
	endpoint_with(b'h')
}

/// The longest endpoint: a public address with a long path of `fill`.
fn endpoint_with(fill: u8) -> Endpoint {
	let mut url = b"http://1.2.3.4/".to_vec();
	url.resize(<MaxAddressLen as Get<u32>>::get() as usize, fill);
	BoundedBytes::truncate_from(url)
}

fn funded<T: Config>(index: u32) -> T::AccountId {
	let who: T::AccountId = account("provider", index, 0);
	fund::<T>(&who);
	who
}

fn fund<T: Config>(who: &T::AccountId) {
	let amount = T::MinStake::get().saturating_mul(1_000u32.into());
	T::Currency::set_balance(who, amount);
}

/// A fresh libp2p-style key in the keystore and its binding signature for `who`.
fn peer_proof<T: Config>(who: &T::AccountId) -> ([u8; 32], [u8; 64]) {
	let public = sp_io::crypto::ed25519_generate(KEY_TYPE, None);
	let genesis = frame_system::Pallet::<T>::block_hash(BlockNumberFor::<T>::zero());
	let signature =
		sp_io::crypto::ed25519_sign(KEY_TYPE, &public, &peer_binding_payload(&genesis, who))
			.expect("the key was just generated in the keystore");
	(public.0, signature.0)
}

/// `who`'s signature with the libp2p key it registered by [`register_for_benchmarks`] (in the
/// keystore): the key's public half and the signature over `payload`. For other pallets'
/// benchmarks of what providers sign with that key.
pub fn sign_as_peer<T: Config>(who: &T::AccountId, payload: &[u8]) -> ([u8; 32], [u8; 64]) {
	let peer = Providers::<T>::get(who).expect("registered").peer_id;
	let mut public = [0u8; 32];
	public.copy_from_slice(&peer[peer.len() - 32..]);
	let public = ed25519::Public::from_raw(public);
	let signature = sp_io::crypto::ed25519_sign(KEY_TYPE, &public, payload)
		.expect("the key was generated in the keystore at registration");
	(public.0, signature.0)
}

fn registered<T: Config>(index: u32) -> T::AccountId {
	let who: T::AccountId = account("provider", index, 0);
	register_for_benchmarks::<T>(&who);
	who
}

/// Funds `who` and registers it with ten times the minimum stake, the largest capabilities
/// record and a fresh libp2p key from the keystore. For other pallets' benchmarks that need
/// eligible providers.
pub fn register_for_benchmarks<T: Config>(who: &T::AccountId) {
	fund::<T>(who);
	let (public, signature) = peer_proof::<T>(who);
	Pallet::<T>::register(
		RawOrigin::Signed(who.clone()).into(),
		T::MinStake::get().saturating_mul(10u32.into()),
		capabilities(),
		public,
		signature,
		multiaddrs(),
		endpoint(),
	)
	.expect("registration of a funded account succeeds");
}

#[benchmarks]
mod benchmarks {
	use super::*;

	#[benchmark]
	fn register() {
		let who = funded::<T>(0);
		let (public, signature) = peer_proof::<T>(&who);
		let stake = T::MinStake::get();
		#[extrinsic_call]
		_(
			RawOrigin::Signed(who.clone()),
			stake,
			capabilities(),
			public,
			signature,
			multiaddrs(),
			endpoint(),
		);
		assert!(Providers::<T>::contains_key(&who));
	}

	#[benchmark]
	fn update() {
		let who = registered::<T>(0);
		#[extrinsic_call]
		// A new endpoint: its change is recorded too.
		_(
			RawOrigin::Signed(who),
			Some(capabilities()),
			Some(multiaddrs()),
			Some(endpoint_with(b'g')),
		);
	}

	#[benchmark]
	fn bond_more() {
		let who = registered::<T>(0);
		#[extrinsic_call]
		_(RawOrigin::Signed(who), T::MinStake::get());
	}

	#[benchmark]
	fn unbond() {
		let who = registered::<T>(0);
		#[extrinsic_call]
		_(RawOrigin::Signed(who), T::MinStake::get());
	}

	#[benchmark]
	fn withdraw_unbonded(c: Linear<1, { T::MaxUnbondingChunks::get() }>) {
		let who = registered::<T>(0);
		for _ in 0..c {
			Pallet::<T>::unbond(RawOrigin::Signed(who.clone()).into(), 1u32.into())
				.expect("unbonding a little keeps the minimum");
			let next = frame_system::Pallet::<T>::block_number() + 1u32.into();
			frame_system::Pallet::<T>::set_block_number(next);
		}
		let later = frame_system::Pallet::<T>::block_number() + T::UnbondingPeriod::get();
		frame_system::Pallet::<T>::set_block_number(later);
		#[extrinsic_call]
		_(RawOrigin::Signed(who.clone()));
		assert!(Providers::<T>::get(&who).expect("registered").unbonding.is_empty());
	}

	#[benchmark]
	fn deregister() {
		let who = registered::<T>(0);
		let stake = Providers::<T>::get(&who).expect("registered").stake;
		Pallet::<T>::unbond(RawOrigin::Signed(who.clone()).into(), stake).expect("unbond all");
		let later = frame_system::Pallet::<T>::block_number() + T::UnbondingPeriod::get();
		frame_system::Pallet::<T>::set_block_number(later);
		Pallet::<T>::withdraw_unbonded(RawOrigin::Signed(who.clone()).into()).expect("withdraw");
		#[extrinsic_call]
		_(RawOrigin::Signed(who.clone()));
		assert!(!Providers::<T>::contains_key(&who));
	}

	impl_benchmark_test_suite!(Pallet, crate::mock::new_test_ext(), crate::mock::Test);
}
