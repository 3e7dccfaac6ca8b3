#!/bin/bash
# Issue 14, 2026-11-29: the encoders with the attention's parts lowered as
# the attention op (LowerOptions::fuseAttention 1, the default: the cpu
# target's strip kernel) against without (0), on the GPU machine's CPU
# (bench/device/bert_cpu.sh, ROUNDS rounds alternating, THREADS default "1
# 16") and on its GPU (bench/device/bert.sh, the one-pass kernel asked for:
# 2) against PyTorch. Under $OUT: one folder per run, each with log.txt and
# its JSON; the tables printed last.
set -u
OUT=${OUT:-/tmp/eph-attention-out}
mkdir -p .gl/bin "$OUT"
[ -x .gl/bin/eph_tensor_bench ] || { xz -dc .gl/bin/eph_tensor_bench.xz > .gl/bin/eph_tensor_bench && chmod +x .gl/bin/eph_tensor_bench; }
export EXPORT=${EXPORT:-"b1-s128-d256-l2-h4 b1-s512-d768-l2-h12 b8-s512-d512-l1-h8"}
for n in $EXPORT; do
  IFS=- read -r b s d l h <<< "$n"
  [ -d ".gl/bert/$n" ] || python3 bench/tensor/bert_export.py ".gl/bert/$n" --batch "${b#b}" --seq "${s#s}" \
    --hidden "${d#d}" --layers "${l#l}" --heads "${h#h}" > /dev/null 2>&1
done
export THREADS=${THREADS:-"1 16"}
runs=()
for r in $(seq "${ROUNDS:-1}"); do
  OUT=$OUT/cpu-parts-$r BENCH_ARGS="--fuse-attention 0" bash bench/device/bert_cpu.sh > /dev/null 2>&1
  OUT=$OUT/cpu-attn-$r bash bench/device/bert_cpu.sh > /dev/null 2>&1
  runs+=(cpu-parts-$r cpu-attn-$r)
done
if [ -z "${NO_GPU:-}" ]; then
  OUT=$OUT/gpu-parts bash bench/device/bert.sh > /dev/null 2>&1
  OUT=$OUT/gpu-attn BENCH_ARGS="--fuse-attention 2" bash bench/device/bert.sh > /dev/null 2>&1
  runs+=(gpu-parts gpu-attn)
fi
for d in "${runs[@]}"; do
  echo "== $d"
  grep -E "^\| (model|b[0-9])" "$OUT/$d/log.txt"
  grep -iE "error:|fail" "$OUT/$d/log.txt" | head -3
done
