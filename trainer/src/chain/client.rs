//! A connection to a `grid-node`: typed reads through the pallets' view functions and
//! storage, and signed transactions that wait for inclusion and report the runtime's error.

use std::time::{Duration, Instant};

use grid_primitives::job::JobId;
use subxt::{
	transactions::{Payload, TransactionStatus},
	OnlineClient,
};
use subxt_signer::sr25519::Keypair;

use super::{
	api::{self, runtime_types},
	AccountId, ChainError, GridConfig, Result,
};

/// A job with its held escrow and open round, as the jobs pallet's `job` view returns it.
pub type JobView = runtime_types::pallet_jobs::types::JobView<AccountId, u128, u32>;
/// A provider with its health and score, as the providers pallet's `provider` view returns it.
pub type ProviderView = runtime_types::pallet_providers::types::ProviderView<u128, u32>;
/// Where a job is in its life.
pub type JobStatus = runtime_types::pallet_jobs::types::JobStatus;
/// A provider's membership of a job.
pub type Participant = runtime_types::pallet_jobs::types::Participant<u128>;
/// An open fraud challenge.
pub type Challenge = runtime_types::pallet_jobs::types::Challenge<AccountId, u128, u32>;
/// A committee member's ballot on a challenge.
pub type Ballot = runtime_types::pallet_jobs::types::Ballot;
/// Events of a transaction.
pub type TxEvents = subxt::extrinsics::ExtrinsicEvents<GridConfig>;

/// Reads of a block [`Chain::at_number`] makes before it gives up (a fork switch between
/// reading a block's hash and opening it retracts the block; the next read names another).
const FORK_SWITCH_RETRIES: u32 = 5;
/// Pause between those reads: about the time a node takes to import the block it switches to.
const FORK_SWITCH_PAUSE: Duration = Duration::from_millis(200);

/// The client at one block.
type AtBlock =
	subxt::client::ClientAtBlock<GridConfig, subxt::client::OnlineClientAtBlockImpl<GridConfig>>;

/// A block hash as the node's JSON-RPC methods give it.
type BlockHash = <subxt::config::RpcConfigFor<GridConfig> as subxt::rpcs::RpcConfig>::Hash;

/// A connected node.
#[derive(Clone)]
pub struct Chain {
	api: OnlineClient<GridConfig>,
	/// The same connection's plain JSON-RPC methods: the best block and the pool's nonces
	/// (subxt's client works at finalized blocks, which lag the best one by a few blocks).
	rpc: subxt::rpcs::LegacyRpcMethods<subxt::config::RpcConfigFor<GridConfig>>,
	url: String,
}

impl Chain {
	/// Connects to the node at `url` (`ws://…`), retrying until `patience` runs out (a node
	/// that is still starting, or restarting, answers a little later).
	pub async fn connect(url: &str, patience: Duration) -> Result<Self> {
		let start = Instant::now();
		loop {
			match Self::open(url).await {
				Ok((api, rpc)) => return Ok(Chain { api, rpc, url: url.to_string() }),
				Err(e) if start.elapsed() >= patience => {
					return Err(ChainError::Connect { url: url.to_string(), reason: e.to_string() })
				}
				Err(e) => {
					tracing::debug!("node at {url} not ready: {e}");
					tokio::time::sleep(Duration::from_millis(500)).await;
				}
			}
		}
	}

	async fn open(
		url: &str,
	) -> std::result::Result<
		(
			OnlineClient<GridConfig>,
			subxt::rpcs::LegacyRpcMethods<subxt::config::RpcConfigFor<GridConfig>>,
		),
		String,
	> {
		let rpc =
			subxt::rpcs::RpcClient::from_insecure_url(url).await.map_err(|e| e.to_string())?;
		let api = OnlineClient::<GridConfig>::from_rpc_client(rpc.clone())
			.await
			.map_err(|e| e.to_string())?;
		Ok((api, subxt::rpcs::LegacyRpcMethods::new(rpc)))
	}

	/// The node's URL.
	pub fn url(&self) -> &str {
		&self.url
	}

	/// Hash of block 0 (proofs and peer bindings are bound to it).
	pub fn genesis(&self) -> grid_primitives::Hash {
		grid_primitives::Hash::from(self.api.genesis_hash().0)
	}

	/// The client at the node's best block now.
	async fn at_best(&self) -> Result<AtBlock> {
		self.at_number(None).await
	}

