//! Grid's side of the step-by-step comparison with PyTorch (`bench/gpu_parity.sh`): writes the
//! start (initial weights and batch) to `OUT/start.safetensors` and each precision's trace to
//! `OUT/grid-<precision>.json`; `bench/torch_ref/parity.py` trains from the same start.
//!
//! `gpt_parity --out DIR [--layers 12 --heads 12 --width 768 --context 512 --vocab 8192
//! --batch 16 --steps 50 --device cuda --precision f32,bf16 --lr 0.0006]`

use std::path::PathBuf;

use grid_primitives::job::GptConfig;
use grid_trainer::{
	device::{DeviceChoice, Precision},
	parity::{trace, write_start, Settings},
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
	grid_trainer::malloc::retain_freed_memory();
	let mut sizes = [
		("layers", 12usize),
		("heads", 12),
		("width", 768),
		("context", 512),
		("vocab", 8192),
		("batch", 16),
		("steps", 50),
	];
	let (mut out, mut device, mut lr) = (None, DeviceChoice::Cuda(0), 6e-4);
	let mut precisions = vec![Precision::F32, Precision::Bf16];
	let args: Vec<String> = std::env::args().skip(1).collect();
	for pair in args.chunks(2) {
		let [k, v] = pair else { return Err(format!("{} needs a value", pair[0]).into()) };
		match k.as_str() {
			"--out" => out = Some(PathBuf::from(v)),
			"--device" => device = v.parse()?,
			"--lr" => lr = v.parse()?,
			"--precision" => precisions = v.split(',').map(precision).collect::<Result<_, _>>()?,
			_ => {
				let slot = sizes
					.iter_mut()
					.find(|(name, _)| *name == k.trim_start_matches("--"))
					.ok_or_else(|| format!("unknown option {k}"))?;
				slot.1 = v.parse()?;
			}
		}
	}
	let out = out.ok_or("--out DIR is required")?;
	let get = |name: &str| sizes.iter().find(|(n, _)| *n == name).map_or(0, |s| s.1);
	let config = GptConfig {
		vocab: u32::try_from(get("vocab"))?,
		context: u32::try_from(get("context"))?,
		layers: u16::try_from(get("layers"))?,
		heads: u16::try_from(get("heads"))?,
		width: u32::try_from(get("width"))?,
	};
	let settings = Settings { config, batch: get("batch"), steps: get("steps"), lr };
	std::fs::create_dir_all(&out)?;
	write_start(&settings, &out.join("start.safetensors"))?;
	let dev = grid_trainer::device::select(device)?;
	for p in precisions {
		let t = trace(&settings, &dev, p)?;
		let path = out.join(format!("grid-{}.json", t.precision));
		std::fs::write(&path, serde_json::to_string(&t)?)?;
		eprintln!("{}: losses {:?} .. {:?}", path.display(), t.losses.first(), t.losses.last());
	}
	Ok(())
}

fn precision(s: &str) -> Result<Precision, String> {
	match s {
		"f32" => Ok(Precision::F32),
		"bf16" => Ok(Precision::Bf16),
		_ => Err(format!("precision {s:?}: expected f32 or bf16")),
	}
}
