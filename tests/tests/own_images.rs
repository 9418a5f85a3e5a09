//! A buyer's own images and a convolutional model, end to end on a dev chain with real
//! processes: the buyer has the shipped MNIST digits as an image folder (one PNG per digit,
//! `train/<class>/` and `test/<class>/`), packs it with `grid-trainer data pack-images`,
//! publishes the packed arrays (`image-npy`) with `grid-trainer data publish` and posts a
//! ResNet job on them; three providers fetch the arrays from the buyer, check them, train
//! the ResNet to completion, are each paid for every round and agree on every round's model,
//! whose held-out loss falls.

use std::{io::Read, path::Path, process::Command, time::Duration};

use anyhow::{ensure, Context, Result};
use grid_e2e_tests::{
	network::{agreed_and_learned, dev_node, logs, post_job, providers, url, wait_status, Ledger},
	trainers::{publish, trainer_binary},
};
use polkadot_sdk::sp_keyring::Sr25519Keyring;

/// The bytes of a gzipped IDX file after its header of `header` bytes.
fn idx_body(path: &Path, header: usize) -> Result<Vec<u8>> {
	let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
	let mut bytes = Vec::new();
	flate2::read::GzDecoder::new(file).read_to_end(&mut bytes)?;
	ensure!(bytes.len() > header, "{} is shorter than its header", path.display());
	Ok(bytes.split_off(header))
}

/// Writes the shipped MNIST digits to `dir` as an image folder: `<split>/<digit>/<n>.png`,
/// 28x28 grey.
fn mnist_as_folder(dir: &Path) -> Result<()> {
	let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/mnist");
	for (split, idx) in [("train", "train"), ("test", "t10k")] {
		let pixels = idx_body(&shipped.join(format!("{idx}-images-idx3-ubyte.gz")), 16)?;
		let labels = idx_body(&shipped.join(format!("{idx}-labels-idx1-ubyte.gz")), 8)?;
		ensure!(pixels.len() == labels.len() * 28 * 28, "{split}: pixels and labels disagree");
		for (n, (image, label)) in pixels.chunks(28 * 28).zip(&labels).enumerate() {
			let class = dir.join(split).join(label.to_string());
			std::fs::create_dir_all(&class)?;
			let file = std::fs::File::create(class.join(format!("{n:05}.png")))?;
			let mut encoder = png::Encoder::new(file, 28, 28);
			encoder.set_color(png::ColorType::Grayscale);
			encoder.write_header()?.write_image_data(image)?;
		}
	}
	Ok(())
}

/// Packs the image folder `src` into `out` with `grid-trainer data pack-images`; its report.
fn pack_images(src: &Path, out: &Path) -> Result<String> {
	let output = Command::new(trainer_binary())
		.args(["data", "pack-images"])
		.arg(src)
		.arg(out)
		.output()
		.context("running grid-trainer data pack-images")?;
	let report = String::from_utf8_lossy(&output.stdout).into_owned();
	let errors = String::from_utf8_lossy(&output.stderr);
	ensure!(output.status.success(), "pack-images failed: {report}{errors}");
	Ok(report)
}

/// The ResNet job on `dataset_line` (a published dataset) for three rounds and providers.
fn job(dataset_line: &str) -> String {
	format!(
		r#"{dataset_line}
model = {{ kind = "resnet", channels = 1, side = 28, classes = 10, width = 8, stages = 2, blocks = 1 }}
rounds = 3
reward_per_round = 10
min_providers = 3
max_providers = 4
min_provider_stake = 100

[training]
round_blocks = 14
batch_size = 32
max_steps = 40
inner = {{ optimizer = "adamw", lr = 0.005 }}
outer_momentum = 0.5
compression = {{ scheme = "int8", chunk = 256 }}
"#
	)
}

// Every provider loss-screens its peers each round, and a ResNet's forward passes on a CPU
// take seconds: run before the aggregate and the proof, the screens made a screening
// provider's proof miss the round's deadline (`RoundClosed`) and it went unpaid. They run on
// the verify worker now; every provider is paid for every round here.
//
// The rounds leave the providers' 40 steps (0.4 s each alone on two cores, 16 s) nearly a
// minute to spare before the commit deadline, 72 s after a round opens: the test lanes share
// the two cores, and compute runs at the lowest priority, so while another lane's processes
// take the cores the steps all but stop. At 10 blocks a CI run's round 2 left two providers'
// updates out (committed 2.8 and 5.5 s late); at 14 blocks and 100 steps, round 0 beside the
// trainer's unit tests left all three out (steps of 0.9 s on average, the last ones 3 s and
// more; committed 7.2-7.6 s late), and none was paid for it.
#[test]
fn providers_fetch_a_buyers_images_and_train_a_resnet_on_them() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let folder = dir.path().join("digits");
	mnist_as_folder(&folder)?;
	let arrays = dir.path().join("packed");
	let report = pack_images(&folder, &arrays)?;
	ensure!(
		report.contains("packed 8990 training and 1010 held-out images of 1x28x28")
			&& report.contains("label 9: 9"),
		"{report}"
	);
	let (_publisher, dataset) = publish(&arrays, "image-npy", &dir.path().join("buyer-store"))?;

	let node = dev_node(dir.path())?;
	let url = url(&node);
	let start = node.best_number()?;
	post_job(&url, dir.path(), &job(&dataset), 0)?;
	let keys = [Sr25519Keyring::Bob, Sr25519Keyring::Charlie, Sr25519Keyring::Dave];
	let providers = providers(dir.path(), &url, &keys)?;
	let status =
		wait_status(&url, 0, Duration::from_secs(400), &providers, |s| s.contains("completed"))?;
	ensure!(status.contains("round 3/3") && status.contains("final model 0x"), "{status}");

	let end = node.best_number()?;
	let l = Ledger::read(&node, start + 1, end)?;
	for key in keys {
		let paid = l.paid(&key.to_account_id());
		ensure!(paid == [0, 1, 2], "{key:?} paid for rounds {paid:?}\n{}", logs(&providers));
	}
	agreed_and_learned(&providers, 0, 3)
}
