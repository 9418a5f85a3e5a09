#!/usr/bin/env bash
# Scale: one job trained by N real provider daemons on a `grid-node --dev`, for several N
# (default 4, 8, 16; `tests/src/bin/scale.rs`): round period, exchange time, bytes per
# trainer, agreement on the model, attestation of the quorum, payment latency, proofs per
# block. Writes bench/reports/scale.md and scale.json.
#
# usage: bench/scale.sh [--trainers 4,8,16] [--rounds R] [--round-blocks B]
#                       [--grace-ms G] [--fetch-ms F] [--fan-in G] [--out DIR] [--keep DIR]
# --fan-in G runs each N twice, side by side: every member's update aggregated, then at most
# G a round (the job's training.exchange.fan_in), with a table of the ratios.
# GRID_BENCH_NO_BUILD=1 uses the binaries already in $CARGO_TARGET_DIR without building.
# Everything runs on free loopback ports in a temporary directory and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked --workspace --bin scale --bin grid-node --bin grid-trainer
fi
export GRID_NODE_BIN="${GRID_NODE_BIN:-$CARGO_TARGET_DIR/release/grid-node}"
"$CARGO_TARGET_DIR/release/scale" --out bench/reports "$@"
