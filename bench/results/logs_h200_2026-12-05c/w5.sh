#!/usr/bin/env bash
# window 1 (eighth session): the kernel tests of the seventh session's routes and every GPU-device EP test on the
# tree of 6364416, the SASS profile of the 64 -> 256 1x1 layer's kernel, and the opt-in wide streaming GEMM A/B on
# ResNet-50 (one process per value)
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh > /dev/null
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/gpu -k "depthwise or strided or im2col or padded_in_c or z_ahead or wide_stream" > $O/kernel_tests.log 2>&1
echo "kernel tests rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/kernel_tests.log)"; grep -E "^FAILED|^ERROR" $O/kernel_tests.log | head -8
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ep -k gpu > $O/ep_tests.log 2>&1
echo "ep tests rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/ep_tests.log)"; grep -E "^FAILED|^ERROR" $O/ep_tests.log | head -8
OUT=$O STEPS=sass PROFILE_TIMEOUT=90 bash tools/h200_plugin_ep.sh | tail -32
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=ab AB_TIMEOUT=60 AB_MODEL=resnet50 AB_BATCHES="32 256" AB_VAR=FP8ORT_WIDE_STREAM AB_VALUES="off on off on" bash tools/h200_plugin_ep.sh | grep batch
echo "t=$(( $(date +%s) - t )) s"
(cd $O && tar -czf $OUT/w5.tgz .)
