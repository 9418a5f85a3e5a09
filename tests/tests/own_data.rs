//! A buyer's own data and model, end to end on a dev chain with real processes: the buyer
//! publishes a token dataset with `grid-trainer data publish` and posts two jobs on it, a
//! decoder-only transformer described by its knobs. The first names a dataset nobody serves
//! (its reference differs from the published one by a byte): the buyer's CLI refuses to post
//! it unless told `--unchecked`, and then every provider refuses it before joining, so nobody
//! stakes into it. The second names an HTTP source that trickles (a kilobyte a second, for
//! ever): the providers fetch its data beside their search, so it holds back nobody. The third
//! is fetched by every provider from the buyer,
//! checked, and trained to completion, every provider paid for every round and agreeing on
//! the model. The buyer then fetches the model in the Hugging Face layout, which Python
//! `transformers` loads as a Llama that predicts the text, and fine-tunes it: the export,
//! published as initial weights, starts a fourth job whose new providers begin from exactly
//! the third job's final model.

use std::time::Duration;

use anyhow::{anyhow, ensure, Result};
use grid_e2e_tests::{
	network::{
		agreed_and_learned, dev_node, keyed_provider, logs, post_job, post_job_with, providers,
		url, wait_status, Ledger,
	},
	trainers::{hf_logits, job_cli, publish},
};
use polkadot_sdk::sp_keyring::Sr25519Keyring;

