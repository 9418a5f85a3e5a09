//! A model's parameters in a canonical order, flattened to one `Vec<f32>`, with the manifest
//! (names, shapes, dtype) and hashes peers compare to agree on the layout and the weights.
//!
//! The order is the byte order of the names (a `BTreeMap`): candle's `VarMap` is a `HashMap`
//! whose order differs between processes, which would scramble any exchanged vector.

use std::{borrow::Cow, collections::BTreeMap};

use candle_core::{DType, Device, Tensor, Var};

use blake2::{digest::consts::U32, Blake2b, Digest as _};

use crate::error::{Error, Result};

/// BLAKE2b with a 256-bit output (the chain's hash), fed in pieces: model hashes stream
/// hundreds of MB of weights.
pub(crate) type Blake2b256 = Blake2b<U32>;

/// A 32-byte BLAKE2b-256 digest.
pub type Digest = [u8; 32];

/// Feeds `values` to `h` as little-endian f32s.
pub(crate) fn hash_f32s(h: &mut Blake2b256, values: &[f32]) {
	h.update(le_bytes(values));
}

/// `values` as little-endian bytes: borrowed on a little-endian machine (every target Grid
/// builds for), converted otherwise. Fed to a hash in one piece, a state hashes faster than
/// value by value (`bench/README.md`, network: sealing).
pub(crate) fn le_bytes(values: &[f32]) -> Cow<'_, [u8]> {
	if cfg!(target_endian = "little") {
		Cow::Borrowed(bytemuck::cast_slice(values))
	} else {
		Cow::Owned(values.iter().flat_map(|x| x.to_le_bytes()).collect())
	}
}

/// Values whose bytes were read in as little-endian, made this machine's (nothing to do on
/// a little-endian machine): [`le_bytes`] the other way.
pub(crate) fn from_le(values: &mut [f32]) {
	if cfg!(target_endian = "big") {
		for x in values {
			*x = f32::from_bits(u32::from_le(x.to_bits()));
		}
	}
}

/// Domain separator for manifest hashes; bump the version when the encoding changes.
const MANIFEST_DOMAIN: &[u8] = b"grid/param-manifest/v1";
/// Domain separator for model hashes.
const MODEL_DOMAIN: &[u8] = b"grid/model/v1";

/// One parameter's name and shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
	/// Dotted name, e.g. `blocks.0.attn.qkv.weight`.
	pub name: String,
	/// Dimensions.
	pub shape: Vec<usize>,
}

impl ParamInfo {
	/// Number of scalars.
	pub fn numel(&self) -> usize {
		self.shape.iter().product()
	}
}

/// The layout of a flattened parameter vector: parameters in name order, all f32.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
	entries: Vec<ParamInfo>,
}

impl Manifest {
	/// A manifest from entries in any order (they are sorted by name); names must be unique.
	pub fn new(mut entries: Vec<ParamInfo>) -> Result<Self> {
		entries.sort_by(|a, b| a.name.cmp(&b.name));
		if let Some(w) = entries.windows(2).find(|w| w[0].name == w[1].name) {
			return Err(Error::Layout(format!("parameter {} appears twice", w[0].name)));
		}
		Ok(Manifest { entries })
	}

	/// The entries in canonical order.
	pub fn entries(&self) -> &[ParamInfo] {
		&self.entries
	}

	/// Total number of scalars.
	pub fn numel(&self) -> usize {
		self.entries.iter().map(ParamInfo::numel).sum()
	}

	/// The canonical bytes: for each entry, the name's length (u32 LE) and UTF-8 bytes, the
	/// rank (u32 LE), each dimension (u64 LE) and the dtype tag `f32`.
	pub fn canonical_bytes(&self) -> Vec<u8> {
		let mut out = Vec::new();
		out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
		for e in &self.entries {
			out.extend_from_slice(&(e.name.len() as u32).to_le_bytes());
			out.extend_from_slice(e.name.as_bytes());
			out.extend_from_slice(&(e.shape.len() as u32).to_le_bytes());
			for d in &e.shape {
				out.extend_from_slice(&(*d as u64).to_le_bytes());
			}
			out.extend_from_slice(b"f32");
		}
		out
	}

	/// BLAKE2b-256 of the canonical bytes: peers exchange this before any vector.
	pub fn hash(&self) -> [u8; 32] {
		let mut h = Blake2b256::new();
		h.update(MANIFEST_DOMAIN);
		h.update(self.canonical_bytes());
		h.finalize().into()
	}

	/// The model hash of `flat` laid out by this manifest: BLAKE2b-256 over the manifest's
	/// canonical bytes and the little-endian f32 values.
	pub fn model_hash(&self, flat: &[f32]) -> Result<[u8; 32]> {
		self.check_len(flat.len())?;
		let mut h = Blake2b256::new();
		h.update(MODEL_DOMAIN);
		h.update(self.canonical_bytes());
		hash_f32s(&mut h, flat);
		Ok(h.finalize().into())
	}

	/// Errors unless a vector of `len` scalars fits this layout.
	pub fn check_len(&self, len: usize) -> Result<()> {
		if len != self.numel() {
			return Err(Error::Layout(format!(
				"vector has {len} values, the manifest {} ({} parameters)",
				self.numel(),
				self.entries.len()
			)));
		}
		Ok(())
	}
}

