#!/usr/bin/env bash
# The last of the five device calls (after four calls copied .ortgpu/part00..03 to /tmp/ortgpu, see
# ../shared/tools/ort-gpu-wheel.sh): install onnxruntime-gpu, build the kernel library and libfp8ort.so (CUDA, sm_90a)
# (CMake builds both from the same objects), then run the kernel tests, the CUDA-EP tests, the ResNet-50 benchmark, memcheck and the per-layer
# conv benchmark (ORT_ONLY=1: the CUDA-EP tests and the ResNet-50 benchmark only; FP8ORT_PREBUILT=<path>: use that
# libfp8ort.so instead of building one). Carry: .ortgpu/part04 .ortgpu/meta .ort_headers. Results:
# $OUT/h200_full.tgz, rewritten after every step.
set -uo pipefail
export PYTHONUNBUFFERED=1
o=/tmp/h200_full; rm -rf "$o"; mkdir -p "$o"
cp .ortgpu/part04 /tmp/ortgpu/ && bash .ortgpu/meta/install.sh > "$o/install.log" 2>&1 || { cat "$o/install.log"; exit 3; }
if ls .whl/*.whl >/dev/null 2>&1; then  # wheels the image lacks, if any
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 3
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$o/env.txt"
start=$(date +%s)
if [ "${ORT_ONLY:-0}" = 1 ]; then  # the CUDA-EP tests and the ResNet-50 benchmark only (a short device budget)
    (exit 9) & kpid=$!
else
    (exit 0) & kpid=$!  # the kernel test library comes from the CMake build below (FP8ORT_KERNEL_TEST_LIB)
fi
if [ -n "${FP8ORT_PREBUILT:-}" ]; then  # a libfp8ort.so built elsewhere (CUDA, sm_90a) and carried along
    mkdir -p build-gpu && cp "$FP8ORT_PREBUILT" build-gpu/libfp8ort.so > "$o/build.log" 2>&1
else
    { cmake -S . -B build-gpu -G Ninja -DFP8ORT_GPU=cuda -DFP8ORT_CUDA_ARCHS=90a -DFP8ORT_KERNEL_TEST_LIB=ON \
        -DFP8ORT_ORT_INCLUDE_DIR="$PWD/.ort_headers/include/onnxruntime" && cmake --build build-gpu; } > "$o/build.log" 2>&1
fi
brc=$?
wait $kpid; krc=$?
echo "builds: libfp8ort.so rc=$brc, kernel library rc=$krc, $(( $(date +%s) - start )) s"
[ $brc = 0 ] || { tail -30 "$o/build.log"; exit 4; }
snapshot() { tar czf "$OUT/h200_full.tgz" -C "$o" .; }  # after every step: a call cut at its time limit keeps the rest
# kernel tests use the image's own Python packages (torch); ORT's go after
if [ $krc = 0 ]; then
    PYTHONPATH=$PWD FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so FP8ORT_TEST_STATS="$o/test_stats.txt" timeout 150 python3 -m pytest tests/gpu -q -p no:cacheprovider \
        > "$o/kernel_tests.log" 2>&1; echo "kernel tests: $(tail -1 "$o/kernel_tests.log")"; snapshot
fi
(
    export PYTHONPATH=/tmp/ortsite:/tmp/site:$PWD FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so
    timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu_ort tests/test_models.py > "$o/gpu_ort.log" 2>&1
    echo "CUDA-EP tests: $(tail -1 "$o/gpu_ort.log")"; snapshot
    timeout "${BENCH_TIMEOUT:-300}" python3 bench/resnet50_gpu.py --runs 20 --out "$o/resnet50_gpu.json" > "$o/bench.log" 2>&1
    echo "resnet50_gpu.py rc=$?"; grep -E "^batch" "$o/bench.log"; snapshot
)
if [ $krc = 0 ]; then
    PYTHONPATH=$PWD FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 python3 -m pytest \
        tests/gpu -q -x -p no:cacheprovider -k "conv and auto and (n2h9 or n2h13 or n1h14 or n3h20 or n1h8 or n1h7w7c512) or gemm_shapes and auto and (129x257 or 17x33) or gemm_shapes and sm90a_stream and 4100x1000 or gemm_split_k and auto and 17x256" \
        > "$o/memcheck.log" 2>&1; echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|passed|failed' "$o/memcheck.log" | tail -2 | tr '\n' ' ')"
    snapshot
    PYTHONPATH=$PWD timeout "${LAYERS_TIMEOUT:-150}" python3 bench/conv_layers.py --lib build-gpu/libfp8ort_kernels.so --batch 256 32 1 --json "$o/conv_layers.json" \
        > "$o/conv_layers.log" 2>&1; grep "^batch" "$o/conv_layers.log"; snapshot
fi
