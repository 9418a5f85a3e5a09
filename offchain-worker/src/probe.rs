//! Probing providers' HTTP endpoints: liveness and latency.

use alloc::vec::Vec;
use grid_primitives::work::ProbeResult;
use polkadot_sdk::{
	sp_core::offchain::{Duration, HttpRequestStatus, Timestamp},
	sp_io::offchain,
	sp_runtime::offchain::http,
};

/// How often pending probes are polled, which bounds the latency measurement's resolution.
const POLL_MS: u64 = 5;

/// Probes every target concurrently; each gets `timeout_ms` to answer with a 2xx status.
/// A target whose URL is not `http(s)://` text, or that cannot be requested, is down.
pub fn probe_all<A>(targets: Vec<(A, Vec<u8>)>, timeout_ms: u64) -> Vec<ProbeResult<A>> {
	let start = offchain::timestamp();
	let deadline = start.add(Duration::from_millis(timeout_ms));
	let timeout = timeout_ms.min(u64::from(u32::MAX)) as u32;
	let mut results = Vec::with_capacity(targets.len());
	let mut pending = Vec::new();
	for (provider, url) in targets {
		match start_probe(&url, deadline) {
			Some(request) => pending.push((provider, request)),
			None => results.push(ProbeResult { provider, ok: false, latency_ms: timeout }),
		}
	}
	while !pending.is_empty() && offchain::timestamp() < deadline {
		let step = offchain::timestamp().add(Duration::from_millis(POLL_MS));
		let ids: Vec<_> = pending.iter().map(|(_, request)| request.id).collect();
		let statuses = offchain::http_response_wait(&ids, Some(earliest(step, deadline)));
		let elapsed = elapsed_ms(start);
		let mut still = Vec::new();
		for ((provider, request), status) in pending.into_iter().zip(statuses) {
			match status {
				HttpRequestStatus::DeadlineReached => still.push((provider, request)),
				HttpRequestStatus::Finished(code) => results.push(ProbeResult {
					provider,
					ok: (200..300).contains(&code),
					latency_ms: elapsed,
				}),
				HttpRequestStatus::IoError | HttpRequestStatus::Invalid => {
					results.push(ProbeResult { provider, ok: false, latency_ms: elapsed })
				}
			}
		}
		pending = still;
	}
	results.extend(pending.into_iter().map(|(provider, _)| ProbeResult {
		provider,
		ok: false,
		latency_ms: timeout,
	}));
	results
}

/// Starts a GET of `url`, if it is an `http(s)://` URL in UTF-8.
fn start_probe(url: &[u8], deadline: Timestamp) -> Option<http::PendingRequest> {
	let url = core::str::from_utf8(url).ok()?;
	if !(url.starts_with("http://") || url.starts_with("https://")) {
		return None;
	}
	http::Request::get(url).deadline(deadline).send().ok()
}

fn earliest(a: Timestamp, b: Timestamp) -> Timestamp {
	if a.unix_millis() <= b.unix_millis() {
		a
	} else {
		b
	}
}

fn elapsed_ms(start: Timestamp) -> u32 {
	let millis = offchain::timestamp().diff(&start).millis();
	millis.min(u64::from(u32::MAX)) as u32
}
