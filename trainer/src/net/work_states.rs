//! Where a served work state's bytes are, and reading one piece of them: on disk (the
//! daemon keeps every committed start state of the challenge window there, and a large
//! model's optimizer moments and residual are three values per parameter, too much to hold
//! a window of in memory), or in memory where the disk failed.

use std::{os::unix::fs::FileExt, path::PathBuf, sync::Arc};

use crate::round::state_transfer::{piece_range, STATE_PIECE_BYTES};

/// A served work state's encoded bytes.
#[derive(Clone, Debug)]
pub enum WorkStateBytes {
	/// In this file (written whole before it is served).
	File(PathBuf),
	/// In memory.
	Memory(Arc<Vec<u8>>),
}

impl WorkStateBytes {
	/// The state's size and its piece `index` (of [`STATE_PIECE_BYTES`]; the last may be
	/// shorter), or why it cannot be read.
	pub fn piece(&self, index: u32) -> Result<(u64, Vec<u8>), String> {
		let range = |total: u64| {
			piece_range(total, STATE_PIECE_BYTES, index)
				.ok_or_else(|| format!("no piece {index} of a work state of {total} bytes"))
		};
		match self {
			WorkStateBytes::Memory(bytes) => {
				let total = bytes.len() as u64;
				let r = range(total)?;
				Ok((total, bytes[r.start as usize..r.end as usize].to_vec()))
			}
			WorkStateBytes::File(path) => {
				let unreadable = |e: std::io::Error| format!("reading the work state: {e}");
				let file = std::fs::File::open(path).map_err(unreadable)?;
				let total = file.metadata().map_err(unreadable)?.len();
				let r = range(total)?;
				let mut piece = vec![0u8; (r.end - r.start) as usize];
				file.read_exact_at(&mut piece, r.start).map_err(unreadable)?;
				Ok((total, piece))
			}
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_state_reads_the_same_pieces_from_disk_and_from_memory() {
		let piece = STATE_PIECE_BYTES as usize;
		let bytes: Vec<u8> = (0..piece + 7).map(|i| (i % 253) as u8).collect();
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("state.gws");
		std::fs::write(&path, &bytes).unwrap();
		let total = bytes.len() as u64;
		for source in
			[WorkStateBytes::File(path.clone()), WorkStateBytes::Memory(Arc::new(bytes.clone()))]
		{
			assert_eq!(source.piece(0).unwrap(), (total, bytes[..piece].to_vec()));
			assert_eq!(source.piece(1).unwrap(), (total, bytes[piece..].to_vec()));
			let err = source.piece(2).unwrap_err();
			assert!(err.contains("no piece 2 of a work state of"), "{err}");
		}
		std::fs::remove_file(&path).unwrap();
		let err = WorkStateBytes::File(path).piece(0).unwrap_err();
		assert!(err.contains("reading the work state"), "{err}");
	}

	/// A network service on loopback for job 1 that takes answers of at most
	/// `max_response_bytes`, bootstrapping from `bootstrap`.
	fn service(
		runtime: &tokio::runtime::Runtime,
		bootstrap: Vec<libp2p::Multiaddr>,
		max_response_bytes: u64,
	) -> crate::net::NetworkHandle {
		let config = crate::net::NetConfig {
			listen: vec!["/ip4/127.0.0.1/tcp/0".parse().unwrap()],
			bootstrap,
			job: 1,
			manifest_hash: [0; 32],
			behaviour: crate::net::behaviour::BehaviourConfig {
				agent: "grid-trainer/test".into(),
				max_response_bytes,
				request_timeout: std::time::Duration::from_secs(60),
				ping_interval: std::time::Duration::from_secs(5),
			},
			datasets: None,
		};
		let key = libp2p::identity::Keypair::generate_ed25519();
		crate::net::service::start(runtime.handle(), key, crate::net::Shaper::default(), config)
			.unwrap()
	}

	#[test]
	fn a_work_state_larger_than_any_answer_crosses_the_wire_in_pieces_from_disk() {
		use crate::net::{Command, Event};
		use crate::round::fetch::{Answer, Fetches};
		use std::time::{Duration, Instant};

		let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
		let piece = STATE_PIECE_BYTES as usize;
		let state: Vec<u8> = (0..2 * piece + 5).map(|i| (i % 249) as u8).collect();
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("round-3.gws");
		std::fs::write(&path, &state).unwrap();
		let deadline = Instant::now() + Duration::from_secs(60);
		let next = |net: &crate::net::NetworkHandle| {
			net.events.recv_timeout(deadline.saturating_duration_since(Instant::now())).unwrap()
		};
		let server = service(&runtime, Vec::new(), 1 << 30);
		let id = [9; 32];
		server.send(Command::ServeWorkState { id, round: 3, bytes: WorkStateBytes::File(path) });
		let addr = loop {
			if let Event::Listening(addr) = next(&server) {
				break addr;
			}
		};
		let server_id = server.local_peer_id;
		// The fetcher takes no answer longer than one piece and a bit: the state is not one.
		let limit = (piece + (1 << 16)) as u64;
		let address = addr.with(libp2p::multiaddr::Protocol::P2p(server_id));
		let client = service(&runtime, vec![address], limit);
		while !matches!(next(&client), Event::Connected(p) if p == server_id) {}
		let mut fetches = Fetches::flat(1, 1_000_000);
		let send = |out: crate::round::fetch::Outgoing| {
			client.send(Command::Fetch { id: out.id, peer: out.peer, request: out.request })
		};
		send(fetches.request_work_state(server_id, 3, id));
		let fetched = loop {
			let Event::Fetched { id, peer, result, .. } = next(&client) else { continue };
			match fetches.on_answer(id, peer, result, 0) {
				Answer::WorkStatePieces(requests) => requests.into_iter().for_each(send),
				Answer::WorkState { round: 3, result, .. } => break result.unwrap(),
				other => panic!("{other:?}"),
			}
		};
		assert!(fetched == state, "the state as stored");
		// A state it does not serve is refused with the reason.
		send(fetches.request_work_state(server_id, 4, [8; 32]));
		let why = loop {
			let Event::Fetched { id, peer, result, .. } = next(&client) else { continue };
			if let Answer::WorkState { result: Err(why), .. } =
				fetches.on_answer(id, peer, result, 0)
			{
				break why;
			}
		};
		assert!(why.contains("no work state"), "{why}");
	}
}
