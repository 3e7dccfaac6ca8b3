// Comparing the results of one host function run on several targets, for
// `ephc diff` (tools/ephc/Diff.cpp) and the differential tests. Integers, bools and sum tags must be
// equal; floats may differ by a stated tolerance, because GPU math (exp, sin,
// pow, ...) is not correctly rounded and the Vulkan spec allows some error:
// two floats agree when they are bit-identical, both NaN, within `ulps` units
// in the last place, within `relative` of the larger magnitude, or within
// `absolute` (for results near zero such as sin(pi)). docs/runtime.md states
// the defaults.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/interp/Interp.h"

namespace eph::runtime {

struct Tolerance {
  double ulps = 4;
  double relative = 1e-5;
  double absolute = 1e-6;
  std::string str() const;  // "4 ulp, 1e-05 relative or 1e-06 absolute"
};

bool floatsAgree(double a, double b, unsigned bits, const Tolerance& tol);

// Where two result lists first differ: result index, element index within it
// (the position in a flattened buffer, vector, struct or array; 0 for a
// scalar) and both values as text.
struct Difference {
  size_t result = 0;
  size_t element = 0;
  std::string a, b;
  std::string what;  // empty, or why they differ in shape ("3 results vs 2")
};

// Compares `a` (buffers read from memA) with `b` (from memB).
std::optional<Difference> compareResults(const std::vector<interp::RtValue>& a, interp::Memory& memA,
                                         const std::vector<interp::RtValue>& b, interp::Memory& memB,
                                         const Tolerance& tol);

}  // namespace eph::runtime
