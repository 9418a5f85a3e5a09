#!/usr/bin/env bash
# Updates in pieces from their keepers against whole updates from their committers, side by
# side: 8 grid-trainer processes on loopback, every trainer's uplink shaped to 20 Mbit/s,
# all-to-all and with a fan-in of 3 (`bench_pieces`). Writes bench/reports/pieces.md,
# pieces.json and pieces.svg. About 2 minutes a run, 4 runs a repeat.
#
# usage: bench/pieces.sh [REPEATS]   (default 3)
# GRID_BENCH_NO_BUILD=1 uses the binaries already in $CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	# The workspace's feature set, so nothing the tests built is rebuilt.
	cargo build --release --locked --workspace --bin grid-trainer --bin bench_pieces
fi
export BENCH_COMMAND="bench/pieces.sh $*"
export GRID_DATA_DIR="${GRID_DATA_DIR:-$PWD/data}"
"$CARGO_TARGET_DIR/release/bench_pieces" --out bench/reports --repeats "${1:-3}"
echo "wrote bench/reports/pieces.md"
