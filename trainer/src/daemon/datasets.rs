//! The buyer's dataset commands: `grid-trainer data publish` (record a local file or directory
//! as a content-addressed dataset, print the reference a job names it by, and serve it over
//! libp2p until stopped) and `grid-trainer data fetch` (bring a dataset into a store, checked).

use std::{
	path::{Path, PathBuf},
	sync::{
		atomic::{AtomicBool, Ordering},
		Arc,
	},
	time::Duration,
};

use anyhow::Context;
use grid_primitives::{
	job::{DatasetRef, ModelSpec},
	manifest::{DatasetFormat, DatasetManifest},
	provider::BoundedBytes,
};
use libp2p::Multiaddr;
use polkadot_sdk::sp_core::H256;

use crate::{
	chain::keys,
	daemon::data_node::{DataNode, UploadLimit},
	data::{self, source, store, store::Located, DataStore, Pace, Source, SourcePolicy},
	error::{Error, Result},
};

/// What a buyer checks before posting a job (and paying its escrow): that the dataset's
/// manifest can be had from its source and hashes to the reference, and that the model reads
/// its format. An `http(s)://` source is not downloaded here (`None`): providers check it.
pub async fn preflight(dataset: &DatasetRef, model: &ModelSpec) -> Result<Option<DatasetManifest>> {
	data::check(dataset, model)?;
	let manifest = remote_manifest(dataset).await?;
	if let Some(m) = &manifest {
		data::format_fits(m.format, model)?;
	}
	Ok(manifest)
}

/// [`preflight`] for a job's initial weights: their manifest can be had and is one of
/// weights. (Whether they fit the model is checked by the providers, who fetch them whole.)
pub async fn preflight_weights(weights: &DatasetRef) -> Result<Option<DatasetManifest>> {
	let manifest = remote_manifest(weights).await?;
	if let Some(m) = &manifest {
		check_weights(&weights.content_hash, m)?;
	}
	Ok(manifest)
}

fn check_weights(hash: &H256, manifest: &DatasetManifest) -> Result<()> {
	match manifest.format {
		DatasetFormat::Weights => Ok(()),
		other => Err(Error::dataset(
			hash,
			format!("named as initial weights, but it is {} data", other.name()),
		)),
	}
}

/// The initial weights `weights` names, held in `located` (a `weights` dataset), for a model
/// of spec `spec` and layout `manifest`, in its parameter order.
pub fn initial_weights(
	weights: &DatasetRef,
	located: &Located,
	spec: &ModelSpec,
	manifest: &crate::params::Manifest,
) -> Result<Vec<f32>> {
	check_weights(&weights.content_hash, &located.manifest)?;
	crate::model::weights::load(&located.paths()[0], spec, manifest)
}

/// The manifest of `dataset` from its source, checked against its reference; none for an
/// `http(s)://` source, which is not downloaded here.
async fn remote_manifest(dataset: &DatasetRef) -> Result<Option<DatasetManifest>> {
	let scratch = tempfile::tempdir().map_err(|e| Error::io("creating", "a temporary store", e))?;
	let store = DataStore::new(scratch.path());
	let hash = dataset.content_hash;
	let manifest = match source(dataset)? {
		Source::Shipped(shipped) => store::shipped_manifest(shipped)?.manifest,
		Source::File(path) => source::import(&store, &path, &hash)?.manifest,
		Source::Http(_) => return Ok(None),
		Source::Peers(holders) => {
			let key = libp2p::identity::Keypair::generate_ed25519();
			DataNode::new(key, store.clone(), &[])?.manifest(hash, &holders).await?
		}
	};
	Ok(Some(manifest))
}

/// Largest file an `http(s)://` source may be, whatever the policy (a guard against an
/// endless body).
const MAX_HTTP_BYTES: u64 = 64 << 30;

/// The dataset `dataset` names, from the store or brought into it from its source (and from
/// `peers`, other holders such as a job's participants) and checked, within `policy`: a
/// `file://` path it does not allow, or more bytes than it allows, are refused before they
/// are read or fetched. `progress` draws a bar on a terminal.
pub async fn ensure(
	store: &DataStore,
	dataset: &DatasetRef,
	peers: &[Multiaddr],
	policy: &SourcePolicy,
	progress: bool,
) -> Result<Located> {
	let hash = dataset.content_hash;
	if let Some(located) = store.locate(&hash)? {
		return Ok(located);
	}
	match source(dataset)? {
		Source::Shipped(_) => Err(source::refuse(dataset, "shipped, but its files are missing")),
		Source::File(path) => {
			let path = policy.local.admit(dataset, &path)?;
			source::check_size(&hash, source::local_size(&path)?, policy.max_bytes)?;
			import(store, path, hash).await
		}
		Source::Http(url) => {
			let dir = store.root().join("downloads").join(hex::encode(hash.0));
			let policy = policy.clone();
			let abandoned = Abandoned::default();
			let flag = abandoned.0.clone();
			let path =
				tokio::task::spawn_blocking(move || download(&url, &dir, &hash, &policy, &flag))
					.await
					.map_err(|e| Error::Network(format!("download task: {e}")))??;
			drop(abandoned);
			import(store, path, hash).await
		}
		Source::Peers(mut holders) => {
			holders.extend(peers.iter().cloned());
			let key = libp2p::identity::Keypair::generate_ed25519();
			let mut node = DataNode::new(key, store.clone(), &[])?;
			node.limit_size(policy.max_bytes);
			node.require_rate(policy.min_rate);
			node.fetch(hash, &holders, progress).await
		}
	}
}

