//! The trainer's HTTP endpoint: `/health` (what validators probe), `/status` (the status
//! report as JSON, with the provider's earnings, for the UI) and `/metrics` (the same numbers
//! for Prometheus). A deliberately small HTTP/1.1 server: GET only, one response per
//! connection.

use std::{
	net::SocketAddr,
	sync::{Arc, Mutex},
};

use prometheus_client::{encoding::text::encode, metrics::gauge::Gauge, registry::Registry};
use serde_json::Value;
use tokio::{
	io::{AsyncReadExt, AsyncWriteExt},
	net::TcpListener,
};

/// The latest status report (the trainer's `status.json`).
pub type StatusSink = Arc<Mutex<Value>>;
/// Adds what the trainer does not know (the chain's view: earnings) to a report.
pub type Extra = Arc<dyn Fn() -> Value + Send + Sync>;

/// The address an endpoint URL (`http://host:port/...`) names, to listen on.
pub fn listen_address(endpoint: &str) -> Result<SocketAddr, String> {
	let rest = endpoint
		.strip_prefix("http://")
		.ok_or_else(|| format!("endpoint {endpoint:?} is not an http:// URL"))?;
	let authority = rest.split('/').next().unwrap_or(rest);
	authority.parse().map_err(|e| format!("endpoint {endpoint:?}: {e} (use ip:port)"))
}

/// The report served at `/status`: the trainer's, with `extra`'s fields merged in.
fn report(sink: &StatusSink, extra: &Extra) -> Value {
	let mut value = sink.lock().unwrap_or_else(|e| e.into_inner()).clone();
	if let (Value::Object(map), Value::Object(more)) = (&mut value, extra()) {
		map.extend(more);
	}
	value
}

/// The numbers of a report in Prometheus' text format.
pub fn metrics_text(report: &Value) -> String {
	let mut registry = Registry::with_prefix("grid_trainer");
	let number =
		|path: &[&str]| path.iter().try_fold(report, |v, key| v.get(key)).and_then(Value::as_f64);
	let gauges: [(&str, &str, &[&str]); 10] = [
		("round", "Round the trainer's state is the base of", &["round"]),
		("eval_loss", "Held-out loss after the last round", &["last_eval_loss"]),
		("train_loss", "Mean training loss of its last update", &["last_train_loss"]),
		("rounds_contributed", "Rounds it contributed an update to", &["rounds_contributed"]),
		("utilization", "Share of wall time spent computing", &["utilization"]),
		("median_rtt_ms", "Median round-trip time to peers (ms)", &["median_rtt_ms"]),
		(
			"median_throughput_mbit",
			"Median download throughput (Mbit/s)",
			&["median_throughput_mbit"],
		),
		("equivocations_seen", "Peers caught equivocating", &["equivocations_seen"]),
		("earned_grid", "Rewards earned on chain (GRID)", &["chain", "earned_grid"]),
		("rounds_paid", "Rounds paid on chain", &["chain", "rounds_paid"]),
	];
	for (name, help, path) in gauges {
		if let Some(value) = number(path) {
			let gauge = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
			gauge.set(value);
			registry.register(name, help, gauge);
		}
	}
	let peers = report.get("peers").and_then(Value::as_array).map_or(0, Vec::len);
	let gauge = Gauge::<i64>::default();
	gauge.set(peers as i64);
	registry.register("peers", "Peers known", gauge);
	let mut text = String::new();
	encode(&mut text, &registry).expect("writing to a String cannot fail");
	text
}

fn response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
	format!(
		"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
		 access-control-allow-origin: *\r\nconnection: close\r\n\r\n{body}",
		body.len()
	)
	.into_bytes()
}

