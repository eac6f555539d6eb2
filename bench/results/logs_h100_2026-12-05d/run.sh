#!/usr/bin/env bash
# window 1 (seventh session): the per-pixel im2col kernel's first run, the stem alone, ResNet-50's kernels and layers
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh > /dev/null
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s)
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_conv.py -k "im2col or padded_in_c" > $O/kt.log 2>&1
echo "kernel tests rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/kt.log)"; grep -E "^FAILED|Error|assert" $O/kt.log | head -12
for v in off on; do
  echo "stem7 c3 im2col=$v: $(FP8ORT_IM2COL=$v timeout 60 python3 bench/profile_conv.py --c 3 --m 64 --group 1 --k 7 --s 2 --hw 224 --calls 20 2>&1 | tail -2 | tr '\n' ' ')"
done | tee $O/stem.log
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=dwprof DW_VAR=FP8ORT_IM2COL DW_VARIANTS=on DW_SHAPES="3:224:7:2:64:1" DW_REGEX="im2col|gemm|conv" DW_COUNT=2 PROFILE_TIMEOUT=90 bash tools/h200_plugin_ep.sh | tail -4
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=profile PROFILES="resnet50:NHWC:256" PROFILE_TIMEOUT=150 bash tools/h200_plugin_ep.sh | tail -16
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=layers LAYER_MODELS=resnet50 LAYERS_TIMEOUT=200 bash tools/h200_plugin_ep.sh | tail -4
echo "t=$(( $(date +%s) - t )) s"
(cd $O && tar -czf $OUT/w1.tgz .)
