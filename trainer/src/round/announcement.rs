//! What a trainer gossips on its job's commitments topic: its signed commitment and, when
//! the update is small, the update itself. A peer that hears the commitment then holds the
//! update too, instead of asking the committer for it a round trip later: the fetch after
//! the last commitment was the largest part of a blocking round's time outside training
//! (231 of 566 ms a round, `bench/network.sh --only speed --quick` over 100 ms links).
//! Larger updates are fetched, in pieces, as before: gossip forwards every message to each
//! mesh peer (gossipsub 0.47 has no IDONTWANT), so a peer may hear an inline update from
//! up to a mesh's worth of peers, which is only cheap while updates are small.

use codec::{Decode, Encode};
use grid_primitives::job::JobId;
use libp2p::PeerId;

use super::messages::{
	decode_bounded, Digest, MessageError, SignedCommitment, MAX_COMMITMENT_BYTES,
};
use super::update_pieces::address;

/// Largest update sent with its commitment.
pub const MAX_INLINE_UPDATE: usize = 32 * 1024;

/// Longest announcement accepted on gossip: a commitment, an inline update and their
/// length prefixes.
pub const MAX_ANNOUNCEMENT_BYTES: usize = MAX_COMMITMENT_BYTES + MAX_INLINE_UPDATE + 16;

/// A signed commitment as gossiped, with the update it commits to when that is at most
/// [`MAX_INLINE_UPDATE`] bytes. The update is not signed: the commitment's hash and length
/// bind it, and an announcement whose update does not match is rejected whole.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub struct Announcement {
	/// The commitment.
	pub signed: SignedCommitment,
	/// The encoded update it commits to, when small enough.
	pub update: Option<Vec<u8>>,
}

impl Announcement {
	/// The announcement of `signed`, carrying `update` (its encoded bytes) when `inline` and
	/// the update is small enough.
	pub fn new(signed: SignedCommitment, update: &[u8], inline: bool) -> Self {
		let update = (inline && update.len() <= MAX_INLINE_UPDATE).then(|| update.to_vec());
		Announcement { signed, update }
	}

	/// Decodes gossip bytes and checks the commitment (signature, job, chain, layout) and the
	/// update sent with it (its length and content address are the committed ones).
	pub fn decode_verified(
		bytes: &[u8],
		job: JobId,
		chain: &Digest,
		manifest_hash: &Digest,
	) -> Result<(Self, PeerId), MessageError> {
		let announcement = decode_bounded::<Announcement>(bytes, MAX_ANNOUNCEMENT_BYTES)?;
		let peer = announcement.signed.check(job, chain, manifest_hash)?;
		if let Some(update) = &announcement.update {
			check_inline(&announcement.signed, update)?;
		}
		Ok((announcement, peer))
	}
}

/// Whether `update` is the update `signed` commits to.
fn check_inline(signed: &SignedCommitment, update: &[u8]) -> Result<(), MessageError> {
	let c = &signed.commitment;
	if update.len() > MAX_INLINE_UPDATE {
		let why = format!("has {} bytes, more than {MAX_INLINE_UPDATE}", update.len());
		return Err(MessageError::BadInlineUpdate(why));
	}
	if update.len() as u64 != c.update_len {
		let why = format!("has {} bytes, the commitment says {}", update.len(), c.update_len);
		return Err(MessageError::BadInlineUpdate(why));
	}
	if address(update).0 != c.update_hash {
		return Err(MessageError::BadInlineUpdate("does not match the committed hash".into()));
	}
	Ok(())
}

#[cfg(test)]
mod tests {
	use libp2p::identity::Keypair;

	use super::*;
	use crate::round::messages::{
		tests::{commitment, CHAIN},
		update_hash,
	};

	/// A commitment of `key` to `update` in round 3 of job 7.
	fn signed(key: &Keypair, update: &[u8]) -> SignedCommitment {
		let mut c = commitment(3, 0);
		c.update_hash = update_hash(update);
		c.update_len = update.len() as u64;
		c.sign(key).unwrap()
	}

	#[test]
	fn a_small_update_rides_with_its_commitment_and_a_large_one_does_not() {
		let key = Keypair::generate_ed25519();
		let small = vec![7u8; 1000];
		let sent = Announcement::new(signed(&key, &small), &small, true);
		let (back, peer) =
			Announcement::decode_verified(&sent.encode(), 7, &CHAIN, &[1; 32]).unwrap();
		assert_eq!(back.update.as_deref(), Some(&small[..]));
		assert_eq!(peer, key.public().to_peer_id());
		let not_inline = Announcement::new(signed(&key, &small), &small, false);
		assert_eq!(not_inline.update, None);
		let large = vec![7u8; MAX_INLINE_UPDATE + 1];
		let sent = Announcement::new(signed(&key, &large), &large, true);
		assert_eq!(sent.update, None);
		let (back, _) = Announcement::decode_verified(&sent.encode(), 7, &CHAIN, &[1; 32]).unwrap();
		assert_eq!(back.update, None);
	}

	#[test]
	fn an_update_that_is_not_the_committed_one_rejects_the_announcement() {
		let key = Keypair::generate_ed25519();
		let update = vec![7u8; 1000];
		let honest = Announcement::new(signed(&key, &update), &update, true);
		let decode =
			|a: &Announcement| Announcement::decode_verified(&a.encode(), 7, &CHAIN, &[1; 32]);
		// A relayer swaps the bytes: same length, other content.
		let mut swapped = honest.clone();
		swapped.update = Some(vec![8u8; 1000]);
		let err = decode(&swapped).unwrap_err();
		assert!(err.to_string().contains("does not match the committed hash"), "{err}");
		// Cut short.
		let mut short = honest.clone();
		short.update = Some(vec![7u8; 999]);
		let err = decode(&short).unwrap_err();
		assert!(err.to_string().contains("999 bytes, the commitment says 1000"), "{err}");
		// A commitment to a large update with the large update inline: too long for gossip.
		let large = vec![7u8; MAX_ANNOUNCEMENT_BYTES];
		let oversized = Announcement { signed: signed(&key, &large), update: Some(large) };
		assert!(matches!(decode(&oversized), Err(MessageError::Oversized { .. })));
		// The update is bound by the signature too: a tampered commitment fails as before.
		let mut tampered = honest.clone();
		tampered.signed.commitment.samples += 1;
		assert!(matches!(decode(&tampered), Err(MessageError::BadSignature(_))));
		assert!(matches!(
			Announcement::decode_verified(&honest.encode(), 8, &CHAIN, &[1; 32]),
			Err(MessageError::WrongJob { .. })
		));
		assert!(decode(&honest).is_ok());
	}

	#[test]
	fn an_inline_update_over_the_limit_is_refused_though_the_frame_has_room() {
		let key = Keypair::generate_ed25519();
		let update = vec![7u8; MAX_INLINE_UPDATE + 1];
		let sent = Announcement { signed: signed(&key, &update), update: Some(update) };
		let err = Announcement::decode_verified(&sent.encode(), 7, &CHAIN, &[1; 32]).unwrap_err();
		assert!(err.to_string().contains("more than"), "{err}");
	}
}