/// The response to a request line (`GET /path HTTP/1.1`).
fn answer(request_line: &str, sink: &StatusSink, extra: &Extra) -> Vec<u8> {
	let mut parts = request_line.split_whitespace();
	let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
	if method != "GET" {
		return response("405 Method Not Allowed", "text/plain", "GET only\n");
	}
	match path {
		"/health" => response("200 OK", "text/plain", "ok\n"),
		"/status" => response("200 OK", "application/json", &report(sink, extra).to_string()),
		"/metrics" => response(
			"200 OK",
			"application/openmetrics-text; version=1.0.0; charset=utf-8",
			&metrics_text(&report(sink, extra)),
		),
		_ => response("404 Not Found", "text/plain", "try /health, /status or /metrics\n"),
	}
}

/// Binds `address` for [`serve`]: done first, so that a port already in use is refused
/// before the provider registers or joins a job, and nobody takes it meanwhile.
pub fn bind(address: SocketAddr) -> std::io::Result<std::net::TcpListener> {
	let listener = std::net::TcpListener::bind(address)?;
	listener.set_nonblocking(true)?;
	Ok(listener)
}

/// Serves the endpoints on `listener` (from [`bind`]) until the runtime stops.
pub async fn serve(
	listener: std::net::TcpListener,
	sink: StatusSink,
	extra: Extra,
) -> std::io::Result<()> {
	let address = listener.local_addr()?;
	let listener = TcpListener::from_std(listener)?;
	tracing::info!("status server on http://{address} (/health, /status, /metrics)");
	tokio::spawn(async move {
		loop {
			let Ok((mut stream, _)) = listener.accept().await else { continue };
			let (sink, extra) = (sink.clone(), extra.clone());
			tokio::spawn(async move {
				// A request line and headers fit in 4 KiB; anything longer is cut off.
				let mut buf = vec![0u8; 4096];
				let read =
					tokio::time::timeout(std::time::Duration::from_secs(5), stream.read(&mut buf))
						.await;
				let Ok(Ok(n)) = read else { return };
				let text = String::from_utf8_lossy(&buf[..n]);
				let line = text.lines().next().unwrap_or("");
				let _ = stream.write_all(&answer(line, &sink, &extra)).await;
				let _ = stream.shutdown().await;
			});
		}
	});
	Ok(())
}

#[cfg(test)]
mod tests {
	use super::*;

	fn fixtures() -> (StatusSink, Extra) {
		let sink = Arc::new(Mutex::new(serde_json::json!({
			"round": 4, "last_eval_loss": 2.5, "peers": [{}, {}], "utilization": 0.9
		})));
		let extra: Extra =
			Arc::new(|| serde_json::json!({ "chain": { "earned_grid": 30.5, "rounds_paid": 3 } }));
		(sink, extra)
	}

	#[test]
	fn endpoints_answer_and_bad_requests_say_why() {
		let (sink, extra) = fixtures();
		let text = |line| String::from_utf8(answer(line, &sink, &extra)).unwrap();
		assert!(text("GET /health HTTP/1.1").starts_with("HTTP/1.1 200 OK"));
		let status = text("GET /status HTTP/1.1");
		let body = status.split("\r\n\r\n").nth(1).unwrap();
		let value: Value = serde_json::from_str(body).unwrap();
		assert_eq!(value["round"], 4);
		assert_eq!(value["chain"]["rounds_paid"], 3);
		let metrics = text("GET /metrics HTTP/1.1");
		assert!(metrics.contains("grid_trainer_round 4"), "{metrics}");
		assert!(metrics.contains("grid_trainer_earned_grid 30.5"), "{metrics}");
		assert!(metrics.contains("grid_trainer_peers 2"), "{metrics}");
		assert!(metrics.contains("# EOF"), "{metrics}");
		assert!(text("POST /status HTTP/1.1").starts_with("HTTP/1.1 405"));
		assert!(text("GET /nope HTTP/1.1").starts_with("HTTP/1.1 404"));
		assert!(text("").starts_with("HTTP/1.1 405"));
	}

	#[test]
	fn endpoint_urls_give_listen_addresses() {
		assert_eq!(listen_address("http://127.0.0.1:9100/health").unwrap().port(), 9100);
		assert!(listen_address("https://x:1/").unwrap_err().contains("http://"));
		assert!(listen_address("http://localhost/health").unwrap_err().contains("ip:port"));
	}
}