	/// The client at block `number` of the best chain (the best block with `None`).
	///
	/// The hash is read first and the block opened after: when the node switches forks in
	/// between, the block it named may be gone ("cannot find the block header"), which is no
	/// fault of the node or of this trainer, so the read starts over with the new best chain's
	/// hash, a few times, before it is an error.
	async fn at_number(&self, number: Option<u32>) -> Result<AtBlock> {
		let mut attempt = 1;
		loop {
			match self.try_at_number(number).await {
				Ok(at) => return Ok(at),
				Err(e) if attempt < FORK_SWITCH_RETRIES => {
					tracing::debug!("reading block {number:?} (attempt {attempt}): {e}; again");
					attempt += 1;
					tokio::time::sleep(FORK_SWITCH_PAUSE).await;
				}
				Err(e) => return Err(e),
			}
		}
	}

	/// One attempt of [`Chain::at_number`].
	async fn try_at_number(&self, number: Option<u32>) -> Result<AtBlock> {
		let hash = self.hash_of(number, "reading a block").await?;
		self.api
			.at_block(subxt::backend::BlockRef::from_hash(hash))
			.await
			.map_err(|e| ChainError::rpc("reading a block", e))
	}

	/// The hash of block `number` of the best chain (the best block with `None`).
	async fn hash_of(&self, number: Option<u32>, what: &'static str) -> Result<BlockHash> {
		self.rpc
			.chain_get_block_hash(number.map(Into::into))
			.await
			.map_err(|e| ChainError::rpc(what, e))?
			.ok_or_else(|| {
				let which = number.map_or("such block".to_string(), |n| format!("block {n}"));
				ChainError::rpc(what, format!("the node has no {which}"))
			})
	}

	/// Transaction parameters with `signer`'s next nonce as the node's pool sees it, so
	/// transactions sent one after another do not reuse a nonce.
	async fn params(
		&self,
		signer: &Keypair,
	) -> Result<subxt::config::DefaultExtrinsicParams<GridConfig>> {
		let who = signer.public_key().to_account_id();
		let nonce = self
			.rpc
			.system_account_next_index(&who)
			.await
			.map_err(|e| ChainError::rpc("reading the account's nonce", e))?;
		Ok(subxt::config::DefaultExtrinsicParamsBuilder::<GridConfig>::new().nonce(nonce).build())
	}

	/// The hash of block `number` of the best chain.
	pub async fn block_hash(&self, number: u32) -> Result<grid_primitives::Hash> {
		let hash = self.hash_of(Some(number), "reading a block hash").await?;
		Ok(grid_primitives::Hash::from(hash.0))
	}

	/// Best block number and its timestamp (Unix ms).
	pub async fn head(&self) -> Result<(u32, u64)> {
		let at = self.at_best().await?;
		let now = at
			.storage()
			.fetch(api::storage().timestamp().now(), ())
			.await
			.map_err(|e| ChainError::rpc("reading the timestamp", e))?
			.decode()
			.map_err(|e| ChainError::rpc("decoding the timestamp", e))?;
		Ok((at.block_number() as u32, now))
	}

