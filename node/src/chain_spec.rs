//! Chain specifications built from the runtime's genesis presets.

use grid_runtime::WASM_BINARY;
use polkadot_sdk::{
	sc_chain_spec::ChainType,
	sc_service,
	sp_genesis_builder::{DEV_RUNTIME_PRESET, LOCAL_TESTNET_RUNTIME_PRESET},
};
use serde_json::json;

/// Grid's chain specification (no client extensions).
pub type ChainSpec = sc_service::GenericChainSpec;

/// Errors while choosing a chain specification.
#[derive(Debug, thiserror::Error)]
pub enum ChainSpecError {
	/// The node was built with `SKIP_WASM_BUILD` and has no runtime to put in a spec.
	#[error("this grid-node was built without the runtime wasm (SKIP_WASM_BUILD); rebuild without it to use built-in chains")]
	NoWasm,
	/// `--chain` named neither a built-in chain nor an existing file.
	#[error("unknown chain `{0}`: use `dev`, `local`, or the path of a chain spec JSON file")]
	UnknownChain(String),
	/// The file exists but is not a valid chain spec.
	#[error("invalid chain spec file `{path}`: {reason}")]
	BadFile {
		/// The file given to `--chain`.
		path: String,
		/// What the parser said.
		reason: String,
	},
}

/// Token metadata wallets and UIs read from the chain spec.
fn properties() -> sc_service::Properties {
	let value = json!({
		"tokenSymbol": grid_primitives::currency::TOKEN_SYMBOL,
		"tokenDecimals": grid_primitives::currency::DECIMALS,
		"ss58Format": 42,
	});
	value.as_object().cloned().expect("a JSON object literal")
}

fn built_in(
	name: &str,
	id: &str,
	chain_type: ChainType,
	preset: &str,
) -> Result<ChainSpec, ChainSpecError> {
	let wasm = WASM_BINARY.ok_or(ChainSpecError::NoWasm)?;
	Ok(ChainSpec::builder(wasm, None)
		.with_name(name)
		.with_id(id)
		.with_chain_type(chain_type)
		.with_genesis_config_preset_name(preset)
		.with_properties(properties())
		.build())
}

/// Single-validator development chain (Alice).
pub fn development() -> Result<ChainSpec, ChainSpecError> {
	built_in("Grid Development", "grid_dev", ChainType::Development, DEV_RUNTIME_PRESET)
}

/// Four-validator local testnet (Alice, Bob, Charlie, Dave).
pub fn local_testnet() -> Result<ChainSpec, ChainSpecError> {
	built_in("Grid Local Testnet", "grid_local", ChainType::Local, LOCAL_TESTNET_RUNTIME_PRESET)
}

/// Resolves a `--chain` argument: `dev` (or empty), `local`, or a chain spec file.
pub fn load(id: &str) -> Result<Box<dyn sc_service::ChainSpec>, ChainSpecError> {
	Ok(match id {
		"" | "dev" => Box::new(development()?),
		"local" => Box::new(local_testnet()?),
		path => {
			let file = std::path::PathBuf::from(path);
			if !file.is_file() {
				return Err(ChainSpecError::UnknownChain(path.to_string()));
			}
			Box::new(
				ChainSpec::from_json_file(file)
					.map_err(|reason| ChainSpecError::BadFile { path: path.to_string(), reason })?,
			)
		}
	})
}
