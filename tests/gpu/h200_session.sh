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
timeout 200 ncu --clock-control none --kernel-name regex:'gemm|xmma|cutlass|sm90' --launch-count 3 \
    --section LaunchStats --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    python3 bench/profile_gemm.py --size 8192 > "$o/ncu_gemm.txt" 2>&1
echo "ncu: rc=$?"; grep -E "^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Registers Per|Cluster Size|Grid Size|Block Size|Dynamic Shared" "$o/ncu_gemm.txt" | cut -c1-160 | head -60
tar czf "$OUT/h200.tgz" -C "$o" .
