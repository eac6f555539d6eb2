#!/usr/bin/env bash
# window 17 (written in the tenth session, reordered in the eleventh, 2026-12-07). Carry .prebuilt with lib.tar.xz
# (both libraries of the tree to test). In order of what each step is worth, packing after each: every kernel test
# with the defaults (the fast quads' default and the PDL chain test: first run on an H200), ResNet-50 (torchvision)
# FP8ORT_PDL off/on/off/on at batches 1, 32, 256 (graphs on and off: the bench prints both), the GPU-device EP tests
# with the defaults and with FP8ORT_PDL=on, racecheck of the fast-row, fast-quad and PDL tests (issue 14),
# EfficientNet-B0 (timm) FP8ORT_FAST_ROWS off/on/off/on, the kernel times (ncu) of ResNet-50 at batch 1 and BERT-base
# at batch 32.
# LIMIT (seconds, default 540) stops before a step that would not fit.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s); limit=${LIMIT:-540}
pack() { (cd $O && tar -czf $OUT/w17.tgz .); }
left() { [ $(( $(date +%s) - t + $1 )) -le $limit ]; }   # does a step of $1 seconds still fit?
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu > $O/kernel_tests.log 2>&1
echo "kernel tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/kernel_tests.log)"
grep -E "^FAILED|^ERROR" $O/kernel_tests.log | head -12; pack
ab() {  # ab <i> <model> <var> <value> <batches...>
  local i=$1 model=$2 var=$3 value=$4; shift 4
  env $var=$value timeout 75 python3 bench/plugin_ep_gpu.py --models $model --systems fp8ort --runs 10 \
    --batches "$@" --out $O/ab_${i}_${model}_$value.json > $O/ab_${i}_${model}_$value.log 2>&1
  echo "$model $var=$value rc=$? $(( $(date +%s) - t )) s"; grep -E "batch" $O/ab_${i}_${model}_$value.log | head -3
  pack
}
i=0
for v in off on off on; do i=$((i + 1)); left 60 && ab $i resnet50 FP8ORT_PDL $v 1 32 256; done
for pdl in off on; do
  left 60 || break
  FP8ORT_PDL=$pdl timeout 80 python3 -m pytest -q -p no:cacheprovider tests/ep -k gpu > $O/ep_tests_pdl_$pdl.log 2>&1
  echo "ep tests (pdl $pdl) rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/ep_tests_pdl_$pdl.log)"
  grep -E "^FAILED|^ERROR" $O/ep_tests_pdl_$pdl.log | head -8; pack
done
if left 100; then
  timeout 100 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 --print-limit 20 \
    python3 -m pytest -q -p no:cacheprovider tests/gpu -k "fast_rows or fast_quads or pdl" > $O/racecheck_fast.log 2>&1
  echo "racecheck rc=$? $(( $(date +%s) - t )) s"
  grep -E "RACECHECK SUMMARY|ERROR SUMMARY|passed|failed" $O/racecheck_fast.log | head -6; pack
fi
for v in off on off on; do i=$((i + 1)); left 45 && ab $i efficientnet_b0 FP8ORT_FAST_ROWS $v 32 256; done
# ResNet-50's kernels at batch 1 under Nsight Compute, serialized, at boost clocks with warm caches: their sum against
# the A/B's batch-1 time says how much of a batch-1 run is gaps between kernels
# the kernels of BERT-base at batch 32 (none profiled since FP8Attention, packed projections and cuBLASLt by default)
for prof in resnet50:NHWC:1 bert:NHWC:32; do
  left 80 && OUT=$O STEPS=profile PROFILES=$prof PROFILE_TIMEOUT=80 \
    NCU_ARGS="--clock-control none --cache-control none" bash tools/h200_plugin_ep.sh | tail -14; pack
done
echo "end $(( $(date +%s) - t )) s"; pack
