#!/bin/bash
# The one script run per call on the GPU machine (see bench/RESULTS.md), from
# the repository root, with .gl carried: the Vulkan loader and libglvnd .debs
# in .gl/ and the static builds in .gl/bin (eph_gpu_bench, ephc,
# eph_unit_tests; RESULTS.md says how they are built). Writes everything
# under $OUT and prints one table last.
#
#   bash bench/device/run.sh             issue #6: the Ephapax kernels
#                                        (bench/ephapax/*.eph) vs the same
#                                        algorithms hand-written in CUDA
#                                        (bench/device/cuda, built here with
#                                        nvcc) vs PyTorch
#   EPH=0 bash bench/device/run.sh       the same without the Ephapax side
#   SUITE=eir bash bench/device/run.sh   the earlier run: Vulkan unit tests,
#                                        ephc diff, the .eir kernels vs PyTorch
#                                        (BENCH_ARGS go to eph_gpu_bench)
# Sizes: VADD, REDUCE (floats), SGEMM (orders), comma-separated; RUNS.
# Under $OUT (at most 8 files come back): log.txt (everything printed),
# eph.json, cuda.jsonl, results.json, table.txt; and diag.jsonl (SGEMM
# diagnostics: the .eir kernel, CUDA built with -fmad=false, CUDA with a
# fence before each barrier, CUDA without __restrict__, CUDA with the
# shared-memory carveout at its maximum), sass_sgemm.txt (all kernels) and
# sass.txt (the SASS the Vulkan driver and nvcc made: bench/device/sass_report.py).
set -u
OUT=${OUT:-/tmp/eph-bench-out}
mkdir -p "$OUT"
BIN=${BIN:-.gl/bin}
export PYTHONUNBUFFERED=1
VADD=${VADD:-16777216,67108864,268435456}
REDUCE=${REDUCE:-16777216,67108864,268435456}
SGEMM=${SGEMM:-1024,2048,4096}
RUNS=${RUNS:-20}

for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
[ "${SUITE:-eph}" = eir ] || exec > >(tee "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv

vulkan_device() {
  if ! ldconfig -p | grep -q libvulkan.so.1; then echo "run.sh: no libvulkan.so.1 (no .gl/*.deb?)"; exit 1; fi
  if ! "$BIN/ephc" devices > /tmp/devices.txt 2>&1 || ! grep -q "vulkan 0" /tmp/devices.txt; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    "$BIN/ephc" devices > /tmp/devices.txt 2>&1
  fi
  cat /tmp/devices.txt
}

if [ "${SUITE:-eph}" = eir ]; then
  vulkan_device
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
  "$BIN/eph_gpu_bench" --check-only 2>&1 | tail -9
  "$BIN/eph_gpu_bench" --json "$OUT/eph.json" ${BENCH_ARGS:-} > "$OUT/eph.txt" 2>&1
  status=$?
  cat "$OUT/eph.txt"
  [ $status -eq 0 ] || exit $status
  python3 bench/device/torch_peer.py --eph-json "$OUT/eph.json" --json "$OUT/results.json" 2>&1 | tee "$OUT/table.txt"
  exit 0
fi

# The CUDA peers: built here, the one thing compiled on this machine; a
# second build with -fmad=false (no FFMA contraction) is a diagnostic for the
# SGEMM (does the Vulkan side lose to CUDA by not fusing?).
t0=$(date +%s%N)
nvcc -O3 -arch=sm_90 -o /tmp/cuda_bench bench/device/cuda/cuda_bench.cu || exit 1
echo "nvcc $(nvcc --version | tail -1): cuda_bench built in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
nvcc -O3 -arch=sm_90 -fmad=false -o /tmp/cuda_bench_nofma bench/device/cuda/cuda_bench.cu || exit 1

peer_args=()
rm -f "$OUT/diag.jsonl"
if [ "${EPH:-1}" != 0 ]; then
  vulkan_device
  # Fresh pipeline caches, so that sass_report.py finds these kernels' cubins.
  export EPH_PIPELINE_CACHE=/tmp/pcache __GL_SHADER_DISK_CACHE_PATH=/tmp/nvcache __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1
  rm -rf /tmp/pcache /tmp/nvcache
  mkdir -p /tmp/pcache /tmp/nvcache
  # The .eph kernels checked at small and odd sizes, then timed; then the
  # hand-written .eir SGEMM at the same sizes, for reference.
  "$BIN/eph_gpu_bench" --eph bench/ephapax --check-only 2>&1 | tail -16
  for f in vadd reduce gemm; do
    echo "ephc run bench/ephapax/$f.eph --target=vulkan (wrong elements): $(EPH_PIPELINE_CACHE=off "$BIN/ephc" run bench/ephapax/$f.eph --target=vulkan 2>&1)"
  done
  "$BIN/eph_gpu_bench" --eph bench/ephapax --runs "$RUNS" --vadd "$VADD" --reduce "$REDUCE" --sgemm "$SGEMM" \
    --json "$OUT/eph.json" 2>&1
  [ $? -eq 0 ] && peer_args+=(--eph-json "$OUT/eph.json")
  EPH_PIPELINE_CACHE=off "$BIN/eph_gpu_bench" --only sgemm --runs "$RUNS" --sgemm "$SGEMM" --json /tmp/eir.json 2>&1 | tail -5
  python3 -c "
import json, sys
for r in json.load(open('/tmp/eir.json'))['results']:
    r['impl'] = 'eir'
    print(json.dumps(r))" >> "$OUT/diag.jsonl"
fi
/tmp/cuda_bench --only vadd,vadd4,reduce,sgemm,sgemm_db,sgemm_db_cur --runs "$RUNS" --vadd "$VADD" --reduce "$REDUCE" \
  --sgemm "$SGEMM" --json "$OUT/cuda.jsonl" 2>&1 |
  cut -c1-200
[ -s "$OUT/cuda.jsonl" ] && peer_args+=(--cuda-json "$OUT/cuda.jsonl")
if [ "${DIAG:-1}" != 0 ]; then
  /tmp/cuda_bench --only sgemm_fence,sgemm_norestrict,sgemm_carveout --runs "$RUNS" --sgemm "$SGEMM" --json "$OUT/diag.jsonl" 2>&1 |
    cut -c1-200
  /tmp/cuda_bench_nofma --impl cuda_nofma --only sgemm --runs "$RUNS" --sgemm "$SGEMM" --json "$OUT/diag.jsonl" 2>&1 |
    cut -c1-200
  python3 bench/device/sass_report.py --scan /tmp/pcache /tmp/nvcache --exe /tmp/cuda_bench --match "sgemm|vadd|reduce" \
    --sass "$OUT/sass_sgemm.txt" > "$OUT/sass.txt" 2>&1
  cut -c1-400 "$OUT/sass.txt"
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
python3 bench/device/torch_peer.py "${peer_args[@]}" --json "$OUT/results.json" 2>&1 | tee "$OUT/table.txt"
