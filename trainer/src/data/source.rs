//! Where a dataset comes from, as a job's `DatasetRef::uri` says, and bringing it into the
//! store: `grid:<name>` (shipped, already held), libp2p addresses of holders
//! (`/ip4/…/tcp/…/p2p/<id>`, several separated by spaces), `file://<path>` (a file or flat
//! directory on this machine) or `http(s)://<url>` (one file; https trusts the system's certificate store, or the
//! file `SSL_CERT_FILE` names). Whatever the source, what lands in
//! the store is checked against the reference: the manifest's hash for peers; for files and
//! URLs, the manifest built from the bytes must hash to it.

use std::path::{Path, PathBuf};

use grid_primitives::{
	datasets::ShippedDataset,
	job::DatasetRef,
	manifest::{DatasetFormat, DatasetManifest},
};
use libp2p::Multiaddr;
use polkadot_sdk::sp_core::H256;

use super::store::{hash_files, DataStore, Located};
use crate::error::{Error, Result};

/// A dataset's source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
	/// A dataset every trainer ships.
	Shipped(&'static ShippedDataset),
	/// Holders on the libp2p network.
	Peers(Vec<Multiaddr>),
	/// Files on this machine.
	File(PathBuf),
	/// One file over HTTP.
	Http(String),
}

pub(crate) fn refuse(dataset: &DatasetRef, reason: impl Into<String>) -> Error {
	Error::dataset(&dataset.content_hash, reason)
}

/// The source `dataset`'s URI names, or why it names none this trainer reads.
pub fn source(dataset: &DatasetRef) -> Result<Source> {
	let uri = std::str::from_utf8(&dataset.uri)
		.map_err(|_| refuse(dataset, "the dataset URI is not UTF-8"))?
		.trim();
	if let Some(name) = uri.strip_prefix("grid:") {
		let shipped = ShippedDataset::at(uri.as_bytes())
			.ok_or_else(|| refuse(dataset, format!("no shipped dataset is called {name:?}")))?;
		if dataset.content_hash.0 != shipped.content_hash {
			return Err(refuse(dataset, format!("the hash is not shipped {name}'s")));
		}
		return Ok(Source::Shipped(shipped));
	}
	if let Some(path) = uri.strip_prefix("file://") {
		if path.is_empty() {
			return Err(refuse(dataset, "file:// needs a path: file:///path/to/data"));
		}
		return Ok(Source::File(PathBuf::from(path)));
	}
	for scheme in ["http://", "https://"] {
		if uri.starts_with(scheme) {
			if uri == scheme {
				let why = format!("{scheme} needs a host and a file: {scheme}host/file");
				return Err(refuse(dataset, why));
			}
			return Ok(Source::Http(uri.to_owned()));
		}
	}
	if uri.starts_with('/') {
		let addresses = uri
			.split([' ', ','])
			.filter(|a| !a.is_empty())
			.map(|a| {
				let address: Multiaddr =
					a.parse().map_err(|e| refuse(dataset, format!("holder address {a:?}: {e}")))?;
				let named =
					address.iter().any(|p| matches!(p, libp2p::multiaddr::Protocol::P2p(_)));
				match named {
					true => Ok(address),
					false => {
						Err(refuse(dataset, format!("holder address {a} has no /p2p/<peer id>")))
					}
				}
			})
			.collect::<Result<Vec<_>>>()?;
		return Ok(Source::Peers(addresses));
	}
	Err(refuse(
		dataset,
		format!(
		"URI {uri:?} is none of grid:<name>, /ip4/…/p2p/<id> (libp2p holders), file://, http:// or https://"
	),
	))
}

/// What a dataset's source may make this trainer read: which paths on this machine, and how
/// many bytes in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcePolicy {
	/// The paths a `file://` source may name.
	pub local: LocalFiles,
	/// The most bytes a dataset may have: a stranger's job could name hundreds of gigabytes
	/// (a manifest may list half a terabyte) served slowly enough to hold a provider and fill
	/// its disk; refused before they are fetched or read.
	pub max_bytes: u64,
}

impl SourcePolicy {
	/// Anything: whoever named the source asked for it on their own machine.
	pub const ANY: SourcePolicy = SourcePolicy { local: LocalFiles::Any, max_bytes: u64::MAX };

	/// Why a dataset of `size` bytes is refused, if it is.
	pub fn check_size(&self, dataset: &DatasetRef, size: u64) -> Result<()> {
		match size <= self.max_bytes {
			true => Ok(()),
			false => Err(too_large(&dataset.content_hash, size, self.max_bytes)),
		}
	}
}

/// Dataset `hash`'s refusal for its `size` bytes (at least), over `max`.
pub(crate) fn too_large(hash: &H256, size: u64, max: u64) -> Error {
	Error::dataset(
		hash,
		format!("{size} bytes or more, over the {max} allowed (a provider's max_dataset_bytes)"),
	)
}

