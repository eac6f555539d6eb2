#!/usr/bin/env bash
# window 3, trimmed (seventh session): the kernel tests of this session's routes and every GPU-device EP test on the
# final tree; the depthwise rule (tile kernel from 14 output columns, was 28) as a library A/B on EfficientNet-B0
# (commit a0be7ba's libfp8ort.so against this tree's), one process each; the opt-in wide streaming GEMM on ResNet-50
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh > /dev/null
mkdir -p /tmp/oldlib && tar -xJf .prebuilt/lib_old.tar.xz -C /tmp/oldlib
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s)
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/gpu -k "depthwise or strided or im2col or padded_in_c or z_ahead or wide_stream" > $O/kernel_tests.log 2>&1
echo "kernel tests rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/kernel_tests.log)"; grep -E "^FAILED|^ERROR" $O/kernel_tests.log | head -8
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/ep -k gpu > $O/ep_tests.log 2>&1
echo "ep tests rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/ep_tests.log)"; grep -E "^FAILED|^ERROR" $O/ep_tests.log | head -8
i=0
for v in old new old new; do
  i=$((i + 1)); lib=$PWD/build-gpu/libfp8ort.so; [ $v = old ] && lib=/tmp/oldlib/libfp8ort.so
  FP8ORT_LIBRARY=$lib timeout 60 python3 bench/plugin_ep_gpu.py --models efficientnet_b0 --systems fp8ort --runs 10 \
    --batches 32 256 --out $O/ab_lib_${i}_$v.json > $O/ab_lib_${i}_$v.log 2>&1
  grep -E "batch" $O/ab_lib_${i}_$v.log | sed "s/^/$v: /" | head -2
done
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=ab AB_TIMEOUT=60 AB_MODEL=resnet50 AB_BATCHES="32 256" AB_VAR=FP8ORT_WIDE_STREAM AB_VALUES="off on off on" bash tools/h200_plugin_ep.sh | grep batch
echo "t=$(( $(date +%s) - t )) s"
(cd $O && tar -czf $OUT/w4.tgz .)
