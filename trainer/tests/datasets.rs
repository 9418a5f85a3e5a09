//! Content-addressed datasets end to end: `grid-trainer data publish` serves a buyer's token
//! files over libp2p; fetchers take them from it and from hostile holders, keep only what
//! checks out against the reference, and refuse a dataset nobody serves correctly.

use std::{
	collections::HashSet,
	io::{BufRead, BufReader},
	path::Path,
	process::{Child, Command, Stdio},
	sync::{mpsc, Arc},
	time::Duration,
};

use codec::Encode;
use futures::StreamExt;
use grid_primitives::{
	job::DatasetRef,
	manifest::{DatasetFormat, DatasetManifest},
	provider::BoundedBytes,
};
use grid_trainer::{
	daemon::{data_node::DataNode, datasets::ensure},
	data::{
		self,
		store::{build_manifest, ChunkId},
		DataStore, HttpHosts, LocalFiles, MinRate, SourcePolicy,
	},
	net::data::{data_behaviour, peer_of, DataRequest, DataResponse, Ticket},
};
use libp2p::{multiaddr::Protocol, request_response, swarm::SwarmEvent, Multiaddr};
use polkadot_sdk::sp_core::H256;

/// A `grid-trainer` process, the lines it prints and the last lines it logs; stopped when
/// the test ends, however it ends.
struct Spawned {
	child: Child,
	lines: mpsc::Receiver<String>,
	/// Its last [`LOG_LINES`] lines of log (stderr), shown when it fails the test.
	log: Arc<std::sync::Mutex<std::collections::VecDeque<String>>>,
}

/// Lines of a process's log kept to show when it fails a test.
const LOG_LINES: usize = 30;

impl Spawned {
	fn start<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Spawned {
		let mut child = Command::new(env!("CARGO_BIN_EXE_grid-trainer"))
			.args(args)
			.stdout(Stdio::piped())
			.stderr(Stdio::piped())
			.spawn()
			.expect("starting grid-trainer");
		let stdout = child.stdout.take().unwrap();
		let (tx, lines) = mpsc::channel();
		std::thread::spawn(move || {
			for line in BufReader::new(stdout).lines().map_while(Result::ok) {
				let _ = tx.send(line);
			}
		});
		let stderr = child.stderr.take().unwrap();
		let log = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
		let kept = log.clone();
		std::thread::spawn(move || {
			for line in BufReader::new(stderr).lines().map_while(Result::ok) {
				let mut kept = kept.lock().unwrap();
				if kept.len() == LOG_LINES {
					kept.pop_front();
				}
				kept.push_back(line);
			}
		});
		Spawned { child, lines, log }
	}

	/// The rest of the first line starting with `prefix` (lines before it are skipped).
	fn after(&self, prefix: &str, wait: Duration) -> String {
		let deadline = std::time::Instant::now() + wait;
		loop {
			let left = deadline.saturating_duration_since(std::time::Instant::now());
			let line = self.lines.recv_timeout(left).unwrap_or_else(|e| {
				let log = self.log.lock().unwrap().iter().cloned().collect::<Vec<_>>().join("\n");
				panic!(
					"no line starting with {prefix:?} within {wait:?}: {e}; its log ends:\n{log}"
				)
			});
			if let Some(rest) = line.strip_prefix(prefix) {
				return rest.to_owned();
			}
		}
	}

	/// Sends `signal` to the process (to pause or resume it).
	fn signal(&self, signal: libc::c_int) {
		// SAFETY: kill(2) on the pid of a child this test started and has not reaped.
		assert_eq!(unsafe { libc::kill(self.child.id() as libc::pid_t, signal) }, 0);
	}
}

impl Drop for Spawned {
	fn drop(&mut self) {
		let _ = self.child.kill();
		let _ = self.child.wait();
	}
}

/// Starts `grid-trainer data publish` on `path` (with `extra` arguments) and returns it with
/// the reference and the address it printed.
fn publish(path: &Path, store: &Path, extra: &[&str]) -> (Spawned, H256, Multiaddr) {
	let mut args: Vec<std::ffi::OsString> =
		["data", "publish", "--format", "tokens-u16", "--listen", "/ip4/127.0.0.1/tcp/0"]
			.iter()
			.chain(extra)
			.map(Into::into)
			.collect();
	args.extend(["--store".into(), store.into(), path.into()]);
	let publisher = Spawned::start(&args);
	let wait = Duration::from_secs(60);
	let reference = grid_primitives::datasets::parse_hex32(&publisher.after("reference ", wait))
		.map(H256)
		.expect("a reference");
	let address = publisher.after("serving on ", wait).parse::<Multiaddr>().unwrap();
	(publisher, reference, address)
}

/// How a hostile holder lies (or, for `Late`, how an honest one is not ready yet).
#[derive(Clone)]
enum Lie {
	/// The true manifest, then chunks with their bytes reversed.
	Chunks,
	/// A manifest of other files.
	Manifest,
	/// The true manifest; each chunk is missing the first time it is asked for, then served
	/// from the dataset's files in this directory (a holder still fetching it).
	Late(std::path::PathBuf),
	/// The true manifest and a ticket to a bulk lane that answers every chunk with wrong
	/// bytes (chunks asked over the stream are missing).
	Lane,
	/// The true manifest and no chunk ever (a holder that has none yet): honest, no help.
	Empty,
}

