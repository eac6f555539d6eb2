#!/usr/bin/env bash
# window 18 (eleventh session, 2026-12-07; short: the device time left). Carry .prebuilt (lib.tar.xz: the library with
# PDL on by default; src.tar.xz: its Python side). Every GPU-device EP test with the defaults (the PDL default's
# first run), then BERT-base's GEMM backend at batches 1 and 32, auto (cuBLASLt + the epilogue pass) against ours
# (one kernel with the fused epilogue, now with the fast quads), auto / ours / auto / ours, one process each.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s); limit=${LIMIT:-230}
pack() { (cd $O && tar -czf $OUT/w18.tgz .); }
timeout 70 python3 -m pytest -q -p no:cacheprovider tests/ep -k gpu > $O/ep_tests.log 2>&1
echo "ep tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/ep_tests.log)"; grep -E "^FAILED|^ERROR" $O/ep_tests.log | head -8; pack
i=0
for v in auto ours auto ours; do
  i=$((i + 1)); [ $(( $(date +%s) - t + 40 )) -gt $limit ] && break
  FP8ORT_GEMM_BACKEND=$v timeout 60 python3 bench/plugin_ep_gpu.py --models bert --systems fp8ort --runs 10 \
    --batches 1 32 --out $O/ab_${i}_bert_$v.json > $O/ab_${i}_bert_$v.log 2>&1
  echo "bert FP8ORT_GEMM_BACKEND=$v rc=$? $(( $(date +%s) - t )) s"; grep -E "batch" $O/ab_${i}_bert_$v.log | head -2; pack
done
echo "end $(( $(date +%s) - t )) s"; pack
