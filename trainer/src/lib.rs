//! Grid's training engine: the models a job can ask for, the data they train on, the inner
//! optimizer, the DiLoCo outer step, pseudo-gradient compression, robust aggregation and
//! checkpoints; and the daemon's parts: the libp2p exchange between trainers (`net`), the
//! per-round bookkeeping (`exchange`), peer health and the round loop (`node`); and the link
//! to the chain (`chain`): the provider daemon (`provider`) and the buyer's commands (`buyer`).
//!
//! Everything that peers must agree on bit for bit (parameter layout, model hash, data shards,
//! compressed update bytes, aggregation and the outer step) is computed on plain `Vec<f32>` on
//! the CPU in a fixed order, so honest participants reach the same model hash.

pub mod aggregate;
pub mod buyer;
pub mod chain;
pub mod checkpoint;
pub mod checks;
pub mod compress;
pub mod config;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod data;
pub mod device;
pub mod diloco;
pub mod error;
pub mod exchange;
pub mod health;
pub mod localnet;
pub mod malloc;
pub mod model;
pub mod net;
pub mod node;
pub mod optim;
pub mod params;
pub mod plot;
pub mod provider;
pub mod rng;
pub mod status_server;
pub mod train;
pub mod verify;

pub use error::{Error, Result};