/// The transformer job on `dataset_line` (and any more top-level lines) for `rounds` rounds
/// with `providers` participants.
fn job(dataset_line: &str, rounds: u32, providers: u32) -> String {
	format!(
		r#"{dataset_line}
rounds = {rounds}
reward_per_round = 10
min_providers = {providers}
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
	let (_publisher, dataset) = publish(&corpus, "tokens-u16", &dir.path().join("buyer-store"))?;

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
	let refused = post_job(&url, dir.path(), &job(&forged, 3, 3), 0).unwrap_err().to_string();
	ensure!(refused.contains("no holder served its manifest"), "{refused}");
	post_job_with(&url, dir.path(), &job(&forged, 3, 3), 0, &["--unchecked"])?;
	// Weights that are not weights (the token dataset named as initial weights) are refused
	// by the CLI too.
	let as_weights = dataset.replacen("dataset = ", "initial_weights = ", 1);
	let spec = job(&format!("{dataset}\n{as_weights}"), 3, 3);
	let refused = post_job(&url, dir.path(), &spec, 1).unwrap_err().to_string();
	ensure!(refused.contains("named as initial weights, but it is tokens-u16 data"), "{refused}");
	// Job 1's source sends a kilobyte a second of a 10 MB body, for as long as it is read
	// (the checked CLI posts it: an HTTP source is for the providers to fetch).
	let trickle = format!(
		"dataset = {{ uri = \"http://127.0.0.1:{}/corpus.bin\", content_hash = \"0x{}\" }}",
		serve_trickle(),
		"ab".repeat(32)
	);
	post_job(&url, dir.path(), &job(&trickle, 3, 3), 1)?;
	post_job(&url, dir.path(), &job(&dataset, 3, 3), 2)?;

	let keys = [Sr25519Keyring::Bob, Sr25519Keyring::Charlie, Sr25519Keyring::Dave];
	// Loopback sources allowed, so that job 1's is fetched, not refused for its address.
	let providers = keys
		.iter()
		.map(|key| keyed_provider(dir.path(), &url, *key, "private_http_sources = true"))
		.collect::<Result<Vec<_>>>()?;
	let status =
		wait_status(&url, 2, Duration::from_secs(400), &providers, |s| s.contains("completed"))?;
	ensure!(status.contains("round 3/3") && status.contains("final model 0x"), "{status}");

	// Nobody joined the job whose data could not be had, and each said why; nobody joined the
	// trickling one, and it held nobody back: each joined job 2 while job 1's data was still
	// coming (had the search waited on it, job 1 would have been refused first, for its pace).
	for (id, which) in [(0, "no data"), (1, "a trickling source")] {
		let out = job_cli(&url, &["status", "--job", &id.to_string()])?;
		let job = String::from_utf8_lossy(&out.stdout);
		ensure!(job.contains("0 participants"), "job {id} ({which}): {job}\n{}", logs(&providers));
	}
	for p in &providers {
		let log = p.log();
		ensure!(
			log.contains("job 0 skipped: its dataset")
				&& log.contains("no holder served its manifest"),
			"{}",
			p.log_tail()
		);
		let joined = log.find("joined job 2").ok_or_else(|| anyhow!("{}", p.log_tail()))?;
		ensure!(
			log.contains("job 1: fetching its data")
				&& log.find("job 1 skipped").is_none_or(|refused| refused > joined),
			"{}",
			p.log_tail()
		);
	}

	let end = node.best_number()?;
	let l = Ledger::read(&node, start + 1, end)?;
	for key in keys {
		let paid = l.paid(&key.to_account_id());
		ensure!(
			paid == [0, 1, 2],
			"{key:?} paid for every round, not only {paid:?}\n{}",
			logs(&providers)
		);
	}
	// Everyone trained the same transformer on the fetched data, and it learned.
	agreed_and_learned(&providers, 2, 3)?;
	exported_model_predicts_in_transformers(&url, dir.path(), &tokens)?;
	let final_model = hash_after(&status, "final model 0x")?;
	fine_tuning_starts_from_the_published_weights(
		&url,
		dir.path(),
		&dataset,
		&final_model,
		&providers,
	)
}

/// Serves every HTTP GET on a loopback port, on a thread, a 10 MB body that comes a kilobyte a
/// second; the port.
fn serve_trickle() -> u16 {
	use std::io::{Read, Write};
	let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
	let port = listener.local_addr().expect("its address").port();
	std::thread::spawn(move || {
		for mut stream in listener.incoming().flatten() {
			std::thread::spawn(move || {
				let _ = stream.read(&mut [0u8; 4096]);
				let head = "HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n";
				let mut sent = stream.write_all(head.as_bytes());
				while sent.is_ok() {
					std::thread::sleep(Duration::from_secs(1));
					sent = stream.write_all(&[b'a'; 1000]);
				}
			});
		}
	});
	port
}

/// The 64 hex digits after `marker` in `text`.
fn hash_after(text: &str, marker: &str) -> Result<String> {
	let at = text.find(marker).ok_or_else(|| anyhow!("no {marker:?} in {text}"))? + marker.len();
	text.get(at..at + 64).map(str::to_owned).ok_or_else(|| anyhow!("short hash in {text}"))
}

/// The buyer publishes the exported model (Hugging Face layout) as initial weights and posts
/// a second job on the same data that names them. Its new providers fetch the weights from
/// the buyer, check them, and start from exactly the first job's final model: the weights
/// went through the export and back without a bit changed, and the new job's first held-out
/// loss is already below the first job's.
fn fine_tuning_starts_from_the_published_weights(
	url: &str,
	dir: &std::path::Path,
	dataset: &str,
	final_model: &str,
	first: &[grid_e2e_tests::trainers::Provider],
) -> Result<()> {
	let weights = dir.join("hf").join("model.safetensors");
	let (_publisher, weights_line) = publish(&weights, "weights", &dir.join("weights-store"))?;
	ensure!(weights_line.starts_with("initial_weights = {"), "{weights_line}");
	let weights_hash = hash_after(&weights_line, "content_hash = \"0x")?;
	post_job(url, dir, &job(&format!("{dataset}\n{weights_line}"), 2, 2), 3)?;
	let keys = [Sr25519Keyring::Eve, Sr25519Keyring::Ferdie];
	let tuners = providers(dir, url, &keys)?;
	let status =
		wait_status(url, 3, Duration::from_secs(400), &tuners, |s| s.contains("completed"))?;
	ensure!(status.contains("round 2/2"), "{status}");
	for p in &tuners {
		let started = format!("starting from weights 0x{weights_hash} (model 0x{final_model})");
		ensure!(p.log().contains(&started), "{started}?\n{}", p.log_tail());
	}
	agreed_and_learned(&tuners, 3, 2)?;
	let first_loss = first[0].rounds(2)[0]["eval_loss"].as_f64();
	let tuned_loss = tuners[0].rounds(3)[0]["eval_loss"].as_f64();
	ensure!(
		matches!((first_loss, tuned_loss), (Some(a), Some(b)) if b < a),
		"fine-tuning's first held-out loss {tuned_loss:?} is not below training's {first_loss:?}"
	);
	Ok(())
}

/// The buyer fetches the final model in the Hugging Face layout, and `transformers` loads it
/// as a Llama that predicts the buyer's text better than chance.
fn exported_model_predicts_in_transformers(
	url: &str,
	dir: &std::path::Path,
	tokens: &[u8],
) -> Result<()> {
	let hf = dir.join("hf");
	let out = dir.join("model.safetensors");
	let args = ["fetch", "--job", "2", "--out", path(&out)?, "--hf", path(&hf)?];
	let fetched =
		job_cli(url, &[&args[..], &["--store", path(&dir.join("buyer-store"))?]].concat())?;
	let stdout = String::from_utf8_lossy(&fetched.stdout);
	ensure!(
		fetched.status.success() && stdout.contains("Hugging Face export (\"LlamaForCausalLM\")"),
		"{stdout}\n{}",
		String::from_utf8_lossy(&fetched.stderr)
	);
	// Two rows of 32 tokens from the corpus (context 32, vocabulary 600).
	let ids: Vec<u32> =
		tokens.chunks(2).map(|b| u32::from(u16::from_le_bytes([b[0], b[1]]))).collect();
	let rows: Vec<Vec<u32>> = [1_000, 50_000].iter().map(|&at| ids[at..at + 32].to_vec()).collect();
	let (architecture, logits) = hf_logits(&hf, &rows)?;
	ensure!(architecture == "LlamaForCausalLM", "{architecture}");
	ensure!(logits.len() == 2 * 32 * 600, "{} logits", logits.len());
	let loss = next_token_loss(&logits, &rows, 600);
	// Chance is ln 600 = 6.40.
	ensure!(loss.is_finite() && loss < 5.5, "loss {loss} in transformers");
	Ok(())
}

fn path(p: &std::path::Path) -> Result<&str> {
	p.to_str().ok_or_else(|| anyhow!("non-UTF-8 path {}", p.display()))
}

/// Mean cross-entropy of each next token under `logits` `[rows, time, vocab]`.
fn next_token_loss(logits: &[f32], rows: &[Vec<u32>], vocab: usize) -> f64 {
	let mut total = (0.0, 0);
	for (r, row) in rows.iter().enumerate() {
		for t in 0..row.len() - 1 {
			let at = &logits[(r * row.len() + t) * vocab..][..vocab];
			let max = at.iter().fold(f32::MIN, |m, v| m.max(*v)) as f64;
			let norm = at.iter().map(|v| (*v as f64 - max).exp()).sum::<f64>().ln() + max;
			total = (total.0 + norm - at[row[t + 1] as usize] as f64, total.1 + 1);
		}
	}
	total.0 / total.1 as f64
}
