//! Which thread's allocations hold a process's memory: a global allocator over the system's
//! that counts every live block of [`LARGE_BLOCK`] bytes or more against the thread that
//! allocated it, and keeps the breakdown at the highest total seen and each role's own
//! highest (a role's high need not fall at the total's peak: a segment check that never
//! overlapped the peak still shows what it held).
//!
//! Why: a provider's resident memory peaks at tens of copies of its model while its threads
//! (training, evaluation, verification, checkpoints) overlap (`bench/README.md`, "Memory per
//! trainer"); heaptrack slowed a provider so much that its phases stopped overlapping, so it
//! could not show that peak. This costs a comparison on every allocation and, for the few
//! large ones (a model-sized copy, a layer's activations), a short probe of a fixed table:
//! cheap enough to run in the daemon itself.
//!
//! A block is charged to the thread that allocated it, even when another thread frees it (a
//! state built on one thread and handed to another stays its builder's). Threads name their
//! role with [`tag_thread`]; untagged threads are charged together as "other". Blocks the
//! table has no room for are counted as "untracked".

use std::{
	alloc::{GlobalAlloc, Layout, System},
	cell::Cell,
	sync::{
		atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering},
		Mutex,
	},
};

/// Blocks of this many bytes or more are counted.
pub const LARGE_BLOCK: usize = 1 << 20;
/// Roles a process can name ([`tag_thread`]); slot 0 is every untagged thread, the last
/// is the blocks the table had no room for.
const SLOTS: usize = 16;
const UNTRACKED: usize = SLOTS - 1;
/// Live large blocks the table can hold (a 44M-parameter provider holds a few thousand).
const ENTRIES: usize = 1 << 15;
/// Entries probed before a block counts as untracked.
const PROBES: usize = 128;
/// An entry freed while others may sit after it in their probe sequence.
const TOMBSTONE: u64 = 1;
/// A table entry: the block's address in the low 56 bits, its slot in the top 8.
const ADDRESS_BITS: u32 = 56;
const ADDRESS_MASK: u64 = (1 << ADDRESS_BITS) - 1;

thread_local! {
	/// This thread's slot (const-initialized, so reading it never allocates).
	static SLOT: Cell<usize> = const { Cell::new(0) };
}

/// Names given to slots, in slot order from 1.
static NAMES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Charges the large blocks this thread allocates from now on to `role` (threads of one
/// role share its slot). When every slot is named, the thread stays "other".
pub fn tag_thread(role: &str) {
	let Ok(mut names) = NAMES.lock() else { return };
	let slot = match names.iter().position(|n| n == role) {
		Some(i) => i + 1,
		None if names.len() + 1 < UNTRACKED => {
			names.push(role.to_string());
			names.len()
		}
		None => return,
	};
	SLOT.with(|s| s.set(slot));
}

/// The role a thread's blocks are charged to ([`tag_thread`]), to hand to another thread
/// that works for it ([`charged_to`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Role(usize);

/// The calling thread's role.
pub fn this_thread_role() -> Role {
	Role(SLOT.with(Cell::get))
}

/// Runs `f` with the calling thread's blocks charged to `role`, then gives the thread its
/// own role back (also when `f` panics): a pool thread that runs a step for the training
/// thread charges what it allocates to training.
pub fn charged_to<R>(role: Role, f: impl FnOnce() -> R) -> R {
	struct Restore(usize);
	impl Drop for Restore {
		fn drop(&mut self) {
			SLOT.with(|s| s.set(self.0));
		}
	}
	let _own = Restore(SLOT.with(|s| s.replace(role.0)));
	f()
}

/// A slot's name.
fn slot_name(slot: usize, names: &[String]) -> String {
	match slot {
		0 => "other".into(),
		UNTRACKED => "untracked".into(),
		i => names.get(i - 1).cloned().unwrap_or_else(|| format!("slot {i}")),
	}
}

/// Live bytes in large blocks per role, largest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Breakdown {
	/// The total over every role.
	pub total: u64,
	/// Each role with live bytes, and its bytes.
	pub roles: Vec<(String, u64)>,
}

impl Breakdown {
	/// The roles alone, `role MiB` each, largest first, comma-separated.
	pub fn roles_mib(&self) -> String {
		let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
		let roles: Vec<String> =
			self.roles.iter().map(|(role, bytes)| format!("{role} {:.0}", mib(*bytes))).collect();
		roles.join(", ")
	}
}