/// A bulk lane on loopback that takes any ticket and answers each ask with a chunk of the
/// right length and wrong bytes (the wire format of `daemon::bulk`); its port.
async fn lying_lane(manifest: DatasetManifest) -> u16 {
	use tokio::io::{AsyncReadExt, AsyncWriteExt};
	let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
	let port = listener.local_addr().unwrap().port();
	tokio::spawn(async move {
		while let Ok((mut stream, _)) = listener.accept().await {
			let manifest = manifest.clone();
			tokio::spawn(async move {
				let mut ticket = [0u8; 32];
				stream.read_exact(&mut ticket).await?;
				let mut ask = [0u8; 8];
				while stream.read_exact(&mut ask).await.is_ok() {
					let (file, chunk) = (&ask[..4], &ask[4..]);
					let at = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap());
					let range = manifest.files[at(file) as usize].chunk_range(at(chunk)).unwrap();
					let len = (range.end - range.start) as u32;
					let header = [&[0u8][..], file, chunk, &len.to_le_bytes()].concat();
					stream.write_all(&header).await?;
					stream.write_all(&vec![7u8; len as usize]).await?;
				}
				std::io::Result::Ok(())
			});
		}
	});
	port
}

/// A swarm of the dataset protocol alone, with a fresh identity.
fn data_swarm() -> libp2p::Swarm<request_response::Behaviour<grid_trainer::net::data::DataCodec>> {
	libp2p::SwarmBuilder::with_new_identity()
		.with_tokio()
		.with_tcp(Default::default(), libp2p::noise::Config::new, libp2p::yamux::Config::default)
		.unwrap()
		.with_behaviour(|_| data_behaviour(Duration::from_secs(30)))
		.unwrap()
		.with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(60)))
		.build()
}

/// Starts a holder that answers every request with `lie`, on the test's runtime; its address.
async fn hostile(manifest: DatasetManifest, lie: Lie) -> Multiaddr {
	let mut swarm = data_swarm();
	swarm.listen_on("/ip4/127.0.0.1/tcp/0".parse().unwrap()).unwrap();
	let peer = *swarm.local_peer_id();
	let address = loop {
		if let SwarmEvent::NewListenAddr { address, .. } = swarm.select_next_some().await {
			break address.with(Protocol::P2p(peer));
		}
	};
	let lane = lying_lane(manifest.clone()).await;
	let mut other = manifest.clone();
	other.files[0].chunks[0] = H256::repeat_byte(9);
	let mut asked = std::collections::HashSet::new();
	tokio::spawn(async move {
		loop {
			if let SwarmEvent::Behaviour(request_response::Event::Message {
				message: request_response::Message::Request { request, channel, .. },
				..
			}) = swarm.select_next_some().await
			{
				let response = match (request, &lie) {
					(DataRequest::Bulk { .. }, Lie::Lane) => {
						DataResponse::Bulk { port: lane, ticket: Ticket([0; 32]) }
					}
					(DataRequest::Bulk { .. }, _) => DataResponse::Missing,
					(DataRequest::Chunk { .. }, Lie::Lane | Lie::Empty) => DataResponse::Missing,
					(
						DataRequest::Manifest { .. },
						Lie::Chunks | Lie::Late(_) | Lie::Lane | Lie::Empty,
					) => DataResponse::Manifest(manifest.encode()),
					(DataRequest::Manifest { .. }, Lie::Manifest) => {
						DataResponse::Manifest(other.encode())
					}
					(DataRequest::Chunk { file, chunk, .. }, Lie::Late(dir)) => {
						match asked.insert((file, chunk)) {
							true => DataResponse::Missing,
							false => {
								let file = &manifest.files[file as usize];
								let range = file.chunk_range(chunk).unwrap();
								let bytes = std::fs::read(dir.join(&file.name)).unwrap();
								let range = range.start as usize..range.end as usize;
								DataResponse::Chunk(bytes[range].to_vec())
							}
						}
					}
					(DataRequest::Chunk { file, chunk, .. }, _) => {
						let file = &manifest.files[file as usize];
						let range = file.chunk_range(chunk).unwrap();
						DataResponse::Chunk(vec![7u8; (range.end - range.start) as usize])
					}
				};
				let _ = swarm.behaviour_mut().send_response(channel, response);
			}
		}
	});
	address
}

/// `n` u16 tokens below 5000, varied by `salt`, as bytes.
fn tokens(n: usize, salt: u16) -> Vec<u8> {
	(0..n)
		.flat_map(|i| ((i as u16).wrapping_mul(31).wrapping_add(salt) % 5000).to_le_bytes())
		.collect()
}

