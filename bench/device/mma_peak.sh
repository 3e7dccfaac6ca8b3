#!/bin/bash
# Issue 14's HGEMM goal against what the hardware path allows: the peak of
# mma.sync m16n8k16 f16 -> f32 (what SPV_NV_cooperative_matrix's 16x16x16
# products compile to on Hopper; bench/device/cuda/mma_peak.cu, registers
# only), then ephc's HGEMM (cooperative matrices) and PyTorch's (cuBLAS, which
# uses Hopper's wgmma) at 4096 and 8192 in the same call (bench/device/sweep.sh).
# Prints the peak's lines, then sweep.sh's table; writes $OUT/mma_peak.txt and
# $OUT/sweep/{sweep,torch_tensor}.json. Needs .gl carried as tensor.sh does.
set -u
OUT=${OUT:-/tmp/eph-mma-out}
mkdir -p "$OUT"
nvcc -O3 -arch=sm_90 -o /tmp/mma_peak bench/device/cuda/mma_peak.cu || exit 1
/tmp/mma_peak | tee "$OUT/mma_peak.txt"
OUT="$OUT/sweep" CASES=${CASES:-"hgemm:4096 hgemm:8192"} RUNS=${RUNS:-10} bash bench/device/sweep.sh
