//! The content-addressed dataset store under a trainer's data directory: every dataset it
//! holds, published or fetched, by its manifest's hash.
//!
//! Layout, per dataset (`<root>/<hash hex>/`): `manifest.scale` (the manifest's bytes, which
//! hash to the reference), then either `source` (a published dataset: the directory its files
//! are served from, where the buyer keeps them) or `files/` (a fetched one: each file as
//! `<name>.part` while chunks arrive, renamed when whole) and `complete` once every file is.
//! Shipped datasets are found in the shipped directory and need no entry. Every chunk is
//! checked against the manifest when written, when served and when a dataset is opened, so
//! nothing the store hands out can differ from what the reference names.

use std::{
	fs::{self, File},
	io::{Read, Seek, SeekFrom, Write},
	path::{Path, PathBuf},
};

use codec::{Decode, Encode};
use grid_primitives::{
	datasets::{ShippedDataset, SHIPPED},
	job::DatasetRef,
	manifest::{DatasetFormat, DatasetManifest, ManifestFile, CHUNK_BYTES},
};
use polkadot_sdk::sp_core::H256;

use super::shipped_dir;
use crate::error::{Error, Result};

/// A dataset the store holds whole: its manifest and the directory its files are in.
#[derive(Clone, Debug)]
pub struct Located {
	/// The dataset's manifest.
	pub manifest: DatasetManifest,
	/// Where its files are, under their manifest names.
	pub dir: PathBuf,
	/// Where data derived from it may be kept (a BPE dataset's tokens); none for the shipped
	/// datasets read without a store.
	pub cache: Option<PathBuf>,
}

impl Located {
	/// Its files' paths, in the manifest's order.
	pub fn paths(&self) -> Vec<PathBuf> {
		self.manifest.files.iter().map(|f| self.dir.join(&f.name)).collect()
	}
}

/// A chunk of a dataset: file index in the manifest and chunk index in the file.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord, Encode, Decode)]
pub struct ChunkId {
	/// Index of the file in the manifest.
	pub file: u32,
	/// Index of the chunk in the file.
	pub chunk: u32,
}

/// The store (cheap to clone: a path).
#[derive(Clone, Debug)]
pub struct DataStore {
	root: PathBuf,
}

/// The manifest of the files at `path` (a file, or a directory of files) read as `format`,
/// and the directory they are in.
pub fn build_manifest(path: &Path, format: DatasetFormat) -> Result<(DatasetManifest, PathBuf)> {
	let (files, dir) = hash_files(path)?;
	let manifest = DatasetManifest { format, files };
	manifest.validate().map_err(|e| Error::Dataset {
		dataset: path.display().to_string(),
		reason: e.to_string(),
	})?;
	Ok((manifest, dir))
}

/// The files at `path` (a file, or a directory of files) as a manifest lists them, sorted by
/// name, and the directory they are in. Directories are flat: a sub-directory is an error,
/// and hidden files (`.name`) are left out.
pub fn hash_files(path: &Path) -> Result<(Vec<ManifestFile>, PathBuf)> {
	let (dir, names) = dataset_files(path)?;
	let files = names
		.into_iter()
		.map(|name| {
			hash_file(&dir.join(&name)).map(|(size, chunks)| ManifestFile { name, size, chunks })
		})
		.collect::<Result<Vec<_>>>()?;
	Ok((files, dir))
}