/// What the holder at `address` answers to a request for a ticket to its bulk lane.
async fn ask_ticket(address: &Multiaddr, dataset: H256) -> DataResponse {
	let mut swarm = data_swarm();
	let peer = peer_of(address).unwrap();
	swarm.add_peer_address(peer, address.clone());
	swarm.behaviour_mut().send_request(&peer, DataRequest::Bulk { dataset });
	let answer = async {
		loop {
			match swarm.select_next_some().await {
				SwarmEvent::Behaviour(request_response::Event::Message {
					message: request_response::Message::Response { response, .. },
					..
				}) => return response,
				SwarmEvent::Behaviour(request_response::Event::OutboundFailure {
					error, ..
				}) => panic!("asking {address} for a ticket: {error}"),
				_ => {}
			}
		}
	};
	tokio::time::timeout(Duration::from_secs(60), answer).await.expect("an answer within 60 s")
}

/// Every file of `manifest` in `located` is byte for byte the one in `dir`.
fn assert_same_files(located: &data::store::Located, manifest: &DatasetManifest, dir: &Path) {
	for file in &manifest.files {
		let fetched = std::fs::read(located.dir.join(&file.name)).unwrap();
		assert_eq!(fetched, std::fs::read(dir.join(&file.name)).unwrap(), "{}", file.name);
	}
}

