//! No compression: the f32 values themselves (the baseline). Payload: `len` f32 LE.

use super::{CompressedUpdate, Compressor, Reader};
use crate::error::Result;

/// Sends Δ as it is.
pub struct Identity;

impl Compressor for Identity {
	fn compress(&mut self, delta: &[f32]) -> Result<CompressedUpdate> {
		Ok(CompressedUpdate::None(delta.to_vec()))
	}
}

pub(super) fn encode_payload(values: &[f32], out: &mut Vec<u8>) {
	out.reserve(values.len() * 4);
	for v in values {
		out.extend_from_slice(&v.to_le_bytes());
	}
}

pub(super) fn decode_payload(r: &mut Reader, len: usize) -> Result<Vec<f32>> {
	r.finite_f32s(len, "value")
}
