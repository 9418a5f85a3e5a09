#!/usr/bin/env bash
# Joining a fetched state from its pieces (the work-state and update downloads' last step,
# on the round loop): `update_pieces::join_pieces` against the byte-by-byte collect it
# replaced, side by side, for the step states of a 43.8M and a 99.7M GPT (`bench_join`).
# Writes bench/reports/join.md and join.json. Needs about 3 GB of memory at 99.7M.
#
# usage: bench/join.sh [REPEATS]   (default 3)
# Environment: PARAMS (millions, comma-separated; default 43.8,99.7);
# GRID_BENCH_NO_BUILD=1 uses the binary already in $CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked --workspace --bin bench_join
fi
"$CARGO_TARGET_DIR/release/bench_join" --out bench/reports --params "${PARAMS:-43.8,99.7}" \
	--repeats "${1:-3}"