/// The directory of the dataset at `path` and its files' names, sorted, as [`hash_files`]
/// takes them; nothing is read.
pub fn dataset_files(path: &Path) -> Result<(PathBuf, Vec<String>)> {
	let refuse = |reason: String| Error::Dataset { dataset: path.display().to_string(), reason };
	let meta = fs::metadata(path).map_err(|e| Error::io("reading", path, e))?;
	let (dir, names) = if meta.is_dir() {
		let mut names = Vec::new();
		for entry in fs::read_dir(path).map_err(|e| Error::io("listing", path, e))? {
			let entry = entry.map_err(|e| Error::io("listing", path, e))?;
			let name = entry
				.file_name()
				.into_string()
				.map_err(|name| refuse(format!("file name {name:?} is not UTF-8")))?;
			if name.starts_with('.') {
				continue;
			}
			if !entry.file_type().map_err(|e| Error::io("listing", path, e))?.is_file() {
				return Err(refuse(format!("{name} is not a plain file (datasets are flat)")));
			}
			names.push(name);
		}
		(path.to_path_buf(), names)
	} else if !meta.is_file() {
		// A device, pipe or socket: `/dev/zero` in a buyer's `file://` URI never ends.
		return Err(refuse("neither a plain file nor a directory of them".into()));
	} else {
		let name = path.file_name().and_then(|n| n.to_str()).map(str::to_owned);
		let name = name.ok_or_else(|| refuse("not a UTF-8 file name".into()))?;
		(path.parent().unwrap_or(Path::new(".")).to_path_buf(), vec![name])
	};
	let mut names = names;
	names.sort();
	Ok((dir, names))
}

/// A file's size and its chunks' hashes, read a chunk at a time.
fn hash_file(path: &Path) -> Result<(u64, Vec<H256>)> {
	let mut file = File::open(path).map_err(|e| Error::io("reading", path, e))?;
	let mut chunks = Vec::new();
	let mut size = 0u64;
	let mut buf = vec![0u8; CHUNK_BYTES as usize];
	loop {
		let n = read_full(&mut file, &mut buf).map_err(|e| Error::io("reading", path, e))?;
		if n == 0 {
			break;
		}
		chunks.push(chunk_hash(&buf[..n]));
		size += n as u64;
		if n < buf.len() {
			break;
		}
	}
	Ok((size, chunks))
}

/// Reads until `buf` is full or the file ends; the bytes read.
fn read_full(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
	let mut filled = 0;
	while filled < buf.len() {
		match file.read(&mut buf[filled..])? {
			0 => break,
			n => filled += n,
		}
	}
	Ok(filled)
}

/// The shipped dataset `hash` names.
fn shipped_with(hash: &H256) -> Option<&'static ShippedDataset> {
	SHIPPED.iter().find(|d| d.content_hash == hash.0)
}

/// The manifest of a shipped dataset, built from its files once per process (and checked
/// against the registry's hash: shipped files that changed are refused). Later reads check
/// each chunk against it, as for any dataset, so the files cannot change unnoticed.
pub fn shipped_manifest(shipped: &ShippedDataset) -> Result<Located> {
	// Serving a shipped dataset asks for its manifest with every chunk: hashing its files
	// each time would cost a pass over all of them per request.
	static BUILT: std::sync::Mutex<Vec<(&str, Located)>> = std::sync::Mutex::new(Vec::new());
	let built = |list: &Vec<(&str, Located)>| {
		list.iter().find(|(name, _)| *name == shipped.name).map(|(_, l)| l.clone())
	};
	if let Some(located) = built(&BUILT.lock().unwrap_or_else(|p| p.into_inner())) {
		return Ok(located);
	}
	let located = build_shipped(shipped)?;
	BUILT.lock().unwrap_or_else(|p| p.into_inner()).push((shipped.name, located.clone()));
	Ok(located)
}

/// [`shipped_manifest`], built.
fn build_shipped(shipped: &ShippedDataset) -> Result<Located> {
	let (manifest, dir) = build_manifest(&shipped_dir().join(shipped.path), shipped.format)?;
	let hash = H256(shipped.content_hash);
	if manifest.hash() != hash {
		return Err(Error::dataset(
			&hash,
			format!(
				"the shipped files in {} hash to {:?}, not the registry's: they changed",
				shipped_dir().display(),
				manifest.hash()
			),
		));
	}
	Ok(Located { manifest, dir, cache: None })
}

impl DataStore {
	/// The store at `root` (created when something is first written).
	pub fn new(root: impl Into<PathBuf>) -> Self {
		DataStore { root: root.into() }
	}

	/// Where the store is.
	pub fn root(&self) -> &Path {
		&self.root
	}

