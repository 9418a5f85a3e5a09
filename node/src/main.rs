//! `grid-node`: the Grid appchain's validator and full node.
#![warn(missing_docs)]
// `sc_cli::Error` and `sc_service::Error` are large, and every Substrate entry point returns
// them; boxing them at each call would only add noise.
#![allow(clippy::result_large_err)]

mod chain_spec;
mod cli;
mod command;
mod rpc;
mod service;

fn main() -> polkadot_sdk::sc_cli::Result<()> {
	command::run()
}
