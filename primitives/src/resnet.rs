//! A residual convolutional network for image classification, described by bounded
//! dimensions: the image family a job's spec will name (the trainer builds it in
//! `trainer/src/model/resnet.rs`, with exactly [`ResNetConfig::parameters`] parameters).
//!
//! A 3×3 stem convolution to `width` channels, then `stages` stages of `blocks` basic blocks
//! (two 3×3 convolutions and a residual connection); each stage after the first halves the
//! resolution (its first convolution has stride 2, its shortcut is a strided 1×1 convolution)
//! and doubles the channels; global average pooling and a linear classifier end it. There is
//! no batch normalisation: its running statistics would depend on each provider's batches,
//! and honest providers must reach bit-identical states. Instead each block's residual branch
//! is scaled by a learned gain (as in SkipInit, De & Smith 2020) that starts at 1/√(blocks in
//! all), which keeps the residual stream's variance bounded at the start however deep.

use codec::{Decode, DecodeWithMemTracking, Encode, MaxEncodedLen};
use scale_info::TypeInfo;

/// The largest value of each dimension a spec may ask for; they bound what a spec can make
/// anyone compute (the parameter and flop limits bind far sooner).
pub mod bounds {
	/// Colour channels of the images (1 grey, 3 RGB).
	pub const CHANNELS: u8 = 4;
	/// Side of the (square) images, in pixels.
	pub const SIDE: u16 = 1024;
	/// Classes.
	pub const CLASSES: u16 = 1 << 14;
	/// Channels of the stem (the first stage).
	pub const WIDTH: u16 = 1 << 10;
	/// Stages.
	pub const STAGES: u8 = 6;
	/// Blocks per stage.
	pub const BLOCKS: u8 = 32;
}

/// A ResNet over square images of `channels`×`side`×`side` with `classes` classes.
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
#[derive(
	Clone,
	Copy,
	PartialEq,
	Eq,
	Debug,
	Encode,
	Decode,
	DecodeWithMemTracking,
	MaxEncodedLen,
	TypeInfo,
)]
pub struct ResNetConfig {
	/// Colour channels of the images the dataset holds (1 for MNIST, 3 for CIFAR-10).
	pub channels: u8,
	/// Side of the square images, in pixels (28 for MNIST, 32 for CIFAR-10).
	pub side: u16,
	/// Classes (10 for both).
	pub classes: u16,
	/// Channels of the stem and the first stage (each later stage doubles them).
	pub width: u16,
	/// Stages (each after the first halves the resolution).
	pub stages: u8,
	/// Basic blocks per stage.
	pub blocks: u8,
}

/// One convolution: input and output channels, kernel side, output side.
struct Conv {
	inputs: u128,
	outputs: u128,
	kernel: u128,
	out_side: u128,
}

impl Conv {
	/// Weights and biases.
	fn parameters(&self) -> u128 {
		self.kernel * self.kernel * self.inputs * self.outputs + self.outputs
	}

	/// Multiply-adds of one forward pass over one image.
	fn macs(&self) -> u128 {
		self.out_side * self.out_side * self.kernel * self.kernel * self.inputs * self.outputs
	}
}

impl ResNetConfig {
	/// Whether every dimension is non-zero and within [`bounds`], and the last stage keeps at
	/// least one pixel.
	pub fn well_formed(&self) -> bool {
		use bounds::*;
		let nonzero = self.channels > 0
			&& self.side > 0
			&& self.classes > 1
			&& self.width > 0
			&& self.stages > 0
			&& self.blocks > 0;
		nonzero
			&& self.channels <= CHANNELS
			&& self.side <= SIDE
			&& self.classes <= CLASSES
			&& self.width <= WIDTH
			&& self.stages <= STAGES
			&& self.blocks <= BLOCKS
	}

	/// Channels of stage `s` (from 0; below [`bounds::STAGES`]).
	pub fn stage_channels(&self, s: u8) -> u32 {
		u32::from(self.width) << s
	}

