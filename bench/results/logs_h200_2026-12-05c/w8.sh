#!/usr/bin/env bash
# window 2b (eighth session): the SASS profile of ResNet-50's 64 -> 256 1x1 layer with Relu, without and with an
# E4M3FN residual, fast rows off and on; compute-sanitizer racecheck and memcheck over the fast-rows GEMM tests
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
[ -f build-gpu/libfp8ort.so ] || OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh > /dev/null
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s)
for v in off on; do
  FP8ORT_FAST_ROWS=$v OUT=$O STEPS=sass SASS_ARGS="--act Relu" SASS_TAG=relu_$v PROFILE_TIMEOUT=60 bash tools/h200_plugin_ep.sh | head -16
  FP8ORT_FAST_ROWS=$v OUT=$O STEPS=sass SASS_ARGS="--act Relu --z" SASS_TAG=relu_z_$v PROFILE_TIMEOUT=60 bash tools/h200_plugin_ep.sh | head -16
done
zgrep -h "fp8ort .* ms" $O/sass_*.csv.gz
echo "t=$(( $(date +%s) - t )) s"
OUT=$O STEPS=racecheck RACE_TIMEOUT=150 RACE_TESTS="fast_rows" bash tools/h200_plugin_ep.sh | tail -6
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 python3 -m pytest -q -p no:cacheprovider \
  tests/gpu/test_gemm.py -k fast_rows > $O/memcheck_fast_rows.log 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY' $O/memcheck_fast_rows.log | head -2) $(tail -1 $O/memcheck_fast_rows.log)"
echo "t=$(( $(date +%s) - t )) s"
(cd $O && tar -czf $OUT/w8.tgz .)
