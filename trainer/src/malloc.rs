//! Process-wide allocator tuning for training binaries (and dataset transfers).
//!
//! Every tensor op allocates its output. glibc serves large blocks with `mmap` and returns them
//! with `munmap` on free, so each step pays page faults and zeroing for memory it just released
//! (a fifth of a CPU training step of the small GPT). Raising the mmap and trim thresholds
//! keeps freed blocks in the heap for reuse. Call once at start-up, before training.

/// Keeps freed memory in the process for reuse (glibc only; a no-op elsewhere). Returns
/// whether the allocator accepted the settings.
pub fn retain_freed_memory() -> bool {
	#[cfg(all(target_os = "linux", target_env = "gnu"))]
	{
		// 256 MiB: larger than any activation of the models shipped here; bigger blocks still
		// go to mmap. Trimming only when 1 GiB sits free at the top of the heap.
		const MMAP_THRESHOLD: libc::c_int = LARGEST_THRESHOLD as libc::c_int;
		const TRIM_THRESHOLD: libc::c_int = 1 << 30;
		// SAFETY: mallopt only changes allocator parameters; it is called with valid options.
		unsafe {
			libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
				&& libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
		}
	}
	#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
	{
		false
	}
}

/// Freed blocks below this stay in the heap whatever the model (the small models' steps).
const SMALLEST_THRESHOLD: usize = 32 << 20;
/// [`retain_freed_memory`]'s threshold, the largest.
const LARGEST_THRESHOLD: usize = 256 << 20;

/// The threshold for a model of `model_bytes` (4 per parameter): half of it, within 32–256
/// MiB.
fn model_threshold(model_bytes: usize) -> usize {
	(model_bytes / 2).clamp(SMALLEST_THRESHOLD, LARGEST_THRESHOLD)
}

/// Serves blocks of half a model's `model_bytes` or more with `mmap`, so that freeing one
/// gives it back at once, and keeps retaining smaller ones (call once the model is known,
/// after [`retain_freed_memory`]). A trainer handles whole copies of the model on several
/// threads (training, evaluation, verification, checkpoints, serving); each thread's heap
/// kept the copies it freed for itself, so a provider of a 44M-parameter model peaked at
/// about 60 copies of it (`bench/reports/memory.md`). Activations of the models a CPU
/// trains are far smaller, so its steps keep their reuse. Returns whether the allocator
/// accepted the setting.
pub fn return_model_sized_blocks(model_bytes: usize) -> bool {
	#[cfg(all(target_os = "linux", target_env = "gnu"))]
	{
		let threshold =
			libc::c_int::try_from(model_threshold(model_bytes)).unwrap_or(libc::c_int::MAX);
		// SAFETY: mallopt only changes an allocator parameter; it is called with a valid one.
		unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, threshold) == 1 }
	}
	#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
	{
		let _ = model_bytes;
		false
	}
}

#[cfg(test)]
mod tests {
	#[test]
	fn glibc_accepts_the_settings() {
		let accepted = super::retain_freed_memory();
		assert_eq!(accepted, cfg!(all(target_os = "linux", target_env = "gnu")));
		let accepted = super::return_model_sized_blocks(100 << 20);
		assert_eq!(accepted, cfg!(all(target_os = "linux", target_env = "gnu")));
	}

	#[test]
	fn model_sized_blocks_are_half_a_model_within_bounds() {
		use super::{model_threshold, LARGEST_THRESHOLD, SMALLEST_THRESHOLD};
		assert_eq!(model_threshold(4 << 20), SMALLEST_THRESHOLD, "a tiny model keeps the floor");
		assert_eq!(model_threshold(175 << 20), 175 << 19, "a 44M model: half of it");
		assert_eq!(model_threshold(4 << 30), LARGEST_THRESHOLD, "a 1B model: the cap");
	}
}
