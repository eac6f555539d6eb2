#!/usr/bin/env bash
# window 35 (eighteenth session, 2026-12-08). Carry .prebuilt (both libraries built from HEAD for sm_90a).
# What changed since windows 32 and 34: the sm90a tile epilogues' staging stride BN + 8 instead of BN + 4 (no bank
# conflicts on the accumulators' float2 stores); the multicast pairs and the 7-stage ring are out again.
#  1. every GEMM and convolution kernel test (the staging is every sm90a variant's);
#  2. Nsight Compute of one_block at 4096^3: duration and the shared-store conflicts (window 32: 172.8 us, 524,288);
#  3. bench/gemm_fp8.py 4096^3 and 8192^3;
#  4. ResNet-50 and EfficientNet-B0 at batches 32 and 256 (window 34's ResNet-50 runs on the old stride for reference).
# Results in $OUT/w35.tgz.
W=w35; . bench/results/logs_next/window_lib.sh
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
AB_TIMEOUT=75 ab resnet50 "32 256"
AB_TIMEOUT=75 ab efficientnet_b0 "32 256"
echo "end $(( $(date +%s) - t )) s"; pack
