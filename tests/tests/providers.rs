//! A GPU provider registers on a running `grid-node --dev` over RPC: the libp2p key's
//! signature binds its PeerId, the stake goes on hold, and the view function reads it back.

use std::time::Duration;

use anyhow::Result;
use grid_e2e_tests::{
	calls::{capabilities, register_call},
	chain::{next_nonce, sign, submit, view, ChainContext},
	wait_for, Node,
};
use grid_primitives::provider::{ed25519_peer_id, peer_binding_payload};
use grid_runtime::RuntimeCall;
use pallet_providers::ProviderViewFunction;
use polkadot_sdk::{
	sp_core::{ed25519, Pair},
	sp_keyring::Sr25519Keyring,
};

const ENDPOINT: &str = "http://127.0.0.1:40334/health";

#[test]
fn provider_registers_on_a_dev_node() -> Result<()> {
	let dir = tempfile::tempdir()?;
	let node = Node::start("dev-providers", dir.path(), &["--dev".into()])?;
	node.wait_finalized(1, Duration::from_secs(60))?;
	let ctx = ChainContext::fetch(&node)?;

	let charlie = Sr25519Keyring::Charlie;
	let key = ed25519::Pair::from_seed(&[42; 32]);
	let stake = 500 * grid_primitives::currency::UNIT;
	let nonce = next_nonce(&node, &charlie.to_account_id())?;
	submit(
		&node,
		&sign(&ctx, charlie, nonce, register_call(&ctx, charlie, &key, stake, ENDPOINT)),
	)?;

	let view_of = |who: &Sr25519Keyring| {
		view(&node, ProviderViewFunction::<grid_runtime::Runtime>::new(who.to_account_id()))
	};
	let registered = wait_for("Charlie's registration", Duration::from_secs(60), || {
		view_of(&charlie).ok().flatten()
	})?;
	assert_eq!(registered.provider.stake, stake);
	assert_eq!(registered.provider.peer_id, ed25519_peer_id(&key.public().0));
	assert_eq!(registered.provider.capabilities, capabilities());
	assert_eq!(registered.score, polkadot_sdk::sp_runtime::Perbill::one());

	// Dave replays Charlie's libp2p proof: it is signed over Charlie's account, so it fails
	// and Dave is not registered.
	let dave = Sr25519Keyring::Dave;
	let mut call = register_call(&ctx, dave, &key, stake, ENDPOINT);
	if let RuntimeCall::Providers(pallet_providers::Call::register { peer_signature, .. }) =
		&mut call
	{
		*peer_signature = key.sign(&peer_binding_payload(&ctx.genesis, &charlie.to_account_id())).0;
	}
	submit(&node, &sign(&ctx, dave, 0, call))?;
	// The on-chain nonce, read at the best block: `next_nonce` (`system_accountNextIndex`)
	// counts the pool too, so it is 1 as soon as the pool takes the extrinsic, before any block
	// has it, and the check below could pass without the call ever having run.
	wait_for("Dave's failed extrinsic to be included", Duration::from_secs(60), || {
		(grid_e2e_tests::chain::account(&node, &dave.to_account_id(), None).ok()?.nonce == 1)
			.then_some(())
	})?;
	let head = node.finalized_number()?;
	node.wait_finalized(head + 1, Duration::from_secs(60))?;
	assert!(view_of(&dave)?.is_none(), "a proof for another account must not register Dave");
	Ok(())
}
