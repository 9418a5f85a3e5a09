#!/usr/bin/env bash
# What one batch of the loss screen tells: honest updates' margins against those of updates
# trained on other data, batch by batch through rounds of 30 and 120 inner steps, on the
# red-team suite's job (bench/redteam/src/power.rs). The loss screen's cost follows from it.
# Writes bench/reports/screen-power.{md,json,svg}. Extra arguments go to the binary
# (e.g. --jobs 20 --steps 30,60,120).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
# The whole workspace, as the tests build it: the same features, so nothing is rebuilt.
cargo build --release --locked --workspace --all-targets
GRID_DATA_DIR="${GRID_DATA_DIR:-$PWD/data}" "$CARGO_TARGET_DIR/release/screen_power" --out bench/reports "$@"
