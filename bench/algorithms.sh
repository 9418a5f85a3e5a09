#!/usr/bin/env bash
# Algorithm benchmark: DDP vs DiLoCo with each compression, N participants simulated in one
# process on the byte-level GPT and Shakespeare, over several seeds, hyper-parameters chosen on
# a validation split and losses reported on a test split. Writes bench/reports/algorithms.md,
# algorithms.json and algorithms.svg. Extra arguments go to the binary (e.g. --seeds 1; later
# options win, so `--methods` and `--report` pick other methods and another report name).
set -euo pipefail
# GRID_BENCH_NO_BUILD=1 uses the binary already in $CARGO_TARGET_DIR.
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked --workspace --bin bench_algo
fi
# Each run is single-threaded (one rayon thread); --jobs runs that many at once, one per core.
export RAYON_NUM_THREADS="${RAYON_NUM_THREADS:-1}"
export BENCH_COMMAND="${BENCH_COMMAND:-bench/algorithms.sh $*}"
# Variants of one method compete on validation loss (the report lists them all). DDP's
# learning rate and DiLoCo's inner and outer settings are tuned the same way; top-k's outer
# step (lr 2, no momentum: error feedback accumulates like momentum) and decay 0.9 are the
# job defaults' counterparts.
methods="ddp@lr=0.006,ddp@lr=0.01,ddp@lr=0.02"
methods+=",none@lr=0.006/olr=1/mom=0.5,none@lr=0.01/olr=1/mom=0.5"
methods+=",int8@lr=0.006/olr=1/mom=0.5"
methods+=",topk:256:32:1@lr=0.006,topk:256:32:1@lr=0.006/h=100,topk:4096:16:1@lr=0.006/h=100"
methods+=",tiles:64@lr=0.006,tiles:256@lr=0.006,tiles:1024@lr=0.006"
"$CARGO_TARGET_DIR/release/bench_algo" --out bench/reports --seeds 3 --jobs "$(nproc)" \
	--methods "$methods" "$@"
echo "wrote the report (.md, .json and .svg) in bench/reports"