	fn entry(&self, hash: &H256) -> PathBuf {
		self.root.join(::hex::encode(hash.0))
	}

	/// Records the files at `path` as a dataset of `format` served from where they are, and
	/// returns its manifest (whose hash is the dataset's reference).
	pub fn publish(&self, path: &Path, format: DatasetFormat) -> Result<DatasetManifest> {
		let (manifest, dir) = build_manifest(path, format)?;
		self.record_source(&manifest, &dir)?;
		Ok(manifest)
	}

	/// Records `manifest`'s dataset as held in `dir`, where its files stay.
	pub fn record_source(&self, manifest: &DatasetManifest, dir: &Path) -> Result<Located> {
		let dir = dir.canonicalize().map_err(|e| Error::io("resolving", dir, e))?;
		let entry = self.entry(&manifest.hash());
		write(&entry.join("manifest.scale"), &manifest.encode())?;
		write(&entry.join("source"), dir.to_string_lossy().as_bytes())?;
		Ok(Located { manifest: manifest.clone(), dir, cache: Some(entry.join("cache")) })
	}

	/// The manifest of `hash`, when the store knows it (shipped, published, or being or
	/// having been fetched). Its bytes are checked against the hash.
	pub fn manifest(&self, hash: &H256) -> Result<Option<DatasetManifest>> {
		if let Some(shipped) = shipped_with(hash) {
			return shipped_manifest(shipped).map(|l| Some(l.manifest));
		}
		let path = self.entry(hash).join("manifest.scale");
		let bytes = match fs::read(&path) {
			Ok(bytes) => bytes,
			Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
			Err(e) => return Err(Error::io("reading", path, e)),
		};
		DatasetManifest::decode_checked(&bytes, hash)
			.map(Some)
			.map_err(|e| Error::dataset(hash, e.to_string()))
	}

	/// The dataset `hash` names, when the store holds all of it.
	pub fn locate(&self, hash: &H256) -> Result<Option<Located>> {
		if let Some(shipped) = shipped_with(hash) {
			return shipped_manifest(shipped).map(Some);
		}
		let Some(manifest) = self.manifest(hash)? else { return Ok(None) };
		let entry = self.entry(hash);
		let cache = Some(entry.join("cache"));
		if let Ok(source) = fs::read_to_string(entry.join("source")) {
			return Ok(Some(Located { manifest, dir: PathBuf::from(source), cache }));
		}
		let whole = entry.join("complete").exists();
		Ok(whole.then(|| Located { manifest, dir: entry.join("files"), cache }))
	}

	/// The dataset `reference` names if the store holds it whole, every chunk checked.
	pub fn open_verified(&self, reference: &DatasetRef) -> Result<Located> {
		let hash = reference.content_hash;
		let located = self.locate(&hash)?.ok_or_else(|| {
			Error::dataset(
				&hash,
				format!(
					"not in the store at {} (fetch it first: grid-trainer data fetch)",
					self.root.display()
				),
			)
		})?;
		for (f, file) in located.manifest.files.iter().enumerate() {
			for c in 0..file.chunks.len() as u32 {
				let id = ChunkId { file: f as u32, chunk: c };
				read_checked(&located.dir, &located.manifest, id)
					.map_err(|reason| Error::dataset(&hash, reason))?;
			}
		}
		Ok(located)
	}

	/// Chunk `id` of dataset `hash`, checked against its manifest: from a dataset held whole
	/// or from the part of one being fetched that has arrived. `None` when the store does not
	/// have it (or what it has does not check out).
	pub fn read_chunk(&self, hash: &H256, id: ChunkId) -> Result<Option<Vec<u8>>> {
		if let Some(located) = self.locate(hash)? {
			return Ok(read_checked(&located.dir, &located.manifest, id).ok());
		}
		// A dataset still arriving is read from its part files.
		let Some(manifest) = self.manifest(hash)? else { return Ok(None) };
		let Some(file) = manifest.files.get(id.file as usize) else { return Ok(None) };
		let part = self.entry(hash).join("files").join(format!("{}.part", file.name));
		Ok(read_range_checked(&part, file, id.chunk).ok())
	}

