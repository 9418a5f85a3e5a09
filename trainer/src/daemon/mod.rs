//! The I/O drivers: the trainer loop around the round protocol, its reports and status
//! server, the provider daemon (the only place the network and the chain meet), the buyer's
//! commands and the local test network.

pub mod bulk;
pub mod buyer;
pub mod config;
pub mod data_node;
pub mod datasets;
pub mod evidence;
pub mod job_spec;
pub mod localnet;
pub mod provider;
pub mod reference;
pub mod reports;
pub mod shared_values;
pub mod signed_rounds;
pub mod state_fetch;
pub mod status_server;
pub mod trainer;
pub mod work_states;
