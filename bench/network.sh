#!/usr/bin/env bash
# Network benchmarks: several grid-trainer processes on loopback with shaped links.
# Writes bench/reports/network.md (blocking and overlapped rounds' utilization under a WAN
# profile at 20 s and 6 s rounds, network-aware vs naive rounds, 20% of trainers killed), its
# headline figures in network.json, and network_timeline.svg, network_aware.svg and
# network_kill.svg. `--quick` runs a few rounds of each (a smoke test of the script, not a
# measurement); `--only utilization|aware|kill` runs one part. `--only speed [--overlap 0,8]`
# runs the whole system's bar instead (4 trainers on the WAN profile against DDP on the same
# compute with a free link, time to a held-out loss; about an hour on 2 cores, 40 minutes
# without the reference, 6 minutes blocking only with `--ddp FILE --reference off`) and
# writes network_speed.md, .json and .svg (`--job-id N`: another seed; 12 unless given; `--lr`,
# `--outer-lr`: Grid's inner and outer learning rates, 0.005 and 3 unless given;
# `--outer-momentum M`: the outer step's Nesterov momentum, 0 unless given; `--outer-anneal
# R:LR`: the outer lr falling to LR over the job's last R rounds, 16:1 unless given (`off`:
# none); an
# in-process reference of the same job runs beside them, and the report says in how many
# rounds the daemon's model was the reference's to the bit; `--reference off` skips it;
# `--h N`: N inner steps a round, 100 unless given; `--k K`, `--bits B`, `--error-decay D`:
# top-k's values kept of 256, bits a value and its error feedback's decay, 32, 1 and 0.9
# unless given;
# `--dense-rounds N`: the job's first N rounds dense (int8, the model moved to the mean),
# 0 unless given; `--daemon off`:
# DDP and the reference only, the algorithm on the seed without the network, about 15
# minutes; `--ddp FILE`: DDP's curve from an earlier network_speed.json of the same job id,
# H and length instead of training it again).
# `--only bandwidth` runs the bandwidth-bound case instead (3 trainers exchanging updates the
# size of a 100M-parameter model's over the WAN profile, blocking and overlapped; about 20
# minutes on 2 cores) and writes network_bandwidth.md, .json and .svg.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
# Build the whole workspace's view of the trainer (features resolved as for the node) in the
# build environment `scripts/test.sh` uses, so nothing is rebuilt; GRID_BENCH_NO_BUILD=1 uses
# the binaries already there.
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked --workspace --bin grid-trainer --bin bench_net
fi
export BENCH_COMMAND="bench/network.sh $*"
"$CARGO_TARGET_DIR/release/bench_net" --out bench/reports "$@"
echo "wrote the report in bench/reports"
