#!/usr/bin/env bash
# Overlapped rounds: what training round r while round r − 1 is exchanged costs in loss.
# Blocking DiLoCo against its overlapped forms in f32, on the algorithm benchmark's model,
# data and seeds (the settings bench/algorithms.sh chose on validation):
# - default: one-round-delayed outer steps (`diloco::Overlap`: delayed, stale, own, eager),
#   writing bench/reports/overlap.{md,json,svg} (OVERLAP_FULL=1: also DDP, and tiles 1024
#   blocking and eager);
# - `--catch-up`: rounds that catch up with the exchange after a few steps (`diloco::CatchUp`)
#   from each start, writing bench/reports/overlap_catchup.{md,json,svg}.
# Other arguments go to the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
f32="none@lr=0.01/olr=1/mom=0.5"
tiles="tiles:1024@lr=0.006"
report=overlap
if [ "${1:-}" = "--catch-up" ]; then
	shift
	report=overlap_catchup
	methods="$f32"
	for start in delayed/catchup=2 delayed/catchup=5 local/catchup=2 local/catchup=5 eager/catchup=5; do
		methods+=",$f32/overlap=$start"
	done
	command="bench/overlap.sh --catch-up $*"
else
	methods="$f32,$f32/overlap=delayed,$f32/overlap=stale,$f32/overlap=own,$f32/overlap=eager"
	if [ -n "${OVERLAP_FULL:-}" ]; then
		# DDP beside them, and the tiled codec blocking and eager (about 25 minutes more).
		methods="ddp@lr=0.01,$methods,$tiles,$tiles/overlap=eager"
	fi
	command="${OVERLAP_FULL:+OVERLAP_FULL=1 }bench/overlap.sh $*"
fi
BENCH_COMMAND="$command" exec bench/algorithms.sh --report "$report" --methods "$methods" "$@"
