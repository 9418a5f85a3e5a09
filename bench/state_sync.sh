#!/usr/bin/env bash
# State sync: a joiner fetching served global states of 1M to 160M parameters over libp2p on
# loopback (header, hash-checked pieces, checkpoint verified), against a plain TCP read of the
# same bytes, each side its own process (`bench_sync`). Writes bench/reports/state_sync.md and
# state_sync.json. Needs about 4 GB of memory per 100M parameters at the largest size.
#
# usage: bench/state_sync.sh [REPEATS]   (default 3)
# Environment: PARAMS (millions, comma-separated; default 1,16,64,160);
# GRID_BENCH_NO_BUILD=1 uses the binary already in $CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked --workspace --bin bench_sync
fi
RUST_LOG="${RUST_LOG:-warn}" "$CARGO_TARGET_DIR/release/bench_sync" run --out bench/reports \
	--params "${PARAMS:-1,16,64,160}" --repeats "${1:-3}"
