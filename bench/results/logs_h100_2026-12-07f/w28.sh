#!/usr/bin/env bash
# window 28 (written in the sixteenth session, run in the seventeenth, 2026-12-07). Carry .prebuilt (lib.tar.xz:
# both libraries built from HEAD for sm_90a).
# Results under $OUT/w, packed to w28.tgz (A/B file names hold '='). LIMIT (s) stops starting runs that would not end
# in time.
#  1. GPU kernel tests of the streaming GEMM with one block per multiprocessor (override 8) and the one-block kernel;
#  2. bench/gemm_fp8.py 4096^3 and 8192^3: ours (one block per tile), streaming_long, fast accumulation, cuBLASLt;
#  2b. Nsight Compute sections (stalls, issue, occupancy) of each GEMM at 4096^3;
#  3. ResNet-50 with FP8ORT_GEMM_PERSISTENT off / on, BERT-base on our GEMM (FP8ORT_GEMM_BACKEND=ours) on / off
#     (batch 32), ResNet-50 off again;
#  4. Nsight Compute times of every kernel of BERT-base at batch 1 (default config).
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
unset FP8ORT_ATTENTION_SPLIT FP8ORT_ATTENTION FP8ORT_ATTENTION_F16 FP8ORT_GEMM_PERSISTENT FP8ORT_GEMM_BACKEND
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt; cat $O/env.txt
t=$(date +%s); limit=${LIMIT:-300}
pack() { (cd $O && tar -czf $OUT/w28.tgz .); }
left() { [ $(( $(date +%s) - t + $1 )) -le $limit ]; }
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gemm.py -k "stream_long or sm90a_1block or split_k" \
  > $O/tests_gemm.log 2>&1
echo "gemm tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_gemm.log)"
grep -E "^FAILED|^ERROR|Error" $O/tests_gemm.log | head -8; pack
timeout 80 python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096,8192 --json $O/gemm_fp8.json \
  > $O/gemm_fp8.log 2>&1
echo "gemm bench rc=$? $(( $(date +%s) - t )) s"; cut -c1-200 $O/gemm_fp8.log | grep -v "^$" | head -10; pack
# 2b. Nsight Compute of each GEMM at 4096^3 (ours, streaming_long, fast accumulation, cuBLASLt): stall reasons, issue
left 100 && { timeout 100 ncu -k regex:"gemm_sm90|nvjet" --launch-count 12 --section SpeedOfLight \
    --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section Occupancy \
    python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096 --iters 1 --warmup 0 \
    > $O/ncu_gemm4096.txt 2>&1; echo "ncu gemm rc=$? $(( $(date +%s) - t )) s"; pack; }
i=0
ab() {  # ab MODEL BATCHES ENV...: one A/B run, skipped when it would not end in time
  local model=$1 batches=$2; shift 2; i=$((i + 1)); left 60 || return 0
  local tag=$(echo "$*" | tr ' ' '_')
  env "$@" timeout 60 python3 bench/plugin_ep_gpu.py --models $model --systems fp8ort --runs 10 --batches $batches \
    --out $O/ab_${i}_${model}_${tag}.json > $O/ab_${i}_${model}_${tag}.log 2>&1
  echo "$model $* rc=$? $(( $(date +%s) - t )) s"; grep -E "batch|rror" $O/ab_${i}_${model}_${tag}.log | head -3; pack
}
ab resnet50 "32 256" FP8ORT_GEMM_PERSISTENT=off
ab resnet50 "32 256" FP8ORT_GEMM_PERSISTENT=on
ab bert 32 FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_PERSISTENT=on
ab bert 32 FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_PERSISTENT=off
ab resnet50 "32 256" FP8ORT_GEMM_PERSISTENT=off
left 100 && { timeout 100 ncu --profile-from-start off --metrics gpu__time_duration.sum --print-summary per-kernel \
    python3 bench/profile_ep.py --model bert --batch 1 > $O/ncu_bert1.txt 2>&1
  echo "ncu bert b1 rc=$? $(( $(date +%s) - t )) s"
  python3 tools/ncu_summary.py $O/ncu_bert1.txt > $O/ncu_bert1_summary.txt 2>&1; head -24 $O/ncu_bert1_summary.txt | cut -c1-180; pack; }
echo "end $(( $(date +%s) - t )) s"; pack
