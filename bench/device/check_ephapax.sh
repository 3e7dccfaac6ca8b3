#!/bin/bash
# Runs on the GPU machine before run.sh (same carried .gl): the Ephapax GPU
# programs on the NVIDIA Vulkan driver. The SPIR-V they make passes on
# lavapipe in CI; here it must give the interpreter's answers too:
#  - eph_unit_tests' Ephapax, monomorphize, SPIR-V, Vulkan and device tests
#    (their targets: interp and vulkan; this build has no LLVM);
#  - every examples/ephapax program through `ephc run --target=vulkan`,
#    compared with the `prints:` line of its header;
#  - every tests/ephapax/run/gpu_*.eph program, compared with its
#    `expect: result` line.
# Prints one line per example and a summary; writes $OUT/ephapax_check.txt.
set -u
OUT=${OUT:-/tmp/eph-bench-out}
mkdir -p "$OUT"
BIN=.gl/bin
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
if ! "$BIN/ephc" devices 2>/dev/null | grep -q "vulkan 0"; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
{
  "$BIN/ephc" devices
  EPH_REQUIRE_VULKAN=1 EPH_TEST_NO_VALIDATION=1 EPH_SOURCE_DIR=$PWD "$BIN/eph_unit_tests" \
    --gtest_filter='Ephapax*:Monomorphize*:Spirv*:Vulkan*:MultiDevice*:BufferChecks*' > "$OUT/ephapax_unit.txt" 2>&1
  echo "unit tests: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/ephapax_unit.txt" | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure' -A4 "$OUT/ephapax_unit.txt" | head -60
  pass=0 fail=0
  for f in examples/ephapax/*.eph; do
    want=$(sed -n 's/^-- prints: *//p' "$f" | head -1)
    args=$(sed -n 's/^-- run: *ephc //p' "$f" | head -1)
    got=$("$BIN/ephc" $args --target=vulkan 2>&1 | tail -1)
    if [ "$got" = "$want" ]; then pass=$((pass + 1)); echo "ok   $f: $got"
    else fail=$((fail + 1)); echo "FAIL $f: want '$want', got '$got'"; fi
  done
  echo "examples on NVIDIA Vulkan: $pass passed, $fail failed"
  # The GPU run programs of tests/ephapax (the conformance test that runs
  # them in CI reads ../shared, which is not here): `-- expect: result X`.
  pass=0 fail=0
  for f in tests/ephapax/run/gpu_*.eph; do
    want=$(sed -n 's/^-- expect: result *//p' "$f" | head -1)
    [ -n "$want" ] || continue  # `expect: ok`: checked only (gpu_devices needs two devices)
    mode=$(sed -n 's/^-- mode: *//p' "$f" | head -1)
    got=$("$BIN/ephc" run "$f" --target=vulkan ${mode:+--mode=$mode} 2>&1 | tail -1)
    if [ "$got" = "$want" ]; then pass=$((pass + 1)); echo "ok   $f: $got"
    else fail=$((fail + 1)); echo "FAIL $f: want '$want', got '$got'"; fi
  done
  echo "GPU run programs on NVIDIA Vulkan: $pass passed, $fail failed"
} 2>&1 | tee "$OUT/ephapax_check.txt"
