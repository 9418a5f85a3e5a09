//! # Provider registry
//!
//! A provider is an account that offers GPU time. It registers with a stake (held with
//! [`HoldReason::ProviderStake`]), declares its hardware, and binds its libp2p `PeerId` with a
//! signature of the libp2p ed25519 key over `(domain, genesis hash, account)`. Stake leaves
//! through an unbonding period during which it stays held and slashable, so a provider cannot
//! dodge a pending slash.
//!
//! Other pallets use the registry through the traits in [`traits`]: the jobs pallet checks
//! eligibility, counts job membership, records delivered and missed rounds and lost challenges,
//! and slashes; the off-chain worker's probe reports feed the health record.
//!
//! Layout: calls and storage here; bookkeeping of stake in `stake.rs`, of identity in
//! `identity.rs`, of health in `health.rs`; types in [`types`].
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

pub use pallet::*;

mod health;
mod identity;
mod stake;
pub mod traits;
pub mod types;
pub mod weights;

#[cfg(feature = "runtime-benchmarks")]
mod benchmarking;
#[cfg(test)]
mod mock;
#[cfg(test)]
mod tests;

#[cfg(feature = "runtime-benchmarks")]
pub use benchmarking::{register_for_benchmarks, sign_as_peer};
pub use types::*;
pub use weights::WeightInfo;

// `register_in_place_of` takes `register`'s seven arguments and the seat (the macro's
// generated constructors carry them all): bundling them would make the two calls differ.
#[allow(clippy::too_many_arguments)]
#[polkadot_sdk::polkadot_sdk_frame::pallet]
pub mod pallet {
	use super::*;
	use crate::identity::Declared;
	use alloc::vec::Vec;
	use grid_primitives::provider::{Capabilities, Endpoint, Multiaddrs, PeerIdBytes};
	use polkadot_sdk::polkadot_sdk_frame::{prelude::*, traits::fungible};

	/// Balance type of the configured currency.
	pub type BalanceOf<T> = <<T as Config>::Currency as fungible::Inspect<
		<T as frame_system::Config>::AccountId,
	>>::Balance;

	/// The stored record of a provider.
	pub type ProviderOf<T> = Provider<
		BalanceOf<T>,
		BlockNumberFor<T>,
		<T as Config>::MaxUnbondingChunks,
		<T as Config>::MaxJobsPerProvider,
	>;

	/// A provider as returned by the view functions.
	pub type ProviderViewOf<T> = ProviderView<
		BalanceOf<T>,
		BlockNumberFor<T>,
		<T as Config>::MaxUnbondingChunks,
		<T as Config>::MaxJobsPerProvider,
	>;

	/// Version 1: provider records hold job stake locks instead of a job count. No chain ran version 0 (the first layout), so there is no
	/// migration; later layout changes bump this and ship one.
	const STORAGE_VERSION: StorageVersion = StorageVersion::new(1);

	#[pallet::pallet]
	#[pallet::storage_version(STORAGE_VERSION)]
	pub struct Pallet<T>(_);

	#[pallet::config]
	pub trait Config: frame_system::Config {
		/// The overarching event type.
		#[allow(deprecated)]
		type RuntimeEvent: From<Event<Self>> + IsType<<Self as frame_system::Config>::RuntimeEvent>;

		/// The currency stake is held in.
		type Currency: fungible::Inspect<Self::AccountId>
			+ fungible::Mutate<Self::AccountId>
			+ fungible::MutateHold<Self::AccountId, Reason = Self::RuntimeHoldReason>;

		/// The runtime's hold reasons, which include this pallet's.
		type RuntimeHoldReason: From<HoldReason>;

		/// Smallest active stake a provider may have (zero is allowed only on the way out).
		#[pallet::constant]
		type MinStake: Get<BalanceOf<Self>>;

		/// Blocks between `unbond` and the funds becoming withdrawable.
		#[pallet::constant]
		type UnbondingPeriod: Get<BlockNumberFor<Self>>;

		/// Most unbonding chunks in flight per provider.
		#[pallet::constant]
		type MaxUnbondingChunks: Get<u32>;

		/// Most registered providers (bounds the view functions and `try_state`).
		#[pallet::constant]
		type MaxProviders: Get<u32>;

		/// Most jobs a provider takes part in or recently left (whose stake is still locked).
		#[pallet::constant]
		type MaxJobsPerProvider: Get<u32>;

