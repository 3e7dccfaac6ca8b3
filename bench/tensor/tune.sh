#!/bin/bash
# The search that produced frontends/tensor/Tuning.cpp's rows (issue 14):
# eph_tensor_bench over candidate sizes on one target, each op timed in a
# process of its own; prints a table of every candidate, then the row for
# Tuning.cpp (the workgroup size with the least total time over the
# elementwise cases, the row length per invocation with the least over the
# row cases, the matmul block with the least over the matmul sizes, the
# elements per invocation with the least over the elementwise cases, the
# split-K workgroup target with the least over the LINEAR products: BERT's
# projections, whose 64x64 tiles are too few to fill a big GPU).
#
#   TARGET=vulkan bash bench/tensor/tune.sh           (BIN: the bench's folder)
#   TARGET=cpu SIZE=2048x2048 RUNS=5 bash bench/tensor/tune.sh
set -eu
BIN=${BIN:-build/bench}
TARGET=${TARGET:-vulkan}
SIZE=${SIZE:-2048x2048}
RUNS=${RUNS:-5}
WGS=${WGS:-"64 128 256 512 1024"}
ROWS=${ROWS:-"4 8 16 32 64"}
BLOCKS=${BLOCKS:-"0 4 8"}
ELEMENTS=${ELEMENTS:-"1 2 4 8"}
MATMUL=${MATMUL:-"1024,4096"}
SPLITS=${SPLITS:-"0 264 400 528 1056"}
LINEAR=${LINEAR:-"512x768x768,512x3072x768,512x768x3072,1024x768x768,4096x768x768"}
dir=$(mktemp -d)
for wg in $WGS; do
  for op in add chain; do
    size=$SIZE; [ $op = add ] && size=$(( ${SIZE%x*} * ${SIZE#*x} ))
    "$BIN/eph_tensor_bench" --targets "$TARGET" --runs "$RUNS" --no-peer --only $op --sizes $size --wg $wg \
      --json "$dir/wg-$wg-$op.json" > /dev/null 2>&1
  done
done
for re in $ROWS; do
  for op in softmax layer_norm; do
    "$BIN/eph_tensor_bench" --targets "$TARGET" --runs "$RUNS" --no-peer --only $op --sizes "$SIZE" \
      --row-elements $re --json "$dir/re-$re-$op.json" > /dev/null 2>&1
  done
done
for e in $ELEMENTS; do
  for op in add chain; do
    size=$SIZE; [ $op = add ] && size=$(( ${SIZE%x*} * ${SIZE#*x} ))
    "$BIN/eph_tensor_bench" --targets "$TARGET" --runs "$RUNS" --no-peer --only $op --sizes $size --elements $e \
      --json "$dir/el-$e-$op.json" > /dev/null 2>&1
  done
done
for mb in $BLOCKS; do
  "$BIN/eph_tensor_bench" --targets "$TARGET" --runs "$RUNS" --no-peer --only matmul --sizes "$MATMUL" \
    --matmul-block $mb --json "$dir/mb-$mb-matmul.json" > /dev/null 2>&1
done
for sg in $SPLITS; do
  for size in ${LINEAR//,/ }; do
    "$BIN/eph_tensor_bench" --targets "$TARGET" --runs "$RUNS" --no-peer --only linear --sizes "$size" \
      --split-groups $sg --json "$dir/sg-$sg-linear-$size.json" > /dev/null 2>&1
  done
done
python3 - "$dir" <<'PY'
import glob, json, os, sys
# Each row with its sweep (the file's prefix: wg, re, el, mb), so that a
# setting is judged only against the other settings of its own sweep.
rows = [dict(r, sweep=os.path.basename(f).split('-')[0])
        for f in sorted(glob.glob(os.path.join(sys.argv[1], '*.json'))) for r in json.load(open(f))]
rows = [r for r in rows if r['ephc_ms'] > 0 and not r['error']]
print('| op | size | target | wg | row elements | matmul block | elements | split groups | ms |')
print('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |')
for r in rows:
    print(f"| {r['op']} | {r['size']} | {r['target']} | {r['wg']} | {r['row_elements']} | {r.get('matmul_block', '')} | "
          f"{r.get('elements', '')} | {r.get('split_groups', '')} | {r['ephc_ms']:.4f} |")
def best(sweep, ops, key):
    total = {}
    for r in rows:
        if r['sweep'] == sweep and r['op'] in ops:
            total[r[key]] = total.get(r[key], 0) + r['ephc_ms']
    return min(total, key=total.get) if total else None
wg = best('wg', {'add', 'chain'}, 'wg')
re = best('re', {'softmax', 'layer_norm'}, 'row_elements')
mb = best('mb', {'matmul'}, 'matmul_block')
el = best('el', {'add', 'chain'}, 'elements')
sg = best('sg', {'linear'}, 'split_groups')
print(f'row for frontends/tensor/Tuning.cpp: {{"<device>", {wg}, {re}, {mb}, {el}, "<date, device, bench/tensor/tune.sh>", {sg}}},')
PY
rm -rf "$dir"
