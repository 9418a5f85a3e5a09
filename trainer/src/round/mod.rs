//! The round protocol, without I/O: no sockets, no chain client, no files, no async
//! runtime. It takes what was heard (commitments, fetched bytes, the coordinator's clock)
//! and returns what to send and what was decided; the daemon moves the
//! bytes. Each part is unit-tested on its own.
//!
//! - [`coordinator`]: the port that says which round is open (the chain, or a local
//!   schedule) and takes each finished round's report.
//! - [`messages`]: commitments, requests and answers, state and update hashes.
//! - [`announcement`]: a commitment as gossiped, with its update when that is small.
//! - [`roster`]: who may contribute to a round (the chain's round members).
//! - [`book`]: the commitments of a round, equivocations, the majority base and the set.
//! - [`state`]: the canonical state, from the initial model, a checkpoint or a peer.
//! - [`contribute`]: seed, transfer budget, and the sealed (compressed, signed) update.
//! - [`fetch`]: requests in flight, candidates, retries and checks of fetched bytes.
//! - [`update_pieces`]: an update in pieces, each from its keeper, checked on arrival.
//! - [`decide`]: base check, the set's updates, aggregate and outer step.
//! - [`fan_in`]: the draw of the at most `G` updates a round aggregates.
//! - [`fraud`]: the fraud desk (evidence, screening, replays, votes).
//! - [`peers`]: per-peer link and compute health.
//! - [`witness`]: availability attestations and the round's agreed set.
//! - [`misbehave`]: the attacker behaviours tests switch on.

pub mod announcement;
pub mod book;
pub mod checkpoint_view;
pub mod contribute;
pub mod coordinator;
pub mod decide;
pub mod evidence;
pub mod fan_in;
pub mod fetch;
pub mod fraud;
pub mod messages;
pub mod misbehave;
pub mod peers;
pub mod roster;
pub mod state;
pub mod state_transfer;
pub mod update_pieces;
pub mod witness;
