#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, unit tests and the end-to-end tests
# that start real grid-node processes. Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
# Keep the build within the machine's memory and cores.
export CARGO_INCREMENTAL=0

./scripts/setup.sh

step() { printf '\n==> %s\n' "$*"; }
start=$SECONDS

step "format"
cargo fmt --all -- --check

# Lint while building: clippy-driver compiles the workspace's own crates (and fails on any
# warning) while dependencies build with plain rustc, so linting costs no second `cargo check`
# of the ~900 dependencies. `cargo clippy --workspace --all-targets -- -D warnings` is the
# interactive equivalent.
toolchain=$(sed -n 's/^channel = "\(.*\)"/\1/p' rust-toolchain.toml)
RUSTC_WORKSPACE_WRAPPER="$(rustup which --toolchain "$toolchain" clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

step "build and lint (release: every crate, its tests, the node and the runtime wasm)"
cargo build --release --locked --workspace --all-targets

step "tests"
cargo test --release --locked --workspace

step "pallet benchmarks (as tests)"
cargo test --release --locked -p pallet-providers -p pallet-jobs \
	--features pallet-providers/runtime-benchmarks,pallet-jobs/runtime-benchmarks

step "no RocksDB in the dependency tree"
if cargo tree --locked -i librocksdb-sys >/dev/null 2>&1; then
	echo "librocksdb-sys is in the dependency tree" >&2
	exit 1
fi

step "all tests passed in $((SECONDS - start)) s"
