#!/usr/bin/env bash
# Measures the pallets' weights on this machine and writes them: builds the runtime's wasm
# with `runtime-benchmarks` and a node with the `benchmark-cli` feature (in their own target
# directory, so neither the node everyone runs nor its embedded runtime carries benchmark
# code), runs `grid-node benchmark pallet` on that wasm for pallet-providers and pallet-jobs,
# and generates pallets/<pallet>/src/weights.rs from bench/weights/template.hbs. The first
# run builds the node's dependencies there from nothing (about half an hour on 2 cores).
# Also writes bench/reports/weights.md and weights.json: each call's measured time and
# storage accesses at its largest component, and its share of a block's compute.
# STEPS (default 20) and REPEAT (default 10) set the sampling.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
bench_target="${GRID_BENCH_TARGET_DIR:-$HOME/.cache/grid-bench-target}"
STEPS="${STEPS:-20}"
REPEAT="${REPEAT:-10}"

# frame-benchmarking-cli's test runtime serves `benchmark storage`, not `benchmark pallet`, and
# its wasm builder cannot find it in this workspace's metadata when the feature is only asked
# for here: skip that wasm.
SKIP_FRAME_STORAGE_ACCESS_TEST_RUNTIME_WASM_BUILD=1 \
	CARGO_TARGET_DIR="$bench_target" cargo build --release --locked -p grid-runtime -p grid-node \
	--features grid-runtime/runtime-benchmarks,grid-node/benchmark-cli
wasm="$bench_target/release/wbuild/grid-runtime/grid_runtime.compact.compressed.wasm"
raw=$(mktemp -d)
for pallet in providers jobs; do
	"$bench_target/release/grid-node" benchmark pallet --runtime "$wasm" \
		--genesis-builder runtime --genesis-builder-preset development \
		--pallet "pallet_$pallet" --extrinsic '*' --steps "$STEPS" --repeat "$REPEAT" \
		--template bench/weights/template.hbs --output "pallets/$pallet/src/weights.rs" \
		--json-file "$raw/$pallet.json"
done
python3 bench/weights/report.py "$raw" bench/reports "$STEPS" "$REPEAT"
