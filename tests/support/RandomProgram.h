// A generator of random, well-typed IR programs for differential testing:
// one kernel with integer and float arithmetic, comparisons, casts, selects,
// `if` and `for` (with loop-carried values, uniform and per-invocation
// bounds), loads at computed indices, workgroup memory with barriers (also
// inside uniform `if` and `for`, and inside a called device function),
// integer and float atomics, and a host
// @main that fills the inputs, dispatches the kernel and returns every output
// buffer; optionally a chain of pointwise kernels after it, for the O2
// passes (fuse, vectorize, memplan) to rewrite.
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
  // After @k, @main also runs a chain of 2 to 5 pointwise kernels over one
  // random length (at most the inputs'): each reads the chain's last buffer
  // (and maybe an input) at its invocation's index, computes with random
  // pure ops and writes a fresh temporary or, sometimes, the last buffer in
  // place. Kernels have the shape `fuse` fuses (a `buffer.len` guard) or the
  // Ephapax shape `vectorize` rewrites (hidden grid parameters), mostly one
  // workgroup size, temporaries freed early or at the end (what `memplan`
  // packs); @main returns the chain's last buffer as a fifth result. What
  // comes before the chain is the program without it.
  bool pointwise = false;
};

// The .eir text of program number `seed`.
std::string generateRandomProgram(uint64_t seed, const RandomProgramOptions& opts = {});

}  // namespace eph::test