/// A model's trainable variables, keyed and ordered by name.
#[derive(Clone, Debug, Default)]
pub struct Params {
	vars: BTreeMap<String, Var>,
}

impl Params {
	/// An empty set.
	pub fn new() -> Self {
		Params::default()
	}

	/// Adds a variable; names must be unique.
	pub fn insert(&mut self, name: impl Into<String>, var: Var) -> Result<()> {
		let name = name.into();
		if self.vars.contains_key(&name) {
			return Err(Error::Layout(format!("parameter {name} defined twice")));
		}
		self.vars.insert(name, var);
		Ok(())
	}

	/// The variable called `name`.
	pub fn get(&self, name: &str) -> Option<&Var> {
		self.vars.get(name)
	}

	/// Variables in canonical (name) order.
	pub fn iter(&self) -> impl Iterator<Item = (&String, &Var)> {
		self.vars.iter()
	}

	/// Number of scalars over all variables.
	pub fn numel(&self) -> usize {
		self.vars.values().map(|v| v.elem_count()).sum()
	}

	/// The layout of [`Params::flatten`]'s output.
	pub fn manifest(&self) -> Manifest {
		let entries = self
			.vars
			.iter()
			.map(|(name, v)| ParamInfo { name: name.clone(), shape: v.dims().to_vec() })
			.collect();
		// Names come from a map, so they are unique and already sorted.
		Manifest { entries }
	}

	/// All values in canonical order as one f32 vector (copied to the CPU).
	pub fn flatten(&self) -> Result<Vec<f32>> {
		let mut out = Vec::with_capacity(self.numel());
		for v in self.vars.values() {
			let t = v.as_tensor().flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?;
			out.extend_from_slice(&t);
		}
		Ok(out)
	}

	/// Overwrites every variable from a flat vector in canonical order.
	pub fn load_flat(&self, flat: &[f32]) -> Result<()> {
		self.manifest().check_len(flat.len())?;
		let mut offset = 0;
		for v in self.vars.values() {
			let n = v.elem_count();
			let t = Tensor::from_slice(&flat[offset..offset + n], v.dims(), v.device())?
				.to_dtype(v.dtype())?;
			v.set(&t)?;
			offset += n;
		}
		Ok(())
	}

	/// The model hash of the current values (see [`Manifest::model_hash`]).
	pub fn model_hash(&self) -> Result<[u8; 32]> {
		self.manifest().model_hash(&self.flatten()?)
	}

	/// The device the variables live on (the CPU for an empty set).
	pub fn device(&self) -> Device {
		self.vars.values().next().map(|v| v.device().clone()).unwrap_or(Device::Cpu)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn params() -> Params {
		let mut p = Params::new();
		let dev = Device::Cpu;
		let b = Var::from_tensor(&Tensor::new(&[1f32, 2.0], &dev).unwrap()).unwrap();
		let a = Var::from_tensor(&Tensor::new(&[[3f32, 4.0], [5.0, 6.0]], &dev).unwrap()).unwrap();
		// Inserted out of order on purpose: the layout must not depend on insertion order.
		p.insert("z.bias", b).unwrap();
		p.insert("a.weight", a).unwrap();
		p
	}

	#[test]
	fn flatten_is_in_name_order_and_round_trips() {
		let p = params();
		assert_eq!(p.flatten().unwrap(), vec![3.0, 4.0, 5.0, 6.0, 1.0, 2.0]);
		let names: Vec<_> = p.manifest().entries().iter().map(|e| e.name.clone()).collect();
		assert_eq!(names, ["a.weight", "z.bias"]);
		let new = [9.0, 8.0, 7.0, 6.0, 5.0, 4.0];
		p.load_flat(&new).unwrap();
		assert_eq!(p.flatten().unwrap(), new);
		assert!(matches!(p.load_flat(&new[..5]), Err(Error::Layout(_))));
	}

	#[test]
	fn hashes_change_with_layout_and_values() {
		let p = params();
		let m = p.manifest();
		let flat = p.flatten().unwrap();
		let h = m.model_hash(&flat).unwrap();
		assert_eq!(h, p.model_hash().unwrap());
		let mut other = flat.clone();
		other[5] = f32::from_bits(other[5].to_bits() + 1); // one ulp
		assert_ne!(h, m.model_hash(&other).unwrap());
		let reshaped = Manifest::new(vec![
			ParamInfo { name: "a.weight".into(), shape: vec![4] },
			ParamInfo { name: "z.bias".into(), shape: vec![2] },
		])
		.unwrap();
		assert_ne!(m.hash(), reshaped.hash());
		assert_ne!(h, reshaped.model_hash(&flat).unwrap());
		assert_eq!(Manifest::new(m.entries().to_vec()).unwrap().hash(), m.hash());
		let dup = vec![m.entries()[0].clone(), m.entries()[0].clone()];
		assert!(Manifest::new(dup).is_err());
	}

	#[test]
	fn the_streamed_hash_is_the_chains_blake2_256() {
		// BLAKE2b-256 of the empty string (RFC 7693 parameters, 32-byte digest).
		let expected = "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8";
		assert_eq!(hex::encode(sp_crypto_hashing::blake2_256(b"")), expected);
		let mut h = Blake2b256::new();
		h.update(b"grid/");
		h.update(b"model");
		let streamed: [u8; 32] = h.finalize().into();
		assert_eq!(streamed, sp_crypto_hashing::blake2_256(b"grid/model"));
	}
}
