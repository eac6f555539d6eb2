#!/usr/bin/env bash
# window 19 (twelfth session, 2026-12-07). Carry .prebuilt (lib.tar.xz: the library with the tensor-core attention
# kernel behind FP8ORT_ATTENTION=tc; src.tar.xz: its Python side, extracted first). Every GPU-device EP test (the
# attention tests run both kernels, and the new infinite-input test), then BERT-base with FP8ORT_ATTENTION unset / tc
# / unset / tc and FP8ORT_GEMM_BACKEND auto / ours / auto / ours at batches 1 and 32, one process each.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt
t=$(date +%s); limit=${LIMIT:-540}
pack() { (cd $O && tar -czf $OUT/w19.tgz .); }
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ep -k gpu > $O/ep_tests.log 2>&1
echo "ep tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/ep_tests.log)"; grep -E "^FAILED|^ERROR" $O/ep_tests.log | head -12; pack
i=0
for pair in FP8ORT_ATTENTION=simt FP8ORT_ATTENTION=tc FP8ORT_ATTENTION=simt FP8ORT_ATTENTION=tc \
            FP8ORT_GEMM_BACKEND=auto FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_BACKEND=auto FP8ORT_GEMM_BACKEND=ours; do
  i=$((i + 1)); [ $(( $(date +%s) - t + 45 )) -gt $limit ] && break
  env $pair timeout 80 python3 bench/plugin_ep_gpu.py --models bert --systems fp8ort --runs 10 \
    --batches 1 32 --out $O/ab_${i}_${pair#*=}.json > $O/ab_${i}_${pair}.log 2>&1
  echo "bert $pair rc=$? $(( $(date +%s) - t )) s"; grep -E "batch" $O/ab_${i}_${pair}.log | head -2; pack
done
echo "end $(( $(date +%s) - t )) s"; pack