impl std::fmt::Display for Breakdown {
	fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
		let mib = self.total as f64 / f64::from(1u32 << 20);
		write!(f, "{mib:.0} MiB in blocks of 1 MiB or more")?;
		if !self.roles.is_empty() {
			write!(f, ": {}", self.roles_mib())?;
		}
		Ok(())
	}
}

/// The process's ledger. It counts only in a binary that makes [`Counting`] its global
/// allocator (`grid-trainer` does); elsewhere it stays empty.
pub static LEDGER: Ledger = Ledger::new();

/// [`LEDGER`] as a global allocator: `#[global_allocator] static A: Counting = Counting;`.
pub struct Counting;

// SAFETY: every call is passed on to `LEDGER`, which passes it on to `System`.
unsafe impl GlobalAlloc for Counting {
	unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
		// SAFETY: the caller's contract, passed on.
		unsafe { LEDGER.alloc(layout) }
	}

	unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
		// SAFETY: the caller's contract, passed on.
		unsafe { LEDGER.alloc_zeroed(layout) }
	}

	unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
		// SAFETY: the caller's contract, passed on.
		unsafe { LEDGER.dealloc(ptr, layout) }
	}

	unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
		// SAFETY: the caller's contract, passed on.
		unsafe { LEDGER.realloc(ptr, layout, new_size) }
	}
}

/// A ledger: the system's allocator, counting large blocks per thread role.
pub struct Ledger {
	table: [AtomicU64; ENTRIES],
	live: [AtomicI64; SLOTS],
	total: AtomicI64,
	peak: AtomicI64,
	/// The per-slot counts when `peak` was reached (approximately: another thread may move
	/// a count while they are copied).
	at_peak: [AtomicI64; SLOTS],
	/// Each slot's own highest count.
	highs: [AtomicI64; SLOTS],
	copying: AtomicBool,
}

impl Default for Ledger {
	fn default() -> Self {
		Self::new()
	}
}

impl Ledger {
	pub const fn new() -> Self {
		Ledger {
			table: [const { AtomicU64::new(0) }; ENTRIES],
			live: [const { AtomicI64::new(0) }; SLOTS],
			total: AtomicI64::new(0),
			peak: AtomicI64::new(0),
			at_peak: [const { AtomicI64::new(0) }; SLOTS],
			highs: [const { AtomicI64::new(0) }; SLOTS],
			copying: AtomicBool::new(false),
		}
	}

	/// Live large blocks per role now.
	pub fn now(&self) -> Breakdown {
		self.breakdown(&self.live)
	}

	/// Live large blocks per role when their total was highest.
	pub fn peak(&self) -> Breakdown {
		self.breakdown(&self.at_peak)
	}

	/// Each role's own highest live large blocks, whenever it was (the total is their sum,
	/// which no moment need have held).
	pub fn highs(&self) -> Breakdown {
		self.breakdown(&self.highs)
	}

	fn breakdown(&self, counts: &[AtomicI64; SLOTS]) -> Breakdown {
		let names = NAMES.lock().map(|n| n.clone()).unwrap_or_default();
		let mut roles: Vec<(String, u64)> = counts
			.iter()
			.enumerate()
			.map(|(slot, c)| (slot_name(slot, &names), c.load(Ordering::Relaxed).max(0) as u64))
			.filter(|(_, bytes)| *bytes > 0)
			.collect();
		roles.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
		Breakdown { total: roles.iter().map(|r| r.1).sum(), roles }
	}

