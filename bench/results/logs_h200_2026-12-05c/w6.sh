#!/usr/bin/env bash
# window 1b: the depthwise rule (tile kernel from 14 output columns, was 28) as a library A/B on EfficientNet-B0
# (commit a0be7ba's libfp8ort.so against 6364416's), one process each
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
[ -f build-gpu/libfp8ort.so ] || OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh > /dev/null
mkdir -p /tmp/oldlib && tar -xJf .prebuilt/lib_old.tar.xz -C /tmp/oldlib
export FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
i=0
for v in old new old new; do
  i=$((i + 1)); lib=$PWD/build-gpu/libfp8ort.so; [ $v = old ] && lib=/tmp/oldlib/libfp8ort.so
  FP8ORT_LIBRARY=$lib timeout 80 python3 bench/plugin_ep_gpu.py --models efficientnet_b0 --systems fp8ort --runs 10 \
    --batches 32 256 --out $O/ab_lib_${i}_$v.json > $O/ab_lib_${i}_$v.log 2>&1
  grep -E "batch" $O/ab_lib_${i}_$v.log | sed "s/^/$v: /" | head -2
done
(cd $O && tar -czf $OUT/w6.tgz .)
