#!/bin/bash
# SGEMM emit variants on the GPU machine (bench/RESULTS.md, issue #6): the
# Ephapax sgemm compiled with the SPIR-V emitter's switches (EPH_SPIRV_TUNE,
# targets/spirv/Emitter.h) timed in ROUNDS interleaved rounds, next to the
# CUDA peer built here; then the driver's statistics of each variant
# (EPH_VK_STATS). Run from the repository root with .gl carried, like run.sh.
# Writes $OUT/tune.jsonl (one line per variant, size and round) and prints
# the medians last.
set -u
OUT=${OUT:-/tmp/eph-tune-out}
mkdir -p "$OUT"
BIN=.gl/bin
SGEMM=${SGEMM:-1024,2048,4096}
RUNS=${RUNS:-20}
ROUNDS=${ROUNDS:-2}
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
if ! "$BIN/ephc" devices 2>&1 | grep -q "vulkan 0"; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export EPH_PIPELINE_CACHE=off
# name=EPH_SPIRV_TUNE value ("-" for the defaults)
VARIANTS=${VARIANTS:-"old=uniform-barrier,no-unroll,wrap-check barrier=no-unroll,wrap-check loops=uniform-barrier default=- restrict=restrict"}
nvcc -O3 -arch=sm_90 -o /tmp/cuda_bench bench/device/cuda/cuda_bench.cu || exit 1
rm -f "$OUT/tune.jsonl"
for round in $(seq "$ROUNDS"); do
  for v in $VARIANTS; do
    name=${v%%=*} tune=${v#*=}
    [ "$tune" = - ] && tune=
    EPH_SPIRV_TUNE=$tune "$BIN/eph_gpu_bench" --eph bench/ephapax --only sgemm --runs "$RUNS" --sgemm "$SGEMM" \
      --json /tmp/v.json > /tmp/v.txt 2>&1 || { cat /tmp/v.txt; continue; }
    python3 -c "
import json
for r in json.load(open('/tmp/v.json'))['results']:
    r.update(variant='$name', round=$round)
    print(json.dumps(r))" >> "$OUT/tune.jsonl"
  done
  /tmp/cuda_bench --only sgemm --runs "$RUNS" --sgemm "$SGEMM" --json /tmp/c.jsonl > /dev/null 2>&1
  python3 -c "
import json
for l in open('/tmp/c.jsonl'):
    r = json.loads(l); r.update(variant='cuda', round=$round); print(json.dumps(r))" >> "$OUT/tune.jsonl"
  rm -f /tmp/c.jsonl
done
for v in $VARIANTS; do
  name=${v%%=*} tune=${v#*=}
  [ "$tune" = - ] && tune=
  echo "== $name"
  EPH_VK_STATS=1 EPH_SPIRV_TUNE=$tune "$BIN/eph_gpu_bench" --eph bench/ephapax --only sgemm --runs 1 --sgemm 1024 \
    --check-only 2>&1 | grep "statistics @sgemm" | head -2
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
python3 - "$OUT/tune.jsonl" <<'PY' | tee "$OUT/tune.txt"
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
runs, rounds, order = {}, {}, []
for r in rows:
    if r['name'] != 'sgemm': continue
    k = (r['variant'], r['size'])
    runs.setdefault(k, []).extend(r['runs_ms'])
    rounds.setdefault(k, []).append(r['median_ms'])
    if r['variant'] not in order: order.append(r['variant'])
sizes = sorted({k[1] for k in runs})
print('median ms over all rounds\' runs (per-round medians); % of CUDA')
print('%-10s' % 'variant' + ''.join('%34s' % ('sgemm %d' % n) for n in sizes))
for v in order:
    line = '%-10s' % v
    for n in sizes:
        if (v, n) not in runs: line += '%34s' % '-'; continue
        m = statistics.median(runs[(v, n)])
        c = statistics.median(runs[('cuda', n)]) if ('cuda', n) in runs else float('nan')
        per = '/'.join('%.4f' % x for x in rounds[(v, n)])
        line += '%34s' % ('%.4f (%s) %5.1f%%' % (m, per, 100 * c / m))
    print(line)
PY
