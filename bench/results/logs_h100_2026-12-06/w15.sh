#!/usr/bin/env bash
# window 2 (ninth session): where this tree's libfp8ort.so (79c92cc: the power-of-two divisor, and the scales
# prepared after the main loop) lost 19% on ResNet-50 against commit 020e7bb's with nothing taking the new path.
# One process per library (exact scales, fast rows off): this tree's, varA (79c92cc without the tile_columns change)
# and 020e7bb's; then 020e7bb's with the fast rows on / off / on; then Nsight Compute kernel times of a batch-32 NHWC
# run with this tree's and 020e7bb's library
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
tar -xJf .prebuilt/src_now.tar.xz
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -1
mkdir -p /tmp/l020 /tmp/lvarA && tar -xJf .prebuilt/lib_020.tar.xz -C /tmp/l020 && tar -xJf .prebuilt/lib_varA.tar.xz -C /tmp/lvarA
export FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD BENCH_CONFIG='{"power_of_two_scales":false}'
t=$(date +%s); limit=${LIMIT:-420}
pack() { (cd $O && tar -czf $OUT/w15.tgz .); }
lib_of() { case $1 in new) echo $PWD/build-gpu/libfp8ort.so ;; old) echo /tmp/l020/libfp8ort.so ;; *) echo /tmp/lvarA/libfp8ort.so ;; esac; }
i=0
for run in new:off varA:off old:off old:on old:off old:on varA:off new:off; do
  [ $(( $(date +%s) - t )) -gt $limit ] && break
  IFS=: read -r lib fr <<< "$run"; i=$((i + 1))
  FP8ORT_LIBRARY=$(lib_of $lib) FP8ORT_FAST_ROWS=$fr timeout 60 python3 bench/plugin_ep_gpu.py --models resnet50 \
    --systems fp8ort --runs 10 --batches 32 256 --out $O/ab_${i}_${lib}_$fr.json > $O/ab_${i}_${lib}_$fr.log 2>&1
  grep -E "batch" $O/ab_${i}_${lib}_$fr.log | sed "s/^/$lib fast=$fr: /" | head -2; pack
  [ $i = 6 ] && [ $(( $(date +%s) - t )) -lt 320 ] && for l in new old; do  # the kernel times, once the A/B's main runs are in
    FP8ORT_LIBRARY=$(lib_of $l) FP8ORT_FAST_ROWS=off timeout 100 ncu --profile-from-start off --metrics gpu__time_duration.sum \
      --print-summary per-kernel python3 bench/profile_ep.py --model resnet50 --layout NHWC --batch 32 > $O/profile_$l.txt 2>&1
    echo "profile $l: rc=$? $(( $(date +%s) - t )) s"; python3 tools/ncu_summary.py $O/profile_$l.txt | head -12; pack
  done
done
echo "t=$(( $(date +%s) - t )) s"; pack
