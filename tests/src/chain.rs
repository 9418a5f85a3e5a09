//! Signing extrinsics and reading state of a running node, using the runtime's own types so
//! the test encodes exactly what the chain decodes.

use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use codec::{Decode, Encode};
use grid_runtime::{
	Address, Balance, Hash, Nonce, Runtime, RuntimeCall, SignedPayload, TxExtension,
	UncheckedExtrinsic,
};
use polkadot_sdk::{
	frame_system::{self, AccountInfo},
	pallet_balances::{self, AccountData},
	pallet_transaction_payment::ChargeTransactionPayment,
	sp_core::{crypto::AccountId32, sr25519, Pair},
	sp_keyring::Sr25519Keyring,
	sp_runtime::{generic::Era, MultiSignature},
};
use serde_json::json;

use crate::Node;

fn decode_hex(value: &serde_json::Value) -> Result<Vec<u8>> {
	let text = value.as_str().ok_or_else(|| anyhow!("expected a hex string, got {value}"))?;
	Ok(hex::decode(text.trim_start_matches("0x"))?)
}

/// What a signature must commit to besides the call: the chain's identity and runtime version.
pub struct ChainContext {
	/// Hash of block 0.
	pub genesis: Hash,
	/// `spec_version` of the running runtime.
	pub spec_version: u32,
	/// `transaction_version` of the running runtime.
	pub transaction_version: u32,
}

impl ChainContext {
	/// Reads the context from a node.
	pub fn fetch(node: &Node) -> Result<Self> {
		let genesis = decode_hex(&node.rpc("chain_getBlockHash", json!([0]))?)?;
		let version = node.rpc("state_getRuntimeVersion", json!([]))?;
		let field = |name: &str| {
			version[name]
				.as_u64()
				.map(|v| v as u32)
				.ok_or_else(|| anyhow!("runtime version without {name}: {version}"))
		};
		Ok(Self {
			genesis: Hash::from_slice(&genesis),
			spec_version: field("specVersion")?,
			transaction_version: field("transactionVersion")?,
		})
	}
}

/// Signs `call` by `signer` as an immortal transaction with `nonce` and no tip.
pub fn sign(
	ctx: &ChainContext,
	signer: Sr25519Keyring,
	nonce: Nonce,
	call: RuntimeCall,
) -> UncheckedExtrinsic {
	sign_by(ctx, &signer.pair(), nonce, call)
}

/// [`sign`] by any sr25519 key pair.
pub fn sign_by(
	ctx: &ChainContext,
	signer: &sr25519::Pair,
	nonce: Nonce,
	call: RuntimeCall,
) -> UncheckedExtrinsic {
	let extension: TxExtension = (
		frame_system::AuthorizeCall::new(),
		frame_system::CheckNonZeroSender::new(),
		frame_system::CheckSpecVersion::new(),
		frame_system::CheckTxVersion::new(),
		frame_system::CheckGenesis::new(),
		frame_system::CheckEra::from(Era::Immortal),
		frame_system::CheckNonce::from(nonce),
		frame_system::CheckWeight::new(),
		ChargeTransactionPayment::from(0),
		pallet_jobs::CheckProof::new(),
		frame_system::WeightReclaim::new(),
	);
	// The signed-over data each extension adds without putting it in the extrinsic.
	let implicit = (
		(),
		(),
		ctx.spec_version,
		ctx.transaction_version,
		ctx.genesis,
		ctx.genesis, // immortal era: checked against the genesis hash
		(),
		(),
		(),
		(),
		(),
	);
	let payload = SignedPayload::from_raw(call.clone(), extension.clone(), implicit);
	let signature = payload.using_encoded(|bytes| signer.sign(bytes));
	UncheckedExtrinsic::new_signed(
		call,
		Address::Id(signer.public().into()),
		MultiSignature::Sr25519(signature),
		extension,
	)
}

/// Submits an extrinsic to the node's pool; returns its hash.
pub fn submit(node: &Node, xt: &UncheckedExtrinsic) -> Result<String> {
	let hex = format!("0x{}", hex::encode(xt.encode()));
	let hash = node.rpc("author_submitExtrinsic", json!([hex]))?;
	hash.as_str().map(str::to_owned).ok_or_else(|| anyhow!("bad extrinsic hash {hash}"))
}

/// A `transfer_keep_alive` call.
pub fn transfer(to: AccountId32, value: Balance) -> RuntimeCall {
	RuntimeCall::Balances(pallet_balances::Call::transfer_keep_alive {
		dest: Address::Id(to),
		value,
	})
}

