#!/usr/bin/env bash
# window 25 (fifteenth session): Nsight Compute's full set with SASS source of the float16 tensor-core attention
# (attention_f16_kernel) in BERT-base at batch 32 and batch 1: window 24 measured 67.5 us per layer at batch 32, about
# five times its issue-bound estimate. Carry .prebuilt. Results under $OUT/p (details page, SASS source csv.gz).
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/p; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
t=$(date +%s)
for b in 32 1; do
  timeout 100 ncu --profile-from-start off -k "regex:attention_f16_kernel" -c 1 --set full --import-source yes \
    -o $O/att$b python3 bench/profile_ep.py --model bert --batch $b > $O/ncu_att$b.log 2>&1
  echo "ncu b$b rc=$? $(( $(date +%s) - t )) s"
  ncu -i $O/att$b.ncu-rep --page details > $O/att${b}_details.txt 2>&1
  ncu -i $O/att$b.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip -9 > $O/att${b}_source.csv.gz
  rm -f $O/att$b.ncu-rep
  grep -E "Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Issued Ipc|Executed Instructions  " $O/att${b}_details.txt | head -8
done
(cd $O && tar -czf $OUT/w25.tgz .)
