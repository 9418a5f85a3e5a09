#!/usr/bin/env bash
# GPU work in two halves, because the build machines have no GPU and the GPU machine has no
# Rust toolchain (and cannot download one):
#
#   scripts/gpu.sh build   on a build machine: makes a CUDA 13 toolkit from PyPI wheels
#                          (scripts/cuda-toolkit.sh), builds grid-trainer, bench_step and the
#                          trainer's test binaries with `--features cuda` for CUDA_COMPUTE_CAP
#                          (default 90, Hopper), runs the CUDA build's tests here against a
#                          stub driver (every GPU test must skip cleanly), then grid-node and
#                          gpu_job (the workspace build's, for bench/gpu_e2e.sh), and puts the
#                          binaries in .gpu/ and compressed in .gpu-carry/ (both git-ignored)
#                          in three parts, since all of them are over the 64 MiB a run may
#                          carry: cuda.tar.xz (grid-trainer and the GPU benchmarks), tests.tar.xz
#                          (the CUDA build's test binaries) and chain.tar.xz (the node and the
#                          end-to-end driver); a run carries the parts it needs.
#   scripts/gpu.sh run     on the GPU machine, from the repository root with .gpu/ beside it:
#                          the CUDA build's tests (unit tests and trainer/tests/gpu.rs) on the
#                          GPU (GPU_TESTS=0 skips them), bench/gpu_parity.sh (GPU_PARITY=0
#                          skips it), bench/segment_devices.sh (a GPU round's steps redone on
#                          the CPU; GPU_SEGMENTS=0 skips it), bench/gpu_e2e.sh (GPU providers
#                          on a dev chain; GPU_E2E=0 skips it), then bench/gpu_step.sh
#                          (GPU_BENCH=0 skips it) and a profile of the ~100M model's parts,
#                          and bench/algorithms.sh --gpu (DDP against DiLoCo and its codecs
#                          on a 19M-parameter GPT, 3 seeds; GPU_ALGO=0 skips it).
#                          Logs and the reports go to $OUT (or ./gpu-out).
#   scripts/gpu.sh with CMD  on the GPU machine: CMD with the CUDA libraries on the path.
set -euo pipefail
cd "$(dirname "$0")/.."

build() {
    local toolkit
    toolkit=$(scripts/cuda-toolkit.sh)
    export CUDA_HOME=$toolkit PATH=$toolkit/bin:$PATH CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90}
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/grid-target} SKIP_WASM_BUILD=1
    local cargo=(cargo --locked -q)
    "${cargo[@]}" build --release -p grid-trainer --features cuda --bin grid-trainer --bin bench_step \
        --bin gpt_parity --bin segment_devices --bin bench_algo
    local tests
    tests=$("${cargo[@]}" test --release -p grid-trainer --features cuda --lib --test gpu \
        --no-run --message-format=json |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])')
    rm -rf .gpu && mkdir -p .gpu
    cp "$CARGO_TARGET_DIR"/release/{grid-trainer,bench_step,gpt_parity,segment_devices,bench_algo} .gpu/
    while read -r name exe; do
        cp "$exe" ".gpu/test-$name"
    done <<<"$tests"
    strip --strip-debug .gpu/*
    # Here the stub driver answers "no device": the CPU tests pass and the GPU ones skip.
    export LD_LIBRARY_PATH=$toolkit/stub:$toolkit/lib GRID_TRAINER_BIN=$PWD/.gpu/grid-trainer
    .gpu/test-grid_trainer -q
    .gpu/test-gpu --nocapture >.gpu/skip.log 2>&1 || { cat .gpu/skip.log; exit 1; }
    if [[ $(grep -c "skipped: no GPU" .gpu/skip.log) -ne $(grep -oP 'running \K[0-9]+' .gpu/skip.log) ]]; then
        cat .gpu/skip.log
        echo "the GPU tests did not all skip without a GPU" >&2
        exit 1
    fi
    rm .gpu/skip.log
    # The node and the end-to-end driver as the workspace builds them (the node embeds its
    # runtime's wasm, which SKIP_WASM_BUILD above would leave out).
    (
        unset SKIP_WASM_BUILD
        source scripts/build-env.sh
        cargo build --release --locked -q --workspace --bin grid-node --bin gpu_job
    )
    cp "$CARGO_TARGET_DIR"/release/{grid-node,gpu_job} .gpu/
    strip --strip-debug .gpu/grid-node .gpu/gpu_job
    du -sh .gpu/*
    rm -rf .gpu-carry && mkdir -p .gpu-carry
    tar cf - .gpu/{grid-trainer,bench_step,gpt_parity,segment_devices,bench_algo} | xz -6 -T2 >.gpu-carry/cuda.tar.xz
    tar cf - .gpu/test-* | xz -6 -T2 >.gpu-carry/tests.tar.xz
    tar cf - .gpu/{grid-node,gpu_job} | xz -6 -T2 >.gpu-carry/chain.tar.xz
    du -sh .gpu-carry/*
}

# The CUDA 13 libraries on the GPU machine: its toolkit's and those of PyPI's nvidia wheels
# (which PyTorch brings).
cuda_library_path() {
    python3 - <<'EOF'
import glob, site, os
dirs = ["/usr/local/cuda/lib64"]
for s in site.getsitepackages():
    dirs += sorted({os.path.dirname(p) for p in glob.glob(s + "/nvidia/**/lib*.so*", recursive=True)})
