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
BIN=${BIN:-.gl/bin}
EPHDIR=${EPHDIR:-bench/ephapax}  # where gemm.eph (and vadd.eph, reduce.eph) are read
SGEMM=${SGEMM:-1024,2048,4096}
RUNS=${RUNS:-20}
ROUNDS=${ROUNDS:-2}
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
if ! "$BIN/ephc" devices 2>&1 | grep -q "vulkan 0"; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export EPH_PIPELINE_CACHE=off
# name=EPH_SPIRV_TUNE ("-" for the defaults), optionally @KERNEL (an Ephapax
# SGEMM of $EPHDIR/gemm.eph, default sgemm; its CUDA peer is the
# cuda_bench variant of the same name)
VARIANTS=${VARIANTS:-"old=uniform-barrier,no-unroll,wrap-check barrier=no-unroll,wrap-check loops=uniform-barrier default=- restrict=restrict"}
# the cuda_bench SGEMM variants timed in each round
CUDA=${CUDA:-sgemm}
nvcc -O3 -arch=sm_90 -o /tmp/cuda_bench bench/device/cuda/cuda_bench.cu || exit 1
rm -f "$OUT/tune.jsonl"
parse() {  # sets name, tune, kernel from one VARIANTS entry
  name=${1%%=*} tune=${1#*=} kernel=sgemm
  case "$tune" in *@*) kernel=${tune#*@} tune=${tune%@*} ;; esac
  [ "$tune" = - ] && tune=
}
for round in $(seq "$ROUNDS"); do
  for v in $VARIANTS; do
    parse "$v"
    EPH_SPIRV_TUNE=$tune "$BIN/eph_gpu_bench" --eph "$EPHDIR" --only "$kernel" --runs "$RUNS" --sgemm "$SGEMM" \
      --json /tmp/v.json > /tmp/v.txt 2>&1 || { cat /tmp/v.txt; continue; }
    python3 -c "
import json
for r in json.load(open('/tmp/v.json'))['results']:
    r.update(variant='$name', round=$round)
    print(json.dumps(r))" >> "$OUT/tune.jsonl"
  done
  /tmp/cuda_bench --only "$CUDA" --runs "$RUNS" --sgemm "$SGEMM" --json /tmp/c.jsonl > /tmp/c.txt 2>&1 || cat /tmp/c.txt
  python3 -c "
import json
for l in open('/tmp/c.jsonl'):
    r = json.loads(l); r.update(variant='cuda:' + r['name'], round=$round); print(json.dumps(r))" >> "$OUT/tune.jsonl"
  rm -f /tmp/c.jsonl
done
for v in $VARIANTS; do
  parse "$v"
  echo "== $name"
  EPH_VK_STATS=1 EPH_SPIRV_TUNE=$tune "$BIN/eph_gpu_bench" --eph "$EPHDIR" --only "$kernel" --runs 1 --sgemm 1024 \
    --check-only 2>&1 | grep "statistics @$kernel" | head -2
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
python3 - "$OUT/tune.jsonl" <<'PY' | tee "$OUT/tune.txt"
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
runs, rounds, order, kernel = {}, {}, [], {}
for r in rows:
    if not r['name'].startswith('sgemm'): continue
    k = (r['variant'], r['size'])
    runs.setdefault(k, []).extend(r['runs_ms'])
    rounds.setdefault(k, []).append(r['median_ms'])
    kernel[r['variant']] = r['name']
    if r['variant'] not in order: order.append(r['variant'])
sizes = sorted({k[1] for k in runs})
print('median ms over all rounds\' runs (per-round medians); % of the CUDA peer (the longest cuda_bench name the kernel name begins with), [% of CUDA sgemm]')
print('%-12s' % 'variant' + ''.join('%44s' % ('sgemm %d' % n) for n in sizes))
for v in order:
    line = '%-12s' % v
    # the peer: the CUDA variant with the longest name that begins kernel[v]
    # (sgemm_db_p2 -> sgemm_db)
    cudas = [c for c in order if c.startswith('cuda:') and kernel[v].startswith(c[5:])]
    peer = v if v.startswith('cuda:') else max(cudas, key=len, default='cuda:sgemm')
    for n in sizes:
        if (v, n) not in runs: line += '%44s' % '-'; continue
        m = statistics.median(runs[(v, n)])
        c = statistics.median(runs[(peer, n)]) if (peer, n) in runs else float('nan')
        c0 = statistics.median(runs[('cuda:sgemm', n)]) if ('cuda:sgemm', n) in runs else float('nan')
        per = '/'.join('%.4f' % x for x in rounds[(v, n)])
        line += '%44s' % ('%.4f (%s) %5.1f%% [%5.1f%%]' % (m, per, 100 * c / m, 100 * c0 / m))
    print(line)
PY