	/// Every convolution in the order the trainer builds them (stem, then each block's two
	/// and, for a stage's first block after the first stage, its shortcut), over bounded
	/// dimensions: each term fits a `u128` with room to spare (under 2^20 × 2^20 × 9 × 2^15
	/// × 2^15 per convolution, at most 6 × 32 × 3 of them).
	fn convs(&self) -> impl Iterator<Item = Conv> + '_ {
		let stem = Conv {
			inputs: self.channels.into(),
			outputs: self.width.into(),
			kernel: 3,
			out_side: self.side.into(),
		};
		let stages = (0..self.stages).flat_map(move |s| {
			let c = u128::from(self.stage_channels(s));
			let side = u128::from(self.side_of(s));
			(0..self.blocks).flat_map(move |b| {
				let first_of_later = s > 0 && b == 0;
				let inputs = if first_of_later { c / 2 } else { c };
				let main = [
					Some(Conv { inputs, outputs: c, kernel: 3, out_side: side }),
					Some(Conv { inputs: c, outputs: c, kernel: 3, out_side: side }),
					first_of_later.then_some(Conv {
						inputs,
						outputs: c,
						kernel: 1,
						out_side: side,
					}),
				];
				main.into_iter().flatten()
			})
		});
		core::iter::once(stem).chain(stages)
	}

	/// The side of stage `s`'s feature maps: halved (rounding up, as a stride-2 convolution
	/// padded by one does) once per stage after the first.
	pub fn side_of(&self, s: u8) -> u16 {
		(0..s).fold(self.side, |side, _| side.div_ceil(2))
	}

	/// Trainable parameters: the convolutions' weights and biases, one residual gain per
	/// block, and the classifier's weights and biases; none unless [`Self::well_formed`].
	pub fn parameters(&self) -> Option<u128> {
		if !self.well_formed() {
			return None;
		}
		let convs: u128 = self.convs().map(|c| c.parameters()).sum();
		let gains = u128::from(self.stages) * u128::from(self.blocks);
		let last = u128::from(self.stage_channels(self.stages.saturating_sub(1)));
		let classes = u128::from(self.classes);
		Some(convs + gains + last * classes + classes)
	}

	/// Floating point operations to train on one image: three passes (forward, and backward
	/// for inputs and weights) of two operations per multiply-add; none unless
	/// [`Self::well_formed`].
	pub fn flops_per_sample(&self) -> Option<u128> {
		if !self.well_formed() {
			return None;
		}
		let last = u128::from(self.stage_channels(self.stages.saturating_sub(1)));
		let macs: u128 =
			self.convs().map(|c| c.macs()).sum::<u128>() + last * u128::from(self.classes);
		Some(6 * macs)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	const CIFAR: ResNetConfig =
		ResNetConfig { channels: 3, side: 32, classes: 10, width: 16, stages: 3, blocks: 3 };

	#[test]
	fn counts_a_resnet_20_as_the_paper_does() {
		// He et al.'s CIFAR ResNet-20 (16/32/64 channels, three blocks per stage) has 0.27M
		// parameters without its batch norms; this one has biases and a gain per block too.
		let convs = 9 * 3 * 16 + 16 // stem
			+ 6 * (9 * 16 * 16 + 16) // stage 0
			+ (9 * 16 * 32 + 32) + (9 * 32 * 32 + 32) + (16 * 32 + 32) + 4 * (9 * 32 * 32 + 32)
			+ (9 * 32 * 64 + 64) + (9 * 64 * 64 + 64) + (32 * 64 + 64) + 4 * (9 * 64 * 64 + 64);
		let parameters = CIFAR.parameters().unwrap();
		assert_eq!(parameters, convs + 9 + 64 * 10 + 10);
		assert!((270_000..280_000).contains(&parameters), "{parameters}");
		// About 41M multiply-adds a forward pass, as the paper's 40.8M.
		let macs = CIFAR.flops_per_sample().unwrap() / 6;
		assert!((40_000_000..42_000_000).contains(&macs), "{macs}");
	}

	#[test]
	fn sides_halve_rounding_up_and_bounds_hold() {
		let mnist = ResNetConfig { channels: 1, side: 28, stages: 4, ..CIFAR };
		assert_eq!((0..4).map(|s| mnist.side_of(s)).collect::<Vec<_>>(), [28, 14, 7, 4]);
		assert!(CIFAR.well_formed() && mnist.well_formed());
		for bad in [
			ResNetConfig { channels: 0, ..CIFAR },
			ResNetConfig { classes: 1, ..CIFAR },
			ResNetConfig { width: 0, ..CIFAR },
			ResNetConfig { stages: 0, ..CIFAR },
			ResNetConfig { blocks: 0, ..CIFAR },
			ResNetConfig { channels: bounds::CHANNELS + 1, ..CIFAR },
			ResNetConfig { side: bounds::SIDE + 1, ..CIFAR },
			ResNetConfig { width: bounds::WIDTH + 1, ..CIFAR },
			ResNetConfig { stages: bounds::STAGES + 1, ..CIFAR },
			ResNetConfig { blocks: bounds::BLOCKS + 1, ..CIFAR },
		] {
			assert!(!bad.well_formed() && bad.parameters().is_none(), "{bad:?}");
		}
		// The largest well-formed network is counted without overflow.
		let largest = ResNetConfig {
			channels: bounds::CHANNELS,
			side: bounds::SIDE,
			classes: bounds::CLASSES,
			width: bounds::WIDTH,
			stages: bounds::STAGES,
			blocks: bounds::BLOCKS,
		};
		assert!(largest.well_formed());
		assert!(largest.flops_per_sample().unwrap() > largest.parameters().unwrap());
	}
}