fn reference(hash: H256, holders: &[&Multiaddr]) -> DatasetRef {
	let uri: Vec<String> = holders.iter().map(|a| a.to_string()).collect();
	DatasetRef { content_hash: hash, uri: BoundedBytes::truncate_from(uri.join(" ").into_bytes()) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_published_dataset_is_fetched_whole_and_liars_are_refused() {
	let tmp = tempfile::tempdir().unwrap();
	// Two files of u16 tokens, over seven chunks in all (the first spans six): more than one
	// request goes to each holder at once.
	let dir = tmp.path().join("corpus");
	std::fs::create_dir_all(&dir).unwrap();
	std::fs::write(dir.join("train-0.bin"), tokens(3_000_000, 1)).unwrap();
	std::fs::write(dir.join("train-1.bin"), tokens(90_000, 2)).unwrap();
	let (manifest, _) = build_manifest(&dir, DatasetFormat::TokensU16).unwrap();
	assert_eq!(manifest.files.iter().map(|f| f.chunks.len()).sum::<usize>(), 7);

	let (_publisher, hash, buyer) = publish(&dir, &tmp.path().join("buyer-store"), &[]);
	assert_eq!(hash, manifest.hash(), "the publisher's reference is the manifest's hash");
	// The publisher offers its bulk lane, so the fetches below from it go over the lane.
	assert!(matches!(ask_ticket(&buyer, hash).await, DataResponse::Bulk { .. }));

	// A holder serving bad chunks next to the buyer: the fetch takes only what checks out.
	let liar = hostile(manifest.clone(), Lie::Chunks).await;
	let store = DataStore::new(tmp.path().join("provider-store"));
	let located =
		ensure(&store, &reference(hash, &[&liar, &buyer]), &[], &SourcePolicy::ANY, false)
			.await
			.unwrap();
	assert_same_files(&located, &manifest, &dir);
	// A provider that takes datasets of fewer bytes than the manifest lists refuses it by
	// its manifest.
	let small = SourcePolicy { max_bytes: manifest.size() - 1, ..SourcePolicy::ANY };
	let capped = DataStore::new(tmp.path().join("capped-store"));
	let err = ensure(&capped, &reference(hash, &[&buyer]), &[], &small, false)
		.await
		.unwrap_err()
		.to_string();
	assert!(err.contains(&format!("{} bytes or more, over the", manifest.size())), "{err}");
	assert!(capped.locate(&hash).unwrap().is_none());
	// A holder whose bulk lane serves bad chunks is refused like a liar on the stream.
	let lane_liar = hostile(manifest.clone(), Lie::Lane).await;
	let store2 = DataStore::new(tmp.path().join("lane-store"));
	let located =
		ensure(&store2, &reference(hash, &[&lane_liar, &buyer]), &[], &SourcePolicy::ANY, false)
			.await
			.unwrap();
	assert_same_files(&located, &manifest, &dir);

	// A publisher that serves only over the encrypted stream gives no ticket, and serves.
	let (_private, same, private) =
		publish(&dir, &tmp.path().join("private-store"), &["--encrypted-only"]);
	assert_eq!(same, hash);
	assert_eq!(ask_ticket(&private, hash).await, DataResponse::Missing);
	let store3 = DataStore::new(tmp.path().join("from-private-store"));
	let located = ensure(&store3, &reference(hash, &[&private]), &[], &SourcePolicy::ANY, false)
		.await
		.unwrap();
	assert_same_files(&located, &manifest, &dir);

	// Held whole now: opened for a model with the vocabulary, refused for one without.
	let gpt = |vocab| {
		grid_primitives::job::ModelSpec::Gpt(grid_primitives::job::GptConfig {
			vocab,
			context: 16,
			layers: 1,
			heads: 1,
			width: 8,
		})
	};
	let opened = data::load(&store, &reference(hash, &[&buyer]), &gpt(5000)).unwrap();
	assert!(opened.train_len() > 2_500_000);
	let err =
		data::load(&store, &reference(hash, &[&buyer]), &gpt(4096)).err().unwrap().to_string();
	assert!(err.contains("vocabulary has 4096"), "{err}");

	// A second provider fetches from the first (any holder serves it), through the CLI.
	let provider = DataNode::new(
		libp2p::identity::Keypair::generate_ed25519(),
		store.clone(),
		&["/ip4/127.0.0.1/tcp/0".parse().unwrap()],
	)
	.unwrap();
	let mut provider = provider;
	let provider_address = provider.listening().await.unwrap();
	tokio::spawn(provider.serve());
	let second = tmp.path().join("second-store");
	let out = tokio::task::spawn_blocking(move || {
		Command::new(env!("CARGO_BIN_EXE_grid-trainer"))
			.args(["data", "fetch", "--reference", &format!("0x{}", hex::encode(hash.0)), "--uri"])
			.arg(provider_address.to_string())
			.arg("--store")
			.arg(second)
			.output()
	})
	.await
	.unwrap()
	.unwrap();
	let stdout = String::from_utf8_lossy(&out.stdout);
	assert!(
		out.status.success() && stdout.contains("tokens-u16, 2 files"),
		"{stdout}\n{}",
		String::from_utf8_lossy(&out.stderr)
	);

	// `data info` shows what the reference is, from the buyer: format, files, holders.
	let info = |uri: String| async move {
		tokio::task::spawn_blocking(move || {
			Command::new(env!("CARGO_BIN_EXE_grid-trainer"))
				.args(["data", "info", "--reference", &format!("0x{}", hex::encode(hash.0))])
				.args(["--uri", &uri])
				.output()
				.unwrap()
		})
		.await
		.unwrap()
	};
	let out = info(buyer.to_string()).await;
	let stdout = String::from_utf8_lossy(&out.stdout);
	assert!(
		out.status.success()
			&& stdout.contains(&format!("holder {buyer}"))
			&& stdout.contains("tokens-u16, 2 files")
			&& stdout.contains("train-0.bin (6000000 bytes, 6 chunks)"),
		"{stdout}\n{}",
		String::from_utf8_lossy(&out.stderr)
	);

	// A holder that does not have the chunks yet (it is fetching them itself) is asked again
	// a little later, and the fetch completes from it alone.
	let late = hostile(manifest.clone(), Lie::Late(dir.clone())).await;
	let patient = DataStore::new(tmp.path().join("patient-store"));
	let located =
		ensure(&patient, &reference(hash, &[&late]), &[], &SourcePolicy::ANY, false).await.unwrap();
	assert_same_files(&located, &manifest, &dir);

	// A holder whose node is not up yet when the fetch starts (its first dials are refused at
	// once) is asked again after a rest, and the fetch completes from it: the other holder
	// serves the manifest and never a chunk.
	let empty = hostile(manifest.clone(), Lie::Empty).await;
	let key = libp2p::identity::Keypair::generate_ed25519();
	let port = free_port();
	let starting: Multiaddr =
		format!("/ip4/127.0.0.1/tcp/{port}/p2p/{}", key.public().to_peer_id()).parse().unwrap();
	let (serving, started) = (store.clone(), tokio::time::Instant::now());
	tokio::spawn(async move {
		tokio::time::sleep(Duration::from_secs(3)).await;
		let listen = format!("/ip4/127.0.0.1/tcp/{port}").parse().unwrap();
		let mut node = DataNode::new(key, serving, &[listen]).unwrap();
		node.listening().await.unwrap();
		node.serve().await;
	});
	let waiting = DataStore::new(tmp.path().join("waiting-store"));
	let located =
		ensure(&waiting, &reference(hash, &[&empty, &starting]), &[], &SourcePolicy::ANY, false)
			.await
			.unwrap();
	assert_same_files(&located, &manifest, &dir);
	assert!(started.elapsed() >= Duration::from_secs(3), "fetched before the holder was up");

	// Only liars: nothing is accepted, and the error says why.
	let alone = DataStore::new(tmp.path().join("fooled-store"));
	let err = ensure(&alone, &reference(hash, &[&liar]), &[], &SourcePolicy::ANY, false)
		.await
		.unwrap_err()
		.to_string();
	assert!(err.contains("every holder failed or served bad data"), "{err}");
	assert!(alone.locate(&hash).unwrap().is_none());
	let err = ensure(&alone, &reference(hash, &[&lane_liar]), &[], &SourcePolicy::ANY, false)
		.await
		.unwrap_err()
		.to_string();
	assert!(err.contains("every holder failed or served bad data"), "{err}");
	assert!(alone.locate(&hash).unwrap().is_none());
	let forger = hostile(manifest.clone(), Lie::Manifest).await;
	let err = ensure(&alone, &reference(hash, &[&forger]), &[], &SourcePolicy::ANY, false)
		.await
		.unwrap_err()
		.to_string();
	assert!(err.contains("no holder served its manifest") && err.contains("hashes to"), "{err}");
	assert!(alone.locate(&hash).unwrap().is_none());
	let out = info(forger.to_string()).await;
	let stderr = String::from_utf8_lossy(&out.stderr);
	assert!(!out.status.success() && stderr.contains("no holder served its manifest"), "{stderr}");
}

/// Serves `body` to every HTTP GET on a loopback port, on a thread; the port.
fn serve_http(body: Vec<u8>, tls: Option<Arc<rustls::ServerConfig>>) -> u16 {
	let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
	let port = listener.local_addr().unwrap().port();
	std::thread::spawn(move || {
		for stream in listener.incoming() {
			let Ok(stream) = stream else { continue };
			match &tls {
				None => reply(stream, &body),
				Some(config) => {
					let Ok(tls) = rustls::ServerConnection::new(config.clone()) else { continue };
					reply(rustls::StreamOwned::new(tls, stream), &body)
				}
			}
		}
	});
	port
}

/// Serves `body` to every HTTP GET on a loopback port without announcing its length (it ends
/// when the connection closes); the port.
fn serve_http_unannounced(body: Vec<u8>) -> u16 {
	let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
	let port = listener.local_addr().unwrap().port();
	std::thread::spawn(move || {
		for mut stream in listener.incoming().flatten() {
			let mut request = [0u8; 4096];
			let _ = std::io::Read::read(&mut stream, &mut request);
			let head = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
			let _ = std::io::Write::write_all(&mut stream, head)
				.and_then(|_| std::io::Write::write_all(&mut stream, &body));
		}
	});
	port
}

/// Reads a request and answers it with `body`.
fn reply(mut stream: impl std::io::Read + std::io::Write, body: &[u8]) {
	let mut request = [0u8; 4096];
	let _ = stream.read(&mut request);
	let head =
		format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
	let _ = stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(body));
	let _ = stream.flush();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_and_file_sources_are_checked_against_the_reference() {
	let tmp = tempfile::tempdir().unwrap();
	let dir = tmp.path().join("src");
	std::fs::create_dir_all(&dir).unwrap();
	let body: Vec<u8> =
		(0..50_000u32).flat_map(|i| ((i * 7 % 3000) as u16).to_le_bytes()).collect();
	std::fs::write(dir.join("corpus.bin"), &body).unwrap();
	let (manifest, _) = build_manifest(&dir.join("corpus.bin"), DatasetFormat::TokensU16).unwrap();
	let hash = manifest.hash();
	let port = serve_http(body.clone(), None);
	let at = |uri: String, hash| DatasetRef {
		content_hash: hash,
		uri: BoundedBytes::truncate_from(uri.into_bytes()),
	};

	// Over HTTP: downloaded, then recognised by its manifest's hash.
	let store = DataStore::new(tmp.path().join("http-store"));
	let located = ensure(
		&store,
		&at(format!("http://127.0.0.1:{port}/corpus.bin"), hash),
		&[],
		&SourcePolicy::ANY,
		false,
	)
	.await
	.unwrap();
	assert_eq!(located.manifest, manifest);
	assert_eq!(std::fs::read(located.dir.join("corpus.bin")).unwrap(), body);
	// The same bytes under another reference are not that dataset.
	let other = DataStore::new(tmp.path().join("other-store"));
	let err = ensure(
		&other,
		&at(format!("http://127.0.0.1:{port}/corpus.bin"), H256::repeat_byte(5)),
		&[],
		&SourcePolicy::ANY,
		false,
	)
	.await
	.unwrap_err()
	.to_string();
	assert!(err.contains("not this dataset"), "{err}");
	assert!(other.locate(&H256::repeat_byte(5)).unwrap().is_none());
	// More bytes than a provider takes, by the announced length or, unannounced, as they
	// come: refused, and nothing kept.
	let small = SourcePolicy { max_bytes: body.len() as u64 - 1, ..SourcePolicy::ANY };
	let unannounced = serve_http_unannounced(body.clone());
	for port in [port, unannounced] {
		let capped = DataStore::new(tmp.path().join(format!("capped-{port}")));
		let uri = format!("http://127.0.0.1:{port}/corpus.bin");
		let err =
			ensure(&capped, &at(uri, hash), &[], &small, false).await.unwrap_err().to_string();
		assert!(err.contains("bytes or more, over the"), "{err}");
		assert!(capped.locate(&hash).unwrap().is_none());
		let downloads = capped.root().join("downloads").join(hex::encode(hash.0));
		assert!(!downloads.join("corpus.bin").exists(), "the partial download is removed");
	}
	// A provider fetches from public hosts only (unless told otherwise): a stranger's job
	// naming its own machine, its network or a cloud's metadata service is refused.
	let public_only = SourcePolicy { http: HttpHosts::Public, ..SourcePolicy::ANY };
	for uri in [
		format!("http://127.0.0.1:{port}/corpus.bin"),
		format!("http://localhost:{port}/corpus.bin"),
		"http://169.254.169.254/latest/meta-data/corpus.bin".to_owned(),
		"http://[::1]:9/corpus.bin".to_owned(),
	] {
		let store = DataStore::new(tmp.path().join("public-only"));
		let err = ensure(&store, &at(uri.clone(), hash), &[], &public_only, false)
			.await
			.unwrap_err()
			.to_string();
		assert!(err.contains("which this provider does not fetch from"), "{uri}: {err}");
		assert!(store.locate(&hash).unwrap().is_none());
	}
	let whole = DataStore::new(tmp.path().join("unannounced"));
	let uri = format!("http://127.0.0.1:{unannounced}/corpus.bin");
	let located = ensure(&whole, &at(uri, hash), &[], &SourcePolicy::ANY, false).await.unwrap();
	assert_eq!(located.manifest, manifest);

	// From a path on this machine: the same check.
	let local = DataStore::new(tmp.path().join("file-store"));
	let uri = format!("file://{}", dir.display());
	assert_eq!(
		ensure(&local, &at(uri.clone(), hash), &[], &SourcePolicy::ANY, false)
			.await
			.unwrap()
			.manifest,
		manifest
	);
	std::fs::write(dir.join("corpus.bin"), &body[..body.len() - 2]).unwrap();
	let fresh = DataStore::new(tmp.path().join("file-store-2"));
	let err = ensure(&fresh, &at(uri, hash), &[], &SourcePolicy::ANY, false)
		.await
		.unwrap_err()
		.to_string();
	assert!(err.contains("not this dataset"), "{err}");
}

/// Serves every HTTP GET on a loopback port, on a thread per request, a `len`-byte body
/// announced whole that comes 100 bytes every 100 ms (a kilobyte a second); each request's
/// end (the reader gone) is sent on the channel. The port.
fn serve_http_trickle(len: usize) -> (u16, mpsc::Receiver<()>) {
	use std::io::{Read, Write};
	let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
	let port = listener.local_addr().unwrap().port();
	let (ended, ends) = mpsc::channel();
	std::thread::spawn(move || {
		for mut stream in listener.incoming().flatten() {
			let ended = ended.clone();
			std::thread::spawn(move || {
				let _ = stream.read(&mut [0u8; 4096]);
				let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
				let mut sent = stream.write_all(head.as_bytes());
				while sent.is_ok() {
					std::thread::sleep(Duration::from_millis(100));
					sent = stream.write_all(&[b'a'; 100]).and_then(|()| stream.flush());
				}
				let _ = ended.send(());
			});
		}
	});
	(port, ends)
}

/// A provider's floor under a fetch's rate: 1 MB/s after a second's grace.
fn floor() -> SourcePolicy {
	let bytes_per_sec = std::num::NonZeroU64::new(1_000_000).unwrap();
	let min_rate = Some(MinRate { bytes_per_sec, grace: Duration::from_secs(1) });
	SourcePolicy { min_rate, ..SourcePolicy::ANY }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_that_trickle_are_given_up_at_the_providers_floor() {
	let tmp = tempfile::tempdir().unwrap();
	let hash = H256::repeat_byte(3);
	let at = |uri: String| DatasetRef {
		content_hash: hash,
		uri: BoundedBytes::truncate_from(uri.into_bytes()),
	};
	// An HTTP server that sends a kilobyte a second: refused once the grace is over, the
	// partial download removed.
	let (port, ends) = serve_http_trickle(10_000_000);
	let uri = format!("http://127.0.0.1:{port}/corpus.bin");
	let store = DataStore::new(tmp.path().join("http"));
	let err = ensure(&store, &at(uri.clone()), &[], &floor(), false).await.unwrap_err().to_string();
	assert!(err.contains("slower than the 1000000 bytes/s allowed after 1s"), "{err}");
	assert!(store.locate(&hash).unwrap().is_none());
	let partial = store.root().join("downloads").join(hex::encode(hash.0)).join("corpus.bin");
	assert!(!partial.exists(), "the partial download is removed");
	ends.recv_timeout(Duration::from_secs(30)).expect("the server sees the reader go");
	// Without a floor it would go on for hours; a fetch whose waiter gives up on it (a
	// provider's search that joined another job) stops reading at once, not at the end.
	let unhurried = DataStore::new(tmp.path().join("unhurried"));
	let waited = tokio::time::timeout(
		Duration::from_secs(2),
		ensure(&unhurried, &at(uri), &[], &SourcePolicy::ANY, false),
	)
	.await;
	assert!(waited.is_err(), "a 10 MB trickle finished in 2 s: {waited:?}");
	ends.recv_timeout(Duration::from_secs(30)).expect("the abandoned download stops reading");

	// Holders that serve a chunk every few seconds (a publisher capped at 2 Mbit/s, three
	// chunks of 1 MiB): under the floor, refused; without one, fetched whole, so it is the
	// floor that refused it.
	let dir = tmp.path().join("corpus");
	std::fs::create_dir_all(&dir).unwrap();
	std::fs::write(dir.join("train-0.bin"), tokens(1_500_000, 5)).unwrap();
	let slow = ["--max-upload-mbit", "2"];
	let (_publisher, hash, buyer) = publish(&dir, &tmp.path().join("buyer-store"), &slow);
	let fetcher = DataStore::new(tmp.path().join("p2p"));
	let err = ensure(&fetcher, &reference(hash, &[&buyer]), &[], &floor(), false)
		.await
		.unwrap_err()
		.to_string();
	assert!(err.contains("slower than the 1000000 bytes/s allowed after 1s"), "{err}");
	assert!(fetcher.locate(&hash).unwrap().is_none());
	let patient = DataStore::new(tmp.path().join("p2p-patient"));
	let located = ensure(&patient, &reference(hash, &[&buyer]), &[], &SourcePolicy::ANY, false)
		.await
		.unwrap();
	assert_same_files(&located, &located.manifest, &dir);
}

/// A provider reads a job's `file://` source only inside the directories it lists: a
/// hostile buyer's job naming a path of its choosing on the provider's machine (a file that
/// never ends, the provider's keys, a way out by `..` or a link) is refused before anything
/// is read, and nothing lands in the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_file_source_is_read_only_inside_the_providers_directories() {
	let tmp = tempfile::tempdir().unwrap();
	let allowed = tmp.path().join("corpora");
	let secret = tmp.path().join("keys");
	std::fs::create_dir_all(allowed.join("shakespeare")).unwrap();
	std::fs::create_dir_all(&secret).unwrap();
	let body: Vec<u8> =
		(0..20_000u32).flat_map(|i| ((i * 7 % 3000) as u16).to_le_bytes()).collect();
	std::fs::write(allowed.join("shakespeare/corpus.bin"), &body).unwrap();
	std::fs::write(secret.join("corpus.bin"), &body).unwrap();
	std::os::unix::fs::symlink(&secret, allowed.join("link-out")).unwrap();
	let hash =
		build_manifest(&secret.join("corpus.bin"), DatasetFormat::TokensU16).unwrap().0.hash();
	let at = |path: &Path| DatasetRef {
		content_hash: hash,
		uri: BoundedBytes::truncate_from(format!("file://{}", path.display()).into_bytes()),
	};
	let store = DataStore::new(tmp.path().join("store"));
	let local = LocalFiles::Under(vec![allowed.canonicalize().unwrap()]);
	let provider =
		SourcePolicy { local: local.clone(), max_bytes: body.len() as u64, ..SourcePolicy::ANY };
	let refused = [
		// A regular file by its metadata, hundreds of gigabytes long when read.
		(Path::new("/proc/self/pagemap").to_path_buf(), "outside this provider's"),
		(secret.join("corpus.bin"), "outside this provider's"),
		(allowed.join("../keys/corpus.bin"), "outside this provider's"),
		(allowed.join("link-out/corpus.bin"), "outside this provider's"),
		(allowed.join("missing.bin"), "cannot be resolved"),
	];
	for (path, expected) in refused {
		let err = ensure(&store, &at(&path), &[], &provider, false).await.unwrap_err().to_string();
		assert!(err.contains(expected), "{}: {err}", path.display());
	}
	assert!(store.locate(&hash).unwrap().is_none(), "nothing was recorded");
	// Inside, but more than it takes.
	let smaller = SourcePolicy { local, max_bytes: body.len() as u64 - 1, ..SourcePolicy::ANY };
	let err = ensure(&store, &at(&allowed.join("shakespeare")), &[], &smaller, false)
		.await
		.unwrap_err()
		.to_string();
	assert!(err.contains("over the"), "{err}");
	// A provider that lists no directories reads no path at all.
	let none = SourcePolicy { local: LocalFiles::Under(vec![]), ..SourcePolicy::ANY };
	let err = ensure(&store, &at(&allowed.join("shakespeare")), &[], &none, false)
		.await
		.unwrap_err()
		.to_string();
	assert!(err.contains("this provider reads none"), "{err}");
	// Inside a listed directory, the dataset is read and checked as any other.
	let located =
		ensure(&store, &at(&allowed.join("shakespeare")), &[], &provider, false).await.unwrap();
	assert_eq!(std::fs::read(located.dir.join("corpus.bin")).unwrap(), body);
}

/// A loopback TCP port free a moment ago.
fn free_port() -> u16 {
	std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The chunks of `manifest` that `store` holds (whole or in its part files), checked.
fn held(store: &DataStore, manifest: &DatasetManifest, ids: &[ChunkId]) -> HashSet<ChunkId> {
	let hash = manifest.hash();
	ids.iter().copied().filter(|id| store.read_chunk(&hash, *id).ok().flatten().is_some()).collect()
}

#[test]
fn fetchers_finish_from_each_other_after_the_publisher_dies() {
	let tmp = tempfile::tempdir().unwrap();
	let dir = tmp.path().join("corpus");
	std::fs::create_dir_all(&dir).unwrap();
	std::fs::write(dir.join("train-0.bin"), tokens(4_000_000, 3)).unwrap();
	let (manifest, _) = build_manifest(&dir, DatasetFormat::TokensU16).unwrap();
	let ids: Vec<ChunkId> = (0..manifest.files[0].chunks.len() as u32)
		.map(|chunk| ChunkId { file: 0, chunk })
		.collect();
	assert_eq!(ids.len(), 8);

	// Every node uploads at 8 Mbit/s (a chunk a second), so the publisher cannot hand out the
	// whole dataset before the fetchers share what they have.
	let limit = ["--max-upload-mbit", "8"];
	let (publisher, hash, buyer) = publish(&dir, &tmp.path().join("buyer-store"), &limit);
	assert_eq!(hash, manifest.hash());
	// Three fetchers with keys and ports chosen here, each listing the publisher and the
	// other two as holders.
	let stores: Vec<_> = (0..3).map(|i| tmp.path().join(format!("fetcher-{i}"))).collect();
	let listen: Vec<String> =
		stores.iter().map(|_| format!("/ip4/127.0.0.1/tcp/{}", free_port())).collect();
	let addresses: Vec<String> = stores
		.iter()
		.zip(&listen)
		.map(|(store, at)| {
			let key = grid_trainer::chain::keys::p2p_key(&store.join("p2p.key")).unwrap();
			format!("{at}/p2p/{}", key.public().to_peer_id())
		})
		.collect();
	let reference = format!("0x{}", hex::encode(hash.0));
	let fetchers: Vec<Spawned> = (0..3)
		.map(|i| {
			let mut args: Vec<String> = ["data", "fetch", "--reference", &reference]
				.iter()
				.map(|a| a.to_string())
				.collect();
			args.extend(["--uri".into(), buyer.to_string()]);
			for (_, other) in addresses.iter().enumerate().filter(|(j, _)| *j != i) {
				args.extend(["--holder".into(), other.clone()]);
			}
			args.extend(["--store".into(), stores[i].display().to_string()]);
			args.extend(["--listen".into(), listen[i].clone()]);
			args.extend(limit.iter().map(|a| a.to_string()));
			Spawned::start(&args)
		})
		.collect();

	// Once the fetchers together hold every chunk, the publisher is killed (the fetchers
	// paused meanwhile, so what each held then is known exactly).
	let views: Vec<DataStore> = stores.iter().map(DataStore::new).collect();
	let deadline = std::time::Instant::now() + Duration::from_secs(300);
	let mut union = HashSet::new();
	while union.len() < ids.len() {
		assert!(std::time::Instant::now() < deadline, "the fetchers never held it all together");
		std::thread::sleep(Duration::from_millis(50));
		union = views.iter().flat_map(|v| held(v, &manifest, &ids)).collect();
	}
	fetchers.iter().for_each(|f| f.signal(libc::SIGSTOP));
	let at_kill: Vec<usize> = views.iter().map(|v| held(v, &manifest, &ids).len()).collect();
	drop(publisher);
	fetchers.iter().for_each(|f| f.signal(libc::SIGCONT));
	eprintln!("chunks each fetcher held when the publisher died: {at_kill:?}");
	assert!(
		at_kill.iter().any(|n| *n < ids.len()),
		"a fetcher still lacked chunks when the publisher died: {at_kill:?} of {}",
		ids.len()
	);

	// Each finishes from the others, and holds exactly the published bytes.
	let original = std::fs::read(dir.join("train-0.bin")).unwrap();
	for (i, fetcher) in fetchers.iter().enumerate() {
		let files = fetcher.after("files in ", Duration::from_secs(300));
		let fetched = std::fs::read(Path::new(&files).join("train-0.bin")).unwrap();
		assert!(fetched == original, "fetcher {i} (held {} chunks at the kill)", at_kill[i]);
	}
}

#[test]
fn https_sources_are_fetched_over_tls_and_checked() {
	let tmp = tempfile::tempdir().unwrap();
	let dir = tmp.path().join("src");
	std::fs::create_dir_all(&dir).unwrap();
	let body = tokens(40_000, 9);
	std::fs::write(dir.join("corpus.bin"), &body).unwrap();
	let (manifest, _) = build_manifest(&dir.join("corpus.bin"), DatasetFormat::TokensU16).unwrap();
	let hash = manifest.hash();
	// A server with a certificate of its own, which only a machine told to trust it trusts.
	let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
	let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.serialize_private_key_der().into());
	let config = rustls::ServerConfig::builder()
		.with_no_client_auth()
		.with_single_cert(vec![cert.serialize_der().unwrap().into()], key)
		.unwrap();
	let port = serve_http(body.clone(), Some(Arc::new(config)));
	let ca = tmp.path().join("ca.pem");
	std::fs::write(&ca, cert.serialize_pem().unwrap()).unwrap();
	let fetch = |store: &Path, trusted: Option<&Path>| {
		let mut command = Command::new(env!("CARGO_BIN_EXE_grid-trainer"));
		command
			.args(["data", "fetch", "--reference", &format!("0x{}", hex::encode(hash.0))])
			.args(["--uri", &format!("https://localhost:{port}/corpus.bin"), "--store"])
			.arg(store);
		match trusted {
			Some(ca) => command.env("SSL_CERT_FILE", ca),
			None => command.env_remove("SSL_CERT_FILE"),
		};
		command.output().unwrap()
	};

	let out = fetch(&tmp.path().join("trusting"), Some(&ca));
	let stdout = String::from_utf8_lossy(&out.stdout);
	assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
	let files = stdout.lines().find_map(|l| l.strip_prefix("files in ")).expect("a files line");
	assert_eq!(std::fs::read(Path::new(files).join("corpus.bin")).unwrap(), body);

	// The same server, to a machine that does not trust its certificate: refused, nothing kept.
	let wary = tmp.path().join("wary");
	let out = fetch(&wary, None);
	let stderr = String::from_utf8_lossy(&out.stderr);
	assert!(!out.status.success() && stderr.contains("certificate"), "{stderr}");
	assert!(DataStore::new(&wary).locate(&hash).unwrap().is_none());
}