	/// Calls a pallet view function at the best block.
	///
	/// The runtime API (`RuntimeViewFunction_execute_view_function(id, input: Vec<u8>) ->
	/// Result<Vec<u8>, ViewFunctionDispatchError>`) takes the inputs as one length-prefixed
	/// byte vector and wraps the output. subxt 0.51.0's `ViewFunctionsClient::call` (through
	/// frame-decode 0.18) sends the inputs without the length prefix and decodes the answer
	/// as the bare output, so the runtime rejects its calls; here the prefix is added, the
	/// wrapper taken off, and the output decoded with its type from the metadata.
	async fn view<P>(&self, what: &'static str, payload: P) -> Result<P::ReturnType>
	where
		P: subxt::view_functions::Payload,
	{
		use codec::Decode;
		use subxt::ext::scale_decode::DecodeAsType;
		let at = self.at_best().await?;
		let functions = at.view_functions();
		let encoded = functions.encode_args(&payload).map_err(|e| ChainError::rpc(what, e))?;
		// The 32-byte query id, then the inputs as a `Vec<u8>`.
		let (id, inputs) = encoded.split_at(32.min(encoded.len()));
		let mut args = id.to_vec();
		codec::Encode::encode_to(&inputs.to_vec(), &mut args);
		let raw = functions.call_raw(Some(&args)).await.map_err(|e| ChainError::rpc(what, e))?;
		let output = match raw.split_first() {
			Some((0, rest)) => Vec::<u8>::decode(&mut &rest[..]),
			_ => {
				let head = hex::encode(&raw[..raw.len().min(48)]);
				return Err(ChainError::rpc(
					what,
					format!("the runtime refused the view function: 0x{head}"),
				));
			}
		}
		.map_err(|e| ChainError::rpc(what, e))?;
		let metadata = at.metadata_ref();
		let ty = metadata
			.pallet_by_name(payload.pallet_name())
			.and_then(|p| p.view_function_by_name(payload.function_name()))
			.map(|f| f.output_ty())
			.ok_or_else(|| ChainError::rpc(what, "the view function is not in the metadata"))?;
		P::ReturnType::decode_as_type(&mut &output[..], ty, metadata.types())
			.map_err(|e| ChainError::rpc(what, e))
	}

	/// A job, if it exists.
	pub async fn job(&self, id: JobId) -> Result<Option<JobView>> {
		self.view("reading a job", api::view_functions().jobs().job(id)).await
	}

	/// Ids and states of every job.
	pub async fn jobs(&self) -> Result<Vec<(JobId, JobStatus)>> {
		self.view("listing jobs", api::view_functions().jobs().jobs(0, u32::MAX)).await
	}

	/// The data seed round `round` of `job` was settled with, while the chain keeps it.
	pub async fn round_seed(
		&self,
		job: JobId,
		round: grid_primitives::job::RoundIndex,
	) -> Result<Option<grid_primitives::Hash>> {
		let summary = self
			.view("reading a round", api::view_functions().jobs().round_result(job, round))
			.await?;
		Ok(summary.map(|s| s.seed))
	}

	/// A provider's record, if it is registered.
	pub async fn provider(&self, who: &AccountId) -> Result<Option<ProviderView>> {
		self.view("reading a provider", api::view_functions().providers().provider(*who)).await
	}

	/// Every registered provider.
	pub async fn providers(&self) -> Result<Vec<(AccountId, ProviderView)>> {
		self.view("listing providers", api::view_functions().providers().providers()).await
	}

	/// The signed proofs of a job's open round.
	pub async fn round_proofs(&self, job: JobId) -> Result<Vec<super::SignedProof>> {
		let proofs = self
			.view("reading a round's proofs", api::view_functions().jobs().round_proofs(job))
			.await?;
		Ok(proofs.into_iter().map(|p| p.0).collect())
	}

	/// A job's participants with their membership records.
	pub async fn participants(&self, job: JobId) -> Result<Vec<(AccountId, Participant)>> {
		self.view("reading a job's participants", api::view_functions().jobs().participants(job))
			.await
	}

	/// What `who` was paid for `round` of `job`, if it was paid.
	pub async fn contribution(
		&self,
		job: JobId,
		round: grid_primitives::job::RoundIndex,
		who: &AccountId,
	) -> Result<Option<runtime_types::pallet_jobs::types::Contribution<u128>>> {
		self.view(
			"reading a contribution",
			api::view_functions().jobs().contribution(job, round, *who),
		)
		.await
	}

	/// (round, training loss) of each proof of `job` included in block `number`, in order.
	/// A round settles in the block that brings its last proof, and the pallet clears proofs
	/// when it settles, so proofs are read from the blocks that carried them.
	pub async fn proof_losses_in(
		&self,
		job: JobId,
		number: u32,
	) -> Result<Vec<(grid_primitives::job::RoundIndex, f64)>> {
		let at = self.at_number(Some(number)).await?;
		let extrinsics = at
			.extrinsics()
			.fetch()
			.await
			.map_err(|e| ChainError::rpc("reading a block's extrinsics", e))?;
		let mut losses = Vec::new();
		for call in extrinsics.find::<api::jobs::calls::SubmitProof>() {
			let call = call.map_err(|e| ChainError::rpc("decoding a proof", e))?;
			let proof = &call.proof.0.proof;
			if proof.job == job && proof.samples_processed > 0 {
				losses.push((proof.round, f64::from(proof.train_loss_micros) / 1e6));
			}
		}
		Ok(losses)
	}

	/// (amount, reason) of each slash of `who`'s stake in block `number`.
	pub async fn slashes_in(&self, number: u32, who: &AccountId) -> Result<Vec<(u128, String)>> {
		let at = self.at_number(Some(number)).await?;
		let events = at
			.events()
			.fetch()
			.await
			.map_err(|e| ChainError::rpc("reading a block's events", e))?;
		let mut slashes = Vec::new();
		for event in events.find::<api::providers::events::Slashed>() {
			let event = event.map_err(|e| ChainError::rpc("decoding a slash", e))?;
			if event.who == *who {
				slashes.push((event.amount, format!("{:?}", event.reason)));
			}
		}
		Ok(slashes)
	}

	/// The challenge of `who`'s contribution to `round` of `job`, if one was ever opened.
	pub async fn challenged(
		&self,
		job: JobId,
		round: grid_primitives::job::RoundIndex,
		who: &AccountId,
	) -> Result<Option<u64>> {
		let at = self.at_best().await?;
		let value = at
			.storage()
			.try_fetch(api::storage().jobs().challenged(), ((job, round), *who))
			.await
			.map_err(|e| ChainError::rpc("reading a challenge", e))?;
		value
			.map(|v| v.decode().map_err(|e| ChainError::rpc("decoding a challenge id", e)))
			.transpose()
	}

	/// Open challenges whose committee includes `who`.
	pub async fn assigned_challenges(&self, who: &AccountId) -> Result<Vec<(u64, Challenge)>> {
		self.view(
			"reading assigned challenges",
			api::view_functions().jobs().assigned_challenges(*who),
		)
		.await
	}

	/// The registered listen addresses of a job's participants (except `except`). The pallet
	/// only checks that an address is text starting with `/`, so one that does not parse as
	/// a multiaddr is skipped with a warning: one participant's bad entry must not keep
	/// others from dialing the rest.
	pub async fn participant_addresses(
		&self,
		job: JobId,
		except: Option<&AccountId>,
	) -> Result<Vec<libp2p::Multiaddr>> {
		let mut addresses = Vec::new();
		for (who, _) in self.participants(job).await? {
			if except == Some(&who) {
				continue;
			}
			let Some(view) = self.provider(&who).await? else { continue };
			for raw in &view.provider.multiaddrs.0 {
				let text = String::from_utf8_lossy(&raw.0);
				match text.parse() {
					Ok(addr) => addresses.push(addr),
					Err(e) => tracing::warn!("{who} registered an unusable address {text:?}: {e}"),
				}
			}
		}
		Ok(addresses)
	}

	/// Free balance of an account.
	pub async fn free_balance(&self, who: &AccountId) -> Result<u128> {
		let at = self.at_best().await?;
		let info = at
			.storage()
			.fetch(api::storage().system().account(), (*who,))
			.await
			.map_err(|e| ChainError::rpc("reading an account", e))?
			.decode()
			.map_err(|e| ChainError::rpc("decoding an account", e))?;
		Ok(info.data.free)
	}

	/// Signs `call` with `signer` and hands it to the node's pool without waiting for it to
	/// be included (the caller checks the chain for its effect).
	pub async fn send<C: Payload>(
		&self,
		name: &'static str,
		call: &C,
		signer: &Keypair,
	) -> Result<()> {
		let params = self.params(signer).await?;
		let mut tx = self.at_best().await?.transactions();
		tx.sign_and_submit(call, signer, params)
			.await
			.map(|_| ())
			.map_err(|e| ChainError::Dispatch { call: name, error: e.to_string() })
	}

	/// Signs `call` with `signer`, submits it, waits until it is in a best block, and returns
	/// its events; a call the runtime rejects comes back as [`ChainError::Dispatch`].
	pub async fn submit<C: Payload>(
		&self,
		name: &'static str,
		call: &C,
		signer: &Keypair,
	) -> Result<TxEvents> {
		let params = self.params(signer).await?;
		let mut tx = self.at_best().await?.transactions();
		let mut progress = tx
			.sign_and_submit_then_watch(call, signer, params)
			.await
			.map_err(|e| ChainError::Dispatch { call: name, error: e.to_string() })?;
		while let Some(status) = progress.next().await {
			let status = status.map_err(|e| ChainError::rpc("following a transaction", e))?;
			match status {
				TransactionStatus::InBestBlock(in_block)
				| TransactionStatus::InFinalizedBlock(in_block) => {
					return in_block
						.wait_for_success()
						.await
						.map_err(|e| ChainError::Dispatch { call: name, error: e.to_string() });
				}
				TransactionStatus::Error { message }
				| TransactionStatus::Invalid { message }
				| TransactionStatus::Dropped { message } => {
					return Err(ChainError::Dispatch { call: name, error: message });
				}
				_ => continue,
			}
		}
		Err(ChainError::rpc("following a transaction", format!("{name}: the status stream ended")))
	}
}
