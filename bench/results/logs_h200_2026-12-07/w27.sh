#!/usr/bin/env bash
# window 27 (sixteenth session, 2026-12-07). Carry .prebuilt (lib.tar.xz: both libraries built from HEAD for sm_90a).
# Results under $OUT/w, packed to w27.tgz (A/B file names hold '='). LIMIT (s) stops starting runs that would not end
# in time.
#  1. bench/blaslt_epilogue_probe.py with float32 promotion asked for (the first run left cuBLASLt's default);
#  2. GPU kernel tests of the GEMM in pairs of blocks sharing B by TMA multicast (override 8) and the one-block kernel;
#  3. the attention GPU-device EP tests (only the 4-warp float16 kernel is built now);
#  4. bench/gemm_fp8.py 4096^3 and 8192^3: ours, multicast, fast accumulation, cuBLASLt;
#  5. Nsight Compute of the GEMM at 4096^3 (ours, multicast, cuBLASLt through torch._scaled_mm): speed of light,
#     L2 / DRAM traffic, warp stalls;
#  6. ResNet-50 and BERT-base (FP8ORT_GEMM_BACKEND=ours) with FP8ORT_GEMM_MULTICAST off / on / off;
#  7. BERT-base default config batches 1 and 32, and Nsight Compute times of every kernel at batch 1.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
unset FP8ORT_ATTENTION_SPLIT FP8ORT_ATTENTION FP8ORT_ATTENTION_F16 FP8ORT_GEMM_MULTICAST FP8ORT_GEMM_BACKEND
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt; cat $O/env.txt
t=$(date +%s); limit=${LIMIT:-300}
pack() { (cd $O && tar -czf $OUT/w27.tgz .); }
left() { [ $(( $(date +%s) - t + $1 )) -le $limit ]; }
timeout 60 python3 bench/blaslt_epilogue_probe.py --iters 20 --json $O/blaslt_probe.json > $O/blaslt_probe.log 2>&1
echo "probe rc=$? $(( $(date +%s) - t )) s: $(grep -c '"ran"' $O/blaslt_probe.log) ran, $(grep -c 'status 15' $O/blaslt_probe.log) refused"
grep '"ran"' $O/blaslt_probe.log | head -3 | cut -c1-200; pack
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gemm.py -k "multicast or sm90a_1block or split_k" \
  > $O/tests_gemm.log 2>&1
echo "gemm tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_gemm.log)"
grep -E "^FAILED|^ERROR|Error" $O/tests_gemm.log | head -8; pack
timeout 150 python3 -m pytest -q -p no:cacheprovider -x tests/ep -k "gpu and attention" > $O/tests_attention.log 2>&1
echo "attention EP tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_attention.log)"
grep -E "^FAILED|^ERROR|Error|assert" $O/tests_attention.log | head -8; pack
timeout 60 python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096,8192 --json $O/gemm_fp8.json \
  > $O/gemm_fp8.log 2>&1
echo "gemm bench rc=$? $(( $(date +%s) - t )) s"; cut -c1-260 $O/gemm_fp8.log | grep -v "^$" | head -10; pack
left 60 && { timeout 60 ncu --kernel-name regex:'gemm|nvjet|sm90|xmma|cutlass' --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy \
    python3 bench/profile_gemm.py --lib build-gpu/libfp8ort_kernels.so --size 4096 --overrides 4,8 \
    > $O/ncu_gemm4096.txt 2>&1
  echo "ncu gemm rc=$? $(( $(date +%s) - t )) s"
  grep -E "^  [a-zA-Z_]|ours:|Duration|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Compute \(SM\)|Stall Long|Stall Barrier|Stall Wait|Warp Cycles Per Issued" \
    $O/ncu_gemm4096.txt | head -60 | cut -c1-150; pack; }
i=0
for pair in FP8ORT_GEMM_MULTICAST=off FP8ORT_GEMM_MULTICAST=on FP8ORT_GEMM_MULTICAST=off; do
  i=$((i + 1)); left 70 || break
  env "$pair" timeout 70 python3 bench/plugin_ep_gpu.py --models resnet50 --systems fp8ort --runs 10 --batches 32 256 \
    --out $O/ab_${i}_resnet50_${pair}.json > $O/ab_${i}_resnet50_${pair}.log 2>&1
  echo "resnet50 $pair rc=$? $(( $(date +%s) - t )) s"; grep -E "batch|rror" $O/ab_${i}_resnet50_${pair}.log | head -3; pack
done
for pair in FP8ORT_GEMM_MULTICAST=off FP8ORT_GEMM_MULTICAST=on; do
  i=$((i + 1)); left 60 || break
  env FP8ORT_GEMM_BACKEND=ours "$pair" timeout 60 python3 bench/plugin_ep_gpu.py --models bert --systems fp8ort --runs 10 \
    --batches 32 --out $O/ab_${i}_bert_ours_${pair}.json > $O/ab_${i}_bert_ours_${pair}.log 2>&1
  echo "bert ours $pair rc=$? $(( $(date +%s) - t )) s"; grep -E "batch|rror" $O/ab_${i}_bert_ours_${pair}.log | head -3; pack
done
left 60 && { timeout 60 python3 bench/plugin_ep_gpu.py --models bert --systems fp8ort --runs 10 --batches 1 32 \
    --out $O/ab_bert_default.json > $O/ab_bert_default.log 2>&1
  echo "bert default rc=$? $(( $(date +%s) - t )) s"; grep -E "batch|SQNR|sqnr|rror" $O/ab_bert_default.log | head -4; pack; }
left 45 && { timeout 45 ncu --profile-from-start off --metrics gpu__time_duration.sum --print-summary per-kernel \
    python3 bench/profile_ep.py --model bert --batch 1 > $O/ncu_bert1.txt 2>&1
  echo "ncu bert b1 rc=$? $(( $(date +%s) - t )) s"
  python3 tools/ncu_summary.py $O/ncu_bert1.txt > $O/ncu_bert1_summary.txt 2>&1; head -24 $O/ncu_bert1_summary.txt | cut -c1-180; pack; }
echo "end $(( $(date +%s) - t )) s"; pack
