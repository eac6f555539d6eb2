#!/usr/bin/env bash
# window 2 of the eighth session, trimmed again to the device time left (w9.sh never started): the fast quads
# (FP8ORT_FAST_ROWS: the sm90a tile epilogues four rows at a time, the depthwise tile kernel four pixels at a time,
# without a branch) and the GEMM's column constants loaded early. The fast-quad kernel tests, then ResNet-50 and
# EfficientNet-B0 with them off / on, one process per value
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh > /dev/null
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s)
FP8ORT_FAST_ROWS=on timeout -s INT 40 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu -k "fast_rows or fast_quads" > $O/kernel_tests.log 2>&1
echo "kernel tests (fast rows on) rc=$? $(( $(date +%s) - t )) s: $(tail -1 $O/kernel_tests.log)"; grep -E "^FAILED|^ERROR" $O/kernel_tests.log | head -12
i=0
for v in off on off on; do  # this tree's library, FP8ORT_FAST_ROWS off / on
  i=$((i + 1))
  FP8ORT_FAST_ROWS=$v timeout 60 python3 bench/plugin_ep_gpu.py --models resnet50 --systems fp8ort \
    --runs 10 --batches 32 256 --out $O/ab_resnet50_${i}_$v.json > $O/ab_resnet50_${i}_$v.log 2>&1
  grep -E "batch" $O/ab_resnet50_${i}_$v.log | sed "s/^/$v: /" | head -2
done
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=ab AB_TIMEOUT=50 AB_MODEL=efficientnet_b0 AB_BATCHES="256" AB_VAR=FP8ORT_FAST_ROWS AB_VALUES="off on" bash tools/h200_plugin_ep.sh | grep batch
echo "t=$(( $(date +%s) - t )) s"
(cd $O && tar -czf $OUT/w10.tgz .)
