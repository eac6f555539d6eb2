#!/usr/bin/env bash
# window 31 (seventeenth session, 2026-12-07). Carry .prebuilt (both libraries built from HEAD for sm_90a).
# What changed since window 29: the sm90a GEMM's wgmma descriptors are built once per tile from a warp-uniform
# warpgroup index and offset per stage (wgmma_k_tile), instead of rebuilt before every wgmma.
#  1. every GPU kernel test (tests/gpu);
#  2. bench/gemm_fp8.py 4096^3 and 8192^3 against torch._scaled_mm;
#  3. the SASS source profile of the one-block GEMM at 4096^3 (instructions per opcode, against window 30's);
#  4. BERT-base batch 32 on our GEMM with the automatic variant / two_blocks (5) / streaming (6), and on cuBLASLt;
#  5. Nsight Compute per launch of BERT-base at batch 32 on our GEMM (boost clocks, warm caches): each GEMM's time.
# Results in $OUT/w31.tgz; LIMIT (s) stops starting runs that would not end in time.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -2
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
unset FP8ORT_ATTENTION_SPLIT FP8ORT_ATTENTION FP8ORT_ATTENTION_F16 FP8ORT_GEMM_PERSISTENT FP8ORT_GEMM_BACKEND
unset FP8ORT_GEMM_KERNEL
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt; cat $O/env.txt
t=$(date +%s); limit=${LIMIT:-300}
pack() { (cd $O && tar -czf $OUT/w31.tgz .); }
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
left 40 && { timeout 40 ncu --kernel-name regex:gemm_sm90_kernel --launch-count 1 --section SourceCounters \
    --section WarpStateStats --section SpeedOfLight --page source --print-source sass --csv \
    python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096 --iters 1 --warmup 0 \
    > $O/sass_gemm_sm90_kernel.csv 2>&1; echo "sass rc=$? $(( $(date +%s) - t )) s"
  python3 tools/sass_summary.py $O/sass_gemm_sm90_kernel.csv --top 30 --executed $O/sass_gemm_sm90_kernel.tsv \
    > $O/sass_gemm_sm90_kernel.log 2>&1; head -14 $O/sass_gemm_sm90_kernel.log; gzip -f $O/sass_gemm_sm90_kernel.csv
  pack; }
i=0
ab() {  # ab MODEL BATCHES ENV...: one A/B run, skipped when it would not end in time
  local model=$1 batches=$2; shift 2; i=$((i + 1)); left 40 || return 0
  local tag=$(echo "$*" | tr ' ' '_')
  env "$@" timeout 40 python3 bench/plugin_ep_gpu.py --models $model --systems fp8ort --runs 10 --batches $batches \
    --out $O/ab_${i}_${model}_${tag}.json > $O/ab_${i}_${model}_${tag}.log 2>&1
  echo "$model $* rc=$? $(( $(date +%s) - t )) s"; grep -E "batch|rror" $O/ab_${i}_${model}_${tag}.log | head -3; pack
}
ab bert 32 FP8ORT_GEMM_BACKEND=ours
ab bert 32 FP8ORT_GEMM_BACKEND=auto
ab bert 32 FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_KERNEL=6
ab bert 32 FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_KERNEL=5
left 60 && { FP8ORT_GEMM_BACKEND=ours timeout 60 ncu --profile-from-start off --cache-control none --clock-control none \
    --metrics gpu__time_duration.sum,launch__grid_size --csv python3 bench/profile_ep.py --model bert --batch 32 \
    > $O/ncu_bert32_launches.csv 2>&1; echo "ncu bert launches rc=$? $(( $(date +%s) - t )) s"; gzip -f $O/ncu_bert32_launches.csv; pack; }
echo "end $(( $(date +%s) - t )) s"; pack
