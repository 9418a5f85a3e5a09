//! The crate's error type: each variant says what was being done and what went wrong.

use std::path::PathBuf;

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while loading data, training, compressing or checkpointing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
	/// A tensor operation failed (shape mismatch, device error, ...).
	#[error("tensor operation failed: {0}")]
	Candle(#[from] candle_core::Error),
	/// Reading or writing a file failed.
	#[error("{action} {path}: {source}")]
	Io {
		/// What was being done ("reading", "writing", ...).
		action: &'static str,
		/// The file.
		path: PathBuf,
		/// The underlying error.
		source: std::io::Error,
	},
	/// A data file's content hash is not the expected one.
	#[error("{path}: content hash is {actual}, expected {expected}")]
	HashMismatch {
		/// The file.
		path: PathBuf,
		/// Hex of the expected BLAKE2b-256.
		expected: String,
		/// Hex of the hash of the bytes read.
		actual: String,
	},
	/// A data file is malformed or truncated.
	#[error("{path}: {reason}")]
	BadData {
		/// The file.
		path: PathBuf,
		/// What is wrong with it.
		reason: String,
	},
	/// Encoded update bytes are malformed or truncated.
	#[error("malformed compressed update: {0}")]
	Decode(String),
	/// Two parameter sets (or a vector and a model) do not have the same layout.
	#[error("parameter layout mismatch: {0}")]
	Layout(String),
	/// A checkpoint is unreadable or does not match the model.
	#[error("checkpoint {path}: {reason}")]
	Checkpoint {
		/// The checkpoint file.
		path: PathBuf,
		/// What is wrong with it.
		reason: String,
	},
	/// A job's configuration cannot be built or trained (bad sizes, unsupported combination).
	#[error("invalid configuration: {0}")]
	Config(String),
	/// Aggregation was asked to combine nothing, or every update was rejected.
	#[error("aggregation failed: {0}")]
	Aggregate(String),
	/// A content-addressed dataset cannot be published, fetched or opened.
	#[error("dataset {dataset}: {reason}")]
	Dataset {
		/// Its reference (the manifest's hash, hex) or the path being published.
		dataset: String,
		/// What is wrong.
		reason: String,
	},
	/// A round's training could not run or was abandoned (its thread failed, or the
	/// exchange it overlapped decided no state to catch up with).
	#[error("training: {0}")]
	Training(String),
	/// The network could not be set up (bad address, transport failure).
	#[error("network: {0}")]
	Network(String),
	/// A second, different commitment for a round this trainer signed one for already
	/// (publishing it would be equivocation).
	#[error("round {round}: a different commitment was signed for it already")]
	AlreadySigned {
		/// The round.
		round: u32,
	},
}

impl Error {
	/// An I/O error on `path` while doing `action`.
	pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
		Error::Io { action, path: path.into(), source }
	}

	/// A malformed data file.
	pub fn bad_data(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
		Error::BadData { path: path.into(), reason: reason.into() }
	}

	/// What is wrong with the dataset `hash` names.
	pub fn dataset(hash: &polkadot_sdk::sp_core::H256, reason: impl Into<String>) -> Self {
		Error::Dataset { dataset: format!("{hash:?}"), reason: reason.into() }
	}
}
