#!/bin/bash
# What CUDA C GEMMs reach against cuBLAS on this GPU, for issue 14's SGEMM
# (>= 0.9x) and HGEMM (>= 0.7x) goals: bench/device/cuda/sgemm_ceiling.cu
# (FFMA kernels of ephc's algorithm and its public refinements) and
# hgemm_ceiling.cu (mma.sync kernels with and without cp.async and more than
# 48 KiB of shared memory, what Vulkan shaders cannot have), then PyTorch's
# a @ b (f32 with TF32 off, f16) in the same call. Needs nothing carried.
# WHICH: "sgemm hgemm" (default) or one of them. Writes
# $OUT/{sgemm,hgemm}_ceiling.json and $OUT/ptxas.txt.
set -u
OUT=${OUT:-/tmp/eph-ceiling-out}
mkdir -p "$OUT"
for w in ${WHICH:-sgemm hgemm}; do
  nvcc -O3 -arch=sm_90 -Xptxas -v -o /tmp/${w}_ceiling bench/device/cuda/${w}_ceiling.cu -lcublas \
    2>> "$OUT/ptxas.txt" || { tail -30 "$OUT/ptxas.txt"; exit 1; }
done
for w in ${WHICH:-sgemm hgemm}; do
  sizes=${SIZES:-1024,4096,8192}
  [ "$w" = hgemm ] && sizes=${HSIZES:-4096,8192}
  /tmp/${w}_ceiling --sizes "$sizes" --runs "${RUNS:-20}" --rounds "${ROUNDS:-3}" --json "$OUT/${w}_ceiling.json" \
    | grep -v "^check" || exit 1
done
/usr/bin/env python3 - <<'PY'
import torch
torch.backends.cuda.matmul.allow_tf32 = False
for dt, sizes in ((torch.float32, (1024, 4096, 8192)), (torch.float16, (4096, 8192))):
    for n in sizes:
        a = (torch.rand(n, n, device='cuda') - 0.5).to(dt); b = (torch.rand(n, n, device='cuda') - 0.5).to(dt)
        for _ in range(3): a @ b
        ts = []
        for _ in range(60):
            s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
            s.record(); a @ b; e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
        ts.sort(); print(f"PyTorch {torch.__version__} {dt} a @ b {n}: median {ts[len(ts)//2]:.4f} ms")
PY
