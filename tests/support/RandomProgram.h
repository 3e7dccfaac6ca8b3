// A generator of random, well-typed IR programs for differential testing:
// one kernel with integer and float arithmetic, comparisons, casts, selects,
// `if` and `for` (with loop-carried values, uniform and per-invocation
// bounds), loads at computed indices, workgroup memory with barriers (also
// inside uniform `if` and `for`, and inside a called device function),
// integer and float atomics, and a host
// @main that fills the inputs, dispatches the kernel and returns every output
// buffer.
//
// Every program is deterministic on any correct target: each invocation
// writes only its own output element, workgroup memory is read only after a
// barrier that follows the writes, atomics are commutative (add, min, max;
// float adds of small integers, which are exact) and their old values are
// never used, integer divisors are made odd, and loop bounds are small.
#pragma once

#include <cstdint>
#include <string>

namespace eph::test {

struct RandomProgramOptions {
  unsigned statements = 24;  // top-level statements in the kernel (nested ones come on top)
  bool barriers = true;
  bool atomics = true;
  bool floats = true;
};

// The .eir text of program number `seed`.
std::string generateRandomProgram(uint64_t seed, const RandomProgramOptions& opts = {});

}  // namespace eph::test