/// [`source::import`] on a blocking thread: hashing a large dataset takes a while.
async fn import(store: &DataStore, path: PathBuf, hash: H256) -> Result<Located> {
	let store = store.clone();
	tokio::task::spawn_blocking(move || source::import(&store, &path, &hash))
		.await
		.map_err(|e| Error::dataset(&hash, format!("the hashing task failed: {e}")))?
}

/// Set when the future waiting on a blocking download is dropped (a provider's search for a
/// job moved on without it), so that the download stops at its next read instead of going on
/// alone.
#[derive(Default)]
struct Abandoned(Arc<AtomicBool>);

impl Drop for Abandoned {
	fn drop(&mut self) {
		self.0.store(true, Ordering::Relaxed);
	}
}

/// How long an HTTP source may take to accept a connection, and to send anything at all.
const HTTP_CONNECT: Duration = Duration::from_secs(30);
const HTTP_SILENCE: Duration = Duration::from_secs(60);

/// Downloads `url` into `dir` (named for the URL's last segment) from the hosts `policy`
/// allows; the file's path. A body longer than it allows (by its announced length, or as
/// it comes), one slower than its rate floor, or one `abandoned` is refused and removed.
/// (No overall deadline: an honest large file on a slow link takes as long as it takes.)
fn download(
	url: &str,
	dir: &Path,
	hash: &H256,
	policy: &SourcePolicy,
	abandoned: &AtomicBool,
) -> Result<PathBuf> {
	let max = policy.max_bytes.min(MAX_HTTP_BYTES);
	let name: String = url
		.rsplit('/')
		.next()
		.unwrap_or_default()
		.chars()
		.filter(|c| c.is_ascii_alphanumeric() || "._-".contains(*c))
		.collect();
	let name = if name.is_empty() || name.starts_with('.') { "data".to_owned() } else { name };
	std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
	let path = dir.join(name);
	let hosts = policy.http;
	let pace = Pace::start(policy.min_rate);
	let response = ureq::AgentBuilder::new()
		.timeout_connect(HTTP_CONNECT)
		.timeout_read(HTTP_SILENCE)
		.resolver(move |netloc: &str| hosts.resolve(netloc))
		.build()
		.get(url)
		.call()
		.map_err(|e| Error::Network(format!("GET {url}: {e}")))?;
	let announced = response.header("Content-Length").and_then(|n| n.parse::<u64>().ok());
	if let Some(size) = announced {
		source::check_size(hash, size, max)?;
	}
	let mut reader = std::io::Read::take(response.into_reader(), max.saturating_add(1));
	let mut file = std::fs::File::create(&path).map_err(|e| Error::io("creating", &path, e))?;
	let copied = copy_paced(&mut reader, &mut file, &path, |read| {
		if abandoned.load(Ordering::Relaxed) {
			return Err(Error::dataset(hash, format!("the download from {url} was abandoned")));
		}
		pace.check(hash, read)?;
		source::check_size(hash, read, max)
	});
	drop(file);
	if copied.is_err() {
		let _ = std::fs::remove_file(&path);
	}
	copied.map(|_| path)
}

/// Copies `reader` into `file` (at `path`), asking `go_on` with the bytes copied so far
/// after every read; the bytes copied.
fn copy_paced(
	reader: &mut impl std::io::Read,
	file: &mut std::fs::File,
	path: &Path,
	mut go_on: impl FnMut(u64) -> Result<()>,
) -> Result<u64> {
	let mut buffer = vec![0u8; 1 << 16];
	let mut copied = 0u64;
	loop {
		let read = match reader.read(&mut buffer) {
			Ok(0) => return Ok(copied),
			Ok(read) => read,
			Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
			Err(e) => return Err(Error::io("downloading to", path, e)),
		};
		std::io::Write::write_all(file, &buffer[..read])
			.map_err(|e| Error::io("writing", path, e))?;
		copied += read as u64;
		go_on(copied)?;
	}
}

/// How a dataset is described to its buyer.
pub fn describe(manifest: &DatasetManifest) -> String {
	let files = manifest.files.len();
	format!(
		"{}, {files} file{}, {} bytes",
		manifest.format.name(),
		if files == 1 { "" } else { "s" },
		manifest.size()
	)
}

/// The job-file line naming the dataset at `uri` (as the job's initial weights, for weights).
fn job_line(format: DatasetFormat, hash: &H256, uri: &str) -> String {
	let field = match format {
		DatasetFormat::Weights => "initial_weights",
		_ => "dataset",
	};
	format!("{field} = {{ uri = \"{uri}\", content_hash = \"0x{}\" }}", hex::encode(hash.0))
}

