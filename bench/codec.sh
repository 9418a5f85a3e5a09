#!/usr/bin/env bash
# Codec and aggregation speed: compress + encode and decode + decompress of one large update
# per scheme (default 100M values) on one thread; then rounds of 4, 16 and 64 updates (4M
# values each) aggregated with the chain's rule block by block on every core, against the
# dense, one-thread way, side by side. Writes bench/reports/codec.md and codec.json.
# Extra arguments go to the binary (e.g. --values 10000000 --repeats 5 --peers 4,16).
# GRID_BENCH_NO_BUILD=1 uses the binary already in $CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked --workspace --bin bench_codec
fi
"$CARGO_TARGET_DIR/release/bench_codec" --out bench/reports "$@"
echo "wrote bench/reports/codec.md and codec.json"
