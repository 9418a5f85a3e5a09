//! Fetching a served global state outside the round loop (a buyer's `job fetch`, the state
//! sync benchmark): ask each peer that connects for its state's header, then its pieces, a
//! few at a time, each checked as it arrives ([`crate::round::state_transfer`]).

use std::{
	collections::{HashMap, HashSet},
	sync::mpsc::RecvTimeoutError,
	time::{Duration, Instant},
};

use anyhow::bail;
use grid_primitives::job::JobId;
use libp2p::PeerId;

use crate::{
	net::{Command, Event, NetworkHandle},
	round::{
		messages::{Request, Response},
		state_transfer::{StateDownload, PIECES_IN_FLIGHT},
	},
};

/// Fetches the state that one of `peers` serves for `job` over `net` and hands each
/// assembled state (its peer and bytes) to `accept`, until `accept` takes one (its value is
/// returned) or `patience` runs out. A state `accept` refuses (its reason is logged), a bad
/// piece or a failed request drops that peer's download; the others go on. A header that
/// announces more than `max_len` bytes ([`max_state_len`](crate::round::state_transfer::max_state_len)
/// of the job's model) is refused.
pub fn fetch_state<T>(
	net: &NetworkHandle,
	job: JobId,
	peers: &[PeerId],
	(patience, max_len): (Duration, u64),
	mut accept: impl FnMut(PeerId, Vec<u8>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
	let start = Instant::now();
	let mut asked = HashSet::new();
	let mut downloads: HashMap<PeerId, StateDownload> = HashMap::new();
	let ask_pieces = |download: &mut StateDownload| {
		for index in download.next_pieces(PIECES_IN_FLIGHT) {
			let (peer, state_hash) = (download.peer, download.state_hash);
			let request = Request::StatePiece { job, state_hash, index };
			net.send(Command::Fetch { id: u64::from(index), peer, request });
		}
	};
	while start.elapsed() < patience {
		let event = match net.events.recv_timeout(Duration::from_millis(500)) {
			Ok(event) => event,
			Err(RecvTimeoutError::Timeout) => continue,
			Err(RecvTimeoutError::Disconnected) => bail!("the network task stopped"),
		};
		let (peer, result, id) = match event {
			Event::Connected(peer) if peers.contains(&peer) && asked.insert(peer) => {
				net.send(Command::Fetch { id: 0, peer, request: Request::State { job } });
				continue;
			}
			Event::Fetched { peer, result, id, .. } => (peer, result, id),
			_ => continue,
		};
		match result {
			Ok(header @ Response::State { .. }) => {
				match StateDownload::from_header(peer, header, max_len) {
					Ok(mut download) => {
						ask_pieces(&mut download);
						downloads.insert(peer, download);
					}
					Err(e) => tracing::warn!("{e}"),
				}
			}
			Ok(Response::StatePiece(bytes)) => {
				let Some(download) = downloads.get_mut(&peer) else { continue };
				let index = u32::try_from(id).unwrap_or(u32::MAX);
				if let Err(e) = download.arrived(index, bytes) {
					tracing::warn!("{e}");
					downloads.remove(&peer);
					continue;
				}
				ask_pieces(download);
				if !download.is_complete() {
					continue;
				}
				let Some(bytes) = downloads.remove(&peer).and_then(StateDownload::into_bytes)
				else {
					continue;
				};
				match accept(peer, bytes) {
					Ok(value) => return Ok(value),
					Err(e) => tracing::warn!("state from {peer} refused: {e:#}"),
				}
			}
			other => {
				downloads.remove(&peer);
				tracing::warn!(
					"{peer} did not send its state: {:?}",
					other.map(|r| format!("{r:?}").chars().take(80).collect::<String>())
				);
			}
		}
	}
	bail!("no peer served its state within {patience:?}")
}