/// Next nonce of `who` as the node's pool sees it (`system_accountNextIndex`).
pub fn next_nonce(node: &Node, who: &AccountId32) -> Result<Nonce> {
	let value = node.rpc("system_accountNextIndex", json!([who.to_string()]))?;
	value.as_u64().map(|n| n as Nonce).ok_or_else(|| anyhow!("bad nonce {value}"))
}

/// `who`'s account record (nonce and balances) at block `at` (best block when `None`);
/// the default record for an account that does not exist.
pub fn account(
	node: &Node,
	who: &AccountId32,
	at: Option<&str>,
) -> Result<AccountInfo<Nonce, AccountData<Balance>>> {
	let key = frame_system::Account::<Runtime>::hashed_key_for(who);
	let key = format!("0x{}", hex::encode(key));
	let value = node.rpc("state_getStorage", json!([key, at]))?;
	if value.is_null() {
		return Ok(AccountInfo::default());
	}
	let bytes = decode_hex(&value)?;
	AccountInfo::decode(&mut &bytes[..]).context("decoding System::Account")
}

/// Free balance of `who` at block `at` (best block when `None`).
pub fn free_balance(node: &Node, who: &AccountId32, at: Option<&str>) -> Result<Balance> {
	Ok(account(node, who, at)?.data.free)
}

/// Waits until `who`'s transaction with `nonce` is in the best block (the on-chain nonce,
/// unlike `system_accountNextIndex`, does not count transactions still in the pool).
pub fn wait_included(
	node: &Node,
	who: &AccountId32,
	nonce: Nonce,
	timeout: Duration,
) -> Result<()> {
	crate::wait_for("the transaction to be included", timeout, || {
		(account(node, who, None).ok()?.nonce > nonce).then_some(())
	})
}

/// Waits until the node has built on its best block. The RPC reports a block before the
/// transaction pool has rebuilt its view of it, and the pool checks a new transaction's fee
/// against that view: a transaction that spends funds included a moment ago (a new account's
/// first call) can be refused as unable to pay. The node authors the next block from the
/// pool's view of this one, so once that block exists the pool has caught up.
pub fn wait_pool_caught_up(node: &Node, timeout: Duration) -> Result<()> {
	let best = node.best_number()?;
	crate::wait_for("the pool to catch up with the best block", timeout, || {
		(node.best_number().ok()? > best).then_some(())
	})
}

/// Calls a pallet view function through the `RuntimeViewFunction` runtime API and decodes
/// its result.
pub fn view<V>(node: &Node, call: V) -> Result<V::ReturnType>
where
	V: polkadot_sdk::frame_support::view_functions::ViewFunction + Encode,
	V::ReturnType: Decode,
{
	use polkadot_sdk::frame_support::view_functions::ViewFunctionDispatchError;
	let args = (V::id(), call.encode()).encode();
	let value = node.rpc(
		"state_call",
		json!(["RuntimeViewFunction_execute_view_function", format!("0x{}", hex::encode(args))]),
	)?;
	let bytes = decode_hex(&value)?;
	let result = Result::<Vec<u8>, ViewFunctionDispatchError>::decode(&mut &bytes[..])
		.context("decoding the view function's result")?
		.map_err(|e| anyhow!("view function failed: {e:?}"))?;
	Ok(V::ReturnType::decode(&mut &result[..])?)
}

/// Hash of block `number` on the node's best chain.
pub fn block_hash(node: &Node, number: u32) -> Result<String> {
	let value = node.rpc("chain_getBlockHash", json!([number]))?;
	value.as_str().map(str::to_owned).ok_or_else(|| anyhow!("no block #{number}: {value}"))
}

/// The runtime events of block `number`.
pub fn events_at(node: &Node, number: u32) -> Result<Vec<grid_runtime::RuntimeEvent>> {
	let hash = block_hash(node, number)?;
	// `System::Events` is private to the pallet: its key is the plain storage prefix.
	let records =
		storage_value::<Vec<frame_system::EventRecord<grid_runtime::RuntimeEvent, Hash>>>(
			node, b"System", b"Events", &hash,
		)
		.context("decoding System::Events")?;
	Ok(records.unwrap_or_default().into_iter().map(|r| r.event).collect())
}

/// The plain storage value `pallet::item` at block `hash` (none when it is not set).
pub fn storage_value<T: Decode>(
	node: &Node,
	pallet: &[u8],
	item: &[u8],
	hash: &str,
) -> Result<Option<T>> {
	let key = polkadot_sdk::frame_support::storage::storage_prefix(pallet, item);
	let value = node.rpc("state_getStorage", json!([format!("0x{}", hex::encode(key)), hash]))?;
	if value.is_null() {
		return Ok(None);
	}
	Ok(Some(T::decode(&mut &decode_hex(&value)?[..])?))
}
