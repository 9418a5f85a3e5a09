//! `grid-node --dev`: produces and finalizes blocks, includes a transfer submitted over RPC,
//! serves Prometheus metrics and the node's extra RPC methods.

use std::time::Duration;

use grid_e2e_tests::{
	chain::{free_balance, next_nonce, sign, submit, transfer, ChainContext},
	wait_for, Node,
};
use polkadot_sdk::sp_keyring::Sr25519Keyring;
use serde_json::json;

#[test]
fn dev_node_produces_finalizes_and_includes_a_transfer() -> anyhow::Result<()> {
	let dir = tempfile::tempdir()?;
	// `--base-path` keeps the state in our temporary directory instead of the default `--tmp`.
	let node = Node::start("dev", dir.path(), &["--dev".into()])?;

	node.wait_finalized(2, Duration::from_secs(60))?;
	assert!(node.best_number()? >= 2);

	let (alice, bob) = (Sr25519Keyring::Alice, Sr25519Keyring::Bob.to_account_id());
	let amount = 1_234_567_890_000;
	let bob_before = free_balance(&node, &bob, None)?;
	let nonce = next_nonce(&node, &alice.to_account_id())?;
	assert_eq!(nonce, 0, "Alice has not sent anything yet");

	let ctx = ChainContext::fetch(&node)?;
	submit(&node, &sign(&ctx, alice, nonce, transfer(bob.clone(), amount)))?;

	// Included *and* finalized: Bob's balance changed in the finalized state.
	wait_for("the transfer to be finalized", Duration::from_secs(60), || {
		let head = node.finalized_hash().ok()?;
		let now = free_balance(&node, &bob, Some(&head)).ok()?;
		(now == bob_before + amount).then_some(())
	})?;
	assert_eq!(next_nonce(&node, &alice.to_account_id())?, 1);

	// A second submission of the same signed transaction is stale, not applied twice.
	let replay = submit(&node, &sign(&ctx, alice, nonce, transfer(bob.clone(), amount)));
	assert!(replay.is_err(), "a replayed nonce must be rejected");

	// Fee estimation RPC from pallet-transaction-payment.
	let xt = sign(&ctx, alice, 1, transfer(bob, 1));
	let info = node.rpc(
		"payment_queryInfo",
		json!([format!("0x{}", hex::encode(codec::Encode::encode(&xt)))]),
	)?;
	assert!(info["partialFee"].as_str().is_some_and(|fee| fee != "0"), "fee info: {info}");

	let metrics = node.metrics()?;
	assert!(metrics.contains("substrate_block_height"), "Prometheus metrics are served");
	Ok(())
}

#[test]
fn malformed_extrinsic_is_rejected_with_an_error() -> anyhow::Result<()> {
	let dir = tempfile::tempdir()?;
	let node = Node::start("dev-bad-input", dir.path(), &["--dev".into()])?;
	let err = node.rpc("author_submitExtrinsic", json!(["0x0102030405"])).unwrap_err();
	assert!(err.to_string().contains("author_submitExtrinsic failed"), "{err}");

	// A transfer signed for another chain (wrong genesis) fails signature checks.
	let mut ctx = ChainContext::fetch(&node)?;
	ctx.genesis = Default::default();
	let xt = sign(&ctx, Sr25519Keyring::Alice, 0, transfer(Sr25519Keyring::Bob.to_account_id(), 1));
	let err = submit(&node, &xt).unwrap_err();
	assert!(err.to_string().to_lowercase().contains("invalid"), "{err}");
	Ok(())
}
