#!/usr/bin/env bash
# On the lent H200: build the kernel library (unless a prebuilt one is carried), check the SASS for the tensor-core
# instructions, run the GPU tests, one compute-sanitizer memcheck pass, and the FP8 GEMM benchmark.
# Usage (repo root): OUT=<dir> tests/gpu/run_on_h200.sh [tests|sanitize|bench|profile|all]...   (default: all)
# profile (not part of all): Nsight Compute on one launch of the sm90a GEMM at 8192^3 (after bench built it).
# Logs and bench/results/gemm_h200.json are copied to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-$root/build/h200_out}"
mkdir -p "$out"
steps=("$@")
[ "${#steps[@]}" -gt 0 ] || steps=(all)
want() { for s in "${steps[@]}"; do [ "$s" = all ] || [ "$s" = "$1" ] && return 0; done; return 1; }
status=0
lib=build/gpu_test/libfp8ort_kernels.so

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nvcc --version | tail -2; } 2>&1 | tee "$out/env.txt"
if [ ! -f "$lib" ] || [ -n "${FP8ORT_REBUILD:-}" ]; then
    start=$(date +%s)
    tests/gpu/build_kernels.sh 2>&1 | tee "$out/build.log" | grep -v "^ptxas info" || { echo "BUILD FAILED"; exit 1; }
    echo "build: $(( $(date +%s) - start )) s"
fi
# the tensor-core instructions actually in the binary: QGMMA = wgmma fp8 (sm90a), QMMA/HMMA = mma.sync
cuobjdump --dump-sass "$lib" > "$out/sass.txt" 2>/dev/null
echo "SASS: QGMMA=$(grep -c QGMMA "$out/sass.txt") QMMA=$(grep -c QMMA "$out/sass.txt") HMMA=$(grep -c HMMA "$out/sass.txt")" | tee -a "$out/env.txt"

# fp8ort_gemm_blaslt opens libcublasLt.so.13/.12 through the dynamic loader; where only the pip wheel has it, point
# the loader there, so that the tests exercise that route instead of skipping it
if ! ldconfig -p 2>/dev/null | grep -q 'libcublasLt\.so\.1[23]'; then
    for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s) for p in nvidia.__path__ for s in ("cu13/lib", "cublas/lib")))' 2>/dev/null); do
        if ls "$d"/libcublasLt.so.1[23] >/dev/null 2>&1; then
            export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            echo "cuBLASLt for fp8ort_gemm_blaslt: $d" | tee -a "$out/env.txt"
            break
        fi
    done
fi

if want tests; then
    # fp8_blaslt_api.h against the installed cublasLt.h (rc 2: no header here, not a failure)
    tests/gpu/check_blaslt_abi.sh 2>&1 | tee "$out/blaslt_abi.log"
    [ "${PIPESTATUS[0]}" = 1 ] && status=1
    rm -f "$out/test_stats.txt"
    FP8ORT_TEST_STATS="$out/test_stats.txt" python3 -m pytest tests/gpu -q -rs --durations=8 -p no:cacheprovider 2>&1 | tee "$out/pytest.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if want sanitize; then
    compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 python3 -m pytest tests/gpu -q -x \
        -p no:cacheprovider -k "convert and float16 and e4m3fn or gemm_shapes and (17x33 or 129x257 or 1x8x16) or conv and f32_relu and (n2h9 or n1h8 or n1h6 or n2h12) or gemm_blaslt and 129x272 or epilogue_apply and 37x1000 or gemm_shapes and sm90a_stream and 4100x1000" \
        2>&1 | tee "$out/memcheck.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if want bench; then
    inc=""
    libdir=""
    for d in /usr/local/cuda/include $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s) for p in nvidia.__path__ for s in ("cu13/include", "cublas/include")))' 2>/dev/null); do
        [ -f "$d/cublasLt.h" ] && inc="$d" && break
    done
    for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s) for p in nvidia.__path__ for s in ("cu13/lib", "cublas/lib")))' 2>/dev/null); do
        ls "$d"/libcublasLt.so* >/dev/null 2>&1 && libdir="$d" && break
    done
    echo "cublasLt: include=$inc lib=$libdir"
    ltlib="$(ls "$libdir"/libcublasLt.so* | head -1)"
    nvcc -std=c++17 -O2 -arch=sm_90 -I hip_kernels -I "$inc" bench/gemm_fp8.cu -o build/gemm_fp8_bench \
        -L build/gpu_test -lfp8ort_kernels "$ltlib" -Xlinker -rpath,"$root/build/gpu_test:$libdir" || status=1
    export FP8ORT_BENCH_COMMAND="tests/gpu/run_on_h200.sh bench (build/gemm_fp8_bench --sizes 4096,8192 --iters 30)"
    mkdir -p bench/results
    build/gemm_fp8_bench --sizes 4096,8192 --iters 30 --json bench/results/gemm_h200.json 2>&1 | tee "$out/bench.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    cp bench/results/gemm_h200.json "$out/" 2>/dev/null
    python3 bench/gemm_fp8.py --sizes 4096,8192 --json bench/results/gemm_h200_torch.json 2>&1 | tee "$out/bench_torch.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    cp bench/results/gemm_h200_torch.json "$out/" 2>/dev/null
fi
if printf '%s\n' "${steps[@]}" | grep -qx profile; then
    ncu --clock-control none --kernel-name regex:gemm_sm90 --launch-skip 3 --launch-count 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
        build/gemm_fp8_bench --sizes 8192 --iters 3 2>&1 | tee "$out/ncu.txt" | tail -80
fi
exit "$status"
