#!/bin/bash
# Issue 14 item 5 on the GPU machine's CPU: the BERT-like encoders
# (bench/tensor/bert_export.py; hidden-768 ones are exported here first when
# EXPORT names them, e.g. EXPORT="b1-s512-d768-l2-h12") on the cpu target
# (eph_tensor_bench --onnx --targets cpu, EPH_THREADS=N) against PyTorch CPU
# eager (bench/tensor/bert_peer.py --device cpu --threads N) at the same
# thread counts (THREADS, default "1 4 16"); at one thread both run on the
# same core (taskset -c PIN_CORE, default 2: unpinned, one-thread runs on
# that VM moved by up to 70% within a call). BENCH_ARGS go to eph_tensor_bench.
# Under $OUT: log.txt, bert_cpu.json.
set -u
OUT=${OUT:-/tmp/eph-bert-cpu-out}
mkdir -p "$OUT"
. bench/device/gl_env.sh
exec > >(tee "$OUT/log.txt") 2>&1
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200
python3 -c "import torch; print('torch', torch.__version__, torch.backends.mkldnn.is_available())"
export PYTHONUNBUFFERED=1
for name in ${EXPORT:-}; do
  IFS=- read -r b s d l h <<< "$name"
  [ -d ".gl/bert/$name" ] || python3 bench/tensor/bert_export.py ".gl/bert/$name" --batch "${b#b}" --seq "${s#s}" \
    --hidden "${d#d}" --layers "${l#l}" --heads "${h#h}" > /dev/null
done
status=0
rows=()
for dir in ${MODELS:-.gl/bert/*}; do
  name=$(basename "$dir")
  IFS=- read -r b s d l h <<< "$name"
  for t in ${THREADS:-1 4 16}; do
    pin=()
    [ "$t" = 1 ] && pin=(taskset -c "${PIN_CORE:-2}")
    EPH_THREADS=$t timeout 300 "${pin[@]}" "$BIN/eph_tensor_bench" --onnx "$dir" --targets cpu --runs "${RUNS:-10}" \
      ${BENCH_ARGS:-} --json "/tmp/$name-$t.json" > "/tmp/$name-$t.log" 2>&1 || { status=1; tail -5 "/tmp/$name-$t.log"; }
    "${pin[@]}" python3 bench/tensor/bert_peer.py --device cpu --threads "$t" --runs "${RUNS:-10}" --batch "${b#b}" \
      --seq "${s#s}" --hidden "${d#d}" --layers "${l#l}" --heads "${h#h}" --label "$name" > "/tmp/$name-$t.torch.json" || status=1
    rows+=("$name-$t")
  done
done
python3 - "$OUT/bert_cpu.json" "${rows[@]}" <<'PY'
import json, sys
out = []
print('| model | threads | ephc ms (median) | ephc wall ms | PyTorch ms (median) | PyTorch / ephc (wall) | max error |')
print('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
for row in sys.argv[2:]:
    name, t = row.rsplit('-', 1)
    try:
        e = json.load(open(f'/tmp/{row}.json'))[0]
        p = json.load(open(f'/tmp/{row}.torch.json'))
    except Exception as ex:
        print(f'| {name} | {t} | error: {ex} | | | |')
        continue
    out.append({'model': name, 'threads': int(t), 'ephc': e, 'torch': p})
    print(f"| {name} | {t} | {e['ephc_ms']:.2f} | {e['wall_ms']:.2f} | {p['ms']:.2f} | {p['ms'] / e['wall_ms']:.2f}x | "
          f"{e['max_rel_error']:.1e} |")
json.dump(out, open(sys.argv[1], 'w'), indent=1)
PY
exit $status
