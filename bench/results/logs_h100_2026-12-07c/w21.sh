#!/usr/bin/env bash
# window 21 (fourteenth session, 2026-12-07; prepared in the thirteenth). Carry .prebuilt (lib.tar.xz: both libraries
# built from HEAD for sm_90a). Most wanted first; LIMIT (s) stops starting runs that would not end in time; results
# under $OUT/w (packed to w21.tgz, since the A/B file names hold '=').
#  1. tests: the cuBLASLt route with the library's own epilogue (new: float32 Y = scales, bias and Z inside
#     cuBLASLt, no pass) and the EP's MatMul/Conv/attention GPU tests with split K's scratch route
#     (FP8ORT_SPLIT_CLUSTER=off; clusters are the default); the split-K kernel tests with clusters of up to 16 blocks
#     and one k-tile per split;
#  2. BERT-base batches 1 and 32: FP8ORT_BLASLT_EPILOGUE off / on (the 36 float-output epilogue passes of batch 32,
#     0.64 ms in the 12-07 profile, removed), FP8ORT_GEMM_BACKEND=mixed (cuBLASLt only where it applies the whole
#     epilogue: FFN1's Gelu -> FP8 on our GEMM, its epilogue in the tiles), FP8ORT_ATTENTION_SPLIT=on (the keys of small grids split over blocks),
#     FP8ORT_GEMM_BACKEND=ours (ours splits K in clusters now), ResNet-50 batch 1 FP8ORT_SPLIT_K_TILES 4 / 2 and
#     clusters of up to 16 with 2, the tensor-core attention;
#  3. Nsight Compute: every kernel of BERT-base at batch 32 with the backend ours and auto (time, grid, registers,
#     instructions, DRAM bytes: which GEMM kernel each projection takes and what it costs against cuBLASLt's);
#  4. the reversed A/Bs.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt
t=$(date +%s); limit=${LIMIT:-555}
pack() { (cd $O && tar -czf $OUT/w21.tgz .); }
left() { [ $(( $(date +%s) - t + $1 )) -le $limit ]; }
timeout 90 python3 -m pytest -q -p no:cacheprovider -s tests/gpu/test_gemm.py -k "blaslt" > $O/tests_blaslt.log 2>&1
echo "cuBLASLt route tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_blaslt.log)"
grep -E "^FAILED|^ERROR|library epilogue|epilogue pass" $O/tests_blaslt.log | sort | uniq -c | head -12; pack
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
for run in bert:FP8ORT_BLASLT_EPILOGUE=off bert:FP8ORT_BLASLT_EPILOGUE=on bert:FP8ORT_GEMM_BACKEND=mixed \
           bert:FP8ORT_ATTENTION_SPLIT=on \
           bert:FP8ORT_GEMM_BACKEND=ours bert:FP8ORT_GEMM_BACKEND=ours,FP8ORT_GEMM_KERNEL=6 \
           bert:FP8ORT_GEMM_BACKEND=ours,FP8ORT_GEMM_KERNEL=5 resnet50:FP8ORT_SPLIT_K_TILES=4 resnet50:FP8ORT_SPLIT_K_TILES=2 \
           resnet50:FP8ORT_SPLIT_CLUSTER_MAX=16,FP8ORT_SPLIT_K_TILES=2 bert:FP8ORT_ATTENTION=tc \
           ncu bert:FP8ORT_BLASLT_EPILOGUE=on bert:FP8ORT_BLASLT_EPILOGUE=off bert:FP8ORT_GEMM_BACKEND=mixed \
           bert:FP8ORT_ATTENTION_SPLIT=on \
           resnet50:FP8ORT_SPLIT_K_TILES=2 resnet50:FP8ORT_SPLIT_K_TILES=4 \
           bert:FP8ORT_GEMM_BACKEND=ours,FP8ORT_SPLIT_K_TILES=1; do
  if [ $run = ncu ]; then
    for be in auto ours; do
      left 100 || break
      FP8ORT_GEMM_BACKEND=$be timeout 90 ncu --profile-from-start off --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,smsp__inst_executed.sum,dram__bytes.sum \
        python3 bench/profile_ep.py --model bert --batch 32 > $O/ncu_bert32_$be.txt 2>&1
      echo "ncu bert b32 $be rc=$? $(( $(date +%s) - t )) s"; pack
    done
    continue
  fi
  i=$((i + 1)); left 40 || break
  model=${run%%:*}; pair=${run#*:}; batches="1 32"; [ $model = resnet50 ] && batches=1
  env ${pair//,/ } timeout 80 python3 bench/plugin_ep_gpu.py --models $model --systems fp8ort --runs 10 \
    --batches $batches --out $O/ab_${i}_${model}_${pair}.json > $O/ab_${i}_${model}_${pair}.log 2>&1
  echo "$model $pair rc=$? $(( $(date +%s) - t )) s"; grep -E "batch" $O/ab_${i}_${model}_${pair}.log | head -2; pack
done
echo "end $(( $(date +%s) - t )) s"; pack
