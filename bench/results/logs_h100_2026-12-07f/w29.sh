#!/usr/bin/env bash
# window 29 (seventeenth session, 2026-12-07). Carry .prebuilt (lib.tar.xz: both libraries built from HEAD for sm_90a).
# Results under $OUT/w, packed to w29.tgz (A/B file names hold '='). LIMIT (s) stops starting runs that would not end
# in time. What changed since window 28: lagged promotion (k_tiles_lagged) in one_block and streaming_long, and
# every promoting k-tile's first wgmma with scale-d 0 (no zeroing of the partial sums).
#  1. every GPU kernel test (tests/gpu: GEMM variants, convolutions, conversions);
#  2. bench/gemm_fp8.py 4096^3 and 8192^3: ours (one_block), streaming_long, fast accumulation, our cuBLASLt route,
#     each against torch._scaled_mm in the same process;
#  3. Nsight Compute sections of one_block, cuBLASLt and streaming_long at 4096^3 (tensor pipe, stall reasons, the
#     hottest SASS lines);
#  4. BERT-base batch 1 and 32 on our GEMM (FP8ORT_GEMM_BACKEND=ours) / cuBLASLt (the default); ResNet-50; BERT-base
#     on streaming_long; Nsight Compute kernel times of BERT-base at batch 32 on our GEMM.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
unset FP8ORT_ATTENTION_SPLIT FP8ORT_ATTENTION FP8ORT_ATTENTION_F16 FP8ORT_GEMM_PERSISTENT FP8ORT_GEMM_BACKEND
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt; cat $O/env.txt
t=$(date +%s); limit=${LIMIT:-300}
pack() { (cd $O && tar -czf $OUT/w29.tgz .); }
left() { [ $(( $(date +%s) - t + $1 )) -le $limit ]; }
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu > $O/tests_gpu.log 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_gpu.log)"
grep -E "^FAILED|^ERROR|Error" $O/tests_gpu.log | head -8; pack
timeout 80 python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096,8192 --json $O/gemm_fp8.json \
  > $O/gemm_fp8.log 2>&1
echo "gemm bench rc=$? $(( $(date +%s) - t )) s"
python3 -c "
import json; d = json.load(open('$O/gemm_fp8.json'))
for r in d['results']: print(r['m'], r['ours_kernel'], r['ours_tflops'], 'vs', r['torch_scaled_mm_tflops'], r['ratio'], '%.1e' % r['relative_l2_diff'])"
pack
left 90 && { timeout 90 ncu -k regex:"gemm_sm90|nvjet" --launch-count 6 --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section ComputeWorkloadAnalysis --section SourceCounters \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
    python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096 --iters 1 --warmup 0 \
    > $O/ncu_gemm4096.txt 2>&1; echo "ncu gemm rc=$? $(( $(date +%s) - t )) s"
  grep -E "^  void|Duration|SM Busy|Issue Slots Busy" $O/ncu_gemm4096.txt | cut -c1-110; pack; }
i=0
ab() {  # ab MODEL BATCHES ENV...: one A/B run, skipped when it would not end in time
  local model=$1 batches=$2; shift 2; i=$((i + 1)); left 50 || return 0
  local tag=$(echo "$*" | tr ' ' '_')
  env "$@" timeout 50 python3 bench/plugin_ep_gpu.py --models $model --systems fp8ort --runs 10 --batches $batches \
    --out $O/ab_${i}_${model}_${tag}.json > $O/ab_${i}_${model}_${tag}.log 2>&1
  echo "$model $* rc=$? $(( $(date +%s) - t )) s"; grep -E "batch|rror" $O/ab_${i}_${model}_${tag}.log | head -3; pack
}
ab bert "1 32" FP8ORT_GEMM_BACKEND=ours
ab bert "1 32" FP8ORT_GEMM_BACKEND=auto
ab resnet50 "32 256" FP8ORT_GEMM_PERSISTENT=off
ab bert "1 32" FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_PERSISTENT=on
left 90 && { FP8ORT_GEMM_BACKEND=ours timeout 90 ncu --profile-from-start off --metrics gpu__time_duration.sum \
    --print-summary per-kernel python3 bench/profile_ep.py --model bert --batch 32 > $O/ncu_bert32_ours.txt 2>&1
  echo "ncu bert b32 ours rc=$? $(( $(date +%s) - t )) s"
  python3 tools/ncu_summary.py $O/ncu_bert32_ours.txt > $O/ncu_bert32_ours_summary.txt 2>&1
  head -16 $O/ncu_bert32_ours_summary.txt | cut -c1-160; pack; }
echo "end $(( $(date +%s) - t )) s"; pack
