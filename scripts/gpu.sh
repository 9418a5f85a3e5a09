#!/usr/bin/env bash
# GPU work in two halves, because the build machines have no GPU and the GPU machine has no
# Rust toolchain (and cannot download one):
#
#   scripts/gpu.sh build   on a build machine: makes a CUDA 13 toolkit from PyPI wheels
#                          (scripts/cuda-toolkit.sh), builds grid-trainer, the GPU benchmarks
#                          and the GPU tests with `--features cuda` for CUDA_COMPUTE_CAP
#                          (default 90, Hopper), runs the CUDA build's tests here against a
#                          stub driver (every GPU test must skip cleanly), then grid-node and
#                          gpu_job (the workspace build's, for bench/gpu_e2e.sh), and puts the
#                          binaries in .gpu/ and compressed in .gpu-carry/ (both git-ignored)
#                          in parts, since a run may carry 64 MiB with the working tree and
#                          all of them are more: cuda.tar.xz (grid-trainer, segment_devices,
#                          bench_algo), bench.tar.xz (bench_step, gpt_parity), tests.tar.xz
#                          (trainer/tests/gpu.rs) and chain.tar.xz (the node and the
#                          end-to-end driver). A run carries the parts its parts need:
#                          tests: cuda, tests; e2e: cuda, chain; segments, algo: cuda;
#                          parity, bench: bench. Carried with .gpu-carry, all four fit
#                          (about 50 MB in 2026-12).
#   scripts/gpu.sh run [PART...]
#                          on the GPU machine, from the repository root with .gpu-carry/
#                          beside it: the named parts (default all) side by side, each
#                          stopped after GPU_SECONDS (default 540) so that one device call
#                          holds them: tests (trainer/tests/gpu.rs on the GPU), parity
#                          (bench/gpu_parity.sh), e2e (bench/gpu_e2e.sh: GPU providers on a
#                          dev chain), segments (bench/segment_devices.sh: a GPU round's steps
#                          redone on the CPU), bench (bench/gpu_step.sh and a profile of the
#                          ~100M model's parts), algo (bench/algorithms.sh --gpu); E2E_ARGS go to
#                          gpu_job (e.g. "--rounds 2 --round-blocks 15"), ALGO_ARGS to bench_algo
#                          (later options win: --methods, --steps, --report). The GPU has
#                          room for all of them at once (2026-12-04 on an H200: tests,
#                          segments, e2e and algo together), its host's 16 cores less so:
#                          beside algo's fifteen runs the e2e providers sealed their rounds
#                          too slowly to be paid, so run e2e alone, and bench alone when its
#                          figures are to be reported.
#                          Reports and logs go to one archive, $OUT/results.tar.gz (a device
#                          call brings back at most 8 files), or to ./gpu-out without $OUT.
#   scripts/gpu.sh with CMD  on the GPU machine: CMD with the CUDA libraries on the path.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$0")/.."

