//! The trainer's and the buyer CLI's link to `grid-node`: a typed subxt client generated from
//! the metadata kept in the repository (`metadata/grid.scale`, checked against the runtime by
//! `tests/tests/metadata.rs`), the provider's keys, and the coordinator that drives a
//! trainer's rounds from the chain and submits its proofs.
//!
//! Grid's own SCALE types (job specs, proofs, commitments, capabilities, verdicts) are used as they are, wrapped in
//! subxt's `Static`, so what the trainer signs is exactly what the pallet decodes. They are
//! substituted with the runtime's concrete parameters (u128 balances, u32 block numbers,
//! 32-byte accounts): generic substitutes would need codec bounds the generated code lacks.

pub mod client;
pub mod follower;
pub mod keys;
pub mod left_buyers;

pub use client::{Chain, JobView, ProviderView};

/// The chain's API, generated at compile time from `metadata/grid.scale`.
#[subxt::subxt(
	runtime_metadata_path = "../metadata/grid.scale",
	substitute_type(
		path = "grid_primitives::job::JobSpec<A, B>",
		with = "::subxt::utils::Static<::grid_primitives::job::JobSpec<::core::primitive::u128, ::core::primitive::u32>>"
	),
	substitute_type(
		path = "grid_primitives::job::Admission<A, B>",
		with = "::subxt::utils::Static<::grid_primitives::job::Admission<::subxt::utils::AccountId32, ::core::primitive::u32>>"
	),
	substitute_type(
		path = "grid_primitives::job::SignedProof<A>",
		with = "::subxt::utils::Static<::grid_primitives::job::SignedProof<::subxt::utils::AccountId32>>"
	),
	substitute_type(
		path = "grid_primitives::commitment::SignedCommitmentBytes",
		with = "::subxt::utils::Static<::grid_primitives::commitment::SignedCommitmentBytes>"
	),
	substitute_type(
		path = "grid_primitives::provider::Capabilities",
		with = "::subxt::utils::Static<::grid_primitives::provider::Capabilities>"
	),
	substitute_type(
		path = "grid_primitives::work::Verdict",
		with = "::subxt::utils::Static<::grid_primitives::work::Verdict>"
	)
)]
pub mod api {}

/// Grid's chain is configured like Polkadot's: `MultiAddress<AccountId32, ()>`, sr25519
/// multi-signatures, u32 block numbers, BLAKE2 hashing.
pub type GridConfig = subxt::PolkadotConfig;
/// An account on the chain.
pub type AccountId = subxt::utils::AccountId32;
/// A signed contribution proof as the chain stores it.
pub type SignedProof = grid_primitives::job::SignedProof<AccountId>;

/// Why a chain interaction failed.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
	/// The node could not be reached.
	#[error("cannot connect to {url}: {reason}")]
	Connect {
		/// The node's URL.
		url: String,
		/// What went wrong.
		reason: String,
	},
	/// A request to the node failed (the connection dropped, or the node answered with an
	/// error).
	#[error("{what}: {reason}")]
	Rpc {
		/// What was being done.
		what: &'static str,
		/// What went wrong.
		reason: String,
	},
	/// A transaction was included but failed, with the runtime's error.
	#[error("{call} failed on chain: {error}")]
	Dispatch {
		/// The call.
		call: &'static str,
		/// The decoded dispatch error.
		error: String,
	},
	/// A key or key file is unusable.
	#[error("key: {0}")]
	Key(String),
	/// A job spec, or a job on chain, is not one this trainer can work with.
	#[error("job spec: {0}")]
	Spec(String),
	/// A provider file is unreadable or invalid.
	#[error("provider file {0}")]
	Config(String),
	/// Something expected on chain is not there.
	#[error("{0}")]
	Missing(String),
	/// The configured training device cannot be used.
	#[error("device: {0}")]
	Device(String),
}

/// Result of chain interactions.
pub type Result<T, E = ChainError> = std::result::Result<T, E>;

impl ChainError {
	/// An RPC failure while doing `what`.
	pub fn rpc(what: &'static str, error: impl std::fmt::Display) -> Self {
		ChainError::Rpc { what, reason: error.to_string() }
	}
}