		/// Blocks between two changes of a provider's probe endpoint, so a provider cannot
		/// walk validators' probes over many addresses.
		#[pallet::constant]
		type EndpointCooldown: Get<BlockNumberFor<Self>>;

		/// Weights of the calls.
		type WeightInfo: WeightInfo;
	}

	/// Why this pallet holds funds.
	#[pallet::composite_enum]
	pub enum HoldReason {
		/// A provider's stake, active or unbonding.
		ProviderStake,
	}

	/// Registered providers by account.
	#[pallet::storage]
	pub type Providers<T: Config> =
		CountedStorageMap<_, Blake2_128Concat, T::AccountId, ProviderOf<T>>;

	/// Which account a libp2p `PeerId` is bound to (one peer, one account).
	#[pallet::storage]
	pub type PeerOwners<T: Config> = StorageMap<_, Blake2_128Concat, PeerIdBytes, T::AccountId>;

	/// Health records of registered providers.
	#[pallet::storage]
	pub type HealthRecords<T: Config> =
		StorageMap<_, Blake2_128Concat, T::AccountId, Health<BlockNumberFor<T>>, ValueQuery>;

	/// When each provider last changed its probe endpoint with `update`.
	#[pallet::storage]
	pub type EndpointChangedAt<T: Config> =
		StorageMap<_, Blake2_128Concat, T::AccountId, BlockNumberFor<T>>;

	/// Whether probe endpoints may be loopback addresses: only on development and local test
	/// chains, whose providers and validators share one machine (set in genesis).
	#[pallet::storage]
	pub type LoopbackEndpoints<T> = StorageValue<_, bool, ValueQuery>;

	#[pallet::genesis_config]
	#[derive(DefaultNoBound)]
	pub struct GenesisConfig<T: Config> {
		/// See [`LoopbackEndpoints`].
		pub loopback_endpoints: bool,
		#[serde(skip)]
		pub _config: core::marker::PhantomData<T>,
	}

	#[pallet::genesis_build]
	impl<T: Config> BuildGenesisConfig for GenesisConfig<T> {
		fn build(&self) {
			LoopbackEndpoints::<T>::put(self.loopback_endpoints);
		}
	}

	#[pallet::event]
	#[pallet::generate_deposit(pub(super) fn deposit_event)]
	pub enum Event<T: Config> {
		/// A provider registered and its stake went on hold.
		Registered { who: T::AccountId, peer_id: PeerIdBytes, stake: BalanceOf<T> },
		/// A provider changed its capabilities, addresses or endpoint.
		Updated { who: T::AccountId },
		/// More stake went on hold.
		Bonded { who: T::AccountId, amount: BalanceOf<T> },
		/// Stake started unbonding; withdrawable from `unlock_at`.
		Unbonding { who: T::AccountId, amount: BalanceOf<T>, unlock_at: BlockNumberFor<T> },
		/// Unbonded stake was released from hold.
		Withdrawn { who: T::AccountId, amount: BalanceOf<T> },
		/// A provider left the registry.
		Deregistered { who: T::AccountId },
		/// An idle provider's seat in the full registry went to `by`, who staked more; its
		/// stake was released.
		Evicted { who: T::AccountId, by: T::AccountId },
		/// Stake was slashed; `to_recipients` went to reporters/buyers, the rest was burned.
		Slashed {
			who: T::AccountId,
			reason: SlashReason,
			amount: BalanceOf<T>,
			to_recipients: BalanceOf<T>,
		},
		/// A validator's probe of the provider's endpoint was recorded.
		Probed { who: T::AccountId, ok: bool, latency_ms: u32 },
		/// The provider's health record changed (rounds, challenges); `score` is the new score.
		HealthChanged { who: T::AccountId, score: Perbill },
	}

