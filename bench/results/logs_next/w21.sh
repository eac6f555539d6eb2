#!/usr/bin/env bash
# window 21 (thirteenth session, 2026-12-07). Carry .prebuilt (lib.tar.xz: both libraries built from HEAD for sm_90a).
# Most wanted first; LIMIT (s) stops starting runs that would not end in time; results under $OUT/w (packed to w21.tgz,
# since the A/B file names hold '=').
#  1. the scratch route of split K, no longer the default: the split-K kernel tests and the GEMM/conv EP tests with
#     FP8ORT_SPLIT_CLUSTER=off (the cluster route ran in window 19); the attention EP tests on the three attention
#     routes (vector, tensor-core at 168 registers and 3 blocks per SM, keys split over blocks; all new since window 19
#     but the vector kernel); the split-K kernel tests with clusters of up to 16 blocks and one k-tile per split;
#  2. ResNet-50 batch 1, split K in clusters (the default): FP8ORT_SPLIT_K_TILES 4 / 2 / 3, then reversed, and
#     clusters of up to 16 blocks (FP8ORT_SPLIT_CLUSTER_MAX=16, Hopper's non-portable size) with 4 and 2;
#  3. BERT-base batches 1 and 32: FP8ORT_ATTENTION simt / tc, FP8ORT_ATTENTION_SPLIT=on (the keys of small grids
#     split over blocks), FP8ORT_GEMM_BACKEND auto / ours (ours now splits K in clusters; the simt runs are the auto
#     backend; ours with FP8ORT_SPLIT_K_TILES=1: at batch 1 each projection has 6-24 output tiles of 128 x 128 and
#     6 or 24 k-tiles, so the fewest k-tiles per split decides how many blocks run), then reversed;
#  4. Nsight Compute: every kernel of BERT-base at batch 32 with the backend ours (per-kernel times: which GEMM
#     kernel each projection takes and what it costs against cuBLASLt's in the auto run), and the tensor-core
#     attention kernel's source counters (SASS lines with their warp-stall samples) for the next attempt at it.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt
t=$(date +%s); limit=${LIMIT:-555}
pack() { (cd $O && tar -czf $OUT/w21.tgz .); }
left() { [ $(( $(date +%s) - t + $1 )) -le $limit ]; }
FP8ORT_SPLIT_CLUSTER=off timeout 120 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gemm.py \
  tests/gpu/test_conv.py tests/ep -k "split_k or n1h7w7c512m512 or (gpu and (matmul or conv or attention))" \
  > $O/tests_scratch_route.log 2>&1
echo "split-K tests, scratch route, rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_scratch_route.log)"
grep -E "^FAILED|^ERROR" $O/tests_scratch_route.log | head -8; pack
FP8ORT_SPLIT_CLUSTER_MAX=16 FP8ORT_SPLIT_K_TILES=1 timeout 90 python3 -m pytest -q -p no:cacheprovider \
  tests/gpu/test_gemm.py tests/gpu/test_conv.py -k "split_k or n1h7w7c512m512" > $O/tests_cluster16.log 2>&1
echo "split-K tests, clusters of up to 16, rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_cluster16.log)"
grep -E "^FAILED|^ERROR" $O/tests_cluster16.log | head -8; pack
i=0
for run in resnet50:FP8ORT_SPLIT_K_TILES=4 resnet50:FP8ORT_SPLIT_K_TILES=2 resnet50:FP8ORT_SPLIT_K_TILES=3 \
           resnet50:FP8ORT_SPLIT_CLUSTER_MAX=16 resnet50:FP8ORT_SPLIT_CLUSTER_MAX=16,FP8ORT_SPLIT_K_TILES=2 \
           bert:FP8ORT_ATTENTION=simt bert:FP8ORT_ATTENTION=tc bert:FP8ORT_ATTENTION_SPLIT=on \
           bert:FP8ORT_GEMM_BACKEND=ours bert:FP8ORT_GEMM_BACKEND=ours,FP8ORT_SPLIT_K_TILES=1 \
           bert:FP8ORT_ATTENTION_SPLIT=on \
           resnet50:FP8ORT_SPLIT_K_TILES=3 resnet50:FP8ORT_SPLIT_K_TILES=2 resnet50:FP8ORT_SPLIT_K_TILES=4 \
           bert:FP8ORT_GEMM_BACKEND=ours bert:FP8ORT_ATTENTION=tc bert:FP8ORT_ATTENTION=simt; do
  i=$((i + 1)); left 40 || break
  model=${run%%:*}; pair=${run#*:}; batches="1 32"; [ $model = resnet50 ] && batches=1
  env ${pair//,/ } timeout 80 python3 bench/plugin_ep_gpu.py --models $model --systems fp8ort --runs 10 \
    --batches $batches --out $O/ab_${i}_${model}_${pair}.json > $O/ab_${i}_${model}_${pair}.log 2>&1
  echo "$model $pair rc=$? $(( $(date +%s) - t )) s"; grep -E "batch" $O/ab_${i}_${model}_${pair}.log | head -2; pack
done
for be in ours auto; do
  left 60 || break
  FP8ORT_GEMM_BACKEND=$be timeout 90 ncu --profile-from-start off --metrics gpu__time_duration.sum,launch__grid_size \
    python3 bench/profile_ep.py --model bert --batch 32 > $O/ncu_bert32_$be.txt 2>&1
  echo "ncu bert b32 $be rc=$? $(( $(date +%s) - t )) s"; pack
done
if left 90; then
  FP8ORT_ATTENTION=tc timeout 120 ncu --profile-from-start off -k regex:attention_tc -c 1 --set full \
    --import-source yes -o $O/tc python3 bench/profile_ep.py --model bert --batch 32 > $O/ncu_tc_source.log 2>&1
  echo "ncu tc source rc=$?"
  { ncu -i $O/tc.ncu-rep --page source --csv --print-source sass 2>/dev/null || ncu -i $O/tc.ncu-rep --page source \
    --csv; } | gzip -9 > $O/tc_source.csv.gz; rm -f $O/tc.ncu-rep; pack
fi
echo "end $(( $(date +%s) - t )) s"; pack
