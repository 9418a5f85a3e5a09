//! What a trainer takes from and answers peers outside the round's roster
//! ([`crate::round::roster`]): a joiner syncing a state or a verifier fetching evidence may
//! not be among the round's members yet, so they are connected and answered, but a key costs
//! nothing, and many keys connecting and asking for updates and states at once would take
//! the file descriptors, buffers and uplink that the members' exchange needs. All strangers
//! together hold at most [`MAX_STRANGER_CONNECTIONS`] connections ([`StrangerGate`]; a new
//! one past that is refused after its handshake) and have at most [`MAX_STRANGER_ANSWERS`]
//! answers in flight (past that one is told the trainer is busy). Members are never limited
//! beyond libp2p's per-peer bound.

use std::{
	collections::{BTreeSet, HashMap, HashSet},
	convert::Infallible,
	hash::Hash,
	task::{Context, Poll},
};

use libp2p::{
	core::{transport::PortUse, Endpoint},
	swarm::{
		behaviour::ConnectionEstablished, dummy, ConnectionClosed, ConnectionDenied, ConnectionId,
		FromSwarm, NetworkBehaviour, THandler, THandlerInEvent, THandlerOutEvent, ToSwarm,
	},
	Multiaddr, PeerId,
};

use crate::round::roster::Roster;

/// Most answers in flight to strangers, all together: twice the pieces a joiner fetches
/// from one peer at once (eight), so one joiner is not slowed when nobody floods.
pub(super) const MAX_STRANGER_ANSWERS: usize = 16;

/// Most connections strangers hold with a trainer, all together, in either direction: room
/// for eight joiners or verifiers at two connections each. Members' connections are not
/// counted.
pub const MAX_STRANGER_CONNECTIONS: usize = 16;

/// The answers in flight to strangers, by request id.
pub(super) struct StrangerAnswers<I> {
	in_flight: HashSet<I>,
}

impl<I: Hash + Eq> StrangerAnswers<I> {
	pub(super) fn new() -> Self {
		StrangerAnswers { in_flight: HashSet::new() }
	}

	/// Whether a stranger's request `id` may be answered now (then it counts until
	/// [`StrangerAnswers::done`]).
	pub(super) fn admit(&mut self, id: I) -> bool {
		self.in_flight.len() < MAX_STRANGER_ANSWERS && self.in_flight.insert(id)
	}

	/// The answer to request `id` was sent, or failed.
	pub(super) fn done(&mut self, id: &I) {
		self.in_flight.remove(id);
	}
}

/// Why a stranger's connection was refused.
#[derive(Debug, thiserror::Error)]
#[error(
	"{peer} is neither a member of the round nor a registered provider, and strangers hold \
	 {held} connections already"
)]
pub struct TooManyStrangers {
	/// Who was refused.
	pub peer: PeerId,
	/// Strangers' connections held when it was.
	pub held: usize,
}

/// Holds the network's roster (whom the round takes part from) and the registered providers,
/// and refuses inbound connections from strangers (in neither) past
/// [`MAX_STRANGER_CONNECTIONS`]. Outbound connections are never refused (this trainer chose
/// to dial them), but a stranger's counts. Strangers are counted against the roster and
/// registry of the moment, so a peer that joins either stops counting at once, and one that
/// leaves both starts.
#[derive(Default)]
pub struct StrangerGate {
	roster: Roster,
	registered: BTreeSet<PeerId>,
	established: HashMap<ConnectionId, PeerId>,
}

impl StrangerGate {
	/// The roster the network task filters by.
	pub fn roster(&self) -> &Roster {
		&self.roster
	}

	/// Takes a new roster.
	pub fn set_roster(&mut self, roster: Roster) {
		self.roster = roster;
	}

	/// Takes the providers registered now.
	pub fn set_registered(&mut self, peers: BTreeSet<PeerId>) {
		self.registered = peers;
	}

	/// Whether `peer` is neither in the roster nor registered: its key may have cost nothing.
	pub fn is_stranger(&self, peer: &PeerId) -> bool {
		!self.roster.admits(peer) && !self.registered.contains(peer)
	}

	/// Connections held now with strangers.
	pub fn strangers_held(&self) -> usize {
		self.established.values().filter(|peer| self.is_stranger(peer)).count()
	}

	/// Whether a new inbound connection from `peer` may be kept.
	fn admit(&self, peer: PeerId) -> Result<(), TooManyStrangers> {
		let held = self.strangers_held();
		if !self.is_stranger(&peer) || held < MAX_STRANGER_CONNECTIONS {
			Ok(())
		} else {
			Err(TooManyStrangers { peer, held })
		}
	}
}

