#!/usr/bin/env bash
# window: the im2col stem route: its kernel tests, per-layer time, GPU-device EP tests, ResNet-50 A/B
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh > /dev/null
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s)
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_conv.py -k "im2col or padded_in_c or few_channels_only or (test_conv and (n1h8w8c3 or n2h9w11c16))" > $O/kt.log 2>&1
echo "kernel tests rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/kt.log)"; grep -E "^FAILED|Error|assert" $O/kt.log | head -12
for v in off on; do
  for c in 3 16; do
    echo "stem7 c$c im2col=$v: $(FP8ORT_IM2COL=$v timeout 60 python3 bench/profile_conv.py --c $c --m 64 --group 1 --k 7 --s 2 --hw 224 --calls 20 2>&1 | tail -2 | tr '\n' ' ')"
  done
done | tee $O/stem.log
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=ep EP_TIMEOUT=150 bash tools/h200_plugin_ep.sh | tail -3
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=ab AB_TIMEOUT=100 AB_MODEL=resnet50 AB_BATCHES="32 256" AB_VAR=FP8ORT_IM2COL AB_VALUES="off auto off auto" bash tools/h200_plugin_ep.sh
echo "t=$(( $(date +%s) - t )) s"
(cd $O && tar -czf $OUT/w2.tgz .)
