//! Peer ids to accounts, from the provider registry.

use libp2p::PeerId;

use super::{Follower, Shared};
use crate::chain::{client::Block, AccountId, Result};

impl Follower {
	/// Accounts of the given peers, from the provider registry (unregistered peers are left
	/// out: the chain only knows accounts).
	pub(super) async fn accounts_of(&mut self, peers: &[PeerId]) -> Result<Vec<AccountId>> {
		let known = |s: &Shared| peers.iter().all(|p| s.accounts.contains_key(&p.to_bytes()));
		if !known(&self.shared()) {
			let block = self.chain.best().await?;
			self.refresh_peers(&block).await?;
		}
		let mut accounts: Vec<AccountId> = {
			let s = self.shared();
			peers.iter().filter_map(|p| s.accounts.get(&p.to_bytes()).cloned()).collect()
		};
		accounts.sort();
		accounts.dedup();
		Ok(accounts)
	}

	/// Reads the provider registry's peer ids (shared with the trainer for replays).
	pub(super) async fn refresh_peers(&mut self, block: &Block) -> Result<()> {
		let accounts = block
			.providers()
			.await?
			.into_iter()
			.map(|(who, view)| (view.provider.peer_id.to_vec(), who))
			.collect();
		self.shared().accounts = accounts;
		Ok(())
	}
}