	/// Starts (or resumes) fetching `manifest`: records it and makes each file's part file.
	/// Returns the chunks still missing: those a part file does not already hold correctly.
	pub fn begin_fetch(&self, manifest: &DatasetManifest) -> Result<Vec<ChunkId>> {
		let hash = manifest.hash();
		let entry = self.entry(&hash);
		write(&entry.join("manifest.scale"), &manifest.encode())?;
		let files = entry.join("files");
		fs::create_dir_all(&files).map_err(|e| Error::io("creating", &files, e))?;
		let mut missing = Vec::new();
		for (f, file) in manifest.files.iter().enumerate() {
			let whole = files.join(&file.name);
			let part = files.join(format!("{}.part", file.name));
			if whole.exists() && !part.exists() {
				fs::rename(&whole, &part).map_err(|e| Error::io("renaming", &whole, e))?;
			}
			// A new part file holds no chunk yet; only a resumed one is read for those it has.
			let resumed = part.exists();
			let handle = fs::OpenOptions::new()
				.create(true)
				.truncate(false)
				.write(true)
				.open(&part)
				.map_err(|e| Error::io("creating", &part, e))?;
			handle.set_len(file.size).map_err(|e| Error::io("sizing", &part, e))?;
			for c in 0..file.chunks.len() as u32 {
				if !resumed || read_range_checked(&part, file, c).is_err() {
					missing.push(ChunkId { file: f as u32, chunk: c });
				}
			}
		}
		Ok(missing)
	}

	/// Writes chunk `id` of a dataset being fetched, after checking its bytes against the
	/// manifest (the error says why they were refused).
	pub fn write_chunk(&self, manifest: &DatasetManifest, id: ChunkId, bytes: &[u8]) -> Result<()> {
		let hash = manifest.hash();
		let file = manifest
			.files
			.get(id.file as usize)
			.ok_or_else(|| Error::dataset(&hash, format!("no file {} in the manifest", id.file)))?;
		check_chunk(file, id.chunk, bytes).map_err(|reason| Error::dataset(&hash, reason))?;
		let range = file.chunk_range(id.chunk).expect("checked above");
		let part = self.entry(&hash).join("files").join(format!("{}.part", file.name));
		let mut handle = fs::OpenOptions::new()
			.write(true)
			.open(&part)
			.map_err(|e| Error::io("opening", &part, e))?;
		handle
			.seek(SeekFrom::Start(range.start))
			.and_then(|_| handle.write_all(bytes))
			.map_err(|e| Error::io("writing", &part, e))
	}

	/// Marks a fetched dataset whole: its part files become its files.
	pub fn finish_fetch(&self, manifest: &DatasetManifest) -> Result<Located> {
		let entry = self.entry(&manifest.hash());
		let files = entry.join("files");
		for file in &manifest.files {
			let part = files.join(format!("{}.part", file.name));
			let whole = files.join(&file.name);
			fs::rename(&part, &whole).map_err(|e| Error::io("renaming", &part, e))?;
		}
		write(&entry.join("complete"), b"")?;
		Ok(Located { manifest: manifest.clone(), dir: files, cache: Some(entry.join("cache")) })
	}
}

/// Writes `bytes` to `path`, making its directory, through a temporary file (a crash leaves
/// the old content or the new, never half).
fn write(path: &Path, bytes: &[u8]) -> Result<()> {
	let dir = path.parent().expect("store paths have a parent");
	fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
	let tmp = path.with_extension("tmp");
	fs::write(&tmp, bytes).map_err(|e| Error::io("writing", &tmp, e))?;
	fs::rename(&tmp, path).map_err(|e| Error::io("renaming", &tmp, e))
}

/// Chunk `id` of the dataset whose files are in `dir`, checked; otherwise why not.
fn read_checked(dir: &Path, manifest: &DatasetManifest, id: ChunkId) -> Result<Vec<u8>, String> {
	let file = manifest.files.get(id.file as usize).ok_or("no such file")?;
	read_range_checked(&dir.join(&file.name), file, id.chunk)
}