print(":".join(d for d in dirs if os.path.isdir(d)))
EOF
}

# Unpacks the CUDA build if needed and puts its libraries on the path.
setup() {
    if [[ ! -x .gpu/grid-trainer ]]; then
        for part in .gpu-carry/*.tar.xz; do tar xJf "$part"; done
    fi
    LD_LIBRARY_PATH=$(cuda_library_path)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH GRID_DATA_DIR=$PWD/data GRID_TRAINER_BIN=$PWD/.gpu/grid-trainer
}

run() {
    setup
    local out=${OUT:-$PWD/gpu-out}
    mkdir -p "$out"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
    if ldd .gpu/grid-trainer | grep "not found"; then
        echo "libraries missing on this machine" >&2
        exit 1
    fi
    local status=0
    if [[ ${GPU_TESTS:-1} == 1 ]]; then
        .gpu/test-grid_trainer -q 2>&1 | tail -5 | tee "$out/test-lib.log" || status=1
        .gpu/test-gpu --nocapture --test-threads 1 2>&1 | tee "$out/test-gpu.log" || status=1
    fi
    if [[ ${GPU_PARITY:-1} == 1 ]]; then
        GPT_PARITY=.gpu/gpt_parity REPORT=$out/gpu_parity.md bench/gpu_parity.sh 2>&1 |
            tee "$out/parity.log" || status=1
    fi
    if [[ ${GPU_E2E:-1} == 1 ]]; then
        GPU_JOB=.gpu/gpu_job GRID_NODE_BIN=$PWD/.gpu/grid-node REPORT=$out/gpu_e2e.md \
            bench/gpu_e2e.sh || status=1
    fi
    if [[ ${GPU_SEGMENTS:-1} == 1 ]]; then
        SEGMENT_DEVICES=.gpu/segment_devices REPORT=$out/segment_devices.md DEVICE=cuda \
            bench/segment_devices.sh 2>&1 | tee "$out/segments.log" || status=1
    fi
    if [[ ${GPU_BENCH:-1} == 1 ]]; then
        BENCH_STEP=.gpu/bench_step REPORT=$out/gpu_step.md bench/gpu_step.sh 2>&1 |
            tee "$out/bench.log" || status=1
        # Where the ~100M model's step goes, part by part.
        .gpu/bench_step --layers 12 --heads 12 --width 768 --context 512 --vocab 8192 --batch 16 \
            --steps 3 --warmup 2 --device cuda --profile 1 2>&1 | tee "$out/profile.txt" || status=1
    fi
    if [[ ${GPU_ALGO:-1} == 1 ]]; then
        BENCH_ALGO=.gpu/bench_algo bench/algorithms.sh --gpu --out "$out" 2>&1 |
            tee "$out/algorithms.log" || status=1
    fi
    return $status
}

case "${1:-}" in
build) build ;;
run) run ;;
with)
    shift
    setup
    "$@"
    ;;
*)
    echo "usage: scripts/gpu.sh build|run|with COMMAND..." >&2
    exit 2
    ;;
esac
