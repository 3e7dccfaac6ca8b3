#!/bin/bash
# Runs on the GPU machine (same carried .gl as run.sh): do transfers overlap
# compute where the dependencies allow? eph_overlap_bench (bench/overlap_bench.cpp)
# runs bench/ephapax/overlap.eph and prints the GPU timeline of its
# independent and dependent h2d + dispatch, then times upload / compute /
# both independent / both dependent at several upload sizes. Writes
# $OUT/overlap.json and $OUT/overlap.txt; the table is printed last.
#   SIZES (MiB, comma-separated), RUNS
set -u
OUT=${OUT:-/tmp/eph-bench-out}
mkdir -p "$OUT"
BIN=.gl/bin
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
if ! "$BIN/ephc" devices 2>/dev/null | grep -q "vulkan 0"; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
"$BIN/eph_overlap_bench" --eph bench/ephapax --sizes "${SIZES:-16,64,256}" --runs "${RUNS:-9}" \
  --json "$OUT/overlap.json" 2>&1 | tee "$OUT/overlap.txt"
