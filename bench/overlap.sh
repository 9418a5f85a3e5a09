#!/usr/bin/env bash
# Overlapped rounds: what training round r while round r − 1 is exchanged costs in loss.
# Blocking DiLoCo against its delayed and eager overlapped forms (`diloco::Overlap`), f32 and
# tiles 1024, beside DDP, on the algorithm benchmark's model, data and seeds (the settings
# bench/algorithms.sh chose on validation). Writes bench/reports/overlap.md, overlap.json and
# overlap.svg. Extra arguments go to the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
f32="none@lr=0.01/olr=1/mom=0.5"
tiles="tiles:1024@lr=0.006"
methods="ddp@lr=0.01,$f32,$f32/overlap=delayed,$f32/overlap=eager"
methods+=",$tiles,$tiles/overlap=delayed,$tiles/overlap=eager"
BENCH_COMMAND="bench/overlap.sh $*" exec bench/algorithms.sh --report overlap --methods "$methods" "$@"
