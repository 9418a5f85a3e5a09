#!/usr/bin/env bash
# Assembles a CUDA 13.0 toolkit from NVIDIA's PyPI wheels, so that
# `grid-trainer --features cuda` builds on a machine without a GPU or an NVIDIA apt repository
# (the build machines here reach PyPI but not developer.download.nvidia.com).
#
# Why each part:
# - nvcc, crt, nvvm, cccl, cudart headers: candle-kernels compiles its .cu files at build time.
# - cublas, cublasLt, curand, nvrtc, cudart shared libraries: cudarc links them (candle turns on
#   its `dynamic-linking` feature). At run time the GPU machine's own libraries of the same major
#   version are used (see scripts/gpu-run.sh).
# - libcuda.so: the driver is not in any wheel, so a link stub is generated from the driver
#   functions cudarc declares; its soname is libcuda.so.1, so the real driver loads at run time.
#
# Usage: scripts/cuda-toolkit.sh [DIR]   (default $HOME/.cache/cuda-13.0); prints DIR.
# Then: export CUDA_HOME=DIR PATH=DIR/bin:$PATH CUDA_COMPUTE_CAP=90
set -euo pipefail

dir=${1:-$HOME/.cache/cuda-13.0}
if [[ -x $dir/bin/nvcc && -e $dir/stub/libcuda.so.1 ]]; then
    echo "$dir"
    exit 0
fi

python3 -m pip --version >/dev/null 2>&1 || {
    echo "cuda-toolkit: needs pip (apt-get install python3-pip)" >&2
    exit 1
}
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$wheels" \
    'nvidia-cuda-nvcc==13.0.*' 'nvidia-nvvm==13.0.*' 'nvidia-cuda-crt==13.0.*' \
    'nvidia-cuda-runtime==13.0.*' 'nvidia-cuda-cccl==13.0.*' 'nvidia-cublas==13.0.*' \
    'nvidia-cuda-nvrtc==13.0.*' 'nvidia-curand==10.4.*' >&2

unpacked=$wheels/unpacked
mkdir -p "$unpacked"
for w in "$wheels"/*.whl; do
    python3 -m zipfile -e "$w" "$unpacked" >/dev/null
done

rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
mv "$unpacked/nvidia/cu13" "$dir"
chmod +x "$dir"/bin/* "$dir"/nvvm/bin/* 2>/dev/null || true

# Unversioned names for the linker, in lib64 where cudarc and cudaforge look.
ln -sfn lib "$dir/lib64"
(
    cd "$dir/lib"
    for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libnvrtc.so.13; do
        ln -sf "$so" "${so%.so.*}.so"
    done
)

# The driver stub: every driver function cudarc may call, each answering
# CUDA_ERROR_NO_DEVICE (100). Linked against at build time; with `stub/` on LD_LIBRARY_PATH a
# CUDA build also runs on a machine without a GPU, as on one whose GPU is absent.
(cd "$(dirname "$0")/.." && cargo fetch --locked >&2)
registry=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.* | tail -1)
grep -hoE '^\s+fn cu[A-Za-z0-9_]+\(' "$registry/src/driver/sys/mod.rs" \
    | sed -E 's/^\s+fn (cu[A-Za-z0-9_]+)\(/int \1(void) { return 100; }/' | sort -u >"$wheels/cuda_stub.c"
mkdir -p "$dir/stub"
cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$dir/stub/libcuda.so.1" "$wheels/cuda_stub.c"
ln -sf ../stub/libcuda.so.1 "$dir/lib/libcuda.so"

"$dir/bin/nvcc" --version >&2
echo "$dir"
