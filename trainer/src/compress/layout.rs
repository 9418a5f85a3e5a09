//! How a flat parameter vector splits into tensors, each seen as a matrix: what
//! [`super::tiles`] needs to cut tiles out of a pseudo-gradient.

use candle_core::Device;
use grid_primitives::job::ModelSpec;

use crate::{error::Result, model::Model, params::Manifest};

/// A tensor seen as a matrix: a vector is one row, a tensor of higher rank its first
/// dimension by the product of the others (a convolution's output channels by its inputs and
/// kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Matrix {
	/// Rows (at least one).
	pub rows: usize,
	/// Columns (at least one).
	pub cols: usize,
}

impl Matrix {
	/// The matrix view of a tensor of `shape` (a scalar is 1 × 1).
	pub fn of_shape(shape: &[usize]) -> Self {
		match shape {
			[] => Matrix { rows: 1, cols: 1 },
			[n] => Matrix { rows: 1, cols: *n },
			[rows, rest @ ..] => Matrix { rows: *rows, cols: rest.iter().product() },
		}
	}

	/// Values it holds.
	pub fn numel(&self) -> usize {
		self.rows * self.cols
	}
}

/// The tensors of a flat vector, in its order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
	tensors: Vec<Matrix>,
}

impl Layout {
	/// The tensors `tensors` in order (empty ones left out).
	pub fn new(tensors: Vec<Matrix>) -> Self {
		Layout { tensors: tensors.into_iter().filter(|m| m.numel() > 0).collect() }
	}

	/// `len` values as whole rows of `cols` columns followed by a vector of the rest: a
	/// stand-in for a model's layout in tests and benchmarks.
	pub fn rows(len: usize, cols: usize) -> Self {
		let cols = cols.max(1);
		let rows = Matrix { rows: len / cols, cols };
		Layout::new(vec![rows, Matrix { rows: 1, cols: len % cols }])
	}

	/// The layout of a model's flattened parameters.
	pub fn of(manifest: &Manifest) -> Self {
		let tensors = manifest.entries().iter().map(|e| Matrix::of_shape(&e.shape));
		Layout { tensors: tensors.filter(|m| m.numel() > 0).collect() }
	}

	/// The layout of `spec`'s parameters, found by building the model once on the CPU (its
	/// memory, briefly): for callers that hold no manifest.
	pub fn of_spec(spec: ModelSpec) -> Result<Self> {
		let model = Model::new(spec, b"grid/layout", &Device::Cpu)?;
		Ok(Layout::of(&model.params().manifest()))
	}

	/// One vector of `len` values (no tensor at all when `len` is zero): for vectors that are
	/// not a model's, where every scheme treats the values alike.
	pub fn flat(len: usize) -> Self {
		let tensors = (len > 0).then_some(Matrix { rows: 1, cols: len });
		Layout { tensors: tensors.into_iter().collect() }
	}

	/// The tensors in order; none is empty.
	pub fn tensors(&self) -> &[Matrix] {
		&self.tensors
	}

	/// Values in all.
	pub fn len(&self) -> usize {
		self.tensors.iter().map(Matrix::numel).sum()
	}

	/// Whether it has no values.
	pub fn is_empty(&self) -> bool {
		self.tensors.is_empty()
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::params::ParamInfo;

	#[test]
	fn tensors_are_matrices_in_manifest_order() {
		let info =
			|name: &str, shape: &[usize]| ParamInfo { name: name.into(), shape: shape.to_vec() };
		let manifest = Manifest::new(vec![
			info("b.conv", &[8, 3, 3, 3]),
			info("a.bias", &[16]),
			info("c.weight", &[16, 32]),
			info("d.scalar", &[]),
		])
		.unwrap();
		let layout = Layout::of(&manifest);
		let m = |rows, cols| Matrix { rows, cols };
		assert_eq!(layout.tensors(), &[m(1, 16), m(8, 27), m(16, 32), m(1, 1)]);
		assert_eq!(layout.len(), manifest.numel());
		assert_eq!(Layout::flat(10).tensors(), &[m(1, 10)]);
		assert!(Layout::flat(0).is_empty());
		assert_eq!(Layout::rows(1_005, 100).tensors(), &[m(10, 100), m(1, 5)]);
		assert_eq!(Layout::rows(1_000, 100).tensors(), &[m(10, 100)]);
	}
}
