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
# name|implementations|arguments of both programs. gpt-100m is GPT-2-small-shaped with a
# 8192-token vocabulary (98.0M parameters); gpt-small is the shape the CPU benchmark uses, on a
# larger batch; gpt-370m (GPT-2-medium-shaped, 32768-token vocabulary) and gpt-1.3b are the
# larger models one GPU trains. Implementations: candle (grid-trainer's step), composed (the
# same with the fused GPU kernels off), pytorch (eager), compiled (torch.compile).
CONFIGS=${CONFIGS:-"gpt-100m|candle composed pytorch compiled|--layers 12 --heads 12 --width 768 --context 512 --vocab 8192 --batch 16 --steps 20 --warmup 5
gpt-small|candle composed pytorch|--layers 4 --heads 4 --width 128 --context 64 --vocab 256 --batch 64 --steps 50 --warmup 10
gpt-370m|candle pytorch|--layers 24 --heads 16 --width 1024 --context 1024 --vocab 32768 --batch 8 --steps 10 --warmup 3
gpt-1.3b|candle pytorch|--layers 24 --heads 16 --width 2048 --context 1024 --vocab 32768 --batch 8 --steps 6 --warmup 2"}
# Configurations and implementations run in the first round only: the larger models' steps
# are long enough to time steadily, and torch.compile takes a minute to compile.
ONCE=${ONCE:-"gpt-370m gpt-1.3b compiled"}
runs=$(mktemp)
for round in $(seq "$REPEATS"); do
    while IFS='|' read -r name impls args; do
        for impl in $impls; do
            if [[ $round -gt 1 && " $ONCE " =~ \ ($name|$impl)\  ]]; then continue; fi
            # shellcheck disable=SC2086 # the arguments are meant to split
            case $impl in
            candle) out=$("$BENCH_STEP" $args --device cuda 2>&1 | tail -1) ;;
            composed) out=$(GRID_GPU_FUSED=0 "$BENCH_STEP" $args --device cuda 2>&1 | tail -1) ;;
            pytorch) out=$(python3 bench/torch_ref/gpt.py $args --device cuda 2>&1 | tail -1) ;;
            compiled) out=$(python3 bench/torch_ref/gpt.py $args --compile 1 --device cuda 2>&1 | tail -1) ;;
            esac
            label=$impl
            [[ $impl == composed ]] && label=candle-composed
            [[ $impl == compiled ]] && label=pytorch-compiled
            echo "$name|$label|$out" | tee -a "$runs"
        done
    done <<<"$CONFIGS"
done
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
python3 bench/gpu_report.py "$runs" "$REPORT" "$gpu" "$(cut -d"|" -f1,3 <<<"$CONFIGS")"
rm -f "$runs"
echo "wrote $REPORT"
