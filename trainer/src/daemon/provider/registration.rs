//! A provider's registration: its measured capabilities, the binding of its libp2p key to
//! its account on this chain, and the `Providers.register` call (or the JSON the browser
//! signs it from).

use std::time::Duration;

use grid_primitives::provider::{peer_binding_payload, BoundedBytes, Capabilities, Multiaddrs};
use libp2p::identity::Keypair as P2pKeypair;
use subxt::utils::Static;
use subxt_signer::sr25519::Keypair;

use super::ProviderConfig;
use crate::{
	chain::{api, keys, AccountId, Chain, ChainError},
	device::DeviceChoice,
};

/// What this machine declares for the device it will train on: measured with a short
/// matrix-multiply run, so the chain's cap on claimable samples reflects the hardware.
pub fn capabilities(choice: DeviceChoice) -> Result<Capabilities, ChainError> {
	let device = crate::device::select(choice).map_err(|e| ChainError::Device(e.to_string()))?;
	Ok(crate::device::capabilities(&device, Duration::from_millis(300)))
}

/// The libp2p key's half of a registration: its ed25519 public key and its signature binding
/// it to `account` on the chain with genesis `genesis`.
fn peer_binding(
	p2p: &P2pKeypair,
	genesis: &grid_primitives::Hash,
	account: &AccountId,
) -> Result<([u8; 32], [u8; 64]), ChainError> {
	let public = keys::p2p_public(p2p)?;
	let binding = p2p
		.sign(&peer_binding_payload(genesis, account))
		.map_err(|e| ChainError::Key(e.to_string()))?;
	let signature: [u8; 64] =
		binding.try_into().map_err(|_| ChainError::Key("ed25519 signature length".into()))?;
	Ok((public, signature))
}

/// The address peers dial, as registered: the advertised (or listen) address with the peer id.
fn registered_address(config: &ProviderConfig, p2p: &P2pKeypair) -> String {
	let peer_id = p2p.public().to_peer_id();
	format!("{}/p2p/{peer_id}", config.advertise.as_ref().unwrap_or(&config.listen))
}

/// Registers `account` with `stake` unless it is registered; refuses to go on when the chain
/// binds it to another libp2p key.
pub(super) async fn ensure_registered(
	chain: &Chain,
	account: &Keypair,
	p2p: &P2pKeypair,
	config: &ProviderConfig,
) -> Result<(), ChainError> {
	let me = account.public_key().to_account_id();
	let peer_id = p2p.public().to_peer_id();
	if let Some(view) = chain.best().await?.provider(&me).await? {
		if view.provider.peer_id.to_vec() != peer_id.to_bytes() {
			return Err(ChainError::Key(format!(
				"{me} is registered with another libp2p key than {peer_id}"
			)));
		}
		tracing::info!("{me} is registered already");
		return Ok(());
	}
	let (public, signature) = peer_binding(p2p, &chain.genesis(), &me)?;
	let address = registered_address(config, p2p);
	let multiaddrs: Multiaddrs =
		Multiaddrs::truncate_from(vec![BoundedBytes::truncate_from(address.into_bytes())]);
	let call = api::tx().providers().register(
		config.chain.stake,
		Static(capabilities(config.device)?),
		public,
		signature,
		api::runtime_types::bounded_collections::bounded_vec::BoundedVec(
			multiaddrs
				.into_iter()
				.map(|a| {
					api::runtime_types::bounded_collections::bounded_vec::BoundedVec(a.into_inner())
				})
				.collect(),
		),
		api::runtime_types::bounded_collections::bounded_vec::BoundedVec(
			config.chain.endpoint.as_bytes().to_vec(),
		),
	);
	chain.submit("register", &call, account).await?;
	tracing::info!("registered {me} with peer id {peer_id}");
	Ok(())
}

/// Everything `Providers::register` takes for this provider except the signature of the
/// account itself, as JSON: what the web UI's "Register" form reads, so an account held in the
/// browser registers the trainer's libp2p key without that key leaving the machine.
pub fn registration(
	config: &ProviderConfig,
	genesis: &grid_primitives::Hash,
) -> Result<serde_json::Value, ChainError> {
	std::fs::create_dir_all(&config.data_dir)
		.map_err(|e| ChainError::Key(format!("creating {}: {e}", config.data_dir.display())))?;
	let me = config.account()?.public_key().to_account_id();
	let p2p = keys::p2p_key(&config.data_dir.join("p2p.key"))?;
	let (public, signature) = peer_binding(&p2p, genesis, &me)?;
	let caps = capabilities(config.device)?;
	Ok(serde_json::json!({
		"format": "grid/registration/v1",
		"genesis": format!("{genesis:?}"),
		"account": me.to_string(),
		"peer_id": p2p.public().to_peer_id().to_string(),
		"peer_public": format!("0x{}", hex::encode(public)),
		"peer_signature": format!("0x{}", hex::encode(signature)),
		"multiaddrs": [registered_address(config, &p2p)],
		"endpoint": config.chain.endpoint,
		"stake_grid": config.chain.stake as f64 / grid_primitives::currency::UNIT as f64,
		"capabilities": {
			"device": format!("{:?}", caps.device),
			"device_name": String::from_utf8_lossy(caps.device_name.as_ref()).into_owned(),
			"device_count": caps.device_count,
			"memory_mib": caps.memory_mib,
			"tflops_milli": caps.tflops_milli,
			"bandwidth_mbps": caps.bandwidth_mbps,
			"region": String::from_utf8_lossy(caps.region.as_ref()).into_owned(),
		},
	}))
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::daemon::provider::TEST_FILE as GOOD;

	#[test]
	fn registration_binds_the_trainers_key_to_its_account_on_this_chain() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("p.toml");
		std::fs::write(&path, GOOD.replace("[chain]", "device = \"cpu\"\n[chain]")).unwrap();
		let config = ProviderConfig::load(&path).unwrap();
		let genesis = grid_primitives::Hash::repeat_byte(9);
		let json = registration(&config, &genesis).unwrap();
		let field = |k: &str| json[k].as_str().unwrap().to_string();
		let bytes = |k: &str| hex::decode(field(k).trim_start_matches("0x")).unwrap();

		// The key `provide` will use (same data dir) is the one bound.
		let p2p = keys::p2p_key(&config.data_dir.join("p2p.key")).unwrap();
		assert_eq!(field("peer_id"), p2p.public().to_peer_id().to_string());
		assert_eq!(bytes("peer_public"), keys::p2p_public(&p2p).unwrap());
		let bob = config.account().unwrap().public_key().to_account_id();
		assert_eq!(field("account"), bob.to_string());
		assert_eq!(bytes("genesis"), genesis.as_bytes());

		// The signature is over this chain and this account only.
		let public = p2p.public();
		let signature = bytes("peer_signature");
		assert!(public.verify(&peer_binding_payload(&genesis, &bob), &signature));
		let other = grid_primitives::Hash::repeat_byte(8);
		assert!(!public.verify(&peer_binding_payload(&other, &bob), &signature));

		assert_eq!(
			json["multiaddrs"][0].as_str().unwrap(),
			format!("/ip4/127.0.0.1/tcp/4001/p2p/{}", field("peer_id"))
		);
		assert_eq!(field("endpoint"), "http://127.0.0.1:9101/health");
		assert_eq!(json["capabilities"]["device"], "Cpu");
		assert!(json["capabilities"]["tflops_milli"].as_u64().unwrap() > 0);
	}
}