	#[pallet::error]
	pub enum Error<T> {
		/// The account is already a provider.
		AlreadyRegistered,
		/// The account is not a provider.
		NotRegistered,
		/// Active stake would be below the minimum (and not zero).
		StakeTooLow,
		/// The account cannot put that much on hold.
		InsufficientBalance,
		/// The libp2p key's signature over (genesis hash, account) does not verify.
		BadPeerSignature,
		/// That `PeerId` is bound to another account.
		PeerIdInUse,
		/// The registry is full (`register_in_place_of` can take an idle provider's seat).
		TooManyProviders,
		/// The registry has room: `register` instead of taking a seat.
		RegistryNotFull,
		/// The seat's provider is in a job, or its stake is still locked for one.
		SeatInUse,
		/// Taking a seat needs more stake than its provider holds.
		StakeBelowSeat,
		/// `device_count` is zero or the device name is empty.
		InvalidCapabilities,
		/// No listen multiaddr, or one that is not UTF-8 text starting with `/`.
		BadMultiaddr,
		/// The endpoint is not an `http://` or `https://` URL.
		BadEndpoint,
		/// The endpoint's host is not a public IP address (loopback only on development
		/// chains; DNS names are not accepted).
		EndpointNotPublic,
		/// The endpoint changed less than `EndpointCooldown` blocks ago.
		EndpointChangedRecently,
		/// `update` was called without anything to change.
		NothingToUpdate,
		/// Zero amount.
		ZeroAmount,
		/// Unbonding more than the active stake.
		InsufficientBond,
		/// Too many unbonding chunks in flight: withdraw first.
		TooManyUnbondingChunks,
		/// No unbonding chunk has unlocked yet.
		NothingToWithdraw,
		/// The provider is in a job: leave it first.
		InJob,
		/// That much active stake is locked for jobs (taken part in, or left less than a
		/// challenge window and voting period ago).
		StakeLocked,
		/// Active stake must be unbonded before deregistering.
		StillBonded,
		/// Unbonding stake must be withdrawn before deregistering.
		StillUnbonding,
	}

	#[pallet::call]
	impl<T: Config> Pallet<T> {
		/// Registers the caller as a provider, holding `stake`.
		///
		/// `peer_public` is the libp2p ed25519 public key; `peer_signature` its signature over
		/// [`grid_primitives::provider::peer_binding_payload`] of this chain's genesis hash and
		/// the caller.
		#[pallet::call_index(0)]
		#[pallet::weight(T::WeightInfo::register())]
		pub fn register(
			origin: OriginFor<T>,
			stake: BalanceOf<T>,
			capabilities: Capabilities,
			peer_public: [u8; 32],
			peer_signature: [u8; 64],
			multiaddrs: Multiaddrs,
			endpoint: Endpoint,
		) -> DispatchResult {
			let who = ensure_signed(origin)?;
			ensure!(Providers::<T>::count() < T::MaxProviders::get(), Error::<T>::TooManyProviders);
			let declared =
				Declared { capabilities, peer_public, peer_signature, multiaddrs, endpoint };
			Self::admit(who, stake, declared)
		}

