//! Bad command-line input gets a clear error and a failing exit status.

use grid_e2e_tests::run_node_command;

fn stderr_of(args: &[&str]) -> String {
	let out = run_node_command(args).expect("grid-node runs");
	assert!(!out.status.success(), "grid-node {args:?} must fail");
	String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn unknown_chain_is_named_in_the_error() {
	let err = stderr_of(&["build-spec", "--chain", "no-such-chain"]);
	assert!(err.contains("unknown chain `no-such-chain`"), "{err}");
}

#[test]
fn malformed_chain_spec_file_is_rejected() {
	let dir = tempfile::tempdir().unwrap();
	let path = dir.path().join("broken.json");
	std::fs::write(&path, "{ not json").unwrap();
	let err = stderr_of(&["build-spec", "--chain", path.to_str().unwrap()]);
	assert!(err.contains("invalid chain spec file"), "{err}");
}

#[test]
fn bad_key_is_rejected() {
	let dir = tempfile::tempdir().unwrap();
	let base = dir.path().to_str().unwrap();
	let err = stderr_of(&[
		"key",
		"insert",
		"--base-path",
		base,
		"--chain",
		"dev",
		"--scheme",
		"sr25519",
		"--suri",
		"not a valid secret uri",
		"--key-type",
		"aura",
	]);
	assert!(err.to_lowercase().contains("invalid"), "{err}");

	let err = stderr_of(&[
		"key",
		"insert",
		"--base-path",
		base,
		"--chain",
		"dev",
		"--scheme",
		"sr25519",
		"--suri",
		"//Alice",
		"--key-type",
		"toolong",
	]);
	assert!(err.contains("KeyTypeInvalid"), "{err}");
}

#[test]
fn build_spec_prints_both_presets() {
	for (chain, validators) in [("dev", 1), ("local", 4)] {
		let out = run_node_command(&["build-spec", "--chain", chain]).unwrap();
		assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
		let spec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
		let patch = &spec["genesis"]["runtimeGenesis"]["patch"];
		let aura = patch["aura"]["authorities"].as_array().expect("aura authorities");
		assert_eq!(aura.len(), validators, "{chain}");
		assert!(patch["grandpa"]["authorities"].is_array(), "{chain}: grandpa key");
		assert!(patch["balances"]["balances"].is_array(), "{chain}: balances key");
	}
}
