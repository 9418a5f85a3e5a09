#!/usr/bin/env bash
# Chain load: how many signed contribution proofs the blocks of a `grid-node --dev` hold, and
# how soon a round is paid once its quorum is in. P providers (default 64) each join J jobs
# (default 16) of P members, and all P x J proofs of round 0 go to the pool at once
# (`tests/src/bin/chain_load.rs`). Writes bench/reports/chain_load.md and chain_load.json.
#
# usage: bench/chain_load.sh [--providers P] [--jobs J]
# GRID_BENCH_NO_BUILD=1 uses the binaries already in $CARGO_TARGET_DIR without building.
# The node runs on free loopback ports in a temporary directory and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked --workspace --bin chain_load --bin grid-node
fi
export GRID_NODE_BIN="${GRID_NODE_BIN:-$CARGO_TARGET_DIR/release/grid-node}"
"$CARGO_TARGET_DIR/release/chain_load" --out bench/reports "$@"
