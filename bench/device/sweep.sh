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
set -u
OUT=${OUT:-/tmp/eph-sweep-out}
mkdir -p "$OUT" /tmp/sweep
. bench/device/gl_env.sh
exec > >(tee "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if ! timeout 60 "$BIN/eph_tensor_bench" --small --runs 1 --no-peer --targets vulkan --only add > /tmp/probe.txt 2>&1; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
CASES=${CASES:-"matmul:1024 matmul:4096 matmul:8192 conv2d:32x64x128x128x64"}
CONFIGS=${CONFIGS:-""}
IFS=';' read -r -a configs <<< "${CONFIGS:-}"
[ ${#configs[@]} -eq 0 ] && configs=("")
status=0
i=0
for cfg in "${configs[@]}"; do
  for c in $CASES; do
    f="/tmp/sweep/$i-${c/:/-}.json"
    timeout "${CASE_LIMIT:-60}" "$BIN/eph_tensor_bench" --targets vulkan --runs "${RUNS:-10}" --no-peer \
      --only "${c%%:*}" --sizes "${c#*:}" $cfg --json "$f" > /tmp/case.txt 2>&1 || { status=1; tail -3 /tmp/case.txt; }
    python3 -c 'import json,sys; rows=json.load(open(sys.argv[1])); [r.update(config=sys.argv[2]) for r in rows]; json.dump(rows, open(sys.argv[1], "w"))' "$f" "$cfg" 2>/dev/null
  done
  i=$((i + 1))
done
python3 - "$OUT" /tmp/sweep/*.json <<'PY'
import json, sys
rows = [r for f in sys.argv[2:] for r in json.load(open(f))]
json.dump(rows, open(sys.argv[1] + "/sweep.json", "w"), indent=1)
once = {}
for r in rows:
    if r.get("ephc_ms", 0) > 0: once.setdefault((r["op"], r["size"]), r)
json.dump(list(once.values()), open("/tmp/sweep-cases.json", "w"))
PY
python3 bench/device/torch_tensor.py --eph-json /tmp/sweep-cases.json --json "$OUT/torch_tensor.json" > /tmp/torch.txt 2>&1 || { status=1; tail -5 /tmp/torch.txt; }
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = json.load(open(out + "/sweep.json"))
try: peer = {(r["op"], r["size"]): r["torch_ms"] for r in json.load(open(out + "/torch_tensor.json"))}
except Exception: peer = {}
configs = list(dict.fromkeys(r.get("config", "") for r in rows))
cases = list(dict.fromkeys((r["op"], r["size"]) for r in rows))
ms = {(r["op"], r["size"], r.get("config", "")): r["ephc_ms"] if r.get("ephc_ms", 0) > 0 else r.get("error", "?")[:20] for r in rows}
print("| case | " + " | ".join(c or "(row)" for c in configs) + " | PyTorch ms |")
print("| --- |" + " ---: |" * (len(configs) + 1))
for op, size in cases:
    cells = []
    for c in configs:
        v = ms.get((op, size, c), "")
        cells.append(f"{v:.4f}" if isinstance(v, float) else str(v))
    p = peer.get((op, size))
    print(f"| {op} {size} | " + " | ".join(cells) + f" | {p:.4f} |" if p else f"| {op} {size} | " + " | ".join(cells) + " | |")
PY
exit $status
