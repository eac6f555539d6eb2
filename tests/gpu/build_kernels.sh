#!/usr/bin/env bash
# Build hip_kernels/*.hip into one shared library for the GPU tests and the benchmark (no ORT needed).
# NVIDIA: nvcc, sm_89 + sm_90a (wgmma kernel), plus hip_kernels/*.cc (cuBLASLt route).  AMD: hipcc for the GPU at
# hand (*.hip only; the .cc files are CUDA-only host code).
# Usage: tests/gpu/build_kernels.sh [outdir]   -> outdir/libfp8ort_kernels.so (default build/gpu_test)
# Env:   FP8ORT_GPU=cuda|hip (default: cuda when nvcc is on PATH), FP8ORT_CUDA_ARCHS (default "89 90a")
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/build/gpu_test}"
mkdir -p "$out/obj"
backend="${FP8ORT_GPU:-$(command -v nvcc >/dev/null && echo cuda || echo hip)}"
jobs="$(nproc 2>/dev/null || echo 4)"
if [ "$backend" = cuda ]; then
    gencode=()
    sm90a=()
    for a in ${FP8ORT_CUDA_ARCHS:-89 90a}; do
        gencode+=("-gencode=arch=compute_$a,code=sm_$a")
        [ "$a" = 90a ] && sm90a=(-DFP8ORT_BUILD_SM90A)
    done
    pids=()
    # *.cc: host code that needs the CUDA headers (fp8_blaslt.cc, which opens cuBLASLt at run time)
    for src in "$root"/hip_kernels/*.hip "$root"/hip_kernels/*.cc; do
        name="$(basename "$src")"
        nvcc -std=c++17 -O3 -lineinfo -x cu --threads 0 "${gencode[@]}" "${sm90a[@]}" -Xcompiler -fPIC,-fvisibility=hidden \
            -I "$root/hip_kernels" -c "$src" -o "$out/obj/${name%.*}.o" &
        pids+=($!)
        if [ "${#pids[@]}" -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
    done
    for p in "${pids[@]}"; do wait "$p"; done
    nvcc -shared "${gencode[@]}" -cudart shared -o "$out/libfp8ort_kernels.so" "$out"/obj/*.o -ldl
else
    hipcc -std=c++17 -O3 -fPIC -shared -fvisibility=hidden -I "$root/hip_kernels" \
        ${FP8ORT_HIP_ARCHS:+--offload-arch=$FP8ORT_HIP_ARCHS} -o "$out/libfp8ort_kernels.so" "$root"/hip_kernels/*.hip
fi
echo "built $out/libfp8ort_kernels.so ($backend)"
