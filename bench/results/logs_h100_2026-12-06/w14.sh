#!/usr/bin/env bash
# window (ninth session), this tree's libraries: the fast quads (FP8ORT_FAST_ROWS) and the power-of-two Y scales
# (the quantizer's power_of_two_scales; the kernels' one-multiply quotient) on their first GPU run. Every kernel test
# and every GPU-device EP test with the fast rows on, then ResNet-50 at batches 32 and 256 for each pair of
# (power_of_two_scales, FP8ORT_FAST_ROWS), one process each, and commit 020e7bb's libfp8ort.so with exact scales
# (what this tree's changes cost where nothing takes them), in an order that repeats the baselines
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
tar -xJf .prebuilt/src_now.tar.xz  # the tree these libraries were built from (fp8ort, tests, bench, tools)
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s); limit=${LIMIT:-520}
pack() { (cd $O && tar -czf $OUT/w14.tgz .); }  # after each step: a call cut short keeps what ran
FP8ORT_FAST_ROWS=on timeout 230 python3 -m pytest -q -p no:cacheprovider tests/gpu > $O/kernel_tests_fast_on.log 2>&1
echo "kernel tests (fast rows on) rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/kernel_tests_fast_on.log)"
grep -E "^FAILED|^ERROR" $O/kernel_tests_fast_on.log | head -12; pack
FP8ORT_FAST_ROWS=on timeout 100 python3 -m pytest -q -p no:cacheprovider tests/ep -k gpu > $O/ep_tests_fast_on.log 2>&1
echo "ep tests (fast rows on) rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/ep_tests_fast_on.log)"
grep -E "^FAILED|^ERROR" $O/ep_tests_fast_on.log | head -12; pack
mkdir -p /tmp/l020 && tar -xJf .prebuilt/lib_020.tar.xz -C /tmp/l020  # commit 020e7bb's libfp8ort.so
i=0
for run in new:exact:off old:exact:off new:pow2:off new:pow2:on new:exact:on new:exact:off old:exact:off new:pow2:on; do
  [ $(( $(date +%s) - t )) -gt $limit ] && break
  IFS=: read -r lib sc fr <<< "$run"; i=$((i + 1))
  cfg='{"power_of_two_scales":true}'; [ $sc = exact ] && cfg='{"power_of_two_scales":false}'
  so=$PWD/build-gpu/libfp8ort.so; [ $lib = old ] && so=/tmp/l020/libfp8ort.so
  FP8ORT_LIBRARY=$so BENCH_CONFIG=$cfg FP8ORT_FAST_ROWS=$fr timeout 60 python3 bench/plugin_ep_gpu.py --models resnet50 \
    --systems fp8ort --runs 10 --batches 32 256 --out $O/ab_${i}_${lib}_${sc}_$fr.json > $O/ab_${i}_${lib}_${sc}_$fr.log 2>&1
  grep -E "batch" $O/ab_${i}_${lib}_${sc}_$fr.log | sed "s/^/$lib $sc fast=$fr: /" | head -2; pack
done
echo "t=$(( $(date +%s) - t )) s"
pack
