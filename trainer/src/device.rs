//! Where a trainer computes, in what precision, and what it declares about that hardware.
//!
//! `auto` (the default) picks the first CUDA GPU when the binary was built with the `cuda`
//! feature and a GPU answers, else the CPU. On a GPU the model trains in bf16 with f32 master
//! weights and f32 AdamW moments ([`Precision::Bf16`]); on the CPU everything is f32. The
//! outer (DiLoCo) state, aggregation and the model hash stay f32 on the CPU either way, so a
//! GPU trainer and CPU trainers agree on every round's model bit for bit.
//!
//! One process uses one GPU. Data parallelism across the GPUs of one machine (NCCL all-reduce
//! of the inner gradients) is not built: the GPU machines available to this project have one
//! GPU each, so it could not be tested. A provider with several GPUs can run one trainer per
//! GPU (`device = "cuda:N"`), each a separate participant.

use std::{fmt, str::FromStr, time::Duration};

use candle_core::{DType, Device};
use grid_primitives::provider::{BoundedBytes, Capabilities, DeviceKind};
use serde::Deserialize;

use crate::error::{Error, Result};

/// What the configuration asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceChoice {
	/// The first GPU if there is one, else the CPU.
	#[default]
	Auto,
	/// The CPU even when a GPU is present.
	Cpu,
	/// CUDA GPU number `n`; an error when it is not there.
	Cuda(usize),
}

impl FromStr for DeviceChoice {
	type Err = Error;

	fn from_str(s: &str) -> Result<Self> {
		match s {
			"auto" => Ok(DeviceChoice::Auto),
			"cpu" => Ok(DeviceChoice::Cpu),
			"cuda" => Ok(DeviceChoice::Cuda(0)),
			_ => s
				.strip_prefix("cuda:")
				.and_then(|n| n.parse().ok())
				.map(DeviceChoice::Cuda)
				.ok_or_else(|| {
					Error::Config(format!(
						"device {s:?}: expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\""
					))
				}),
		}
	}
}

impl fmt::Display for DeviceChoice {
	fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
		match self {
			DeviceChoice::Auto => f.write_str("auto"),
			DeviceChoice::Cpu => f.write_str("cpu"),
			DeviceChoice::Cuda(n) => write!(f, "cuda:{n}"),
		}
	}
}

impl<'de> Deserialize<'de> for DeviceChoice {
	fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
		String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
	}
}

/// The device `choice` names. `Auto` falls back to the CPU (with a log line) when no GPU
/// answers; an explicit `Cuda(n)` that cannot be opened is an error.
pub fn select(choice: DeviceChoice) -> Result<Device> {
	match choice {
		DeviceChoice::Cpu => Ok(Device::Cpu),
		DeviceChoice::Cuda(n) => open_cuda(n),
		DeviceChoice::Auto if !cfg!(feature = "cuda") => Ok(Device::Cpu),
		DeviceChoice::Auto => match open_cuda(0) {
			Ok(device) => Ok(device),
			Err(e) => {
				tracing::info!("no usable GPU ({e}); training on the CPU");
				Ok(Device::Cpu)
			}
		},
	}
}

fn open_cuda(ordinal: usize) -> Result<Device> {
	if !cfg!(feature = "cuda") {
		return Err(Error::Config(format!(
			"device cuda:{ordinal}: this grid-trainer was built without the `cuda` feature"
		)));
	}
	let device = Device::new_cuda(ordinal)
		.map_err(|e| Error::Config(format!("device cuda:{ordinal} cannot be opened: {e}")))?;
	warm_up(&device)
		.map_err(|e| Error::Config(format!("device cuda:{ordinal} does not compute: {e}")))?;
	Ok(device)
}

/// Compiles the trainer's kernels and starts cuBLAS now, so that the first inner step of the
/// first round does not pay for it (seconds, which a short round cannot spare).
fn warm_up(device: &Device) -> candle_core::Result<()> {
	#[cfg(feature = "cuda")]
	crate::cuda::Kernel::new(device.as_cuda_device()?, "gelu_f32")?;
	let a = candle_core::Tensor::ones((64, 64), DType::BF16, device)?;
	a.matmul(&a)?.to_dtype(DType::F32)?.sum_all()?.to_scalar::<f32>()?;
	Ok(())
}

/// The arithmetic of the forward and backward passes. Master weights, gradients as the
/// optimizer sees them and optimizer state are f32 in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
	/// Everything in f32.
	F32,
	/// Matrix products and activations in bf16; layer norm, softmax and the loss in f32.
	Bf16,
}

impl Precision {
	/// bf16 on GPUs, f32 on the CPU (which has no fast bf16 arithmetic in Candle).
	pub fn for_device(device: &Device) -> Self {
		if device.is_cuda() {
			Precision::Bf16
		} else {
			Precision::F32
		}
	}

	/// The dtype activations are computed in.
	pub fn dtype(self) -> DType {
		match self {
			Precision::F32 => DType::F32,
			Precision::Bf16 => DType::BF16,
		}
	}
}

