#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, unit tests and the end-to-end tests
# that start real grid-node processes. Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/build-env.sh

# Each step's header also says how long the one before it took (CI's time budget is tight).
start=$SECONDS
last=$SECONDS
step() {
	printf '\n==> [%4d s, previous step %4d s] %s\n' "$((SECONDS - start))" "$((SECONDS - last))" "$*"
	last=$SECONDS
}

step "format"
cargo fmt --all -- --check

step "layering of grid-trainer (round, net, chain and the engine point down only)"
./scripts/check-layers.sh

step "build and lint (release: every crate, its tests, the node and the runtime wasm)"
cargo build --release --locked --workspace --all-targets

step "tests: unit, end-to-end, zombienet (multi-validator networks), web UI, doc tests, pallet benchmarks"
./scripts/run-tests.sh

step "no RocksDB in the dependency tree"
if cargo tree --locked -i librocksdb-sys >/dev/null 2>&1; then
	echo "librocksdb-sys is in the dependency tree" >&2
	exit 1
fi

step "all tests passed in $((SECONDS - start)) s"
