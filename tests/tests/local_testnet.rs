//! Four validators of the `local` chain on loopback: they connect, produce and finalize
//! blocks; with one killed the other three keep finalizing; the restarted one catches up.
//!
//! Also exercises `build-spec --raw`, `--chain <file>` and `key insert`.

use std::{path::Path, time::Duration};

use anyhow::{ensure, Result};
use grid_e2e_tests::{run_node_command, wait_for, Node};

/// Writes the raw `local` chain spec to `dir/local.json` with `grid-node build-spec`.
fn raw_local_spec(dir: &Path) -> Result<String> {
	let out = run_node_command(&[
		"build-spec",
		"--chain",
		"local",
		"--raw",
		"--disable-default-bootnode",
	])?;
	ensure!(out.status.success(), "build-spec failed: {}", String::from_utf8_lossy(&out.stderr));
	let spec: serde_json::Value = serde_json::from_slice(&out.stdout)?;
	ensure!(spec["genesis"]["raw"].is_object(), "raw spec has raw genesis storage");
	let path = dir.join("local.json");
	std::fs::write(&path, &out.stdout)?;
	Ok(path.to_string_lossy().into_owned())
}

/// Gives a validator its keys: a persistent libp2p node key (validators must not get a fresh
/// identity on every start) and `//Name` Aura (sr25519) and GRANDPA (ed25519) keys in its
/// keystore.
fn insert_validator_keys(base_path: &Path, chain: &str, name: &str) -> Result<()> {
	let base = base_path.to_string_lossy();
	let out =
		run_node_command(&["key", "generate-node-key", "--base-path", &base, "--chain", chain])?;
	ensure!(out.status.success(), "generate-node-key: {}", String::from_utf8_lossy(&out.stderr));
	let suri = format!("//{name}");
	for (scheme, key_type) in [("sr25519", "aura"), ("ed25519", "gran")] {
		let out = run_node_command(&[
			"key",
			"insert",
			"--base-path",
			&base,
			"--chain",
			chain,
			"--scheme",
			scheme,
			"--suri",
			&suri,
			"--key-type",
			key_type,
		])?;
		ensure!(out.status.success(), "key insert: {}", String::from_utf8_lossy(&out.stderr));
	}
	Ok(())
}

#[test]
fn four_validators_finalize_and_survive_one_failure() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let spec = raw_local_spec(dir.path())?;
	let names = ["Alice", "Bob", "Charlie", "Dave"];
	let mut nodes: Vec<Node> = Vec::new();
	for name in names {
		let base = dir.path().join(name.to_lowercase());
		insert_validator_keys(&base, &spec, name)?;
		let mut args = vec!["--chain".to_string(), spec.clone(), "--validator".into()];
		if let Some(first) = nodes.first() {
			args.extend(["--bootnodes".into(), first.multiaddr()?]);
		}
		nodes.push(Node::start(name, &base, &args)?);
	}

	wait_for("every validator to see 3 peers", Duration::from_secs(60), || {
		nodes.iter().all(|n| n.peers().is_ok_and(|p| p >= 3)).then_some(())
	})?;
	for node in &nodes {
		node.wait_finalized(3, Duration::from_secs(120))?;
	}

	// Kill Charlie: three of four GRANDPA voters are more than 2/3, so finality goes on.
	let mut charlie = nodes.remove(2);
	charlie.kill();
	let target = nodes[0].finalized_number()? + 3;
	for node in &nodes {
		node.wait_finalized(target, Duration::from_secs(120))?;
	}

	// Restart Charlie on its old database: it reconnects and catches up.
	charlie.restart()?;
	let head = nodes[0].finalized_number()?;
	charlie.wait_finalized(head, Duration::from_secs(120))?;
	ensure!(charlie.peers()? >= 1, "restarted node is connected");
	Ok(())
}
