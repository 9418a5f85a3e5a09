#!/usr/bin/env bash
# What a segment check tells: honest steps against steps trained on other data, each redone
# from the state recorded before them, for segments of 1-8 steps in rounds of 30 and 120
# inner steps, on the red-team suite's job (bench/redteam/src/segments.rs), and what checking
# enough of them would cost. Writes bench/reports/segment-power.{md,json,svg}. Extra
# arguments go to the binary (e.g. --jobs 8 --segments 1,4).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
# The whole workspace, as the tests build it: the same features, so nothing is rebuilt.
cargo build --release --locked --workspace --all-targets
GRID_DATA_DIR="${GRID_DATA_DIR:-$PWD/data}" "$CARGO_TARGET_DIR/release/segment_power" --out bench/reports "$@"
