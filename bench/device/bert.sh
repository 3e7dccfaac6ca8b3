#!/bin/bash
# Issue 14 item 5 on the GPU machine: BERT-like encoders exported from
# PyTorch (bench/tensor/bert_export.py, run here into .gl/bert/<b>-<s>-<d>-<l>-<h>,
# carried with .gl) run through Vulkan by eph_tensor_bench --onnx (checked
# against PyTorch CPU's output, then timed: GPU timestamps and wall time per
# run) and the same model in PyTorch CUDA eager (bench/tensor/bert_peer.py,
# the same sizes). BENCH_ARGS go to eph_tensor_bench. Under $OUT: log.txt, bert.json.
set -u
OUT=${OUT:-/tmp/eph-bert-out}
mkdir -p "$OUT"
. bench/device/gl_env.sh
exec > >(tee "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv
export PYTHONUNBUFFERED=1
if ! timeout 60 "$BIN/eph_tensor_bench" --small --runs 1 --no-peer --targets vulkan --only add > /tmp/probe.txt 2>&1; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
status=0
rows=()
for dir in ${MODELS:-.gl/bert/*}; do
  name=$(basename "$dir")
  IFS=- read -r b s d l h <<< "$name"
  timeout 300 "$BIN/eph_tensor_bench" --onnx "$dir" --targets vulkan --runs "${RUNS:-20}" ${PROFILE:+--profile} \
    ${BENCH_ARGS:-} --json "/tmp/$name.json" || status=1
  python3 bench/tensor/bert_peer.py --device cuda --runs "${RUNS:-20}" --batch "${b#b}" --seq "${s#s}" \
    --hidden "${d#d}" --layers "${l#l}" --heads "${h#h}" --label "$name" > "/tmp/$name.torch.json" || status=1
  rows+=("$name")
done
python3 - "$OUT/bert.json" "${rows[@]}" <<'PY'
import json, sys
out = []
# GPU: the kernels' own times summed; span: first start to last end on the
# GPU's timeline (as PyTorch's CUDA events measure it); wall: a whole run on
# the host's clock until the results are there (both sides).
print('| model | ephc kernels | ephc GPU ms | ephc span ms | PyTorch events ms | ephc wall ms | PyTorch wall ms | PyTorch / ephc (wall) | max error |')
print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
for name in sys.argv[2:]:
    try:
        e = json.load(open(f'/tmp/{name}.json'))[0]
        t = json.load(open(f'/tmp/{name}.torch.json'))
    except Exception as ex:
        print(f'| {name} | error: {ex} | | | | | |')
        continue
    out.append({'model': name, 'ephc': e, 'torch': t})
    tw = t.get('wall_ms', float('nan'))
    print(f"| {name} | {e['kernels']} | {e['ephc_ms']:.3f} | {e.get('span_ms', -1):.3f} | {t['ms']:.3f} | "
          f"{e['wall_ms']:.3f} | {tw:.3f} | {tw / e['wall_ms']:.2f}x | {e['max_rel_error']:.1e} |")
json.dump(out, open(sys.argv[1], 'w'), indent=1)
PY
exit $status
