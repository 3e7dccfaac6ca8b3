#!/bin/bash
# A sweep of the cpu target's tuning (eph_tensor_bench flags) on the GPU
# machine's CPU, in one device call: each case under each configuration
# (';' between configurations) at each thread count, one process per case,
# checked against float64 and timed (median of RUNS). A case is op:size as
# tensor.sh takes it, or onnx:NAME for an encoder under .gl/bert (exported
# here first when EXPORT names it, as bert_cpu.sh does). Prints a table of
# medians last (rows: case and threads, columns: configurations) and writes
# cpu_sweep.json (every row, with "config" and "threads") and log.txt under
# $OUT. Needs the static build with LLVM as .gl/bin/eph_tensor_bench.
#   CASES="matmul:1024 onnx:b1-s512-d768-l2-h12" THREADS="1 16" \
#   CONFIGS="--matmul-rows 4;--matmul-rows 6" bash bench/device/cpu_sweep.sh
set -u
OUT=${OUT:-/tmp/eph-cpu-sweep-out}
mkdir -p "$OUT" /tmp/cpu-sweep
. bench/device/gl_env.sh
exec > >(tee "$OUT/log.txt") 2>&1
lscpu | grep -E "Model name|^CPU\(s\)" | cut -c1-120
for name in ${EXPORT:-}; do
  IFS=- read -r b s d l h <<< "$name"
  [ -d ".gl/bert/$name" ] || python3 bench/tensor/bert_export.py ".gl/bert/$name" --batch "${b#b}" --seq "${s#s}" \
    --hidden "${d#d}" --layers "${l#l}" --heads "${h#h}" > /dev/null 2>&1
done
CASES=${CASES:-"matmul:1024 matmul:2048"}
IFS=';' read -r -a configs <<< "${CONFIGS:-}"
[ ${#configs[@]} -eq 0 ] && configs=("")
status=0
i=0
for cfg in "${configs[@]}"; do
  for c in $CASES; do
    for t in ${THREADS:-1}; do
      f="/tmp/cpu-sweep/$i-${c//[:\/]/-}-$t.json"
      if [ "${c%%:*}" = onnx ]; then what=(--onnx ".gl/bert/${c#onnx:}"); else what=(--only "${c%%:*}" --sizes "${c#*:}"); fi
      EPH_THREADS=$t timeout "${CASE_LIMIT:-120}" "$BIN/eph_tensor_bench" --targets cpu --runs "${RUNS:-5}" --no-peer \
        "${what[@]}" $cfg --json "$f" > /tmp/case.txt 2>&1 || { status=1; tail -3 /tmp/case.txt; }
      python3 -c 'import json,sys; rows=json.load(open(sys.argv[1])); [r.update(config=sys.argv[2], threads=int(sys.argv[3]), case=sys.argv[4]) for r in rows]; json.dump(rows, open(sys.argv[1], "w"))' \
        "$f" "$cfg" "$t" "$c" 2>/dev/null
    done
  done
  i=$((i + 1))
done
python3 - "$OUT" /tmp/cpu-sweep/*.json <<'PY'
import json, sys
rows = [r for f in sys.argv[2:] for r in json.load(open(f))]
json.dump(rows, open(sys.argv[1] + "/cpu_sweep.json", "w"), indent=1)
configs = list(dict.fromkeys(r["config"] for r in rows))
cases = list(dict.fromkeys((r["case"], r["threads"]) for r in rows))
ms = {(r["case"], r["threads"], r["config"]): r["ephc_ms"] for r in rows if r.get("ephc_ms", 0) > 0}
print("| case | threads | " + " | ".join(c or "(row)" for c in configs) + " |")
print("| --- | ---: |" + " ---: |" * len(configs))
for case, t in cases:
    cells = [f"{ms[(case, t, c)]:.3f}" if (case, t, c) in ms else "?" for c in configs]
    print(f"| {case} | {t} | " + " | ".join(cells) + " |")
PY
exit $status
