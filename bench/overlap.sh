#!/usr/bin/env bash
# Overlapped rounds: what training round r while round r − 1 is exchanged costs in loss.
# Blocking DiLoCo against its overlapped forms (`diloco::Overlap`: delayed, stale, own, eager)
# in f32 (OVERLAP_FULL=1: also DDP, and tiles 1024 blocking and eager), on the algorithm
# benchmark's model, data and seeds (the settings bench/algorithms.sh chose on validation). Writes bench/reports/overlap.md, overlap.json and
# overlap.svg. Extra arguments go to the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
f32="none@lr=0.01/olr=1/mom=0.5"
tiles="tiles:1024@lr=0.006"
methods="$f32,$f32/overlap=delayed,$f32/overlap=stale,$f32/overlap=own,$f32/overlap=eager"
if [ -n "${OVERLAP_FULL:-}" ]; then
	# DDP beside them, and the tiled codec blocking and eager (about 25 minutes more).
	methods="ddp@lr=0.01,$methods,$tiles,$tiles/overlap=eager"
fi
BENCH_COMMAND="${OVERLAP_FULL:+OVERLAP_FULL=1 }bench/overlap.sh $*" exec bench/algorithms.sh --report overlap --methods "$methods" "$@"
