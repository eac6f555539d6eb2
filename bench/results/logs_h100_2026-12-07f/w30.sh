#!/usr/bin/env bash
# window 30 (seventeenth session, 2026-12-07). Carry .prebuilt (both libraries built from HEAD for sm_90a).
# Nsight Compute's source page (executed instructions and stall samples per SASS instruction) of the one-block GEMM
# and of cuBLASLt's promoting kernel at 4096^3 (bench/gemm_fp8.py, one launch per row): where each kernel's issue
# slots and stalls go, summed by tools/sass_summary.py. Results in $OUT/w30.tgz.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt; cat $O/env.txt
t=$(date +%s)
for k in gemm_sm90_kernel nvjet; do
  timeout 100 ncu --kernel-name regex:"$k" --launch-count 1 --section SourceCounters --section WarpStateStats \
    --page source --print-source sass --csv \
    python3 bench/gemm_fp8.py --lib build-gpu/libfp8ort_kernels.so --sizes 4096 --iters 1 --warmup 0 > $O/sass_$k.csv 2>&1
  echo "$k rc=$? $(( $(date +%s) - t )) s"
  python3 tools/sass_summary.py $O/sass_$k.csv --top 40 --executed $O/sass_$k.tsv > $O/sass_$k.log 2>&1
  head -45 $O/sass_$k.log | cut -c1-150; gzip -f $O/sass_$k.csv
  (cd $O && tar -czf $OUT/w30.tgz .)
done