# .gpu-carry/PART.tar.xz from .gpu/FILES.
pack() {
    local part=$1
    shift
    tar cf - "${@/#/.gpu/}" | xz -9 -T2 >".gpu-carry/$part.tar.xz"
}

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
    # The commit built (+dirty with changes), for reports made where there is no git.
    { git rev-parse --short HEAD && git diff --quiet HEAD -- || echo +dirty; } | tr -d '\n' >.gpu/COMMIT
    cp "$CARGO_TARGET_DIR"/release/{grid-trainer,bench_step,gpt_parity,segment_devices,bench_algo} .gpu/
    while read -r name exe; do
        cp "$exe" ".gpu/test-$name"
    done <<<"$tests"
    # Here the stub driver answers "no device": the CPU tests pass and the GPU ones skip.
    export LD_LIBRARY_PATH=$toolkit/stub:$toolkit/lib GRID_TRAINER_BIN=$PWD/.gpu/grid-trainer
    .gpu/test-grid_trainer -q
    rm .gpu/test-grid_trainer # the CPU tests: CI runs them; too large to carry
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
    du -sh .gpu/*
    rm -rf .gpu-carry && mkdir -p .gpu-carry
    strip --strip-all .gpu/*
    pack cuda grid-trainer segment_devices bench_algo COMMIT
    pack bench bench_step gpt_parity
    pack tests test-gpu
    pack chain grid-node gpu_job
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
    # Python's tarfile, since the GPU machine's image may lack xz.
    local part
    for part in .gpu-carry/*.tar.xz; do
        [[ -e .gpu/.unpacked-$(basename "$part") ]] && continue
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(filter="tar")' "$part"
        touch ".gpu/.unpacked-$(basename "$part")"
    done
    LD_LIBRARY_PATH=$(cuda_library_path)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH GRID_DATA_DIR=$PWD/data GRID_TRAINER_BIN=$PWD/.gpu/grid-trainer
}

# One part of `run`, its reports and logs in $1.
part() {
    local dir=$1 name=$2
    case $name in
    tests) .gpu/test-gpu --nocapture --test-threads 1 >"$dir/gpu_tests.log" 2>&1 ;;
    parity) GPT_PARITY=.gpu/gpt_parity REPORT=$dir/gpu_parity.md bench/gpu_parity.sh >"$dir/parity.log" 2>&1 ;;
    e2e)
        # Checkpoints and kept states on the repository's disk, not /tmp.
        mkdir -p .tmp
        TMPDIR=$PWD/.tmp GPU_JOB=.gpu/gpu_job GRID_NODE_BIN=$PWD/.gpu/grid-node \
            REPORT=$dir/gpu_e2e.md bench/gpu_e2e.sh ${E2E_ARGS:-} >"$dir/e2e.out" 2>&1
        ;;
    segments)
        SEGMENT_DEVICES=.gpu/segment_devices REPORT=$dir/segment_devices.md DEVICE=cuda \
            bench/segment_devices.sh >"$dir/segments.log" 2>&1
        ;;
    bench)
        BENCH_STEP=.gpu/bench_step REPORT=$dir/gpu_step.md bench/gpu_step.sh >"$dir/bench.log" 2>&1
        # Where the ~100M model's step goes, part by part.
        .gpu/bench_step --layers 12 --heads 12 --width 768 --context 512 --vocab 8192 --batch 16 \
            --steps 3 --warmup 2 --device cuda --profile 1 >"$dir/profile.txt" 2>&1
        ;;
    algo) BENCH_ALGO=.gpu/bench_algo bench/algorithms.sh --gpu --out "$dir" ${ALGO_ARGS:-} >"$dir/algorithms.log" 2>&1 ;;
    *)
        echo "unknown part $name (tests, parity, e2e, segments, bench, algo)" >&2
        return 2
        ;;
    esac
}

run() {
    setup
    local out=${OUT:-$PWD/gpu-out}
    local dir=$out/results
    mkdir -p "$dir"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$dir/gpu.txt"
    if ldd .gpu/grid-trainer | grep "not found"; then
        echo "libraries missing on this machine" >&2
        exit 1
    fi
    local parts=("$@") name start=$SECONDS
    [[ ${#parts[@]} -gt 0 ]] || parts=(tests parity e2e segments bench algo)
    local pids=()
    for name in "${parts[@]}"; do
        (
            rc=0
            timeout "${GPU_SECONDS:-540}" "$self" part "$dir" "$name" || rc=$?
            echo "$name: exit $rc after $((SECONDS - start)) s" | tee -a "$dir/status.txt"
            exit $rc
        ) &
        pids+=($!)
    done
    # The GPU's use and the host's memory every 5 s, to see what ran out.
    while sleep 5; do
        echo "$((SECONDS - start)) s, $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader), host $(free -m | awk '/^Mem/ {print $3}') MiB, disk $(df -m . | awk 'NR == 2 {print $3}') MiB"
    done >"$dir/load.log" &
    local load=$! status=0 pid
    for pid in "${pids[@]}"; do wait "$pid" || status=1; done
    kill "$load"
    tar czf "$out/results.tar.gz" -C "$out" results && rm -rf "$dir"
    echo "wrote $out/results.tar.gz"
    return $status
}

case "${1:-}" in
build) build ;;
run)
    shift
    run "$@"
    ;;
part)
    # Internal to `run`, whose setup the part's process inherits (unpacked, paths exported).
    shift
    part "$@"
    ;;
with)
    shift
    setup
    "$@"
    ;;
*)
    echo "usage: scripts/gpu.sh build|run [PART...]|with COMMAND..." >&2
    exit 2
    ;;
esac
