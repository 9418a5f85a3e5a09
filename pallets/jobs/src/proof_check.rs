//! `CheckProof`: the transaction extension that keeps a round's proofs from being crowded out.
//!
//! `submit_proof` is an operational call: blocks keep room for that class that normal
//! transactions (transfers, job posts, a buyer stuffing blocks so its job's members miss
//! their deadline and are liveness-slashed) cannot take. What keeps the operational room
//! itself from being stuffed is this extension: the pool admits a proof only when the chain
//! would accept it now (a running job's open round, a member of it, the first proof of that
//! member, a valid signature), with one `provides` tag per (job, round, member), so there are
//! never more pending proofs than members of open rounds. An accepted proof is free
//! (`Pays::No`); one that fails anyway (it lost a race) pays as usual.

use codec::{Decode, DecodeWithMemTracking, Encode};
use core::marker::PhantomData;
use polkadot_sdk::polkadot_sdk_frame::{
	deps::{
		frame_support::{traits::IsSubType, DefaultNoBound},
		sp_runtime::{
			impl_tx_ext_default,
			traits::{DispatchInfoOf, TransactionExtension, ValidateResult},
			transaction_validity::{InvalidTransaction, TransactionPriority, ValidTransaction},
		},
	},
	prelude::*,
};
use scale_info::TypeInfo;

use crate::{rounds, Call, Config, WeightInfo};

/// Tag prefix of a pending proof: one per (job, round, member).
const PROOF_TAG: &[u8] = b"grid/proof";

/// Pool priority of a valid proof: above any fee-based priority a normal transaction gets.
pub const PROOF_PRIORITY: TransactionPriority = TransactionPriority::MAX / 2;

/// Admits `submit_proof` to the pool only when it would be accepted; see the module docs.
/// Carries no data: it adds nothing to a transaction's bytes or signed payload.
#[derive(Encode, Decode, DecodeWithMemTracking, DefaultNoBound, Clone, Eq, PartialEq, TypeInfo)]
#[scale_info(skip_type_params(T))]
pub struct CheckProof<T>(PhantomData<T>);

impl<T> core::fmt::Debug for CheckProof<T> {
	fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
		write!(f, "CheckProof")
	}
}

impl<T: Config + Send + Sync> CheckProof<T> {
	/// The extension (it has no parameters).
	pub fn new() -> Self {
		Self(PhantomData)
	}
}

impl<T: Config + Send + Sync> TransactionExtension<<T as frame_system::Config>::RuntimeCall>
	for CheckProof<T>
where
	<T as frame_system::Config>::RuntimeCall: IsSubType<Call<T>>,
{
	const IDENTIFIER: &'static str = "CheckProof";
	type Implicit = ();
	type Val = ();
	type Pre = ();

	fn weight(&self, call: &<T as frame_system::Config>::RuntimeCall) -> Weight {
		// The check reads what recording a proof reads and verifies the same signature, and
		// writes nothing: recording a one-member proof bounds it. (It was charged a whole
		// settlement, `submit_proof(1)`, and never refunded: `bench/chain_load.sh` found a
		// dev node's blocks full at 787 proofs, four fifths of their weight this charge.)
		match call.is_sub_type() {
			Some(Call::submit_proof { .. }) => T::WeightInfo::record_proof(1),
			_ => Weight::zero(),
		}
	}

	fn validate(
		&self,
		origin: <T as frame_system::Config>::RuntimeOrigin,
		call: &<T as frame_system::Config>::RuntimeCall,
		_info: &DispatchInfoOf<<T as frame_system::Config>::RuntimeCall>,
		_len: usize,
		_self_implicit: Self::Implicit,
		_inherited_implication: &impl Encode,
		_source: TransactionSource,
	) -> ValidateResult<Self::Val, <T as frame_system::Config>::RuntimeCall> {
		let Some(Call::submit_proof { proof }) = call.is_sub_type() else {
			return Ok((ValidTransaction::default(), (), origin));
		};
		let round = rounds::check::<T>(proof).map_err(|error| {
			// The code is the index of the `Jobs` error dispatching would return.
			InvalidTransaction::Custom(error.encode().first().copied().unwrap_or(u8::MAX))
		})?;
		let now = frame_system::Pallet::<T>::block_number();
		let blocks_left = round.deadline.saturating_sub(now);
		let signed = &proof.proof;
		let valid = ValidTransaction {
			priority: PROOF_PRIORITY,
			provides: alloc::vec![(PROOF_TAG, signed.job, signed.round, &signed.provider).encode()],
			longevity: TryInto::<u64>::try_into(blocks_left).unwrap_or(u64::MAX).max(1),
			..ValidTransaction::default()
		};
		Ok((valid, (), origin))
	}

	impl_tx_ext_default!(<T as frame_system::Config>::RuntimeCall; prepare);
}
