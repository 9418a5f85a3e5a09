//! A connection to a `grid-node`: typed reads through the pallets' view functions and
//! storage, and signed transactions that wait for inclusion and report the runtime's error.

use std::time::{Duration, Instant};

use grid_primitives::job::{JobId, MAX_JOBS_LISTED};
// subxt's errors, not the engine's `crate::error` (which chain/ must not name).
use subxt::error::{BackendError, ExtrinsicError, RpcError};
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
/// A job's record.
pub type JobRecord = runtime_types::pallet_jobs::types::Job<AccountId, u128, u32>;
/// A job's open round.
pub type RoundState = runtime_types::pallet_jobs::types::RoundState<AccountId, u32>;
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
	/// The runtime's spec version when this connection was made.
	spec_version: u32,
}

impl Chain {
	/// Connects to the node at `url` (`ws://…`), retrying until `patience` runs out (a node
	/// that is still starting, or restarting, answers a little later).
	pub async fn connect(url: &str, patience: Duration) -> Result<Self> {
		let start = Instant::now();
		loop {
			match Self::open(url).await {
				Ok((api, rpc, spec_version)) => {
					return Ok(Chain { api, rpc, url: url.to_string(), spec_version })
				}
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

	/// Connects (plain JSON-RPC methods only), and tells the client the runtime's version
	/// from the best block on: subxt otherwise asks the runtime for its version (a runtime
	/// call) at every block it opens, which with 64 followers on one node ran it out of free
	/// runtime instances (`bench/scale.sh`). A runtime upgrade after this is seen by
	/// [`Block::runtime_upgraded`], and the follower then connects again.
	async fn open(
		url: &str,
	) -> std::result::Result<
		(
			OnlineClient<GridConfig>,
			subxt::rpcs::LegacyRpcMethods<subxt::config::RpcConfigFor<GridConfig>>,
			u32,
		),
		String,
	> {
		let rpc =
			subxt::rpcs::RpcClient::from_insecure_url(url).await.map_err(|e| e.to_string())?;
		let legacy = subxt::rpcs::LegacyRpcMethods::new(rpc.clone());
		let best = legacy.chain_get_header(None).await.map_err(|e| e.to_string())?;
		let from = best.map_or(0, |h| subxt::config::Header::number(&h));
		let version = legacy.state_get_runtime_version(None).await.map_err(|e| e.to_string())?;
		let config = GridConfig::builder()
			.set_spec_version_for_block_ranges([subxt::config::polkadot::SpecVersionForRange {
				block_range: from..u64::MAX,
				spec_version: version.spec_version,
				transaction_version: version.transaction_version,
			}])
			.build();
		// The plain JSON-RPC methods only. subxt's default backend also follows the chain
		// (`chainHead_v1_follow`) from a task of its own for as long as it runs: a
		// subscription the node feeds every block for every follower, and a task that kept
		// a dropped client's connection open (a follower that reconnected left one behind
		// each time: 113 to 177 connections to the node in a minute at N = 64).
		let backend = subxt::backend::LegacyBackend::<GridConfig>::builder().build(rpc);
		let api = OnlineClient::<GridConfig>::from_backend_with_config(
			config,
			std::sync::Arc::new(backend),
		)
		.await
		.map_err(|e| e.to_string())?;
		Ok((api, legacy, version.spec_version))
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

	/// The runtime's spec version when this connection was made.
	pub fn spec_version(&self) -> u32 {
		self.spec_version
	}

	/// The hash of the node's best block: one plain read, no runtime call, so it is what a
	/// follower polls; the block is opened ([`Chain::best`]) only when the hash changed.
	pub async fn best_hash(&self) -> Result<grid_primitives::Hash> {
		let hash = self.hash_of(None, "reading the best block").await?;
		Ok(grid_primitives::Hash::from(hash.0))
	}

	/// The node's best block, opened for reads.
	pub async fn best(&self) -> Result<Block> {
		Ok(Block { at: self.at_best().await? })
	}

	/// Block `number` of the best chain, opened for reads.
	pub async fn block(&self, number: u32) -> Result<Block> {
		Ok(Block { at: self.at_number(Some(number)).await? })
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
		let at = self.at_best().await?;
		let mut tx = at.transactions();
		tx.sign_and_submit(call, signer, params)
			.await
			.map(|_| ())
			.map_err(|e| refused(name, &e, at.metadata_ref()))
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
		let at = self.at_best().await?;
		let mut tx = at.transactions();
		let mut progress = tx
			.sign_and_submit_then_watch(call, signer, params)
			.await
			.map_err(|e| refused(name, &e, at.metadata_ref()))?;
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

/// A submission the node refused, with why. subxt shows an RPC error's message and code
/// ("Invalid Transaction (1010)") but not its data, where the node says why its pool refused
/// the transaction; for a proof that is "Custom error: N", N being the index of the `Jobs`
/// error `CheckProof` found (`pallets/jobs/src/proof_check.rs`), named here from `metadata`.
fn refused(call: &'static str, e: &ExtrinsicError, metadata: &subxt::Metadata) -> ChainError {
	let mut error = e.to_string();
	if let Some(why) = pool_reason(e) {
		let named = (call == "submit_proof").then(|| jobs_error(&why, metadata)).flatten();
		error = match named {
			Some(name) => format!("{error}: {why}, the jobs pallet's {name}"),
			None => format!("{error}: {why}"),
		};
	}
	ChainError::Dispatch { call, error }
}

/// The data of the RPC error a refused submission came back with.
fn pool_reason(e: &ExtrinsicError) -> Option<String> {
	let ExtrinsicError::ErrorSubmittingTransaction(BackendError::Rpc(RpcError::ClientError(
		subxt::rpcs::Error::User(user),
	))) = e
	else {
		return None;
	};
	let data = user.data.as_ref()?.get();
	// A JSON string, as Substrate's author RPC writes it.
	Some(serde_json::from_str::<String>(data).unwrap_or_else(|_| data.to_string()))
}

/// Every job from `start` on, from `page` (the ids and states of up to [`MAX_JOBS_LISTED`]
/// jobs from an id on): pages follow each other until one is not full.
async fn every_page<T, F, Fut>(start: JobId, mut page: F) -> Result<Vec<(JobId, T)>>
where
	F: FnMut(JobId) -> Fut,
	Fut: std::future::Future<Output = Result<Vec<(JobId, T)>>>,
{
	let (mut all, mut from) = (Vec::new(), start);
	loop {
		let listed = page(from).await?;
		let full = listed.len() >= MAX_JOBS_LISTED as usize;
		if let Some((last, _)) = listed.last() {
			from = last.saturating_add(1);
		}
		all.extend(listed);
		if !full {
			return Ok(all);
		}
	}
}

/// The `Jobs` error a pool's "Custom error: N" stands for.
fn jobs_error(why: &str, metadata: &subxt::Metadata) -> Option<String> {
	let index = why.strip_prefix("Custom error: ")?.parse::<u8>().ok()?;
	let variant = metadata.pallet_by_name("Jobs")?.error_variant_by_index(index)?;
	Some(variant.name.clone())
}

/// The chain as of one block, opened once for any number of reads.
///
/// Opening a block costs the node a header read (the runtime's version comes from the
/// connection's config, [`Chain::open`]); a view function is a runtime call. A follower opens
/// one block per new block and makes that tick's reads there, so every read sees the same
/// state and the node does the opening once, not per read (64 followers reading each value at
/// the best block, with a version query per opening, left them unanswered:
/// `bench/scale.sh`). Reads of single entries go to storage directly (no runtime call).
pub struct Block {
	at: AtBlock,
}

impl Block {
	/// The block's number.
	pub fn number(&self) -> u32 {
		self.at.block_number() as u32
	}

	/// The block's timestamp (Unix ms).
	pub async fn timestamp(&self) -> Result<u64> {
		self.at
			.storage()
			.fetch(api::storage().timestamp().now(), ())
			.await
			.map_err(|e| ChainError::rpc("reading the timestamp", e))?
			.decode()
			.map_err(|e| ChainError::rpc("decoding the timestamp", e))
	}

	/// Calls a pallet view function at this block.
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
		let at = &self.at;
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

	/// Ids and states of every job from `start` on, read a page at a time (see
	/// [`MAX_JOBS_LISTED`]).
	pub async fn jobs_from(&self, start: JobId) -> Result<Vec<(JobId, JobStatus)>> {
		every_page(start, |from| {
			self.view("listing jobs", api::view_functions().jobs().jobs(from, MAX_JOBS_LISTED))
		})
		.await
	}

	/// What round `round` of `job` settled to, while the chain keeps it.
	async fn round_summary(
		&self,
		job: JobId,
		round: grid_primitives::job::RoundIndex,
	) -> Result<Option<runtime_types::pallet_jobs::types::RoundSummary<u128, u32>>> {
		self.view("reading a round", api::view_functions().jobs().round_result(job, round)).await
	}

	/// The data seed round `round` of `job` was settled with, while the chain keeps it.
	pub async fn round_seed(
		&self,
		job: JobId,
		round: grid_primitives::job::RoundIndex,
	) -> Result<Option<grid_primitives::Hash>> {
		Ok(self.round_summary(job, round).await?.map(|s| s.seed))
	}

	/// Whether round `round` of `job` settled with a quorum (`None`: not settled, or no
	/// longer kept).
	pub async fn round_reached_quorum(
		&self,
		job: JobId,
		round: grid_primitives::job::RoundIndex,
	) -> Result<Option<bool>> {
		Ok(self.round_summary(job, round).await?.map(|s| s.result_model_hash.is_some()))
	}

	/// A provider's record, if it is registered.
	pub async fn provider(&self, who: &AccountId) -> Result<Option<ProviderView>> {
		self.view("reading a provider", api::view_functions().providers().provider(*who)).await
	}

	/// Every registered provider.
	pub async fn providers(&self) -> Result<Vec<(AccountId, ProviderView)>> {
		self.view("listing providers", api::view_functions().providers().providers()).await
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

	/// (round, training loss) of each proof of `job` included in this block, in order.
	/// A round settles in the block that brings its last proof, and the pallet clears proofs
	/// when it settles, so proofs are read from the blocks that carried them.
	pub async fn proof_losses(
		&self,
		job: JobId,
	) -> Result<Vec<(grid_primitives::job::RoundIndex, f64)>> {
		let extrinsics = self
			.at
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

	/// The job's record (one storage entry).
	pub async fn job_record(&self, job: JobId) -> Result<Option<JobRecord>> {
		self.entry("a job", api::storage().jobs().jobs(), (job,)).await
	}

	/// The job's open round (one storage entry).
	pub async fn round(&self, job: JobId) -> Result<Option<RoundState>> {
		self.entry("a round", api::storage().jobs().rounds(), (job,)).await
	}

	/// Challenges and audits open on the job (two storage entries).
	pub async fn challenges_open_on(&self, job: JobId) -> Result<u32> {
		let challenges =
			self.entry("challenges", api::storage().jobs().open_challenges_on(), (job,));
		let audits = self.entry("audits", api::storage().jobs().open_audits_on(), (job,));
		Ok(challenges.await?.unwrap_or(0) + audits.await?.unwrap_or(0))
	}

	/// Whether the runtime was upgraded away from `spec_version` (the version a
	/// connection was made with, [`Chain::spec_version`]) by this block.
	pub async fn runtime_upgraded(&self, spec_version: u32) -> Result<bool> {
		let last = self
			.entry("the last runtime upgrade", api::storage().system().last_runtime_upgrade(), ())
			.await?;
		Ok(last.is_some_and(|l| l.spec_version != spec_version))
	}

	/// One storage entry, if present.
	async fn entry<A: subxt::storage::Address>(
		&self,
		what: &'static str,
		address: A,
		key: A::KeyParts,
	) -> Result<Option<A::Value>> {
		let value = self
			.at
			.storage()
			.try_fetch(address, key)
			.await
			.map_err(|e| ChainError::rpc(what, e))?;
		value.map(|v| v.decode().map_err(|e| ChainError::rpc(what, e))).transpose()
	}

	/// (amount, reason) of each slash of `who`'s stake in this block.
	pub async fn slashes_of(&self, who: &AccountId) -> Result<Vec<(u128, String)>> {
		let events = self
			.at
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
		self.entry("a challenge", api::storage().jobs().challenged(), ((job, round), *who)).await
	}

	/// Whether challenge `id` is still open (it leaves storage when it is decided).
	pub async fn challenge_open(&self, id: u64) -> Result<bool> {
		Ok(self.entry("a challenge", api::storage().jobs().challenges(), (id,)).await?.is_some())
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
		let info = self
			.at
			.storage()
			.fetch(api::storage().system().account(), (*who,))
			.await
			.map_err(|e| ChainError::rpc("reading an account", e))?
			.decode()
			.map_err(|e| ChainError::rpc("decoding an account", e))?;
		Ok(info.data.free)
	}

	/// `who`'s membership record of `job`, if it is a participant (one storage entry).
	pub async fn participant(&self, job: JobId, who: &AccountId) -> Result<Option<Participant>> {
		self.entry("a participant", api::storage().jobs().participants(), (job, *who)).await
	}

	/// `who`'s proof in `job`'s open round, if the chain has one (one storage entry).
	pub async fn proof_of(
		&self,
		job: JobId,
		who: &AccountId,
	) -> Result<Option<super::SignedProof>> {
		let proof = self.entry("a proof", api::storage().jobs().proofs(), (job, *who)).await?;
		Ok(proof.map(|p| p.0))
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn metadata() -> subxt::Metadata {
		let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../metadata/grid.scale");
		let bytes = std::fs::read(path).unwrap();
		<subxt::Metadata as codec::Decode>::decode(&mut &bytes[..]).unwrap()
	}

	/// An attacker's 2,500 cheap live jobs come first, pruned ids between them; an honest
	/// buyer's job comes after: a listing reaches it (one page of the view's 1,000 did not).
	#[test]
	fn every_job_is_listed_however_many_come_before() {
		let honest = 4_000;
		let chain: Vec<JobId> = (0..3_000).filter(|id| id % 6 != 5).chain([honest]).collect();
		let pages = std::cell::Cell::new(0);
		let page = |from: JobId| {
			pages.set(pages.get() + 1);
			let listed: Vec<(JobId, ())> = chain
				.iter()
				.filter(|id| **id >= from)
				.take(MAX_JOBS_LISTED as usize)
				.map(|id| (*id, ()))
				.collect();
			std::future::ready(Ok(listed))
		};
		let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
		let listed = runtime.block_on(every_page(0, page)).unwrap();
		assert_eq!(listed.iter().map(|(id, _)| *id).collect::<Vec<_>>(), chain);
		assert_eq!(pages.get(), 3, "2,501 jobs: two full pages and one not");
		let later = runtime.block_on(every_page(2_990, page)).unwrap();
		let expected: Vec<JobId> = chain.iter().copied().filter(|id| *id >= 2_990).collect();
		assert_eq!(later.iter().map(|(id, _)| *id).collect::<Vec<_>>(), expected);
		assert_eq!(expected.last(), Some(&honest));
	}

	/// What a node's author RPC answers when its pool refuses a transaction.
	fn pool_refusal(data: &str) -> ExtrinsicError {
		let user = subxt::rpcs::UserError {
			code: 1010,
			message: "Invalid Transaction".into(),
			data: Some(serde_json::value::RawValue::from_string(data.into()).unwrap()),
		};
		ExtrinsicError::ErrorSubmittingTransaction(BackendError::Rpc(RpcError::ClientError(
			subxt::rpcs::Error::User(user),
		)))
	}

	/// A proof the pool refused says which check failed, by name (it said only "Invalid
	/// Transaction (1010)"); another call's custom code, and any other reason, are shown as
	/// the node gave them.
	#[test]
	fn a_refused_proof_names_the_jobs_error() {
		let metadata = metadata();
		let jobs = metadata.pallet_by_name("Jobs").unwrap();
		let named = |i| jobs.error_variant_by_index(i).map(|v| v.name.clone());
		let index = (0..=u8::MAX).find(|&i| named(i).as_deref() == Some("RoundClosed")).unwrap();
		let late = pool_refusal(&format!("\"Custom error: {index}\""));

		let said = refused("submit_proof", &late, &metadata).to_string();
		let reason = format!(
			"Invalid Transaction (1010): Custom error: {index}, the jobs pallet's RoundClosed"
		);
		assert!(
			said.starts_with("submit_proof failed on chain") && said.ends_with(&reason),
			"{said}"
		);
		let other = refused("register", &late, &metadata).to_string();
		assert!(other.ends_with(&format!("(1010): Custom error: {index}")), "{other}");
		let stale = pool_refusal("\"Transaction is outdated\"");
		let said = refused("submit_proof", &stale, &metadata).to_string();
		assert!(said.ends_with("(1010): Transaction is outdated"), "{said}");
	}
}