/// How a node serves the datasets in its store: where it listens, what it may upload, and
/// whether chunks may also go over its plain bulk lane (`daemon::bulk`; when not, they go
/// only over the encrypted stream).
#[derive(Clone, Debug)]
pub struct Serving {
	pub listen: Vec<Multiaddr>,
	pub upload: Option<UploadLimit>,
	pub plain: bool,
}

impl Serving {
	/// A node serving `store` as this says, with the store's key (kept there, so a restarted
	/// node keeps its address), once it listens; prints the address.
	async fn start(&self, store: &DataStore) -> anyhow::Result<(DataNode, Multiaddr)> {
		let key = keys::p2p_key(&store.root().join("p2p.key"))?;
		let mut node = DataNode::new(key, store.clone(), &self.listen)?;
		if let Some(limit) = self.upload {
			node.limit_upload(limit);
		}
		let lane = match (self.plain, self.listen.first()) {
			(true, Some(listen)) => node.offer_bulk(listen).map(Some),
			_ => Ok(None),
		};
		let address = node.listening().await?;
		println!("serving on {address}");
		// Without its lane the node still serves everything, over the encrypted stream.
		match lane {
			Ok(Some(port)) => {
				println!("bulk lane on TCP port {port} (plain; --encrypted-only turns it off)")
			}
			Ok(None) => println!("bulk lane off: chunks go over the encrypted stream only"),
			Err(e) => println!("bulk lane off ({e}): chunks go over the encrypted stream only"),
		}
		Ok((node, address))
	}
}

/// Publishes `path` as a dataset of `format` in `store` and prints its reference; then, with
/// `serving`, serves the store over libp2p until the process stops.
pub async fn publish(
	store: &DataStore,
	path: &Path,
	format: DatasetFormat,
	serving: Option<Serving>,
) -> anyhow::Result<()> {
	let manifest = store.publish(path, format)?;
	let hash = manifest.hash();
	println!("reference 0x{}", hex::encode(hash.0));
	println!("dataset {}", describe(&manifest));
	let Some(serving) = serving else {
		let dir = store.locate(&hash)?.context("just published")?.dir;
		let uri = format!("file://{}", dir.display());
		println!("job file: {}", job_line(format, &hash, &uri));
		return Ok(());
	};
	let (node, address) = serving.start(store).await?;
	println!("job file: {}", job_line(format, &hash, &address.to_string()));
	println!("serving until stopped");
	node.serve().await;
	Ok(())
}

/// Prints what the reference `hash` at `uri` is: its manifest's format, files and sizes (the
/// manifest fetched from the source and checked against the reference) and where it is
/// served from.
pub async fn info(hash: H256, uri: &str) -> anyhow::Result<()> {
	let reference = reference(hash, uri)?;
	match source(&reference)? {
		Source::Peers(holders) => {
			for holder in holders {
				println!("holder {holder}");
			}
		}
		Source::Shipped(shipped) => println!("shipped with every trainer ({})", shipped.name),
		Source::File(path) => println!("file {}", path.display()),
		Source::Http(url) => println!("http {url}"),
	}
	let Some(manifest) = remote_manifest(&reference).await? else {
		println!("the manifest of an http(s):// source is known only once it is downloaded");
		return Ok(());
	};
	println!("reference 0x{}", hex::encode(hash.0));
	println!("dataset {}", describe(&manifest));
	for file in &manifest.files {
		println!("  {} ({} bytes, {} chunks)", file.name, file.size, file.chunks.len());
	}
	Ok(())
}

fn reference(hash: H256, uri: &str) -> anyhow::Result<DatasetRef> {
	Ok(DatasetRef {
		content_hash: hash,
		uri: BoundedBytes::try_from(uri.as_bytes().to_vec())
			.map_err(|_| anyhow::anyhow!("the URI is over 256 bytes"))?,
	})
}

/// Fetches the dataset `hash` from the holders `uri` names (and `holders`) into `store`, and
/// prints where its files are. With `serving`, the node serves what it holds while it fetches
/// (other fetchers may list it as a holder) and goes on serving until the process stops.
pub async fn fetch(
	store: &DataStore,
	hash: H256,
	uri: &str,
	holders: &[Multiaddr],
	serving: Option<Serving>,
) -> anyhow::Result<()> {
	let reference = reference(hash, uri)?;
	let Some(serving) = serving else {
		print_fetched(&ensure(store, &reference, holders, &SourcePolicy::ANY, true).await?);
		return Ok(());
	};
	let (mut node, _) = serving.start(store).await?;
	let located = match source(&reference)? {
		Source::Peers(mut peers) => {
			peers.extend(holders.iter().cloned());
			node.fetch(hash, &peers, true).await?
		}
		_ => ensure(store, &reference, holders, &SourcePolicy::ANY, true).await?,
	};
	print_fetched(&located);
	println!("serving until stopped");
	node.serve().await;
	Ok(())
}

fn print_fetched(located: &Located) {
	println!("dataset {}", describe(&located.manifest));
	println!("files in {}", located.dir.display());
}
