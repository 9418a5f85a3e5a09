//! The validators' off-chain worker on a running `grid-node --dev` (Alice validates, her Aura
//! key is in the node's keystore): it probes registered providers' HTTP endpoints and its
//! signed reports land on chain in their health records.

use std::{
	io::{Read, Write},
	net::TcpListener,
	sync::{
		atomic::{AtomicBool, AtomicU32, Ordering},
		Arc,
	},
	thread,
	time::Duration,
};

use anyhow::Result;
use grid_e2e_tests::{
	calls::{register_call, send},
	chain::{view, ChainContext},
	free_port, wait_for, Node,
};
use grid_primitives::currency::UNIT;
use grid_runtime::Runtime;
use pallet_providers::ProviderViewFunction;
use polkadot_sdk::{
	sp_core::{ed25519, Pair},
	sp_keyring::Sr25519Keyring,
};

/// A provider's health endpoint: answers every request with 200 and counts them. Stops
/// when the returned flag is set (and one more connection arrives or the test ends).
fn health_endpoint() -> Result<(u16, Arc<AtomicU32>, Arc<AtomicBool>)> {
	let listener = TcpListener::bind("127.0.0.1:0")?;
	let port = listener.local_addr()?.port();
	let (hits, stop) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicBool::new(false)));
	let (counter, stopped) = (hits.clone(), stop.clone());
	thread::spawn(move || {
		for stream in listener.incoming() {
			if stopped.load(Ordering::Relaxed) {
				break;
			}
			let Ok(mut stream) = stream else { continue };
			let mut request = [0u8; 1024];
			let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
			let _ = stream.read(&mut request);
			let _ = stream
				.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
			counter.fetch_add(1, Ordering::Relaxed);
		}
	});
	Ok((port, hits, stop))
}

#[test]
fn worker_probes_land_on_chain() -> Result<()> {
	let (port, hits, stop) = health_endpoint()?;
	let dead_port = free_port();
	let dir = tempfile::tempdir()?;
	let node = Node::start("dev-worker", dir.path(), &["--dev".into()])?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	let ctx = ChainContext::fetch(&node)?;
	let (up, down) = (Sr25519Keyring::Charlie, Sr25519Keyring::Dave);
	let live = format!("http://127.0.0.1:{port}/health");
	let dead = format!("http://127.0.0.1:{dead_port}/health");
	for (who, seed, endpoint) in [(up, 1u8, &live), (down, 2, &dead)] {
		let key = ed25519::Pair::from_seed(&[seed; 32]);
		send(&node, &ctx, who, register_call(&ctx, who, &key, 200 * UNIT, endpoint))?;
	}

	let health = |who: Sr25519Keyring| {
		view(&node, ProviderViewFunction::<Runtime>::new(who.to_account_id()))
			.ok()
			.flatten()
			.map(|v| v.health)
	};
	// Probes run every 5 blocks (30 s): allow a few rounds.
	let timeout = Duration::from_secs(120);
	let up_health = wait_for("a successful probe of Charlie", timeout, || {
		health(up).filter(|h| h.probes_ok > 0)
	})?;
	let down_health = wait_for("a failed probe of Dave", timeout, || {
		health(down).filter(|h| h.probes_failed > 0)
	})?;
	stop.store(true, Ordering::Relaxed);

	assert_eq!(up_health.probes_failed, 0, "the live endpoint never failed");
	assert!(up_health.last_probe.is_some_and(|p| p.ok && p.latency_ms < 2_000));
	assert_eq!(down_health.probes_ok, 0, "nothing listens on the dead endpoint");
	assert!(hits.load(Ordering::Relaxed) >= 1, "the worker really called the endpoint");
	Ok(())
}