/// Total bytes of the files at `path` (a file, or a flat directory of them), by their
/// metadata: nothing is read.
pub fn local_size(path: &Path) -> Result<u64> {
	let meta = std::fs::metadata(path).map_err(|e| Error::io("reading", path, e))?;
	if !meta.is_dir() {
		return Ok(meta.len());
	}
	let mut total = 0u64;
	for entry in std::fs::read_dir(path).map_err(|e| Error::io("listing", path, e))? {
		let entry = entry.map_err(|e| Error::io("listing", path, e))?;
		if entry.file_name().to_string_lossy().starts_with('.') {
			continue; // left out of a dataset, as `store::hash_files` leaves it
		}
		let len = entry.metadata().map_err(|e| Error::io("reading", entry.path(), e))?.len();
		total = total.saturating_add(len);
	}
	Ok(total)
}

/// Which paths on this machine a `file://` source may name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocalFiles {
	/// Any: whoever named the source runs this command on their own machine.
	Any,
	/// Only paths that resolve (links and `..` followed) inside these directories, themselves
	/// resolved: a stranger's job names a provider's sources, and a path of its choosing on
	/// the provider's machine could be a file that never ends (`/proc/self/pagemap` is
	/// "regular" and hundreds of gigabytes long) or the provider's own secrets.
	Under(Vec<PathBuf>),
}

impl LocalFiles {
	/// `path` resolved, if this allows reading it; why not otherwise (nothing read but
	/// the path's links).
	pub fn admit(&self, dataset: &DatasetRef, path: &Path) -> Result<PathBuf> {
		let roots = match self {
			LocalFiles::Any => return Ok(path.to_path_buf()),
			LocalFiles::Under(roots) if roots.is_empty() => {
				return Err(refuse(
					dataset,
					format!(
						"file://{} names a path on this machine, and this provider reads none \
						 (list directories in its `local_datasets` to allow them)",
						path.display()
					),
				))
			}
			LocalFiles::Under(roots) => roots,
		};
		let resolved = path.canonicalize().map_err(|e| {
			refuse(dataset, format!("file://{} cannot be resolved: {e}", path.display()))
		})?;
		match roots.iter().any(|root| resolved.starts_with(root)) {
			true => Ok(resolved),
			false => Err(refuse(
				dataset,
				format!(
					"file://{} is {}, outside this provider's `local_datasets`",
					path.display(),
					resolved.display()
				),
			)),
		}
	}
}

/// Records the files at `path` as the dataset `hash` if, read in some format, they hash to
/// it; otherwise says so.
pub fn import(store: &DataStore, path: &Path, hash: &H256) -> Result<Located> {
	let (files, dir) = hash_files(path)?;
	for format in DatasetFormat::ALL {
		let manifest = DatasetManifest { format, files: files.clone() };
		if manifest.hash() == *hash {
			manifest.validate().map_err(|e| Error::dataset(hash, e.to_string()))?;
			return store.record_source(&manifest, &dir);
		}
	}
	Err(Error::dataset(
		hash,
		format!("the files at {} are not this dataset (their hash differs)", path.display()),
	))
}

#[cfg(test)]
mod tests {
	use super::*;
	use grid_primitives::{datasets::SHAKESPEARE, provider::BoundedBytes};

	fn reference(uri: &str) -> DatasetRef {
		DatasetRef {
			content_hash: H256::repeat_byte(1),
			uri: BoundedBytes::truncate_from(uri.as_bytes().to_vec()),
		}
	}

	#[test]
	fn uris_name_their_sources_and_bad_ones_say_why() {
		assert_eq!(source(&SHAKESPEARE.reference()).unwrap(), Source::Shipped(&SHAKESPEARE));
		let peer = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN";
		let two = format!("/ip4/127.0.0.1/tcp/1/p2p/{peer} /ip4/10.0.0.1/tcp/2/p2p/{peer}");
		assert!(matches!(source(&reference(&two)).unwrap(), Source::Peers(a) if a.len() == 2));
		assert_eq!(source(&reference("file:///srv/d")).unwrap(), Source::File("/srv/d".into()));
		assert_eq!(
			source(&reference("http://h/x.bin")).unwrap(),
			Source::Http("http://h/x.bin".into())
		);
		assert_eq!(
			source(&reference("https://h/x.bin")).unwrap(),
			Source::Http("https://h/x.bin".into())
		);
		let cases = [
			("grid:shakespeare", "not shipped shakespeare's"),
			("grid:imagenet", "no shipped dataset"),
			("/ip4/127.0.0.1/tcp/1", "no /p2p/"),
			("/ip4/999.0.0.1/tcp/1", "holder address"),
			("ipfs://Qm", "none of"),
			("file://", "file:// needs a path"),
			("http://", "http:// needs a host"),
			("https://", "https:// needs a host"),
		];
		for (uri, expected) in cases {
			let err = source(&reference(uri)).unwrap_err().to_string();
			assert!(err.contains(expected), "{uri}: {err}");
		}
	}
}
