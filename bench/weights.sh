#!/usr/bin/env bash
# Measures the pallets' weights on this machine and writes them: builds the runtime's wasm
# with `runtime-benchmarks` (in its own target directory, so the node's embedded runtime never
# carries benchmark code), runs `grid-node benchmark pallet` on it for pallet-providers and
# pallet-jobs, and generates pallets/<pallet>/src/weights.rs from bench/weights/template.hbs.
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

# The whole workspace, as the tests build it: the same features, so nothing is rebuilt.
cargo build --release --locked --workspace --all-targets
CARGO_TARGET_DIR="$bench_target" cargo build --release --locked -p grid-runtime \
	--features runtime-benchmarks
wasm="$bench_target/release/wbuild/grid-runtime/grid_runtime.compact.compressed.wasm"
raw=$(mktemp -d)
for pallet in providers jobs; do
	"$CARGO_TARGET_DIR/release/grid-node" benchmark pallet --runtime "$wasm" \
		--genesis-builder runtime --genesis-builder-preset development \
		--pallet "pallet_$pallet" --extrinsic '*' --steps "$STEPS" --repeat "$REPEAT" \
		--template bench/weights/template.hbs --output "pallets/$pallet/src/weights.rs" \
		--json-file "$raw/$pallet.json"
done
python3 bench/weights/report.py "$raw" bench/reports "$STEPS" "$REPEAT"
