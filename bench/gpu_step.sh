#!/usr/bin/env bash
# Candle's GPT training step on a CUDA GPU against the PyTorch eager reference of the same
# model, batch and precision (bf16 autocast, f32 master weights and AdamW state), run
# alternately in one invocation (REPEATS rounds; the best median of each is compared), and
# the same Candle step with grid-trainer's fused GPU kernels off (GRID_GPU_FUSED=0).
# Runs on the GPU machine (see scripts/gpu.sh): needs the `bench_step` binary built with
# `--features cuda` (BENCH_STEP) and python3 with a CUDA PyTorch. Writes REPORT (default
# bench/reports/gpu_step.md) and an SVG beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_STEP=${BENCH_STEP:-${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}/release/bench_step}
REPEATS=${REPEATS:-2}
REPORT=${REPORT:-bench/reports/gpu_step.md}
# name|arguments of both programs. gpt-100m is GPT-2-small-shaped with a 8192-token vocabulary
# (98.6M parameters); gpt-small is the shape the CPU benchmark uses, on a larger batch.
CONFIGS=${CONFIGS:-"gpt-100m|--layers 12 --heads 12 --width 768 --context 512 --vocab 8192 --batch 16 --steps 20 --warmup 5
gpt-small|--layers 4 --heads 4 --width 128 --context 64 --vocab 256 --batch 64 --steps 50 --warmup 10"}
runs=$(mktemp)
for _ in $(seq "$REPEATS"); do
    while IFS='|' read -r name args; do
        # shellcheck disable=SC2086 # the arguments are meant to split
        candle=$("$BENCH_STEP" $args --device cuda 2>&1 | tail -1) || true
        echo "$name|candle|$candle" | tee -a "$runs"
        # The same binary with grid-trainer's fused GPU kernels off (Candle's composed ops).
        # shellcheck disable=SC2086
        composed=$(GRID_GPU_FUSED=0 "$BENCH_STEP" $args --device cuda 2>&1 | tail -1) || true
        echo "$name|candle-composed|$composed" | tee -a "$runs"
        # shellcheck disable=SC2086
        torch=$(python3 bench/torch_ref/gpt.py $args --device cuda 2>&1 | tail -1) || true
        echo "$name|pytorch|$torch" | tee -a "$runs"
    done <<<"$CONFIGS"
done
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
python3 bench/gpu_report.py "$runs" "$REPORT" "$gpu" "$CONFIGS"
rm -f "$runs"
echo "wrote $REPORT"