/// What a provider on `device` declares: the GPU's name, count and memory as the driver
/// reports them and its bf16 matrix-multiply throughput measured for about `duration`; on the
/// CPU its architecture and f32 throughput.
pub fn capabilities(device: &Device, duration: Duration) -> Capabilities {
	let (kind, name, count, memory_mib) = match gpu_info(device) {
		Some(info) => (DeviceKind::Cuda, info.name, info.count, info.memory_mib),
		None => (DeviceKind::Cpu, std::env::consts::ARCH.to_string(), 1, 0),
	};
	let tflops = measure_tflops(device, duration);
	Capabilities {
		device: kind,
		device_name: BoundedBytes::truncate_from(name.into_bytes()),
		device_count: count,
		memory_mib,
		tflops_milli: (tflops * 1e3).ceil().clamp(1.0, f64::from(u32::MAX)) as u32,
		bandwidth_mbps: 1_000,
		region: BoundedBytes::truncate_from(b"local".to_vec()),
	}
}

/// A GPU as the driver describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInfo {
	/// Model name.
	pub name: String,
	/// GPUs visible to this process (the trainer uses one).
	pub count: u8,
	/// Memory of the GPU in use, MiB.
	pub memory_mib: u32,
}

/// The driver's description of `device`'s GPU (`None` on the CPU).
#[cfg(feature = "cuda")]
pub fn gpu_info(device: &Device) -> Option<GpuInfo> {
	use cudarc::driver::CudaContext;
	let candle_core::DeviceLocation::Cuda { gpu_id: ordinal } = device.location() else {
		return None;
	};
	let context = CudaContext::new(ordinal).ok()?;
	Some(GpuInfo {
		name: context.name().ok()?,
		count: CudaContext::device_count().ok()?.clamp(1, 255) as u8,
		memory_mib: (context.total_mem().ok()? >> 20) as u32,
	})
}

/// The driver's description of `device`'s GPU (`None` on the CPU).
#[cfg(not(feature = "cuda"))]
pub fn gpu_info(_device: &Device) -> Option<GpuInfo> {
	None
}

/// Dense matrix-multiply throughput of `device` in TFLOP/s, measured for about `duration`:
/// f32 256×256 products on the CPU, bf16 4096×4096 ones on a GPU (what training uses there).
pub fn measure_tflops(device: &Device, duration: Duration) -> f64 {
	let (n, dtype) = if device.is_cuda() { (4096, DType::BF16) } else { (256, DType::F32) };
	let run = || -> candle_core::Result<f64> {
		let a = candle_core::Tensor::randn(0f32, 1.0, (n, n), device)?.to_dtype(dtype)?;
		let b = candle_core::Tensor::randn(0f32, 1.0, (n, n), device)?.to_dtype(dtype)?;
		// Warm-up: library handles and kernels load on first use.
		a.matmul(&b)?;
		device.synchronize()?;
		let start = std::time::Instant::now();
		let mut products = 0u64;
		while start.elapsed() < duration {
			for _ in 0..if device.is_cuda() { 16 } else { 1 } {
				let _ = a.matmul(&b)?;
				products += 1;
			}
			device.synchronize()?;
		}
		Ok(products as f64 * 2.0 * (n * n * n) as f64 / start.elapsed().as_secs_f64() / 1e12)
	};
	run().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn device_choices_parse_and_bad_ones_say_what_is_accepted() {
		assert_eq!("auto".parse::<DeviceChoice>().unwrap(), DeviceChoice::Auto);
		assert_eq!("cpu".parse::<DeviceChoice>().unwrap(), DeviceChoice::Cpu);
		assert_eq!("cuda".parse::<DeviceChoice>().unwrap(), DeviceChoice::Cuda(0));
		assert_eq!("cuda:3".parse::<DeviceChoice>().unwrap(), DeviceChoice::Cuda(3));
		for bad in ["gpu", "cuda:", "cuda:x", "CPU", ""] {
			let err = bad.parse::<DeviceChoice>().unwrap_err().to_string();
			assert!(err.contains("cuda:N"), "{bad}: {err}");
		}
		assert_eq!(DeviceChoice::Cuda(2).to_string(), "cuda:2");
	}

	#[test]
	fn the_cpu_is_selected_and_declared_as_a_cpu() {
		let device = select(DeviceChoice::Cpu).unwrap();
		assert!(device.is_cpu());
		assert_eq!(Precision::for_device(&device), Precision::F32);
		let caps = capabilities(&device, Duration::from_millis(50));
		assert_eq!(caps.device, DeviceKind::Cpu);
		assert_eq!(caps.device_count, 1);
		assert!(caps.tflops_milli >= 1);
	}

	#[cfg(not(feature = "cuda"))]
	#[test]
	fn without_the_cuda_feature_auto_is_the_cpu_and_cuda_is_refused() {
		assert!(select(DeviceChoice::Auto).unwrap().is_cpu());
		let err = select(DeviceChoice::Cuda(0)).unwrap_err().to_string();
		assert!(err.contains("without the `cuda` feature"), "{err}");
	}
}
