#!/usr/bin/env bash
# On the lent H200 machine (no network; the stock CPU onnxruntime wheel is installed there): build libfp8ort.so
# for CUDA sm_90a and the kernel test library, then run, as STEPS names them (default "build ep kernels"):
#   build    cmake build of libfp8ort.so + libfp8ort_kernels.so into build-gpu/ (kept while the machine is warm)
#   unpack   build-gpu/ from .prebuilt/lib.tar.xz instead (both libraries built elsewhere for sm_90a; carry .prebuilt)
#   ep       the plugin-EP tests of the GPU device (tests/ep -k gpu; EP_TESTS picks another -k expression)
#   kernels  the kernel tests (tests/gpu) against the NumPy reference
#   memcheck compute-sanitizer memcheck over the plugin-EP GPU tests
#   racecheck compute-sanitizer racecheck (shared-memory hazards) over the kernel tests and the EP's GPU op tests
#            (RACE_TESTS: a -k expression for tests/gpu; the EP part runs the ops whose kernels use shared memory)
#   racecheck-all  racecheck over every kernel test, every hazard printed without backtraces, classified by
#            tools/racecheck_summary.py (fp8ort's kernels vs cuBLASLt's own; fails on a hazard in fp8ort's)
#   bad      the bad-input corpus on the GPU device (tests/security/test_bad_models.py -k ep_gpu; XPASS lines show
#            GPU_KNOWN entries that now behave as on the CPU)
#   conc     tests/security/test_concurrency.py and tests/ep/test_multi_gpu.py on the GPU device (threads, device
#            memory back to its level after session and register loops, a session per GPU)
#   sweep    bench/export_sweep.py --device gpu: the export coverage sweep (torchvision, timm, Hugging Face) run on the
#            GPU device, SWEEP_JOBS (default 8) models at once: export_sweep_gpu.json / .md / .log
#   gemm     bench/gemm_fp8.cu built against build-gpu/libfp8ort_kernels.so and cuBLASLt (headers from the CUDA
#            toolkit or the nvidia-cublas wheel), then fp8ort's GEMM against cuBLASLt FP8 at 4096^3 and 8192^3 in one
#            process: gemm.json / gemm.log (bench/results/gemm_h200.json is this record)
#   bench    bench/plugin_ep_gpu.py: exported ResNet-50 / EfficientNet-B0 / BERT-base through the EP vs PyTorch FP16
#            (BENCH_ARGS: more arguments, e.g. "--models bert")
#   record   the side-by-side record (bench/results/h200.json and its plot): bench/plugin_ep_gpu.py per model of
#            RECORD_MODELS (default resnet50) with onnxruntime-gpu from ORT_GPU_SITE (default /tmp/ortsite, see
#            bench/NOTES.md), laid over RECORD_OUT (default /tmp/record/h200.json, kept while the machine is warm) with
#            --update, --plot; RECORD_ARGS adds arguments (e.g. "--systems torch_compile --torch-compile --batches
#            256"); the record, plot and table are copied to $OUT after each model: record_<model>.log
#   host     bench/host_overhead.py with FP8ORT_HOST_TIMING=1: a batch-1 run without graphs split between fp8ort's
#            Compute calls and the rest, and the Memcpy nodes ORT inserted (HOST_MODELS, default "bert efficientnet_b0")
#   ab       one model through the plugin EP once per value of an environment variable, one process each, in the
#            order given (repeat a value to see the machine's drift): AB_VAR (default FP8ORT_GEMM_KERNEL), AB_VALUES
#            (default "auto 5 6 auto"; auto leaves the variable unset), AB_MODEL (default efficientnet_b0),
#            AB_BATCHES (default "32 256"): ab_<var>_<i>_<value>.json. SiLU in the sm90a tile epilogues: AB_VAR=
#            FP8ORT_TILE_SILU AB_VALUES="call inline call inline"; the depthwise kernel: AB_VAR=FP8ORT_DEPTHWISE
#            AB_VALUES="pixel auto pixel auto"; BERT's GEMM backend: AB_VAR=FP8ORT_GEMM_BACKEND
#            AB_VALUES="auto ours auto ours" AB_MODEL=bert AB_BATCHES="1"; a quantizer pass: AB_VAR=BENCH_SKIP_PASS
#            AB_VALUES="auto qkv.PackQkvPass auto qkv.PackQkvPass" AB_MODEL=bert AB_BATCHES="1 32"
#   layers   bench/conv_layers.py per model of LAYER_MODELS (default "efficientnet_b0 resnet50"), batch LAYER_BATCHES
#            (default 256): every convolution alone with each kernel variant (SiLU layers also with SiLU called),
#            without its activation, and cuDNN FP16:
#            layers_<model>.json / .log
#   dwprof   Nsight Compute sections (speed of light, pipes, stalls, occupancy, hot instructions) of one convolution
#            per DW_VARIANTS value (of DW_VAR, default FP8ORT_DEPTHWISE "pixel tile") and DW_SHAPES entry
#            ("c:hw:k:s[:m:group]", depthwise without m and group; batch 256), bench/profile_conv.py: dwprof.log;
#            DW_REGEX (kernel names, default "depthwise|gemm|conv") and DW_COUNT (launches, default 1) pick what is
#            profiled. The im2col stem route's two kernels: DW_VAR=FP8ORT_IM2COL DW_VARIANTS="off on"
#            DW_SHAPES=3:224:7:2:64:1 DW_REGEX="im2col|gemm|conv" DW_COUNT=2
#   sass     Nsight Compute's source page (executed instructions per SASS instruction) of one kernel of one
#            convolution per SASS_SHAPES entry ("c:hw:k:s:m:group", default ResNet-50's 64 -> 256 1x1 layer at batch
#            256), SASS_REGEX picks the kernel (default "gemm|conv"), SASS_ARGS adds bench/profile_conv.py
#            arguments (default "--act Silu"; e.g. "--act Relu --z"), SASS_TAG names the files of such a run;
#            tools/sass_summary.py sums it by opcode and writes the executed instructions: sass_<shape>[_<tag>].tsv
#            (ncu's table: .csv.gz), sass[_<tag>].log
#   profile  Nsight Compute kernel times of one run per PROFILES entry ("model:layout:batch", space separated),
#            bench/profile_ep.py; summaries in profile_<model>_<layout>_<batch>.txt; NCU_ARGS: more ncu flags (e.g.
#            "--clock-control none --cache-control none" for boost clocks and warm caches)
# Carry: .ort_headers (tools/fetch_ort_headers.py .ort_headers), or skip "build" and carry a build-gpu/ made elsewhere
# (libfp8ort.so and libfp8ort_kernels.so, CUDA sm_90a). Logs and results: $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
o="${OUT:-/tmp/h200_out}"; mkdir -p "$o"
steps="${STEPS:-build ep kernels}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader > "$o/env.txt" 2>&1
python3 -c "import onnxruntime, onnx, onnx_ir, numpy; print('onnxruntime', onnxruntime.__version__, 'onnx', onnx.__version__,
'onnx_ir', onnx_ir.__version__, 'numpy', numpy.__version__)" >> "$o/env.txt" 2>&1
cat "$o/env.txt"
export FP8ORT_LIBRARY="$PWD/build-gpu/libfp8ort.so" FP8ORT_KERNELS_LIB="$PWD/build-gpu/libfp8ort_kernels.so"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
for step in $steps; do
    start=$(date +%s)
    case "$step" in
    build)
        { cmake -S . -B build-gpu -G Ninja -DFP8ORT_GPU=cuda -DFP8ORT_CUDA_ARCHS=90a -DFP8ORT_KERNEL_TEST_LIB=ON \
            -DFP8ORT_ORT_INCLUDE_DIR="$PWD/.ort_headers/include/onnxruntime" && cmake --build build-gpu; } \
            > "$o/build.log" 2>&1
        rc=$?; grep -E "error|FAILED" "$o/build.log" | head -20 ;;
    unpack)
        mkdir -p build-gpu && tar -xJf .prebuilt/lib.tar.xz -C build-gpu > "$o/unpack.log" 2>&1
        rc=$?; ls -la build-gpu/*.so >> "$o/unpack.log" 2>&1 ;;
    host)
        rc=0
        for m in ${HOST_MODELS:-bert efficientnet_b0}; do
            FP8ORT_HOST_TIMING=1 timeout "${HOST_TIMEOUT:-200}" python3 bench/host_overhead.py --model "$m" --batch 1 \
                --list-copies > "$o/host_$m.log" 2>&1 || rc=$?
            grep -E "median of rounds|Memcpy|^  all" "$o/host_$m.log" | head -12
        done
        cat "$o"/host_*.log > "$o/host.log" ;;
    ab)
        rc=0; i=0; var="${AB_VAR:-FP8ORT_GEMM_KERNEL}"
        for value in ${AB_VALUES:-auto 5 6 auto}; do
            i=$((i + 1)); tag="${var}_${i}_${value}"
            if [ "$value" = auto ]; then run_env=(env -u "$var"); else run_env=(env "$var=$value"); fi
            "${run_env[@]}" timeout "${AB_TIMEOUT:-200}" python3 bench/plugin_ep_gpu.py --models "${AB_MODEL:-efficientnet_b0}" \
                --systems fp8ort --runs 10 --batches ${AB_BATCHES:-32 256} --out "$o/ab_$tag.json" > "$o/ab_$tag.log" 2>&1 || rc=$?
            grep -E "batch" "$o/ab_$tag.log" | sed "s/^/$tag: /" | head -6
        done
        cat "$o"/ab_"$var"_*.log > "$o/ab.log" ;;
    layers)
        rc=0
        for m in ${LAYER_MODELS:-efficientnet_b0 resnet50}; do
            timeout "${LAYERS_TIMEOUT:-280}" python3 bench/conv_layers.py --model "$m" --lib "$FP8ORT_KERNELS_LIB" \
                --batch ${LAYER_BATCHES:-256} --json "$o/layers_$m.json" > "$o/layers_$m.log" 2>&1 || rc=$?
            grep -E "^batch|left in float|Error" "$o/layers_$m.log" | head -5
        done
        cat "$o"/layers_*.log > "$o/layers.log" ;;
    ep)
        timeout "${EP_TIMEOUT:-200}" python3 -m pytest -q -p no:cacheprovider tests/ep -k "${EP_TESTS:-gpu}" \
            > "$o/ep_tests.log" 2>&1
        rc=$?; grep -E "FAILED|ERROR" "$o/ep_tests.log" | head -30 ;;
    kernels)
        timeout "${KERNEL_TIMEOUT:-200}" python3 -m pytest -q -p no:cacheprovider tests/gpu > "$o/kernel_tests.log" 2>&1
        rc=$?; grep -E "FAILED|ERROR" "$o/kernel_tests.log" | head -20 ;;
    memcheck)
        timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 python3 -m pytest -q -x \
            -p no:cacheprovider tests/ep -k "gpu" > "$o/memcheck.log" 2>&1
        rc=$?; grep -E "ERROR SUMMARY|Invalid" "$o/memcheck.log" | head -10 ;;
    racecheck)
        rc=0
        timeout "${RACE_TIMEOUT:-240}" compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 \
            --print-limit 20 python3 -m pytest -q -p no:cacheprovider tests/gpu -k "${RACE_TESTS:-depthwise or maxpool or quantize_padded or (test_conv and n2h9w11 and auto)}" \
            > "$o/racecheck.log" 2>&1 || rc=$?
        timeout "${RACE_TIMEOUT:-240}" compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 \
            --print-limit 20 python3 -m pytest -q -p no:cacheprovider tests/ep/test_onnx_ops.py \
            -k "gpu and (transpose or pool or reduce or softmax or layer_norm or gather)" >> "$o/racecheck.log" 2>&1 || rc=$?
        grep -E "RACECHECK SUMMARY|ERROR SUMMARY|passed|failed" "$o/racecheck.log" | head -10 ;;
    racecheck-all)
        timeout "${RACE_TIMEOUT:-480}" compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 0 \
            --show-backtrace no python3 -m pytest -q -p no:cacheprovider tests/gpu > "$o/racecheck-all.log" 2>&1
        python3 tools/racecheck_summary.py "$o/racecheck-all.log" > "$o/racecheck_summary.txt"
        rc=$?; head -20 "$o/racecheck_summary.txt" ;;
    bad)
        timeout "${BAD_TIMEOUT:-200}" python3 -m pytest -q -p no:cacheprovider -rxX tests/security/test_bad_models.py \
            -k ep_gpu > "$o/bad.log" 2>&1
        rc=$?; grep -E "FAILED|ERROR|XPASS|XFAIL" "$o/bad.log" | head -10 ;;
    conc)
        timeout "${CONC_TIMEOUT:-200}" python3 -m pytest -q -p no:cacheprovider -rs tests/security/test_concurrency.py \
            tests/ep/test_multi_gpu.py -k "gpu or multi" > "$o/conc.log" 2>&1
        rc=$?; grep -E "FAILED|ERROR|SKIPPED" "$o/conc.log" | head -10 ;;
    gemm)
        inc="" libdir=""
        for d in /usr/local/cuda/include $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s) for p in
                nvidia.__path__ for s in ("cu13/include", "cublas/include")))' 2>/dev/null); do
            [ -f "$d/cublasLt.h" ] && inc="$d" && break
        done
        for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s) for p in
                nvidia.__path__ for s in ("cu13/lib", "cublas/lib")))' 2>/dev/null); do
            ls "$d"/libcublasLt.so* > /dev/null 2>&1 && libdir="$d" && break
        done
        echo "cublasLt: include=$inc lib=$libdir" > "$o/gemm.log"
        lt="$(ls "$libdir"/libcublasLt.so* 2> /dev/null | head -1)"
        nvcc -std=c++17 -O2 -arch=sm_90a -I hip_kernels -I "$inc" bench/gemm_fp8.cu -o build-gpu/gemm_fp8_bench \
            -L build-gpu -lfp8ort_kernels "$lt" -Xlinker -rpath,"$PWD/build-gpu:$libdir" >> "$o/gemm.log" 2>&1 &&
            FP8ORT_BENCH_COMMAND="STEPS=gemm bash tools/h200_plugin_ep.sh (build-gpu/gemm_fp8_bench --sizes 4096,8192 --iters 30)" \
            timeout "${GEMM_TIMEOUT:-200}" build-gpu/gemm_fp8_bench --sizes 4096,8192 --iters 30 --json "$o/gemm.json" \
            >> "$o/gemm.log" 2>&1
        rc=$?; tail -8 "$o/gemm.log" ;;
    sweep)
        timeout "${SWEEP_TIMEOUT:-540}" python3 bench/export_sweep.py --device gpu --jobs "${SWEEP_JOBS:-8}" \
            --out "$o/export_sweep_gpu.json" > "$o/sweep.log" 2>&1
        rc=$?; grep -E "^\| " "$o/sweep.log" | head -30 ;;
    record)
        rc=0; rec="${RECORD_OUT:-/tmp/record/h200.json}"; mkdir -p "$(dirname "$rec")"
        for m in ${RECORD_MODELS:-resnet50}; do
            update=(); [ -f "$rec" ] && update=(--update)
            timeout "${RECORD_TIMEOUT:-540}" python3 bench/plugin_ep_gpu.py --models "$m" --ort-gpu-site \
                "${ORT_GPU_SITE:-/tmp/ortsite}" --out "$rec" "${update[@]}" --plot ${RECORD_ARGS:-} \
                > "$o/record_$m.log" 2>&1 || rc=$?
            grep -E "batch|Error|error" "$o/record_$m.log" | head -8
            cp "${rec%.json}".json "${rec%.json}".md "${rec%.json}".png "$o/" 2> /dev/null
        done
        cat "$o"/record_*.log > "$o/record.log" ;;
    bench)
        timeout "${BENCH_TIMEOUT:-420}" python3 bench/plugin_ep_gpu.py --out "$o/${BENCH_OUT:-plugin_ep_h200}.json" ${BENCH_ARGS:-} \
            > "$o/bench.log" 2>&1
        rc=$?; grep -E "batch|quantized|Error|error" "$o/bench.log" | head -40 ;;
    dwprof)
        # Nsight Compute sections of one convolution per DW_VARIANTS value (of DW_VAR) and DW_SHAPES entry
        # ("c:hw:k:s[:m:group]", depthwise without m and group; EfficientNet-B0's layers at batch 256 by default),
        # bench/profile_conv.py; all in dwprof.log
        rc=0; mkdir -p /tmp/dwprof; dw_var="${DW_VAR:-FP8ORT_DEPTHWISE}"
        for v in ${DW_VARIANTS:-pixel tile}; do
            for p in ${DW_SHAPES:-32:112:3:1 96:112:3:2 240:28:5:1}; do
                IFS=: read -r c hw k st m g <<< "$p"
                f="/tmp/dwprof/${v}_${p//:/_}.txt"
                args=(--c "$c" --hw "$hw" --k "$k" --s "$st" --m "${m:-0}" --group "${g:-0}")
                env "$dw_var=$v" timeout "${PROFILE_TIMEOUT:-150}" ncu --kernel-name regex:"${DW_REGEX:-depthwise|gemm|conv}" \
                    --launch-skip 2 --launch-count "${DW_COUNT:-1}" --section SpeedOfLight --section ComputeWorkloadAnalysis \
                    --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
                    --section InstructionStats --section SourceCounters python3 bench/profile_conv.py "${args[@]}" \
                    > "$f" 2>&1 || rc=$?
                env "$dw_var=$v" python3 bench/profile_conv.py "${args[@]}" --calls 20 2>&1 | tail -2 | tr '\n' ' ' \
                    | sed "s/^/$v: /"; echo
            done
        done
        cat /tmp/dwprof/*.txt > "$o/dwprof.log" ;;
    sass)
        rc=0
        for p in ${SASS_SHAPES:-64:56:1:1:256:1}; do
            IFS=: read -r c hw k st m g <<< "$p"
            f="$o/sass_${p//:/_}${SASS_TAG:+_$SASS_TAG}.csv"
            timeout "${PROFILE_TIMEOUT:-150}" ncu --kernel-name regex:"${SASS_REGEX:-gemm|conv}" --launch-skip 2 \
                --launch-count 1 --section SourceCounters --page source --print-source sass --csv \
                python3 bench/profile_conv.py --c "$c" --hw "$hw" --k "$k" --s "$st" --m "${m:-0}" --group "${g:-0}" \
                ${SASS_ARGS:---act Silu} > "$f" 2>&1 || rc=$?
            python3 tools/sass_summary.py "$f" --executed "${f%.csv}.tsv" | head -60
            gzip -f "$f"
        done > "$o/sass${SASS_TAG:+_$SASS_TAG}.log"
        head -30 "$o/sass${SASS_TAG:+_$SASS_TAG}.log" ;;
    profile)
        rc=0
        for p in ${PROFILES:-resnet50:NCHW:32}; do
            IFS=: read -r model layout batch <<< "$p"
            f="$o/profile_${model}_${layout}_${batch}.txt"
            timeout "${PROFILE_TIMEOUT:-150}" ncu ${NCU_ARGS:-} --profile-from-start off --metrics gpu__time_duration.sum \
                --print-summary per-kernel python3 bench/profile_ep.py --model "$model" --layout "$layout" \
                --batch "$batch" > "$f" 2>&1 || rc=$?
            python3 tools/ncu_summary.py "$f" | head -12
        done ;;
    *) echo "unknown step $step"; rc=2 ;;
    esac
    last=$(tail -1 "$o/${step}.log" 2>/dev/null || true)
    [ "$step" = ep ] && last=$(tail -1 "$o/ep_tests.log")
    [ "$step" = kernels ] && last=$(tail -1 "$o/kernel_tests.log")
    echo "step $step: rc=$rc, $(( $(date +%s) - start )) s ${last:+| $last}"
    [ "$step" = build ] && [ $rc != 0 ] && { tail -30 "$o/build.log"; exit 4; }
done
exit 0
