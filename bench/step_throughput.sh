#!/usr/bin/env bash
# Throughput of the Candle training step against the PyTorch eager reference of the same model
# and batch, run alternately on this machine with the same thread counts (REPEATS rounds, the
# best median of each configuration is reported, all runs are listed).
# Installs PyTorch (CPU use; the PyPI wheel brings CUDA libraries, several GB) into bench/.venv
# on first use. Writes bench/reports/step_throughput.md. Extra arguments go to both programs
# (e.g. --width 384 --layers 6 --heads 6).
# BASELINE_STEP=<a bench_step binary built before a change> runs it too, alternately with this
# tree's, so the report gives the change as a ratio measured side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
THREADS="${THREADS:-1 2}"
REPEATS="${REPEATS:-3}"
if [ ! -x bench/.venv/bin/python ] || ! bench/.venv/bin/python -c "import torch" 2>/dev/null; then
	python3 -m venv bench/.venv
	bench/.venv/bin/pip install --quiet torch
fi
cargo build --release --locked --workspace --bin bench_step
runs=$(mktemp)
# candle_runs LABEL BINARY THREADS ARGS...: the Candle step as configured by default (rayon,
# for matmuls and fused kernels, and candle's own spin-barrier pool, for element-wise binary
# ops, both with THREADS threads) and, with several threads, the same binary with the barrier
# pool off (CANDLE_NUM_THREADS=1; rayon still has THREADS).
candle_runs() {
	local label=$1 binary=$2 t=$3
	shift 3
	echo "$t|$label|$(RAYON_NUM_THREADS=$t "$binary" "$@")" | tee -a "$runs"
	if [ "$t" -gt 1 ]; then
		echo "$t|$label-barrier-off|$(RAYON_NUM_THREADS=$t CANDLE_NUM_THREADS=1 "$binary" "$@")" | tee -a "$runs"
	fi
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$REPEATS"); do
	for t in $THREADS; do
		candle_runs candle "$CARGO_TARGET_DIR/release/bench_step" "$t" "$@"
		if [ -n "${BASELINE_STEP:-}" ]; then
			candle_runs baseline "$BASELINE_STEP" "$t" "$@"
		fi
		echo "$t|pytorch|$(OMP_NUM_THREADS=$t bench/.venv/bin/python bench/torch_ref/gpt.py --threads "$t" "$@" 2>/dev/null)" | tee -a "$runs"
	done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
python3 bench/step_report.py "$runs" bench/reports/step_throughput.md "bench/step_throughput.sh $*" \
	"$load_before" "$load_after" "${BASELINE_STEP:-}"
rm -f "$runs"
echo "wrote bench/reports/step_throughput.md"
