#!/usr/bin/env bash
# window 33 (eighteenth session, 2026-12-08), right after w32.sh on the same machine. Carry .prebuilt.
# BERT-base batch 32 on our GEMM (its K = 768 and 3,072 GEMMs take one_block): the default, B multicast in pairs
# (FP8ORT_GEMM_MULTICAST=on), the 7-stage ring, both; cuBLASLt's route; ResNet-50 (its K >= 1,024 1x1 layers take
# one_block) with and without multicast. Results in $OUT/w33.tgz.
W=w33; . bench/results/logs_next/window_lib.sh
ab bert 32 FP8ORT_GEMM_BACKEND=ours
ab bert 32 FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_MULTICAST=on
ab bert 32 FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_STAGES=7
ab bert 32 FP8ORT_GEMM_BACKEND=ours FP8ORT_GEMM_MULTICAST=on FP8ORT_GEMM_STAGES=7
ab bert 32 FP8ORT_GEMM_BACKEND=auto
ab resnet50 "32 256" FP8ORT_GEMM_MULTICAST=off
ab resnet50 "32 256" FP8ORT_GEMM_MULTICAST=on
echo "end $(( $(date +%s) - t )) s"; pack
