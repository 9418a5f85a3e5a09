#!/usr/bin/env bash
# GPU providers end to end (issue 27): a `grid-node --dev` and provider daemons sharing the one
# GPU train a ~350M-parameter chain job to completion, are paid and agree on every round's
# model; a CPU provider trains a small job with a GPU provider (tests/src/bin/gpu_job.rs;
# arguments go to it). Meant for the GPU machine through `scripts/gpu.sh run` (GPU_JOB, the
# CUDA grid-trainer as GRID_TRAINER_BIN and GRID_NODE_BIN from .gpu/); with `--device cpu` and
# small models it rehearses on any machine. Writes REPORT (default bench/reports/gpu_e2e.md),
# gpu_e2e.json, the GPU's use and the host's memory sampled every 2 s (gpu_e2e_smi.csv), the run's log
# (gpu_e2e.log) and the node's and providers' logs (gpu_e2e_logs.tar.xz) beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}
GPU_JOB=${GPU_JOB:-$target/release/gpu_job}
export GRID_NODE_BIN=${GRID_NODE_BIN:-$target/release/grid-node}
export GRID_DATA_DIR=${GRID_DATA_DIR:-$PWD/data}
REPORT=${REPORT:-bench/reports/gpu_e2e.md}
out=$(dirname "$REPORT")
mkdir -p "$out"
work=$(mktemp -d)
smi=
cleanup() {
	[ -n "$smi" ] && kill "$smi" 2>/dev/null
	# The processes' logs, not their checkpoints (hundreds of MB each at 350M parameters).
	(cd "$work" && find . -name '*.log' -print0 | tar cJf "$OUT_DIR/gpu_e2e_logs.tar.xz" --null -T -) || true
	rm -rf "$work"
}
OUT_DIR=$(cd "$out" && pwd)
trap cleanup EXIT
# Every 2 s: the GPU's use and memory (where there is one) and the host's memory in use.
sample() {
	echo "time,gpu_utilization_pct,gpu_memory_mib,host_memory_used_mib"
	while sleep 2; do
		gpu=,
		command -v nvidia-smi >/dev/null &&
			gpu=$(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits | head -1 | tr -d ' ')
		echo "$(date +%T),$gpu,$(free -m | awk '/^Mem/ {print $3}')"
	done
}
sample >"$out/gpu_e2e_smi.csv" &
smi=$!
status=0
"$GPU_JOB" --out "$work/report" --keep "$work/run" "$@" 2>&1 | tee "$out/gpu_e2e.log" || status=$?
[ -f "$work/report/gpu_e2e.md" ] && cp "$work/report/gpu_e2e.md" "$REPORT"
[ -f "$work/report/gpu_e2e.json" ] && cp "$work/report/gpu_e2e.json" "${REPORT%.md}.json"
exit $status
