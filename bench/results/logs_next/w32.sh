#!/usr/bin/env bash
# window 32 (written in the seventeenth session, 2026-12-07; not yet run). Carry .prebuilt (both libraries built from
# HEAD for sm_90a). Results in $OUT/w32.tgz; LIMIT (s) stops starting runs that would not end in time.
#  1. Nsight Compute's memory sections (shared-memory wavefronts and bank conflicts, L1/L2 traffic and hit rates) and
#     the speed of light of the one-block GEMM and cuBLASLt's promoting kernel at 4096^3, side by side;
#  2. Nsight Compute per launch of BERT-base at batch 32 on our GEMM (boost clocks, warm caches): each GEMM's time;
#  3. BERT-base batch 32 on our GEMM with the automatic variant / streaming (6) / two_blocks (5), cuBLASLt last.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -2
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
unset FP8ORT_GEMM_PERSISTENT FP8ORT_GEMM_BACKEND FP8ORT_GEMM_KERNEL
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt; cat $O/env.txt
t=$(date +%s); limit=${LIMIT:-300}
pack() { (cd $O && tar -czf $OUT/w32.tgz .); }
left() { [ $(( $(date +%s) - t + $1 )) -le $limit ]; }
timeout 90 ncu -k regex:"gemm_sm90_kernel|nvjet" --launch-count 3 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section MemoryWorkloadAnalysis_Tables --section MemoryWorkloadAnalysis_Chart \
  python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096 --iters 1 --warmup 0 \
  > $O/ncu_gemm_memory.txt 2>&1
echo "ncu memory rc=$? $(( $(date +%s) - t )) s"; grep -E "^  void|^  nvjet|Bank|L2 Hit|Shared" $O/ncu_gemm_memory.txt | cut -c1-120 | head -30; pack
left 90 && { FP8ORT_GEMM_BACKEND=ours timeout 90 ncu --profile-from-start off --cache-control none --clock-control none \
    --metrics gpu__time_duration.sum,launch__grid_size --csv python3 bench/profile_ep.py --model bert --batch 32 \
    > $O/ncu_bert32_launches.csv 2>&1; echo "ncu bert launches rc=$? $(( $(date +%s) - t )) s"; gzip -f $O/ncu_bert32_launches.csv; pack; }
i=0
ab() {  # ab MODEL BATCHES ENV...: one A/B run (export, quantize, time), skipped when it would not end in time
  local model=$1 batches=$2; shift 2; i=$((i + 1)); left 60 || return 0
  local tag=$(echo "$*" | tr ' ' '_')
  env "$@" timeout 60 python3 bench/plugin_ep_gpu.py --models $model --systems fp8ort --runs 10 --batches $batches \
    --out $O/ab_${i}_${model}_${tag}.json > $O/ab_${i}_${model}_${tag}.log 2>&1
  echo "$model $* rc=$? $(( $(date +%s) - t )) s"; grep -E "batch|rror" $O/ab_${i}_${model}_${tag}.log | head -3; pack
}
ab bert 32 FP8ORT_GEMM_BACKEND=ours
ab bert 32 FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_KERNEL=6
ab bert 32 FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_KERNEL=5
ab bert 32 FP8ORT_GEMM_BACKEND=auto
echo "end $(( $(date +%s) - t )) s"; pack
