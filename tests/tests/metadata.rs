//! The chain metadata kept in the repository (`metadata/grid.scale`) is what the trainer's and
//! the buyer CLI's typed chain client are generated from. It must be the runtime's own: this
//! test fails when they differ. `GRID_UPDATE_METADATA=1` rewrites the file instead.

use std::path::PathBuf;

/// The metadata version the clients are generated from (V16, the newest the runtime serves).
const VERSION: u32 = 16;

fn committed_path() -> PathBuf {
	PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../metadata/grid.scale")
}

#[test]
fn committed_metadata_matches_the_runtime() {
	let metadata = grid_runtime::Runtime::metadata_at_version(VERSION)
		.expect("the runtime serves metadata V16");
	let runtime: &[u8] = &metadata;
	let path = committed_path();
	if std::env::var_os("GRID_UPDATE_METADATA").is_some() {
		std::fs::write(&path, runtime).expect("writing metadata/grid.scale");
		return;
	}
	let committed = std::fs::read(&path).unwrap_or_default();
	assert!(
		committed == runtime,
		"{} ({} bytes) differs from the runtime's metadata ({} bytes): regenerate it with \
		 `GRID_UPDATE_METADATA=1 cargo test --release -p grid-e2e-tests --test metadata` and \
		 rebuild grid-trainer",
		path.display(),
		committed.len(),
		runtime.len()
	);
}
