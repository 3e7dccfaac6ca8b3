#!/bin/bash
# Issue 12 item 8 on the GPU machine, in one device call (bench/RESULTS.md,
# "Issue 12: Value graphs vs PyTorch autograd"): the Value-graph kernels
# (eph_value_bench, Vulkan) against PyTorch autograd (bench/device/torch_value.py),
# float64, residuals + gradient of their sum, each size checked first
# (eph_value_bench against the float64 reference evaluator; torch_value.py
# against eph_value_bench's checksums), then timed; and the grouping of 1M
# residuals (eph_value_group_bench) on this machine's CPU.
#
# Needs .gl carried: the Vulkan loader and libglvnd .debs in .gl/ and the
# static builds eph_value_bench and eph_value_group_bench in .gl/bin
# (RESULTS.md, "How to run it", builds them as eph_gpu_bench is built).
# Under $OUT: log.txt (everything printed), ephc_edge.json,
# ephc_edge_jacobian.json, ephc_edge_wg256.json, ephc_hinge.json, torch_edge.json,
# torch_hinge.json.
#
#   bash bench/device/value.sh       SIZES (edge, default 1000000,4000000),
#                                    HINGE (default 1000000), RUNS, BATCH
set -u
OUT=${OUT:-/tmp/eph-value-out}
mkdir -p "$OUT"
BIN=${BIN:-.gl/bin}
export PYTHONUNBUFFERED=1
SIZES=${SIZES:-1000000,4000000}
HINGE=${HINGE:-1000000}
RUNS=${RUNS:-7}
BATCH=${BATCH:-20}

for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
exec > >(tee "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
nproc
if ! ldconfig -p | grep -q libvulkan.so.1; then echo "value.sh: no libvulkan.so.1 (no .gl/*.deb?)"; exit 1; fi
if ! "$BIN/eph_value_bench" --target vulkan --sizes 1000 --runs 1 --batch 1 > /tmp/probe.txt 2>&1; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
cat /tmp/probe.txt | head -3

status=0
"$BIN/eph_value_bench" --target vulkan --family edge --sizes "$SIZES" --runs "$RUNS" --batch "$BATCH" \
  --json "$OUT/ephc_edge.json" || status=1
python3 bench/device/torch_value.py --family edge --sizes "$SIZES" --runs "$RUNS" --iters "$BATCH" \
  --eph-json "$OUT/ephc_edge.json" --json "$OUT/torch_edge.json" || status=1
"$BIN/eph_value_bench" --target vulkan --family edge --sizes "$SIZES" --runs "$RUNS" --batch "$BATCH" --jacobian \
  --json "$OUT/ephc_edge_jacobian.json" || status=1
# The workgroup size of the lowering (64 by default): 256 at the largest size.
"$BIN/eph_value_bench" --target vulkan --family edge --sizes "${SIZES##*,}" --runs "$RUNS" --batch "$BATCH" \
  --workgroup 256 --no-check --json "$OUT/ephc_edge_wg256.json" || status=1
"$BIN/eph_value_bench" --target vulkan --family hinge --sizes "$HINGE" --runs "$RUNS" --batch "$BATCH" \
  --json "$OUT/ephc_hinge.json" || status=1
python3 bench/device/torch_value.py --family hinge --sizes "$HINGE" --runs "$RUNS" --iters "$BATCH" \
  --eph-json "$OUT/ephc_hinge.json" --json "$OUT/torch_hinge.json" || status=1
for i in 1 2 3; do "$BIN/eph_value_group_bench" 1000000; done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
exit $status
