#!/usr/bin/env bash
# Check hip_kernels/fp8_blaslt_api.h (fp8ort's hand-written cuBLASLt declarations) against a real cublasLt.h:
# compiles tests/gpu/check_blaslt_abi.cc, whose static_asserts compare every value, struct and signature.
# Usage: tests/gpu/check_blaslt_abi.sh [dir holding cublasLt.h]
#   default: $CUBLASLT_INCLUDE, /usr/local/cuda/include, then the pip wheels' nvidia/{cu13,cu12,cublas}/include
#   No header on this machine: python3 -m pip download --no-deps --only-binary=:all: nvidia-cublas -d /tmp/cublas,
#   unzip the wheel and pass its nvidia/cu13/include.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
candidates=("${1:-}" "${CUBLASLT_INCLUDE:-}" /usr/local/cuda/include)
py_dirs="$(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s, "include") for p in nvidia.__path__ for s in ("cu13", "cu12", "cublas")))' 2>/dev/null || true)"
inc=""
for d in "${candidates[@]}" $py_dirs; do
    [ -n "$d" ] && [ -f "$d/cublasLt.h" ] && inc="$d" && break
done
[ -n "$inc" ] || { echo "check_blaslt_abi: no cublasLt.h found (pass its folder)" >&2; exit 2; }
cuda_inc="${CUDA_HOME:-/usr/local/cuda}/include"   # library_types.h, cuda_runtime_api.h
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
${CXX:-c++} -std=c++17 -Wall -Wextra -I "$inc" -I "$cuda_inc" -I "$root/hip_kernels" \
    "$root/tests/gpu/check_blaslt_abi.cc" -o "$out/check_blaslt_abi"
"$out/check_blaslt_abi"
echo "check_blaslt_abi: ok ($inc/cublasLt.h)"