		/// Registers the caller in a full registry in place of `seat`: a provider that has
		/// held no job's stake lock for a whole challenge window (none binds) and holds less
		/// than the caller's `stake`. `seat` leaves the registry with all its stake released.
		/// Locked capital can therefore fill the registry only for as long as it outbids every
		/// newcomer, or works. Arguments are [`Self::register`]'s.
		#[pallet::call_index(6)]
		#[pallet::weight(
			T::WeightInfo::register()
				.saturating_add(T::WeightInfo::deregister())
				.saturating_add(T::WeightInfo::withdraw_unbonded(T::MaxUnbondingChunks::get()))
		)]
		pub fn register_in_place_of(
			origin: OriginFor<T>,
			seat: T::AccountId,
			stake: BalanceOf<T>,
			capabilities: Capabilities,
			peer_public: [u8; 32],
			peer_signature: [u8; 64],
			multiaddrs: Multiaddrs,
			endpoint: Endpoint,
		) -> DispatchResult {
			let who = ensure_signed(origin)?;
			ensure!(Providers::<T>::count() >= T::MaxProviders::get(), Error::<T>::RegistryNotFull);
			ensure!(!Providers::<T>::contains_key(&who), Error::<T>::AlreadyRegistered);
			stake::evict::<T>(&seat, stake)?;
			Self::deposit_event(Event::Evicted { who: seat, by: who.clone() });
			let declared =
				Declared { capabilities, peer_public, peer_signature, multiaddrs, endpoint };
			Self::admit(who, stake, declared)
		}

		/// Changes declared capabilities, listen addresses and/or probe endpoint. Capabilities
		/// cap what a provider is paid for, so they are frozen while it takes part in a job.
		#[pallet::call_index(1)]
		#[pallet::weight(T::WeightInfo::update())]
		pub fn update(
			origin: OriginFor<T>,
			capabilities: Option<Capabilities>,
			multiaddrs: Option<Multiaddrs>,
			endpoint: Option<Endpoint>,
		) -> DispatchResult {
			let who = ensure_signed(origin)?;
			ensure!(
				capabilities.is_some() || multiaddrs.is_some() || endpoint.is_some(),
				Error::<T>::NothingToUpdate
			);
			Providers::<T>::try_mutate(&who, |maybe| -> DispatchResult {
				let provider = maybe.as_mut().ok_or(Error::<T>::NotRegistered)?;
				if let Some(capabilities) = capabilities {
					ensure!(!provider.in_jobs(), Error::<T>::InJob);
					identity::validate_capabilities::<T>(&capabilities)?;
					provider.capabilities = capabilities;
				}
				if endpoint.as_ref().is_some_and(|e| *e != provider.endpoint) {
					identity::note_endpoint_change::<T>(&who)?;
				}
				let multiaddrs = multiaddrs.unwrap_or_else(|| provider.multiaddrs.clone());
				let endpoint = endpoint.unwrap_or_else(|| provider.endpoint.clone());
				identity::validate_addresses::<T>(&multiaddrs, &endpoint)?;
				provider.multiaddrs = multiaddrs;
				provider.endpoint = endpoint;
				Ok(())
			})?;
			Self::deposit_event(Event::Updated { who });
			Ok(())
		}

		/// Puts `amount` more on hold as active stake.
		#[pallet::call_index(2)]
		#[pallet::weight(T::WeightInfo::bond_more())]
		pub fn bond_more(origin: OriginFor<T>, amount: BalanceOf<T>) -> DispatchResult {
			let who = ensure_signed(origin)?;
			stake::bond_more::<T>(&who, amount)?;
			Self::deposit_event(Event::Bonded { who, amount });
			Ok(())
		}

		/// Starts unbonding `amount` of active stake. What remains must be zero or at least
		/// the minimum, and cover the stake locked for jobs; a provider in a job must keep
		/// the minimum.
		#[pallet::call_index(3)]
		#[pallet::weight(T::WeightInfo::unbond())]
		pub fn unbond(origin: OriginFor<T>, amount: BalanceOf<T>) -> DispatchResult {
			let who = ensure_signed(origin)?;
			let unlock_at = stake::unbond::<T>(&who, amount)?;
			Self::deposit_event(Event::Unbonding { who, amount, unlock_at });
			Ok(())
		}

		/// Releases every unbonding chunk whose period has passed.
		#[pallet::call_index(4)]
		#[pallet::weight(T::WeightInfo::withdraw_unbonded(T::MaxUnbondingChunks::get()))]
		pub fn withdraw_unbonded(origin: OriginFor<T>) -> DispatchResult {
			let who = ensure_signed(origin)?;
			let amount = stake::withdraw_unbonded::<T>(&who)?;
			Self::deposit_event(Event::Withdrawn { who, amount });
			Ok(())
		}

		/// Leaves the registry. Only when in no job and with all stake unbonded and withdrawn.
		#[pallet::call_index(5)]
		#[pallet::weight(T::WeightInfo::deregister())]
		pub fn deregister(origin: OriginFor<T>) -> DispatchResult {
			let who = ensure_signed(origin)?;
			let provider = Providers::<T>::get(&who).ok_or(Error::<T>::NotRegistered)?;
			ensure!(!provider.in_jobs(), Error::<T>::InJob);
			ensure!(provider.stake.is_zero(), Error::<T>::StillBonded);
			ensure!(provider.unbonding.is_empty(), Error::<T>::StillUnbonding);
			Self::remove_record(&who, &provider);
			Self::deposit_event(Event::Deregistered { who });
			Ok(())
		}
	}

	impl<T: Config> Pallet<T> {
		/// Registers `who` with `stake` on hold, once its identity checks out.
		fn admit(who: T::AccountId, stake: BalanceOf<T>, declared: Declared) -> DispatchResult {
			ensure!(!Providers::<T>::contains_key(&who), Error::<T>::AlreadyRegistered);
			ensure!(stake >= T::MinStake::get(), Error::<T>::StakeTooLow);
			let Declared { capabilities, peer_public, peer_signature, multiaddrs, endpoint } =
				declared;
			identity::validate_capabilities::<T>(&capabilities)?;
			identity::validate_addresses::<T>(&multiaddrs, &endpoint)?;
			let peer_id = identity::verify_peer_binding::<T>(&who, &peer_public, &peer_signature)?;
			ensure!(!PeerOwners::<T>::contains_key(peer_id), Error::<T>::PeerIdInUse);

			stake::hold::<T>(&who, stake)?;
			let provider = Provider {
				stake,
				unbonding: BoundedVec::new(),
				capabilities,
				peer_id,
				multiaddrs,
				endpoint,
				registered_at: frame_system::Pallet::<T>::block_number(),
				jobs: BoundedVec::new(),
			};
			Providers::<T>::insert(&who, provider);
			PeerOwners::<T>::insert(peer_id, &who);
			HealthRecords::<T>::insert(&who, Health::default());
			Self::deposit_event(Event::Registered { who, peer_id, stake });
			Ok(())
		}

		/// Removes `who`'s records (its holds are released by the caller).
		pub(crate) fn remove_record(who: &T::AccountId, provider: &ProviderOf<T>) {
			Providers::<T>::remove(who);
			PeerOwners::<T>::remove(provider.peer_id);
			HealthRecords::<T>::remove(who);
			EndpointChangedAt::<T>::remove(who);
		}
	}

	#[pallet::view_functions]
	impl<T: Config> Pallet<T> {
		/// One provider with its health and score.
		pub fn provider(who: T::AccountId) -> Option<ProviderViewOf<T>> {
			Self::view_of(&who)
		}

		/// Every provider with its health and score (at most `MaxProviders`).
		pub fn providers() -> Vec<(T::AccountId, ProviderViewOf<T>)> {
			Providers::<T>::iter_keys()
				.take(T::MaxProviders::get() as usize)
				.filter_map(|who| Self::view_of(&who).map(|view| (who, view)))
				.collect()
		}
	}

	#[pallet::hooks]
	impl<T: Config> Hooks<BlockNumberFor<T>> for Pallet<T> {
		#[cfg(feature = "try-runtime")]
		fn try_state(
			_n: BlockNumberFor<T>,
		) -> Result<(), polkadot_sdk::polkadot_sdk_frame::deps::sp_runtime::TryRuntimeError> {
			Self::do_try_state()
		}
	}

	impl<T: Config> Pallet<T> {
		pub(crate) fn view_of(who: &T::AccountId) -> Option<ProviderViewOf<T>> {
			let provider = Providers::<T>::get(who)?;
			let health = HealthRecords::<T>::get(who);
			let score = health.score();
			let locked = provider.locked(frame_system::Pallet::<T>::block_number());
			Some(ProviderView { provider, health, score, locked })
		}

		/// Invariants: held stake equals recorded stake for every provider; peer bindings and
		/// health records exist exactly for registered providers.
		pub fn do_try_state(
		) -> Result<(), polkadot_sdk::polkadot_sdk_frame::deps::sp_runtime::TryRuntimeError> {
			use fungible::InspectHold;
			let reason = HoldReason::ProviderStake.into();
			let mut count = 0u32;
			for (who, provider) in Providers::<T>::iter() {
				count += 1;
				ensure!(
					T::Currency::balance_on_hold(&reason, &who) == provider.total_held(),
					"held stake differs from recorded stake"
				);
				ensure!(
					PeerOwners::<T>::get(provider.peer_id).as_ref() == Some(&who),
					"provider's PeerId is not bound to it"
				);
				// Slashed below the minimum while in a job, the rest stays active (and locked)
				// until the jobs pallet removes it from its jobs.
				ensure!(
					provider.stake.is_zero()
						|| provider.stake >= T::MinStake::get()
						|| provider.in_jobs(),
					"active stake below the minimum"
				);
				let mut jobs: Vec<_> = provider.jobs.iter().map(|lock| lock.job).collect();
				jobs.sort_unstable();
				jobs.dedup();
				ensure!(jobs.len() == provider.jobs.len(), "two stake locks for one job");
			}
			ensure!(count == Providers::<T>::count(), "provider counter is wrong");
			ensure!(
				PeerOwners::<T>::iter().all(|(_, who)| Providers::<T>::contains_key(&who)),
				"PeerId bound to an unregistered account"
			);
			ensure!(
				HealthRecords::<T>::iter_keys().all(|who| Providers::<T>::contains_key(&who)),
				"health record of an unregistered account"
			);
			ensure!(
				EndpointChangedAt::<T>::iter_keys().all(|who| Providers::<T>::contains_key(&who)),
				"endpoint change of an unregistered account"
			);
			Ok(())
		}
	}
}
