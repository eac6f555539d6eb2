#!/usr/bin/env bash
# window 23 (prepared in the fourteenth session, 2026-12-07). Carry .prebuilt (lib.tar.xz: both libraries built from
# HEAD for sm_90a). Results under $OUT/w, packed to w23.tgz (A/B file names hold '='). LIMIT (s) stops starting runs
# that would not end in time.
#  1. the key split of FP8Attention as the default (a one-line flip after window 22): every attention GPU-device EP
#     test with FP8ORT_ATTENTION_SPLIT unset, then BERT-base batches 1 and 32 unset / off / unset;
#  2. Nsight Compute's source page (SASS lines with executed instructions and stall samples) of one Gelu -> FP8
#     epilogue pass of BERT-base at batch 32 (ncu names it `epilogue_apply_kernel<(int)17>`; window 22's regex
#     matched nothing) and of one float32 pass, for a Gelu of fewer instructions.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
unset FP8ORT_ATTENTION_SPLIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt
t=$(date +%s); limit=${LIMIT:-300}
pack() { (cd $O && tar -czf $OUT/w23.tgz .); }
left() { [ $(( $(date +%s) - t + $1 )) -le $limit ]; }
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/ep -k "gpu and attention" > $O/tests_attention.log 2>&1
echo "attention EP tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_attention.log)"
grep -E "^FAILED|^ERROR" $O/tests_attention.log | head -8; pack
i=0
for pair in FP8ORT_ATTENTION_SPLIT= FP8ORT_ATTENTION_SPLIT=off FP8ORT_ATTENTION_SPLIT=; do
  i=$((i + 1)); left 45 || break
  env $pair timeout 60 python3 bench/plugin_ep_gpu.py --models bert --systems fp8ort --runs 10 --batches 1 32 \
    --out $O/ab_${i}_bert_${pair}.json > $O/ab_${i}_bert_${pair}.log 2>&1
  echo "bert $pair rc=$? $(( $(date +%s) - t )) s"; grep -E "batch" $O/ab_${i}_bert_${pair}.log | head -2; pack
done
for k in 17 1; do
  left 60 || break
  timeout 60 ncu --profile-from-start off -k "regex:epilogue_apply_kernel<\\(int\\)$k>" --kernel-name-base demangled \
    -c 1 --set full --import-source yes -o $O/pass$k python3 bench/profile_ep.py --model bert --batch 32 \
    > $O/ncu_pass$k.log 2>&1
  echo "ncu pass $k rc=$? $(( $(date +%s) - t )) s"
  ncu -i $O/pass$k.ncu-rep --page details > $O/pass${k}_details.txt 2>&1
  ncu -i $O/pass$k.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip -9 > $O/pass${k}_source.csv.gz
  rm -f $O/pass$k.ncu-rep; pack
done
echo "end $(( $(date +%s) - t )) s"; pack
