#!/usr/bin/env bash
# window 2 (eighth session): the epilogue's fast rows (FP8ORT_FAST_ROWS, four rows at a time without a branch) and
# the column constants loaded before the operands' wait. Every kernel test and every GPU-device EP test with the
# fast rows on (so every E4M3FN-output test of the sm90a kernels goes through them), then A/B on ResNet-50 (6364416's
# library, this tree's with the fast rows off and on: the early column constants, then the fast rows) and
# EfficientNet-B0 (fast rows off and on), one process per value
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh > /dev/null
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s)
FP8ORT_FAST_ROWS=on timeout 170 python3 -m pytest -q -p no:cacheprovider tests/gpu > $O/kernel_tests.log 2>&1
echo "kernel tests (fast rows on) rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/kernel_tests.log)"; grep -E "^FAILED|^ERROR" $O/kernel_tests.log | head -12
FP8ORT_FAST_ROWS=on timeout 100 python3 -m pytest -q -p no:cacheprovider tests/ep -k gpu > $O/ep_tests.log 2>&1
echo "ep tests (fast rows on) rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/ep_tests.log)"; grep -E "^FAILED|^ERROR" $O/ep_tests.log | head -8
mkdir -p /tmp/prevlib && tar -xJf .prebuilt/lib_prev.tar.xz -C /tmp/prevlib
i=0
for v in prev off on prev off on; do  # prev: 6364416's libfp8ort.so; off / on: this tree's, FP8ORT_FAST_ROWS off / on
  i=$((i + 1)); lib=$PWD/build-gpu/libfp8ort.so; [ $v = prev ] && lib=/tmp/prevlib/libfp8ort.so
  FP8ORT_LIBRARY=$lib FP8ORT_FAST_ROWS=$v timeout 70 python3 bench/plugin_ep_gpu.py --models resnet50 --systems fp8ort \
    --runs 10 --batches 32 256 --out $O/ab_resnet50_${i}_$v.json > $O/ab_resnet50_${i}_$v.log 2>&1
  grep -E "batch" $O/ab_resnet50_${i}_$v.log | sed "s/^/$v: /" | head -2
done
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=ab AB_TIMEOUT=60 AB_MODEL=efficientnet_b0 AB_BATCHES="32 256" AB_VAR=FP8ORT_FAST_ROWS AB_VALUES="off on off on" bash tools/h200_plugin_ep.sh | grep batch
echo "t=$(( $(date +%s) - t )) s"
(cd $O && tar -czf $OUT/w7.tgz .)
