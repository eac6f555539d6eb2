#!/usr/bin/env bash
# window 34 (eighteenth session, 2026-12-08). Carry .prebuilt (both libraries built from HEAD for sm_90a).
# What changed since w32/w33: the one-block convolution in clusters of two sharing the weight tile by TMA multicast
# (FP8ORT_CONV_MULTICAST=on, opt-in).
#  1. the convolution kernel tests with it on (test_conv_multicast asserts the route; the rest must still pass);
#  2. ResNet-50 batches 32 and 256 with it off / on, and with the GEMM's multicast too.
# Results in $OUT/w34.tgz.
W=w34; . bench/results/logs_next/window_lib.sh
FP8ORT_CONV_MULTICAST=on timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_conv.py \
  > $O/tests_conv_multicast.log 2>&1
echo "conv tests rc=$? $(( $(date +%s) - t )) s: $(tail -n 1 $O/tests_conv_multicast.log)"
grep -E "^FAILED|^ERROR|Error" $O/tests_conv_multicast.log | head -5; pack
ab resnet50 "32 256" FP8ORT_CONV_MULTICAST=off
ab resnet50 "32 256" FP8ORT_CONV_MULTICAST=on
ab resnet50 "32 256" FP8ORT_CONV_MULTICAST=on FP8ORT_GEMM_MULTICAST=on
ab resnet50 "32 256" FP8ORT_CONV_MULTICAST=off
echo "end $(( $(date +%s) - t )) s"; pack
