#!/usr/bin/env bash
# window 26 (fifteenth session, 2026-12-07, after window 25's profile). Carry .prebuilt (lib.tar.xz: both libraries
# built from HEAD for sm_90a).
# Results under $OUT/w, packed to w26.tgz (A/B file names hold '='). LIMIT (s) stops starting runs that would not end
# in time.
#  1. the attention GPU-device EP tests (the float16 kernel with fewer instructions: branch-free masking, bias
#     templated, pairs of outputs per store, a 128-register budget; the FP8 check's bound made the contract's);
#  2. BERT-base batches 1 and 32: float16 Q/K/V (default warps), float32 Q/K/V, float16 with 4 and with 2 warps
#     per block forced (the default takes 1 at batch 1);
#  3. Nsight Compute times of the float16 attention kernel of BERT-base at batch 32.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
unset FP8ORT_ATTENTION_SPLIT FP8ORT_ATTENTION FP8ORT_ATTENTION_F16 FP8ORT_ATTENTION_F16_WARPS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt
t=$(date +%s); limit=${LIMIT:-300}
pack() { (cd $O && tar -czf $OUT/w26.tgz .); }
left() { [ $(( $(date +%s) - t + $1 )) -le $limit ]; }
timeout 240 python3 -m pytest -q -p no:cacheprovider -x tests/ep -k "gpu and attention" > $O/tests_attention.log 2>&1
echo "attention EP tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_attention.log)"
grep -E "^FAILED|^ERROR|Error|assert" $O/tests_attention.log | head -12; pack
F32='BENCH_CONFIG={"attention_float16": false}'
i=0
for pair in "BENCH_CONFIG={}" "$F32" FP8ORT_ATTENTION_F16_WARPS=4 FP8ORT_ATTENTION_F16_WARPS=2; do
  i=$((i + 1)); left 50 || break
  tag=$(echo "$pair" | tr -dc 'A-Za-z0-9_=')
  env "$pair" timeout 75 python3 bench/plugin_ep_gpu.py --models bert --systems fp8ort --runs 10 --batches 1 32 \
    --out $O/ab_${i}_bert_${tag}.json > $O/ab_${i}_bert_${tag}.log 2>&1
  echo "bert $pair rc=$? $(( $(date +%s) - t )) s"; grep -E "batch|SQNR|sqnr|rror" $O/ab_${i}_bert_${tag}.log | head -4; pack
done
for pair in "BENCH_CONFIG={}"; do
  left 50 || break
  tag=$(echo "$pair" | tr -dc 'A-Za-z0-9_=')
  env "$pair" timeout 60 ncu --profile-from-start off -k "regex:attention" --metrics gpu__time_duration.sum \
    python3 bench/profile_ep.py --model bert --batch 32 > $O/ncu_attention_${tag}.txt 2>&1
  echo "ncu attention $pair rc=$? $(( $(date +%s) - t )) s"
  grep -E "attention|gpu__time_duration" $O/ncu_attention_${tag}.txt | head -6; pack
done
echo "end $(( $(date +%s) - t )) s"; pack
