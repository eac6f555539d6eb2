# Shared by the device-window scripts (source it after setting W, the window's name, and OUT): unpacks the carried
# libraries, sets the environment, and defines pack (results into $OUT/$W.tgz), left N (whether N more seconds stay
# within LIMIT) and ab MODEL BATCHES ENV... (one bench/plugin_ep_gpu.py run under ENV, skipped when it would not end
# in time; AB_TIMEOUT seconds each, default 60; BATCHES may hold several, "32 256").
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p "$O"
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -2
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
unset FP8ORT_ATTENTION_SPLIT FP8ORT_ATTENTION FP8ORT_ATTENTION_F16 FP8ORT_GEMM_PERSISTENT FP8ORT_GEMM_BACKEND
unset FP8ORT_GEMM_KERNEL FP8ORT_GEMM_PACED
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$O/env.txt"; cat "$O/env.txt"
t=$(date +%s); limit=${LIMIT:-300}
pack() { (cd "$O" && tar -czf "$OUT/$W.tgz" .); }
left() { [ $(( $(date +%s) - t + $1 )) -le "$limit" ]; }
i=0
ab() {
  local model=$1 batches=$2 tmo=${AB_TIMEOUT:-60}; shift 2; i=$((i + 1)); left "$tmo" || return 0
  local tag; tag=$(echo "$*" | tr ' =' '_-')
  env "$@" timeout "$tmo" python3 bench/plugin_ep_gpu.py --models "$model" --systems fp8ort --runs 10 \
    --batches $batches --out "$O/ab_${i}_${model}_${tag}.json" > "$O/ab_${i}_${model}_${tag}.log" 2>&1
  echo "$model $* rc=$? $(( $(date +%s) - t )) s"; grep -E "batch|rror" "$O/ab_${i}_${model}_${tag}.log" | head -3; pack
}
# gemm_rows JSON: one line per row of a bench/gemm_fp8.py result
gemm_rows() {
  python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
for r in d['results']: print(r['m'], r['ours_kernel'], r['ours_tflops'], 'vs', r['torch_scaled_mm_tflops'], r['ratio'], '%.1e' % r['relative_l2_diff'])" "$1"
}
