#!/bin/sh
# `ninja onnx-expect` / `ninja onnx-doc`: runs libonnx-testdata's suites with
# `ephc onnx-test` on cpu, vulkan and interp (a sample), rewrites
# tests/onnx/expected-pass-<target>.txt from the passes and, with `doc`, writes
# docs/onnx.md from the results.
# usage: update.sh EPHC DATA_DIR SOURCE_DIR RESULTS_DIR [doc]
set -eu
ephc=$1 data=$2 src=$3 results=$4
mkdir -p "$results"
run() {  # target, then the suites and flags
  target=$1
  shift
  "$ephc" onnx-test "$@" --target="$target" --jobs 2 --quiet --results "$results/$target.tsv" \
    --write-passes "$src/tests/onnx/expected-pass-$target.txt" > "$results/$target.log" || true
  tail -n 1 "$results/$target.log"
}
run cpu "$data/node" "$data/pytorch-converted" "$data/pytorch-operator"
run vulkan "$data/node" "$data/pytorch-converted" "$data/pytorch-operator"
run interp "$data/node" --shard 1/19
if [ "${5:-}" = doc ]; then
  "$ephc" onnx-test --doc "$src/docs/onnx.md" --from "cpu=$results/cpu.tsv" --from "vulkan=$results/vulkan.tsv"
  echo "wrote $src/docs/onnx.md"
fi
