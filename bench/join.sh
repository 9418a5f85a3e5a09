#!/usr/bin/env bash
# How a fetched state becomes one vector or one state on the round loop, side by side with
# what each way replaced, for the step states of a 43.8M and a 99.7M GPT (`bench_join`):
# - joining its pieces (`update_pieces::join_pieces`, the update downloads' last step) against
#   the byte-by-byte collect it replaced: bench/reports/join.md and join.json;
# - putting a state together from its pieces as they come (`state_assembly::Assembly`, what
#   the work-state downloads do) against holding every piece, joining them and decoding the
#   joined bytes: seconds and the thread's highest live memory, bench/reports/assemble.md
#   and assemble.json.
# Needs about 6 GB of memory at 99.7M; about two minutes.
#
# usage: bench/join.sh [REPEATS]   (default 3)
# Environment: PARAMS (millions, comma-separated; default 43.8,99.7); ONLY=join|assemble
# (one of the two); GRID_BENCH_NO_BUILD=1 uses the binary already in $CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked --workspace --bin bench_join
fi
for compare in ${ONLY:-join assemble}; do
	"$CARGO_TARGET_DIR/release/bench_join" --compare "$compare" --out bench/reports \
		--params "${PARAMS:-43.8,99.7}" --repeats "${1:-3}"
done
