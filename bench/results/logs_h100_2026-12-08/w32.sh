#!/usr/bin/env bash
# window 32 (eighteenth session, 2026-12-08). Carry .prebuilt (both libraries built from HEAD for sm_90a).
# What changed: the one-block GEMM in clusters of two blocks sharing B by TMA multicast, released to the other block
# with a CTA-scope arrival (override 9, FP8ORT_GEMM_MULTICAST=on), and a 7-stage ring for it and one_block
# (FP8ORT_GEMM_STAGES=7, E4M3FN).
#  1. the GEMM kernel tests of both (multicast; one_block, auto and split K with 7 stages);
#  2. bench/gemm_fp8.py 4096^3 and 8192^3: one_block, multicast, fast accumulation, cuBLASLt; then 7 stages;
#  3. Nsight Compute at 4096^3: speed of light, memory tables and warp states of one_block, multicast, cuBLASLt.
# Results in $OUT/w32.tgz; LIMIT (s) stops starting runs that would not end in time. Model A/B: w33.sh.
W=w32; . bench/results/logs_next/window_lib.sh
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gemm.py -k multicast > $O/tests_multicast.log 2>&1
echo "multicast tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_multicast.log)"
grep -E "^FAILED|^ERROR|Error" $O/tests_multicast.log | head -5; pack
FP8ORT_GEMM_STAGES=7 timeout 90 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gemm.py \
  -k "multicast or sm90a_1block or auto or split_k" > $O/tests_stages7.log 2>&1
echo "7-stage tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_stages7.log)"
grep -E "^FAILED|^ERROR|Error" $O/tests_stages7.log | head -5; pack
timeout 60 python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096,8192 \
  --variants auto,multicast,fast,blaslt --json $O/gemm_fp8.json > $O/gemm_fp8.log 2>&1
echo "gemm bench rc=$? $(( $(date +%s) - t )) s"; gemm_rows $O/gemm_fp8.json; pack
FP8ORT_GEMM_STAGES=7 timeout 45 python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096,8192 \
  --variants auto,multicast --json $O/gemm_fp8_stages7.json > $O/gemm_fp8_stages7.log 2>&1
echo "gemm bench 7 stages rc=$? $(( $(date +%s) - t )) s"; gemm_rows $O/gemm_fp8_stages7.json; pack
left 100 && { timeout 100 ncu -k regex:"gemm_sm90_kernel|nvjet" --launch-count 8 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats \
    python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096 --iters 1 --warmup 0 \
    --variants auto,multicast > $O/ncu_gemm_memory.txt 2>&1
  echo "ncu rc=$? $(( $(date +%s) - t )) s"
  grep -E "^  void|^  nvjet|Duration|SM Busy|L2 Cache Throughput|Shared|Bank|L2 Hit" $O/ncu_gemm_memory.txt | cut -c1-130 | head -60
  gzip -f $O/ncu_gemm_memory.txt; pack; }
echo "end $(( $(date +%s) - t )) s"; pack
