#!/usr/bin/env bash
# window 22 (fourteenth session): the A/Bs window 21 lost to the library-epilogue error, on the same libraries with
# FP8ORT_BLASLT_EPILOGUE=off (the route as before): BERT-base batches 1 and 32 with the attention's key split and the
# tensor-core attention, reversed; Nsight Compute of BERT-base at batch 32 (every kernel: time, grid, registers,
# instructions, DRAM bytes), and the full set with source counters of one Gelu -> FP8 epilogue pass. Carry .prebuilt.
set -uo pipefail; export PYTHONUNBUFFERED=1
O=$OUT/w; mkdir -p $O
OUT=$O STEPS=unpack bash tools/h200_plugin_ep.sh | head -3
export FP8ORT_LIBRARY=$PWD/build-gpu/libfp8ort.so FP8ORT_KERNELS_LIB=$PWD/build-gpu/libfp8ort_kernels.so PYTHONPATH=$PWD
export FP8ORT_BLASLT_EPILOGUE=off
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/env.txt
t=$(date +%s); limit=${LIMIT:-300}
pack() { (cd $O && tar -czf $OUT/w22.tgz .); }
left() { [ $(( $(date +%s) - t + $1 )) -le $limit ]; }
i=0
for run in bert:FP8ORT_ATTENTION_SPLIT=off bert:FP8ORT_ATTENTION_SPLIT=on bert:FP8ORT_ATTENTION=tc ncu \
           bert:FP8ORT_ATTENTION_SPLIT=on bert:FP8ORT_ATTENTION_SPLIT=off; do
  if [ $run = ncu ]; then
    left 80 || continue
    timeout 60 ncu --profile-from-start off --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,smsp__inst_executed.sum,dram__bytes.sum \
      python3 bench/profile_ep.py --model bert --batch 32 > $O/ncu_bert32_auto.txt 2>&1
    echo "ncu bert b32 auto rc=$? $(( $(date +%s) - t )) s"; pack
    continue
  fi
  i=$((i + 1)); left 40 || break
  model=${run%%:*}; pair=${run#*:}
  env ${pair//,/ } timeout 60 python3 bench/plugin_ep_gpu.py --models $model --systems fp8ort --runs 10 \
    --batches 1 32 --out $O/ab_${i}_${model}_${pair}.json > $O/ab_${i}_${model}_${pair}.log 2>&1
  echo "$model $pair rc=$? $(( $(date +%s) - t )) s"; grep -E "batch" $O/ab_${i}_${model}_${pair}.log | head -2; pack
done
if left 60; then
  timeout 60 ncu --profile-from-start off --kernel-name-base demangled -k "regex:epilogue_apply_kernel<17>" -c 1 \
    --set full --import-source yes -o $O/gelu python3 bench/profile_ep.py --model bert --batch 32 > $O/ncu_gelu.log 2>&1
  echo "ncu gelu rc=$?"
  ncu -i $O/gelu.ncu-rep --page details > $O/gelu_details.txt 2>&1
  ncu -i $O/gelu.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip -9 > $O/gelu_source.csv.gz
  rm -f $O/gelu.ncu-rep; pack
fi
echo "end $(( $(date +%s) - t )) s"; pack
