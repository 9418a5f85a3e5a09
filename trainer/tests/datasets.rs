//! Content-addressed datasets end to end: `grid-trainer data publish` serves a buyer's token
//! files over libp2p; fetchers take them from it and from hostile holders, keep only what
//! checks out against the reference, and refuse a dataset nobody serves correctly.

use std::{
	io::{BufRead, BufReader},
	path::Path,
	process::{Child, Command, Stdio},
	sync::mpsc,
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
	data::{self, store::build_manifest, DataStore},
	net::data::{data_behaviour, DataRequest, DataResponse},
};
use libp2p::{multiaddr::Protocol, request_response, swarm::SwarmEvent, Multiaddr};
use polkadot_sdk::sp_core::H256;

/// Stops the publisher when the test ends, however it ends.
struct Publisher(Child);

impl Drop for Publisher {
	fn drop(&mut self) {
		let _ = self.0.kill();
		let _ = self.0.wait();
	}
}

/// Starts `grid-trainer data publish` on `path` and returns it with the reference and the
/// address it printed.
fn publish(path: &Path, store: &Path) -> (Publisher, H256, Multiaddr) {
	let child = Command::new(env!("CARGO_BIN_EXE_grid-trainer"))
		.args(["data", "publish", "--format", "tokens-u16", "--listen", "/ip4/127.0.0.1/tcp/0"])
		.arg("--store")
		.arg(store)
		.arg(path)
		.stdout(Stdio::piped())
		.stderr(Stdio::null())
		.spawn()
		.expect("starting grid-trainer data publish");
	let mut publisher = Publisher(child);
	let stdout = publisher.0.stdout.take().unwrap();
	let (tx, rx) = mpsc::channel();
	std::thread::spawn(move || {
		for line in BufReader::new(stdout).lines().map_while(Result::ok) {
			let _ = tx.send(line);
		}
	});
	let (mut reference, mut address) = (None, None);
	while address.is_none() {
		let line =
			rx.recv_timeout(Duration::from_secs(60)).expect("the publisher printed its address");
		if let Some(hex) = line.strip_prefix("reference ") {
			reference = grid_primitives::datasets::parse_hex32(hex).map(H256);
		}
		if let Some(a) = line.strip_prefix("serving on ") {
			address = Some(a.parse::<Multiaddr>().unwrap());
		}
	}
	(publisher, reference.expect("a reference line"), address.unwrap())
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
}

