#!/usr/bin/env bash
# window 19 (twelfth session, 2026-12-07). Carry .prebuilt (lib.tar.xz: the library with the tensor-core attention
# kernel behind FP8ORT_ATTENTION=tc and the FP8ORT_SPLIT_K_TILES knob; src.tar.xz: its Python side, extracted first).
# The GPU-device EP attention tests (both kernels, and the infinite-input test; EP_K picks others), then one process
# per run, most wanted first (LIMIT, in s, stops starting runs that would not end in time): BERT-base (batches 1, 32)
# with FP8ORT_ATTENTION simt / tc; the split-K kernel tests with FP8ORT_SPLIT_CLUSTER=on; ResNet-50 (batch 1) with
# FP8ORT_SPLIT_CLUSTER off / on, then FP8ORT_SPLIT_K_TILES=2 (the off run is the default 4); then the same runs in
# reverse order; BERT-base with FP8ORT_GEMM_BACKEND ours / auto / ours (the simt runs are auto). W19_CLUSTER=0 skips
# the cluster runs.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt
t=$(date +%s); limit=${LIMIT:-555}
pack() { (cd $O && tar -czf $OUT/w19.tgz .); }
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/ep -k "${EP_K:-gpu and attention}" > $O/ep_tests.log 2>&1
echo "ep tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/ep_tests.log)"; grep -E "^FAILED|^ERROR" $O/ep_tests.log | head -12; pack
i=0
runs="bert:FP8ORT_ATTENTION=simt bert:FP8ORT_ATTENTION=tc"
if [ "${W19_CLUSTER:-1}" = 1 ]; then  # split K in clusters: the GEMM/conv EP tests with it on, then ResNet-50 batch 1
  FP8ORT_SPLIT_CLUSTER=on timeout 90 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gemm.py \
    tests/gpu/test_conv.py -k "split_k or n1h7w7c512m512" > $O/kernel_tests_cluster.log 2>&1
  echo "split-K kernel tests in clusters rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/kernel_tests_cluster.log)"
  grep -E "^FAILED|^ERROR" $O/kernel_tests_cluster.log | head -8; pack
  runs="$runs resnet50:FP8ORT_SPLIT_CLUSTER=off resnet50:FP8ORT_SPLIT_CLUSTER=on"
fi
# then the second half of each A/B (order: the machine's drift shows), the split size, the GEMM backend
for run in $runs resnet50:FP8ORT_SPLIT_K_TILES=2 bert:FP8ORT_ATTENTION=tc bert:FP8ORT_ATTENTION=simt \
           resnet50:FP8ORT_SPLIT_CLUSTER=on resnet50:FP8ORT_SPLIT_CLUSTER=off resnet50:FP8ORT_SPLIT_K_TILES=2 \
           bert:FP8ORT_GEMM_BACKEND=ours bert:FP8ORT_GEMM_BACKEND=auto bert:FP8ORT_GEMM_BACKEND=ours; do
  i=$((i + 1)); [ $(( $(date +%s) - t + 40 )) -gt $limit ] && break
  model=${run%%:*}; pair=${run#*:}; batches="1 32"; [ $model = resnet50 ] && batches=1
  env $pair timeout 80 python3 bench/plugin_ep_gpu.py --models $model --systems fp8ort --runs 10 \
    --batches $batches --out $O/ab_${i}_${model}_${pair}.json > $O/ab_${i}_${model}_${pair}.log 2>&1
  echo "$model $pair rc=$? $(( $(date +%s) - t )) s"; grep -E "batch" $O/ab_${i}_${model}_${pair}.log | head -2; pack
done
echo "end $(( $(date +%s) - t )) s"; pack
