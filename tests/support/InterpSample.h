// The sanitizer job's sample of the interpreter. Tests that check every
// target against their own reference (float64 sums, expected lists) call
// interpThisTime() before running the interpreter: with EPH_INTERP_SAMPLE=N
// (.ci/run sets it for the ASan + UBSan build, where the instrumented
// interpreter is 7x slower and was half of that job's test time) only every
// Nth such run takes place, counted per test process (ctest runs each test
// in its own, so every test runs the interpreter at least once); unset (the
// plain build), all of them.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace eph::test {

inline bool interpThisTime() {
  static const uint64_t every = [] {
    const char* s = std::getenv("EPH_INTERP_SAMPLE");
    long n = s ? std::atol(s) : 1;
    return n > 1 ? uint64_t(n) : uint64_t(1);
  }();
  static uint64_t runs = 0;
  return runs++ % every == 0;
}

}  // namespace eph::test
