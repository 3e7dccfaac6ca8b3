#!/bin/bash
# Issue 13 item 7 on the GPU machine, in one device call: eph_tensor_bench
# through Vulkan (each case checked against float64, then timed with GPU
# timestamps) and PyTorch CUDA eager on the same ops and sizes
# (bench/device/torch_tensor.py). Needs .gl carried: the Vulkan loader and
# libglvnd .debs in .gl/ and the static eph_tensor_bench in .gl/bin
# (bench/RESULTS.md, "How to run it"). Under $OUT: log.txt, ephc_tensor.json,
# torch_tensor.json.
set -u
OUT=${OUT:-/tmp/eph-tensor-out}
mkdir -p "$OUT"
. bench/device/gl_env.sh
exec > >(tee "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
export PYTHONUNBUFFERED=1
# The NVIDIA ICD: the loader's default search first, then the driver's own file.
echo "probe (--small, 1 run):"
if ! timeout 60 "$BIN/eph_tensor_bench" --small --runs 1 --no-peer --targets vulkan > /tmp/probe.txt 2>&1; then
  tail -5 /tmp/probe.txt
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  timeout 60 "$BIN/eph_tensor_bench" --small --runs 1 --no-peer --targets vulkan > /tmp/probe.txt 2>&1
fi
tail -9 /tmp/probe.txt
status=0
# One process per case: within one process every case after the first ran
# at a third of the bandwidth (2026-11-27; cause not found: not the warm-up
# length, buffer reuse, the transfer queue or queued runs), so each case is
# timed as a process's first.
if [ -n "${LARGE:-}" ]; then
  CASES=${CASES:-"add:16777216 add:67108864 chain:4096x4096 chain:8192x8192 softmax:4096x4096 softmax:8192x8192 softmax_chain:4096x4096 softmax_chain:8192x8192 layer_norm:4096x4096 layer_norm:8192x8192 matmul:1024 matmul:4096 matmul:8192 linear:8192x1024x4096 conv2d:8x32x64x64x32 conv2d:32x64x128x128x64"}
else
  CASES=${CASES:-"add:1048576 add:16777216 chain:1024x1024 chain:4096x4096 softmax:1024x1024 softmax:4096x4096 softmax_chain:1024x1024 softmax_chain:4096x4096 layer_norm:1024x1024 layer_norm:4096x4096 matmul:256 matmul:1024 linear:2048x512x512 conv2d:8x32x64x64x32"}
fi
mkdir -p /tmp/cases
for c in $CASES; do
  timeout "${CASE_LIMIT:-60}" "$BIN/eph_tensor_bench" --targets vulkan --runs "${RUNS:-20}" --no-peer --only "${c%%:*}" \
    --sizes "${c#*:}" ${BENCH_ARGS:-} --json "/tmp/cases/${c/:/-}.json" > /tmp/case.txt 2>&1 || status=1
  grep -v '^|' /tmp/case.txt
done
python3 -c 'import json,os,sys; json.dump([r for f in sys.argv[2:] if os.path.exists(f) for r in json.load(open(f))], open(sys.argv[1], "w"), indent=1)' \
  "$OUT/ephc_tensor.json" $(for c in $CASES; do echo "/tmp/cases/${c/:/-}.json"; done)
python3 bench/device/torch_tensor.py --eph-json "$OUT/ephc_tensor.json" --json "$OUT/torch_tensor.json" || status=1
exit $status
