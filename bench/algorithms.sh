#!/usr/bin/env bash
# Algorithm benchmark: DDP vs DiLoCo with each compression, N participants simulated in one
# process on the byte-level GPT and Shakespeare, over several seeds, hyper-parameters chosen on
# a validation split and losses reported on a test split. Writes bench/reports/algorithms.md,
# algorithms.json and algorithms.svg. Extra arguments go to the binary (e.g. --seeds 1; later
# options win, so `--methods` and `--report` pick other methods and another report name).
#
# `bench/algorithms.sh --gpu [ARGS]` is the GPU mode, for a GPU machine through
# `scripts/gpu.sh with bench/algorithms.sh --gpu` (its `bench_algo` built with `--features cuda`
# by `scripts/gpu.sh build`; nothing is built there): a 19M-parameter GPT (6 layers, width
# 512, context 128), large enough that the tiled codec's dense vectors stop dominating its
# bytes, trained in bf16 on the GPU by every participant; writes algorithms_gpu.{md,json,svg}
# (under --out, $OUT on the GPU machine).
set -euo pipefail
# GRID_BENCH_NO_BUILD=1 uses the binary already in $CARGO_TARGET_DIR; BENCH_ALGO names another.
cd "$(dirname "$0")/.."
export BENCH_COMMAND="${BENCH_COMMAND:-bench/algorithms.sh $*}"
# The code measured, in the report: the checkout's commit (+dirty with changes), or on the
# GPU machine, which has no git, the one `scripts/gpu.sh build` recorded beside the binaries.
if commit=$(git rev-parse --short HEAD 2>/dev/null); then
	git diff --quiet HEAD -- 2>/dev/null || commit+="+dirty"
elif [ -f .gpu/COMMIT ]; then
	commit=$(cat .gpu/COMMIT)
fi
export BENCH_COMMIT="${BENCH_COMMIT:-${commit:-an unrecorded commit}}"
gpu=0
if [ "${1:-}" = "--gpu" ]; then
	gpu=1
	shift
fi
# The build environment only where something is built (the GPU machine has no Rust toolchain).
if [ "$gpu" = 0 ] && [ -f scripts/build-env.sh ]; then source scripts/build-env.sh; fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
if [ "$gpu" = 0 ] && [ -z "${GRID_BENCH_NO_BUILD:-}" ] && [ -z "${BENCH_ALGO:-}" ]; then
	cargo build --release --locked --workspace --bin bench_algo
fi
bench_algo="${BENCH_ALGO:-$CARGO_TARGET_DIR/release/bench_algo}"
[ "$gpu" = 1 ] && [ -z "${BENCH_ALGO:-}" ] && [ -x .gpu/bench_algo ] && bench_algo=.gpu/bench_algo
# Each run is single-threaded (one rayon thread); --jobs runs that many at once, one per core.
export RAYON_NUM_THREADS="${RAYON_NUM_THREADS:-1}"
if [ "$gpu" = 1 ]; then
	# DDP's lr tuned over two, DiLoCo at the inner lr of DDP's better one, each codec at the
	# outer step its CPU runs chose (f32: lr 1, momentum 0.5; top-k: 3; tiles: 2), H 30 as in
	# Templar's SparseLoCo runs. On an H200 (2026-12-04, 3 seeds, beside other GPU work) DDP
	# ended at test loss 1.549-1.570 at lr 0.001, 1.606-1.616 at 0.002, 1.925-2.456 at 0.004,
	# each lr's three seeds taking about 85 s at --jobs 3 with the GPU 30% busy: the runs are
	# bound by kernel launches, so every (method, seed) runs at once (--jobs 15, one per core).
	methods="ddp@lr=0.0005,ddp@lr=0.001"
	methods+=",none@lr=0.001/olr=1/mom=0.5"
	methods+=",topk:256:32:1@lr=0.001/olr=3,tiles:64@lr=0.001/olr=2"
	"$bench_algo" --out bench/reports --report algorithms_gpu --device cuda \
		--layers 6 --heads 8 --width 512 --context 128 --vocab 256 --batch 8 \
		--steps 960 --inner 30 --seeds 3 --jobs 15 --methods "$methods" "$@"
	echo "wrote the GPU report (algorithms_gpu .md, .json and .svg)"
	exit 0
fi
# Variants of one method compete on validation loss (the report lists them all). DDP's
# learning rate and DiLoCo's inner and outer settings are tuned the same way; top-k's outer
# step (lr 2, no momentum: error feedback accumulates like momentum) and decay 0.9 are the
# job defaults' counterparts.
methods="ddp@lr=0.006,ddp@lr=0.01,ddp@lr=0.02"
methods+=",none@lr=0.006/olr=1/mom=0.5,none@lr=0.01/olr=1/mom=0.5"
methods+=",int8@lr=0.006/olr=1/mom=0.5"
methods+=",topk:256:32:1@lr=0.006,topk:256:32:1@lr=0.006/h=100,topk:4096:16:1@lr=0.006/h=100"
methods+=",tiles:64@lr=0.006,tiles:256@lr=0.006,tiles:1024@lr=0.006"
"$bench_algo" --out bench/reports --seeds 3 --jobs "$(nproc)" \
	--methods "$methods" "$@"
echo "wrote the report (.md, .json and .svg) in bench/reports"
