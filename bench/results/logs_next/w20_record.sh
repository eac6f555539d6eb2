#!/usr/bin/env bash
# The side-by-side record on a warm machine after w19.sh (build-gpu/ unpacked there) and the four calls that copied
# .ortgpu/part00..03 to /tmp/ortgpu/: installs onnxruntime-gpu from the parts (carry .ortgpu/part04 and .ortgpu/meta),
# then STEPS=record for RECORD_MODELS (default "resnet50 efficientnet_b0") into /tmp/record/<gpu>.json (h200 or h100,
# from nvidia-smi), kept on the machine for the next call's --update. Logs and the record: $OUT/r.
set -uo pipefail
if [ -f .ortgpu/part04 ] && [ ! -d /tmp/ortsite ]; then
  cp .ortgpu/part04 /tmp/ortgpu/ && bash .ortgpu/meta/install.sh || exit 3
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in *H200*) tag=h200 ;; *) tag=h100 ;; esac
O=$OUT/r; mkdir -p $O; echo "$gpu -> $tag"
OUT=$O STEPS=record RECORD_MODELS="${RECORD_MODELS:-resnet50 efficientnet_b0}" RECORD_OUT=/tmp/record/$tag.json \
  RECORD_TIMEOUT=${RECORD_TIMEOUT:-270} bash tools/h200_plugin_ep.sh