impl NetworkBehaviour for StrangerGate {
	type ConnectionHandler = dummy::ConnectionHandler;
	type ToSwarm = Infallible;

	fn handle_established_inbound_connection(
		&mut self,
		_: ConnectionId,
		peer: PeerId,
		_: &Multiaddr,
		_: &Multiaddr,
	) -> Result<THandler<Self>, ConnectionDenied> {
		self.admit(peer).map_err(ConnectionDenied::new)?;
		Ok(dummy::ConnectionHandler)
	}

	fn handle_established_outbound_connection(
		&mut self,
		_: ConnectionId,
		_: PeerId,
		_: &Multiaddr,
		_: Endpoint,
		_: PortUse,
	) -> Result<THandler<Self>, ConnectionDenied> {
		Ok(dummy::ConnectionHandler)
	}

	fn on_swarm_event(&mut self, event: FromSwarm) {
		match event {
			// Every behaviour admitted it (another may refuse after this one did not).
			FromSwarm::ConnectionEstablished(ConnectionEstablished {
				peer_id,
				connection_id,
				..
			}) => {
				self.established.insert(connection_id, peer_id);
			}
			FromSwarm::ConnectionClosed(ConnectionClosed { connection_id, .. }) => {
				self.established.remove(&connection_id);
			}
			_ => {}
		}
	}

	fn on_connection_handler_event(
		&mut self,
		_: PeerId,
		_: ConnectionId,
		event: THandlerOutEvent<Self>,
	) {
		match event {}
	}

	fn poll(&mut self, _: &mut Context<'_>) -> Poll<ToSwarm<Infallible, THandlerInEvent<Self>>> {
		Poll::Pending
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn strangers_share_a_bounded_number_of_answers_and_get_more_as_they_finish() {
		let mut answers = StrangerAnswers::new();
		// A flood from many keys: the first ones are answered, the rest told to wait.
		let admitted: Vec<u32> = (0..100).filter(|&id| answers.admit(id)).collect();
		assert_eq!(admitted, (0..MAX_STRANGER_ANSWERS as u32).collect::<Vec<_>>());
		assert!(!answers.admit(500));
		// As answers go out, room for others (a joiner asking again gets through).
		answers.done(&3);
		answers.done(&999); // never admitted: nothing changes
		assert!(answers.admit(500));
		assert!(!answers.admit(501));
		// The same id twice does not take two places.
		answers.done(&500);
		assert!(!answers.admit(7), "7 is in flight already");
		assert!(answers.admit(600));
	}

	#[test]
	fn strangers_share_a_bounded_number_of_connections_and_members_are_never_refused() {
		let member = PeerId::random();
		let mut gate = StrangerGate::default();
		gate.set_roster(Roster::Members([member].into()));
		let connect = |gate: &mut StrangerGate, id: usize, peer: PeerId| {
			gate.established.insert(ConnectionId::new_unchecked(id), peer);
		};
		let strangers: Vec<PeerId> =
			(0..MAX_STRANGER_CONNECTIONS).map(|_| PeerId::random()).collect();
		for (id, peer) in strangers.iter().enumerate() {
			gate.admit(*peer).expect("room for strangers");
			connect(&mut gate, id, *peer);
		}
		connect(&mut gate, 1000, member);
		assert_eq!(gate.strangers_held(), MAX_STRANGER_CONNECTIONS);
		// Full: the next key is refused, saying why; a member is not.
		let late = PeerId::random();
		let refused = gate.admit(late).unwrap_err();
		assert_eq!((refused.peer, refused.held), (late, MAX_STRANGER_CONNECTIONS));
		assert!(refused.to_string().contains("is neither a member of the round"));
		gate.admit(member).expect("members are never refused");
		// A registered provider outside the roster (a joiner) is no stranger either.
		gate.set_registered([late].into());
		gate.admit(late).expect("registered providers are never refused");
		connect(&mut gate, 1001, late);
		assert_eq!(gate.strangers_held(), MAX_STRANGER_CONNECTIONS);
		gate.set_registered(BTreeSet::new());
		assert_eq!(gate.strangers_held(), MAX_STRANGER_CONNECTIONS + 1, "it counts once out");
		gate.established.remove(&ConnectionId::new_unchecked(1001));
		// A stranger that becomes a member stops counting, and room opens.
		gate.set_roster(Roster::Members([member, strangers[0]].into()));
		assert_eq!(gate.strangers_held(), MAX_STRANGER_CONNECTIONS - 1);
		gate.admit(late).expect("room again");
		// An open roster (an off-chain job without members) takes everyone.
		gate.set_roster(Roster::Open);
		assert_eq!(gate.strangers_held(), 0);
	}
}