/// Chunk `chunk` of `file`, read from `path` and checked.
fn read_range_checked(path: &Path, file: &ManifestFile, chunk: u32) -> Result<Vec<u8>, String> {
	let range =
		file.chunk_range(chunk).ok_or_else(|| format!("{} has no chunk {chunk}", file.name))?;
	let mut handle = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
	let len = handle.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
	if len != file.size {
		return Err(format!("{} is {len} bytes, the manifest says {}", path.display(), file.size));
	}
	let mut bytes = vec![0u8; (range.end - range.start) as usize];
	handle
		.seek(SeekFrom::Start(range.start))
		.and_then(|_| handle.read_exact(&mut bytes))
		.map_err(|e| format!("{}: {e}", path.display()))?;
	check_chunk(file, chunk, &bytes)?;
	Ok(bytes)
}

/// A chunk's hash in a manifest: BLAKE3. Every chunk is hashed where it is published, by
/// each holder that serves it and by each fetcher that receives it; BLAKE2b (used before)
/// was a third of both ends' CPU time in a fetch over loopback, BLAKE3 is about five times
/// faster per core (`bench/reports/datasets.md`).
pub fn chunk_hash(bytes: &[u8]) -> H256 {
	H256(*blake3::hash(bytes).as_bytes())
}

/// Whether `bytes` are chunk `chunk` of `file`; otherwise why not.
pub fn check_chunk(file: &ManifestFile, chunk: u32, bytes: &[u8]) -> Result<(), String> {
	let range =
		file.chunk_range(chunk).ok_or_else(|| format!("{} has no chunk {chunk}", file.name))?;
	if bytes.len() as u64 != range.end - range.start {
		return Err(format!(
			"chunk {chunk} of {} is {} bytes, not {} (truncated?)",
			file.name,
			bytes.len(),
			range.end - range.start
		));
	}
	if chunk_hash(bytes) != file.chunks[chunk as usize] {
		return Err(format!("chunk {chunk} of {} does not match its hash", file.name));
	}
	Ok(())
}

#[cfg(test)]
mod tests {
	use super::*;

	fn corpus(dir: &Path) -> DatasetManifest {
		fs::create_dir_all(dir).unwrap();
		let big: Vec<u8> = (0..CHUNK_BYTES + 10).map(|i| b'a' + (i % 26) as u8).collect();
		fs::write(dir.join("a.txt"), &big).unwrap();
		fs::write(dir.join("b.txt"), b"hello world").unwrap();
		fs::write(dir.join(".hidden"), b"left out").unwrap();
		build_manifest(dir, DatasetFormat::Text).unwrap().0
	}

	#[test]
	fn a_device_or_a_link_to_one_is_refused_before_it_is_read() {
		// A buyer's `file:///dev/zero` once hashed forever, with the provider's loop stuck.
		for path in ["/dev/zero", "/dev/urandom"] {
			let err = hash_files(Path::new(path)).unwrap_err().to_string();
			assert!(err.contains("neither a plain file"), "{path}: {err}");
		}
		let dir = tempfile::tempdir().unwrap();
		let link = dir.path().join("zero");
		std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
		let err = hash_files(&link).unwrap_err().to_string();
		assert!(err.contains("neither a plain file"), "{err}");
		// Inside a directory, a link is not a plain file either.
		let err = hash_files(dir.path()).unwrap_err().to_string();
		assert!(err.contains("zero is not a plain file"), "{err}");
	}

