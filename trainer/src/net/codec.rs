//! The wire codec of the request-response protocols (fetching updates and state; fetching
//! datasets): a u32 little-endian length, then the SCALE bytes of a request or response.
//! Lengths are checked against the limits before anything is allocated, so a peer cannot make
//! a trainer read an unbounded message.

use async_trait::async_trait;
use codec::{Decode, Encode};
use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use libp2p::{request_response, StreamProtocol};
use std::{io, marker::PhantomData};

use crate::round::messages::{decode_exact, Request, Response, MAX_REQUEST_BYTES};

/// The fetch protocol's name (versioned: a change of messages is a new protocol).
pub const PROTOCOL: StreamProtocol = StreamProtocol::new("/grid/fetch/4");

/// Length-prefixed SCALE with size limits, for requests `Req` and responses `Resp`.
#[derive(Debug)]
pub struct ScaleCodec<Req, Resp> {
	/// Longest request accepted.
	pub max_request_bytes: u64,
	/// Longest response accepted (for fetches, a model checkpoint must fit).
	pub max_response_bytes: u64,
	types: PhantomData<fn() -> (Req, Resp)>,
}

impl<Req, Resp> Clone for ScaleCodec<Req, Resp> {
	fn clone(&self) -> Self {
		ScaleCodec::new(self.max_request_bytes, self.max_response_bytes)
	}
}

impl<Req, Resp> ScaleCodec<Req, Resp> {
	/// A codec with these limits.
	pub fn new(max_request_bytes: u64, max_response_bytes: u64) -> Self {
		ScaleCodec { max_request_bytes, max_response_bytes, types: PhantomData }
	}
}

/// The fetch protocol's codec: updates, state and work states.
pub type FetchCodec = ScaleCodec<Request, Response>;

impl FetchCodec {
	/// The fetch codec accepting responses up to `max_response_bytes`.
	pub fn fetch(max_response_bytes: u64) -> Self {
		ScaleCodec::new(MAX_REQUEST_BYTES, max_response_bytes)
	}
}

fn invalid(e: impl ToString) -> io::Error {
	io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

async fn read_frame<T: AsyncRead + Unpin + Send>(io: &mut T, limit: u64) -> io::Result<Vec<u8>> {
	let mut len = [0u8; 4];
	io.read_exact(&mut len).await?;
	let len = u64::from(u32::from_le_bytes(len));
	if len > limit {
		return Err(invalid(format!("message of {len} bytes exceeds the limit of {limit}")));
	}
	let mut buf = vec![0u8; len as usize];
	io.read_exact(&mut buf).await?;
	Ok(buf)
}

async fn write_frame<T: AsyncWrite + Unpin + Send>(
	io: &mut T,
	bytes: &[u8],
	limit: u64,
) -> io::Result<()> {
	let len = u32::try_from(bytes.len())
		.ok()
		.filter(|&l| u64::from(l) <= limit)
		.ok_or_else(|| invalid(format!("message of {} bytes over the limit", bytes.len())))?;
	io.write_all(&len.to_le_bytes()).await?;
	io.write_all(bytes).await?;
	io.close().await
}

#[async_trait]
impl<Req, Resp> request_response::Codec for ScaleCodec<Req, Resp>
where
	Req: Encode + Decode + Send + 'static,
	Resp: Encode + Decode + Send + 'static,
{
	type Protocol = StreamProtocol;
	type Request = Req;
	type Response = Resp;

	async fn read_request<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Req>
	where
		T: AsyncRead + Unpin + Send,
	{
		decode_exact(&read_frame(io, self.max_request_bytes).await?).map_err(invalid)
	}

	async fn read_response<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Resp>
	where
		T: AsyncRead + Unpin + Send,
	{
		decode_exact(&read_frame(io, self.max_response_bytes).await?).map_err(invalid)
	}

	async fn write_request<T>(&mut self, _: &StreamProtocol, io: &mut T, req: Req) -> io::Result<()>
	where
		T: AsyncWrite + Unpin + Send,
	{
		write_frame(io, &req.encode(), self.max_request_bytes).await
	}

	async fn write_response<T>(
		&mut self,
		_: &StreamProtocol,
		io: &mut T,
		res: Resp,
	) -> io::Result<()>
	where
		T: AsyncWrite + Unpin + Send,
	{
		write_frame(io, &res.encode(), self.max_response_bytes).await
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use futures::io::Cursor;
	use libp2p::request_response::Codec;

	fn run<F: std::future::Future>(f: F) -> F::Output {
		futures::executor::block_on(f)
	}

	#[test]
	fn frames_round_trip_and_limits_hold() {
		let mut codec = FetchCodec::fetch(64);
		let req = Request::State { job: 3 };
		let mut buf = Vec::new();
		run(codec.write_request(&PROTOCOL, &mut Cursor::new(&mut buf), req.clone())).unwrap();
		let back = run(codec.read_request(&PROTOCOL, &mut Cursor::new(buf.clone()))).unwrap();
		assert_eq!(back, req);

		// A response over the limit is refused on both sides.
		let big = Response::Update(vec![0; 100]);
		let mut out = Vec::new();
		assert!(
			run(codec.write_response(&PROTOCOL, &mut Cursor::new(&mut out), big.clone())).is_err()
		);
		let mut frame = (big.encode().len() as u32).to_le_bytes().to_vec();
		frame.extend(big.encode());
		let err = run(codec.read_response(&PROTOCOL, &mut Cursor::new(frame))).unwrap_err();
		assert!(err.to_string().contains("exceeds the limit"), "{err}");

		// A length that promises more than is sent, and garbage, are errors, not panics.
		let err = run(codec.read_request(&PROTOCOL, &mut Cursor::new(vec![9, 0, 0, 0, 1])));
		assert!(err.is_err());
		let err = run(codec.read_request(&PROTOCOL, &mut Cursor::new(vec![2, 0, 0, 0, 9, 9])))
			.unwrap_err();
		assert_eq!(err.kind(), io::ErrorKind::InvalidData);
		let huge = run(codec.read_request(&PROTOCOL, &mut Cursor::new(vec![255, 255, 255, 255])));
		assert!(huge.unwrap_err().to_string().contains("exceeds the limit"));
	}
}
