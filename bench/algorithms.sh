#!/usr/bin/env bash
# Algorithm benchmark: DDP vs DiLoCo with each compression, N participants simulated in one
# process on the byte-level GPT and Shakespeare. Writes bench/reports/algorithms.md and
# bench/reports/algorithms.svg. Extra arguments go to the binary (e.g. --steps 200).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
cargo build --release -p grid-trainer --bin bench_algo
# One thread: the simulated participants run one after another, and on a shared 2-core
# machine a second rayon thread mostly adds contention.
export RAYON_NUM_THREADS="${RAYON_NUM_THREADS:-1}"
export BENCH_COMMAND="bench/algorithms.sh $*"
"$CARGO_TARGET_DIR/release/bench_algo" --out bench/reports "$@"
echo "wrote bench/reports/algorithms.md and bench/reports/algorithms.svg"
