//! The node's JSON-RPC extensions beyond Substrate's defaults: account nonces
//! (`system_accountNextIndex`) and fee queries (`payment_*`).

use std::sync::Arc;

use grid_primitives::{AccountId, Balance, Nonce, OpaqueBlock as Block};
use jsonrpsee::RpcModule;
use polkadot_sdk::{
	pallet_transaction_payment_rpc::{self, TransactionPayment, TransactionPaymentApiServer},
	sc_transaction_pool_api::TransactionPool,
	sp_api::ProvideRuntimeApi,
	sp_block_builder::BlockBuilder,
	sp_blockchain::{Error as BlockChainError, HeaderBackend, HeaderMetadata},
	substrate_frame_rpc_system::{self, System, SystemApiServer},
};

/// What the RPC extensions need from the node.
pub struct FullDeps<C, P> {
	/// The client.
	pub client: Arc<C>,
	/// The transaction pool.
	pub pool: Arc<P>,
}

/// Builds the node's extra RPC methods.
pub fn create_full<C, P>(
	deps: FullDeps<C, P>,
) -> Result<RpcModule<()>, Box<dyn std::error::Error + Send + Sync>>
where
	C: ProvideRuntimeApi<Block>
		+ HeaderBackend<Block>
		+ HeaderMetadata<Block, Error = BlockChainError>
		+ Send
		+ Sync
		+ 'static,
	C::Api: substrate_frame_rpc_system::AccountNonceApi<Block, AccountId, Nonce>,
	C::Api: pallet_transaction_payment_rpc::TransactionPaymentRuntimeApi<Block, Balance>,
	C::Api: BlockBuilder<Block>,
	P: TransactionPool + 'static,
{
	let mut module = RpcModule::new(());
	let FullDeps { client, pool } = deps;
	module.merge(System::new(client.clone(), pool).into_rpc())?;
	module.merge(TransactionPayment::new(client).into_rpc())?;
	Ok(module)
}