	/// The first entry `address` probes.
	fn home(address: u64) -> usize {
		// Blocks of 1 MiB or more are page-aligned plus a small header: mix the high bits.
		(address.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % ENTRIES
	}

	/// Counts a new large block at `address` of `size` bytes against this thread.
	fn record(&self, address: u64, size: usize) {
		let slot = SLOT.try_with(Cell::get).unwrap_or(0);
		let entry = address | ((slot as u64) << ADDRESS_BITS);
		let home = Self::home(address);
		let placed = (0..PROBES).any(|i| {
			let cell = &self.table[(home + i) % ENTRIES];
			let seen = cell.load(Ordering::Relaxed);
			(seen == 0 || seen == TOMBSTONE)
				&& cell.compare_exchange(seen, entry, Ordering::AcqRel, Ordering::Relaxed).is_ok()
		});
		let slot = if placed { slot } else { UNTRACKED };
		let live = self.live[slot].fetch_add(size as i64, Ordering::Relaxed) + size as i64;
		self.highs[slot].fetch_max(live, Ordering::Relaxed);
		let total = self.total.fetch_add(size as i64, Ordering::Relaxed) + size as i64;
		if total > self.peak.fetch_max(total, Ordering::Relaxed) {
			self.copy_peak();
		}
	}

	/// Uncounts the large block at `address` of `size` bytes.
	fn forget(&self, address: u64, size: usize) {
		let home = Self::home(address);
		let mut slot = UNTRACKED;
		for i in 0..PROBES {
			let cell = &self.table[(home + i) % ENTRIES];
			let seen = cell.load(Ordering::Acquire);
			if seen == 0 {
				break;
			}
			if seen != TOMBSTONE && seen & ADDRESS_MASK == address {
				cell.store(TOMBSTONE, Ordering::Release);
				slot = (seen >> ADDRESS_BITS) as usize;
				break;
			}
		}
		self.live[slot.min(UNTRACKED)].fetch_sub(size as i64, Ordering::Relaxed);
		self.total.fetch_sub(size as i64, Ordering::Relaxed);
	}

	fn copy_peak(&self) {
		if self.copying.swap(true, Ordering::Acquire) {
			return;
		}
		for (at, live) in self.at_peak.iter().zip(&self.live) {
			at.store(live.load(Ordering::Relaxed), Ordering::Relaxed);
		}
		self.copying.store(false, Ordering::Release);
	}
}

// SAFETY: every block comes from and goes back to `System` with the caller's layout; the
// ledger only reads the addresses.
unsafe impl GlobalAlloc for Ledger {
	unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
		// SAFETY: the caller's layout contract is passed on unchanged.
		let ptr = unsafe { System.alloc(layout) };
		if layout.size() >= LARGE_BLOCK && !ptr.is_null() {
			self.record(ptr as u64, layout.size());
		}
		ptr
	}

	unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
		// SAFETY: as for `alloc`.
		let ptr = unsafe { System.alloc_zeroed(layout) };
		if layout.size() >= LARGE_BLOCK && !ptr.is_null() {
			self.record(ptr as u64, layout.size());
		}
		ptr
	}

	unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
		if layout.size() >= LARGE_BLOCK {
			self.forget(ptr as u64, layout.size());
		}
		// SAFETY: `ptr` was allocated by `System` with `layout` (the caller's contract).
		unsafe { System.dealloc(ptr, layout) }
	}

	unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
		// Forgotten first: once `System` has moved the block, another thread may be given
		// the old address and record it before this one could forget it.
		let was_large = layout.size() >= LARGE_BLOCK;
		if was_large {
			self.forget(ptr as u64, layout.size());
		}
		// SAFETY: the caller's contract for `realloc`, passed on unchanged.
		let moved = unsafe { System.realloc(ptr, layout, new_size) };
		if moved.is_null() {
			// The old block stays live.
			if was_large {
				self.record(ptr as u64, layout.size());
			}
		} else if new_size >= LARGE_BLOCK {
			self.record(moved as u64, new_size);
		}
		moved
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn block(size: usize) -> Layout {
		Layout::from_size_align(size, 16).unwrap()
	}

	#[test]
	fn large_blocks_are_charged_to_their_allocating_thread_until_freed() {
		let ledger = Box::new(Ledger::new());
		let ledger: &'static Ledger = Box::leak(ledger);
		// SAFETY: each block is freed once, with its layout.
		let small = unsafe { ledger.alloc(block(4096)) };
		let own = unsafe { ledger.alloc_zeroed(block(3 << 20)) };
		assert_eq!(ledger.now().total, 3 << 20, "small blocks are not counted");
		let (theirs, address) = std::thread::spawn(move || {
			tag_thread("ledger test writer");
			// SAFETY: as above.
			let theirs = unsafe { ledger.alloc(block(2 << 20)) };
			(ledger.now(), theirs as usize)
		})
		.join()
		.unwrap();
		let writer =
			|b: &Breakdown| b.roles.iter().find(|r| r.0 == "ledger test writer").map(|r| r.1);
		assert_eq!(writer(&theirs), Some(2 << 20), "{theirs}");
		// Freed here, it still leaves the writer's count.
		// SAFETY: as above.
		unsafe { ledger.dealloc(address as *mut u8, block(2 << 20)) };
		let now = ledger.now();
		assert_eq!(writer(&now), None, "{now}");
		assert_eq!(now.total, 3 << 20, "{now}");
		// Grown past the threshold and shrunk below it by realloc.
		// SAFETY: as above.
		let grown = unsafe { ledger.realloc(small, block(4096), 5 << 20) };
		assert_eq!(ledger.now().total, 8 << 20);
		let shrunk = unsafe { ledger.realloc(grown, block(5 << 20), 100) };
		assert_eq!(ledger.now().total, 3 << 20);
		let peak = ledger.peak();
		assert_eq!(peak.total, 8 << 20, "{peak}");
		assert!(peak.to_string().starts_with("8 MiB in blocks of 1 MiB or more: "), "{peak}");
		// SAFETY: as above.
		unsafe {
			ledger.dealloc(shrunk, block(100));
			ledger.dealloc(own, block(3 << 20));
		}
		assert_eq!(ledger.now(), Breakdown::default());
		assert_eq!(ledger.peak().total, 8 << 20, "the peak stays");
		// The writer's 2 MiB never met the peak (freed before the realloc), but its own
		// high stays.
		let highs = ledger.highs();
		assert_eq!(writer(&ledger.peak()), None);
		assert_eq!(writer(&highs), Some(2 << 20), "{highs}");
		assert!(highs.roles_mib().contains("ledger test writer 2"), "{highs}");
	}

	#[test]
	fn a_thread_working_for_another_charges_its_role_and_gets_its_own_back() {
		let ledger: &'static Ledger = Box::leak(Box::new(Ledger::new()));
		tag_thread("ledger test owner");
		let owner = this_thread_role();
		let role_of = |b: &Breakdown, name: &str| b.roles.iter().find(|r| r.0 == name).map(|r| r.1);
		let (during, after) = std::thread::spawn(move || {
			tag_thread("ledger test helper");
			// SAFETY: the block is freed once, with its layout.
			let during = charged_to(owner, || unsafe { ledger.alloc(block(2 << 20)) });
			let charged = ledger.now();
			// SAFETY: as above.
			unsafe { ledger.dealloc(during, block(2 << 20)) };
			// A panic inside still gives the thread its role back.
			let caught = std::panic::catch_unwind(|| charged_to(owner, || panic!("inside")));
			assert!(caught.is_err());
			// SAFETY: as above.
			let after = unsafe { ledger.alloc(block(1 << 20)) };
			let own = ledger.now();
			// SAFETY: as above.
			unsafe { ledger.dealloc(after, block(1 << 20)) };
			(charged, own)
		})
		.join()
		.unwrap();
		assert_eq!(role_of(&during, "ledger test owner"), Some(2 << 20), "{during}");
		assert_eq!(role_of(&during, "ledger test helper"), None, "{during}");
		assert_eq!(role_of(&after, "ledger test helper"), Some(1 << 20), "{after}");
		assert_eq!(role_of(&after, "ledger test owner"), None, "{after}");
	}

	#[test]
	fn blocks_beyond_the_table_are_counted_as_untracked_and_uncounted_when_freed() {
		let ledger: &'static Ledger = Box::leak(Box::new(Ledger::new()));
		// Addresses that all probe from the same entry (recorded directly; no memory behind
		// them): after PROBES of them the table has no room on their path.
		let home = Ledger::home(0x7000_0000_0000);
		let count = PROBES as u64 + 3;
		let addresses: Vec<u64> = (0u64..)
			.map(|i| 0x7000_0000_0000 + i * 4096)
			.filter(|a| Ledger::home(*a) == home)
			.take(count as usize)
			.collect();
		for a in &addresses {
			ledger.record(*a, LARGE_BLOCK);
		}
		let untracked = |b: &Breakdown| b.roles.iter().find(|r| r.0 == "untracked").map(|r| r.1);
		let now = ledger.now();
		assert_eq!(now.total, count * LARGE_BLOCK as u64, "{now}");
		assert_eq!(untracked(&now), Some(3 * LARGE_BLOCK as u64), "{now}");
		for a in &addresses {
			ledger.forget(*a, LARGE_BLOCK);
		}
		assert_eq!(ledger.now(), Breakdown::default());
		// Freed entries are reused.
		ledger.record(addresses[0], LARGE_BLOCK);
		assert_eq!(untracked(&ledger.now()), None);
	}
}