/// Starts a holder that answers every request with `lie`, on the test's runtime; its address.
async fn hostile(manifest: DatasetManifest, lie: Lie) -> Multiaddr {
	let mut swarm = libp2p::SwarmBuilder::with_new_identity()
		.with_tokio()
		.with_tcp(Default::default(), libp2p::noise::Config::new, libp2p::yamux::Config::default)
		.unwrap()
		.with_behaviour(|_| data_behaviour(Duration::from_secs(30)))
		.unwrap()
		.with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(60)))
		.build();
	swarm.listen_on("/ip4/127.0.0.1/tcp/0".parse().unwrap()).unwrap();
	let peer = *swarm.local_peer_id();
	let address = loop {
		if let SwarmEvent::NewListenAddr { address, .. } = swarm.select_next_some().await {
			break address.with(Protocol::P2p(peer));
		}
	};
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
					(DataRequest::Manifest { .. }, Lie::Chunks | Lie::Late(_)) => {
						DataResponse::Manifest(manifest.encode())
					}
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
	let tokens = |n: usize, salt: u16| -> Vec<u8> {
		(0..n)
			.flat_map(|i| ((i as u16).wrapping_mul(31).wrapping_add(salt) % 5000).to_le_bytes())
			.collect()
	};
	std::fs::write(dir.join("train-0.bin"), tokens(3_000_000, 1)).unwrap();
	std::fs::write(dir.join("train-1.bin"), tokens(90_000, 2)).unwrap();
	let (manifest, _) = build_manifest(&dir, DatasetFormat::TokensU16).unwrap();
	assert_eq!(manifest.files.iter().map(|f| f.chunks.len()).sum::<usize>(), 7);

	let (_publisher, hash, buyer) = publish(&dir, &tmp.path().join("buyer-store"));
	assert_eq!(hash, manifest.hash(), "the publisher's reference is the manifest's hash");

	// A holder serving bad chunks next to the buyer: the fetch takes only what checks out.
	let liar = hostile(manifest.clone(), Lie::Chunks).await;
	let store = DataStore::new(tmp.path().join("provider-store"));
	let located = ensure(&store, &reference(hash, &[&liar, &buyer]), &[], false).await.unwrap();
	for file in &manifest.files {
		let fetched = std::fs::read(located.dir.join(&file.name)).unwrap();
		assert_eq!(fetched, std::fs::read(dir.join(&file.name)).unwrap(), "{}", file.name);
	}
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
	let located = ensure(&patient, &reference(hash, &[&late]), &[], false).await.unwrap();
	for file in &manifest.files {
		let fetched = std::fs::read(located.dir.join(&file.name)).unwrap();
		assert_eq!(fetched, std::fs::read(dir.join(&file.name)).unwrap(), "{}", file.name);
	}

	// Only liars: nothing is accepted, and the error says why.
	let alone = DataStore::new(tmp.path().join("fooled-store"));
	let err = ensure(&alone, &reference(hash, &[&liar]), &[], false).await.unwrap_err().to_string();
	assert!(err.contains("every holder failed or served bad data"), "{err}");
	assert!(alone.locate(&hash).unwrap().is_none());
	let forger = hostile(manifest.clone(), Lie::Manifest).await;
	let err =
		ensure(&alone, &reference(hash, &[&forger]), &[], false).await.unwrap_err().to_string();
	assert!(err.contains("no holder served its manifest") && err.contains("hashes to"), "{err}");
	assert!(alone.locate(&hash).unwrap().is_none());
	let out = info(forger.to_string()).await;
	let stderr = String::from_utf8_lossy(&out.stderr);
	assert!(!out.status.success() && stderr.contains("no holder served its manifest"), "{stderr}");
}

/// Serves `body` to every HTTP GET on a loopback port, on a thread; the port.
fn serve_http(body: Vec<u8>) -> u16 {
	use std::io::{Read, Write};
	let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
	let port = listener.local_addr().unwrap().port();
	std::thread::spawn(move || {
		for stream in listener.incoming() {
			let Ok(mut stream) = stream else { continue };
			let mut request = [0u8; 4096];
			let _ = stream.read(&mut request);
			let head = format!(
				"HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
				body.len()
			);
			let _ = stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(&body));
		}
	});
	port
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
	let port = serve_http(body.clone());
	let at = |uri: String, hash| DatasetRef {
		content_hash: hash,
		uri: BoundedBytes::truncate_from(uri.into_bytes()),
	};

	// Over HTTP: downloaded, then recognised by its manifest's hash.
	let store = DataStore::new(tmp.path().join("http-store"));
	let located =
		ensure(&store, &at(format!("http://127.0.0.1:{port}/corpus.bin"), hash), &[], false)
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
		false,
	)
	.await
	.unwrap_err()
	.to_string();
	assert!(err.contains("not this dataset"), "{err}");
	assert!(other.locate(&H256::repeat_byte(5)).unwrap().is_none());

	// From a path on this machine: the same check.
	let local = DataStore::new(tmp.path().join("file-store"));
	let uri = format!("file://{}", dir.display());
	assert_eq!(
		ensure(&local, &at(uri.clone(), hash), &[], false).await.unwrap().manifest,
		manifest
	);
	std::fs::write(dir.join("corpus.bin"), &body[..body.len() - 2]).unwrap();
	let fresh = DataStore::new(tmp.path().join("file-store-2"));
	let err = ensure(&fresh, &at(uri, hash), &[], false).await.unwrap_err().to_string();
	assert!(err.contains("not this dataset"), "{err}");
}
