#!/usr/bin/env bash
# Grid's GPT training against the PyTorch reference from the same start, step by step: the
# same initial weights and batches of Shakespeare (written by gpt_parity), the same loss, clip
# and AdamW (lr 6e-4), in f32 and in bf16 mixed precision, for STEPS steps; and PyTorch from
# a start perturbed by 1e-6, the trajectory's own sensitivity to rounding. Also traces Grid's bf16 with the residual
# stream in bf16 (GRID_GPU_RESIDUAL=bf16, the old behaviour) and with its fused kernels off
# (GRID_GPU_FUSED=0), to place a difference. Runs on the GPU machine (scripts/gpu.sh): needs
# gpt_parity built with `--features cuda` (GPT_PARITY) and python3 with a CUDA PyTorch.
# Writes REPORT (default bench/reports/gpu_parity.md) with a JSON and an SVG beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
GPT_PARITY=${GPT_PARITY:-${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}/release/gpt_parity}
REPORT=${REPORT:-bench/reports/gpu_parity.md}
SIZE=${SIZE:-"--layers 12 --heads 12 --width 768 --context 512 --vocab 8192"}
BATCH=${BATCH:-16}
STEPS=${STEPS:-50}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086 # SIZE is meant to split
{
    "$GPT_PARITY" $SIZE --batch "$BATCH" --steps "$STEPS" --out "$work"
    GRID_GPU_RESIDUAL=bf16 "$GPT_PARITY" $SIZE --batch "$BATCH" --steps "$STEPS" \
        --precision bf16 --out "$work/residual-bf16"
    GRID_GPU_FUSED=0 "$GPT_PARITY" $SIZE --batch "$BATCH" --steps "$STEPS" \
        --precision bf16 --out "$work/composed"
    for p in f32 bf16; do
        python3 bench/torch_ref/parity.py $SIZE --steps "$STEPS" --start "$work/start.safetensors" \
            --precision "$p" --out "$work/pytorch-$p.json"
    done
    # The trajectory's own sensitivity: PyTorch from a start perturbed by 1e-6 (relative).
    python3 bench/torch_ref/parity.py $SIZE --steps "$STEPS" --start "$work/start.safetensors" \
        --precision f32 --perturb 1e-6 --out "$work/pytorch-f32-perturbed.json"
}
cp "$work/residual-bf16/grid-bf16.json" "$work/grid-bf16-residual-bf16.json"
cp "$work/composed/grid-bf16.json" "$work/grid-bf16-composed.json"
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
python3 bench/parity_report.py "$work" "$REPORT" "$gpu" "$SIZE --batch $BATCH --steps $STEPS"
echo "wrote $REPORT"
