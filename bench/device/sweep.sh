#!/bin/bash
# A sweep of LowerOptions sizes on the GPU machine, in one device call: each
# case (op:size, as tensor.sh) under each configuration (eph_tensor_bench
# flags; ';' between configurations), one process per run, checked against
# float64 and timed; PyTorch CUDA eager on the same cases once
# (torch_tensor.py). Prints a table of medians last (rows: cases, columns:
# configurations) and writes under $OUT: sweep.json (every row, its
# configuration in "config"), torch_tensor.json, log.txt. Needs .gl carried
# as tensor.sh does.
#   CASES="matmul:4096 conv2d:32x64x128x128x64" \
#   CONFIGS="--matmul-kstep 8;--matmul-kstep 16" bash bench/device/sweep.sh
# TARGET=cpu sweeps the cpu target (the static build with LLVM as
# .gl/bin/eph_tensor_bench) on the machine's CPU instead, at each of THREADS
# (EPH_THREADS; default 1), without the peer; a case may also be onnx:NAME,
# an encoder under .gl/bert (exported here first when EXPORT names it, as
# bert_cpu.sh does):
#   TARGET=cpu CASES="matmul:1024 onnx:b1-s512-d768-l2-h12" THREADS="1 16" \
#   EXPORT=b1-s512-d768-l2-h12 CONFIGS="--matmul-rows 4;--matmul-rows 6" bash bench/device/sweep.sh
set -u
OUT=${OUT:-/tmp/eph-sweep-out}
TARGET=${TARGET:-vulkan}
rm -rf /tmp/sweep && mkdir -p "$OUT" /tmp/sweep
. bench/device/gl_env.sh
exec > >(tee "$OUT/log.txt") 2>&1
if [ "$TARGET" = vulkan ]; then
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  if ! timeout 60 "$BIN/eph_tensor_bench" --small --runs 1 --no-peer --targets vulkan --only add > /tmp/probe.txt 2>&1; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
else
  lscpu | grep -E "Model name|^CPU\(s\)" | cut -c1-120
  for name in ${EXPORT:-}; do
    IFS=- read -r b s d l h <<< "$name"
    [ -d ".gl/bert/$name" ] || python3 bench/tensor/bert_export.py ".gl/bert/$name" --batch "${b#b}" --seq "${s#s}" \
      --hidden "${d#d}" --layers "${l#l}" --heads "${h#h}" > /dev/null 2>&1
  done
fi
CASES=${CASES:-"matmul:1024 matmul:4096 matmul:8192 conv2d:32x64x128x128x64"}
CONFIGS=${CONFIGS:-""}
THREADS=${THREADS:-1}
[ "$TARGET" = vulkan ] && THREADS=-
IFS=';' read -r -a configs <<< "${CONFIGS:-}"
[ ${#configs[@]} -eq 0 ] && configs=("")
status=0
i=0
for cfg in "${configs[@]}"; do
  for c in $CASES; do
    for t in $THREADS; do
      f="/tmp/sweep/$i-${c//[:\/]/-}-$t.json"
      if [ "${c%%:*}" = onnx ]; then what=(--onnx ".gl/bert/${c#onnx:}"); else what=(--only "${c%%:*}" --sizes "${c#*:}"); fi
      [ "$t" != - ] && export EPH_THREADS=$t
      timeout "${CASE_LIMIT:-120}" "$BIN/eph_tensor_bench" --targets "$TARGET" --runs "${RUNS:-10}" --no-peer \
        "${what[@]}" $cfg --json "$f" > /tmp/case.txt 2>&1 || { status=1; tail -3 /tmp/case.txt; }
      python3 -c 'import json,sys; rows=json.load(open(sys.argv[1])); [r.update(config=sys.argv[2], threads=sys.argv[3], case=sys.argv[4]) for r in rows]; json.dump(rows, open(sys.argv[1], "w"))' \
        "$f" "$cfg" "$t" "$c" 2>/dev/null
    done
  done
  i=$((i + 1))
done
python3 - "$OUT" /tmp/sweep/*.json <<'PY'
import json, sys
rows = [r for f in sys.argv[2:] for r in json.load(open(f))]
json.dump(rows, open(sys.argv[1] + "/sweep.json", "w"), indent=1)
once = {}
for r in rows:
    if r.get("ephc_ms", 0) > 0 and r["op"] != "onnx": once.setdefault((r["op"], r["size"]), r)
json.dump(list(once.values()), open("/tmp/sweep-cases.json", "w"))
PY
if [ "$TARGET" = vulkan ]; then
  python3 bench/device/torch_tensor.py --eph-json /tmp/sweep-cases.json --json "$OUT/torch_tensor.json" > /tmp/torch.txt 2>&1 || { status=1; tail -5 /tmp/torch.txt; }
fi
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = json.load(open(out + "/sweep.json"))
try: peer = {(r["op"], r["size"]): r["torch_ms"] for r in json.load(open(out + "/torch_tensor.json"))}
except Exception: peer = {}
configs = list(dict.fromkeys(r.get("config", "") for r in rows))
cases = list(dict.fromkeys((r.get("case", ""), r.get("threads", "-")) for r in rows))
ms = {(r.get("case", ""), r.get("threads", "-"), r.get("config", "")): r["ephc_ms"] if r.get("ephc_ms", 0) > 0 else r.get("error", "?")[:20] for r in rows}
print("| case | threads | " + " | ".join(c or "(row)" for c in configs) + " | PyTorch ms |")
print("| --- | ---: |" + " ---: |" * (len(configs) + 1))
for case, t in cases:
    cells = []
    for c in configs:
        v = ms.get((case, t, c), "")
        cells.append(f"{v:.4f}" if isinstance(v, float) else str(v))
    op, _, size = case.partition(":")
    p = peer.get((op, size))
    print(f"| {case} | {t} | " + " | ".join(cells) + (f" | {p:.4f} |" if p else " | |"))
PY
exit $status
