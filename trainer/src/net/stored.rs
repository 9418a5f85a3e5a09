//! Where served bytes are, and reading a piece of them. A committed work state is on disk
//! (the daemon keeps every committed start state of the challenge window there, and a large
//! model's optimizer moments and residual are three values per parameter, too much to hold a
//! window of in memory), or in memory where the disk failed. The global state a trainer
//! serves to joiners is read from the state itself until its checkpoint is written
//! ([`CheckpointView`]), then from that file, held open: the next round's checkpoint
//! replaces the file's name, not the bytes being served. A kept state whose moments another
//! kept state holds too is served from runs of the files that hold its parts
//! ([`Spliced`]: the moments stored once).

use std::{fs::File, ops::Range, os::unix::fs::FileExt, path::PathBuf, sync::Arc};

use crate::round::{
	checkpoint_view::CheckpointView,
	state_transfer::{piece_range, STATE_PIECE_BYTES},
};

/// Served bytes.
#[derive(Clone, Debug)]
pub enum StoredBytes {
	/// In this file (written whole before it is served; opened for each piece).
	File(PathBuf),
	/// In this open file (written whole before it was opened).
	Open(Arc<File>),
	/// In memory.
	Memory(Arc<Vec<u8>>),
	/// A checkpoint read from the state it encodes (the newest global state, until its file
	/// is written).
	Checkpoint(Arc<CheckpointView>),
	/// Joined from runs of files and bytes (each file written whole before it was listed).
	Spliced(Arc<Spliced>),
}

/// One run of [`Spliced`] bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Run {
	/// These bytes.
	Bytes(Vec<u8>),
	/// `len` bytes of this file from `offset`.
	File {
		/// The file.
		path: PathBuf,
		/// Where the run starts in it.
		offset: u64,
		/// How many bytes it takes.
		len: u64,
	},
}

impl Run {
	fn len(&self) -> u64 {
		match self {
			Run::Bytes(bytes) => bytes.len() as u64,
			Run::File { len, .. } => *len,
		}
	}
}

/// Bytes that are runs of other bytes, one after another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spliced {
	runs: Vec<Run>,
}

impl Spliced {
	/// The bytes of `runs`, in order.
	pub fn new(runs: Vec<Run>) -> Self {
		Spliced { runs }
	}

	/// Its runs.
	pub fn runs(&self) -> &[Run] {
		&self.runs
	}

	/// How many bytes it joins.
	pub fn len(&self) -> u64 {
		self.runs.iter().map(Run::len).sum()
	}

	/// Whether it joins none.
	pub fn is_empty(&self) -> bool {
		self.len() == 0
	}

	/// Its bytes in `range` (within [`Spliced::len`]); a file shorter than its run is an
	/// error, not a short read.
	pub fn read(&self, range: Range<u64>) -> std::io::Result<Vec<u8>> {
		let mut out = Vec::with_capacity(range.end.saturating_sub(range.start) as usize);
		let mut at = 0u64;
		for run in &self.runs {
			let (start, end) = (at, at + run.len());
			at = end;
			let (from, to) = (range.start.max(start), range.end.min(end));
			if from >= to {
				continue;
			}
			let (skip, take) = (from - start, (to - from) as usize);
			match run {
				Run::Bytes(bytes) => out.extend_from_slice(&bytes[skip as usize..][..take]),
				Run::File { path, offset, .. } => {
					let old = out.len();
					out.resize(old + take, 0);
					File::open(path)?.read_exact_at(&mut out[old..], offset + skip)?;
				}
			}
		}
		if (out.len() as u64) < range.end.saturating_sub(range.start) {
			let why = format!("{range:?} of {at} spliced bytes");
			return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, why));
		}
		Ok(out)
	}
}

impl StoredBytes {
	/// The bytes in `range` of all `total`, or why they cannot be read.
	fn read(
		&self,
		range: impl Fn(u64) -> Result<Range<u64>, String>,
	) -> Result<(u64, Vec<u8>), String> {
		let unreadable = |e: std::io::Error| format!("reading the stored bytes: {e}");
		let from_file = |file: &File| {
			let total = file.metadata().map_err(unreadable)?.len();
			let r = range(total)?;
			let mut piece = vec![0u8; (r.end - r.start) as usize];
			file.read_exact_at(&mut piece, r.start).map_err(unreadable)?;
			Ok((total, piece))
		};
		match self {
			StoredBytes::Memory(bytes) => {
				let total = bytes.len() as u64;
				let r = range(total)?;
				Ok((total, bytes[r.start as usize..r.end as usize].to_vec()))
			}
			StoredBytes::File(path) => from_file(&File::open(path).map_err(unreadable)?),
			StoredBytes::Open(file) => from_file(file),
			StoredBytes::Checkpoint(view) => {
				let r = range(view.len())?;
				Ok((view.len(), view.read(r).map_err(|e| e.to_string())?))
			}
			StoredBytes::Spliced(spliced) => {
				let r = range(spliced.len())?;
				Ok((spliced.len(), spliced.read(r).map_err(unreadable)?))
			}
		}
	}

	/// A work state's size and its piece `index` (of [`STATE_PIECE_BYTES`]; the last may be
	/// shorter), or why it cannot be read.
	pub fn piece(&self, index: u32) -> Result<(u64, Vec<u8>), String> {
		self.read(|total| {
			piece_range(total, STATE_PIECE_BYTES, index)
				.ok_or_else(|| format!("no piece {index} of a work state of {total} bytes"))
		})
	}

	/// The bytes in `range` of stored bytes that must be `len` long (a served global state's
	/// piece), or why they cannot be read.
	pub fn range(&self, len: u64, range: Range<u64>) -> Result<Vec<u8>, String> {
		let (_, bytes) = self.read(|total| {
			if total == len && range.end <= total {
				Ok(range.clone())
			} else {
				Err(format!("{total} bytes stored where {len} were served"))
			}
		})?;
		Ok(bytes)
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
			[StoredBytes::File(path.clone()), StoredBytes::Memory(Arc::new(bytes.clone()))]
		{
			assert_eq!(source.piece(0).unwrap(), (total, bytes[..piece].to_vec()));
			assert_eq!(source.piece(1).unwrap(), (total, bytes[piece..].to_vec()));
			let err = source.piece(2).unwrap_err();
			assert!(err.contains("no piece 2 of a work state of"), "{err}");
		}
		std::fs::remove_file(&path).unwrap();
		let err = StoredBytes::File(path).piece(0).unwrap_err();
		assert!(err.contains("reading the stored bytes"), "{err}");
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
		let server = crate::net::test_service(&runtime, Vec::new(), 1 << 30, None);
		let id = [9; 32];
		server.send(Command::ServeWorkState { id, round: 3, bytes: StoredBytes::File(path) });
		let addr = loop {
			if let Event::Listening(addr) = next(&server) {
				break addr;
			}
		};
		let server_id = server.local_peer_id;
		// The fetcher takes no answer longer than one piece and a bit: the state is not one.
		let limit = (piece + (1 << 16)) as u64;
		let address = addr.with(libp2p::multiaddr::Protocol::P2p(server_id));
		let client = crate::net::test_service(&runtime, vec![address], limit, None);
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
		// Not a state in the parts format (no magic of one): its bytes, joined.
		assert!(fetched == crate::round::fetch::Fetched::Bytes(state), "the state as stored");
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
