#!/usr/bin/env bash
# window 2 (seventh session): correctness of the Z-ahead epilogue, the subsampling route, the word-load im2col and the
# E4M3FN max pool; then per-layer tables and the per-kernel profile of ResNet-50 at batch 256
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh > /dev/null
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s)
timeout 260 python3 -m pytest -q -p no:cacheprovider tests/gpu > $O/kernel_tests.log 2>&1
echo "kernel tests rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/kernel_tests.log)"; grep -E "^FAILED|^ERROR" $O/kernel_tests.log | head -12
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/ep -k "gpu and (max_pool or conv or resnet or Conv or MaxPool)" > $O/ep_subset.log 2>&1
echo "ep subset rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/ep_subset.log)"; grep -E "^FAILED|^ERROR" $O/ep_subset.log | head -12
for v in off on; do
  echo "stem7 c3 im2col=$v: $(FP8ORT_IM2COL=$v timeout 60 python3 bench/profile_conv.py --c 3 --m 64 --group 1 --k 7 --s 2 --hw 224 --calls 20 2>&1 | tail -2 | tr '\n' ' ')"
done | tee $O/stem.log
for v in off on; do
  echo "shortcut 256->512 s2 strided_1x1=$v: $(FP8ORT_STRIDED_1X1=$v timeout 60 python3 bench/profile_conv.py --c 256 --m 512 --group 1 --k 1 --s 2 --hw 56 --calls 20 2>&1 | tail -2 | tr '\n' ' ')"
done | tee -a $O/stem.log
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=layers LAYER_MODELS=resnet50 LAYERS_TIMEOUT=200 bash tools/h200_plugin_ep.sh | tail -2
OUT=$O STEPS=profile PROFILES="resnet50:NHWC:256" PROFILE_TIMEOUT=150 bash tools/h200_plugin_ep.sh | tail -14
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=dwprof DW_VAR=FP8ORT_Z_AHEAD DW_VARIANTS=on DW_SHAPES="64:56:1:1:256:1 3:224:7:2:64:1" DW_REGEX="im2col|gemm" DW_COUNT=1 PROFILE_TIMEOUT=90 bash tools/h200_plugin_ep.sh | tail -3
echo "t=$(( $(date +%s) - t )) s"
(cd $O && tar -czf $OUT/w2.tgz .)