	#[test]
	fn a_published_dataset_serves_checked_chunks_and_notices_changes() {
		let tmp = tempfile::tempdir().unwrap();
		let source = tmp.path().join("src");
		let manifest = corpus(&source);
		assert_eq!(
			manifest.files.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
			["a.txt", "b.txt"]
		);
		let store = DataStore::new(tmp.path().join("store"));
		assert_eq!(store.publish(&source, DatasetFormat::Text).unwrap(), manifest);
		let hash = manifest.hash();
		assert_eq!(store.manifest(&hash).unwrap(), Some(manifest.clone()));
		let chunk = store.read_chunk(&hash, ChunkId { file: 1, chunk: 0 }).unwrap();
		assert_eq!(chunk.as_deref(), Some(&b"hello world"[..]));
		assert_eq!(store.read_chunk(&hash, ChunkId { file: 2, chunk: 0 }).unwrap(), None);
		assert_eq!(
			store.read_chunk(&H256::repeat_byte(3), ChunkId { file: 0, chunk: 0 }).unwrap(),
			None
		);
		// The buyer edits a file after publishing: the changed chunk is no longer served,
		// and opening the dataset says which.
		fs::write(source.join("b.txt"), b"HELLO world").unwrap();
		assert_eq!(store.read_chunk(&hash, ChunkId { file: 1, chunk: 0 }).unwrap(), None);
		let reference = DatasetRef { content_hash: hash, uri: Default::default() };
		let err = store.open_verified(&reference).unwrap_err().to_string();
		assert!(err.contains("chunk 0 of b.txt does not match"), "{err}");
		// A sub-directory is refused by name.
		fs::create_dir_all(source.join("nested")).unwrap();
		let err = build_manifest(&source, DatasetFormat::Text).unwrap_err().to_string();
		assert!(err.contains("nested is not a plain file"), "{err}");
	}

	#[test]
	fn a_fetch_keeps_only_checked_chunks_and_resumes() {
		let tmp = tempfile::tempdir().unwrap();
		let source = tmp.path().join("src");
		let manifest = corpus(&source);
		let a = fs::read(source.join("a.txt")).unwrap();
		let store = DataStore::new(tmp.path().join("store"));
		let all = store.begin_fetch(&manifest).unwrap();
		assert_eq!(all.len(), 3);
		assert!(store.locate(&manifest.hash()).unwrap().is_none(), "not whole yet");
		// Wrong bytes and short bytes are refused and leave nothing written.
		let first = ChunkId { file: 0, chunk: 0 };
		let mut wrong = a[..CHUNK_BYTES as usize].to_vec();
		wrong[5] ^= 1;
		let err = store.write_chunk(&manifest, first, &wrong).unwrap_err().to_string();
		assert!(err.contains("does not match its hash"), "{err}");
		let err = store.write_chunk(&manifest, first, &a[..10]).unwrap_err().to_string();
		assert!(err.contains("truncated?"), "{err}");
		let err = store
			.write_chunk(&manifest, ChunkId { file: 5, chunk: 0 }, b"x")
			.unwrap_err()
			.to_string();
		assert!(err.contains("no file 5"), "{err}");
		store.write_chunk(&manifest, first, &a[..CHUNK_BYTES as usize]).unwrap();
		// What arrived is served already (any holder serves it), and a resumed fetch
		// (another process, after a crash) asks only for the rest.
		assert!(store.read_chunk(&manifest.hash(), first).unwrap().is_some());
		let rest = store.begin_fetch(&manifest).unwrap();
		assert_eq!(rest, vec![ChunkId { file: 0, chunk: 1 }, ChunkId { file: 1, chunk: 0 }]);
		store.write_chunk(&manifest, rest[0], &a[CHUNK_BYTES as usize..]).unwrap();
		store.write_chunk(&manifest, rest[1], b"hello world").unwrap();
		let located = store.finish_fetch(&manifest).unwrap();
		assert_eq!(fs::read(located.dir.join("a.txt")).unwrap(), a);
		let reference = DatasetRef { content_hash: manifest.hash(), uri: Default::default() };
		assert!(store.open_verified(&reference).is_ok());
	}

	#[test]
	fn shipped_datasets_are_found_by_their_manifest_hash() {
		let store = DataStore::new(tempfile::tempdir().unwrap().path());
		for shipped in &SHIPPED {
			let located = store.locate(&H256(shipped.content_hash)).unwrap().expect("shipped");
			assert_eq!(located.manifest.format, shipped.format, "{}", shipped.name);
			assert!(store.open_verified(&shipped.reference()).is_ok());
		}
	}
}
