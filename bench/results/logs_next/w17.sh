#!/usr/bin/env bash
# next window (written in the tenth session, 2026-12-07, when no device could be had; not yet run). Carry .prebuilt
# with lib.tar.xz (both libraries of the tree to test). In order of what each step is worth, packing after each:
# every kernel test with the defaults (the fast quads' default and the PDL chain test: first run), the GPU-device EP
# tests with the defaults and with FP8ORT_PDL=on, racecheck of the fast-row tests (issue 14), then the A/Bs:
# ResNet-50's kernel times at batch 1 (ncu), ResNet-50 (torchvision) FP8ORT_PDL off/on/off/on at batches 1, 32, 256
# (graphs on and off: the bench prints both), EfficientNet-B0 (timm) FP8ORT_FAST_ROWS off/on/off/on. LIMIT (seconds, default 520) stops before the next A/B run.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s); limit=${LIMIT:-520}
pack() { (cd $O && tar -czf $OUT/w17.tgz .); }
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu > $O/kernel_tests.log 2>&1
echo "kernel tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/kernel_tests.log)"
grep -E "^FAILED|^ERROR" $O/kernel_tests.log | head -12; pack
for pdl in off on; do
  FP8ORT_PDL=$pdl timeout 80 python3 -m pytest -q -p no:cacheprovider tests/ep -k gpu > $O/ep_tests_pdl_$pdl.log 2>&1
  echo "ep tests (pdl $pdl) rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/ep_tests_pdl_$pdl.log)"
  grep -E "^FAILED|^ERROR" $O/ep_tests_pdl_$pdl.log | head -8; pack
done
timeout 100 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 --print-limit 20 \
  python3 -m pytest -q -p no:cacheprovider tests/gpu -k "fast_rows or fast_quads or pdl" > $O/racecheck_fast.log 2>&1
echo "racecheck rc=$? $(( $(date +%s) - t )) s"
grep -E "RACECHECK SUMMARY|ERROR SUMMARY|passed|failed" $O/racecheck_fast.log | head -6; pack
# ResNet-50's kernels at batch 1 under Nsight Compute (serialized: their sum against the A/B's batch-1 time says how
# much of a batch-1 run is gaps between kernels, which is what FP8ORT_PDL can take)
# (boost clocks, caches kept: ncu's defaults lock the base clock and flush the caches before each kernel)
OUT=$O STEPS=profile PROFILES="resnet50:NHWC:1" PROFILE_TIMEOUT=120 NCU_ARGS="--clock-control none --cache-control none" \
  bash tools/h200_plugin_ep.sh | tail -14; pack
i=0
for run in resnet50:FP8ORT_PDL:off resnet50:FP8ORT_PDL:on resnet50:FP8ORT_PDL:off resnet50:FP8ORT_PDL:on \
           efficientnet_b0:FP8ORT_FAST_ROWS:off efficientnet_b0:FP8ORT_FAST_ROWS:on \
           efficientnet_b0:FP8ORT_FAST_ROWS:off efficientnet_b0:FP8ORT_FAST_ROWS:on; do
  [ $(( $(date +%s) - t )) -gt $limit ] && break
  IFS=: read -r model var value <<< "$run"; i=$((i + 1))
  batches="32 256"; [ $model = resnet50 ] && batches="1 32 256"
  env $var=$value timeout 90 python3 bench/plugin_ep_gpu.py --models $model --systems fp8ort --runs 10 \
    --batches $batches --out $O/ab_${i}_${model}_$value.json > $O/ab_${i}_${model}_$value.log 2>&1
  echo "$model $var=$value rc=$? $(( $(date +%s) - t )) s"; grep -E "batch" $O/ab_${i}_${model}_$value.log | head -3
  pack
done
pack
