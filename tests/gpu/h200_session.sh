#!/usr/bin/env bash
# One device call (kernel library only, no ORT): build, GPU tests, GEMM benchmark, per-layer conv benchmark and
# Nsight Compute on the GEMM kernels. Everything lands in $OUT/h200.tgz (the device tool returns at most 8 files).
# Usage (repo root, on the H200): OUT=<dir> tests/gpu/h200_session.sh [steps of run_on_h200.sh...]
set -uo pipefail
export PYTHONUNBUFFERED=1
o=/tmp/h200_session
rm -rf "$o"; mkdir -p "$o"
steps=("$@"); [ "${#steps[@]}" -gt 0 ] || steps=(tests bench)
OUT="$o/kernels" FP8ORT_CUDA_ARCHS="${FP8ORT_CUDA_ARCHS:-90a}" FP8ORT_REBUILD=1 tests/gpu/run_on_h200.sh "${steps[@]}" \
    > "$o/run_on_h200.log" 2>&1
echo "run_on_h200.sh: rc=$?"; grep -E "passed|failed|SASS|build:|ours|ratio" "$o/run_on_h200.log" | tail -20
grep -h -E "^\{" "$o/kernels/bench_torch.log" 2>/dev/null | cut -c1-220
timeout 240 python3 bench/conv_layers.py --batch 256 32 --json "$o/conv_layers.json" > "$o/conv_layers.log" 2>&1
echo "conv_layers: rc=$?"; grep -E "^batch|error|Error" "$o/conv_layers.log" | tail -6
# Nsight Compute on one launch each of two ResNet-50 layers at batch 256 whose time per tile is high (1x1 64->256
# at 56x56 as a GEMM, 3x3 64->64 at 56x56), with stall sampling per SASS line (the reports themselves stay behind)
ncu_sections=(--section LaunchStats --section SpeedOfLight --section Occupancy --section WarpStateStats
              --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters)
for layer in "gemm 802816 256 64" "conv --c 64 --hw 56 --m 64 --k 3"; do
    tag="$(echo "$layer" | tr -c 'a-z0-9\n' _ | cut -c1-24)"
    timeout 120 ncu --clock-control none --kernel-name regex:sm90 --launch-skip 2 --launch-count 1 "${ncu_sections[@]}" \
        --import-source yes -o "$o/ncu_$tag" python3 bench/profile_layer.py $layer > "$o/ncu_$tag.log" 2>&1
    echo "ncu $layer: rc=$?"
    ncu -i "$o/ncu_$tag.ncu-rep" > "$o/ncu_$tag.txt" 2>&1
    ncu -i "$o/ncu_$tag.ncu-rep" --page source --csv --print-source sass > "$o/ncu_${tag}_sass.csv" 2>"$o/ncu_${tag}_sass.err"
    grep -E "Duration|Stall|Warp Cycles Per Issued|Issued Ipc|Achieved Occ|Registers Per" "$o/ncu_$tag.txt" | cut -c1-150 | head -20
done
tar czf "$OUT/h200.tgz" --exclude='*.ncu-rep' -C "$o" .
