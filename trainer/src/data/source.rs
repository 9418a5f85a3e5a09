//! Where a dataset comes from, as a job's `DatasetRef::uri` says, and bringing it into the
//! store: `grid:<name>` (shipped, already held), libp2p addresses of holders
//! (`/ip4/…/tcp/…/p2p/<id>`, several separated by spaces), `file://<path>` (a file or flat
//! directory on this machine) or `http(s)://<url>` (one file; https trusts the system's certificate store, or the
//! file `SSL_CERT_FILE` names). Whatever the source, what lands in
//! the store is checked against the reference: the manifest's hash for peers; for files and
//! URLs, the manifest built from the bytes must hash to it.

use std::{
	path::{Path, PathBuf},
	time::{Duration, Instant},
};

use grid_primitives::{
	datasets::ShippedDataset,
	job::DatasetRef,
	manifest::{DatasetFormat, DatasetManifest},
};
use libp2p::Multiaddr;
use polkadot_sdk::sp_core::H256;

use super::store::{dataset_files, hash_files, DataStore, Located};
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
	/// The hosts an `http(s)://` source may be fetched from.
	pub http: HttpHosts,
	/// The most bytes a dataset may have: a stranger's job could name hundreds of gigabytes
	/// (a manifest may list half a terabyte) served slowly enough to hold a provider and fill
	/// its disk; refused before they are fetched or read.
	pub max_bytes: u64,
	/// The slowest a fetch may go: a source that trickles (an HTTP server sending a byte
	/// now and then, a holder answering each chunk just before its timeout) would otherwise
	/// hold a provider's download for as long as it likes. `None`: as slow as it comes.
	pub min_rate: Option<MinRate>,
}

impl SourcePolicy {
	/// Anything: whoever named the source asked for it on their own machine.
	pub const ANY: SourcePolicy = SourcePolicy {
		local: LocalFiles::Any,
		http: HttpHosts::Any,
		max_bytes: u64::MAX,
		min_rate: None,
	};
}

/// A floor under a fetch's mean rate: after `grace` (connecting, the manifest, a slow
/// start), at least `bytes_per_sec` on average since it started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinRate {
	pub bytes_per_sec: std::num::NonZeroU64,
	pub grace: Duration,
}

/// One fetch's progress held to its [`MinRate`], if it has one.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
	floor: Option<MinRate>,
	start: Instant,
}

impl Pace {
	/// A fetch starting now.
	pub fn start(floor: Option<MinRate>) -> Self {
		Pace { floor, start: Instant::now() }
	}

	/// Refuses dataset `hash` if `bytes` in so far are fewer than its floor asks by now.
	pub fn check(&self, hash: &H256, bytes: u64) -> Result<()> {
		self.check_at(hash, bytes, Instant::now())
	}

	fn check_at(&self, hash: &H256, bytes: u64, now: Instant) -> Result<()> {
		let Some(MinRate { bytes_per_sec, grace }) = self.floor else { return Ok(()) };
		let elapsed = now.saturating_duration_since(self.start);
		let owed = elapsed.saturating_sub(grace).as_secs_f64() * bytes_per_sec.get() as f64;
		match bytes as f64 >= owed {
			true => Ok(()),
			false => Err(Error::dataset(
				hash,
				format!(
					"{bytes} bytes in {:.0}s, slower than the {bytes_per_sec} bytes/s allowed \
					 after {}s (a provider's min_fetch_bytes_per_sec)",
					elapsed.as_secs_f64(),
					grace.as_secs()
				),
			)),
		}
	}
}

/// Refuses dataset `hash` for `size` bytes (or more: what came so far) over `max`.
pub(crate) fn check_size(hash: &H256, size: u64, max: u64) -> Result<()> {
	match size <= max {
		true => Ok(()),
		false => Err(Error::dataset(
			hash,
			format!(
				"{size} bytes or more, over the {max} allowed (a provider's max_dataset_bytes)"
			),
		)),
	}
}

/// Total bytes of the files at `path` that [`hash_files`] would take, by their metadata:
/// nothing is read.
pub fn local_size(path: &Path) -> Result<u64> {
	let (dir, names) = dataset_files(path)?;
	names.iter().try_fold(0u64, |total, name| {
		let file = dir.join(name);
		let len = std::fs::metadata(&file).map_err(|e| Error::io("reading", &file, e))?.len();
		Ok(total.saturating_add(len))
	})
}

/// Which hosts an `http(s)://` source may be fetched from, by the addresses their names
/// resolve to (each connection's, redirects' included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpHosts {
	/// Any host.
	Any,
	/// Only public addresses: a stranger's job naming `http://169.254.169.254/…` (a cloud's
	/// metadata service), `http://127.0.0.1:9944/…` or a host on the provider's own network
	/// would make every provider that looks at it send a request there.
	Public,
}

