//! Rebuilds the trainer when the chain's metadata changes: `chain/mod.rs` generates the chain
//! API from `metadata/grid.scale` with a proc macro, and cargo does not track files a macro
//! reads.
fn main() {
	println!("cargo:rerun-if-changed=../metadata/grid.scale");
}
