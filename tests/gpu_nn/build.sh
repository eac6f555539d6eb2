#!/bin/bash
# Standalone check of hip_kernels/onnx_{pool,norm,linalg}.hip on an NVIDIA GPU, from the repository root:
#   bash tests/gpu_nn/build.sh /tmp/stb && python3 tests/gpu_nn/check.py /tmp/stb/libst.so [--quick]
# (--quick skips the timings; compute-sanitizer --tool memcheck python3 ... --quick checks bounds.)
set -e
B=${1:-/tmp/stb}; mkdir -p $B
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
for f in onnx_pool onnx_norm onnx_linalg fp8_convert; do
  $NVCC -std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a -Ihip_kernels -Xcompiler -fPIC -x cu -c hip_kernels/$f.hip -o $B/$f.o & pids="$pids $!"
done
$NVCC -std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a -Xcompiler -fPIC -c tests/gpu_nn/st.cu -o $B/st.o & pids="$pids $!"
for p in $pids; do wait $p; done
$NVCC -shared -gencode arch=compute_90a,code=sm_90a $B/*.o -o $B/libst.so
echo built $B/libst.so
