#!/usr/bin/env bash
# On the lent H200 (device tool), after the four earlier calls of ../shared/tools/ort-gpu-wheel.sh copied
# parts 0-3 of onnxruntime-gpu to /tmp/ortgpu: install it, build libfp8ort.so with CUDA, run the CUDA-EP tests
# and the ResNet-50 benchmark. Carry: .ortgpu/part04 .ortgpu/meta .ort_headers .whl (pytest, ml_dtypes wheels).
set -uo pipefail
out=${OUT:-/tmp/fp8ort_out}
mkdir -p "$out"
cp .ortgpu/part04 /tmp/ortgpu/ && bash .ortgpu/meta/install.sh || exit 3
if ls .whl/*.whl >/dev/null 2>&1; then  # wheels the image lacks, if any
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 3
fi
export PYTHONPATH=/tmp/ortsite:/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DFP8ORT_GPU=cuda -DFP8ORT_CUDA_ARCHS=90a \
  -DFP8ORT_ORT_INCLUDE_DIR="$PWD/.ort_headers/include/onnxruntime" > "$out/build.log" 2>&1 &&
  cmake --build build-gpu >> "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 4; }
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so
python3 -m pytest -q -p no:cacheprovider tests/gpu_ort tests/test_models.py 2>&1 | tee "$out/gpu_ort.log" | tail -25
timeout "${BENCH_TIMEOUT:-300}" python3 bench/resnet50_gpu.py --runs 20 --out "$out/resnet50_gpu.json" 2>&1 |
  tee "$out/bench.log" | grep -v '^ ' | tail -30
