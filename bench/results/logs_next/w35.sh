#!/usr/bin/env bash
# window 35 (written in the eighteenth session, 2026-12-08; not yet run: the device lent no machine after window 34).
# Carry .prebuilt (both libraries built from HEAD for sm_90a; build them first, ~17 minutes on 2 cores).
# What changed since windows 32 and 34: the sm90a tile epilogues' staging stride BN + 8 instead of BN + 4 (no bank
# conflicts on the accumulators' float2 stores; every sm90a variant, default path); the multicast pairs and the
# 7-stage ring are out again; one_block's consumers in cuBLASLt's order (FP8ORT_GEMM_PACED=on, opt-in).
#  1. every GEMM and convolution kernel test (the staging is every sm90a variant's), then the GEMM tests of the
#     one-block kernel with the paced loop;
#  2. Nsight Compute of one_block at 4096^3: duration and the shared-store conflicts (window 32: 172.8 us, 524,288),
#     then the same with the paced loop;
#  3. bench/gemm_fp8.py 4096^3 and 8192^3, then one_block with the paced loop;
#  4. ResNet-50 and EfficientNet-B0 at batches 32 and 256 (window 34's ResNet-50 runs on the old stride for
#     reference), BERT-base batch 32 on our GEMM with the lagged and the paced loop.
# Two calls on one warm machine: PART=1 (items 1-3, ~380 s) then PART=2 (item 4, ~300 s); results in
# $OUT/w35_part1.tgz and $OUT/w35_part2.tgz.
#   PART=1 LIMIT=540 OUT=$OUT bash bench/results/logs_next/w35.sh; PART=2 LIMIT=540 OUT=$OUT bash ...
W=w35_part${PART:-1}; . bench/results/logs_next/window_lib.sh
if [ "${PART:-1}" = 1 ]; then
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gemm.py tests/gpu/test_conv.py > $O/tests.log 2>&1
echo "gemm+conv tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests.log)"
grep -E "^FAILED|^ERROR|Error" $O/tests.log | head -5; pack
left 60 && { timeout 60 ncu -k regex:"gemm_sm90_kernel" --launch-count 2 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis_Tables python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so \
    --sizes 4096 --iters 1 --warmup 0 --variants auto > $O/ncu_gemm.txt 2>&1
  echo "ncu rc=$? $(( $(date +%s) - t )) s"; grep -E "Duration|SM Frequency|bank conflicts|way bank" $O/ncu_gemm.txt | head -8
  pack; }
left 45 && { timeout 45 python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096,8192 \
    --variants auto,fast,blaslt --json $O/gemm_fp8.json > $O/gemm_fp8.log 2>&1
  echo "gemm bench rc=$? $(( $(date +%s) - t )) s"; gemm_rows $O/gemm_fp8.json; pack; }
FP8ORT_GEMM_PACED=on timeout 90 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gemm.py \
  -k "auto or sm90a_1block or split_k" > $O/tests_paced.log 2>&1
echo "paced GEMM tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_paced.log)"
grep -E "^FAILED|^ERROR|Error" $O/tests_paced.log | head -5; pack
left 45 && { FP8ORT_GEMM_PACED=on timeout 45 ncu -k regex:"gemm_sm90_kernel" --launch-count 2 --section SpeedOfLight \
    python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096 --iters 1 --warmup 0 --variants auto \
    > $O/ncu_gemm_paced.txt 2>&1; echo "ncu paced rc=$? $(( $(date +%s) - t )) s"; grep -E "Duration|SM Busy" $O/ncu_gemm_paced.txt
  pack; }
left 45 && { FP8ORT_GEMM_PACED=on timeout 45 python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so \
    --sizes 4096,8192 --variants auto --json $O/gemm_fp8_paced.json > $O/gemm_fp8_paced.log 2>&1
  echo "gemm bench paced rc=$? $(( $(date +%s) - t )) s"; gemm_rows $O/gemm_fp8_paced.json; pack; }
fi
if [ "${PART:-1}" = 2 ]; then
AB_TIMEOUT=75 ab resnet50 "32 256"
AB_TIMEOUT=75 ab efficientnet_b0 "32 256"
ab bert 32 FP8ORT_GEMM_BACKEND=ours
ab bert 32 FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_PACED=on
fi
echo "end $(( $(date +%s) - t )) s"; pack
