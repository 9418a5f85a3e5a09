#!/usr/bin/env bash
# Codec speed: compress + encode and decode + decompress of one large update per scheme
# (default 100M values), on one thread. Writes bench/reports/codec.md and codec.json.
# Extra arguments go to the binary (e.g. --values 10000000 --repeats 5).
# GRID_BENCH_NO_BUILD=1 uses the binary already in $CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked -p grid-trainer --bin bench_codec
fi
export RAYON_NUM_THREADS=1
"$CARGO_TARGET_DIR/release/bench_codec" --out bench/reports "$@"
echo "wrote bench/reports/codec.md and codec.json"
