#!/bin/bash
# The one script run per call on the GPU machine (see bench/RESULTS.md).
# Expects, from the repository root: the libvulkan1 package unpacked (the
# caller's `for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig`) and the
# static builds in .gl/bin (eph_gpu_bench, ephc, eph_unit_tests; see
# RESULTS.md for how they are built). Writes everything under $OUT and prints
# one table last: eph vs PyTorch.
#
#   bash bench/device/run.sh            check, then time at full size
#   BENCH_ARGS="--only sgemm" bash bench/device/run.sh
set -u
OUT=${OUT:-/tmp/eph-bench-out}
mkdir -p "$OUT"
BIN=.gl/bin
export PYTHONUNBUFFERED=1
if ! ldconfig -p | grep -q libvulkan.so.1; then echo "run.sh: no libvulkan.so.1 (unpack .gl/*.deb first)"; exit 1; fi
if ! "$BIN/ephc" devices > "$OUT/devices.txt" 2>&1 || ! grep -q "vulkan 0" "$OUT/devices.txt"; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  "$BIN/ephc" devices > "$OUT/devices.txt" 2>&1
fi
cat "$OUT/devices.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
cat "$OUT/nvidia-smi.txt"

# The SPIR-V that passes on lavapipe, on this GPU: the differential tests and
# the device tests (no validation layer here), and ephc diff on the examples.
EPH_TEST_NO_VALIDATION=1 EPH_SOURCE_DIR=$PWD "$BIN/eph_unit_tests" \
  --gtest_filter='VulkanDifferential.*:VulkanDevice.*:DiffCompare.*' > "$OUT/unit.txt" 2>&1
echo "unit tests (Vulkan): $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/unit.txt" | tr '\n' ' ')"
grep -E '^\[  FAILED|Failure' -A3 "$OUT/unit.txt" | head -40
for f in saxpy reduce histogram; do
  echo "ephc diff $f: $("$BIN/ephc" diff examples/ir/$f.eir --targets=interp,vulkan 2>&1)"
done
echo "ephc diff collatz: $("$BIN/ephc" diff examples/ir/collatz.eir --targets=interp,vulkan --arg 27 2>&1)"

# Correctness of every benchmark kernel at small sizes, then the timed runs.
"$BIN/eph_gpu_bench" --check-only 2>&1 | tail -9
"$BIN/eph_gpu_bench" --json "$OUT/eph.json" ${BENCH_ARGS:-} > "$OUT/eph.txt" 2>&1
status=$?
cat "$OUT/eph.txt"
[ $status -eq 0 ] || exit $status
python3 bench/device/torch_peer.py --eph-json "$OUT/eph.json" --json "$OUT/results.json" 2>&1 | tee "$OUT/table.txt"
