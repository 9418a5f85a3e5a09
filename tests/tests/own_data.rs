//! A buyer's own data and model, end to end on a dev chain with real processes: the buyer
//! publishes a token dataset with `grid-trainer data publish` and posts two jobs on it, a
//! decoder-only transformer described by its knobs. The first names a dataset nobody serves
//! (its reference differs from the published one by a byte): the buyer's CLI refuses to post
//! it unless told `--unchecked`, and then every provider refuses it before joining, so nobody
//! stakes into it. The second is fetched by every provider from the buyer,
//! checked, and trained to completion, every provider paid for every round and agreeing on
//! the model.

use std::{
	io::{BufRead, BufReader},
	process::{Child, Command, Stdio},
	sync::mpsc,
	time::Duration,
};

use anyhow::{anyhow, ensure, Context, Result};
use grid_e2e_tests::{
	network::{
		agreed_and_learned, dev_node, logs, post_job, post_job_with, providers, url, wait_status,
		Ledger,
	},
	trainers::{job_cli, trainer_binary},
};
use polkadot_sdk::sp_keyring::Sr25519Keyring;

/// Stops the publisher however the test ends.
struct Publisher(Child);

impl Drop for Publisher {
	fn drop(&mut self) {
		let _ = self.0.kill();
		let _ = self.0.wait();
	}
}

/// Publishes `dir` as `tokens-u16` and returns the publisher with the dataset's job-file
/// line (`dataset = { uri = "…", content_hash = "0x…" }`).
fn publish(dir: &std::path::Path, store: &std::path::Path) -> Result<(Publisher, String)> {
	let child = Command::new(trainer_binary())
		.args(["data", "publish", "--format", "tokens-u16", "--listen", "/ip4/127.0.0.1/tcp/0"])
		.arg("--store")
		.arg(store)
		.arg(dir)
		.stdout(Stdio::piped())
		.stderr(Stdio::null())
		.spawn()
		.context("starting grid-trainer data publish")?;
	let mut publisher = Publisher(child);
	let stdout = publisher.0.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
	let (tx, rx) = mpsc::channel();
	std::thread::spawn(move || {
		for line in BufReader::new(stdout).lines().map_while(Result::ok) {
			let _ = tx.send(line);
		}
	});
	loop {
		let line = rx.recv_timeout(Duration::from_secs(60)).context("the publisher's address")?;
		if let Some(job_line) = line.strip_prefix("job file: ") {
			return Ok((publisher, job_line.to_owned()));
		}
	}
}

/// The transformer job on `dataset_line`.
fn job(dataset_line: &str) -> String {
	format!(
		r#"{dataset_line}
rounds = 3
reward_per_round = 10
min_providers = 3
max_providers = 4
min_provider_stake = 100

[training]
round_blocks = 5
batch_size = 8
inner = {{ optimizer = "adamw", lr = 0.003 }}
outer_momentum = 0.5
compression = {{ scheme = "int8", chunk = 256 }}

[model]
kind = "transformer"
vocab = 600
context = 32
layers = 1
width = 32
heads = 4
kv_heads = 2
mlp_width = 64
activation = "swiglu"
norm = "rmsnorm"
position = "rope"
tied_embeddings = true
"#
	)
}

#[test]
fn providers_fetch_a_buyers_dataset_before_joining_and_train_a_transformer_on_it() -> Result<()> {
	let dir = tempfile::tempdir()?;
	// The buyer's corpus: Shakespeare's bytes as u16 token ids shifted past 255 (a vocabulary
	// a byte model could not read), in two files.
	let corpus = dir.path().join("corpus");
	std::fs::create_dir_all(&corpus)?;
	let text = std::fs::read(
		std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/shakespeare.txt"),
	)?;
	let tokens: Vec<u8> =
		text[..300_000].iter().flat_map(|b| (u16::from(*b) + 300).to_le_bytes()).collect();
	std::fs::write(corpus.join("part-0.bin"), &tokens[..400_000])?;
	std::fs::write(corpus.join("part-1.bin"), &tokens[400_000..])?;
	let (_publisher, dataset) = publish(&corpus, &dir.path().join("buyer-store"))?;

	let node = dev_node(dir.path())?;
	let url = url(&node);
	let start = node.best_number()?;
	// Job 0 names data nobody serves: the published reference with its last digit changed.
	let last = dataset.rfind("\" }").ok_or_else(|| anyhow!("{dataset}"))?;
	let digit = if &dataset[last - 1..last] == "0" { "1" } else { "0" };
	let forged = format!("{}{digit}{}", &dataset[..last - 1], &dataset[last..]);
	// The buyer's CLI checks a job's data before posting it (and paying its escrow): it
	// refuses this one. A buyer who skips the check (or the chain's API, directly) still
	// posts it, and then the providers refuse it.
	let refused = post_job(&url, dir.path(), &job(&forged), 0).unwrap_err().to_string();
	ensure!(refused.contains("no holder served its manifest"), "{refused}");
	post_job_with(&url, dir.path(), &job(&forged), 0, &["--unchecked"])?;
	post_job(&url, dir.path(), &job(&dataset), 1)?;

	let keys = [Sr25519Keyring::Bob, Sr25519Keyring::Charlie, Sr25519Keyring::Dave];
	let providers = providers(dir.path(), &url, &keys)?;
	let status =
		wait_status(&url, 1, Duration::from_secs(400), &providers, |s| s.contains("completed"))?;
	ensure!(status.contains("round 3/3") && status.contains("final model 0x"), "{status}");

	// Nobody joined the job whose data could not be had, and each said why.
	let out = job_cli(&url, &["status", "--job", "0"])?;
	let job0 = String::from_utf8_lossy(&out.stdout);
	ensure!(job0.contains("0 participants"), "{job0}\n{}", logs(&providers));
	for p in &providers {
		let log = p.log();
		ensure!(
			log.contains("job 0 skipped: its dataset")
				&& log.contains("no holder served its manifest"),
			"{}",
			p.log_tail()
		);
	}

	let end = node.best_number()?;
	let l = Ledger::read(&node, start + 1, end)?;
	for key in keys {
		ensure!(l.paid(&key.to_account_id()) == [0, 1, 2], "{key:?} paid for every round");
	}
	// Everyone trained the same transformer on the fetched data, and it learned.
	agreed_and_learned(&providers, 1, 3)
}
