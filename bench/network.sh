#!/usr/bin/env bash
# Network benchmarks: several grid-trainer processes on loopback with shaped links.
# Writes bench/reports/network.md, network_aware.svg and network_kill.svg.
# `--quick` runs a few rounds of each (a smoke test of the script, not a measurement).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
# Build the whole workspace's view of the trainer (features resolved as for the node), so
# the binaries match what `scripts/test.sh` built and nothing is rebuilt.
cargo build --release --workspace --bin grid-trainer --bin bench_net
export BENCH_COMMAND="bench/network.sh $*"
"$CARGO_TARGET_DIR/release/bench_net" --out bench/reports "$@"
echo "wrote bench/reports/network.md"