impl HttpHosts {
	/// The addresses of `netloc` (`host:port`) that may be connected to; an error naming
	/// it when none may.
	pub fn resolve(self, netloc: &str) -> std::io::Result<Vec<std::net::SocketAddr>> {
		let all: Vec<_> = std::net::ToSocketAddrs::to_socket_addrs(netloc)?.collect();
		if self == HttpHosts::Any {
			return Ok(all);
		}
		let public: Vec<_> = all.into_iter().filter(|a| is_public(a.ip())).collect();
		match public.is_empty() {
			false => Ok(public),
			true => Err(std::io::Error::new(
				std::io::ErrorKind::PermissionDenied,
				format!(
					"{netloc} is a loopback, private or link-local address, which this \
					 provider does not fetch from (its private_http_sources allows them)"
				),
			)),
		}
	}
}

/// Whether `ip` is an address on the public internet (not loopback, private, link-local,
/// shared, unspecified, broadcast, multicast or documentation space).
pub fn is_public(ip: std::net::IpAddr) -> bool {
	use std::net::IpAddr;
	match ip {
		IpAddr::V4(v4) => {
			let [a, b, ..] = v4.octets();
			let shared = a == 100 && (64..128).contains(&b); // 100.64.0.0/10 (carrier NAT)
			!(v4.is_loopback()
				|| v4.is_private()
				|| v4.is_link_local()
				|| v4.is_unspecified()
				|| v4.is_broadcast()
				|| v4.is_multicast()
				|| v4.is_documentation()
				|| a == 0 || shared)
		}
		IpAddr::V6(v6) => {
			if let Some(v4) = v6.to_ipv4_mapped() {
				return is_public(IpAddr::V4(v4));
			}
			let first = v6.segments()[0];
			let unique_local = first & 0xfe00 == 0xfc00; // fc00::/7
			let link_local = first & 0xffc0 == 0xfe80; // fe80::/10
			!(v6.is_loopback()
				|| v6.is_unspecified()
				|| v6.is_multicast()
				|| unique_local
				|| link_local)
		}
	}
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

	#[test]
	fn a_fetch_slower_than_its_floor_after_the_grace_is_refused() {
		let hash = H256::repeat_byte(7);
		let floor = MinRate {
			bytes_per_sec: std::num::NonZeroU64::new(1_000).unwrap(),
			grace: Duration::from_secs(10),
		};
		let pace = Pace::start(Some(floor));
		let at = |secs| pace.start + Duration::from_secs(secs);
		// Nothing is owed during the grace, 1,000 bytes a second of what follows it after.
		assert!(pace.check_at(&hash, 0, at(10)).is_ok());
		assert!(pace.check_at(&hash, 5_000, at(15)).is_ok());
		let err = pace.check_at(&hash, 4_999, at(15)).unwrap_err().to_string();
		assert!(err.contains("4999 bytes in 15s, slower than the 1000 bytes/s"), "{err}");
		// A fast start banks time: 30,000 bytes by second 12 hold until second 40.
		assert!(pace.check_at(&hash, 30_000, at(40)).is_ok());
		assert!(pace.check_at(&hash, 30_000, at(41)).is_err());
		// No floor: however slow.
		let free = Pace::start(None);
		assert!(free.check_at(&hash, 0, free.start + Duration::from_secs(1 << 20)).is_ok());
	}

	fn reference(uri: &str) -> DatasetRef {
		DatasetRef {
			content_hash: H256::repeat_byte(1),
			uri: BoundedBytes::truncate_from(uri.as_bytes().to_vec()),
		}
	}

	#[test]
	fn only_public_addresses_are_public() {
		let public = ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"];
		for ip in public {
			assert!(is_public(ip.parse().unwrap()), "{ip}");
		}
		let private = [
			"127.0.0.1",
			"10.1.2.3",
			"172.16.0.1",
			"192.168.1.1",
			"169.254.169.254",
			"100.64.0.1",
			"0.0.0.0",
			"255.255.255.255",
			"224.0.0.1",
			"192.0.2.1",
			"::1",
			"::",
			"fc00::1",
			"fd12:3456::1",
			"fe80::1",
			"ff02::1",
			"::ffff:127.0.0.1",
			"::ffff:169.254.169.254",
		];
		for ip in private {
			assert!(!is_public(ip.parse().unwrap()), "{ip}");
		}
		let err = HttpHosts::Public.resolve("169.254.169.254:80").unwrap_err().to_string();
		assert!(err.contains("private_http_sources"), "{err}");
		assert!(HttpHosts::Public.resolve("localhost:80").is_err());
		assert_eq!(HttpHosts::Any.resolve("127.0.0.1:80").unwrap().len(), 1);
		assert_eq!(HttpHosts::Public.resolve("8.8.8.8:80").unwrap().len(), 1);
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
