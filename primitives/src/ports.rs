//! Loopback ports for local networks and tests: a port that nothing listens on yet, for a
//! process about to be started to listen on.
//!
//! Asking the kernel for port 0 finds a free port in its ephemeral range (Linux: 32768 to
//! 60999 by default), the range it also takes the local port of every outgoing connection
//! from: between the check and the new process's bind, a connection can take the port (seen
//! in CI: a provider's health server failed with "Address already in use" while nodes and
//! trainers dialled each other). Ports handed out here come from below that range instead,
//! from an offset of each process's own, and a process never hands out one twice, so
//! concurrent processes rarely try the same port.

use std::{
	io,
	net::TcpListener,
	sync::{
		atomic::{AtomicU32, Ordering},
		OnceLock,
	},
};

/// First port handed out.
const FIRST: u16 = 10_000;
/// Ports handed out: 10,000 to 31,999, below Linux's default ephemeral range.
const COUNT: u32 = 22_000;

/// A loopback TCP port nobody listens on right now, outside the kernel's ephemeral range.
pub fn free_loopback_port() -> io::Result<u16> {
	static START: OnceLock<u32> = OnceLock::new();
	static TAKEN: AtomicU32 = AtomicU32::new(0);
	// Processes started together have nearby ids: spread them over the range.
	let start = *START.get_or_init(|| std::process::id().wrapping_mul(2_654_435_761) % COUNT);
	for _ in 0..COUNT {
		let offset = (start + TAKEN.fetch_add(1, Ordering::Relaxed)) % COUNT;
		let port = FIRST + offset as u16;
		if TcpListener::bind(("127.0.0.1", port)).is_ok() {
			return Ok(port);
		}
	}
	Err(io::Error::new(
		io::ErrorKind::AddrInUse,
		format!("no free loopback port from {FIRST} to {}", u32::from(FIRST) + COUNT - 1),
	))
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn ports_are_free_distinct_and_below_the_ephemeral_range() {
		let ports: Vec<u16> = (0..50).map(|_| free_loopback_port().unwrap()).collect();
		let mut distinct = ports.clone();
		distinct.sort_unstable();
		distinct.dedup();
		assert_eq!(distinct.len(), ports.len(), "a port handed out twice: {ports:?}");
		for port in ports {
			assert!((10_000..32_000).contains(&port), "{port}");
			TcpListener::bind(("127.0.0.1", port)).expect("the port is free");
		}
	}

	#[test]
	fn a_port_someone_listens_on_is_skipped() {
		let port = free_loopback_port().unwrap();
		let _held = TcpListener::bind(("127.0.0.1", port)).unwrap();
		for _ in 0..20 {
			assert_ne!(free_loopback_port().unwrap(), port);
		}
	}
}
