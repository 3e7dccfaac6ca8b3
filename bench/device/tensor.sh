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
BIN=${BIN:-.gl/bin}
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
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
timeout "${BENCH_LIMIT:-300}" "$BIN/eph_tensor_bench" --targets vulkan --runs "${RUNS:-20}" --no-peer ${LARGE:+--large} ${ONLY:+--only "$ONLY"} --json "$OUT/ephc_tensor.json" || status=1
python3 bench/device/torch_tensor.py --eph-json "$OUT/ephc_tensor.json" --json "$OUT/torch_tensor.json" || status=1
exit $status
