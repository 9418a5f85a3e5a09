//! Grid's trainer, in three wings around a round protocol that does no I/O (arrows point
//! down only; `scripts/check-layers.sh` holds them in CI):
//!
//! - [`daemon`]: the I/O drivers — the trainer loop, config and job files, reports, status
//!   server, provider, buyer, local network. The only wing that wires `net` and `chain` together.
//! - [`chain`]: adapters over the chain's client (follower, proofs, fraud, keys).
//! - [`net`]: transport between trainers (libp2p behaviour, codec, task, shaper).
//! - [`round`]: the round protocol as plain state and functions: no sockets, no chain
//!   client, no files, no async runtime.
//! - the engine (every other module: models, data, optimizers, compression, aggregation,
//!   DiLoCo, checkpoints, devices, verification): pure and deterministic.
//!
//! Everything that peers must agree on bit for bit (parameter layout, model hash, data shards,
//! compressed update bytes, aggregation and the outer step) is computed on plain `Vec<f32>` on
//! the CPU in a fixed order, so honest participants reach the same model hash.

pub mod aggregate;
pub mod alloc_ledger;
pub mod chain;
pub mod checkpoint;
pub mod compress;
pub mod compute_gate;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod daemon;
pub mod data;
pub mod device;
pub mod diloco;
pub mod error;
pub mod malloc;
pub mod model;
pub mod net;
pub mod optim;
pub mod params;
pub mod parity;
pub mod plot;
pub mod pool;
pub mod priority;
pub mod rng;
pub mod round;
pub mod state_assembly;
pub mod stats;
pub mod train;
pub mod trajectory;
pub mod verify;
pub mod work_state;

pub use error::{Error, Result};
